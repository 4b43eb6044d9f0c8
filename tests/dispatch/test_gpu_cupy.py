"""The dispatch checks of test_dispatch.py (tests/_dispatch_checks.py), on real CuPy.

Runs only where ``cupy`` imports and ``cupy.cuda.is_available()``; skips
cleanly elsewhere. Reuses the portable checks (public API and
``minpy.dispatch.stats()`` only) and its NumPy-equivalence cases.
"""
import numpy
import pytest

cupy = pytest.importorskip("cupy")

import minpy                                                   # noqa: E402
from minpy.dispatch.cupy_backend import CupyBackend            # noqa: E402

from _standin import installed                                  # noqa: E402
from _dispatch_checks import PORTABLE                           # noqa: E402
from test_dispatch import (CACHE_STEPS, EQUIV,                 # noqa: E402
                           check_cache_steps, check_equivalence)


def _cuda_available():
    try:
        return bool(cupy.cuda.is_available())
    except cupy.cuda.runtime.CUDARuntimeError:
        return False


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _cuda_available(), reason="no CUDA device")]


@pytest.fixture
def cupy_gpu():
    """A CupyBackend installed with fresh statistics and policy 'prefer_gpu'."""
    with installed(CupyBackend()) as backend:
        yield backend


def test_cupy_is_detected_at_import():
    assert isinstance(minpy.dispatch.gpu_backend(), CupyBackend)
    assert minpy.num_gpus() == cupy.cuda.runtime.getDeviceCount()


@pytest.mark.parametrize("check", list(PORTABLE.values()), ids=list(PORTABLE))
def test_portable(cupy_gpu, check):
    check(None)           # None: no stand-in counters, stats() only


@pytest.mark.parametrize("placement", ["gpu", "cpu"])
@pytest.mark.parametrize("name", list(EQUIV))
def test_numpy_equivalence(cupy_gpu, name, placement):
    with numpy.errstate(invalid="ignore"):
        check_equivalence(name, placement)


@pytest.mark.parametrize("home", ["cpu", "gpu0"])
def test_copy_cache_follows_writes(cupy_gpu, home):
    check_cache_steps(None, home, CACHE_STEPS)


def test_gpu_arrays_are_cupy_arrays(cupy_gpu):
    x = minpy.array([1.0, 2.0])
    r = x * 2
    assert isinstance(r._data, cupy.ndarray) and r.context == minpy.gpu(0)
    assert r.asnumpy().tolist() == [2.0, 4.0]
