"""MinPy's ``minpy.utils.gradient_checker``: :func:`quick_grad_check`."""
import math

import numpy

from ..core import minpy_to_numpy

__all__ = ["quick_grad_check"]


def quick_grad_check(fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-2,
                     rtol=1e-2, atol=1e-2, rs=None):
    """Check ``fun``'s gradient w.r.t. its first argument along a random direction
    (MinPy's ``minpy.utils.gradient_checker.quick_grad_check``).

    ``fun(arg0, *extra_args, **kwargs)`` may return any shape; the check runs
    in float64 with a central difference of step ``eps`` along a direction of
    about unit length. ``rs``: a ``numpy.random.RandomState`` seeding it.

    Returns:
        True if the gradient matches, else False; prints the outcome when ``verbose``.

    See also minpy.testing.check_grads (which raises instead).
    """
    # minpy.testing imports numpy.testing (and unittest): not at ``import minpy`` (issue 27)
    from ...testing import check_grads
    kwargs = kwargs or {}
    seed = int(rs.randint(2 ** 31 - 1)) if rs is not None else None
    size = max(int(numpy.size(minpy_to_numpy(arg0))), 1)
    name = getattr(fun, "__name__", repr(fun))
    try:
        check_grads(lambda x: fun(x, *extra_args, **kwargs), arg0, order=1, argnums=[0],
                    eps=eps / math.sqrt(size), rtol=rtol, atol=atol, seed=seed)
    except AssertionError as e:
        if verbose:
            print(f"Check failed! {e}")
        return False
    if verbose:
        print(f"Gradient projection OK ({name}: gradient matches finite differences)")
    return True
