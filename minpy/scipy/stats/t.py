"""``minpy.scipy.stats.t``: Student's t distribution, differentiable.

``pdf``/``logpdf`` are differentiable in ``x``, ``df``, ``loc`` and ``scale``;
``cdf``/``logcdf``/``sf``/``logsf`` in ``x``, ``loc`` and ``scale`` (their
derivative in ``df`` has no closed form: a traced ``df`` raises ``TypeError``
at the backward pass). ``df = inf`` is the normal distribution. Results keep
the inputs' floating dtype; invalid parameters (``df <= 0``, ``scale <= 0``)
give NaN, as SciPy.
"""
import minpy.numpy as mnp
from .. import special
from .._util import as_operand, log_prob, named, nan_unless, make_rvs

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "rvs"]


def _prepare(x, df, loc, scale):
    x, df, loc, scale = (as_operand(v) for v in (x, df, loc, scale))
    ok = (df > 0) & (scale > 0)
    return (x - loc) / scale, df, scale, ok


@named("stats.t.logpdf")
def logpdf(x, df, loc=0.0, scale=1.0):
    """Log of the Student t probability density.

    Args:
        x: array_like of points.
        df: array_like degrees of freedom > 0 (``inf`` allowed).
        loc, scale: array_like location and scale > 0. All four broadcast.
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.t.logpdf.
    """
    z, df, scale, ok = _prepare(x, df, loc, scale)
    return nan_unless(special.student_t_logpdf(z, df) - mnp.log(scale), ok)


@named("stats.t.pdf")
def pdf(x, df, loc=0.0, scale=1.0):
    """Student t probability density (args as :func:`logpdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.t.pdf.
    """
    return mnp.exp(logpdf(x, df, loc, scale))


@named("stats.t.cdf")
def cdf(x, df, loc=0.0, scale=1.0):
    """Student t cumulative distribution function ``stdtr(df, (x - loc) / scale)``.

    Args:
        x, df, loc, scale: array_like, broadcasting (``df`` gets no gradient).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.t.cdf.
    """
    z, df, _, ok = _prepare(x, df, loc, scale)
    return nan_unless(special.stdtr(df, z), ok)


@named("stats.t.logcdf")
def logcdf(x, df, loc=0.0, scale=1.0):
    """Log of the Student t CDF (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.t.logcdf.
    """
    return log_prob(cdf(x, df, loc, scale))


@named("stats.t.sf")
def sf(x, df, loc=0.0, scale=1.0):
    """Student t survival function ``stdtr(df, -(x - loc) / scale)`` (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.t.sf.
    """
    z, df, _, ok = _prepare(x, df, loc, scale)
    return nan_unless(special.stdtr(df, -z), ok)


@named("stats.t.logsf")
def logsf(x, df, loc=0.0, scale=1.0):
    """Log of the Student t survival function (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.t.logsf.
    """
    return log_prob(sf(x, df, loc, scale))


@named("stats.t.ppf")
def ppf(q, df, loc=0.0, scale=1.0):
    """Student t quantile function ``loc + scale * stdtrit(df, q)``.

    Args:
        q: array_like of probabilities in [0, 1].
        df, loc, scale: array_like, broadcasting (``df`` gets no gradient).
    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.t.ppf.
    """
    q, df, loc, scale = (as_operand(v) for v in (q, df, loc, scale))
    return nan_unless(loc + scale * special.stdtrit(df, q), (df > 0) & (scale > 0))


rvs = make_rvs("t")
