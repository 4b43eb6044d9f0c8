"""The NumPy functions that core itself calls, declared once here.

Gradient seeds, the shaping of gradients (``unbroadcast``), the functional
replay of in-place writes and the autograd API need a few NumPy functions
that record on the tape like any other (so that grad of grad is right).
Their primitives are declared here, below the front door; the namespace
layer builds its public ``minpy.sum``, ``minpy.reshape`` ... from these same
records (``DECLARED``), so the gradient rules defined there apply to core's
calls too. Core calls them through :func:`apply` (= record on the tape when
an argument is traced, else run).
"""
import operator

import numpy

from . import tape
from .array import Array, new
from .primitive import COMPUTE, SELF, Primitive, register
from .subclass import check_view_type, host_view_type
from . import writes
from ..dispatch import state
from ..dispatch.backend import NeedsHost

__all__ = ["DECLARED", "apply", "unbroadcast", "broadcast_grad", "broadcast_host",
           "GETITEM", "SETITEM", "ASTYPE", "COPY", "VIEW", "INDEX_UPDATE"]

_process = state.process
_ndarray = numpy.ndarray


def apply(prim, *args, **kwargs):
    """Call ``prim`` from core code: recorded when an argument is traced, else run."""
    return tape.record(prim, args, kwargs)


# ------------------------------------------------------------ host implementations
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


def method_first(name, np_func):
    """``np_func`` that calls the ndarray method of the same positional signature for an
    ndarray first argument (skipping NumPy's Python-level dispatch, ~1 us a call)."""
    meth = getattr(numpy.ndarray, {"amax": "max", "amin": "min"}.get(name, name))
    nd = numpy.ndarray

    def impl(a, *args, **kwargs):
        if type(a) is nd:
            return meth(a, *args, **kwargs)
        return np_func(a, *args, **kwargs)
    impl.__name__ = name
    impl.__doc__ = np_func.__doc__
    impl.__wrapped__ = np_func          # its signature (positional out= ...) is NumPy's
    return impl


def reshape_host(a, /, shape=None, order="C", *, newshape=None, copy=None):
    """numpy.reshape through the ndarray method when that is the same call."""
    if type(a) is numpy.ndarray and newshape is None and copy is None and shape is not None:
        return a.reshape(shape, order=order)
    if shape is None and newshape is None:      # NumPy's error (reshape(a, None) would pass)
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    return numpy.reshape(a, shape, order=order, newshape=newshape, copy=copy) \
        if newshape is not None else numpy.reshape(a, shape, order=order, copy=copy)


# ------------------------------------------------------------ the declared primitives
def _where_forward(xp, condition, *xy):
    if xp is not numpy and not hasattr(condition, "dtype"):
        condition = xp.asarray(condition)        # CuPy's where takes an array condition
    return xp.where(condition, *xy)


def _declare(name, impl, placement):
    return register(Primitive(name, impl, placement=placement))


SUM = _declare("sum", method_first("sum", numpy.sum), COMPUTE)
RESHAPE = _declare("reshape", reshape_host, SELF)
BROADCAST_TO = _declare("broadcast_to", broadcast_host, SELF)
REAL = _declare("real", numpy.real, SELF)
WHERE = register(Primitive("where", numpy.where, placement=COMPUTE, forward=_where_forward,
                           host_only_impl=True))
STACK = tape.STACK
ZEROS_LIKE = _declare("zeros_like", numpy.zeros_like, SELF)
ONES_LIKE = _declare("ones_like", numpy.ones_like, SELF)

DECLARED = {p.qualname: p for p in (SUM, RESHAPE, BROADCAST_TO, REAL, WHERE, STACK,
                                     ZEROS_LIKE, ONES_LIKE)}

# method primitives: run where the array lives
GETITEM = register(Primitive("ndarray.__getitem__", operator.getitem,
                             forward=lambda xp, x, key: x[key], placement=SELF))
SETITEM = register(Primitive("ndarray.__setitem__", operator.setitem, forward=writes.write,
                             placement=SELF, mutates=0))


def _astype_forward(xp, x, dtype, casting="unsafe", subok=True, **kw):
    """``x.astype(dtype, ...)``; off NumPy, ``casting`` checked here as NumPy does and
    not passed on (CuPy's astype refuses any ``casting``/``subok``; it casts unsafely).
    What it raises reruns on the host (``execute``), so the error is NumPy's own."""
    if xp is numpy:
        return x.astype(dtype, casting=casting, subok=subok, **kw)
    if casting != "unsafe":
        if casting not in ("no", "equiv", "safe", "same_kind"):
            # ('same_value' checks values; anything else NumPy rejects) the host's to answer
            raise NeedsHost(f"ndarray.astype: casting={casting!r} off the host")
        to = numpy.dtype(dtype)
        if not numpy.can_cast(x.dtype, to, casting):
            raise TypeError(f"Cannot cast array data from {x.dtype!r} to {to!r} according "
                            f"to the rule {casting!r}")
    return x.astype(dtype, **kw)


ASTYPE = register(Primitive("ndarray.astype", None, placement=SELF, forward=_astype_forward))
COPY = register(Primitive("ndarray.copy", None, placement=SELF,
                          forward=lambda xp, x, order="C": x.copy(order=order)))


def _view_forward(xp, x, *a, **k):
    """``x.view(...)``; ``minpy.ndarray`` as the type means the backend's own array type,
    a user's subclass of it (a host NumPy subclass, see core/subclass.py) is refused
    off the host."""
    if a or k:
        check_view_type(xp is numpy, a, k)
        a = tuple(_same_type(t, xp) for t in a)
        k = {n: _same_type(t, xp) for n, t in k.items()}
        if k.get("type", 0) is None:
            del k["type"]
        if a and a[-1] is None:
            a = a[:-1]
    return x.view(*a, **k)


def _same_type(t, xp):
    """A view type: ``minpy.ndarray`` is numpy.ndarray on the host, none on a device."""
    t = host_view_type(t)
    return None if t is _ndarray and xp is not numpy else t


VIEW = register(Primitive("ndarray.view", None, placement=SELF, forward=_view_forward))


# ``x[key] = value`` as a value: a copy of x with the write (its rule is in minpy.numpy)
INDEX_UPDATE = register(Primitive("index_update", None, forward=writes.index_update_forward))


# ------------------------------------------------------------ gradient shapes
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


def unbroadcast(g, target):
    """Sum gradient ``g`` down to the shape of ``target`` (an Array, scalar or shape tuple).

    Also drops the imaginary part when ``target`` is real and ``g`` complex. None
    (a zero gradient) stays None.
    """
    if g is None:
        return None
    if type(target) is Array:
        td = target._data
        shape, real = td.shape, td.dtype.kind != "c"
    elif isinstance(target, tuple):
        shape, real = target, False
    else:
        shape, real = numpy.shape(target), not numpy.iscomplexobj(target)
    gd = g._data if type(g) is Array else g
    gshape = gd.shape
    cplx = real and gd.dtype.kind == "c"
    if gshape == shape and not cplx:
        return g
    if gshape != shape:
        axes = _SUM_AXES.get((gshape, shape))
        if axes is None:
            axes = _sum_axes(gshape, shape)
        if _process.fast and type(gd) is _ndarray:
            # first-order backward on the host: nothing records, NumPy directly
            if axes:
                gd = _add_reduce(gd, axes, None, None, True) if gd.dtype.kind in "fc" \
                    else gd.sum(axis=axes, keepdims=True)
            if gd.shape != shape:
                gd = gd.reshape(shape)
            return new(gd.real if cplx else gd)
        if axes:
            g = apply(SUM, g, axis=axes, keepdims=True)
        if g.shape != shape:
            g = apply(RESHAPE, g, shape)
    if cplx:
        g = apply(REAL, g)
    return g


def broadcast_grad(g, shape):
    """``broadcast_to(g, shape)`` for gradients (read-only view), cheap on the host."""
    gd = g._data
    if _process.fast and type(gd) is _ndarray:
        return new(broadcast_host(gd, shape))
    return apply(BROADCAST_TO, g, shape)
