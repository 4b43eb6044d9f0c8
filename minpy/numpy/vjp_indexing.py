"""Gradients of indexing: ``x[key]``, ``x[key] = v`` under a tape, and NumPy's
indexing routines (take, take_along_axis, compress, extract, choose, select), sorting
(sort, partition: the gradient follows the permutation), diagonals and
triangles (diagonal, diag, diagflat, trace, triu, tril), insert/delete/append
(through index maps, see :func:`gather_vjp`), plus the index-producing
functions, which carry no gradient.

The VJP of a gather is a scatter-add into zeros. It is its own primitive,
:func:`scatter_add`, whose VJP is the gather again, so gradients of any order
flow through indexing. Repeated integer indices accumulate (``add.at``).
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numpy

from ..core.array import Array
from ..core.ops import GETITEM as _GETITEM
from ..core.autograd import defvjp, def_nondiff
from ..core.ops import INDEX_UPDATE
from ..core.call import call
from ..core.wrappers import make_function
import minpy.numpy as mnp
from .rule_helpers import cast_like, host, no_gradient, nograd, per_item, reshape_like, shape_of, unbroadcast

__all__ = ["scatter_add", "gather_vjp", "index_update"]


# ---------------------------------------------------------------- helpers


def _basic_key(key):
    """True when ``key`` (a tuple of backend-level items) cannot select an element twice."""
    for k in key:
        if k is None or k is Ellipsis or type(k) is slice or isinstance(k, (int, numpy.integer)):
            continue
        if getattr(k, "dtype", None) is not None and k.dtype == numpy.bool_:
            continue
        return False
    return True


def _scatter_add_forward(xp, g, shape, key):
    out = xp.zeros(shape, dtype=g.dtype)
    k = key if type(key) is tuple else (key,)
    if _basic_key(k):
        out[k] = g
        return out
    if xp is not numpy:                     # index lists as device arrays (empty: integer)
        k = tuple(xp.asarray(e, dtype=None if e else numpy.intp) if type(e) is list else e
                  for e in k)
    at = getattr(xp.add, "at", None)
    if at is not None and xp is not numpy and out.dtype.kind == "c":
        at(out.real, k, g.real)             # CuPy's add.at takes no complex data
        at(out.imag, k, g.imag)
    elif at is not None:
        at(out, k, g)
    else:                                   # CuPy before ufunc.at
        import cupyx
        cupyx.scatter_add(out, k, g)
    return out


scatter_add = make_function("scatter_add", None, forward=_scatter_add_forward,
                            name="scatter_add", doc="""\
Zeros of ``shape`` (``g``'s dtype) with ``g`` added at ``out[key]``; repeated
integer indices accumulate. The adjoint of ``x[key]``; its own VJP is ``gg[key]``.

Args:
    g: the values, shaped like ``zeros(shape)[key]``.
    shape: the output shape.
    key: any NumPy index (ints, slices, Ellipsis, None, integer or boolean arrays).
Returns:
    An Array of ``shape``. See also numpy.add.at.
""")


def gather_vjp(g, index_map, size):
    """Adjoint of ``out = flat[index_map]`` with entries ``-1`` meaning "not from here".

    ``index_map`` is a host integer array shaped like ``g`` giving, for each
    output element, the flat index of the input element it was copied from.
    Returns the gradient of the flat input (length ``size``), differentiable.
    """
    imap = numpy.asarray(index_map).reshape(-1)
    gflat = mnp.reshape(g, (-1,))
    keep = imap >= 0
    if not keep.all():
        sel = numpy.flatnonzero(keep)
        gflat = gflat[sel]
        imap = imap[sel]
    return scatter_add(gflat, (size,), (imap,))


def index_update(x, key, value):
    """``x`` with ``x[key] = value`` applied to a copy (differentiable in ``x`` and ``value``)."""
    return call(INDEX_UPDATE, (x, key, value), {})


def _as_tuple(key):
    return key if type(key) is tuple else (key,)


defvjp(scatter_add, lambda ans, g, shape, key: lambda gg: gg[key], nograd(1), nograd(2))


# ---------------------------------------------------------------- x[key]
def _listless(key):
    """``key`` with Python lists of indices made host Arrays, so that the dispatch moves
    them to ``g``'s device with a counted copy (a list cannot travel by itself)."""
    if type(key) is list:
        return mnp.asarray(numpy.asarray(key, dtype=None if key else numpy.intp))
    if type(key) is tuple and any(type(e) is list for e in key):
        return tuple(_listless(e) if type(e) is list else e for e in key)
    return key


def _getitem_vjp(ans, x, key):
    shape = x.shape
    key = _listless(key)
    return lambda g: scatter_add(g, shape, key)


defvjp(_GETITEM, _getitem_vjp, nograd(1))


# ---------------------------------------------------------------- x[key] = v
def _update_x_vjp(ans, x, key, value):
    return lambda g: index_update(g, key, 0)


def _update_value_vjp(ans, x, key, value):
    if type(value) is not Array:
        return no_gradient
    if _basic_key(tuple(host(k) for k in _as_tuple(key))):
        return lambda g: unbroadcast(g[key], value)
    # integer arrays may write one element several times: only the write that
    # survives gets the gradient. Replay the write with element numbers.
    hkey = host(key)
    target = numpy.full(x.shape, -1, dtype=numpy.int64)
    vshape = numpy.broadcast_shapes(value.shape, target[hkey].shape)
    target[hkey] = numpy.arange(int(numpy.prod(vshape)), dtype=numpy.int64).reshape(vshape)
    imap = target

    def vjp(g):
        gvb = gather_vjp(g, imap, int(numpy.prod(vshape)))
        return unbroadcast(mnp.reshape(gvb, vshape), value)
    return vjp


defvjp(INDEX_UPDATE, _update_x_vjp, nograd(1), _update_value_vjp)


# ---------------------------------------------------------------- take family
def _axis_key(axis, ndim, index):
    ax = axis % ndim
    return (slice(None),) * ax + (index,)


def _take_vjp(ans, a, indices, axis=None, out=None, mode="raise"):
    shape = a.shape
    idx = indices
    if mode != "raise":
        n = a.size if axis is None else shape[axis % len(shape)]
        idx = numpy.asarray(host(idx))
        idx = idx % n if mode == "wrap" else numpy.clip(idx, 0, n - 1)

    def vjp(g):
        if axis is None:
            return mnp.reshape(scatter_add(g, (a.size,), (idx,)), shape)
        return scatter_add(g, shape, _axis_key(axis, len(shape), idx))
    return vjp


defvjp(mnp.take, _take_vjp, nograd(1))


def _along_axis_key(shape, indices, axis):
    """The fancy index that ``take_along_axis(arr, indices, axis)`` gathers with."""
    nd = indices.ndim
    key = []
    for dim, n in enumerate(shape):
        if dim == axis:
            key.append(indices)
        else:
            key.append(numpy.arange(n).reshape((1,) * dim + (-1,) + (1,) * (nd - dim - 1)))
    return tuple(key)


def _take_along_axis_vjp(ans, arr, indices, axis=-1):
    shape = arr.shape
    idx = indices if type(indices) is Array else numpy.asarray(indices)

    def vjp(g):
        if axis is None:
            return mnp.reshape(scatter_add(g, (arr.size,), (idx,)), shape)
        return scatter_add(g, shape, _along_axis_key(shape, idx, axis % len(shape)))
    return vjp


defvjp(mnp.take_along_axis, _take_along_axis_vjp, nograd(1))


def _compress_vjp(ans, condition, a, axis=None, out=None):
    shape = a.shape
    idx = numpy.flatnonzero(numpy.asarray(host(condition)))

    def vjp(g):
        if axis is None:
            return mnp.reshape(scatter_add(g, (a.size,), (idx,)), shape)
        return scatter_add(g, shape, _axis_key(axis, len(shape), idx))
    return vjp


defvjp(mnp.compress, nograd(0), _compress_vjp)


def _extract_vjp(ans, condition, arr):
    shape = numpy.shape(arr)
    idx = numpy.flatnonzero(numpy.ravel(host(condition)))
    size = int(numpy.prod(shape))
    return lambda g: mnp.reshape(scatter_add(g, (size,), (idx,)), shape)


defvjp(mnp.extract, nograd(0), _extract_vjp)


def _choose_vjp(ans, a, choices, out=None, mode="raise"):
    n = len(choices)
    sel = numpy.asarray(host(a))
    if mode == "wrap":
        sel = sel % n
    elif mode == "clip":
        sel = numpy.clip(sel, 0, n - 1)
    sel = mnp.asarray(sel)

    def vjp(g):
        parts = [mnp.where(sel == i, g, 0) for i in range(n)]
        if type(choices) is Array:
            return unbroadcast(mnp.stack(parts), choices)
        return [unbroadcast(p, c) if type(c) is Array else None
                for p, c in zip(parts, choices)]
    return vjp


defvjp(mnp.choose, nograd(0), _choose_vjp)


def _select_masks(condlist, ans_shape):
    """For each choice, where it is the one picked; and where the default is."""
    taken = numpy.zeros(ans_shape, dtype=bool)
    masks = []
    for c in condlist:
        c = numpy.broadcast_to(numpy.asarray(host(c), dtype=bool), ans_shape)
        masks.append(c & ~taken)
        taken = taken | c
    return masks, ~taken


def _select_choices_vjp(ans, condlist, choicelist, default=0):
    masks, _ = _select_masks(condlist, ans.shape)

    def vjp(g):
        return [unbroadcast(mnp.where(m, g, 0), c) if type(c) is Array else None
                for m, c in zip(masks, choicelist)]
    return vjp


def _select_default_vjp(ans, condlist, choicelist, default=0):
    _, rest = _select_masks(condlist, ans.shape)
    return lambda g: unbroadcast(mnp.where(rest, g, 0), default)


defvjp(mnp.select, nograd(0), _select_choices_vjp, _select_default_vjp,
       default=_select_default_vjp)


# ---------------------------------------------------------------- sorting
def _unsort(g, inv, axis, shape):
    if axis is None:
        return mnp.reshape(mnp.take(g, inv), shape)
    return mnp.take_along_axis(g, inv, axis)


def _sort_vjp(ans, a, axis=-1, kind=None, order=None, *, stable=None):
    perm = mnp.argsort(a, axis=axis, kind="stable")
    inv = mnp.argsort(perm, axis=-1 if axis is None else axis)
    return lambda g: _unsort(g, inv, axis, a.shape)


def _partition_vjp(ans, a, kth, axis=-1, kind="introselect", order=None):
    # the element at each position of ``ans``: its rank among a's sorted values
    ax = -1 if axis is None else axis
    src = a if axis is not None else mnp.reshape(a, (-1,))
    ranks = mnp.argsort(mnp.argsort(ans, axis=ax, kind="stable"), axis=ax)
    perm = mnp.take_along_axis(mnp.argsort(src, axis=ax, kind="stable"), ranks, ax)
    inv = mnp.argsort(perm, axis=ax)
    return lambda g: _unsort(g, inv, axis, a.shape)


def _sort_complex_vjp(ans, a):
    inv = mnp.argsort(mnp.argsort(a, axis=-1, kind="stable"), axis=-1)
    return lambda g: cast_like(mnp.take_along_axis(g, inv, -1), a)


defvjp(mnp.sort, _sort_vjp)
defvjp(mnp.partition, _partition_vjp)
defvjp(mnp.sort_complex, _sort_complex_vjp)


# ---------------------------------------------------------------- diagonals, triangles
def _diag_scatter(g, shape, offset, axis1, axis2):
    """Zeros of ``shape`` with ``g`` on the ``offset`` diagonal of (axis1, axis2)."""
    nd = len(shape)
    a1, a2 = axis1 % nd, axis2 % nd
    n1, n2 = shape[a1], shape[a2]
    i0, j0 = max(-offset, 0), max(offset, 0)
    k = max(0, min(n1 - i0, n2 - j0))
    moved = tuple(s for d, s in enumerate(shape) if d not in (a1, a2)) + (n1, n2)
    key = (Ellipsis, numpy.arange(k) + i0, numpy.arange(k) + j0)
    return mnp.moveaxis(scatter_add(g, moved, key), (-2, -1), (a1, a2))


def _diagonal_vjp(ans, a, offset=0, axis1=0, axis2=1):
    return lambda g: _diag_scatter(g, a.shape, offset, axis1, axis2)


def _trace_vjp(ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    n1, n2 = a.shape[axis1], a.shape[axis2]
    k = max(0, min(n1 - max(-offset, 0), n2 - max(offset, 0)))

    def vjp(g):
        gd = mnp.broadcast_to(mnp.expand_dims(g, -1), g.shape + (k,))
        return _diag_scatter(gd, a.shape, offset, axis1, axis2)
    return vjp


def _diag_vjp(ans, v, k=0):
    if v.ndim == 1:
        return lambda g: mnp.diagonal(g, k)
    return lambda g: _diag_scatter(g, v.shape, k, 0, 1)


defvjp(mnp.diagonal, _diagonal_vjp)
defvjp(mnp.trace, _trace_vjp)
defvjp(mnp.diag, _diag_vjp)
defvjp(mnp.diagflat, lambda ans, v, k=0: lambda g: reshape_like(mnp.diagonal(g, k), v))
defvjp(mnp.triu, lambda ans, m, k=0: lambda g: unbroadcast(mnp.triu(g, k), m))
defvjp(mnp.tril, lambda ans, m, k=0: lambda g: unbroadcast(mnp.tril(g, k), m))


# ---------------------------------------------------------------- insert, delete, append
def _values_grad(gv, values):
    return per_item(gv, values) if isinstance(values, (list, tuple)) else \
        reshape_like(gv, values)


def _append_parts(which):
    def maker(ans, arr, values, axis=None):
        na = int(numpy.prod(shape_of(arr))) if axis is None else shape_of(arr)[axis % ans.ndim]

        def vjp(g):
            ax = 0 if axis is None else axis % g.ndim
            first, rest = mnp.split(g, [na], axis=ax)
            if which == "arr":
                return reshape_like(first, arr)
            return _values_grad(rest, values)
        return vjp
    return maker


def _insert_parts(which):
    def maker(ans, arr, obj, values, axis=None):
        shape, vshape = shape_of(arr), shape_of(values)
        size, vsize = int(numpy.prod(shape)), int(numpy.prod(vshape))
        o = host(obj)
        if which == "arr":
            imap = numpy.insert(numpy.arange(size).reshape(shape), o,
                                numpy.full(vshape, -1), axis)
            return lambda g: mnp.reshape(gather_vjp(g, imap, size), shape)
        imap = numpy.insert(numpy.full(shape, -1), o, numpy.arange(vsize).reshape(vshape), axis)
        return lambda g: _values_grad(mnp.reshape(gather_vjp(g, imap, vsize), vshape), values)
    return maker


def _delete_vjp(ans, arr, obj, axis=None):
    shape = shape_of(arr)
    size = int(numpy.prod(shape))
    imap = numpy.delete(numpy.arange(size).reshape(shape), host(obj), axis)
    return lambda g: mnp.reshape(gather_vjp(g, imap, size), shape)


defvjp(mnp.append, _append_parts("arr"), _append_parts("values"))
defvjp(mnp.insert, _insert_parts("arr"), nograd(1), _insert_parts("values"))
defvjp(mnp.delete, _delete_vjp, nograd(1))


# ---------------------------------------------------------------- index producers
# Their outputs are integer positions or booleans: no gradient flows through them.
def_nondiff(mnp.nonzero, mnp.argwhere, mnp.flatnonzero, mnp.ix_, mnp.argsort,
            mnp.argpartition, mnp.lexsort, mnp.searchsorted, mnp.ravel_multi_index,
            mnp.unravel_index, mnp.tril_indices_from, mnp.triu_indices_from,
            mnp.diag_indices_from)
# (unique & co. return values, which do have a gradient: see vjp_nondiff.py)
# where(condition) (one argument) returns indices; the condition never gets a
# gradient (the three-argument form's rules for x and y live with the math rules).
defvjp(mnp.where, nograd(0))

table_ends(__name__)
