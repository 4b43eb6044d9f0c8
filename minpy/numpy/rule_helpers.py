"""Helpers shared by the gradient rule tables (``vjp_*``): complex numbers,
gradient shapes, host values, integer/bool operands (``float_operand``: a rule
computes in the gradient's float dtype), argument-gradient makers and rules by
differentiating a reference implementation.

Written once here against minpy's namespace, so every rule runs on NumPy and
on CuPy alike.
"""
import inspect
import math
import numbers

import numpy

import minpy.numpy as mnp
from ..core import autograd, tree
from ..core.array import Array, wait
from ..core.autograd import defvjp
from ..core.ops import broadcast_grad, unbroadcast
from ..core.trace import tracing
from .fronts import host

__all__ = ["is_complex", "conj_if_complex", "real_part", "hermitian", "unbroadcast",
           "broadcast_grad", "unbroadcast_to_operand", "host", "shape_of", "cast_like",
           "float_dtype", "float_operand", "float_operands",
           "reshape_like", "per_item", "nograd", "real_vdot", "vjp_via_reference",
           "defvjp_by_name", "no_gradient", "jit_tracing"]


def jit_tracing():
    """True while ``minpy.jit`` traces this thread: a rule must not branch on values
    then (reading one raises), so it takes its general, branch-free path."""
    return tracing()


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


# ---------------------------------------------------------------- integer/bool operands
_EXACT = (int, float, bool, complex)       # Python numbers: no overflow, no float16
NEEDS_FLOAT = frozenset("biu")
_REAL_OF = {}


def float_dtype(like):
    """The floating dtype a gradient is computed in next to ``like`` (the result of
    the rule's primitive, a gradient, a dtype or a tuple of results): ``like``'s own
    dtype when floating, its real part's when complex, else float64."""
    if type(like) is tuple:
        like = like[0] if like else None
    if isinstance(like, (numpy.dtype, type, str)):
        dt = numpy.dtype(like)
    else:
        dt = getattr(like, "dtype", None)
        if dt is None:
            dt = numpy.result_type(like) if like is not None else numpy.dtype(numpy.float64)
    r = _REAL_OF.get(dt)
    if r is None:
        r = numpy.empty(0, dt).real.dtype if dt.kind in "fc" else numpy.dtype(numpy.float64)
        _REAL_OF[dt] = r
    return r


def float_operand(x, like):
    """``x`` in the floating dtype :func:`float_dtype` picks for ``like`` when it is an
    integer or bool array or NumPy scalar (so a rule's ``x * x`` cannot overflow the
    integer type, ``log(x)`` does not run in float16 and ``-x`` works for bools);
    anything else (floats, complex values, Python numbers, None) as it is.

    The one place a rule casts its constant operands: NumPy's forward computes in
    that float type too (a ufunc's loop casts its integer inputs), so the rule
    differentiates the function NumPy computed."""
    t = type(x)
    if t is Array:
        if x._data.dtype.kind not in NEEDS_FLOAT:
            return x
        return x.astype(float_dtype(like))
    if t in _EXACT or x is None:
        return x
    dt = getattr(x, "dtype", None)
    if dt is None:
        if not isinstance(x, (list, tuple)):
            return x
        dt = numpy.asarray(x).dtype
    if dt.kind not in NEEDS_FLOAT:
        return x
    return numpy.asarray(x, dtype=float_dtype(like))[()] if numpy.ndim(x) == 0 else \
        numpy.asarray(x, dtype=float_dtype(like))


def has_nan(v):
    """True when Array ``v`` holds a NaN (a branch decision of a rule, never recorded):
    on the host one ``minimum.reduce`` pass for real floats (it propagates NaN and
    allocates no mask); none for integers and bools; on a device through minpy."""
    if type(v) is Array:
        wait(v)
        d = v._data
    else:
        d = v
    if type(d) is numpy.ndarray:
        kind = d.dtype.kind
        if kind == "f":
            return d.size > 0 and math.isnan(_min_reduce(d, axis=None))
        return kind == "c" and bool(numpy.isnan(d).any())
    kind = getattr(getattr(d, "dtype", None), "kind", None)
    if kind != "f" and kind != "c":
        return isinstance(d, float) and math.isnan(d)
    return d.size > 0 and bool(mnp.any(mnp.isnan(v)))


_min_reduce = numpy.minimum.reduce


def float_operands(like, args):
    """:func:`float_operand` of each of ``args`` (a tuple); ``args`` itself when none
    needs it (each operand converted once; the ufunc rules test the common case
    inline before calling this)."""
    out = tuple(float_operand(a, like) for a in args)
    return args if all(o is a for o, a in zip(out, args)) else out


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
    maker.no_gradient = True        # the tape does not turn a list here into an array
    return maker


def real_vdot(out, g):
    """``Re <out, g>`` summed, over every floating output of a tuple ``out`` (its
    outputs may nest, as ``histogramdd``'s (counts, [edges]))."""
    if isinstance(out, tuple):
        total = 0.0
        for o, gi in zip(tree.leaves(out), tree.leaves(g)):
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
