"""Zero-copy exchange with other array libraries."""
from ..core.array import new
from ..dispatch.backend import NUMPY, gpu_backend

__all__ = ["from_dlpack"]


def from_dlpack(x):
    """An Array sharing memory with DLPack producer ``x`` (a CPU or GPU tensor).

    See also numpy.from_dlpack, cupy.from_dlpack.
    """
    device_type, _ = x.__dlpack_device__()
    if device_type == 1:          # kDLCPU
        return new(NUMPY.xp.from_dlpack(x))
    g = gpu_backend()
    if g is None:
        raise RuntimeError(f"from_dlpack: producer lives on DLPack device type {device_type} "
                           "but no GPU backend is available")
    return new(g.xp.from_dlpack(x))
