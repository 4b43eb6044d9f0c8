"""The Array methods that are namespace functions (``x.sum()``, ``x.reshape``,
``x.T``, ``x.real`` ...), ``Array(obj)``, ``x.flat`` and ``__array_function__``.

:func:`install` puts them on :class:`minpy.Array` once the namespace is
built: this is where core meets the namespace.
"""
import numpy

from ..core.array import Array, arrays_in, host_operands, is_traced, new, wrap
from ..core.tape import recording
from ..dispatch import state
from ..dispatch.stats import count_fallback

__all__ = ["install", "NP_TO_MINPY", "FlatIter"]

_process = state.process

# numpy function -> the minpy function, for ``numpy.f(minpy_array)``
NP_TO_MINPY = {}

# methods equal to the namespace function with the array first
_SAME_AS_FUNCTION = (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "choose", "clip",
    "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "max", "mean", "min",
    "nonzero", "prod", "ravel", "repeat", "round", "searchsorted", "squeeze", "std",
    "sum", "swapaxes", "take", "trace", "var",
)


class FlatIter:
    """``Array.flat``: the elements of ``base`` in row-major order, as NumPy's flatiter.

    Iterating gives 0-d Arrays; ``flat[key]`` (int, slice, integer or boolean
    array) gives an Array copy; ``flat[key] = value`` writes into ``base``
    (``value`` broadcast to the selected elements; NumPy also repeats a
    shorter value cyclically, which is not supported). See also numpy.flatiter.
    """

    __slots__ = ("base", "_ravel")

    def __init__(self, base, ravel):
        self.base = base
        self._ravel = ravel

    def __iter__(self):
        return iter(self._ravel(self.base))

    def __len__(self):
        return self.base.size

    def __getitem__(self, key):
        return self._ravel(self.base)[key]

    def __setitem__(self, key, value):
        b = self.base
        picked = numpy.arange(b.size)[key._data if type(key) is Array else key]
        self.base[numpy.unravel_index(picked, b.shape)] = value

    def copy(self):
        """The elements as a new 1-d Array. See also numpy.flatiter.copy."""
        return self._ravel(self.base).copy()

    def __repr__(self):
        return f"<minpy flatiter over an Array of shape {self.base.shape}>"


def _bind(f):
    def method(self, *args, **kwargs):
        return f(self, *args, **kwargs)
    method.__name__ = f.__name__
    method.__doc__ = f"See minpy.{f.__name__}."
    return method


def _host_fallback(func, args, kwargs):
    """A NumPy function minpy does not wrap, on GPU arrays: called on host copies
    (counted); refused for an Array being differentiated (its gradient would be lost)."""
    name = getattr(func, "__name__", repr(func))
    if recording() and any(map(is_traced, arrays_in(args, kwargs))):
        raise TypeError(f"numpy.{name}: minpy has no version of this NumPy function and an "
                        "Array being differentiated reached it, so its gradient would be "
                        "lost; use minpy's functions, or minpy.stop_gradient(x) to pass the "
                        "value alone")
    count_fallback(name)

    def host(a):
        t = type(a)
        if t is Array:
            return a._host()
        if t is tuple or t is list:
            return t(host(e) for e in a)
        return a
    return wrap(func(*host(args), **{k: host(v) for k, v in kwargs.items()}))


_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _writes_into_array(kwargs):
    """True when ``out=`` names a minpy Array (the write must go through minpy)."""
    out = kwargs.get("out")
    return type(out) is Array or (type(out) is tuple and any(type(o) is Array for o in out))


def install(ns, np_to_minpy):
    """Bind the namespace ``ns``'s functions as Array methods; ``np_to_minpy`` maps
    NumPy's functions to ``ns``'s for ``__array_function__``."""
    NP_TO_MINPY.update(np_to_minpy)
    for name in _SAME_AS_FUNCTION:
        setattr(Array, name, _bind(getattr(ns, name)))
    transpose, ravel, real, imag = ns.transpose, ns.ravel, ns.real, ns.imag

    def __new__(cls, *args, **kwargs):
        if cls is not Array:
            # ``np.ndarray.__new__(subtype, shape, dtype, buffer, ...)`` in a user's
            # subclass, a NumPy subclass (core/subclass.py): NumPy's constructor
            return numpy.ndarray.__new__(cls, *args, **kwargs)
        return create(*args, **kwargs)

    def create(obj=None, dtype=None, ctx=None):
        if obj is None:
            raise TypeError("Array(): use minpy.array(obj) or a creation function")
        return ns.array(obj, dtype=dtype, ctx=ctx)

    def T(self):
        if _process.fast:
            return new(self._data.T)
        return transpose(self)

    def set_real(self, value):
        self[...] = imag(self) * 1j + value if ns.iscomplexobj(self) else value

    def set_imag(self, value):
        if not ns.iscomplexobj(self):
            raise TypeError("array does not have imaginary part to set")
        self[...] = real(self) + ns.asarray(value) * 1j

    def flat(self):
        """A flat iterator over the elements (row-major): iterate, ``flat[i]``, assign.
        See also numpy.ndarray.flat."""
        return FlatIter(self, ravel)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return ns.reshape(self, shape, order=order)

    def transpose_method(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = axes[0]
        return transpose(self, axes if axes != () else None)

    def flatten(self, order="C"):
        return ravel(self, order=order).copy()

    def sort(self, axis=-1, kind=None, order=None):
        """Sort in place. See also numpy.ndarray.sort."""
        if axis is None:        # as ndarray.sort: in place needs an axis
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        self[...] = ns.sort(self, axis=axis, kind=kind, order=order)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        self[...] = ns.partition(self, kth, axis=axis, kind=kind, order=order)

    def compress(self, condition, axis=None, out=None):
        return ns.compress(condition, self, axis=axis, out=out)

    def put(self, indices, values, mode="raise"):
        ns.put(self, indices, values, mode=mode)

    def __array_function__(self, func, types, args, kwargs):
        f = NP_TO_MINPY.get(func)
        prim = getattr(f, "_prim", None)
        if (prim is None or prim.mutates is None) and not _writes_into_array(kwargs):
            host = host_operands(args, kwargs)
            if host is not None:      # host arrays, nothing traced: NumPy's own answer
                return func(*host[0], **host[1])
        if f is None:
            return _host_fallback(func, args, kwargs)
        return f(*args, **kwargs)

    Array.__new__ = staticmethod(__new__)
    Array.T = property(T)
    Array.mT = property(lambda self: ns.matrix_transpose(self))
    Array.real = property(lambda self: real(self), set_real)
    Array.imag = property(lambda self: imag(self), set_imag)
    Array.flat = property(flat)
    Array.reshape = reshape
    Array.transpose = transpose_method
    Array.flatten = flatten
    Array.sort = sort
    Array.partition = partition
    Array.compress = compress
    Array.put = put
    Array.__array_function__ = __array_function__

    def __array_namespace__(self, /, *, api_version=None):
        """minpy's namespace (the array API standard's entry point)."""
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(f"__array_namespace__: api_version {api_version!r} is not "
                             f"supported; minpy implements {_API_VERSIONS}")
        return ns
    Array.__array_namespace__ = __array_namespace__
