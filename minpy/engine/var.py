"""``Var``: a resource tag tracked by the dependency engine.

A Var stands for one resource (an array's storage, a random generator, a
KVStore key).  It carries no data itself; the engine orders the operations
that read or write it.  The per-var scheduling state (a queue of pending
operations, the number of running readers, whether a writer is running) and
the stored error live in slots on the Var and are only touched by an engine
while it holds its lock.
"""
import itertools

__all__ = ["Var", "new_var", "EngineError", "EngineCancelled"]

_ids = itertools.count()
# Push sequence numbers, shared by all engines so that they stay monotonic
# when vars outlive an engine (set_engine).  next() on a count is atomic.
tick = itertools.count().__next__


class EngineError(RuntimeError):
    """Misuse of the engine (e.g. pushing an op that touches a deleted var).

    Errors raised *inside* ops are never wrapped in this class: the engine
    re-raises the op's original exception object (see ``minpy.engine``).
    """


class EngineCancelled(RuntimeError):
    """Raised when reading a value whose op was cancelled before it ran.

    Ops not yet started are cancelled by a ``KeyboardInterrupt`` that reaches a
    wait of the threaded engine, by ``cancel_pending()`` and at an interpreter
    exit caused by an uncaught exception (see ``minpy.engine``).  Their output
    vars keep raising this error until they are rewritten.
    """


class Var:
    """A resource tag with a version counter.

    Attributes:
        id: unique integer id.
        name: optional label, used in ``repr``.
        version: number of writes to this var that completed successfully.
        deleted: True once the var's delete op (``delete_var``) has run.
    """

    __slots__ = ("id", "name", "version", "deleted",
                 "_queue", "_nreads", "_writing", "_error", "_doomed",
                 "__weakref__")

    def __init__(self, name=None):
        self.id = next(_ids)
        self.name = name
        self.version = 0
        self.deleted = False
        self._queue = None      # deque of (op, is_write) waiting for a grant
        self._nreads = 0        # granted, unfinished reads
        self._writing = False   # a granted, unfinished write
        self._error = None      # _ErrorRecord of the op that last wrote us
        self._doomed = False    # delete_var has been pushed

    def __repr__(self):
        label = "" if self.name is None else f" {self.name!r}"
        state = " deleted" if self.deleted else ""
        return f"<Var {self.id}{label} v{self.version}{state}>"


def new_var(name=None):
    """Create a new resource tag.

    Args:
        name: optional label for debugging.
    Returns:
        a fresh ``Var`` with version 0.
    """
    return Var(name)


class _ErrorRecord:
    """An exception raised inside an op, shared by every var it poisoned.

    ``cleared_at`` is None until the exception has been re-raised to the
    user (it is then "seen"); then it holds the push sequence number
    (``tick()``) of that moment.  A var keeps its record until an op writing
    it succeeds: reads of the var keep raising the error and ops reading it
    keep being skipped.  Ops that only *write* the var are skipped when
    pushed before ``cleared_at`` (so which dependants are skipped does not
    depend on timing) and run when pushed later: a write after the user has
    seen the error is taken as a rewrite.  ``tb`` is the traceback of the
    original raise, restored on every re-raise so that it does not grow.
    """

    __slots__ = ("exc", "cleared_at", "tb")

    def __init__(self, exc, cleared_at=None):
        self.exc = exc
        self.cleared_at = cleared_at
        self.tb = exc.__traceback__

    def reraise(self):
        """Raise the stored exception again, with its original traceback."""
        raise self.exc.with_traceback(self.tb)


def _as_vars(vs, what):
    out = (vs,) if isinstance(vs, Var) else tuple(vs)
    for v in out:
        if not isinstance(v, Var):
            raise TypeError(f"{what} must contain Var objects, got {v!r}")
        if v._doomed:
            raise EngineError(f"{v!r} has been deleted")
    return out


def normalize(reads, writes):
    """Validate and deduplicate an op's var lists.

    A var listed in both ``reads`` and ``writes`` is scheduled as a write
    only; duplicates are dropped, order otherwise kept.  A single ``Var`` may
    be passed instead of a sequence.

    Returns:
        ``(reads, writes, rw)`` as tuples; ``rw`` holds the vars of ``writes``
        that were listed in ``reads`` too (an error on them poisons the op as
        a read's does).
    Raises:
        TypeError: an entry is not a Var.
        EngineError: an entry has been passed to ``delete_var``.
    """
    if writes:
        w = _as_vars(writes, "writes")
        if len(w) > 1:
            w = tuple(dict.fromkeys(w))
        if reads:
            r = tuple(dict.fromkeys(_as_vars(reads, "reads")))
            rw = tuple(v for v in r if v in w)
            if rw:
                r = tuple(v for v in r if v not in w)
            return r, w, rw
        return (), w, ()
    if reads:
        r = _as_vars(reads, "reads")
        if len(r) > 1:
            r = tuple(dict.fromkeys(r))
        return r, (), ()
    return (), (), ()


def poisoned(reads, writes, seq=None, rw=()):
    """Return the first error record that poisons an op, else None.

    A failed var poisons every op reading it; it poisons an op writing it
    only while its error is unseen as of the op's push (see ``_ErrorRecord``).

    Args:
        reads, writes, rw: the op's vars (as returned by :func:`normalize`).
        seq: the op's push sequence number; None means "pushed just now".
    """
    for vs in (reads, rw):
        for v in vs:
            rec = v._error
            if rec is not None:
                return rec
    for v in writes:
        rec = v._error
        if rec is not None and (rec.cleared_at is None or (
                seq is not None and seq < rec.cleared_at)):
            return rec
    return None
