"""Array's methods that run a primitive: operators, in-place operators, indexing,
``astype``/``copy``/``view``, and ``__array_ufunc__``.

Installed on :class:`minpy.core.array.Array` when this module is imported
(by ``minpy.core``). An operator is the ufunc's operator entry
(:mod:`minpy.core.wrappers`): straight NumPy when ``process.fast`` holds, the
tape's one-tape shortcut while this thread records, else the front door.
"""
import math

import numpy

from ..dispatch import state, versions
from .array import Array, new, unwrap_cpu, wrap
from .call import call
from .ops import ASTYPE, COPY, GETITEM, SETITEM, VIEW
from .tape import record_getitem
from .wrappers import make_function, make_ufunc

__all__ = ["astype", "copy", "view"]

_process = state.process
_per_thread = state.per_thread
_ndarray = numpy.ndarray
_generic = numpy.generic
_new = object.__new__

_astype = make_function("ndarray.astype", None, name="astype", prim=ASTYPE)
copy = make_function("ndarray.copy", None, name="copy", prim=COPY)
view = make_function("ndarray.view", None, name="view", prim=VIEW)


def _getitem(self, key):
    if _process.fast:
        tk = type(key)
        if tk is Array:
            key = key._data
        elif tk is tuple or tk is list:
            key = unwrap_cpu(key)
        r = self._data[key]
        if type(r) is _ndarray:
            a = _new(Array)
            a._data = r
            a._node = a._copies = a._var = None
            a._scalar = False
            return a
        if isinstance(r, _generic) and not _per_thread.flags.keep_scalars:
            return r                     # an element: NumPy's own scalar, as NumPy
        return wrap(r)
    tape = _per_thread.flags.one_tape
    if tape is not None:
        return record_getitem(tape, GETITEM, self, key)
    return call(GETITEM, (self, key), {})


def _setitem(self, key, value):
    if self._scalar:
        raise TypeError(f"a minpy scalar ({self.dtype} result where NumPy returns a scalar) "
                        "does not support item assignment")
    if _process.fast:
        d = self._data
        d[unwrap_cpu(key)] = value._data if type(value) is Array else unwrap_cpu(value)
        if self._copies is not None:
            self._copies = None
        versions.bump(d)
        return
    call(SETITEM, (self, key, value), {})


def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """Cast to ``dtype``. See also numpy.ndarray.astype."""
    if _process.fast and copy and order == "K" and casting == "unsafe":
        return new(self._data.astype(dtype))
    return _astype(self, dtype, order=order, casting=casting, copy=copy)


def _copy_method(self, order="C"):
    """A copy on the same device. See also numpy.ndarray.copy."""
    return copy(self, order=order)


def _view_method(self, *args, **kwargs):
    return view(self, *args, **kwargs)


def _array_ufunc(self, uf, method, *inputs, **kwargs):
    """``numpy.exp(x)``, ``ndarray + x`` and co.: minpy's ufunc (on the device, recorded
    on the tape), so an operator mixing NumPy and minpy values gives a minpy Array
    whichever side each is on. (NumPy's other functions answer in NumPy for host
    arrays: see ``Array.__array_function__``.)"""
    mine = make_ufunc(uf)
    if method == "__call__":
        return mine(*inputs, **kwargs)
    return getattr(mine, method)(*inputs, **kwargs)


def _reflected(f):
    def r(self, other):
        return f(other, self)
    return r


def _inplace(np_uf, f):
    def i(self, other):
        if self._scalar:        # immutable, as NumPy's scalars: ``+=`` rebinds
            return f(self, other)
        if _process.fast:
            d = self._data
            np_uf(d, other._data if type(other) is Array else other, out=d)
            if self._copies is not None:
                self._copies = None
            versions.bump(d)
            return self
        return f(self, other, out=self)
    return i


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
_COMPARISON = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
               "eq": "equal", "ne": "not_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}


def _none_compared(op):
    """``x == None`` / ``x != None`` as NumPy answers them (all False / all True) on a
    device too, where CuPy refuses a None operand: no number equals NaN either."""
    def compare(self, other):
        if other is None and type(self._data) is not _ndarray:
            other = math.nan
        return op(self, other)
    compare.__name__ = op.__name__
    return compare


def _install():
    for op, ufname in _BINARY.items():
        uf = make_ufunc(getattr(numpy, ufname))
        setattr(Array, f"__{op}__", uf._op)
        setattr(Array, f"__r{op}__", _reflected(uf._op))
        setattr(Array, f"__i{op}__", _inplace(getattr(numpy, ufname), uf._call))
    for op, ufname in {**_COMPARISON, **_UNARY}.items():
        setattr(Array, f"__{op}__", make_ufunc(getattr(numpy, ufname))._op)
    Array.__eq__ = _none_compared(Array.__eq__)
    Array.__ne__ = _none_compared(Array.__ne__)
    dm = make_ufunc(numpy.divmod)
    Array.__divmod__ = lambda self, o: dm(self, o)
    Array.__rdivmod__ = lambda self, o: dm(o, self)
    Array.__getitem__ = _getitem
    Array.__setitem__ = _setitem
    Array.astype = astype
    Array.copy = _copy_method
    Array.view = _view_method
    Array.__array_ufunc__ = _array_ufunc


_install()
