"""Array creation functions, ``ctx=``, and copy / memory-sharing semantics."""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
from _strategies import ALL_DTYPES, arrays, compare_numpy, run_both, shapes

DTYPES = [None, bool, "int8", "int32", "int64", "uint8", "float16", "float32", "float64",
          "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
@given(shape=st.one_of(shapes(max_side=3), st.integers(0, 4)))
@compare_numpy
def test_zeros_ones_full(dtype, shape, xp):
    res = (xp.zeros(shape, dtype=dtype), xp.ones(shape, dtype=dtype),
           xp.full(shape, 3, dtype=dtype), xp.full(shape, 2.5), xp.zeros(shape, order="F"))
    if xp is minpy:
        assert all(type(r) is minpy.Array for r in res)
    return res


@pytest.mark.parametrize("dtype", DTYPES)
@given(shape=shapes(max_side=3))
@compare_numpy
def test_empty_shape_and_dtype(dtype, shape, xp):
    e = xp.empty(shape, dtype=dtype)
    return e.shape, e.dtype, xp.empty_like(xp.ones(shape), dtype=dtype).dtype


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like", "full_like"])
@pytest.mark.parametrize("dtype", [None, "int32", "complex64"])
@given(a=arrays(ALL_DTYPES, max_side=3))
@compare_numpy
def test_like(fn, dtype, a, xp):
    x = xp.asarray(a)
    args = (x, 7) if fn == "full_like" else (x,)
    r = getattr(xp, fn)(*args, dtype=dtype)
    r2 = getattr(xp, fn)(*args, shape=(2, 1))
    return (r.shape, r.dtype, r2.shape) if fn == "empty_like" else (r, r2)


@compare_numpy
def test_bad_shapes_raise(xp):
    xp.zeros((2, -1))


@compare_numpy
def test_bad_dtype_raises(xp):
    xp.ones(3, dtype="not-a-dtype")


@given(start=st.integers(-5, 5), stop=st.integers(-5, 10),
       step=st.sampled_from([1, 2, -1, 0.5, -0.75, 3]),
       dtype=st.sampled_from([None, "int32", "float32", "float64", "uint8"]))
@compare_numpy
def test_arange(start, stop, step, dtype, xp):
    if dtype == "uint8" and min(start, stop) < 0:
        dtype = None
    return xp.arange(start, stop, step, dtype=dtype), xp.arange(stop), xp.arange(
        float(start), stop)


@compare_numpy
def test_arange_zero_step_raises(xp):
    xp.arange(0, 5, 0)


@given(start=st.floats(-10, 10), stop=st.floats(-10, 10), num=st.integers(0, 7),
       endpoint=st.booleans(), dtype=st.sampled_from([None, "float32", "int64", "complex64"]))
@compare_numpy
def test_linspace_logspace(start, stop, num, endpoint, dtype, xp):
    return (xp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype),
            xp.linspace(start, stop, num, retstep=True),
            xp.linspace(xp.asarray(numpy.array([0.0, 1.0])), 5, num, axis=1),
            xp.logspace(start / 4, stop / 4, num, endpoint=endpoint, base=3.0))


@given(start=st.floats(0.5, 100), stop=st.floats(0.5, 100), num=st.integers(0, 6),
       sign=st.sampled_from([1, -1]))
@compare_numpy
def test_geomspace(start, stop, num, sign, xp):
    return xp.geomspace(sign * start, sign * stop, num), xp.geomspace(1j, 8j, 4)


@compare_numpy
def test_geomspace_zero_raises(xp):
    xp.geomspace(0, 10, 3)


@given(n=st.integers(0, 4), m=st.one_of(st.none(), st.integers(0, 4)), k=st.integers(-3, 3),
       dtype=st.sampled_from([None, "int8", bool, "complex64"]))
@compare_numpy
def test_eye_identity_tri(n, m, k, dtype, xp):
    return (xp.eye(n, m, k=k, dtype=dtype), xp.identity(n, dtype=dtype),
            xp.tri(n, m, k=k, dtype=dtype), xp.eye(n, order="F"))


# ------------------------------------------------------------------ array / asarray
NESTED = [[1, 2, 3], [[1.5, 2], [3, 4]], [[True, False]], 3, 2.5, 1 + 2j, [], [[]],
          [[1, 2], [3, 4.5j]], ((1, 2), (3, 4)), [numpy.float32(1), 2]]


@pytest.mark.parametrize("obj", NESTED, ids=repr)
@pytest.mark.parametrize("dtype", [None, "float32", "int64", "complex128"])
@compare_numpy
def test_array_from_python_objects(obj, dtype, xp):
    return xp.array(obj, dtype=dtype), xp.asarray(obj, dtype=dtype), xp.array(obj, ndmin=2)


@compare_numpy
def test_ragged_list_raises(xp):
    xp.array([[1, 2], [3]])


@given(a=arrays(ALL_DTYPES, max_side=3), dtype=st.sampled_from(DTYPES))
@compare_numpy
def test_array_from_numpy_and_minpy(a, dtype, xp):
    x = xp.array(a, dtype=dtype)
    return x, xp.asarray(a, dtype=dtype), xp.array(x), xp.asarray(x), xp.array([x, x]), xp.array(
        x, copy=False) if dtype in (None, a.dtype) else x


@given(a=arrays(ALL_DTYPES, max_side=3))
@compare_numpy
def test_other_as_functions(a, xp):
    x = xp.asarray(a)
    return (xp.ascontiguousarray(x), xp.asfortranarray(x), xp.asanyarray(x),
            xp.require(x, requirements="C"), xp.copy(x))


@given(a=arrays(("float32", "float64"), max_side=3))
@compare_numpy
def test_asarray_chkfinite(a, xp):
    return xp.asarray_chkfinite(xp.asarray(a))


def test_array_of_minpy_arrays_is_minpy_and_copies():
    x = minpy.arange(3.0)
    y = minpy.array(x)
    assert type(y) is minpy.Array and y is not x
    y[0] = 9
    assert x[0] == 0
    assert minpy.asarray(x) is x or numpy.shares_memory(numpy.asarray(minpy.asarray(x)),
                                                        numpy.asarray(x))


def test_array_copies_host_input():
    host = numpy.arange(4.0)
    x = minpy.array(host)
    host[0] = 7
    assert x.asnumpy()[0] == 0
    assert not numpy.shares_memory(numpy.asarray(x), host)


def test_asarray_of_ndarray_shares_memory_on_cpu():
    host = numpy.arange(4.0)
    x = minpy.asarray(host)
    assert type(x) is minpy.Array
    assert numpy.shares_memory(numpy.asarray(x), host)
    host[1] = 42
    assert x[1] == 42


def test_numpy_asarray_of_minpy_array_shares_memory():
    x = minpy.arange(5.0)
    h = numpy.asarray(x)
    assert type(h) is numpy.ndarray
    assert numpy.shares_memory(h, numpy.asarray(x))
    assert numpy.asarray(x, dtype=numpy.float32).dtype == numpy.float32
    assert not numpy.shares_memory(numpy.array(x), numpy.asarray(x))


def test_asarray_dtype_change_copies():
    host = numpy.arange(4.0)
    x = minpy.asarray(host, dtype=numpy.float32)
    assert not numpy.shares_memory(numpy.asarray(x), host)


# ------------------------------------------------------------------ functional creation
@compare_numpy
def test_fromfunction_indices(xp):
    return (xp.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=int),
            xp.fromfunction(lambda i: i / 2, (5,)), xp.indices((2, 3)),
            xp.indices((2, 3), sparse=True), xp.indices((3,), dtype=numpy.int8))


@compare_numpy
def test_index_tricks(xp):
    res = (xp.mgrid[0:3, 0:2], xp.mgrid[0:1:5j], xp.ogrid[0:3, 0:2], xp.r_[1:4, 7, 8],
           xp.r_[xp.asarray(numpy.arange(2)), 5], xp.c_[xp.asarray(numpy.arange(3)), 1:4],
           xp.r_["0,2", [1, 2], [3, 4]])
    if xp is minpy:
        assert type(res[0]) is minpy.Array and all(type(r) is minpy.Array for r in res[2])
    return res


@given(n=st.integers(0, 5), k=st.integers(-2, 2), ndim=st.integers(1, 3))
@compare_numpy
def test_index_helpers(n, k, ndim, xp):
    return (xp.diag_indices(n, ndim), xp.tril_indices(n, k), xp.triu_indices(n, k, n + 1),
            xp.tril_indices_from(xp.ones((n, n)), k), xp.diag_indices_from(xp.ones((n, n))),
            xp.mask_indices(n, numpy.triu, k))


@compare_numpy
def test_windows_and_iter_creation(xp):
    return (xp.hamming(5), xp.hanning(4), xp.bartlett(3), xp.blackman(6), xp.kaiser(5, 2.0),
            xp.fromiter(range(5), dtype=float), xp.frombuffer(b"\x01\x02\x03", dtype="u1"),
            xp.vander(xp.asarray(numpy.arange(3)), 4))


# ------------------------------------------------------------------ ctx=
@pytest.mark.parametrize("call", [
    lambda xp, **c: xp.zeros((2, 3), **c), lambda xp, **c: xp.ones(3, dtype="int8", **c),
    lambda xp, **c: xp.full((2,), 5, **c), lambda xp, **c: xp.arange(4, **c),
    lambda xp, **c: xp.linspace(0, 1, 5, **c), lambda xp, **c: xp.eye(3, **c),
    lambda xp, **c: xp.array([1, 2], **c), lambda xp, **c: xp.asarray([1.5], **c),
    lambda xp, **c: xp.identity(2, **c), lambda xp, **c: xp.empty((2,), **c).shape,
])
def test_ctx_keyword_cpu(call):
    for ctx in (minpy.cpu(), minpy.cpu(0)):
        got = call(minpy, ctx=ctx)
        exp = call(numpy)
        if isinstance(exp, tuple):
            assert got == exp
            continue
        assert type(got) is minpy.Array and got.context == minpy.cpu()
        numpy.testing.assert_array_equal(got.asnumpy(), exp)
        assert got.dtype == exp.dtype


def test_ctx_default_is_current_context():
    with minpy.cpu(0):
        x = minpy.zeros(3)
    assert x.context == minpy.cpu(0) == minpy.current_context()


def test_ctx_gpu_without_gpu_raises():
    if minpy.num_gpus():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError):
        minpy.zeros(3, ctx=minpy.gpu(0))


def test_creation_from_hypothesis_dtypes_keeps_dtype_objects():
    for dt in ALL_DTYPES:
        x = minpy.zeros(2, dtype=dt)
        assert x.dtype is dt or x.dtype == dt
        run_both(lambda xp, dt=dt: xp.full((2, 2), 1, dtype=dt) * 2)
