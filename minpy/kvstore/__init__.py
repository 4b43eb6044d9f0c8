"""``minpy.kvstore``: MXNet's key-value store for data-parallel training.

::

    kv = minpy.kvstore.create("local")
    kv.init("w", params["w"])
    kv.set_optimizer(minpy.nn.optim.create("sgd", learning_rate=0.1))
    kv.push("w", [grad_on_device0, grad_on_device1])   # summed, then the update
    kv.pull("w", out=[w_on_device0, w_on_device1])     # the new value, everywhere

Kinds: ``local`` and ``device`` in one process (:mod:`minpy.kvstore.local`);
over MPI ranks (``pip install mpi4py mpich``, run under ``python -m
minpy.kvstore.launch -n N script.py``): ``dist_sync`` and ``dist_device_sync``
(allreduce among the workers, :mod:`minpy.kvstore.mpi`) and ``dist_async``
(parameter-server ranks, :mod:`minpy.kvstore.dist_async`).

See also mxnet.kvstore.
"""
from .dist_async import DistAsyncKVStore
from .local import KVStore
from .mpi import DistDeviceSyncKVStore, DistSyncKVStore

__all__ = ["create", "KVStore", "DistSyncKVStore", "DistDeviceSyncKVStore", "DistAsyncKVStore",
           "KINDS"]

_MAKERS = {"local": lambda: KVStore("local"), "device": lambda: KVStore("device"),
           "dist_sync": DistSyncKVStore, "dist_device_sync": DistDeviceSyncKVStore,
           "dist_async": DistAsyncKVStore}
KINDS = tuple(_MAKERS)


def create(name="local"):
    """A new KVStore of kind ``name``: ``'local'``, ``'device'``, ``'dist_sync'``,
    ``'dist_device_sync'`` or ``'dist_async'``.

    On a parameter-server rank of a ``dist_*`` job this serves the workers and
    ends the process when they are done (it does not return).

    Raises:
        ValueError: an unknown kind; ``dist_async`` in a job without server ranks.
        ImportError: a ``dist_*`` kind without mpi4py (naming the command that installs it).
        TimeoutError: the first ``dist_*`` store of a job, when some rank does not
            create one within ``MINPY_KVSTORE_TIMEOUT`` seconds (names the ranks).

    See also mxnet.kvstore.create.
    """
    maker = _MAKERS.get(name) if isinstance(name, str) else None
    if maker is None:
        raise ValueError(f"minpy.kvstore.create: unknown kind {name!r}; expected one of "
                         f"{KINDS}")
    return maker()
