"""Behaviour shared by the naive and the threaded engine: error bookkeeping."""
from .var import EngineCancelled, Var, _ErrorRecord, tick

__all__ = ["Engine"]


def _op_label(name, fn):
    if name is not None:
        return str(name)
    return getattr(fn, "__qualname__", None) or repr(fn)


class Engine:
    """Base class of the engines; see ``minpy.engine`` for the semantics.

    Subclasses implement ``push``, ``wait_for``, ``waitall``, ``delete_var``,
    ``cancel_pending`` and ``shutdown``.  Unseen errors are kept here in push
    order so that ``waitall`` can re-raise the first one and none is ever lost.
    """

    kind = None

    def __init__(self):
        self._unseen = {}    # _ErrorRecord -> None, insertion ordered

    def new_var(self, name=None):
        """Create a new ``Var`` (vars are not bound to an engine)."""
        return Var(name)

    def num_pending(self):
        """Ops pushed and not finished (an engine running ops inline has none)."""
        return 0

    def inflight_bytes(self):
        """Sum of the ``nbytes`` of the ops pushed and not finished."""
        return 0

    def cancel_pending(self):
        """Cancel every op pushed so far that has not started (none pend here)."""

    def in_op(self):
        """True in a thread running one of this engine's ops."""
        return False

    # -- error bookkeeping; callers hold the engine lock -------------------
    def _new_error(self, exc, name, fn):
        """Record ``exc`` raised by an op; returns its shared record."""
        try:
            exc.add_note(f"(raised inside minpy.engine op {_op_label(name, fn)!r})")
        except AttributeError:      # pragma: no cover - exotic exceptions
            pass
        rec = _ErrorRecord(exc)
        self._unseen[rec] = None
        return rec

    def delete_var(self, var):
        """Delete ``var``: at once if nothing is pending on it, else after its pending
        ops (as a write op). Further pushes touching it raise EngineError; deleting
        twice is a no-op."""
        if not isinstance(var, Var):
            raise TypeError(f"expected a Var, got {var!r}")
        with self._lock:
            if var._doomed:
                return
            var._doomed = True
            if not self._delete_later(var):
                var.deleted = True

    def _delete_later(self, var):
        """Schedule the deletion of ``var`` behind its pending ops; False if none pend."""
        return False

    def _cancelled(self, name, fn):
        """A record for an op cancelled before it ran: seen at once (a cancel is
        no error of the program: ``waitall`` does not raise it), raised by reads."""
        exc = EngineCancelled(
            f"minpy.engine: op {_op_label(name, fn)!r} was cancelled before it ran "
            "(KeyboardInterrupt, cancel_pending() or exit); the value it writes is "
            "undefined until rewritten")
        return _ErrorRecord(exc, tick())

    def _var_error(self, var, seq=None):
        """``var``'s error record (marked seen as of push number ``seq``,
        default now, the first time), else None: it stays on ``var`` until an
        op rewrites it, so every read raises it."""
        rec = var._error
        if rec is None:
            return None
        if rec.cleared_at is None:
            rec.cleared_at = tick() if seq is None else seq
            self._unseen.pop(rec, None)
        return rec

    def _take_first_error(self):
        """Mark the oldest unseen error seen as of now and return it, else None."""
        for rec in self._unseen:
            del self._unseen[rec]
            rec.cleared_at = tick()
            return rec
        return None

    def _adopt_errors(self, other):
        """Take over ``other``'s unseen errors (used by ``set_engine``)."""
        self._unseen.update(other._unseen)
        other._unseen.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.shutdown()
