"""The dispatch state read on every call, and the only module that writes it.

Process-wide (``process``, one slotted object):

- ``gpu``: the GPU Backend, or None; ``policy``: the device policy name;
  ``async_on``: async mode; ``fallback_warn``: warn once per CPU fallback;
  ``tapes``: recording tapes in all threads together.
- derived: ``cpu_only`` (every call runs on NumPy: no GPU backend, policy not
  ``only_gpu``), ``eager`` (``cpu_only`` and not async: a call runs inline on
  NumPy unless it records), ``fast`` (``eager`` and no tape in any thread: the
  generated wrappers' straight NumPy call).

Per thread (:func:`thread_flags`): ``depth`` (this thread's recording tapes)
and ``one_tape``: the thread's tape when it has exactly one and the process
is ``eager``, else None — the tape's straight-NumPy recording shortcuts run
exactly when it is set. Tapes are per thread, so a ``grad`` in one thread
leaves another thread on NumPy (through the front door, not the wrappers'
shortcut, while ``process.fast`` is off).

Every change goes through a named transition below, which recomputes what
depends on it; the hot path reads one attribute.
"""
import threading
import weakref

__all__ = ["process", "per_thread", "thread_flags", "set_gpu", "set_policy_name", "set_async", "enter_tape",
           "exit_tape", "set_fallback_warning", "disable_shortcuts", "recompute"]


class ProcessState:
    __slots__ = ("gpu", "policy", "async_on", "fallback_warn", "tapes",
                 "cpu_only", "eager", "fast")

    def __init__(self):
        self.gpu = None
        self.policy = "prefer_gpu"
        self.async_on = False
        self.fallback_warn = True
        self.tapes = 0
        self.cpu_only = self.eager = self.fast = True


class ThreadFlags:
    __slots__ = ("depth", "first_tape", "one_tape", "__weakref__")

    def __init__(self):
        self.depth = 0
        self.first_tape = None      # the outermost recording tape of this thread
        self.one_tape = None


process = ProcessState()
_lock = threading.Lock()
_threads = weakref.WeakSet()     # every thread's ThreadFlags (dropped with the thread)


class _PerThread(threading.local):
    def __init__(self):
        self.flags = ThreadFlags()
        with _lock:
            _threads.add(self.flags)


per_thread = _PerThread()     # ``per_thread.flags``: this thread's ThreadFlags
_local = per_thread


def thread_flags():
    """This thread's :class:`ThreadFlags`."""
    return _local.flags


def _derive_thread(f):
    f.one_tape = f.first_tape if f.depth == 1 and process.eager else None


def _derive():
    # callers hold _lock
    process.cpu_only = process.gpu is None and process.policy != "only_gpu"
    process.eager = process.cpu_only and not process.async_on
    process.fast = process.eager and process.tapes == 0
    for f in list(_threads):
        _derive_thread(f)


def set_gpu(backend):
    """Install GPU ``backend`` (None removes it); returns the previous one."""
    with _lock:
        prev, process.gpu = process.gpu, backend
        _derive()
    return prev


def set_policy_name(name):
    """Set the (already validated) policy ``name``; returns the previous one."""
    with _lock:
        prev, process.policy = process.policy, name
        _derive()
    return prev


def set_async(enabled):
    """Async mode on or off; returns the previous setting."""
    with _lock:
        prev, process.async_on = process.async_on, bool(enabled)
        _derive()
    return prev


def set_fallback_warning(enabled):
    """Turn the once-per-function warning on CPU fallback on or off."""
    process.fallback_warn = bool(enabled)


def enter_tape(stack):
    """A tape started recording in this thread; ``stack``: the thread's tapes now."""
    f = _local.flags
    f.depth = len(stack)
    f.first_tape = stack[0]
    with _lock:
        process.tapes += 1
        process.fast = False
    _derive_thread(f)


def exit_tape(stack):
    """A tape of this thread stopped recording; ``stack``: the thread's tapes now."""
    f = _local.flags
    f.depth = len(stack)
    f.first_tape = stack[0] if stack else None
    with _lock:
        process.tapes -= 1
        process.fast = process.eager and process.tapes == 0
    _derive_thread(f)


def recompute():
    """Derive every flag again from the primary state (what each transition does)."""
    with _lock:
        _derive()


def disable_shortcuts():
    """Until this thread's next tape transition, its calls skip the one-tape recording
    shortcuts and take the front door (for tests and debugging)."""
    _local.flags.one_tape = None
