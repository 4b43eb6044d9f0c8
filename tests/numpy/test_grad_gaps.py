"""Gradients that used to be missing: matmul/vecdot/matvec/vecmat with ``axes=``,
``axis=``, ``keepdims=True``; every string mode of ``pad``; ``r_``/``c_``;
``piecewise``; ``array``/``asarray`` of nested lists of traced arrays; and the
one-argument ``where`` (never recorded). Gradients are checked to second order
against finite differences; values and dtypes against NumPy."""
import numpy
import pytest

import minpy
import minpy.numpy as mnp
from minpy.core.tape import active_tapes
from minpy.numpy.vjp_composite import _pad_ref
from minpy.testing import check_grads

from _strategies import random_array
from _standin import standin_gpu  # noqa: F401  (fixture)


rnd = random_array


def cg(f, *shapes, dtype=numpy.float64):
    check_grads(f, *[rnd(s, seed=i, dtype=dtype) for i, s in enumerate(shapes)], order=2)


def same(actual, desired):
    """Values, shape and dtype of a minpy result equal NumPy's."""
    a = actual.asnumpy() if isinstance(actual, minpy.Array) else numpy.asarray(actual)
    d = numpy.asarray(desired)
    assert a.dtype == d.dtype and a.shape == d.shape, (a.dtype, d.dtype, a.shape, d.shape)
    numpy.testing.assert_allclose(a, d, rtol=1e-6 if d.dtype == numpy.float32 else 1e-12,
                                  atol=1e-12)


# ------------------------------------------------------------ matmul & co
MATMUL = [
    ("matmul_axes", lambda a, b: mnp.matmul(a, b, axes=[(1, 2), (0, 2), (0, 1)]),
     [(3, 4, 5), (5, 3, 2)]),
    ("matmul_axes_neg", lambda a, b: mnp.matmul(a, b, axes=[(-3, -1), (-1, -2), (-1, -2)]),
     [(4, 2, 5), (1, 3, 5)]),
    ("matmul_axes_bcast", lambda a, b: mnp.matmul(a, b, axes=[(0, 1), (1, 2), (2, 0)]),
     [(4, 5, 2, 1), (3, 5, 2)]),
    ("matmul_axes_1d_b", lambda a, b: mnp.matmul(a, b, axes=[(1, 2), (0,), (1,)]),
     [(3, 4, 5), (5,)]),
    ("matmul_axes_1d_a", lambda a, b: mnp.matmul(a, b, axes=[(0,), (2, 0), (0,)]),
     [(4,), (2, 6, 4)]),
    ("vecdot_axis0", lambda x, y: mnp.vecdot(x, y, axis=0), [(3, 4), (3, 4)]),
    ("vecdot_axis0_bcast", lambda x, y: mnp.vecdot(x, y, axis=0), [(4, 2, 1), (4, 3)]),
    ("vecdot_axis1_bcast", lambda x, y: mnp.vecdot(x, y, axis=1), [(2, 3, 1), (4, 3)]),
    ("vecdot_keepdims", lambda x, y: mnp.vecdot(x, y, keepdims=True), [(3, 4), (1, 4)]),
    ("vecdot_axis0_keepdims", lambda x, y: mnp.vecdot(x, y, axis=0, keepdims=True),
     [(4, 2, 1), (4, 3)]),
    ("vecdot_axes_out", lambda x, y: mnp.vecdot(x, y, axes=[(0,), (1,), (1,)], keepdims=True),
     [(3, 4), (4, 3)]),
    ("vecdot_axes_int", lambda x, y: mnp.vecdot(x, y, axes=[1, 0]), [(4, 3), (3, 4)]),
    ("matvec_axes", lambda a, v: mnp.matvec(a, v, axes=[(2, 1), (0,), (0,)]),
     [(3, 5, 4), (5,)]),
    ("vecmat_axes", lambda x, a: mnp.vecmat(x, a, axes=[0, (1, 0), 1]), [(4,), (5, 4, 3)]),
]


@pytest.mark.parametrize("f,shapes", [c[1:] for c in MATMUL], ids=[c[0] for c in MATMUL])
def test_matmul_family_axes_grads(f, shapes):
    cg(f, *shapes)


def test_matmul_family_axes_complex():
    cg(lambda x, y: mnp.vecdot(x, y, axis=0, keepdims=True), (3, 4), (3, 1), dtype=complex)
    cg(lambda a, b: mnp.matmul(a, b, axes=[(0, 1), (1, 0), (1, 0)]), (3, 2), (4, 2),
       dtype=complex)


def test_matmul_axes_equal_moved_default():
    """The axes= gradient equals that of the same product with the axes moved last."""
    a, b = rnd((3, 4, 5)), rnd((5, 3, 2), 1)
    w = rnd((4, 2, 3), 2)
    same(mnp.matmul(a, b, axes=[(1, 2), (0, 2), (0, 1)]),
         numpy.matmul(a.asnumpy(), b.asnumpy(), axes=[(1, 2), (0, 2), (0, 1)]))
    g1 = minpy.grad(lambda a, b: mnp.sum(w * mnp.matmul(a, b, axes=[(1, 2), (0, 2), (0, 1)])),
                    (0, 1))(a, b)
    g2 = minpy.grad(lambda a, b: mnp.sum(mnp.moveaxis(w, (0, 1), (-2, -1)) * mnp.matmul(
        a, mnp.moveaxis(b, 1, 0))), (0, 1))(a, b)
    for u, v in zip(g1, g2):
        same(u, v.asnumpy())


def test_vecdot_axis_keepdims_exact():
    x, y, w = rnd((3, 4)), rnd((3, 4), 1), rnd((1, 4), 2)
    gx, gy = minpy.grad(lambda x, y: mnp.sum(w * mnp.vecdot(x, y, axis=0, keepdims=True)),
                        (0, 1))(x, y)
    same(gx, (w * y).asnumpy())
    same(gy, (w * x).asnumpy())


# ------------------------------------------------------------ pad
PAD = [     # (id, mode, shape, pad_width, keywords)
    ("constant", "constant", (3, 4), ((1, 2), (0, 3)), {}),
    ("edge", "edge", (3, 4), 2, {}),
    ("reflect", "reflect", (3, 4), ((5, 2), (1, 7)), {}),
    ("reflect_odd", "reflect", (3, 4), ((5, 2), (1, 7)), {"reflect_type": "odd"}),
    ("symmetric_odd", "symmetric", (2, 3, 4), ((2, 3), (4, 1), (0, 6)), {"reflect_type": "odd"}),
    ("symmetric_odd_1d", "symmetric", (5,), (9, 3), {"reflect_type": "odd"}),
    ("reflect_odd_singleton", "reflect", (1, 4), 2, {"reflect_type": "odd"}),
    ("wrap", "wrap", (3, 4), ((4, 1), (2, 5)), {}),
    ("linear_ramp", "linear_ramp", (3, 4), ((2, 1), (3, 0)), {}),
    ("linear_ramp_ends", "linear_ramp", (2, 3, 4), 2,
     {"end_values": ((1.0, -2.0), (0.5, 3.0), (0.0, 4.0))}),
    ("maximum", "maximum", (3, 4), ((1, 2), (2, 1)), {}),
    ("minimum", "minimum", (3, 4), 2, {"stat_length": 2}),
    ("mean", "mean", (3, 5), ((2, 1), (1, 3)), {"stat_length": ((1, 2), (3, 9))}),
    ("mean_1d", "mean", (6,), 3, {}),
    ("median", "median", (4, 5), ((1, 2), (2, 0)), {"stat_length": 3}),
    ("median_all", "median", (3, 4), 1, {}),
]


@pytest.mark.parametrize("mode,shape,pw,kw", [c[1:] for c in PAD], ids=[c[0] for c in PAD])
def test_pad_modes_grads(mode, shape, pw, kw):
    cg(lambda x: mnp.pad(x, pw, mode, **kw), shape)


@pytest.mark.parametrize("mode,shape,pw,kw", [c[1:] for c in PAD], ids=[c[0] for c in PAD])
@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
def test_pad_reimplementation_values(mode, shape, pw, kw, dtype):
    """The re-implementation that is differentiated equals numpy.pad (all cases)."""
    x = rnd(shape, 3, dtype)
    want = numpy.pad(x.asnumpy(), pw, mode, **kw)
    same(mnp.pad(x, pw, mode, **kw), want)
    got = _pad_ref(x, pw, mode, **kw)
    assert got.shape == want.shape and got.dtype == want.dtype
    numpy.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,pw", [((3, 4), ((4, 1), (2, 5))), ((2, 3), ((0, 3), (1, 1))),
                                      ((3,), (7, 9)), ((2, 2), 5)], ids=str)
def test_pad_wrap_wider_than_its_axis_on_a_device(standin_gpu, shape, pw):
    """CuPy 14's pad(mode='wrap') still pads as NumPy < 1.25 did where a width exceeds
    its axis (NumPy now repeats whole periods): minpy gathers through NumPy's index
    map there, never asking the backend's pad."""
    x = rnd(shape, 3)
    want = numpy.pad(x.asnumpy(), pw, "wrap")
    with minpy.gpu(0):
        xg = mnp.array(x.asnumpy())
        got = mnp.pad(xg, pw, "wrap")
        assert standin_gpu.owns(got._data)
        same(got, want)
        cg(lambda x: mnp.pad(x, pw, "wrap"), shape)
    assert standin_gpu.calls["pad"] == 0


@pytest.mark.parametrize("pw", [1, (3, 0), ((0, 4), (7, 2))], ids=str)
@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_odd_reflection_any_width(mode, pw):
    cg(lambda x: mnp.pad(x, pw, mode, reflect_type="odd"), (2, 3))


@pytest.mark.parametrize("values", [lambda c: c, lambda c: (c, 2.0 * c), lambda c: [[c, 1.0]],
                                    lambda c: [[c, -c], [2.0, c * c]]],
                         ids=["scalar", "pair", "nested", "per_axis"])
@pytest.mark.parametrize("mode,key", [("constant", "constant_values"),
                                      ("linear_ramp", "end_values")])
def test_pad_values_grads(mode, key, values):
    """Gradients w.r.t. traced constant_values / end_values (broadcast like NumPy)."""
    x, c, pw = rnd((2, 3)), mnp.array(0.7), ((1, 2), (2, 1))
    check_grads(lambda x, c: mnp.pad(x, pw, mode, **{key: values(c)}), x, c, order=2)
    host = numpy.asarray(values(numpy.float64(0.7)), dtype=float)
    same(mnp.pad(x, pw, mode, **{key: values(c)}),
         numpy.pad(x.asnumpy(), pw, mode, **{key: host}))


def test_pad_constant_values_exact():
    x = rnd((2, 3))
    g = minpy.grad(lambda c: mnp.sum(mnp.pad(x, ((1, 0), (0, 2)), constant_values=c)))(
        mnp.array(1.5))
    assert float(g) == 3 * 5 - 2 * 3


def test_pad_callable_mode_raises_at_call():
    def mode(vector, iaxis_pad_width, iaxis, kwargs):
        vector[:iaxis_pad_width[0]] = 1.0

    reached = []

    def f(x):
        y = mnp.pad(x, 1, mode)
        reached.append(y)
        return mnp.sum(y)
    with pytest.raises(TypeError, match="pad.*mode=<function"):
        minpy.grad(f)(rnd((2, 3)))
    assert reached == []
    # untraced input under a tape, and no tape: NumPy's result
    x = rnd((2, 3))
    same(minpy.grad(lambda y: mnp.sum(y) + mnp.sum(mnp.pad(x, 1, mode)))(x), numpy.ones((2, 3)))
    same(mnp.pad(x, 1, mode), numpy.pad(x.asnumpy(), 1, mode))


def test_pad_errors_and_dispatch():
    x = rnd((2, 3))
    with pytest.raises(ValueError):
        minpy.grad(lambda x: mnp.sum(mnp.pad(x, 1, "nonsense")))(x)
    with pytest.raises(ValueError):
        minpy.grad(lambda x: mnp.sum(mnp.pad(x, 1, "wrap", reflect_type="odd")))(x)
    # numpy.pad on a traced Array comes to minpy's pad
    g = minpy.grad(lambda x: mnp.sum(numpy.pad(x, 2, "linear_ramp") ** 2))(x)
    g2 = minpy.grad(lambda x: mnp.sum(mnp.pad(x, 2, "linear_ramp") ** 2))(x)
    same(g, g2.asnumpy())
    # integer arrays under a tape: values as NumPy, no gradient
    i = mnp.arange(6).reshape(2, 3)
    same(mnp.pad(i, 2, "mean"), numpy.pad(numpy.arange(6).reshape(2, 3), 2, "mean"))


# ------------------------------------------------------------ r_, c_
CONCAT = [
    ("r_pair", lambda m, x, y: m.r_[x, y], [(3,), (4,)]),
    ("r_scalar_slice", lambda m, x, y: m.r_[x, 2.5, 0:3, y], [(3,), (2,)]),
    ("r_0d", lambda m, x, y: m.r_[x, y, x], [(), ()]),
    ("r_single", lambda m, x: m.r_[x], [(2, 3)]),
    ("r_directive", lambda m, x, y: m.r_["0,2", x, y], [(3,), (3,)]),
    ("r_axis1", lambda m, x, y: m.r_["1", x, y], [(2, 3), (2, 1)]),
    ("r_2d", lambda m, x, y: m.r_[x, y], [(2, 3), (1, 3)]),
    ("c_1d", lambda m, x, y: m.c_[x, y], [(3,), (3,)]),
    ("c_2d", lambda m, x, y: m.c_[x, y, x], [(2, 3), (2, 1)]),
    ("c_mixed", lambda m, x, y: m.c_[x, numpy.ones(3), y], [(3,), (3, 2)]),
]


@pytest.mark.parametrize("f,shapes", [c[1:] for c in CONCAT], ids=[c[0] for c in CONCAT])
def test_index_tricks_grads_and_values(f, shapes):
    cg(lambda *a: f(mnp, *a), *shapes)
    args = [rnd(s, i) for i, s in enumerate(shapes)]
    same(f(mnp, *args), f(numpy, *[a.asnumpy() for a in args]))
    traced = []
    minpy.grad(lambda *a: traced.append(f(mnp, *a)) or mnp.sum(traced[-1]))(*args)
    same(traced[0], f(numpy, *[a.asnumpy() for a in args]))


def test_r_exact_gradient():
    x, y = rnd((3,)), rnd((2,), 1)
    w = mnp.arange(1.0, 10.0)
    gx, gy = minpy.grad(lambda x, y: mnp.sum(w * mnp.r_[x, 7.0, y, 1:4:1]), (0, 1))(x, y)
    same(gx, [1.0, 2.0, 3.0])
    same(gy, [5.0, 6.0])


# ------------------------------------------------------------ piecewise
def _split_square(m, x):
    return m.piecewise(x, [x < 0, x >= 0], [lambda v: v * v, lambda v: m.sin(v) + 1.0])


def _otherwise(m, x):
    return m.piecewise(x, [x < -0.5, x > 0.5], [lambda v: v ** 3, lambda v: 2.0 * v,
                                                lambda v: v - v.mean()])


def _constant_piece(m, x):
    return m.piecewise(x, [x < 0], [3.0, lambda v: m.exp(v)])


PIECEWISE = [("split", _split_square), ("otherwise_nonelementwise", _otherwise),
             ("constant", _constant_piece)]


@pytest.mark.parametrize("shape", [(7,), (3, 4)], ids=str)
@pytest.mark.parametrize("f", [c[1] for c in PIECEWISE], ids=[c[0] for c in PIECEWISE])
def test_piecewise_grads_and_values(f, shape):
    cg(lambda x: f(mnp, x), shape)
    x = rnd(shape, 5)
    same(f(mnp, x), f(numpy, x.asnumpy()))
    seen = []
    minpy.grad(lambda x: seen.append(f(mnp, x)) or mnp.sum(seen[-1]))(x)
    same(seen[0], f(numpy, x.asnumpy()))


def test_piecewise_functions_on_a_device(standin_gpu):
    """CuPy's piecewise takes no functions: minpy runs NumPy's algorithm with its own
    indexing on the device, and the functions see the pieces as device Arrays."""
    with minpy.gpu(0):
        x = rnd((7,), 5)
    seen = []
    got = mnp.piecewise(x, [x < 0, x >= 0], [lambda v: seen.append(v) or v * v,
                                             lambda v: mnp.sin(v) + 1.0])
    same(got, _split_square(numpy, x.asnumpy()))
    assert standin_gpu.owns(got._data) and standin_gpu.owns(seen[0]._data)


def test_piecewise_traced_args_and_constants():
    x, k = rnd((6,)), mnp.array(1.3)

    def f(x, k):
        return mnp.piecewise(x, [x < 0], [lambda v, k: v * k, k], k)
    check_grads(f, x, k, order=2)
    gk = minpy.grad(lambda k: mnp.sum(f(x, k)), 0)(k)
    xs = x.asnumpy()
    numpy.testing.assert_allclose(float(gk), xs[xs < 0].sum() + (xs >= 0).sum())


def test_piecewise_0d_and_errors():
    x = mnp.array(-0.4)
    g = minpy.grad(lambda x: mnp.piecewise(x, [x < 0], [lambda v: v * v, 0.0]))(x)
    numpy.testing.assert_allclose(float(g), -0.8)
    with pytest.raises(ValueError, match="condition"):
        minpy.grad(lambda x: mnp.sum(mnp.piecewise(x, [x < 0, x > 0, x > 1], [1.0])))(rnd(3))


# ------------------------------------------------------------ array of nested lists
@pytest.mark.parametrize("fn", ["array", "asarray", "asanyarray"])
@pytest.mark.parametrize("leaf", [(), (3,), (2, 1)], ids=str)
def test_nested_array_grads(fn, leaf):
    make = getattr(mnp, fn)
    cg(lambda a, b, c, d: make([[a, b], [c * d, d]]), leaf, leaf, leaf, leaf)
    cg(lambda a, b: make(((a, b), (b, a), (a, a))), leaf, leaf)


def test_nested_array_values_dtypes():
    x, y = rnd((2,), 0, numpy.float32), rnd((2,), 1, numpy.float32)
    xs, ys = x.asnumpy(), y.asnumpy()
    cases = [
        (lambda m, x, y: m.array([[x, y], [y, x]]), {}),
        (lambda m, x, y: m.array([[x, [1.0, 2.0]], [y, y]]), {}),        # Python floats: f64
        (lambda m, x, y: m.asarray([[x[0], 2], [y[1], x[1]]]), {}),
        (lambda m, x, y: m.array([[x, y]], dtype=numpy.complex128), {}),
        (lambda m, x, y: m.array([[x, y]], numpy.float64, ndmin=4), {}),
        (lambda m, x, y: m.asarray([(x, y), (y, x)], numpy.float32), {}),
    ]
    for f, _ in cases:
        want = f(numpy, xs, ys)
        seen = []
        minpy.grad(lambda x: seen.append(f(mnp, x, y)) or mnp.sum(mnp.real(seen[-1])))(x)
        assert seen[0]._node is not None
        same(seen[0], want)
        same(f(mnp, x, y), want)


def test_nested_array_exact_and_errors():
    x = rnd((3,))
    w = numpy.arange(1.0, 7.0).reshape(2, 3)
    g = minpy.grad(lambda x: mnp.sum(w * mnp.array([[x[0], x[1], 4.0], [x[2], x[2], x[0]]])))(x)
    same(g, [1.0 + 6.0, 2.0, 4.0 + 5.0])
    with pytest.raises(ValueError):
        minpy.grad(lambda x: mnp.sum(mnp.array([[x[0], x[1]], [x[2]]])))(x)


# ------------------------------------------------------------ where(cond)
def test_where_one_argument_is_not_recorded():
    x = rnd((3, 4))

    def f(x):
        tape = active_tapes()[-1]
        before = len(tape.nodes)
        idx = mnp.where(x)
        idx2 = numpy.where(x)                    # through __array_function__
        assert len(tape.nodes) == before
        assert all(i._node is None for i in idx + idx2)
        same(idx[0], numpy.where(x.asnumpy())[0])
        y = mnp.where(x > 0, x, 0.0)             # three arguments: recorded
        assert len(tape.nodes) == before + 1 and y._node is not None
        return mnp.sum(y * y) + mnp.sum(x[idx])
    g = minpy.grad(f)(x)
    xs = x.asnumpy()
    same(g, numpy.where(xs > 0, 2 * xs, 0.0) + 1.0)
    # no tape: NumPy's results
    c = xs > 0
    same(mnp.where(c, x, -x), numpy.where(c, xs, -xs))
    for a, b in zip(mnp.where(c), numpy.where(c)):
        same(a, b)
    with pytest.raises(ValueError):
        mnp.where(c, x)
