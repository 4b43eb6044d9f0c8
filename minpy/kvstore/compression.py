"""2-bit gradient compression with error feedback, as MXNet's
``kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})``.

Pure NumPy array functions for the ``dist_sync`` store: each worker
compresses its gradient before the exchange, and decompresses (and sums)
everyone's payloads after it::

    comp = create_compression({"type": "2bit", "threshold": 0.5})
    packed = comp.compress("w", grad)                  # uint8, 1/16 of float32's bytes
    everyone = comm.allgather(packed)                  # one payload per worker
    total = comp.decompress_sum(everyone, grad.shape, grad.dtype)

Quantisation (per key, per element): ``residual += grad``; the element sends
``+threshold`` if ``residual >= threshold``, ``-threshold`` if
``residual <= -threshold``, else ``0``; ``residual -= sent``.  What is not
sent stays in the residual and goes out in a later step (error feedback).
The residual is kept in the gradient's dtype, and the threshold is used as
that dtype rounds it (``float32(0.1)`` for float32 gradients).

Exactness: ``sent + new residual == residual + grad`` holds exactly (one
IEEE subtraction of ``threshold`` is exact by Sterbenz' lemma) while
``|residual + grad| <= 2 * threshold``, which stays true on every step when
every ``|grad| <= threshold``.  Beyond that the subtraction rounds once, as
in MXNet, and a gradient persistently larger than the threshold makes the
residual grow (only ``threshold`` per step goes out).  A NaN element sends
0 and stays NaN in the residual; an infinite one sends ``+-threshold`` for
ever: check gradients before compressing if they may be non-finite.

Wire format (MXNet's): 2 bits per element, ``11`` = ``+threshold``, ``10`` =
``-threshold``, ``00`` = 0 (``01`` also decodes to 0); 16 elements per
32-bit word, element ``i`` in byte ``i // 4`` of the payload, the first of
a byte's four in its top two bits; the last word is padded with zeros.  A
payload is ``compressed_nbytes(size) = 4 * ceil(size / 16)`` bytes, returned
as a flat ``uint8`` array (``uint32`` payloads are accepted too, read as
their bytes in memory order).

Calls for one key must not overlap (the store serialises them); different
keys are independent.

See also mxnet.kvstore.KVStore.set_gradient_compression and MXNet's
src/kvstore/gradient_compression.cc.
"""
import math
import numbers
import operator

import numpy

__all__ = ["TwoBitCompressor", "create_compression", "compressed_nbytes", "COMPRESSION_TYPES"]

COMPRESSION_TYPES = ("none", "2bit")

_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))
_PAYLOAD_DTYPES = (numpy.dtype(numpy.uint8), numpy.dtype(numpy.uint32))
_PER_WORD = 16              # elements per 32-bit word
_PER_BYTE = 4               # elements per byte
# Elements per block of work (a multiple of 16): a block's temporaries stay in cache,
# so a large gradient streams through memory once rather than once per ufunc, and the
# Python overhead per block (~15 ufunc calls) is small next to its work.
_CHUNK = 1 << 17
# ((3 * pos + 2 * neg) per byte of a little-endian word) * _MAGIC >> 24 moves the
# 2-bit codes of bytes 0, 1, 2, 3 to bits 7-6, 5-4, 3-2, 1-0 of the top byte: the
# partial products land at bits 30, 28, 26, 24, the others below bit 24 without
# overlapping (so without carries) or at bit 32 and above (dropped by uint32).
_MAGIC = (1 << 30) | (1 << 20) | (1 << 10) | 1
_MAGIC_POS = numpy.uint32(3 * _MAGIC)      # code 11
_MAGIC_NEG = numpy.uint32(2 * _MAGIC)      # code 10


def compressed_nbytes(size):
    """Bytes of the 2-bit payload for ``size`` elements: ``4 * ceil(size / 16)``.

    Raises:
        TypeError / ValueError: ``size`` is not a non-negative integer.

    See also TwoBitCompressor.compress.
    """
    if isinstance(size, bool) or not isinstance(size, (int, numpy.integer)):
        raise TypeError(f"compressed_nbytes: size must be an int, got {size!r} "
                        f"({type(size).__name__})")
    if size < 0:
        raise ValueError(f"compressed_nbytes: size must be >= 0, got {size}")
    return 4 * (-(-int(size) // _PER_WORD))


def _float_dtype(where, dtype):
    try:
        dt = numpy.dtype(dtype)
    except TypeError:
        raise TypeError(f"{where}: dtype must be float32 or float64, got {dtype!r}") from None
    if dt not in _FLOATS:
        raise TypeError(f"{where}: dtype must be float32 or float64, got {dt}")
    return dt


def _shape_tuple(where, shape):
    if isinstance(shape, (int, numpy.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        if any(isinstance(d, (bool, numpy.bool_)) for d in shape):
            raise TypeError("a bool is not a dimension")
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{where}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{where}: shape must not have negative dimensions, got {dims}")
    return dims


def _payload_bytes(where, packed, nbytes, what="packed"):
    """``packed`` as a flat uint8 array of ``nbytes`` bytes, or a clear error."""
    if not isinstance(packed, numpy.ndarray):
        raise TypeError(f"{where}: {what} must be a numpy uint8 (or uint32) array, got "
                        f"{type(packed).__name__}")
    if packed.dtype not in _PAYLOAD_DTYPES:
        raise TypeError(f"{where}: {what} must be a uint8 (or uint32) array, got dtype "
                        f"{packed.dtype}")
    flat = numpy.ascontiguousarray(packed).reshape(-1).view(numpy.uint8)
    if flat.size != nbytes:
        raise ValueError(f"{where}: {what} has {flat.size} bytes; the payload of this shape "
                         f"needs compressed_nbytes(size) = {nbytes}")
    return flat


def _check_threshold(threshold):
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"TwoBitCompressor: threshold must be a real number, got "
                        f"{threshold!r} ({type(threshold).__name__})")
    t = float(threshold)
    if not (0 < t <= float(numpy.finfo(numpy.float32).max)) or numpy.float32(t) == 0:
        raise ValueError(f"TwoBitCompressor: threshold must be > 0 and finite (also as a "
                         f"float32), got {threshold!r}")
    return t


class TwoBitCompressor:
    """MXNet's 2-bit compression with a residual (error feedback) per key.

    ``compress(key, grad)`` quantises ``residual + grad`` to ``{0, +-threshold}``
    and returns the packed payload; ``decompress`` / ``decompress_sum`` turn
    payloads back into arrays.  ``state_dict`` / ``load_state_dict`` save and
    restore the residuals (for checkpoints); ``reset`` drops them.

    Args:
        threshold: the quantisation step, > 0 (MXNet's default 0.5).

    See also mxnet.kvstore.KVStore.set_gradient_compression and the module
    docstring (wire format, exactness).
    """

    type = "2bit"

    def __init__(self, threshold=0.5):
        self.threshold = _check_threshold(threshold)
        self._residuals = {}
        self._luts = {}

    def __repr__(self):
        return f"TwoBitCompressor(threshold={self.threshold!r})"

    @property
    def params(self):
        """The MXNet parameter dict: ``create_compression(c.params)`` makes an equal one."""
        return {"type": self.type, "threshold": self.threshold}

    @staticmethod
    def compressed_nbytes(size):
        """Bytes of the payload for ``size`` elements. See also compressed_nbytes."""
        return compressed_nbytes(size)

    # -- residuals -------------------------------------------------------------

    def residual(self, key):
        """A copy of ``key``'s residual (what has not been sent yet).

        Raises:
            KeyError: ``key`` has never been compressed (or was reset).
        """
        try:
            return self._residuals[key].copy()
        except KeyError:
            raise KeyError(f"TwoBitCompressor.residual: no residual for key {key!r}; "
                           f"compress a gradient for it first") from None

    def reset(self, key=None):
        """Drop ``key``'s residual (all of them when ``key`` is None): the next
        ``compress`` of that key starts from zero.  An unknown key is ignored."""
        if key is None:
            self._residuals.clear()
        else:
            self._residuals.pop(key, None)

    def state_dict(self):
        """``{'type', 'threshold', 'residuals': {key: copy}}``, picklable, for a checkpoint.

        See also load_state_dict.
        """
        return {"type": self.type, "threshold": self.threshold,
                "residuals": {k: r.copy() for k, r in self._residuals.items()}}

    def load_state_dict(self, state):
        """Replace the residuals by those of ``state`` (from ``state_dict``; copied).

        Raises:
            ValueError: ``state`` is not a 2-bit state, its threshold differs from
                this compressor's, or a residual is not a float32/float64 array.

        See also state_dict.
        """
        if not isinstance(state, dict) or state.get("type") != self.type \
                or "residuals" not in state:
            raise ValueError("TwoBitCompressor.load_state_dict: expected a dict from "
                             "TwoBitCompressor.state_dict() with type '2bit' and residuals, "
                             f"got {type(state).__name__}")
        if state.get("threshold") != self.threshold:
            raise ValueError(f"TwoBitCompressor.load_state_dict: the state's threshold "
                             f"{state.get('threshold')!r} differs from this compressor's "
                             f"{self.threshold!r}")
        residuals = {}
        for key, r in state["residuals"].items():
            if not isinstance(r, numpy.ndarray) or r.dtype not in _FLOATS:
                raise ValueError(f"TwoBitCompressor.load_state_dict: the residual of key "
                                 f"{key!r} must be a float32/float64 numpy array, got "
                                 f"{getattr(r, 'dtype', type(r).__name__)}")
            residuals[key] = numpy.array(r, order="C", copy=True)
        self._residuals = residuals

    # -- compression -----------------------------------------------------------

    def compress(self, key, grad, out=None):
        """Add ``grad`` to ``key``'s residual, quantise, and return the packed payload.

        Args:
            key: any hashable name (the store's key); a new key's residual starts at 0.
            grad: a float32 or float64 ``numpy.ndarray`` (any shape, 0-d and empty too;
                a NumPy float scalar counts as 0-d); not modified.
            out: optional flat, C-contiguous ``uint8`` array of
                ``compressed_nbytes(grad.size)`` bytes to write the payload into (an
                Allgather's send buffer); returned.

        Returns:
            a flat ``uint8`` array of ``compressed_nbytes(grad.size)`` bytes.

        Raises:
            TypeError: ``grad`` is not a float32/float64 numpy array.
            ValueError: ``grad``'s shape or dtype differs from the residual held for
                ``key`` (naming both); an ``out`` that is not as above.  Nothing is
                changed when it raises.

        See also decompress, decompress_sum.
        """
        where = "TwoBitCompressor.compress"
        if isinstance(grad, numpy.floating):       # a 0-d result of NumPy arithmetic
            grad = numpy.asarray(grad)
        if not isinstance(grad, numpy.ndarray):
            raise TypeError(f"{where}: grad must be a float32 or float64 numpy array, got "
                            f"{type(grad).__name__}")
        if grad.dtype not in _FLOATS:
            raise TypeError(f"{where}: grad must be float32 or float64, got dtype {grad.dtype}")
        try:
            residual = self._residuals.get(key)
        except TypeError:
            raise TypeError(f"{where}: key must be hashable, got {key!r} "
                            f"({type(key).__name__})") from None
        if residual is None:
            residual = numpy.zeros(grad.shape, grad.dtype)     # kept once out is checked
        elif residual.shape != grad.shape or residual.dtype != grad.dtype:
            raise ValueError(f"{where}: key {key!r} holds a residual of shape "
                             f"{residual.shape} and dtype {residual.dtype}, got a gradient of "
                             f"shape {grad.shape} and dtype {grad.dtype} (reset(key) to "
                             f"start that key over)")
        nbytes = compressed_nbytes(grad.size)
        if out is None:
            out = numpy.empty(nbytes, numpy.uint8)
        elif not (isinstance(out, numpy.ndarray) and out.dtype == numpy.uint8
                  and out.shape == (nbytes,) and out.flags.c_contiguous
                  and out.flags.writeable):
            got = (f"dtype {out.dtype}, shape {out.shape}" if isinstance(out, numpy.ndarray)
                   else type(out).__name__)
            raise ValueError(f"{where}: out must be a writeable, contiguous uint8 array of "
                             f"shape ({nbytes},), got {got}")
        if key not in self._residuals:
            self._residuals[key] = residual
        _quantize(residual.reshape(-1), numpy.ascontiguousarray(grad).reshape(-1),
                  grad.dtype.type(self.threshold), out)
        return out

    def decompress(self, packed, shape, dtype):
        """The quantised values of one payload: an array of ``shape`` and ``dtype``
        holding 0 and ``+-threshold`` (as ``dtype`` rounds it).

        Raises:
            TypeError: ``packed`` is not a uint8/uint32 numpy array, or ``dtype`` is not
                float32/float64.
            ValueError: ``packed`` does not have ``compressed_nbytes(prod(shape))`` bytes.

        See also compress, decompress_sum.
        """
        return self._decode("TwoBitCompressor.decompress", (packed,), shape, dtype, None,
                            single=True)

    def decompress_sum(self, payloads, shape, dtype, out=None):
        """The sum of the decompressed ``payloads`` (one per worker, e.g. from an
        Allgather), summed in order as ``decompress(p0) + decompress(p1) + ...`` would be,
        bit for bit, without a full-size array per payload.

        Args:
            payloads: a non-empty sequence of payloads, or a 2-d uint8 array with one
                payload per row (an Allgather's receive buffer).
            shape, dtype: of the gradient (float32 or float64).
            out: optional array of ``shape`` and ``dtype`` to write the sum into (its old
                contents are ignored; a C-contiguous one is written directly, another
                through a temporary); returned.

        Raises:
            TypeError / ValueError: as ``decompress``, naming the payload's index; an
                empty ``payloads``; an ``out`` of another shape or dtype.

        See also decompress.
        """
        where = "TwoBitCompressor.decompress_sum"
        if isinstance(payloads, numpy.ndarray):
            if payloads.ndim != 2:
                raise ValueError(f"{where}: an array of payloads must be 2-d (one per row), "
                                 f"got shape {payloads.shape}")
            payloads = list(payloads)
        elif not isinstance(payloads, (list, tuple)):
            raise TypeError(f"{where}: payloads must be a list of packed arrays (or a 2-d "
                            f"array, one per row), got {type(payloads).__name__}")
        if not payloads:
            raise ValueError(f"{where}: payloads is empty; expected one per worker")
        return self._decode(where, payloads, shape, dtype, out, single=False)

    def _lut(self, dtype):
        """(256, 4) table: a payload byte's four values, in ``dtype``."""
        lut = self._luts.get(dtype)
        if lut is None:
            t = dtype.type(self.threshold)
            codes = (numpy.arange(256)[:, None] >> numpy.array([6, 4, 2, 0])) & 3
            lut = numpy.where(codes == 3, t, numpy.where(codes == 2, -t, dtype.type(0)))
            lut = numpy.ascontiguousarray(lut, dtype=dtype)
            self._luts[dtype] = lut
        return lut

    def _decode(self, where, payloads, shape, dtype, out, single):
        dims = _shape_tuple(where, shape)
        dt = _float_dtype(where, dtype)
        size = math.prod(dims)
        nbytes = compressed_nbytes(size)
        flats = [_payload_bytes(where, p, nbytes,
                                "packed" if single else f"payloads[{i}]")
                 for i, p in enumerate(payloads)]
        target = None
        if out is not None:
            if not isinstance(out, numpy.ndarray) or out.shape != dims or out.dtype != dt:
                got = (f"shape {out.shape} and dtype {out.dtype}"
                       if isinstance(out, numpy.ndarray) else type(out).__name__)
                raise ValueError(f"{where}: out must be a numpy array of shape {dims} and "
                                 f"dtype {dt}, got {got}")
            if not out.flags.writeable:
                raise ValueError(f"{where}: out is read-only")
            if out.flags.c_contiguous:
                target = out
        result = target if target is not None else numpy.empty(dims, dt)
        _dequantize_sum(flats, self._lut(dt), result.reshape(-1))
        if out is not None and target is None:
            numpy.copyto(out, result)
            return out
        return result


def _quantize(r, g, t, packed):
    """Quantise flat ``r += g`` in place against ``t``, the payload into ``packed``.
    Works in blocks of ``_CHUNK`` elements so each block's temporaries stay in cache."""
    n = r.size
    m = min(n, _CHUNK) + (-min(n, _CHUNK)) % _PER_WORD
    pos = numpy.zeros(m, bool)              # padding past the end stays False
    neg = numpy.zeros(m, bool)
    step = numpy.empty(m, numpy.int8)       # +1, -1, 0
    sent = numpy.empty(m, r.dtype)          # +t, -t, 0
    words = numpy.empty(m // _PER_BYTE, numpy.uint32)   # a word per 4 elements
    words2 = numpy.empty_like(words)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        k = stop - start
        rr = r[start:stop]
        numpy.add(rr, g[start:stop], out=rr)
        p, q = pos[:k], neg[:k]
        numpy.greater_equal(rr, t, out=p)
        numpy.less_equal(rr, -t, out=q)
        numpy.subtract(p.view(numpy.int8), q.view(numpy.int8), out=step[:k])
        numpy.multiply(step[:k], t, out=sent[:k])
        numpy.subtract(rr, sent[:k], out=rr)        # rr - t, rr - (-t) or rr - 0
        if k < m:
            pos[k:] = False
            neg[k:] = False
        kw = -(-k // _PER_WORD) * _PER_WORD // _PER_BYTE    # padded, 4 elements each
        w, w2 = words[:kw], words2[:kw]
        # one byte per element (0/1) read as little-endian words of 4 elements
        numpy.multiply(pos[:kw * 4].view("<u4"), _MAGIC_POS, out=w)
        numpy.multiply(neg[:kw * 4].view("<u4"), _MAGIC_NEG, out=w2)
        numpy.add(w, w2, out=w)
        numpy.right_shift(w, 24, out=w)
        numpy.copyto(packed[start // 4:start // 4 + kw], w, casting="unsafe")
    return packed


def _dequantize_sum(flats, lut, out):
    """``out`` (flat) = the sum, in order, of the payloads ``flats`` decoded by ``lut``."""
    n = out.size
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        k = stop - start
        b0 = start // _PER_BYTE
        b1 = b0 + -(-k // _PER_BYTE)
        o = out[start:stop]
        for i, flat in enumerate(flats):
            vals = numpy.take(lut, flat[b0:b1], axis=0).reshape(-1)[:k]
            if i == 0:
                numpy.copyto(o, vals)
            else:
                numpy.add(o, vals, out=o)
    return out


def create_compression(params):
    """A compressor from MXNet's parameter dict, or None for no compression.

    ``{'type': '2bit', 'threshold': 0.5}`` (threshold optional, default 0.5) gives a
    :class:`TwoBitCompressor`; ``{'type': 'none'}`` and ``None`` give None.

    Raises:
        TypeError: ``params`` is not a dict (or None).
        ValueError: no ``type``, an unknown type, an unknown key for the type, or a bad
            threshold.

    See also mxnet.kvstore.KVStore.set_gradient_compression.
    """
    where = "create_compression"
    if params is None:
        return None
    if not isinstance(params, dict):
        raise TypeError(f"{where}: params must be a dict such as {{'type': '2bit', "
                        f"'threshold': 0.5}}, got {type(params).__name__}")
    if "type" not in params:
        raise ValueError(f"{where}: params needs a 'type', one of {COMPRESSION_TYPES}; got "
                         f"keys {sorted(map(str, params))}")
    kind = params["type"]
    if kind not in COMPRESSION_TYPES:
        raise ValueError(f"{where}: unknown compression type {kind!r}; expected one of "
                         f"{COMPRESSION_TYPES}")
    allowed = {"none": {"type"}, "2bit": {"type", "threshold"}}[kind]
    extra = sorted(str(k) for k in params if k not in allowed)
    if extra:
        raise ValueError(f"{where}: unknown parameter(s) {extra} for type {kind!r}; "
                         f"expected only {sorted(allowed)}")
    if kind == "none":
        return None
    try:
        return TwoBitCompressor(params.get("threshold", 0.5))
    except TypeError as e:
        raise ValueError(f"{where}: {e}") from None
