"""``minpy.random``: NumPy's random sampling, placed on the current context.

The legacy functions (``seed``, ``rand``, ``normal`` ...) draw from the
global state of the backend that serves the current context (NumPy's, or
CuPy's inside ``with minpy.gpu(0)``); ``seed`` seeds both. ``default_rng``
returns a :class:`Generator` whose draws are NumPy's, placed on the current
context. See also numpy.random.
"""
import numpy as _np

from .. import engine as _engine
from ..core.array import Array as _Array, new as _new, wrap, unwrap_cpu
from ..dispatch import state as _state
from ..dispatch.backend import gpu_backend as _gpu_backend
from ..dispatch.policy import get_policy as _get_policy
from ..dispatch.context import current_context as _current_context
from ..dispatch.transfer import backend_for as _backend_for
from . import _namespace

_process = _state.process


def _in_order(draw):
    """``draw`` waiting, in async mode, for the engine's pending draws from the global
    state (``minpy.engine.GLOBAL_STATE``: ``mx.nd``'s pushed Dropout) so that the
    numbers follow program order."""
    def ordered(*args, **kwargs):
        if _process.async_on:
            _engine.wait_for(_engine.GLOBAL_STATE, reraise=False)
        return draw(*args, **kwargs)
    for attr in ("__name__", "__qualname__", "__doc__", "_prim", "__wrapped_numpy__"):
        setattr(ordered, attr, getattr(draw, attr))
    return ordered


_HOST_STATE = ("get_state", "set_state", "get_bit_generator", "set_bit_generator")
_CLASSES = ("BitGenerator", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64", "SeedSequence")

for _name in dir(_np.random):
    _obj = getattr(_np.random, _name)
    if _name.startswith("_") or _name in ("test", "seed", "default_rng", "Generator",
                                          "RandomState") or not callable(_obj):
        continue
    if _name in _HOST_STATE or _name in _CLASSES:
        globals()[_name] = _obj
    elif _name == "shuffle":
        _shuffle_array = _namespace.make_function("random.shuffle", _obj, mutates=0,
                                                  name="shuffle")
    else:
        globals()[_name] = _in_order(_namespace.make_create("random." + _name, _obj,
                                                            name=_name))

bit_generator = _np.random.bit_generator


def shuffle(x):
    """Shuffle ``x`` in place along its first axis: a minpy Array where it lives, a
    host sequence (list, numpy array) with NumPy's generator.

    See also numpy.random.shuffle.
    """
    if _is_array(x):
        return _shuffle_array(x)
    return _np.random.shuffle(x)     # converting a list would shuffle a copy


shuffle._prim = _shuffle_array._prim
shuffle.__wrapped_numpy__ = _np.random.shuffle


def _is_array(x):
    return isinstance(x, _Array)


def seed(seed=None):
    """Seed the legacy global generators (NumPy's, and the GPU backend's if any).

    See also numpy.random.seed.
    """
    if _process.async_on:               # pushed draws made before the seed go first
        _engine.wait_for(_engine.GLOBAL_STATE, reraise=False)
    _np.random.seed(seed)
    g = _gpu_backend()
    if g is not None and hasattr(g.xp.random, "seed"):
        g.xp.random.seed(seed)


def _place(res):
    """Wrap a host result, moving it to the current context when that is a GPU."""
    ctx = _current_context()
    if ctx.device_type == "cpu" or _get_policy() == "only_cpu":
        return wrap(res)
    backend = _backend_for(ctx)
    if isinstance(res, _np.ndarray):
        return _new(backend.from_host(res, ctx.device_id))
    return res


class _HostSampler:
    """Forwards sampling methods to a NumPy object, unwrapping and placing results."""

    def __init__(self, impl):
        self._impl = impl

    def __getattr__(self, name):
        attr = getattr(self._impl, name)
        if not callable(attr):
            return attr

        def method(*args, **kwargs):
            res = attr(*[unwrap_cpu(_host(a)) for a in args],
                       **{k: unwrap_cpu(_host(v)) for k, v in kwargs.items()})
            return _place(res)
        method.__name__ = name
        method.__doc__ = f"See also numpy.random.{type(self._impl).__name__}.{name}."
        return method

    def __repr__(self):
        return f"minpy {self._impl!r}"


def _host(a):
    return a.asnumpy() if isinstance(a, _Array) else a


class Generator(_HostSampler):
    """A random Generator (``default_rng``) whose draws become minpy Arrays.

    ``shuffle`` writes its Array argument in place. See also numpy.random.Generator.
    """

    def __init__(self, bit_generator):
        super().__init__(_np.random.Generator(bit_generator))

    @property
    def bit_generator(self):
        return self._impl.bit_generator

    def shuffle(self, x, axis=0):
        if not _is_array(x):
            return self._impl.shuffle(x, axis=axis)
        host = x.asnumpy().copy()
        self._impl.shuffle(host, axis=axis)
        x[...] = host

    def spawn(self, n_children):
        return [Generator(g.bit_generator) for g in self._impl.spawn(n_children)]


class RandomState(_HostSampler):
    """Legacy seeded generator whose draws become minpy Arrays. See also numpy.random.RandomState."""

    def __init__(self, seed=None):
        super().__init__(_np.random.RandomState(seed))

    def seed(self, seed=None):
        self._impl.seed(seed)

    def get_state(self, legacy=True):
        """The host state (NumPy's own, as ``minpy.random.get_state``)."""
        return self._impl.get_state(legacy=legacy)

    def set_state(self, state):
        """Restore a state from :meth:`get_state`."""
        self._impl.set_state(state)

    def shuffle(self, x):
        if not _is_array(x):
            return self._impl.shuffle(x)
        host = x.asnumpy().copy()
        self._impl.shuffle(host)
        x[...] = host


def default_rng(seed=None):
    """A :class:`Generator` seeded like ``numpy.random.default_rng(seed)``.

    Same seed, same numbers as NumPy. See also numpy.random.default_rng.
    """
    if isinstance(seed, Generator):
        return seed
    return Generator(_np.random.default_rng(seed).bit_generator)


__all__ = [n for n in globals() if not n.startswith("_")]
_namespace.sign_like_numpy(globals(), _np.random)   # inspect.signature: NumPy's
