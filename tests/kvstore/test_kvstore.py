"""minpy.kvstore (single process): MXNet's API, values against NumPy, the engine's
ordering, priorities, devices (the strict stand-in), and clear errors."""
import pickle
import threading
import time

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import minpy
import minpy as np
import minpy.engine as me
import minpy.nn  # noqa: F401  (minpy.nn.optim)
from _standin import installed


def rand(shape, seed, dtype=numpy.float64):
    return (numpy.random.default_rng(seed).standard_normal(shape) * 2).astype(dtype)


@pytest.fixture(params=["threaded", "naive"])
def engine(request):
    original = me.get_engine()
    me.set_engine(request.param)
    yield request.param
    me.set_engine(original.kind)


@pytest.mark.parametrize("kind", ["local", "device"])
@settings(max_examples=15, deadline=None)
@given(shape=st.sampled_from([(3,), (2, 4), (2, 3, 2)]),
       dtype=st.sampled_from([numpy.float32, numpy.float64, numpy.int64]),
       ndev=st.integers(1, 4), seed=st.integers(0, 100))
def test_push_sums_and_pull_broadcasts_like_numpy(kind, shape, dtype, ndev, seed):
    kv = minpy.kvstore.create(kind)
    init = rand(shape, seed, dtype)
    kv.init("w", np.array(init))
    parts = [rand(shape, seed + 1 + i, dtype) for i in range(ndev)]
    kv.push("w", [np.array(p) for p in parts])
    outs = [np.zeros(shape, dtype=dtype) for _ in range(ndev)]
    kv.pull("w", out=outs)
    want = numpy.sum(parts, axis=0).astype(dtype)
    for o in outs:
        assert o.dtype == dtype
        numpy.testing.assert_allclose(o.asnumpy(), want, rtol=1e-6)
    kv.pushpull("w", np.array(parts[0]), out=outs[0])          # push replaces: no updater
    numpy.testing.assert_allclose(outs[0].asnumpy(), parts[0])


def test_keys_int_and_str_and_lists_of_keys():
    kv = minpy.kvstore.create()
    kv.init([0, "b", 7], [np.ones(2), np.zeros((2, 2)), np.full(3, 5.0)])
    kv.push([0, "b"], [[np.ones(2), np.ones(2)], np.eye(2)])
    a, b, c = np.zeros(2), np.zeros((2, 2)), np.zeros(3)
    kv.pull([0, "b", 7], out=[a, b, [c]])
    numpy.testing.assert_array_equal(a.asnumpy(), [2.0, 2.0])
    numpy.testing.assert_array_equal(b.asnumpy(), numpy.eye(2))
    numpy.testing.assert_array_equal(c.asnumpy(), [5.0] * 3)
    assert kv.type == "local" and kv.rank == 0 and kv.num_workers == 1
    v = np.array([1.0, 4.0])
    kv.pushpull(0, v)                              # out defaults to the value itself
    numpy.testing.assert_array_equal(v.asnumpy(), [1.0, 4.0])


def test_updater_and_optimizer_match_numpy_sgd(tmp_path):
    w0, grads = rand((4, 3), 0), [rand((4, 3), s) for s in range(1, 6)]
    kv = minpy.kvstore.create("local")
    kv.init(1, np.array(w0))
    kv.set_optimizer(minpy.nn.optim.create("sgd_momentum", learning_rate=0.1, momentum=0.9))
    ref, vel = w0.copy(), numpy.zeros_like(w0)
    out = np.zeros((4, 3))
    for g in grads[:3]:
        kv.push(1, [np.array(g / 2), np.array(g / 2)])
        vel = 0.9 * vel - 0.1 * g
        ref = ref + vel
    kv.pull(1, out=out)
    numpy.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-12)
    kv.save_optimizer_states(tmp_path / "opt.pkl")
    kv2 = minpy.kvstore.create("local")                       # resume elsewhere
    kv2.init(1, np.array(ref))
    kv2.set_optimizer(minpy.nn.optim.create("sgd_momentum", learning_rate=0.1, momentum=0.9))
    kv2.load_optimizer_states(tmp_path / "opt.pkl")
    for g in grads[3:]:
        kv2.push(1, np.array(g))
        vel = 0.9 * vel - 0.1 * g
        ref = ref + vel
    kv2.pull(1, out=out)
    numpy.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-12)

    seen = []
    kv3 = minpy.kvstore.create("device")
    kv3.init("k", np.ones(2))
    kv3.set_updater(lambda key, g, w: (seen.append(key), w.__isub__(0.5 * g)))
    kv3.push("k", np.array([2.0, 4.0]))
    kv3.pull("k", out=out[0, :2])
    numpy.testing.assert_array_equal(out.asnumpy()[0, :2], [0.0, -1.0])
    assert seen == ["k"]


def test_pull_waits_for_the_push_before_it_and_reads_wait_for_the_pull(engine):
    kv = minpy.kvstore.create()
    kv.init(0, np.zeros(3))

    def slow_update(key, g, w):
        time.sleep(0.1)
        w[...] = w + g
    kv.set_updater(slow_update)
    out = np.zeros(3)
    for step in range(1, 4):
        kv.push(0, np.full(3, 1.0))
        kv.pull(0, out=out)
        numpy.testing.assert_array_equal(out.asnumpy(), [float(step)] * 3)   # never stale
    with minpy.async_mode():
        g = np.ones(3)
        t0 = time.perf_counter()
        kv.push(0, g)
        queued = time.perf_counter() - t0
        g[...] = 100.0         # an eager write after the push waits for the push to read g
        kv.pull(0, out=out)
        numpy.testing.assert_array_equal(out.asnumpy(), [4.0] * 3)
    if engine == "threaded":
        assert queued < 0.05                   # the 0.1 s update ran behind the call


def test_priorities_order_queued_pushes():
    original = me.get_engine()
    me.set_engine("threaded", num_cpu_workers=1)
    try:
        kv = minpy.kvstore.create()
        order = []
        kv.set_updater(lambda key, g, w: order.append(key))
        for k in ("layer1", "layer2", "layer3"):
            kv.init(k, np.zeros(1))
        gate = threading.Event()
        me.push(gate.wait)                               # holds the only worker
        with minpy.async_mode():                         # pushes queue, not wait
            for prio, k in enumerate(("layer1", "layer2", "layer3")):
                kv.push(k, np.ones(1), priority=prio)    # the last layer first
            gate.set()
        assert order == ["layer3", "layer2", "layer1"]
    finally:
        me.set_engine(original.kind)


def test_device_kind_sums_on_the_init_device_of_the_standin_gpu():
    host = [rand((2, 3), s) for s in range(3)]
    with installed():
        on = [np.array(host[0]).copyto(np.gpu(0)), np.array(host[1]).copyto(np.gpu(1)),
              np.array(host[2])]
        for kind in ("device", "local"):
            kv = minpy.kvstore.create(kind)
            kv.init(0, on[0])
            assert kv._store[0].context == (np.gpu(0) if kind == "device" else np.cpu(0))
            kv.push(0, on)
            outs = [np.zeros((2, 3)).copyto(np.gpu(1)), np.zeros((2, 3))]
            kv.pull(0, out=outs)
            assert outs[0].context == np.gpu(1) and outs[1].context == np.cpu(0)
            for o in outs:
                numpy.testing.assert_allclose(o.asnumpy(), host[0] + host[1] + host[2])


BAD_CALLS = [
    (lambda kv: kv.push("nope", np.ones(3)), KeyError, r"key 'nope' was not initialised"),
    (lambda kv: kv.push("w", np.ones(4)), ValueError,
     r"push: key 'w' holds shape \(3,\), got an array of shape \(4,\)"),
    (lambda kv: kv.push("w", [np.ones(3), np.ones(2)]), ValueError,
     r"got an array of shape \(2,\)"),
    (lambda kv: kv.push("w", np.ones(3, dtype="f4")), TypeError,
     r"key 'w' holds dtype float64, got an array of dtype float32"),
    (lambda kv: kv.pull("w", out=np.zeros((3, 1))), ValueError,
     r"pull: key 'w' holds shape \(3,\), got an array of shape \(3, 1\)"),
    (lambda kv: kv.pull("w"), ValueError, r"out= is required"),
    (lambda kv: kv.init("w", np.ones(3)), ValueError, r"key 'w' is already initialised"),
    (lambda kv: kv.init(1.5, np.ones(3)), TypeError, r"keys must be int or str, got 1.5"),
    (lambda kv: kv.push(["w", "w"], [np.ones(3)]), ValueError, r"2 keys need a list of 2"),
    (lambda kv: kv.push("w", [3.0, 1.0]), TypeError, r"takes minpy Arrays"),
    (lambda kv: kv.push("w", []), ValueError, r"empty list"),
    (lambda kv: kv.set_updater(3), TypeError, r"must be callable"),
    (lambda kv: kv.set_optimizer(object()), TypeError, r"minpy.nn.optim optimizer"),
    (lambda kv: kv.save_optimizer_states("x"), RuntimeError, r"no optimizer"),
]


@pytest.mark.parametrize("call, exc, msg", BAD_CALLS)
def test_bad_input_is_refused_and_the_stored_value_kept(call, exc, msg):
    kv = minpy.kvstore.create()
    kv.init("w", np.array([1.0, 2.0, 3.0]))
    with pytest.raises(exc, match=msg):
        call(kv)
    out = np.zeros(3)
    kv.pull("w", out=out)
    numpy.testing.assert_array_equal(out.asnumpy(), [1.0, 2.0, 3.0])


def test_unknown_kind_and_foreign_state_file(tmp_path):
    with pytest.raises(ValueError, match=r"unknown kind .dist_sink."):
        minpy.kvstore.create("dist_sink")
    kv = minpy.kvstore.create()
    kv.set_optimizer(minpy.nn.optim.create("sgd", learning_rate=0.1))
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(ValueError, match="was not written by save_optimizer_states"):
        kv.load_optimizer_states(bad)
