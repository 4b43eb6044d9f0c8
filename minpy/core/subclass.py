"""Subclassing ``minpy.ndarray`` as NumPy documents it: a subclass is a host NumPy subclass.

``class InfoArray(np.ndarray)`` with ``import minpy as np`` names ``minpy.Array`` as
its base. An Array is one backend buffer behind ``__slots__`` (on the host or on a
GPU); the recipes of NumPy's "Subclassing ndarray" page need what only
``numpy.ndarray`` gives a subclass: ``ndarray.__new__(subtype, shape, dtype, buffer,
...)``, ``view(cls)`` calling ``__array_finalize__``, instance attributes, slicing
and ufuncs that keep the subclass, ``__array_wrap__``/``__array_ufunc__``. So
:class:`ArrayMeta` (``minpy.Array``'s metaclass) builds such a class on
:class:`HostArray` — a ``numpy.ndarray`` subclass — in place of ``minpy.Array``:

- instances are NumPy arrays on the host and behave exactly as with NumPy;
- ``isinstance(obj, minpy.ndarray)`` and ``issubclass(InfoArray, minpy.ndarray)``
  hold (the metaclass's ``__instancecheck__``/``__subclasscheck__``; an exact Array
  never reaches them: CPython answers ``type(x) is cls`` first);
- ``x.view(InfoArray)`` and ``minpy.asarray(obj).view(InfoArray)`` on a host Array
  give the subclass over the same buffer; on a device Array, a TypeError (the
  subclass is host memory): see :func:`check_view_type`;
- minpy's functions take an instance as host data (as a ``numpy.ndarray``): an
  untraced call answers as NumPy does (the subclass where NumPy keeps it); under
  ``minpy.grad`` an instance is host data the tape cannot follow: a traced call whose
  result NumPy would make an instance is refused by name (see ``tape._finish``), and
  so is differentiating with respect to one; ``minpy.asarray(obj)`` is its values as
  a plain (differentiable) minpy array;
- with a GPU and a policy that runs a call there, a call mixing an instance with
  device arrays meets CuPy's refusal of a host operand (a TypeError).

A class defined in :mod:`minpy.core.array` itself (the scalar-result classes) stays
a real Array subclass.
"""
import numpy

from ..dispatch.context import Context

__all__ = ["ArrayMeta", "HostArray", "check_view_type", "host_view_type"]

_ndarray = numpy.ndarray
_CPU0 = Context("cpu", 0)
_ARRAY_MODULE = "minpy.core.array"


class HostArray(numpy.ndarray):
    """The real base of a user's subclass of ``minpy.ndarray``: ``numpy.ndarray`` with
    what minpy's own code asks of an array it finds by ``isinstance(x, minpy.ndarray)``
    (``asnumpy()``, ``context``, ``wait_to_read()``, a host buffer and no tape node),
    and ``view`` accepting ``minpy.ndarray`` for ``numpy.ndarray`` (NumPy's
    ``__array_ufunc__`` recipe writes ``input_.view(np.ndarray)``).

    Never instantiated directly: subclass ``minpy.ndarray``. See also numpy.ndarray.
    """

    # as a host Array that nothing differentiates (for code that found it by isinstance)
    _node = None
    _var = None
    _copies = None
    _scalar = False

    @property
    def _data(self):
        return _ndarray.view(self, _ndarray)

    def view(self, *args, **kwargs):
        """A view of the same memory, as ``numpy.ndarray.view``; ``minpy.ndarray`` (or
        ``type=minpy.ndarray``) means its host base, ``numpy.ndarray``."""
        return _ndarray.view(self, *[host_view_type(a) for a in args],
                             **{k: host_view_type(v) for k, v in kwargs.items()})

    def asnumpy(self):
        """This array's values as a plain host ``numpy.ndarray`` (no copy)."""
        return _ndarray.view(self, _ndarray)

    @property
    def context(self):
        """``cpu(0)``: a subclass instance is host memory."""
        return _CPU0

    ctx = context

    def wait_to_read(self):
        """Nothing to wait for (host memory written synchronously); returns self."""
        return self


def host_view_type(t):
    """``numpy.ndarray`` for ``minpy.ndarray`` (and its scalar-result classes), else ``t``."""
    if isinstance(t, ArrayMeta):
        return _ndarray
    return t


def check_view_type(on_host, args, kwargs):
    """Refuse ``x.view(cls)`` with ``cls`` a subclass of ``minpy.ndarray`` for an array
    not on the host (``on_host`` False): the subclass is a host NumPy array.

    Raises:
        TypeError: naming the class and telling how to get host data.
    """
    if on_host:
        return
    for t in (*args, *kwargs.values()):
        if isinstance(t, type) and issubclass(t, HostArray):
            raise TypeError(f"view({t.__name__}): a subclass of minpy.ndarray is a host "
                            "NumPy array, and this Array lives on a device; call "
                            f"x.asnumpy().view({t.__name__}) (a host copy) instead")


class ArrayMeta(type):
    """``minpy.Array``'s metaclass: a class deriving from ``minpy.Array`` outside
    :mod:`minpy.core.array` is built on :class:`HostArray` (``numpy.ndarray``)
    instead, and counts as a subclass of ``minpy.ndarray`` for ``isinstance`` and
    ``issubclass`` (see the module's docstring)."""

    _root = None        # minpy.Array: the first class this metaclass builds

    def __new__(mcs, name, bases, ns, **kwargs):
        if ns.get("__module__") == _ARRAY_MODULE:
            if ArrayMeta._root is None:
                cls = super().__new__(mcs, name, bases, ns, **kwargs)
                ArrayMeta._root = cls
                return cls
            # array.py's own subclasses (the scalar-result classes): plain type checks
            return super().__new__(_InternalMeta, name, bases, ns, **kwargs)
        host_bases = []
        for b in bases:
            b = HostArray if isinstance(b, ArrayMeta) else b
            if b not in host_bases:
                host_bases.append(b)
        meta = type
        for b in host_bases:                # the most derived metaclass, as ``class`` picks
            if issubclass(type(b), meta):
                meta = type(b)
        return meta(name, tuple(host_bases), ns, **kwargs)

    # ``isinstance(obj, minpy.Array)``: CPython answers ``type(obj) is Array`` itself
    # before asking the metaclass, and no object's type is a real subclass of Array
    # (the scalar-result classes are never instantiated), so what is left to ask is
    # ``isinstance(obj, HostArray)``: a C method, not a Python function on the path of
    # every ``isinstance(x, Array)`` that is False.
    __instancecheck__ = type.__instancecheck__.__get__(HostArray)

    def __subclasscheck__(cls, sub):
        if type.__subclasscheck__(cls, sub):
            return True
        return cls is ArrayMeta._root and isinstance(sub, type) and issubclass(sub, HostArray)


class _InternalMeta(ArrayMeta):
    """The metaclass of :mod:`minpy.core.array`'s own subclasses of Array: type's checks."""

    __instancecheck__ = type.__instancecheck__
    __subclasscheck__ = type.__subclasscheck__
