"""``mx.io``: MXNet 1.x's data iterators over minpy's (:mod:`minpy.nn.io`).

``NDArrayIter``, ``DataBatch``, ``DataDesc``, ``DataIter`` and ``PrefetchingIter``
are minpy's own classes. Written here, as MXNet defines them: :class:`ResizeIter`
(a fixed number of batches per epoch), :class:`CSVIter` (MXNet's C++ CSV reader:
rows reshaped to ``data_shape``) and :class:`MNISTIter` (the idx files of MNIST on
local disk; nothing is downloaded). ``ImageRecordIter``, ``LibSVMIter`` and the
other C++ iterators of RecordIO files are not provided (``ImageRecordIter`` and
``ImageRecordUInt8Iter`` raise NotImplementedError saying what to use instead:
:mod:`minpy.mxnet.recordio` reads the files).

See also mxnet.io.
"""
import gzip

import numpy

from ..nn.io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter
from ..nn.io.batch import batch_array
from ..nn.io.readers import load_csv

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter",
           "CSVIter", "MNISTIter", "ImageRecordIter", "ImageRecordUInt8Iter"]


class ResizeIter(DataIter):
    """``size`` batches of ``data_iter`` per epoch: it is reset when it runs out
    mid-epoch, and (``reset_internal=True``) at each :meth:`reset`.

    See also mxnet.io.ResizeIter.
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__(data_iter.batch_size)
        if isinstance(size, bool) or not isinstance(size, (int, numpy.integer)) or size < 1:
            raise ValueError(f"ResizeIter: size must be an int >= 1, got {size!r}")
        self.data_iter, self.size, self.reset_internal = data_iter, int(size), reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        """Start a new epoch of ``size`` batches."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        """Advance; False after ``size`` batches."""
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def next(self):
        """The next DataBatch (the wrapped iterator's); StopIteration after ``size``."""
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        """The current batch's data."""
        return self.current_batch.data

    def getlabel(self):
        """The current batch's labels."""
        return self.current_batch.label

    def getindex(self):
        """The current batch's sample indices."""
        return self.current_batch.index

    def getpad(self):
        """The current batch's padding."""
        return self.current_batch.pad


def _rows(what, table, shape, path):
    n = int(numpy.prod(shape))
    if table.shape[1] != n:
        raise ValueError(f"CSVIter: each row of {path!r} has {table.shape[1]} values, but "
                         f"{what}={tuple(shape)} needs {n}")
    return table.reshape((len(table),) + tuple(shape))


class CSVIter(DataIter):
    """MXNet's ``CSVIter``: the rows of ``data_csv``, each reshaped to ``data_shape``, with
    those of ``label_csv`` (reshaped to ``label_shape``; zeros when None; a ``label_shape``
    of ``(1,)`` gives labels of shape ``(batch_size,)``), in file order.

    The last batch of an epoch is padded (``batch.pad`` counts the padding). With
    ``round_batch=True`` (MXNet's default) it is filled with the first rows and the next
    epoch starts after them, as MXNet's reader does; with ``round_batch=False`` the
    padding rows are the first rows too (MXNet leaves stale values there) and every
    epoch starts at the first row. MXNet's C++-reader options (``prefetch_buffer``,
    ``ctx`` ...) are accepted and ignored.

    Raises:
        ValueError: a row of the wrong length, or files with different row counts.

    See also mxnet.io.CSVIter.
    """

    def __init__(self, data_csv, data_shape, label_csv=None, label_shape=(1,), batch_size=1,
                 round_batch=True, dtype="float32", data_name="data",
                 label_name="softmax_label", **ignored):
        super().__init__(batch_size)
        dtype = numpy.dtype(dtype)
        self._table = _rows("data_shape", load_csv(data_csv, dtype=dtype), data_shape, data_csv)
        if label_csv is None:
            label = numpy.zeros((len(self._table),) + tuple(label_shape), dtype)
        else:
            label = _rows("label_shape", load_csv(label_csv, dtype=dtype), label_shape,
                          label_csv)
        if len(label) != len(self._table):
            raise ValueError(f"CSVIter: {data_csv!r} has {len(self._table)} rows but "
                             f"{label_csv!r} {len(label)}")
        self._label = label.reshape(len(label)) if tuple(label_shape) == (1,) else label
        self.round_batch = bool(round_batch)
        self.provide_data = [DataDesc(data_name, (batch_size,) + self._table.shape[1:], dtype)]
        self.provide_label = [DataDesc(label_name, (batch_size,) + self._label.shape[1:],
                                       dtype)]
        self._start = self._pos = 0
        self._pad = 0
        self._current = None

    def reset(self):
        """Start the next epoch (after the rows the last batch borrowed, with
        ``round_batch=True``)."""
        self._start = self._pad if self.round_batch else 0
        self._pos, self._pad, self._current = self._start, 0, None

    def iter_next(self):
        """Advance; False at the end of the epoch."""
        n = len(self._table)
        if self._pos >= n:
            return False
        index = numpy.arange(self._pos, self._pos + self.batch_size) % n
        self._pad = max(0, self._pos + self.batch_size - n)
        self._pos += self.batch_size
        self._current = DataBatch([batch_array(self._table[index])],
                                  [batch_array(self._label[index])], pad=self._pad,
                                  index=index, provide_data=self.provide_data,
                                  provide_label=self.provide_label)
        return True

    def next(self):
        """The next DataBatch; StopIteration at the end of the epoch."""
        if self.iter_next():
            return self._current
        raise StopIteration

    def getdata(self):
        """The current batch's data."""
        return self._current.data

    def getlabel(self):
        """The current batch's labels."""
        return self._current.label

    def getpad(self):
        """The current batch's padding."""
        return self._current.pad

    def getindex(self):
        """The current batch's row indices."""
        return self._current.index


def _read_idx(path, magic):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    got = int.from_bytes(raw[:4], "big")
    if got != magic:
        raise ValueError(f"MNISTIter: {path!r} is not an MNIST idx file (magic number "
                         f"{got}, expected {magic})")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    body = numpy.frombuffer(raw, numpy.uint8, offset=4 + 4 * ndim)
    if body.size != int(numpy.prod(dims)):
        raise ValueError(f"MNISTIter: {path!r} holds {body.size} bytes of data, its header "
                         f"says {dims}")
    return body.reshape(dims)


def MNISTIter(image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte",
              batch_size=128, shuffle=True, flat=False, seed=0, silent=False, num_parts=1,
              part_index=0, data_name="data", label_name="softmax_label", **ignored):
    """MXNet's ``MNISTIter`` over local idx files (``.gz`` too): images as float32
    bytes / 256 (MXNet's scale, src/io/iter_mnist.cc: [0, 255/256]), shape
    ``(batch, 1, 28, 28)`` (``flat=True``: ``(batch, 784)``), labels float32
    ``(batch,)``; the rows that do not fill a batch are dropped, as MXNet's reader does.
    ``shuffle``: the images are shuffled once, when the iterator is made, with ``seed``
    (every epoch has that order, as MXNet's; the order itself differs from MXNet's
    generator's). ``num_parts``/``part_index``: the part's contiguous rows of the files,
    as MXNet splits them (shuffled within the part). ``data_shape`` and MXNet's other
    reader options are accepted and ignored. Nothing is downloaded.

    Raises:
        FileNotFoundError: a missing file; ValueError: a file that is not idx data,
        image and label counts that differ, or a part_index outside [0, num_parts).

    See also mxnet.io.MNISTIter.
    """
    images = _read_idx(image, 2051)
    labels = _read_idx(label, 2049)
    if len(images) != len(labels):
        raise ValueError(f"MNISTIter: {image!r} holds {len(images)} images but {label!r} "
                         f"{len(labels)} labels")
    data = images.astype(numpy.float32) * numpy.float32(1.0 / 256.0)
    data = data.reshape(len(data), -1) if flat else data.reshape((len(data), 1) +
                                                                 images.shape[1:])
    labels = labels.astype(numpy.float32)
    if not 0 <= part_index < num_parts:
        raise ValueError(f"MNISTIter: part_index must be in [0, num_parts={num_parts}), got "
                         f"{part_index}")
    # MXNet's GetPart: a contiguous part of the files, then shuffled within
    start, end = (int(len(data) / num_parts * p) for p in (part_index, part_index + 1))
    data, labels = data[start:end], labels[start:end]
    if shuffle:
        order = numpy.random.RandomState(seed).permutation(len(data))
        data, labels = data[order], labels[order]
    return NDArrayIter({data_name: data}, {label_name: labels}, batch_size=batch_size,
                       shuffle=False, last_batch_handle="discard")


def _no_record_iter(name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"mx.io.{name} (MXNet's C++ reader, decoder and augmenter of RecordIO image "
            f"files) is not provided by minpy: read the records with "
            f"mx.recordio.MXIndexedRecordIO(idx, rec, 'r') and mx.recordio.unpack_img, "
            f"and serve the arrays with mx.io.NDArrayIter (or minpy.nn.io's iterators)")
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = (f"Not provided: raises NotImplementedError (see mx.recordio). "
                      f"See also mxnet.io.{name}.")
    return refuse


ImageRecordIter = _no_record_iter("ImageRecordIter")
ImageRecordUInt8Iter = _no_record_iter("ImageRecordUInt8Iter")
