"""MXNet's shape operators (``slice_axis``, ``slice``, ``expand_dims``, ``squeeze``,
``SwapAxis``, ``repeat``, ``tile``, ``Pad``, ``stack``, ``take``) and the
constant makers ``_zeros``/``_ones``/``_full``, each with MXNet 1.9.1's
parameters and shape rules.

``_zeros(shape=(0, 8))`` is how Gluon writes an RNN's begin state: a 0 is a
dimension left unknown, completed by shape inference from the consumer.
"""
import math

import numpy

from .mxnet_base import (DType, OptShape, ShapeOrNone, backward_op, grad_by, norm_axis,
                             op_with_backward)
from .shape import scatter_add
from ..registry import (Axis, Choice, Float, Int, Mismatch, OpDef, OptInt, Param, Shape, assign,
                       copy_into, register)

__all__ = ["slice_bounds"]


def _scatter_fwd(index_of):
    """Backward forward: zeros, then the head gradient written at ``index_of(attrs, shape)``."""
    def forward(rc, attrs, ins, outs):
        out = outs[0]
        out.fill(0)
        out[index_of(attrs, out.shape)] = ins[0]
    return forward


# ------------------------------------------------------------------- slice_axis
_SLICE_AXIS = {"axis": Param(Int), "begin": Param(Int), "end": Param(OptInt, None)}


def _slice_axis_index(attrs, shape):
    ax = norm_axis(attrs["axis"], len(shape))
    n, b, e = shape[ax], attrs["begin"], attrs["end"]
    b = b + n if b < 0 else b
    e = n if e is None else (e + n if e < 0 else e)
    if not (0 <= b < e <= n):
        raise Mismatch(f"begin={attrs['begin']}, end={attrs['end']} is not a non-empty "
                       f"range of axis {ax} (size {n}) of data {tuple(shape)}")
    return (slice(None),) * ax + (slice(b, e),)


def _index_shape(index_of):
    def rule(attrs, ins, outs):
        if ins[0] is not None:
            probe = numpy.broadcast_to(numpy.bool_(0), ins[0])    # a view: nothing allocated
            assign(outs, 0, probe[index_of(attrs, ins[0])].shape, "output")
        return ins, outs
    return rule


def _index_fwd(index_of):
    def forward(rc, attrs, ins, outs):
        copy_into(rc.xp, outs[0], ins[0][index_of(attrs, ins[0].shape)])
    return forward


op_with_backward("slice_axis", _SLICE_AXIS, _index_shape(_slice_axis_index),
                 _index_fwd(_slice_axis_index), _scatter_fwd(_slice_axis_index), [],
                 "data[begin:end] along ``axis`` (negative begin/end count from the end; "
                 "end None: to the end).")


# ------------------------------------------------------------------------ slice
_SLICE = {"begin": Param(OptShape), "end": Param(OptShape), "step": Param(OptShape, ())}


def slice_bounds(shape, begin, end, step):
    """MXNet's ``slice`` as Python slices, one per axis of ``shape``: None
    entries take the default of their step's sign, negatives count from the
    end, bounds clamp as MXNet's ``GetIndexRange`` does.  Mismatch on bad params
    or an empty result (MXNet 1.x cannot hold a 0-sized dimension)."""
    if len(begin) != len(end) or len(begin) > len(shape) or (step and len(step) != len(begin)):
        raise Mismatch(f"begin={begin}, end={end}, step={step} do not fit data {tuple(shape)} "
                       "(begin and end of one length, at most its rank, step empty or alike)")
    idx = []
    for i, n in enumerate(shape[:len(begin)]):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise Mismatch(f"step[{i}] cannot be 0")
        b = begin[i] if begin[i] is not None else (n - 1 if s < 0 else 0)
        e = end[i] if end[i] is not None else (-1 if s < 0 else n)
        b = b + n if b < 0 else b
        e = e + n if e < 0 and end[i] is not None else e
        b = 0 if b < 0 and s > 0 else b
        b = n - 1 if b > n - 1 and s < 0 else b
        b = -1 if b < 0 or b > n - 1 else b
        e = min(max(e, -1), n)
        size = 0 if b < 0 or e == b else ((e - b - 1) // s + 1 if s > 0 and e > b else
                                          (b - e - 1) // -s + 1 if s < 0 and e < b else 0)
        if size == 0:
            raise Mismatch(f"slice begin={begin}, end={end}, step={step} of data "
                           f"{tuple(shape)} is empty along axis {i}")
        idx.append(slice(b, None if e < 0 else e, s))
    return tuple(idx)


def _slice_index(attrs, shape):
    return slice_bounds(shape, attrs["begin"], attrs["end"], attrs["step"])


op_with_backward("slice", _SLICE, _index_shape(_slice_index), _index_fwd(_slice_index),
                 _scatter_fwd(_slice_index), [],
                 "data[begin:end:step] on the leading axes (None: the default for the "
                 "step's sign; MXNet's clamping).")


# ------------------------------------------------------- expand_dims, squeeze
def _expand_shape(attrs, ins, outs):
    s = ins[0]
    if s is not None:
        ax = attrs["axis"]
        if not -len(s) - 1 <= ax <= len(s):
            raise Mismatch(f"axis={ax} out of range [{-len(s) - 1}, {len(s)}] for data {s}")
        ax = ax % (len(s) + 1)
        assign(outs, 0, tuple(s[:ax]) + (1,) + tuple(s[ax:]), "output")
    return ins, outs


def _squeeze_shape(attrs, ins, outs):
    s = ins[0]
    if s is not None:
        if attrs["axis"] is None:
            drop = {i for i, d in enumerate(s) if d == 1}
        else:
            ax = attrs["axis"] if isinstance(attrs["axis"], tuple) else (attrs["axis"],)
            drop = {norm_axis(a, len(s)) for a in ax}
            for a in drop:
                if s[a] != 1:
                    raise Mismatch(f"cannot squeeze axis {a} of data {s}: its size is not 1")
        assign(outs, 0, tuple(d for i, d in enumerate(s) if i not in drop) or (1,), "output")
    return ins, outs


def _reshape_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], ins[0].reshape(outs[0].shape))


for _name, _params, _shape, _doc in [
        ("expand_dims", {"axis": Param(Int)}, _expand_shape,
         "Insert a size-1 axis at ``axis`` (in [-ndim-1, ndim])."),
        ("squeeze", {"axis": Param(Axis, None)}, _squeeze_shape,
         "Remove size-1 axes (``axis``: those; all squeezed gives shape (1,)).")]:
    op_with_backward(_name, _params, _shape, _reshape_fwd, _reshape_fwd, [], _doc,
                     inplace=[(0, 0)])


# -------------------------------------------------------------------- SwapAxis
_SWAP = {"dim1": Param(Int, 0), "dim2": Param(Int, 0)}


def _swap_axes(attrs, nd):
    return norm_axis(attrs["dim1"], nd, "dim1"), norm_axis(attrs["dim2"], nd, "dim2")


def _swap_shape(attrs, ins, outs):
    s = ins[0]
    if s is not None:
        a, b = _swap_axes(attrs, len(s))
        o = list(s)
        o[a], o[b] = o[b], o[a]
        assign(outs, 0, tuple(o), "output")
    return ins, outs


def _swap_fwd(rc, attrs, ins, outs):
    a, b = _swap_axes(attrs, ins[0].ndim)
    copy_into(rc.xp, outs[0], rc.xp.swapaxes(ins[0], a, b))


op_with_backward("SwapAxis", _SWAP, _swap_shape, _swap_fwd, _swap_fwd, [],
                 "Swap axes ``dim1`` and ``dim2``.")


# --------------------------------------------------------------- repeat, tile
_REPEAT = {"repeats": Param(Int), "axis": Param(OptInt, None)}


def _repeat_shape(attrs, ins, outs):
    s, r = ins[0], attrs["repeats"]
    if r < 1:
        raise Mismatch(f"repeats must be positive, got {r}")
    if s is not None:
        if attrs["axis"] is None:
            o = (math.prod(s) * r,)
        else:
            ax = norm_axis(attrs["axis"], len(s))
            o = tuple(d * r if i == ax else d for i, d in enumerate(s))
        assign(outs, 0, o, "output")
    return ins, outs


def _repeat_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], rc.xp.repeat(ins[0], attrs["repeats"], axis=attrs["axis"]))


def _repeat_bwd(rc, attrs, ins, outs):
    out, r = outs[0], attrs["repeats"]
    if attrs["axis"] is None:
        g = ins[0].reshape(-1, r).sum(axis=1)
    else:
        ax = attrs["axis"] % out.ndim
        s = out.shape
        g = ins[0].reshape(s[:ax] + (s[ax], r) + s[ax + 1:]).sum(axis=ax + 1)
    copy_into(rc.xp, out, g.reshape(out.shape))


op_with_backward("repeat", _REPEAT, _repeat_shape, _repeat_fwd, _repeat_bwd, [],
                 "Repeat each element ``repeats`` times along ``axis`` (None: of the "
                 "flattened data).")


def _tile_geom(s, reps):
    n = max(len(s), len(reps))
    return (1,) * (n - len(s)) + tuple(s), (1,) * (n - len(reps)) + tuple(reps)


def _tile_shape(attrs, ins, outs):
    if ins[0] is not None:
        if any(r < 1 for r in attrs["reps"]):
            raise Mismatch(f"reps must be positive, got {attrs['reps']}")
        s, r = _tile_geom(ins[0], attrs["reps"])
        assign(outs, 0, tuple(a * b for a, b in zip(s, r)), "output")
    return ins, outs


def _tile_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], rc.xp.tile(ins[0], attrs["reps"]))


def _tile_bwd(rc, attrs, ins, outs):
    s, r = _tile_geom(outs[0].shape, attrs["reps"])
    g = ins[0].reshape(tuple(v for pair in zip(r, s) for v in pair))
    copy_into(rc.xp, outs[0], g.sum(axis=tuple(range(0, 2 * len(s), 2))).reshape(outs[0].shape))


op_with_backward("tile", {"reps": Param(Shape)}, _tile_shape, _tile_fwd, _tile_bwd, [],
                 "Tile data ``reps`` times per axis, like numpy.tile.")


# ------------------------------------------------------------------------- Pad
_PAD = {"mode": Param(Choice("constant", "edge", "reflect")), "pad_width": Param(Shape),
        "constant_value": Param(Float, 0.0)}


def _pad_pairs(attrs, s):
    pw = attrs["pad_width"]
    if len(s) not in (4, 5):
        raise Mismatch(f"data: only 4-d or 5-d input can be padded, got {s}")
    if len(pw) != 2 * len(s):
        raise Mismatch(f"pad_width={pw} needs {2 * len(s)} values for data {s}")
    if any(pw[:4]):
        raise Mismatch(f"pad_width={pw}: the first two axes cannot be padded")
    pairs = [(pw[2 * i], pw[2 * i + 1]) for i in range(len(s))]
    if attrs["mode"] == "reflect" and any(max(p) >= d for p, d in zip(pairs, s) if any(p)):
        raise Mismatch(f"pad_width={pw}: reflect padding must be smaller than each padded "
                       f"dimension of {s}")
    return pairs


def _pad_shape(attrs, ins, outs):
    if ins[0] is not None:
        pairs = _pad_pairs(attrs, ins[0])
        assign(outs, 0, tuple(d + a + b for d, (a, b) in zip(ins[0], pairs)), "output")
    return ins, outs


def _pad_fwd(rc, attrs, ins, outs):
    pairs = _pad_pairs(attrs, ins[0].shape)
    kw = {"constant_values": attrs["constant_value"]} if attrs["mode"] == "constant" else {}
    copy_into(rc.xp, outs[0], rc.xp.pad(ins[0], pairs, mode=attrs["mode"], **kw))


def _pad_bwd(rc, attrs, ins, outs):
    xp, g, out = rc.xp, ins[0], outs[0]
    pairs = _pad_pairs(attrs, out.shape)
    for ax, (a, b) in enumerate(pairs):     # the adjoint of padding, one axis at a time
        if not a and not b:
            continue
        n = out.shape[ax]
        if attrs["mode"] == "constant":
            g = g[(slice(None),) * ax + (slice(a, a + n),)]
            continue
        src = numpy.pad(numpy.arange(n), (a, b), mode=attrs["mode"])
        acc = xp.zeros(g.shape[:ax] + (n,) + g.shape[ax + 1:], dtype=g.dtype)
        scatter_add(xp, xp.moveaxis(acc, ax, 0), rc.from_host(src), xp.moveaxis(g, ax, 0))
        g = acc
    copy_into(xp, out, g)


op_with_backward("Pad", _PAD, _pad_shape, _pad_fwd, _pad_bwd, [],
                 "Pad the spatial axes of 4-d/5-d data (pad_width: before/after per axis, "
                 "the first four 0) with ``constant_value``, the edge values or their "
                 "reflection.")


# ----------------------------------------------------------------------- stack
def _stack_args(attrs):
    return [f"arg{i}" for i in range(attrs["num_args"])]


def _stack_shape(attrs, ins, outs):
    known = next((s for s in ins if s is not None), None)
    if known is None and outs[0] is not None:
        ax = norm_axis(attrs["axis"], len(outs[0]))
        known = tuple(outs[0][:ax]) + tuple(outs[0][ax + 1:])
    if known is not None:
        for i in range(len(ins)):
            assign(ins, i, tuple(known), f"arg{i}")
        ax = attrs["axis"]
        if not -len(known) - 1 <= ax <= len(known):
            raise Mismatch(f"axis={ax} out of range for stacking {len(known)}-d arrays")
        ax %= len(known) + 1
        assign(outs, 0, tuple(known[:ax]) + (len(ins),) + tuple(known[ax:]), "output")
    return ins, outs


def _stack_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], rc.xp.stack(ins, axis=attrs["axis"]))


def _stack_bwd(rc, attrs, ins, outs):
    ax = attrs["axis"] % ins[0].ndim
    for i, o in enumerate(outs):
        copy_into(rc.xp, o, ins[0][(slice(None),) * ax + (i,)])


_STACK = {"axis": Param(Int, 0), "num_args": Param(Int)}
backward_op("_backward_stack", _STACK, ("out_grad",), _stack_args, _stack_bwd,
            doc="Gradient of stack: the head gradient split along ``axis``.")
register(OpDef("stack", params=_STACK, arguments=_stack_args, forward=_stack_fwd,
               infer_shape=_stack_shape, variadic="num_args",
               gradient=grad_by("_backward_stack", []),
               doc="Stack ``num_args`` arrays of one shape along a new axis ``axis``."))


# ------------------------------------------------------------------------ take
_TAKE = {"axis": Param(Int, 0), "mode": Param(Choice("clip", "raise", "wrap"), "clip")}


def _take_shape(attrs, ins, outs):
    a, idx = ins
    if a is not None and idx is not None:
        ax = norm_axis(attrs["axis"], len(a))
        assign(outs, 0, tuple(a[:ax]) + tuple(idx) + tuple(a[ax + 1:]), "output")
    return ins, outs


def _take_type(attrs, ins, outs):
    t = ins[0] if ins[0] is not None else outs[0]
    if t is not None:
        assign(ins, 0, t, "a")
        assign(outs, 0, t, "output")
    return ins, outs


def _take_index(xp, attrs, idx, n):
    i = idx.astype(xp.int64)        # float indices truncate toward zero, as MXNet casts
    if attrs["mode"] == "wrap":
        return xp.mod(i, n)
    if attrs["mode"] == "raise" and bool(((i < 0) | (i >= n)).any()):
        raise IndexError(f"take: an index is out of range [0, {n}) (mode='raise')")
    return xp.clip(i, 0, n - 1)


def _take_fwd(rc, attrs, ins, outs):
    a, idx = ins
    ax = attrs["axis"] % a.ndim
    copy_into(rc.xp, outs[0], rc.xp.take(a, _take_index(rc.xp, attrs, idx, a.shape[ax]),
                                         axis=ax))


def _take_bwd(rc, attrs, ins, outs):
    xp, (g, idx), (da, di) = rc.xp, ins, outs
    ax = attrs["axis"] % da.ndim
    i = _take_index(xp, attrs, idx, da.shape[ax]).reshape(-1)
    da.fill(0)
    gm = xp.moveaxis(g.reshape(g.shape[:ax] + (i.size,) + g.shape[ax + idx.ndim:]), ax, 0)
    scatter_add(xp, xp.moveaxis(da, ax, 0), i, gm)
    di.fill(0)


op_with_backward("take", _TAKE, _take_shape, _take_fwd, _take_bwd, [("in", 1)],
                 "Pick slices of ``a`` along ``axis`` at ``indices`` (clip, wrap, or raise "
                 "when out of range); indices get no gradient.", arguments=("a", "indices"),
                 skip=(1,), infer_type=_take_type)


# ---------------------------------------------------------- _zeros, _ones, _full
def _const_shape(attrs, ins, outs):
    want = attrs["shape"]
    if want is None or len(want) == 0:
        if outs[0] is None:
            return ins, outs
        want = outs[0]
    if outs[0] is None:
        if 0 not in want:
            outs[0] = tuple(want)
    elif len(outs[0]) != len(want) or any(w not in (0, o) for w, o in zip(want, outs[0])):
        # 0 marks a dimension unknown until the consumer tells it (Gluon's begin states)
        raise Mismatch(f"output: expected {tuple(want)} (0: unknown), got {outs[0]}")
    return ins, outs


def _const_type(attrs, ins, outs):
    assign(outs, 0, numpy.dtype(attrs["dtype"]), "output")
    return ins, outs


def _const_fwd(value):
    def forward(rc, attrs, ins, outs):
        outs[0].fill(attrs["value"] if value is None else value)
    return forward


for _name, _value, _extra in [("_zeros", 0, {}), ("_ones", 1, {}),
                              ("_full", None, {"value": Param(Float)})]:
    register(OpDef(_name, params=dict({"shape": Param(ShapeOrNone,
                                                      () if _value is not None else None),
                                       "dtype": Param(DType, "float32")}, **_extra),
                   arguments=(), forward=_const_fwd(_value), infer_shape=_const_shape,
                   infer_type=_const_type, ignored_params=("ctx",),
                   doc=f"An array of {'``value``' if _value is None else _value}s of ``shape`` "
                       "and ``dtype``; a 0 in shape is a dimension inferred from the consumer."))
