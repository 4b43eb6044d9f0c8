import numpy

import minpy as mp


def test_expression_matches_numpy():
    xn = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    x = mp.array(xn)
    r = x * x + 1
    assert isinstance(r, mp.Array)
    numpy.testing.assert_array_equal(r.asnumpy(), xn * xn + 1)
    assert r.dtype == numpy.float32


def test_numpy_protocols():
    x = mp.arange(4.0)
    assert isinstance(numpy.mean(x), numpy.float64)      # NumPy's functions answer in NumPy
    assert isinstance(numpy.exp(x), mp.Array)            # ufuncs and operators stay in minpy
    assert numpy.shares_memory(numpy.asarray(x), x.asnumpy())
