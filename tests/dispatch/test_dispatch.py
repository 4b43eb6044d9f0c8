"""Device dispatch: placement, policies and counted, cached transfers.

Runs on a strict stand-in GPU (tests/_standin.py). The portable checks and
NumPy-equivalence cases (``EQUIV``, ``check_equivalence``) and the cache walk
(``check_cache_steps``) are written once, backend-agnostic: tests/dispatch/test_gpu_cupy.py
runs them again on real CuPy.
"""
import numpy
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import minpy
from minpy.dispatch import stats

from _standin import StandinArray, installed, standin_gpu  # noqa: F401
from _dispatch_checks import (CPU, GPU0, GPU1, PORTABLE, Copies, cpu_array, gpu_array,
                             on_gpu)


# ====================================================================== NumPy equivalence
def _inputs(rng):
    a = rng.standard_normal((3, 4))
    return {"a": a, "b": rng.standard_normal((3, 4)), "v": rng.standard_normal(3),
            "sq": rng.standard_normal((3, 3)) + 3 * numpy.eye(3),
            "ai": rng.integers(-5, 5, (3, 4)), "a32": a.astype(numpy.float32)}


# name: (function of xp and named inputs, input names, placed where its input lives)
EQUIV = {
    "add_broadcast": (lambda xp, a, v: xp.add(a, v[:, None]), ("a", "v"), False),
    "expression": (lambda xp, a, b: a * b + 1 - a / (b * b + 1), ("a", "b"), False),
    "exp_log": (lambda xp, a: xp.log(xp.exp(a) + 1), ("a",), False),
    "float32_ops": (lambda xp, a32: xp.sqrt(a32 * a32) + 1, ("a32",), False),
    "sum_axis": (lambda xp, a: xp.sum(a, axis=0), ("a",), False),
    "mean_keepdims": (lambda xp, a: xp.mean(a, axis=1, keepdims=True), ("a",), False),
    "var_ddof": (lambda xp, a: xp.var(a, ddof=1), ("a",), False),
    "max_0d": (lambda xp, a: xp.max(a), ("a",), False),
    "argmax": (lambda xp, a: xp.argmax(a, axis=1), ("a",), False),
    "cumsum_int": (lambda xp, ai: xp.cumsum(ai), ("ai",), False),
    "maximum_int": (lambda xp, ai: xp.maximum(ai, 2), ("ai",), False),
    "isnan_bool": (lambda xp, a: xp.isnan(xp.log(a)), ("a",), False),
    "astype": (lambda xp, a: (a * 3).astype(xp.int32), ("a",), False),
    "concatenate": (lambda xp, a, b: xp.concatenate([a, b], axis=0), ("a", "b"), False),
    "stack": (lambda xp, a, b: xp.stack((a, b), axis=1), ("a", "b"), False),
    "where": (lambda xp, a, b: xp.where(a > 0, a, b), ("a", "b"), False),
    "matmul": (lambda xp, a, b: a @ b.T, ("a", "b"), False),
    "sort": (lambda xp, a: xp.sort(a, axis=1), ("a",), False),
    "clip": (lambda xp, a: xp.clip(a, -0.5, 0.5), ("a",), False),
    "einsum": (lambda xp, a, b: xp.einsum("ij,kj->ik", a, b), ("a", "b"), False),
    "linalg.inv": (lambda xp, sq: xp.linalg.inv(sq), ("sq",), False),
    "linalg.solve": (lambda xp, sq, v: xp.linalg.solve(sq, v), ("sq", "v"), False),
    "linalg.norm": (lambda xp, a: xp.linalg.norm(a), ("a",), False),
    "linalg.slogdet": (lambda xp, sq: tuple(xp.linalg.slogdet(sq)), ("sq",), False),
    "fft": (lambda xp, a: xp.fft.fft(a, axis=1), ("a",), False),
    "reshape_T": (lambda xp, a: xp.reshape(a, (4, 3)).T, ("a",), True),
    "fancy_index": (lambda xp, a: a[[0, 2], 1:], ("a",), True),
    "bool_mask": (lambda xp, a: a[a > 0], ("a",), True),
}

_RTOL = {"f": {4: 1e-5, 8: 1e-10}, "c": {8: 1e-5, 16: 1e-10}}


def assert_matches(got, want):
    """``got`` (minpy result) equals NumPy's ``want``: type, shape, dtype, values."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_matches(g, w)
        return
    want = numpy.asarray(want)
    assert isinstance(got, minpy.Array), type(got)
    h = got.asnumpy()
    assert h.shape == want.shape and h.dtype == want.dtype, (h.shape, h.dtype, want.dtype)
    rtol = _RTOL.get(want.dtype.kind, {}).get(want.dtype.itemsize)
    if rtol is None:
        numpy.testing.assert_array_equal(h, want)
    else:
        numpy.testing.assert_allclose(h, want, rtol=rtol, atol=rtol)


def _contexts(r):
    return [c for e in r for c in _contexts(e)] if isinstance(r, tuple) else [r.context]


def check_equivalence(name, placement):
    """Run EQUIV[name] on NumPy and on minpy with inputs on ``placement`` ('gpu'/'cpu')."""
    fn, names, self_placed = EQUIV[name]
    data = _inputs(numpy.random.default_rng(7))
    with numpy.errstate(invalid="ignore"):       # log of negatives
        want = fn(numpy, *[data[n] for n in names])
    args = [minpy.array(data[n], ctx=GPU0 if placement == "gpu" else CPU) for n in names]
    got = fn(minpy, *args)
    assert_matches(got, want)
    expected_ctx = CPU if (self_placed and placement == "cpu") else GPU0
    assert set(_contexts(got)) == {expected_ctx}
    assert stats()["fallbacks"] == {}


# ====================================================================== cache walks
_PLACES = {"cpu": CPU, "gpu0": GPU0, "gpu1": GPU1}

_WRITES = {
    "setitem": lambda x, v: x.__setitem__(0, v),
    "inplace": lambda x, v: x.__iadd__(v),
    "view": lambda x, v: x[1:].__setitem__(0, v),
    "out": lambda x, v: minpy.multiply(x, v, out=x),
    "fill": lambda x, v: x.fill(v),
    "ufunc_at": lambda x, v: minpy.add.at(x, [1], v),
}
_SHADOW = {
    "setitem": lambda h, v: h.__setitem__(0, v), "inplace": lambda h, v: h.__iadd__(v),
    "view": lambda h, v: h.__setitem__(1, v), "out": lambda h, v: numpy.multiply(h, v, out=h),
    "fill": lambda h, v: h.fill(v), "ufunc_at": lambda h, v: numpy.add.at(h, [1], v),
}


def check_cache_steps(backend, home, steps):
    """Run (step, value) pairs on one array living on ``home``; after each use the
    values must be current, and a copy must happen exactly when the other side is stale."""
    shadow = numpy.arange(4.0)
    x = minpy.array(shadow, ctx=_PLACES[home])
    other = "use_host" if home == "gpu0" else "use_gpu"
    stale = True                          # x's copy on the other side
    c = Copies(backend)
    for step, v in steps:
        if step in _WRITES:
            _WRITES[step](x, v)
            _SHADOW[step](shadow, v)
            stale = True
            c.expect()
            continue
        with minpy.policy("only_cpu" if step == "use_host" else "prefer_gpu"):
            r = x * 1.0
        copied = int(step == other and stale)
        if step == other:
            stale = False
        c.expect(**{("d2h" if home == "gpu0" else "h2d"): copied})
        assert r.context == (CPU if step == "use_host" else GPU0)
        assert r.asnumpy().tolist() == shadow.tolist()
        c._mark()
    assert x.asnumpy().tolist() == shadow.tolist()


CACHE_STEPS = [("use_gpu", 0.0), ("use_host", 0.0), ("setitem", 2.0), ("use_host", 0.0),
               ("use_gpu", 0.0), ("use_gpu", 0.0), ("view", -1.0), ("inplace", 3.0),
               ("use_host", 0.0), ("use_gpu", 0.0), ("ufunc_at", 1.0), ("out", 2.0),
               ("fill", 5.0), ("use_gpu", 0.0), ("use_host", 0.0), ("use_host", 0.0)]


# ====================================================================== tests
@pytest.mark.parametrize("check", list(PORTABLE.values()), ids=list(PORTABLE))
def test_portable(standin_gpu, check):
    check(standin_gpu)


@pytest.mark.parametrize("placement", ["gpu", "cpu"])
@pytest.mark.parametrize("name", list(EQUIV))
def test_numpy_equivalence(standin_gpu, name, placement):
    with numpy.errstate(invalid="ignore"):
        check_equivalence(name, placement)


# ====================================================================== stand-in only
def test_standin_refuses_implicit_host_conversion(standin_gpu):
    b = standin_gpu
    a = b.from_host(numpy.arange(3.0), 0)
    for convert in (numpy.asarray, float, int, bool, list, lambda v: v.tolist(),
                    lambda v: numpy.add(v, 1), numpy.from_dlpack):
        with pytest.raises((TypeError, BufferError)):
            convert(a)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        b.xp.add(a, numpy.ones(3))
    with pytest.raises(TypeError, match="minpy.Array"):
        b.xp.sum(minpy.zeros(3))
    with pytest.raises(ValueError, match="device"):
        b.xp.add(a, b.from_host(numpy.ones(3), 1))
    assert b.lookup("median") is None and b.lookup("linalg.lstsq") is None
    assert b.lookup("sum") is not None and b.lookup("add.reduce") is not None
    v = a[1:]
    assert v.base is a and v[1:].base is a and b.xp.reshape(a, (3, 1)).base is a
    assert b.xp.asarray(a) is a and b.xp.sum(a).shape == ()
    assert (b.h2d, b.d2h) == (2, 0)
    assert b.to_host(v).tolist() == [1, 2] and b.d2h == 1


def test_gpu_results_hold_standin_arrays(standin_gpu):
    x = cpu_array([1.0, 2])
    for r in (x + 1, minpy.sum(x), minpy.linalg.norm(x), minpy.stack([x, x])):
        assert type(r._data) is StandinArray and r._data.device_id == 0


def test_fallback_copies_each_gpu_input_once(standin_gpu):
    rng = numpy.random.default_rng(0)
    a, y = rng.standard_normal((5, 2)), rng.standard_normal(5)
    ga, gy, cy = gpu_array(a), gpu_array(y), cpu_array(y)
    c = Copies(standin_gpu)
    with pytest.warns(RuntimeWarning, match="linalg.lstsq"):
        r = minpy.linalg.lstsq(ga, gy, rcond=None)
    c.expect(d2h=2)
    r2 = minpy.linalg.lstsq(ga, cy, rcond=None)      # ga's host copy is cached; cy is home
    c.expect()
    want = numpy.linalg.lstsq(a, y, rcond=None)
    for got in (r, r2):
        assert got[0].context == CPU
        numpy.testing.assert_allclose(got[0].asnumpy(), want[0], rtol=1e-10)
    assert stats()["fallbacks"] == {"linalg.lstsq": 2}


def test_missing_writers_fall_back_and_write_back(standin_gpu):
    b = standin_gpu
    b.missing |= {"put", "cumsum", "copy", "zeros"}
    g = gpu_array([1.0, 2, 3])
    data = g._data
    c = Copies(b)
    with pytest.warns(RuntimeWarning, match="put"):
        minpy.put(g, [0, 2], [9.0, 7.0])
    c.expect(d2h=1, h2d=1)                 # a host scratch copy, written back
    assert g._data is data and g.asnumpy().tolist() == [9, 2, 7]
    o = gpu_array([0.0, 0, 0])
    c = Copies(b)
    with pytest.warns(RuntimeWarning, match="cumsum"):
        assert minpy.cumsum(g, out=o) is o
    c.expect(d2h=2, h2d=1)
    assert on_gpu(o) and o.asnumpy().tolist() == [9, 11, 18]
    with pytest.warns(RuntimeWarning, match="copy"):
        k = minpy.copy(g)                  # SELF: back on g's device
    assert on_gpu(k) and k.asnumpy().tolist() == [9, 2, 7]
    with pytest.warns(RuntimeWarning, match="zeros"):
        with minpy.gpu(1):
            z = minpy.zeros(2)             # CREATE: on the current context
    assert on_gpu(z, 1)
    assert stats()["fallbacks"] == {"put": 1, "cumsum": 1, "copy": 1, "zeros": 1}
    with minpy.policy("only_gpu"), pytest.raises(RuntimeError, match="put"):
        minpy.put(g, [0], [1.0])


def test_out_arrays_on_two_devices_raise(standin_gpu):
    g, x = gpu_array([5.0, 7]), cpu_array([0.0, 0])
    with pytest.raises(ValueError, match="different devices"):
        minpy.divmod(g, 2.0, out=(gpu_array([0.0, 0]), x))
    assert x.asnumpy().tolist() == [0, 0]


def test_positional_and_keyword_outputs_on_gpu(standin_gpu):
    g = gpu_array([1.5, -2.25])
    o1, o2 = gpu_array([0.0, 0]), gpu_array([0.0, 0])
    r = minpy.modf(g, o1, o2)
    assert r[0] is o1 and r[1] is o2
    assert o1.asnumpy().tolist() == [0.5, -0.25] and o2.asnumpy().tolist() == [1, -2]
    x = cpu_array([4.0, 5])
    with minpy.policy("only_cpu"):
        assert float(minpy.sum(o1)) == 0.25          # caches o1's host copy
    c = Copies(standin_gpu)
    minpy.copyto(dst=o1, src=x)            # the written array given by keyword
    c.expect(h2d=1)
    assert on_gpu(o1) and o1.asnumpy().tolist() == [4, 5]
    with minpy.policy("only_cpu"):
        assert float(minpy.sum(o1)) == 9             # the stale host copy was dropped


def test_device_is_current_while_working(standin_gpu):
    g1 = gpu_array([1.0, 2], device=1)
    standin_gpu.devices_entered.clear()
    r = minpy.exp(g1) + g1[0]
    assert on_gpu(r, 1) and set(standin_gpu.devices_entered) == {1}


def test_from_dlpack_keeps_the_device(standin_gpu):
    g = gpu_array([1.0, 2])
    d = minpy.from_dlpack(g)
    assert on_gpu(d)
    d[0] = 5.0
    assert g.asnumpy().tolist() == [5, 2]
    with pytest.raises(BufferError):
        numpy.from_dlpack(g)


# ====================================================================== properties

_BINARY = ["add", "subtract", "multiply", "maximum", "arctan2", "hypot"]


@settings(max_examples=30)
@given(data=st.data(), places=st.tuples(*[st.sampled_from(sorted(_PLACES))] * 2),
       op=st.sampled_from(_BINARY))
def test_binary_ops_any_placement(data, places, op):
    shape = data.draw(hnp.array_shapes(max_dims=3, max_side=4))
    elems = st.floats(-1e3, 1e3, allow_nan=False)
    a = data.draw(hnp.arrays(numpy.float64, shape, elements=elems))
    b = data.draw(hnp.arrays(numpy.float64, shape[-1:], elements=elems))   # broadcast
    with installed() as backend:
        xs = [minpy.array(v, ctx=_PLACES[p]) for v, p in zip((a, b), places)]
        c = Copies(backend)
        r = getattr(minpy, op)(*xs)
        gpus = [_PLACES[p] for p in places if p != "cpu"]
        where = gpus[0] if gpus else GPU0
        c.expect(h2d=places.count("cpu"), d2d=sum(g != where for g in gpus))
        assert r.context == where
        assert_matches(r, getattr(numpy, op)(a, b))


@given(home=st.sampled_from(["cpu", "gpu0"]),
       steps=st.lists(st.tuples(st.sampled_from(["use_gpu", "use_host", *_WRITES]),
                                st.integers(-5, 5).map(float)), max_size=10))
def test_copy_cache_follows_writes(home, steps):
    """Any sequence of writes and uses: values always current, copies only when stale."""
    with installed() as backend:
        check_cache_steps(backend, home, steps)
