import os

import pytest
from hypothesis import HealthCheck, Phase, settings

import minpy

# CI: derandomized, no deadline, bounded examples, so a green run stays green.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=25, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile(
    "dev", deadline=None, max_examples=60, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# the second CI pass (the whole suite on the stand-in GPU): fewer examples per property,
# the same derandomized ones first
settings.register_profile(
    "standin", derandomize=True, deadline=None, max_examples=8, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
# a GPU machine's short allowance (.ci/gpu): the stand-in pass's examples, no shrinking
# (a failure's first example is reported as found)
settings.register_profile(
    "gpu", settings.get_profile("standin"),
    phases=(Phase.explicit, Phase.reuse, Phase.generate))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# MINPY_TEST_DEVICE=standin: the whole suite runs with the CuPy-faithful stand-in installed
# as gpu(0) and gpu(1) (policy prefer_gpu), as on a machine with a GPU.
if os.environ.get("MINPY_TEST_DEVICE") == "standin":
    import minpy
    from _standin import StandinBackend
    minpy.dispatch.set_gpu_backend(StandinBackend())
    minpy.set_policy("prefer_gpu")
# MINPY_TEST_DEVICE=cupy: the whole suite on the real CuPy backend as gpu(0), which
# import minpy must have detected (no silent CPU-only run).
elif os.environ.get("MINPY_TEST_DEVICE") == "cupy":
    import minpy
    _gpu = minpy.dispatch.gpu_backend()
    if getattr(_gpu, "name", None) != "cupy":
        raise RuntimeError("MINPY_TEST_DEVICE=cupy needs the CuPy backend, but import minpy "
                           f"installed {_gpu!r}: {minpy.dispatch.gpu_problem()}")
    minpy.set_policy("prefer_gpu")


# test modules that run the same in both passes (static checks, jobs in subprocesses that
# set up their own devices, the stand-in's own tables): the stand-in pass skips them
_SAME_IN_BOTH = frozenset({"test_import_graph.py", "test_launch.py", "test_kvstore_dist.py",
                           "test_no_silent_jobs.py", "test_cupy_api.py", "test_cuda_kernels.py",
                           "test_benchmarks_quick.py", "test_gpu_install.py"})


# with the real CuPy (a GPU machine's short allowance): the static checks and the
# jobs that fake their own CuPy are skipped too (the CPU pass runs them)
_STATIC = frozenset({"test_import_graph.py", "test_cupy_api.py", "test_benchmarks_quick.py",
                     "test_gpu_install.py"})


def pytest_collection_modifyitems(config, items):
    device = os.environ.get("MINPY_TEST_DEVICE")
    if device not in ("standin", "cupy"):
        return
    same = _SAME_IN_BOTH if device == "standin" else _STATIC
    skip = pytest.mark.skip(reason=f"runs the same without the {device} GPU (the CPU pass "
                                   "ran it)")
    for item in items:
        if item.path.name in same:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _cpu_only(request):
    """``@pytest.mark.cpu_only``: the test asserts host placement (or counts host work), so
    under MINPY_TEST_DEVICE it runs with no GPU backend installed."""
    if request.node.get_closest_marker("cpu_only") is None or minpy.dispatch.gpu_backend() is None:
        yield
        return
    prev = minpy.dispatch.set_gpu_backend(None)
    try:
        yield
    finally:
        minpy.dispatch.set_gpu_backend(prev)
