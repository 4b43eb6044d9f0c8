"""``minpy.nn.io.batch``: the iterator protocol — ``DataDesc``, ``DataBatch``, ``DataIter``.

MinPy's and MXNet's iterator protocol: an iterator yields :class:`DataBatch`
objects (``.data`` and ``.label`` are lists of minpy Arrays, one per named
source) and describes them with ``provide_data`` / ``provide_label``
(lists of :class:`DataDesc`); ``reset()`` starts the next epoch.
``for batch in it:`` runs one epoch.

Here live the protocol's classes, :func:`batch_array` (a host array moved to
the device as a batch Array) and the shared base of the iterators that hold
their whole current batch.  The iterators themselves live in
:mod:`minpy.nn.io` (``NDArrayIter``, which re-exports all of these),
:mod:`minpy.nn.io.prefetch` (``PrefetchingIter``) and :mod:`minpy.mxnet.bucketing`.
"""
import collections

import numpy

from ...core.array import new
from ...dispatch.context import current_context
from ...dispatch.transfer import move_raw

__all__ = ["DataDesc", "DataBatch", "DataIter", "batch_array"]


class DataDesc(collections.namedtuple("DataDesc", ["name", "shape"])):
    """The name, shape, dtype and layout of one input: a ``(name, shape)`` tuple with extras.

    ``DataDesc('data', (32, 784)) == ('data', (32, 784))`` and unpacks as a
    pair, as MXNet's; ``.dtype`` and ``.layout`` carry the rest.

    See also mxnet.io.DataDesc.
    """

    def __new__(cls, name, shape, dtype=numpy.float32, layout="NCHW"):
        desc = super().__new__(cls, name, tuple(int(s) for s in shape))
        desc.dtype = numpy.dtype(dtype)
        desc.layout = layout
        return desc

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"


class DataBatch:
    """One mini-batch: ``data`` and ``label`` lists of Arrays and what describes them.

    Args:
        data: list of Arrays, one per data source.
        label: list of Arrays, one per label source (None: no labels).
        pad: number of trailing samples that are padding (repeats), not data.
        index: indices of the batch's samples in the dataset (a numpy array).
        bucket_key: the bucket of a bucketing iterator (None otherwise).
        provide_data, provide_label: lists of :class:`DataDesc` for this batch.

    See also mxnet.io.DataBatch.
    """

    def __init__(self, data, label=None, pad=0, index=None, bucket_key=None, provide_data=None,
                 provide_label=None):
        if not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: data must be a list of arrays, one per source, got "
                            f"{type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: label must be a list of arrays or None, got "
                            f"{type(label).__name__}")
        self.data = list(data)
        self.label = [] if label is None else list(label)
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        """MXNet's form: ``DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]``
        (``None`` for no labels)."""
        data_shapes = [tuple(d.shape) for d in self.data]
        label_shapes = [tuple(l.shape) for l in self.label] if self.label else None
        return (f"{type(self).__name__}: data shapes: {data_shapes} label shapes: "
                f"{label_shapes}")

    def __repr__(self):
        shapes = [tuple(d.shape) for d in self.data] + [tuple(d.shape) for d in self.label]
        key = "" if self.bucket_key is None else f", bucket_key={self.bucket_key!r}"
        return f"DataBatch(shapes={shapes}, pad={self.pad}{key})"


def batch_array(host, ctx=None):
    """Host array ``host`` as a minpy Array on ``ctx`` (default: the current context).

    One transfer for a GPU context, no copy on the CPU.
    """
    return new(move_raw(host, current_context() if ctx is None else ctx))


class DataIter:
    """Base of the iterators: ``next()`` builds a DataBatch from the ``get*`` methods.

    Subclasses implement ``iter_next()`` (advance; False at the end of the
    epoch) and ``getdata()``, and usually ``getlabel``/``getpad``/``getindex``
    and ``reset``.

    See also mxnet.io.DataIter.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        """The next DataBatch; raises StopIteration at the end of the epoch."""
        if self.iter_next():
            return DataBatch(self.getdata(), self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def reset(self):
        """Start the next epoch."""

    def iter_next(self):
        """Move to the next batch; False when the epoch is over."""
        raise NotImplementedError(f"{type(self).__name__}.iter_next")

    def getdata(self):
        """The data Arrays of the current batch."""
        raise NotImplementedError(f"{type(self).__name__}.getdata")

    def getlabel(self):
        """The label Arrays of the current batch (empty list without labels)."""
        return []

    def getpad(self):
        """Number of padding samples at the end of the current batch."""
        return 0

    def getindex(self):
        """Indices of the current batch's samples, or None."""
        return None


# ---------------------------------------------------------------------- shared by the iterators
def _check_int(fn, name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, numpy.integer)):
        raise TypeError(f"{fn}: {name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{fn}: {name} must be >= {low}, got {value}")
    return int(value)


class _CurrentBatchIter(DataIter):
    """An iterator whose ``iter_next()`` stores the whole batch in ``_current``;
    ``next()`` and the ``get*`` methods read it; ``_prefetcher`` is its prefetch
    thread, if any."""

    _current = _prefetcher = None

    def close(self):
        """Stop the prefetch thread, if any (``reset()`` and garbage collection do it too)."""
        if self._prefetcher is not None:
            self._prefetcher.close()
            self._prefetcher = None

    def next(self):
        """The next DataBatch; StopIteration at the end of the epoch (then ``reset()``)."""
        if self.iter_next():
            return self._current
        raise StopIteration

    def _batch(self, what):
        if self._current is None:
            raise RuntimeError(f"{type(self).__name__}.{what}: no current batch; call next() "
                               f"or iter_next() first (and reset() after the end of an epoch)")
        return self._current

    def getdata(self):
        """The data Arrays of the current batch."""
        return self._batch("getdata").data

    def getlabel(self):
        """The label Arrays of the current batch."""
        return self._batch("getlabel").label

    def getpad(self):
        """Padding samples at the end of the current batch (``'pad'`` only)."""
        return self._batch("getpad").pad

    def getindex(self):
        """Indices (into the whole, unsharded data) of the current batch's samples."""
        return self._batch("getindex").index
