"""Operators that real MXNet 1.9.1 symbol files use, with MXNet's semantics.

This module holds the elementwise binary ones -- maximum/minimum/power/hypot
(same shape and broadcasting), the comparisons, ``broadcast_to``/``_axis``/
``_like`` -- and the rest of the ``_*_scalar`` family; ``mxnet_unary``
(unary math, clip, Cast, softmax), ``mxnet_shape``, ``mxnet_reduce``
and ``mxnet_nn`` hold the others, and importing this module registers
them all.  Last, MXNet's other names for operators (``_Plus``, ``identity``,
``Softmax``, ``add_n`` ...) become aliases, so a JSON file that spells an op
that way loads.

Comparisons are piecewise constant: their gradient is zero (no gradient node).
"""

# importing them registers the operators they define
from . import mxnet_nn, mxnet_reduce, mxnet_shape, mxnet_unary, output, shape   # noqa: F401
from .elemwise import broadcast_shape, scalar_operand, scalar_params, scalar_type, scalar_value
from .mxnet_base import ShapeOrNone, backward_op, grad_by, norm_axis, zero_grad
from ..registry import (Mismatch, OpDef, Param, Shape, alias, assign, copy_into, register,
                       same_shape, sum_to)

__all__ = ["ALIASES"]


# ------------------------------------------------------------------ binary
def _binary_fwd(fname):
    def forward(rc, attrs, ins, outs):
        getattr(rc.xp, fname)(ins[0], ins[1], out=outs[0], casting="unsafe")
    return forward


def _binary_bwd(kind):
    def forward(rc, attrs, ins, outs):
        xp, (g, lhs, rhs, out) = rc.xp, ins
        if kind == "power":          # d/dl = r l^(r-1); d/dr = out log(l)
            gl = g * rhs * xp.power(lhs, rhs - 1)
            gr = g * out * xp.log(lhs)
        elif kind in ("maximum", "minimum"):
            pick = (lhs >= rhs) if kind == "maximum" else (lhs <= rhs)    # ties: lhs
            gl, gr = xp.where(pick, g, 0), xp.where(pick, 0, g)
        else:                        # hypot
            gl, gr = g * lhs / out, g * rhs / out
        for o, v in zip(outs, (gl, gr)):
            copy_into(xp, o, sum_to(xp, xp.broadcast_to(v, g.shape), o.shape).astype(o.dtype))
    return forward


for _name, _f, _shape in [("_power", "power", same_shape), ("_maximum", "maximum", same_shape),
                          ("_minimum", "minimum", same_shape), ("_hypot", "hypot", same_shape),
                          ("broadcast_maximum", "maximum", broadcast_shape),
                          ("broadcast_minimum", "minimum", broadcast_shape),
                          ("broadcast_hypot", "hypot", broadcast_shape)]:
    _bname = "_backward_" + _name.lstrip("_")
    backward_op(_bname, {}, ("out_grad", "lhs", "rhs", "output"), ("lhs", "rhs"),
                _binary_bwd(_f), doc=f"Gradients of {_name} (summed to each input's shape).")
    register(OpDef(_name, arguments=("lhs", "rhs"), forward=_binary_fwd(_f), infer_shape=_shape,
                   gradient=grad_by(_bname, [("in", 0), ("in", 1), ("out", 0)]),
                   inplace=[(0, 0), (1, 0)],
                   doc=f"Elementwise {_f} of two arrays"
                       + (" of one shape." if _shape is same_shape else
                          " with NumPy broadcasting (maximum/minimum: ties send the "
                          "gradient to lhs).")))

_CMP = {"equal": "equal", "not_equal": "not_equal", "greater": "greater",
        "greater_equal": "greater_equal", "lesser": "less", "lesser_equal": "less_equal"}
for _k, _f in _CMP.items():
    register(OpDef(f"broadcast_{_k}", arguments=("lhs", "rhs"), forward=_binary_fwd(_f),
                   infer_shape=broadcast_shape, gradient=zero_grad, inplace=[(0, 0), (1, 0)],
                   doc=f"1 where lhs {_f.replace('_', ' ')} rhs else 0, in the inputs' "
                       "dtype, with broadcasting (no gradient)."))


# ------------------------------------------------------ broadcast_to / axis / like
def _sum_back_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], sum_to(rc.xp, ins[0], outs[0].shape))
    for o in outs[1:]:
        o.fill(0)


def _bcast_fwd(rc, attrs, ins, outs):
    outs[0][...] = rc.xp.broadcast_to(ins[0], outs[0].shape)


def _expand(src, dst, what):
    """Check that ``src`` broadcasts to ``dst`` (same rank, dims 1 or equal)."""
    if len(src) != len(dst) or any(s != d and s != 1 for s, d in zip(src, dst)):
        raise Mismatch(f"{what}: cannot broadcast {tuple(src)} to {tuple(dst)} (each "
                       "dimension must be 1 or equal)")


def _bto_shape(attrs, ins, outs):
    s, want = ins[0], attrs["shape"]
    if s is not None:
        if len(want) != len(s):
            raise Mismatch(f"shape={want} must have as many dimensions as data {s}")
        o = tuple(d if w == 0 else w for d, w in zip(s, want))
        _expand(s, o, "data")
        assign(outs, 0, o, "output")
    return ins, outs


def _baxis_shape(attrs, ins, outs):
    s = ins[0]
    axis, size = attrs["axis"], attrs["size"]
    if len(axis) != len(size):
        raise Mismatch(f"axis={axis} and size={size} must have the same length")
    if s is not None:
        o = list(s)
        for a, n in zip(axis, size):
            if not 0 <= a < len(s):     # MXNet 1.9.1 refuses negative axes here
                raise Mismatch(f"axis {a} out of range [0, {len(s)}) for data {s}")
            if s[a] != 1:
                raise Mismatch(f"data: axis {a} has size {s[a]}, broadcasting needs 1")
            o[a] = n
        assign(outs, 0, tuple(o), "output")
    return ins, outs


def _blike_shape(attrs, ins, outs):
    a, b = ins
    la, ra = attrs["lhs_axes"], attrs["rhs_axes"]
    if a is not None and b is not None:
        if la is None and ra is None:
            _expand(a, b, "lhs")
            o = tuple(b)
        else:
            if la is None or ra is None or len(la) != len(ra):
                raise Mismatch(f"lhs_axes={la} and rhs_axes={ra} must both be given, "
                               "of one length")
            o = list(a)
            for i, j in zip(la, ra):
                i, j = norm_axis(i, len(a), "lhs_axes"), norm_axis(j, len(b), "rhs_axes")
                if a[i] != 1 and a[i] != b[j]:
                    raise Mismatch(f"lhs: axis {i} has size {a[i]}, rhs axis {j} {b[j]}")
                o[i] = b[j]
            o = tuple(o)
        assign(outs, 0, o, "output")
    return ins, outs


_BTO = {"shape": Param(Shape, ())}
_BAXIS = {"axis": Param(Shape, ()), "size": Param(Shape, ())}
_BLIKE = {"lhs_axes": Param(ShapeOrNone, None), "rhs_axes": Param(ShapeOrNone, None)}
for _name, _params, _shape, _args, _doc in [
        ("broadcast_to", _BTO, _bto_shape, ("data",),
         "Broadcast data to ``shape`` (a 0 keeps that dimension)."),
        ("broadcast_axis", _BAXIS, _baxis_shape, ("data",),
         "Broadcast the size-1 axes ``axis`` of data to sizes ``size``."),
        ("broadcast_like", _BLIKE, _blike_shape, ("lhs", "rhs"),
         "Broadcast lhs to rhs's shape (or only lhs_axes to rhs's rhs_axes sizes); rhs gets "
         "no gradient.")]:
    backward_op(f"_backward_{_name}", _params, ("out_grad",), _args, _sum_back_fwd,
                doc=f"Gradient of {_name}: the head gradient summed back to the input shape.")
    register(OpDef(_name, params=_params, arguments=_args, forward=_bcast_fwd,
                   infer_shape=_shape,
                   gradient=grad_by(f"_backward_{_name}", [], skip=(1,)),
                   infer_type=same_shape if len(_args) == 1 else None, doc=_doc))


# -------------------------------------------------------------- with a scalar
def _mod(xp, a, b):
    """MXNet's mod: the sign of the divisor (Python's), and 0 where b == 0."""
    safe = xp.where(b == 0, 1, b)
    return xp.where(b == 0, 0, xp.mod(a, safe))


_SCALAR_FWD = {
    "maximum": lambda xp, x, s: xp.maximum(x, s), "minimum": lambda xp, x, s: xp.minimum(x, s),
    "equal": lambda xp, x, s: x == s, "not_equal": lambda xp, x, s: x != s,
    "greater_equal": lambda xp, x, s: x >= s, "lesser": lambda xp, x, s: x < s,
    "lesser_equal": lambda xp, x, s: x <= s,
    "mod": lambda xp, x, s: _mod(xp, x, xp.asarray(s, dtype=x.dtype)),
    "rmod": lambda xp, x, s: _mod(xp, xp.asarray(s, dtype=x.dtype), x),
    "hypot": lambda xp, x, s: xp.hypot(x, s)}

# derivative of each differentiable one w.r.t. x, from (x, scalar, output)
_SCALAR_DER = {
    "maximum": lambda xp, x, s, y: x >= s, "minimum": lambda xp, x, s, y: x <= s,
    "mod": lambda xp, x, s, y: xp.ones_like(x),
    "rmod": lambda xp, x, s, y: -xp.floor(s / x),
    "hypot": lambda xp, x, s, y: x / y}


def _scalar_fwd(kind):
    def forward(rc, attrs, ins, outs):
        x, s = scalar_operand(ins[0], outs[0]), scalar_value(attrs, outs[0])
        copy_into(rc.xp, outs[0], _SCALAR_FWD[kind](rc.xp, x, s).astype(outs[0].dtype,
                                                                          copy=False))
    return forward


def _scalar_bwd(kind):
    def forward(rc, attrs, ins, outs):
        g, x, y = ins
        s = x.dtype.type(attrs["scalar"])
        d = _SCALAR_DER[kind](rc.xp, x, s, y)
        rc.xp.multiply(g, d, out=outs[0], casting="unsafe")
    return forward


for _k in _SCALAR_FWD:
    _name = f"_{_k}_scalar"
    _grad = zero_grad
    if _k in _SCALAR_DER:
        backward_op(f"_backward_{_k}_scalar", scalar_params(), ("out_grad", "data", "output"),
                    ("data",), _scalar_bwd(_k), doc=f"Gradient of {_name}.")
        _grad = grad_by(f"_backward_{_k}_scalar", [("in", 0), ("out", 0)])
    register(OpDef(_name, params=scalar_params(), forward=_scalar_fwd(_k),
                   infer_shape=same_shape, infer_type=scalar_type, gradient=_grad,
                   inplace=[(0, 0)],
                   doc=f"Elementwise {_k} of data and ``scalar`` (MXNet's "
                       f"{_name}{'; no gradient' if _grad is zero_grad else ''})."))


# --------------------------------------------------------------------- aliases
# MXNet's other names (older JSON files write the capitalised ones)
ALIASES = {
    "_plus": "elemwise_add", "_Plus": "elemwise_add", "_add": "elemwise_add",
    "_minus": "elemwise_sub", "_Minus": "elemwise_sub", "_sub": "elemwise_sub",
    "_mul": "elemwise_mul", "_Mul": "elemwise_mul", "_div": "elemwise_div",
    "_Div": "elemwise_div", "_Power": "_power", "_Maximum": "_maximum",
    "_Minimum": "_minimum", "_Hypot": "_hypot", "broadcast_plus": "broadcast_add",
    "broadcast_minus": "broadcast_sub", "broadcast_axes": "broadcast_axis",
    "_PlusScalar": "_plus_scalar", "_MinusScalar": "_minus_scalar",
    "_RMinusScalar": "_rminus_scalar", "_MulScalar": "_mul_scalar",
    "_DivScalar": "_div_scalar", "_RDivScalar": "_rdiv_scalar",
    "_PowerScalar": "_power_scalar", "_RPowerScalar": "_rpower_scalar",
    "_MaximumScalar": "_maximum_scalar", "_MinimumScalar": "_minimum_scalar",
    "_EqualScalar": "_equal_scalar", "_NotEqualScalar": "_not_equal_scalar",
    "_GreaterScalar": "_greater_scalar", "_GreaterEqualScalar": "_greater_equal_scalar",
    "_LesserScalar": "_lesser_scalar", "_LesserEqualScalar": "_lesser_equal_scalar",
    "_ModScalar": "_mod_scalar", "_RModScalar": "_rmod_scalar", "_HypotScalar": "_hypot_scalar",
    "identity": "_copy", "cast": "Cast", "Softmax": "SoftmaxOutput", "reshape": "Reshape",
    "flatten": "Flatten", "swapaxes": "SwapAxis", "pad": "Pad", "split": "SliceChannel",
    "crop": "slice", "sum_axis": "sum", "max_axis": "max", "min_axis": "min",
    "concat": "Concat", "add_n": "ElementWiseSum", "stop_gradient": "BlockGrad",
}
for _a, _t in ALIASES.items():
    alias(_a, _t)
