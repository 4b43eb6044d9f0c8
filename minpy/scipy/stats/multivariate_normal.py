"""``minpy.scipy.stats.multivariate_normal``: the multivariate normal distribution,
differentiable in ``x``, ``mean`` and ``cov``.

SciPy's conventions: the last axis of ``x`` holds the components (a 1-D ``x``
is one point, or N points when the dimension is 1); ``mean`` is a vector
(default zeros); ``cov`` a scalar (times the identity), a vector (the
diagonal) or a matrix of which only the LOWER triangle is read (gradients
live there: off-diagonal entries count for both symmetric places); results
are squeezed (one point: a 0-d Array).

A positive-definite ``cov`` goes through its Cholesky factor. With
``allow_singular=True`` and a numerically singular ``cov`` (eigenvalues below
SciPy's cut-off), the pseudo-determinant and pseudo-inverse of its
eigendecomposition are used and points off the support get ``-inf``;
gradients there need distinct eigenvalues. The rank decision reads the
eigenvalues back to the host (it is skipped, and the Cholesky path taken,
while ``minpy.jit`` traces).
"""
import math

import numpy

import minpy.numpy as mnp
from ...core.autograd import stop_gradient
from .. import linalg as _linalg
from .._util import as_operand, host_value, jit_tracing, named, make_rvs

__all__ = ["logpdf", "pdf", "entropy", "rvs"]

_LOG_2PI = math.log(2.0 * math.pi)


def _parameters(mean, cov):
    """(dim, mean vector, cov matrix) as SciPy infers and checks them."""
    if mean is None:
        cov_a = mnp.asarray(as_operand(1.0 if cov is None else cov))
        dim = 1 if cov_a.ndim < 2 else cov_a.shape[0]
        mean = mnp.zeros(dim, dtype=cov_a.dtype if cov_a.dtype.kind == "f" else None)
    mean = mnp.asarray(as_operand(mean))
    dim = int(mean.size)
    cov = mnp.asarray(as_operand(1.0 if cov is None else cov))
    if dim == 1:
        mean = mnp.reshape(mean, (1,))
        if cov.size == 1:
            cov = mnp.reshape(cov, (1, 1))
    if mean.ndim != 1:
        raise ValueError(f"mean must be a vector of length {dim}; got shape {mean.shape}")
    if cov.ndim == 0:
        cov = cov * numpy.eye(dim, dtype=numpy.result_type(cov.dtype, numpy.float32))
    elif cov.ndim == 1:
        if cov.shape[0] != dim:
            raise ValueError(f"a vector cov (the diagonal) must have length {dim} to match "
                             f"mean of shape {mean.shape}; got shape {cov.shape}")
        cov = cov * numpy.eye(dim, dtype=numpy.result_type(cov.dtype, numpy.float32))
    elif cov.ndim != 2 or cov.shape != (dim, dim):
        raise ValueError(f"cov must be a scalar, a vector of length {dim} or a {dim} x {dim} "
                         f"matrix to match mean of shape {mean.shape}; got shape {cov.shape}")
    return dim, mean, cov


def _quantiles(x, dim):
    x = mnp.asarray(as_operand(x))
    if x.ndim == 0:
        x = mnp.reshape(x, (1,))
    elif x.ndim == 1 and dim == 1:
        x = mnp.expand_dims(x, -1)
    if x.shape[-1] != dim:
        raise ValueError(f"the last axis of x must have length {dim} (the dimension of mean "
                         f"and cov); got x of shape {x.shape}")
    return x


def _eps(w):
    """SciPy's cut-off below which an eigenvalue of a covariance counts as zero."""
    factor = 1e3 if w.dtype == numpy.float32 else 1e6
    return factor * numpy.finfo(w.dtype).eps * numpy.max(numpy.abs(w))


class _Factor:
    """What logpdf/entropy need of ``cov``: whitening, log pseudo-determinant, rank
    and (singular case) the support test."""

    def __init__(self, name, cov, allow_singular):
        self.singular = False
        if allow_singular and not jit_tracing():
            w = numpy.linalg.eigvalsh(host_value(cov))
            eps = _eps(w)
            if w.min() < -eps:
                raise ValueError(f"cov of shape {cov.shape} must be symmetric positive "
                                 "semidefinite")
            self.singular = bool(numpy.any(w <= eps))
        if self.singular:
            w, v = mnp.linalg.eigh(cov)
            wh = host_value(stop_gradient(w))
            eps = _eps(wh)
            keep = wh > eps
            self.rank = int(keep.sum())
            self.log_det = mnp.sum(mnp.log(w[keep]))
            self.white = v[:, keep] / mnp.sqrt(w[keep])         # dev @ white: whitened
            self.null = stop_gradient(v[:, ~keep])
            self.support_eps = 1e3 * eps
            return
        try:
            self.chol = mnp.linalg.cholesky(cov)
        except numpy.linalg.LinAlgError:
            hint = "" if allow_singular else " (pass allow_singular=True for a singular one)"
            raise numpy.linalg.LinAlgError(
                f"minpy.scipy.stats.multivariate_normal.{name}: cov of shape {cov.shape} is "
                f"not positive definite{hint}") from None
        self.rank = cov.shape[-1]
        self.log_det = 2.0 * mnp.sum(mnp.log(mnp.diagonal(self.chol)))

    def maha(self, dev):
        """Squared Mahalanobis norms of the rows of ``dev`` (..., d)."""
        if self.singular:
            return mnp.sum(mnp.square(_mm(dev, self.white)), axis=-1)
        d = dev.shape[-1]
        flat = mnp.reshape(dev, (-1, d))
        z = _linalg.solve_triangular(self.chol, mnp.transpose(flat), lower=True,
                                     check_finite=False)
        return mnp.reshape(mnp.sum(z * z, axis=0), dev.shape[:-1])


_mm = mnp.matmul


@named("stats.multivariate_normal.logpdf")
def logpdf(x, mean=None, cov=1, allow_singular=False):
    """Log of the multivariate normal density.

    Args:
        x: array_like of points, components on the last axis.
        mean: vector of length d (default zeros).
        cov: scalar, vector (diagonal) or d x d matrix (lower triangle read).
        allow_singular: accept a singular positive semidefinite ``cov``.
    Returns:
        An Array of shape ``x.shape[:-1]``, squeezed (a 0-d Array for one point).
    Raises:
        ValueError on mismatched shapes; LinAlgError when ``cov`` is not positive
        definite (and ``allow_singular`` is False).

    See also scipy.stats.multivariate_normal.logpdf.
    """
    dim, mean, cov = _parameters(mean, cov)
    x = _quantiles(x, dim)
    f = _Factor("logpdf", cov, allow_singular)
    dev = x - mean
    out = -0.5 * (f.rank * _LOG_2PI + f.log_det + f.maha(dev))
    if f.singular:
        residual = mnp.sqrt(mnp.sum(mnp.square(_mm(stop_gradient(dev), f.null)), axis=-1))
        out = mnp.where(residual < f.support_eps, out, -mnp.inf)
    return mnp.squeeze(out)


@named("stats.multivariate_normal.pdf")
def pdf(x, mean=None, cov=1, allow_singular=False):
    """Multivariate normal density (args as :func:`logpdf`).

    Returns:
        An Array of shape ``x.shape[:-1]``, squeezed.

    See also scipy.stats.multivariate_normal.pdf.
    """
    return mnp.exp(logpdf(x, mean, cov, allow_singular))


@named("stats.multivariate_normal.entropy")
def entropy(mean=None, cov=1, allow_singular=True):
    """Differential entropy ``(rank (1 + log 2 pi) + log pdet(cov)) / 2``.

    Args:
        mean: vector of length d (sets the dimension only).
        cov: scalar, vector (diagonal) or d x d matrix (lower triangle read).
        allow_singular: accept a singular ``cov`` (pseudo-determinant); default True,
            as SciPy's entropy.
    Returns:
        A 0-d Array.

    See also scipy.stats.multivariate_normal.entropy.
    """
    _, _, cov = _parameters(mean, cov)
    f = _Factor("entropy", cov, allow_singular)
    return 0.5 * (f.rank * (_LOG_2PI + 1.0) + f.log_det)


rvs = make_rvs("multivariate_normal")
