"""The current engine of the process: chosen at import by ``MINPY_ENGINE``,
replaced by :func:`set_engine`; the module-level ``push``/``wait_for``/
``waitall``/``delete_var`` forward to it.
"""
import atexit
import os
import sys
import threading

from .naive import NaiveEngine
from .threaded import ThreadedEngine

__all__ = ["push", "wait_for", "waitall", "delete_var", "get_engine", "set_engine",
           "cancel_pending"]

_ENGINES = {"naive": NaiveEngine, "threaded": ThreadedEngine}
_switch_lock = threading.Lock()


def _make(kind, **opts):
    try:
        cls = _ENGINES[kind]
    except KeyError:
        raise ValueError(f"unknown engine {kind!r}; expected 'naive' or 'threaded'") from None
    return cls(**opts)


def _from_env():
    kind = os.environ.get("MINPY_ENGINE", "").strip().lower() or "threaded"
    return _make(kind)


_engine = _from_env()


def _report_unseen():
    # Runs after the threaded engine has drained (threading's exit hooks run
    # before atexit's), so no error ever disappears silently.
    unseen = list(_engine._unseen)
    if unseen:
        first = unseen[0].exc
        sys.stderr.write(f"minpy.engine: {len(unseen)} op error(s) were never "
                         f"re-raised; first: {type(first).__name__}: {first}\n")


atexit.register(_report_unseen)


def get_engine():
    """Return the current engine (a ``NaiveEngine`` or ``ThreadedEngine``)."""
    return _engine


def set_engine(kind, **opts):
    """Replace the current engine.

    Waits for the old engine to drain, shuts it down (ops pushed to it later
    run inline) and carries its unseen errors over to the new engine.

    Args:
        kind: ``'naive'`` or ``'threaded'``, or an Engine instance.
        **opts: constructor options, e.g. ``num_cpu_workers=4``.
    Returns:
        the new engine.
    """
    global _engine
    new = kind if not isinstance(kind, str) else _make(kind, **opts)
    with _switch_lock:
        old = _engine
        if old is new:
            return new
        old.shutdown()
        new._adopt_errors(old)
        _engine = new
    return new


def push(fn, reads=(), writes=(), name=None, device=None, priority=0, nbytes=0):
    """Queue an operation on the current engine.

    Blocks first while the threaded engine's in-flight bounds are reached
    (``MINPY_ENGINE_MAX_INFLIGHT`` ops, ``MINPY_ENGINE_MAX_INFLIGHT_BYTES``).

    Args:
        fn: zero-argument callable doing the work.
        reads: Vars (or one Var) that ``fn`` reads.
        writes: Vars (or one Var) that ``fn`` writes.  A var that ``fn`` reads
            *and* writes belongs in both lists: an op listing a failed var in
            ``writes`` only is taken to rewrite it, once its error was seen.
        name: label used in error notes; defaults to ``fn.__qualname__``.
        device: pool to run on: None/'cpu' -> CPU pool, other hashable keys
            such as ``('gpu', 0)`` get their own pool.
        priority: among ops ready at once in a pool, higher runs first (ties in
            push order), as MXNet's ``priority`` on KVStore push/pull.
        nbytes: memory the op holds until it finishes (e.g. its freshly
            allocated outputs), counted against the in-flight byte bound.
    Returns:
        None.  Use ``wait_for``/``waitall`` to synchronize.
    Raises:
        TypeError: ``fn`` not callable or a non-Var in reads/writes.
        EngineError: a var has been deleted.
    """
    return _engine.push(fn, reads, writes, name, device, priority, nbytes)


def wait_for(var, reraise=True):
    """Block until every op pushed so far that reads or writes ``var`` has
    finished; re-raise the error stored on ``var`` (on every call, until an op
    rewrites ``var``) unless ``reraise`` is False (a resource var, such as
    ``GLOBAL_STATE``, whose failed op's error belongs to that op's outputs)."""
    return _engine.wait_for(var, reraise)


def waitall():
    """Block until every pushed op has finished; re-raise the oldest unseen
    error (once; further errors are raised by later waits)."""
    return _engine.waitall()


def num_pending():
    """How many pushed ops have not finished yet (0 on the naive engine) -- a hint
    for code choosing between spinning and sleeping while it waits."""
    return _engine.num_pending()


def cancel_pending():
    """Cancel every op pushed so far that has not started (their outputs raise
    ``EngineCancelled`` when read, until rewritten); running ops finish."""
    return _engine.cancel_pending()


def delete_var(var):
    """Delete ``var`` once pending readers/writers are done (a write op).
    Pushing an op that touches it afterwards raises EngineError."""
    return _engine.delete_var(var)
