"""Zero-copy exchange with other array libraries."""
from ..core.array import Array, is_traced, new
from ..dispatch.backend import NUMPY, gpu_backend
from ..dispatch.context import Context
from ..dispatch.transfer import context_of, move_raw

__all__ = ["from_dlpack"]


def from_dlpack(x, /, *, device=None, copy=None):
    """An Array from DLPack producer ``x`` (a CPU or GPU tensor), sharing its memory.

    Args:
        x: an object with ``__dlpack__`` and ``__dlpack_device__``.
        device: a Context to place the result on (None: the producer's device).
        copy: True always copies; False never does (a ValueError if the result
            would need a copy to reach ``device``); None copies only to move.
    Returns:
        An Array.
    Raises:
        TypeError: ``x`` is an Array being differentiated (its gradient would be lost).

    See also numpy.from_dlpack, cupy.from_dlpack.
    """
    if type(x) is Array and is_traced(x):
        raise TypeError("minpy.grad: from_dlpack of an Array being differentiated would drop "
                        "its gradient (a DLPack exchange carries no tape); use the Array "
                        "itself, or minpy.stop_gradient(x) for its value alone")
    if not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: a {type(x).__name__} is not a DLPack producer "
                        "(no __dlpack_device__)")
    if device is not None and not isinstance(device, Context):
        raise TypeError(f"from_dlpack: device must be a minpy Context such as minpy.cpu(0), "
                        f"got {device!r}")
    device_type, _ = x.__dlpack_device__()
    if device_type == 1:          # kDLCPU
        data = NUMPY.xp.from_dlpack(x, copy=copy) if copy is not None else \
            NUMPY.xp.from_dlpack(x)
    else:
        g = gpu_backend()
        if g is None:
            raise RuntimeError(f"from_dlpack: producer lives on DLPack device type "
                               f"{device_type} but no GPU backend is available")
        data = g.xp.from_dlpack(x)
        if copy:
            with g.device(g.device_id(data)):     # CuPy copies to the current device
                data = data.copy()
    if device is not None and context_of(data) != device:
        if copy is False:
            raise ValueError(f"from_dlpack: the producer lives on {context_of(data)}, "
                             f"device={device} needs a copy but copy=False")
        data = move_raw(data, device)
    return new(data)

