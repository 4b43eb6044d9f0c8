"""``minpy.Array``: a NumPy-compatible array on a device.

An Array holds one backend array (``numpy.ndarray`` or ``cupy.ndarray``) in
``_data``; ``_node`` is its tape node while a gradient is being recorded;
``_copies`` caches its copies on other devices; ``_var`` is its engine
variable once asynchronous work has touched it. All but ``_data`` are None
for a plain array, so creating one costs three stores.
"""
import copy as _copymod
import operator

import numpy

from ..dispatch import state, versions
from ..dispatch.transfer import context_of, data_on, move_raw
from ..dispatch.context import Context
from . import primitive
from .primitive import L, SELF, call, mutated, unwrap_cpu, wrap
from .wrappers import make_function, make_ufunc
from . import tape as _tape    # noqa: F401  (installs the recorder)

__all__ = ["Array"]

_S = state.S
_ndarray = numpy.ndarray


class Array:
    """An n-dimensional array on a device, behaving like ``numpy.ndarray``.

    Create arrays with ``minpy.array``, ``minpy.zeros`` and the other creation
    functions rather than this constructor; ``Array(obj)`` is
    ``minpy.array(obj)``. ``x.asnumpy()`` returns a host ``numpy.ndarray``.

    See also numpy.ndarray.
    """

    __slots__ = ("_data", "_node", "_copies", "_var", "__weakref__")
    __array_priority__ = 1000.0

    def __new__(cls, obj=None, dtype=None, ctx=None):
        if obj is None:
            raise TypeError("Array(): use minpy.array(obj) or a creation function")
        from .. import numpy as mnp
        return mnp.array(obj, dtype=dtype, ctx=ctx)

    # ---------------------------------------------------------- host / device
    def asnumpy(self):
        """A host ``numpy.ndarray`` with this array's values (no copy on the CPU).

        For a GPU array, a new host copy (counted) that the caller owns.
        """
        _wait(self)
        d = self._data
        if type(d) is _ndarray:
            return d
        return move_raw(d, Context("cpu", 0))

    @property
    def context(self):
        """The Context (device) this array lives on."""
        return context_of(self._data)

    ctx = context

    @property
    def device(self):
        return self.context

    def copyto(self, ctx):
        """A copy of this array on ``ctx`` (a Context), or into Array ``ctx``."""
        if isinstance(ctx, Array):
            _to_array(ctx, self)
            return ctx
        _wait(self)
        if context_of(self._data) == ctx:
            return _COPY(self)
        # a fresh copy, never this array's cached one: the caller may write to it
        return new(move_raw(self._data, ctx))

    def as_in_context(self, ctx):
        """This array if it already lives on ``ctx``, else a copy there."""
        if context_of(self._data) == ctx:
            return self
        return self.copyto(ctx)

    def wait_to_read(self):
        """Block until pending asynchronous writes to this array are done."""
        _wait(self)
        return self

    # -------------------------------------------------------- attributes
    @property
    def shape(self):
        return self._data.shape

    @shape.setter
    def shape(self, value):
        self._data.shape = value

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def size(self):
        return self._data.size

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    @property
    def strides(self):
        return self._data.strides

    @property
    def flags(self):
        return self._data.flags

    @property
    def base(self):
        return None

    @property
    def T(self):
        if _S.fast:
            return new(self._data.T)
        return _NS.transpose(self)

    @property
    def mT(self):
        return _NS.matrix_transpose(self)

    @property
    def real(self):
        return _NS.real(self)

    @real.setter
    def real(self, value):
        self[...] = _NS.imag(self) * 1j + value if _NS.iscomplexobj(self) else value

    @property
    def imag(self):
        return _NS.imag(self)

    @imag.setter
    def imag(self, value):
        if not _NS.iscomplexobj(self):
            raise TypeError("array does not have imaginary part to set")
        self[...] = _NS.real(self) + _NS.asarray(value) * 1j

    @property
    def flat(self):
        """A flat iterator over the elements (row-major): iterate, ``flat[i]``, assign.
        See also numpy.ndarray.flat."""
        return FlatIter(self)

    # -------------------------------------------------------- conversions
    def __len__(self):
        return len(self._data)

    def __contains__(self, value):
        # as numpy.ndarray: (self == value).any(), not a walk over the rows
        return bool((self == value).any())

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d array")      # at iter(), as NumPy
        return (self[i] for i in range(len(self._data)))

    def __bool__(self):
        return bool(self._host_scalar())

    def __int__(self):
        return int(self._host_scalar())

    def __float__(self):
        return float(self._host_scalar())

    def __complex__(self):
        return complex(self._host_scalar())

    def __index__(self):
        return operator.index(self._host_scalar())

    def _host_scalar(self):
        _wait(self)
        d = self._data
        if type(d) is not _ndarray:
            d = data_on(self, Context("cpu", 0))
        return d

    def item(self, *args):
        """The element as a Python scalar. See also numpy.ndarray.item."""
        return self.asnumpy().item(*args)

    def tolist(self):
        """Nested Python lists. See also numpy.ndarray.tolist."""
        return self.asnumpy().tolist()

    def tobytes(self, order="C"):
        return self.asnumpy().tobytes(order)

    def __array__(self, dtype=None, copy=None):
        d = self.asnumpy()
        if dtype is not None and d.dtype != dtype:
            if copy is False:
                raise ValueError("__array__: a cast to another dtype needs a copy")
            return d.astype(dtype)
        if copy:
            return d.copy()
        return d

    def __dlpack__(self, **kwargs):
        _wait(self)
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # -------------------------------------------------------- protocols
    def __array_ufunc__(self, uf, method, *inputs, **kwargs):
        mine = make_ufunc(uf)
        if method == "__call__":
            return mine(*inputs, **kwargs)
        return getattr(mine, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        f = _NP_TO_MINPY.get(func)
        if f is None:
            return _host_fallback(func, args, kwargs)
        return f(*args, **kwargs)

    def __repr__(self):
        _wait(self)
        text = repr(self.asnumpy())
        return text[:-1] + f", ctx={self.context})"

    def __str__(self):
        return str(self.asnumpy())

    def __format__(self, spec):
        return format(self.asnumpy(), spec)

    def __reduce__(self):
        return (_rebuild, (self.asnumpy(), self.context))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    __hash__ = None

    # -------------------------------------------------------- indexing
    def __getitem__(self, key):
        if _S.fast:
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
                return a
            return wrap(r)
        if _S.rec1:
            return L.record_getitem(_GETITEM, self, key)
        return call(_GETITEM, (self, key), {})

    def __setitem__(self, key, value):
        if _S.fast:
            d = self._data
            d[unwrap_cpu(key)] = value._data if type(value) is Array else unwrap_cpu(value)
            if self._copies is not None:
                self._copies = None
            versions.bump(d)
            return
        call(_SETITEM, (self, key, value), {})

    # -------------------------------------------------------- methods
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """Cast to ``dtype``. See also numpy.ndarray.astype."""
        if _S.fast and copy and order == "K" and casting == "unsafe":
            return new(self._data.astype(dtype))
        return _ASTYPE(self, dtype, order=order, casting=casting, copy=copy)

    def copy(self, order="C"):
        """A copy on the same device. See also numpy.ndarray.copy."""
        return _COPY(self, order=order)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _NS.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = axes[0]
        return _NS.transpose(self, axes if axes != () else None)

    def flatten(self, order="C"):
        return _NS.ravel(self, order=order).copy()

    def fill(self, value):
        """Set every element to ``value`` in place. See also numpy.ndarray.fill."""
        self[...] = value

    def view(self, *args, **kwargs):
        return _VIEW(self, *args, **kwargs)

    def sort(self, axis=-1, kind=None, order=None):
        """Sort in place. See also numpy.ndarray.sort."""
        if axis is None:        # as ndarray.sort: in place needs an axis
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        self[...] = _NS.sort(self, axis=axis, kind=kind, order=order)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        self[...] = _NS.partition(self, kth, axis=axis, kind=kind, order=order)

    def compress(self, condition, axis=None, out=None):
        return _NS.compress(condition, self, axis=axis, out=out)

    def put(self, indices, values, mode="raise"):
        _NS.put(self, indices, values, mode=mode)

    def resize(self, *shape, refcheck=True):
        raise NotImplementedError("Array.resize: in-place resizing is not supported; "
                                  "use minpy.resize(x, shape)")

    def dump(self, file):
        self.asnumpy().dump(file)

    def dumps(self):
        return self.asnumpy().dumps()


# methods equal to the namespace function with the array first
_SAME_AS_FUNCTION = (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "choose", "clip",
    "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "max", "mean", "min",
    "nonzero", "prod", "ravel", "repeat", "round", "searchsorted", "squeeze", "std",
    "sum", "swapaxes", "take", "trace", "var",
)


def _bind(f):
    def method(self, *args, **kwargs):
        return f(self, *args, **kwargs)
    method.__name__ = f.__name__
    method.__doc__ = f"See minpy.{f.__name__}."
    return method


_NS = None
_NP_TO_MINPY = {}


def install_namespace(ns, np_to_minpy):
    """Called by ``minpy.numpy`` once its functions exist: binds methods."""
    global _NS
    _NS = ns
    _NP_TO_MINPY.update(np_to_minpy)
    for name in _SAME_AS_FUNCTION:
        setattr(Array, name, _bind(getattr(ns, name)))


# ------------------------------------------------------------ flat
class FlatIter:
    """``Array.flat``: the elements of ``base`` in row-major order, as NumPy's flatiter.

    Iterating gives 0-d Arrays; ``flat[key]`` (int, slice, integer or boolean
    array) gives an Array copy; ``flat[key] = value`` writes into ``base``
    (``value`` broadcast to the selected elements; NumPy also repeats a
    shorter value cyclically, which is not supported). See also numpy.flatiter.
    """

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __iter__(self):
        return iter(_NS.ravel(self.base))

    def __len__(self):
        return self.base.size

    def __getitem__(self, key):
        return _NS.ravel(self.base)[key]

    def __setitem__(self, key, value):
        b = self.base
        picked = numpy.arange(b.size)[key._data if type(key) is Array else key]
        self.base[numpy.unravel_index(picked, b.shape)] = value

    def copy(self):
        """The elements as a new 1-d Array. See also numpy.flatiter.copy."""
        return _NS.ravel(self.base).copy()

    def __repr__(self):
        return f"<minpy flatiter over an Array of shape {self.base.shape}>"


# ------------------------------------------------------------ operators
def _install_operators():
    binary = {
        "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
        "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
        "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
        "lshift": "left_shift", "rshift": "right_shift",
    }
    for op, ufname in binary.items():
        uf = make_ufunc(getattr(numpy, ufname))
        setattr(Array, f"__{op}__", uf._op)
        setattr(Array, f"__r{op}__", _reflected(uf._op))
        setattr(Array, f"__i{op}__", _inplace(getattr(numpy, ufname), uf._call))
    for op, ufname in {"lt": "less", "le": "less_equal", "gt": "greater",
                       "ge": "greater_equal", "eq": "equal", "ne": "not_equal"}.items():
        setattr(Array, f"__{op}__", make_ufunc(getattr(numpy, ufname))._op)
    for op, ufname in {"neg": "negative", "pos": "positive", "abs": "absolute",
                       "invert": "invert"}.items():
        setattr(Array, f"__{op}__", make_ufunc(getattr(numpy, ufname))._op)
    dm = make_ufunc(numpy.divmod)
    Array.__divmod__ = lambda self, o: dm(self, o)
    Array.__rdivmod__ = lambda self, o: dm(o, self)


def _reflected(f):
    def r(self, other):
        return f(other, self)
    return r


def _inplace(np_uf, f):
    def i(self, other):
        if _S.fast:
            d = self._data
            np_uf(d, other._data if type(other) is Array else other, out=d)
            if self._copies is not None:
                self._copies = None
            versions.bump(d)
            return self
        return f(self, other, out=self)
    return i


def new(data):
    """Wrap backend array ``data`` as an Array (no copy)."""
    a = _new(Array)
    a._data = data
    a._node = None
    a._copies = None
    a._var = None
    return a


_new = object.__new__
L.Array = Array
L.new = new
_install_operators()


def _wait(arr):
    if arr._var is not None:
        from . import engine_bridge
        engine_bridge.wait_array(arr)


def _rebuild(host, ctx):
    try:
        return new(move_raw(host, ctx))
    except RuntimeError:          # pickled on a GPU, loaded without one
        return new(host)


def _to_array(dst, src):
    dst[...] = src


def _host_fallback(func, args, kwargs):
    """A NumPy function minpy does not wrap, called on host copies (counted)."""
    from ..dispatch.stats import count_fallback
    count_fallback(getattr(func, "__name__", repr(func)))

    def host(a):
        t = type(a)
        if t is Array:
            return a.asnumpy()
        if t is tuple or t is list:
            return t(host(e) for e in a)
        return a
    return wrap(func(*host(args), **{k: host(v) for k, v in kwargs.items()}))


# method primitives: run where the array lives
_GETITEM = primitive.register(primitive.Primitive(
    "ndarray.__getitem__", operator.getitem,
    forward=lambda xp, x, key: x[key], placement=SELF))
_SETITEM = primitive.register(primitive.Primitive(
    "ndarray.__setitem__", operator.setitem,
    forward=lambda xp, x, key, value: operator.setitem(x, key, value), placement=SELF, mutates=0))
_ASTYPE = make_function("ndarray.astype", None, placement=SELF, name="astype",
                        forward=lambda xp, x, dtype, **kw: x.astype(dtype, **kw))
_COPY = make_function("ndarray.copy", None, placement=SELF, name="copy",
                      forward=lambda xp, x, order="C": x.copy(order=order))
_VIEW = make_function("ndarray.view", None, placement=SELF, name="view",
                      forward=lambda xp, x, *a, **k: x.view(*a, **k))
