"""The MPI side of the ``dist_*`` kinds: the job's layout and ``dist_sync``.

Run the workers under MPI: ``python -m minpy.kvstore.launch -n 2 train.py`` or
``mpiexec -n 2 python -m mpi4py train.py`` (``python -m mpi4py`` aborts the
whole job when one rank raises, instead of leaving the others blocked).
mpi4py and an MPI come from the ``dist`` extra: ``pip install mpi4py mpich``
(mpi4py + the MPICH wheel; ``pip install -e ".[dist]"`` in a minpy checkout).

**Layout.** ``MINPY_KVSTORE_SERVERS=S`` (set by the launcher's ``--servers``)
makes the last S ranks of ``COMM_WORLD`` parameter servers and the others
workers.  Creating any ``dist_*`` store on a server rank runs the server loop
(:func:`minpy.kvstore.server.serve`) until every worker has exited, then
ends the process: the same script runs everywhere, as with MXNet's roles.

**dist_sync.** Every worker holds the values; a push is summed over the
workers with one allreduce and every worker applies the same update.
Collectives must be entered in the same order on every rank, so each
store's communication is serialised on one engine Var in push order
(priorities order a push only against other ready work, not against
another push of the same store).

Waits poll (:func:`minpy.kvstore.wire.wait_request`): a stalled peer gives a
TimeoutError naming the key after ``MINPY_KVSTORE_TIMEOUT`` seconds (in
``kvstore.create``: naming the ranks that did not get there).
"""
import numpy

from .. import engine
from ..core.array import new
from ..core.async_work import var_of
from ..core.execute import mutated
from ..dispatch import state
from ..dispatch.backend import backend_of
from ..dispatch.context import Context
from ..dispatch.transfer import backend_for, context_of, data_on, move_raw
from .local import (copy_out, init_keys, finish_unless_async, host_sum,
                    keys_values, sum_on)
from .compression import create_compression
from .wire import mpi
from .worker import WorkerKVStore

__all__ = ["DistSyncKVStore", "DistDeviceSyncKVStore"]

_HOST = Context("cpu", 0)


class DistSyncKVStore(WorkerKVStore):
    """``dist_sync``: synchronous data parallelism over the worker ranks.

    ``init`` takes worker 0's value on every worker; ``push`` sums the pushed
    arrays locally, then over all workers (allreduce), then applies the updater
    (or stores the sum) identically everywhere; ``pull`` copies the local
    replica, which every worker holds equal.  ``rank`` / ``num_workers`` count
    the workers only (server ranks of the job, if any, are not used).

    See also mxnet.kvstore.create('dist_sync').
    """

    def __init__(self, comm=None, kind="dist_sync"):
        super().__init__(kind, comm)
        self._in_place = mpi().IN_PLACE
        self._scratch = {}                  # key -> the buffer the sum lands in
        self._compression = None

    def set_gradient_compression(self, compression_params):
        """Compress every later push: ``{'type': '2bit', 'threshold': 0.5}`` sends 2 bits
        per element (``+-threshold`` or 0) and keeps what was not sent in a residual
        per key that goes out in later steps (error feedback); ``{'type': 'none'}``
        turns it off.  The workers exchange the packed payloads (allgather) and each
        sums everyone's decompressed gradients.  Call it on every worker before
        the first push.

        See also mxnet.kvstore.KVStore.set_gradient_compression.
        """
        engine.wait_for(self._wire)
        self._compression = create_compression(compression_params)

    def init(self, key, value):
        """As :meth:`KVStore.init`, then every worker takes worker 0's values."""
        super().init(key, value)
        for k in init_keys(key):
            stored = self._store[k]
            host = data_on(stored, _HOST)
            self._wait(self._comm.Ibcast(host, root=0), "init", k)
            if host is not stored._data:
                ctx = context_of(stored._data)
                with backend_for(ctx).device(ctx.device_id):
                    stored._data[...] = move_raw(host, ctx)
                mutated(stored)

    def barrier(self):
        """Wait for this store's queued work, then for every worker to get here."""
        super().barrier()
        engine.wait_for(self._wire)
        self._wait(self._comm.Ibarrier(), "barrier", None)

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` (into ``value`` when ``out`` is None) as one
        engine op per key: one hop, one wait."""
        outs = value if out is None else out
        pushed = keys_values("pushpull", key, value)
        pulled = keys_values("pushpull", key, outs, "out array")
        checked = [(k,) + self._checked("pushpull", k, v) + (self._checked("pushpull", k, o)[1],)
                   for (k, v), (_, o) in zip(pushed, pulled)]
        for k, stored, arrays, targets in checked:
            self._push_one(k, stored, arrays, priority, targets)

    def _push_one(self, key, stored, arrays, priority, outs=()):
        def run():
            self._reduce_and_update(key, stored, arrays, outs)
        if not state.process.async_on and engine.num_pending() == 0:
            run()        # nothing queued to order it after: skip the hop (~20 us of 1 KB's 24)
            return
        writes = [var_of(stored), self._wire] + [var_of(o) for o in outs]
        engine.push(run, reads=[var_of(a) for a in arrays if all(a is not o for o in outs)],
                    writes=writes, name=f"kvstore push {key!r}", priority=priority,
                    device=self._pool)
        finish_unless_async(list(arrays) + list(outs), stored)

    def _reduce_and_update(self, key, stored, arrays, outs):
        """Sum ``arrays`` over the workers, update ``stored`` and copy it into ``outs``
        (inside the engine op).  A pushpull of one host array into itself is reduced in
        place in that array (MPI's in-place allreduce is also the faster one), leaving
        one copy to the stored value; otherwise the sum lands in the stored value (no
        updater) or in a buffer kept per key (no fresh pages each step)."""
        outs = list(outs)
        sole = arrays[0]._data if len(arrays) == 1 and len(outs) == 1 and outs[0] is arrays[0] \
            else None
        if type(sole) is numpy.ndarray and sole.flags.c_contiguous and \
                self._compression is None:
            self._wait(self._comm.Iallreduce(self._in_place, sole), "pushpull", key)
            if self._updater is None:
                numpy.copyto(stored._data, sole)
            else:
                self._updater(key, new(sole), new(stored._data))
                numpy.copyto(sole, stored._data)
            mutated(stored)
            mutated(arrays[0])
            return
        total = host_sum(arrays)
        if self._updater is None:
            self._allreduce(key, total, stored._data)
        else:
            summed = self._summed_buffer(key, total)
            self._allreduce(key, total, summed)
            self._updater(key, new(summed), new(stored._data))
        mutated(stored)
        copy_out(stored, outs)

    def _summed_buffer(self, key, like):
        summed = self._scratch.get(key)
        if summed is None:
            summed = self._scratch[key] = numpy.empty_like(like)
        return summed

    def _allreduce(self, key, total, out):
        """``out`` = the sum over the workers of their ``total`` (host arrays), through
        the gradient compression when one is set."""
        if self._compression is None:
            self._wait(self._comm.Iallreduce(total, out), "push", key)
            return
        packed = self._compression.compress(key, total)
        everyone = numpy.empty((self.num_workers, packed.size), packed.dtype)
        self._wait(self._comm.Iallgather(packed, everyone), "push", key)
        self._compression.decompress_sum(everyone, total.shape, total.dtype, out=out)


class DistDeviceSyncKVStore(DistSyncKVStore):
    """``dist_device_sync``: as ``dist_sync``, but each value lives on the device it
    was initialised on (a GPU under CuPy), the local arrays are summed there, only
    the sum crosses to the host for the allreduce, and the update runs on the device.

    See also mxnet.kvstore.create('dist_device_sync').
    """

    def __init__(self, comm=None):
        super().__init__(comm, "dist_device_sync")

    def _home(self, a):
        a.wait_to_read()
        d = a._data
        backend = backend_of(d)
        with backend.device(backend.device_id(d)):
            return backend.xp.ascontiguousarray(d)

    def _reduce_and_update(self, key, stored, arrays, outs):
        ctx = context_of(stored._data)
        total = sum_on(arrays, ctx)
        host = numpy.ascontiguousarray(move_raw(total, _HOST))
        summed = self._summed_buffer(key, host)
        self._allreduce(key, host, summed)
        with backend_for(ctx).device(ctx.device_id):
            if self._updater is None:
                stored._data[...] = move_raw(summed, ctx)
            else:
                self._updater(key, new(move_raw(summed, ctx)), new(stored._data))
        mutated(stored)
        copy_out(stored, outs)
