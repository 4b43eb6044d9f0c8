"""MXNet's unary math (``relu``, ``softsign``, ``reciprocal``, ``rsqrt``, ``log1p``,
``expm1``, ``cos``, ``sin``, ``erf``, ``floor``, ``ceil``, ``round``), ``clip``,
``Cast``, ``softmax`` and ``log_softmax``, with MXNet 1.9.1's parameters;
``floor``/``ceil``/``round`` are piecewise constant (no gradient).
"""
import math

import numpy

from .mxnet_base import DType, OptDType, backward_op, erf, grad_by, norm_axis, zero_grad
from ..registry import (Bool, Float, Int, Mismatch, OpDef, Param, _literal, assign, copy_into,
                       make_node, register, same_shape)

__all__ = []


# ----------------------------------------------------------------------- unary
def _round(xp, x):
    """C's round: halves away from zero (NumPy rounds them to even)."""
    a = xp.abs(x)
    r = xp.floor(a)
    r += (a - r) >= 0.5
    return xp.copysign(r, x)


_UNARY = {
    "relu": (lambda xp, x: xp.maximum(x, 0), lambda xp, x, y: y > 0),
    "softsign": (lambda xp, x: x / (1 + xp.abs(x)), lambda xp, x, y: 1 / xp.square(1 + xp.abs(x))),
    "reciprocal": (lambda xp, x: 1 / x, lambda xp, x, y: -xp.square(y)),
    "rsqrt": (lambda xp, x: 1 / xp.sqrt(x), lambda xp, x, y: -0.5 * y * y * y),
    "log1p": (lambda xp, x: xp.log1p(x), lambda xp, x, y: 1 / (1 + x)),
    "expm1": (lambda xp, x: xp.expm1(x), lambda xp, x, y: y + 1),
    "cos": (lambda xp, x: xp.cos(x), lambda xp, x, y: -xp.sin(x)),
    "sin": (lambda xp, x: xp.sin(x), lambda xp, x, y: xp.cos(x)),
    "erf": (lambda xp, x: erf(xp, x),
            lambda xp, x, y: (2 / math.sqrt(math.pi)) * xp.exp(-x * x)),
    "floor": (lambda xp, x: xp.floor(x), None),
    "ceil": (lambda xp, x: xp.ceil(x), None),
    "round": (_round, None),
}


def _unary_fwd(f):
    def forward(rc, attrs, ins, outs):
        copy_into(rc.xp, outs[0], f(rc.xp, ins[0]).astype(outs[0].dtype, copy=False))
    return forward


def _unary_bwd(d):
    def forward(rc, attrs, ins, outs):
        g, x, y = ins
        rc.xp.multiply(g, d(rc.xp, x, y), out=outs[0], casting="unsafe")
    return forward


for _k, (_f, _d) in _UNARY.items():
    _grad = zero_grad
    if _d is not None:
        backward_op(f"_backward_{_k}", {}, ("out_grad", "data", "output"), ("data",),
                    _unary_bwd(_d), doc=f"Gradient of {_k}.")
        _grad = grad_by(f"_backward_{_k}", [("in", 0), ("out", 0)])
    register(OpDef(_k, forward=_unary_fwd(_f), infer_shape=same_shape, gradient=_grad,
                   doc=f"Elementwise {_k}" + (" (no gradient)." if _d is None else ".")))


# ------------------------------------------------------------------------ clip
_CLIP = {"a_min": Param(Float), "a_max": Param(Float)}


def _clip_fwd(rc, attrs, ins, outs):
    x, out = ins[0], outs[0]
    rc.xp.clip(x, out.dtype.type(attrs["a_min"]), out.dtype.type(attrs["a_max"]), out=out)


def _clip_bwd(rc, attrs, ins, outs):
    g, x = ins
    lo, hi = x.dtype.type(attrs["a_min"]), x.dtype.type(attrs["a_max"])
    rc.xp.multiply(g, (x >= lo) & (x <= hi), out=outs[0], casting="unsafe")


backward_op("_backward_clip", _CLIP, ("out_grad", "data"), ("data",), _clip_bwd,
            doc="Gradient of clip: the head gradient where a_min <= data <= a_max.")
register(OpDef("clip", params=_CLIP, forward=_clip_fwd, infer_shape=same_shape,
               gradient=grad_by("_backward_clip", [("in", 0)]), inplace=[(0, 0)],
               doc="Clip data into [a_min, a_max]."))


# ------------------------------------------------------------------------ Cast
def _cast_type(attrs, ins, outs):
    assign(outs, 0, numpy.dtype(attrs["dtype"]), "output")
    return ins, outs


def _cast_fwd(rc, attrs, ins, outs):
    """Forward (to ``dtype``) and backward (back to the input's dtype) alike."""
    copy_into(rc.xp, outs[0], ins[0].astype(outs[0].dtype))


_CAST = {"dtype": Param(DType)}
backward_op("_backward_Cast", _CAST, ("out_grad",), ("data",), _cast_fwd,
            doc="Gradient of Cast: the head gradient cast back to the input dtype.")
register(OpDef("Cast", params=_CAST, forward=_cast_fwd, infer_shape=same_shape,
               infer_type=_cast_type, gradient=grad_by("_backward_Cast", []),
               doc="Cast data to ``dtype`` (float to int truncates toward zero)."))


# ------------------------------------------------------------ softmax, log_softmax
def _opt_float(v):
    v = _literal(v)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"expected a number or None, got {v!r}")
    return float(v)


def _opt_bool(v):
    v = _literal(v) if isinstance(v, str) and v.strip() == "None" else v
    return False if v is None else Bool(v)


_SOFTMAX = {"axis": Param(Int, -1), "temperature": Param(_opt_float, None),
            "dtype": Param(OptDType, None), "use_length": Param(_opt_bool, False)}


def _sm_args(attrs):
    return ["data", "length"] if attrs["use_length"] else ["data"]


def _sm_shape(log):
    def rule(attrs, ins, outs):
        if log and attrs["use_length"]:
            raise Mismatch("use_length=True is only supported by softmax")
        s = ins[0] if ins[0] is not None else outs[0]
        if s is not None:
            ax = norm_axis(attrs["axis"], len(s))
            assign(ins, 0, tuple(s), "data")
            assign(outs, 0, tuple(s), "output")
            if attrs["use_length"]:
                assign(ins, 1, tuple(d for i, d in enumerate(s) if i != ax), "length")
        return ins, outs
    return rule


def _sm_type(attrs, ins, outs):
    if attrs["dtype"] is not None:
        assign(outs, 0, numpy.dtype(attrs["dtype"]), "output")
    elif ins[0] is not None or outs[0] is not None:
        t = ins[0] if ins[0] is not None else outs[0]
        assign(ins, 0, t, "data")
        assign(outs, 0, t, "output")
    return ins, outs


def _length_mask(xp, attrs, ins, shape):
    """True where a position along ``axis`` is below its row's length."""
    ax = attrs["axis"] % len(shape)
    pos = xp.arange(shape[ax]).reshape((-1,) + (1,) * (len(shape) - 1 - ax))
    return pos < xp.expand_dims(ins[1], ax)


def _sm_fwd(log):
    def forward(rc, attrs, ins, outs):
        xp, out = rc.xp, outs[0]
        ax = attrs["axis"] % out.ndim
        x = ins[0].astype(out.dtype, copy=False)
        if attrs["temperature"] is not None:
            x = x / out.dtype.type(attrs["temperature"])
        mask = _length_mask(xp, attrs, ins, out.shape) if attrs["use_length"] else None
        if mask is not None:
            x = xp.where(mask, x, -xp.inf)
        x = x - x.max(axis=ax, keepdims=True)
        e = xp.exp(x)
        s = e.sum(axis=ax, keepdims=True)
        if log:
            copy_into(xp, out, x - xp.log(s))
        else:
            copy_into(xp, out, e / s)
    return forward


def _sm_bwd(log):
    def forward(rc, attrs, ins, outs):
        xp, g, y = rc.xp, ins[0], ins[1]
        ax = attrs["axis"] % y.ndim
        if log:
            d = g - xp.exp(y) * g.sum(axis=ax, keepdims=True)
        else:
            d = y * (g - (g * y).sum(axis=ax, keepdims=True))
        if attrs["temperature"] is not None:
            d = d / d.dtype.type(attrs["temperature"])
        copy_into(xp, outs[0], d.astype(outs[0].dtype, copy=False))
        for o in outs[1:]:
            o.fill(0)
    return forward


def _sm_grad(bname):
    def gradient(node, og):
        b = make_node(bname, [og[0], (node, 0)] + node.inputs[1:], node.attrs, fwd=node)
        return [(b, 0)] + [None] * (len(node.inputs) - 1)     # lengths get none
    return gradient


for _name, _log in (("softmax", False), ("log_softmax", True)):
    backward_op(f"_backward_{_name}", _SOFTMAX,
                lambda a: ["out_grad", "output"] + (["length"] if a["use_length"] else []),
                _sm_args, _sm_bwd(_log), doc=f"Gradient of {_name}.")
    register(OpDef(_name, params=_SOFTMAX, arguments=_sm_args, forward=_sm_fwd(_log),
                   infer_shape=_sm_shape(_log), infer_type=_sm_type,
                   gradient=_sm_grad(f"_backward_{_name}"),
                   doc=("Log-softmax" if _log else "Softmax") + " along ``axis`` of "
                       "data / ``temperature``, in ``dtype`` (default: data's); softmax's "
                       "``use_length`` masks positions at or past ``length`` (output 0)."))
