"""The CuPy backend (imported only when CuPy is installed).

What CuPy refuses or answers differently from NumPy (keywords, ufunc methods, dtypes,
``unique_values``' order ...) comes from the API table of the installed CuPy's major
version (:mod:`minpy.dispatch.cupy_api`).
"""
import functools

import cupy

try:
    from cupyx import errstate as _errstate
except ImportError:          # (a partial CuPy, as some tests fake it)
    _errstate = None

from . import cupy_api
from .backend import Backend


def cuda_available():
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except cupy.cuda.runtime.CUDARuntimeError:
        return False


class CupyBackend(Backend):
    name = "cupy"
    device_type = "gpu"
    xp = cupy
    array_type = cupy.ndarray
    own_modules = ("cupy", "cupyx", "cupy_backends")
    # CuPy skips cuSOLVER's singular-matrix check unless asked (it syncs with the device)
    # and returns NaNs or garbage; its setting is per thread, so it is set per call
    linalg_errstate = None if _errstate is None else staticmethod(
        functools.partial(_errstate, linalg="raise"))

    def __init__(self):
        self.api = cupy_api.load(cupy.__version__)
        self.promotion = self.api.promotion

    def device_id(self, data):
        return data.device.id

    def device_count(self):
        return cupy.cuda.runtime.getDeviceCount()

    def device(self, device_id):
        return cupy.cuda.Device(device_id)

    def current_device(self):
        """This thread's current CUDA device (cheaper than entering ``Device(id)``)."""
        return cupy.cuda.runtime.getDevice()

    def synchronize(self, device_id=None):
        ids = range(self.device_count()) if device_id is None else (device_id,)
        for i in ids:
            cupy.cuda.Device(i).synchronize()

    def from_host(self, host, device_id):
        with cupy.cuda.Device(device_id):
            return cupy.asarray(host)

    def to_host(self, data):
        return cupy.asnumpy(data)

    def lookup(self, qualname):
        # what CuPy refuses on every call (a ufunc method it does not implement, a
        # function answering differently from NumPy) is not CuPy's to run
        if qualname in self.api.never:
            return None
        return super().lookup(qualname)

    def refuses(self, qualname, nargs, kwargs, dtypes):
        """The installed CuPy's answer (see :meth:`cupy_api.ApiTable.refuses`)."""
        return self.api.refuses(qualname, nargs, kwargs, dtypes)

    def holds(self, dtype):
        return self.api.holds(dtype)

    def drop_defaults(self, qualname, kwargs):
        """``kwargs`` less the NumPy-default keywords CuPy lacks (see
        :meth:`cupy_api.ApiTable.drop_defaults`)."""
        return self.api.drop_defaults(qualname, kwargs)

    def refuses_key(self, qualname, key):
        """Why CuPy's r_/c_ cannot take ``key`` (slices, string directives), or None."""
        return self.api.refuses_key(qualname, key)


