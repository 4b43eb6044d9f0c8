"""The gradient audit's machinery: inputs, the three outcomes (``R`` a rule checked
against finite differences, ``K`` a constant, ``X`` a refusal), their checks, and the call
helpers and reasons the tables share (the tables: ``_grad_audit_numpy.py`` and
``test_grad_audit.py``)."""
import math

import numpy
import pytest

import minpy
import minpy.numpy as mnp
from minpy.core.array import Array

EPS = 1e-6          # central differences in float64
RTOL, ATOL = 1e-4, 1e-6
NONTRIVIAL = 1e-4   # |finite difference| an R variant must reach (else its call tests nothing)


# ------------------------------------------------------------------ inputs
def _spd(rng, n):
    b = rng.standard_normal((n, n))
    return b @ b.T / n + numpy.eye(n)


_KINDS = {
    "n": lambda rng, s: rng.standard_normal(s),                      # normal
    "p": lambda rng, s: rng.uniform(0.5, 2.0, s),                     # positive
    "u": lambda rng, s: rng.uniform(-0.8, 0.8, s),                    # inside (-1, 1)
    "g": lambda rng, s: rng.uniform(1.2, 3.0, s),                     # greater than 1
    "m": lambda rng, s: rng.choice([-1.0, 1.0], s) * rng.uniform(0.5, 2.0, s),  # |x| >= .5
    "q": lambda rng, s: rng.uniform(0.15, 0.85, s),                   # a probability
    "f": lambda rng, s: rng.uniform(2.1, 2.4, s),                     # fmod's numerator
    "d": lambda rng, s: rng.uniform(0.95, 1.0, s),                    # fmod's denominator
    "h": lambda rng, s: rng.integers(-3, 3, s) + rng.uniform(0.2, 0.8, s),  # off integers
    "o": lambda rng, s: numpy.cumsum(rng.uniform(0.3, 1.0, s), axis=-1) - 1.0,  # increasing
    "A": lambda rng, s: 2.0 * numpy.eye(s[-1]) + 0.3 * rng.standard_normal(s),   # invertible
    "S": lambda rng, s: _spd(rng, s[-1]),                             # symmetric pos. definite
}


def _parse(spec):
    """'n2x3' -> ('n', (2, 3)); 'p' -> ('p', ()) (a 0-d array)."""
    kind, dims = spec[0], spec[1:]
    return kind, tuple(int(d) for d in dims.split("x")) if dims else ()


def make_inputs(specs, seed):
    rng = numpy.random.default_rng(seed)
    out = []
    for s in specs:
        kind, shape = _parse(s)
        out.append(numpy.asarray(_KINDS[kind](rng, shape), dtype=numpy.float64))
    return out


# ------------------------------------------------------------------ outcomes
def _call1(f, *xs):
    return f(*xs)


class R:
    """A rule: gradients match finite differences (to ``order``)."""
    outcome = "rule"

    def __init__(self, *args, call=_call1, order=2, zero=False, rtol=RTOL, atol=ATOL,
                 known_gap=None):
        self.args, self.call, self.order, self.zero = args, call, order, zero
        self.rtol, self.atol = rtol, atol
        self.known_gap = known_gap      # a silent wrong answer not fixed yet: strict xfail


class K:
    """A constant: untraced outputs, locally constant; ``flag``: prim.nondiff is set."""
    outcome = "constant"

    def __init__(self, reason, *args, call=_call1, flag=True, values=True):
        self.reason, self.args, self.call, self.flag, self.values = reason, args, call, flag, \
            values


class X:
    """A refusal: TypeError naming the function."""
    outcome = "refusal"

    def __init__(self, *args, call=_call1, name=None):
        self.args, self.call, self.name = args, call, name


# ------------------------------------------------------------------ checks
def _leaves(out, acc):
    """The numeric leaves of a result (Arrays, ndarrays, numbers) in order."""
    if isinstance(out, (Array, numpy.ndarray, numpy.generic)):
        acc.append(out)
    elif isinstance(out, (tuple, list)):
        for o in out:
            _leaves(o, acc)
    elif isinstance(out, dict):
        for o in out.values():
            _leaves(o, acc)
    elif isinstance(out, (bool, int, float, complex)):
        acc.append(out)
    return acc


def _host(v):
    return v.asnumpy() if isinstance(v, Array) else numpy.asarray(v)


class _Scalarizer:
    """``Re sum(conj(u_k) * leaf_k)`` over the floating leaves, with the u_k drawn once."""

    def __init__(self, out, rng):
        self.u = []
        for leaf in _leaves(out, []):
            h = _host(leaf)
            if not numpy.issubdtype(h.dtype, numpy.inexact):
                self.u.append(None)
                continue
            u = rng.standard_normal(h.shape)
            if h.dtype.kind == "c":
                u = u + 1j * rng.standard_normal(h.shape)
            self.u.append(u)

    def traced(self, out):
        total = 0.0
        for leaf, u in zip(_leaves(out, []), self.u):
            if u is None:
                continue
            if u.dtype.kind == "c":
                total = total + mnp.sum(mnp.real(leaf * numpy.conj(u)))
            else:
                total = total + mnp.sum(leaf * u)
        return total


def _directional(fn, xs, rng, v=None):
    """(analytic, finite difference) of scalar ``fn`` at ``xs`` along a random direction."""
    if v is None:
        v = [rng.standard_normal(x.shape) for x in xs]
    argnum = 0 if len(xs) == 1 else tuple(range(len(xs)))
    g = minpy.grad(fn, argnum)(*[mnp.array(x) for x in xs])
    g = [g] if len(xs) == 1 else list(g)
    analytic = sum(float(numpy.sum(_host(gi) * vi)) for gi, vi in zip(g, v))

    def at(t):
        return float(_host(fn(*[mnp.array(x + t * vi) for x, vi in zip(xs, v)])))
    fd = (at(EPS) - at(-EPS)) / (2 * EPS)
    return analytic, fd


def check_rule(name, fn, spec, seed):
    xs = make_inputs(spec.args, seed)
    rng = numpy.random.default_rng(seed + 1)
    out = spec.call(fn, *[mnp.array(x) for x in xs])
    sc = _Scalarizer(out, rng)
    assert any(u is not None for u in sc.u), f"{name}: no floating output to differentiate"

    def scalar(*a):
        return sc.traced(spec.call(fn, *a))
    analytic, fd = _directional(scalar, xs, rng)
    if spec.zero:
        assert analytic == 0.0 and abs(fd) < ATOL, \
            f"{name}: expected a zero gradient, got {analytic!r} (finite differences {fd!r})"
        return
    assert abs(fd) > NONTRIVIAL, f"{name}: the representative call is locally constant"
    assert math.isclose(analytic, fd, rel_tol=spec.rtol, abs_tol=spec.atol), \
        f"{name}: gradient {analytic!r}, finite differences {fd!r}"
    if spec.order < 2:
        return
    w = [rng.standard_normal(x.shape) for x in xs]
    argnum = 0 if len(xs) == 1 else tuple(range(len(xs)))
    first = minpy.grad(scalar, argnum)

    def grad_dot_w(*a):
        g = first(*a)
        g = [g] if len(xs) == 1 else list(g)
        return sum(mnp.sum(gi * wi) for gi, wi in zip(g, w))
    analytic, fd = _directional(grad_dot_w, xs, rng)
    assert math.isclose(analytic, fd, rel_tol=spec.rtol * 10, abs_tol=spec.atol * 10), \
        f"{name}: second order: grad of grad {analytic!r}, finite differences {fd!r}"


def _same(a, b):
    if isinstance(a, str) or a is None:
        return True
    ha, hb = _host(a), _host(b)
    return ha.shape == hb.shape and numpy.array_equal(ha, hb, equal_nan=ha.dtype.kind in "fc")


def check_constant(name, fn, spec, seed):
    xs = make_inputs(spec.args, seed)
    rng = numpy.random.default_rng(seed + 1)
    seen = []

    def probe(*a):
        seen.append(spec.call(fn, *a))
        return mnp.sum(a[0]) if a else 0.0
    if xs:
        minpy.grad(probe, 0 if len(xs) == 1 else tuple(range(len(xs))))(
            *[mnp.array(x) for x in xs])
    else:
        probe()
    traced = [leaf for leaf in _leaves(seen[0], []) if isinstance(leaf, Array)
              and leaf._node is not None]
    assert not traced, f"{name}: declared constant but its result is traced"
    prim = getattr(fn, "_prim", None)
    if spec.flag:
        assert prim is not None and prim.nondiff, \
            f"{name}: declared constant but the library does not mark it nondiff"
    if spec.values and xs:
        v = [rng.standard_normal(x.shape) for x in xs]
        base = _leaves(spec.call(fn, *[mnp.array(x) for x in xs]), [])
        moved = _leaves(spec.call(fn, *[mnp.array(x + 1e-7 * vi) for x, vi in zip(xs, v)]),
                        [])
        assert len(base) == len(moved) and all(_same(a, b) for a, b in zip(base, moved)), \
            f"{name}: declared constant but its value moves with the input"


def check_refusal(name, fn, spec, seed):
    xs = make_inputs(spec.args, seed)
    want = spec.name or name.rpartition(":")[2]
    prim = getattr(fn, "_prim", None)
    names = {want} | ({prim.qualname} if prim is not None else set())
    def scalar(*a):
        out = spec.call(fn, *a)
        return _Scalarizer(out, numpy.random.default_rng(0)).traced(out)
    with pytest.raises(TypeError) as info:
        minpy.grad(scalar, 0 if len(xs) == 1 else tuple(range(len(xs))))(
            *[mnp.array(x) for x in xs])
    msg = str(info.value)
    assert any(n in msg for n in names), f"{name}: refusal does not name it: {msg}"


# ------------------------------------------------------------------ call helpers
def _int(x):
    """A traced integer array derived from ``x`` (for the integer-only functions)."""
    return mnp.floor(x * 4.0).astype(numpy.int64)


def _cplx(f):
    """Call ``f`` on the complex number built from two real traced inputs."""
    return lambda fn, x, y: f(fn, x + 1j * y)


def _nan(x):
    """``x`` with NaN at fixed places (the nan* functions skip them)."""
    mask = numpy.zeros(x.shape, bool)
    mask.flat[1::5] = True
    return mnp.where(mask, numpy.nan, x)


def _written(write):
    """An in-place writer replayed on a copy: ``write(fn, y, v)`` then ``y``."""
    def call(fn, x, v):
        y = x * 1.0
        write(fn, y, v)
        return y
    return call


IDX = numpy.array([0, 2, 1, 2, 0])
HIST_A = numpy.array([0.1, 0.55, 0.9, 0.3, 0.2, 0.72])
SORTED = numpy.array([-1.0, -0.2, 0.4, 1.1, 2.0])
P3 = numpy.array([1.0, -6.0, 11.0, -6.0])          # roots 1, 2, 3


ROUNDING = "piecewise constant (rounding)"
COMPARISON = "a comparison or predicate: boolean result"
INDEX = "integer positions, counts or indices"
INTEGER = "integer-only (bitwise, gcd/lcm, shifts): integer results"
SHAPE = "shape or dtype query of its argument"
CREATION = "an array built from shapes or lengths only"
IO_WRITE = "writes the array out; returns nothing differentiable"
STRINGS = "formats the array as text"
RANDOM = "takes no array: a draw from the generator's state"


def _unary(kind, names, shape="3"):
    return {n: R(kind + shape) for n in names}


def _binary(k1, k2, names, s1="2x3", s2="3"):
    return {n: R(k1 + s1, k2 + s2) for n in names}


def _consts(reason, names, *args, **kw):
    return {n: K(reason, *args, **kw) for n in names}
