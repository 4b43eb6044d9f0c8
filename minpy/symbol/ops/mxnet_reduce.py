"""MXNet's reductions beyond sum/mean -- ``max``, ``min``, ``prod``, ``norm``,
``argmax``, ``argmin`` -- and ``batch_dot``, with MXNet 1.9.1's parameters:
``axis`` None or () reduces everything (to shape (1,), never ()), ``exclude``
reduces all axes but ``axis``; ``arg*`` return indices in the input's dtype
and have no gradient.
"""
import numpy

from .mxnet_base import OptChoice, OptDType, norm_axis, op_with_backward, zero_grad
from .shape import RED_PARAMS, reduce_axes, reduced_shape
from ..registry import (Axis, Bool, Int, Mismatch, OpDef, OptInt, Param, assign, copy_into,
                       register, same_shape)

__all__ = []


# ------------------------------------------------------------ max, min, prod
def _red_bwd(kind):
    def forward(rc, attrs, ins, outs):
        xp, (g, x, y), out = rc.xp, ins, outs[0]
        ax = reduce_axes(attrs, x.ndim)
        keep = tuple(1 if i in ax else d for i, d in enumerate(x.shape))
        g, y = g.reshape(keep), y.reshape(keep)
        if kind in ("max", "min"):
            d = g * (x == y)        # every tied extremum gets the gradient, as MXNet
        elif kind == "prod":
            d = g * y / x
        else:                       # norm
            d = g * (xp.sign(x) if attrs["ord"] == 1 else
                     xp.where(y == 0, 0, x / xp.where(y == 0, 1, y)))
        copy_into(xp, out, d.astype(out.dtype, copy=False))
    return forward


def _red_fwd(kind):
    def forward(rc, attrs, ins, outs):
        xp, x = rc.xp, ins[0]
        ax = reduce_axes(attrs, x.ndim)
        if kind == "norm":
            r = xp.abs(x).sum(axis=ax) if attrs["ord"] == 1 else xp.sqrt(
                xp.square(x).sum(axis=ax))
        else:
            r = getattr(xp, kind)(x, axis=ax)
        copy_into(xp, outs[0], r.reshape(outs[0].shape).astype(outs[0].dtype, copy=False))
    return forward


def _red_shape(attrs, ins, outs):
    if ins[0] is not None:
        ax = reduce_axes(attrs, len(ins[0]))
        assign(outs, 0, reduced_shape(ins[0], ax, attrs["keepdims"]), "output")
    return ins, outs


def _ord(v):
    v = Int(v)
    if v not in (1, 2):
        raise ValueError(f"only ord 1 and 2 are supported, got {v}")
    return v


def _norm_type(attrs, ins, outs):
    if attrs["out_dtype"] is not None:
        assign(outs, 0, numpy.dtype(attrs["out_dtype"]), "output")
        return ins, outs
    return same_shape(attrs, ins, outs)


_NORM = {"ord": Param(_ord, 2), "axis": Param(Axis, None), "out_dtype": Param(OptDType, None),
         "keepdims": Param(Bool, False)}
for _name, _params in [("max", RED_PARAMS), ("min", RED_PARAMS), ("prod", RED_PARAMS),
                       ("norm", _NORM)]:
    op_with_backward(_name, _params, _red_shape, _red_fwd(_name), _red_bwd(_name),
                     [("in", 0), ("out", 0)],
                     f"{_name.capitalize()} over ``axis`` (None or (): all"
                     + ("; ord 1 or 2" if _name == "norm" else "; ``exclude``: all but axis")
                     + "); a full reduction gives shape (1,).",
                     infer_type=_norm_type if _name == "norm" else None)


# ------------------------------------------------------------- argmax, argmin
_ARG = {"axis": Param(OptInt, None), "keepdims": Param(Bool, False)}


def _arg_shape(attrs, ins, outs):
    s = ins[0]
    if s is not None:
        if attrs["axis"] is None:
            o = (1,) * len(s) if attrs["keepdims"] else (1,)
        else:
            o = reduced_shape(s, (norm_axis(attrs["axis"], len(s)),), attrs["keepdims"])
        assign(outs, 0, o, "output")
    return ins, outs


def _arg_fwd(fname):
    def forward(rc, attrs, ins, outs):
        x = ins[0]
        r = getattr(rc.xp, fname)(x.reshape(-1) if attrs["axis"] is None else x,
                                  axis=None if attrs["axis"] is None else attrs["axis"])
        copy_into(rc.xp, outs[0], rc.xp.asarray(r).astype(outs[0].dtype).reshape(
            outs[0].shape))
    return forward


for _name in ("argmax", "argmin"):
    register(OpDef(_name, params=_ARG, forward=_arg_fwd(_name), infer_shape=_arg_shape,
                   gradient=zero_grad,
                   doc=f"Index of the {_name[3:]}imum along ``axis`` (None: of the flattened "
                       "data), as the input's dtype (no gradient)."))


# ------------------------------------------------------------------- batch_dot
_BDOT = {"transpose_a": Param(Bool, False), "transpose_b": Param(Bool, False),
         "forward_stype": Param(OptChoice("default"), None)}


def _bdot_shape(attrs, ins, outs):
    a, b = ins
    if a is not None and b is not None:
        if len(a) < 3 or len(a) != len(b) or tuple(a[:-2]) != tuple(b[:-2]):
            raise Mismatch(f"lhs {a} and rhs {b} must be (batch..., m, k) and "
                           "(batch..., k, n) with one batch shape")
        m, k = (a[-1], a[-2]) if attrs["transpose_a"] else (a[-2], a[-1])
        k2, n = (b[-1], b[-2]) if attrs["transpose_b"] else (b[-2], b[-1])
        if k != k2:
            raise Mismatch(f"inner dimensions differ: lhs {a} and rhs {b} "
                           f"(transpose_a={attrs['transpose_a']}, "
                           f"transpose_b={attrs['transpose_b']})")
        assign(outs, 0, tuple(a[:-2]) + (m, n), "output")
    return ins, outs


def _t(xp, a, flag):
    return xp.swapaxes(a, -1, -2) if flag else a


def _bdot_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    copy_into(xp, outs[0], xp.matmul(_t(xp, ins[0], attrs["transpose_a"]),
                                     _t(xp, ins[1], attrs["transpose_b"])))


def _bdot_bwd(rc, attrs, ins, outs):
    xp, (g, a, b) = rc.xp, ins
    A, B = _t(xp, a, attrs["transpose_a"]), _t(xp, b, attrs["transpose_b"])
    dA, dB = xp.matmul(g, xp.swapaxes(B, -1, -2)), xp.matmul(xp.swapaxes(A, -1, -2), g)
    copy_into(xp, outs[0], _t(xp, dA, attrs["transpose_a"]))
    copy_into(xp, outs[1], _t(xp, dB, attrs["transpose_b"]))


op_with_backward("batch_dot", _BDOT, _bdot_shape, _bdot_fwd, _bdot_bwd,
                 [("in", 0), ("in", 1)],
                 "Batched matrix product over the leading axes (optionally transposing the "
                 "last two axes of either operand).", arguments=("lhs", "rhs"))
