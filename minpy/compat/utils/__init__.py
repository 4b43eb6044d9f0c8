"""MinPy's ``minpy.utils``: ``gradient_checker.quick_grad_check`` and ``minprof.minprof``."""
from . import gradient_checker, minprof   # noqa: F401
