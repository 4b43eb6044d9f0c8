"""The worker side shared by the ``dist_*`` stores: the job's layout, the server
ranks' hand-off, and the worker communicator behind ``rank`` / ``num_workers``."""
import numpy

from .. import engine
from .local import KVStore
from .server import register_stop, serve_and_exit
from .wire import layout, wait_request

__all__ = ["WorkerKVStore"]


class WorkerKVStore(KVStore):
    """A KVStore on the workers of an MPI job (see :mod:`minpy.kvstore.wire` for the
    layout).  Made on a server rank, it serves the workers and ends the process.
    ``rank`` / ``num_workers`` count the workers only."""

    def __init__(self, kind, comm=None):
        lay = layout(comm, f"minpy.kvstore.create({kind!r})")
        if lay.is_server:
            serve_and_exit(lay)
        super().__init__(kind)
        register_stop(lay)                  # idle servers leave when the workers do
        self._layout = lay
        self._comm = lay.workers
        self._wire = engine.new_var()       # this store's communication, in order
        # communication runs on a pool of its own (MXNet's comm threads), so a rank
        # waiting for its peers never holds up the compute ops queued behind it
        self._pool = "kvstore-mpi"

    @property
    def rank(self):
        """This worker's rank among the workers."""
        return self._comm.Get_rank()

    @property
    def num_workers(self):
        """The number of workers (the job's MPI ranks less the servers)."""
        return self._comm.Get_size()

    def _home(self, a):
        return numpy.ascontiguousarray(super()._home(a))    # MPI sends contiguous buffers

    def _wait(self, request, where, key):
        return wait_request(request, self.type, where, key, self.rank, self._peers())

    def _peers(self):
        return f"the other {self.num_workers - 1} worker(s)"
