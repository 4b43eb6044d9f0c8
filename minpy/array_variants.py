"""MinPy's ``minpy.array_variants``: the :class:`ArrayType` enum (see :mod:`minpy.compat`).

``ArrayType.NUMPY`` is minpy's CPU (NumPy arrays); ``ArrayType.MXNET``, MinPy's
device arrays, is minpy's GPU (CuPy arrays).
"""
from .compat import ArrayType   # noqa: F401

__all__ = ["ArrayType"]
