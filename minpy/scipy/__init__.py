"""``minpy.scipy``: a differentiable subset of SciPy on minpy arrays (as
``autograd.scipy``): :mod:`.special`, :mod:`.stats`, :mod:`.linalg`,
:mod:`.signal` (convolve, correlate) and :mod:`.integrate` (odeint, with its
adjoint gradient).

Each function runs SciPy on the CPU and CuPy's ``cupyx.scipy`` on the GPU
(where CuPy has it; else the CPU, with minpy's counted fallback) and has a
gradient rule written with minpy's own functions, so ``minpy.grad`` (and grad
of grad) goes through it. Needs SciPy: ``pip install scipy``
(``pip install -e ".[scipy]"`` in a minpy checkout).
"""
try:
    import scipy                 # noqa: F401
    import scipy.linalg          # noqa: F401
    import scipy.special         # noqa: F401
except ImportError as _e:       # pragma: no cover - depends on the installation
    raise ImportError('minpy.scipy needs SciPy, which is not installed: '
                      'pip install scipy (in a minpy checkout: pip install -e ".[scipy]")') from _e

from . import special, stats, linalg, signal, integrate   # noqa: E402

__all__ = ["special", "stats", "linalg", "signal", "integrate"]
