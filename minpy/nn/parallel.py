"""``minpy.nn.parallel``: data parallelism for the Solver -- parameter replicas on
several devices (and workers), kept equal through a KVStore.

Each training step splits the batch along axis 0 into one part per context
(sizes differing by at most one sample); the replica of the parameters on
each context computes ``model.loss_and_grad`` on its part; the gradients,
each weighted by its part's share of the batch and by ``1 / num_workers``,
are pushed to the KVStore as one list per parameter and summed there, so the
sum is the gradient of the mean loss over every worker's whole batch; the
optimizer runs inside the store and the new values are pulled into every
replica::

    replicas = Replicas(minpy.kvstore.create("device"), [minpy.gpu(0), minpy.gpu(1)])
    replicas.sync(model.params, lambda kv: kv.set_optimizer(optimizer))
    parts = replicas.split(batch, "step 3")
    results = replicas.gradients(model, [part for part, _ in parts])
    replicas.push_pull([grads for _, grads in results], [share for _, share in parts])

:class:`minpy.nn.solver.Solver` drives it (``Solver(..., ctx=..., kvstore=...)``);
the updaters it installs in the store live here too.

See also mxnet.module.Module (its executor group and kvstore), minpy.kvstore.
"""
import numpy

from .. import kvstore as kvstores
from .. import numpy as mnp
from ..core.array import Array
from ..dispatch.context import Context
from .io.batch import DataBatch

__all__ = ["check_contexts", "make_kvstore", "updates_in_process", "Replicas", "RuleUpdater",
           "FiniteOnly"]

# what a KVStore object must offer the Solver (MXNet's API)
_KVSTORE_API = ("init", "push", "pull", "pushpull", "set_optimizer", "set_updater", "barrier",
                "rank", "num_workers")
# kinds whose optimizer runs in this process, on the very object given to set_optimizer
# (dist_async runs a pickled copy on its server ranks)
_UPDATES_HERE = ("local", "device", "dist_sync", "dist_device_sync")
# a key of the store: every worker's batch count and batch size, checked once
AGREE_KEY = "__solver_batches_per_epoch__"


def check_contexts(where, ctx):
    """``ctx`` as a list of Contexts, or None when it is None.

    Args:
        where: the caller's name, for the error messages.
        ctx: None, a Context, or a non-empty list/tuple of Contexts.
    Raises:
        ValueError: an empty list.
        TypeError: anything else, naming the offending entry.

    See also mxnet.module.Module(context=...).
    """
    if ctx is None:
        return None
    if isinstance(ctx, Context):
        return [ctx]
    if not isinstance(ctx, (list, tuple)):
        raise TypeError(f"{where}: ctx must be None, a Context or a list of Contexts "
                        f"(minpy.cpu(i), minpy.gpu(i)), got {type(ctx).__name__}")
    if not ctx:
        raise ValueError(f"{where}: ctx is an empty list; give at least one Context "
                         "(minpy.cpu(i), minpy.gpu(i)), or None for the current device")
    for i, c in enumerate(ctx):
        if not isinstance(c, Context):
            raise TypeError(f"{where}: ctx[{i}] must be a Context (minpy.cpu(i) or "
                            f"minpy.gpu(i)), got {c!r} ({type(c).__name__})")
    return list(ctx)


def make_kvstore(where, kvstore, contexts):
    """The KVStore for ``kvstore`` (None, a kind name or a KVStore object), or None.

    None gives ``'device'`` for more than one context (MXNet's default) and no
    store otherwise.

    Raises:
        ValueError: an unknown kind (naming the kinds there are).
        TypeError: an object lacking the KVStore API (naming what it lacks).
        ImportError: a ``dist_*`` kind without mpi4py (from :func:`minpy.kvstore.create`,
            which also raises ValueError for ``dist_async`` without server ranks).

    See also minpy.kvstore.create.
    """
    if kvstore is None:
        if contexts is None or len(contexts) == 1:
            return None
        kvstore = "device"
    if isinstance(kvstore, str):
        if kvstore not in kvstores.KINDS:
            raise ValueError(f"{where}: unknown kvstore kind {kvstore!r}; expected one of "
                             f"{kvstores.KINDS}, a KVStore, or None")
        return kvstores.create(kvstore)
    missing = [name for name in _KVSTORE_API if not hasattr(kvstore, name)]
    if isinstance(kvstore, bool) or missing:
        raise TypeError(f"{where}: kvstore must be None, a kind name ({kvstores.KINDS}) or a "
                        f"KVStore from minpy.kvstore.create, got {type(kvstore).__name__}"
                        + (f" (it has no {missing})" if missing else ""))
    return kvstore


def updates_in_process(kv):
    """Whether ``kv`` runs its optimizer here, on the object given to ``set_optimizer``
    (so reading or changing that object reads or changes the store's optimizer)."""
    return getattr(kv, "type", None) in _UPDATES_HERE


def sums_workers(kv):
    """Whether a push of ``kv`` is summed over its workers before the update (every
    kind but ``dist_async``, where each worker's push is an update of its own)."""
    return "async" not in str(getattr(kv, "type", ""))


def _on(array, ctx):
    """``array`` (a batch's Array or host array) on ``ctx``: itself when it is there."""
    if ctx is None:
        return array if isinstance(array, Array) else mnp.array(array)
    if isinstance(array, Array) and _same_device(array.context, ctx):
        return array
    with ctx:
        return mnp.array(array)


def _same_device(a, b):
    """Every CPU context is the same host memory."""
    return a == b or (a.device_type == "cpu" and b.device_type == "cpu")


def _assign(key, value, stored):
    """A kvstore updater that makes the pushed value the stored one."""
    stored[...] = value


class Replicas:
    """The parameters on every context, and the KVStore that keeps them equal.

    Args:
        kvstore: the store (None: one context, no store; the Solver then
            applies its own optimizer to ``copies[0]``).
        contexts: a list of Contexts, or None (one replica: the parameters
            where they are, batches used as they come).

    Attributes:
        copies: one dict name -> Array per context; ``copies[0]`` is the
            model's own ``params`` dict (its arrays moved to the first
            context when they live elsewhere).
        names: the parameter names, in push order (the same on every worker).
    """

    def __init__(self, kvstore, contexts):
        self.kvstore = kvstore
        self.contexts = list(contexts) if contexts is not None else [None]
        self.copies = []
        self.names = []
        self._dtypes = {}
        self._initialised = False

    # ------------------------------------------------------------ setup
    def sync(self, params, install_updater, iterator=None, where="Solver.train"):
        """Make every replica, and the store, hold ``params`` (rank 0's in a dist job).

        ``params`` (the model's dict) becomes ``copies[0]``: its arrays stay
        where they are when that is the first context, else they are replaced
        by copies there.  The first call initialises the store (``init`` gives
        every worker rank 0's values) after checking that every worker runs as
        many batches of the same size per epoch; later calls (a second
        ``train()``, after ``load_state_dict`` or ``keep_best``) overwrite the
        stored values.  ``install_updater(kv)`` then sets the optimizer.

        Raises:
            ValueError: the workers' iterators disagree (naming both counts).
        """
        first = self.contexts[0]
        for name, value in list(params.items()):
            params[name] = _on(value, first)
        self.names = list(params)
        self._dtypes = {name: params[name].dtype for name in self.names}
        self.copies = [params] + [self._replica(params, ctx) for ctx in self.contexts[1:]]
        kv = self.kvstore
        if kv is None:
            return
        values = [params[name] for name in self.names]
        if not self._initialised:
            if kv.num_workers > 1 and sums_workers(kv):
                self._check_workers_agree(iterator, where)
            kv.init(self.names, values)
            self._initialised = True
        else:
            kv.set_updater(_assign)
            if sums_workers(kv):        # rank 0's values, plus zeros from the others
                if kv.rank != 0:
                    values = [mnp.zeros_like(v) for v in values]
                kv.push(self.names, values)
            else:                       # every push lands: rank 0's alone
                if kv.rank == 0:
                    kv.push(self.names, values)
                kv.barrier()
        install_updater(kv)
        kv.pull(self.names, out=[[c[name] for c in self.copies] for name in self.names])

    @staticmethod
    def _replica(params, ctx):
        out = {}
        for name, value in params.items():
            with ctx:
                out[name] = mnp.array(value)       # always a copy, even on the same device
        return out

    def _check_workers_agree(self, iterator, where):
        """Every worker must push as often as the others, or the collectives of the
        store would pair different steps (or wait forever)."""
        kv = self.kvstore
        count = getattr(iterator, "getnumiterations", None)
        mine = numpy.array([count() if count is not None else -1,
                            int(getattr(iterator, "batch_size", -1) or -1)], numpy.int64)
        kv.init(AGREE_KEY, mnp.array(mine))          # every worker gets rank 0's
        theirs = mnp.zeros(2, dtype=numpy.int64)
        kv.pull(AGREE_KEY, out=theirs)
        theirs = theirs.asnumpy()
        if not numpy.array_equal(theirs, mine):
            raise ValueError(
                f"{where}: worker {kv.rank} has {mine[0]} batches of {mine[1]} samples per "
                f"epoch, but worker 0 has {theirs[0]} batches of {theirs[1]}; every worker "
                "must run as many batches of the same size (shard the data with "
                "num_parts=kv.num_workers, part_index=kv.rank, and choose a batch_size or "
                "last_batch_handle='discard' that gives every part the same number of "
                "batches)")

    # ------------------------------------------------------------ a step
    def split(self, batch, where):
        """``[(part, share)]``: the batch split along axis 0, one part per context
        (moved there), and each part's share of the batch's samples.

        Parts differ in size by at most one sample (the first ones are the
        smaller); ``pad``, ``index`` and ``bucket_key`` follow the samples.

        Raises:
            ValueError: fewer samples than contexts, or arrays of different lengths.
        """
        if self.contexts == [None]:
            return [(batch, 1.0)]
        arrays = list(batch.data) + list(batch.label)
        n = int(arrays[0].shape[0])
        k = len(self.contexts)
        if n < k:
            raise ValueError(f"{where}: a batch of {n} samples cannot be split over the {k} "
                             f"contexts {self.contexts} (each needs at least one sample); "
                             f"use a batch_size of at least {k}")
        lengths = [int(a.shape[0]) for a in arrays]
        if any(m != n for m in lengths):
            raise ValueError(f"{where}: the batch's data and label arrays have {lengths} "
                             "samples on axis 0; splitting over contexts needs the same "
                             "number in each")
        bounds = [n * i // k for i in range(k + 1)]
        real = n - int(batch.pad or 0)
        parts = []
        for ctx, lo, hi in zip(self.contexts, bounds, bounds[1:]):
            whole = lo == 0 and hi == n

            def cut(a, lo=lo, hi=hi, whole=whole, ctx=ctx):
                return _on(a if whole else a[lo:hi], ctx)
            index = batch.index if whole or batch.index is None else batch.index[lo:hi]
            part = DataBatch([cut(a) for a in batch.data], [cut(a) for a in batch.label],
                             pad=max(0, hi - max(lo, real)), index=index,
                             bucket_key=batch.bucket_key)
            parts.append((part, (hi - lo) / n))
        return parts

    def gradients(self, model, parts):
        """``[(loss, grads)]``: ``model.loss_and_grad`` of each part with its
        replica's parameters (swapped into ``model.params`` for the call, the
        model's own dict put back afterwards), once the last pulls are done."""
        self.wait()        # (in async mode, grad_and_loss does not wait on arrays in a dict)
        own = model.params
        out = []
        try:
            for copy, part in zip(self.copies, parts):
                model.params = copy
                out.append(model.loss_and_grad(part, mode="train"))
        finally:
            model.params = own
        return out

    def push_pull(self, grads, shares, poison=False):
        """Push every parameter's gradients (one per context, weighted by
        ``share / num_workers``, or by ``share`` where each worker's push is an
        update of its own; NaN when ``poison``) and pull the updated values into
        every replica."""
        kv = self.kvstore
        workers = kv.num_workers if sums_workers(kv) else 1
        weights = [float("nan") if poison else share / workers for share in shares]
        for i, name in enumerate(self.names):
            dtype = self._dtypes[name]
            kv.push(name, [_weighted(g[name], w, dtype) for g, w in zip(grads, weights)],
                    priority=-i)
            kv.pull(name, out=[c[name] for c in self.copies], priority=-i)

    def wait(self):
        """Block until every replica holds its last pulled value (so the store's
        updates before it are done)."""
        for copy in self.copies:
            for value in copy.values():
                if isinstance(value, Array):
                    value.wait_to_read()

    def finish(self):
        """At the end of training in a dist job: wait for every worker, then pull
        the final values (a store updated elsewhere may be ahead of the replicas)."""
        kv = self.kvstore
        if kv is None or kv.num_workers == 1 or not self._initialised:
            return
        kv.barrier()
        kv.pull(self.names, out=[[c[name] for c in self.copies] for name in self.names])


def _weighted(g, weight, dtype):
    if not isinstance(g, Array):
        g = mnp.array(g)
    if weight != 1.0:
        g = g * weight
    return g if g.dtype == dtype else g.astype(dtype)


def _finite(g):
    return bool(mnp.all(mnp.isfinite(g)))


class RuleUpdater:
    """A KVStore updater running a MinPy-style rule ``rule(w, dw, config) -> (next_w,
    config)`` and writing ``next_w`` into the stored value in place.

    Args:
        rule: the update function.
        configs: dict key -> config dict (updated with what the rule returns).
        skip_nonfinite: leave a key unchanged when its summed gradient holds a
            NaN or inf (recorded in ``skipped``).

    See also minpy.kvstore.KVStore.set_updater.
    """

    def __init__(self, rule, configs, skip_nonfinite=False):
        self.rule, self.configs, self.skip_nonfinite = rule, configs, skip_nonfinite
        self.skipped = set()

    def __call__(self, key, grad, stored):
        if self.skip_nonfinite and not _finite(grad):
            self.skipped.add(key)
            return
        next_w, self.configs[key] = self.rule(stored, grad, self.configs[key])
        stored[...] = next_w


class FiniteOnly:
    """A ``minpy.nn.optim`` optimizer for ``KVStore.set_optimizer`` that skips a
    key's update when its summed gradient holds a NaN or inf (recorded in
    ``skipped``); everything else is the wrapped optimizer's.

    In a dist job a worker whose loss is not finite pushes NaN gradients, so
    every worker sees a non-finite sum and skips the same step.

    See also minpy.kvstore.KVStore.set_optimizer.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.skipped = set()

    def update(self, name, w, g):
        """``optimizer.update(name, w, g)`` unless ``g`` is not finite."""
        if not _finite(g):
            self.skipped.add(name)
            return
        self.optimizer.update(name, w, g)

    def __getattr__(self, name):
        if name == "optimizer":             # not set yet (while unpickling)
            raise AttributeError(name)
        return getattr(self.optimizer, name)
