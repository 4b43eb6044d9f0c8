"""MinPy's ``minpy.context``: devices and the default context (see :mod:`minpy.compat`).

``set_context(ctx)`` makes ``ctx`` the default context of the calling thread,
as ``with ctx:`` does for a block; ``set_context(gpu(0))`` without a GPU raises
RuntimeError, as ``with minpy.gpu(0):`` does.
"""
from .compat import Context, cpu, gpu, current_context, set_context   # noqa: F401

__all__ = ["Context", "cpu", "gpu", "current_context", "set_context"]
