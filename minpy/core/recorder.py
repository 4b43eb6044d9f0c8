"""The recorders of a thread, and the kind of primitive they replay as a black box.

A thread has two recorders, both entered through named transitions of
:mod:`minpy.dispatch.state` and both kept per thread:

- the gradient **tape** (``grad`` and friends; :mod:`minpy.core.tape`), at the
  top: it boxes traced Arrays and records a node per call, running the call one
  level down;
- the ``minpy.jit`` **tracer** (:class:`minpy.core.trace.Tracer`), at the bottom:
  it records every primitive that runs, whoever issued it (the user's code, the
  tape one level down, the backward pass).

They stack (a ``grad`` inside a jitted function is traced with its backward), so
there is no single "active recorder": :func:`minpy.core.call.call` (the front
door) chooses the tape first, then the tracer, else runs the call; the tape's
own runs reach :func:`minpy.core.execute.run`, which hands them to the tracer.
Those two modules are the only ones that hold the tracer; everything else asks
the queries here (:func:`tracing`, :func:`check_read`, :func:`traced_value`).

Both recorders take the same primitives, writes in place included. Code that
computes outside minpy's primitives (a symbol's executor, a fused optimizer
kernel) is called as an :class:`OpaquePrimitive` through the front door: the
tape records it as one node (its ``vjp``) or checks its writes, the tracer as one
opaque step whose replay runs it again. A ``customop`` is a primitive with a
``custom`` body: the tracer keeps the steps its body records, or replays it as
one opaque step if it computed on buffers (``Tracer.checked``).
"""
from ..dispatch import state
from .primitive import Primitive

__all__ = ["OpaquePrimitive", "tracing", "current_tracer", "traced_value", "check_read"]

_per_thread = state.per_thread
_process = state.process


class OpaquePrimitive(Primitive):
    """A primitive whose forward computes outside minpy's primitives, replayed by
    ``minpy.jit`` as one opaque step.

    Args:
        qualname: its name (in errors and in a trace's steps).
        forward: ``forward(*args, **kwargs)``, run as is on the call's Arrays.
        replay: ``replay(args, kwargs, result) -> (fn, inputs, outputs, writes)``:
            the step a trace records for one call. At each replay the program calls
            ``fn(*inputs)`` (Arrays among ``inputs`` passed as backend arrays, other
            objects that an earlier opaque step returned as themselves), which
            returns a tuple with one value per item of ``outputs`` (the call's result
            Arrays, or other objects a later opaque step takes); ``writes``: the
            Arrays among ``inputs`` that ``fn`` writes in place.
        side_effect: True when a replay must run even if no output is used (it
            writes in place, draws random numbers or advances some state).
        mutates: as :class:`Primitive` (the argument written in place: a gradient
            tape refuses a write into what it traces or saved).
    """

    __slots__ = ("replay", "side_effect")

    def __init__(self, qualname, forward, replay, side_effect=False, mutates=None):
        super().__init__(qualname, forward, mutates=mutates)
        self.custom = forward
        self.host_fn = None         # never the straight NumPy call: the body runs as is
        self.replay = replay
        self.side_effect = side_effect


def current_tracer():
    """This thread's ``minpy.jit`` tracer, or None (for the front door and the
    bottom of a call; other code asks :func:`tracing`)."""
    return _per_thread.flags.tracer


def tracing():
    """True while ``minpy.jit`` traces this thread's calls."""
    return _process.tracers != 0 and _per_thread.flags.tracer is not None


def traced_value(arr):
    """True when this thread's trace holds Array ``arr`` as a value that depends on the
    traced function's inputs (its value is not known until a replay)."""
    tracer = _per_thread.flags.tracer
    return tracer is not None and tracer.is_dynamic(arr)


def check_read(arr):
    """Refuse reading Array ``arr``'s value into Python when this thread's trace holds it
    as input-dependent (``minpy.JitTraceError``, or the trace is marked unusable with
    ``jit(..., fallback=True)``); nothing when this thread does not trace."""
    tracer = _per_thread.flags.tracer
    if tracer is not None:
        tracer.check_read(arr)
