"""The autograd API and the tape: structure, nesting, safety, memory."""
import gc
import threading
import tracemalloc

import numpy
import pytest

import minpy as mp
from minpy.testing import check_grads


def f_poly(x, y):
    return mp.sum(x * y + x ** 2)


def test_grad_matches_hand_derivative():
    x = mp.array([1.0, 2.0, 3.0])
    y = mp.array([4.0, 5.0, 6.0])
    g = mp.grad(f_poly)(x, y)
    assert isinstance(g, mp.Array)
    numpy.testing.assert_allclose(g.asnumpy(), (y + 2 * x).asnumpy())


def test_grad_and_loss_order_and_value_and_grad():
    x = mp.array([1.0, 2.0])
    y = mp.array([3.0, 4.0])
    grads, loss = mp.grad_and_loss(f_poly)(x, y)
    loss2, grads2 = mp.value_and_grad(f_poly)(x, y)
    assert float(loss) == pytest.approx(float(loss2)) == pytest.approx(3 + 8 + 1 + 4)
    numpy.testing.assert_allclose(grads.asnumpy(), grads2.asnumpy())
    # minpy.core.grad* have MinPy's semantics (minpy/compat.py); minpy.grad stays strict
    assert mp.core.grad is mp.compat.grad and mp.core.grad_and_loss is mp.compat.grad_and_loss


def test_argnum_tuple_and_negative():
    x = mp.array([1.0, 2.0])
    y = mp.array([3.0, 4.0])
    gx, gy = mp.grad(f_poly, argnum=(0, 1))(x, y)
    numpy.testing.assert_allclose(gx.asnumpy(), [5.0, 8.0])
    numpy.testing.assert_allclose(gy.asnumpy(), [1.0, 2.0])
    numpy.testing.assert_allclose(mp.grad(f_poly, argnum=-1)(x, y).asnumpy(), [1.0, 2.0])
    with pytest.raises(IndexError, match="argnum"):
        mp.grad(f_poly, argnum=2)(x, y)


def test_nested_structures_keep_their_shape():
    params = {"w": mp.array([[1.0, 2.0], [3.0, 4.0]]), "layers": [mp.array([1.0, -1.0]), 2.0]}

    def loss(p, x):
        h = mp.dot(p["w"], x) + p["layers"][0]
        return mp.sum(h * h) * p["layers"][1]

    x = mp.array([0.5, -0.5])
    g = mp.grad(loss)(params, x)
    assert set(g) == {"w", "layers"} and isinstance(g["layers"], list)
    w, b, s = params["w"].asnumpy(), params["layers"][0].asnumpy(), 2.0
    h = w @ x.asnumpy() + b
    numpy.testing.assert_allclose(g["w"].asnumpy(), s * 2 * numpy.outer(h, x.asnumpy()))
    numpy.testing.assert_allclose(g["layers"][0].asnumpy(), s * 2 * h)
    assert isinstance(g["layers"][1], float)
    assert g["layers"][1] == pytest.approx(float(numpy.sum(h * h)))


def test_python_floats_are_differentiable_and_nest():
    cube = lambda x: x * x * x
    assert mp.grad(cube)(3.0) == pytest.approx(27.0)
    assert mp.grad(mp.grad(cube))(3.0) == pytest.approx(18.0)
    assert mp.grad(mp.grad(mp.grad(cube)))(3.0) == pytest.approx(6.0)
    assert float(mp.grad(mp.grad(mp.grad(mp.grad(cube))))(3.0)) == pytest.approx(0.0)


def test_grad_of_grad_mixed_levels():
    # d/dx [ x * d/dy (x*y^2) ] at y = x  = d/dx [2 x^3] = 6 x^2
    def outer(x):
        inner = mp.grad(lambda y: mp.sum(x * y * y))(x)
        return mp.sum(x * inner)
    x = mp.array([1.0, 2.0])
    numpy.testing.assert_allclose(mp.grad(outer)(x).asnumpy(), 6 * x.asnumpy() ** 2)


def test_check_grads_detects_a_wrong_rule():
    wrong = mp.customop(lambda x: mp.sin(x))
    wrong.def_grad(lambda ans, x: lambda g: g * mp.sin(x))      # should be cos
    with pytest.raises(AssertionError, match="finite differences"):
        check_grads(lambda x: mp.sum(wrong(x)), mp.array([0.3, 0.7]), order=1)


def test_customop_with_def_grad():
    @mp.customop
    def softmax(x):
        e = mp.exp(x - mp.max(x, axis=-1, keepdims=True))
        return e / mp.sum(e, axis=-1, keepdims=True)

    @softmax.def_grad
    def softmax_grad(ans, x):
        return lambda g: ans * (g - mp.sum(g * ans, axis=-1, keepdims=True))

    x = mp.array(numpy.random.default_rng(0).standard_normal((3, 4)))
    w = mp.array(numpy.random.default_rng(1).standard_normal((3, 4)))
    check_grads(lambda x: softmax(x) * w, x, order=2)


def test_jacobian_and_hvp():
    x = mp.array([1.0, 2.0, 3.0])
    jac = mp.jacobian(lambda x: x * x)(x)
    numpy.testing.assert_allclose(jac.asnumpy(), numpy.diag(2 * x.asnumpy()))
    jac2 = mp.jacobian(lambda x: mp.stack([mp.sum(x), mp.sum(x * x)]))(x)
    numpy.testing.assert_allclose(jac2.asnumpy(), [[1, 1, 1], 2 * x.asnumpy()])
    v = mp.array([1.0, 0.0, -1.0])
    hvp = mp.hessian_vector_product(lambda x: mp.sum(x ** 3))(x, vector=v)
    numpy.testing.assert_allclose(hvp.asnumpy(), 6 * x.asnumpy() * v.asnumpy())


def test_stop_gradient_and_unreached_inputs():
    x = mp.array([1.0, 2.0])
    g = mp.grad(lambda x: mp.sum(x * mp.stop_gradient(x)))(x)
    numpy.testing.assert_allclose(g.asnumpy(), x.asnumpy())
    z = mp.grad(lambda x, y: mp.sum(y * 2.0), argnum=0)(x, mp.array([1.0, 1.0]))
    numpy.testing.assert_allclose(z.asnumpy(), [0.0, 0.0])
    assert z.dtype == x.dtype


def test_float32_in_float32_out():
    x = mp.array([1.0, 2.0], dtype=mp.float32)
    g = mp.grad(lambda x: mp.sum(x * 3.0))(x)
    assert g.dtype == numpy.float32


def test_non_scalar_output_needs_explicit_reduction():
    with pytest.raises(TypeError, match="scalar output"):
        mp.grad(lambda x: x * 2)(mp.array([1.0, 2.0]))


def test_function_without_rule_fails_at_the_call():
    from minpy.core.primitive import Primitive, register
    from minpy.core.wrappers import make_function
    norule = make_function("test_norule", lambda x: x * 2)
    with pytest.raises(TypeError, match="test_norule has no gradient rule"):
        mp.grad(lambda x: mp.sum(norule(x)))(mp.array([1.0]))


def test_nondiff_results_are_constants():
    x = mp.array([1.5, 2.5, -0.5])
    g = mp.grad(lambda x: mp.sum(x * mp.floor(x)))(x)
    numpy.testing.assert_allclose(g.asnumpy(), numpy.floor(x.asnumpy()))
    g = mp.grad(lambda x: mp.sum(x[mp.argmax(x)] * x))(x)
    numpy.testing.assert_allclose(g.asnumpy(), [2.5, 2.5 + 3.5, 2.5])


def test_inplace_write_into_saved_constant_raises():
    x = mp.array([1.0, 2.0])

    def f(x):
        c = mp.array([3.0, 4.0])
        y = x * c
        c[0] = 100.0           # c was saved for y's backward pass
        return mp.sum(y)
    with pytest.raises(RuntimeError, match="saved for the backward pass"):
        mp.grad(f)(x)

    def g(x):
        c = mp.array([3.0, 4.0])
        y = x * c
        c += 1                 # in-place operator, same buffer
        return mp.sum(y)
    with pytest.raises(RuntimeError, match="saved for the backward pass"):
        mp.grad(g)(x)


def test_setitem_on_traced_arrays_is_recorded_functionally():
    x = mp.array([1.0, 2.0, 3.0])

    def f(x):
        out = mp.zeros(3)
        out[0] = x[1] * 2
        out[1:] = x[:2] ** 2
        h = x * 1.0
        h += out               # traced in-place operator: rebinds h
        return mp.sum(h * h)
    xn = x.asnumpy()
    out = numpy.array([2 * xn[1], xn[0] ** 2, xn[1] ** 2])
    h = xn + out
    expected = 2 * h * 1.0
    expected[1] += 2 * h[0] * 2
    expected[0] += 2 * h[1] * 2 * xn[0]
    expected[1] += 2 * h[2] * 2 * xn[1]
    numpy.testing.assert_allclose(mp.grad(f)(x).asnumpy(), expected)


def test_long_chain_is_iterative():
    x = mp.array(1.0)

    def chain(x):
        for _ in range(100_000):
            x = x * 1.0
        return x
    assert float(mp.grad(chain)(x)) == pytest.approx(1.0)


def test_memory_flat_over_many_steps():
    rng = numpy.random.default_rng(0)
    w = mp.array(rng.standard_normal((20, 10)))
    xb = mp.array(rng.standard_normal((8, 20)))

    def loss(w):
        return mp.sum(mp.tanh(mp.dot(xb, w)) ** 2)
    step = mp.grad(loss)
    for _ in range(200):
        w = w - 0.001 * step(w)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(10_000):
        w = w - 0.001 * step(w)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert growth < 200_000, f"memory grew by {growth} bytes over 10,000 steps"


def test_tapes_are_per_thread():
    results = {}

    def worker(k):
        x = mp.array([float(k)] * 3)
        out = []
        for _ in range(200):
            out.append(mp.grad(lambda x: mp.sum(x * x * k))(x))
        results[k] = out

    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, out in results.items():
        for g in out:
            numpy.testing.assert_allclose(g.asnumpy(), [2.0 * k * k] * 3)


def test_nothing_recorded_outside_grad():
    from minpy.dispatch import state
    x = mp.array([1.0])
    mp.grad(lambda x: mp.sum(x * 2))(x)
    assert state.process.tapes == 0 and state.process.fast == state.process.eager
    assert (x * 2)._node is None


def test_writes_into_the_differentiated_argument_itself():
    # the argument's box is rebound by the write; the gradient still reaches the leaf
    x = mp.array([1.0, 2.0, 3.0])

    def overwrite(x):
        x[0] = 5.0
        return mp.sum(x * x)

    def accumulate_at(x):
        mp.add.at(x, [0, 0], 1.0)
        return mp.sum(x * x)
    numpy.testing.assert_allclose(mp.grad(overwrite)(x).asnumpy(), [0.0, 4.0, 6.0])
    numpy.testing.assert_allclose(mp.grad(accumulate_at)(x).asnumpy(), [6.0, 4.0, 6.0])
    numpy.testing.assert_allclose(mp.grad(overwrite, argnum=(0,))(x)[0].asnumpy(),
                                  [0.0, 4.0, 6.0])
    numpy.testing.assert_allclose(mp.value_and_grad(overwrite)(x)[1].asnumpy(), [0.0, 4.0, 6.0])
    jac = mp.jacobian(lambda x: (x.__setitem__(1, 0.0), x * x)[1])(x)
    numpy.testing.assert_allclose(jac.asnumpy(), numpy.diag([2.0, 0.0, 6.0]))
    numpy.testing.assert_array_equal(x.asnumpy(), [1.0, 2.0, 3.0])     # the caller's array
    check_grads(overwrite, x, order=2)


def test_bad_outputs_and_arguments_are_clear_errors():
    x = mp.array([1.0, 2.0])
    for out in ("a", [1.0], (mp.sum(x),), None):
        with pytest.raises(TypeError, match="grad needs a scalar Array or number"):
            mp.grad(lambda x, out=out: out)(x)
    with pytest.raises(TypeError, match="returned a list"):
        mp.grad(lambda x: [mp.sum(x)], argnum=(0,))(x)
    for bad in (0.5, True, (), "0", (0, 1.0)):
        with pytest.raises(TypeError, match="argnum must be an int"):
            mp.grad(lambda x: mp.sum(x), argnum=bad)
    with pytest.raises(ValueError, match=r"vector has shape \(3,\), argument 0 has shape \(2,\)"):
        mp.hessian_vector_product(lambda x: mp.sum(x ** 3))(x, vector=mp.ones(3))
    # an output that does not depend on x is a zero gradient, as in autograd
    numpy.testing.assert_array_equal(mp.grad(lambda x: 3.0)(x).asnumpy(), [0.0, 0.0])
    numpy.testing.assert_array_equal(mp.grad(lambda x: mp.ones(3))(x).asnumpy(), [0.0, 0.0])


def test_namedtuple_arguments_keep_their_type():
    import collections
    P = collections.namedtuple("P", "w b")
    x = mp.array([1.0, 2.0, 3.0])
    g = mp.grad(lambda p: mp.sum(p.w * p.b) + p.b.sum())(P(x, x * 2))
    assert type(g) is P
    numpy.testing.assert_allclose(g.w.asnumpy(), [2.0, 4.0, 6.0])
    numpy.testing.assert_allclose(g.b.asnumpy(), [2.0, 3.0, 4.0])
    loss, (gl,) = mp.value_and_grad(lambda ps: mp.sum(ps[0].w) * ps[0].b, argnum=(0,))(
        [P(x, 2.0)])
    assert type(gl[0]) is P and gl[0].b == 6.0
    numpy.testing.assert_allclose(gl[0].w.asnumpy(), [2.0, 2.0, 2.0])
