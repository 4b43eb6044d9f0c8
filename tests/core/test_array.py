"""minpy.Array's attributes, methods and protocols, compared with numpy.ndarray."""
import contextlib
import copy
import operator
import pickle
import sys

import numpy
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import minpy as mp
from _strategies import general_path, gpu_tolerance, on_real_gpu, run_both
from _standin import installed
from _host import assert_result_type, host

DTYPES = [numpy.float64, numpy.float32, numpy.int64, numpy.int32, numpy.bool_,
          numpy.complex128]
NO_GPU = mp.num_gpus() == 0


def check(res, expected):
    """``res`` is a minpy Array with numpy's ``expected`` values, dtype and shape (for a
    NumPy scalar: the same scalar on the host, a 0-d Array on a device)."""
    if isinstance(expected, numpy.generic):
        assert_result_type(res, expected)
        numpy.testing.assert_array_equal(numpy.asarray(host(res)), expected)
        assert host(res).dtype == expected.dtype
        return
    assert isinstance(res, mp.Array), type(res)
    expected = numpy.asarray(expected)
    assert res.dtype == expected.dtype
    assert res.shape == expected.shape
    if expected.dtype.kind in "fc" and res.context.device_type != "cpu" and on_real_gpu():
        # CUDA's math library and summation order: a few ulps (tests/_strategies.py)
        rtol, atol = gpu_tolerance(expected, 0, 0)
        numpy.testing.assert_allclose(res.asnumpy(), expected, rtol=rtol, atol=atol)
        return
    numpy.testing.assert_array_equal(res.asnumpy(), expected)


def arrays(dtypes=DTYPES, min_dims=0, max_dims=3, min_side=0):
    """Small arrays of the given dtypes with finite values."""
    def one(dt):
        elems = None
        if numpy.dtype(dt).kind == "f":
            elems = st.floats(-100, 100, width=numpy.dtype(dt).itemsize * 8)
        elif numpy.dtype(dt).kind == "c":
            elems = st.complex_numbers(max_magnitude=100)
        elif numpy.dtype(dt).kind == "i":
            elems = st.integers(-100, 100)
        return hnp.arrays(dt, hnp.array_shapes(min_dims=min_dims, max_dims=max_dims,
                                               min_side=min_side, max_side=4),
                          elements=elems)
    return st.sampled_from(dtypes).flatmap(one)


# ------------------------------------------------------------------ attributes
@given(arrays())
def test_attributes_match_numpy(an):
    a = mp.array(an)
    for name in ("shape", "dtype", "ndim", "size", "itemsize", "nbytes"):
        assert getattr(a, name) == getattr(an, name), name
    check(a.T, an.T)
    check(a.real, an.real)
    check(a.imag, an.imag)
    if an.ndim >= 2:
        check(a.mT, an.mT)
    flat = list(a.flat)
    assert len(flat) == an.size
    for f, e in zip(flat, an.flat):
        check(f, e)


def test_flat_indexing():
    an = numpy.arange(6).reshape(2, 3)
    a = mp.array(an)
    check(a.flat[4], an.flat[4])
    check(a.flat[1:5:2], an.flat[1:5:2])
    check(a.flat[[5, 0, 5]], an.flat[[5, 0, 5]])
    assert len(a.flat) == len(an.flat)
    a.flat[[0, 5]] = -1
    an.flat[[0, 5]] = -1
    check(a, an)
    a.flat[2:4] = mp.array([10, 11])
    an.flat[2:4] = [10, 11]
    a.flat[numpy.array([True, False] * 3)] = 7
    an.flat[numpy.array([True, False] * 3)] = 7
    check(a, an)
    t = mp.array(an.T)                  # non-contiguous base: row-major order of the view
    check(t.flat[[1, 2]], an.T.flat[[1, 2]])
    check(a.flat.copy(), an.flat.copy())


def test_flat_assignment_is_differentiable():
    def f(x):
        y = x * 1.0
        y.flat[[0, 3]] = 0.0
        return mp.sum(y * y)
    g = mp.grad(f)(mp.array(numpy.arange(1.0, 7.0).reshape(2, 3)))
    numpy.testing.assert_allclose(g.asnumpy(), [[0, 4, 6], [0, 10, 12]])


def test_shape_setter_and_real_setter():
    an = numpy.arange(6.0)
    a = mp.array(an)
    a.shape = (2, 3)
    an.shape = (2, 3)
    check(a, an)
    c = mp.array([1 + 2j, 3 - 1j])
    c.real = mp.array([5.0, 6.0])
    check(c, numpy.array([5 + 2j, 6 - 1j]))


# ------------------------------------------------------------------ methods
METHODS = {
    "reshape_tuple": lambda x: x.reshape((x.size,)),
    "reshape_varargs": lambda x: x.reshape(x.size, 1),
    "reshape_minus1": lambda x: x.reshape(-1, 2),
    "reshape_order_F": lambda x: x.reshape((2, -1), order="F"),
    "transpose_none": lambda x: x.transpose(),
    "transpose_None": lambda x: x.transpose(None),
    "transpose_varargs": lambda x: x.transpose(2, 0, 1),
    "transpose_tuple": lambda x: x.transpose((1, 2, 0)),
    "astype_f32": lambda x: x.astype(numpy.float32),
    "astype_int": lambda x: x.astype("int16"),
    "astype_bool": lambda x: x.astype(bool),
    "copy": lambda x: x.copy(),
    "copy_F": lambda x: x.copy(order="F"),
    "flatten": lambda x: x.flatten(),
    "flatten_F": lambda x: x.flatten("F"),
    "ravel": lambda x: x.ravel(),
    "squeeze": lambda x: x.reshape(1, 2, 1, -1).squeeze(),
    "squeeze_axis": lambda x: x.reshape(1, 2, 1, -1).squeeze(axis=2),
    "swapaxes": lambda x: x.swapaxes(0, 2),
    "item": lambda x: x[1, 2, 3:].item(),
    "item_many": lambda x: x.item(),      # ValueError: more than one element
    "item_flat": lambda x: x.item(3),
    "item_nd": lambda x: x.item(1, 0, 2),
    "tolist": lambda x: x.tolist(),
    "tobytes": lambda x: x.tobytes(),
    "tobytes_F": lambda x: x.tobytes("F"),
    "view": lambda x: x.view(),
    "view_dtype": lambda x: x.view(numpy.uint8),
    "argsort": lambda x: x.argsort(axis=1, kind="stable"),
    "clip": lambda x: x.clip(-1, 2),
    "clip_min": lambda x: x.clip(min=0),
    "round": lambda x: x.round(),
    "round_decimals": lambda x: x.round(1),
    "dot": lambda x: x.reshape(6, -1).dot(x.reshape(-1, 6)),
    "cumsum": lambda x: x.cumsum(),
    "cumsum_axis": lambda x: x.cumsum(axis=1),
    "nonzero": lambda x: x.nonzero(),
    "repeat": lambda x: x.repeat(2),
    "repeat_axis": lambda x: x.repeat([1, 2], axis=0),
    "take": lambda x: x.take([0, 5, -1]),
    "take_axis": lambda x: x.take([1, 0], axis=2),
    "compress": lambda x: x.compress([True, False, True], axis=1),
    "searchsorted": lambda x: x.ravel().clip(0, 0).searchsorted([0, 1]),
    "diagonal": lambda x: x.diagonal(),
    "diagonal_offset": lambda x: x.diagonal(1, 1, 2),
    "trace": lambda x: x.trace(),
    "all": lambda x: x.all(),
    "any_axis": lambda x: x.any(axis=0),
    "conj": lambda x: x.conj(),
    "sum_keepdims": lambda x: x.sum(axis=(0, 2), keepdims=True),
    "max": lambda x: x.max(axis=1),
    "argmax": lambda x: x.argmax(),
    "mean": lambda x: x.mean(axis=-1),
}


# exact comparison: minpy runs the same host kernels as NumPy here (a few ulps on a real
# GPU, whose reductions sum in another order: tests/_strategies.py gpu_tolerance)
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("case", sorted(METHODS))
@given(an=arrays(dtypes=[numpy.float64, numpy.float32, numpy.int64, numpy.complex128],
                 min_dims=3, max_dims=3, min_side=2).map(
                     lambda a: numpy.resize(a, (2, 3, 4)) if a.size else numpy.ones((2, 3, 4))))
def test_method_matches_numpy(case, an):
    f = METHODS[case]
    if case in ("argsort", "searchsorted") and an.dtype.kind == "c":
        an = an.real.copy()
    run_both(lambda an, xp: f(xp.array(an)), an, rtol=0, atol=0)     # fast and general paths


VIEWS = {
    "reshape": lambda x: x.reshape(4, 6), "ravel": lambda x: x.ravel(), "T": lambda x: x.T,
    "transpose": lambda x: x.transpose(1, 0, 2), "view": lambda x: x.view(),
    "view_dtype": lambda x: x.view(numpy.int32), "squeeze": lambda x: x[:1].squeeze(),
    "swapaxes": lambda x: x.swapaxes(0, 1), "diagonal": lambda x: x.diagonal(),
    "real": lambda x: x.real, "mT": lambda x: x.mT,
    "astype_nocopy": lambda x: x.astype(x.dtype, copy=False),
}


@pytest.mark.parametrize("case", sorted(VIEWS))
def test_views_share_memory_like_numpy(case):
    an = numpy.arange(24, dtype=numpy.int64).reshape(2, 3, 4)
    a = mp.array(an)
    vn, v = VIEWS[case](an), VIEWS[case](a)
    check(v, vn)
    assert numpy.shares_memory(numpy.asarray(v), numpy.asarray(a)) == numpy.shares_memory(vn, an) is True
    if vn.flags.writeable:
        v[...] = 0 if case != "view_dtype" else 1
        vn[...] = 0 if case != "view_dtype" else 1
        check(a, an)
    assert not numpy.shares_memory(a.flatten().asnumpy(), numpy.asarray(a))


def test_choose():
    idx = numpy.array([0, 1, 2, 1])
    choices = [numpy.arange(4) * k for k in (1, 10, 100)]
    check(mp.array(idx).choose([mp.array(c) for c in choices]), idx.choose(choices))
    check(mp.array(idx).choose(choices, mode="clip"), idx.choose(choices, mode="clip"))


INPLACE = {
    "sort": lambda x: x.sort(),
    "sort_axis0": lambda x: x.sort(axis=0),
    "partition": lambda x: x.partition(1),
    "fill": lambda x: x.fill(7),
    "put": lambda x: x.put([0, 4, -1], [9, 8, 7]),
    "put_clip": lambda x: x.put([100], [5], mode="clip"),
    "setitem": lambda x: x.__setitem__((slice(None), 1), 3),
}


@pytest.mark.parametrize("mode", ["fast", "general"])
@pytest.mark.parametrize("case", sorted(INPLACE))
@given(an=arrays(dtypes=[numpy.float64, numpy.int32], min_dims=2, max_dims=2, min_side=3))
def test_inplace_method_mutates_like_numpy(case, mode, an):
    a = mp.array(an)
    before = a._data
    with general_path() if mode == "general" else contextlib.nullcontext():
        assert INPLACE[case](a) is None
    INPLACE[case](an)
    check(a, an)
    assert a._data is before       # written in place, not rebound


# ------------------------------------------------------------------ conversions
@given(arrays())
def test_iteration_and_len(an):
    a = mp.array(an)
    if an.ndim == 0:
        for f in (len, iter):
            with pytest.raises(TypeError):
                f(an)
            with pytest.raises(TypeError):
                f(a)
        return
    assert len(a) == len(an)
    rows = list(a)
    assert len(rows) == len(an)
    for r, e in zip(rows, an):
        check(r, e)


def test_contains():
    an = numpy.arange(6).reshape(2, 3)
    a = mp.array(an)
    for v in (3, 7, -1):
        assert (v in a) == (v in an)


@pytest.mark.parametrize("value", [0, 1, 2.5, -0.0, True, 1 + 2j])
def test_scalar_conversions(value):
    an = numpy.array(value)
    a = mp.array(value)
    for conv in (bool, float, complex):
        if conv is float and isinstance(value, complex):
            with pytest.raises(TypeError):
                float(an)
            with pytest.raises(TypeError):
                float(a)
            continue
        assert conv(a) == conv(an)
        assert type(conv(a)) is conv
    if not isinstance(value, complex):
        assert int(a) == int(an)


def test_truth_value_of_many_elements_is_ambiguous():
    for shape in [(2,), (2, 2)]:
        with pytest.raises(ValueError, match="ambiguous"):
            bool(numpy.ones(shape))
        with pytest.raises(ValueError, match="ambiguous"):
            bool(mp.ones(shape))
        with pytest.raises(ValueError):
            if mp.ones(shape) > 0:
                pass
    assert bool(mp.array([5])) is True and bool(mp.zeros((1, 1))) is False


def test_index_protocol():
    seq = list(range(10))
    assert seq[mp.array(3)] == 3
    assert seq[mp.array(-2, dtype=numpy.int8)] == 8
    assert operator.index(mp.array(7, dtype=numpy.uint16)) == 7
    assert range(20)[mp.array(4):mp.array(8)] == range(4, 8)
    for bad in (numpy.array(1.0), numpy.array([1, 2]), numpy.array(1 + 0j)):
        with pytest.raises(TypeError):
            seq[bad]
        with pytest.raises(TypeError):
            seq[mp.array(bad)]


def test_repr_and_str():
    """Host arrays print as NumPy's (more in tests/core/test_printing.py)."""
    cpu = mp.cpu()
    assert repr(mp.array([1.0, 2.0], ctx=cpu)) == "array([1., 2.])"
    assert repr(mp.array([1, 2], dtype=numpy.int8, ctx=cpu)) == "array([1, 2], dtype=int8)"
    assert repr(mp.array(3.5, ctx=cpu)) == "array(3.5)"
    assert repr(mp.zeros((2, 0), ctx=cpu)) == "array([], shape=(2, 0), dtype=float64)"
    for an in (numpy.arange(6.0).reshape(2, 3), numpy.array([True, False]),
               numpy.arange(2000), numpy.array(1 + 2j)):
        a = mp.array(an, ctx=cpu)
        assert repr(a) == repr(an)
        assert str(a) == str(an)


def test_format():
    assert format(mp.array(1.5), ".2f") == format(numpy.array(1.5), ".2f") == "1.50"
    assert f"{mp.array(7):>4d}" == "   7"
    assert format(mp.arange(3)) == format(numpy.arange(3))
    with pytest.raises(TypeError):
        format(numpy.arange(3), ".2f")
    with pytest.raises(TypeError):
        format(mp.arange(3), ".2f")


# ------------------------------------------------------------------ copies
@given(arrays())
def test_pickle_round_trip(an):
    a = mp.array(an)
    b = pickle.loads(pickle.dumps(a))
    check(b, an)
    assert b.context == a.context
    assert not numpy.shares_memory(numpy.asarray(b), numpy.asarray(a))


def test_copy_and_deepcopy_are_independent():
    for make in (copy.copy, copy.deepcopy):
        a = mp.arange(6.0).reshape(2, 3)
        b = make(a)
        check(b, numpy.arange(6.0).reshape(2, 3))
        b[0, 0] = -1
        b += 1
        check(a, numpy.arange(6.0).reshape(2, 3))
    nested = {"w": mp.ones(3)}
    dup = copy.deepcopy(nested)
    dup["w"][0] = 5
    check(nested["w"], numpy.ones(3))


# ------------------------------------------------------------------ protocols
def test_array_protocol_shares_memory_on_cpu():
    a = mp.arange(6.0)
    h = numpy.asarray(a)
    assert type(h) is numpy.ndarray and numpy.shares_memory(h, numpy.asarray(a))
    h[0] = 42                                 # a host view: writes show through
    assert float(a[0]) == 42
    assert numpy.asarray(a, copy=False) is h or numpy.shares_memory(numpy.asarray(a, copy=False), h)
    c = numpy.array(a, copy=True)
    assert not numpy.shares_memory(c, h)
    f = numpy.asarray(a, dtype=numpy.float32)
    assert f.dtype == numpy.float32
    numpy.testing.assert_array_equal(f, h.astype(numpy.float32))
    with pytest.raises(ValueError):
        numpy.asarray(numpy.arange(3), dtype=float, copy=False)
    with pytest.raises(ValueError):
        numpy.asarray(mp.arange(3), dtype=float, copy=False)


def test_array_ufunc_returns_minpy_arrays():
    xn = numpy.linspace(-1, 1, 6).reshape(2, 3)
    x = mp.array(xn)
    check(numpy.exp(x), numpy.exp(xn))
    check(numpy.add(numpy.ones(3), x), numpy.add(numpy.ones(3), xn))
    check(numpy.add(xn, x), xn + xn)
    check(numpy.add.reduce(x), numpy.add.reduce(xn))
    check(numpy.add.reduce(x, axis=1), numpy.add.reduce(xn, axis=1))
    check(numpy.multiply.accumulate(x, axis=1), numpy.multiply.accumulate(xn, axis=1))
    check(numpy.subtract.outer(x[0], x[1]), numpy.subtract.outer(xn[0], xn[1]))
    m, e = numpy.frexp(x)
    check(m, numpy.frexp(xn)[0])
    check(e, numpy.frexp(xn)[1])
    y = mp.zeros(3)
    numpy.add.at(y, [0, 0, 2], 1)
    check(y, numpy.array([2.0, 0.0, 1.0]))


def test_array_function_on_host_arrays_answers_in_numpy():
    """NumPy's functions on host Arrays nothing differentiates give NumPy's own results
    (zero-copy): what SciPy, scikit-learn and matplotlib take."""
    xn = numpy.arange(6.0).reshape(2, 3)
    x, y = mp.array(xn), mp.array(xn + 1)
    mp.dispatch.reset_stats()
    for got, want in ((numpy.mean(x), numpy.mean(xn)), (numpy.mean(x, axis=0), xn.mean(0)),
                      (numpy.concatenate([x, y]), numpy.concatenate([xn, xn + 1])),
                      (numpy.concatenate([x, xn], axis=1), numpy.concatenate([xn, xn], 1)),
                      (numpy.linalg.norm(x), numpy.linalg.norm(xn)),
                      (numpy.fft.fft(x), numpy.fft.fft(xn)),
                      # (a host mask: under prefer_gpu ``x > 2`` would run on a GPU)
                      (numpy.where(mp.array(xn > 2), x, 0), numpy.where(xn > 2, xn, 0)),
                      (numpy.atleast_1d(x[0, 0]), numpy.atleast_1d(xn[0, 0]))):
        assert type(got) is type(want)
        numpy.testing.assert_array_equal(got, want)
    assert numpy.shares_memory(numpy.atleast_2d(x), x._data)     # no copy
    assert numpy.shape(x) == (2, 3)
    assert mp.dispatch.stats()["fallbacks"] == {}


def test_array_function_keeps_traced_arrays_and_writes_in_minpy():
    xn = numpy.arange(6.0).reshape(2, 3)

    def loss(w):
        m = numpy.mean(numpy.concatenate([w, w]), axis=0)     # NumPy's names, traced
        assert type(m) is mp.Array
        return mp.sum(m ** 2)
    check(mp.grad(loss)(mp.array(xn)), 2 * xn.mean(0) / 2 * numpy.ones((2, 1)))
    y = mp.zeros(3)
    numpy.copyto(y, mp.array([1.0, 2, 3]))          # a write into an Array stays in minpy
    assert type(y) is mp.Array and y.tolist() == [1, 2, 3]
    out = mp.zeros(2)
    assert numpy.sum(mp.array(xn), axis=1, out=out) is out and out.tolist() == [3, 12]


def test_unwrapped_numpy_function():
    """A NumPy function minpy lacks: NumPy's own on host arrays; refused for an Array
    being differentiated (its gradient would be lost silently)."""
    from numpy.lib.stride_tricks import sliding_window_view
    xn = numpy.arange(8.0)
    r = sliding_window_view(mp.array(xn), 3)
    assert type(r) is numpy.ndarray
    numpy.testing.assert_array_equal(r, sliding_window_view(xn, 3))
    with pytest.raises(TypeError, match="sliding_window_view: minpy has no version.*"
                                        "gradient would be lost"):
        mp.grad(lambda w: mp.sum(sliding_window_view(w, 3)))(mp.array(xn))
    with pytest.raises(TypeError, match="being differentiated and NumPy would drop"):
        mp.grad(lambda w: mp.sum(mp.array(numpy.asarray(w))))(mp.array(xn))
    with installed(), mp.gpu(0):             # off the host: host copies, counted
        mp.dispatch.reset_stats()
        r = sliding_window_view(mp.array(xn), 3)
        check(r, sliding_window_view(xn, 3))
        assert mp.dispatch.stats()["fallbacks"].get("sliding_window_view") == 1


@pytest.mark.skipif(sys.version_info < (3, 12), reason="__buffer__ needs Python 3.12")
def test_buffer_of_a_differentiated_array_is_refused():
    """On 3.12 NumPy reads a class's buffer before ``__array__``: the buffer refuses an
    Array being differentiated, so ``numpy.asarray`` keeps its own refusal."""
    xn = numpy.arange(3.0)
    with pytest.raises(TypeError, match="memoryview: this Array is being differentiated"):
        mp.grad(lambda w: mp.sum(w) + len(memoryview(w)))(mp.array(xn))
    assert memoryview(mp.array(xn)).tolist() == [0.0, 1.0, 2.0]


def test_dlpack_round_trips():
    xn = numpy.arange(6.0).reshape(2, 3)
    x = mp.from_dlpack(xn)
    check(x, xn)
    assert numpy.shares_memory(numpy.asarray(x), xn)
    assert x.__dlpack_device__() == xn.__dlpack_device__() == (1, 0)
    back = numpy.from_dlpack(x)
    assert type(back) is numpy.ndarray and numpy.shares_memory(back, xn)
    again = mp.from_dlpack(x)
    check(again, xn)
    assert numpy.shares_memory(numpy.asarray(again), xn)
    capsule = x.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"


# ------------------------------------------------------------------ devices
def test_host_and_context_methods():
    xn = numpy.arange(4.0)
    x = mp.array(xn)
    h = x.asnumpy()
    assert type(h) is numpy.ndarray
    numpy.testing.assert_array_equal(h, xn)
    assert x.context == x.ctx == x.device == mp.cpu(0)
    c = x.copyto(mp.cpu())
    check(c, xn)
    c[0] = 99
    assert float(x[0]) == 0.0                 # copyto copies even on the same device
    dst = mp.zeros(4)
    assert x.copyto(dst) is dst
    check(dst, xn)
    assert x.as_in_context(mp.cpu(0)) is x
    assert x.wait_to_read() is x


def test_contexts():
    assert repr(mp.cpu()) == "cpu(0)" and repr(mp.gpu(0)) == "gpu(0)"
    assert repr(mp.gpu(2)) == "gpu(2)" and repr(mp.cpu(1)) == "cpu(1)"
    assert mp.cpu() == mp.cpu(0) and mp.gpu(0) == mp.gpu()
    assert mp.cpu(0) != mp.gpu(0) and mp.gpu(0) != mp.gpu(1)
    assert hash(mp.gpu(1)) == hash(mp.Context("gpu", 1))
    assert len({mp.cpu(), mp.cpu(0), mp.gpu(0)}) == 2
    assert pickle.loads(pickle.dumps(mp.gpu(3))) == mp.gpu(3)
    for bad in (("tpu", 0), ("cpu", -1), ("gpu", 1.0)):
        with pytest.raises(ValueError):
            mp.Context(*bad)
    assert mp.current_context() == mp.cpu(0)
    with mp.cpu(0) as c:
        assert c == mp.cpu(0) and mp.current_context() == mp.cpu(0)
        assert mp.zeros(2).context == mp.cpu(0)
    assert mp.current_context() == mp.cpu(0)


@pytest.mark.skipif(not NO_GPU, reason="a GPU is present")
def test_no_gpu_is_a_clear_error():
    assert mp.num_gpus() == 0
    with pytest.raises(RuntimeError, match=r"gpu\(0\)"):
        mp.zeros(3, ctx=mp.gpu(0))
    with pytest.raises(RuntimeError, match=r"gpu\(0\)"):
        mp.array([1, 2], ctx=mp.gpu(0))
    with pytest.raises(RuntimeError, match=r"gpu\(1\)"):
        with mp.gpu(1):
            mp.ones(2)
    with pytest.raises(RuntimeError, match=r"gpu\(0\)"):
        mp.arange(3).copyto(mp.gpu(0))
    assert mp.current_context() == mp.cpu(0)    # a failed entry leaves no context behind


@pytest.mark.skipif(NO_GPU, reason="needs a GPU")
def test_gpu_count_positive():
    assert mp.num_gpus() > 0


def test_protocols_on_a_device():
    """The same protocols on the strict stand-in GPU (no implicit host conversion)."""
    xn = numpy.arange(6.0).reshape(2, 3)
    with installed(), mp.gpu(0):
        x = mp.array(xn)
        assert x.context == mp.gpu(0) and x.__dlpack_device__() == (2, 0)
        assert repr(x) == repr(xn)[:-1] + ", device=gpu(0))" and str(x) == str(xn)
        for r in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), x.T.T, numpy.exp(x) * 0 + x,
                  numpy.concatenate([x]), mp.from_dlpack(x), x.reshape(3, 2).reshape(2, 3)):
            check(r, xn)
            assert r.context == mp.gpu(0)
        with pytest.raises(TypeError, match="lives on gpu.0.*x.asnumpy"):
            numpy.asarray(x)               # no silent device-to-host copy
        h = x.asnumpy()
        assert type(h) is numpy.ndarray and not numpy.shares_memory(h, x._data._a)
        numpy.testing.assert_array_equal(h, xn)
        assert x.tolist() == xn.tolist() and x.item(4) == 4.0 and len(x) == 2
        assert float(x[1, 2]) == 5.0 and bool(x[0, 1]) and [9, 8][mp.array(1)] == 8
        check(list(x)[1], xn[1])
        assert x.as_in_context(mp.gpu(0)) is x
        for ctx in (mp.cpu(0), mp.gpu(1)):
            c = x.as_in_context(ctx)
            check(c, xn)
            assert c.context == ctx


@pytest.mark.parametrize("case", ["dot", "sum", "cumsum", "clip", "take", "around", "add.reduce"])
def test_positional_out_is_the_output(case):
    # dot(a, b, out) writes into out and returns it, as NumPy does
    def run(xp):
        a = xp.asarray(numpy.arange(6.0).reshape(2, 3))
        calls = {
            "dot": lambda: (xp.zeros((2, 2)), lambda o: xp.dot(a, a.T, o)),
            "sum": lambda: (xp.zeros(3), lambda o: xp.sum(a, 0, None, o)),
            "cumsum": lambda: (xp.zeros((2, 3)), lambda o: xp.cumsum(a, 1, None, o)),
            "clip": lambda: (xp.zeros((2, 3)), lambda o: xp.clip(a, 1.0, 4.0, o)),
            "take": lambda: (xp.zeros(2), lambda o: xp.take(a, [0, 9], None, o, "clip")),
            "around": lambda: (xp.zeros((2, 3)), lambda o: xp.around(a / 7, 2, o)),
            "add.reduce": lambda: (xp.zeros(2), lambda o: xp.add.reduce(a, 1, None, o)),
        }
        o, f = calls[case]()
        r = f(o)
        return r is o, o
    same_np, o_np = run(numpy)
    same_mp, o_mp = run(mp)
    assert same_np and same_mp
    check(o_mp, o_np)


def test_positional_out_errors_as_numpy():
    a = mp.ones((2, 2))
    with pytest.raises(TypeError, match="multiple values for argument 'out'"):
        mp.dot(a, a, mp.zeros((2, 2)), out=mp.zeros((2, 2)))
    with pytest.raises(TypeError, match="positional arguments"):
        mp.dot(a, a, mp.zeros((2, 2)), 1)


def test_positional_out_under_grad_is_recorded():
    def f(x):
        buf = mp.zeros(3)
        mp.sum(x * x, 0, None, buf)          # the write into buf is replayed, buf rebound
        return mp.sum(buf * 2.0)
    g = mp.grad(f)(mp.array(numpy.arange(6.0).reshape(2, 3)))
    numpy.testing.assert_allclose(g.asnumpy(), 4.0 * numpy.arange(6.0).reshape(2, 3))


def test_asnumpy_is_a_copy_the_caller_owns():
    # MXNet's asnumpy: the value as of the call; a later write into the array (an
    # executor's next forward, an in-place optimizer step) must not change it
    x = mp.arange(4.0)
    h = x.asnumpy()
    x += 1
    assert h.tolist() == [0.0, 1.0, 2.0, 3.0]
    h[0] = 99
    assert x[0] == 1
    assert not numpy.shares_memory(x.asnumpy(), x.asnumpy())
    if x.context == mp.cpu(0):
        assert numpy.shares_memory(numpy.asarray(x), numpy.asarray(x))   # the zero-copy view
