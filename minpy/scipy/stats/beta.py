"""``minpy.scipy.stats.beta``: the beta distribution on [loc, loc + scale].

``pdf``/``logpdf`` are differentiable in ``x``, ``a``, ``b``, ``loc`` and
``scale``; ``cdf``/``logcdf``/``sf``/``logsf`` in ``x``, ``loc`` and ``scale``
(the derivative of the incomplete beta function in ``a``/``b`` has no closed
form: traced shape parameters raise ``TypeError`` at the backward pass).
Points outside the support give ``-inf`` log density (zero gradient there);
invalid parameters NaN, as SciPy. Results keep the inputs' floating dtype.
"""
import minpy.numpy as mnp
from .. import special
from .._util import as_operand, log_prob, named, nan_unless, make_rvs

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def _prepare(x, a, b, loc, scale):
    x, a, b, loc, scale = (as_operand(v) for v in (x, a, b, loc, scale))
    return (x - loc) / scale, a, b, scale, (a > 0) & (b > 0) & (scale > 0)


@named("stats.beta.logpdf")
def logpdf(x, a, b, loc=0.0, scale=1.0):
    """Log of the beta probability density.

    Args:
        x: array_like of points.
        a, b: array_like shape parameters > 0.
        loc, scale: array_like location and scale > 0. All five broadcast.
    Returns:
        An Array of the broadcast shape (``-inf`` outside ``[loc, loc + scale]``).

    See also scipy.stats.beta.logpdf.
    """
    z, a, b, scale, ok = _prepare(x, a, b, loc, scale)
    inside = (z >= 0) & (z <= 1)
    zs = mnp.where(inside, z, 0.5)          # no NaN in the masked-out branch's gradient
    val = special.xlogy(a - 1.0, zs) + special.xlog1py(b - 1.0, -zs) - \
        special.betaln(a, b) - mnp.log(scale)
    return nan_unless(mnp.where(inside, val, -mnp.inf), ok)


@named("stats.beta.pdf")
def pdf(x, a, b, loc=0.0, scale=1.0):
    """Beta probability density (args as :func:`logpdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.beta.pdf.
    """
    return mnp.exp(logpdf(x, a, b, loc, scale))


@named("stats.beta.cdf")
def cdf(x, a, b, loc=0.0, scale=1.0):
    """Beta cumulative distribution function ``betainc(a, b, z)``, z clipped to [0, 1].

    Args:
        x, a, b, loc, scale: array_like, broadcasting (``a``, ``b`` get no gradient).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.beta.cdf.
    """
    z, a, b, _, ok = _prepare(x, a, b, loc, scale)
    return nan_unless(special.betainc(a, b, mnp.clip(z, 0.0, 1.0)), ok)


@named("stats.beta.logcdf")
def logcdf(x, a, b, loc=0.0, scale=1.0):
    """Log of the beta CDF (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.beta.logcdf.
    """
    return log_prob(cdf(x, a, b, loc, scale))


@named("stats.beta.sf")
def sf(x, a, b, loc=0.0, scale=1.0):
    """Beta survival function ``betainc(b, a, 1 - z)`` (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.beta.sf.
    """
    z, a, b, _, ok = _prepare(x, a, b, loc, scale)
    return nan_unless(special.betainc(b, a, 1.0 - mnp.clip(z, 0.0, 1.0)), ok)


@named("stats.beta.logsf")
def logsf(x, a, b, loc=0.0, scale=1.0):
    """Log of the beta survival function (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.beta.logsf.
    """
    return log_prob(sf(x, a, b, loc, scale))


rvs = make_rvs("beta")
