"""Cross-device copies of arrays, cached per device until the array is written,
and the one function that moves a call's operands to its device.

Works on :class:`ArrayHolder` objects: one backend array (``_data``) and its
cached copies (``_copies``: None or {Context: (data, epoch)}); ``minpy.Array``
is one.
"""
import numpy

from . import state, versions
# (``dispatch.stats`` is the report function; the counters are in its module)
from .stats import count_copy, count_hit
from .backend import NUMPY, backend_for
from .context import Context, cpu

__all__ = ["ArrayHolder", "context_of", "backend_for", "data_on", "move_raw",
           "move_operands", "disown"]


class ArrayHolder:
    """Base of ``minpy.Array``: one backend array and its copies on other devices."""

    __slots__ = ("_data", "_copies")


def context_of(data):
    """The Context of a backend array."""
    g = state.process.gpu
    if g is not None and g.owns(data):
        return Context("gpu", g.device_id(data))
    return _CPU0


def _direction(src_ctx, dst_ctx):
    if src_ctx.device_type == "cpu":
        return "h2d" if dst_ctx.device_type == "gpu" else "h2h"
    return "d2h" if dst_ctx.device_type == "cpu" else "d2d"


def _copy(data, src_ctx, dst_ctx):
    src, dst = backend_for(src_ctx), backend_for(dst_ctx)
    host = src.to_host(data)
    out = dst.from_host(host, dst_ctx.device_id)
    count_copy(_direction(src_ctx, dst_ctx), int(getattr(data, "nbytes", 0)))
    return out


def data_on(arr, ctx):
    """The data of holder ``arr`` on ``ctx``: its own, a cached copy, or a new counted copy."""
    d = arr._data
    src_ctx = context_of(d)
    if src_ctx == ctx or (ctx.device_type == "cpu" and src_ctx.device_type == "cpu"):
        return d
    copies = arr._copies
    if copies is not None:
        hit = copies.get(ctx)
        if hit is not None and hit[1] == versions.epoch(d):
            count_hit(_direction(src_ctx, ctx))
            return hit[0]
    new = _copy(d, src_ctx, ctx)
    ep = versions.watch(d)
    if copies is None:
        copies = arr._copies = {}
    copies[ctx] = (new, ep)
    return new


def move_raw(data, ctx):
    """Copy a bare backend array (not a holder, so nothing to cache) to ``ctx``."""
    src_ctx = context_of(data)
    if src_ctx == ctx or (ctx.device_type == "cpu" and src_ctx.device_type == "cpu"):
        return data
    return _copy(data, src_ctx, ctx)


# ------------------------------------------------------------ a call's operands
def move_operands(args, kwargs, ctx, backend, elementwise_inputs=0):
    """The arguments of a call with every array on ``ctx`` (``backend`` serves it).

    Holders give their data there (cached copies); bare backend arrays are
    copied; lists and tuples are walked. The first ``elementwise_inputs``
    positional arguments are ufunc operands: on a GPU a list operand becomes
    one device array (GPU ufuncs take no lists).

    Returns ``(args, kwargs, moved)``: ``moved`` lists (holder, copy) for the
    holders served by a cross-device copy (see :func:`disown`).
    """
    moved = []
    cargs = [_to(a, ctx, backend, i < elementwise_inputs, moved) for i, a in enumerate(args)]
    ckw = {k: _to(v, ctx, backend, False, moved) for k, v in kwargs.items()} if kwargs \
        else kwargs
    return cargs, ckw, moved


def _to(obj, ctx, backend, listify, moved):
    t = type(obj)
    if isinstance(obj, ArrayHolder):
        d = data_on(obj, ctx)
        if d is not obj._data:
            moved.append((obj, d))
        return d
    if t is _ndarray or (state.process.gpu is not None and state.process.gpu.owns(obj)):
        return move_raw(obj, ctx)
    if t is tuple or t is list:
        if listify and backend is not NUMPY:
            return _device_operand(obj, ctx, backend, moved)
        return t([_to(e, ctx, backend, False, moved) for e in obj])
    return obj


def _device_operand(seq, ctx, backend, moved):
    """A list/tuple ufunc operand as one array on ``ctx``."""
    if not _holds_device_data(seq):
        return move_raw(_asarray(seq), ctx)       # one counted host -> device copy
    # CuPy's asarray takes a list only of device arrays of one shape (else it converts
    # through NumPy, which refuses device data): stack the elements on the device
    parts = []
    for e in seq:
        t = type(e)
        if t is list or t is tuple:
            parts.append(_device_operand(e, ctx, backend, moved))
        elif isinstance(e, ArrayHolder) or (state.process.gpu is not None
                                             and state.process.gpu.owns(e)):
            parts.append(_to(e, ctx, backend, False, moved))
        else:
            parts.append(move_raw(_asarray(e), ctx))
    shapes = {tuple(p.shape) for p in parts}
    if len(shapes) > 1:
        raise ValueError("setting an array element with a sequence. The requested array has "
                         "an inhomogeneous shape after 1 dimensions (element shapes "
                         f"{sorted(shapes)})")
    with backend.device(ctx.device_id):
        return backend.xp.stack(parts)


def _holds_device_data(seq):
    g = state.process.gpu
    for e in seq:
        t = type(e)
        if isinstance(e, ArrayHolder) or (g is not None and g.owns(e)):
            return True
        if (t is list or t is tuple) and _holds_device_data(e):
            return True
    return False


def disown(res, moved, ctx):
    """A result sharing memory with a cached cross-device copy takes that buffer over.

    The copy leaves its holder's cache, so a write to the result never shows
    through a later use of the holder on ``ctx`` (and vice versa).
    """
    roots = {id(versions.root(d)): arr for arr, d in moved}
    for r in _flat(res):
        arr = roots.get(id(versions.root(r)))
        if arr is not None and arr._copies is not None:
            arr._copies.pop(ctx, None)


def _flat(res):
    if isinstance(res, (tuple, list)):
        for r in res:
            yield from _flat(r)
    elif hasattr(res, "base") and hasattr(res, "shape"):
        yield res


_CPU0 = cpu(0)
_ndarray = numpy.ndarray
_asarray = numpy.asarray
