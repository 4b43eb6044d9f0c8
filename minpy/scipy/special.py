"""``minpy.scipy.special``: SciPy's special functions on minpy arrays, differentiable.

Each function is a minpy primitive: its forward calls ``scipy.special`` on the
CPU and ``cupyx.scipy.special`` on the GPU (a function CuPy lacks runs on the
CPU with minpy's counted fallback); its gradient rule is written with minpy's
own functions and these primitives, so it differentiates again (grad of grad).
Binary functions broadcast; their gradients are summed back to each operand's
shape.

Arguments without a gradient:

- integer orders and counts (``polygamma``'s ``n``, ``multigammaln``'s ``d``,
  ``yn``'s ``n``) get none (zero);
- the order ``v`` of ``iv``/``ive``/``jv``/``yv``/``kv``/``kve``, the shape
  parameters ``a`` (and ``b``) of ``gammainc``/``gammaincc``/``betainc`` and
  ``stdtr``'s/``stdtrit``'s ``df`` have a derivative with no closed form: a
  traced array there raises ``TypeError`` at the backward pass, naming the
  function and the argument;
- ``gammasgn`` is piecewise constant (its output carries no gradient).

Complex inputs follow minpy's convention (``g * conj(f'(z))``) where SciPy
accepts them (``gamma``, ``loggamma``, ``digamma``, ``erf``, ``logsumexp`` ...);
``ive``, ``i0e``, ``i1e``, ``kve``, ``k0e``, ``k1e`` are differentiated for
real arguments only.
"""
import math

import numpy
from numpy.lib.array_utils import normalize_axis_tuple

from ..core.autograd import defvjp, def_nondiff
import minpy.numpy as mnp
from ..numpy.rule_helpers import conj_if_complex, nograd, shape_of, unbroadcast_to_operand
from ._util import as_operand, named, scipy_function

__all__ = [
    "gammaln", "loggamma", "gamma", "rgamma", "gammasgn", "digamma", "psi", "polygamma",
    "multigammaln", "beta", "betaln", "betainc", "gammainc", "gammaincc",
    "expit", "logit", "log_expit", "erf", "erfc", "erfcx", "erfinv", "erfcinv",
    "ndtr", "log_ndtr", "ndtri", "stdtr", "stdtrit",
    "i0", "i1", "i0e", "i1e", "iv", "ive", "j0", "j1", "jv", "jn", "y0", "y1", "yv", "yn",
    "k0", "k1", "k0e", "k1e", "kv", "kve",
    "xlogy", "xlog1py", "entr", "logsumexp", "softmax", "log_softmax",
]

_SQRT_PI = math.sqrt(math.pi)
_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)


def _doc(name, summary, args, returns="An Array (0-d for scalar inputs).", grad=""):
    """A docstring: what, args, returns, gradient, see also."""
    lines = [summary, "", "Args:"]
    lines += [f"    {a}" for a in args]
    lines += ["Returns:", f"    {returns}"]
    if grad:
        lines += ["", f"Gradient: {grad}"]
    lines += ["", f"See also scipy.special.{name}."]
    return "\n".join(lines)


def _fn(name, summary, args, grad="", returns="An Array (0-d for scalar inputs)."):
    return scipy_function("special", name, _doc(name, summary, args, returns, grad))


_X = ["x: array_like, real (float32 or float64 keep their dtype)."]

# ------------------------------------------------------------------ gamma family
gammaln = _fn("gammaln", "Logarithm of the absolute value of the gamma function.", _X,
              "digamma(x).")
loggamma = _fn("loggamma", "Principal branch of the logarithm of the gamma function "
               "(real for x > 0, complex input allowed).", ["x: array_like, real or complex."],
               "digamma(x).")
gamma = _fn("gamma", "The gamma function.", ["x: array_like, real or complex."],
            "gamma(x) * digamma(x).")
rgamma = _fn("rgamma", "Reciprocal of the gamma function, 1 / gamma(x).",
             ["x: array_like, real or complex."], "-rgamma(x) * digamma(x).")
gammasgn = _fn("gammasgn", "Sign of the gamma function.", _X, "none (piecewise constant).")
digamma = _fn("digamma", "The digamma function psi(x), the derivative of gammaln.",
              ["x: array_like, real or complex."], "polygamma(1, x).")
psi = digamma
polygamma = _fn("polygamma", "The n-th derivative of the digamma function.",
                ["n: array_like of non-negative integers (no gradient).",
                 "x: array_like, real; broadcasts with n."],
                "polygamma(n + 1, x) with respect to x.")
multigammaln = _fn("multigammaln", "Log of the multivariate gamma function of dimension d.",
                   ["a: array_like, every entry > (d - 1) / 2.",
                    "d: int, the dimension (no gradient)."],
                   "sum over j < d of digamma(a - j / 2).",
                   "An Array like a (float64, as SciPy).")
beta = _fn("beta", "The beta function gamma(a) gamma(b) / gamma(a + b).",
           ["a, b: array_like, real; they broadcast."],
           "beta(a, b) * (digamma(a) - digamma(a + b)), and likewise for b.")
betaln = _fn("betaln", "Natural log of the absolute value of the beta function.",
             ["a, b: array_like, real; they broadcast."],
             "digamma(a) - digamma(a + b), and likewise for b.")
betainc = _fn("betainc", "Regularized incomplete beta function I_x(a, b).",
              ["a, b: array_like, positive (no gradient: TypeError if traced).",
               "x: array_like in [0, 1]; the three broadcast."],
              "x**(a-1) (1-x)**(b-1) / beta(a, b) with respect to x.")
gammainc = _fn("gammainc", "Regularized lower incomplete gamma function P(a, x).",
               ["a: array_like, positive (no gradient: TypeError if traced).",
                "x: array_like, non-negative; broadcasts with a."],
               "x**(a-1) exp(-x) / gamma(a) with respect to x.")
gammaincc = _fn("gammaincc", "Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).",
                ["a: array_like, positive (no gradient: TypeError if traced).",
                 "x: array_like, non-negative; broadcasts with a."],
                "-x**(a-1) exp(-x) / gamma(a) with respect to x.")

# ------------------------------------------------------------------ logistic, error functions
expit = _fn("expit", "The logistic sigmoid 1 / (1 + exp(-x)).", _X, "expit(x) * (1 - expit(x)).")
logit = _fn("logit", "The logit log(p / (1 - p)), inverse of expit.",
            ["x: array_like in [0, 1]."], "1 / (x (1 - x)).")
log_expit = _fn("log_expit", "log(expit(x)), accurate for large |x|.", _X, "expit(-x).")
erf = _fn("erf", "The error function.", ["x: array_like, real or complex."],
          "2 / sqrt(pi) exp(-x**2).")
erfc = _fn("erfc", "The complementary error function 1 - erf(x).",
           ["x: array_like, real or complex."], "-2 / sqrt(pi) exp(-x**2).")
erfcx = _fn("erfcx", "The scaled complementary error function exp(x**2) erfc(x).",
            ["x: array_like, real or complex."], "2 x erfcx(x) - 2 / sqrt(pi).")
erfinv = _fn("erfinv", "Inverse of erf on (-1, 1).", ["x: array_like in [-1, 1]."],
             "sqrt(pi) / 2 exp(erfinv(x)**2).")
erfcinv = _fn("erfcinv", "Inverse of erfc on (0, 2).", ["x: array_like in [0, 2]."],
              "-sqrt(pi) / 2 exp(erfcinv(x)**2).")
ndtr = _fn("ndtr", "Standard normal cumulative distribution function.", _X,
           "the standard normal density exp(-x**2 / 2) / sqrt(2 pi).")
log_ndtr = _fn("log_ndtr", "Log of the standard normal CDF, accurate far in the tails.", _X,
               "exp(-x**2 / 2 - log_ndtr(x)) / sqrt(2 pi).")
ndtri = _fn("ndtri", "Inverse of ndtr (the standard normal quantile function).",
            ["p: array_like in [0, 1]."], "sqrt(2 pi) exp(ndtri(p)**2 / 2).")
stdtr = _fn("stdtr", "Student t cumulative distribution function with df degrees of freedom.",
            ["df: array_like, positive, inf allowed (no gradient: TypeError if traced).",
             "t: array_like; broadcasts with df."],
            "the Student t density with respect to t.")
stdtrit = _fn("stdtrit", "Inverse of stdtr with respect to t (the Student t quantile).",
              ["df: array_like, positive (no gradient: TypeError if traced).",
               "p: array_like in [0, 1]; broadcasts with df."],
              "1 / density(stdtrit(df, p)) with respect to p.")

# ------------------------------------------------------------------ Bessel functions
_V = ["v: array_like, real order (no gradient: TypeError if traced).",
      "z: array_like argument; broadcasts with v."]
i0 = _fn("i0", "Modified Bessel function of the first kind of order 0.", _X, "i1(x).")
i1 = _fn("i1", "Modified Bessel function of the first kind of order 1.", _X,
         "(i0(x) + iv(2, x)) / 2.")
i0e = _fn("i0e", "Exponentially scaled i0: exp(-|x|) i0(x).", _X,
          "i1e(x) - sign(x) i0e(x) (real x).")
i1e = _fn("i1e", "Exponentially scaled i1: exp(-|x|) i1(x).", _X,
          "(i0e(x) + ive(2, x)) / 2 - sign(x) i1e(x) (real x).")
iv = _fn("iv", "Modified Bessel function of the first kind of real order v.", _V,
         "(iv(v - 1, z) + iv(v + 1, z)) / 2 with respect to z.")
ive = _fn("ive", "Exponentially scaled iv: exp(-|Re z|) iv(v, z).", _V,
          "(ive(v - 1, z) + ive(v + 1, z)) / 2 - sign(z) ive(v, z) (real z).")
j0 = _fn("j0", "Bessel function of the first kind of order 0.", _X, "-j1(x).")
j1 = _fn("j1", "Bessel function of the first kind of order 1.", _X, "(j0(x) - jv(2, x)) / 2.")
jv = _fn("jv", "Bessel function of the first kind of real order v.", _V,
         "(jv(v - 1, z) - jv(v + 1, z)) / 2 with respect to z.")
jn = jv
y0 = _fn("y0", "Bessel function of the second kind of order 0.", _X, "-y1(x).")
y1 = _fn("y1", "Bessel function of the second kind of order 1.", _X, "(y0(x) - yv(2, x)) / 2.")
yv = _fn("yv", "Bessel function of the second kind of real order v.", _V,
         "(yv(v - 1, z) - yv(v + 1, z)) / 2 with respect to z.")
yn = _fn("yn", "Bessel function of the second kind of integer order n.",
         ["n: array_like of integers (no gradient).", "x: array_like; broadcasts with n."],
         "n / x * yn(n, x) - yn(n + 1, x) with respect to x.")
k0 = _fn("k0", "Modified Bessel function of the second kind of order 0.", _X, "-k1(x).")
k1 = _fn("k1", "Modified Bessel function of the second kind of order 1.", _X,
         "-(k0(x) + kv(2, x)) / 2.")
k0e = _fn("k0e", "Exponentially scaled k0: exp(x) k0(x).", _X, "k0e(x) - k1e(x).")
k1e = _fn("k1e", "Exponentially scaled k1: exp(x) k1(x).", _X,
          "k1e(x) - (k0e(x) + kve(2, x)) / 2.")
kv = _fn("kv", "Modified Bessel function of the second kind of real order v.", _V,
         "-(kv(v - 1, z) + kv(v + 1, z)) / 2 with respect to z.")
kve = _fn("kve", "Exponentially scaled kv: exp(z) kv(v, z).", _V,
          "kve(v, z) - (kve(v - 1, z) + kve(v + 1, z)) / 2 with respect to z (real z).")

# ------------------------------------------------------------------ x log y, entropy
xlogy = _fn("xlogy", "x * log(y), with 0 where x == 0 (whatever y).",
            ["x, y: array_like; they broadcast."],
            "log(y) with respect to x, x / y with respect to y (0 where x == 0).")
xlog1py = _fn("xlog1py", "x * log1p(y), with 0 where x == 0 (whatever y).",
              ["x, y: array_like; they broadcast."],
              "log1p(y) with respect to x, x / (1 + y) with respect to y (0 where x == 0).")
entr = _fn("entr", "Elementwise entropy: -x log(x) for x > 0, 0 at 0, -inf for x < 0.", _X,
           "-(log(x) + 1).")

# ------------------------------------------------------------------ reductions
_logsumexp = scipy_function("special", "logsumexp", "logsumexp primitive (see logsumexp).")
_softmax = scipy_function("special", "softmax", "softmax primitive (see softmax).")
_log_softmax = scipy_function("special", "log_softmax", "log_softmax primitive (see log_softmax).")


@named("special.logsumexp")
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over ``axis``, computed without overflow.

    Args:
        a: array_like (real or complex).
        axis: None (all axes), an int or a tuple of ints.
        b: optional array_like of scale factors broadcasting with ``a`` (may be
            negative; then use ``return_sign=True``); differentiable too.
        keepdims: keep the reduced axes with size 1.
        return_sign: also return the sign of the sum (real inputs).
    Returns:
        The Array ``log|sum(b exp(a))|``, or the pair (that, sign) with ``return_sign``.

    Gradient: ``b exp(a - out)`` (times the sign) with respect to ``a``,
    ``exp(a - out)`` (times the sign) with respect to ``b``; the sign gets none.

    See also scipy.special.logsumexp.
    """
    a = as_operand(a)
    if b is not None:
        b = as_operand(b)
    return _logsumexp(a, axis=axis, b=b, keepdims=bool(keepdims),
                      return_sign=bool(return_sign))


@named("special.softmax")
def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over ``axis`` (None: the whole array), overflow-free.

    Args:
        x: array_like, real.
        axis: None, an int or a tuple of ints.
    Returns:
        An Array shaped like ``x``.

    Gradient: ``s * (g - sum(g s, axis))`` with ``s = softmax(x)``.

    See also scipy.special.softmax.
    """
    return _softmax(as_operand(x), axis=axis)


@named("special.log_softmax")
def log_softmax(x, axis=None):
    """x - logsumexp(x, axis, keepdims=True): the log of softmax, accurately.

    Args:
        x: array_like, real.
        axis: None, an int or a tuple of ints.
    Returns:
        An Array shaped like ``x``.

    Gradient: ``g - exp(out) * sum(g, axis)``.

    See also scipy.special.log_softmax.
    """
    return _log_softmax(as_operand(x), axis=axis)


# ------------------------------------------------------------------ helpers for the rules
def student_t_logpdf(t, df):
    """Log density of the standard Student t distribution (df = inf: the normal one),
    written with minpy functions (differentiable in t and df)."""
    normal = -0.5 * t * t - _LOG_SQRT_2PI
    if isinstance(df, (int, float)) and not isinstance(df, bool):
        if math.isinf(df):
            return normal
        finite, d = True, df
    else:
        finite = mnp.isfinite(df)
        d = mnp.where(finite, df, 1.0)
    half = 0.5 * (d + 1.0)
    out = gammaln(half) - gammaln(0.5 * d) - 0.5 * (mnp.log(d) + _LOG_PI) - \
        half * mnp.log1p(t * t / d)
    return out if finite is True else mnp.where(finite, out, normal)


def _reduced_axes(x, axis, other=None):
    """(ndim, axes) of a reduction of ``x`` (broadcast with ``other``) over ``axis``."""
    shape = shape_of(x) if other is None else numpy.broadcast_shapes(shape_of(x),
                                                                       shape_of(other))
    nd = len(shape)
    return nd, tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)


def _kept(v, axes, keepdims):
    """The reduced ``v`` with its reduced axes back (size 1), to broadcast against the input."""
    if keepdims or not axes:
        return v
    return mnp.expand_dims(v, axes)


# ------------------------------------------------------------------ rules
def _unary(fn, deriv):
    """``fn(x)`` has derivative ``deriv(ans, x)``."""
    def maker(ans, x):
        return lambda g: g * conj_if_complex(deriv(ans, x))
    defvjp(fn._prim, maker)


def _partial(deriv, pos):
    """VJP maker for argument ``pos`` of a broadcasting function with partial
    derivative ``deriv(ans, *args)``."""
    def maker(ans, *args):
        return lambda g: unbroadcast_to_operand(g * conj_if_complex(deriv(ans, *args)),
                                                args[pos])
    return maker


_unary(gammaln, lambda ans, x: digamma(x))
_unary(loggamma, lambda ans, x: digamma(x))
_unary(gamma, lambda ans, x: ans * digamma(x))
_unary(rgamma, lambda ans, x: -ans * digamma(x))
_unary(digamma, lambda ans, x: polygamma(1, x))
def_nondiff(gammasgn._prim)
defvjp(polygamma._prim, nograd(0), _partial(lambda ans, n, x: polygamma(n + 1, x), 1))


def _multigammaln_vjp(ans, a, d):
    def vjp(g):
        steps = numpy.arange(int(d), dtype=numpy.result_type(a.dtype, numpy.float32)) / 2
        return g * mnp.sum(digamma(mnp.expand_dims(a, -1) - steps), axis=-1)
    return vjp


defvjp(multigammaln._prim, _multigammaln_vjp, nograd(1))
defvjp(beta._prim, _partial(lambda ans, a, b: ans * (digamma(a) - digamma(a + b)), 0),
       _partial(lambda ans, a, b: ans * (digamma(b) - digamma(a + b)), 1))
defvjp(betaln._prim, _partial(lambda ans, a, b: digamma(a) - digamma(a + b), 0),
       _partial(lambda ans, a, b: digamma(b) - digamma(a + b), 1))
# d/dx of the regularized incomplete beta / gamma functions: their densities
defvjp(betainc._prim, None, None, _partial(
    lambda ans, a, b, x: mnp.exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b)), 2))


def _gamma_density(ans, a, x):
    return mnp.exp(xlogy(a - 1.0, x) - x - gammaln(a))


defvjp(gammainc._prim, None, _partial(_gamma_density, 1))
defvjp(gammaincc._prim, None, _partial(lambda ans, a, x: -_gamma_density(ans, a, x), 1))

_unary(expit, lambda ans, x: ans * (1.0 - ans))
_unary(logit, lambda ans, x: 1.0 / (x * (1.0 - x)))
_unary(log_expit, lambda ans, x: expit(-x))
_unary(erf, lambda ans, x: _TWO_OVER_SQRT_PI * mnp.exp(-x * x))
_unary(erfc, lambda ans, x: -_TWO_OVER_SQRT_PI * mnp.exp(-x * x))
_unary(erfcx, lambda ans, x: 2.0 * x * ans - _TWO_OVER_SQRT_PI)
_unary(erfinv, lambda ans, x: 0.5 * _SQRT_PI * mnp.exp(ans * ans))
_unary(erfcinv, lambda ans, x: -0.5 * _SQRT_PI * mnp.exp(ans * ans))
_unary(ndtr, lambda ans, x: mnp.exp(-0.5 * x * x) / _SQRT_2PI)
_unary(log_ndtr, lambda ans, x: mnp.exp(-0.5 * x * x - ans) / _SQRT_2PI)
_unary(ndtri, lambda ans, x: _SQRT_2PI * mnp.exp(0.5 * ans * ans))
defvjp(stdtr._prim, None, _partial(lambda ans, df, t: mnp.exp(student_t_logpdf(t, df)), 1))
defvjp(stdtrit._prim, None,
       _partial(lambda ans, df, p: mnp.exp(-student_t_logpdf(ans, df)), 1))

_unary(i0, lambda ans, x: i1(x))
_unary(i1, lambda ans, x: 0.5 * (i0(x) + iv(2, x)))
_unary(i0e, lambda ans, x: i1e(x) - mnp.sign(x) * ans)
_unary(i1e, lambda ans, x: 0.5 * (i0e(x) + ive(2, x)) - mnp.sign(x) * ans)
defvjp(iv._prim, None, _partial(lambda ans, v, z: 0.5 * (iv(v - 1, z) + iv(v + 1, z)), 1))
defvjp(ive._prim, None, _partial(
    lambda ans, v, z: 0.5 * (ive(v - 1, z) + ive(v + 1, z)) - mnp.sign(z) * ans, 1))
_unary(j0, lambda ans, x: -j1(x))
_unary(j1, lambda ans, x: 0.5 * (j0(x) - jv(2, x)))
defvjp(jv._prim, None, _partial(lambda ans, v, z: 0.5 * (jv(v - 1, z) - jv(v + 1, z)), 1))
_unary(y0, lambda ans, x: -y1(x))
_unary(y1, lambda ans, x: 0.5 * (y0(x) - yv(2, x)))
defvjp(yv._prim, None, _partial(lambda ans, v, z: 0.5 * (yv(v - 1, z) - yv(v + 1, z)), 1))
# Y_n' = (n / x) Y_n - Y_{n+1}: no negative order (CUDA's yn is NaN for n < 0)
defvjp(yn._prim, nograd(0), _partial(lambda ans, n, x: n / x * ans - yn(n + 1, x), 1))
_unary(k0, lambda ans, x: -k1(x))
_unary(k1, lambda ans, x: -0.5 * (k0(x) + kv(2, x)))
_unary(k0e, lambda ans, x: ans - k1e(x))
_unary(k1e, lambda ans, x: ans - 0.5 * (k0e(x) + kve(2, x)))
defvjp(kv._prim, None, _partial(lambda ans, v, z: -0.5 * (kv(v - 1, z) + kv(v + 1, z)), 1))
defvjp(kve._prim, None,
       _partial(lambda ans, v, z: ans - 0.5 * (kve(v - 1, z) + kve(v + 1, z)), 1))

# x / y with the x == 0 entries 0 (no 0/0): x / where(x == 0, 1, y)
defvjp(xlogy._prim, _partial(lambda ans, x, y: mnp.log(y), 0),
       _partial(lambda ans, x, y: x / mnp.where(x == 0, 1.0, y), 1))
defvjp(xlog1py._prim, _partial(lambda ans, x, y: mnp.log1p(y), 0),
       _partial(lambda ans, x, y: x / mnp.where(x == 0, 1.0, 1.0 + y), 1))
_unary(entr, lambda ans, x: -(mnp.log(x) + 1.0))


def _logsumexp_maker(which):
    def maker(ans, a, axis=None, b=None, keepdims=False, return_sign=False):
        _, axes = _reduced_axes(a, axis, b)

        def vjp(g):
            out, gout = (ans[0], g[0]) if return_sign else (ans, g)
            w = mnp.exp(a - _kept(out, axes, keepdims))
            if return_sign:
                w = w * _kept(ans[1], axes, keepdims)
            gk = _kept(gout, axes, keepdims)
            if which == "b":
                return unbroadcast_to_operand(gk * conj_if_complex(w), b)
            if b is not None:
                w = w * b
            return unbroadcast_to_operand(gk * conj_if_complex(w), a)
        return vjp
    return maker


defvjp(_logsumexp._prim, _logsumexp_maker("a"), None, _logsumexp_maker("b"),
       b=_logsumexp_maker("b"))


def _softmax_vjp(ans, x, axis=None):
    return lambda g: ans * (g - mnp.sum(g * ans, axis=axis, keepdims=True))


def _log_softmax_vjp(ans, x, axis=None):
    return lambda g: g - mnp.exp(ans) * mnp.sum(g, axis=axis, keepdims=True)


defvjp(_softmax._prim, _softmax_vjp)
defvjp(_log_softmax._prim, _log_softmax_vjp)
