"""minpy.engine: the dependency engine (MXNet style), the bottom layer.

Every resource is a ``Var``.  ``push(fn, reads, writes)`` queues the
zero-argument callable ``fn`` to run after every earlier op that writes a
var it reads, and after every earlier op that reads or writes a var it
writes.  Reads of one version run in parallel; writes run in push order.  A
var in both ``reads`` and ``writes`` is scheduled as a write (and a failed
one poisons the op as a read does, see Errors).

Engines: ``NaiveEngine`` runs each op inline inside ``push`` (debugging);
``ThreadedEngine`` runs ops on worker threads, one pool per device.  The
engine is chosen at import by env ``MINPY_ENGINE=naive|threaded`` (default
threaded); the CPU pool size by ``MINPY_CPU_WORKERS`` (default 1).

Backpressure: the threaded engine's ``push`` blocks while too much is in
flight: env ``MINPY_ENGINE_MAX_INFLIGHT`` ops (default 1024) or
``MINPY_ENGINE_MAX_INFLIGHT_BYTES`` of the sizes ops declare with
``push(..., nbytes=)`` (default 16 MiB; async mode declares each pushed
call's output); 0 turns a bound off.

Storage: ``storage_var`` / ``bind_storage`` / ``wait_storage`` keep one Var per
buffer root (the array owning the memory), so that every view of a buffer
orders against every other (see ``minpy.engine.storage``).

Errors: an exception raised by ``fn`` is stored on the vars the op writes.
Later ops that read a failed var are skipped and the vars they write inherit
the same error.  The **original exception object** is re-raised (with a
note "raised inside minpy.engine op NAME") by **every** ``wait_for(var)`` on
an affected var -- a failed value is never read as if it were valid -- and
by ``waitall()`` once.  The error stays on a var until an op that writes it
succeeds.  An op that writes a failed var without reading it (not listed in
``reads``) is skipped while the error is unseen as of its push, and runs --
rewriting the var -- when pushed after the error was raised to the user; so
the outcome never depends on thread timing.  An op that writes no var and
fails is reported by ``waitall()``; errors still unraised at exit are
reported on stderr.  ``EngineError`` is only for misuse (deleted vars,
waiting inside an op).

Cancellation: ``cancel_pending()`` skips every op pushed so far that has not
started; the vars such an op writes raise ``EngineCancelled`` when read
(until rewritten); ``waitall`` does not report it.  The threaded engine
cancels on a ``KeyboardInterrupt`` inside one of its waits (or a held-back
push) and at an interpreter exit caused by an uncaught exception, so Ctrl-C
never waits for a backlog; a normal exit still finishes pushed work.
"""
from .current import (push, wait_for, waitall, delete_var, get_engine, num_pending,
                      set_engine, cancel_pending)
from .naive import NaiveEngine
from .rng import GLOBAL_STATE, Guarded, guarded_rng
from .storage import adopt_storage, bind_storage, root_of, storage_var, wait_storage
from .threaded import ThreadedEngine, default_cpu_workers, default_inflight_limits
from .var import EngineCancelled, EngineError, Var, new_var

__all__ = [
    "Var", "new_var", "EngineError", "EngineCancelled", "push", "wait_for", "waitall",
    "num_pending", "cancel_pending", "delete_var", "get_engine", "set_engine", "NaiveEngine",
    "ThreadedEngine", "Guarded", "guarded_rng", "GLOBAL_STATE", "default_cpu_workers",
    "default_inflight_limits", "storage_var", "bind_storage", "adopt_storage", "root_of",
    "wait_storage",
]
