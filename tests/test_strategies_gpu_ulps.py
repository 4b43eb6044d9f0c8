"""The comparison helpers of ``tests/_strategies.py`` on a real GPU backend: CuPy's
reductions and products sum in another order than NumPy's and its math library is not
NumPy's, so a device result may differ by a few ulps of its magnitude; on the CPU and on
the stand-in device (NumPy underneath) comparisons stay exact."""
import types

import numpy
import pytest

import _strategies
from _strategies import GPU_ULPS, assert_matches


def _device_result(values):
    snap = object.__new__(_strategies._Snap)
    snap.data = numpy.asarray(values)
    snap.device = True
    return snap


@pytest.fixture
def backend(monkeypatch):
    """Set the name of the installed GPU backend (None: none installed)."""
    def set_name(name):
        fake = None if name is None else types.SimpleNamespace(name=name)
        monkeypatch.setattr(_strategies.minpy.dispatch, "gpu_backend", lambda: fake)
    return set_name


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32, numpy.complex128])
def test_a_few_ulps_of_the_magnitude_pass_on_cupy_only(backend, dtype):
    exp = numpy.array([343.0, 1.0, 0.5], dtype)
    got = exp.copy()
    got[0] = numpy.nextafter(exp.real[0], numpy.inf) if dtype != numpy.complex128 else \
        numpy.nextafter(exp.real[0], numpy.inf) + 0j
    got[1] += 2 * numpy.finfo(dtype).eps * 343       # a reduction's rounding, at the scale of the array
    backend("cupy")
    assert_matches(_device_result(got), exp, rtol=0, atol=0)
    for name in ("standin", None):
        backend(name)
        with pytest.raises(AssertionError):
            assert_matches(_device_result(got), exp, rtol=0, atol=0)


def test_real_differences_still_fail_on_cupy(backend):
    backend("cupy")
    exp = numpy.array([343.0, 1.0])
    got = exp.copy()
    got[1] += 4 * GPU_ULPS * numpy.finfo(numpy.float64).eps * 343
    with pytest.raises(AssertionError):
        assert_matches(_device_result(got), exp, rtol=0, atol=0)


def test_host_results_stay_exact_with_cupy_installed(backend):
    backend("cupy")
    exp = numpy.array([1.0, 2.0])
    got = _device_result(numpy.nextafter(exp, 3.0))
    got.device = False
    with pytest.raises(AssertionError):
        assert_matches(got, exp, rtol=0, atol=0)
    with pytest.raises(AssertionError):       # integers are exact everywhere
        assert_matches(_device_result([1, 3]), numpy.array([1, 2]), rtol=0, atol=0)
