"""Comparing minpy results with NumPy values in tests."""
import numpy

import minpy


def host(x):
    """``x`` as a NumPy array (a minpy Array copied to the host)."""
    return x.asnumpy() if isinstance(x, minpy.Array) else numpy.asarray(x)


def close(a, b, rtol=1e-7, atol=1e-10):
    """Assert minpy/NumPy values ``a`` and ``b`` equal to ``rtol``/``atol``."""
    numpy.testing.assert_allclose(host(a), host(b), rtol=rtol, atol=atol)
