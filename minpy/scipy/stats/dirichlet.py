"""``minpy.scipy.stats.dirichlet``: the Dirichlet distribution, differentiable in
``x`` and ``alpha``.

SciPy's layout: the components run along the FIRST axis of ``x`` (shape
``(K,)`` or ``(K, N)``: N points); ``x`` may give ``K - 1`` components, the
last being ``1 - sum``. Inputs are checked as SciPy checks them (a
``ValueError`` naming the function and shapes), with the simplex tolerance
scaled to the dtype (``1e-9`` in float64, ``64 eps`` in float32); the value
checks are skipped while ``minpy.jit`` traces.
"""
import numpy

import minpy.numpy as mnp
from .. import special
from .._util import as_operand, host_value, jit_tracing, named, make_rvs

__all__ = ["pdf", "logpdf", "entropy", "rvs"]


def _alpha(alpha, check=True):
    alpha = mnp.asarray(as_operand(alpha))
    if alpha.ndim != 1:
        raise ValueError(f"parameter vector alpha must be one-dimensional, got shape "
                         f"{alpha.shape}")
    if check and not jit_tracing() and not numpy.all(host_value(alpha) > 0):
        raise ValueError(f"every entry of alpha (shape {alpha.shape}) must be > 0")
    return alpha


def _points(x, alpha):
    x = mnp.asarray(as_operand(x))
    k = alpha.shape[0]
    if x.ndim not in (1, 2):
        raise ValueError(f"x must be one-dimensional (K,) or two-dimensional (K, N) with the "
                         f"components on the first axis; got shape {x.shape}")
    if x.shape[0] == k - 1:
        x = mnp.concatenate([x, mnp.expand_dims(1.0 - mnp.sum(x, axis=0), 0)], axis=0)
    elif x.shape[0] != k:
        raise ValueError(f"x must have {k} or {k - 1} entries on its first axis, as alpha "
                         f"has {k}; got x.shape = {x.shape}, alpha.shape = {alpha.shape}")
    if not jit_tracing():
        h, a = host_value(x), host_value(alpha)
        if h.min() < 0 or h.max() > 1:
            raise ValueError("every entry of x must lie in [0, 1]")
        a_b = a.reshape((k,) + (1,) * (h.ndim - 1))
        if numpy.any((h == 0) & (a_b < 1)):
            raise ValueError("an entry of x may be 0 only where its alpha is >= 1")
        tol = max(1e-9, 64 * numpy.finfo(numpy.result_type(h.dtype, numpy.float32)).eps)
        if numpy.any(numpy.abs(h.sum(axis=0) - 1) > tol):
            raise ValueError(f"x must lie on the simplex (its components sum to 1 within "
                             f"{tol:g}); sums are {h.sum(axis=0)}")
    return x


def _log_norm(alpha):
    """log B(alpha) = sum gammaln(alpha) - gammaln(sum alpha)."""
    return mnp.sum(special.gammaln(alpha)) - special.gammaln(mnp.sum(alpha))


@named("stats.dirichlet.logpdf")
def logpdf(x, alpha):
    """Log of the Dirichlet density ``sum((alpha - 1) log x) - log B(alpha)``.

    Args:
        x: array_like of shape (K,) or (K, N) (or K - 1 leading entries): points
            on the simplex, components on the first axis.
        alpha: array_like of shape (K,), every entry > 0.
    Returns:
        A 0-d Array for one point, else an Array of shape (N,) (squeezed as SciPy).

    See also scipy.stats.dirichlet.logpdf.
    """
    alpha = _alpha(alpha)
    x = _points(x, alpha)
    a_b = mnp.reshape(alpha, (alpha.shape[0],) + (1,) * (x.ndim - 1))
    out = mnp.sum(special.xlogy(a_b - 1.0, x), axis=0) - _log_norm(alpha)
    return mnp.squeeze(out)


@named("stats.dirichlet.pdf")
def pdf(x, alpha):
    """Dirichlet probability density (args as :func:`logpdf`).

    Returns:
        A 0-d Array for one point, else an Array of shape (N,).

    See also scipy.stats.dirichlet.pdf.
    """
    return mnp.exp(logpdf(x, alpha))


@named("stats.dirichlet.entropy")
def entropy(alpha):
    """Differential entropy of the Dirichlet distribution.

    Args:
        alpha: array_like of shape (K,), every entry > 0.
    Returns:
        A 0-d Array: ``log B(alpha) + (a0 - K) psi(a0) - sum((alpha - 1) psi(alpha))``,
        ``a0 = sum(alpha)``.

    See also scipy.stats.dirichlet.entropy.
    """
    alpha = _alpha(alpha)
    a0 = mnp.sum(alpha)
    k = alpha.shape[0]
    return _log_norm(alpha) + (a0 - k) * special.digamma(a0) - \
        mnp.sum((alpha - 1.0) * special.digamma(alpha))


rvs = make_rvs("dirichlet")
