"""``dist_sync`` on MPI: every worker holds the values; a push is summed over all
workers with one allreduce and every worker applies the same update.

Run the workers under MPI, e.g. ``mpiexec -n 2 python -m mpi4py train.py``
(``python -m mpi4py`` aborts the whole job when one rank raises, instead of
leaving the others blocked).  mpi4py and an MPI come from the ``dist`` extra:
``pip install "minpy[dist]"`` (mpi4py + the MPICH wheel).

Collectives must be entered in the same order on every rank, so each store's
communication is serialised on one engine Var in push order (priorities
order a push only against other ready work, not against another push of the
same store).  Waits poll a non-blocking request, busily for up to 1 ms and
then with short sleeps: a rank blocked inside MPI spins a whole core for as
long as it waits, which on a small machine starves the rank it waits for.
A collective that does not finish within ``MINPY_KVSTORE_TIMEOUT`` seconds
(default 120) raises, naming the key and the rank, rather than hang.
"""
import os
import time

import numpy

from .. import engine
from ..core.array import new
from ..core.async_work import var_of
from ..core.execute import mutated
from ..dispatch.context import Context
from ..dispatch.transfer import data_on
from .local import KVStore, check_key, copy_out, finish_unless_async, keys_values

__all__ = ["DistSyncKVStore", "mpi_comm"]

_POLL_S = 50e-6
_SPIN_S = 1e-3


def mpi_comm():
    """mpi4py's ``COMM_WORLD`` (MPI initialised on first use).

    Raises:
        ImportError: naming ``pip install "minpy[dist]"`` when mpi4py (or an MPI
            library) is missing.
    """
    try:
        from mpi4py import MPI     # optional dependency (the `dist` extra), loaded on use
    except ImportError as e:
        raise ImportError("minpy.kvstore: the dist_* kinds need mpi4py and an MPI library; "
                          'install them with pip install "minpy[dist]" (mpi4py + mpich) '
                          f"({e})") from None
    return MPI.COMM_WORLD


def _timeout():
    raw = os.environ.get("MINPY_KVSTORE_TIMEOUT", "").strip()
    return float(raw) if raw else 120.0


class DistSyncKVStore(KVStore):
    """``dist_sync``: synchronous data parallelism over the ranks of ``COMM_WORLD``.

    ``init`` takes rank 0's value on every rank; ``push`` sums the pushed arrays
    locally, then over all ranks (allreduce), then applies the updater (or stores
    the sum) identically everywhere; ``pull`` copies the local replica, which
    every rank holds equal.  ``rank`` / ``num_workers`` are MPI's.

    See also mxnet.kvstore.create('dist_sync').
    """

    def __init__(self, comm=None):
        super().__init__("dist_sync")
        self._comm = comm if comm is not None else mpi_comm()
        self._wire = engine.new_var()       # collectives in push order, on every rank

    @property
    def rank(self):
        """This worker's rank in ``COMM_WORLD``."""
        return self._comm.Get_rank()

    @property
    def num_workers(self):
        """The number of workers (MPI ranks)."""
        return self._comm.Get_size()

    def init(self, key, value):
        """As :meth:`KVStore.init`, then every rank takes rank 0's values."""
        super().init(key, value)
        for k in (key if isinstance(key, (list, tuple)) else [key]):
            stored = self._store[check_key("init", k)]
            self._wait(self._comm.Ibcast(stored._data, root=0), "init", k)

    def barrier(self):
        """Wait for this store's queued work, then for every rank to get here."""
        super().barrier()
        engine.wait_for(self._wire)
        self._wait(self._comm.Ibarrier(), "barrier", None)

    def _home(self, a):
        return numpy.ascontiguousarray(super()._home(a))    # MPI sends contiguous buffers

    def _wait(self, request, where, key):
        """Poll ``request`` until done: busily for up to 1 ms (MPI progresses only
        inside calls, so sleeping stalls a 1 MB allreduce: 307 -> 168 us with the
        spin), then with short sleeps; raise after the timeout."""
        spin_until = time.perf_counter() + _SPIN_S
        while time.perf_counter() < spin_until:
            if request.Test():
                return
        deadline = time.monotonic() + _timeout()
        while not request.Test():
            if time.monotonic() > deadline:
                what = "" if key is None else f" of key {key!r}"
                raise TimeoutError(f"KVStore('dist_sync').{where}{what}: rank {self.rank} "
                                   f"waited {_timeout():g} s for the other "
                                   f"{self.num_workers - 1} rank(s); one has probably died "
                                   "or is not calling the same pushes (MINPY_KVSTORE_TIMEOUT)")
            time.sleep(_POLL_S)

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
        updater = self._updater
        comm = self._comm
        ctx = Context("cpu", 0)

        def run():
            parts = [data_on(a, ctx) for a in arrays]
            if len(parts) == 1 and parts[0].flags.c_contiguous:
                total = parts[0]                 # sent as it is: MPI only reads it
            else:
                total = numpy.array(parts[0], order="C", copy=True)
                for d in parts[1:]:
                    numpy.add(total, d, out=total)
            if updater is None:                  # the sum lands in the stored value
                self._wait(comm.Iallreduce(total, stored._data), "push", key)
            else:
                summed = numpy.empty_like(total)
                self._wait(comm.Iallreduce(total, summed), "push", key)
                updater(key, new(summed), new(stored._data))
            mutated(stored)
            copy_out(stored, outs)
        writes = [var_of(stored), self._wire] + [var_of(o) for o in outs]
        engine.push(run, reads=[var_of(a) for a in arrays if all(a is not o for o in outs)],
                    writes=writes, name=f"kvstore push {key!r}", priority=priority)
        finish_unless_async(list(arrays) + list(outs), stored)
