"""minpy.engine: the dependency engine (MXNet style), the bottom layer.

Every resource is a ``Var``.  ``push(fn, reads, writes)`` queues the
zero-argument callable ``fn`` to run after every earlier op that writes a
var it reads, and after every earlier op that reads or writes a var it
writes.  Reads of one version run in parallel; writes run in push order.  A
var in both ``reads`` and ``writes`` counts as a write.

Engines: ``NaiveEngine`` runs each op inline inside ``push`` (debugging);
``ThreadedEngine`` runs ops on worker threads, one pool per device.  The
engine is chosen at import by env ``MINPY_ENGINE=naive|threaded`` (default
threaded); the CPU pool size by ``MINPY_CPU_WORKERS`` (default 1).

Errors: an exception raised by ``fn`` is stored on the vars the op writes.
Later ops that read or write a poisoned var are skipped and the vars they
write inherit the same error.  The **original exception object** is
re-raised (with a note "raised inside minpy.engine op NAME") by the next
``wait_for(var)`` on an affected var or by ``waitall()``, exactly once.
Once raised, the error is cleared from every var it poisoned (MXNet
semantics; their contents are unspecified until rewritten): ops pushed
after that point run normally, while ops pushed before it are still
skipped, so the outcome never depends on thread timing.  A successful write
also clears a var.  An op that writes no var and fails is reported by
``waitall()``; errors still unraised at exit are reported on stderr.
``EngineError`` is only for misuse (deleted vars, waiting inside an op).
"""
from .current import (push, wait_for, waitall, delete_var, get_engine, num_pending,
                      set_engine)
from .naive import NaiveEngine
from .rng import Guarded, guarded_rng
from .threaded import ThreadedEngine, default_cpu_workers
from .var import EngineError, Var, new_var

__all__ = [
    "Var", "new_var", "EngineError", "push", "wait_for", "waitall", "num_pending",
    "delete_var", "get_engine", "set_engine", "NaiveEngine",
    "ThreadedEngine", "Guarded", "guarded_rng", "default_cpu_workers",
]
