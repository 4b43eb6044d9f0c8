"""``minpy.nn.checkpoint``: training state written atomically, read back verified.

File layout: an 8-byte magic ``MINPYCK1``, the payload's length (8 bytes,
little endian), the SHA-256 of the payload (32 bytes), then the payload: a
pickle of plain data (dicts, lists, tuples, numbers, strings, NumPy arrays).

- Writing goes to a temporary file beside the target, is flushed and
  fsync'ed, then renamed over the target (and the directory fsync'ed): a
  crash at any point leaves either the old file or the new one, never half.
- Reading checks the magic, the length and the hash before unpickling, so a
  truncated or corrupt file raises :class:`CheckpointError` naming the file
  and what is wrong; the unpickler admits only NumPy arrays, dtypes and
  builtin containers (a checkpoint cannot run code when loaded).
"""
import hashlib
import io
import os
import pickle
import struct
import tempfile

import numpy

__all__ = ["save", "load", "host_copies", "CheckpointError"]

MAGIC = b"MINPYCK1"
_HEADER = struct.Struct("<8sQ32s")


class CheckpointError(ValueError):
    """A checkpoint file that is truncated, corrupt, or not a minpy checkpoint."""


def host_copies(arrays):
    """``{name: host numpy copy}`` of a dict of minpy/NumPy arrays (``None`` values left out):
    the form parameters take in a checkpoint."""
    return {k: (v.asnumpy() if hasattr(v, "asnumpy") else numpy.asarray(v)).copy()
            for k, v in arrays.items() if v is not None}


def save(path, state):
    """Write ``state`` (plain data and NumPy arrays) to ``path`` atomically.

    Args:
        path: the file to create or replace.
        state: dict of plain Python data and ``numpy.ndarray``s.
    Raises:
        Whatever pickling or the file system raises; the previous file at
        ``path`` is left untouched in that case.
    """
    payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    header = _HEADER.pack(MAGIC, len(payload), hashlib.sha256(payload).digest())
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + "-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:          # some platforms cannot open a directory; the rename is still atomic
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load(path):
    """Read a checkpoint written by :func:`save`, verifying its length and hash.

    Raises:
        CheckpointError: the file is not a minpy checkpoint, is truncated, or
            its contents do not match the recorded hash.
        FileNotFoundError: no file at ``path``.
    """
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < _HEADER.size:
        raise CheckpointError(f"checkpoint {path!r} is truncated: {len(blob)} bytes, shorter than "
                              f"the {_HEADER.size}-byte header")
    magic, length, digest = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise CheckpointError(f"{path!r} is not a minpy checkpoint (starts with {magic!r}, "
                              f"expected {MAGIC!r})")
    payload = blob[_HEADER.size:]
    if len(payload) != length:
        raise CheckpointError(f"checkpoint {path!r} is truncated or padded: the header records a "
                              f"{length}-byte payload, the file holds {len(payload)} bytes")
    if hashlib.sha256(payload).digest() != digest:
        raise CheckpointError(f"checkpoint {path!r} is corrupt: its SHA-256 does not match the "
                              "one recorded when it was written")
    return _SafeUnpickler(io.BytesIO(payload)).load()


_ALLOWED = {
    ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "complex"), ("builtins", "slice"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED or (module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise CheckpointError(f"checkpoint refers to {module}.{name}, which a minpy checkpoint "
                              "never holds (refusing to load it)")
