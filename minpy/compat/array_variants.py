"""MinPy's ``minpy.array_variants``: the :class:`ArrayType` enum."""
import enum

__all__ = ["ArrayType"]


class ArrayType(enum.Enum):
    """MinPy's array kinds. ``NUMPY``: host NumPy arrays (minpy's CPU, ``cpu(i)``);
    ``MXNET``: MinPy's device arrays, which in minpy are CuPy arrays on ``gpu(i)``."""
    NUMPY = 0
    MXNET = 1
