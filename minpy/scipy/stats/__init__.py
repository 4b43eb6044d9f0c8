"""``minpy.scipy.stats``: probability distributions on minpy arrays, differentiable
(as ``autograd.scipy.stats``), with SciPy's function names and signatures.

Each distribution is a module of functions: ``norm``, ``t``, ``beta``,
``gamma``, ``chi2``, ``poisson`` (``pdf``/``logpdf`` or ``pmf``/``logpmf``, ``cdf``,
``logcdf``, ``sf``, ``logsf`` ...), ``multivariate_normal`` (``pdf``,
``logpdf``, ``entropy``) and ``dirichlet`` (``pdf``, ``logpdf``, ``entropy``); each
has SciPy's sampler ``rvs`` (host draws returned as a minpy Array, as autograd
re-exports SciPy's samplers).
They are compositions of minpy functions and :mod:`minpy.scipy.special`
primitives, so gradients (of any order) come through the tape; which
arguments are differentiable is said in each module.
"""
from . import norm, t, beta, gamma, poisson, multivariate_normal, dirichlet, chi2   # noqa: F401

__all__ = ["norm", "t", "beta", "gamma", "poisson", "multivariate_normal", "dirichlet",
           "chi2"]
