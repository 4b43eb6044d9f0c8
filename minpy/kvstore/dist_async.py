"""``dist_async``: a parameter server on MPI; workers push and pull without waiting
for each other.

Launch with server ranks: ``python -m minpy.kvstore.launch -n 2 --servers 1
train.py`` (or ``MINPY_KVSTORE_SERVERS=1 mpiexec -n 3 python -m mpi4py
train.py``).  Each key lives on one server (chosen by a hash of the key);
an array of at least ``MINPY_KVSTORE_BIGARRAY_BOUND`` elements (default
1,000,000, MXNet's bound) is split into one contiguous part per server, so
big layers spread their traffic and their updates.  A push sends the
worker's sum and returns as soon as it is sent; the server applies the
updater (``set_optimizer`` / ``set_updater``, which run on the servers) as
pushes arrive, and a pull returns whatever the servers hold then.  The
parts of a split key are updated as flat 1-D slices (element-wise
optimizers do not mind; an updater that needs the shape should keep its
keys below the bound).

See also mxnet.kvstore.create('dist_async').
"""
import os
import pickle
import zlib

import numpy

from .. import engine
from ..core.async_work import var_of
from ..core.execute import mutated
from .local import copy_out, finish_unless_async, finishes_now, host_sum, init_keys
from .server import DATA, HEADER, REPLY
from .worker import WorkerKVStore

__all__ = ["DistAsyncKVStore"]

_store_ids = {}


def _bigarray_bound():
    raw = os.environ.get("MINPY_KVSTORE_BIGARRAY_BOUND", "").strip()
    return int(raw) if raw else 1_000_000


class DistAsyncKVStore(WorkerKVStore):
    """``dist_async``: see the module doc.  ``rank`` / ``num_workers`` count the
    workers; ``init`` takes worker 0's values; ``barrier`` returns once every
    worker got there and every push sent before it has been applied.

    Raises:
        ValueError: the job has no server ranks.
    """

    def __init__(self, comm=None):
        super().__init__("dist_async", comm)
        if not self._layout.servers:
            raise ValueError("minpy.kvstore.create('dist_async'): the job has no server ranks; "
                             "launch it with python -m minpy.kvstore.launch -n WORKERS --servers S "
                             "script.py (or set MINPY_KVSTORE_SERVERS=S under mpiexec)")
        self._world = self._layout.world
        # every worker creates its stores in the same order, so the ids agree
        key = self._world.py2f()
        self._id = _store_ids[key] = _store_ids.get(key, -1) + 1
        self._parts = {}                     # key -> [(server rank, lo, hi)]

    # ------------------------------------------------------------------ API
    def init(self, key, value):
        """As :meth:`KVStore.init`; worker 0's values go to the servers and every
        worker starts from them (collective over the workers)."""
        super().init(key, value)
        keys = init_keys(key)
        for k in keys:
            self._parts[k] = self._place(k, self._store[k]._data.size)
        if self.rank == 0:
            for k in keys:
                flat = self._store[k]._data.reshape(-1)
                for server, lo, hi in self._parts[k]:
                    part = flat[lo:hi]
                    self._send(server, ("init", self._id, (k, lo), (part.shape, part.dtype.str)),
                               part)
                    self._reply(server, "init", k)
        self._wait(self._comm.Ibarrier(), "init", keys[0])
        for k in keys:
            self._pull_one(k, self._store[k], [], 0)
        engine.wait_for(self._wire)

    def set_updater(self, updater):
        """Run ``updater(key, grad, stored)`` on the servers for every later push (it is
        pickled: a module-level function).  Collective over the workers."""
        super().set_updater(updater)            # checks it
        self._send_updater("set_updater", "updater", updater)

    _set_updater = set_updater

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` (a ``minpy.nn.optim`` optimizer) on the servers, its state
        kept there per key.  Collective over the workers."""
        super().set_optimizer(optimizer)        # checks it
        self._send_updater("set_optimizer", "optimizer", optimizer)

    def barrier(self):
        """Wait until this worker's requests are applied by the servers, then for every
        worker to get here: after it, a pull sees every push made before it."""
        engine.wait_for(self._wire)
        for server in self._layout.servers:
            self._send(server, ("flush", self._id, None, None))
            self._reply(server, "barrier", None)
        self._wait(self._comm.Ibarrier(), "barrier", None)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the servers' optimizer state (and, with ``dump_optimizer``, the
        optimizer) to ``fname``; any one worker may call it."""
        opt = self._need_optimizer("save_optimizer_states")
        engine.wait_for(self._wire)
        states = []
        for server in self._layout.servers:
            self._send(server, ("get_states", self._id, None, None))
            states.append(self._reply(server, "save_optimizer_states", None, check=False))
        payload = {"server_states": states}
        if dump_optimizer:
            payload["optimizer"] = opt
        with open(fname, "wb") as f:
            pickle.dump(payload, f)

    def load_optimizer_states(self, fname):
        """Give each server back the state :meth:`save_optimizer_states` wrote (the job
        must have as many servers)."""
        self._need_optimizer("load_optimizer_states")
        with open(fname, "rb") as f:
            payload = pickle.load(f)
        states = payload.get("server_states") if isinstance(payload, dict) else None
        if states is None:
            raise ValueError(f"KVStore('dist_async').load_optimizer_states: {fname!r} was not "
                             "written by a dist_async save_optimizer_states")
        if len(states) != len(self._layout.servers):
            raise ValueError(f"KVStore('dist_async').load_optimizer_states: {fname!r} holds "
                             f"{len(states)} servers' states, this job has "
                             f"{len(self._layout.servers)} servers")
        engine.wait_for(self._wire)
        for server, saved in zip(self._layout.servers, states):
            self._send(server, ("set_states", self._id, None, saved))
            self._reply(server, "load_optimizer_states", None)

    # ------------------------------------------------------------------ internals
    def _place(self, key, size):
        """``[(server rank, lo, hi)]``: the flat slices of ``key``'s value and their servers."""
        servers = self._layout.servers
        if size >= _bigarray_bound() and len(servers) > 1:
            edges = numpy.linspace(0, size, len(servers) + 1).astype(int)
            return [(s, int(lo), int(hi)) for s, lo, hi in zip(servers, edges[:-1], edges[1:])]
        return [(servers[zlib.crc32(repr(key).encode()) % len(servers)], 0, size)]

    def _peers(self):
        return "the servers and the other workers"

    def _send(self, server, header, payload=None):
        self._wait(self._world.isend(header, dest=server, tag=HEADER), header[0], header[2])
        if payload is not None:
            self._wait(self._world.Isend(payload, dest=server, tag=DATA), header[0], header[2])

    def _reply(self, server, where, key, check=True):
        reply = self._wait(self._world.irecv(source=server, tag=REPLY), where, key)
        if check and reply is not None:
            raise RuntimeError(f"KVStore('dist_async').{where}: server rank {server}: {reply}")
        return reply

    def _send_updater(self, where, kind, obj):
        try:
            blob = pickle.dumps((kind, obj))
        except Exception as e:     # any pickling failure: say what must change
            raise TypeError(f"KVStore('dist_async').{where}: the {kind} runs on the server ranks "
                            f"and must be picklable (a module-level function or class); {e}"
                            ) from e
        engine.wait_for(self._wire)
        if self.rank == 0:
            for server in self._layout.servers:
                self._send(server, ("updater", self._id, None, blob))
                self._reply(server, where, None)
        self._wait(self._comm.Ibarrier(), where, None)

    def _push_one(self, key, stored, arrays, priority):
        parts = self._parts[key]

        def run():
            flat = host_sum(arrays).reshape(-1)
            for server, lo, hi in parts:
                self._send(server, ("push", self._id, (key, lo), None), flat[lo:hi])
        engine.push(run, reads=[var_of(a) for a in arrays], writes=[self._wire],
                    name=f"kvstore push {key!r}", priority=priority,
                    device=self._pool)
        if finishes_now(arrays):
            engine.wait_for(self._wire)         # sent before returning, as other kinds

    def _pull_one(self, key, stored, arrays, priority):
        parts = self._parts[key]

        def run():
            flat = stored._data.reshape(-1)
            for server, lo, hi in parts:
                request = self._world.Irecv(flat[lo:hi], source=server, tag=REPLY)
                self._send(server, ("pull", self._id, (key, lo), None))
                self._wait(request, "pull", key)
            mutated(stored)
            copy_out(stored, arrays)
        engine.push(run, reads=[], writes=[var_of(stored), self._wire] +
                    [var_of(a) for a in arrays], name=f"kvstore pull {key!r}", priority=priority,
                    device=self._pool)
        finish_unless_async(arrays, stored)
