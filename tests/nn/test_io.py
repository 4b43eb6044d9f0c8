"""minpy.nn.io (NDArrayIter, DataBatch, DataDesc, prefetching) and minpy.nn.io.readers."""
import gc
import os
import pickle
import subprocess
import sys
import threading

import numpy
import pytest
from hypothesis import assume, given, strategies as st

import minpy as np
from minpy.nn import io
from minpy.nn.io import readers
from minpy.nn.io import DataBatch, DataDesc, NDArrayIter, PrefetchingIter

from _standin import installed           # the strict stand-in GPU of the dispatch tests

HANDLES = ("pad", "discard", "roll_over")


def _dataset(n, feature_shape=(2,), dtype=numpy.float32):
    """Sample i holds the value i everywhere, so a batch shows which samples it gathered."""
    x = numpy.broadcast_to(numpy.arange(n).reshape((n,) + (1,) * len(feature_shape)),
                           (n,) + feature_shape).astype(dtype)
    return x, numpy.arange(n) * 10


def _expected_epochs(n_total, batch_size, handle, shuffle, seed, num_parts, part_index, epochs):
    """The batches (sample indices, pad) per epoch, written straight from the specification."""
    lo, hi = n_total * part_index // num_parts, n_total * (part_index + 1) // num_parts
    n = hi - lo
    rng = numpy.random.default_rng(seed)
    carry, out = [], []
    for _ in range(epochs):
        order = list(rng.permutation(n)) if shuffle else list(range(n))
        seq = carry + order
        batches = []
        for s in range(0, len(seq), batch_size):
            chunk = seq[s:s + batch_size]
            pad = batch_size - len(chunk)
            if pad and handle != "pad":
                break
            while len(chunk) < batch_size:            # pad cycles from the epoch's start
                chunk += seq[:batch_size - len(chunk)]
            batches.append((numpy.array(chunk) + lo, pad))
        carry = seq[len(seq) // batch_size * batch_size:] if handle == "roll_over" else []
        out.append(batches)
    return out


def _epochs(it, epochs):
    out = []
    for _ in range(epochs):
        out.append([(b.data[0].asnumpy().copy(), b.label[0].asnumpy().copy(), b.pad,
                     numpy.array(b.index)) for b in it])
        it.reset()
    return out


def _same_epochs(a, b):
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert len(ea) == len(eb)
        for (xa, ya, pa, ia), (xb, yb, pb, ib) in zip(ea, eb):
            numpy.testing.assert_array_equal(xa, xb)
            numpy.testing.assert_array_equal(ya, yb)
            numpy.testing.assert_array_equal(ia, ib)
            assert pa == pb


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "minpy-prefetch"]


configs = st.fixed_dictionaries({
    "n": st.integers(1, 30), "batch_size": st.integers(1, 9),
    "handle": st.sampled_from(HANDLES), "shuffle": st.booleans(), "seed": st.integers(0, 99),
    "parts": st.integers(1, 3).flatmap(lambda k: st.tuples(st.just(k), st.integers(0, k - 1))),
})


def _build(c, **kw):
    n, bs, (k, p) = c["n"], c["batch_size"], c["parts"]
    shard = n * (p + 1) // k - n * p // k
    if shard == 0 or (c["handle"] != "pad" and shard < bs):
        return None
    x, y = _dataset(n)
    return NDArrayIter(x, y, batch_size=bs, shuffle=c["shuffle"], last_batch_handle=c["handle"],
                       seed=c["seed"], num_parts=k, part_index=p, **kw)


# ------------------------------------------------------------------ batches vs NumPy
@given(configs)
def test_batches_match_numpy_slicing(c):
    it = _build(c)
    assume(it is not None)
    x, y = _dataset(c["n"])
    expected = _expected_epochs(c["n"], c["batch_size"], c["handle"], c["shuffle"], c["seed"],
                                *c["parts"], epochs=3)
    got = _epochs(it, 3)
    assert [len(e) for e in got] == [len(e) for e in expected]
    for eg, ee in zip(got, expected):
        for (xb, yb, pad, index), (idx, epad) in zip(eg, ee):
            numpy.testing.assert_array_equal(xb, x[idx])
            numpy.testing.assert_array_equal(yb, y[idx])
            numpy.testing.assert_array_equal(index, idx)
            assert pad == epad
            assert xb.dtype == x.dtype and yb.dtype == y.dtype


def test_batches_are_minpy_arrays_and_copies():
    x, y = _dataset(6)
    it = NDArrayIter(x, y, batch_size=4)
    b = next(it)
    assert type(b.data[0]) is np.Array and type(b.label[0]) is np.Array
    assert b.data[0].context == np.cpu()
    b.data[0][...] = -1                     # a batch never aliases the dataset
    assert x.min() == 0 and it.data[0][1].min() == 0


@pytest.mark.parametrize("handle,counts,pads", [
    ("pad", [3, 3, 3], [[0, 0, 2]] * 3),
    ("discard", [2, 2, 2], [[0, 0]] * 3),
    ("roll_over", [2, 3, 2], [[0, 0], [0, 0, 0], [0, 0]]),
])
def test_last_batch_counts_and_pads(handle, counts, pads):
    x, y = _dataset(10)
    it = NDArrayIter(x, y, batch_size=4, last_batch_handle=handle)
    for count, pad in zip(counts, pads):
        assert it.getnumiterations() == count
        batches = list(it)
        assert [b.pad for b in batches] == pad
        assert list(it) == []                       # exhausted until reset
        it.reset()


def test_roll_over_first_batch_and_cursor():
    x, y = _dataset(10)
    it = NDArrayIter(x, y, batch_size=4, last_batch_handle="roll_over")
    assert [it.cursor for _ in it] == [0, 4]
    it.reset()
    first = next(it)
    assert it.cursor == -2                           # two rolled-over samples open the epoch
    numpy.testing.assert_array_equal(first.label[0].asnumpy(), [80, 90, 0, 10])


def test_reset_mid_epoch_rolls_nothing_over():
    x, y = _dataset(10)
    it = NDArrayIter(x, y, batch_size=4, last_batch_handle="roll_over")
    next(it)
    it.reset()
    assert [b.index.tolist() for b in it] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.hard_reset()                                  # drops the roll-over after a full epoch
    assert next(it).index.tolist() == [0, 1, 2, 3]


def test_shuffle_is_a_new_permutation_each_epoch_and_deterministic():
    x, y = _dataset(50)
    a = _epochs(NDArrayIter(x, y, batch_size=10, shuffle=True, seed=3), 2)
    b = _epochs(NDArrayIter(x, y, batch_size=10, shuffle=True, seed=3), 2)
    _same_epochs(a, b)
    first, second = (numpy.concatenate([batch[1] for batch in e]) for e in a)
    assert sorted(first) == sorted(second) == list(range(0, 500, 10))
    assert not numpy.array_equal(first, second)


def test_pad_larger_than_data_cycles():
    x, y = _dataset(3)
    b, = list(NDArrayIter(x, y, batch_size=8))
    assert b.pad == 5
    numpy.testing.assert_array_equal(b.label[0].asnumpy(), [0, 10, 20, 0, 10, 20, 0, 10])


def test_getdata_getlabel_protocol():
    x, y = _dataset(5)
    it = NDArrayIter(x, y, batch_size=2)
    with pytest.raises(RuntimeError, match="no current batch"):
        it.getdata()
    seen = []
    while it.iter_next():
        seen.append((it.getdata()[0].asnumpy()[:, 0].tolist(), it.getlabel()[0].tolist(),
                     it.getpad(), it.getindex().tolist()))
    assert seen == [([0, 1], [0, 10], 0, [0, 1]), ([2, 3], [20, 30], 0, [2, 3]),
                    ([4, 0], [40, 0], 1, [4, 0])]


@pytest.mark.parametrize("prefetch", [0, 2])
def test_batches_land_on_the_current_device_with_one_copy_per_source(prefetch):
    x, y = _dataset(10)
    with installed(), np.gpu(1):
        it = NDArrayIter(x, y, batch_size=4, prefetch=prefetch)
        batches = list(it)
        it.close()
        assert np.dispatch.stats()["copies"] == {"h2d": 6}
        assert [b.data[0].context for b in batches] == [np.gpu(1)] * 3
        assert all(b.label[0].context == np.gpu(1) for b in batches)
        numpy.testing.assert_array_equal(batches[2].label[0].asnumpy(), [80, 90, 0, 10])


# ------------------------------------------------------------------ inputs and descriptions
def test_list_and_dict_inputs_and_provide_data():
    x, y = _dataset(6, (3, 2))
    it = NDArrayIter([x, x[:, 0]], {"y": y, "w": y.astype(numpy.float64)}, batch_size=4)
    assert [k for k, _ in it.data] == ["_0_data", "_1_data"]
    assert [k for k, _ in it.label] == ["y", "w"]
    assert it.num_source == 4 and it.num_data == 6
    assert it.provide_data == [("_0_data", (4, 3, 2)), ("_1_data", (4, 2))]
    assert it.provide_label[1] == DataDesc("w", (4,), numpy.float64)
    assert it.provide_label[1].dtype == numpy.float64
    name, shape = it.provide_data[0]
    assert (name, shape) == ("_0_data", (4, 3, 2))
    b = next(it)
    assert len(b.data) == 2 and len(b.label) == 2 and b.provide_data == it.provide_data
    single = NDArrayIter(np.array(x), batch_size=2, data_name="img")
    assert single.provide_data == [("img", (2, 3, 2))] and single.provide_label == []
    assert next(single).label == []
    assert pickle.loads(pickle.dumps(it.provide_data[0])).dtype == numpy.float32


def test_minpy_program_label_counts():
    # MinPy's own iterator test: 1000 samples, batch 128, pad -> sample 0..23 seen twice
    datas = numpy.repeat(numpy.arange(1000) // 100, 4).reshape(1000, 2, 2).astype(float)
    labels = (numpy.arange(1000) // 100).reshape(1000, 1).astype(float)
    it = NDArrayIter(np.array(datas), np.array(labels), batch_size=128)
    counts = numpy.zeros(10, int)
    for batch in it:
        label = batch.label[0].asnumpy().ravel()
        assert (batch.data[0].asnumpy()[:, 0, 0] == label).all()
        counts += numpy.bincount(label.astype(int), minlength=10)
    assert counts.tolist() == [124] + [100] * 9


@pytest.mark.parametrize("kwargs,error,match", [
    ({"label": numpy.zeros(9)}, ValueError, r"'data': 10, 'softmax_label': 9"),
    ({"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    ({"batch_size": 2.0}, TypeError, "batch_size must be an int"),
    ({"last_batch_handle": "wrap"}, ValueError, "last_batch_handle must be one of"),
    ({"num_parts": 2, "part_index": 2}, ValueError, "part_index must be < num_parts=2"),
    ({"part_index": -1}, ValueError, "part_index must be >= 0"),
    ({"prefetch": -1}, ValueError, "prefetch must be >= 0"),
    ({"transform": 3}, TypeError, "transform must be callable"),
    ({"batch_size": 11, "last_batch_handle": "discard"}, ValueError, "make no batch"),
    ({"num_parts": 11}, ValueError, r"num_parts=11 parts of 10 samples would leave some parts "
                                    r"empty \(part_index=0\); use num_parts <= 10"),
    ({"num_parts": 11, "part_index": 10}, ValueError, r"leave some parts empty \(part_index=10"),
    ({"label": {"data": numpy.zeros(10)}}, ValueError, r"repeated: \['data'\]"),
    ({"label": {1: numpy.zeros(10)}}, TypeError, "keys must be str"),
    ({"label": [0, 1]}, ValueError, "at least one dimension"),
])
def test_bad_arguments_raise_naming_them(kwargs, error, match):
    with pytest.raises(error, match=match):
        NDArrayIter(numpy.zeros((10, 2)), **kwargs)


def test_length_mismatch_names_every_array():
    with pytest.raises(ValueError, match=r"'a': 4, 'b': 5, 'y': 4"):
        NDArrayIter({"a": numpy.zeros(4), "b": numpy.zeros(5)}, {"y": numpy.zeros(4)})
    with pytest.raises(TypeError, match="data is required"):
        NDArrayIter(None)
    with pytest.raises(TypeError, match="data must be a list"):
        DataBatch(numpy.zeros(3))


# ------------------------------------------------------------------ sharding
@given(st.integers(1, 60), st.integers(1, 6), st.integers(1, 7))
def test_shards_cover_the_data_exactly_once(n, parts, batch_size):
    assume(parts <= n)
    seen = []
    for p in range(parts):
        it = NDArrayIter(*_dataset(n), batch_size=batch_size, num_parts=parts, part_index=p,
                         shuffle=True, seed=p)
        for b in it:
            seen.extend(b.index[:batch_size - b.pad].tolist())
    assert sorted(seen) == list(range(n))


# ------------------------------------------------------------------ sub-iterator
def test_getsubiter_first_samples():
    x, y = _dataset(20)
    it = NDArrayIter(x, y, batch_size=4, shuffle=True, seed=0,
                     transform=lambda b: DataBatch([b.data[0] * 2], b.label, pad=b.pad))
    sub = it.getsubiter(6)
    assert sub.num_data == 6 and sub.batch_size == 4
    got = [(b.label[0].tolist(), b.pad, b.data[0].asnumpy()[:, 0].tolist()) for b in sub]
    assert got == [([0, 10, 20, 30], 0, [0, 2, 4, 6]), ([40, 50, 0, 10], 2, [8, 10, 0, 2])]
    assert it.getsubiter(100).num_data == 20
    with pytest.raises(ValueError, match="num_samples must be >= 1"):
        it.getsubiter(0)


# ------------------------------------------------------------------ prefetching
@given(configs, st.integers(1, 3))
def test_prefetch_equals_no_prefetch(c, depth):
    def transform(b):
        return DataBatch([b.data[0] + 1.0], b.label, pad=b.pad, index=b.index)
    plain, fetched = _build(c, transform=transform), _build(c, transform=transform,
                                                            prefetch=depth)
    assume(plain is not None)
    _same_epochs(_epochs(plain, 3), _epochs(fetched, 3))
    fetched.close()
    assert _prefetch_threads() == []


def test_prefetch_worker_error_surfaces_and_iterator_can_retry():
    calls = {"fail": True}

    def transform(b):
        if b.index[0] == 4 and calls["fail"]:
            raise KeyError("bad sample 4")
        return b
    x, y = _dataset(10)
    it = NDArrayIter(x, y, batch_size=2, prefetch=2, transform=transform)
    assert next(it).index.tolist() == [0, 1]
    assert next(it).index.tolist() == [2, 3]
    with pytest.raises(KeyError, match="bad sample 4"):
        next(it)
    assert _prefetch_threads() == []
    assert it.cursor == 2                       # still on the last good batch
    calls["fail"] = False
    assert [b.index.tolist()[0] for b in it] == [4, 6, 8]


def test_transform_must_return_a_batch():
    it = NDArrayIter(numpy.zeros((4, 1)), batch_size=2, transform=lambda b: b.data)
    with pytest.raises(TypeError, match="must return a DataBatch, got list"):
        next(it)


def test_no_thread_left_after_reset_close_or_del():
    x, y = _dataset(40)
    it = NDArrayIter(x, y, batch_size=2, prefetch=3)
    next(it)
    assert len(_prefetch_threads()) == 1
    it.reset()
    assert _prefetch_threads() == []
    next(it)
    del it
    gc.collect()
    assert _prefetch_threads() == []
    wrapped = PrefetchingIter(NDArrayIter(x, y, batch_size=2), prefetch=2)
    next(wrapped)
    wrapped.close()
    assert _prefetch_threads() == []
    next(wrapped)
    del wrapped
    gc.collect()
    assert _prefetch_threads() == []


def test_interpreter_exits_with_prefetch_threads_running():
    code = ("import numpy\n"
            "from minpy.nn.io import NDArrayIter, PrefetchingIter\n"
            "it = NDArrayIter(numpy.zeros((1000, 3)), batch_size=2, prefetch=4)\n"
            "next(it)\n"
            "w = PrefetchingIter(NDArrayIter(numpy.zeros((1000, 3)), batch_size=2))\n"
            "next(w)\n"
            "cycle = [it, w]\n"
            "cycle.append(cycle)\n"
            "print('exiting')\n")
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting" and "Traceback" not in done.stderr


def test_prefetching_iter_wraps_iterators():
    x, y = _dataset(10)
    plain = _epochs(NDArrayIter(x, y, batch_size=3, shuffle=True, seed=1), 2)
    wrapped = PrefetchingIter(NDArrayIter(x, y, batch_size=3, shuffle=True, seed=1), prefetch=2)
    assert wrapped.provide_data == [("data", (3, 2))] and wrapped.batch_size == 3
    _same_epochs(plain, _epochs(wrapped, 2))
    assert wrapped.iter_next() and wrapped.getpad() == 0 and wrapped.getdata()[0].shape == (3, 2)
    wrapped.close()
    doubled = PrefetchingIter(iter([1, 2, 3]), transform=lambda v: 2 * v)
    assert list(doubled) == [2, 4, 6]


def test_prefetching_iter_error_surfaces():
    def source():
        yield 1
        raise OSError("disk gone")
    it = PrefetchingIter(source())
    assert next(it) == 1
    with pytest.raises(OSError, match="disk gone"):
        next(it)
    with pytest.raises(TypeError, match="must be iterable"):
        PrefetchingIter(3)


# ------------------------------------------------------------------ checkpoints
@given(configs, st.integers(0, 12), st.booleans())
def test_state_dict_resumes_exactly(c, steps, prefetch):
    a = _build(c, prefetch=2 if prefetch else 0)
    assume(a is not None)
    for _ in range(steps):                      # walk into the run, across epoch ends
        if not a.iter_next():
            a.reset()
    state = pickle.loads(pickle.dumps(a.state_dict()))
    b = _build({**c, "seed": c["seed"] + 1})
    b.load_state_dict(state)
    rest_a = [(bt.index.tolist(), bt.pad) for bt in a]
    rest_b = [(bt.index.tolist(), bt.pad) for bt in b]
    assert rest_a == rest_b
    a.reset()
    b.reset()
    _same_epochs(_epochs(a, 2), _epochs(b, 2))
    a.close()


def test_load_state_dict_refuses_other_iterators():
    x, y = _dataset(10)
    state = NDArrayIter(x, y, batch_size=2).state_dict()
    with pytest.raises(ValueError, match="batch_size is 5 here but 2 in the state"):
        NDArrayIter(x, y, batch_size=5).load_state_dict(state)
    with pytest.raises(ValueError, match="not a sample order"):
        NDArrayIter(x, y, batch_size=2).load_state_dict({**state, "order": numpy.arange(11)})


# ------------------------------------------------------------------ readers
@pytest.fixture
def files(tmp_path):
    x = numpy.arange(12, dtype=numpy.float32).reshape(4, 3)
    y = numpy.array([0, 1, 0, 1])
    numpy.savez(tmp_path / "d.npz", data=x, label=y)
    numpy.save(tmp_path / "d.npy", x)
    (tmp_path / "d.csv").write_text("a,b,c,label\n" + "\n".join(
        ",".join(str(v) for v in list(row) + [lab]) for row, lab in zip(x, y)) + "\n")
    return tmp_path, x, y


def _urls(path):
    return [str(path), path, "file://" + str(path)]


def test_readers_local_and_file_urls(files):
    d, x, y = files
    for url in _urls(d / "d.npz"):
        got = readers.load_npz(url)
        assert sorted(got) == ["data", "label"] and type(got["data"]) is numpy.ndarray
        numpy.testing.assert_array_equal(got["data"], x)
    for url in _urls(d / "d.npy"):
        numpy.testing.assert_array_equal(readers.load_npy(url), x)
    for url in _urls(d / "d.csv"):
        data, label = readers.load_csv(url, skiprows=1, label_column=-1, label_dtype=int)
        numpy.testing.assert_array_equal(data, x)
        numpy.testing.assert_array_equal(label, y)
        assert data.dtype == numpy.float32 and label.dtype == int
        table = readers.load_csv(url, skiprows=1, dtype=numpy.float64)
        assert table.shape == (4, 4) and table.dtype == numpy.float64


def test_readers_memory_urls(files):
    fsspec = pytest.importorskip("fsspec")
    d, x, y = files
    fs = fsspec.filesystem("memory")
    for name in ("d.npz", "d.npy", "d.csv"):
        fs.pipe(f"/minpy-test/{name}", (d / name).read_bytes())
    try:
        numpy.testing.assert_array_equal(readers.load_npz("memory://minpy-test/d.npz")["label"], y)
        numpy.testing.assert_array_equal(readers.load_npy("memory://minpy-test/d.npy"), x)
        data, label = readers.load_csv("memory://minpy-test/d.csv", skiprows=1, label_column=3)
        numpy.testing.assert_array_equal(data, x)
        it = NDArrayIter.from_npz("memory://minpy-test/d.npz", "data", "label", batch_size=2)
        assert [b.label[0].tolist() for b in it] == [[0, 1], [0, 1]]
        multi = NDArrayIter.from_npz("memory://minpy-test/d.npz", ["data", "label"])
        assert [k for k, _ in multi.data] == ["data", "label"]
        with pytest.raises(KeyError, match=r"no arrays \['x'\]; it holds \['data', 'label'\]"):
            NDArrayIter.from_npz("memory://minpy-test/d.npz", "x")
    finally:
        fs.rm("/minpy-test", recursive=True)


def test_reader_errors(files):
    d, _, _ = files
    with pytest.raises(ValueError, match="label_column=4 is out of range .* 4 columns"):
        readers.load_csv(d / "d.csv", skiprows=1, label_column=4)
    with pytest.raises(TypeError, match="label_column must be an int"):
        readers.load_csv(d / "d.csv", skiprows=1, label_column="label")
    with pytest.raises(ValueError, match="not a .npy file"):
        readers.load_npy(d / "d.npz")
    with pytest.raises(FileNotFoundError):
        readers.load_npy(d / "missing.npy")
    with pytest.raises(TypeError, match="url must be a str"):
        readers.load_npy(3)


def test_without_fsspec_paths_read_and_urls_explain(files, monkeypatch):
    d, x, _ = files
    monkeypatch.setattr(readers, "_import_fsspec", lambda: None)
    numpy.testing.assert_array_equal(readers.load_npy(str(d / "d.npy")), x)
    numpy.testing.assert_array_equal(readers.load_npz(d / "d.npz")["data"], x)
    for url in ("file://" + str(d / "d.npy"), "memory://d.npy", "s3://bucket/d.npy"):
        with pytest.raises(ImportError, match=r'pip install fsspec \(in a minpy checkout: pip install -e "\.\[io\]"\)'):
            readers.load_npy(url)


def test_save_and_load_data_labels(tmp_path):
    x, y = _dataset(5)
    readers.save_data_labels(x, y, tmp_path / "p.pkl")
    gx, gy = io.load_data_labels(tmp_path / "p.pkl")
    numpy.testing.assert_array_equal(gx, x)
    numpy.testing.assert_array_equal(gy, y)
    (tmp_path / "bad.pkl").write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(ValueError, match="does not hold a dict"):
        readers.load_data_labels(tmp_path / "bad.pkl")


def test_benchmark_pipeline_is_the_same_with_and_without_prefetch():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "..", "benchmarks"))
    try:
        import bench_io
    finally:
        sys.path.pop(0)
    x, y = bench_io.make_data(3)
    transform = bench_io.make_transform(2)
    batch = transform(next(NDArrayIter(x, y, batch_size=bench_io.BATCH)))
    assert batch.data[0].shape == (bench_io.BATCH, bench_io.N_IN)
    assert numpy.isfinite(batch.data[0].asnumpy()).all()
    _, plain = bench_io.run_epoch(x, y, 0, transform, bench_io.make_params())
    _, fetched = bench_io.run_epoch(x, y, 2, transform, bench_io.make_params())
    assert len(plain) == 3 and plain == fetched


def test_idx_maps_each_position_to_its_sample_as_mxnet():
    # MXNet's NDArrayIter.idx: after shuffling, data[i] is original[idx[i]] every epoch
    data = numpy.arange(10.0).reshape(10, 1) * 3
    it = NDArrayIter(data, numpy.arange(10.0), batch_size=5, shuffle=True, seed=4)
    for _ in range(3):
        served = numpy.concatenate([b.data[0].asnumpy()[:, 0] for b in it])
        numpy.testing.assert_array_equal(served, data[it.idx, 0])
        assert sorted(it.idx.tolist()) == list(range(10))
        it.reset()
    plain = NDArrayIter(data, batch_size=5)
    assert plain.idx.tolist() == list(range(10))
