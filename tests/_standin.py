"""A strict stand-in GPU for the dispatch tests: NumPy memory posing as a device.

:class:`StandinBackend` is a real :class:`minpy.dispatch.Backend` whose arrays
(:class:`StandinArray`) live on "device i" and behave like CuPy's where it
matters for dispatch:

- no implicit conversion to the host: ``__array__``, ``__float__``,
  ``__int__``, ``__bool__``, ``__iter__``, ``tolist`` ... raise TypeError;
- its namespace (:class:`StandinNamespace`, the stand-in for ``cupy``)
  refuses raw ``numpy.ndarray`` and ``minpy.Array`` arguments, and arrays of
  a device other than the current one (ValueError, as CuPy);
- results are placed on the current device; scalars become 0-d arrays;
- functions named in ``missing`` do not exist (``lookup`` returns None);
- it refuses what the real CuPy refuses, with CuPy's exception type, and answers as
  CuPy where that differs (``cupy_major`` 14 or 13: missing functions, keywords and ufunc
  methods, dtypes it cannot hold, r_/c_ slices, plain tuples, CuPy 13's value-based
  promotion of scalars): see :mod:`_standin_api`, which decides apart from minpy's own
  :mod:`minpy.dispatch.cupy_api` table answers (what ``refuses``/``holds`` delegate to);
- every host <-> device copy goes through ``from_host``/``to_host``, which
  count it, so a test can assert exactly when minpy copies.

``standin_gpu`` is a pytest fixture installing it for one test. The array and the device
bookkeeping are in :mod:`_standin_array`, CuPy's own answers in :mod:`_standin_cupy`.
"""
import contextlib
import types

import numpy
import pytest

import minpy
from minpy.core import execute as primitive
from minpy.dispatch import Backend, cupy_api
from _standin_api import UNKNOWN, CupyRules
from _standin_array import (HostConversionError, StandinArray, _NS_FOR_DUNDERS,  # noqa: F401
                            _current_device, _inputs, _tls, _unwrap, _wrap)
from _standin_cupy import (_FIRST_WINS, _REFUSALS, _cuda_shift, _cupy_int_power,  # noqa: F401
                           _linalg_raises, _silent_linalg, cupy_kernel, errstate)

__all__ = ["StandinArray", "StandinNamespace", "StandinBackend", "installed", "standin_gpu",
           "DEFAULT_MISSING", "HostConversionError"]

# what the stand-in pretends not to implement, by default
DEFAULT_MISSING = frozenset({"linalg.lstsq", "unique_all", "unique_counts", "median"})

_SUBMODULES = {"linalg": numpy.linalg, "fft": numpy.fft, "random": numpy.random}


class _Fn:
    """A stand-in device function: CuPy's argument checks, unwrap, check devices, call
    NumPy, rewrap (a name the CuPy table does not list is served as NumPy's)."""

    def __init__(self, qualname, np_obj, backend):
        self._qualname = qualname
        self._np = np_obj
        self._backend = backend
        self._strict = backend.rules.entry(qualname) not in (None, UNKNOWN)
        self.__name__ = qualname.rsplit(".", 1)[-1]

    def __call__(self, *args, **kwargs):
        if self._strict:
            self._backend.rules.check_call(self._qualname, args, kwargs)
        return self._run(args, kwargs)

    def _run(self, args, kwargs):
        rules = self._backend.rules
        dev = _current_device()
        refusal = _REFUSALS.get(self._qualname)
        if refusal is not None:
            refusal(args, kwargs)
        ins = _inputs(args, [])
        _inputs(tuple(kwargs.values()), ins)
        a = _unwrap(args, dev)
        k = {key: _unwrap(v, dev) for key, v in kwargs.items()}
        self._backend.calls[self._qualname] += 1
        if self._qualname == "piecewise" and len(a) > 2 and any(map(callable, a[2])):
            raise NotImplementedError("Callable functions are not supported currently")
        if self._qualname == "take" and len(a) > 1:      # CuPy's take wraps, never raises
            axis = a[2] if len(a) > 2 else k.get("axis")
            n = a[0].size if axis is None else a[0].shape[axis]
            idx = numpy.asarray(a[1])
            if n and idx.dtype.kind in "iu":
                a = (a[0], idx % n) + tuple(a[2:])
        if self._qualname.startswith("linalg.") and not _linalg_raises():
            r = _silent_linalg(self._np, a, k)
        else:
            with numpy.errstate(all="ignore"):   # CuPy does not read NumPy's errstate
                r = _FIRST_WINS.get(self._qualname, self._np)(*a, **k)
        if self._strict:
            r = rules.result(self._qualname, r, a, k)
        return _wrap(_held(r, rules, self._qualname), dev, ins)

    def __getattr__(self, name):          # attributes of the NumPy function
        attr = getattr(self._np, name)
        if callable(attr) and not isinstance(attr, type):
            qual = f"{self._qualname}.{name}"
            if qual in self._backend.missing or self._backend.rules.entry(qual) is None:
                raise AttributeError(f"standin: {qual} is missing")
            return _Fn(qual, attr, self._backend)
        return attr

    def __repr__(self):
        return f"<standin function {self._qualname}>"


class _Ufunc(_Fn):
    """A stand-in CuPy ufunc: CuPy's keywords, argument count, loops and methods."""

    def __init__(self, qualname, np_obj, backend):
        super().__init__(qualname, np_obj, backend)
        e = backend.rules.entry(qualname)
        self.nin, self.nout, self.nargs = e["nin"], e["nout"], e["nin"] + e["nout"]
        self.types = e["types"].split()
        self.__name__ = f"cupy_{qualname}"

    def __call__(self, *args, **kwargs):
        rules = self._backend.rules
        rules.check_ufunc_call(self._qualname, args, kwargs)
        dev = _current_device()
        ins = _inputs(args, [])
        _inputs(tuple(kwargs.values()), ins)
        a = list(_unwrap(args, dev))
        k = {("where" if key == "_where" else key): _unwrap(v, dev) for key, v in kwargs.items()}
        self._backend.calls[self._qualname] += 1
        loop = None
        if k.get("dtype") is None and k.get("out") is None and len(a) == self.nin:
            loop = rules.ufunc_loop(self._qualname, a)
        if self._qualname == "power" and len(a) == 2 and "out" not in k:
            a = _cupy_int_power(a)
        if self._qualname in ("right_shift", "left_shift") and len(a) == 2:
            a = _cuda_shift(a)
        if k.get("dtype") is not None or "casting" in k:
            # CuPy casts the inputs to dtype= whatever casting= says
            k.pop("casting", None)
            if k.get("dtype") is not None:
                a = [x.astype(k["dtype"]) if isinstance(x, numpy.ndarray) else x for x in a]
        if loop is None:
            r = cupy_kernel(self._qualname, self._np, a, k)
        else:                         # CuPy's loop: inputs cast to it, outputs its dtypes
            in_t, out_t = loop
            r = cupy_kernel(self._qualname, self._np,
                            [numpy.asarray(x, dtype=t) for x, t in zip(a, in_t)], k)
            if self.nout == 1:
                r = r.astype(out_t[0], copy=False)
            else:
                r = tuple(x.astype(t, copy=False) for x, t in zip(r, out_t))
        return _wrap(r, dev, ins)

    def __getattr__(self, name):
        qual = f"{self._qualname}.{name}"
        rules = self._backend.rules
        e = rules.entry(qual)
        if qual in self._backend.missing or e is None:
            raise AttributeError(f"standin: {qual} is missing")
        if e is UNKNOWN:
            return super().__getattr__(name)
        return _UfuncMethod(qual, getattr(self._np, name), self._backend)

    def __repr__(self):
        return f"<standin ufunc {self._qualname}>"


class _UfuncMethod(_Fn):
    """reduce/accumulate/reduceat/at/outer of a stand-in ufunc: NotImplementedError
    where CuPy has no implementation, CuPy's signature otherwise."""

    def __call__(self, *args, **kwargs):
        self._backend.rules.ufunc_method(self._qualname)
        self._backend.rules.check_call(self._qualname, args, kwargs)
        return self._run(args, {("where" if k == "_where" else k): v for k, v in kwargs.items()})


class _Indexer:
    """r_/c_/mgrid/ogrid: ``x[key]`` with CuPy's refusals."""

    def __init__(self, qualname, np_obj, backend):
        self._qualname, self._np, self._backend = qualname, np_obj, backend

    def __getitem__(self, key):
        self._backend.rules.check_key(self._qualname, key)
        dev = _current_device()
        self._backend.calls[self._qualname] += 1
        r = self._np[_unwrap(key, dev)]
        return _wrap(r, dev, _inputs(key, []))

    def __len__(self):
        return 0


def _held(r, rules, qualname):
    """NumPy's result ``r`` as CuPy holds it: big-endian data byte-swapped (as
    ``cupy.asarray``), ValueError for a dtype CuPy cannot hold (CuPy refuses the call)."""
    if type(r) is numpy.ndarray:
        if not r.dtype.isnative:
            r = r.astype(r.dtype.newbyteorder("="))
        rules.check_dtype(r.dtype, f"result of cupy.{qualname}")
    elif type(r) in (list, tuple):
        return type(r)(_held(e, rules, qualname) for e in r)
    elif isinstance(r, tuple) and hasattr(r, "_fields"):
        return type(r)._make(_held(e, rules, qualname) for e in r)
    return r


class _DeviceGenerator:
    """``cupy.random.default_rng()`` / ``RandomState``: a generator whose draws are
    arrays on the current device (NumPy's generator underneath)."""

    def __init__(self, gen):
        self._gen = gen

    def __getattr__(self, name):
        attr = getattr(self._gen, name)
        if not callable(attr):
            return attr

        def draw(*args, **kwargs):
            dev = _current_device()
            ins = _inputs(args, [])
            r = attr(*_unwrap(args, dev), **{k: _unwrap(v, dev) for k, v in kwargs.items()})
            return _wrap(r, dev, ins)
        return draw


class StandinNamespace:
    """Module-like stand-in for ``cupy``: NumPy's functions over StandinArrays."""

    def __init__(self, backend, np_module=numpy, prefix=""):
        self._backend = backend
        self._np_module = np_module
        self._prefix = prefix
        self.__name__ = "standin" + ("." + prefix.rstrip(".") if prefix else "")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        qual = self._prefix + name
        if qual in self._backend.missing:
            raise AttributeError(f"standin: {qual} is missing")
        if qual in _SUBMODULES:
            sub = StandinNamespace(self._backend, _SUBMODULES[qual], qual + ".")
            self.__dict__[name] = sub
            return sub
        if qual == "ndarray":
            return StandinArray
        if qual == "from_dlpack":
            return self._from_dlpack
        if qual in ("random.default_rng", "random.RandomState"):
            make = getattr(self._np_module, name)
            return lambda *a, **k: _DeviceGenerator(make(*a, **k))
        entry = self._backend.rules.entry(qual)
        if entry is None:
            raise AttributeError(f"standin: module 'cupy' has no attribute {qual!r} "
                                 f"(CuPy {self._backend.cupy_major})")
        obj = getattr(self._np_module, name)
        if entry is not UNKNOWN and entry["kind"] == "indexer":
            return _Indexer(qual, obj, self._backend)
        if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
            return obj
        if entry is not UNKNOWN and entry["kind"] == "ufunc":
            return _Ufunc(qual, obj, self._backend)
        return _Fn(qual, obj, self._backend)

    def _from_dlpack(self, x):
        dev = x.__dlpack_device__()
        if tuple(dev)[0] != 2:
            raise BufferError("standin.from_dlpack: producer is not on a device")
        capsule = x.__dlpack__(dl_device=tuple(dev), max_version=(1, 0))

        class _Host:            # the capsule holds numpy memory: let NumPy import it
            def __dlpack__(self, **_):
                return capsule

            def __dlpack_device__(self):
                return (1, 0)
        return _wrap(numpy.from_dlpack(_Host()), dev[1])

    def asnumpy(self, a):
        return self._backend.to_host(a)


class StandinBackend(Backend):
    """The stand-in GPU backend: ``device_count()`` devices of NumPy memory.

    Counters: ``h2d``/``d2h`` (copies through from_host/to_host), ``h2d_bytes``/
    ``d2h_bytes``, ``calls`` {qualname: n} (namespace functions called) and
    ``devices_entered`` (the set of ids passed to ``device``). ``missing`` is the set of
    qualnames it pretends not to implement, on top of what CuPy ``cupy_major`` (14 or
    13) lacks. ``rules`` (:class:`_standin_api.CupyRules`) is how its namespace refuses
    as that CuPy; ``api`` is minpy's table for it, which ``refuses``/``holds``/
    ``drop_defaults``/``refuses_key`` answer from, as :class:`CupyBackend` does.
    """

    name = "standin"
    device_type = "gpu"
    array_type = StandinArray
    own_modules = ("_standin", "_standin_array", "_standin_cupy", "_standin_api",
                   "_standin_methods")    # what raised_inside counts as the backend's
    linalg_errstate = staticmethod(lambda: errstate(linalg="raise"))

    def __init__(self, n_devices=2, missing=DEFAULT_MISSING, cupy_major=14):
        self.n_devices = n_devices
        self.missing = set(missing)
        self.cupy_major = cupy_major
        self.rules = CupyRules(cupy_major)
        self.api = cupy_api.load(str(cupy_major))
        self.promotion = self.api.promotion
        self.xp = StandinNamespace(self)
        _NS_FOR_DUNDERS[0] = self.xp
        self.reset_counters()

    def reset_counters(self):
        """Zero the copy and call counters."""
        import collections
        self.h2d = self.d2h = self.h2d_bytes = self.d2h_bytes = 0
        self.calls = collections.Counter()
        self.devices_entered = set()
        self.syncs = []          # device ids passed to synchronize (None: all)

    def owns(self, data):
        return type(data) is StandinArray

    def device_id(self, data):
        return data.device_id

    def device_count(self):
        return self.n_devices

    @contextlib.contextmanager
    def device(self, device_id):
        """Make ``device_id`` current (per thread), as ``cupy.cuda.Device``."""
        if not 0 <= device_id < self.n_devices:
            raise ValueError(f"standin: no device {device_id}")
        self.devices_entered.add(device_id)
        prev = _current_device()
        _tls.device = device_id
        try:
            yield
        finally:
            _tls.device = prev

    def synchronize(self, device_id=None):
        """Record a stream synchronisation (the stand-in runs everything eagerly)."""
        self.syncs.append(device_id)

    def from_host(self, host, device_id):
        """A counted host -> device copy of numpy array ``host`` (as ``cupy.asarray``:
        a dtype CuPy cannot hold raises ValueError; big-endian data is byte-swapped)."""
        if type(host) is not numpy.ndarray:
            raise TypeError(f"standin.from_host: expected numpy.ndarray, got {type(host)}")
        if not 0 <= device_id < self.n_devices:
            raise ValueError(f"standin: no device {device_id}")
        self.rules.check_dtype(host.dtype.newbyteorder("="), "from_host")
        self.h2d += 1
        self.h2d_bytes += host.nbytes
        return StandinArray(host.astype(host.dtype.newbyteorder("="), order="C"), device_id)

    def to_host(self, data):
        """A counted device -> host copy (a fresh numpy array)."""
        if type(data) is not StandinArray:
            raise TypeError(f"standin.to_host: expected StandinArray, got {type(data)}")
        self.d2h += 1
        self.d2h_bytes += data.nbytes
        return data._a.copy()

    def lookup(self, qualname):
        """None for a ``missing`` name and, as CupyBackend, for what CuPy refuses on
        every call (``api.never``)."""
        if qualname in self.missing or qualname in self.api.never:
            return None
        return super().lookup(qualname)

    def refuses(self, qualname, nargs, kwargs, dtypes):
        """minpy's answer for CuPy ``cupy_major`` (its API table), or a ``missing`` name."""
        if qualname in self.missing:
            return f"the stand-in has no {qualname}"
        return self.api.refuses(qualname, nargs, kwargs, dtypes)

    def holds(self, dtype):
        return self.api.holds(dtype)

    def drop_defaults(self, qualname, kwargs):
        return self.api.drop_defaults(qualname, kwargs)

    def refuses_key(self, qualname, key):
        return self.api.refuses_key(qualname, key)


@contextlib.contextmanager
def installed(backend=None):
    """Install ``backend`` (default: a fresh StandinBackend) as minpy's GPU backend.

    Resets the dispatch statistics, the policy ('prefer_gpu'), the fallback
    warning switch and the once-per-function warning memory; restores the
    previous GPU backend afterwards.
    """
    backend = StandinBackend() if backend is None else backend
    prev = minpy.dispatch.set_gpu_backend(backend)
    minpy.set_policy("prefer_gpu")
    minpy.dispatch.set_fallback_warning(True)
    primitive._warned.clear()
    minpy.dispatch.reset_stats()
    try:
        yield backend
    finally:
        minpy.dispatch.set_gpu_backend(prev)
        minpy.set_policy("prefer_gpu")
        minpy.dispatch.set_fallback_warning(True)
        primitive._warned.clear()
        minpy.dispatch.reset_stats()


@pytest.fixture
def standin_gpu():
    """A fresh StandinBackend (2 devices, DEFAULT_MISSING) installed for one test."""
    with installed() as backend:
        yield backend
