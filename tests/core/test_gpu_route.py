"""Calls CuPy cannot run as NumPy wrote them, on the CuPy-faithful stand-in.

Each case failed on real CuPy (a TypeError, NotImplementedError, a wrong
dtype or an aliasing 0-d view); the stand-in refuses what CuPy refuses, so
these pass only when minpy routes the call: a GPU equivalent (stays on the
device, no fallback counted) or the counted, warned CPU fallback.
"""
import warnings

import numpy
import pytest

import minpy
from _standin import StandinArray, installed


def _gpu(a):
    with minpy.gpu(0):
        return minpy.array(a)


@pytest.fixture
def gpu():
    with installed() as backend, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield backend


def _host(r):
    return r.asnumpy() if isinstance(r, minpy.Array) else numpy.asarray(r)


def _fallbacks():
    return minpy.dispatch.stats()["fallbacks"]


def _on_gpu(r):
    return type(r._data) is StandinArray


X = numpy.arange(12.0).reshape(3, 4) - 5.5
MASK = numpy.array([[True, False, True, True]] * 3)


@pytest.mark.parametrize("name,kwargs", [
    ("mean", {"where": MASK}), ("mean", {"where": MASK, "axis": 1}),
    ("sum", {"where": MASK, "axis": 0}), ("sum", {"initial": 2.5}),
    ("prod", {"where": MASK, "initial": 2.0, "axis": 1}),
    ("std", {"correction": 1}), ("var", {"correction": 1, "axis": 0, "keepdims": True}),
])
def test_numpy_only_keywords_have_gpu_equivalents(gpu, name, kwargs):
    x = _gpu(X)
    kw = {k: (_gpu(v) if isinstance(v, numpy.ndarray) else v) for k, v in kwargs.items()}
    r = getattr(minpy, name)(x, **kw)
    expect = getattr(numpy, name)(X, **kwargs)
    assert _on_gpu(r) and not _fallbacks()
    assert r.dtype == expect.dtype and r.shape == expect.shape
    numpy.testing.assert_allclose(_host(r), expect)


def test_mean_where_keeps_float32_and_float16(gpu):
    for dt in (numpy.float32, numpy.float16, numpy.int32):
        a = X.astype(dt)
        r = minpy.mean(_gpu(a), where=_gpu(MASK), axis=0)
        e = numpy.mean(a, where=MASK, axis=0)
        assert r.dtype == e.dtype
        numpy.testing.assert_allclose(_host(r), e, rtol=1e-3)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("axis", [None, 1])
def test_take_modes_on_the_gpu(gpu, mode, axis):
    idx = [0, 7, 20, -1, -30]
    r = minpy.take(_gpu(X), _gpu(idx), axis=axis, mode=mode)
    assert _on_gpu(r) and not _fallbacks()
    numpy.testing.assert_array_equal(_host(r), numpy.take(X, idx, axis=axis, mode=mode))


@pytest.mark.parametrize("call", [
    lambda m, x: m.linalg.cholesky(m.matmul(x.T, x) + m.eye(4) if m is minpy
                                   else x.T @ x + numpy.eye(4), upper=True),
    lambda m, x: m.linalg.pinv(m.matmul(x, x.T) if m is minpy else x @ x.T, hermitian=True),
    lambda m, x: m.linalg.matrix_rank(m.matmul(x, x.T) if m is minpy else x @ x.T,
                                      hermitian=True),
])
def test_linalg_keywords_on_the_gpu(gpu, call):
    r = call(minpy, _gpu(X))
    assert _on_gpu(r) and not _fallbacks()
    numpy.testing.assert_allclose(_host(r), call(numpy, X), rtol=1e-7, atol=1e-9)


def test_ellipsis_index_of_a_0d_result_is_a_view(gpu):
    x = _gpu(numpy.arange(3.0))
    v = x[..., 0]
    v[...] = 7.0
    assert _host(x)[0] == 7.0
    s = x[1]
    x[1] = 5.0
    assert float(s) == 1.0


def test_reshape_shape_and_copy_keywords(gpu):
    x = _gpu(X)
    r = minpy.reshape(x, shape=(4, 3))
    assert r.shape == (4, 3) and _on_gpu(r) and not _fallbacks()
    c = minpy.reshape(x, (2, 6), copy=True)
    c[0, 0] = 100.0
    assert _host(x)[0, 0] == X[0, 0]
    with pytest.raises(ValueError, match="copy"):
        minpy.reshape(x.T, (12,), copy=False)


@pytest.mark.parametrize("call", [
    lambda m, x: m.maximum.reduce(x, axis=1),
    lambda m, x: m.maximum.accumulate(x, axis=0),
    lambda m, x: m.minimum.reduce(x, axis=0),
    lambda m, x: m.max(x, axis=1, initial=-1.0),
    lambda m, x: m.linalg.svd(m.dot(x, x.T) if m is minpy else x @ x.T, hermitian=True).S,
])
def test_numpy_only_keywords_and_methods_fall_back(gpu, call):
    x = _gpu(X)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = call(minpy, x)
    e = call(numpy, X)
    numpy.testing.assert_allclose(_host(r), e, rtol=1e-6, atol=1e-9)
    assert _fallbacks()
    assert any("running on the CPU" in str(m.message) for m in w) or not minpy.dispatch.state \
        .process.fallback_warn


def test_numpy_default_keywords_are_dropped_not_refused(gpu):
    x = _gpu(numpy.array([3.0, 1.0, 3.0, 2.0]))
    r = minpy.unique(x, sorted=True)
    s = minpy.sum(x, where=True)
    assert _on_gpu(r) and _on_gpu(s) and not _fallbacks()
    assert _host(r).tolist() == [1.0, 2.0, 3.0] and float(s) == 9.0


def test_r_with_slices_and_block(gpu):
    with minpy.gpu(0):
        r = minpy.r_[0:3, 7, _gpu([1.0, 2.0])]
    numpy.testing.assert_array_equal(_host(r), numpy.r_[0:3, 7, [1.0, 2.0]])
    a = _gpu(numpy.ones((2, 2)))
    b = minpy.block([[a, a], [a, a]])
    assert b.shape == (4, 4)
    numpy.testing.assert_array_equal(_host(b), numpy.ones((4, 4)))


def test_scalar_results_are_copies_not_views(gpu):
    g = _gpu(numpy.array([1.0, 2.0, 3.0]))
    e = g[1]
    g[1] = 9.0
    assert float(e) == 2.0
    m = _gpu(X)
    f = m[1, 2]
    m[1, 2] = 0.0
    assert float(f) == X[1, 2]


def test_namedtuple_results(gpu):
    a = _gpu(numpy.array([[2.0, 1.0], [1.0, 3.0]]))
    r = minpy.linalg.eigh(a)
    assert type(r).__name__ == "EighResult"
    numpy.testing.assert_allclose(_host(r.eigenvalues), numpy.linalg.eigh(_host(a))[0])
    s = minpy.linalg.slogdet(a)
    assert type(s).__name__ == "SlogdetResult" and float(s.sign) == 1.0
    u = minpy.linalg.svd(a)
    assert type(u).__name__ == "SVDResult" and u.S.shape == (2,)


def test_dtypes_the_gpu_cannot_hold_stay_on_the_host(gpu):
    s = minpy.array(["b", "a", "c"])
    r = minpy.sort(s)
    assert _host(r).tolist() == ["a", "b", "c"]
    t = minpy.array(numpy.array(["2020-01-01", "2021-06-01"], dtype="datetime64[D]"))
    d = t[1] - t[0]
    assert _host(d) == numpy.timedelta64(517, "D")


def test_var_std_gradients_on_the_gpu(gpu):
    def f(x):
        return minpy.sum(minpy.var(x, axis=1)) + minpy.sum(minpy.std(x, axis=0, ddof=1))
    g = minpy.grad(f)(_gpu(X))
    eps, e = 1e-6, numpy.zeros_like(X)
    for i in numpy.ndindex(X.shape):
        d = numpy.zeros_like(X)
        d[i] = eps
        fp = numpy.sum(numpy.var(X + d, axis=1)) + numpy.sum(numpy.std(X + d, axis=0, ddof=1))
        fm = numpy.sum(numpy.var(X - d, axis=1)) + numpy.sum(numpy.std(X - d, axis=0, ddof=1))
        e[i] = (fp - fm) / (2 * eps)
    numpy.testing.assert_allclose(_host(g), e, rtol=1e-5, atol=1e-6)


def test_cupy13_scalar_promotion_follows_numpy2():
    from _standin import StandinBackend
    with installed(StandinBackend(cupy_major=13)):
        x = _gpu(numpy.ones(3, dtype=numpy.float32))
        for s in (numpy.float64(2.0), numpy.int64(3)):
            for r, e in ((x * s, numpy.ones(3, numpy.float32) * s),
                         (s - x, s - numpy.ones(3, numpy.float32)),
                         (minpy.add(x, s), numpy.add(numpy.ones(3, numpy.float32), s))):
                assert r.dtype == e.dtype, (s, r.dtype, e.dtype)
                numpy.testing.assert_allclose(_host(r), e)


@pytest.mark.parametrize("index", [
    lambda x: x[minpy.array([0, 3])], lambda x: x[[0, -4]], lambda x: x[1, [0, 4]],
    lambda x: x[..., minpy.array([4])], lambda x: minpy.take(x, minpy.array([12])),
    lambda x: minpy.take(x, [3], axis=0), lambda x: x.__setitem__(minpy.array([3]), 0.0),
])
def test_out_of_range_indices_raise_as_numpy(gpu, index):
    x = _gpu(X)                  # CuPy would wrap these around silently
    with pytest.raises(IndexError):
        index(x)


def test_in_range_fancy_indices_stay_on_the_gpu(gpu):
    x = _gpu(X)
    r = x[minpy.array([0, -1]), 1:]
    t = minpy.take(x, minpy.array([11, -12]))
    assert _on_gpu(r) and _on_gpu(t) and not _fallbacks()
    numpy.testing.assert_array_equal(_host(r), X[[0, -1], 1:])
    numpy.testing.assert_array_equal(_host(t), numpy.take(X, [11, -12]))


def test_non_array_results_of_gpu_operands(gpu):
    # a dtype result (its own ``base``) once sent the cache bookkeeping into an endless loop
    x = minpy.array([1.0, 2.0])
    y = _gpu([1, 2])
    assert minpy.result_type(x) == numpy.float64 and minpy.result_type(y, x) == numpy.float64
    assert minpy.can_cast(y, numpy.float64)


@pytest.mark.parametrize("name,args,kwargs", [
    ("unstack", (X,), {}), ("unstack", (X,), {"axis": 1}),
    ("matvec", (X.reshape(3, 4), numpy.arange(4.0)), {}),
    ("matvec", (numpy.ones((2, 3, 4)), numpy.arange(4.0)), {}),
    ("vecmat", (numpy.arange(3.0), X), {}),
])
def test_functions_cupy_lacks_are_composed_on_the_gpu(gpu, name, args, kwargs):
    r = getattr(minpy, name)(*map(_gpu, args), **kwargs)
    e = getattr(numpy, name)(*args, **kwargs)
    assert not _fallbacks()
    if isinstance(e, tuple):
        assert type(r) is tuple and len(r) == len(e)
        for a, b in zip(r, e):
            assert _on_gpu(a)
            numpy.testing.assert_array_equal(_host(a), b)
    else:
        assert _on_gpu(r) and r.dtype == e.dtype
        numpy.testing.assert_allclose(_host(r), e)
    with pytest.raises(ValueError):
        if name != "unstack":
            getattr(minpy, name)(_gpu(numpy.ones((2, 3))), _gpu(numpy.ones(5)))
        else:
            raise ValueError


A3 = numpy.arange(24.0).reshape(2, 3, 4) / 7 - 1


@pytest.mark.parametrize("name,args,kwargs", [
    ("vecdot", (A3, A3[0]), {}), ("linalg.vecdot", (A3, A3), {"axis": 1}),
    ("linalg.outer", (X[0], X[1]), {}), ("linalg.diagonal", (A3,), {"offset": 1}),
    ("linalg.trace", (A3,), {"offset": -1}), ("linalg.trace", (A3,), {"dtype": numpy.float32}),
    ("linalg.tensordot", (A3, A3.T), {"axes": 1}), ("linalg.svdvals", (A3,), {}),
    ("linalg.matrix_norm", (A3,), {}), ("linalg.matrix_norm", (A3,), {"ord": 1, "keepdims": True}),
    ("linalg.vector_norm", (A3,), {}), ("linalg.vector_norm", (A3,), {"axis": (0, 2), "ord": 1}),
    ("linalg.vector_norm", (A3,), {"axis": -1, "keepdims": True, "ord": numpy.inf}),
    ("linalg.vector_norm", (A3,), {"keepdims": True}),
    ("linalg.multi_dot", ([A3[0], A3[1].T, X],), {}),
])
def test_array_api_linalg_on_the_gpu(gpu, name, args, kwargs):
    mod, f = (name.split(".") if "." in name else (None, name))
    mf = getattr(minpy.linalg, f) if mod else getattr(minpy, f)
    nf = getattr(numpy.linalg, f) if mod else getattr(numpy, f)
    gargs = [[_gpu(e) for e in a] if type(a) is list else _gpu(a) for a in args]
    r = mf(*gargs, **kwargs)
    e = nf(*args, **kwargs)
    assert _on_gpu(r) and not _fallbacks()
    assert r.shape == e.shape and r.dtype == e.dtype
    numpy.testing.assert_allclose(_host(r), e, rtol=1e-10, atol=1e-12)


def test_complex_vecdot_takes_the_cpu_fallback(gpu):
    a = numpy.array([numpy.inf + 1j, 2 - 1j], dtype=numpy.complex64)
    r = minpy.vecdot(_gpu(a), _gpu(a[::-1]))
    numpy.testing.assert_array_equal(_host(r), numpy.vecdot(a, a[::-1]))
    assert _fallbacks() == {"vecdot": 1}


def test_where_as_a_python_list_on_the_gpu(gpu):
    m = [True, False, True, True]
    for name in ("sum", "mean"):
        r = getattr(minpy, name)(_gpu(X), axis=1, where=m)
        assert _on_gpu(r) and not _fallbacks()
        numpy.testing.assert_allclose(_host(r), getattr(numpy, name)(X, axis=1, where=m))


def test_lists_of_device_integers_are_bounds_checked(gpu):
    x = _gpu(X)
    far = minpy.argmax(_gpu(numpy.arange(8)))          # a device 0-d integer, 7
    near = minpy.argmin(_gpu(numpy.arange(8)))         # 0
    numpy.testing.assert_array_equal(_host(x[[near, 2]]), X[[0, 2]])
    with pytest.raises(IndexError):
        x[[near, far]]                                 # CuPy would read row 7 % 3
    with pytest.raises(IndexError):
        x[:, [far, 1]] = 0.0
