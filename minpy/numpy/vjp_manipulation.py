"""Gradients of array manipulation: shape changes, joining and splitting,
tiling and repeating, flips and rolls, differences, copies and
casts (sorting, diagonals, insert/delete/append are in vjp_indexing.py).

Every rule is written against minpy's own namespace, so gradients of any
order flow through them. Selections that NumPy performs with index logic
(resize, block ...) are differentiated
through an *index map*: the same NumPy function applied on the host to an
array of element numbers, whose adjoint is a scatter-add
(:func:`minpy.numpy.vjp_indexing.gather_vjp`).
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numpy

from ..core.array import Array
from ..core.ops import ASTYPE as _ASTYPE, COPY as _COPY, VIEW as _VIEW
from .fronts import block_leaves, rebuild_nested
from ..core.autograd import defvjp
import minpy.numpy as mnp
from .rule_helpers import (cast_like as _cast_like, host, nograd, per_item,
                           reshape_like as _reshape_like, shape_of as _shape, unbroadcast)
from .vjp_indexing import gather_vjp, scatter_add

_NOVALUE = numpy._NoValue
_MAX_VARARGS = 32       # positional rules registered for ``*arys`` functions


# ---------------------------------------------------------------- helpers
def _is_array(x):
    return type(x) is Array


def _item_shapes(seq):
    """Shapes of the items of a sequence argument (an Array counts as the list of its rows)."""
    if _is_array(seq):
        return [seq.shape[1:]] * seq.shape[0]
    return [_shape(a) for a in seq]


def _for_seq(pieces, seq):
    """Per-item gradients: a list for a list argument, their stack for an Array argument."""
    if _is_array(seq):
        return mnp.stack([mnp.reshape(p, seq.shape[1:]) for p in pieces])
    return [mnp.reshape(p, _shape(a)) for p, a in zip(pieces, seq)]


def _split_along(g, sizes, axis):
    """``g`` cut along ``axis`` into pieces of the given sizes."""
    if len(sizes) == 1:
        return [g]
    return mnp.split(g, list(numpy.cumsum(sizes)[:-1]), axis=axis)


def _varargs(fn, make):
    """Register ``make(i)`` as the rule of positional argument i (``*arys`` functions)."""
    defvjp(fn, *[make(i) for i in range(_MAX_VARARGS)])


# ---------------------------------------------------------------- shape only
def _order_of(a, order):
    if order == "A":
        f = a._data.flags
        return "F" if f.f_contiguous and not f.c_contiguous else "C"
    return order


def _reshape_vjp(ans, a, shape=None, order="C", **kw):
    o = _order_of(a, order)
    return lambda g: mnp.reshape(g, _shape(a), order=o)


def _ravel_vjp(ans, a, order="C"):
    shape = _shape(a)
    if order == "K":
        f = a._data.flags
        if f.c_contiguous:
            order = "C"
        elif f.f_contiguous:
            order = "F"
        else:
            # memory order: axes by decreasing |stride|, each read in its logical direction
            perm = sorted(range(len(shape)), key=lambda i: -abs(a._data.strides[i]))
            inv = list(numpy.argsort(perm))
            pshape = tuple(shape[i] for i in perm)
            return lambda g: mnp.transpose(mnp.reshape(g, pshape), inv)
    o = _order_of(a, order)
    return lambda g: mnp.reshape(g, shape, order=o)


def _same_shape_vjp(ans, a, *args, **kwargs):
    return lambda g: _reshape_like(g, a)


def _transpose_vjp(ans, a, axes=None):
    if axes is None:
        return lambda g: mnp.transpose(g)
    inv = list(numpy.argsort([ax % len(axes) for ax in axes]))
    return lambda g: mnp.transpose(g, inv)


def _rollaxis_vjp(ans, a, axis, start=0):
    n = a.ndim
    axis %= n
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    perm = [i for i in range(n) if i != axis]
    perm.insert(start, axis)
    inv = list(numpy.argsort(perm))
    return lambda g: mnp.transpose(g, inv)


defvjp(mnp.reshape, _reshape_vjp)
defvjp(mnp.ravel, _ravel_vjp)
defvjp(mnp.transpose, _transpose_vjp)
defvjp(mnp.permute_dims, _transpose_vjp)
defvjp(mnp.matrix_transpose, lambda ans, x: lambda g: mnp.matrix_transpose(g))
defvjp(mnp.moveaxis, lambda ans, a, source, destination:
       lambda g: mnp.moveaxis(g, destination, source))
defvjp(mnp.swapaxes, lambda ans, a, axis1, axis2: lambda g: mnp.swapaxes(g, axis1, axis2))
defvjp(mnp.rollaxis, _rollaxis_vjp)
defvjp(mnp.squeeze, _same_shape_vjp)
defvjp(mnp.expand_dims, _same_shape_vjp)
defvjp(mnp.broadcast_to, lambda ans, array, shape, subok=False:
       lambda g: unbroadcast(g, array))


def _atleast(i):
    def maker(ans, *arys):
        if len(arys) == 1:
            return lambda g: _reshape_like(g, arys[0])
        return lambda g: _reshape_like(g[i], arys[i])
    return maker


for _f in (mnp.atleast_1d, mnp.atleast_2d, mnp.atleast_3d):
    _varargs(_f, _atleast)
_varargs(mnp.broadcast_arrays,
         lambda i: lambda ans, *args, subok=False: lambda g: unbroadcast(g[i], args[i]))


# ---------------------------------------------------------------- joining
def _concatenate_vjp(ans, arrays, axis=0, out=None, dtype=None, casting=None):
    shapes = _item_shapes(arrays)

    def vjp(g):
        if axis is None:
            return _for_seq(_split_along(g, [int(numpy.prod(s)) for s in shapes], 0), arrays)
        ax = axis % g.ndim
        return _for_seq(_split_along(g, [s[ax] for s in shapes], ax), arrays)
    return vjp


def _stack_vjp(ans, arrays, axis=0, out=None, dtype=None, casting=None):
    return lambda g: _for_seq(mnp.unstack(g, axis=axis % g.ndim), arrays)


def _joined(promote, axis_of):
    """Rule for vstack/hstack/dstack/column_stack: promote each input, then concatenate."""
    def maker(ans, tup, dtype=None, casting=None):
        promoted = [promote(s) for s in _item_shapes(tup)]
        ax = axis_of(promoted)
        return lambda g: _for_seq(_split_along(g, [p[ax] for p in promoted], ax), tup)
    return maker


def _at_least(n):
    return lambda s: (1,) * (n - len(s)) + s if len(s) < n else s


def _at_least_3(s):
    return {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s)


defvjp(mnp.concatenate, _concatenate_vjp)
defvjp(mnp.concat, _concatenate_vjp)
defvjp(mnp.stack, _stack_vjp)
defvjp(mnp.vstack, _joined(_at_least(2), lambda p: 0))
if hasattr(numpy, "row_stack"):         # removed in NumPy 2.5
    defvjp(mnp.row_stack, _joined(_at_least(2), lambda p: 0))
defvjp(mnp.hstack, _joined(_at_least(1), lambda p: 0 if len(p[0]) == 1 else 1))
defvjp(mnp.dstack, _joined(_at_least_3, lambda p: 2))
defvjp(mnp.column_stack, _joined(lambda s: s if len(s) >= 2 else (int(numpy.prod(s)), 1),
                                 lambda p: 1))


# ---------------------------------------------------------------- block
def _block_map(structure, leaves):
    """Index map of ``block``: element numbers of the concatenated flat leaves."""
    sizes = [int(numpy.prod(_shape(x))) for x in leaves]
    starts = numpy.concatenate([[0], numpy.cumsum(sizes)]).astype(numpy.int64)
    numbered = [numpy.arange(starts[k], starts[k + 1]).reshape(_shape(x))
                for k, x in enumerate(leaves)]
    return numpy.block(rebuild_nested(structure, numbered)), sizes


def _block_grads(g, structure, leaves):
    imap, sizes = _block_map(structure, leaves)
    flat = gather_vjp(g, imap, int(sum(sizes)))
    return [mnp.reshape(p, _shape(x)) if _is_array(x) else None
            for p, x in zip(_split_along(flat, sizes, 0), leaves)]


def _block_vjp(ans, arrays):
    # reached for a block or a flat list of blocks (deeper nesting: ``block`` below)
    if type(arrays) is not list:
        return lambda g: _reshape_like(g, arrays)
    return lambda g: _block_grads(g, arrays, arrays)


defvjp(mnp.block, _block_vjp)
defvjp(block_leaves, lambda ans, leaves, structure:
       lambda g: _block_grads(g, structure, leaves), nograd(1))
# ---------------------------------------------------------------- splitting
def _split_vjp(axis_of):
    def maker(ans, ary, indices_or_sections, axis=0):
        ax = axis_of(ary, axis)
        return lambda g: mnp.concatenate(list(g), axis=ax)
    return maker


defvjp(mnp.split, _split_vjp(lambda a, axis: axis))
defvjp(mnp.array_split, _split_vjp(lambda a, axis: axis))
defvjp(mnp.hsplit, _split_vjp(lambda a, axis: 1 if a.ndim > 1 else 0))
defvjp(mnp.vsplit, _split_vjp(lambda a, axis: 0))
defvjp(mnp.dsplit, _split_vjp(lambda a, axis: 2))
defvjp(mnp.unstack, lambda ans, x, axis=0: lambda g: mnp.stack(list(g), axis=axis))


# ---------------------------------------------------------------- tile, repeat, resize
def _tile_vjp(ans, A, reps):
    shape = _shape(A)
    tup = (reps,) if numpy.ndim(reps) == 0 else tuple(reps)
    d = max(len(tup), len(shape))
    tup = (1,) * (d - len(tup)) + tuple(int(r) for r in tup)
    padded = (1,) * (d - len(shape)) + shape
    inter = tuple(v for pair in zip(tup, padded) for v in pair)

    def vjp(g):
        return mnp.reshape(mnp.sum(mnp.reshape(g, inter), axis=tuple(range(0, 2 * d, 2))), shape)
    return vjp


def _repeat_vjp(ans, a, repeats, axis=None):
    shape = _shape(a)
    work = (int(numpy.prod(shape)),) if axis is None else shape
    ax = 0 if axis is None else axis % len(shape)
    r = numpy.asarray(host(repeats))
    if r.size == 1:
        k = int(r.reshape(()))
        split = work[:ax] + (work[ax], k) + work[ax + 1:]
        return lambda g: mnp.reshape(mnp.sum(mnp.reshape(g, split), axis=ax + 1), shape)
    key = (slice(None),) * ax + (numpy.repeat(numpy.arange(work[ax]), r),)
    return lambda g: mnp.reshape(scatter_add(g, work, key), shape)


def _resize_vjp(ans, a, new_shape):
    shape = _shape(a)
    size = int(numpy.prod(shape))
    imap = numpy.resize(numpy.arange(size), new_shape) if size else \
        numpy.full(ans.shape, -1)
    return lambda g: mnp.reshape(gather_vjp(g, imap, size), shape)


defvjp(mnp.tile, _tile_vjp)
defvjp(mnp.repeat, _repeat_vjp, nograd(1))
defvjp(mnp.resize, _resize_vjp)


# pad: see vjp_composite.py


# ---------------------------------------------------------------- flips, rolls
def _negate(shift):
    if numpy.ndim(shift) == 0:
        return -shift
    return tuple(-int(s) for s in numpy.asarray(host(shift)).ravel())


defvjp(mnp.flip, lambda ans, m, axis=None: lambda g: mnp.flip(g, axis))
defvjp(mnp.fliplr, lambda ans, m: lambda g: mnp.fliplr(g))
defvjp(mnp.flipud, lambda ans, m: lambda g: mnp.flipud(g))
defvjp(mnp.rot90, lambda ans, m, k=1, axes=(0, 1): lambda g: mnp.rot90(g, -k, axes))
defvjp(mnp.roll, lambda ans, a, shift, axis=None: lambda g: mnp.roll(g, _negate(shift), axis))


# ---------------------------------------------------------------- differences
def _diff_adjoint(g, n, axis):
    """Adjoint of ``diff(., n, axis)``: ``(-1)**n diff(pad(g, n), n)``."""
    pw = [(0, 0)] * g.ndim
    pw[axis] = (n, n)
    d = mnp.diff(mnp.pad(g, pw), n=n, axis=axis)
    return d if n % 2 == 0 else -d


def _diff_parts(which):
    def maker(ans, a, n=1, axis=-1, prepend=_NOVALUE, append=_NOVALUE):
        ax = axis % a.ndim

        def count(x):
            if x is _NOVALUE:
                return 0
            s = _shape(x)
            return 1 if len(s) == 0 else s[ax]
        npre, nmid = count(prepend), a.shape[ax]
        target = {"a": a, "prepend": prepend, "append": append}[which]

        def vjp(g):
            if n == 0:
                return g if which == "a" else None
            full = _diff_adjoint(g, n, ax)
            lo, hi = {"prepend": (0, npre), "a": (npre, npre + nmid),
                      "append": (npre + nmid, full.shape[ax])}[which]
            part = full[(slice(None),) * ax + (slice(lo, hi),)]
            return part if which == "a" else unbroadcast(part, target)
        return vjp
    return maker


defvjp(mnp.diff, _diff_parts("a"), None, None, _diff_parts("prepend"), _diff_parts("append"),
       prepend=_diff_parts("prepend"), append=_diff_parts("append"))


def _ediff1d_parts(which):
    def maker(ans, ary, to_end=None, to_begin=None):
        nb = 0 if to_begin is None else int(numpy.size(host(to_begin)))
        ne = 0 if to_end is None else int(numpy.size(host(to_end)))
        m = int(numpy.prod(_shape(ary)))
        target = {"ary": ary, "to_end": to_end, "to_begin": to_begin}[which]

        def vjp(g):
            if which == "to_begin":
                return _reshape_like(g[:nb], target)
            if which == "to_end":
                return _reshape_like(g[g.shape[0] - ne:], target)
            if m == 0:
                return mnp.zeros(_shape(ary), dtype=g.dtype)
            return _reshape_like(_diff_adjoint(g[nb:nb + m - 1], 1, 0), ary)
        return vjp
    return maker


defvjp(mnp.ediff1d, _ediff1d_parts("ary"), _ediff1d_parts("to_end"),
       _ediff1d_parts("to_begin"), to_end=_ediff1d_parts("to_end"),
       to_begin=_ediff1d_parts("to_begin"))


def _gradient_vjp(ans, f, *varargs, axis=None, edge_order=1):
    # numpy.gradient is linear along each axis: out_i = M_i f along axis i, with
    # M_i = numpy.gradient(eye(n_i), spacing_i); its adjoint is M_i^T.
    nd = f.ndim
    axes = tuple(range(nd)) if axis is None else tuple(
        a % nd for a in ((axis,) if numpy.ndim(axis) == 0 else axis))
    spacing = [host(v) for v in varargs]
    if len(spacing) == 0:
        spacing = [1.0] * len(axes)
    elif len(spacing) == 1 and numpy.ndim(spacing[0]) == 0:
        spacing = spacing * len(axes)
    mats = [numpy.gradient(numpy.eye(f.shape[ax]), sp, axis=0, edge_order=edge_order)
            for ax, sp in zip(axes, spacing)]

    def vjp(g):
        gs = (g,) if len(axes) == 1 else tuple(g)
        total = None
        for gi, ax, M in zip(gs, axes, mats):
            m = mnp.asarray(M.astype(numpy.result_type(M.dtype, gi.dtype)))
            part = mnp.moveaxis(mnp.matmul(mnp.moveaxis(gi, ax, -1), m), -1, ax)
            total = part if total is None else total + part
        return total
    return vjp


defvjp(mnp.gradient, _gradient_vjp)


def _trim_zeros_vjp(ans, filt, trim="fb", axis=None):
    h = numpy.asarray(host(filt))
    nz = numpy.nonzero(h)
    axes = range(h.ndim) if axis is None else [a % h.ndim for a in numpy.atleast_1d(axis)]
    start = [0] * h.ndim
    for d in axes:
        if "f" in trim.lower() and nz[d].size:
            start[d] = int(nz[d].min())
    key = tuple(slice(s, s + n) for s, n in zip(start, ans.shape))
    return lambda g: scatter_add(g, h.shape, key)


defvjp(mnp.trim_zeros, _trim_zeros_vjp)


# ---------------------------------------------------------------- copies, conversions, casts
def _identity_vjp(ans, a, *args, **kwargs):
    if isinstance(a, (list, tuple)):
        return lambda g: per_item(g, a)
    return lambda g: _cast_like(_reshape_like(g, a), a)


for _f in (mnp.copy, mnp.array, mnp.asarray, mnp.asanyarray, mnp.ascontiguousarray,
           mnp.asfortranarray, mnp.require, mnp.asarray_chkfinite, _COPY):
    defvjp(_f, _identity_vjp)


def _astype_vjp(ans, x, dtype, *args, **kwargs):
    if not numpy.issubdtype(ans.dtype, numpy.inexact):
        return lambda g: None                 # cast to integers/bools: piecewise constant
    return lambda g: _cast_like(g, x)


def _view_vjp(ans, x, *args, **kwargs):
    dtype = kwargs.get("dtype", args[0] if args else None)
    if isinstance(dtype, type) and issubclass(dtype, numpy.ndarray):
        dtype = None                          # view(type=...): same values
    if dtype is not None and numpy.dtype(dtype) != x.dtype:
        raise TypeError(f"minpy.grad: a view as another dtype ({x.dtype} -> "
                        f"{numpy.dtype(dtype)}) cannot be differentiated")
    return lambda g: g


defvjp(_ASTYPE, _astype_vjp)
defvjp(mnp.astype, _astype_vjp)
defvjp(_VIEW, _view_vjp)

table_ends(__name__)
