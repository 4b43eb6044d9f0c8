"""In-place writes under a tape, recorded functionally.

When the target or the written value is traced, the write is replayed as an
out-of-place primitive (``index_update`` for ``x[key] = v``, the plain call
for ``out=``) and the target Array is rebound to the result. Nodes that had
saved the target keep its old buffer (they are re-pointed to a clone), so
their gradients stay right. Views of the target do not see the write: inside
a gradient, treat arrays as values.
"""
import numpy

from .primitive import L, Primitive, register, run
from . import tape as _tape
from . import array as _array
from ..dispatch import state as _state

_S = _state.S

__all__ = ["index_update", "record_inplace"]


def _index_update_forward(xp, x, key, value):
    out = x.copy()
    out[key] = value
    return out


INDEX_UPDATE = register(Primitive("index_update", None, forward=_index_update_forward))

# In-place functions replayed out of place: qualname -> replay(*args, **kwargs) returning
# (target Array, its new value); filled by minpy.numpy.vjp_creation (put, place ...).
INPLACE_REPLAYS = {}


def _clone(a):
    c = L.new(a._data)
    c._node = a._node
    c._var = a._var
    return c


def _repoint(obj, target, clone):
    t = type(obj)
    if obj is target:
        return clone, True
    if t is tuple or t is list:
        changed = False
        items = []
        for e in obj:
            e2, c = _repoint(e, target, clone)
            changed |= c
            items.append(e2)
        return (t(items) if changed else obj), changed
    if t is dict:
        changed = False
        d = {}
        for k, v in obj.items():
            d[k], c = _repoint(v, target, clone)
            changed |= c
        return (d if changed else obj), changed
    return obj, False


def _detach_saved(target):
    """Re-point every saved reference to ``target`` at a clone holding its old buffer."""
    clone = _clone(target)
    for tp in _tape.active_tapes():
        for node in tp.nodes:
            node.args, _ = _repoint(node.args, target, clone)
            if node.kwargs:
                node.kwargs, _ = _repoint(node.kwargs, target, clone)
            node.value, _ = _repoint(node.value, target, clone)


def _rebind(target, result):
    _detach_saved(target)
    target._data = result._data
    target._node = result._node
    target._copies = None
    target._var = result._var
    return target


def record_inplace(prim, args, kwargs, tape):
    """Functional replay of an in-place primitive whose operands are traced."""
    from .. import numpy as mnp
    if kwargs and kwargs.get("out") is not None:
        out = kwargs["out"]
        if isinstance(out, tuple):
            if len(out) != 1:
                raise TypeError(f"minpy.grad: {prim.qualname} with several out= arrays cannot be "
                                "differentiated; drop out=")
            out = out[0]
        kw = {k: v for k, v in kwargs.items() if k != "out"}
        if kw.get("where") is not None and kw.get("where") is not True:
            raise TypeError(f"minpy.grad: {prim.qualname} with out= and where= cannot be "
                            "differentiated; use minpy.where")
        res = _tape.record(prim, args, kw)
        if res.dtype != out.dtype:
            res = mnp.ndarray.astype(res, out.dtype)
        if res.shape != out.shape:
            res = mnp.broadcast_to(res, out.shape)
        return _rebind(out, res)
    name = prim.qualname
    if name == "ndarray.__setitem__":
        target, key, value = args
        res = _tape.record(INDEX_UPDATE, (target, key, value), {})
        _rebind(target, res)
        return None
    if name == "copyto":
        dst, src = args[0], args[1]
        if kwargs and (kwargs.get("where") is not None and kwargs.get("where") is not True):
            res = mnp.where(kwargs["where"], src, dst)
        else:
            res = mnp.broadcast_to(src, dst.shape)
        if res.dtype != dst.dtype:
            res = mnp.ndarray.astype(res, dst.dtype)
        _rebind(dst, res)
        return None
    replay = INPLACE_REPLAYS.get(name)
    if replay is not None:
        _rebind(*replay(*args, **(kwargs or {})))
        return None
    raise TypeError(f"minpy.grad: in-place {name} on a traced array cannot be differentiated; "
                    "use an out-of-place form (e.g. x[idx] = v or minpy.where)")


def unbroadcast(g, target):
    """Sum gradient ``g`` down to the shape of ``target`` (an Array, scalar or shape tuple).

    Also drops the imaginary part when ``target`` is real and ``g`` complex. None
    (a zero gradient) stays None.
    """
    if g is None:
        return None
    if type(target) is L.Array:
        td = target._data
        shape, real = td.shape, td.dtype.kind != "c"
    elif isinstance(target, tuple):
        shape, real = target, False
    else:
        shape, real = numpy.shape(target), not numpy.iscomplexobj(target)
    gd = g._data if type(g) is L.Array else g
    gshape = gd.shape
    cplx = real and gd.dtype.kind == "c"
    if gshape == shape and not cplx:
        return g
    if gshape != shape:
        axes = _SUM_AXES.get((gshape, shape))
        if axes is None:
            axes = _sum_axes(gshape, shape)
        if _S.fast and type(gd) is numpy.ndarray:
            # first-order backward on the host: nothing records, NumPy directly
            if axes:
                gd = _add_reduce(gd, axes, None, None, True) if gd.dtype.kind in "fc" \
                    else gd.sum(axis=axes, keepdims=True)
            if gd.shape != shape:
                gd = gd.reshape(shape)
            return L.new(gd.real if cplx else gd)
        ns = _array._NS
        if axes:
            g = ns.sum(g, axis=axes, keepdims=True)
        if g.shape != shape:
            g = ns.reshape(g, shape)
    if cplx:
        g = _array._NS.real(g)
    return g


def broadcast_host(array, shape, subok=False):
    """numpy.broadcast_to for a C-contiguous ndarray, without NumPy's Python-level
    nditer set-up (about 1.7 us per call); anything else goes to NumPy."""
    nd = _ndarray
    if type(array) is not nd or subok:
        return numpy.broadcast_to(array, shape, subok=subok)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if array.ndim == 0:
        if shape and min(shape) < 0:
            return numpy.broadcast_to(array, shape)      # NumPy's error
        strides = (0,) * len(shape)
    else:
        if not array.flags.c_contiguous:
            return numpy.broadcast_to(array, shape)
        lead = len(shape) - array.ndim
        if lead < 0:
            return numpy.broadcast_to(array, shape)     # NumPy's error
        strides = [0] * lead
        for s, t, st in zip(array.shape, shape[lead:], array.strides):
            if s == t:
                strides.append(st)
            elif s == 1 and t >= 0:
                strides.append(0)
            else:
                return numpy.broadcast_to(array, shape)  # NumPy's error
        strides = tuple(strides)
    out = nd(shape, array.dtype, array, 0, strides)
    out.flags.writeable = False
    return out


def broadcast_grad(g, shape):
    """``broadcast_to(g, shape)`` for gradients (read-only view), cheap on the host."""
    gd = g._data
    if _S.fast and type(gd) is _ndarray:
        return L.new(broadcast_host(gd, shape))
    return _array._NS.broadcast_to(g, shape)


_ndarray = numpy.ndarray
_SUM_AXES = {}
_add_reduce = numpy.add.reduce


def _sum_axes(gshape, shape):
    """The axes of a ``gshape`` gradient to sum (keepdims) to get back to ``shape``."""
    extra = len(gshape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, s in enumerate(shape) if s == 1 and gshape[i + extra] != 1)
    if len(_SUM_AXES) < 4096:
        _SUM_AXES[(gshape, shape)] = axes
    return axes
