"""Dispatch: contexts, backends, device policies, cached transfers, statistics."""
from .context import Context, cpu, gpu, current_context, num_gpus
from .policy import set_policy, get_policy, policy, POLICIES
from .stats import stats, reset_stats
from .backend import Backend, NumpyBackend, NUMPY, gpu_backend, set_gpu_backend, backend_of
from .state import set_fallback_warning
from . import state
from . import detect
from .detect import gpu_problem, GPUWarning


def detect_cupy():
    """Install the CuPy backend when :func:`minpy.dispatch.detect.check` finds CuPy, a CUDA
    device and every CUDA library minpy uses working; returns it or None.

    ``MINPY_DEVICE=cpu`` keeps minpy on the CPU without importing CuPy; a CuPy that
    cannot run minpy warns once with what is missing and the ``pip install`` that
    brings it, and :func:`gpu_problem` says why no backend was installed.
    """
    if not detect.check():
        return None
    # optional dependency: cupy_backend imports cupy at its top
    from .cupy_backend import CupyBackend
    b = CupyBackend()
    set_gpu_backend(b)
    return b
