"""The front door: every call that is not a wrapper's straight NumPy path.

In order: a call made while this thread records goes to the tape (a write
in place to the functional replay); in async mode a large CPU ufunc or
matmul is pushed to the engine and anything else first waits for its
inputs; then the call runs on the device chosen by placement and policy
(:func:`minpy.core.execute.run`: device, operand movement, backend call).
"""
from ..dispatch import state
from . import async_work, inplace, tape
from .execute import run

__all__ = ["call"]

_process = state.process
_per_thread = state.per_thread


def call(prim, args, kwargs):
    """Run primitive ``prim`` on ``args``/``kwargs`` (recording, pushing or running it)."""
    if _per_thread.flags.depth:
        if _process.async_on:                  # the tape runs calls at once: their
            async_work.wait_inputs(args, kwargs)   # inputs' pending writes go first
        if prim.mutates is not None or (kwargs and kwargs.get("out") is not None):
            return inplace.record_write(prim, args, kwargs)
        return tape.record(prim, args, kwargs)
    if _process.async_on and _per_thread.flags.tracer is None:
        pushed = async_work.try_push(prim, args, kwargs)
        if pushed is not None:
            return pushed
        async_work.wait_inputs(args, kwargs)
    return run(prim, args, kwargs)
