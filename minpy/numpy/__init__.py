"""minpy's NumPy namespace: ``import minpy.numpy as np`` (or ``import minpy as np``).

Every public callable of NumPy is here with NumPy's signature and semantics,
returning :class:`minpy.Array` for array results; types and constants are
NumPy's own objects.
"""
import sys as _sys

import numpy as _np

from ..core.array import Array
from ..core.wrappers import ufunc
from . import _namespace
from ._namespace import IndexTrick as _IndexTrick

_mapping = _namespace.build(_np, "", globals())

ndarray = Array
mgrid = _IndexTrick("mgrid", _namespace.CREATE)
ogrid = _IndexTrick("ogrid", _namespace.CREATE)
r_ = _IndexTrick("r_", _namespace.COMPUTE)
c_ = _IndexTrick("c_", _namespace.COMPUTE)
exceptions = _np.exceptions
dtypes = _np.dtypes

from . import linalg, fft, random          # noqa: E402
from .interop import from_dlpack          # noqa: E402
from .array_methods import install as _install_methods   # noqa: E402

_mapping.update(linalg._mapping)
_mapping.update(fft._mapping)
_install_methods(_sys.modules[__name__], _mapping)

__all__ = [n for n in globals() if not n.startswith("_")]

# Gradient tables, one per chapter (each op's VJP beside its family).
import importlib as _importlib   # noqa: E402
_GRAD_TABLES = (
    "vjp_nondiff",
    "vjp_reductions",
    "vjp_math",
    "vjp_indexing",
    "vjp_manipulation",
    "vjp_composite",
    "vjp_products", "vjp_linalg", "vjp_norms", "vjp_fft",
    "vjp_poly",
    "vjp_creation",
    "vjp_ufunc_methods",
)
for _m in _GRAD_TABLES:
    _importlib.import_module(f"{__name__}.{_m}")
