"""Indexing of minpy Arrays (get, set, views) and NumPy's indexing functions, against NumPy.

Every test runs three times: on the straight-NumPy fast path, on the general
dispatch path (``call``/``run``, forced by turning ``state.process.fast`` off), and
on the strict stand-in GPU (``tests/_standin.py``) inside ``with minpy.gpu(0)``.
"""
import numpy
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import minpy as mp
from minpy.dispatch import state
from _standin import installed
from _host import assert_result_type, host

SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5)
ERRORS = (IndexError, ValueError, TypeError)


@pytest.fixture(params=["fast", "general", "device"], autouse=True)
def path(request, monkeypatch):
    """Run the test on both dispatch paths, and on a stand-in GPU device."""
    if request.param == "device":
        with installed(), mp.gpu(0):
            yield request.param
        return
    # the two host paths run with no GPU backend, also when the suite runs with one
    # (MINPY_TEST_DEVICE): the fast path is the no-GPU one
    prev = mp.dispatch.set_gpu_backend(None)
    if request.param == "general":
        request.addfinalizer(lambda prev=state.force_front_door(True): state.force_front_door(prev))
    try:
        yield request.param
    finally:
        mp.dispatch.set_gpu_backend(prev)


def check(res, expected):
    """``res`` is a minpy Array equal to ``expected`` in values, dtype and shape (for a
    NumPy scalar: the same scalar on the host, a 0-d Array on the device)."""
    if isinstance(expected, numpy.generic):
        assert_result_type(res, expected)
        if type(res) is mp.Array:
            assert res.context == mp.current_context()
        numpy.testing.assert_array_equal(numpy.asarray(host(res)), expected)
        assert host(res).dtype == expected.dtype
        return
    assert isinstance(res, mp.Array), type(res)
    expected = numpy.asarray(expected)
    assert res.dtype == expected.dtype and res.shape == expected.shape
    assert res.context == mp.current_context()      # gpu(0) in the device mode
    numpy.testing.assert_array_equal(res.asnumpy(), expected)


def base(shape, dtype=numpy.int64):
    """Distinct values, so that any misplaced element shows."""
    return numpy.arange(int(numpy.prod(shape)), dtype=dtype).reshape(shape)


def to_minpy_index(idx, kind):
    """The same index with its arrays as numpy arrays, lists or minpy Arrays."""
    def one(i):
        if isinstance(i, numpy.ndarray):
            return {"numpy": i, "list": i.tolist(), "minpy": mp.array(i)}[kind]
        return i
    return tuple(one(i) for i in idx) if isinstance(idx, tuple) else one(idx)


def same_getitem(xn, idx, midx=None):
    """x[idx] equals numpy's, or raises the same exception type."""
    x = mp.array(xn)
    try:
        expected = xn[idx]
    except ERRORS as e:
        with pytest.raises(type(e)):
            x[idx if midx is None else midx]
        return None
    res = x[idx if midx is None else midx]
    check(res, expected)
    return res


# ------------------------------------------------------------------ __getitem__
@given(data=st.data())
def test_basic_indexing(data):
    shape = data.draw(SHAPES)
    idx = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    xn = base(shape)
    same_getitem(xn, idx)


@given(data=st.data())
def test_basic_view_shares_memory_and_writes_through(data):
    shape = data.draw(SHAPES)
    idx = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    xn = base(shape)
    x = mp.array(xn.copy())
    vn, v = xn[idx], x[idx]
    if not isinstance(vn, numpy.ndarray):      # full integer index: a scalar, no view
        return
    if mp.current_context() == mp.cpu(0):      # asnumpy() of a device array is a copy
        assert numpy.shares_memory(numpy.asarray(v), numpy.asarray(x)) == numpy.shares_memory(vn, xn)
    vn[...] = -7
    v[...] = -7
    check(x, xn)
    v += 100
    vn += 100
    check(x, xn)


@pytest.mark.parametrize("kind", ["numpy", "list", "minpy"])
@given(data=st.data())
def test_integer_array_indexing(data, kind):
    shape = data.draw(SHAPES)
    idx = data.draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(
        min_dims=1, max_dims=2, max_side=3)))
    xn = base(shape)
    res = same_getitem(xn, idx, to_minpy_index(idx, kind))
    if res is not None and res.size and mp.current_context() == mp.cpu(0):
        assert not numpy.shares_memory(numpy.asarray(res), xn)


@pytest.mark.parametrize("kind", ["numpy", "minpy"])
@given(data=st.data())
def test_boolean_mask_indexing(data, kind):
    shape = data.draw(SHAPES)
    ndim = data.draw(st.integers(1, len(shape)))
    mask = data.draw(hnp.arrays(numpy.bool_, shape[:ndim]))
    xn = base(shape)
    same_getitem(xn, mask, to_minpy_index(mask, kind))
    same_getitem(xn, (Ellipsis, mask[..., 0]) if ndim == len(shape) and ndim > 1 else mask,
                 to_minpy_index((Ellipsis, mask[..., 0]), kind)
                 if ndim == len(shape) and ndim > 1 else to_minpy_index(mask, kind))


def test_mixed_indexing():
    xn = base((3, 4, 5))
    idx_list = [
        (numpy.array([0, 2]), slice(None), numpy.array([1, 4])),     # separated: moved front
        (slice(1, None), numpy.array([[0], [3]]), numpy.array([1, 2])),  # broadcast 2x2
        (1, numpy.array([True, False, True, True]), slice(None, None, -2)),
        (Ellipsis, numpy.array([-1, 0])),
        (None, numpy.array([2, 1]), 0, None),
        (numpy.array(1), slice(None), 2),
        ([0, 1], [1, 2], [3, 4]),
    ]
    for idx in idx_list:
        for kind in ("numpy", "minpy"):
            same_getitem(xn, idx, to_minpy_index(idx, kind))


@pytest.mark.parametrize("idx", [
    5, -6, (0, 9), (slice(None), 6), numpy.array([0, 7]), [[5]], (0, 0, 0),
    1.5, "a", [1.5], numpy.array([1.0]), numpy.array([True, False]),
    numpy.array([[True]]), (Ellipsis, Ellipsis), {0: 1},
])
def test_bad_index_same_exception(idx):
    xn = base((5, 4))
    same_getitem(xn, idx)
    x = mp.array(xn)
    try:
        xn[idx] = 0
    except ERRORS as e:
        with pytest.raises(type(e)):
            x[idx] = 0
    else:
        pytest.fail(f"numpy accepted {idx!r}")


EDGE_KEYS = {
    "0d_true": lambda xp: xp.array(True),
    "0d_false": lambda xp: xp.array(False),
    "array_slice_bounds": lambda xp: slice(xp.array(1), xp.array(3)),
    "0d_int_pair": lambda xp: (xp.array(1), xp.array(-2)),
    "uint8_array": lambda xp: xp.array([1, 2], dtype=numpy.uint8),
    "empty_int_array": lambda xp: xp.array([], dtype=numpy.int64),
    "empty_list": lambda xp: [],
    "bool_list": lambda xp: [True, False, True],
    "list_of_0d": lambda xp: [xp.array(0), xp.array(2)],
    "numpy_int": lambda xp: numpy.int64(-1),
    "reverse_steps": lambda xp: (slice(None, None, -1), slice(None, None, -2)),
    "list_of_slices": lambda xp: [slice(0, 1)],
    "float_0d": lambda xp: xp.array(1.0),
}


@pytest.mark.parametrize("name", sorted(EDGE_KEYS))
def test_edge_keys(name):
    xn = base((3, 4))
    key = EDGE_KEYS[name]
    same_getitem(xn, key(numpy), key(mp))
    x = mp.array(xn)
    try:
        xn[key(numpy)] = -1
    except ERRORS as e:
        with pytest.raises(type(e)):
            x[key(mp)] = -1
    else:
        x[key(mp)] = -1
        check(x, xn)


def test_minpy_bad_index_arrays():
    x = mp.arange(5)
    with pytest.raises(IndexError):
        x[mp.array([0, 5])]
    with pytest.raises(IndexError):
        x[mp.array([0.0, 1.0])]
    with pytest.raises(IndexError):
        x[mp.array([True, False])]


# ------------------------------------------------------------------ __setitem__
@given(data=st.data())
def test_setitem_basic_with_scalar_and_broadcast(data):
    shape = data.draw(SHAPES)
    idx = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    xn = base(shape, numpy.float64)
    x = mp.array(xn)
    target_shape = xn[idx].shape
    # a value shape that broadcasts into the target: a suffix, some sides set to 1
    k = data.draw(st.integers(0, len(target_shape)))
    nd = len(target_shape)
    ones = data.draw(st.lists(st.booleans(), min_size=nd, max_size=nd))
    bshape = tuple(1 if o else n for o, n in zip(ones[k:], target_shape[k:]))
    value = numpy.arange(int(numpy.prod(bshape)), dtype=numpy.float64).reshape(bshape) - 50
    cases = [(3.5, 3.5), (value, value), (value, mp.array(value))]
    if value.size:                  # an empty nested list loses the shape
        cases.append((value.tolist(), value.tolist()))
    for v_np, v_mp in cases:
        xn[idx] = v_np
        x[idx] = v_mp
        check(x, xn)


@pytest.mark.parametrize("kind", ["numpy", "minpy"])
@given(data=st.data())
def test_setitem_advanced_and_mask(data, kind):
    shape = data.draw(SHAPES)
    xn = base(shape)
    x = mp.array(xn)
    mask = xn % 3 == 0
    xn[mask] = -1
    x[to_minpy_index(mask, kind)] = -1
    check(x, xn)
    idx = data.draw(hnp.integer_array_indices(shape))
    vals = -numpy.arange(xn[idx].size).reshape(xn[idx].shape) - 10
    xn[idx] = vals
    x[to_minpy_index(idx, kind)] = mp.array(vals) if kind == "minpy" else vals
    check(x, xn)


def test_setitem_repeated_indices_last_write_wins():
    xn = numpy.zeros(5)
    x = mp.zeros(5)
    idx = numpy.array([1, 3, 1, 1, 3])
    vals = numpy.arange(5.0) + 1
    xn[idx] = vals
    x[mp.array(idx)] = mp.array(vals)
    check(x, xn)
    assert float(x[1]) == 4.0 and float(x[3]) == 5.0
    x[[0, 0]] += 1                  # buffered like numpy: one increment
    xn[[0, 0]] += 1
    check(x, xn)


def test_setitem_errors_and_casting():
    xn, x = base((3, 4)), mp.array(base((3, 4)))
    for idx, val in [((0,), numpy.ones(3)), ((slice(None),), numpy.ones((2, 4)))]:
        with pytest.raises(ValueError):
            xn[idx] = val
        with pytest.raises(ValueError):
            x[idx] = mp.array(val)
    x[0] = 2.9                      # cast like numpy (truncation into int64)
    xn[0] = 2.9
    check(x, xn)
    x[mp.array(1)] = mp.array([7, 8, 9, 10])
    xn[1] = [7, 8, 9, 10]
    check(x, xn)


# ------------------------------------------------------------------ functions
@given(data=st.data())
def test_take_and_put(data):
    shape = data.draw(SHAPES)
    xn = base(shape)
    x = mp.array(xn)
    n = xn.size
    ind = data.draw(hnp.arrays(numpy.int64, st.integers(0, 6), elements=st.integers(-n, n - 1)))
    check(mp.take(x, mp.array(ind)), numpy.take(xn, ind))
    check(x.take(ind.tolist()), xn.take(ind))
    ax = data.draw(st.integers(0, xn.ndim - 1))
    k = xn.shape[ax]
    ind2 = data.draw(st.lists(st.integers(-k, k - 1), max_size=4))
    check(mp.take(x, ind2, axis=ax), numpy.take(xn, ind2, axis=ax))
    for mode in ("wrap", "clip"):
        check(mp.take(x, [n + 3, -n - 2], mode=mode), numpy.take(xn, [n + 3, -n - 2], mode=mode))
    vals = -numpy.arange(len(ind)) - 1
    assert mp.put(x, mp.array(ind), mp.array(vals)) is None
    numpy.put(xn, ind, vals)
    check(x, xn)
    with pytest.raises(IndexError):
        numpy.put(xn, [n], [0])
    with pytest.raises(IndexError):
        mp.put(x, [n], [0])


def test_inplace_functions_mutate():
    cases = [
        ("place", lambda xp, a: xp.place(a, a > 5, [-1, -2])),
        ("putmask", lambda xp, a: xp.putmask(a, a % 2 == 0, xp.asarray([10, 20, 30]))),
        ("copyto", lambda xp, a: xp.copyto(a, xp.arange(4))),
        ("copyto_where", lambda xp, a: xp.copyto(a, 0, where=a < 4)),
        ("copyto_cast", lambda xp, a: xp.copyto(a, xp.ones(4) * 2.0, casting="unsafe")),
        ("fill_diagonal", lambda xp, a: xp.fill_diagonal(a, 99)),
        ("fill_diagonal_wrap", lambda xp, a: xp.fill_diagonal(a.reshape(4, 3), [5, 6], wrap=True)),
        ("put_along_axis", lambda xp, a: xp.put_along_axis(
            a, xp.argmax(a, axis=1, keepdims=True), -5, axis=1)),
        ("put_along_axis_0", lambda xp, a: xp.put_along_axis(
            a, xp.asarray([[2, 0, 1, 0]]), xp.asarray([[7, 8, 9, 6]]), axis=0)),
    ]
    for name, f in cases:
        xn = base((3, 4)) * 3 % 11
        x = mp.array(xn)
        data = x._data
        assert f(numpy, xn) is None, name
        assert f(mp, x) is None, name
        check(x, xn)
        assert x._data is data, name


def test_copyto_errors():
    with pytest.raises(TypeError):
        numpy.copyto(numpy.zeros(3, dtype=int), numpy.ones(3))
    with pytest.raises(TypeError):
        mp.copyto(mp.zeros(3, dtype=int), mp.ones(3))
    with pytest.raises(ValueError):
        mp.copyto(mp.zeros(3), mp.ones(4))


@given(hnp.arrays(numpy.int8, SHAPES, elements=st.integers(-2, 2)))
def test_nonzero_where_argwhere_flatnonzero(an):
    a = mp.array(an)
    for fn in ("nonzero", "argwhere", "flatnonzero"):
        res, exp = getattr(mp, fn)(a), getattr(numpy, fn)(an)
        if isinstance(exp, tuple):
            assert isinstance(res, tuple) and len(res) == len(exp)
            for r, e in zip(res, exp):
                check(r, e)
        else:
            check(res, exp)
    for r, e in zip(mp.where(a > 0), numpy.where(an > 0)):
        check(r, e)
    check(mp.where(a > 0, a, mp.array(-9)), numpy.where(an > 0, an, numpy.array(-9)))
    check(mp.where(a > 0, a, -9), numpy.where(an > 0, an, -9))
    check(mp.where(a < 0, 1.5, a), numpy.where(an < 0, 1.5, an))


def test_ix_unravel_ravel_multi_index():
    xn = base((4, 5))
    x = mp.array(xn)
    ix = mp.ix_([0, 2], mp.array([1, 3, 4]))
    exp = numpy.ix_([0, 2], [1, 3, 4])
    for r, e in zip(ix, exp):
        check(r, e)
    check(x[ix], xn[exp])
    check(x[mp.ix_(mp.array([True, False, True, True]), [0])],
          xn[numpy.ix_([True, False, True, True], [0])])
    for args in [(17, (4, 5)), ([3, 19, 0], (4, 5)), (7, (4, 5), "F")]:
        res, exp = mp.unravel_index(*args), numpy.unravel_index(*args)
        assert isinstance(res, tuple)
        for r, e in zip(res, exp):
            check(r, e)
    res = mp.unravel_index(mp.array([3, 19]), (4, 5))
    for r, e in zip(res, numpy.unravel_index([3, 19], (4, 5))):
        check(r, e)
    multi = (numpy.array([3, 0, 1]), numpy.array([4, 2, 0]))
    check(mp.ravel_multi_index(tuple(mp.array(m) for m in multi), (4, 5)),
          numpy.ravel_multi_index(multi, (4, 5)))
    check(mp.ravel_multi_index(multi, (4, 5), order="F"),
          numpy.ravel_multi_index(multi, (4, 5), order="F"))
    check(mp.ravel_multi_index(([5], [7]), (4, 5), mode="wrap"),
          numpy.ravel_multi_index(([5], [7]), (4, 5), mode="wrap"))
    with pytest.raises(ValueError):
        numpy.ravel_multi_index(([5], [0]), (4, 5))
    with pytest.raises(ValueError):
        mp.ravel_multi_index(([5], [0]), (4, 5))
    with pytest.raises(ValueError):
        mp.unravel_index(20, (4, 5))


def test_general_path_is_exercised(path, monkeypatch):
    from minpy.core import call as primitive
    seen = []
    real_run = primitive.run_untraced

    def counting_run(prim, args, kwargs):
        seen.append(prim.qualname)
        return real_run(prim, args, kwargs)
    monkeypatch.setattr(primitive, "run_untraced", counting_run)
    x = mp.arange(6)
    x[1:3] = x[[4, 5]]
    check(x, numpy.array([0, 4, 5, 3, 4, 5]))
    if path != "fast":
        assert seen[-2:] == ["ndarray.__getitem__", "ndarray.__setitem__"]
    else:
        assert "ndarray.__getitem__" not in seen
