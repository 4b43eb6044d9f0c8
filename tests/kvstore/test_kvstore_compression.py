"""minpy.kvstore.compression: MXNet's 2-bit gradient compression with error feedback.

Payloads and residuals against a slow element-by-element reference written
here (MXNet's loop: 16 elements per 32-bit word, ``11`` = +threshold, ``10``
= -threshold), exact error feedback, tracking of the gradients' sum over many
steps, ``decompress_sum`` against summing ``decompress``, checkpoints, and
clear errors.
"""
import contextlib
import functools
import pickle
from fractions import Fraction

import numpy
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from minpy.kvstore import compression
from minpy.kvstore.compression import TwoBitCompressor, compressed_nbytes, create_compression

DTYPES = st.sampled_from([numpy.float32, numpy.float64])
THRESHOLDS = st.one_of(st.sampled_from([0.5, 0.1, 1.0, 1 / 3, 2.5]),
                       st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False))
# 0-d, empty, and sizes on either side of multiples of 16
SHAPES = st.one_of(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
                   st.integers(0, 70).map(lambda n: (n,)))
# elements per block of work: tiny blocks put block edges inside small arrays
CHUNKS = st.sampled_from([16, 48, compression._CHUNK])


@contextlib.contextmanager
def chunked(chunk):
    saved = compression._CHUNK
    compression._CHUNK = chunk
    try:
        yield
    finally:
        compression._CHUNK = saved


def grads(shape, dtype, t, scale):
    """Gradients with elements in [-scale*t, scale*t] (as ``dtype`` rounds), ends
    (exactly +-scale*t) and 0 included."""
    units = hnp.arrays(numpy.float32, shape,
                       elements=st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5, -0.5]),
                                          st.floats(-1, 1, width=32)))
    return units.map(lambda u: numpy.asarray(u.astype(dtype) * dtype(scale) * dtype(t)))


# -- the slow reference -----------------------------------------------------------

def slow_compress(residual, grad, threshold):
    """MXNet's loop, one element at a time: (payload bytes, new residual, sent values)."""
    dtype = residual.dtype.type
    t = dtype(threshold)
    r = [dtype(x) for x in residual.reshape(-1)]
    g = [dtype(x) for x in grad.reshape(-1)]
    n = len(r)
    words = (n + 15) // 16
    payload = bytearray(4 * words)
    sent = []
    for i in range(n):
        word, j = divmod(i, 16)          # element j of its 32-bit word
        byte = 4 * word + j // 4         # the word's bytes in memory order
        shift = 6 - 2 * (j % 4)          # the first of a byte's four in the top bits
        r[i] = r[i] + g[i]
        if r[i] >= t:
            payload[byte] |= 0b11 << shift
            r[i] = r[i] - t
            sent.append(t)
        elif r[i] <= -t:
            payload[byte] |= 0b10 << shift
            r[i] = r[i] - (-t)
            sent.append(-t)
        else:
            sent.append(dtype(0))
    shape = residual.shape
    return (numpy.frombuffer(bytes(payload), numpy.uint8),
            numpy.array(r, residual.dtype).reshape(shape),
            numpy.array(sent, residual.dtype).reshape(shape))


def slow_decompress(payload, shape, dtype, threshold):
    t = dtype(threshold)
    values = []
    for i in range(int(numpy.prod(shape, dtype=numpy.int64))):
        code = (int(payload[i // 4]) >> (6 - 2 * (i % 4))) & 0b11
        values.append(t if code == 0b11 else -t if code == 0b10 else dtype(0))
    return numpy.array(values, dtype).reshape(shape)


# -- properties ---------------------------------------------------------------------

@given(data=st.data(), shape=SHAPES, dtype=DTYPES, t=THRESHOLDS, chunk=CHUNKS,
       steps=st.integers(1, 3))
def test_payload_and_residual_match_the_slow_reference(data, shape, dtype, t, chunk, steps):
    comp = TwoBitCompressor(t)
    residual = numpy.zeros(shape, dtype)
    for _ in range(steps):
        grad = data.draw(grads(shape, dtype, t, scale=3))
        before = grad.copy()
        with chunked(chunk):
            packed = comp.compress("w", grad)
            decoded = comp.decompress(packed, shape, dtype)
        want_packed, residual, want_sent = slow_compress(residual, grad, t)
        numpy.testing.assert_array_equal(grad, before)          # the gradient is not touched
        assert packed.dtype == numpy.uint8 and packed.shape == (compressed_nbytes(grad.size),)
        numpy.testing.assert_array_equal(packed, want_packed)
        numpy.testing.assert_array_equal(comp.residual("w"), residual)
        assert decoded.shape == shape and decoded.dtype == dtype
        numpy.testing.assert_array_equal(decoded, want_sent)
        numpy.testing.assert_array_equal(decoded, slow_decompress(want_packed, shape, dtype, t))


@given(data=st.data(), shape=SHAPES, dtype=DTYPES, t=THRESHOLDS, steps=st.integers(1, 4))
def test_error_feedback_is_exact_while_gradients_stay_within_the_threshold(
        data, shape, dtype, t, steps):
    comp = TwoBitCompressor(t)
    td = dtype(t)
    old = numpy.zeros(shape, dtype)
    for _ in range(steps):
        grad = data.draw(grads(shape, dtype, t, scale=1))
        sent = comp.decompress(comp.compress(0, grad), shape, dtype)
        new = comp.residual(0)
        assert set(numpy.unique(sent).tolist()) <= {0.0, float(td), -float(td)}
        assert numpy.all(numpy.abs(new) <= td)
        total = old + grad                    # the residual before quantising (dtype's sum)
        for s, r, want in zip(sent.reshape(-1), new.reshape(-1), total.reshape(-1)):
            assert Fraction(float(s)) + Fraction(float(r)) == Fraction(float(want))
        old = new


@given(data=st.data(), shape=SHAPES, dtype=DTYPES, t=THRESHOLDS, chunk=CHUNKS)
def test_constant_gradient_payloads_track_the_gradient_sum(data, shape, dtype, t, chunk):
    grad = data.draw(grads(shape, dtype, t, scale=1))
    comp = TwoBitCompressor(t)
    td = dtype(t)
    steps = 40
    net = numpy.zeros(shape, numpy.int64)        # payloads' sum in units of t: exact
    with chunked(chunk):
        for _ in range(steps):
            net += (comp.decompress(comp.compress("b", grad), shape, dtype) / td).astype(int)
    # each step's residual + grad rounds by at most half an ulp of 2t
    slack = steps * Fraction(float(td)) * Fraction(float(numpy.finfo(dtype).eps))
    for n, g, r in zip(net.reshape(-1), grad.reshape(-1), comp.residual("b").reshape(-1)):
        error = int(n) * Fraction(float(td)) - steps * Fraction(float(g))
        assert abs(error) <= Fraction(float(td)) + slack          # within +-threshold
        assert abs(error + Fraction(float(r))) <= slack          # the rest is in the residual


@given(data=st.data(), shape=SHAPES, dtype=DTYPES, t=THRESHOLDS, chunk=CHUNKS,
       workers=st.integers(1, 5))
def test_decompress_sum_equals_summing_decompress(data, shape, dtype, t, chunk, workers):
    comps = [TwoBitCompressor(t) for _ in range(workers)]
    with chunked(chunk):
        payloads = [c.compress("w", data.draw(grads(shape, dtype, t, scale=2))) for c in comps]
        parts = [comps[0].decompress(p, shape, dtype) for p in payloads]
        want = functools.reduce(numpy.add, parts)
        got = comps[0].decompress_sum(payloads, shape, dtype)
        assert got.shape == shape and got.dtype == dtype
        numpy.testing.assert_array_equal(got, want)
        # an Allgather's receive buffer: one payload per row
        stacked = numpy.stack(payloads) if payloads[0].size else numpy.empty((workers, 0),
                                                                             numpy.uint8)
        numpy.testing.assert_array_equal(comps[0].decompress_sum(stacked, shape, dtype), want)
        # into a given array, old contents ignored
        out = numpy.full(shape, 7, dtype)
        assert comps[0].decompress_sum(payloads, shape, dtype, out=out) is out
        numpy.testing.assert_array_equal(out, want)


def test_decompress_sum_into_a_non_contiguous_out_and_uint32_payloads():
    comp = TwoBitCompressor(0.5)
    rng = numpy.random.default_rng(0)
    grads_ = [rng.uniform(-1, 1, (5, 7)).astype(numpy.float32) for _ in range(3)]
    payloads = [TwoBitCompressor(0.5).compress("w", g) for g in grads_]
    want = sum(comp.decompress(p, (5, 7), numpy.float32) for p in payloads)
    base = numpy.zeros((7, 5), numpy.float32)
    out = base.T                                                   # F-ordered view
    assert comp.decompress_sum(payloads, (5, 7), numpy.float32, out=out) is out
    numpy.testing.assert_array_equal(base.T, want)
    as_words = [p.view(numpy.uint32) for p in payloads]            # MXNet's float-word units
    numpy.testing.assert_array_equal(comp.decompress_sum(as_words, (5, 7), "float32"), want)


def test_compress_into_a_send_buffer():
    rng = numpy.random.default_rng(3)
    a, b = TwoBitCompressor(0.5), TwoBitCompressor(0.5)
    buf = numpy.full(compressed_nbytes(37), 0xFF, numpy.uint8)        # stale contents
    for _ in range(3):
        g = rng.uniform(-1, 1, 37)
        assert a.compress("w", g, out=buf) is buf
        numpy.testing.assert_array_equal(buf, b.compress("w", g))
    for bad in (numpy.zeros(12, numpy.uint32), numpy.zeros(8, numpy.uint8),
                numpy.zeros((2, 6), numpy.uint8), numpy.zeros(24, numpy.uint8)[::2], b"x" * 12):
        with pytest.raises(ValueError, match=r"compress: out must be a writeable, contiguous "
                                             r"uint8 array of shape \(12,\)"):
            a.compress("new", g, out=bad)
    with pytest.raises(KeyError):
        a.residual("new")                      # a refused call keeps no residual


def test_known_bytes_of_mxnets_layout():
    comp = TwoBitCompressor(0.5)
    grad = numpy.zeros(18, numpy.float32)
    grad[:4] = [1.0, -1.0, 0.2, 0.5]          # 11 10 00 11
    grad[7] = -0.5                            # byte 1, last field: 10
    grad[16] = 0.7                            # the second word's first element
    packed = comp.compress("k", grad)
    assert packed.tolist() == [0b11100011, 0b00000010, 0, 0, 0b11000000, 0, 0, 0]
    numpy.testing.assert_array_equal(
        comp.residual("k")[[0, 1, 2, 3, 7, 16]],
        numpy.float32([0.5, -0.5, 0.2, 0.0, 0.0, 0.7]) - numpy.float32([0, 0, 0, 0, 0, 0.5]))
    # 01 is not produced, and decodes to 0 (as MXNet's decoder)
    assert comp.decompress(numpy.array([0b01010101, 0, 0, 0], numpy.uint8), (4,),
                           numpy.float32).tolist() == [0, 0, 0, 0]


def test_non_contiguous_gradients_and_edge_shapes():
    rng = numpy.random.default_rng(1)
    g = rng.uniform(-1, 1, (6, 9))
    a, b = TwoBitCompressor(0.25), TwoBitCompressor(0.25)
    for view in (g.T, g[:, ::2], numpy.asfortranarray(g)):
        a.reset(), b.reset()
        numpy.testing.assert_array_equal(a.compress(1, view),
                                         b.compress(1, numpy.ascontiguousarray(view)))
        numpy.testing.assert_array_equal(a.residual(1), b.residual(1))
    scalar = TwoBitCompressor(0.5)
    packed = scalar.compress("s", numpy.array(0.75))
    assert packed.tolist() == [0b11000000, 0, 0, 0]
    assert scalar.decompress(packed, (), numpy.float64).shape == ()
    assert scalar.residual("s") == 0.25
    empty = TwoBitCompressor(0.5)
    assert empty.compress("e", numpy.zeros((3, 0), numpy.float32)).size == 0
    assert empty.decompress(numpy.zeros(0, numpy.uint8), (3, 0), numpy.float32).shape == (3, 0)
    assert empty.decompress_sum([numpy.zeros(0, numpy.uint8)] * 2, (0,), "float64").size == 0


def test_non_finite_gradients_behave_as_documented():
    comp = TwoBitCompressor(0.5)
    g = numpy.array([numpy.nan, numpy.inf, -numpy.inf, 0.6], numpy.float32)
    sent = comp.decompress(comp.compress("w", g), (4,), numpy.float32)
    assert sent.tolist() == [0.0, 0.5, -0.5, 0.5]
    r = comp.residual("w")
    assert numpy.isnan(r[0]) and r[1] == numpy.inf and r[2] == -numpy.inf


@pytest.mark.parametrize("size, nbytes", [(0, 0), (1, 4), (15, 4), (16, 4), (17, 8),
                                          (33, 12), (10**6, 250000)])
def test_compressed_nbytes(size, nbytes):
    assert compressed_nbytes(size) == nbytes == TwoBitCompressor.compressed_nbytes(size)
    assert compressed_nbytes(numpy.int64(size)) == nbytes


# -- checkpoints -------------------------------------------------------------------------

def test_state_dict_round_trip_and_reset():
    rng = numpy.random.default_rng(2)
    a = TwoBitCompressor(0.3)
    for _ in range(3):
        a.compress("w", rng.uniform(-1, 1, 20).astype(numpy.float32))
        a.compress(7, rng.uniform(-1, 1, (2, 3)))
    state = pickle.loads(pickle.dumps(a.state_dict()))
    b = TwoBitCompressor(0.3)
    b.load_state_dict(state)
    state["residuals"]["w"][:] = 99                                  # loaded as a copy
    g = rng.uniform(-1, 1, 20).astype(numpy.float32)
    numpy.testing.assert_array_equal(a.compress("w", g), b.compress("w", g))
    numpy.testing.assert_array_equal(a.residual(7), b.residual(7))
    a.reset("w")
    fresh = TwoBitCompressor(0.3)
    numpy.testing.assert_array_equal(a.compress("w", g), fresh.compress("w", g))
    a.reset()
    with pytest.raises(KeyError, match="no residual for key 7"):
        a.residual(7)
    a.reset("never")                                                 # ignored
    with pytest.raises(ValueError, match="threshold 0.3 differs"):
        TwoBitCompressor(0.5).load_state_dict(state)
    with pytest.raises(ValueError, match="state_dict"):
        b.load_state_dict({"residuals": {}})
    with pytest.raises(ValueError, match="residual of key 'w' must be a float32/float64"):
        b.load_state_dict({"type": "2bit", "threshold": 0.3, "residuals": {"w": [1.0]}})


# -- create_compression -------------------------------------------------------------------

def test_create_compression():
    comp = create_compression({"type": "2bit", "threshold": 0.25})
    assert isinstance(comp, TwoBitCompressor) and comp.threshold == 0.25
    assert create_compression({"type": "2bit"}).threshold == 0.5
    assert create_compression(comp.params).threshold == 0.25
    assert create_compression({"type": "none"}) is None
    assert create_compression(None) is None
    assert repr(comp) == "TwoBitCompressor(threshold=0.25)"


@pytest.mark.parametrize("params, error, match", [
    ({"type": "1bit"}, ValueError, r"create_compression: unknown compression type '1bit'"),
    ({"type": "2Bit"}, ValueError, "unknown compression type"),
    ({"threshold": 0.5}, ValueError, "needs a 'type'"),
    ({"type": "2bit", "treshold": 0.5}, ValueError, r"unknown parameter\(s\) \['treshold'\]"),
    ({"type": "none", "threshold": 0.5}, ValueError, "unknown parameter"),
    ({"type": "2bit", "threshold": 0}, ValueError, "threshold must be > 0"),
    ({"type": "2bit", "threshold": -0.5}, ValueError, "threshold must be > 0"),
    ({"type": "2bit", "threshold": float("nan")}, ValueError, "threshold must be > 0"),
    ({"type": "2bit", "threshold": float("inf")}, ValueError, "threshold must be > 0"),
    ({"type": "2bit", "threshold": 1e39}, ValueError, "also as a float32"),
    ({"type": "2bit", "threshold": 1e-50}, ValueError, "also as a float32"),
    ({"type": "2bit", "threshold": "0.5"}, ValueError, "threshold must be a real number"),
    ({"type": "2bit", "threshold": True}, ValueError, "threshold must be a real number"),
    ("2bit", TypeError, "params must be a dict"),
])
def test_create_compression_errors(params, error, match):
    with pytest.raises(error, match=match):
        create_compression(params)


# -- errors -------------------------------------------------------------------------------

def test_compress_errors_name_the_function_key_and_shapes():
    comp = TwoBitCompressor(0.5)
    comp.compress("w", numpy.zeros((2, 3), numpy.float32))
    with pytest.raises(ValueError, match=r"compress: key 'w' holds a residual of shape "
                                         r"\(2, 3\) and dtype float32, got a gradient of "
                                         r"shape \(3, 2\)"):
        comp.compress("w", numpy.zeros((3, 2), numpy.float32))
    with pytest.raises(ValueError, match="dtype float32, got .* dtype float64"):
        comp.compress("w", numpy.zeros((2, 3), numpy.float64))
    with pytest.raises(TypeError, match="compress: grad must be a float32 or float64 numpy "
                                        "array, got list"):
        comp.compress("v", [1.0, 2.0])
    for dtype in (numpy.float16, numpy.int32, numpy.complex64):
        with pytest.raises(TypeError, match="grad must be float32 or float64, got dtype"):
            comp.compress("v", numpy.zeros(3, dtype))
    with pytest.raises(TypeError, match="key must be hashable"):
        comp.compress(["w"], numpy.zeros(3))
    with pytest.raises(TypeError, match="TwoBitCompressor: threshold must be a real number"):
        TwoBitCompressor(None)
    with pytest.raises(ValueError, match="TwoBitCompressor: threshold must be > 0"):
        TwoBitCompressor(-1)
    for size, error in ((-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="compressed_nbytes: size"):
            compressed_nbytes(size)


def test_decompress_errors():
    comp = TwoBitCompressor(0.5)
    good = comp.compress("w", numpy.zeros(20, numpy.float32))
    with pytest.raises(ValueError, match=r"decompress: packed has 8 bytes; the payload of "
                                         r"this shape needs compressed_nbytes\(size\) = 12"):
        comp.decompress(good, (40,), numpy.float32)
    with pytest.raises(TypeError, match="decompress: packed must be a uint8 .* got dtype int8"):
        comp.decompress(good.view(numpy.int8), (20,), numpy.float32)
    with pytest.raises(TypeError, match="packed must be a numpy uint8 .* got bytes"):
        comp.decompress(bytes(good), (20,), numpy.float32)
    with pytest.raises(TypeError, match="dtype must be float32 or float64, got int64"):
        comp.decompress(good, (20,), numpy.int64)
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        comp.decompress(good, (20,), "no such dtype")
    with pytest.raises(TypeError, match="shape must be a tuple of ints, got"):
        comp.decompress(good, (20.0,), numpy.float32)
    with pytest.raises(TypeError, match="shape must be a tuple of ints"):
        comp.decompress(good, (True,), numpy.float32)
    with pytest.raises(ValueError, match="negative dimensions"):
        comp.decompress(good, (-20,), numpy.float32)
    assert comp.decompress(good, 20, numpy.float32).shape == (20,)
    where = "decompress_sum"
    with pytest.raises(ValueError, match=f"{where}: payloads is empty"):
        comp.decompress_sum([], (20,), numpy.float32)
    with pytest.raises(ValueError, match=r"payloads\[1\] has 4 bytes"):
        comp.decompress_sum([good, good[:4]], (20,), numpy.float32)
    with pytest.raises(TypeError, match="payloads must be a list"):
        comp.decompress_sum((g for g in [good]), (20,), numpy.float32)
    with pytest.raises(ValueError, match="must be 2-d"):
        comp.decompress_sum(good, (20,), numpy.float32)
    with pytest.raises(ValueError, match=r"out must be a numpy array of shape \(20,\) and "
                                         r"dtype float32, got shape \(20,\) and dtype float64"):
        comp.decompress_sum([good], (20,), numpy.float32, out=numpy.zeros(20))
    readonly = numpy.zeros(20, numpy.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        comp.decompress_sum([good], (20,), numpy.float32, out=readonly)
