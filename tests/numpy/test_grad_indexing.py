"""Gradients of indexing (minpy/numpy/vjp_indexing.py): ``x[key]`` for every key
form, ``x[key] = v`` inside a gradient, the indexing routines, the index
producers (no gradient) and the in-place routines that refuse traced arrays."""
import numpy
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import minpy
import minpy.numpy as mnp
from minpy.numpy.vjp_indexing import index_update, scatter_add
from minpy.testing import check_grads
from _standin import standin_gpu  # noqa: F401  (fixture)
from _host import host as _host

fast = settings(max_examples=10)
I = numpy.array


def rnd(shape, seed=0):
    return mnp.array(numpy.random.default_rng(seed).standard_normal(shape))


def cg(f, *shapes, **kw):
    check_grads(f, *[rnd(s, seed=i) for i, s in enumerate(shapes)], order=2, **kw)


MASK = I([[True, False, True, True], [False, False, True, False], [True, True, False, False]])

# (id, key) applied to an array of shape (3, 4, 5) or, for 2-D masks, (3, 4)
KEYS_3D = [
    ("int", 1), ("neg_int", -1), ("int_tuple", (2, 1)), ("scalar", (0, 3, -2)),
    ("slice", slice(1, None)), ("slice_step", (slice(None), slice(None, None, 2))),
    ("slice_neg_step", (slice(None, None, -1), 1)), ("ellipsis", (Ellipsis, 1)),
    ("ellipsis_mid", (0, Ellipsis, slice(1, 3))), ("newaxis", (None, 1, None)),
    ("newaxis_ellipsis", (Ellipsis, None)), ("empty_tuple", ()),
    ("int_array", I([0, 2])), ("int_array_repeat", I([1, 1, 0, 1])),
    ("int_array_neg", I([-1, 0, -1])), ("list", [2, 0, 2]),
    ("int_array_2d", I([[0, 1], [1, 1]])), ("two_arrays", (I([0, 0, 2]), I([1, 1, 3]))),
    ("arrays_broadcast", (I([[0], [2]]), slice(None), I([1, 1, 4]))),
    ("array_slice_array", (I([0, 0]), slice(1, 3), I([4, 4]))),
    ("slice_array", (slice(None), I([3, 3, 0]))), ("array_last", (Ellipsis, I([0, 4, 0]))),
    ("int_and_array", (1, I([2, 2]))), ("bool_1d", I([True, False, True])),
    ("bool_axis1", (slice(None), I([False, True, True, False]))),
    ("bool_and_int_array", (I([True, False, True]), slice(None), I([1, 3]))),
    ("bool_scalar", True), ("newaxis_array", (None, I([1, 1]))),
]


@pytest.mark.parametrize("kind", ["numpy", "minpy", "list"])
@pytest.mark.parametrize("name,key", KEYS_3D, ids=[k[0] for k in KEYS_3D])
def test_getitem(name, key, kind):
    def conv(k):
        if isinstance(k, numpy.ndarray):
            return {"numpy": k, "minpy": mnp.array(k), "list": k.tolist()}[kind]
        return k
    if kind == "list" and name in ("bool_scalar",):
        pytest.skip("no array in the key")
    mkey = tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)
    x = rnd((3, 4, 5))
    numpy.testing.assert_array_equal(_host(x[mkey]), _host(x)[key])
    cg(lambda x: x[mkey] * x[mkey], (3, 4, 5))


@pytest.mark.parametrize("mask", [MASK, mnp.array(MASK)], ids=["numpy", "minpy"])
def test_getitem_full_mask(mask):
    cg(lambda x: x[mask] ** 2, (3, 4))
    cg(lambda x: x[mask > 0.5][..., None] * 2.0, (3, 4))   # mask of a comparison (untraced)


def test_getitem_repeated_exact_and_second_order():
    x = mnp.array([1.0, 2.0, 3.0])
    idx = [0, 0, 0, 2]
    g = minpy.grad(lambda x: mnp.sum(x[idx] ** 3))(x)
    numpy.testing.assert_allclose(_host(g), [9.0, 0.0, 27.0])
    # d/dx of <grad, v>: diagonal Hessian 6 * count * x
    v = mnp.array([1.0, 1.0, 1.0])
    h = minpy.grad(lambda x: mnp.sum(minpy.grad(lambda y: mnp.sum(y[idx] ** 3))(x) * v))(x)
    numpy.testing.assert_allclose(_host(h), [18.0, 0.0, 18.0])
    # third order through scatter_add -> gather -> scatter_add
    check_grads(lambda x: x[I([[0, 2], [0, 0]])] ** 3, x, order=3)


def test_getitem_via_iteration_and_methods():
    cg(lambda x: mnp.stack([row * (i + 1.0) for i, row in enumerate(x)]), (3, 2))
    cg(lambda x: mnp.take(x, [1, 1, 0]) + x.take([2, 0, 0], axis=1).ravel()[:3], (2, 3))


@fast
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data())
def test_getitem_random_advanced(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    idx = data.draw(hnp.arrays(numpy.int64, st.integers(1, 5),
                               elements=st.integers(-shape[axis], shape[axis] - 1)))
    key = (slice(None),) * axis + (idx,)
    cg(lambda x: x[key] ** 2, shape)
    mask = data.draw(hnp.arrays(numpy.bool_, shape[:axis + 1]))
    cg(lambda x: x[mask] * 3.0, shape)


def test_scatter_add_primitive():
    key = (slice(None), I([0, 2, 0]))
    out = scatter_add(mnp.ones((2, 3)), (2, 4), key)
    numpy.testing.assert_array_equal(_host(out), [[2, 0, 1, 0], [2, 0, 1, 0]])
    cg(lambda g: scatter_add(g * g, (2, 4), key), (2, 3))
    cg(lambda g: scatter_add(g, (3, 4), (slice(1, None), 2)) ** 2, (2,))


# ------------------------------------------------------------ x[key] = v inside grad
def test_setitem_into_untraced_buffer():
    w = mnp.arange(5.0)

    def f(x):
        buf = mnp.zeros(5)
        buf[1:3] = x
        return mnp.sum(buf * w)
    numpy.testing.assert_array_equal(_host(minpy.grad(f)(mnp.array([7.0, 8.0]))), [1.0, 2.0])
    cg(lambda x: _write(mnp.zeros((3, 4)), (slice(None), 1), x) ** 2, (3,))


def _write(buf, key, value):
    buf[key] = value
    return buf


def test_setitem_traced_target():
    def f(x):
        y = x * 1.0
        y[0] = y[1] * y[2]
        y[-1] = 0.0
        return y * x
    cg(f, (4,))
    cg(lambda x, v: _write(x * 1.0, (I([0, 2]), slice(1, 3)), v), (3, 4), (1, 2))


def test_setitem_broadcast_value_and_mask():
    cg(lambda x, s: _write(x * 2.0, (slice(None), 1), s), (3, 4), ())
    cg(lambda x: _write(x * 1.0, x > 0, 0.0) * x, (3, 4))
    cg(lambda x, v: _write(x + 0.0, MASK, v), (3, 4), (6,))


def test_setitem_repeated_writes():
    w = mnp.array([10.0, 20.0, 30.0])

    def f(x):
        buf = mnp.zeros(3)
        buf[0] = x[0]
        buf[0] = x[1]           # overwrites: x[0] gets no gradient
        buf[2] = x[2]
        return mnp.sum(buf * w)
    numpy.testing.assert_array_equal(_host(minpy.grad(f)(mnp.array([1.0, 2.0, 3.0]))),
                                     [0.0, 10.0, 30.0])


def test_setitem_repeated_index_last_write_wins():
    ref = numpy.zeros(3)
    ref[[0, 0, 2]] = [1.0, 2.0, 3.0]
    assert ref[0] == 2.0            # NumPy keeps the last write

    def f(x):
        buf = mnp.zeros(3)
        buf[[0, 0, 2]] = x
        return mnp.sum(buf * mnp.array([10.0, 20.0, 30.0]))
    g = minpy.grad(f)(mnp.array([1.0, 2.0, 3.0]))
    numpy.testing.assert_array_equal(_host(g), [0.0, 10.0, 30.0])
    cg(lambda x, v: _write(x * 1.0, (I([1, 0, 1]),), v) ** 2, (2, 3), (3, 1))


def test_index_update_functional():
    cg(lambda x, v: index_update(x, (slice(None), I([0, 2])), v), (2, 3), (2,))
    x = mnp.array([1.0, 2.0])
    out = index_update(x, 0, 5.0)
    assert out.tolist() == [5.0, 2.0] and x.tolist() == [1.0, 2.0]


def test_sort_and_fill_methods_inside_grad():
    def f(x):
        y = x * 1.0
        y.sort()
        z = x * 0.0
        z.fill(2.0)
        return y * mnp.arange(1.0, 5.0) + z
    x = mnp.array([3.0, 1.0, 4.0, 2.0])
    numpy.testing.assert_array_equal(_host(minpy.grad(lambda x: mnp.sum(f(x)))(x)),
                                     [3.0, 1.0, 4.0, 2.0])


def test_write_into_saved_array_raises():
    idx = mnp.array([0, 1])
    buf = mnp.ones(2)

    def f(x):
        y = mnp.concatenate([x, buf])
        buf[0] = 5.0
        return mnp.sum(y)
    with pytest.raises(RuntimeError, match="in-place write"):
        minpy.grad(f)(mnp.array([1.0, 2.0]))

    def g(x):
        y = x[idx]
        idx[0] = 1
        return mnp.sum(y)
    with pytest.raises(RuntimeError, match="in-place write"):
        minpy.grad(g)(mnp.array([1.0, 2.0]))


# ------------------------------------------------------------ indexing routines
ROUTINES = [
    ("take_None", lambda x: mnp.take(x, I([[5, 0], [5, 5]])), [(2, 3)]),
    ("take_axis", lambda x: mnp.take(x, [2, 0, 2], axis=1), [(2, 3)]),
    ("take_neg_axis", lambda x: mnp.take(x, mnp.array([1, -1]), axis=-1), [(2, 2, 3)]),
    ("take_scalar", lambda x: mnp.take(x, 4), [(2, 3)]),
    ("take_wrap", lambda x: mnp.take(x, [4, -5, 1], axis=0, mode="wrap"), [(3, 2)]),
    ("take_clip", lambda x: mnp.take(x, [7, -2, 1], mode="clip"), [(2, 3)]),
    ("take_along_axis", lambda x: mnp.take_along_axis(x, I([[0, 0], [2, 1]]), 1), [(2, 3)]),
    ("take_along_axis0", lambda x: mnp.take_along_axis(x, I([[1, 0, 1]]), axis=0), [(2, 3)]),
    ("take_along_None", lambda x: mnp.take_along_axis(x, I([5, 5, 0]), None), [(2, 3)]),
    ("take_along_bcast", lambda x: mnp.take_along_axis(x, I([[[1], [0]]]), -1), [(3, 2, 2)]),
    ("compress", lambda x: mnp.compress([True, False, True], x, axis=0), [(3, 2)]),
    ("compress_short", lambda x: mnp.compress(I([False, True]), x, axis=1), [(2, 3)]),
    ("compress_None", lambda x: mnp.compress([0, 1, 1, 0, 1], x), [(2, 3)]),
    ("compress_method", lambda x: x.compress([1, 0, 1], axis=-1), [(2, 3)]),
    ("extract", lambda x: mnp.extract(MASK, x), [(3, 4)]),
    ("choose_list", lambda x, y, z: mnp.choose(I([[0, 2, 1], [2, 2, 0]]), [x, y, z]),
     [(2, 3), (3,), (2, 1)]),
    ("choose_array", lambda c: mnp.choose(I([1, 0, 1, 2]), c), [(3, 4)]),
    ("choose_wrap", lambda x, y: mnp.choose(I([0, 3, -1]), (x, y), mode="wrap"), [(3,), (3,)]),
    ("choose_clip", lambda x, y: mnp.choose(I([0, 3, -1]), (x, y), mode="clip"), [(3,), (3,)]),
    ("choose_method", lambda x, y: mnp.array([1, 0, 1]).choose([x, y]), [(3,), (3,)]),
    ("select", lambda x, y: mnp.select([MASK, ~MASK[::-1]], [x, y]), [(3, 4), (3, 4)]),
    ("select_default", lambda x, y, d: mnp.select([MASK], [x * y], d), [(3, 4), (4,), (3, 1)]),
    ("select_default_kw", lambda x, d: mnp.select([MASK, MASK], [x, 2 * x], default=d),
     [(3, 4), ()]),
    ("where_index", lambda x: x[mnp.where(x > 0)] * x[mnp.nonzero(x < 0)].sum(), [(3, 4)]),
]


@pytest.mark.parametrize("name,f,shapes", ROUTINES, ids=[r[0] for r in ROUTINES])
def test_routines(name, f, shapes):
    cg(f, *shapes)


def test_take_accumulates_repeats():
    x = mnp.array([1.0, 2.0, 3.0])
    g = minpy.grad(lambda x: mnp.sum(mnp.take(x, [0, 2, 0, 0])))(x)
    numpy.testing.assert_array_equal(_host(g), [3.0, 0.0, 1.0])


# ------------------------------------------------------------ no gradient
NONDIFF = [
    lambda x: mnp.nonzero(x > 0)[0], lambda x: mnp.nonzero(x)[0], lambda x: mnp.argwhere(x),
    lambda x: mnp.flatnonzero(x), lambda x: mnp.argsort(x), lambda x: mnp.argpartition(x, 1),
    lambda x: mnp.ix_(x, x)[0],
    lambda x: mnp.searchsorted(mnp.sort(x), x), lambda x: mnp.lexsort((x, x)),
    lambda x: x.nonzero()[0], lambda x: x.argsort(),
]   # (unique's values are the input's values: differentiable, see test_grad_audit.py)


@pytest.mark.parametrize("k", range(len(NONDIFF)))
def test_index_producers_are_untraced(k):
    x = mnp.array([3.0, -1.0, 2.0, 0.5])
    seen = []

    def f(x):
        r = NONDIFF[k](x)
        seen.append(r)
        return mnp.sum(x * mnp.sum(r.astype(numpy.float64)))
    g = minpy.grad(f)(x)
    assert seen[0]._node is None
    numpy.testing.assert_array_equal(_host(g), [_host(seen[0]).sum()] * 4)


def test_where_one_argument_gives_no_gradient():
    # where(x) shares its primitive with where(c, x, y), so its integer outputs
    # are recorded; the rule for the condition contributes nothing.
    x = mnp.array([3.0, 0.0, 2.0, 0.5])

    def f(x):
        idx = mnp.where(x)
        assert idx[0].dtype.kind == "i"
        return mnp.sum(x[idx] ** 2) + mnp.sum(x[1:] * idx[0])
    g = minpy.grad(f)(x)
    numpy.testing.assert_array_equal(_host(g), [6.0, 0.0, 4.0 + 2, 1.0 + 3])


# (put, place, putmask, put_along_axis, fill_diagonal are replayed functionally:
# tests/numpy/test_grad_creation.py; ufunc.at: tests/numpy/test_grad_ufunc_methods.py)
@pytest.mark.parametrize("op", [lambda y: mnp.add.at(y, [0, 0], 1.0)], ids=["add.at"])
def test_inplace_routines_on_traced_are_replayed(op):
    def f(x):
        y = x * 1.0
        op(y)
        return mnp.sum(y)
    numpy.testing.assert_array_equal(_host(minpy.grad(f)(rnd((2, 2)))), numpy.ones((2, 2)))

    def g(x):                   # traced values into an untraced array
        buf = mnp.zeros((2, 2))
        mnp.add.at(buf, [0], x[0, 0])
        return mnp.sum(buf)
    numpy.testing.assert_array_equal(_host(minpy.grad(g)(rnd((2, 2)))), [[2.0, 0.0], [0.0, 0.0]])


def test_copyto_is_functional():
    def f(x):
        buf = mnp.zeros((2, 3))
        mnp.copyto(buf, x)
        mnp.copyto(buf, 7.0, where=mnp.array([True, False, True]))
        return buf * buf
    cg(f, (3,))
    x = mnp.array([1.0, 2.0, 3.0])
    numpy.testing.assert_array_equal(_host(minpy.grad(lambda x: mnp.sum(f(x)))(x)),
                                     [0.0, 8.0, 0.0])


def test_piecewise_on_traced_is_differentiable():
    # more in test_grad_gaps.py
    x = rnd(3)
    g = minpy.grad(lambda x: mnp.sum(mnp.piecewise(x, [x > 0], [lambda v: v * 2])))(x)
    numpy.testing.assert_array_equal(_host(g), numpy.where(_host(x) > 0, 2.0, 0.0))


CHAPTER = "take take_along_axis compress extract choose select".split()
NONDIFF_NAMES = ("nonzero argwhere flatnonzero ix_ argsort argpartition lexsort searchsorted "
                 "ravel_multi_index unravel_index").split()


def test_registry():
    from minpy.core.primitive import PRIMITIVES
    for name in CHAPTER:
        assert getattr(mnp, name)._prim.vjp is not None, name
    for name in NONDIFF_NAMES:
        assert getattr(mnp, name)._prim.nondiff, name
    for q in ("ndarray.__getitem__", "index_update", "scatter_add"):
        assert PRIMITIVES[q].vjp, q


def test_rules_on_a_device(standin_gpu):
    """The scatter-add and index-map rules run where the arrays live (a stand-in GPU)."""
    fs = [lambda x: x[I([0, 0, 2]), 1] ** 2, lambda x: x[x > 0] * 2.0,
          lambda x: x[[0, 0, 2]] ** 2, lambda x: x[[2, 0], [[1], [3]]] * x[0, 0],
          lambda x: mnp.take(x, mnp.array([1, 1, 5])), lambda x: mnp.take(x, [2, 0, 2], axis=1),
          lambda x: mnp.sort(x, axis=0),
          lambda x: mnp.pad(x, 1, mode="edge"), lambda x: mnp.diagonal(x, 1),
          lambda x: mnp.insert(x, 1, 2.0, axis=1), lambda x: mnp.repeat(x, [1, 0, 2], axis=0),
          lambda x: _write(mnp.zeros((3, 4)), ([0, 0], [1, 1]), x[0, :2]) * x]
    with minpy.gpu(0):
        x = rnd((3, 4))
        assert standin_gpu.owns(x._data)
        for f in fs:
            check_grads(f, x, order=2)
    calls = minpy.dispatch.stats()["calls"]
    assert calls["scatter_add"].get("standin", 0) > 0
    # only what the CuPy table lacks (insert) ran on the host
    assert set(minpy.dispatch.stats()["fallbacks"]) <= standin_gpu.api.never
