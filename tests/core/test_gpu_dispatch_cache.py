"""The GPU per-call fast path (minpy.core.execute._run_resident) and its kept refusal
answers never give a stale answer: the policy, the operands' dtypes and devices, the
installed backend and value checks are honoured on every call."""
import warnings

import numpy
import pytest

import minpy
from minpy.core import execute
from minpy.dispatch import stats

from _standin import installed, standin_gpu  # noqa: F401
from _dispatch_checks import gpu_array, on_gpu


def _fallbacks():
    return stats()["fallbacks"]


def _outcome(call):
    """(result on the GPU, host value or error type, fallbacks) of ``call()``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            r = call()
        except Exception as err:   # noqa: BLE001 -- the error is the outcome compared
            return None, type(err).__name__, dict(_fallbacks())
    return on_gpu(r), r.asnumpy().tolist(), dict(_fallbacks())


def test_resident_call_runs_on_the_gpu_and_is_kept(standin_gpu):
    x, y = gpu_array([1.0, 2.0], numpy.float32), gpu_array([3.0, 4.0], numpy.float32)
    for _ in range(3):
        r = x + y
        assert on_gpu(r) and r.dtype == numpy.float32 and r.asnumpy().tolist() == [4, 6]
    assert standin_gpu.calls["add"] == 3 and _fallbacks() == {}
    assert any(k[0].qualname == "add" for k in execute._decided)


def test_policy_change_between_identical_calls(standin_gpu):
    x, y = gpu_array([1.0, 2.0]), gpu_array([3.0, 4.0])
    assert on_gpu(x + y)
    prev = minpy.set_policy("only_cpu")
    try:
        r = x + y
        assert r.context == minpy.cpu(0) and r.asnumpy().tolist() == [4, 6]
    finally:
        minpy.set_policy(prev)
    assert on_gpu(x + y)


def test_operands_on_another_device_or_host(standin_gpu):
    x, y = gpu_array([1.0, 2.0]), gpu_array([3.0, 4.0])
    assert on_gpu(x * y)
    r = x * gpu_array([1.0, 1.0], device=1)           # two devices: the general path
    assert r.asnumpy().tolist() == [1.0, 2.0] and on_gpu(r)
    h = minpy.array(numpy.array([1.0, 1.0]), ctx=minpy.cpu(0))
    assert on_gpu(x * h) and on_gpu(x * 2.0) and on_gpu(2 * x)


def test_negative_integer_power_goes_to_the_host_on_every_call(standin_gpu):
    """A value check (gpu_route._VALUE_CHECKS) reads the operands on each call: integer
    power with a negative exponent raises NumPy's ValueError, never CuPy's 0."""
    x = gpu_array([2, 3], numpy.int64)
    pos, neg = gpu_array([1, 2], numpy.int64), gpu_array([1, -1], numpy.int64)
    for _ in range(2):
        r = x ** pos
        assert on_gpu(r) and r.asnumpy().tolist() == [2, 9]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with pytest.raises(ValueError):
                x ** neg
    assert all(execute._decided[k] is not None for k in execute._decided
               if k[0].qualname == "power")          # never kept as "runs on the GPU"


@pytest.mark.parametrize("first, second", [
    (numpy.float32, numpy.complex64),
    (numpy.complex64, numpy.float32),
    (numpy.int8, numpy.float16),
    (numpy.float64, numpy.bool_),
])
def test_kept_answer_depends_on_dtypes(standin_gpu, first, second):
    """A call after another of the same primitive with other dtypes answers as it does
    with nothing kept (its result, its error, its counted fallbacks)."""
    def call(dt):
        a, b = gpu_array([3, 1], dt), gpu_array([2, 1], dt)
        return lambda: minpy.floor_divide(a, b)
    execute._decided.clear()
    fresh = _outcome(call(second))
    minpy.dispatch.reset_stats()
    execute._decided.clear()
    _outcome(call(first))
    minpy.dispatch.reset_stats()
    assert _outcome(call(second)) == fresh


def test_fallbacks_counted_on_every_call_warned_once(standin_gpu):
    standin_gpu.missing = standin_gpu.missing | {"hypot"}
    x, y = gpu_array([3.0]), gpu_array([4.0])
    with pytest.warns(RuntimeWarning, match="hypot"):
        r = minpy.hypot(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r2 = minpy.hypot(x, y)
    assert r.asnumpy().tolist() == r2.asnumpy().tolist() == [5.0]
    assert _fallbacks() == {"hypot": 2}
    minpy.set_policy("only_gpu")
    with pytest.raises(RuntimeError, match="only_gpu"):
        minpy.hypot(x, y)


def test_another_backend_is_not_served_the_kept_answer():
    with installed():
        x, y = gpu_array([3.0]), gpu_array([4.0])
        assert on_gpu(minpy.arctan2(x, y))
    with installed() as b:
        b.missing = b.missing | {"arctan2"}
        x, y = gpu_array([3.0]), gpu_array([4.0])
        with pytest.warns(RuntimeWarning, match="arctan2"):
            r = minpy.arctan2(x, y)
        assert _fallbacks() == {"arctan2": 1}
        assert r.asnumpy().tolist() == pytest.approx([numpy.arctan2(3.0, 4.0)])


def test_device_entered_for_the_call(standin_gpu):
    """A backend that cannot say its current device (the stand-in) is entered."""
    standin_gpu.devices_entered.clear()
    x, y = gpu_array([1.0], device=1), gpu_array([2.0], device=1)
    standin_gpu.devices_entered.clear()
    assert on_gpu(x + y, 1) and standin_gpu.devices_entered == {1}


def test_a_refused_call_numpy_rejects_is_no_fallback(standin_gpu):
    """A call the GPU refuses whose NumPy run raises is NumPy's error only: no fallback
    counted, no warning that it ran on the CPU (it did not run). Refused by value
    (integer power with a negative exponent) or by the backend (a missing function)."""
    x, neg = gpu_array([2, 3], numpy.int64), gpu_array([1, -1], numpy.int64)
    standin_gpu.missing = standin_gpu.missing | {"hypot"}
    execute._warned.difference_update({"power", "hypot"})
    minpy.dispatch.reset_stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="negative"):
            x ** neg
        with pytest.raises(ValueError, match="broadcast"):
            minpy.hypot(gpu_array([3.0, 1.0]), gpu_array([4.0, 1.0, 2.0]))
    assert [str(w.message) for w in caught] == []
    assert _fallbacks() == {}
    with pytest.warns(RuntimeWarning, match="hypot"):          # one that runs: counted
        r = minpy.hypot(gpu_array([3.0]), gpu_array([4.0]))
    assert r.asnumpy().tolist() == [5.0] and _fallbacks() == {"hypot": 1}
