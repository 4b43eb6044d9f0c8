"""``minpy.nn.io.readers``: load datasets from any fsspec URL (NumPy ``.npz``/``.npy``, CSV).

Every reader opens its file through ``fsspec.open``, so one call reads a
local path, ``file://``, ``memory://`` and, once the user installs the
driver, ``s3://``, ``gs://``, ``http://`` ...  Keyword arguments beyond the
reader's own are fsspec *storage options* (credentials, endpoint ...).

fsspec is optional (``pip install fsspec``).  Without it a plain local
path still reads through the builtin ``open``; a URL with a protocol raises
ImportError naming the fix.  Nothing here downloads anything unasked.

The readers return host ``numpy.ndarray`` objects, not minpy Arrays: the
data iterators gather batches on the host and move each batch to the device
once (see :class:`minpy.nn.io.NDArrayIter`), so a whole dataset never needs
to fit on the GPU.  ``minpy.array(x)`` turns one into an Array.
"""
import io
import os
import pickle

import numpy

__all__ = ["open_url", "load_npz", "load_npy", "load_csv", "save_data_labels",
           "load_data_labels"]

_INSTALL_HINT = 'pip install fsspec (in a minpy checkout: pip install -e ".[io]")'


def _import_fsspec():
    """The fsspec module, or None when it is not installed (tests replace this)."""
    try:
        import fsspec          # optional dependency: the "io" extra
    except ImportError:
        return None
    return fsspec


def open_url(url, mode="rb", **storage_options):
    """Open ``url`` (a path or any fsspec URL) as a file object, for a ``with`` block.

    Args:
        url: a local path (str or ``os.PathLike``) or an fsspec URL
            (``file://``, ``memory://``, ``s3://`` ... chained ``a::b`` too).
        mode: ``'rb'``, ``'r'``, ``'wb'`` or ``'w'``.
        **storage_options: passed to ``fsspec.open`` (credentials, endpoint ...).
    Returns:
        A context manager giving the open file.
    Raises:
        ImportError: ``url`` names a protocol and fsspec is not installed.
        TypeError: ``url`` is not a str or path.

    See also fsspec.open.
    """
    if not isinstance(url, (str, os.PathLike)):
        raise TypeError(f"open_url: url must be a str or os.PathLike, got "
                        f"{type(url).__name__}")
    url = os.fspath(url)
    fsspec = _import_fsspec()
    if fsspec is not None:
        return fsspec.open(url, mode, **storage_options)
    if "://" in url or "::" in url or storage_options:
        raise ImportError(f"reading {url!r} needs fsspec, which is not installed: "
                          f"{_INSTALL_HINT}")
    return open(url, mode)      # noqa: SIM115  (the caller's with-block closes it)


def load_npz(url, allow_pickle=False, **storage_options):
    """Read every array of a NumPy ``.npz`` archive at ``url``.

    Args:
        url: a path or fsspec URL (see :func:`open_url`).
        allow_pickle: allow object arrays (unpickling runs code from the file).
        **storage_options: fsspec storage options.
    Returns:
        dict name -> host ``numpy.ndarray`` (read fully; the file is closed).

    See also numpy.load, :meth:`minpy.nn.io.NDArrayIter.from_npz`.
    """
    with open_url(url, "rb", **storage_options) as f:
        with numpy.load(_seekable(f), allow_pickle=allow_pickle) as archive:
            return {k: archive[k] for k in archive.files}


def load_npy(url, allow_pickle=False, **storage_options):
    """Read the array of a NumPy ``.npy`` file at ``url`` (a host ``numpy.ndarray``).

    See also numpy.load, :func:`load_npz`.
    """
    with open_url(url, "rb", **storage_options) as f:
        out = numpy.load(_seekable(f), allow_pickle=allow_pickle)
    if not isinstance(out, numpy.ndarray):
        raise ValueError(f"load_npy: {url!r} is not a .npy file (it holds "
                         f"{type(out).__name__}; use load_npz for archives)")
    return out


def load_csv(url, delimiter=",", skiprows=0, dtype=numpy.float32, label_column=None,
             label_dtype=None, **storage_options):
    """Read a numeric CSV file at ``url`` into a 2-D array, optionally splitting off labels.

    Args:
        url: a path or fsspec URL (see :func:`open_url`).
        delimiter: the column separator.
        skiprows: number of leading lines to skip (a header).
        dtype: dtype of the data columns.
        label_column: None, or the index (negative counts from the end) of
            the column holding the labels.
        label_dtype: dtype of the labels (default ``dtype``).
        **storage_options: fsspec storage options.
    Returns:
        The ``(rows, columns)`` array, or ``(data, label)`` when ``label_column``
        is given: data without that column and the 1-D label column.
    Raises:
        ValueError: a row that does not parse, or ``label_column`` out of range.

    See also numpy.loadtxt.
    """
    with open_url(url, "rb", **storage_options) as f:
        text = io.TextIOWrapper(_seekable(f), encoding="utf-8")
        table = numpy.loadtxt(text, delimiter=delimiter, skiprows=skiprows,
                              dtype=numpy.float64 if label_column is not None else dtype,
                              ndmin=2)
    if label_column is None:
        return table
    ncol = table.shape[1]
    if isinstance(label_column, bool) or not isinstance(label_column, (int, numpy.integer)):
        raise TypeError(f"load_csv: label_column must be an int or None, got "
                        f"{type(label_column).__name__}")
    if not -ncol <= label_column < ncol:
        raise ValueError(f"load_csv: label_column={label_column} is out of range for "
                         f"{url!r}, which has {ncol} columns")
    label = table[:, label_column].astype(dtype if label_dtype is None else label_dtype)
    data = numpy.delete(table, label_column, axis=1).astype(dtype)
    return data, label


def save_data_labels(data_vec, label_vec, file_name, **storage_options):
    """Pickle ``{'data': data_vec, 'labels': label_vec}`` to ``file_name`` (MinPy's helper).

    See also :func:`load_data_labels`, :func:`numpy.savez` (no pickle).
    """
    with open_url(file_name, "wb", **storage_options) as f:
        pickle.dump({"data": numpy.asarray(data_vec), "labels": numpy.asarray(label_vec)}, f,
                    protocol=pickle.HIGHEST_PROTOCOL)


def load_data_labels(file_name, **storage_options):
    """``(data, labels)`` saved by :func:`save_data_labels` (MinPy's helper).

    Unpickling runs code from the file: load only files you trust.
    """
    with open_url(file_name, "rb", **storage_options) as f:
        saved = pickle.load(f)
    if not isinstance(saved, dict) or not {"data", "labels"} <= set(saved):
        raise ValueError(f"load_data_labels: {file_name!r} does not hold a dict with "
                         "'data' and 'labels' (written by save_data_labels)")
    return saved["data"], saved["labels"]


def _seekable(f):
    """``f`` itself when it can seek (numpy.load needs it for .npz), else its bytes in memory."""
    if getattr(f, "seekable", lambda: False)():
        return f
    return io.BytesIO(f.read())
