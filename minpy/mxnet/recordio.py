"""``mx.recordio``: MXNet 1.x's RecordIO files (``.rec``, with a ``.idx`` index), byte
for byte as MXNet 1.9.1 (dmlc-core's ``RecordIOWriter``/``RecordIOReader``) writes them.

A record on disk is the magic number ``0xced7230a`` (little endian), a 32-bit word
``cflag << 29 | length`` and ``length`` bytes padded with zeros to a multiple of 4.
A record holding the magic number at a 4-byte aligned offset is written as chunks
split there (``cflag`` 1 first, 2 middle, 3 last; 0 a whole record), the magic
number itself left out, and joined back on reading. An index file has one line
``key<TAB>offset`` per record of an ``MXIndexedRecordIO``.

    writer = mx.recordio.MXIndexedRecordIO('data.idx', 'data.rec', 'w')
    writer.write_idx(0, mx.recordio.pack(mx.recordio.IRHeader(0, 3.0, 0, 0), b'...'))
    writer.close()

``pack``/``unpack`` add/strip MXNet's image-record header (``IRHeader``: struct
``'IfQQ'``, then ``flag`` float32 labels when the label is an array).
``pack_img``/``unpack_img`` encode/decode the image with OpenCV (``cv2``) when it
is importable, else with Pillow; both take and give OpenCV's BGR channel order,
as MXNet's. ``mx.io.ImageRecordIter`` is not provided (see ``mx.io``).
See also mxnet.recordio (MXNet 1.9.1's python/mxnet/recordio.py).
"""
import io
import numbers
import os
import struct
from collections import namedtuple

import numpy

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img"]

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_MAX_LENGTH = 1 << 29           # the length field's 29 bits


def _lrec(cflag, length):
    return struct.pack("<II", _MAGIC, (cflag << 29) | length)


def _encode(buf):
    """The bytes dmlc's ``RecordIOWriter::WriteRecord`` writes for record ``buf``."""
    n = len(buf)
    if n >= _MAX_LENGTH:
        raise ValueError(f"MXRecordIO.write: a record holds less than 2**29 bytes, got {n}")
    parts, start = [], 0
    pos = buf.find(_MAGIC_BYTES)
    while pos != -1:
        if pos % 4 == 0:        # an aligned magic number splits the record
            parts += [_lrec(1 if start == 0 else 2, pos - start), buf[start:pos]]
            start = pos + 4
            pos = buf.find(_MAGIC_BYTES, start)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
    parts += [_lrec(3 if start else 0, n - start), buf[start:], b"\0" * (-n % 4)]
    return b"".join(parts)


class MXRecordIO:
    """Sequential reading or writing of a RecordIO file (MXNet's ``MXRecordIO``).

    Args:
        uri: path of the ``.rec`` file.
        flag: ``'w'`` (write; truncates) or ``'r'`` (read).
    Raises:
        ValueError: another ``flag``.

    See also mxnet.recordio.MXRecordIO.
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self._file = None
        self.open()

    def open(self):
        """Open the file (``'w'`` truncates it)."""
        if self.flag == "w":
            self._file, self.writable = open(self.uri, "wb"), True
        elif self.flag == "r":
            self._file, self.writable = open(self.uri, "rb"), False
        else:
            raise ValueError(f"MXRecordIO: invalid flag {self.flag!r}; expected 'r' or 'w'")
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        """Pickled as the path, the flag and whether it is open (reopened on unpickling)."""
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"], d["_file"] = is_open, None
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        is_open, self.is_open = d["is_open"], False
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        """A file opened in another process is reopened (``allow_reset``) or refused."""
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("MXRecordIO: forbidden operation in multiple processes "
                                   "(the file was opened in another process)")

    def _need_open(self, method):
        if not self.is_open:
            raise RuntimeError(f"{type(self).__name__}.{method}: the file {self.uri!r} is "
                               f"closed; call open() first")

    def close(self):
        """Close the file (nothing if closed)."""
        if not getattr(self, "is_open", False):
            return
        self._file.close()
        self._file, self.is_open, self.pid = None, False, None

    def reset(self):
        """Back to the first record (``'w'``: the file is truncated to empty)."""
        self.close()
        self.open()

    def write(self, buf):
        """Append record ``buf`` (bytes-like).

        Raises:
            RuntimeError: opened for reading, or closed.
            TypeError: ``buf`` is not bytes-like (a ``str``: encode it first).
        """
        self._need_open("write")
        if not self.writable:
            raise RuntimeError(f"MXRecordIO.write: {self.uri!r} is opened for reading")
        self._check_pid(allow_reset=False)
        try:
            buf = bytes(memoryview(buf))
        except TypeError:
            raise TypeError(f"MXRecordIO.write: a record is bytes, got "
                            f"{type(buf).__name__}") from None
        self._file.write(_encode(buf))

    def read(self):
        """The next record as bytes, or None at the end of the file.

        Raises:
            RuntimeError: opened for writing, or closed.
            ValueError: the file is not RecordIO (a bad magic number, a cut record).
        """
        self._need_open("read")
        if self.writable:
            raise RuntimeError(f"MXRecordIO.read: {self.uri!r} is opened for writing")
        self._check_pid(allow_reset=False)
        f, out = self._file, []
        while True:
            head = f.read(8)
            if not head:
                if out:
                    raise ValueError(f"MXRecordIO.read: {self.uri!r} ends inside a record")
                return None
            if len(head) != 8:
                raise ValueError(f"MXRecordIO.read: invalid RecordIO file {self.uri!r} "
                                 f"(a cut record header at byte {f.tell() - len(head)})")
            magic, lrec = struct.unpack("<II", head)
            if magic != _MAGIC:
                raise ValueError(f"MXRecordIO.read: invalid RecordIO file {self.uri!r} "
                                 f"(no magic number at byte {f.tell() - 8})")
            cflag, length = lrec >> 29, lrec & (_MAX_LENGTH - 1)
            padded = length + (-length % 4)
            data = f.read(padded)
            if len(data) != padded:
                raise ValueError(f"MXRecordIO.read: invalid RecordIO file {self.uri!r} "
                                 f"(a record of {length} bytes is cut)")
            out.append(data[:length])
            if cflag in (0, 3):
                return b"".join(out)
            out.append(_MAGIC_BYTES)


class MXIndexedRecordIO(MXRecordIO):
    """RecordIO with random access through an index file (MXNet's ``MXIndexedRecordIO``).

    Args:
        idx_path: path of the index file (``key<TAB>offset`` lines).
        uri: path of the ``.rec`` file.
        flag: ``'w'`` or ``'r'``.
        key_type: the keys' type (``int``; read keys are converted with it).

    Attributes: ``keys`` (in file order), ``idx`` (key -> byte offset).
    See also mxnet.recordio.MXIndexedRecordIO.
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx, self.keys = {}, []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        """Open both files; reading loads the index."""
        super().open()
        self.idx, self.keys = {}, []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            for n, line in enumerate(iter(self.fidx.readline, ""), 1):
                fields = line.strip().split("\t")
                if len(fields) < 2:
                    raise ValueError(f"MXIndexedRecordIO: line {n} of {self.idx_path!r} is "
                                     f"not 'key<TAB>offset': {line!r}")
                key = self.key_type(fields[0])
                self.idx[key] = int(fields[1])
                self.keys.append(key)

    def close(self):
        """Close both files."""
        if not getattr(self, "is_open", False):
            return
        super().close()
        if self.fidx is not None:
            self.fidx.close()

    def __getstate__(self):
        d = super().__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx):
        """Put the read position at the record of key ``idx``.

        Raises:
            RuntimeError: opened for writing.
            KeyError: no record has key ``idx``.
        """
        self._need_open("seek")
        if self.writable:
            raise RuntimeError(f"MXIndexedRecordIO.seek: {self.uri!r} is opened for writing")
        self._check_pid(allow_reset=True)
        try:
            pos = self.idx[idx]
        except KeyError:
            raise KeyError(f"MXIndexedRecordIO.seek: no record with key {idx!r} in "
                           f"{self.idx_path!r}") from None
        self._file.seek(pos)

    def tell(self):
        """The write position (bytes written so far).

        Raises:
            RuntimeError: opened for reading.
        """
        self._need_open("tell")
        if not self.writable:
            raise RuntimeError(f"MXIndexedRecordIO.tell: {self.uri!r} is opened for reading")
        return self._file.tell()

    def read_idx(self, idx):
        """The record of key ``idx`` (bytes)."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Append record ``buf`` under key ``idx`` (written to the index file too)."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header of an image record: ``flag`` (the number of float32 labels
that follow it when the label is an array), ``label`` (a number or an array of
floats), ``id`` and ``id2`` (unsigned 64-bit ids). See also mxnet.recordio.IRHeader."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """``header`` and the bytes ``s`` as one image record (MXNet's ``recordio.pack``).

    A numeric label is stored in the header (``flag`` 0); an array label as that
    many float32 values after it (``flag`` its size, the header's label 0).

    Args:
        header: an IRHeader or a 4-sequence ``(flag, label, id, id2)``.
        s: the payload (bytes).
    Returns:
        bytes.
    See also unpack, pack_img.
    """
    header = IRHeader(*header)
    s = bytes(s)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = numpy.asarray(header.label, dtype=numpy.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """Split an image record into its ``IRHeader`` and payload (MXNet's ``recordio.unpack``).

    Returns:
        ``(header, payload)``; an array label is a float32 NumPy array (a view of ``s``).
    Raises:
        ValueError: ``s`` is shorter than its header says.
    See also pack, unpack_img.
    """
    if len(s) < _IR_SIZE:
        raise ValueError(f"recordio.unpack: a record starts with a {_IR_SIZE}-byte header, "
                         f"got {len(s)} bytes")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise ValueError(f"recordio.unpack: the header announces {header.flag} labels, "
                             f"the record holds {len(s)} bytes after it")
        header = header._replace(label=numpy.frombuffer(s, numpy.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


# ------------------------------------------------------------------ image codec
def _codec():
    """``('cv2', cv2)`` or ``('pil', PIL.Image)``: OpenCV first, as MXNet."""
    try:
        import cv2
        return "cv2", cv2
    except ImportError:
        pass
    try:
        from PIL import Image
        return "pil", Image
    except ImportError:
        raise ImportError("recordio.pack_img/unpack_img need an image codec, which is "
                          "not a minpy dependency: install OpenCV's Python package "
                          "(opencv-python, MXNet's) or Pillow") from None


def _bgr_swap(img):
    """RGB(A) <-> BGR(A): OpenCV's channel order, which MXNet's arrays use."""
    if img.ndim == 3 and img.shape[2] in (3, 4):
        img = img[:, :, [2, 1, 0] + ([3] if img.shape[2] == 4 else [])]
    return numpy.ascontiguousarray(img)


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encode image ``img`` (uint8 HxW or HxWxC, BGR as OpenCV's) and ``pack`` it.

    Args:
        header: see ``pack``.
        img: the image array.
        quality: JPEG quality (1-100) or PNG compression level (0-9).
        img_fmt: ``'.jpg'``/``'.jpeg'`` or ``'.png'``.
    Returns:
        bytes.
    Raises:
        ImportError: neither OpenCV nor Pillow is installed.
        ValueError: another format.
    See also unpack_img.
    """
    fmt = img_fmt.upper()
    if fmt not in (".JPG", ".JPEG", ".PNG"):
        raise ValueError(f"recordio.pack_img: img_fmt must be '.jpg', '.jpeg' or '.png', "
                         f"got {img_fmt!r}")
    kind, lib = _codec()
    img = numpy.asarray(img)
    if kind == "cv2":
        params = [lib.IMWRITE_PNG_COMPRESSION if fmt == ".PNG" else lib.IMWRITE_JPEG_QUALITY,
                  quality]
        ok, buf = lib.imencode(img_fmt, img, params)
        if not ok:
            raise ValueError(f"recordio.pack_img: OpenCV failed to encode an image of shape "
                             f"{img.shape} as {img_fmt}")
        return pack(header, buf.tobytes())
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    out = io.BytesIO()
    pil = lib.fromarray(_bgr_swap(img.astype(numpy.uint8, copy=False)))
    if fmt == ".PNG":
        pil.save(out, format="PNG", compress_level=int(quality))
    else:
        pil.save(out, format="JPEG", quality=int(quality))
    return pack(header, out.getvalue())


def unpack_img(s, iscolor=-1):
    """``unpack`` an image record and decode its image (BGR, as OpenCV's ``imdecode``).

    Args:
        s: the record (bytes).
        iscolor: -1 as stored, 0 grayscale (HxW), 1 color (HxWx3).
    Returns:
        ``(header, img)``, img a uint8 NumPy array.
    Raises:
        ImportError: neither OpenCV nor Pillow is installed.
        ValueError: another ``iscolor``; a payload that is no image.
    See also pack_img.
    """
    if iscolor not in (-1, 0, 1):
        raise ValueError(f"recordio.unpack_img: iscolor must be -1, 0 or 1, got {iscolor!r}")
    header, s = unpack(s)
    kind, lib = _codec()
    if kind == "cv2":
        img = lib.imdecode(numpy.frombuffer(s, dtype=numpy.uint8), iscolor)
        if img is None:
            raise ValueError("recordio.unpack_img: the record's payload is not an image "
                             "OpenCV decodes")
        return header, img
    try:
        pil = lib.open(io.BytesIO(s))
        pil.load()
    except (OSError, SyntaxError) as e:
        raise ValueError(f"recordio.unpack_img: the record's payload is not an image "
                         f"Pillow decodes: {e}") from None
    if iscolor == 0:
        pil = pil.convert("L")
    elif iscolor == 1:
        pil = pil.convert("RGB")
    elif pil.mode not in ("L", "RGB", "RGBA"):
        pil = pil.convert("RGBA" if "A" in pil.mode else "RGB")
    return header, _bgr_swap(numpy.asarray(pil))
