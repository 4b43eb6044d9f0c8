"""gpu_route.refusal on argument values CuPy answers otherwise than NumPy: such calls
take the host path (where NumPy gives its answer or its error)."""
import numpy
import pytest

import minpy as mp
from minpy.core import gpu_route
from minpy.core.primitive import PRIMITIVES
from _standin import installed


_MAKE = {"arctan2.outer": lambda: mp.arctan2.outer(mp.ones(2), mp.ones(2)),
         "maximum.at": lambda: mp.maximum.at(mp.zeros(2), [0], 1.0),
         "minimum.at": lambda: mp.minimum.at(mp.zeros(2), [0], 1.0),
         "add.reduceat": lambda: mp.add.reduceat(mp.ones(3), [0])}


def _numpy_refuses_2d_cross():
    try:
        numpy.cross(numpy.ones(2), numpy.ones(2))
    except ValueError:
        return True
    return False


def _refusal(qualname, *args, **kwargs):
    if qualname in _MAKE and qualname not in PRIMITIVES:
        _MAKE[qualname]()                   # a ufunc method's primitive: made on first use
    with installed() as gpu, mp.gpu(0):
        args = tuple(mp.array(a) if isinstance(a, numpy.ndarray) else a for a in args)
        leaves = [a for a in args if isinstance(a, mp.Array)]
        return gpu_route.refusal(gpu, PRIMITIVES[qualname], args, kwargs, leaves)


@pytest.mark.parametrize("qualname,args,kwargs,refused", [
    ("power", (numpy.arange(3), -1), {}, True),
    ("power", (numpy.arange(3), numpy.array([1, -1, 2])), {}, True),
    ("power", (numpy.arange(3), 2), {}, False),
    ("power", (numpy.arange(3.0), -1), {}, False),
    ("right_shift", (numpy.arange(3), numpy.array([-2 ** 40, 1, 2])), {}, True),
    ("right_shift", (numpy.arange(3), numpy.array([70, 1, 2])), {}, False),
    ("arctan2.outer", (numpy.ones(2, complex), numpy.ones(2)), {}, True),
    ("add", (numpy.arange(3), numpy.arange(3)), {"dtype": bool}, True),
    ("add", (numpy.arange(3), numpy.arange(3)), {"dtype": numpy.int8, "casting": "unsafe"},
     False),
    ("add", (numpy.arange(3), 1.5), {"casting": "no"}, True),
    ("std", (numpy.ones((2, 3)),), {"axis": 2}, True),
    ("argmax", (numpy.ones((2, 3)),), {"axis": (0, 1)}, True),
    ("amin", (numpy.ones((2, 0)),), {"axis": 1}, True),
    ("amin", (numpy.ones((2, 0)),), {"axis": 0}, False),
    ("nanvar", (numpy.ones((2, 3)),), {"axis": 1, "ddof": 3}, True),
    ("nanvar", (numpy.ones((2, 3)),), {"axis": 1, "ddof": 2}, False),
    ("percentile", (numpy.ones(3, complex), 50), {}, True),
    ("fft.irfft", (numpy.ones(1),), {}, True),
    ("fft.fft2", (numpy.ones(4),), {}, True),
    ("fft.fft2", (numpy.ones((2, 4)),), {}, False),
    # CuPy's answers differ (read in CuPy 14.2's source, seen on an H200)
    ("cov", (numpy.ones((2, 3)),), {"fweights": numpy.array([1, 2, 1])}, True),
    ("cov", (numpy.ones((2, 3)),), {"aweights": numpy.array([1.0, 2, 1])}, True),
    ("cov", (numpy.ones((2, 3)),), {}, False),
    ("intersect1d", (numpy.arange(3.0), numpy.arange(2.0)), {"assume_unique": True}, True),
    ("intersect1d", (numpy.arange(3.0), numpy.arange(2.0)), {}, False),
    ("maximum.at", (numpy.zeros(3), numpy.array([0, 0]), 1.0), {}, True),
    ("minimum.at", (numpy.zeros(3), numpy.array([0, 0]), 1.0), {}, True),
    ("maximum.at", (numpy.zeros(3, int), numpy.array([0, 0]), 1), {}, False),
    ("add.reduceat", (numpy.ones(4), numpy.array([0, 2])), {"dtype": numpy.float32}, True),
    ("add.reduceat", (numpy.ones(4), numpy.array([0, 2])), {}, True),
    ("add.reduceat", (numpy.ones(4, int), numpy.array([0, 2])), {}, False),
    ("reciprocal", (numpy.arange(3),), {}, True),
    ("reciprocal", (numpy.arange(3.0),), {}, False),
    ("nextafter", (numpy.ones(2, numpy.float16), numpy.zeros(2, numpy.float16)), {}, True),
    ("nextafter", (numpy.ones(2), numpy.zeros(2)), {}, False),
    ("matmul", (numpy.ones((2, 2), complex), numpy.full((2, 2), numpy.inf)), {}, True),
    ("matmul", (numpy.ones((2, 2), complex), numpy.ones((2, 2))), {}, False),
    ("matmul", (numpy.full((2, 2), numpy.inf), numpy.ones((2, 2))), {}, False),
    ("nancumprod", (numpy.array([1j, numpy.nan]),), {}, True),
    ("kron", (numpy.ones(2, complex), numpy.complex128(numpy.inf)), {}, True),
    ("kron", (numpy.ones(2, complex), numpy.complex128(2)), {}, False),
    ("linalg.multi_dot", ([numpy.ones((2, 2)), numpy.array([[1j, numpy.inf]] * 2)],), {},
     True),
    ("cross", (numpy.ones((3, 2)), numpy.ones((3, 2))), {}, _numpy_refuses_2d_cross()),
    ("cross", (numpy.ones((3, 3)), numpy.ones((3, 3))), {}, False),
])
def test_value_refusals(qualname, args, kwargs, refused):
    assert (_refusal(qualname, *args, **kwargs) is not None) is refused
