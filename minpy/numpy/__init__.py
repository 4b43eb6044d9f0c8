"""minpy's NumPy namespace: ``import minpy.numpy as np`` (or ``import minpy as np``).

Every public callable of NumPy is here with NumPy's signature and semantics,
returning :class:`minpy.Array` for array results; types and constants are
NumPy's own objects. Built in three parts: the generated wrappers
(:mod:`.generated`), the fronts that replace some of them (:mod:`.fronts`),
and the Array methods bound to them (:mod:`.array_methods`). The gradient
rules (``vjp_*``, listed in :mod:`.gradients`, which ``minpy`` imports) load the
first time a rule is read.

``random`` and NumPy's other submodules (``ma``, ``lib``, ``polynomial`` ...) are made
on first use, as NumPy loads them (issue 27: import time): see :func:`__getattr__`.
"""
import functools as _functools
import sys as _sys

import numpy as _numpy

from .generated import *                    # noqa: F401,F403
from .generated import __all__ as _generated_names, mapping as _mapping
from ..core.wrappers import ufunc           # noqa: F401
from .fronts import (pad, piecewise, array, asarray, asanyarray, where,   # noqa: F401
                     apply_along_axis, apply_over_axes, fromfunction, block, FRONTS)
from . import linalg, fft                   # noqa: F401
from .interop import from_dlpack            # noqa: F401
# NumPy's host-only names, on host data; its other submodules (ma, lib, polynomial, char,
# strings, rec, emath, typing, ctypeslib) are made on first use (see .submodules)
from .submodules import frompyfunc, asmatrix, bmat   # noqa: F401
from . import submodules as _submodules
from .lazy_modules import install as _install_finder
from . import _namespace
# MinPy's names of ``minpy.numpy``: its (deprecated in MinPy) set_policy and op statistics
from ..dispatch import set_policy           # noqa: F401
from .op_stat import record_op_stat, show_op_stat   # noqa: F401
from .array_methods import install as _install_methods

_mapping = dict(_mapping)
_mapping.update(linalg._mapping)
_mapping.update(fft._mapping)
_mapping.update(FRONTS)
_install_methods(_sys.modules[__name__], _mapping)
from .namespace_info import __array_namespace_info__   # noqa: E402,F401

__array_api_version__ = "2024.12"
# ``import minpy.numpy.ma``, ``from minpy.numpy.lib.stride_tricks import ...``: the modules
# of .submodules, made when first imported
_install_finder(__name__, {f"{__name__}.{name}": _functools.partial(_submodules.module, name)
                           for name in _submodules.NAMES})


# inspect.signature of a wrapper is NumPy's (minpy.numpy.random signs its own)
for _mine_module, _np_module in ((_sys.modules[__name__], _numpy), (linalg, _numpy.linalg),
                                 (fft, _numpy.fft)):
    _namespace.sign_like_numpy(vars(_mine_module), _np_module)

# made on first use: attribute name -> what it is
_LAZY = ("random",) + _submodules.TOP_LEVEL


def __getattr__(name):
    """``minpy.numpy.random`` and NumPy's other submodules (``ma``, ``lib`` ...), made on
    first use; the module is then bound here, so this runs once per name.

    Raises AttributeError (as any module does) for any other missing name.
    """
    if name == "random":
        # ``import`` rather than ``from . import random``: the latter asks
        # hasattr(minpy.numpy, "random") first, which would call this function again
        import minpy.numpy.random
        return globals()["random"]
    if name in _submodules.TOP_LEVEL:
        made = globals()[name] = _submodules.module(name)
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    """minpy.numpy's names, including the submodules made on first use."""
    return sorted(set(globals()) | set(_LAZY))
