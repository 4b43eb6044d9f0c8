"""``minpy.nn.checkpoint``: the checkpoint files — minpy's training state and MXNet's.

**Training state** (``save``/``load``; the Solver's ``checkpoint-NNNN.minpy``
files, named, listed and pruned by epoch number with :func:`path_for`,
:func:`numbered`, :func:`latest`, :func:`prune`). File layout: an 8-byte magic
``MINPYCK1``, the payload's length (8 bytes, little endian), the SHA-256 of the
payload (32 bytes), then the payload: a pickle of plain data (dicts, lists,
tuples, numbers, strings, NumPy arrays).

- Writing goes to a temporary file beside the target, is flushed and
  fsync'ed, then renamed over the target (and the directory fsync'ed): a
  crash at any point leaves either the old file or the new one, never half.
- Reading checks the magic, the length and the hash before unpickling, so a
  truncated or corrupt file raises :class:`CheckpointError` naming the file
  and what is wrong; the unpickler admits only NumPy arrays, dtypes and
  builtin containers (a checkpoint cannot run code when loaded).

**MXNet's checkpoints** (``save_checkpoint``/``load_checkpoint``/``load_params``,
as ``mx.model``'s; public as ``minpy.model``): ``PREFIX-symbol.json`` + ``PREFIX-%04d.params``,
an NDArray file (:mod:`minpy.symbol.format.params`) whose keys are ``arg:NAME``
(arguments: weights, biases) and ``aux:NAME`` (auxiliary states: BatchNorm's
running statistics), as ``mx.model.save_checkpoint`` and Gluon's
``HybridBlock.export`` write them; :func:`write_params`/:func:`read_params` are
that ``.params`` file alone (``Module.save_params``/``load_params``).
"""
import glob
import hashlib
import io
import os
import pickle
import re
import struct
import tempfile

import numpy

from ..symbol import Symbol
from ..symbol.format import params as ndfile, minpy_json as serialize

__all__ = ["save", "load", "host_copies", "CheckpointError", "path_for", "numbered", "latest",
           "prune", "save_checkpoint", "load_checkpoint", "load_params", "write_params",
           "read_params"]

MAGIC = b"MINPYCK1"
_HEADER = struct.Struct("<8sQ32s")


class CheckpointError(ValueError):
    """A checkpoint file that is truncated, corrupt, or not a minpy checkpoint."""


def host_copies(arrays):
    """``{name: host numpy copy}`` of a dict of minpy/NumPy arrays (``None`` values left out):
    the form parameters take in a checkpoint."""
    return {k: v.asnumpy() if hasattr(v, "asnumpy") else numpy.array(v)
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


# ---------------------------------------------------------------- numbered files in a directory
_NUMBERED = re.compile(r"checkpoint-(\d+)\.minpy")


def path_for(directory, epoch):
    """The path of the checkpoint after ``epoch``: ``directory/checkpoint-%04d.minpy``."""
    return os.path.join(directory, f"checkpoint-{int(epoch):04d}.minpy")


def numbered(directory):
    """The paths of ``directory``'s ``checkpoint-<epoch>.minpy`` files, oldest epoch first.

    By the epoch's number, not the name: ``checkpoint-10000`` sorts before
    ``checkpoint-9999`` as text. Other names (``checkpoint-best.minpy``) are not
    listed: not ours to prune or resume from. A missing directory lists nothing.
    """
    found = []
    for path in glob.glob(os.path.join(glob.escape(directory), "checkpoint-*.minpy")):
        match = _NUMBERED.fullmatch(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found)]


def latest(directory):
    """The newest numbered checkpoint in ``directory`` (see :func:`numbered`), or None."""
    found = numbered(directory)
    return found[-1] if found else None


def prune(directory, keep):
    """Delete all but the newest ``keep`` numbered checkpoints in ``directory`` (``keep`` <= 0:
    delete none)."""
    if keep > 0:
        for old in numbered(directory)[:-keep]:
            os.unlink(old)


# ---------------------------------------------------------------- MXNet's checkpoints
def _params_file(prefix, epoch):
    return "%s-%04d.params" % (prefix, epoch)


def write_params(fname, arg_params, aux_params):
    """Write MXNet's ``.params`` file of a model: keys ``arg:NAME`` and ``aux:NAME``.

    Args:
        fname: the file to write.
        arg_params, aux_params: dicts {name: array} (minpy Arrays or NumPy arrays).
    """
    data = {f"arg:{k}": v for k, v in arg_params.items()}
    data.update({f"aux:{k}": v for k, v in aux_params.items()})
    ndfile.save(fname, data)


def read_params(fname):
    """Read MXNet's ``.params`` file of a model (keys ``arg:NAME``/``aux:NAME``).

    Returns:
        (arg_params, aux_params): dicts {name: minpy Array} without the key prefixes.
    Raises:
        FileNotFoundError when the file is missing; ValueError for a key with neither
        the ``arg:`` nor the ``aux:`` prefix, or a file whose arrays have no names.
    """
    saved = ndfile.load(fname)
    if isinstance(saved, list):
        if saved:
            raise ValueError(f"load_params: {fname!r}: its {len(saved)} arrays have no names; "
                             "a checkpoint's keys are 'arg:NAME' and 'aux:NAME'")
        saved = {}
    params = {"arg": {}, "aux": {}}
    for key, value in saved.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in params:
            raise ValueError(f"load_params: {fname!r}: key {key!r} has neither the 'arg:' nor "
                             "the 'aux:' prefix (Gluon's save_parameters writes bare names: "
                             "read such a file with minpy.nd.load)")
        params[kind][name] = value
    return params["arg"], params["aux"]


def load_params(prefix, epoch):
    """Read the parameters of checkpoint ``prefix`` at ``epoch``, as ``mx.model.load_params``.

    Args:
        prefix: the path prefix (``prefix-0007.params`` for epoch 7).
        epoch: the epoch number.
    Returns:
        (arg_params, aux_params) as :func:`read_params`.
    Raises:
        As :func:`read_params`.
    """
    return read_params(_params_file(prefix, epoch))


def load_checkpoint(prefix, epoch):
    """Read checkpoint ``prefix`` at ``epoch``, as ``mx.model.load_checkpoint``.

    Args:
        prefix: the path prefix: reads ``prefix-symbol.json`` and ``prefix-%04d.params``.
        epoch: the epoch number.
    Returns:
        (symbol, arg_params, aux_params).
    Raises:
        FileNotFoundError naming the missing file; ValueError as :func:`load_params`.
    """
    symbol = Symbol(serialize.load_file(f"{prefix}-symbol.json"))
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write a checkpoint as ``mx.model.save_checkpoint`` does (the same params bytes).

    Args:
        prefix: the path prefix.
        epoch: the epoch number (the params file is ``prefix-%04d.params``).
        symbol: the Symbol, saved to ``prefix-symbol.json``; None saves no symbol.
        arg_params, aux_params: dicts {name: array} (minpy Arrays or NumPy arrays).
        remove_amp_cast: MXNet's keyword; minpy's graphs hold no amp_cast nodes.
    Returns:
        None.
    """
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json")
    write_params(_params_file(prefix, epoch), arg_params, aux_params)
