"""Elementwise operators: binary (same shape and broadcasting), with a scalar,
unary math, sums of many, copies, gradient blockers.

Their gradients are compositions of these same operators (so they can be
differentiated again), plus ``_broadcast_backward`` which sums broadcast
gradients down to the input shapes.
"""
import math

import numpy

from ..registry import (Bool, Float, Int, Mismatch, OpDef, Param, assign, bwd_shape, copy_into,
                       grad_type, make_node, register, same_shape, sum_to)

__all__ = ["scalar_params", "scalar_type", "scalar_value", "scalar_operand"]


def E(op, inputs, **attrs):
    """Entry 0 of a new ``op`` node on ``inputs`` (for gradient graphs)."""
    return (make_node(op, inputs, attrs), 0)


def neg(e):
    return E("negative", [e])


# ----------------------------------------------------------- binary, same shape
_BIN = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}


def _bin_forward(fname):
    def forward(rc, attrs, ins, outs):
        getattr(rc.xp, fname)(ins[0], ins[1], out=outs[0])
    return forward


def _elemwise_grad(kind, prefix):
    mul, div = prefix + "mul", prefix + "div"

    def gradient(node, og):
        g = og[0]
        lhs, rhs = node.inputs
        out = (node, 0)
        if kind == "add":
            gl, gr = g, g
        elif kind == "sub":
            gl, gr = g, neg(g)
        elif kind == "mul":
            gl, gr = E(mul, [g, rhs]), E(mul, [g, lhs])
        elif kind == "div":
            gl = E(div, [g, rhs])
            gr = neg(E(div, [E(mul, [g, out]), rhs]))
        else:   # power: d/dl = g * r * l^(r-1); d/dr = g * out * log(l)
            gl = E(mul, [g, E(mul, [rhs, E(prefix + "power", [lhs, E("_minus_scalar", [rhs],
                                                                     scalar=1.0)])])])
            gr = E(mul, [g, E(mul, [out, E("log", [lhs])])])
        if prefix == "elemwise_":
            return [gl, gr]
        bb = make_node("_broadcast_backward", [gl, gr], fwd=node)
        return [(bb, 0), (bb, 1)]
    return gradient


for _k, _f in _BIN.items():
    register(OpDef(f"elemwise_{_k}", arguments=("lhs", "rhs"), forward=_bin_forward(_f),
                   infer_shape=same_shape, gradient=_elemwise_grad(_k, "elemwise_"),
                   inplace=[(0, 0), (1, 0)],
                   doc=f"Elementwise {_f} of two arrays of the same shape."))


def broadcast_shape(attrs, ins, outs):
    """Shape rule of a broadcasting binary op (NumPy's broadcasting)."""
    a, b = ins
    if a is not None and b is not None:
        try:
            s = tuple(numpy.broadcast_shapes(a, b))
        except ValueError:
            raise Mismatch(f"shapes {a} and {b} cannot be broadcast together") from None
        if outs[0] is not None and outs[0] != s:
            raise Mismatch(f"output: expected {s}, got {outs[0]}")
        outs[0] = s
    return ins, outs


for _k, _f in list(_BIN.items()) + [("power", "power")]:
    register(OpDef(f"broadcast_{_k}", arguments=("lhs", "rhs"), forward=_bin_forward(_f),
                   infer_shape=broadcast_shape, gradient=_elemwise_grad(_k, "broadcast_"),
                   inplace=[(0, 0), (1, 0)],
                   doc=f"Elementwise {_f} with NumPy broadcasting."))


def _broadcast_backward_fwd(rc, attrs, ins, outs):
    for g, o in zip(ins, outs):
        copy_into(rc.xp, o, sum_to(rc.xp, g, o.shape))


register(OpDef("_broadcast_backward", arguments=("lhs_grad", "rhs_grad"),
               outputs=("lhs", "rhs"), forward=_broadcast_backward_fwd, infer_shape=bwd_shape,
               infer_type=grad_type, inplace=[(0, 0), (1, 1)], is_backward=True,
               doc="Sum broadcast gradients down to the forward inputs' shapes."))


# -------------------------------------------------------------- with a scalar
def scalar_params():
    """MXNet 1.9.1's parameters of the ``_*_scalar`` ops (a new dict each call)."""
    return {"scalar": Param(Float, 1.0), "is_int": Param(Bool, True)}


def scalar_type(attrs, ins, outs):
    """MXNet's dtype rule of the scalar ops: an integer input with a non-integer
    scalar gives float64, a bool input int64 (float64); else the input's dtype."""
    t = ins[0]
    if t is not None and t.kind in "iu" and not attrs["is_int"]:
        assign(outs, 0, numpy.dtype(numpy.float64), "output")
    elif t is not None and t.kind == "b":
        assign(outs, 0, numpy.dtype(numpy.int64 if attrs["is_int"] else numpy.float64),
               "output")
    else:
        return same_shape(attrs, ins, outs)
    return ins, outs


def scalar_value(attrs, out):
    """The scalar as the output's dtype holds it (MXNet casts it: 2.5 is 2 for ints)."""
    return out.dtype.type(attrs["scalar"])


def scalar_operand(x, out):
    """The array operand in the output's dtype (a copy only where they differ)."""
    return x if x.dtype == out.dtype else x.astype(out.dtype)


def _scalar_forward(fname, reverse=False):
    def forward(rc, attrs, ins, outs):
        s, x = scalar_value(attrs, outs[0]), scalar_operand(ins[0], outs[0])
        f = getattr(rc.xp, fname)
        if reverse:
            f(s, x, out=outs[0])
        else:
            f(x, s, out=outs[0])
    return forward


def _scalar_grad(kind):
    def gradient(node, og):
        g, x, out, s = og[0], node.inputs[0], (node, 0), node.attrs["scalar"]
        if kind in ("plus", "minus"):
            return [g]
        if kind == "rminus":
            return [neg(g)]
        if kind == "mul":
            return [E("_mul_scalar", [g], scalar=s)]
        if kind == "div":
            return [E("_div_scalar", [g], scalar=s)]
        if kind == "rdiv":        # d(s/x) = -out/x
            return [neg(E("elemwise_div", [E("elemwise_mul", [g, out]), x]))]
        if kind == "power":       # d(x^s) = s x^(s-1)
            return [E("elemwise_mul", [g, E("_mul_scalar", [E("_power_scalar", [x],
                                                                scalar=s - 1.0)], scalar=s)])]
        # rpower: d(s^x) = out * log(s)
        return [E("_mul_scalar", [E("elemwise_mul", [g, out])], scalar=math.log(s))]
    return gradient


for _k, _f, _rev in [("plus", "add", False), ("minus", "subtract", False),
                     ("rminus", "subtract", True), ("mul", "multiply", False),
                     ("div", "divide", False), ("rdiv", "divide", True),
                     ("power", "power", False), ("rpower", "power", True)]:
    register(OpDef(f"_{_k}_scalar", params=scalar_params(), infer_type=scalar_type,
                   forward=_scalar_forward(_f, _rev), infer_shape=same_shape,
                   gradient=_scalar_grad(_k), inplace=[(0, 0)],
                   doc=f"Elementwise {_f} with a scalar" + (" (scalar on the left)." if _rev
                                                            else ".")))


def _greater_scalar_fwd(rc, attrs, ins, outs):
    rc.xp.greater(scalar_operand(ins[0], outs[0]), scalar_value(attrs, outs[0]), out=outs[0],
                  casting="unsafe")


register(OpDef("_greater_scalar", params=scalar_params(), infer_type=scalar_type,
               forward=_greater_scalar_fwd, infer_shape=same_shape,
               gradient=lambda node, og: [None], inplace=[(0, 0)],
               doc="1 where x > scalar else 0 (no gradient)."))


# ----------------------------------------------------------------------- unary
def _unary_forward(fname):
    def forward(rc, attrs, ins, outs):
        getattr(rc.xp, fname)(ins[0], out=outs[0])
    return forward


def _sigmoid_fwd(rc, attrs, ins, outs):
    xp, out = rc.xp, outs[0]
    xp.negative(ins[0], out=out)
    xp.exp(out, out=out)
    out += 1
    xp.reciprocal(out, out=out)


def _unary_grad(kind):
    def gradient(node, og):
        g, x, out = og[0], node.inputs[0], (node, 0)
        if kind == "negative":
            return [neg(g)]
        if kind == "exp":
            return [E("elemwise_mul", [g, out])]
        if kind == "log":
            return [E("elemwise_div", [g, x])]
        if kind == "sqrt":
            return [E("elemwise_div", [E("_mul_scalar", [g], scalar=0.5), out])]
        if kind == "square":
            return [E("elemwise_mul", [g, E("_mul_scalar", [x], scalar=2.0)])]
        if kind == "tanh":
            return [E("elemwise_mul", [g, E("_rminus_scalar", [E("square", [out])], scalar=1.0)])]
        if kind == "sigmoid":
            return [E("elemwise_mul", [g, E("elemwise_mul", [
                out, E("_rminus_scalar", [out], scalar=1.0)])])]
        if kind == "abs":
            return [E("elemwise_mul", [g, E("sign", [x])])]
        return [None]   # sign
    return gradient


for _k in ("negative", "exp", "log", "sqrt", "square", "tanh", "sigmoid", "abs", "sign"):
    register(OpDef(_k, forward=_sigmoid_fwd if _k == "sigmoid" else _unary_forward(_k),
                   infer_shape=same_shape, gradient=_unary_grad(_k), inplace=[(0, 0)],
                   doc=f"Elementwise {_k}."))


# ------------------------------------------------------------- sums and copies
def _args_names(attrs):
    return [f"arg{i}" for i in range(attrs["num_args"])]


def _ewsum_fwd(rc, attrs, ins, outs):
    out = outs[0]
    if len(ins) == 1:
        copy_into(rc.xp, out, ins[0])
        return
    rc.xp.add(ins[0], ins[1], out=out)
    for x in ins[2:]:
        out += x


register(OpDef("ElementWiseSum", params={"num_args": Param(Int)}, arguments=_args_names,
               forward=_ewsum_fwd, infer_shape=same_shape,
               gradient=lambda node, og: [og[0]] * len(node.inputs), inplace=[(0, 0)],
               variadic="num_args",
               doc="Sum of ``num_args`` arrays of one shape (``add_n``); the gradient "
                   "pass uses it to add the gradients of an entry used several times."))


def _copy_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], ins[0])


register(OpDef("_copy", forward=_copy_fwd, infer_shape=same_shape,
               gradient=lambda node, og: [og[0]], inplace=[(0, 0)], doc="Identity (a copy)."))
register(OpDef("BlockGrad", forward=_copy_fwd, infer_shape=same_shape,
               gradient=lambda node, og: [None], inplace=[(0, 0)],
               doc="Identity in forward; stops the gradient (it is zero)."))


def _accumulate_fwd(rc, attrs, ins, outs):
    outs[0] += ins[0]


register(OpDef("_grad_accumulate", forward=_accumulate_fwd, infer_shape=same_shape,
               doc="out += data: the executor's grad_req='add' (out is the gradient array)."))


def _fill(value):
    def forward(rc, attrs, ins, outs):
        outs[0].fill(value)
    return forward


register(OpDef("zeros_like", forward=_fill(0), infer_shape=same_shape,
               gradient=lambda node, og: [None], inplace=[(0, 0)], doc="Zeros shaped like data."))
register(OpDef("ones_like", forward=_fill(1), infer_shape=same_shape,
               gradient=lambda node, og: [None], inplace=[(0, 0)], doc="Ones shaped like data."))
