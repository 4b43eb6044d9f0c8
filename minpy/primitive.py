"""MinPy's ``minpy.primitive``: ``@customop('numpy')`` with ``.def_grad`` (see :mod:`minpy.compat`)."""
from .compat import customop   # noqa: F401

__all__ = ["customop"]
