"""``minpy.scipy.stats``: probability distributions on minpy arrays, differentiable
(as ``autograd.scipy.stats``), with SciPy's function names and signatures.

Each distribution is a module of functions: ``norm``, ``t``, ``beta``,
``gamma``, ``poisson`` (``pdf``/``logpdf`` or ``pmf``/``logpmf``, ``cdf``,
``logcdf``, ``sf``, ``logsf`` ...), ``multivariate_normal`` (``pdf``,
``logpdf``, ``entropy``) and ``dirichlet`` (``pdf``, ``logpdf``, ``entropy``).
They are compositions of minpy functions and :mod:`minpy.scipy.special`
primitives, so gradients (of any order) come through the tape; which
arguments are differentiable is said in each module.
"""
from . import norm, t, beta, gamma, poisson, multivariate_normal, dirichlet   # noqa: F401

__all__ = ["norm", "t", "beta", "gamma", "poisson", "multivariate_normal", "dirichlet"]
