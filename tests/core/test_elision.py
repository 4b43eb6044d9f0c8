"""Temporary elision: an operator writes into a temporary operand's buffer, as NumPy does.

Values, dtypes and shapes must equal NumPy's whatever the operands are, and a
named array (or one a view, a list, a tape or the engine refers to) is never
written; the saving is measured with tracemalloc (NumPy reports its buffers).
"""
import tracemalloc

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy as mp
from minpy.core import wrappers
from _host import host

EXPRESSIONS = {
    "temp op named": lambda a, b, c, s: (a * b) + c,
    "named op temp": lambda a, b, c, s: a - (b * c),
    "chain": lambda a, b, c, s: (a * b + c) * s + a,
    "scalar first": lambda a, b, c, s: s * (a + b) - c / (b * b + 2.0),
    "reflected": lambda a, b, c, s: 1.5 - (a * b) / (c * c + 3.0),
    "broadcast small into temp": lambda a, b, c, s: (a + b) * c[..., :1],
    "temp broadcast up": lambda a, b, c, s: (a[..., :1] * 2.0) + b,
    "int scalar": lambda a, b, c, s: (a * b) + 3,
    "same temp twice": lambda a, b, c, s: (a * b) * (a * b),
    "named plus temp": lambda a, b, c, s: c + (a * b),
    "named over temp": lambda a, b, c, s: a / (b * b + 1.5),
    "right chain": lambda a, b, c, s: a + (b + (c * a)),
    "broadcast small plus temp": lambda a, b, c, s: a[..., :1] - (b * c),
    "named plus small temp": lambda a, b, c, s: a + (b[..., :1] * 2.0),
}


@pytest.fixture(autouse=True)
def elide_small(monkeypatch):
    monkeypatch.setattr(wrappers, "ELIDE_MIN", 1)      # small arrays take the path too


@pytest.mark.skipif(wrappers._TEMP_REFS is None, reason="this interpreter cannot tell temporaries")
@given(name=st.sampled_from(sorted(EXPRESSIONS)),
       dtype=st.sampled_from([numpy.float32, numpy.float64, numpy.complex64, numpy.int64]),
       shape=st.sampled_from([(5,), (3, 4), (2, 3, 4)]),
       s=st.sampled_from([0.5, 2, numpy.float64(0.25)]))
def test_values_equal_numpy_and_named_operands_are_untouched(name, dtype, shape, s):
    rng = numpy.random.default_rng(0)
    arrays = [(rng.standard_normal(shape) * 3).astype(dtype) for _ in range(3)]
    named = [mp.array(x) for x in arrays]
    expected = EXPRESSIONS[name](*arrays, s)
    got = EXPRESSIONS[name](*named, s)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    numpy.testing.assert_allclose(host(got), expected, rtol=1e-6)
    for before, after in zip(arrays, named):
        numpy.testing.assert_array_equal(host(after), before)


def test_a_referenced_temporary_is_not_written():
    a = mp.arange(6.0)
    t = a * 2                      # named now
    held = [a * 3]                 # held by a list
    view_base = a * 4
    view = view_base[::2]          # a view of it
    u = t + 1
    v = held[0] + 1
    u2 = 1 - t                     # named, held and viewed on the right
    v2 = a + held[0]
    w2 = a[:3] * view_base.reshape(2, 3)[0]
    w = view_base.reshape(2, 3) + 1    # a view's buffer is never owned: no elision
    numpy.testing.assert_array_equal(host(t), numpy.arange(6.0) * 2)
    numpy.testing.assert_array_equal(host(held[0]), numpy.arange(6.0) * 3)
    numpy.testing.assert_array_equal(host(view), (numpy.arange(6.0) * 4)[::2])
    numpy.testing.assert_array_equal(host(u), numpy.arange(6.0) * 2 + 1)
    numpy.testing.assert_array_equal(host(v), numpy.arange(6.0) * 3 + 1)
    numpy.testing.assert_array_equal(host(w), (numpy.arange(6.0) * 4).reshape(2, 3) + 1)
    numpy.testing.assert_array_equal(host(u2), 1 - numpy.arange(6.0) * 2)
    numpy.testing.assert_array_equal(host(v2), numpy.arange(6.0) * 4)
    numpy.testing.assert_array_equal(host(w2), numpy.arange(3.0) * numpy.arange(3.0) * 4)
    numpy.testing.assert_array_equal(host(view_base), numpy.arange(6.0) * 4)


def test_numpy_scalar_and_wider_operands_keep_numpy_dtypes():
    a = mp.ones(4, dtype=numpy.float32)
    assert ((a * 2) + numpy.float64(1)).dtype == numpy.float64      # NEP 50: a NumPy scalar
    assert ((a * 2) + mp.ones(4)).dtype == numpy.float64             # a float64 array
    assert ((a * 2) + 1j).dtype == numpy.complex64
    assert ((a * 2) + mp.ones((3, 4), dtype=numpy.float32)).shape == (3, 4)


def _peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


@pytest.mark.cpu_only        # elision is the NumPy fast path's; tracemalloc counts host memory
@pytest.mark.skipif(wrappers._TEMP_REFS is None, reason="this interpreter cannot tell temporaries")
def test_a_chain_of_operators_allocates_one_temporary():
    n = 1 << 20
    a, b, c = (mp.ones(n) for _ in range(3))
    nbytes = n * 8
    peak = _peak(lambda: (a * b + c) * 0.5 + a)
    assert peak < 1.5 * nbytes, peak / nbytes         # one result buffer, reused 3 times
    peak = _peak(lambda: a + (b + (c * a)))
    assert peak < 1.5 * nbytes, peak / nbytes         # temporaries on the right: the same
    an, bn, cn = (numpy.ones(n) for _ in range(3))
    named = _peak(lambda: [an * bn, bn + cn])          # no temporary: two buffers
    assert named > 1.9 * nbytes
