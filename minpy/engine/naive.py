"""NaiveEngine: runs every op inline, inside ``push`` (for debugging)."""
import threading

from .base import Engine
from .var import normalize, poisoned

__all__ = ["NaiveEngine"]


class NaiveEngine(Engine):
    """Executes each op synchronously in the pushing thread.

    Dependencies are trivially satisfied because every earlier op has
    already finished.  Errors follow the threaded engine's rules exactly:
    they are stored on the vars the op writes, dependants are skipped, and
    the error is re-raised by every ``wait_for`` on those vars (until
    rewritten) and once by ``waitall``.  A
    ``BaseException`` that is not an ``Exception`` (KeyboardInterrupt,
    SystemExit) propagates out of ``push`` immediately.  Concurrent pushes
    are serialized by a re-entrant lock (an op may push further ops).
    """

    kind = "naive"

    def __init__(self):
        super().__init__()
        self._lock = threading.RLock()
        self._running = threading.local()   # .depth: ops running in this thread

    def push(self, fn, reads=(), writes=(), name=None, device=None, priority=0, nbytes=0):
        """Run ``fn()`` now (``priority`` has nothing to order, ``nbytes`` nothing to
        bound); see ``minpy.engine.push``."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {fn!r}")
        reads, writes, rw = normalize(reads, writes)
        with self._lock:
            rec = poisoned(reads, writes, None, rw)
            if rec is None:
                run = self._running
                run.depth = getattr(run, "depth", 0) + 1
                try:
                    fn()
                except Exception as exc:
                    rec = self._new_error(exc, name, fn)
                else:
                    for v in writes:
                        v._error = None
                        v.version += 1
                    return
                finally:
                    run.depth -= 1
            for v in writes:
                v._error = rec

    def in_op(self):
        """True while this thread runs one of this engine's ops."""
        return getattr(self._running, "depth", 0) > 0

    def wait_for(self, var, reraise=True):
        """Nothing is pending; re-raise ``var``'s error, if any (every time, until
        an op rewrites ``var``), unless ``reraise`` is False."""
        with self._lock:
            rec = self._var_error(var)
        if rec is not None and reraise:
            rec.reraise()

    def waitall(self):
        """Re-raise the oldest unseen error, if any."""
        with self._lock:
            rec = self._take_first_error()
        if rec is not None:
            rec.reraise()

    def shutdown(self, cancel=False):
        """Nothing to stop or cancel; present for interface symmetry."""

    def __repr__(self):
        return "<NaiveEngine>"

