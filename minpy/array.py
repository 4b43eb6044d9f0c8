"""MinPy's ``minpy.array`` module (``Array``, ``Number``, ``Value``, ``wrap``) that is
also NumPy's ``array`` function: ``minpy.array([1, 2])`` creates an Array.

Why this module is callable: in ``import minpy as np``, ``np.array`` is the
creation function, while MinPy programs also ``import minpy.array`` or write
``from minpy.array import Array``. Importing a submodule binds it as an
attribute of its package, which would replace the function. So this module
makes itself callable — its class becomes a ``ModuleType`` subclass whose
``__call__`` *is* :func:`minpy.numpy.array` (a staticmethod: no extra frame)
— and ``minpy/__init__.py`` imports it at once, so ``minpy.array`` is this one
object from the start, whatever a program imports and in which order:
``np.array(obj, dtype=...)`` creates, ``np.array.Array`` is the class. It is
the real module in ``sys.modules`` (only its type is changed, which Python
supports for modules). ``inspect.signature(minpy.array)`` follows
``__wrapped__`` to the function's signature.

Called, it is :func:`minpy.numpy.array`:

"""
import sys
import types

from .compat import Number, Value, wrap   # noqa: F401
from .core.array import Array             # noqa: F401
from .numpy import array as _array_function

__all__ = ["Array", "Number", "Value", "wrap"]
__wrapped__ = _array_function
__doc__ += _array_function.__doc__ or ""


class _CallableModule(types.ModuleType):
    """The type of ``minpy.array``: a module that calls :func:`minpy.numpy.array`."""

    __call__ = staticmethod(_array_function)


sys.modules[__name__].__class__ = _CallableModule
