"""MinPy's ``minpy.array`` module (``Array``, ``Number``, ``Value``, ``wrap``) that is
also NumPy's ``array`` function: ``minpy.array([1, 2])`` creates an Array.

Why this module is callable: in ``import minpy as np``, ``np.array`` is the
creation function, while MinPy programs also ``import minpy.array`` or write
``from minpy.array import Array``. Both must find one object, so this module
makes itself callable — its class becomes a ``ModuleType`` subclass whose
``__call__`` *is* :func:`minpy.numpy.array` (a staticmethod: no extra frame).
``minpy/__init__.py`` binds it as ``minpy.array`` and :mod:`minpy.compat`
finds it for ``import minpy.array``, so it is this one object from the
start, whatever a program imports and in which order: ``np.array(obj,
dtype=...)`` creates, ``np.array.Array`` is the class. Only its type is
changed, which Python supports for modules. ``inspect.signature(minpy.array)``
follows ``__wrapped__`` to the function's signature.

Called, it is :func:`minpy.numpy.array`:

"""
import numbers
import sys
import types

import numpy

from .. import numpy as mnp
from ..core.array import Array
from ..numpy import array as _array_function
from .core import numpy_to_minpy

__all__ = ["Array", "Number", "Value", "wrap"]
__wrapped__ = _array_function
__doc__ += _array_function.__doc__ or ""

wrap = numpy_to_minpy      # MinPy's ``minpy.array.wrap``


class _TestedType(type):
    """A type whose ``isinstance`` is the class's ``_test`` (MinPy's wrapper types)."""

    def __instancecheck__(cls, obj):
        return cls._test(obj)


def _is_number(obj):
    if type(obj) is Array:
        return obj.ndim == 0
    return isinstance(obj, (numbers.Number, numpy.number)) and not isinstance(obj, bool)


class Number(metaclass=_TestedType):
    """MinPy's scalar type, as an ``isinstance`` test.

    MinPy wrapped scalars in a ``float`` subclass; minpy's scalar results are
    0-d Arrays (they carry gradients) or Python/NumPy numbers, and
    ``isinstance(x, Number)`` is true for those (not for ``bool``).
    ``Number(v)`` returns ``minpy.asarray(v)``, a 0-d Array.
    """
    _test = staticmethod(_is_number)

    def __new__(cls, val):
        return mnp.asarray(val)


class Value(metaclass=_TestedType):
    """MinPy's base of ``Array`` and ``Number``: ``isinstance(x, Value)`` is true for
    minpy Arrays and numbers."""
    _test = staticmethod(lambda obj: type(obj) is Array or _is_number(obj))


class _CallableModule(types.ModuleType):
    """The type of ``minpy.array``: a module that calls :func:`minpy.numpy.array`."""

    __call__ = staticmethod(_array_function)


sys.modules[__name__].__class__ = _CallableModule
