"""``minpy.scipy.stats.gamma``: the gamma distribution (shape ``a``), differentiable.

``pdf``/``logpdf`` are differentiable in ``x``, ``a``, ``loc`` and ``scale``;
``cdf``/``logcdf``/``sf``/``logsf`` in ``x``, ``loc`` and ``scale`` (the
incomplete gamma function has no closed-form derivative in ``a``: a traced
``a`` raises ``TypeError`` at the backward pass). Points below ``loc`` give
``-inf`` log density; invalid parameters NaN, as SciPy. Results keep the
inputs' floating dtype.
"""
import minpy.numpy as mnp
from .. import special
from .._util import as_operand, log_prob, named, nan_unless, make_rvs

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def _prepare(x, a, loc, scale):
    x, a, loc, scale = (as_operand(v) for v in (x, a, loc, scale))
    return (x - loc) / scale, a, scale, (a > 0) & (scale > 0)


@named("stats.gamma.logpdf")
def logpdf(x, a, loc=0.0, scale=1.0):
    """Log of the gamma probability density ``(a-1) log z - z - gammaln(a) - log scale``.

    Args:
        x: array_like of points.
        a: array_like shape parameter > 0.
        loc, scale: array_like location and scale > 0. All four broadcast.
    Returns:
        An Array of the broadcast shape (``-inf`` below ``loc``).

    See also scipy.stats.gamma.logpdf.
    """
    z, a, scale, ok = _prepare(x, a, loc, scale)
    inside = z >= 0
    zs = mnp.where(inside, z, 1.0)
    val = special.xlogy(a - 1.0, zs) - zs - special.gammaln(a) - mnp.log(scale)
    return nan_unless(mnp.where(inside, val, -mnp.inf), ok)


@named("stats.gamma.pdf")
def pdf(x, a, loc=0.0, scale=1.0):
    """Gamma probability density (args as :func:`logpdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.gamma.pdf.
    """
    return mnp.exp(logpdf(x, a, loc, scale))


def _zpos(x, a, loc, scale):
    z, a, _, ok = _prepare(x, a, loc, scale)
    return mnp.where(z > 0, z, 0.0), a, ok


@named("stats.gamma.cdf")
def cdf(x, a, loc=0.0, scale=1.0):
    """Gamma cumulative distribution function ``gammainc(a, z)`` (0 below ``loc``).

    Args:
        x, a, loc, scale: array_like, broadcasting (``a`` gets no gradient).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.gamma.cdf.
    """
    z, a, ok = _zpos(x, a, loc, scale)
    return nan_unless(special.gammainc(a, z), ok)


@named("stats.gamma.logcdf")
def logcdf(x, a, loc=0.0, scale=1.0):
    """Log of the gamma CDF (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.gamma.logcdf.
    """
    return log_prob(cdf(x, a, loc, scale))


@named("stats.gamma.sf")
def sf(x, a, loc=0.0, scale=1.0):
    """Gamma survival function ``gammaincc(a, z)`` (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.gamma.sf.
    """
    z, a, ok = _zpos(x, a, loc, scale)
    return nan_unless(special.gammaincc(a, z), ok)


@named("stats.gamma.logsf")
def logsf(x, a, loc=0.0, scale=1.0):
    """Log of the gamma survival function (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.gamma.logsf.
    """
    return log_prob(sf(x, a, loc, scale))


rvs = make_rvs("gamma")
