"""MinPy's ``minpy.utils.gradient_checker`` (see :func:`minpy.compat.quick_grad_check`)."""
from ..compat import quick_grad_check   # noqa: F401

__all__ = ["quick_grad_check"]
