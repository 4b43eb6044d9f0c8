"""mx.recordio (MXNet 1.x's RecordIO files): MXNet 1.9.1's unit tests
(tests/python/unittest/test_recordio.py), and files byte-identical to those MXNet 1.9.1
writes (tests/fixtures/mxnet/recordio, made by make_recordio_fixtures.py)."""
import json
import os
import pickle
import random
import string

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minpy.mxnet as mx

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet", "recordio")
MAGIC = bytes.fromhex("0a23d7ce")


def _cases():
    with open(os.path.join(FIXTURES, "recordio_cases.json")) as f:
        return json.load(f)


# ------------------------------------------------------------------ MXNet's unit tests
def test_recordio(tmp_path):
    frec = str(tmp_path / "a.rec")
    N = 255
    writer = mx.recordio.MXRecordIO(frec, 'w')
    for i in range(N):
        writer.write(bytes(str(chr(i)), 'utf-8'))
    del writer
    reader = mx.recordio.MXRecordIO(frec, 'r')
    for i in range(N):
        res = reader.read()
        assert res == bytes(str(chr(i)), 'utf-8')
    assert reader.read() is None


def test_indexed_recordio(tmp_path):
    fidx, frec = str(tmp_path / "a.idx"), str(tmp_path / "a.rec")
    N = 255
    writer = mx.recordio.MXIndexedRecordIO(fidx, frec, 'w')
    for i in range(N):
        writer.write_idx(i, bytes(str(chr(i)), 'utf-8'))
    del writer
    reader = mx.recordio.MXIndexedRecordIO(fidx, frec, 'r')
    keys = reader.keys
    assert sorted(keys) == [i for i in range(N)]
    random.Random(0).shuffle(keys)
    for i in keys:
        res = reader.read_idx(i)
        assert res == bytes(str(chr(i)), 'utf-8')


def test_recordio_pack_label():
    rng = random.Random(0)
    N = 40
    for i in range(1, N):
        for j in range(0, N, 7):
            content = ''.join(rng.choice(string.ascii_uppercase + string.digits)
                              for _ in range(j))
            content = content.encode('utf-8')
            label = np.random.RandomState(i * N + j).uniform(size=i).astype(np.float32)
            header = (0, label, 0, 0)
            s = mx.recordio.pack(header, content)
            rheader, rcontent = mx.recordio.unpack(s)
            assert (label == rheader.label).all()
            assert rheader.flag == i
            assert content == rcontent


# ------------------------------------------------------------------ MXNet 1.9.1's bytes
def test_sequential_file_is_byte_identical_to_mxnets(tmp_path):
    cases = _cases()
    records = [bytes.fromhex(r) for r in cases["records"]]
    frec = str(tmp_path / "seq.rec")
    with mx.recordio.MXRecordIO(frec, "w") as writer:
        for r in records:
            writer.write(r)
    with open(frec, "rb") as mine, open(os.path.join(FIXTURES, "seq.rec"), "rb") as theirs:
        assert mine.read() == theirs.read()
    reader = mx.recordio.MXRecordIO(os.path.join(FIXTURES, "seq.rec"), "r")
    assert [reader.read() for _ in records] == records
    assert reader.read() is None
    reader.reset()
    assert reader.read() == records[0]


def test_indexed_files_are_byte_identical_to_mxnets(tmp_path):
    cases = _cases()
    keys = cases["indexed_keys"]
    payloads = [bytes.fromhex(r) for r in cases["indexed_records"]]
    fidx, frec = str(tmp_path / "i.idx"), str(tmp_path / "i.rec")
    writer = mx.recordio.MXIndexedRecordIO(fidx, frec, "w")
    tells = [writer.tell()]
    for k, p in zip(keys, payloads):
        writer.write_idx(k, p)
        tells.append(writer.tell())
    writer.close()
    assert tells == cases["indexed_tells"]
    for name, path in (("indexed.idx", fidx), ("indexed.rec", frec)):
        with open(path, "rb") as mine, open(os.path.join(FIXTURES, name), "rb") as theirs:
            assert mine.read() == theirs.read(), name
    reader = mx.recordio.MXIndexedRecordIO(os.path.join(FIXTURES, "indexed.idx"),
                                           os.path.join(FIXTURES, "indexed.rec"), "r")
    assert reader.keys == keys
    for k, p in sorted(zip(keys, payloads), reverse=True):
        assert reader.read_idx(k) == p
    with pytest.raises(KeyError, match="no record with key 4"):
        reader.read_idx(4)


def test_pack_and_unpack_match_mxnets_bytes():
    for case in _cases()["packs"]:
        flag, label, id_, id2 = case["header"]
        payload = bytes.fromhex(case["payload"])
        packed = mx.recordio.pack(mx.recordio.IRHeader(flag, label, id_, id2), payload)
        assert packed == bytes.fromhex(case["packed"])
        header, rest = mx.recordio.unpack(packed)
        want = case["unpacked"]
        assert (header.flag, header.id, header.id2) == (want[0], want[2], want[3])
        np.testing.assert_array_equal(np.asarray(header.label), np.asarray(want[1]))
        assert rest == bytes.fromhex(case["rest"])


@settings(max_examples=60)
@given(st.lists(st.one_of(st.binary(max_size=40),
                          st.lists(st.sampled_from([MAGIC, b"ab", b"abcd", b"\0"]),
                                   max_size=6).map(b"".join)), max_size=6))
def test_any_records_read_back(tmp_path_factory, records):
    frec = str(tmp_path_factory.mktemp("rec") / "r.rec")
    with mx.recordio.MXRecordIO(frec, "w") as writer:
        for r in records:
            writer.write(r)
    assert os.path.getsize(frec) % 4 == 0
    reader = mx.recordio.MXRecordIO(frec, "r")
    assert [reader.read() for _ in records] == records
    assert reader.read() is None


# ------------------------------------------------------------------ images, errors
def test_pack_img_round_trips_png_in_bgr_order():
    pytest.importorskip("PIL")
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, (5, 7, 3)).astype(np.uint8)
    s = mx.recordio.pack_img(mx.recordio.IRHeader(0, 2.0, 3, 0), img, quality=3,
                             img_fmt=".png")
    header, back = mx.recordio.unpack_img(s)
    assert header == mx.recordio.IRHeader(0, 2.0, 3, 0)
    np.testing.assert_array_equal(back, img)
    gray = mx.recordio.unpack_img(s, iscolor=0)[1]
    assert gray.shape == (5, 7)
    # the stored image is RGB: the first stored channel is the array's last (BGR)
    from PIL import Image
    import io
    stored = np.asarray(Image.open(io.BytesIO(mx.recordio.unpack(s)[1])))
    np.testing.assert_array_equal(stored, img[:, :, ::-1])
    jpg = mx.recordio.pack_img((0, [1.0, 2.0], 0, 0), img, quality=90)
    assert mx.recordio.unpack_img(jpg)[1].shape == (5, 7, 3)
    with pytest.raises(ValueError, match="img_fmt"):
        mx.recordio.pack_img((0, 1.0, 0, 0), img, img_fmt=".bmp")


def test_errors_name_the_function(tmp_path):
    frec = str(tmp_path / "x.rec")
    with pytest.raises(ValueError, match="invalid flag"):
        mx.recordio.MXRecordIO(frec, "a")
    writer = mx.recordio.MXRecordIO(frec, "w")
    with pytest.raises(TypeError, match="MXRecordIO.write: a record is bytes"):
        writer.write("text")
    with pytest.raises(RuntimeError, match="opened for writing"):
        writer.read()
    writer.write(b"abc")
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.write(b"x")
    with open(frec, "ab") as f:
        f.write(b"garbage!")
    reader = mx.recordio.MXRecordIO(frec, "r")
    assert reader.read() == b"abc"
    with pytest.raises(ValueError, match="invalid RecordIO file"):
        reader.read()
    with pytest.raises(ValueError, match="recordio.unpack"):
        mx.recordio.unpack(b"short")


def test_pickled_reader_reopens_at_the_start(tmp_path):
    fidx, frec = str(tmp_path / "p.idx"), str(tmp_path / "p.rec")
    writer = mx.recordio.MXIndexedRecordIO(fidx, frec, "w")
    for i in range(3):
        writer.write_idx(i, b"r%d" % i)
    writer.close()
    reader = mx.recordio.MXIndexedRecordIO(fidx, frec, "r")
    reader.read()
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.read_idx(2) == b"r2" and clone.keys == [0, 1, 2]


def test_image_record_iter_is_refused_with_the_alternative():
    with pytest.raises(NotImplementedError, match="mx.recordio.MXIndexedRecordIO"):
        mx.io.ImageRecordIter(path_imgrec="data.rec", data_shape=(3, 32, 32), batch_size=4)
