"""The dispatch state read on every call, and the only module that writes it.

Process-wide (``process``, one slotted object):

- ``gpu``: the GPU Backend, or None; ``policy``: the device policy name;
  ``async_on``: async mode; ``fallback_warn``: warn once per CPU fallback;
  ``tapes``: recording tapes in all threads together.
- ``tracers``: threads tracing a function for ``minpy.jit`` (each counted once).
- derived: ``cpu_only`` (every call runs on NumPy: no GPU backend, policy not
  ``only_gpu``), ``eager`` (``cpu_only`` and not async: a call runs inline on
  NumPy unless it records), ``fast`` (``eager`` and no tape and no trace in any
  thread: the generated wrappers' straight NumPy call).

Per thread (:func:`thread_flags`): ``depth`` (this thread's recording tapes),
``tracer`` (the ``minpy.jit`` tracer recording this thread's calls, or None)
and ``one_tape``, the tape the straight-NumPy recording shortcuts use: the
thread's tape when it has exactly one, traces nothing and the process is
``eager``; :data:`NO_TAPE` (it records nothing, so a shortcut just calls
NumPy) when the thread records and traces nothing and the process is
``eager``; else None (shortcuts off: the front door, where the recorders see
every call). Tapes and traces are per thread, so a ``grad`` or a ``minpy.jit``
trace in one thread leaves another thread's calls on NumPy through the
shortcuts while ``process.fast`` is off.

Every change goes through a named transition below, which recomputes what
depends on it; the hot path reads one attribute.
"""
import threading
import weakref

__all__ = ["process", "per_thread", "thread_flags", "NO_TAPE", "set_gpu", "set_policy_name", "set_async", "enter_tape",
           "exit_tape", "enter_trace", "exit_trace", "set_fallback_warning", "recompute",
           "force_front_door"]


class ProcessState:
    __slots__ = ("gpu", "policy", "async_on", "fallback_warn", "tapes", "front_door_only",
                 "tracers", "cpu_only", "eager", "fast")

    def __init__(self):
        self.gpu = None
        self.policy = "prefer_gpu"
        self.async_on = False
        self.fallback_warn = True
        self.tapes = 0
        self.front_door_only = False   # tests and debugging: no straight paths
        self.tracers = 0               # threads tracing a function for minpy.jit
        self.cpu_only = self.eager = self.fast = True


class _NoTape:
    """The tape of a thread that records nothing: no Array is traced by it."""

    __slots__ = ()
    level = 0
    active = False

    def __repr__(self):
        return "NO_TAPE"


NO_TAPE = _NoTape()


class ThreadFlags:
    __slots__ = ("depth", "first_tape", "one_tape", "tracer", "keep_scalars", "__weakref__")

    def __init__(self):
        self.depth = 0
        # > 0 while minpy's own code (a backward pass) computes on scalar Arrays: NumPy
        # scalar results then stay scalar Arrays (see minpy.core.array.wrap)
        self.keep_scalars = 0
        self.tracer = None          # the minpy.jit trace recording this thread's calls
        self.first_tape = None      # the outermost recording tape of this thread
        self.one_tape = NO_TAPE if process.eager else None


process = ProcessState()
_lock = threading.Lock()
_threads = weakref.WeakSet()     # every thread's ThreadFlags (dropped with the thread)


class _PerThread(threading.local):
    def __init__(self):
        self.flags = ThreadFlags()
        with _lock:
            _threads.add(self.flags)


per_thread = _PerThread()     # ``per_thread.flags``: this thread's ThreadFlags


def thread_flags():
    """This thread's :class:`ThreadFlags`."""
    return per_thread.flags


def _derive_thread(f):
    if not process.eager or f.depth > 1 or f.tracer is not None:
        f.one_tape = None
    else:
        f.one_tape = f.first_tape if f.depth == 1 else NO_TAPE


def _derive_fast():
    # callers hold _lock
    process.fast = process.eager and process.tapes == 0 and process.tracers == 0


def _derive():
    # callers hold _lock
    process.cpu_only = process.gpu is None and process.policy != "only_gpu"
    process.eager = (process.cpu_only and not process.async_on and not process.front_door_only)
    _derive_fast()
    for f in list(_threads):
        _derive_thread(f)


def _set(field, value):
    """Set a primary process-wide field, derive the rest; returns the previous value."""
    with _lock:
        prev = getattr(process, field)
        setattr(process, field, value)
        _derive()
    return prev


def set_gpu(backend):
    """Install GPU ``backend`` (None removes it); returns the previous one."""
    return _set("gpu", backend)


def set_policy_name(name):
    """Set the (already validated) policy ``name``; returns the previous one."""
    return _set("policy", name)


def set_async(enabled):
    """Async mode on or off; returns the previous setting."""
    return _set("async_on", bool(enabled))


def set_fallback_warning(enabled):
    """Turn the once-per-function warning on CPU fallback on or off."""
    process.fallback_warn = bool(enabled)


def _tapes_changed(stack, change):
    f = per_thread.flags
    depth = f.depth = len(stack)
    first = f.first_tape = stack[0] if stack else None
    with _lock:
        process.tapes += change
        process.fast = process.eager and process.tapes == 0 and process.tracers == 0
    # _derive_thread(f) inline: this runs twice per grad call
    if not process.eager or depth > 1 or f.tracer is not None:
        f.one_tape = None
    else:
        f.one_tape = first if depth == 1 else NO_TAPE


def enter_tape(stack):
    """A tape started recording in this thread; ``stack``: the thread's tapes now."""
    _tapes_changed(stack, 1)


def exit_tape(stack):
    """A tape of this thread stopped recording; ``stack``: the thread's tapes now."""
    _tapes_changed(stack, -1)


def _trace_changed(f, change):
    with _lock:
        process.tracers += change
        _derive_fast()
        _derive_thread(f)


def enter_trace(tracer):
    """This thread starts recording its calls into ``tracer`` (``minpy.jit``): its
    calls then take the front door, where the tracer sees them; other threads keep
    their shortcuts. Returns the previous tracer of the thread (traces nest: an
    inner one ends before the outer)."""
    f = per_thread.flags
    prev, f.tracer = f.tracer, tracer
    if prev is None:
        _trace_changed(f, 1)
    return prev


def exit_trace(prev):
    """End this thread's innermost trace; ``prev`` is what :func:`enter_trace` returned."""
    f = per_thread.flags
    f.tracer = prev
    if prev is None:
        _trace_changed(f, -1)


def force_front_door(enabled):
    """Send every call through the front door (no wrapper straight path, no recording
    shortcut) while ``enabled``; for tests and debugging. Returns the previous setting."""
    return _set("front_door_only", bool(enabled))


def recompute():
    """Derive every flag again from the primary state (what each transition does)."""
    with _lock:
        _derive()
