"""minpy's NumPy namespace: ``import minpy.numpy as np`` (or ``import minpy as np``).

Every public callable of NumPy is here with NumPy's signature and semantics,
returning :class:`minpy.Array` for array results; types and constants are
NumPy's own objects. Built in three parts: the generated wrappers
(:mod:`.generated`), the fronts that replace some of them (:mod:`.fronts`),
and the Array methods bound to them (:mod:`.array_methods`). The gradient
rules (``vjp_*``, listed in :mod:`.gradients`) are loaded by ``minpy``.
"""
import sys as _sys
import types as _types

import numpy as _numpy

from .generated import *                    # noqa: F401,F403
from .generated import __all__ as _generated_names, mapping as _mapping
from ..core.wrappers import ufunc           # noqa: F401
from .fronts import (pad, piecewise, array, asarray, asanyarray, where,   # noqa: F401
                     apply_along_axis, apply_over_axes, fromfunction, block, FRONTS)
from . import linalg, fft, random           # noqa: F401
from .interop import from_dlpack            # noqa: F401
# NumPy's other submodules (ma, lib, polynomial, char, strings, rec, emath, typing,
# ctypeslib) and its host-only names, on host data (see .submodules)
from .submodules import (ma, lib, polynomial, char, strings, rec, emath, typing,   # noqa: F401
                         ctypeslib, frompyfunc, asmatrix, bmat, SUBMODULES as _SUBMODULES)
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
# ``import minpy.numpy.ma``, ``from minpy.numpy.lib.stride_tricks import ...``
_sys.modules.update({f"{__name__}.{name}": m for name, m in _SUBMODULES.items()})

# inspect.signature of a wrapper is NumPy's: it follows ``__wrapped__`` (read only by
# inspect, so the call path is unchanged)
def _sign_like_numpy(mine_module, np_module):
    for name in dir(mine_module):
        mine, theirs = getattr(mine_module, name), getattr(np_module, name, None)
        if (type(mine) is _types.FunctionType and callable(theirs)
                and not hasattr(mine, "__wrapped__") and not name.startswith("_")):
            mine.__wrapped__ = theirs


for _mine_module, _np_module in ((_sys.modules[__name__], _numpy), (linalg, _numpy.linalg),
                                 (fft, _numpy.fft), (random, _numpy.random)):
    _sign_like_numpy(_mine_module, _np_module)
