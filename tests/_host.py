"""Comparing minpy results with NumPy values in tests."""
import numpy

import minpy


def host(x):
    """``x`` as a NumPy array: a host minpy Array's own buffer (no copy, so tests can
    check what shares memory), a device Array copied to the host."""
    return x._host() if isinstance(x, minpy.Array) else numpy.asarray(x)


def close(a, b, rtol=1e-7, atol=1e-10):
    """Assert minpy/NumPy values ``a`` and ``b`` equal to ``rtol``/``atol``."""
    numpy.testing.assert_allclose(host(a), host(b), rtol=rtol, atol=atol)


def assert_result_type(got, want):
    """``got`` (a minpy result) has the kind of type NumPy's/SciPy's ``want`` has: a minpy
    Array for an array; for a NumPy scalar, the same NumPy scalar type on the host, or a
    0-d Array living on a GPU (a device result stays on its device)."""
    if isinstance(want, numpy.ndarray):
        assert type(got) is minpy.Array, f"expected a minpy.Array, got {type(got)}"
    elif isinstance(want, numpy.generic):
        if type(got) is minpy.Array:
            assert got.ndim == 0 and got.context.device_type != "cpu", \
                f"a host 0-d result must be NumPy's {type(want)}, got a minpy.Array"
        else:
            assert type(got) is type(want), f"expected NumPy's {type(want)}, got {type(got)}"
    else:
        assert type(got) is type(want), f"expected {type(want)}, got {type(got)}"
