"""Corner cases of the gradient rules (minpy/numpy/vjp_*.py) that used to give silent
wrong answers or crash inside a rule, and the public names in argument errors.

- integer and bool constant operands: a rule computes in the gradient's float dtype
  (``x * x`` of an int32 constant overflowed, ``log`` of an int8 one ran in float16);
- NaN inputs of max/min & co.: the gradient goes to the element NumPy's forward
  selects (the NaN for max/min/maximum/minimum, the number for fmax/fmin/nanmax/nanmin);
- var/std/mean/average over an empty axis or with ddof >= n: no exception from the rule;
- abs & co. of traced bool/int values: no crash inside the rule;
- TypeErrors for a bogus keyword or a wrong number of arguments name the public
  function, with NumPy's own message.

Every gradient is checked against central finite differences in float64, to second
order where the function is smooth.
"""
import re
import warnings

import numpy
import pytest

import minpy
import minpy.numpy as mnp

from _host import host
from _host import host as _host

grad = minpy.grad


# ---------------------------------------------------------------- finite differences
def _value(L, y):
    v = L(mnp.array(y))
    return float(numpy.real(_host(v) if hasattr(v, "asnumpy") else v))


def fd_grad(L, y):
    """Central differences of scalar ``L`` at float64 ``y`` (a step relative to each
    entry), and their round-off bound per entry."""
    g, noise = numpy.zeros_like(y), numpy.zeros_like(y)
    for i in numpy.ndindex(y.shape):
        h = 1e-6 * max(1.0, abs(y[i]))
        yp, ym = y.copy(), y.copy()
        yp[i] += h
        ym[i] -= h
        lp, lm = _value(L, yp), _value(L, ym)
        g[i] = (lp - lm) / (2 * h)
        noise[i] = 1e-13 * max(1.0, abs(lp), abs(lm)) / h
    return g, noise


def check_fd(L, y, order=2, rtol=2e-6, seed=0):
    """minpy.grad(L) (and, for ``order`` 2, grad of <grad L, w>) against finite differences."""
    y = numpy.asarray(y, dtype=numpy.float64)
    g = grad(L)(mnp.array(y))
    g = _host(g) if hasattr(g, "asnumpy") else numpy.asarray(g)
    fd, noise = fd_grad(L, y)
    assert g.shape == y.shape
    err = numpy.abs(g - fd)
    bound = rtol * numpy.abs(fd) + rtol * float(numpy.abs(fd).max(initial=0.0)) + noise
    assert (err <= bound).all(), (f"grad != finite differences:\n grad {g.ravel()}\n"
                                  f" fd   {fd.ravel()}")
    if order >= 2:
        w = mnp.array(numpy.random.default_rng(seed).standard_normal(y.shape))

        def H(v):
            return mnp.sum(grad(L)(v) * w)
        check_fd(H, y, order - 1, rtol=max(rtol, 1e-5), seed=seed + 1)


def loss_of(f, c, shape):
    """``y -> sum(u * f(y, c))`` with a fixed random cotangent ``u`` of the output."""
    def L(y):
        out = f(y, c)
        u = numpy.random.default_rng(7).standard_normal(numpy.shape(out))
        return mnp.sum(out * mnp.array(u))
    return L


# ---------------------------------------------------------------- 1. integer/bool constants
# values that overflow their dtype when squared or multiplied
CONSTANTS = {
    "int8": numpy.array([100, -120, 90], numpy.int8),
    "int16": numpy.array([300, -250, 200], numpy.int16),
    "int32": numpy.array([50000, -60000, 47000], numpy.int32),
    "uint8": numpy.array([200, 150, 250], numpy.uint8),
    "bool": numpy.array([True, False, True]),
}
# exponents (power(y, c), ldexp): extreme values of the dtype where they stay finite
EXPONENTS = {
    "int8": numpy.array([-128, 3, 127], numpy.int8),
    "int16": numpy.array([-200, 3, 250], numpy.int16),
    "int32": numpy.array([-300, 2, 400], numpy.int32),
    "uint8": numpy.array([0, 3, 255], numpy.uint8),
    "bool": numpy.array([True, False, True]),
}
# positive bases (power(c, y))
BASES = {
    "int8": numpy.array([100, 3, 127], numpy.int8),
    "int16": numpy.array([300, 7, 30000], numpy.int16),
    "int32": numpy.array([50000, 2, 10 ** 9], numpy.int32),
    "uint8": numpy.array([200, 3, 255], numpy.uint8),
    "bool": numpy.array([True, False, True]),
}
# 2x2 matrices whose products overflow the dtype (bool: invertible)
MATRICES = {
    "int8": numpy.array([[100, 20], [-30, 120]], numpy.int8),
    "int16": numpy.array([[300, 20], [-30, 250]], numpy.int16),
    "int32": numpy.array([[50000, 20], [-30, 60000]], numpy.int32),
    "uint8": numpy.array([[200, 20], [30, 250]], numpy.uint8),
    "bool": numpy.array([[True, False], [True, True]]),
}


def _scale(c):
    return max(1.0, float(numpy.abs(numpy.asarray(c, numpy.float64)).max()))


def _y_scaled(c, shape, seed=1, lo=0.3, hi=0.9, signed=True):
    """Float64 values of the constant's magnitude (no ties with it, no zeros)."""
    rng = numpy.random.default_rng(seed)
    y = rng.uniform(lo, hi, shape) * _scale(c)
    if signed:
        y = y * rng.choice([-1.0, 1.0], shape)
    return y


def _inside(xp, shape, seed=3):
    """Float64 points strictly inside [xp[0], xp[-1]], away from the knots ``xp``."""
    lo, hi = float(xp[0]), float(xp[-1])
    y = numpy.random.default_rng(seed).uniform(lo, hi, shape)
    knots = numpy.asarray(xp, numpy.float64)
    near = numpy.abs(y[..., None] - knots).min(-1) < 1e-3 * (hi - lo)
    return numpy.where(near, y + 1e-2 * (hi - lo), y)


def _distinct(c):
    """``c`` (a minpy array) or, for bool, its two distinct values."""
    return mnp.array(numpy.unique(_host(c))) if c.dtype == bool else c


def _nonzero(c):
    """``c`` with zeros replaced by ones (a divisor)."""
    return numpy.where(c == 0, numpy.ones((), c.dtype), c)


def _bounds(c):
    """(lo, hi) integer bounds of c's dtype with lo < hi, inside +-|c|."""
    c = host(c)
    m = numpy.abs(c.astype(numpy.int64)).max()
    if c.dtype == bool:
        return numpy.array(False), numpy.array(True)
    lo = numpy.array(-m // 2 if c.dtype.kind == "i" else m // 4, c.dtype)
    return lo, numpy.array(m // 2 if c.dtype.kind == "i" else m // 2 + m // 4, c.dtype)


_A = mnp.array


# name -> (f(y, c_as_minpy), y from c, c table, smooth (order 2))
def _cases():
    ew = {   # elementwise, the constant on either side; y shaped (2, 3) against c (3,)
        "arctan2": lambda y, c: mnp.arctan2(y, c),
        "arctan2_r": lambda y, c: mnp.arctan2(c, y),
        "arctan2_kw": lambda y, c: mnp.arctan2(c, y, dtype=numpy.float64),
        "hypot": lambda y, c: mnp.hypot(y, c),
        "hypot_r": lambda y, c: mnp.hypot(c, y),
        "multiply": lambda y, c: mnp.multiply(y, c),
        "multiply_r": lambda y, c: c * y,
        "divide_r": lambda y, c: mnp.divide(c, y),
        "true_divide_r": lambda y, c: mnp.true_divide(c, y, dtype=numpy.float64),
        "logaddexp": lambda y, c: mnp.logaddexp(y, c),
        "logaddexp_r": lambda y, c: mnp.logaddexp(c, y),
        "logaddexp2": lambda y, c: mnp.logaddexp2(y, c),
        "copysign": lambda y, c: mnp.copysign(y, c - 0.5 if c.dtype == bool else c),
        "maximum": lambda y, c: mnp.maximum(y, c),
        "minimum_r": lambda y, c: mnp.minimum(c, y),
        "fmax": lambda y, c: mnp.fmax(y, c),
        "fmin_r": lambda y, c: mnp.fmin(c, y),
        "fmod_r": lambda y, c: mnp.fmod(c, y),
        "remainder_r": lambda y, c: mnp.remainder(c, y),
        "where": lambda y, c: mnp.where(mnp.array([True, False, True]), y, c),
        "subtract_r": lambda y, c: c - y,
        "nextafter": lambda y, c: mnp.nextafter(y, c),
        "heaviside_r": lambda y, c: mnp.heaviside(c * False, y),
    }
    out = {k: (f, lambda c: _y_scaled(c, (2, 3)), CONSTANTS, True) for k, f in ew.items()}
    out.update({
        "divide": (lambda y, c: mnp.divide(y, c), lambda c: _y_scaled(c, (2, 3)),
                   {k: _nonzero(v) for k, v in CONSTANTS.items()}, True),
        "fmod": (lambda y, c: mnp.fmod(y, c), lambda c: _y_scaled(c, (2, 3), lo=0.1, hi=0.4),
                 {k: _nonzero(v) for k, v in CONSTANTS.items()}, True),
        "power": (lambda y, c: mnp.power(y, c), lambda c: _y_scaled(1, (2, 3), lo=0.93,
                                                                    hi=1.07, signed=False),
                  EXPONENTS, True),
        "float_power": (lambda y, c: mnp.float_power(y, c),
                        lambda c: _y_scaled(1, (2, 3), lo=0.93, hi=1.07, signed=False),
                        EXPONENTS, True),
        "power_scalar": (lambda y, c: mnp.power(y, c[0]),
                         lambda c: _y_scaled(1, (2, 3), lo=0.93, hi=1.07, signed=False),
                         EXPONENTS, True),
        "power_r": (lambda y, c: mnp.power(c, y), lambda c: _y_scaled(1, (2, 3), lo=0.5,
                                                                      hi=1.2, signed=False),
                    BASES, True),
        "float_power_r": (lambda y, c: mnp.float_power(c, y),
                          lambda c: _y_scaled(1, (2, 3), lo=0.5, hi=1.2, signed=False),
                          BASES, True),
        "ldexp": (lambda y, c: mnp.ldexp(y, c), lambda c: _y_scaled(1, (2, 3)), EXPONENTS,
                  True),
        "arctan2_scalar": (lambda y, c: mnp.arctan2(y, c[0]), lambda c: _y_scaled(c, (2, 3)),
                           CONSTANTS, True),
        "clip": (lambda y, c: mnp.clip(y, *_bounds(c)), lambda c: _y_scaled(c, (2, 3)),
                 CONSTANTS, True),
        "clip_kw": (lambda y, c: mnp.clip(y, a_min=_bounds(c)[0], a_max=_A(_bounds(c)[1])),
                    lambda c: _y_scaled(c, (2, 3)), CONSTANTS, True),
        # products with an integer matrix / vector
        "matmul": (lambda y, c: mnp.matmul(y, c), lambda c: _y_scaled(c, (3, 2)), MATRICES,
                   True),
        "matmul_r": (lambda y, c: c @ y, lambda c: _y_scaled(c, (2,)), MATRICES, True),
        "dot": (lambda y, c: mnp.dot(y, c), lambda c: _y_scaled(c, (2, 2)), MATRICES, True),
        "dot_r": (lambda y, c: mnp.dot(c, y), lambda c: _y_scaled(c, (2,)), MATRICES, True),
        "tensordot": (lambda y, c: mnp.tensordot(y, c, axes=1), lambda c: _y_scaled(c, (3, 2)),
                      MATRICES, True),
        "einsum": (lambda y, c: mnp.einsum("ij,jk->ik", y, c, optimize=True),
                   lambda c: _y_scaled(c, (2, 2)), MATRICES, True),
        "inner": (lambda y, c: mnp.inner(y, c), lambda c: _y_scaled(c, (2,)), MATRICES, True),
        "outer": (lambda y, c: mnp.outer(y, c), lambda c: _y_scaled(c, (2,)), CONSTANTS, True),
        "kron": (lambda y, c: mnp.kron(y, c), lambda c: _y_scaled(c, (2, 2)), MATRICES, True),
        "vdot": (lambda y, c: mnp.vdot(c, y), lambda c: _y_scaled(c, (3,)), CONSTANTS, True),
        "cross": (lambda y, c: mnp.cross(y, c), lambda c: _y_scaled(c, (2, 3)), CONSTANTS, True),
        "convolve": (lambda y, c: mnp.convolve(y, c), lambda c: _y_scaled(c, (4,)), CONSTANTS,
                     True),
        "correlate_kw": (lambda y, c: mnp.correlate(y, c, mode="same"),
                         lambda c: _y_scaled(c, (4,)), CONSTANTS, True),
        "polyval_x": (lambda y, c: mnp.polyval(y, c), lambda c: _y_scaled(1, (3,)), CONSTANTS,
                      True),
        "polyval_p": (lambda y, c: mnp.polyval(c, y), lambda c: _y_scaled(1, (3,)), CONSTANTS,
                      True),
        "interp_fp": (lambda y, c: mnp.interp(mnp.array([0.5, 1.25]), mnp.arange(3), c * 1 + y),
                      lambda c: _y_scaled(c, (3,)), CONSTANTS, True),
        "interp_xp": (lambda y, c: mnp.interp(y, c, mnp.array([1.0, -2.0, 0.5])[:c.size]),
                      lambda c: _inside(c, (4,)),
                      {k: numpy.unique(v) for k, v in CONSTANTS.items()}, True),
        "einsum3": (lambda y, c: mnp.einsum("i,ij,jk->k", y, c, c, optimize=True),
                    lambda c: _y_scaled(1, (2,)), MATRICES, True),
        "einsum3_mid": (lambda y, c: mnp.einsum("ij,jk,kl->il", c, y, c),
                        lambda c: _y_scaled(1, (2, 2)), MATRICES, True),
        "arctan2_outer": (lambda y, c: mnp.arctan2.outer(c, y), lambda c: _y_scaled(c, (2,)),
                          CONSTANTS, True),
        "hypot_outer": (lambda y, c: mnp.hypot.outer(y, c), lambda c: _y_scaled(c, (2,)),
                        CONSTANTS, True),
        "polymul": (lambda y, c: mnp.polymul(y, c), lambda c: _y_scaled(c, (3,)), CONSTANTS,
                    True),
        "polyadd": (lambda y, c: mnp.polyadd(c, y), lambda c: _y_scaled(c, (2,)), CONSTANTS,
                    True),
        "polydiv_u": (lambda y, c: mnp.polydiv(y, mnp.array([1.0]) * 0 + _nonzero(c))[0],
                      lambda c: _y_scaled(c, (4,)), CONSTANTS, True),
        "polydiv_v": (lambda y, c: mnp.polydiv(c, y)[0], lambda c: _y_scaled(1, (2,), lo=0.5,
                                                                            hi=1.5),
                      {k: _nonzero(v) for k, v in CONSTANTS.items()}, True),
        "polyfit_y": (lambda y, c: mnp.polyfit(_distinct(c), y[:_distinct(c).size], 1),
                      lambda c: _y_scaled(c, (3,)), CONSTANTS, True),
        "polyfit_w": (lambda y, c: mnp.polyfit(mnp.array([0.5, 1.0, 2.0]), y, 1, w=c + 1),
                      lambda c: _y_scaled(c, (3,)), CONSTANTS, True),
        "cov": (lambda y, c: mnp.cov(y, c), lambda c: _y_scaled(c, (3,)), CONSTANTS, True),
        "cov_fweights": (lambda y, c: mnp.cov(y, fweights=c.astype(numpy.int64) % 7 + 1),
                         lambda c: _y_scaled(c, (2, 3)), CONSTANTS, True),
        "corrcoef": (lambda y, c: mnp.corrcoef(y, c), lambda c: _y_scaled(c, (3,)),
                     {k: v for k, v in CONSTANTS.items()}, True),
        "linspace": (lambda y, c: mnp.linspace(y, c, 4), lambda c: _y_scaled(c, (3,)), CONSTANTS,
                     True),
        "geomspace": (lambda y, c: mnp.geomspace(y, c + 1, 4),
                      lambda c: _y_scaled(c, (3,), signed=False),
                      {k: numpy.abs(v) if v.dtype != bool else v for k, v in CONSTANTS.items()},
                      True),
        "logspace_base": (lambda y, c: mnp.logspace(y, 1.5, 3, base=c[0] + 1),
                          lambda c: _y_scaled(1, (2,), signed=False), BASES, True),
        "multiply_reduce_initial": (
            lambda y, c: mnp.multiply.reduce(y, axis=1, initial=c[0] + 1),
            lambda c: _y_scaled(1, (2, 3)), CONSTANTS, True),
        "maximum_reduce_initial": (
            lambda y, c: mnp.maximum.reduce(y, axis=1, initial=c.min()),
            lambda c: _y_scaled(c, (2, 3)), CONSTANTS, True),
        "solve": (lambda y, c: mnp.linalg.solve(c, y), lambda c: _y_scaled(c, (2,)), MATRICES,
                  True),
        "solve_b": (lambda y, c: mnp.linalg.solve(y, c[:, 0]),
                    lambda c: numpy.array([[3.0, 1.0], [0.5, 2.0]]) * _scale(c) / 4, MATRICES,
                    True),
        "lstsq": (lambda y, c: mnp.linalg.lstsq(c, y)[0], lambda c: _y_scaled(c, (2,)),
                  MATRICES, True),
        "multi_dot": (lambda y, c: mnp.linalg.multi_dot([y, c, c]), lambda c: _y_scaled(1, (2,)),
                      MATRICES, True),
        "multi_dot_mid": (lambda y, c: mnp.linalg.multi_dot([c, y, c]),
                          lambda c: _y_scaled(1, (2, 2)), MATRICES, True),
        "average_w": (lambda y, c: mnp.average(y, axis=1, weights=c + 1),
                      lambda c: _y_scaled(c, (2, 3)), CONSTANTS, True),
        "prod_initial": (lambda y, c: mnp.prod(y, axis=1, initial=c[0] + 1),
                         lambda c: _y_scaled(1, (2, 3)), CONSTANTS, True),
        "cumprod": (lambda y, c: mnp.cumprod(y * c, axis=-1), lambda c: _y_scaled(1, (2, 3)),
                    CONSTANTS, True),
        "trapezoid_x": (lambda y, c: mnp.trapezoid(y, x=c if c.dtype != bool else c * 1),
                        lambda c: _y_scaled(1, (2, 3)), CONSTANTS, True),
    })
    return out


CASES = _cases()


@pytest.mark.parametrize("dtype", list(CONSTANTS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_integer_constant_operand(name, dtype):
    f, make_y, table, smooth = CASES[name]
    cnp = table[dtype]
    c = mnp.array(cnp)
    y = make_y(cnp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_fd(loss_of(f, c, y.shape), y, order=2 if smooth else 1)


def test_integer_constant_numpy_operands():
    """Host NumPy and NumPy-scalar constants take the same care as minpy arrays."""
    x = numpy.array([50000, -60000], numpy.int32)
    for c in (x, x[0], numpy.int16(300)):
        check_fd(lambda y: mnp.sum(mnp.arctan2(y, c)), numpy.array([1.0e4, -2.0e4]))
        check_fd(lambda y: mnp.sum(mnp.arctan2(c, y)), numpy.array([1.0e4, -2.0e4]))


def test_issue_example_arctan2_int32():
    x = minpy.array(numpy.array([50000], numpy.int32))
    g = grad(lambda y: minpy.sum(minpy.arctan2(y, x)))(minpy.array([1.0]))
    numpy.testing.assert_allclose(_host(g), [50000 / (1 + 50000.0 ** 2)], rtol=1e-12)


# ---------------------------------------------------------------- 4. traced bool/int values
def _unary_ufuncs():
    from minpy.numpy.vjp_math import NONDIFF_UFUNCS
    out = []
    for n in sorted(dir(numpy)):
        u = getattr(numpy, n)
        if isinstance(u, numpy.ufunc) and u.nin == 1 and u.__name__ == n \
                and n not in NONDIFF_UFUNCS and n != "isnat":
            out.append(n)
    return out


UNARY_FUNCS = {n: (lambda n: lambda v: getattr(mnp, n)(v))(n) for n in _unary_ufuncs()}
UNARY_FUNCS.update({
    "sum": lambda v: mnp.sum(v, axis=-1), "prod": lambda v: mnp.prod(v, axis=-1),
    "mean": lambda v: mnp.mean(v), "var": lambda v: mnp.var(v, axis=0),
    "std": lambda v: mnp.std(v, axis=-1), "max": lambda v: mnp.max(v, axis=-1),
    "min": lambda v: mnp.min(v), "ptp": lambda v: mnp.ptp(v, axis=-1),
    "cumsum": lambda v: mnp.cumsum(v, axis=-1), "cumprod": lambda v: mnp.cumprod(v),
    "median": lambda v: mnp.median(v, axis=-1), "average": lambda v: mnp.average(v, axis=0),
    "nanmax": lambda v: mnp.nanmax(v, axis=-1), "nansum": lambda v: mnp.nansum(v),
    "norm": lambda v: mnp.linalg.norm(v), "sort": lambda v: mnp.sort(v, axis=-1),
    "diff": lambda v: mnp.diff(v), "clip": lambda v: mnp.clip(v, 1, 2),
    "maximum": lambda v: mnp.maximum(v, 1), "arctan2": lambda v: mnp.arctan2(v, 2.0),
    "power": lambda v: mnp.power(v, 2), "matmul": lambda v: v @ mnp.ones((3, 2)),
    "dot": lambda v: mnp.dot(mnp.ones((2, 2)), v), "where": lambda v: mnp.where(v > 1, v, 0),
    "trace": lambda v: mnp.trace(v), "outer": lambda v: mnp.outer(v, v),
})


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint8"])
@pytest.mark.parametrize("name", sorted(UNARY_FUNCS))
def test_traced_integer_values_reach_rules(name, dtype):
    """A traced bool/int value (``x.astype(int)``: piecewise constant, so no gradient
    through it) reaching a rule: no crash inside the rule, and the gradient of
    ``sum(F(x.astype(dtype)) * x)`` is ``F(x.astype(dtype))``, as finite differences say."""
    F = UNARY_FUNCS[name]
    x0 = numpy.random.default_rng(5).uniform(0.6, 2.9, (2, 3)) * [[1, -1, 1], [-1, 1, 1]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            Fh = F(mnp.array(x0).astype(dtype))
        except (TypeError, ValueError, numpy.exceptions.AxisError):
            pytest.skip(f"NumPy has no {name} for {dtype}")
        if type(Fh) is tuple:
            pytest.skip("several outputs")

        def L(v):
            r = F(v.astype(dtype))
            r = mnp.reshape(r, (-1,))
            return mnp.sum(r * mnp.sum(v))
        want = numpy.full(x0.shape, numpy.sum(_host(Fh).astype(numpy.float64)))
        if not numpy.all(numpy.isfinite(want)):
            pytest.skip("non-finite result")
        got = grad(L)(mnp.array(x0))
        numpy.testing.assert_allclose(_host(got), want, rtol=1e-12)
        check_fd(L, x0, order=2)


# ---------------------------------------------------------------- 2. NaN in max/min & co.
nan = numpy.nan


def _g(f, x, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _host(grad(lambda v: mnp.sum(f(v, *args)))(mnp.array(x)))


@pytest.mark.parametrize("name", ["max", "amax", "min", "amin", "maximum.reduce",
                                  "minimum.reduce"])
def test_nan_reductions_give_the_nan(name):
    """max/min propagate NaN: the gradient goes to the NaN (ties of NaNs split evenly,
    like ordinary ties)."""
    f = mnp
    for part in name.split("."):
        f = getattr(f, part)
    numpy.testing.assert_array_equal(_g(f, [1., nan, 2.]), [0, 1, 0])
    numpy.testing.assert_array_equal(_g(f, [nan, 1., nan]), [0.5, 0, 0.5])
    x = numpy.array([[1., nan, 2.], [3., 4., 5.], [nan, nan, nan]])
    want = numpy.array([[0, 1, 0], [0, 0, 1], [1 / 3, 1 / 3, 1 / 3]])
    mx = "max" in name
    if not mx:
        want[1] = [1, 0, 0]
    numpy.testing.assert_allclose(_g(f, x, 1), want)
    numpy.testing.assert_allclose(_g(lambda v: f(v, axis=-1, keepdims=True)
                                     if "." not in name else f(v, axis=-1, keepdims=True), x),
                                  want)
    # no NaN: the tie convention is unchanged, and FD agree
    numpy.testing.assert_allclose(_g(f, [2., 1., 2.] if mx else [1., 2., 1.]), [0.5, 0, 0.5])
    check_fd(lambda v: mnp.sum(f(v, axis=0) ** 2), numpy.array([[1., -2.], [3., 0.5]]))


@pytest.mark.parametrize("name", ["nanmax", "nanmin", "fmax.reduce", "fmin.reduce"])
def test_nan_ignoring_reductions_give_the_number(name):
    f = mnp
    for part in name.split("."):
        f = getattr(f, part)
    mx = "max" in name
    numpy.testing.assert_array_equal(_g(f, [1., nan, 2.]), [0, 0, 1] if mx else [1, 0, 0])
    x = numpy.array([[1., nan, 2.], [nan, nan, nan], [3., 3., nan]])
    want = numpy.array([[0, 0, 1] if mx else [1, 0, 0], [1 / 3, 1 / 3, 1 / 3], [.5, .5, 0]])
    numpy.testing.assert_allclose(_g(f, x, 1), want)
    numpy.testing.assert_allclose(_g(f, x, 0).sum(0), [1, 1, 1])     # never all zero


# (x, y, ans, grad x, grad y); ties (and two NaNs) split evenly
ELEMENTWISE_NAN = {
    "maximum": ([1, nan, 3, nan, 2], [2, 0, nan, nan, 2], [0, 1, 0, .5, .5], [1, 0, 1, .5, .5]),
    "minimum": ([1, nan, 3, nan, 2], [2, 0, nan, nan, 2], [1, 1, 0, .5, .5], [0, 0, 1, .5, .5]),
    "fmax": ([1, nan, 3, nan, 2], [2, 0, nan, nan, 2], [0, 0, 1, .5, .5], [1, 1, 0, .5, .5]),
    "fmin": ([1, nan, 3, nan, 2], [2, 0, nan, nan, 2], [1, 0, 1, .5, .5], [0, 1, 0, .5, .5]),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE_NAN))
def test_nan_elementwise_extrema(name):
    x, y, gx, gy = (numpy.array(v, float) for v in ELEMENTWISE_NAN[name])
    f = getattr(mnp, name)
    numpy.testing.assert_array_equal(_g(lambda v: f(v, mnp.array(y)), x), gx)
    numpy.testing.assert_array_equal(_g(lambda v: f(mnp.array(x), v), y), gy)
    # keyword and broadcast variants
    numpy.testing.assert_array_equal(_g(lambda v: f(v, mnp.array(y), dtype=numpy.float64), x), gx)
    numpy.testing.assert_array_equal(_g(lambda v: f(v, mnp.array(y)[None, :] * mnp.ones((2, 1))),
                                        x), 2 * gx)
    # both arguments one array: each element is a tie with itself
    numpy.testing.assert_array_equal(_g(lambda v: f(v, v), x), numpy.ones(5))
    # outer
    numpy.testing.assert_array_equal(_g(lambda v: getattr(mnp, name).outer(v, mnp.array([0.])),
                                        numpy.array([nan, 1.])),
                                     {"maximum": [1, 1], "minimum": [1, 0], "fmax": [0, 1],
                                      "fmin": [0, 0]}[name])


def test_nan_relu_and_grad_of_grad():
    from minpy.nn import layers
    x = numpy.array([-1., nan, 2.])
    numpy.testing.assert_array_equal(_g(layers.relu, x), [0, 1, 1])
    # grad of grad: the second derivative is 0 (no NaN from the NaN-aware masks elsewhere)
    h = grad(lambda v: mnp.sum(grad(lambda u: mnp.sum(mnp.maximum(u, 0.0) ** 2))(v)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = _host(h(mnp.array([-1., 3., 2.])))
    numpy.testing.assert_array_equal(r, [0, 2, 2])


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_nan_accumulate_and_reduceat(name):
    uf = getattr(mnp, name)
    x = numpy.array([1., nan, 2., 0.5])
    out = getattr(numpy, name).accumulate(x)
    g = _g(uf.accumulate, x)
    # every output's gradient lands somewhere: the one that set the running value
    assert g.sum() == len(x)
    if name in ("maximum", "minimum"):       # outputs 1..3 are NaN, set by x[1]
        numpy.testing.assert_array_equal(g, [1, 3, 0, 0])
    else:
        assert not numpy.isnan(out[1:]).any()
    gr = _g(lambda v: uf.reduceat(v, [0, 2]), x)
    assert gr.sum() == 2
    if name in ("maximum", "minimum"):
        numpy.testing.assert_array_equal(gr[:2], [0, 1])
    else:
        numpy.testing.assert_array_equal(gr[:2], [1, 0])


# ---------------------------------------------------------------- 3. empty axes, ddof >= n
STATS = {
    "mean": lambda v, **k: mnp.mean(v, **k), "nanmean": lambda v, **k: mnp.nanmean(v, **k),
    "var": lambda v, **k: mnp.var(v, **k), "std": lambda v, **k: mnp.std(v, **k),
    "nanvar": lambda v, **k: mnp.nanvar(v, **k), "nanstd": lambda v, **k: mnp.nanstd(v, **k),
    "average": lambda v, **k: mnp.average(v, **k), "sum": lambda v, **k: mnp.sum(v, **k),
    "var_ddof1": lambda v, **k: mnp.var(v, ddof=1, **k),
    "std_correction": lambda v, **k: mnp.std(v, correction=1, **k),
    "nanvar_ddof2": lambda v, **k: mnp.nanvar(v, ddof=2, **k),
}


@pytest.mark.parametrize("shape, kw", [((2, 0), {"axis": 1}), ((0, 3), {"axis": 0}),
                                       ((0,), {}), ((2, 0), {"axis": 1, "keepdims": True}),
                                       ((3, 0, 2), {"axis": (0, 1)})])
@pytest.mark.parametrize("name", sorted(STATS))
def test_statistics_over_an_empty_axis(name, shape, kw):
    """The forward gives NaN (NumPy's warning); the gradient w.r.t. an empty input is an
    empty array of its shape, with no exception from the rule."""
    f = STATS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = grad(lambda v: mnp.sum(f(v, **kw)))(mnp.ones(shape))
    assert g.shape == shape and g.dtype == numpy.float64


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("ddof", [3, 4])
def test_ddof_at_least_n(name, ddof):
    """ddof >= n: NumPy divides by max(n - ddof, 0) = 0 (an inf/NaN result); the rule
    divides by the same 0 (inf/NaN gradient, never a finite one of the wrong sign) and
    raises nothing."""
    x = numpy.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    f = getattr(mnp, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = _host(f(mnp.array(x), axis=1, ddof=ddof))
        g = _host(grad(lambda v: mnp.sum(f(v, axis=1, ddof=ddof)))(mnp.array(x)))
    assert not numpy.isfinite(out).any()
    assert g.shape == x.shape and not numpy.isfinite(g).any()
    # ddof = n - 1 is still finite, and agrees with finite differences to second order
    check_fd(lambda v: mnp.sum(f(v, axis=1, ddof=2)), x)


def test_var_std_empty_issue_example():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f in (mnp.var, mnp.std, mnp.mean):
            g = minpy.grad(lambda x: minpy.sum(f(x, axis=1)))(minpy.ones((2, 0)))
            assert g.shape == (2, 0)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "uint8"])
def test_integer_leaves_are_refused_not_crashed(dtype):
    """Differentiating w.r.t. a bool/int array is refused where the leaf is boxed (as
    JAX does), with a TypeError naming grad — never a crash inside a rule."""
    x = mnp.array(numpy.array([1, 0, 1]).astype(dtype))
    for f in (lambda v: mnp.sum(mnp.abs(v)), lambda v: mnp.sum(v * 2.0),
              lambda v: mnp.sum(mnp.sign(v) * 1.0)):
        with pytest.raises(TypeError, match=r"grad.*dtype"):
            grad(f)(x)


# ---------------------------------------------------------------- 5. public names in errors
_BINDING = (r"^(\S+)\(\) (got an unexpected keyword argument|takes |missing \d+ required|"
            r"got multiple values for argument|got some positional-only)|"
            r"is an invalid keyword argument for \S+\(\)")


def _public_functions():
    out = []
    for prefix, npm, mm in (("", numpy, mnp), ("linalg.", numpy.linalg, mnp.linalg),
                            ("fft.", numpy.fft, mnp.fft), ("random.", numpy.random, mnp.random)):
        for name in sorted(dir(mm)):
            if name.startswith("_"):
                continue
            f, g = getattr(mm, name), getattr(npm, name, None)
            if g is None or f is g or isinstance(f, type) or not callable(f) \
                    or not callable(g) or isinstance(g, type):
                continue
            out.append(prefix + name)
    return out


PUBLIC = _public_functions()


def _get(mod, path):
    for part in path.split("."):
        mod = getattr(mod, part)
    return mod


def _message(f, args, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f(*args, **kw)
        except Exception as e:      # noqa: BLE001 - any error: compared below
            return f"{type(e).__name__}: {e}"
    return None


# NumPy's own text depends on its implementation for these (a C or a Python layer):
# the calls whose NumPy message is not about argument binding are not compared.
def _is_binding(msg):
    return msg is not None and msg.startswith("TypeError: ") and \
        re.search(_BINDING, msg[len("TypeError: "):]) is not None


def _normalised(msg):
    """NumPy's C argument parser words an arity error its own way ("takes at most 1
    positional argument (12 given)", "takes 1 positional arguments but ..."), where a
    Python-level function (minpy's ``random.seed``, ``from_dlpack``) has Python's
    words: such messages compare as (function name, arguments given)."""
    m = re.match(r"TypeError: (\S+)\(\) takes .*?(\d+) (?:given\)|were given|was given)$",
                 msg or "")
    return ("arity", m.group(1), m.group(2)) if m else msg


def _c_parser_text(msg):
    return re.search(r"takes (at most|exactly) \d+ positional arguments? \(\d+ given\)|"
                     r"takes 1 positional arguments but", msg) is not None


CALLS = {"bogus": ((), {"bogus": 1}), "array_bogus": ((numpy.ones(3),), {"bogus": 1}),
         "too_many": ((numpy.ones(3),) * 12, {})}


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_argument_errors_name_the_public_function(call, traced):
    """A wrong keyword or number of arguments raises NumPy's own TypeError text, naming
    the public function (``exp()``, ``sum()``), never an internal wrapper
    (``_ufunc1.<locals>.f()``, ``_sum()``), eagerly and on the tape."""
    args, kw = CALLS[call]
    bad = []
    for path in PUBLIC:
        want = _message(_get(numpy, path), args, kw)
        if not _is_binding(want):
            continue
        f = _get(mnp, path)
        if traced and args:
            got = []

            def L(v, f=f):
                got.append(_message(f, (v,) + tuple(mnp.array(a) for a in args[1:]), kw))
                return mnp.sum(v)
            grad(L)(mnp.array(args[0]))
            got = got[0]
        else:
            got = _message(f, tuple(mnp.array(a) for a in args), kw)
        if got != want and not (_c_parser_text(want) and _normalised(got) == _normalised(want)):
            bad.append(f"{path}: numpy {want!r}, minpy {got!r}")
    assert not bad, "\n".join(bad)


def test_issue_examples_of_argument_errors():
    with pytest.raises(TypeError) as e:
        minpy.exp(1., 2., 3.)
    assert str(e.value) == "exp() takes from 1 to 2 positional arguments but 3 were given"
    with pytest.raises(TypeError) as e:
        minpy.sum(minpy.ones(3), bogus=1)
    assert str(e.value) == "sum() got an unexpected keyword argument 'bogus'"


def test_nan_extrema_under_jit_replay():
    """Under minpy.jit, maximum's gradient is one replayed step: the NaN test is made at
    each call too (a trace made without NaN still routes a later NaN to the NaN)."""
    def both(x, y):
        return mnp.sum(mnp.maximum(x, y) * mnp.arange(1.0, 5.0)) + mnp.sum(mnp.fmin(x, y))
    step = minpy.jit(grad(both, argnum=(0, 1)))
    nan = numpy.nan
    for xh, yh in (([1.0, -2.0, 3.0, 0.0], [0.5, 1.0, 3.0, 0.0]),
                   ([nan, 2.0, nan, 1.0], [1.0, nan, nan, 0.0]),
                   ([nan, nan, 0.0, 1.0], [nan, 1.0, 0.0, 2.0])):
        x, y = mnp.array(numpy.array(xh)), mnp.array(numpy.array(yh))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = step(x, y)
            want = grad(both, argnum=(0, 1))(x, y)
        for a, b in zip(got, want):
            numpy.testing.assert_array_equal(host(a), host(b))
    gx, gy = step(mnp.array(numpy.array([nan, 2.0, 1.0, 1.0])),
                  mnp.array(numpy.array([1.0, nan, 0.0, 1.0])))
    # maximum: the NaN takes it (x at 0, y at 1); fmin: the number; tie at 3
    numpy.testing.assert_array_equal(host(gx), [1 + 0, 0 + 1, 3 + 0, 2 + .5])
    numpy.testing.assert_array_equal(host(gy), [0 + 1, 2 + 0, 0 + 1, 2 + .5])
