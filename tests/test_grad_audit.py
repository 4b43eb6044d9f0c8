"""The namespace-wide gradient audit: no silent wrong answers.

Every public callable of ``minpy``, ``minpy.linalg``, ``minpy.fft``, ``minpy.random``
and ``minpy.scipy``'s submodules, called on traced float64 inputs inside
``minpy.grad``, has exactly one of three outcomes, decided per name in the tables
below:

- ``R`` (a rule): its gradient matches central finite differences on a
  representative call, to first order and (``order=2``, the default) to second
  order, grad of grad. The check is directional (a random direction for every
  input, a random cotangent for every floating output, as
  :func:`minpy.testing.check_grads`) and must not be trivial: finite differences
  are non-zero unless the variant says ``zero=True`` (a rule that rightly gives 0,
  as ``sign`` of a real number).
- ``K`` (a constant): the result carries no gradient (integer, boolean or index
  results, comparisons, rounding, shape queries, draws that take no array), its
  outputs are untraced and do not change under a small perturbation of the input,
  and the library's ``nondiff`` flag agrees (``flag=False``: a form of a function
  whose other forms have rules, or a function that takes no array).
- ``X`` (a refusal): the call raises ``TypeError`` naming the function (or, for
  one argument without a rule — ``percentile``'s ``q``, ``interp``'s ``xp`` —
  the backward pass does, naming the function that has no rule).

A name may list several variants (keywords, broadcasting, other arguments): a
function with a rule may refuse for one argument, or have a constant form (the
one-argument ``where``). A public name without a decision fails
:func:`test_every_public_name_is_decided`; names that are not functions of
arrays (types, constants, submodules, settings, the autograd operators ...) are
listed in ``NOT_ARRAY_FUNCTIONS`` with the reason. A silent wrong answer not fixed
yet is a variant with ``known_gap=`` (a strict xfail: it fails once fixed, so the
table is updated).
"""
import io
import math
import types
import zlib

import numpy
import pytest

import minpy
import minpy.numpy as mnp
import minpy.scipy
import minpy.scipy.integrate
import minpy.scipy.linalg
import minpy.scipy.signal
import minpy.scipy.special
import minpy.scipy.stats
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


MINPY = {}
# ---- elementwise: smooth
MINPY.update(_unary("n", ["negative", "positive", "square", "exp", "exp2", "expm1", "sin", "cos",
                          "arctan", "atan", "sinh", "cosh", "tanh", "arcsinh", "asinh",
                          "deg2rad", "degrees", "rad2deg", "radians", "sinc", "i0",
                          "real_if_close", "conj", "conjugate"], "2x3"))
MINPY.update(_unary("p", ["sqrt", "log", "log2", "log10"]))
MINPY.update(_unary("u", ["log1p", "arcsin", "asin", "arccos", "acos", "arctanh", "atanh", "tan"]))
MINPY.update(_unary("g", ["arccosh", "acosh"]))
MINPY.update(_unary("m", ["absolute", "abs", "fabs", "cbrt", "reciprocal"]))
MINPY.update(_binary("n", "n", ["add", "subtract", "multiply", "logaddexp", "logaddexp2",
                                "maximum", "minimum", "fmax", "fmin", "nextafter"]))
MINPY.update(_binary("n", "m", ["divide", "true_divide"]))
MINPY.update(_binary("p", "n", ["power", "pow", "float_power"]))
MINPY.update(_binary("m", "m", ["arctan2", "atan2", "hypot", "copysign"]))
MINPY.update(_binary("f", "d", ["fmod", "remainder", "mod", "divmod"]))
MINPY.update({
    "sign": [R("m3", zero=True), R("m3", "m3", call=_cplx(lambda f, z: f(z)))],
    "real": [R("n3"), R("n3", "n3", call=_cplx(lambda f, z: f(z)))],
    "imag": [R("n3", zero=True), R("n3", "n3", call=_cplx(lambda f, z: f(z)))],
    "angle": [R("m3", zero=True), R("n3", "n3", call=_cplx(lambda f, z: f(z, deg=True)))],
    "unwrap": R("n6", call=lambda f, x: f(4.0 * x)),
    "nan_to_num": [R("n2x3"), R("n2x3", call=lambda f, x: f(_nan(x))),
                   X("n", call=lambda f, v: f(numpy.array([numpy.nan, 1.0]), nan=v))],
    "heaviside": [R("n4", zero=True, call=lambda f, x: f(x, 0.5)),
                  R("n3", call=lambda f, h: f(numpy.array([0.0, 1.5, -2.0]), h))],
    "ldexp": R("n3", call=lambda f, x: f(x, numpy.array([1, -2, 3]))),
    "frexp": R("f3"),
    "modf": R("h3"),
    "clip": [R("n2x3", call=lambda f, x: f(x, -0.5, 0.5)),
             R("n2x3", "n3", call=lambda f, x, lo: f(x, lo - 1.0, 1.2))],
    "where": [R("n2x3", "n3", call=lambda f, x, y: f(x > 0, x, y)),
              K(INDEX, "n2x3", call=lambda f, x: f(x), flag=False)],
})
# ---- elementwise: no gradient
MINPY.update(_consts(ROUNDING, ["floor", "ceil", "trunc", "rint", "fix", "spacing", "signbit"],
                     "h2x3"))
MINPY.update(_consts(ROUNDING, ["around", "round"], "h2x3", call=lambda f, x: f(x, 1)))
MINPY["floor_divide"] = K(ROUNDING, "f3", "d3")
MINPY.update(_consts(COMPARISON, ["equal", "not_equal", "less", "less_equal", "greater",
                                  "greater_equal", "logical_and", "logical_or", "logical_xor",
                                  "isclose", "allclose", "array_equal", "array_equiv"],
                     "n2x3", "n3"))
MINPY.update(_consts(COMPARISON, ["logical_not", "isnan", "isinf", "isfinite", "iscomplex",
                                  "isreal", "isneginf", "isposinf", "iscomplexobj", "isrealobj",
                                  "isscalar", "isfortran", "iterable"], "n2x3"))
MINPY["isin"] = K(COMPARISON, "n4", call=lambda f, x: f(x, SORTED))
MINPY.update(_consts(INTEGER, ["bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm",
                               "left_shift", "bitwise_left_shift", "right_shift",
                               "bitwise_right_shift"], "p3", "p3",
                     call=lambda f, x, y: f(_int(x), _int(y))))
MINPY.update(_consts(INTEGER, ["bitwise_count", "invert", "bitwise_invert", "bitwise_not"],
                     "p3", call=lambda f, x: f(_int(x))))
MINPY.update(_consts(INTEGER, ["packbits"], "n8", call=lambda f, x: f(x > 0)))
MINPY.update(_consts(INTEGER, ["unpackbits"], "p3",
                     call=lambda f, x: f(_int(x).astype(numpy.uint8))))
# ---- reductions, scans, statistics
MINPY.update({n: [R("n3x4"), R("n3x4", call=lambda f, x: f(x, axis=1, keepdims=True))]
              for n in ["sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin",
                        "ptp", "median"]})
MINPY.update({n: R("n3x4", call=lambda f, x: f(x, axis=0))
              for n in ["cumsum", "cumprod", "cumulative_sum", "cumulative_prod"]})
MINPY.update({n: R("n3x4", call=lambda f, x: f(_nan(x), axis=0))
              for n in ["nansum", "nanprod", "nanmean", "nanstd", "nanvar", "nanmax", "nanmin",
                        "nanmedian", "nancumsum", "nancumprod"]})
MINPY.update({
    "percentile": [R("n3x4", call=lambda f, x: f(x, [30.0, 75.0], axis=1)),
                   X("p", call=lambda f, q: f(HIST_A, 40.0 * q))],
    "quantile": [R("n3x4", call=lambda f, x: f(x, 0.3, axis=0, method="linear")),
                 X("q", call=lambda f, q: f(HIST_A, q))],
    "nanpercentile": R("n3x4", call=lambda f, x: f(_nan(x), 40.0, axis=0)),
    "nanquantile": R("n3x4", call=lambda f, x: f(_nan(x), [0.2, 0.6])),
    "average": [R("n3x4", "p4", call=lambda f, x, w: f(x, axis=1, weights=w)),
                R("n3x4", "p4", call=lambda f, x, w: f(x, axis=1, weights=w, returned=True))],
    "trace": R("n3x4"),
    "diff": [R("n4x5", call=lambda f, x: f(x, n=2, axis=0)),
             R("n4", "n2", call=lambda f, x, p: f(x, prepend=p, append=x[0]))],
    "ediff1d": R("n5", "n2", call=lambda f, x, b: f(x, to_begin=b, to_end=3.0)),
    "gradient": [R("n5"), R("n3x4", call=lambda f, x: f(x, 0.5, edge_order=2)),
                 X("p", call=lambda f, h: f(HIST_A, h))],
    "trapezoid": [R("n5", "o5", call=lambda f, y, x: f(y, x=x)),
                  R("n5", "p", call=lambda f, y, h: f(y, dx=h))],
    "corrcoef": R("n3x6"),
    "cov": [R("n3x6", "n6", call=lambda f, x, y: f(x, y, ddof=0)),
            X("p6", call=lambda f, w: f(HIST_A, aweights=w))],
    "bincount": [R("n5", call=lambda f, w: f(IDX, weights=w, minlength=4)),
                 K(INDEX, "p5", call=lambda f, x: f(_int(x)), flag=False)],
    "interp": [R("p4", "n5", call=lambda f, x, fp: f(x, SORTED + 1.5, fp)),
               R("n", "n", call=lambda f, lo, hi: f([-5.0, 0.3, 5.0], SORTED, HIST_A[:5],
                                                    left=lo, right=hi)),
               X("o5", call=lambda f, xp: f(SORTED, xp, HIST_A[:5]))],
    "convolve": [R("n5", "n3"), R("n5", "n3", call=lambda f, x, y: f(x, y, mode="same"))],
    "correlate": [R("n5", "n3"), R("n5", "n3", call=lambda f, x, y: f(x, y, mode="full"))],
})
MINPY.update(_consts(INDEX, ["argmax", "argmin", "nanargmax", "nanargmin", "argsort",
                             "argwhere", "nonzero", "flatnonzero", "count_nonzero", "all",
                             "any"], "n3x4"))
MINPY.update({
    "argpartition": K(INDEX, "n5", call=lambda f, x: f(x, 2)),
    "lexsort": K(INDEX, "n5", "n5", call=lambda f, x, y: f((x, y))),
    "searchsorted": [K(INDEX, "n4", call=lambda f, v: f(SORTED, v)),
                     K(INDEX, "o5", call=lambda f, a: f(a, HIST_A))],
    "digitize": [K(INDEX, "n4", call=lambda f, x: f(x, SORTED)),
                 K(INDEX, "o5", call=lambda f, b: f(HIST_A, b))],
    "ravel_multi_index": K(INDEX, "p3", call=lambda f, x: f((_int(x), _int(x)), (9, 9))),
    "unravel_index": K(INDEX, "p3", call=lambda f, x: f(_int(x), (3, 4))),
    "ix_": K(INDEX, "p3", call=lambda f, x: f(_int(x), _int(x))),
    "tril_indices_from": K(INDEX, "n3x3"),
    "triu_indices_from": K(INDEX, "n3x3"),
    "diag_indices_from": K(INDEX, "n3x3"),
    # histograms: counts are piecewise constant in the data, linear in the weights; the
    # edges (from the data's min and max unless given) and densities are smooth
    "histogram": [R("n6", call=lambda f, w: f(HIST_A, bins=3, weights=w)),
                  R("n6", call=lambda f, w: f(HIST_A, bins=[0.0, 0.4, 0.5, 1.0], weights=w,
                                              density=True)),
                  R("n6", call=lambda f, a: f(a, bins=4)),
                  R("n6", call=lambda f, a: f(a, bins="auto", density=True)),
                  R("n6", call=lambda f, a: f(a, bins=3, range=(-3.0, 3.0)), zero=True),
                  R("o5", call=lambda f, b: f(HIST_A, bins=b + 0.5, density=True)),
                  R("n", "p", call=lambda f, lo, w: f(HIST_A, bins=3, range=(lo - 3.0, w + 1.0),
                                                       density=True))],
    "histogram_bin_edges": [R("n6", call=lambda f, a: f(a, bins=4)),
                            R("n6", call=lambda f, a: f(a, bins=3, range=(-3, 3)), zero=True)],
    "histogram2d": [R("n6", call=lambda f, w: f(HIST_A, HIST_A[::-1], bins=2, weights=w)),
                    R("n6", "n6", call=lambda f, x, y: f(x, y, bins=(2, 3), density=True))],
    "histogramdd": [R("n6", call=lambda f, w: f(numpy.stack([HIST_A, HIST_A[::-1]], 1),
                                                 bins=2, weights=w)[0]),
                    R("n6x2", call=lambda f, s: f(s, bins=3, density=True)[0]),
                    R("n6", "n6", call=lambda f, x, y: f([x, y], bins=(2, 2), density=True)[0]),
                    # the edges sit in a list inside the result tuple: traced leaves too
                    R("n6x2", call=lambda f, s: f(s, bins=3)[1]),
                    R("n6x2", call=lambda f, s: f(s, bins=(2, 3))[1][1]),
                    R("n6", call=lambda f, w: f(numpy.stack([HIST_A, HIST_A[::-1]], 1),
                                                 bins=(2, 3), weights=w)[0])],
})
# ---- shapes, joins, splits, reordering
MINPY.update({
    "reshape": R("n2x3", call=lambda f, x: f(x, (3, 2))),
    "ravel": R("n2x3"),
    "transpose": R("n2x3x4", call=lambda f, x: f(x, (1, 2, 0))),
    "permute_dims": R("n2x3x4", call=lambda f, x: f(x, (2, 0, 1))),
    "matrix_transpose": R("n2x3x4"),
    "moveaxis": R("n2x3x4", call=lambda f, x: f(x, 0, -1)),
    "rollaxis": R("n2x3x4", call=lambda f, x: f(x, 2)),
    "swapaxes": R("n2x3x4", call=lambda f, x: f(x, 0, 2)),
    "expand_dims": R("n2x3", call=lambda f, x: f(x, (0, 2))),
    "squeeze": R("n3x1", call=lambda f, x: f(x, axis=1)),
    "flip": R("n2x3", call=lambda f, x: f(x, 1)),
    "fliplr": R("n2x3"), "flipud": R("n2x3"),
    "roll": R("n2x3", call=lambda f, x: f(x, 2, axis=1)),
    "rot90": R("n2x3"),
    "tile": R("n2x3", call=lambda f, x: f(x, (2, 1))),
    "repeat": R("n2x3", call=lambda f, x: f(x, [1, 2], axis=0)),
    "resize": R("n2x3", call=lambda f, x: f(x, (4, 2))),
    "atleast_1d": R("n", "n2", call=lambda f, x, y: f(x, y)),
    "atleast_2d": R("n3"), "atleast_3d": R("n2x3"),
    "broadcast_to": R("n3", call=lambda f, x: f(x, (2, 3))),
    "broadcast_arrays": R("n3x1", "n4"),
    "concatenate": R("n2x3", "n1x3", call=lambda f, x, y: f([x, y])),
    "concat": R("n2x3", "n2x1", call=lambda f, x, y: f((x, y), axis=1)),
    "stack": R("n2x3", "n2x3", call=lambda f, x, y: f([x, y], axis=1)),
    "vstack": R("n3", "n2x3", call=lambda f, x, y: f([x, y])),
    "row_stack": R("n3", "n2x3", call=lambda f, x, y: f([x, y])),
    "hstack": R("n2x3", "n2x1", call=lambda f, x, y: f([x, y])),
    "dstack": R("n2x3", "n2x3", call=lambda f, x, y: f([x, y])),
    "column_stack": R("n3", "n3x2", call=lambda f, x, y: f([x, y])),
    "block": R("n2x2", "n2x1", "n1x3", call=lambda f, x, y, z: f([[x, y], [z]])),
    "append": R("n2x3", "n1x3", call=lambda f, x, y: f(x, y, axis=0)),
    "insert": R("n5", "n2", call=lambda f, x, v: f(x, [1, 3], v)),
    "delete": R("n5", call=lambda f, x: f(x, [0, 2])),
    "split": R("n4x3", call=lambda f, x: f(x, 2)),
    "array_split": R("n5x2", call=lambda f, x: f(x, 3)),
    "hsplit": R("n2x4", call=lambda f, x: f(x, 2)),
    "vsplit": R("n4x2", call=lambda f, x: f(x, [1])),
    "dsplit": R("n2x2x4", call=lambda f, x: f(x, 2)),
    "unstack": R("n2x3", call=lambda f, x: f(x, axis=1)),
    "pad": [R("n2x3", call=lambda f, x: f(x, 1, mode="reflect")),
            R("n2x3", "n", call=lambda f, x, c: f(x, ((1, 0), (0, 2)), constant_values=c))],
    "diag": [R("n3x3"), R("n3", call=lambda f, x: f(x, k=1))],
    "diagflat": R("n2x2"),
    "diagonal": R("n3x4", call=lambda f, x: f(x, 1)),
    "tril": R("n3x4"), "triu": R("n3x4", call=lambda f, x: f(x, -1)),
    "sort": R("n3x4", call=lambda f, x: f(x, axis=0)),
    "sort_complex": R("n5"),
    "partition": R("n6", call=lambda f, x: f(x, 2)),
    "trim_zeros": R("n4", call=lambda f, x: f(mnp.concatenate([numpy.zeros(2), x,
                                                                numpy.zeros(1)]))),
    "take": R("n5", call=lambda f, x: f(x, IDX)),
    "take_along_axis": R("n3x4", call=lambda f, x: f(x, numpy.array([[0], [3], [1]]), axis=1)),
    "choose": R("n5", "n5", call=lambda f, x, y: f(IDX % 2, [x, y])),
    "compress": R("n3x4", call=lambda f, x: f([True, False, True], x, axis=0)),
    "extract": R("n2x3", call=lambda f, x: f(x > 0, x)),
    "select": R("n4", "n4", "n4", call=lambda f, x, y, d: f([x > 0.5, x < -0.5], [x, y], d)),
    "piecewise": R("n5", call=lambda f, x: f(x, [x < 0], [lambda v: v ** 2, lambda v: 3 * v])),
    "apply_along_axis": R("n3x4", call=lambda f, x: f(lambda v: v * v.sum(), 1, x)),
    "apply_over_axes": R("n2x3x4", call=lambda f, x: f(mnp.sum, x, [0, 2])),
    "fromfunction": R("n3", call=lambda f, x: f(lambda i, j: x[i] * j, (3, 2), dtype=int)),
    "copy": R("n2x3"), "asarray": R("n2x3"), "asanyarray": R("n2x3"),
    "asarray_chkfinite": R("n2x3"), "ascontiguousarray": R("n2x3"),
    "asfortranarray": R("n2x3"),
    "require": R("n2x3", call=lambda f, x: f(x, numpy.float64, ["F"])),
    "astype": R("n2x3", call=lambda f, x: f(x, numpy.complex128)),
    "array": [R("n2x3"), R("n", "n", call=lambda f, x, y: f([[x, y], [y, 2.0]]))],
    "meshgrid": R("n3", "n2", call=lambda f, x, y: f(x, y, indexing="ij")),
    "vander": R("n4", call=lambda f, x: f(x, 3)),
    # in-place writers, replayed out of place under a tape
    "copyto": R("n2x3", "n3", call=_written(lambda f, y, v: f(y, v, where=numpy.array(
        [True, False, True])))),
    "put": R("n5", "n2", call=_written(lambda f, y, v: f(y, [0, 3], v))),
    "place": R("n5", "n2", call=_written(lambda f, y, v: f(y, IDX == 2, v))),
    "putmask": R("n5", "n5", call=_written(lambda f, y, v: f(y, IDX == 0, v))),
    "put_along_axis": R("n2x3", "n2x1", call=_written(
        lambda f, y, v: f(y, numpy.array([[2], [0]]), v, axis=1))),
    "fill_diagonal": R("n3x3", "n", call=_written(lambda f, y, v: f(y, v))),
})
# ---- unique values and sets: every output value is an input value
MINPY.update({
    "unique": [R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
               R("n4", call=lambda f, x: f(mnp.concatenate([x[1:], x]), return_index=True,
                                           return_inverse=True, return_counts=True)),
               R("n3x2", call=lambda f, x: f(mnp.concatenate([x, x[:1]]), axis=0))],
    "unique_values": R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
    "unique_counts": R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
    "unique_inverse": R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
    "unique_all": R("n2x2", call=lambda f, x: f(mnp.concatenate([x, x[:1]]))),
    "union1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[:1]]))),
    "intersect1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[1:3]]))),
    "setdiff1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[:1]]))),
    "setxor1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[:1]]))),
})
# ---- products, polynomials
MINPY.update({
    "dot": R("n2x3", "n3x4"), "vdot": R("n2x3", "n2x3"), "inner": R("n2x3", "n4x3"),
    "outer": R("n3", "n2"), "matmul": R("n2x3x4", "n4x2"), "kron": R("n2x2", "n3x1"),
    "tensordot": R("n2x3x4", "n3x4x2", call=lambda f, x, y: f(x, y, axes=2)),
    "einsum": R("n2x3", "n3x4", call=lambda f, x, y: f("ij,jk->ki", x, y)),
    "vecdot": R("n2x3", "n3"), "matvec": R("n2x3", "n3"), "vecmat": R("n3", "n3x2"),
    "cross": R("n2x3", "n3"),
    "poly": R("n3"), "polyadd": R("n3", "n2"), "polysub": R("n3", "n2"),
    "polymul": R("n3", "n2"), "polyder": R("n4"), "polyint": R("n3"),
    "polydiv": R("n4", "m2"), "polyval": R("n3", "n4"),
    "polyfit": [R("n6", "p6", call=lambda f, y, w: f(HIST_A, y, 2, w=w)),
                R("o6", call=lambda f, x: f(x, HIST_A, 2))],
    "roots": R("n4", call=lambda f, x: f(P3 + 0.01 * x)),
})
# ---- creation
MINPY.update({
    "arange": [R("n", call=lambda f, x: f(x, x + 4.5)),
               R("p", call=lambda f, s: f(0.25, 3.1, s))],
    "linspace": R("n", "n2", call=lambda f, x, y: f(x, y, 5, axis=-1)),
    "logspace": [R("n", "n", call=lambda f, x, y: f(x, y, 4)),
                 R("g", call=lambda f, b: f(0.0, 1.5, 4, base=b))],
    "geomspace": R("p", "p2", call=lambda f, x, y: f(x, y, 4)),
    "full": R("n", call=lambda f, c: f((2, 3), c)),
    "full_like": R("n2x3", "n", call=lambda f, a, c: f(a, c)),
    "kaiser": R("p", call=lambda f, b: f(6, b)),
    # (a 1-D grid: NumPy's own arithmetic on the traced bounds is recorded)
    "mgrid": R("n", call=lambda f, x: f[x:x + 2.0:5j]),
    "ogrid": R("n", call=lambda f, x: f[x:2.0:4j]),
    "r_": R("n3", "n2", call=lambda f, x, y: f[x, 0.5, y]),
    "c_": R("n3", "n3x2", call=lambda f, x, y: f[x, y]),
})
MINPY.update({n: K(CREATION, call=lambda f: f(3)) for n in [
    "zeros", "ones", "eye", "identity", "tri", "diag_indices", "tril_indices",
    "triu_indices", "bartlett", "blackman", "hamming", "hanning"]})
MINPY.update({
    "empty": K(CREATION, call=lambda f: f(3), values=False),
    "indices": K(CREATION, call=lambda f: f((2, 3))),
    "mask_indices": K(CREATION, call=lambda f: f(3, mnp.triu)),
    "broadcast_shapes": K(SHAPE, call=lambda f: f((2, 1), (3,))),
    "zeros_like": K(CREATION, "n2x3"), "ones_like": K(CREATION, "n2x3"),
    "empty_like": K(CREATION, "n2x3", values=False),
    "shape": K(SHAPE, "n2x3"), "ndim": K(SHAPE, "n2x3"), "size": K(SHAPE, "n2x3"),
    "result_type": K(SHAPE, "n2x3", "n3"), "min_scalar_type": K(SHAPE, "n2x3"),
    "common_type": K(SHAPE, "n2x3", "n3"),
    "can_cast": K(SHAPE, "n2x3", call=lambda f, x: f(x, numpy.float32)),
    "may_share_memory": K(COMPARISON, "n2x3", "n3"),
    "shares_memory": K(COMPARISON, "n2x3", "n3"),
    "array2string": K(STRINGS, "n2x3"), "array_repr": K(STRINGS, "n2x3"),
    "array_str": K(STRINGS, "n2x3"),
    "save": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "savez": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "savez_compressed": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "savetxt": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "einsum_path": K("the contraction plan (a list and a report)", "n2x3", "n3x4",
                     call=lambda f, x, y: f("ij,jk->ik", x, y)),
    "stop_gradient": K("by design: its argument as a constant", "n3", flag=False,
                       values=False),
    # readers of arrays: their result is new host data without a path back
    "frombuffer": X("n3"),
    "fromiter": X("n3", call=lambda f, x: f(x, float)),
    "nested_iters": X("n2x3", call=lambda f, x: f([x], [[0], [1]])),
    "from_dlpack": X("n3"),
})


# ------------------------------------------------------------------ linalg, fft
def _sym(a):
    return 0.5 * (a + mnp.swapaxes(a, -1, -2))


def _spd_of(b):
    return b @ mnp.swapaxes(b, -1, -2) / 3.0 + numpy.eye(b.shape[-1])


def _eig_parts(res):
    w, v = res
    return w, mnp.real(v * mnp.conj(v))       # eigenvector signs/phases do not matter


def _near_diag(a):
    return numpy.diag([1.0, 2.0, 3.5]) + 0.3 * a


LINALG = {
    "cholesky": R("n2x3x3", call=lambda f, b: f(_spd_of(b))),
    "cond": R("A3"), "cross": R("n2x3", "n3"), "det": R("A2x3x3"), "diagonal": R("n3x4"),
    # eigenvalues to first order (second order goes through eigenvectors: refused);
    # eigenvectors (arbitrary phase) refused
    "eig": [R("n3x3", call=lambda f, a: f(_near_diag(a))[0], order=1),
            X("n3x3", call=lambda f, a: _eig_parts(f(_near_diag(a))))],
    "eigh": R("n3x3", call=lambda f, a: _eig_parts(f(_sym(_near_diag(a))))),
    "eigvals": R("n3x3", call=lambda f, a: f(_near_diag(a)), order=1),
    "eigvalsh": R("n3x3", call=lambda f, a: f(_sym(a))),
    "inv": R("A3"), "pinv": R("n3x2"), "slogdet": R("A3"), "solve": R("A3", "n3x2"),
    "lstsq": R("n4x2", "n4"),
    "matrix_norm": [R("n3x4"), R("n3x4", call=lambda f, x: f(x, ord="nuc"))],
    "matrix_power": [R("n3x3", call=lambda f, a: f(a, 3)), R("A3", call=lambda f, a: f(a, -2))],
    "matrix_rank": K(INDEX, "n3x3"),
    "matrix_transpose": R("n2x3"), "matmul": R("n2x3", "n3x2"), "outer": R("n3", "n2"),
    "tensordot": R("n2x3", "n3x2", call=lambda f, x, y: f(x, y, axes=1)), "trace": R("n3x3"),
    "vecdot": R("n2x3", "n3"),
    "multi_dot": R("n2x3", "n3x4", "n4x2", call=lambda f, a, b, c: f([a, b, c])),
    "norm": [R("n3x4"), R("n3x4", call=lambda f, x: f(x, ord=2)),
             R("m5", call=lambda f, x: f(x, ord=1))],
    "vector_norm": [R("n3x4", call=lambda f, x: f(x, axis=1)),
                    R("m5", call=lambda f, x: f(x, ord=3))],
    "qr": R("n4x3"),
    "svd": R("n4x3", call=lambda f, a: (lambda u, s, vh: (s, u * u, vh * vh))(
        *f(a, full_matrices=False))),
    "svdvals": R("n4x3"),
    "tensorinv": R("A4", call=lambda f, a: f(mnp.reshape(a, (2, 2, 2, 2)), ind=2)),
    "tensorsolve": R("A4", "n2x2", call=lambda f, a, b: f(mnp.reshape(a, (2, 2, 2, 2)), b)),
}

_c = _cplx(lambda f, z: f(z))
FFT = {n: R("n4x4") for n in ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft",
                               "rfft2", "rfftn", "ihfft", "fftshift", "ifftshift"]}
FFT.update({n: R("n3x3", "n3x3", call=_c) for n in ["irfft", "irfft2", "irfftn", "hfft"]})
FFT.update({"fftfreq": R("p", call=lambda f, d: f(8, d)),
            "rfftfreq": R("p", call=lambda f, d: f(7, d=d))})


# ------------------------------------------------------------------ random
RANDOM_TABLE = {n: K(RANDOM, call=lambda f: f(3), flag=False) for n in [
    "bytes", "rand", "randn", "random", "random_sample", "ranf", "sample", "standard_cauchy",
    "standard_exponential", "standard_normal"]}
RANDOM_TABLE["random_integers"] = K(RANDOM, call=lambda f: f(1, 5, 3), flag=False)
# a traced parameter: no reparameterization gradient, refused at the call
RANDOM_TABLE.update({
    "normal": X("n3"), "gumbel": X("n3"), "laplace": X("n3"), "logistic": X("n3"),
    "lognormal": X("n3"), "exponential": X("p3"), "chisquare": X("p3"), "pareto": X("p3"),
    "poisson": X("p3"), "power": X("p3"), "rayleigh": X("p3"), "standard_gamma": X("p3"),
    "standard_t": X("p3"), "weibull": X("p3"), "gamma": X("p3"), "zipf": X("g3"),
    "geometric": X("q3"), "logseries": X("q3"), "beta": X("p3", "p3"), "f": X("p3", "p3"),
    "wald": X("p3", "p3"), "vonmises": X("n3", "p3"), "noncentral_chisquare": X("p3", "p3"),
    "noncentral_f": X("p3", "p3", "p3"), "uniform": X("n3", call=lambda f, x: f(x, x + 1.0)),
    "triangular": X("n3", call=lambda f, x: f(x - 1.0, x, x + 1.0)),
    "binomial": X("q3", call=lambda f, p: f(5, p)),
    "negative_binomial": X("q3", call=lambda f, p: f(5, p)),
    "multinomial": X("p3", call=lambda f, p: f(5, p / mnp.sum(p))),
    # integer parameters only (an integer array is never traced)
    "hypergeometric": K(RANDOM, "p3", call=lambda f, x: f(_int(x) + 5, 5, 3), flag=False,
                        values=False),
    "randint": K(RANDOM, "p3", call=lambda f, x: f(_int(x), 10), flag=False, values=False),
    "dirichlet": X("p3"), "choice": X("n3", call=lambda f, x: f(x, 2)),
    "permutation": X("n3"), "shuffle": X("n3"),
    "multivariate_normal": X("n3", call=lambda f, m: f(m, numpy.eye(3))),
})


# ------------------------------------------------------------------ scipy
SPECIAL = {}
SPECIAL.update(_unary("p", ["gammaln", "loggamma", "gamma", "rgamma", "digamma", "psi", "j0",
                            "j1", "y0", "y1", "k0", "k1", "k0e", "k1e", "entr"]))
SPECIAL.update(_unary("n", ["expit", "log_expit", "erf", "erfc", "erfcx", "ndtr", "log_ndtr",
                            "i0", "i1"]))
SPECIAL.update(_unary("m", ["i0e", "i1e"]))
SPECIAL.update({
    "logit": R("q3"), "erfinv": R("u3"), "ndtri": R("q3"),
    "erfcinv": R("u3", call=lambda f, x: f(1.0 + x)),
    "gammasgn": K(ROUNDING, "m3"),
    "polygamma": R("p3", call=lambda f, x: f(1, x)),
    "multigammaln": R("g3", call=lambda f, a: f(a + 1.0, 3)),
    "beta": R("p3", "p3"), "betaln": R("p3", "p"),
    "xlogy": R("n3", "p3"), "xlog1py": R("n3", "u3"),
    "jn": R("p3", call=lambda f, x: f(2, x)), "yn": R("p3", call=lambda f, x: f(2, x)),
    "logsumexp": [R("n3x4", call=lambda f, x: f(x, axis=1)),
                  R("n3x4", "p4", call=lambda f, x, b: f(x, axis=0, b=b, keepdims=True)),
                  R("n3x4", call=lambda f, x: f(x, b=-1.0, return_sign=True))],
    "softmax": R("n3x4", call=lambda f, x: f(x, axis=1)),
    "log_softmax": R("n3x4", call=lambda f, x: f(x, axis=0)),
})
# functions with an argument whose derivative has no closed form: refused for it
for _n, _x, _first in [("betainc", "q3", (2.0, 3.0)), ("gammainc", "p3", (2.0,)),
                       ("gammaincc", "p3", (2.0,)), ("stdtr", "n3", (4.0,)),
                       ("stdtrit", "q3", (4.0,))]:
    SPECIAL[_n] = [R(_x, call=lambda f, x, _a=_first: f(*_a, x)),
                   X("p", call=lambda f, a, _a=_first, _k=_x: f(a + 1.0, *_a[1:],
                                                                make_inputs([_k], 0)[0]))]
for _n in ["iv", "ive", "jv", "yv", "kv", "kve"]:
    SPECIAL[_n] = [R("p3", call=lambda f, z: f(1.5, z + 0.5)),
                   X("p", call=lambda f, v: f(v, numpy.array([1.0, 2.0])))]

_LOC_SCALE = ("n", "p")
STATS = {
    "norm": {**{n: R("n3", *_LOC_SCALE) for n in ["pdf", "logpdf", "cdf", "logcdf", "sf",
                                                   "logsf"]},
             "ppf": R("q3", *_LOC_SCALE), "isf": R("q3", *_LOC_SCALE),
             "entropy": R("p", call=lambda f, s: f(scale=s))},
    "t": {"pdf": R("n3", "g", *_LOC_SCALE), "logpdf": R("n3", "g", *_LOC_SCALE),
          **{n: [R("n3", *_LOC_SCALE, call=lambda f, x, m, s: f(x, 4.0, m, s)),
                 X("g", call=lambda f, df: f(HIST_A, df), name="stdtr")]
             for n in ["cdf", "logcdf", "sf", "logsf"]},
          "ppf": [R("q3", *_LOC_SCALE, call=lambda f, q, m, s: f(q, 4.0, m, s)),
                  X("g", call=lambda f, df: f(HIST_A, df), name="stdtrit")]},
    "beta": {"pdf": R("q3", "p", "p"), "logpdf": R("q3", "p", "p"),
             **{n: [R("q3", call=lambda f, x: f(x, 2.0, 3.0)),
                    X("p", call=lambda f, a: f(HIST_A, a, 3.0), name="betainc")]
                for n in ["cdf", "logcdf", "sf", "logsf"]}},
    "gamma": {"pdf": R("p3", "p", "n", "p", call=lambda f, x, a, m, s: f(x + 3.0, a, m, s)),
              "logpdf": R("p3", "p", "n", "p",
                          call=lambda f, x, a, m, s: f(x + 3.0, a, m, s)),
              **{n: [R("p3", call=lambda f, x: f(x, 2.0)),
                     X("p", call=lambda f, a: f(HIST_A, a), name="gammainc")]
                 for n in ["cdf", "logcdf", "sf", "logsf"]}},
    "poisson": {n: R("p", call=lambda f, mu: f(numpy.array([0, 1, 3]), mu + 0.5))
                for n in ["pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"]},
    "multivariate_normal": {
        "logpdf": R("n2x3", "n3", "n3x3", call=lambda f, x, m, b: f(x, m, _spd_of(b))),
        "pdf": R("n2x3", "n3", "n3x3", call=lambda f, x, m, b: f(x, m, _spd_of(b))),
        "entropy": R("n3x3", call=lambda f, b: f(cov=_spd_of(b)))},
    "dirichlet": {
        "logpdf": R("n3", "p3", call=lambda f, z, a: f(mnp.exp(z) / mnp.sum(mnp.exp(z)), a)),
        "pdf": R("n3", "p3", call=lambda f, z, a: f(mnp.exp(z) / mnp.sum(mnp.exp(z)), a)),
        "entropy": R("p3")},
}


def _cho(b):
    return minpy.scipy.linalg.cho_factor(_spd_of(b))


SCIPY_LINALG = {
    "cholesky": R("n3x3", call=lambda f, b: f(_spd_of(b), lower=True)),
    "cho_factor": R("n3x3", call=lambda f, b: mnp.tril(f(_spd_of(b), lower=True)[0])),
    "cho_solve": R("n3x3", "n3x2", call=lambda f, b, y: f(_cho(b), y)),
    "solve_triangular": R("A3", "n3x2", call=lambda f, a, b: f(mnp.tril(a), b, lower=True)),
    "solve": R("A3", "n3"), "inv": R("A3"), "det": R("A3"),
    "eigh": [R("n3x3", call=lambda f, a: _eig_parts(f(_sym(_near_diag(a))))),
             R("n3x3", call=lambda f, a: f(_sym(a), eigvals_only=True))],
    "sqrtm": R("n3x3", call=lambda f, b: f(_spd_of(b))),
    "expm": R("n3x3", call=lambda f, a: f(0.5 * a)),
    "solve_sylvester": R("A3", "A2", "n3x2"),
}
SIGNAL = {n: [R("n5", "n3"), R("n4x3", "n2x2", call=lambda f, x, y: f(x, y, mode="same"))]
          for n in ["convolve", "correlate"]}
INTEGRATE = {"odeint": R("n2", "p", order=1, call=lambda f, y0, k: f(
    lambda y, t, k: -k * y + mnp.sin(t), y0, numpy.array([0.0, 0.5, 1.0]), args=(k,),
    rtol=1e-12, atol=1e-12))}


# ------------------------------------------------------------------ not functions of arrays
_SCALAR_TYPES = (
    "bool", "bool_", "byte", "bytes_", "cdouble", "character", "clongdouble", "complex128",
    "complex256", "complex64", "complexfloating", "csingle", "datetime64", "double",
    "flexible", "float128", "float16", "float32", "float64", "floating", "generic", "half",
    "inexact", "int16", "int32", "int64", "int8", "int_", "intc", "integer", "intp", "long",
    "longdouble", "longlong", "number", "object_", "short", "signedinteger", "single", "str_",
    "timedelta64", "ubyte", "uint", "uint16", "uint32", "uint64", "uint8", "uintc", "uintp",
    "ulong", "ulonglong", "unsignedinteger", "ushort", "void", "record")
NOT_ARRAY_FUNCTIONS = {
    "minpy": {
        "NumPy's scalar types and dtypes (a traced array cast to one raises: the value "
        "would leave the tape)": _SCALAR_TYPES + ("dtype", "finfo", "iinfo"),
        "classes: NumPy's iterators, array subclasses and helpers (given a traced array "
        "they raise at numpy.asarray), minpy's Array, Context, policy, customop and ufunc "
        "types, the jit's error": (
            "Array", "Context", "JitTraceError", "broadcast", "busdaycalendar", "errstate",
            "flatiter", "matrix", "memmap", "ndarray", "ndenumerate", "ndindex", "nditer",
            "poly1d", "policy", "recarray", "ufunc", "vectorize", "customop"),
        "constants and tables": ("FRONTS", "sctypeDict", "typecodes", "False_", "True_",
                                 "little_endian", "ScalarType", "e", "euler_gamma", "inf",
                                 "nan", "pi", "newaxis"),
        "submodules (linalg, fft, random and scipy are audited as namespaces of their own; "
        "the rest are not NumPy functions)": (
            "array_methods", "callback", "compat", "core", "dispatch", "dtypes", "engine",
            "exceptions", "fft", "fronts", "generated", "init", "initializer", "interop",
            "kvstore", "linalg", "metric", "misc", "module", "namespace_info", "nd", "nn",
            "numpy", "random", "sym", "symbol", "testing", "scipy"),
        "index expressions (build tuples of slices, no arrays)": ("index_exp", "s_"),
        "the autograd operators and jit (they take functions)": (
            "grad", "grad_and_loss", "value_and_grad", "jacobian", "hessian",
            "hessian_vector_product", "elementwise_grad", "make_vjp", "make_jvp",
            "grad_named", "holomorphic_grad", "defvjp", "defvjp_argnums", "jit"),
        "devices, policies and async settings": (
            "cpu", "gpu", "current_context", "num_gpus", "get_policy", "set_policy",
            "get_global_policy", "set_global_policy", "wrap_policy", "async_mode", "is_async",
            "set_async", "waitall"),
        "printing and floating-point error settings": (
            "get_printoptions", "set_printoptions", "printoptions", "getbufsize",
            "setbufsize", "geterr", "seterr", "geterrcall", "seterrcall"),
        "dtype and number utilities (scalars and dtypes in, no arrays)": (
            "isdtype", "issubdtype", "promote_types", "mintypecode", "typename", "base_repr",
            "binary_repr", "format_float_positional", "format_float_scientific"),
        "datetime and business-day functions (datetime64 data, never float)": (
            "busday_count", "busday_offset", "datetime_as_string", "is_busday",
            "datetime_data", "isnat"),
        "readers of files and strings (a traced array is not a file or a text)": (
            "load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "fromstring"),
        "introspection": ("info", "show_config", "show_runtime", "get_include"),
    },
    "linalg": {"an exception class": ("LinAlgError",)},
    "random": {
        "generator state, seeding and generator classes": (
            "seed", "get_state", "set_state", "get_bit_generator", "set_bit_generator",
            "default_rng", "BitGenerator", "Generator", "RandomState", "MT19937", "PCG64",
            "PCG64DXSM", "Philox", "SFC64", "SeedSequence", "bit_generator"),
        "array converters of the random module's plumbing": ("wrap", "unwrap_cpu"),
    },
    "scipy": {"submodules, audited as namespaces of their own":
              ("special", "stats", "linalg", "signal", "integrate", "scipy")},
    "scipy.stats": {"distributions, audited as namespaces of their own": (
        "norm", "t", "beta", "gamma", "poisson", "multivariate_normal", "dirichlet")},
    "scipy.linalg": {"an exception class": ("LinAlgError",)},
}

_SUBMODULES_LISTED = {n for names in NOT_ARRAY_FUNCTIONS["minpy"].values() for n in names}

NAMESPACES = {
    "minpy": (minpy, MINPY), "linalg": (minpy.linalg, LINALG), "fft": (minpy.fft, FFT),
    "random": (minpy.random, RANDOM_TABLE), "scipy": (minpy.scipy, {}),
    "scipy.special": (minpy.scipy.special, SPECIAL),
    "scipy.stats": (minpy.scipy.stats, {}),
    "scipy.linalg": (minpy.scipy.linalg, SCIPY_LINALG),
    "scipy.signal": (minpy.scipy.signal, SIGNAL),
    "scipy.integrate": (minpy.scipy.integrate, INTEGRATE),
}
for _d, _table in STATS.items():
    NAMESPACES[f"scipy.stats.{_d}"] = (getattr(minpy.scipy.stats, _d), _table)


def public_names(module):
    """The public names of a namespace: ``__all__`` where it has one, else ``dir()``
    less the submodules that are not callable (``minpy.launch`` appears there once
    anything imported it: not a NumPy function)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_") and not (
            isinstance(getattr(module, n), types.ModuleType) and not callable(
                getattr(module, n)) and n not in _SUBMODULES_LISTED)]
    return sorted(set(names))


def _variants(entry):
    return list(entry) if isinstance(entry, (list, tuple)) else [entry]


CASES = [pytest.param(f"{ns}:{name}", i, spec, id=f"{ns}:{name}#{i}", marks=[
    pytest.mark.xfail(strict=True, reason=spec.known_gap)] if getattr(spec, "known_gap", None)
    else []) for ns, (mod, table) in NAMESPACES.items()
    for name, entry in sorted(table.items()) for i, spec in enumerate(_variants(entry))]


def _resolve(ns, name):
    return getattr(NAMESPACES[ns][0], name)


# ------------------------------------------------------------------ the tests
def test_every_public_name_is_decided():
    """Each public name has a decision (a table entry or a not-a-function reason), and
    each table entry names a public callable (no stale entries)."""
    missing, stale, twice = [], [], []
    for ns, (mod, table) in NAMESPACES.items():
        not_fn = {n for names in NOT_ARRAY_FUNCTIONS.get(ns, {}).values() for n in names}
        public = public_names(mod)
        for n in public:
            if n not in table and n not in not_fn:
                missing.append(f"{ns}:{n}")
            if n in table and n in not_fn:
                twice.append(f"{ns}:{n}")
        stale += [f"{ns}:{n}" for n in table if n not in public or not (
            callable(getattr(mod, n)) or hasattr(getattr(mod, n), "__getitem__"))]
    assert missing == [], f"public names without a decision in the audit: {missing}"
    assert stale == [], f"audit entries that are not public callables: {stale}"
    assert twice == [], f"names both audited and listed as not functions of arrays: {twice}"


def test_not_array_functions_are_not_primitives():
    """Nothing listed as 'not a function of arrays' is a minpy primitive."""
    prims = []
    for ns, groups in NOT_ARRAY_FUNCTIONS.items():
        mod = NAMESPACES[ns][0]
        for names in groups.values():
            prims += [f"{ns}:{n}" for n in names if hasattr(getattr(mod, n, None), "_prim")
                      and n != "isnat" and not isinstance(getattr(mod, n), types.ModuleType)
                      and n not in ("load", "loadtxt", "genfromtxt", "fromfile", "fromregex",
                                    "fromstring")]
    assert prims == []


@pytest.mark.parametrize("case,variant,spec", CASES)
def test_audit(case, variant, spec):
    ns, _, name = case.rpartition(":")
    fn = _resolve(ns, name)
    seed = zlib.crc32(f"{case}#{variant}".encode())
    {"rule": check_rule, "constant": check_constant, "refusal": check_refusal}[spec.outcome](
        case, fn, spec, seed)


def test_one_outcome_per_function():
    """A function is either constant (every variant K) or not: a nondiff-flagged
    primitive has no rule variant, and one with a rule variant is not flagged."""
    wrong = []
    for ns, (mod, table) in NAMESPACES.items():
        for name, entry in table.items():
            kinds = {type(s).__name__ for s in _variants(entry)}
            prim = getattr(getattr(mod, name), "_prim", None)
            if prim is None:
                continue
            if prim.nondiff and kinds != {"K"}:
                wrong.append(f"{ns}:{name} is flagged nondiff but audited {sorted(kinds)}")
            if "R" in kinds and not prim.vjp and prim.mutates is None and \
                    getattr(mod, name).__module__ != "minpy.numpy.fronts":
                wrong.append(f"{ns}:{name} is audited with a rule but has none")
    assert wrong == []


def test_audit_counts():
    """The audit's tallies (printed with -s; a sanity floor on coverage)."""
    counts = {"rule": 0, "constant": 0, "refusal": 0}
    for ns, (mod, table) in NAMESPACES.items():
        for name, entry in table.items():
            kinds = [s.outcome for s in _variants(entry)]
            counts["rule" if "rule" in kinds else kinds[0]] += 1
    counts["not a function of arrays"] = sum(len(v) for g in NOT_ARRAY_FUNCTIONS.values()
                                             for v in g.values())
    print(counts)
    assert counts["rule"] > 300 and counts["constant"] > 100


# ------------------------------------------------------------------ the fixed defects, exactly
def test_unique_gradient_is_shared_by_equal_elements():
    x = mnp.array([2.0, 1.0, 2.0, 3.0, 2.0])
    w = numpy.array([10.0, 20.0, 30.0])               # unique values: 1, 2, 3
    g = minpy.grad(lambda x: mnp.sum(w * mnp.unique(x)))(x)
    numpy.testing.assert_allclose(g.asnumpy(), [20 / 3, 10.0, 20 / 3, 30.0, 20 / 3])
    assert float(minpy.grad(lambda x: mnp.sum(mnp.unique(x)))(mnp.array([1.0, 2.0])).sum()) \
        == 2.0
    rows = mnp.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]])
    g = minpy.grad(lambda r: mnp.sum(numpy.array([[1.0, 2.0], [3.0, 4.0]]) *
                                     mnp.unique(r, axis=0)))(rows)
    numpy.testing.assert_array_equal(g.asnumpy(), [[1.5, 2.0], [1.0, 2.0], [1.5, 2.0]])
    # the integer outputs are as NumPy's
    seen = []
    minpy.grad(lambda x: seen.append(mnp.unique_all(x)) or mnp.sum(seen[0].values))(x)
    want = numpy.unique_all(x.asnumpy())
    for got, ref in zip(seen[0], want):
        numpy.testing.assert_array_equal(got.asnumpy(), ref)


def test_histogram_weights_and_edges_exactly():
    a = numpy.array([0.1, 0.5, 0.9, 0.3, 0.2])
    w = mnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    g = minpy.grad(lambda w: mnp.sum(numpy.array([1.0, 10.0, 100.0]) *
                                     mnp.histogram(a, bins=3, weights=w)[0]))(w)
    numpy.testing.assert_array_equal(g.asnumpy(), [1.0, 10.0, 100.0, 1.0, 1.0])
    # edges = linspace(min, max, 4): d(sum of edges) = 2 at the min and at the max
    g = minpy.grad(lambda a: mnp.sum(mnp.histogram(a, bins=3)[1]))(mnp.array(a))
    numpy.testing.assert_allclose(g.asnumpy(), [2.0, 0.0, 2.0, 0.0, 0.0])
    # counts of unweighted data stay integers, as NumPy's
    seen = []
    minpy.grad(lambda a: seen.append(mnp.histogram(a, bins=3)) or mnp.sum(seen[0][1]))(
        mnp.array(a))
    numpy.testing.assert_array_equal(seen[0][0].asnumpy(), numpy.histogram(a, bins=3)[0])


def test_from_dlpack_of_a_traced_array_refuses():
    with pytest.raises(TypeError, match="from_dlpack"):
        minpy.grad(lambda x: mnp.sum(minpy.from_dlpack(x)))(mnp.array([1.0, 2.0]))
    numpy.testing.assert_array_equal(minpy.from_dlpack(mnp.array([1.0, 2.0])).asnumpy(),
                                     [1.0, 2.0])
