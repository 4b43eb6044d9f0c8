"""A strict stand-in GPU for the dispatch tests: NumPy memory posing as a device.

:class:`StandinBackend` is a real :class:`minpy.dispatch.Backend` whose arrays
(:class:`StandinArray`) live on "device i" and behave like CuPy's where it
matters for dispatch:

- no implicit conversion to the host: ``__array__``, ``__float__``,
  ``__int__``, ``__bool__``, ``__iter__``, ``tolist`` ... raise TypeError;
- its namespace (:class:`StandinNamespace`, the stand-in for ``cupy``)
  refuses raw ``numpy.ndarray`` and ``minpy.Array`` arguments, and arrays of
  a device other than the current one (ValueError, as CuPy);
- results are placed on the current device; scalars become 0-d arrays;
- functions named in ``missing`` do not exist (``lookup`` returns None);
- it refuses what the real CuPy refuses, with CuPy's exception type, and answers as
  CuPy where that differs (``cupy_major`` 14 or 13: missing functions, keywords and ufunc
  methods, dtypes it cannot hold, r_/c_ slices, plain tuples, CuPy 13's value-based
  promotion of scalars): see :mod:`_standin_api`, which decides apart from minpy's own
  :mod:`minpy.dispatch.cupy_api` table answers (what ``refuses``/``holds`` delegate to);
- every host <-> device copy goes through ``from_host``/``to_host``, which
  count it, so a test can assert exactly when minpy copies.

``standin_gpu`` is a pytest fixture installing it for one test.
"""
import contextlib
import threading
import types
import weakref

import numpy
import pytest

import _standin_methods
import minpy
from minpy.core import execute as primitive
from minpy.dispatch import Backend, cupy_api
from _standin_api import UNKNOWN, CupyRules

__all__ = ["StandinArray", "StandinNamespace", "StandinBackend", "installed", "standin_gpu",
           "DEFAULT_MISSING", "HostConversionError"]

# what the stand-in pretends not to implement, by default
DEFAULT_MISSING = frozenset({"linalg.lstsq", "unique_all", "unique_counts", "median"})

_SUBMODULES = {"linalg": numpy.linalg, "fft": numpy.fft, "random": numpy.random}


class HostConversionError(TypeError):
    """Raised on any implicit device -> host conversion of a StandinArray."""


def _refuse(*_args, **_kwargs):
    raise HostConversionError("standin: implicit conversion to host is not allowed; "
                              "use the backend's to_host (minpy: x.asnumpy())")


def _np_root(a):
    while isinstance(a.base, numpy.ndarray):
        a = a.base
    return a


# id(numpy root buffer) -> the root StandinArray holding it
_ROOTS = weakref.WeakValueDictionary()


class StandinArray:
    """A numpy array living on stand-in device ``device_id``.

    ``base`` is the root StandinArray for views (as CuPy's ``base``), None
    for an array owning its memory.
    """

    __slots__ = ("_a", "device_id", "_base", "__weakref__")

    def __init__(self, a, device_id, base=None):
        if type(a) is not numpy.ndarray:
            raise TypeError(f"StandinArray holds a numpy.ndarray, got {type(a).__name__}")
        self._a = a
        self.device_id = device_id
        self._base = base
        if base is None:
            _ROOTS[id(_np_root(a))] = self

    # ------------------------------------------------------------ metadata
    @property
    def base(self):
        return self._base

    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)

    @property
    def flags(self):
        """CuPy's flags: c_contiguous, f_contiguous and owndata only (no writeable)."""
        f = self._a.flags
        return types.SimpleNamespace(c_contiguous=f.c_contiguous, f_contiguous=f.f_contiguous,
                                     owndata=self._base is None)

    @property
    def device(self):
        """CuPy-like device handle (``.id``)."""
        return types.SimpleNamespace(id=self.device_id)

    @property
    def T(self):
        return _wrap(self._a.T, self.device_id, (self,))

    @property
    def real(self):
        """A view of the real parts (CuPy's ``real``: a view, the array itself when real)."""
        return _wrap(self._a.real, self.device_id, (self,))

    @property
    def imag(self):
        return _wrap(self._a.imag, self.device_id, (self,))

    def __len__(self):
        return len(self._a)

    def __repr__(self):
        # metadata only: printing values would be a host conversion
        return f"StandinArray(gpu({self.device_id}), shape={self.shape}, dtype={self.dtype})"

    # ------------------------------------------------------------ no implicit host
    __array__ = __float__ = __int__ = __bool__ = __complex__ = __index__ = _refuse
    __iter__ = tolist = item = tobytes = get = _refuse
    __hash__ = None

    # ------------------------------------------------------------ device work
    def _on_current(self):
        cur = _current_device()
        if cur != self.device_id:
            raise ValueError(f"standin: array on device {self.device_id} used while the "
                             f"current device is {cur} (as CuPy)")

    def __getitem__(self, key):
        k = _wrapped_indices(self._a.shape, _unwrap_key(key, self.device_id))
        r = self._a[k]
        if not isinstance(r, numpy.ndarray):       # integer index: a 0-d view, as CuPy
            r = self._a[(k if isinstance(k, tuple) else (k,)) + (Ellipsis,)]
        return _wrap(r, self.device_id, (self,))

    def __setitem__(self, key, value):
        self._on_current()
        k = _wrapped_indices(self._a.shape, _unwrap_key(key, self.device_id))
        v = _unwrap(value, self.device_id)
        if _index_axes(self._a.shape, k):
            _first_write_wins(self._a, k, v)
        else:
            self._a[k] = v

    def astype(self, *args, **kwargs):
        """CuPy's ``astype(dtype, order='K', casting=None, subok=None, copy=True)``."""
        rules = _rules()
        rules.check_call("ndarray.astype", (self,) + args, kwargs)
        bound = rules.signature("ndarray.astype").bind(self, *args, **kwargs).arguments
        rules.check_dtype(bound["dtype"], "ndarray.astype")
        for name in ("casting", "subok"):        # CuPy 13/14: any value but None
            if bound.get(name) is not None:
                raise TypeError(f"{name} is not supported yet")
        self._on_current()
        r = self._a.astype(bound["dtype"], order=bound.get("order", "K"), casting="unsafe",
                           copy=bound.get("copy", True))
        return _wrap(r, self.device_id, (self,))

    def copy(self, *args, **kwargs):
        """CuPy's ``copy(order='C')``: a copy in the current device."""
        rules = _rules()
        rules.check_call("ndarray.copy", (self,) + args, kwargs)
        order = rules.signature("ndarray.copy").bind(self, *args, **kwargs).arguments.get(
            "order", "C")
        return StandinArray(self._a.copy(order=order), _current_device())

    def view(self, *args, **kwargs):
        """CuPy's ``view(dtype=None, type=None)``."""
        rules = _rules()
        rules.check_call("ndarray.view", (self,) + args, kwargs)
        bound = rules.signature("ndarray.view").bind(self, *args, **kwargs).arguments
        if bound.get("type") is not None:
            raise TypeError("standin: view(type=...) is not supported")
        dtype = bound.get("dtype")
        if dtype is not None:
            rules.check_dtype(dtype, "ndarray.view")
        v = self._a.view() if dtype is None else self._a.view(dtype)
        return _wrap(v, self.device_id, (self,))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if dl_device is None or tuple(dl_device) != (2, self.device_id):
            raise BufferError("standin: device memory cannot be exported to "
                              f"{dl_device!r} (implicit conversion to host)")
        return self._a.__dlpack__(max_version=max_version)

    def __dlpack_device__(self):
        return (2, self.device_id)        # kDLCUDA


def _index_axes(shape, key):
    """(item, axis length) for each integer-array item of an indexing ``key``."""
    items = key if type(key) is tuple else (key,)
    used = sum(0 if i is None or i is Ellipsis else
               (i.ndim if isinstance(i, numpy.ndarray) and i.dtype == bool else 1) for i in items)
    axis, out = 0, []
    for i in items:
        if i is None:
            continue
        if i is Ellipsis:
            axis += len(shape) - used
            continue
        if isinstance(i, numpy.ndarray) and i.dtype == bool:
            axis += i.ndim
            continue
        if axis < len(shape) and (isinstance(i, list) or (
                isinstance(i, numpy.ndarray) and i.dtype.kind in "iu")):
            out.append((i, shape[axis]))
        axis += 1
    return out


def _first_write_wins(a, key, value):
    """``a[key] = value`` where an element written several times keeps its FIRST value:
    CuPy leaves the order of repeated integer-index writes undefined (NumPy: the last
    wins), so the stand-in answers unlike NumPy to catch code relying on the order."""
    ids = numpy.arange(a.size, dtype=numpy.intp).reshape(a.shape)[key]
    v = numpy.asarray(value)
    while v.ndim > ids.ndim and v.shape[0] == 1:
        v = v[0]
    v = numpy.broadcast_to(v, ids.shape).reshape(-1)[::-1]
    hit = numpy.unravel_index(ids.reshape(-1)[::-1], a.shape)
    a[hit] = v                      # reversed: NumPy's last write is the first one


def _wrapped_indices(shape, key):
    """``key`` with integer-array indices wrapped modulo their axis: CuPy's fancy
    indexing does not check bounds (``x[[0, 5]]`` of 3 items reads ``x[[0, 2]]``)."""
    axes = _index_axes(shape, key)
    if not axes:
        return key
    fix = {}
    for i, n in axes:
        if isinstance(i, list):
            try:
                i2 = numpy.asarray(i)
            except (TypeError, ValueError):
                continue
            if i2.dtype.kind not in "iu" or not n:
                continue
            fix[id(i)] = i2 % n
        elif n:
            fix[id(i)] = i % n
    if type(key) is not tuple:
        return fix.get(id(key), key)
    return tuple(fix.get(id(i), i) for i in key)


def _binop(name):
    def op(self, other):
        return getattr(_NS_FOR_DUNDERS[0], name)(self, other)
    return op


def _rbinop(name):
    def op(self, other):
        return getattr(_NS_FOR_DUNDERS[0], name)(other, self)
    return op


_NS_FOR_DUNDERS = [None]


def _rules():
    """The CupyRules of the stand-in namespace last made (the one the dunders use)."""
    return _NS_FOR_DUNDERS[0]._backend.rules


for _op, _uf in {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                 "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
                 "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
                 "xor": "bitwise_xor"}.items():
    setattr(StandinArray, f"__{_op}__", _binop(_uf))
    setattr(StandinArray, f"__r{_op}__", _rbinop(_uf))
for _op, _uf in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                 "eq": "equal", "ne": "not_equal"}.items():
    setattr(StandinArray, f"__{_op}__", _binop(_uf))
StandinArray.__neg__ = lambda self: _NS_FOR_DUNDERS[0].negative(self)
StandinArray.__abs__ = lambda self: _NS_FOR_DUNDERS[0].absolute(self)
_standin_methods.install(StandinArray, _NS_FOR_DUNDERS)   # methods, in-place operators


# ---------------------------------------------------------------- devices
_tls = threading.local()


def _current_device():
    return getattr(_tls, "device", 0)


def _unwrap(obj, device):
    """numpy data of a namespace argument; refuses host arrays and foreign devices."""
    t = type(obj)
    if t is StandinArray:
        if obj.device_id != device:
            raise ValueError(f"standin: array on device {obj.device_id} passed to an operation "
                             f"on device {device} (as CuPy)")
        return obj._a
    if t is numpy.ndarray:
        raise TypeError("standin: numpy.ndarray argument (implicit host -> device transfer "
                        "is not allowed, as CuPy)")
    if isinstance(obj, minpy.Array):
        raise TypeError("standin: minpy.Array reached the backend (minpy must unwrap it)")
    if t is list or t is tuple:
        return t(_unwrap(e, device) for e in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return t._make(_unwrap(e, device) for e in obj)
    return obj


def _unwrap_key(key, device):
    if type(key) is StandinArray and key.device_id != device:
        raise ValueError("standin: index array on another device")
    return _unwrap(key, device)


def _wrap(r, device, inputs=()):
    """Rewrap a numpy result on ``device``: the input itself, a view of a root, or a new root."""
    t = type(r)
    if t is numpy.ndarray:
        for s in inputs:
            if s._a is r:
                return s
        root = _np_root(r)
        owner = _ROOTS.get(id(root))
        if owner is not None and _np_root(owner._a) is root and owner.device_id == device:
            return owner if owner._a is r else StandinArray(r, device, base=owner)
        return StandinArray(r, device)
    if isinstance(r, numpy.generic):           # scalars become 0-d arrays, as CuPy
        return StandinArray(numpy.asarray(r), device)
    if t is list or t is tuple:
        return t(_wrap(e, device, inputs) for e in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):
        return t._make(_wrap(e, device, inputs) for e in r)
    return r


def _inputs(obj, acc):
    t = type(obj)
    if t is StandinArray:
        acc.append(obj)
    elif t is list or t is tuple or isinstance(obj, tuple):
        for e in obj:
            _inputs(e, acc)
    return acc


def _put_first_wins(a, ind, v, mode="raise"):
    """``numpy.put`` with CuPy's unordered repeated writes (the first one kept here)."""
    flat = numpy.arange(a.size, dtype=numpy.intp)
    sel = numpy.take(flat, numpy.asarray(ind).reshape(-1), mode=mode)
    vals = numpy.resize(numpy.asarray(v).reshape(-1), sel.size)
    _first_write_wins(a, numpy.unravel_index(sel, a.shape), vals)


def _put_along_axis_first_wins(arr, indices, values, axis):
    """``numpy.put_along_axis`` with CuPy's unordered repeated writes (the first kept)."""
    ids = numpy.arange(arr.size, dtype=numpy.intp).reshape(arr.shape)
    if axis is None:
        ids, axis = ids.reshape(-1), 0
    sel = numpy.take_along_axis(ids, indices, axis)
    _first_write_wins(arr, numpy.unravel_index(sel, arr.shape), values)


def _polyfit_scaling_y(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``numpy.polyfit`` that, as CuPy 14's, scales a float64 ``y`` by ``w`` in place
    (its ``rhs = y; rhs *= w``)."""
    r = numpy.polyfit(x, y, deg, rcond, full, w, cov)
    if w is not None and isinstance(y, numpy.ndarray) and y.dtype == numpy.float64:
        y *= numpy.asarray(w) if y.ndim == 1 else numpy.asarray(w)[:, None]
    return r


class CompileException(Exception):
    """The stand-in for cupy.cuda.compiler.CompileException (no refusal of minpy's)."""


def _cupy_reduction(name, fn):
    """``fn`` answering as CuPy 14's reduction ``name`` where NumPy raises or differs (seen
    on a real GPU): IndexError for an axis out of range (std, var, nanmedian), argmax of a
    tuple axis, no error on an empty min/max, 0 for nanvar/nanstd of nothing, keepdims
    of a 0-d median, percentile of bool, a compile error for complex percentile."""
    def call(a, *args, **kwargs):
        a = numpy.asarray(a)
        axis = args[0] if args and name not in _QUANTILES else kwargs.get("axis")
        if isinstance(axis, int) and not -a.ndim <= axis < max(a.ndim, 1) and name in (
                "std", "var", "nanmedian"):
            raise IndexError("tuple index out of range")
        if name == "argmax" and isinstance(axis, tuple):
            return fn(a)
        if name in _QUANTILES:
            if a.dtype.kind == "c":
                raise CompileException("no operator \"<\" matches these operands")
            if a.dtype.kind == "b":
                a = a.astype(numpy.float64)
        try:
            with numpy.errstate(all="ignore"):
                r = fn(a, *args, **kwargs)
        except ValueError as e:
            if "zero-size" not in str(e):
                raise
            kw = {k: v for k, v in kwargs.items() if k in ("axis", "keepdims")}
            return numpy.sum(numpy.zeros(a.shape, a.dtype), *args[:1], **kw).astype(a.dtype)
        if name in ("nanvar", "nanstd") and a.size == 0:
            r = numpy.zeros_like(r)
        if name == "median" and a.ndim == 0 and kwargs.get("keepdims"):
            r = numpy.reshape(r, (1,))
        return r
    return call


_QUANTILES = ("percentile", "quantile")


def _complex_cond(x, p=None):
    """CuPy 14's linalg.cond: complex for a complex matrix unless ``p`` is None or +-2."""
    r = numpy.linalg.cond(x, p)
    if numpy.asarray(x).dtype.kind == "c" and p is not None and p not in (2, -2):
        return numpy.asarray(r).astype(numpy.asarray(x).dtype)
    return r


class CuFFTError(RuntimeError):
    """The stand-in for cupy.cuda.cufft.CuFFTError."""


def _cufft(fn):
    """``fn`` (an inverse real FFT) raising cuFFT's error where its output is empty."""
    def call(a, *args, **kwargs):
        size = args[0] if args else kwargs.get("n", kwargs.get("s"))
        axes = args[1] if len(args) > 1 else kwargs.get("axis", kwargs.get("axes", -1))
        last = axes if isinstance(axes, int) else -1 if axes is None else axes[-1]
        if size is None and 2 * (numpy.shape(a)[last] - 1) < 1:
            raise CuFFTError("CUFFT_INVALID_SIZE")
        return fn(a, *args, **kwargs)
    return call

# where the stand-in answers as CuPy does, not as NumPy
_FIRST_WINS = {"put": _put_first_wins, "put_along_axis": _put_along_axis_first_wins,
               "polyfit": _polyfit_scaling_y,
               **{q: _cupy_reduction(q, getattr(numpy, q)) for q in (
                   "std", "var", "nanstd", "nanvar", "nanmedian", "argmax", "amin", "nanmax",
                   "median") + _QUANTILES},
               **{f"fft.{q}": _cufft(getattr(numpy.fft, q)) for q in (
                   "irfft", "hfft", "irfft2", "irfftn")},
               "linalg.cond": _complex_cond}


# ---------------------------------------------------------------- CuPy's refusals
# What CuPy 13/14 raise where NumPy accepts the call (the exception types and messages
# of CuPy's own code; seen on a real GPU), checked on the arguments as passed.
_UNSET = object()


def _arg(args, kwargs, i, name, default=_UNSET):
    return args[i] if len(args) > i else kwargs.get(name, default)


def _refuse_where(args, kwargs):
    if len(args) + len(kwargs) == 3:         # cupy.where: condition.astype('?')
        c = _arg(args, kwargs, 0, "condition")
        if type(c) is not StandinArray:
            raise AttributeError(f"'{type(c).__name__}' object has no attribute 'astype'")


def _refuse_choose(args, kwargs):
    c = _arg(args, kwargs, 1, "choices")
    if type(c) is not StandinArray:
        raise AttributeError(f"'{type(c).__name__}' object has no attribute 'shape'")


def _refuse_pad(args, kwargs):
    # cupy.pad hands constant_values (and end_values) to numpy.asarray
    for name in ("constant_values", "end_values"):
        if _inputs((kwargs.get(name),), []):
            raise HostConversionError("Implicit conversion to a NumPy array is not allowed. "
                                      "Please use `.get()` to construct a NumPy array "
                                      "explicitly.")
    mode = _arg(args, kwargs, 2, "mode", "constant")
    if mode == "median":
        raise ValueError(f"mode '{mode}' is not supported")


def _refuse_meshgrid(args, kwargs):
    if any(type(x) is StandinArray and x.ndim != 1 for x in args):
        raise ValueError("input has to be 1d")


def _refuse_cross(args, kwargs):
    x1, x2 = _arg(args, kwargs, 0, "x1", None), _arg(args, kwargs, 1, "x2", None)
    if getattr(x1, "shape", None) != getattr(x2, "shape", None):
        raise ValueError("x1 and x2 must have the same shape")


def _refuse_ediff1d(args, kwargs):
    if type(_arg(args, kwargs, 0, "arr")) is not StandinArray:
        raise TypeError("`arr` should be of type cupy.ndarray")
    for i, name in ((2, "to_begin"), (1, "to_end")):
        v = _arg(args, kwargs, i, name, None)
        if v is not None and type(v) is not StandinArray:
            raise TypeError(f"`{name}` should be of type cupy.ndarray")


_ADD_AT_DTYPES = frozenset(map(numpy.dtype, ("int32", "int64", "float16", "float32", "float64",
                                             "uint32", "uint64")))


def _refuse_add_at(args, kwargs):
    a = _arg(args, kwargs, 0, "a", None)
    if type(a) is StandinArray and a.dtype not in _ADD_AT_DTYPES:
        raise TypeError("cupy.add.at only supports int32, int64, float16, float32, float64, "
                        "uint32, uint64 as data type")


def _concat_info(obj):
    """CuPy's ``_compute_concat_info_impl``: the shape of a (nested) sequence holding
    only device arrays of one shape, else None."""
    if type(obj) is StandinArray:
        return obj.shape
    if type(obj) in (list, tuple) and len(obj):
        first = _concat_info(obj[0])
        if first is None or any(_concat_info(e) != first for e in obj[1:]):
            return None
        return (len(obj),) + first
    return None


def _refuse_mixed_sequence(args, kwargs):
    # cupy.array/asarray stack a sequence of device arrays of one shape; any other
    # sequence goes through numpy.array, which refuses the device arrays inside
    obj = _arg(args, kwargs, 0, "a", None)
    if type(obj) in (list, tuple) and _inputs(obj, []) and _concat_info(obj) is None:
        raise HostConversionError("Implicit conversion to a NumPy array is not allowed. "
                                  "Please use `.get()` to construct a NumPy array "
                                  "explicitly.")


_REFUSALS = {"where": _refuse_where, "choose": _refuse_choose, "pad": _refuse_pad,
             "meshgrid": _refuse_meshgrid, "linalg.cross": _refuse_cross,
             "ediff1d": _refuse_ediff1d, "add.at": _refuse_add_at,
             "asarray": _refuse_mixed_sequence, "array": _refuse_mixed_sequence}


# ---------------------------------------------------------------- linalg errors
# As CuPy: a linalg function on a singular (not positive definite ...) matrix returns
# NaNs silently unless ``errstate(linalg='raise')`` (per thread) is on; then NumPy's
# LinAlgError, with a cuSOLVER-like message.
def _linalg_raises():
    return getattr(_tls, "linalg", "ignore") == "raise"


@contextlib.contextmanager
def errstate(*, linalg=None):
    """The stand-in for ``cupyx.errstate(linalg=...)``."""
    prev = getattr(_tls, "linalg", "ignore")
    _tls.linalg = "ignore" if linalg is None else linalg
    try:
        yield
    finally:
        _tls.linalg = prev


def _silent_linalg(fn, a, k):
    """``fn(*a, **k)``; where NumPy raises LinAlgError, NaNs of the result's shapes."""
    try:
        with numpy.errstate(all="ignore"):
            return fn(*a, **k)
    except numpy.linalg.LinAlgError:
        if not a or type(a[0]) is not numpy.ndarray or a[0].ndim < 2:
            raise
    m = a[0]
    eye = numpy.broadcast_to(numpy.eye(m.shape[-1], dtype=m.dtype), m.shape)
    shaped = fn(*((eye,) + tuple(a[1:])), **k)       # an invertible stand-in: the shapes
    if type(shaped) is numpy.ndarray:
        return numpy.full_like(shaped, numpy.nan)
    return type(shaped)(*(numpy.full_like(r, numpy.nan) for r in shaped))


def _cupy_int_power(a):
    """CuPy's integer ``power`` raises nothing on a negative exponent (NumPy: ValueError);
    it answers 0 there (as ``1 // x ** -n``, whatever the base): the stand-in does too."""
    x, y = (numpy.asarray(v) for v in a)
    if x.dtype.kind not in "biu" or y.dtype.kind not in "biu" or not (y < 0).any():
        return a
    t = numpy.result_type(*a)
    if t.kind not in "iu":
        return a
    return [numpy.where(y < 0, 0, x).astype(t), numpy.where(y < 0, 1, y).astype(t)]


def _cuda_shift(a):
    """CUDA shifts by the low 32 bits of the amount, clamped to the bit width: a 64-bit
    amount below 0 or of 2**32 or more whose low 32 bits are under the width shifts by
    those (NumPy: all bits out)."""
    x, y = (numpy.asarray(v) for v in a)
    if x.dtype.kind not in "biu" or y.dtype.kind not in "biu":
        return a
    t = numpy.result_type(*a)
    if t.kind not in "iu":
        return a
    y = y.astype(t)
    if t.itemsize < 8:
        return a
    low = y.astype(numpy.uint64) & numpy.uint64(0xFFFFFFFF)
    return [x.astype(t), numpy.where(low < t.itemsize * 8, low, y).astype(t)]


class _Fn:
    """A stand-in device function: CuPy's argument checks, unwrap, check devices, call
    NumPy, rewrap (a name the CuPy table does not list is served as NumPy's)."""

    def __init__(self, qualname, np_obj, backend):
        self._qualname = qualname
        self._np = np_obj
        self._backend = backend
        self._strict = backend.rules.entry(qualname) not in (None, UNKNOWN)
        self.__name__ = qualname.rsplit(".", 1)[-1]

    def __call__(self, *args, **kwargs):
        if self._strict:
            self._backend.rules.check_call(self._qualname, args, kwargs)
        return self._run(args, kwargs)

    def _run(self, args, kwargs):
        rules = self._backend.rules
        dev = _current_device()
        refusal = _REFUSALS.get(self._qualname)
        if refusal is not None:
            refusal(args, kwargs)
        ins = _inputs(args, [])
        _inputs(tuple(kwargs.values()), ins)
        a = _unwrap(args, dev)
        k = {key: _unwrap(v, dev) for key, v in kwargs.items()}
        self._backend.calls[self._qualname] += 1
        if self._qualname == "piecewise" and len(a) > 2 and any(map(callable, a[2])):
            raise NotImplementedError("Callable functions are not supported currently")
        if self._qualname == "take" and len(a) > 1:      # CuPy's take wraps, never raises
            axis = a[2] if len(a) > 2 else k.get("axis")
            n = a[0].size if axis is None else a[0].shape[axis]
            idx = numpy.asarray(a[1])
            if n and idx.dtype.kind in "iu":
                a = (a[0], idx % n) + tuple(a[2:])
        if self._qualname.startswith("linalg.") and not _linalg_raises():
            r = _silent_linalg(self._np, a, k)
        else:
            with numpy.errstate(all="ignore"):   # CuPy does not read NumPy's errstate
                r = _FIRST_WINS.get(self._qualname, self._np)(*a, **k)
        if self._strict:
            r = rules.result(self._qualname, r, a, k)
        return _wrap(_held(r, rules, self._qualname), dev, ins)

    def __getattr__(self, name):          # attributes of the NumPy function
        attr = getattr(self._np, name)
        if callable(attr) and not isinstance(attr, type):
            qual = f"{self._qualname}.{name}"
            if qual in self._backend.missing or self._backend.rules.entry(qual) is None:
                raise AttributeError(f"standin: {qual} is missing")
            return _Fn(qual, attr, self._backend)
        return attr

    def __repr__(self):
        return f"<standin function {self._qualname}>"


class _Ufunc(_Fn):
    """A stand-in CuPy ufunc: CuPy's keywords, argument count, loops and methods."""

    def __init__(self, qualname, np_obj, backend):
        super().__init__(qualname, np_obj, backend)
        e = backend.rules.entry(qualname)
        self.nin, self.nout, self.nargs = e["nin"], e["nout"], e["nin"] + e["nout"]
        self.types = e["types"].split()
        self.__name__ = f"cupy_{qualname}"

    def __call__(self, *args, **kwargs):
        rules = self._backend.rules
        rules.check_ufunc_call(self._qualname, args, kwargs)
        dev = _current_device()
        ins = _inputs(args, [])
        _inputs(tuple(kwargs.values()), ins)
        a = list(_unwrap(args, dev))
        k = {("where" if key == "_where" else key): _unwrap(v, dev) for key, v in kwargs.items()}
        self._backend.calls[self._qualname] += 1
        loop = None
        if k.get("dtype") is None and k.get("out") is None and len(a) == self.nin:
            loop = rules.ufunc_loop(self._qualname, a)
        if self._qualname == "power" and len(a) == 2 and "out" not in k:
            a = _cupy_int_power(a)
        if self._qualname in ("right_shift", "left_shift") and len(a) == 2:
            a = _cuda_shift(a)
        if k.get("dtype") is not None or "casting" in k:
            # CuPy casts the inputs to dtype= whatever casting= says
            k.pop("casting", None)
            if k.get("dtype") is not None:
                a = [x.astype(k["dtype"]) if isinstance(x, numpy.ndarray) else x for x in a]
        if loop is None:
            r = self._np(*a, **k)
        else:                         # CuPy's loop: inputs cast to it, outputs its dtypes
            in_t, out_t = loop
            r = self._np(*[numpy.asarray(x, dtype=t) for x, t in zip(a, in_t)], **k)
            if self.nout == 1:
                r = r.astype(out_t[0], copy=False)
            else:
                r = tuple(x.astype(t, copy=False) for x, t in zip(r, out_t))
        return _wrap(r, dev, ins)

    def __getattr__(self, name):
        qual = f"{self._qualname}.{name}"
        rules = self._backend.rules
        e = rules.entry(qual)
        if qual in self._backend.missing or e is None:
            raise AttributeError(f"standin: {qual} is missing")
        if e is UNKNOWN:
            return super().__getattr__(name)
        return _UfuncMethod(qual, getattr(self._np, name), self._backend)

    def __repr__(self):
        return f"<standin ufunc {self._qualname}>"


class _UfuncMethod(_Fn):
    """reduce/accumulate/reduceat/at/outer of a stand-in ufunc: NotImplementedError
    where CuPy has no implementation, CuPy's signature otherwise."""

    def __call__(self, *args, **kwargs):
        self._backend.rules.ufunc_method(self._qualname)
        self._backend.rules.check_call(self._qualname, args, kwargs)
        return self._run(args, {("where" if k == "_where" else k): v for k, v in kwargs.items()})


class _Indexer:
    """r_/c_/mgrid/ogrid: ``x[key]`` with CuPy's refusals."""

    def __init__(self, qualname, np_obj, backend):
        self._qualname, self._np, self._backend = qualname, np_obj, backend

    def __getitem__(self, key):
        self._backend.rules.check_key(self._qualname, key)
        dev = _current_device()
        self._backend.calls[self._qualname] += 1
        r = self._np[_unwrap(key, dev)]
        return _wrap(r, dev, _inputs(key, []))

    def __len__(self):
        return 0


def _held(r, rules, qualname):
    """NumPy's result ``r`` as CuPy holds it: big-endian data byte-swapped (as
    ``cupy.asarray``), ValueError for a dtype CuPy cannot hold (CuPy refuses the call)."""
    if type(r) is numpy.ndarray:
        if not r.dtype.isnative:
            r = r.astype(r.dtype.newbyteorder("="))
        rules.check_dtype(r.dtype, f"result of cupy.{qualname}")
    elif type(r) in (list, tuple):
        return type(r)(_held(e, rules, qualname) for e in r)
    elif isinstance(r, tuple) and hasattr(r, "_fields"):
        return type(r)._make(_held(e, rules, qualname) for e in r)
    return r


class _DeviceGenerator:
    """``cupy.random.default_rng()`` / ``RandomState``: a generator whose draws are
    arrays on the current device (NumPy's generator underneath)."""

    def __init__(self, gen):
        self._gen = gen

    def __getattr__(self, name):
        attr = getattr(self._gen, name)
        if not callable(attr):
            return attr

        def draw(*args, **kwargs):
            dev = _current_device()
            ins = _inputs(args, [])
            r = attr(*_unwrap(args, dev), **{k: _unwrap(v, dev) for k, v in kwargs.items()})
            return _wrap(r, dev, ins)
        return draw


class StandinNamespace:
    """Module-like stand-in for ``cupy``: NumPy's functions over StandinArrays."""

    def __init__(self, backend, np_module=numpy, prefix=""):
        self._backend = backend
        self._np_module = np_module
        self._prefix = prefix
        self.__name__ = "standin" + ("." + prefix.rstrip(".") if prefix else "")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        qual = self._prefix + name
        if qual in self._backend.missing:
            raise AttributeError(f"standin: {qual} is missing")
        if qual in _SUBMODULES:
            sub = StandinNamespace(self._backend, _SUBMODULES[qual], qual + ".")
            self.__dict__[name] = sub
            return sub
        if qual == "ndarray":
            return StandinArray
        if qual == "from_dlpack":
            return self._from_dlpack
        if qual in ("random.default_rng", "random.RandomState"):
            make = getattr(self._np_module, name)
            return lambda *a, **k: _DeviceGenerator(make(*a, **k))
        entry = self._backend.rules.entry(qual)
        if entry is None:
            raise AttributeError(f"standin: module 'cupy' has no attribute {qual!r} "
                                 f"(CuPy {self._backend.cupy_major})")
        obj = getattr(self._np_module, name)
        if entry is not UNKNOWN and entry["kind"] == "indexer":
            return _Indexer(qual, obj, self._backend)
        if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
            return obj
        if entry is not UNKNOWN and entry["kind"] == "ufunc":
            return _Ufunc(qual, obj, self._backend)
        return _Fn(qual, obj, self._backend)

    def _from_dlpack(self, x):
        dev = x.__dlpack_device__()
        if tuple(dev)[0] != 2:
            raise BufferError("standin.from_dlpack: producer is not on a device")
        capsule = x.__dlpack__(dl_device=tuple(dev), max_version=(1, 0))

        class _Host:            # the capsule holds numpy memory: let NumPy import it
            def __dlpack__(self, **_):
                return capsule

            def __dlpack_device__(self):
                return (1, 0)
        return _wrap(numpy.from_dlpack(_Host()), dev[1])

    def asnumpy(self, a):
        return self._backend.to_host(a)


class StandinBackend(Backend):
    """The stand-in GPU backend: ``device_count()`` devices of NumPy memory.

    Counters: ``h2d``/``d2h`` (copies through from_host/to_host), ``h2d_bytes``/
    ``d2h_bytes``, ``calls`` {qualname: n} (namespace functions called) and
    ``devices_entered`` (the set of ids passed to ``device``). ``missing`` is the set of
    qualnames it pretends not to implement, on top of what CuPy ``cupy_major`` (14 or
    13) lacks. ``rules`` (:class:`_standin_api.CupyRules`) is how its namespace refuses
    as that CuPy; ``api`` is minpy's table for it, which ``refuses``/``holds``/
    ``drop_defaults``/``refuses_key`` answer from, as :class:`CupyBackend` does.
    """

    name = "standin"
    device_type = "gpu"
    array_type = StandinArray
    own_modules = ("_standin",)              # what raised_inside counts as the backend's
    linalg_errstate = staticmethod(lambda: errstate(linalg="raise"))

    def __init__(self, n_devices=2, missing=DEFAULT_MISSING, cupy_major=14):
        self.n_devices = n_devices
        self.missing = set(missing)
        self.cupy_major = cupy_major
        self.rules = CupyRules(cupy_major)
        self.api = cupy_api.load(str(cupy_major))
        self.promotion = self.api.promotion
        self.xp = StandinNamespace(self)
        _NS_FOR_DUNDERS[0] = self.xp
        self.reset_counters()

    def reset_counters(self):
        """Zero the copy and call counters."""
        import collections
        self.h2d = self.d2h = self.h2d_bytes = self.d2h_bytes = 0
        self.calls = collections.Counter()
        self.devices_entered = set()
        self.syncs = []          # device ids passed to synchronize (None: all)

    def owns(self, data):
        return type(data) is StandinArray

    def device_id(self, data):
        return data.device_id

    def device_count(self):
        return self.n_devices

    @contextlib.contextmanager
    def device(self, device_id):
        """Make ``device_id`` current (per thread), as ``cupy.cuda.Device``."""
        if not 0 <= device_id < self.n_devices:
            raise ValueError(f"standin: no device {device_id}")
        self.devices_entered.add(device_id)
        prev = _current_device()
        _tls.device = device_id
        try:
            yield
        finally:
            _tls.device = prev

    def synchronize(self, device_id=None):
        """Record a stream synchronisation (the stand-in runs everything eagerly)."""
        self.syncs.append(device_id)

    def from_host(self, host, device_id):
        """A counted host -> device copy of numpy array ``host`` (as ``cupy.asarray``:
        a dtype CuPy cannot hold raises ValueError; big-endian data is byte-swapped)."""
        if type(host) is not numpy.ndarray:
            raise TypeError(f"standin.from_host: expected numpy.ndarray, got {type(host)}")
        if not 0 <= device_id < self.n_devices:
            raise ValueError(f"standin: no device {device_id}")
        self.rules.check_dtype(host.dtype.newbyteorder("="), "from_host")
        self.h2d += 1
        self.h2d_bytes += host.nbytes
        return StandinArray(host.astype(host.dtype.newbyteorder("="), order="C"), device_id)

    def to_host(self, data):
        """A counted device -> host copy (a fresh numpy array)."""
        if type(data) is not StandinArray:
            raise TypeError(f"standin.to_host: expected StandinArray, got {type(data)}")
        self.d2h += 1
        self.d2h_bytes += data.nbytes
        return data._a.copy()

    def lookup(self, qualname):
        """None for a ``missing`` name and, as CupyBackend, for what CuPy refuses on
        every call (``api.never``)."""
        if qualname in self.missing or qualname in self.api.never:
            return None
        return super().lookup(qualname)

    def refuses(self, qualname, nargs, kwargs, dtypes):
        """minpy's answer for CuPy ``cupy_major`` (its API table), or a ``missing`` name."""
        if qualname in self.missing:
            return f"the stand-in has no {qualname}"
        return self.api.refuses(qualname, nargs, kwargs, dtypes)

    def holds(self, dtype):
        return self.api.holds(dtype)

    def drop_defaults(self, qualname, kwargs):
        return self.api.drop_defaults(qualname, kwargs)

    def refuses_key(self, qualname, key):
        return self.api.refuses_key(qualname, key)


@contextlib.contextmanager
def installed(backend=None):
    """Install ``backend`` (default: a fresh StandinBackend) as minpy's GPU backend.

    Resets the dispatch statistics, the policy ('prefer_gpu'), the fallback
    warning switch and the once-per-function warning memory; restores the
    previous GPU backend afterwards.
    """
    backend = StandinBackend() if backend is None else backend
    prev = minpy.dispatch.set_gpu_backend(backend)
    minpy.set_policy("prefer_gpu")
    minpy.dispatch.set_fallback_warning(True)
    primitive._warned.clear()
    minpy.dispatch.reset_stats()
    try:
        yield backend
    finally:
        minpy.dispatch.set_gpu_backend(prev)
        minpy.set_policy("prefer_gpu")
        minpy.dispatch.set_fallback_warning(True)
        primitive._warned.clear()
        minpy.dispatch.reset_stats()


@pytest.fixture
def standin_gpu():
    """A fresh StandinBackend (2 devices, DEFAULT_MISSING) installed for one test."""
    with installed() as backend:
        yield backend
