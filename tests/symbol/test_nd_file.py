"""MXNet 1.x NDArray files (``minpy.nd.load/save``) and checkpoints, against files the
real MXNet 1.9.1 wrote (tests/fixtures/mxnet/ndarray, made by make_nd_fixtures.py).

Reading: every fixture gives MXNet's values, dtypes, shapes, key order and
container (dict with names, list without). Writing: byte-for-byte MXNet's file
for the same arrays. Broken input (cut anywhere, wrong magics, foreign files,
trailing bytes, unknown flags, sparse or bfloat16 arrays) raises ValueError
naming the function, the file, the array and the byte offset.
"""
import io
import json
import pathlib
import struct

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import minpy
import minpy.symbol as sym
from minpy.nd import NDArrayFileError

HERE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "mxnet" / "ndarray"
EXPECTED = np.load(HERE / "expected.npz")
DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"]
# written by mx.nd.save / mx.model.save_checkpoint: V2 records, our writer's bytes
V2_FIXTURES = ["dtypes", "unnamed", "utf8_keys", "zero_size", "one_element", "high_rank",
               "empty", "single", "scalar_0d", "ckpt-0003"]
ALL_FIXTURES = V2_FIXTURES + ["legacy", "v1", "v3_np"]
NAMED = {"dtypes", "utf8_keys", "zero_size", "high_rank", "ckpt-0003", "v3_np"}


def expected(name):
    """[(key or None, NumPy array)] in file order, from expected.npz."""
    rows = []
    for entry in EXPECTED.files:
        fixture, index, key = entry.split("|", 2)
        if fixture == name:
            rows.append((int(index), key if name in NAMED else None, EXPECTED[entry]))
    return [(k, v) for _, k, v in sorted(rows, key=lambda r: r[0])]


def assert_same(got, want):
    assert isinstance(got, minpy.Array)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()        # exact bits: NaN, -0.0, subnormals


# ---------------------------------------------------------------- reading
@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_each_fixture_loads_mxnets_values(name):
    got = minpy.nd.load(HERE / f"{name}.params")
    want = expected(name)
    if name in NAMED:
        assert isinstance(got, dict) and list(got) == [k for k, _ in want]
        got = list(got.values())
    else:
        assert isinstance(got, list)
    assert len(got) == len(want)
    for g, (_, w) in zip(got, want):
        assert_same(g, w)


def test_every_dtype_and_the_special_shapes_are_in_the_fixtures():
    assert sorted(str(v.dtype) for _, v in expected("dtypes")) == sorted(DTYPES)
    assert [v.shape for _, v in expected("zero_size")] == [(0,), (2, 0, 3), (0, 0)]
    assert [v.shape for _, v in expected("high_rank")] == [(2, 1, 3, 1, 2, 1, 4), (2,) * 10]
    assert [v.shape for _, v in expected("scalar_0d")] == [()]
    assert minpy.nd.load(HERE / "empty.params") == []


def test_loaded_arrays_are_writable_copies_on_the_current_context():
    raw = (HERE / "unnamed.params").read_bytes()
    a = minpy.nd.loads(raw)[0]
    assert a.context == minpy.current_context()
    a[0, 0] = 42.0
    assert np.asarray(minpy.nd.loads(raw)[0])[0, 0] != 42.0


def test_load_takes_a_path_a_binary_file_object_or_bytes():
    raw = (HERE / "dtypes.params").read_bytes()
    for got in (minpy.nd.load(str(HERE / "dtypes.params")), minpy.nd.load(io.BytesIO(raw)),
                minpy.nd.loads(bytearray(raw)), minpy.nd.loads(memoryview(raw))):
        assert list(got) == [k for k, _ in expected("dtypes")]
    with open(HERE / "dtypes.params", encoding="latin-1") as f:
        with pytest.raises(TypeError, match="binary mode"):
            minpy.nd.load(f)


@pytest.mark.parametrize("record", [struct.pack("<I", 0), struct.pack("<Ii", 0xF993FAC8, 0)],
                         ids=["legacy", "v1"])
def test_legacy_and_v1_ndim_0_is_a_0d_array_as_mxnet_reads_it(record):
    # mx.nd.load_frombuffer of these bytes gives shape () and 2.5 (checked with MXNet 1.9.1)
    raw = struct.pack("<QQQ", 0x112, 0, 1) + record + struct.pack("<iiif", 1, 0, 0, 2.5) + \
        struct.pack("<Q", 0)
    assert_same(minpy.nd.loads(raw)[0], np.array(2.5, np.float32))


def test_a_gpu_context_in_the_file_loads_on_the_current_context():
    raw = bytearray((HERE / "single.params").read_bytes())
    struct.pack_into("<ii", raw, 52, 2, 1)          # gpu(1), after a 2-d shape
    (got,) = minpy.nd.loads(bytes(raw))
    assert got.context == minpy.current_context()
    assert_same(got, expected("single")[0][1])


# ---------------------------------------------------------------- writing
def _content(name, as_minpy):
    rows = expected(name)
    values = [minpy.array(v) if as_minpy else v for _, v in rows]
    if name == "single":
        return values[0]
    return dict(zip([k for k, _ in rows], values)) if name in NAMED else values


@pytest.mark.parametrize("as_minpy", [False, True], ids=["numpy", "minpy"])
@pytest.mark.parametrize("name", V2_FIXTURES)
def test_save_writes_mxnets_bytes(name, as_minpy, tmp_path):
    want = (HERE / f"{name}.params").read_bytes()
    data = _content(name, as_minpy)
    assert minpy.nd.dumps(data) == want
    minpy.nd.save(tmp_path / "x.params", data)
    assert (tmp_path / "x.params").read_bytes() == want
    buf = io.BytesIO()
    minpy.nd.save(buf, data)
    assert buf.getvalue() == want


def test_tuples_and_empty_dicts_write_as_lists():
    a, b = np.ones(2, np.float32), np.arange(3)
    assert minpy.nd.dumps((a, b)) == minpy.nd.dumps([a, b])
    assert minpy.nd.dumps({}) == (HERE / "empty.params").read_bytes()
    assert minpy.nd.loads(minpy.nd.dumps({})) == []


def test_save_refuses_what_mxnet_cannot_hold():
    with pytest.raises(TypeError, match=r"minpy.nd.save: array 'w': dtype uint16 has no "
                                         r"MXNet type flag; supported: float32, float64"):
        minpy.nd.save(io.BytesIO(), {"ok": np.ones(1), "w": np.ones(2, np.uint16)})
    with pytest.raises(TypeError, match=r"array 1: dtype complex128"):
        minpy.nd.dumps([np.ones(1), np.ones(1, complex)])
    with pytest.raises(TypeError, match=r"array 0: expected a minpy Array or a NumPy array, "
                                        r"got list"):
        minpy.nd.dumps([[1, 2]])
    with pytest.raises(TypeError, match=r"keys must be str without NUL characters, got 3"):
        minpy.nd.dumps({3: np.ones(1)})
    with pytest.raises(TypeError, match=r"got 'a\\x00b'"):
        minpy.nd.dumps({"a\0b": np.ones(1)})


@st.composite
def array_sets(draw):
    dtype = st.sampled_from(DTYPES).map(np.dtype)
    shape = hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=4)
    arrays = draw(st.lists(dtype.flatmap(lambda d: shape.flatmap(
        lambda s: hnp.arrays(d, s))), max_size=4))
    if draw(st.booleans()):
        keys = draw(st.lists(st.text(max_size=6).filter(lambda k: "\0" not in k),
                             min_size=len(arrays), max_size=len(arrays), unique=True))
        return dict(zip(keys, arrays))
    return arrays


@given(array_sets(), st.booleans())
def test_round_trip_keeps_values_dtypes_shapes_and_names(data, via_minpy):
    if via_minpy:
        data = ({k: minpy.array(v) for k, v in data.items()} if isinstance(data, dict)
                else [minpy.array(v) for v in data])
    raw = minpy.nd.dumps(data)
    back = minpy.nd.loads(raw)
    if isinstance(data, dict) and data:
        assert isinstance(back, dict) and list(back) == list(data)
        pairs = zip(back.values(), data.values())
    else:
        assert back == [] if not data else isinstance(back, list)
        pairs = zip(back, data)
    for got, want in pairs:
        assert_same(got, np.asarray(want))
    assert minpy.nd.dumps(back) == raw


# ---------------------------------------------------------------- broken input
SMALL = minpy.nd.dumps({"a": np.arange(3, dtype=np.int32), "bb": np.array([1.5])})
# header 0-24 | array 0: 24-68 (data from 56) | array 1: 68-108 | names: 108-135


def _error(raw, match):
    with pytest.raises(NDArrayFileError) as info:
        minpy.nd.loads(raw)
    assert isinstance(info.value, ValueError)
    assert match in str(info.value), str(info.value)
    return str(info.value)


@pytest.mark.parametrize("name", ["small", "legacy", "v1", "v3_np", "row_sparse", "zero_size"])
def test_every_cut_gives_the_clear_error(name):
    raw = SMALL if name == "small" else (HERE / f"{name}.params").read_bytes()
    for cut in range(len(raw)):
        msg = _error(raw[:cut], "minpy.nd.loads: <bytes>: ")
        assert "at byte " in msg and "expected " in msg


@pytest.mark.parametrize("cut,message", [
    (0, "the list header: at byte 0: expected the NDArray list magic 0x112 (a u64), "
        "found b'' (a file of 0 bytes)"),
    (12, "the list header: at byte 8: expected the reserved word (8 bytes), "
         "found the end of the file (4 bytes left)"),
    (26, "array 0: at byte 24: expected an array magic (0xF993FAC9, 0xF993FACA, 0xF993FAC8) "
         "or legacy ndim (4 bytes), found the end of the file (2 bytes left)"),
    (40, "array 0: at byte 36: expected the 1 dims of the shape (8 bytes), "
         "found the end of the file (4 bytes left)"),
    (60, "array 0: at byte 56: expected 3 int32 values of the data (12 bytes), "
         "found the end of the file (4 bytes left)"),
    (104, "array 1: at byte 100: expected 1 float64 values of the data (8 bytes), "
          "found the end of the file (4 bytes left)"),
    (110, "the names: at byte 108: expected the number of names (8 bytes), "
          "found the end of the file (2 bytes left)"),
    (134, "name 1: at byte 133: expected the name's UTF-8 bytes (2 bytes), "
          "found the end of the file (1 bytes left)"),
])
def test_a_cut_names_the_place_and_what_was_expected(cut, message):
    assert len(SMALL) == 135
    assert _error(SMALL[:cut], message) == "minpy.nd.loads: <bytes>: " + message


def _patched(raw, offset, fmt, value):
    raw = bytearray(raw)
    struct.pack_into(fmt, raw, offset, value)
    return bytes(raw)


def test_wrong_magics():
    _error(_patched(SMALL, 0, "<Q", 0x113), "the list header: at byte 0: expected the "
           "NDArray list magic 0x112 (a u64), found b'\\x13\\x01")
    _error(_patched(SMALL, 68, "<I", 0xDEADBEEF), "array 1: at byte 68: expected an array "
           "magic 0xF993FAC9 (V2), 0xF993FACA (V3), 0xF993FAC8 (V1) or a legacy ndim <= 64, "
           "found 0xDEADBEEF")


def test_foreign_files_name_the_file(tmp_path):
    npz = tmp_path / "weights.npz"
    np.savez(npz, w=np.ones(3))
    with pytest.raises(ValueError, match=r"minpy.nd.load: '.*weights.npz': the list header: "
                                         r"at byte 0: expected the NDArray list magic 0x112 "
                                         r"\(a u64\), found b'PK\\x03\\x04.*a zip archive"):
        minpy.nd.load(npz)
    js = HERE / "ckpt-symbol.json"
    with pytest.raises(ValueError, match=r"ckpt-symbol.json': the list header: at byte 0: .*"
                                         r"found b'\{\\n .*JSON text"):
        minpy.nd.load(js)
    _error(b'  {"a": 1}', "found b'  {\"a\": ', JSON text")
    _error(b"\x93NUMPY\x01\x00" + b"\0" * 20, "an .npy file")


def test_trailing_bytes():
    _error(SMALL + b"\0\0\0", "minpy.nd.loads: <bytes>: the end: at byte 135: expected the "
                              "end of the file after the names, found 3 more bytes")


def test_unknown_type_flag_and_device_and_storage():
    _error(_patched(SMALL, 52, "<i", 9), "array 0: at byte 52: expected the type flag in "
           "[0, 1, 2, 3, 4, 5, 6, 7, 12], found 9")
    _error(_patched(SMALL, 44, "<i", 4), "array 0: at byte 44: expected a device type in "
           "[1, 2, 3, 5] (cpu, gpu, cpu_pinned, cpu_shared), found 4")
    _error(_patched(SMALL, 72, "<i", 3), "array 1: at byte 72: expected storage type 0 "
           "(default), 1 (row_sparse) or 2 (csr), found 3")
    _error(_patched(SMALL, 72, "<i", -1), "(-1 is an uninitialized NDArray), found -1")
    _error(_patched(SMALL, 32, "<i", -1), "array 0: at byte 32: expected an ndim >= 0 for "
           "the shape (-1: an uninitialized NDArray, not supported), found -1")
    _error(_patched(SMALL, 36, "<q", -1), "array 0: at byte 36: expected dims >= 0 in the "
           "shape (-1, unknown, is not supported), found (-1,)")


def test_names_must_match_the_arrays():
    _error(_patched(SMALL, 108, "<Q", 1), "the names: at byte 108: expected 0 or 2 names "
                                          "(one per array), found 1")
    bad = SMALL[:-2] + b"\xff\xfe"
    _error(bad, "name 1: at byte 133: expected a UTF-8 name, found b'\\xff\\xfe'")


def test_a_huge_array_count_or_shape_fails_fast():
    # after the two arrays, the names' count (2) reads as a legacy ndim 2, dims (0, 1)
    _error(_patched(SMALL, 16, "<Q", 2**63), "array 2: at byte 120: expected a device type")
    _error(_patched(SMALL, 16, "<Q", 2**63)[:108], "array 2: at byte 108: expected an array "
                                                   "magic")
    _error(_patched(SMALL, 36, "<q", 2**40), "array 0: at byte 56: expected 1099511627776 "
                                             "int32 values of the data (4398046511104 bytes)")


def test_sparse_arrays_are_refused_naming_the_key_or_index():
    with pytest.raises(ValueError) as info:
        minpy.nd.load(HERE / "row_sparse.params")
    assert str(info.value) == (
        f"minpy.nd.load: {str(HERE / 'row_sparse.params')!r}: array 1 (key 'w'): at byte 80: "
        "row_sparse storage (storage type 1): sparse arrays are not supported, only dense "
        "ones; convert with .tostype('default') in MXNet before saving")
    with pytest.raises(ValueError, match=r"csr.params': array 0: at byte 24: csr storage "
                                         r"\(storage type 2\): sparse arrays are not supported"):
        minpy.nd.load(HERE / "csr.params")


def test_bfloat16_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"array 1 \(key 'half'\): at byte 64: bfloat16 "
                                         r"\(type flag 12\) is not supported"):
        minpy.nd.load(HERE / "bfloat16.params")


# ---------------------------------------------------------------- checkpoints
def _ckpt_params():
    rows = expected("ckpt-0003")
    arg = {k[4:]: v for k, v in rows if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in rows if k.startswith("aux:")}
    return arg, aux


def test_load_checkpoint_reads_mxnets_checkpoint():
    net, arg, aux = minpy.model.load_checkpoint(str(HERE / "ckpt"), 3)
    want_arg, want_aux = _ckpt_params()
    assert net.list_arguments() == ["data"] + list(want_arg)
    assert net.list_auxiliary_states() == list(want_aux)
    assert list(arg) == list(want_arg) and list(aux) == list(want_aux)
    for got, want in [(arg[k], want_arg[k]) for k in want_arg] + \
                     [(aux[k], want_aux[k]) for k in want_aux]:
        assert_same(got, want)
    arg2, aux2 = minpy.model.load_params(str(HERE / "ckpt"), 3)
    assert list(arg2) == list(arg) and list(aux2) == list(aux)


def test_save_checkpoint_round_trip_and_mxnets_params_bytes(tmp_path):
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=4, name="fc")
    net = sym.BatchNorm(net, name="bn")
    arg, aux = _ckpt_params()
    prefix = str(tmp_path / "model")
    minpy.model.save_checkpoint(prefix, 3, net, {k: minpy.array(v) for k, v in arg.items()}, aux)
    assert (tmp_path / "model-0003.params").read_bytes() == \
        (HERE / "ckpt-0003.params").read_bytes()
    back, arg2, aux2 = minpy.model.load_checkpoint(prefix, 3)
    assert json.loads(back.tojson()) == json.loads(net.tojson())
    assert back.list_arguments() == net.list_arguments()
    for k in arg:
        assert_same(arg2[k], arg[k])
    for k in aux:
        assert_same(aux2[k], aux[k])
    minpy.model.save_checkpoint(prefix, 12, None, {}, {})
    assert minpy.model.load_params(prefix, 12) == ({}, {})


def test_checkpoint_errors_name_the_file_or_key(tmp_path):
    prefix = str(tmp_path / "m")
    with pytest.raises(FileNotFoundError, match=r"m-symbol\.json"):
        minpy.model.load_checkpoint(prefix, 0)
    sym.FullyConnected(sym.Variable("data"), num_hidden=4, name="fc").save(prefix +
                                                                          "-symbol.json")
    with pytest.raises(FileNotFoundError, match=r"m-0000\.params"):
        minpy.model.load_checkpoint(prefix, 0)
    minpy.nd.save(prefix + "-0001.params", {"arg:fc_weight": np.ones((4, 2), np.float32),
                                            "fc_bias": np.ones(4, np.float32)})
    with pytest.raises(ValueError, match=r"load_params: '.*m-0001.params': key 'fc_bias' has "
                                         r"neither the 'arg:' nor the 'aux:' prefix"):
        minpy.model.load_checkpoint(prefix, 1)
    minpy.nd.save(prefix + "-0002.params", [np.ones(2)])
    with pytest.raises(ValueError, match=r"m-0002.params': its 1 arrays have no names"):
        minpy.model.load_params(prefix, 2)


def test_the_names_are_exported():
    import minpy.symbol.format.params as ndfile
    assert minpy.nd.load is ndfile.load and minpy.nd.save is ndfile.save
    assert {"load_checkpoint", "save_checkpoint", "load_params"} <= set(minpy.model.__all__)
    assert issubclass(NDArrayFileError, ValueError)
