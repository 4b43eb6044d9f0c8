"""minpy.nn.optim: the functional rules and the in-place fused optimizers against a NumPy
reference written here; backends against each other; schedules, clipping, weight decay,
state_dict round trips, in-place identity, tape refusal and errors; one Optimizer base under
every optimizer class (MXNet's faces included)."""
import ast
import importlib
import os
import pathlib
import pickle
import sys

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
from minpy.dispatch.transfer import data_on
from minpy.kernels import optim as fused
from minpy.mxnet import optimizer as mx_optimizer
from minpy.nn import optim
from minpy.nn.optim import schedule
from minpy.testing import check_grads

from _standin import standin_gpu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "..", "benchmarks"))
import bench_optim  # noqa: E402
from _host import host as _host

RULES = ("sgd", "sgd_momentum", "nesterov", "rmsprop", "adagrad", "adam", "adamw")
HAS_NUMBA = fused.numba_available()
BACKENDS = ("numpy", "numba") if HAS_NUMBA else ("numpy",)


# ---------------------------------------------------------------- the reference
def reference(rule, w, state, g, t, lr=0.01, momentum=0.9, decay_rate=0.99, epsilon=1e-8,
              beta1=0.9, beta2=0.999, weight_decay=0.0, clip=None):
    """One update of ``rule`` in float64 NumPy, textbook formulas; returns (w, state)."""
    w, g = w.astype(numpy.float64), g.astype(numpy.float64)
    if clip is not None:
        g = numpy.clip(g, -clip, clip)
    if rule != "adamw":
        g = g + weight_decay * w
    s = dict(state)
    if rule == "sgd":
        return w - lr * g, s
    if rule in ("sgd_momentum", "nesterov"):
        v = momentum * s.get("velocity", 0.0) - lr * g
        s["velocity"] = v
        return (w + momentum * v - lr * g if rule == "nesterov" else w + v), s
    if rule in ("rmsprop", "adagrad"):
        c = s.get("cache", 0.0)
        c = c + g * g if rule == "adagrad" else decay_rate * c + (1 - decay_rate) * g * g
        s["cache"] = c
        return w - lr * g / (numpy.sqrt(c) + epsilon), s
    m = beta1 * s.get("m", 0.0) + (1 - beta1) * g
    v = beta2 * s.get("v", 0.0) + (1 - beta2) * g * g
    s.update(m=m, v=v)
    if rule == "adamw":
        w = w * (1 - lr * weight_decay)
    return w - lr * (m / (1 - beta1 ** t)) / (numpy.sqrt(v / (1 - beta2 ** t)) + epsilon), s


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-6) if numpy.dtype(dtype) == numpy.float32 else \
        dict(rtol=1e-10, atol=1e-12)


def _grads(rng, shapes, dtype, steps):
    return [[(rng.standard_normal(s) * 2).astype(dtype) for s in shapes] for _ in range(steps)]


SHAPES = st.lists(st.lists(st.integers(1, 40), min_size=0, max_size=3).map(tuple),
                  min_size=1, max_size=4)


@given(rule=st.sampled_from(RULES), dtype=st.sampled_from(["float32", "float64"]),
       shapes=SHAPES, backend=st.sampled_from(BACKENDS),
       wd=st.sampled_from([0.0, 0.05]), clip=st.sampled_from([None, 0.5]),
       seed=st.integers(0, 2 ** 16))
def test_both_forms_match_the_numpy_reference(rule, dtype, shapes, backend, wd, clip, seed):
    rng = numpy.random.default_rng(seed)
    w0 = [rng.standard_normal(s).astype(dtype) for s in shapes]
    params = {f"p{i}": minpy.array(w) for i, w in enumerate(w0)}
    opt = optim.create(rule, learning_rate=0.01, weight_decay=wd, clip_gradient=clip,
                       backend=backend)
    configs = [{"learning_rate": 0.01, "weight_decay": wd, "clip_gradient": clip}
               for _ in shapes]
    fw = [minpy.array(w) for w in w0]
    ref = [(w.astype(numpy.float64), {}) for w in w0]
    fn = getattr(optim, rule)
    for t, gs in enumerate(_grads(rng, shapes, dtype, 3), start=1):
        opt.step(params, {f"p{i}": minpy.array(g) for i, g in enumerate(gs)})
        for i, g in enumerate(gs):
            fw[i], configs[i] = fn(fw[i], minpy.array(g), configs[i])
            ref[i] = reference(rule, *ref[i], g, t, weight_decay=wd, clip=clip)
    for i in range(len(shapes)):
        got, fun = params[f"p{i}"], fw[i]
        assert got.dtype == fun.dtype == numpy.dtype(dtype) and got.shape == shapes[i]
        numpy.testing.assert_allclose(_host(got), ref[i][0], **_tol(dtype))
        numpy.testing.assert_allclose(_host(fun), ref[i][0], **_tol(dtype))
        # the fused kernels run the functional rule's operations in its order
        numpy.testing.assert_allclose(_host(got), _host(fun), rtol=1e-6, atol=1e-7)
    assert opt.num_update == 3


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("threads", ["one", "all"])
@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.01, "clip_gradient": 1.5}])
@pytest.mark.parametrize("rule", RULES)
def test_fused_numpy_and_functional_agree_to_the_bit(rule, options, threads, monkeypatch):
    if threads == "all":          # small steps run on one thread; here the whole pool
        monkeypatch.setattr(fused, "PARALLEL_MIN", 0)
    rng = numpy.random.default_rng(3)
    shapes = [(70000,), (3, 5), (), (1,)]        # a tensor over several parallel chunks
    w0 = [rng.standard_normal(s).astype(numpy.float32) for s in shapes]
    runs = {b: optim.create(rule, learning_rate=0.02, backend=b, **options)
            for b in ("numba", "numpy")}
    params = {b: {f"p{i}": minpy.array(w) for i, w in enumerate(w0)} for b in runs}
    fw, cfg = [minpy.array(w) for w in w0], [{"learning_rate": 0.02, **options} for _ in w0]
    for gs in _grads(rng, shapes, numpy.float32, 3):
        for b, opt in runs.items():
            opt.step(params[b], {f"p{i}": g for i, g in enumerate(gs)})
        for i, g in enumerate(gs):
            fw[i], cfg[i] = getattr(optim, rule)(fw[i], minpy.array(g), cfg[i])
    plans = [p for p in vars(runs["numba"]).values() if isinstance(p, dict)]
    one_thread = [v.one_thread for d in plans for v in d.values() if isinstance(v, fused.NumbaPlan)]
    assert one_thread == [threads == "one"]
    for i in range(len(shapes)):
        a, b = _host(params["numba"][f"p{i}"]), _host(params["numpy"][f"p{i}"])
        numpy.testing.assert_array_equal(a, b)
        numpy.testing.assert_array_equal(a, _host(fw[i]))


@pytest.mark.parametrize("rule", ["rmsprop", "adagrad", "adam", "adamw"])
def test_functional_rules_agree_with_the_fused_step_when_pow_is_inexact(
        rule, standin_gpu, monkeypatch):
    """A device's pow is not correctly rounded: CuPy's float32 ``g ** 2`` is CUDA's
    ``powf(g, 2.0f)``, an ulp off ``g * g`` for ~2% of values on an H200, where NumPy's
    ``**`` squares. The fused kernels square by multiplying, so the functional rules must
    too to agree with them to the bit. The stand-in's power is made one ulp high here."""
    exact = numpy.power
    monkeypatch.setattr(numpy, "power",
                        lambda *a, **k: numpy.nextafter(exact(*a, **k), numpy.inf))
    rng = numpy.random.default_rng(5)
    w0, gs = rng.standard_normal(64).astype(numpy.float32), _grads(rng, [(64,)], numpy.float32, 2)
    with minpy.gpu(0):
        opt = optim.create(rule, learning_rate=0.02, backend="numpy")
        params, fw, cfg = {"w": minpy.array(w0)}, minpy.array(w0), {"learning_rate": 0.02}
        for (g,) in gs:
            opt.step(params, {"w": minpy.array(g)})
            fw, cfg = getattr(optim, rule)(fw, minpy.array(g), cfg)
        assert standin_gpu.owns(fw._data) and standin_gpu.owns(params["w"]._data)
    numpy.testing.assert_array_equal(_host(params["w"]), _host(fw))


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
def test_numba_plan_checks_what_its_kernel_reads():
    w, s = numpy.ones(5, numpy.float32), numpy.zeros(5, numpy.float32)
    plan = fused.NumbaPlan([w], [(s,)])
    h = fused.hyper("momentum", 0.5, params=(0.9,))
    for bad in (numpy.ones(4, numpy.float32), numpy.ones(5), numpy.ones(10, numpy.float32)[::2]):
        with pytest.raises(ValueError, match="gradient 0 must be a C-contiguous float32"):
            plan.run("momentum", [bad], h)
    with pytest.raises(ValueError, match="hyper vector of the weights' dtype"):
        plan.run("adam", [numpy.ones(5, numpy.float32)], h)          # too short for adam
    plan.run("momentum", [numpy.ones(5, numpy.float32)], h)
    numpy.testing.assert_array_equal(w, numpy.full(5, 0.5, numpy.float32))
    numpy.testing.assert_array_equal(s, numpy.full(5, -0.5, numpy.float32))


def test_mixed_dtypes_views_and_update_counts():
    rng = numpy.random.default_rng(4)
    base = minpy.array(rng.standard_normal((4, 6)))
    params = {"f32": minpy.array(rng.standard_normal(7).astype(numpy.float32)),
              "f64": minpy.array(rng.standard_normal((2, 3))),
              "view": base.T}                        # not contiguous: updated through the view
    ref = {k: (_host(v).astype(numpy.float64), {}) for k, v in params.items()}
    opt = optim.Adam(learning_rate=0.05)
    counts = {k: 0 for k in params}
    for step in range(3):
        grads = {k: rng.standard_normal(v.shape) for k, v in params.items()}
        if step == 1:                                # one parameter gets an extra update
            opt.update("f64", params["f64"], grads["f64"])
            counts["f64"] += 1
            ref["f64"] = reference("adam", *ref["f64"], grads["f64"], counts["f64"], lr=0.05)
        opt.step(params, grads)
        for k in params:
            counts[k] += 1
            ref[k] = reference("adam", *ref[k], grads[k], counts[k], lr=0.05)
    for k, v in params.items():
        numpy.testing.assert_allclose(_host(v), ref[k][0], **_tol(v.dtype))
    numpy.testing.assert_allclose(_host(base).T, ref["view"][0], **_tol(base.dtype))
    assert opt.num_update == 4 and params["f32"].dtype == numpy.float32


def test_gradients_as_host_arrays_and_other_float_dtypes():
    w = minpy.array(numpy.ones(3, numpy.float32))
    opt = optim.SGD(learning_rate=0.5)
    opt.step({"w": w}, {"w": numpy.array([1.0, 2.0, 4.0])})       # float64 grad: cast
    numpy.testing.assert_array_equal(_host(w), [0.5, 0.0, -1.0])
    opt.update("w", w, [2, 2, 2])                                  # ints cast as NumPy does
    numpy.testing.assert_array_equal(_host(w), [-0.5, -1.0, -2.0])
    h = minpy.array(numpy.ones(4, numpy.float16))                  # not a numba dtype
    optim.SGD(learning_rate=0.25).step({"h": h}, {"h": numpy.ones(4, numpy.float16)})
    numpy.testing.assert_array_equal(_host(h), numpy.full(4, 0.75, numpy.float16))


# ---------------------------------------------------------------- in place
def test_step_updates_the_same_objects_in_their_buffers():
    host = numpy.arange(6, dtype=numpy.float32)
    w = minpy.array(host.copy())
    buf = w._data
    before = id(w)
    optim.SGDMomentum(learning_rate=0.1).step({"w": w}, {"w": minpy.ones(6, dtype="float32")})
    assert id(w) == before and w._data is buf
    numpy.testing.assert_allclose(numpy.asarray(w), host - 0.1, rtol=1e-6)


def test_step_invalidates_cached_device_copies(standin_gpu):
    w = minpy.array(numpy.ones(5, numpy.float32))          # on the CPU
    gpu = minpy.gpu(0)
    first = data_on(w, gpu)                                 # cached device copy
    assert data_on(w, gpu) is first and w._copies
    optim.SGD(learning_rate=1.0).step({"w": w}, {"w": numpy.full(5, 0.5, numpy.float32)})
    assert not w._copies
    fresh = standin_gpu.to_host(data_on(w, gpu))
    numpy.testing.assert_array_equal(fresh, numpy.full(5, 0.5, numpy.float32))


@pytest.mark.parametrize("rule", ["sgd_momentum", "adam"])
def test_parameters_on_a_device_are_updated_there(standin_gpu, rule):
    rng = numpy.random.default_rng(5)
    w0 = rng.standard_normal((3, 4)).astype(numpy.float32)
    grads = _grads(rng, [(3, 4)], numpy.float32, 3)
    with minpy.gpu(1):
        wg = minpy.array(w0)
    wc = minpy.array(w0)
    og = optim.create(rule, learning_rate=0.1, clip_norm=1.0)
    oc = optim.create(rule, learning_rate=0.1, clip_norm=1.0, backend="numpy")
    for gs in grads:
        og.step({"w": wg}, {"w": gs[0]})
        oc.step({"w": wc}, {"w": gs[0]})
    assert wg.context == minpy.gpu(1) and og.num_update == 3
    numpy.testing.assert_allclose(_host(wg), _host(wc), rtol=1e-6)
    saved = og.state_dict()
    assert all(type(a) is numpy.ndarray for s in saved["state"].values()
               for k, a in s.items() if k != "t")
    fresh = optim.create(rule, learning_rate=0.1, clip_norm=1.0)
    fresh.load_state_dict(saved)
    wg2 = wg.copy()
    og.step({"w": wg}, {"w": grads[0][0]})
    fresh.step({"w": wg2}, {"w": grads[0][0]})
    numpy.testing.assert_array_equal(_host(wg), _host(wg2))


def test_waits_for_pending_asynchronous_writes():
    x = minpy.array(numpy.ones(1 << 17, numpy.float32))
    with minpy.async_mode():
        w = x * 3                      # pushed to the engine
        optim.SGD(learning_rate=1.0).step({"w": w}, {"w": x})
    numpy.testing.assert_array_equal(_host(w), numpy.full(1 << 17, 2.0, numpy.float32))


def test_a_traced_parameter_is_refused():
    w = minpy.array(numpy.ones(3))
    opt = optim.SGD()

    def inside(p):
        opt.step({"w": p}, {"w": numpy.ones(3)})
        return minpy.sum(p * p)
    with pytest.raises(RuntimeError, match="'w' is traced by an active gradient tape"):
        minpy.grad(inside)(w)

    def saves_w(x):
        y = minpy.sum(x * w)           # the tape keeps w for the backward of multiply
        opt.update("w", w, numpy.ones(3))
        return y
    with pytest.raises(RuntimeError, match="parameter 'w'.*saved for the backward"):
        minpy.grad(saves_w)(minpy.array(numpy.ones(3)))
    numpy.testing.assert_array_equal(_host(w), numpy.ones(3))


# ---------------------------------------------------------------- options
def test_elementwise_clip_and_global_norm_rescale():
    w = {"a": minpy.zeros(3), "b": minpy.zeros(2)}
    g = {"a": numpy.array([3.0, -0.2, 0.0]), "b": numpy.array([-4.0, 0.1])}
    optim.SGD(learning_rate=1.0, clip_gradient=0.5).step(w, g)
    numpy.testing.assert_array_equal(_host(w["a"]), [-0.5, 0.2, 0.0])
    numpy.testing.assert_array_equal(_host(w["b"]), [0.5, -0.1])
    w = {"a": minpy.zeros(3), "b": minpy.zeros(2)}
    norm = numpy.sqrt(sum((v ** 2).sum() for v in g.values()))
    optim.SGD(learning_rate=1.0, clip_norm=1.0).step(w, g)
    for k in g:
        numpy.testing.assert_allclose(_host(w[k]), -g[k] / (norm + 1e-6), rtol=1e-12)
    w = {"a": minpy.zeros(3)}
    optim.SGD(learning_rate=1.0, clip_norm=100.0).step(w, {"a": g["a"]})   # below: untouched
    numpy.testing.assert_array_equal(_host(w["a"]), -g["a"])


def test_weight_decay_coupled_and_decoupled():
    w = minpy.array(numpy.array([1.0, -2.0]))
    optim.SGD(learning_rate=0.1, weight_decay=0.5).step({"w": w}, {"w": numpy.zeros(2)})
    numpy.testing.assert_allclose(_host(w), [0.95, -1.9], rtol=1e-12)
    for backend in BACKENDS:                   # zero gradient: AdamW only decays
        w = minpy.array(numpy.array([1.0, -2.0]))
        opt = optim.AdamW(learning_rate=0.1, weight_decay=0.5, backend=backend)
        opt.step({"w": w}, {"w": numpy.zeros(2)})
        numpy.testing.assert_allclose(_host(w), [0.95, -1.9], rtol=1e-12)
    assert optim.AdamW().weight_decay == 0.01


# ---------------------------------------------------------------- schedules
def test_schedules_values_and_round_trip():
    s = schedule.StepSchedule(2, factor=0.5)
    assert [s(n, 1.0) for n in range(5)] == [1.0, 1.0, 0.5, 0.5, 0.25]
    c = schedule.CosineSchedule(4, final_lr=0.1)
    numpy.testing.assert_allclose([c(n, 1.1) for n in (0, 2, 4, 9)], [1.1, 0.6, 0.1, 0.1])
    w = schedule.WarmupSchedule(2, after=c)
    numpy.testing.assert_allclose([w(n, 1.1) for n in range(5)], [0.55, 1.1, 1.1,
                                                               0.6 + 0.5 * numpy.cos(numpy.pi / 4),
                                                               0.6])
    assert schedule.WarmupSchedule(3)(7, 2.0) == 2.0
    for sch in (s, c, w, schedule.WarmupSchedule(1)):
        assert schedule.from_state_dict(pickle.loads(pickle.dumps(sch.state_dict()))) == sch
    with pytest.raises(ValueError, match="step_size must be >= 1"):
        schedule.StepSchedule(0)
    with pytest.raises(TypeError, match="after must be a Schedule"):
        schedule.WarmupSchedule(2, after=lambda n, lr: lr)
    with pytest.raises(ValueError, match="'type' one of"):
        schedule.from_state_dict({"type": "Nope"})


def test_an_optimizer_follows_its_schedule_and_rescales_it():
    w = minpy.zeros(1)
    opt = optim.SGD(learning_rate=1.0, lr_schedule=schedule.StepSchedule(2, factor=0.5))
    moves = []
    for _ in range(5):
        before = _host(w).copy()
        opt.step({"w": w}, {"w": numpy.ones(1)})
        moves.append(float(before[0] - _host(w)[0]))
    assert moves == [1.0, 1.0, 0.5, 0.5, 0.25] and opt.learning_rate == 0.25
    opt.learning_rate *= 0.5                      # the Solver's lr_decay: the schedule scales
    assert opt.base_learning_rate == 0.5 and opt.learning_rate == 0.125
    plain = optim.SGD(learning_rate=0.3)
    plain.learning_rate = 0.2
    assert plain.learning_rate == plain.base_learning_rate == 0.2
    zero = optim.SGD(learning_rate=1.0, lr_schedule=schedule.CosineSchedule(1))
    zero.step({"w": w}, {"w": numpy.ones(1)})
    with pytest.raises(ValueError, match="gives learning rate 0"):
        zero.learning_rate = 0.5


# ---------------------------------------------------------------- saving
@pytest.mark.parametrize("rule", RULES)
def test_state_dict_round_trip_continues_bit_for_bit(rule):
    rng = numpy.random.default_rng(6)
    shapes = [(5, 3), (4,)]
    grads = _grads(rng, shapes, numpy.float32, 5)
    sched = schedule.WarmupSchedule(2, after=schedule.CosineSchedule(10))
    w0 = [rng.standard_normal(s).astype(numpy.float32) for s in shapes]
    a = {f"p{i}": minpy.array(w) for i, w in enumerate(w0)}
    opt = optim.create(rule, learning_rate=0.01, lr_schedule=sched, clip_gradient=3.0)
    for gs in grads[:3]:
        opt.step(a, dict(zip(a, gs)))
    saved = pickle.loads(pickle.dumps(opt.state_dict()))
    b = {k: minpy.array(_host(v)) for k, v in a.items()}
    fresh = optim.create(rule, learning_rate=123.0)
    fresh.load_state_dict(saved)
    assert fresh.config() == opt.config() and fresh.num_update == 3
    assert fresh.learning_rate == opt.learning_rate
    for gs in grads[3:]:
        opt.step(a, dict(zip(a, gs)))
        fresh.step(b, dict(zip(b, gs)))
    for k in a:
        numpy.testing.assert_array_equal(_host(a[k]), _host(b[k]))
    again = opt.state_dict()
    saved_again = fresh.state_dict()
    for k in again["state"]:
        for s, v in again["state"][k].items():
            numpy.testing.assert_array_equal(v, saved_again["state"][k][s])


def test_state_dict_is_a_copy_and_load_checks_it():
    w = minpy.array(numpy.ones(3))
    opt = optim.Adam()
    opt.step({"w": w}, {"w": numpy.ones(3)})
    d = opt.state_dict()
    m = d["state"]["w"]["m"].copy()
    opt.step({"w": w}, {"w": numpy.ones(3)})
    numpy.testing.assert_array_equal(d["state"]["w"]["m"], m)       # not aliased
    with pytest.raises(ValueError, match="update rule 'adam', this optimizer is 'sgd'"):
        optim.SGD().load_state_dict(d)
    bad = pickle.loads(pickle.dumps(d))
    del bad["state"]["w"]["v"]
    with pytest.raises(ValueError, match=r"lacks \['v'\]"):
        optim.Adam().load_state_dict(bad)
    other = optim.Adam()
    other.load_state_dict(d)
    with pytest.raises(ValueError, match=r"state 'm' of parameter 'w' has shape \(3,\).*"
                                         r"parameter has shape \(2,\)"):
        other.step({"w": minpy.ones(2)}, {"w": numpy.ones(2)})


# ---------------------------------------------------------------- errors
def test_errors_name_what_is_wrong():
    w = {"w": minpy.ones((2, 3))}
    with pytest.raises(ValueError, match=r"unknown update_rule 'sgdd'.*'adam', 'adamw'"):
        optim.create("sgdd")
    with pytest.raises(TypeError, match=r"unknown config key\(s\) \['momentum'\] for 'adam'"):
        optim.create("adam", momentum=0.9)
    with pytest.raises(KeyError, match=r"missing \['w'\]"):
        optim.SGD().step(w, {})
    with pytest.raises(KeyError, match=r"unexpected \['x'\]"):
        optim.SGD().step(w, {"w": numpy.ones((2, 3)), "x": numpy.ones(1)})
    with pytest.raises(ValueError, match=r"parameter 'w' has shape \(3, 2\), but the "
                                         r"parameter has shape \(2, 3\)"):
        optim.Adam().step(w, {"w": numpy.ones((3, 2))})
    with pytest.raises(TypeError, match="parameter 'w' has dtype complex128"):
        optim.Adam().step(w, {"w": numpy.ones((2, 3), complex)})
    with pytest.raises(TypeError, match="parameter 'i' has dtype int64"):
        optim.SGD().step({"i": minpy.array([1, 2])}, {"i": numpy.ones(2)})
    ro = numpy.ones(2)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="parameter 'r' is a read-only array"):
        optim.Adam().step({"r": minpy.asarray(ro)}, {"r": numpy.ones(2)})
    with pytest.raises(TypeError, match="parameter 'h' must be a minpy.Array"):
        optim.SGD().step({"h": numpy.ones(2)}, {"h": numpy.ones(2)})
    with pytest.raises(ValueError, match=r"momentum must be >= 0 and < 1, got 1.5"):
        optim.SGDMomentum(momentum=1.5)
    with pytest.raises(TypeError, match="learning_rate must be a real number"):
        optim.Adam(learning_rate="fast")
    with pytest.raises(ValueError, match="clip_norm must be > 0"):
        optim.SGD(clip_norm=0)
    with pytest.raises(ValueError, match="backend must be one of"):
        optim.SGD(backend="cuda")
    with pytest.raises(ValueError, match="nesterov=False"):
        optim.create("nesterov", nesterov=False)
    with pytest.raises(ValueError, match=r"optim.adam: dw has shape \(3,\) but w has shape"):
        optim.adam(minpy.ones(2), minpy.ones(3))


def test_without_numba_auto_falls_back_and_numba_backend_names_the_fix(monkeypatch):
    monkeypatch.setattr(fused, "_NUMBA", {"error": ImportError('pip install numba')})
    assert not fused.numba_available()
    with pytest.raises(ImportError, match=r'pip install numba'):
        optim.Adam(backend="numba")
    w = minpy.array(numpy.ones(4, numpy.float32))
    opt = optim.Adam(learning_rate=0.1)
    opt.step({"w": w}, {"w": numpy.ones(4, numpy.float32)})
    assert not opt._plans                           # the NumPy path ran
    numpy.testing.assert_allclose(_host(w), numpy.full(4, 0.9), rtol=1e-6)


def test_create_returns_the_rule_with_minpy_keys():
    opt = optim.create("nesterov", learning_rate=0.5, momentum=0.8)
    assert isinstance(opt, optim.SGDMomentum) and opt.nesterov and opt.momentum == 0.8
    assert optim.create("rmsprop").config() == {
        "learning_rate": 0.01, "weight_decay": 0.0, "clip_gradient": None, "clip_norm": None,
        "decay_rate": 0.99, "epsilon": 1e-8}
    assert "Adam(learning_rate=0.001" in repr(optim.create("adam"))


# ---------------------------------------------------------------- functional rules
def test_functional_rules_keep_minpy_state_in_config():
    w, dw = minpy.ones(3), minpy.full(3, 0.5)
    _, cfg = optim.adam(w, dw)
    assert cfg["t"] == 1 and set(cfg) >= {"learning_rate", "beta1", "beta2", "epsilon", "m",
                                          "v", "t"}
    _, cfg = optim.nesterov(w, dw)
    assert cfg["nesterov"] is True and cfg["velocity"].shape == (3,)
    _, cfg = optim.rmsprop(w, dw, {"decay_rate": 0.5})
    numpy.testing.assert_allclose(_host(cfg["cache"]), numpy.full(3, 0.125))


@pytest.mark.parametrize("rule", ["sgd_momentum", "rmsprop", "adam", "adamw"])
def test_functional_rules_are_differentiable(rule):
    rng = numpy.random.default_rng(7)
    w = minpy.array(rng.standard_normal((2, 3)))
    dw = minpy.array(rng.standard_normal((2, 3)))

    def next_w(w, dw):
        state = {"learning_rate": 0.1, "weight_decay": 0.1, "velocity": minpy.full((2, 3), 0.3),
                 "cache": minpy.full((2, 3), 0.2)}
        return getattr(optim, rule)(w, dw, state)[0]
    check_grads(next_w, w, dw, order=2)


# ---------------------------------------------------------------- the benchmark
@pytest.mark.parametrize("rule", ["adam", "sgd_momentum"])
def test_benchmark_contenders_compute_the_reference(rule):
    problem = bench_optim.make_problem(n_tensors=6, total=5000, seed=1)
    bench_optim.check_contenders(rule, problem)


# ---------------------------------------------------------------- one hierarchy
def test_there_is_one_optimizer_base_class():
    base = optim.Optimizer
    files = ("optimizer", "sgd", "momentum", "rmsprop", "adagrad", "adam", "rules")
    modules = [importlib.import_module(f"minpy.nn.optim.{f}") for f in files] + [mx_optimizer]
    classes = {v for m in modules for v in vars(m).values()
               if isinstance(v, type) and v.__module__ == m.__name__
               and v.__name__ not in ("_Item", "Updater")}     # MXNet's Updater applies one
    assert len(classes) >= 12
    for cls in classes:
        assert issubclass(cls, base), cls          # MXNet's faces included
    assert mx_optimizer.Optimizer.__bases__ == (base,)
    # in the source, the only class named *Optimizer that derives from no other is the base
    root = pathlib.Path(minpy.__file__).parent
    roots = [f"{p.relative_to(root)}:{node.name}" for p in sorted(root.rglob("*.py"))
             for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.ClassDef) and node.name.endswith("Optimizer")
             and not node.bases]
    assert roots == ["nn/optim/optimizer.py:Optimizer"]
