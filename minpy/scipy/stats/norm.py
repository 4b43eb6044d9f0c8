"""``minpy.scipy.stats.norm``: the normal distribution, differentiable in ``x``
(or ``q``), ``loc`` and ``scale``.

Written with minpy functions and :mod:`minpy.scipy.special` primitives, so
gradients of every order come through the tape. Results keep the inputs'
floating dtype (float32 stays float32; SciPy's stats compute in float64).
``scale <= 0`` gives NaN, as SciPy.
"""
import math

import minpy.numpy as mnp
from .. import special
from .._util import as_operand, named, nan_unless, make_rvs

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "entropy", "rvs"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _standardize(x, loc, scale):
    x, loc, scale = as_operand(x), as_operand(loc), as_operand(scale)
    return (x - loc) / scale, scale, scale > 0


@named("stats.norm.logpdf")
def logpdf(x, loc=0.0, scale=1.0):
    """Log of the normal probability density at ``x``.

    Args:
        x: array_like of points.
        loc: array_like mean (broadcasts).
        scale: array_like standard deviation > 0 (broadcasts).
    Returns:
        An Array of the broadcast shape: ``-z**2/2 - log(sqrt(2 pi) scale)``,
        ``z = (x - loc) / scale``.

    See also scipy.stats.norm.logpdf.
    """
    z, scale, ok = _standardize(x, loc, scale)
    return nan_unless(-0.5 * z * z - _LOG_SQRT_2PI - mnp.log(scale), ok)


@named("stats.norm.pdf")
def pdf(x, loc=0.0, scale=1.0):
    """Normal probability density at ``x`` (args as :func:`logpdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.pdf.
    """
    return mnp.exp(logpdf(x, loc, scale))


@named("stats.norm.cdf")
def cdf(x, loc=0.0, scale=1.0):
    """Normal cumulative distribution function ``ndtr((x - loc) / scale)``.

    Args:
        x, loc, scale: array_like, broadcasting (``scale > 0``).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.cdf.
    """
    z, _, ok = _standardize(x, loc, scale)
    return nan_unless(special.ndtr(z), ok)


@named("stats.norm.logcdf")
def logcdf(x, loc=0.0, scale=1.0):
    """Log of the normal CDF, accurate far in the lower tail (``log_ndtr``).

    Args:
        x, loc, scale: array_like, broadcasting (``scale > 0``).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.logcdf.
    """
    z, _, ok = _standardize(x, loc, scale)
    return nan_unless(special.log_ndtr(z), ok)


@named("stats.norm.sf")
def sf(x, loc=0.0, scale=1.0):
    """Normal survival function ``1 - cdf``, computed as ``ndtr(-z)``.

    Args:
        x, loc, scale: array_like, broadcasting (``scale > 0``).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.sf.
    """
    z, _, ok = _standardize(x, loc, scale)
    return nan_unless(special.ndtr(-z), ok)


@named("stats.norm.logsf")
def logsf(x, loc=0.0, scale=1.0):
    """Log of the normal survival function, ``log_ndtr(-z)``.

    Args:
        x, loc, scale: array_like, broadcasting (``scale > 0``).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.logsf.
    """
    z, _, ok = _standardize(x, loc, scale)
    return nan_unless(special.log_ndtr(-z), ok)


@named("stats.norm.ppf")
def ppf(q, loc=0.0, scale=1.0):
    """Normal quantile function (inverse CDF): ``loc + scale * ndtri(q)``.

    Args:
        q: array_like of probabilities in [0, 1] (NaN outside).
        loc, scale: array_like, broadcasting (``scale > 0``).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.ppf.
    """
    q, loc, scale = as_operand(q), as_operand(loc), as_operand(scale)
    return nan_unless(loc + scale * special.ndtri(q), scale > 0)


@named("stats.norm.isf")
def isf(q, loc=0.0, scale=1.0):
    """Inverse survival function: ``loc - scale * ndtri(q)``.

    Args:
        q: array_like of probabilities in [0, 1] (NaN outside).
        loc, scale: array_like, broadcasting (``scale > 0``).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.isf.
    """
    q, loc, scale = as_operand(q), as_operand(loc), as_operand(scale)
    return nan_unless(loc - scale * special.ndtri(q), scale > 0)


@named("stats.norm.entropy")
def entropy(loc=0.0, scale=1.0):
    """Differential entropy ``log(sqrt(2 pi e) scale)`` (``loc`` only sets the shape).

    Args:
        loc, scale: array_like, broadcasting (``scale > 0``).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.norm.entropy.
    """
    loc, scale = as_operand(loc), as_operand(scale)
    return nan_unless(0.5 + _LOG_SQRT_2PI + mnp.log(scale) + 0.0 * loc, scale > 0)


rvs = make_rvs("norm")
