"""The front door: every call that is not a wrapper's straight NumPy path.

In order: a call made while this thread records a gradient goes to the tape (a
write in place to the functional replay); a call made while this thread is traced
by ``minpy.jit`` runs and goes to the tracer (:func:`minpy.core.execute.run_traced`);
in async mode a large CPU ufunc or matmul is pushed to the engine and anything
else first waits for its inputs; then the call runs on the device chosen by
placement and policy (:func:`minpy.core.execute.run_untraced`: device, operand
movement, backend call). The two recorders are described in
:mod:`minpy.core.recorder`.

:func:`opaque_step` is the front door of an in-place update computed outside
minpy's primitives (an optimizer's fused kernel).
"""
import threading

from ..dispatch import state
from . import async_work, inplace, tape
from .array import Array
from .execute import mutated, run_traced, run_untraced
from .recorder import OpaquePrimitive
from .trace import rewrap

__all__ = ["call", "opaque_step"]

_process = state.process
_per_thread = state.per_thread


def call(prim, args, kwargs):
    """Run primitive ``prim`` on ``args``/``kwargs`` (recording, pushing or running it)."""
    flags = _per_thread.flags
    if flags.depth:
        if _process.async_on:                  # the tape runs calls at once: their
            async_work.wait_inputs(args, kwargs)   # inputs' pending writes go first
        if prim.mutates is not None or (kwargs and kwargs.get("out") is not None):
            return inplace.record_write(prim, args, kwargs)
        return tape.record(prim, args, kwargs)
    tracer = flags.tracer
    if tracer is not None:
        return run_traced(tracer, prim, args, kwargs)
    if _process.async_on:
        pushed = async_work.try_push(prim, args, kwargs)
        if pushed is not None:
            return pushed
        async_work.wait_inputs(args, kwargs)
    return run_untraced(prim, args, kwargs)


# ------------------------------------------------------------ opaque in-place steps
def _step_forward(writes, fn, args, replay):
    res = fn(*args)
    for w in writes:
        mutated(w)
    return res


def _step_replay(call_args, kwargs, res):
    writes, fn, args, again = call_args
    again = fn if again is None else again

    def replay(*raws):
        again(*rewrap(raws))
        return ()
    return replay, list(args), [], list(writes)


_STEPS = {}             # name -> its OpaquePrimitive
_steps_lock = threading.Lock()


def _step_primitive(name):
    prim = _STEPS.get(name)
    if prim is None:
        with _steps_lock:
            prim = _STEPS.get(name)
            if prim is None:
                # positional argument 0 (the written Arrays) is what a tape checks
                prim = _STEPS[name] = OpaquePrimitive(name, _step_forward, _step_replay,
                                                      side_effect=True, mutates=0)
    return prim


def opaque_step(name, fn, args, writes, replay=None):
    """Run ``fn(*args)``, an update in place of the Arrays ``writes`` (among ``args``)
    computed outside minpy's primitives, as one primitive call through the front door.

    Under a gradient tape, a write into an array the tape traces or saved for its
    backward pass is refused, as for any write in place; under ``minpy.jit`` the call
    is recorded as one opaque step whose replay calls ``replay`` (default ``fn``) again
    with Arrays over the current buffers of ``args`` (so state it keeps, such as an
    optimizer's step count, advances at each replay). The written Arrays are marked
    written (``mutated``) afterwards.

    Args:
        name: the step's name in errors and traces (``'SGD.step'``).
        fn: ``fn(*args)``; writes into ``writes`` in place.
        args: the Arrays (and other values) ``fn`` takes.
        writes: the Arrays among ``args`` that ``fn`` writes.
        replay: what a ``minpy.jit`` replay calls instead of ``fn``, with the same
            arguments (for an ``fn`` that uses what was prepared for this call only).
    Returns:
        What ``fn`` returns.
    """
    writes = tuple(writes)
    for w in writes:
        if type(w) is not Array:
            raise TypeError(f"opaque_step: {name}: the arrays written in place must be "
                            f"minpy Arrays, got {type(w).__name__}")
    return call(_step_primitive(name), (writes, fn, tuple(args), replay), {})
