"""Array backends: NumPy on the CPU, and one optional GPU backend.

A backend exposes its array namespace ``xp`` (``numpy`` or ``cupy``) so that
one forward body serves both, plus the few device operations dispatch needs:
ownership test, host <-> device copies and a table of what it implements.
The GPU backend is CuPy when it is installed and sees a device (see
:func:`minpy.dispatch.detect_cupy`); tests install a stand-in with
:func:`set_gpu_backend`.
"""
import contextlib

import numpy

from . import state

__all__ = ["Backend", "NeedsHost", "NumpyBackend", "NUMPY", "gpu_backend", "set_gpu_backend", "backend_of",
           "backend_for"]


class NeedsHost(NotImplementedError):
    """Raised by a body minpy runs on a device backend for a call only the host answers
    as NumPy does: the call is rerun with NumPy (a counted fallback)."""


class Backend:
    """Interface of an array backend (see :class:`NumpyBackend`)."""

    name = "abstract"
    device_type = "cpu"
    xp = None            # the array namespace module
    array_type = None    # the backend's ndarray class
    # type promotion of scalar operands: "nep50" (NumPy 2) or "legacy" (by value, as
    # NumPy 1 and CuPy 13)
    promotion = "nep50"
    # top-level packages of the backend's own code (see raised_inside)
    own_modules = ()

    def owns(self, data):
        """True if ``data`` is an array of this backend."""
        return isinstance(data, self.array_type)

    def device_id(self, data):
        return 0

    def device_count(self):
        return 1

    def device(self, device_id):
        """Context manager making ``device_id`` current for the backend."""
        return contextlib.nullcontext()

    def current_device(self):
        """The backend's current device id for this thread, or None when it cannot say
        cheaply (a call then enters :meth:`device` anyway)."""
        return None

    def from_host(self, host, device_id):
        """Copy the numpy array ``host`` to device ``device_id``."""
        raise NotImplementedError

    def to_host(self, data):
        """Copy ``data`` to a numpy array."""
        raise NotImplementedError

    def raised_inside(self, err):
        """True if exception ``err`` was raised by the backend's own code (the last
        frame of its traceback is in a module of ``own_modules``), not by minpy's."""
        tb = err.__traceback__
        if tb is None:
            return False
        while tb.tb_next is not None:
            tb = tb.tb_next
        g = tb.tb_frame.f_globals
        name = g.get("__name__") or ""
        return name.partition(".")[0] in self.own_modules

    def asarray(self, obj, device_id, dtype=None):
        with self.device(device_id):
            return self.xp.asarray(obj, dtype=dtype)

    # a context manager factory under which the backend's linalg functions raise
    # ``numpy.linalg.LinAlgError`` as NumPy's do (CuPy: ``cupyx.errstate(linalg='raise')``);
    # None where they always do
    linalg_errstate = None

    def lookup(self, qualname):
        """The backend's function ``qualname`` ('sum', 'linalg.inv', ...) or None (a
        ``linalg.`` one run under :attr:`linalg_errstate`, see :meth:`checked`)."""
        if self.linalg_errstate is not None and qualname.startswith("linalg."):
            cache = self.__dict__.setdefault("_linalg_checked", {})
            fn = cache.get(qualname)
            if fn is None:
                fn = self._find(qualname)
                if fn is not None and callable(fn):
                    fn = cache[qualname] = self.checked(qualname, fn)
            return fn
        return self._find(qualname)

    def _find(self, qualname):
        obj = self.xp
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj

    def checked(self, qualname, fn):
        """``fn`` (the backend's ``qualname``, or a body composed of its functions
        standing for it) run under :attr:`linalg_errstate` if ``qualname`` is a
        ``linalg.`` function: CuPy's solvers then raise ``numpy.linalg.LinAlgError`` (a
        ValueError: minpy reruns the call on the host for NumPy's own error) on a
        singular or not positive definite matrix instead of returning NaNs or garbage."""
        errstate = self.linalg_errstate
        if errstate is None or not qualname.startswith("linalg."):
            return fn

        def call(*args, **kwargs):
            with errstate():
                return fn(*args, **kwargs)
        call.__name__ = getattr(fn, "__name__", qualname)
        call.__wrapped__ = fn
        return call

    def has(self, qualname):
        return self.lookup(qualname) is not None

    def refuses(self, qualname, nargs, kwargs, dtypes):
        """Why this backend cannot run ``qualname`` called with ``nargs`` positional
        arguments and the keywords ``kwargs`` (a dict) on array operands of ``dtypes``
        (a reason string), or None when it can.

        NumPy refuses nothing; the CuPy backend answers from its API table
        (:mod:`minpy.dispatch.cupy_api`): a missing function or ufunc method, a
        keyword CuPy does not take, a dtype it cannot hold.
        """
        return None

    def drop_defaults(self, qualname, kwargs):
        """``kwargs`` without the keywords this backend lacks whose value is NumPy's
        default (``where=True``, ``copy=None`` ...), so the call runs here as it is."""
        return kwargs

    def refuses_key(self, qualname, key):
        """Why this backend's index trick ``qualname`` (r_, c_) cannot take ``x[key]``,
        or None."""
        return None

    def holds(self, dtype):
        """True if this backend can hold arrays of ``dtype``."""
        return True

    def synchronize(self, device_id=None):
        """Block until the work queued on ``device_id`` (None: every device) is done."""


class NumpyBackend(Backend):
    name = "numpy"
    device_type = "cpu"
    xp = numpy
    array_type = numpy.ndarray

    def current_device(self):
        return 0

    def from_host(self, host, device_id):
        return host

    def to_host(self, data):
        return data


NUMPY = NumpyBackend()


def gpu_backend():
    """The installed GPU backend, or None."""
    return state.process.gpu


def set_gpu_backend(backend):
    """Install ``backend`` as the GPU backend (None removes it).

    Returns the previous one. Used at import for CuPy and by tests for a
    strict stand-in device.
    """
    return state.set_gpu(backend)


def backend_of(data):
    """The backend owning ``data`` (NumPy for anything not on the GPU)."""
    g = state.process.gpu
    if g is not None and g.owns(data):
        return g
    return NUMPY


def backend_for(ctx):
    """The backend serving Context ``ctx``; a clear error when no GPU backend serves it."""
    if ctx.device_type == "cpu":
        return NUMPY
    g = state.process.gpu
    if g is None:
        raise RuntimeError(f"{ctx} requested but no GPU is available "
                           '(pip install "cupy-cuda12x[ctk]"; minpy.dispatch.gpu_problem() says why)')
    if ctx.device_id >= g.device_count():
        raise RuntimeError(f"{ctx} requested but the GPU backend has "
                           f"{g.device_count()} device(s)")
    return g
