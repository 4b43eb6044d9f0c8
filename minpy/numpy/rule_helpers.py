"""Helpers shared by the gradient rule tables (``vjp_*``): complex numbers,
gradient shapes, host values, argument-gradient makers and rules by
differentiating a reference implementation.

Written once here against minpy's namespace, so every rule runs on NumPy and
on CuPy alike.
"""
import inspect
import numbers

import numpy

import minpy.numpy as mnp
from ..core import autograd
from ..core.array import Array
from ..core.autograd import defvjp
from ..core.ops import broadcast_grad, unbroadcast
from ..dispatch import state
from .fronts import host

__all__ = ["is_complex", "conj_if_complex", "real_part", "hermitian", "unbroadcast",
           "broadcast_grad", "unbroadcast_to_operand", "host", "shape_of", "cast_like",
           "reshape_like", "per_item", "nograd", "real_vdot", "vjp_via_reference",
           "defvjp_by_name", "no_gradient", "jit_tracing"]


def jit_tracing():
    """True while ``minpy.jit`` traces this thread: a rule must not branch on values
    then (reading one raises), so it takes its general, branch-free path."""
    return state.per_thread.flags.tracer is not None


# ---------------------------------------------------------------- complex numbers
def is_complex(x):
    """True for complex data (Array, ndarray, scalar, or a list of them)."""
    t = type(x)
    if t is Array:
        return x._data.dtype.kind == "c"
    if t is float or t is int:
        return False
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return numpy.dtype(dt).kind == "c"
    if isinstance(x, (list, tuple)):
        return numpy.iscomplexobj(numpy.asarray(x))
    return isinstance(x, complex)


def conj_if_complex(x):
    """conj(x) for complex x; x itself otherwise (no call for real data)."""
    return mnp.conj(x) if is_complex(x) else x


def real_part(g):
    """The cotangent of a real-valued output: only its real part matters."""
    return mnp.real(g) if is_complex(g) else g


def hermitian(x):
    """The conjugate transpose of the last two axes."""
    if type(x) is Array and x.ndim == 2:
        return conj_if_complex(x.T)
    return conj_if_complex(mnp.swapaxes(x, -1, -2))


# ---------------------------------------------------------------- shapes and values
def unbroadcast_to_operand(gx, x):
    """``gx`` summed down to operand ``x``'s shape (imaginary part dropped for real x);
    ``x`` may be an Array, an array-like or a number."""
    if type(x) is not Array and not hasattr(x, "shape") and not isinstance(x, numbers.Number):
        x = numpy.asarray(x)
    return unbroadcast(gx, x)


def shape_of(x):
    """Shape of an argument: Array, array-like, or a sequence of equal-shaped items."""
    if type(x) is Array:
        return x._data.shape
    if isinstance(x, (list, tuple)):       # a sequence of equal-shaped items
        return (len(x),) + (shape_of(x[0]) if x else ())
    return numpy.shape(x)


def cast_like(g, x):
    """``g`` in the dtype of ``x`` (real part for a real ``x``); None for integer ``x``."""
    dt = x.dtype if type(x) is Array else numpy.result_type(x)
    if not numpy.issubdtype(dt, numpy.inexact):
        return None
    if g.dtype == dt:
        return g
    if numpy.issubdtype(g.dtype, numpy.complexfloating) and not numpy.issubdtype(
            dt, numpy.complexfloating):
        g = mnp.real(g)
    return g.astype(dt)


def reshape_like(g, x):
    """``g`` reshaped to the shape of ``x``."""
    return mnp.reshape(g, shape_of(x))


def per_item(g, seq):
    """Gradients for the items of a list/tuple argument from the gradient of its array form."""
    g = mnp.reshape(g, shape_of(seq))
    return [cast_like(g[j], e) if type(e) is Array else None for j, e in enumerate(seq)]


# ---------------------------------------------------------------- makers
def no_gradient(g):
    """A VJP giving no gradient (zero), whatever ``g``."""
    return None


class _NoGrads:
    """The gradients of a sequence argument none of whose items gets one."""

    def __getitem__(self, item):
        return None


_NO_GRADS = _NoGrads()


def _no_grads(g):
    return _NO_GRADS


def nograd(pos):
    """The VJP maker of positional argument ``pos`` when it gets no gradient (indices,
    masks, conditions; also a list or tuple of traced integer arrays, as in ``x[where(c)]``)."""
    def maker(ans, *args, **kwargs):
        return _no_grads if pos < len(args) and type(args[pos]) in (list, tuple) else no_gradient
    return maker


def real_vdot(out, g):
    """``Re <out, g>`` summed, over every floating output of a tuple ``out``."""
    if isinstance(out, tuple):
        total = 0.0
        for o, gi in zip(out, g):
            if type(o) is Array and o.dtype.kind in "fc" and type(gi) is Array \
                    and gi.dtype.kind in "fc":
                total = total + real_vdot(o, gi)
        return total
    if is_complex(out) or is_complex(g):
        return mnp.sum(mnp.real(out * mnp.conj(g)))
    return mnp.sum(out * g)


def vjp_via_reference(ref, key, pass_ans=False):
    """VJP maker of ``ref`` (a minpy re-implementation of the function) w.r.t.
    positional ``key`` (int) or keyword ``key`` (str), by differentiating it.
    ``pass_ans``: ``ref`` takes NumPy's result first (for output shapes)."""
    def maker(ans, *args, **kw):
        def vjp(g):
            def inner(v):
                a, k = list(args), dict(kw)
                if isinstance(key, int):
                    a[key] = v
                else:
                    k[key] = v
                return real_vdot(ref(ans, *a, **k) if pass_ans else ref(*a, **k), g)
            return autograd.grad(inner)(args[key] if isinstance(key, int) else kw[key])
        return vjp
    return maker


def defvjp_by_name(fn, *makers):
    """``defvjp`` with each positional maker also registered under its parameter's name,
    so ``dot(a, b=y)`` differentiates like ``dot(a, y)``."""
    try:
        params = list(inspect.signature(fn.__wrapped_numpy__).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = {p.name: m for p, m in zip(params, makers)
             if m is not None and p.kind is p.POSITIONAL_OR_KEYWORD}
    defvjp(fn, *makers, **named)
