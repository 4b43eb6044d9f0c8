"""Devices: ``cpu(i)``, ``gpu(i)`` and the thread's default context."""
import threading

from . import backend

__all__ = ["Context", "cpu", "gpu", "current_context", "explicit_context", "num_gpus"]


class Context:
    """A device: ``Context('cpu', 0)`` or ``Context('gpu', 1)``.

    Used as a context manager it becomes the default device where creation
    functions (``zeros``, ``array``, ``random.*`` ...) place new arrays::

        with minpy.gpu(0):
            x = minpy.zeros((3, 3))     # lives on gpu(0)
    """

    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type, device_id=0):
        if device_type not in ("cpu", "gpu"):
            raise ValueError(f"Context: device_type must be 'cpu' or 'gpu', got {device_type!r}")
        if not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"Context: device_id must be a non-negative int, got {device_id!r}")
        self.device_type = device_type
        self.device_id = device_id

    def __eq__(self, other):
        return (isinstance(other, Context) and other.device_type == self.device_type
                and other.device_id == self.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    def __reduce__(self):
        return (Context, (self.device_type, self.device_id))

    def __enter__(self):
        if self.device_type == "gpu":
            # fail here, naming the context, rather than create arrays on the CPU silently
            backend.backend_for(self)
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False


_CPU0 = Context("cpu", 0)
_local = threading.local()


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def cpu(device_id=0):
    """The CPU context. See also ``mxnet.cpu``."""
    return _CPU0 if device_id == 0 else Context("cpu", device_id)


def gpu(device_id=0):
    """The context of GPU ``device_id``. See also ``mxnet.gpu``."""
    return Context("gpu", device_id)


def context_named(device):
    """The Context a device name means ('cpu', 'gpu', 'gpu:N'; a Context is itself),
    or None when ``device`` names none."""
    if isinstance(device, Context):
        return device
    if isinstance(device, str):
        kind, _, idx = device.partition(":")
        if kind in ("cpu", "gpu") and (not idx or idx.isdigit()):
            return Context(kind, int(idx or 0))
    return None


def current_context():
    """The innermost ``with ctx:`` context of this thread, else ``cpu(0)``."""
    s = getattr(_local, "stack", None)
    return s[-1] if s else _CPU0


def explicit_context():
    """The innermost ``with ctx:`` context of this thread, or None outside any."""
    s = getattr(_local, "stack", None)
    return s[-1] if s else None


def num_gpus():
    """Number of GPUs the installed GPU backend sees (0 without one)."""
    b = backend.gpu_backend()
    return 0 if b is None else b.device_count()
