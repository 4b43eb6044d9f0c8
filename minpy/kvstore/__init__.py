"""``minpy.kvstore``: MXNet's key-value store for data-parallel training.

::

    kv = minpy.kvstore.create("local")
    kv.init("w", params["w"])
    kv.set_optimizer(minpy.nn.optim.create("sgd", learning_rate=0.1))
    kv.push("w", [grad_on_device0, grad_on_device1])   # summed, then the update
    kv.pull("w", out=[w_on_device0, w_on_device1])     # the new value, everywhere

Kinds: ``local`` and ``device`` in one process (:mod:`minpy.kvstore.local`);
``dist_sync`` over MPI ranks (:mod:`minpy.kvstore.mpi`; ``pip install
"minpy[dist]"``, run under ``mpiexec -n N python -m mpi4py script.py``).

See also mxnet.kvstore.
"""
from .local import KVStore
from .mpi import DistSyncKVStore

__all__ = ["create", "KVStore", "DistSyncKVStore", "KINDS"]

KINDS = ("local", "device", "dist_sync")
_NOT_YET = ("dist_async", "dist_device_sync")


def create(name="local"):
    """A new KVStore of kind ``name``: ``'local'``, ``'device'`` or ``'dist_sync'``.

    Raises:
        ValueError: an unknown kind, or one not built yet (``dist_async``,
            ``dist_device_sync``).
        ImportError: a ``dist_*`` kind without mpi4py (names the pip install).

    See also mxnet.kvstore.create.
    """
    if name in _NOT_YET:
        raise ValueError(f"minpy.kvstore.create: kind {name!r} is not available yet; "
                         f"use one of {KINDS}")
    if not isinstance(name, str) or name not in KINDS:
        raise ValueError(f"minpy.kvstore.create: unknown kind {name!r}; expected one of "
                         f"{KINDS}")
    if name == "dist_sync":
        return DistSyncKVStore()
    return KVStore(name)
