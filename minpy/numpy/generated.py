"""The generated part of minpy's NumPy namespace: one wrapper (or ufunc) per public
callable of NumPy, built from NumPy's own namespace by :mod:`._namespace`, plus the
index tricks and NumPy's types. ``minpy.numpy`` is this with the fronts
(:mod:`.fronts`) in place of some wrappers.
"""
import numpy as _np

from ..core.array import Array
from . import _namespace
from ._namespace import IndexTrick as _IndexTrick

mapping = _namespace.build(_np, "", globals())     # numpy function -> minpy function

ndarray = Array
mgrid = _IndexTrick("mgrid", _namespace.CREATE)
ogrid = _IndexTrick("ogrid", _namespace.CREATE)
r_ = _IndexTrick("r_", _namespace.COMPUTE)
c_ = _IndexTrick("c_", _namespace.COMPUTE)
exceptions = _np.exceptions
dtypes = _np.dtypes

__all__ = [n for n in globals() if not n.startswith("_") and n != "mapping"]
