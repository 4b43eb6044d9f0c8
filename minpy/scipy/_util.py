"""Machinery shared by :mod:`minpy.scipy`: primitives whose forward calls SciPy on
the CPU and CuPy's ``cupyx.scipy`` on the GPU, clear errors for bad input, and
small helpers of the distributions.

A :class:`ScipyPrimitive` runs ``forward(xp, *args)`` like any primitive; on a
GPU backend it is offered only when that backend's SciPy counterpart module
(:data:`GPU_NAMESPACES`, keyed by the name of the backend namespace ``xp``)
has every function the forward needs, so a function CuPy lacks runs on the
CPU through minpy's counted fallback (``RuntimeWarning`` once per function).
"""
import functools
import importlib
import numbers

import numpy
import scipy.linalg
import scipy.signal
import scipy.special

from ..core.array import Array, is_traced
from ..core.primitive import Primitive, register
from ..core.wrappers import make_function
from ..dispatch.backend import NUMPY
from ..numpy.rule_helpers import jit_tracing
import minpy.numpy as mnp

__all__ = ["CPU_NAMESPACES", "GPU_NAMESPACES", "backend_namespace", "ScipyPrimitive",
           "scipy_function", "named", "bad_input", "shapes_of", "as_operand", "nan_unless",
           "jit_tracing", "is_number", "host_value", "log_prob", "make_rvs"]

# SciPy's submodules on the CPU
CPU_NAMESPACES = {"special": scipy.special, "linalg": scipy.linalg, "signal": scipy.signal}

# name of a GPU backend's array namespace -> {submodule: its SciPy counterpart}; a
# string is a module imported on first use (None once the import failed). Tests add
# entries for their stand-in device.
GPU_NAMESPACES = {"cupy": {"special": "cupyx.scipy.special", "linalg": "cupyx.scipy.linalg",
                           "signal": "cupyx.scipy.signal"}}


def backend_namespace(xp, sub):
    """The SciPy submodule ``sub`` ('special', 'linalg') for backend namespace ``xp``
    (``numpy``: SciPy's; ``cupy``: ``cupyx.scipy``'s), or None where there is none."""
    if xp is numpy:
        return CPU_NAMESPACES[sub]
    table = GPU_NAMESPACES.get(getattr(xp, "__name__", None))
    if table is None:
        return None
    ns = table.get(sub)
    if isinstance(ns, str):
        try:
            ns = importlib.import_module(ns)
        except ImportError:
            ns = None
        table[sub] = ns
    return ns


class ScipyPrimitive(Primitive):
    """A primitive of :mod:`minpy.scipy`: ``forward(xp, ...)`` runs on a GPU backend
    only when ``backend_namespace(xp, sub)`` has each function named in ``needs``."""

    __slots__ = ("sub", "needs")

    def __init__(self, qualname, forward, sub, needs):
        super().__init__(qualname, None, forward=forward)
        self.sub = sub
        self.needs = tuple(needs)

    def backend_impl(self, backend):
        if backend is not NUMPY:
            ns = backend_namespace(backend.xp, self.sub)
            if ns is None or any(getattr(ns, n, None) is None for n in self.needs):
                return None             # minpy runs it on the CPU (a counted fallback)
        return super().backend_impl(backend)


def shapes_of(args, kwargs=None):
    """A readable list of the shapes of the array-like arguments (no device copies)."""
    parts = []
    items = list(enumerate(args)) + list((kwargs or {}).items())
    for key, a in items:
        if a is None or isinstance(a, (str, bool)):
            continue
        shape = getattr(a, "shape", None)
        if shape is None:
            try:
                shape = numpy.shape(a)
            except Exception:        # noqa: BLE001  (not array-like: leave it out)
                continue
        label = f"{key}=" if isinstance(key, str) else ""
        parts.append(f"{label}{tuple(shape)}")
    return ", ".join(parts)


def bad_input(qualname, err, args, kwargs=None):
    """``err`` (a ValueError/TypeError) re-made with the function's name in front and the
    shapes of its arguments after (an error already naming this function is returned as
    is; one naming an inner minpy.scipy function keeps that name after this one)."""
    msg = str(err)
    if msg.startswith(f"minpy.scipy.{qualname}:"):
        return err
    text = f"minpy.scipy.{qualname}: {msg} (argument shapes: {shapes_of(args, kwargs)})"
    try:
        new = type(err)(text)
    except Exception:                # noqa: BLE001  (an exception type with another signature)
        new = (ValueError if isinstance(err, ValueError) else TypeError)(text)
    return new


def as_scipy_result(r):
    """``r`` with an untraced 0-d host Array as NumPy's scalar, as SciPy returns it."""
    if type(r) is Array and type(r._data) is numpy.ndarray and r._data.ndim == 0 and \
            not is_traced(r) and not jit_tracing():
        return r._data[()]
    return r


def named(qualname):
    """Decorator: ValueError/TypeError from the function are re-raised naming
    ``minpy.scipy.<qualname>`` and the argument shapes; a 0-d host result that nothing
    traces is NumPy's scalar (:func:`as_scipy_result`)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return as_scipy_result(fn(*args, **kwargs))
            except (ValueError, TypeError) as e:
                new = bad_input(qualname, e, args, kwargs)
                if new is e:
                    raise
                raise new from e
        return wrapper
    return deco


def scipy_function(sub, name, doc, forward=None, needs=None, public_name=None):
    """The public function ``minpy.scipy.<sub>.<name>``: a :class:`ScipyPrimitive` whose
    forward (default: ``<sub>.<name>`` of the backend's SciPy) is wrapped by
    :func:`minpy.core.wrappers.make_function`, with errors naming the function.
    Returns the function; its primitive is ``fn._prim`` (for ``defvjp``)."""
    qual = f"{sub}.{public_name or name}"
    if forward is None:
        cpu_fn = getattr(CPU_NAMESPACES[sub], name)

        def forward(xp, *args, **kwargs):
            f = cpu_fn if xp is numpy else getattr(backend_namespace(xp, sub), name)
            return f(*args, **kwargs)
    prim = register(ScipyPrimitive(f"scipy.{qual}", forward, sub, needs or (name,)))
    inner = make_function(f"scipy.{qual}", None, prim=prim, name=public_name or name,
                          doc=doc, positional_out=(None, ()))
    fn = named(qual)(inner)
    fn._prim = prim
    fn.__doc__ = doc
    fn.__module__ = f"minpy.scipy.{sub}"
    fn.__qualname__ = fn.__name__ = public_name or name
    return fn


# ------------------------------------------------------------------ distributions
def is_number(x):
    """True for a Python number (not bool)."""
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def as_operand(x):
    """``x`` ready for arithmetic: Arrays and Python numbers as they are, anything
    else (lists, ndarrays, NumPy scalars) as a minpy Array."""
    if type(x) is Array or (is_number(x) and not isinstance(x, numpy.generic)):
        return x
    return mnp.asarray(x)


def nan_unless(out, cond):
    """``out`` where ``cond`` holds, NaN elsewhere (SciPy's answer for invalid
    parameters); ``cond`` a Python bool or a boolean Array."""
    if cond is True or (isinstance(cond, (bool, numpy.bool_)) and cond):
        return out
    return mnp.where(cond, out, numpy.nan)


def log_prob(p):
    """``log(p)`` of a probability, ``-inf`` at 0 without NumPy's divide warning (as
    SciPy's ``logcdf``/``logsf``)."""
    with numpy.errstate(divide="ignore"):
        return mnp.log(p)


def host_value(x):
    """Host NumPy value of an Array or array-like (for input checks)."""
    if type(x) is Array:
        return x.asnumpy()
    return numpy.asarray(x)


def make_rvs(dist):
    """``minpy.scipy.stats.<dist>.rvs``: SciPy's sampler on host data (as autograd
    re-exports it), returning a minpy Array; not differentiable (the draws are data)."""
    def rvs(*args, **kwargs):
        # draws are data: a gradient through them (or a jit replay of one trace's draws)
        # would be silently wrong, so traced parameters and tracing are refused
        if jit_tracing() or any(type(v) is Array and is_traced(v)
                                for v in (*args, *kwargs.values())):
            raise TypeError(f"minpy.scipy.stats.{dist}.rvs: random draws are not "
                            "differentiable and cannot be traced by minpy.jit; pass "
                            "minpy.stop_gradient(param) or draw outside the traced function")
        import scipy.stats         # SciPy's stats is a slow import: only on first draw
        to_host = lambda v: host_value(v) if type(v) is Array else v   # noqa: E731
        out = getattr(scipy.stats, dist).rvs(*[to_host(a) for a in args],
                                             **{k: to_host(v) for k, v in kwargs.items()})
        return mnp.asarray(out)
    fn = named(f"stats.{dist}.rvs")(rvs)
    fn.__name__ = fn.__qualname__ = "rvs"
    fn.__module__ = f"minpy.scipy.stats.{dist}"
    fn.__doc__ = f"""Random draws from the distribution: SciPy's sampler run on the host.

    Args:
        *args, **kwargs: as ``scipy.stats.{dist}.rvs`` (the distribution's parameters,
            ``size``, ``random_state``); minpy Arrays are read to the host.
    Returns:
        A minpy Array of SciPy's draws (SciPy's shape and dtype); not differentiable.

    See also scipy.stats.{dist}.rvs.
    """
    return fn
