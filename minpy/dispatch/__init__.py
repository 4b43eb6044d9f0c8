"""Dispatch: contexts, backends, device policies, cached transfers, statistics."""
import importlib.util

from .context import Context, cpu, gpu, current_context, num_gpus
from .policy import set_policy, get_policy, policy, POLICIES
from .stats import stats, reset_stats
from .backend import Backend, NumpyBackend, NUMPY, gpu_backend, set_gpu_backend, backend_of
from .state import set_fallback_warning
from . import state


def detect_cupy():
    """Install the CuPy backend if CuPy imports and sees a CUDA device; returns it or None."""
    if importlib.util.find_spec("cupy") is None:
        return None
    # optional dependency: cupy_backend imports cupy at its top
    from .cupy_backend import CupyBackend, cuda_available
    if not cuda_available():
        return None
    b = CupyBackend()
    set_gpu_backend(b)
    return b
