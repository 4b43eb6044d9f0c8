"""MinPy's ``minpy.context``: devices and the default context.

``Context``, ``cpu``, ``gpu`` and ``current_context`` are minpy's own
(:mod:`minpy.dispatch`); :func:`set_context` makes a context the default of the
calling thread, as ``with ctx:`` does for a block.
"""
import threading

from ..dispatch import Context, cpu, gpu, current_context   # noqa: F401  (MinPy's names)
from ..dispatch.context import explicit_context

__all__ = ["Context", "cpu", "gpu", "current_context", "set_context"]

_set_here = threading.local()     # the context set_context pushed in this thread


def set_context(ctx):
    """Make ``ctx`` the default context of this thread (MinPy's ``set_context``).

    Like entering ``with ctx:`` for the rest of the thread (minpy's default
    context is per thread; MinPy's was per process): ``gpu(i)`` without a GPU
    raises RuntimeError, as ``with minpy.gpu(i):`` does. A later call
    replaces it; ``set_context(None)`` goes back to the default, ``cpu(0)``.
    Calling it inside a ``with ctx:`` block raises RuntimeError.
    See also minpy.current_context.
    """
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"set_context: expected a Context such as minpy.cpu() or "
                        f"minpy.gpu(0), got {type(ctx).__name__}")
    prev = getattr(_set_here, "ctx", None)
    top = explicit_context()
    if top is not None and top is not prev:
        raise RuntimeError(f"set_context({ctx}) inside a 'with {top}:' block; call it outside "
                           "any 'with' context block")
    if top is not None:           # what the last set_context left on this thread's stack
        top.__exit__(None, None, None)
        _set_here.ctx = None
    if ctx is None:
        return
    ctx = Context(ctx.device_type, ctx.device_id)    # our own object: `is` finds it again
    try:
        ctx.__enter__()
    except BaseException:
        if top is not None:
            top.__enter__()
            _set_here.ctx = top
        raise
    _set_here.ctx = ctx
