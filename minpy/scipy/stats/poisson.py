"""``minpy.scipy.stats.poisson``: the Poisson distribution, differentiable in ``mu``.

``k`` is a count: it gets no gradient. Non-integer or negative ``k - loc``
has probability 0 (``-inf`` log); ``mu < 0`` gives NaN, as SciPy. Results
keep ``mu``'s floating dtype (integer counts are cast to it).
"""
import minpy.numpy as mnp
from ...core.autograd import stop_gradient
from .. import special
from .._util import as_operand, log_prob, named, nan_unless, make_rvs

__all__ = ["pmf", "logpmf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def _prepare(k, mu, loc):
    k, mu, loc = (as_operand(v) for v in (k, mu, loc))
    k = stop_gradient(k - loc)
    kd, md = getattr(k, "dtype", None), getattr(mu, "dtype", None)   # Arrays, NumPy scalars
    if kd is not None and kd.kind in "iub" and md is not None and md.kind == "f":
        k = k.astype(mu.dtype)          # integer counts compute in mu's dtype
    return k, mu, mu >= 0


@named("stats.poisson.logpmf")
def logpmf(k, mu, loc=0):
    """Log of the Poisson probability mass ``k log(mu) - mu - gammaln(k + 1)``.

    Args:
        k: array_like of counts (no gradient).
        mu: array_like mean >= 0.
        loc: array_like shift of ``k``. All three broadcast.
    Returns:
        An Array of the broadcast shape (``-inf`` off the non-negative integers).

    See also scipy.stats.poisson.logpmf.
    """
    k, mu, ok = _prepare(k, mu, loc)
    inside = (k >= 0) & (mnp.floor(k) == k)
    ks = mnp.where(inside, k, 0)
    val = special.xlogy(ks, mu) - special.gammaln(ks + 1.0) - mu
    return nan_unless(mnp.where(inside, val, -mnp.inf), ok)


@named("stats.poisson.pmf")
def pmf(k, mu, loc=0):
    """Poisson probability mass (args as :func:`logpmf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.poisson.pmf.
    """
    return mnp.exp(logpmf(k, mu, loc))


@named("stats.poisson.cdf")
def cdf(k, mu, loc=0):
    """Poisson cumulative distribution ``P(K <= k) = gammaincc(floor(k) + 1, mu)``.

    Args:
        k, mu, loc: array_like, broadcasting (``k`` gets no gradient).
    Returns:
        An Array of the broadcast shape (0 for ``k < 0``).

    See also scipy.stats.poisson.cdf.
    """
    k, mu, ok = _prepare(k, mu, loc)
    kf = mnp.floor(k)
    inside = kf >= 0
    val = special.gammaincc(mnp.where(inside, kf, 0.0) + 1.0, mu)
    return nan_unless(mnp.where(inside, val, 0.0), ok)


@named("stats.poisson.logcdf")
def logcdf(k, mu, loc=0):
    """Log of the Poisson CDF (args as :func:`cdf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.poisson.logcdf.
    """
    return log_prob(cdf(k, mu, loc))


@named("stats.poisson.sf")
def sf(k, mu, loc=0):
    """Poisson survival function ``P(K > k) = gammainc(floor(k) + 1, mu)``.

    Args:
        k, mu, loc: array_like, broadcasting (``k`` gets no gradient).
    Returns:
        An Array of the broadcast shape (1 for ``k < 0``).

    See also scipy.stats.poisson.sf.
    """
    k, mu, ok = _prepare(k, mu, loc)
    kf = mnp.floor(k)
    inside = kf >= 0
    val = special.gammainc(mnp.where(inside, kf, 0.0) + 1.0, mu)
    return nan_unless(mnp.where(inside, val, 1.0), ok)


@named("stats.poisson.logsf")
def logsf(k, mu, loc=0):
    """Log of the Poisson survival function (args as :func:`sf`).

    Returns:
        An Array of the broadcast shape.

    See also scipy.stats.poisson.logsf.
    """
    return log_prob(sf(k, mu, loc))


rvs = make_rvs("poisson")
