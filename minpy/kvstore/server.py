"""The parameter-server ranks of a ``dist_*`` job and the protocol workers speak to them.

A server rank (one of the last ``MINPY_KVSTORE_SERVERS`` ranks, see
:mod:`minpy.kvstore.wire`) runs :func:`serve`: it receives requests from any
worker, dispatching on the request's tuple, and applies each push as it
arrives (``dist_async``: no step waits for the other workers).  Measured here
before choosing it: dedicated ranks receiving from any source were correct
in every combination tried, while MPICH's passive-target RMA needs the target
to make MPI calls (or a progress thread burning a core) to see updates.

A request is a pickled tuple ``(op, store, key, extra)`` on tag
:data:`HEADER`; a pushed or initial value follows as a raw buffer on tag
:data:`DATA`; replies (values, acknowledgements) go back on tag :data:`REPLY`.
MPI keeps the messages of one sender on one tag in order, so a worker's
requests are served in the order it sent them.  The server waits on the next
request with short sleeps, so an idle server costs little CPU.

Ops: ``init`` (store a value), ``push`` (a gradient: the updater runs, else
the value is replaced), ``pull`` (send the value back), ``updater`` (a
pickled optimizer or updater function), ``flush`` (acknowledge: every earlier
request of that worker is applied), ``get_states`` / ``set_states``
(optimizer state), ``stop`` (the worker is leaving; the server returns when
every worker has).
"""
import atexit
import pickle
import sys
import time

import numpy

from .. import engine
from ..core.array import new
from .local import optimizer_updater
from .wire import mpi

__all__ = ["HEADER", "DATA", "REPLY", "serve", "serve_and_exit", "register_stop"]

HEADER, DATA, REPLY = 11, 12, 13
_BUSY_S = 20e-6          # poll interval right after a request ...
_IDLE_S = 500e-6         # ... and once idle for _IDLE_AFTER_S
_IDLE_AFTER_S = 0.05

_stops_registered = set()


class _Store:
    """One store's values on this server: ``(key, part) -> ndarray``, and its updater."""

    def __init__(self):
        self.values = {}
        self.updater = None
        self.optimizer = None


def serve(lay):
    """Serve the workers of ``lay`` (a :class:`~minpy.kvstore.wire.Layout`) until
    each has sent ``stop``."""
    MPI = mpi()
    world = lay.world
    remaining = world.Get_size() - len(lay.servers)
    stores = {}
    status = MPI.Status()
    last = time.perf_counter()
    while remaining:
        msg = world.improbe(MPI.ANY_SOURCE, HEADER, status)
        if msg is None:
            idle = time.perf_counter() - last
            time.sleep(_IDLE_S if idle > _IDLE_AFTER_S else _BUSY_S)
            continue
        src = status.Get_source()
        op, store_id, key, extra = msg.recv()
        last = time.perf_counter()
        if op == "stop":
            remaining -= 1
            continue
        store = stores.setdefault(store_id, _Store())
        _HANDLERS[op](world, src, store, key, extra)


def _recv_value(world, src, shape, dtype):
    buf = numpy.empty(shape, dtype)
    world.Recv(buf, source=src, tag=DATA)
    return buf


def _on_init(world, src, store, key, extra):
    shape, dtype = extra
    store.values[key] = _recv_value(world, src, shape, dtype)
    world.send(None, dest=src, tag=REPLY)


def _on_push(world, src, store, key, extra):
    stored = store.values[key]
    grad = _recv_value(world, src, stored.shape, stored.dtype)
    if store.updater is None:
        stored[...] = grad
    else:
        store.updater(key[0], new(grad), new(stored))


def _on_pull(world, src, store, key, extra):
    world.Send(store.values[key], dest=src, tag=REPLY)   # blocking: a later push may not
                                                         # change it while it is sent


def _on_updater(world, src, store, key, extra):
    try:
        kind, obj = pickle.loads(extra)
    except Exception as e:      # report to the worker (it raises) rather than kill the job
        world.send(f"{type(e).__name__}: {e}", dest=src, tag=REPLY)
        return
    store.optimizer = obj if kind == "optimizer" else None
    store.updater = optimizer_updater(obj) if kind == "optimizer" else obj
    world.send(None, dest=src, tag=REPLY)


def _on_flush(world, src, store, key, extra):
    world.send(None, dest=src, tag=REPLY)


def _on_get_states(world, src, store, key, extra):
    state = None if store.optimizer is None else store.optimizer.state_dict()
    world.send(state, dest=src, tag=REPLY)


def _on_set_states(world, src, store, key, extra):
    if store.optimizer is None:
        world.send("no optimizer is set on the servers", dest=src, tag=REPLY)
        return
    store.optimizer.load_state_dict(extra)
    world.send(None, dest=src, tag=REPLY)


_HANDLERS = {"init": _on_init, "push": _on_push, "pull": _on_pull, "updater": _on_updater,
             "flush": _on_flush, "get_states": _on_get_states, "set_states": _on_set_states}


def serve_and_exit(lay):
    """Run :func:`serve`, then end this (server) process: it has nothing else to do."""
    serve(lay)
    sys.exit(0)


def register_stop(lay):
    """At this worker's exit, tell every server it is leaving (once per job)."""
    key = lay.world.py2f()
    if lay.is_server or not lay.servers or key in _stops_registered:
        return
    _stops_registered.add(key)

    def stop():
        try:
            engine.waitall()          # this worker's queued pushes go out before its stop
        finally:
            for s in lay.servers:
                lay.world.send(("stop", None, None, None), dest=s, tag=HEADER)
    atexit.register(stop)
