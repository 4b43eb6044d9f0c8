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

import minpy
from minpy.core import execute as primitive
from minpy.dispatch import Backend

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
    flags = property(lambda self: self._a.flags)

    @property
    def device(self):
        """CuPy-like device handle (``.id``)."""
        return types.SimpleNamespace(id=self.device_id)

    @property
    def T(self):
        return _wrap(self._a.T, self.device_id, (self,))

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
        k = _unwrap_key(key, self.device_id)
        r = self._a[k]
        if not isinstance(r, numpy.ndarray):       # integer index: a 0-d view, as CuPy
            r = self._a[(k if isinstance(k, tuple) else (k,)) + (Ellipsis,)]
        return _wrap(r, self.device_id, (self,))

    def __setitem__(self, key, value):
        self._on_current()
        k = _unwrap_key(key, self.device_id)
        self._a[k] = _unwrap(value, self.device_id)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        self._on_current()
        return _wrap(self._a.astype(dtype, order=order, casting=casting, copy=copy),
                     self.device_id, (self,))

    def copy(self, order="C"):
        # CuPy: "makes a copy of a given array in the current device"
        return StandinArray(self._a.copy(order=order), _current_device())

    def view(self, dtype=None, type=None):
        if type is not None:
            raise TypeError("standin: view(type=...) is not supported")
        v = self._a.view() if dtype is None else self._a.view(dtype)
        return _wrap(v, self.device_id, (self,))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if dl_device is None or tuple(dl_device) != (2, self.device_id):
            raise BufferError("standin: device memory cannot be exported to "
                              f"{dl_device!r} (implicit conversion to host)")
        return self._a.__dlpack__(max_version=max_version)

    def __dlpack_device__(self):
        return (2, self.device_id)        # kDLCUDA


def _binop(name):
    def op(self, other):
        return getattr(_NS_FOR_DUNDERS[0], name)(self, other)
    return op


def _rbinop(name):
    def op(self, other):
        return getattr(_NS_FOR_DUNDERS[0], name)(other, self)
    return op


_NS_FOR_DUNDERS = [None]
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


class _Fn:
    """A stand-in device function: unwrap, check devices, call NumPy, rewrap."""

    def __init__(self, qualname, np_obj, backend):
        self._qualname = qualname
        self._np = np_obj
        self._backend = backend
        self.__name__ = qualname.rsplit(".", 1)[-1]

    def __call__(self, *args, **kwargs):
        dev = _current_device()
        ins = _inputs(args, [])
        _inputs(tuple(kwargs.values()), ins)
        a = _unwrap(args, dev)
        k = {key: _unwrap(v, dev) for key, v in kwargs.items()}
        self._backend.calls[self._qualname] += 1
        return _wrap(self._np(*a, **k), dev, ins)

    def __getattr__(self, name):          # ufunc methods (add.reduce ...) and attributes
        attr = getattr(self._np, name)
        if callable(attr) and not isinstance(attr, type):
            qual = f"{self._qualname}.{name}"
            if qual in self._backend.missing:
                raise AttributeError(f"standin: {qual} is missing")
            return _Fn(qual, attr, self._backend)
        return attr

    def __repr__(self):
        return f"<standin function {self._qualname}>"


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
        obj = getattr(self._np_module, name)
        if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
            return obj
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
    ``devices_entered`` (ids passed to ``device``). ``missing`` is the set of
    qualnames it pretends not to implement.
    """

    name = "standin"
    device_type = "gpu"
    array_type = StandinArray

    def __init__(self, n_devices=2, missing=DEFAULT_MISSING):
        self.n_devices = n_devices
        self.missing = set(missing)
        self.xp = StandinNamespace(self)
        _NS_FOR_DUNDERS[0] = self.xp
        self.reset_counters()

    def reset_counters(self):
        """Zero the copy and call counters."""
        import collections
        self.h2d = self.d2h = self.h2d_bytes = self.d2h_bytes = 0
        self.calls = collections.Counter()
        self.devices_entered = []

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
        self.devices_entered.append(device_id)
        prev = _current_device()
        _tls.device = device_id
        try:
            yield
        finally:
            _tls.device = prev

    def from_host(self, host, device_id):
        """A counted host -> device copy of numpy array ``host``."""
        if type(host) is not numpy.ndarray:
            raise TypeError(f"standin.from_host: expected numpy.ndarray, got {type(host)}")
        if not 0 <= device_id < self.n_devices:
            raise ValueError(f"standin: no device {device_id}")
        self.h2d += 1
        self.h2d_bytes += host.nbytes
        return StandinArray(host.copy(), device_id)

    def to_host(self, data):
        """A counted device -> host copy (a fresh numpy array)."""
        if type(data) is not StandinArray:
            raise TypeError(f"standin.to_host: expected StandinArray, got {type(data)}")
        self.d2h += 1
        self.d2h_bytes += data.nbytes
        return data._a.copy()

    def lookup(self, qualname):
        if qualname in self.missing:
            return None
        return super().lookup(qualname)


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
