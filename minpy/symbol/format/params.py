"""MXNet 1.x's NDArray files (``mx.nd.save`` / ``mx.nd.load``, the ``.params`` files).

Layout, all little-endian (MXNet's ``NDArray::Save/Load`` and ``kMXAPINDArrayListMagic``)::

    file    := u64 0x112, u64 reserved, u64 n, array * n, u64 k, name * k    (k is 0 or n)
    name    := u64 length, UTF-8 bytes
    array   := V2 | V3 | V1 | legacy
    V2, V3  := u32 0xF993FAC9 (V3, NumPy shape semantics: 0xF993FACA), i32 storage type,
               [shape64 storage shape], shape64, ctx, i32 type flag,
               [(i32 aux type flag, shape64 aux shape) per aux array], data, [aux data ...]
    V1      := u32 0xF993FAC8, shape64, ctx, i32 type flag, data
    legacy  := u32 ndim (in place of a magic), u32 dims[ndim], ctx, i32 type flag, data
    shape64 := i32 ndim, i64 dims[ndim]
    ctx     := i32 device type (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared), i32 device id

The bracketed parts are present for sparse storage only (1 row_sparse: one aux
array, 2 csr: two); those arrays are refused. A shape of ndim 0 is a 0-d array
followed by one element in every version: that is what MXNet 1.9.1 writes for
one (its own V2 reader stops after such a shape and misreads the rest, so
``mx.nd.load`` cannot read that file back; ``mx.npx.load`` reads the V3 form).
Writing produces exactly ``mx.nd.save``'s bytes: V2, dense, context cpu(0).
"""
import math
import os
import struct

import numpy

from ...core.array import Array
from ...numpy import array as _to_minpy
from . import mxnet_json

__all__ = ["load", "save", "loads", "dumps", "NDArrayFileError"]

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
MAX_LEGACY_NDIM = 64        # a legacy "magic" is the ndim; anything larger is a wrong magic
MAX_NDIM = 64 if numpy.lib.NumpyVersion(numpy.__version__) >= "2.0.0" else 32   # NPY_MAXDIMS
MAX_BYTES = numpy.iinfo(numpy.intp).max     # NumPy's bound on a shape, 0 dims left out
# the flags MXNet 1.9.1's NDArray files hold (mshadow's first eight; bfloat16 refused)
DTYPES = {flag: name for flag, name in mxnet_json.DTYPE_CODES.items() if flag <= 7}
FLAGS = {numpy.dtype(name): flag for flag, name in DTYPES.items()}
ITEMSIZE = {flag: numpy.dtype(name).itemsize for flag, name in DTYPES.items()}
BFLOAT16 = next(f for f, n in mxnet_json.DTYPE_CODES.items() if n == "bfloat16")
STORAGE = {0: ("default", 0), 1: ("row_sparse", 1), 2: ("csr", 2)}   # name, aux arrays
DEVICES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
_FOREIGN = ((b"PK\x03\x04", "a zip archive (an .npz?)"), (b"\x93NUMPY", "an .npy file"),
            (b"{", "JSON text"), (b"[", "JSON text"), (b"\x89HDF", "an HDF5 file"),
            (b"\x80", "a pickle"))


class NDArrayFileError(ValueError):
    """Bytes that are not a valid MXNet NDArray file; the message says where and why."""


class _Reader:
    """A cursor over the whole file's bytes that raises NDArrayFileError with context."""

    def __init__(self, buf, func, name):
        self.buf, self.func, self.name = buf, func, name
        self.pos = 0
        self.where = "the list header"

    def fail(self, expected, found, at=None):
        at = self.pos if at is None else at
        raise NDArrayFileError(f"{self.func}: {self.name}: {self.where}: at byte {at}: "
                               f"expected {expected}, found {found}")

    def take(self, n, what):
        """Offset of the next ``n`` bytes (``what`` they should be), moving past them."""
        start, left = self.pos, len(self.buf) - self.pos
        if n > left:
            self.fail(f"{what} ({n} bytes)", f"the end of the file ({left} bytes left)")
        self.pos += n
        return start

    def int(self, fmt, what):
        return struct.unpack_from(fmt, self.buf, self.take(struct.calcsize(fmt), what))[0]

    def dims(self, ndim, code, what, at):
        """The ``ndim`` dims (``code``) of the shape whose record starts at byte ``at``."""
        if ndim > MAX_NDIM:
            self.fail(f"at most {MAX_NDIM} dims for the {what} (NumPy's limit)", ndim, at=at)
        start = self.take(ndim * numpy.dtype(code).itemsize, f"the {ndim} dims of the {what}")
        dims = numpy.frombuffer(self.buf, code, ndim, start)
        if (dims < 0).any():
            self.fail(f"dims >= 0 in the {what} (-1, unknown, is not supported)",
                      tuple(dims.tolist()), at=start)
        return tuple(dims.tolist())

    def shape64(self, what):
        at = self.pos
        ndim = self.int("<i", f"the ndim of the {what}")
        if ndim < 0:
            self.fail(f"an ndim >= 0 for the {what} (-1: an uninitialized NDArray, not "
                      "supported)", ndim, at=at)
        return self.dims(ndim, "<i8", what, at)

    def flag(self, what):
        at = self.pos
        flag = self.int("<i", what)
        if flag not in DTYPES and flag != BFLOAT16:
            self.fail(f"{what} in {sorted(DTYPES) + [BFLOAT16]}", flag, at=at)
        return flag

    def values(self, flag, shape, what, shape_at):
        """The array of ``shape`` (read at byte ``shape_at``) stored next, or (for
        bfloat16) None after skipping it."""
        count = math.prod(shape)
        itemsize = 2 if flag == BFLOAT16 else ITEMSIZE[flag]
        kind = "bfloat16" if flag == BFLOAT16 else DTYPES[flag]
        start = self.take(count * itemsize, f"{count} {kind} values of the {what}")
        # a 0 dim makes any shape fit the bytes left, but NumPy refuses the others' product
        # past MAX_BYTES ("array is too big")
        nonzero = math.prod(d for d in shape if d) * itemsize
        if nonzero > MAX_BYTES:
            self.fail(f"a shape of at most {MAX_BYTES} bytes for the {what} (NumPy's limit, "
                      "its 0 dims left out)", f"{shape}, {nonzero} bytes", at=shape_at)
        if flag == BFLOAT16:
            return None
        raw = numpy.frombuffer(self.buf, "<" + numpy.dtype(DTYPES[flag]).str[1:], count, start)
        if flag == 7:      # any nonzero byte is True; never hand NumPy a bool byte of 2
            raw = raw.view(numpy.uint8) != 0
        return raw.astype(DTYPES[flag], copy=False).reshape(shape)


def _read_array(r):
    """One array record: a NumPy array (a view of the file's bytes), or the reason it
    is refused (str; the caller names the key once the names are read)."""
    at = r.pos
    magic = r.int("<I", "an array magic (0xF993FAC9, 0xF993FACA, 0xF993FAC8) or legacy ndim")
    stype = 0
    if magic in (V2_MAGIC, V3_MAGIC):
        stype_at = r.pos
        stype = r.int("<i", "the storage type")
        if stype not in STORAGE:
            r.fail("storage type 0 (default), 1 (row_sparse) or 2 (csr)"
                   + (" (-1 is an uninitialized NDArray)" if stype == -1 else ""),
                   stype, at=stype_at)
        if STORAGE[stype][1]:
            storage_at = r.pos
            storage_shape = r.shape64("storage shape")
        shape_at = r.pos
        shape = r.shape64("shape")
    elif magic == V1_MAGIC:
        shape_at = r.pos
        shape = r.shape64("shape")
    elif magic <= MAX_LEGACY_NDIM:
        shape_at = at
        shape = r.dims(magic, "<u4", "legacy shape", at)
    else:
        r.fail(f"an array magic 0xF993FAC9 (V2), 0xF993FACA (V3), 0xF993FAC8 (V1) or a legacy "
               f"ndim <= {MAX_LEGACY_NDIM}", f"0x{magic:08X}", at=at)
    dev_at = r.pos
    dev_type = r.int("<i", "the context's device type")
    if dev_type not in DEVICES:
        r.fail(f"a device type in {sorted(DEVICES)} ({', '.join(DEVICES.values())})",
               dev_type, at=dev_at)
    r.int("<i", "the context's device id")
    flag = r.flag("the type flag")
    if stype:
        aux = []
        for i in range(STORAGE[stype][1]):
            aux_flag = r.flag(f"aux array {i}'s type flag")
            aux.append((aux_flag, r.pos, r.shape64(f"aux array {i}'s shape")))
        r.values(flag, storage_shape, "stored data", storage_at)
        for i, (aux_flag, aux_at, aux_shape) in enumerate(aux):
            r.values(aux_flag, aux_shape, f"aux array {i}", aux_at)
        return (f"at byte {at}: {STORAGE[stype][0]} storage (storage type {stype}): sparse "
                "arrays are not supported, only dense ones; convert with .tostype('default') "
                "in MXNet before saving")
    values = r.values(flag, shape, "data", shape_at)
    if values is None:
        return (f"at byte {at}: bfloat16 (type flag {BFLOAT16}) is not supported: NumPy has "
                "no bfloat16; cast to float32 in MXNet before saving")
    return values


def _parse(buf, func, name):
    r = _Reader(buf, func, name)
    header = struct.unpack_from("<Q", buf)[0] if len(buf) >= 8 else None
    if header != LIST_MAGIC:
        head = bytes(buf[:16])
        kind = next((k for sig, k in _FOREIGN if head.lstrip().startswith(sig)), None)
        r.fail("the NDArray list magic 0x112 (a u64)",
               f"{head[:8]!r}" + (f", {kind}" if kind else "")
               + ("" if header is not None else f" (a file of {len(buf)} bytes)"))
    r.pos = 8
    r.int("<Q", "the reserved word")          # its value is not checked, as in MXNet
    n = r.int("<Q", "the number of arrays")
    arrays = []                               # a wrong n soon runs out of bytes below
    for i in range(n):
        r.where = f"array {i}"
        arrays.append(_read_array(r))
    r.where = "the names"
    k_at = r.pos
    k = r.int("<Q", "the number of names")
    if k not in (0, n):
        r.fail(f"0 or {n} names (one per array)", k, at=k_at)
    names = []
    for j in range(k):
        r.where = f"name {j}"
        length = r.int("<Q", "the name's length")
        start = r.take(length, "the name's UTF-8 bytes")
        try:
            names.append(bytes(buf[start:r.pos]).decode("utf-8"))
        except UnicodeDecodeError as e:
            r.fail("a UTF-8 name", f"{bytes(buf[start:r.pos])!r} ({e.reason})", at=start)
    if r.pos != len(buf):
        r.where = "the end"
        r.fail("the end of the file after the names", f"{len(buf) - r.pos} more bytes")
    for i, a in enumerate(arrays):
        if isinstance(a, str):
            key = f" (key {names[i]!r})" if names else ""
            raise NDArrayFileError(f"{func}: {name}: array {i}{key}: {a}")
    arrays = [_to_minpy(a) for a in arrays]
    return dict(zip(names, arrays)) if names else arrays


def loads(data, name="<bytes>"):
    """Read an MXNet NDArray file's bytes (see :func:`load`); ``name`` labels errors."""
    return _parse(memoryview(data).cast("B"), "minpy.nd.loads", name)


def load(fname_or_fileobj):
    """Read an MXNet NDArray file (``mx.nd.save``, ``.params`` of a checkpoint or export).

    Args:
        fname_or_fileobj: a path, or a binary file object (read to its end).
    Returns:
        {name: minpy Array} when the file has names, else a list of minpy Arrays;
        each on the current context with the stored dtype.
    Raises:
        NDArrayFileError (a ValueError) naming the file, the array and the byte offset,
        for a file that is not a valid NDArray file or holds sparse/bfloat16 arrays.
    """
    if hasattr(fname_or_fileobj, "read"):
        buf = fname_or_fileobj.read()
        name = repr(getattr(fname_or_fileobj, "name", "<file object>"))
    else:
        name = repr(os.fspath(fname_or_fileobj))
        with open(fname_or_fileobj, "rb") as f:
            buf = f.read()
    if not isinstance(buf, (bytes, bytearray)):
        raise TypeError(f"minpy.nd.load: {name}: open the file in binary mode ('rb')")
    return _parse(memoryview(buf), "minpy.nd.load", name)


def _entries(data, func):
    """[(label, value)] and the names (empty for a list) of what ``save`` was given."""
    if isinstance(data, dict):
        for key in data:
            if not isinstance(key, str) or "\0" in key:
                raise TypeError(f"{func}: keys must be str without NUL characters, got {key!r}")
        return [(repr(k), v) for k, v in data.items()], list(data)
    if isinstance(data, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(data)], []
    return [("0", data)], []


def dumps(data, _func="minpy.nd.dumps"):
    """The bytes ``mx.nd.save`` writes for ``data``.

    Args:
        data: a dict {str: array}, a list/tuple of arrays, or one array (minpy Arrays,
            NumPy arrays or NumPy scalars of a dtype MXNet has: float32/64/16, uint8,
            int32, int8, int64, bool).
    Returns:
        bytes: V2 records, dense storage, context cpu(0), names after the arrays.
    """
    entries, names = _entries(data, _func)
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(entries))]
    for label, value in entries:
        if not isinstance(value, (Array, numpy.ndarray, numpy.generic)):
            raise TypeError(f"{_func}: array {label}: expected a minpy Array or a NumPy array, "
                            f"got {type(value).__name__}")
        a = numpy.asarray(value)
        if a.dtype not in FLAGS:
            raise TypeError(f"{_func}: array {label}: dtype {a.dtype} has no MXNet type flag; "
                            f"supported: {', '.join(DTYPES.values())}")
        parts.append(struct.pack(f"<IIi{a.ndim}q", V2_MAGIC, 0, a.ndim, *a.shape))
        parts.append(struct.pack("<iii", 1, 0, FLAGS[a.dtype]))
        parts.append(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    parts.append(struct.pack("<Q", len(names)))
    for key in names:
        raw = key.encode("utf-8")
        parts.append(struct.pack("<Q", len(raw)) + raw)
    return b"".join(parts)


def save(fname_or_fileobj, data):
    """Write ``data`` as ``mx.nd.save`` does, so ``mx.nd.load`` (and :func:`load`) read it.

    Args:
        fname_or_fileobj: a path, or a binary file object to write to.
        data: a dict {str: array}, a list/tuple of arrays, or one array (see :func:`dumps`).
    Returns:
        None.
    """
    blob = dumps(data, _func="minpy.nd.save")
    if hasattr(fname_or_fileobj, "write"):
        fname_or_fileobj.write(blob)
    else:
        with open(fname_or_fileobj, "wb") as f:
            f.write(blob)
