"""``minpy.nn.io``: data iterators — ``NDArrayIter``; the protocol and prefetching re-exported.

:class:`NDArrayIter` serves in-memory arrays as :class:`DataBatch` objects
(the iterator protocol of MinPy and MXNet, see :mod:`minpy.nn.io.batch`):
batching with MXNet's ``last_batch_handle`` (``'pad'``, ``'discard'``,
``'roll_over'``), per-epoch shuffling from its own seeded generator, a
contiguous shard per worker (``num_parts``/``part_index``), a user
``transform`` per batch, ``state_dict()`` to resume mid-epoch, and
background prefetching (``prefetch=k``, see :mod:`minpy.nn.io.prefetch`; the
results are those of ``prefetch=0``, in the same order).  Each batch is
gathered on the host with one ``take`` per source and moved to the current
device once.

What lives where (all importable from here, as before):
``NDArrayIter`` and ``seed_or_global`` here; ``DataDesc``, ``DataBatch``,
``DataIter`` and ``batch_array`` in :mod:`minpy.nn.io.batch`;
``PrefetchingIter`` and the prefetch thread in :mod:`minpy.nn.io.prefetch`;
``load_npz``, ``save_data_labels`` and ``load_data_labels`` in
:mod:`minpy.nn.io.readers`.
"""
import copy
import math

import numpy

from ...core.array import Array
from ...dispatch.context import current_context
from .batch import DataDesc, DataBatch, DataIter, batch_array  # noqa: F401 (re-exported)
from .batch import _CurrentBatchIter, _check_int
from .prefetch import PrefetchingIter, _END, _Prefetcher  # noqa: F401 (re-exported)
from .readers import load_npz, save_data_labels, load_data_labels  # noqa: F401 (MinPy's names)


def seed_or_global(seed):
    """``seed``, or when it is None a seed drawn from NumPy's global legacy state.

    Iterators (and init rules) given no seed stay repeatable under
    ``minpy.random.seed`` / ``numpy.random.seed``, as MinPy programs expect.
    """
    return numpy.random.randint(0, 2 ** 63 - 1, dtype=numpy.int64) if seed is None else seed

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "PrefetchingIter", "batch_array",
           "save_data_labels", "load_data_labels"]

_HANDLES = ("pad", "discard", "roll_over")
_EMPTY = numpy.zeros(0, numpy.int64)


# ---------------------------------------------------------------------- NDArrayIter
def _host(name, value):
    if isinstance(value, Array):
        value = value.asnumpy()
    elif not isinstance(value, numpy.ndarray):
        value = numpy.asarray(value)
    if value.ndim == 0:
        raise ValueError(f"NDArrayIter: {name!r} must have at least one dimension (samples on "
                         f"axis 0), got a 0-d array; a list of numbers is read as a list of "
                         f"sources: pass numpy.asarray(list) for one source")
    return value


def _named_sources(obj, default_name, what):
    """[(name, host array)] from an array, a list of arrays or a dict name -> array."""
    if obj is None:
        return []
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str):
                raise TypeError(f"NDArrayIter: {what} dict keys must be str names, got {k!r}")
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = [(default_name if len(obj) == 1 else f"_{i}_{default_name}", v)
                 for i, v in enumerate(obj)]
    else:
        items = [(default_name, obj)]
    return [(k, _host(k, v)) for k, v in items]


def _batch_plans(seq, start, batch_size, pad_last, offset):
    """(dataset indices, shard indices, pad) of each batch of epoch order ``seq`` (shard
    indices), from position ``start``; ``offset`` is the shard's first dataset index."""
    n = len(seq)
    pos = start
    while pos + batch_size <= n or (pad_last and pos < n):
        idx = seq[pos:pos + batch_size]
        pad = batch_size - len(idx)
        if pad:         # 'pad': wrap around to the epoch's first samples
            idx = numpy.concatenate([idx, numpy.resize(seq, pad)])
        yield idx + offset, idx, pad
        pos += batch_size


class _BatchMaker:
    """Gathers one batch: a ``take`` per source on the host, a transfer, then ``transform``."""

    def __init__(self, data, label, transform, provide_data, provide_label):
        self.data, self.label, self.transform = data, label, transform
        self.provide_data, self.provide_label = provide_data, provide_label

    def __call__(self, plan):
        index, local, pad = plan
        ctx = current_context()
        batch = DataBatch([batch_array(v.take(local, axis=0), ctx) for _, v in self.data],
                          [batch_array(v.take(local, axis=0), ctx) for _, v in self.label],
                          pad=pad, index=index, provide_data=self.provide_data,
                          provide_label=self.provide_label)
        if self.transform is None:
            return batch
        out = self.transform(batch)
        if not isinstance(out, DataBatch):
            raise TypeError(f"NDArrayIter: transform {self.transform!r} must return a "
                            f"DataBatch, got {type(out).__name__}")
        return out


class NDArrayIter(_CurrentBatchIter):
    """Iterate over in-memory arrays in mini-batches (MinPy's / MXNet's NDArrayIter).

    Args:
        data: an array (NumPy, minpy or array-like; samples on axis 0), a list
            of arrays (named ``data_name``, or ``_0_data``, ``_1_data`` ...) or
            a dict name -> array.  Kept on the host (a minpy Array is copied
            there once).
        label: the same forms for the labels (named ``label_name``), or None.
        batch_size: samples per batch.
        shuffle: a new permutation of the samples each epoch, drawn from the
            iterator's own ``numpy.random.Generator(seed)``.
        last_batch_handle: what to do with the samples that do not fill a
            batch: ``'pad'`` (fill the last batch with the epoch's first
            samples; ``batch.pad`` counts them), ``'discard'`` (drop them) or
            ``'roll_over'`` (they open the next epoch's first batch, after
            ``reset()``).
        data_name, label_name: names of a single data / label array.
        num_parts, part_index: iterate over part ``part_index`` of
            ``num_parts`` contiguous parts of the samples (part ``p`` of ``k``
            holds samples ``N*p//k`` to ``N*(p+1)//k``), one per worker of
            distributed training (``num_parts=kv.num_workers,
            part_index=kv.rank``).  The parts are disjoint and cover the data
            once; their sizes differ by at most one sample (the remainder
            ``N % k`` is spread over the parts, one sample each, none
            dropped).  Each part then iterates as an NDArrayIter over its
            slice would: shuffling within the part, ``last_batch_handle``
            applied to the part's own last batch (so the parts can differ
            by one batch unless ``'discard'`` or the sizes divide evenly).
        prefetch: batches prepared ahead on a background thread (0: none).
        seed: seed of the shuffling generator; ``None`` draws one from NumPy's
            global state, so ``minpy.random.seed(s)`` makes the run repeatable.
        transform: ``fn(batch) -> batch`` applied to every DataBatch (on the
            prefetch thread when ``prefetch > 0``): augmentation, normalisation.

    Attributes:
        data, label: lists of ``(name, host numpy array)`` of this shard.
        num_data: samples in this shard; ``num_source``: number of arrays.
        cursor: the current batch's first position in the epoch (negative
            before the first batch, or for a batch of rolled-over samples).

    Each batch's ``index`` holds its samples' indices in the whole (unsharded)
    data.  ``'pad'`` cycles through the epoch again when ``batch_size``
    exceeds the shard.  A batch that opens with rolled-over samples has
    ``pad == 0``: every sample in it is real (MXNet 1.x reports their count).

    Raises:
        ValueError: arrays of different lengths (naming each), no samples,
            ``num_parts`` above the number of samples (a part would be empty),
            fewer samples than ``batch_size`` with ``'discard'``/``'roll_over'``,
            a bad ``last_batch_handle``/``part_index``, repeated names.
        TypeError: arguments of the wrong type.

    See also mxnet.io.NDArrayIter, :class:`PrefetchingIter`.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label", num_parts=1, part_index=0,
                 prefetch=0, seed=None, transform=None):
        fn = "NDArrayIter"
        super().__init__(_check_int(fn, "batch_size", batch_size, 1))
        if last_batch_handle not in _HANDLES:
            raise ValueError(f"{fn}: last_batch_handle must be one of {_HANDLES}, got "
                             f"{last_batch_handle!r}")
        self.num_parts = _check_int(fn, "num_parts", num_parts, 1)
        self.part_index = _check_int(fn, "part_index", part_index, 0)
        if part_index >= num_parts:
            raise ValueError(f"{fn}: part_index must be < num_parts={num_parts}, got "
                             f"{part_index}")
        self.prefetch = _check_int(fn, "prefetch", prefetch, 0)
        if transform is not None and not callable(transform):
            raise TypeError(f"{fn}: transform must be callable or None, got "
                            f"{type(transform).__name__}")
        if data is None:
            raise TypeError(f"{fn}: data is required")
        sources = _named_sources(data, data_name, "data")
        labels = _named_sources(label, label_name, "label")
        self._check_sources(sources, labels)
        total = len(sources[0][1])
        if total == 0:
            raise ValueError(f"{fn}: the data holds no samples (axis 0 has length 0)")
        if num_parts > total:
            raise ValueError(f"{fn}: num_parts={num_parts} parts of {total} samples would "
                             f"leave some parts empty (part_index={part_index}); use "
                             f"num_parts <= {total}")
        start, stop = total * part_index // num_parts, total * (part_index + 1) // num_parts
        self.data = [(k, v[start:stop]) for k, v in sources]
        self.label = [(k, v[start:stop]) for k, v in labels]
        self.num_data, self.offset = stop - start, start
        self.num_source = len(self.data) + len(self.label)
        if last_batch_handle != "pad" and self.num_data < self.batch_size:
            raise ValueError(f"{fn}: {self.num_data} samples make no batch of batch_size="
                             f"{self.batch_size} with last_batch_handle={last_batch_handle!r}")
        self.shuffle, self.last_batch_handle = bool(shuffle), last_batch_handle
        self._rng = numpy.random.default_rng(seed_or_global(seed) if shuffle else seed)
        self._maker = _BatchMaker(self.data, self.label, transform, self.provide_data,
                                  self.provide_label)
        self._prefetcher = None
        self._new_epoch(_EMPTY)

    @staticmethod
    def _check_sources(sources, labels):
        if not sources:
            raise ValueError("NDArrayIter: data holds no arrays")
        names = [k for k, _ in sources + labels]
        repeated = sorted({k for k in names if names.count(k) > 1})
        if repeated:
            raise ValueError(f"NDArrayIter: data and label names must be distinct; repeated: "
                             f"{repeated}")
        lengths = {k: len(v) for k, v in sources + labels}
        if len(set(lengths.values())) > 1:
            raise ValueError("NDArrayIter: all arrays must have the same number of samples "
                             "(axis 0), got " + ", ".join(f"{k!r}: {n}"
                                                          for k, n in lengths.items()))

    @classmethod
    def from_npz(cls, url, data_key="data", label_key=None, storage_options=None, **kwargs):
        """An NDArrayIter over arrays of a ``.npz`` archive at a path or fsspec URL.

        Args:
            url: see :func:`minpy.nn.io.readers.load_npz`.
            data_key, label_key: the archive's key (str) or keys (list) for the
                data and the labels; a list keeps the keys as source names.
            storage_options: dict of fsspec storage options.
            **kwargs: the other NDArrayIter arguments.
        Raises:
            KeyError: a key the archive lacks (naming the keys it has).
        """
        arrays = load_npz(url, **(storage_options or {}))

        def pick(keys):
            if keys is None:
                return None
            wanted = [keys] if isinstance(keys, str) else list(keys)
            missing = [k for k in wanted if k not in arrays]
            if missing:
                raise KeyError(f"NDArrayIter.from_npz: {url!r} has no arrays {missing}; it "
                               f"holds {sorted(arrays)}")
            return arrays[keys] if isinstance(keys, str) else {k: arrays[k] for k in wanted}
        return cls(pick(data_key), pick(label_key), **kwargs)

    # ------------------------------------------------------------------ description
    @property
    def provide_data(self):
        """[DataDesc(name, (batch_size, ...), dtype)] of the data sources."""
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype) for k, v in self.data]

    @property
    def provide_label(self):
        """[DataDesc(name, (batch_size, ...), dtype)] of the label sources."""
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype) for k, v in self.label]

    @property
    def cursor(self):
        """The current batch's first position among this epoch's own samples (MXNet's
        cursor): ``-batch_size`` before the first batch, negative for a first batch
        that opens with rolled-over samples."""
        return self._pos - self._carry

    @property
    def idx(self):
        """This epoch's order (MXNet's ``NDArrayIter.idx``): position ``i`` of the epoch
        serves sample ``idx[i]`` of the (part's) data as given — ``arange`` without
        shuffling, the epoch's permutation with it; rolled-over samples that open the
        epoch are not part of it. A copy. Scripts map predictions back with it:
        ``original_order = numpy.empty_like(pred); original_order[it.idx] = pred``."""
        return self._seq[self._carry:].copy()

    def getnumiterations(self):
        """Number of batches in the current epoch (rolled-over samples included)."""
        n = len(self._seq)
        return math.ceil(n / self.batch_size) if self.last_batch_handle == "pad" \
            else n // self.batch_size

    # ------------------------------------------------------------------ epochs
    def _new_epoch(self, carry):
        order = self._rng.permutation(self.num_data) if self.shuffle \
            else numpy.arange(self.num_data)
        self._seq = numpy.concatenate([carry, order]) if len(carry) else order
        self._carry = len(carry)
        self._pos = -self.batch_size
        self._exhausted = False
        self._current = None

    def reset(self):
        """Start the next epoch: a new permutation if shuffling; with ``'roll_over'``
        the samples left by a finished epoch open the new one."""
        self.close()
        carry = _EMPTY
        if self.last_batch_handle == "roll_over" and self._exhausted:
            carry = self._seq[len(self._seq) // self.batch_size * self.batch_size:]
        self._new_epoch(carry)

    def hard_reset(self):
        """Start the next epoch, dropping any rolled-over samples."""
        self.close()
        self._new_epoch(_EMPTY)

    def _plans(self, start):
        return _batch_plans(self._seq, start, self.batch_size,
                            self.last_batch_handle == "pad", self.offset)

    # ------------------------------------------------------------------ iteration
    def iter_next(self):
        """Move to the next batch (prepared now, or taken from the prefetch queue).

        Returns False at the end of the epoch.  If preparing the batch raises
        (a failing ``transform``), the error propagates and the iterator stays
        on the previous batch, so the call can be retried.
        """
        pos = self._pos + self.batch_size
        plan = next(self._plans(pos), None)
        if plan is None:
            self._exhausted, self._current = True, None
            return False
        if not self.prefetch:
            batch = self._maker(plan)
        else:
            if self._prefetcher is None:
                self._prefetcher = _Prefetcher(self._plans(pos), self._maker, self.prefetch)
            try:
                batch = self._prefetcher.get()
            except BaseException:
                self._prefetcher = None         # closed by get(); a retry restarts at pos
                raise
            if batch is _END:
                raise RuntimeError("NDArrayIter: the prefetch thread ended early")
        self._pos, self._current = pos, batch
        return True

    def getsubiter(self, num_samples):
        """An NDArrayIter over this shard's first ``num_samples`` samples (all if fewer).

        Same batch size, names, transform and prefetch; not shuffled; the last
        batch padded (``batch.pad`` counts the repeats).  Used by
        ``Solver.check_accuracy``.
        """
        n = min(_check_int("NDArrayIter.getsubiter", "num_samples", num_samples, 1),
                self.num_data)
        return NDArrayIter({k: v[:n] for k, v in self.data},
                           {k: v[:n] for k, v in self.label} or None,
                           batch_size=self.batch_size, prefetch=self.prefetch,
                           transform=self._maker.transform)

    # ------------------------------------------------------------------ checkpoints
    _CONFIG = ("num_data", "batch_size", "last_batch_handle", "shuffle", "num_parts",
               "part_index")

    def state_dict(self):
        """The iteration state (plain Python and NumPy values, picklable).

        Cursor, the epoch's sample order, rolled-over samples and the
        generator state: an iterator built with the same arguments and given
        this with :meth:`load_state_dict` yields exactly the batches this
        one would from here on.
        """
        state = {k: getattr(self, k) for k in self._CONFIG}
        state.update(order=self._seq.copy(), carry=self._carry, position=self._pos,
                     exhausted=self._exhausted,
                     rng=copy.deepcopy(self._rng.bit_generator.state))
        return state

    def load_state_dict(self, state):
        """Continue from ``state`` (from :meth:`state_dict` of an iterator built alike).

        Raises:
            ValueError: ``state`` comes from an iterator over other data,
                batch size, shard or handling (naming the field).
            KeyError: ``state`` lacks a field.
        """
        for k in self._CONFIG:
            if state[k] != getattr(self, k):
                raise ValueError(f"NDArrayIter.load_state_dict: {k} is {getattr(self, k)!r} "
                                 f"here but {state[k]!r} in the state")
        order = numpy.asarray(state["order"], numpy.int64)
        if order.ndim != 1 or (len(order) and not 0 <= order.min() <= order.max()
                               < self.num_data):
            raise ValueError("NDArrayIter.load_state_dict: 'order' is not a sample order "
                             f"over {self.num_data} samples")
        self.close()
        self._rng.bit_generator.state = copy.deepcopy(state["rng"])
        self._seq, self._carry = order.copy(), int(state["carry"])
        self._pos, self._exhausted = int(state["position"]), bool(state["exhausted"])
        self._current = None
