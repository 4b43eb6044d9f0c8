"""The stand-in GPU's array (:class:`StandinArray`: NumPy memory posing as device memory,
refusing implicit host conversion) and its device bookkeeping (the current device,
unwrapping and wrapping namespace arguments). See :mod:`_standin`."""
import threading
import types
import weakref

import numpy

import _standin_methods
import minpy


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
