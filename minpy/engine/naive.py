"""NaiveEngine: runs every op inline, inside ``push`` (for debugging)."""
import threading

from .base import Engine
from .var import Var, normalize, poisoned

__all__ = ["NaiveEngine"]


class NaiveEngine(Engine):
    """Executes each op synchronously in the pushing thread.

    Dependencies are trivially satisfied because every earlier op has
    already finished.  Errors follow the threaded engine's rules exactly:
    they are stored on the vars the op writes, dependants are skipped, and
    the error is re-raised once by ``wait_for`` / ``waitall``.  A
    ``BaseException`` that is not an ``Exception`` (KeyboardInterrupt,
    SystemExit) propagates out of ``push`` immediately.  Concurrent pushes
    are serialized by a re-entrant lock (an op may push further ops).
    """

    kind = "naive"

    def __init__(self):
        super().__init__()
        self._lock = threading.RLock()

    def push(self, fn, reads=(), writes=(), name=None, device=None, priority=0):
        """Run ``fn()`` now (``priority`` has nothing to order); see ``minpy.engine.push``."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {fn!r}")
        reads, writes = normalize(reads, writes)
        with self._lock:
            rec = poisoned(reads, writes)
            if rec is None:
                try:
                    fn()
                except Exception as exc:
                    rec = self._new_error(exc, name, fn)
                else:
                    for v in writes:
                        v._error = None
                        v.version += 1
                    return
            for v in writes:
                v._error = rec

    def wait_for(self, var):
        """Nothing is pending; re-raise ``var``'s unseen error, if any."""
        with self._lock:
            rec = self._take_var_error(var)
        if rec is not None:
            raise rec.exc

    def waitall(self):
        """Re-raise the oldest unseen error, if any."""
        with self._lock:
            rec = self._take_first_error()
        if rec is not None:
            raise rec.exc

    def shutdown(self):
        """Nothing to stop; present for interface symmetry."""

    def __repr__(self):
        return "<NaiveEngine>"

