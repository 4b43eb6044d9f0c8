"""``minpy.scipy.stats.chi2``: the chi-squared distribution with ``df`` degrees of
freedom, the gamma distribution of shape ``df / 2`` and scale ``2``.

``pdf``/``logpdf`` are differentiable in ``x``, ``df``, ``loc`` and ``scale``;
``cdf``/``logcdf``/``sf``/``logsf`` in ``x``, ``loc`` and ``scale`` (a traced
``df`` raises ``TypeError`` at the backward pass, as in
:mod:`minpy.scipy.stats.gamma`). Results keep the inputs' floating dtype.
"""
from . import gamma
from .._util import as_operand, make_rvs, named

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def _as_gamma(df, scale):
    return as_operand(df) * 0.5, as_operand(scale) * 2.0


@named("stats.chi2.logpdf")
def logpdf(x, df, loc=0.0, scale=1.0):
    """Log of the chi-squared probability density.

    Args:
        x: array_like of points.
        df: array_like degrees of freedom > 0.
        loc, scale: array_like location and scale > 0. All four broadcast.
    Returns:
        An Array of the broadcast shape (``-inf`` below ``loc``, NaN for invalid
        parameters).

    See also scipy.stats.chi2.logpdf.
    """
    a, s = _as_gamma(df, scale)
    return gamma.logpdf(x, a, loc, s)


@named("stats.chi2.pdf")
def pdf(x, df, loc=0.0, scale=1.0):
    """Chi-squared probability density (args as :func:`logpdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.chi2.pdf.
    """
    a, s = _as_gamma(df, scale)
    return gamma.pdf(x, a, loc, s)


@named("stats.chi2.cdf")
def cdf(x, df, loc=0.0, scale=1.0):
    """Chi-squared cumulative distribution function ``gammainc(df / 2, z / 2)``.

    Args:
        x, df, loc, scale: array_like, broadcasting (``df`` gets no gradient).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.chi2.cdf.
    """
    a, s = _as_gamma(df, scale)
    return gamma.cdf(x, a, loc, s)


@named("stats.chi2.logcdf")
def logcdf(x, df, loc=0.0, scale=1.0):
    """Log of the chi-squared CDF (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.chi2.logcdf.
    """
    a, s = _as_gamma(df, scale)
    return gamma.logcdf(x, a, loc, s)


@named("stats.chi2.sf")
def sf(x, df, loc=0.0, scale=1.0):
    """Chi-squared survival function (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.chi2.sf.
    """
    a, s = _as_gamma(df, scale)
    return gamma.sf(x, a, loc, s)


@named("stats.chi2.logsf")
def logsf(x, df, loc=0.0, scale=1.0):
    """Log of the chi-squared survival function (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.chi2.logsf.
    """
    a, s = _as_gamma(df, scale)
    return gamma.logsf(x, a, loc, s)


rvs = make_rvs("chi2")
