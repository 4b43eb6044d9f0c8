"""minpy.scipy.integrate.odeint: SciPy's values, and gradients by the adjoint method
checked against central finite differences of scipy.integrate.odeint, written as a
user writes a neural ODE."""
import collections

import numpy
import pytest
import scipy.integrate
import scipy.linalg

import minpy
import minpy.scipy.integrate as mint

from _standin import standin_gpu  # noqa: F401  (fixture)

TOL = dict(rtol=1e-11, atol=1e-11)     # tight: the finite differences see solver noise


def _fd(fun, values, k, eps=1e-5):
    """Central finite differences of scalar ``fun(*values)`` w.r.t. ``values[k]``."""
    out = numpy.zeros_like(values[k])
    for i in numpy.ndindex(values[k].shape):
        up = [numpy.array(v, dtype=float) for v in values]
        down = [numpy.array(v, dtype=float) for v in values]
        up[k][i] += eps
        down[k][i] -= eps
        out[i] = (fun(*up) - fun(*down)) / (2 * eps)
    return out


# ---------------------------------------------------------------- a neural ODE
def _mlp_params(rng, d=2, h=3):
    w1, b1 = 0.6 * rng.standard_normal((d, h)), 0.2 * rng.standard_normal(h)
    w2, b2 = 0.6 * rng.standard_normal((h, d)), 0.2 * rng.standard_normal(d)
    return w1, b1, w2, b2


def dynamics(y, t, params):
    """A user's neural ODE: a tiny MLP (tuples of lists of (W, b) pairs), time-dependent."""
    (layers,) = params
    (w1, b1), (w2, b2) = layers
    hidden = minpy.tanh(minpy.dot(y, w1) + b1)
    return minpy.dot(hidden, w2) + b2 + 0.1 * minpy.sin(2.0 * t) * y


def dynamics_np(y, t, w1, b1, w2, b2):
    return numpy.tanh(y @ w1 + b1) @ w2 + b2 + 0.1 * numpy.sin(2.0 * t) * y


def test_neural_ode_values_and_gradients_match_scipy_and_finite_differences():
    rng = numpy.random.default_rng(0)
    w1, b1, w2, b2 = _mlp_params(rng)
    y0 = numpy.array([0.8, -0.4])
    t = numpy.array([0.0, 0.4, 0.9, 1.5])
    u = rng.standard_normal((3, 2))
    params = ([(minpy.array(w1), minpy.array(b1)), (minpy.array(w2), minpy.array(b2))],)

    def loss(params, y0, t):
        ys = mint.odeint(dynamics, y0, t, args=(params,), **TOL)
        return minpy.sum(ys[1:] * u) + minpy.sum(ys[-1] ** 2)      # a loss at a few times

    ys = mint.odeint(dynamics, minpy.array(y0), minpy.array(t), args=(params,), **TOL)
    want = scipy.integrate.odeint(dynamics_np, y0, t, args=(w1, b1, w2, b2), **TOL)
    assert isinstance(ys, minpy.Array) and ys.shape == (4, 2) and ys.dtype == numpy.float64
    numpy.testing.assert_allclose(ys.asnumpy(), want, rtol=1e-13, atol=1e-14)

    (g_params, g_y0, g_t), value = minpy.grad_and_loss(loss, argnum=(0, 1, 2))(
        params, minpy.array(y0), minpy.array(t))
    assert isinstance(g_params, tuple) and isinstance(g_params[0], list)
    assert isinstance(g_params[0][0], tuple) and g_params[0][0][0].shape == (2, 3)

    def loss_np(w1, b1, w2, b2, y0, t):
        ys = scipy.integrate.odeint(dynamics_np, y0, t, args=(w1, b1, w2, b2), **TOL)
        return numpy.sum(ys[1:] * u) + numpy.sum(ys[-1] ** 2)

    point = [w1, b1, w2, b2, y0, t]
    assert float(value) == pytest.approx(loss_np(*point), rel=1e-12)
    analytic = [g_params[0][0][0], g_params[0][0][1], g_params[0][1][0], g_params[0][1][1],
                g_y0, g_t]
    for k, g in enumerate(analytic):
        numpy.testing.assert_allclose(g.asnumpy(), _fd(loss_np, point, k), rtol=1e-5, atol=1e-6,
                                      err_msg=f"argument {k}")


# ---------------------------------------------------------------- containers and arguments
Layer = collections.namedtuple("Layer", ["w", "b"])


def test_dict_namedtuple_constant_and_scalar_args():
    rng = numpy.random.default_rng(1)
    w = rng.standard_normal((2, 2)) * 0.5
    b = rng.standard_normal(2) * 0.3
    shift = numpy.array([0.1, -0.2])          # a NumPy constant: no gradient wanted
    y0, t = numpy.array([1.0, 0.5]), numpy.linspace(0.0, 1.0, 3)

    def f(y, t, p, k, label):
        assert label == "tag"                  # non-array arguments reach func as they are
        layer = p["layer"]
        return k * minpy.tanh(minpy.dot(layer.w, y) + layer.b) + p["shift"]

    def f_np(y, t, w, b, k):
        return k * numpy.tanh(w @ y + b) + shift

    def loss(p, k):
        return minpy.sum(mint.odeint(f, y0, t, args=(p, k, "tag"), **TOL)[-1])

    p = {"layer": Layer(minpy.array(w), minpy.array(b)), "shift": shift}
    g_p, g_k = minpy.grad(loss, argnum=(0, 1))(p, 0.7)
    assert isinstance(g_p["layer"], Layer) and isinstance(g_k, float)

    def loss_np(w, b, k):
        return scipy.integrate.odeint(f_np, y0, t, args=(w, b, float(k)), **TOL)[-1].sum()

    point = [w, b, numpy.array(0.7)]
    numpy.testing.assert_allclose(g_p["layer"].w.asnumpy(), _fd(loss_np, point, 0), rtol=1e-5)
    numpy.testing.assert_allclose(g_p["layer"].b.asnumpy(), _fd(loss_np, point, 1), rtol=1e-5)
    assert g_k == pytest.approx(float(_fd(loss_np, point, 2)), rel=1e-5)


def test_exponential_decay_closed_form_and_options():
    """y' = -k y: y(t) = y0 exp(-k t); tfirst, a scalar y0, full_output and Dfun."""
    t = numpy.array([0.0, 0.5, 2.0])

    def f(t, y, k):                            # tfirst=True
        return -k * y

    def jac(t, y, k):
        return minpy.reshape(-k, (1, 1))

    ys, info = mint.odeint(f, 2.0, t, args=(minpy.array(1.3),), tfirst=True, full_output=True,
                           Dfun=jac, **TOL)
    assert ys.shape == (3, 1) and "nfe" in info and info["message"].startswith("Integration")
    numpy.testing.assert_allclose(ys.asnumpy()[:, 0], 2.0 * numpy.exp(-1.3 * t), rtol=1e-9)

    def final(y0, k, t):
        return mint.odeint(f, y0, t, args=(k,), tfirst=True, **TOL)[-1, 0]

    g_y0, g_k, g_t = minpy.grad(final, argnum=(0, 1, 2))(2.0, minpy.array(1.3), minpy.array(t))
    assert g_y0 == pytest.approx(numpy.exp(-1.3 * 2.0), rel=1e-8)
    assert float(g_k) == pytest.approx(-2.0 * 2.0 * numpy.exp(-1.3 * 2.0), rel=1e-7)
    # only the last time moves the output: dL/dt2 = f(y2); dL/dt0 = -dL/dt2 (autonomous)
    d_end = -1.3 * 2.0 * numpy.exp(-1.3 * 2.0)
    numpy.testing.assert_allclose(g_t.asnumpy(), [-d_end, 0.0, d_end], rtol=1e-7, atol=1e-12)


def test_gradient_dtypes_follow_the_inputs_and_y0_only():
    a = numpy.array([[0.0, 1.0], [-1.0, -0.1]], dtype=numpy.float32)

    def f(y, t, a):
        return minpy.dot(a, y)

    y0 = minpy.array(numpy.array([1.0, 0.0], dtype=numpy.float32))
    t = numpy.array([0.0, 1.0])
    g_y0, g_a = minpy.grad(lambda y0, a: minpy.sum(mint.odeint(f, y0, t, args=(a,))),
                           argnum=(0, 1))(y0, minpy.array(a))
    assert g_y0.dtype == numpy.float32 and g_a.dtype == numpy.float32
    # y0 only (no parameter is traced): a linear ODE, so the gradient is expm(A t)^T 1
    g = minpy.grad(lambda y0: minpy.sum(mint.odeint(f, y0, t, args=(a,), **TOL)[-1]))(
        minpy.array(numpy.array([1.0, 0.0])))
    want = scipy.linalg.expm(a.astype(float)).T @ numpy.ones(2)
    numpy.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6)


# ---------------------------------------------------------------- errors
def test_bad_input_errors_name_the_function_and_shapes():
    def f(y, t):
        return -y
    with pytest.raises(ValueError, match=r"odeint: y0 .*\(2, 2\)"):
        mint.odeint(f, numpy.ones((2, 2)), [0.0, 1.0])
    with pytest.raises(ValueError, match=r"odeint: t .*\(2, 1\)"):
        mint.odeint(f, numpy.ones(2), numpy.ones((2, 1)))
    with pytest.raises(ValueError, match=r"odeint: func returned shape \(3,\).*\(2,\)"):
        mint.odeint(lambda y, t: minpy.ones(3), numpy.ones(2), [0.0, 1.0])
    with pytest.raises(TypeError, match="odeint: func must be callable"):
        mint.odeint("f", numpy.ones(2), [0.0, 1.0])


def test_closure_over_a_differentiated_array_is_an_error():
    def loss(w):
        return minpy.sum(mint.odeint(lambda y, t: w * y, numpy.ones(2), [0.0, 1.0]))
    with pytest.raises(TypeError, match="pass it in args"):
        minpy.grad(loss)(minpy.array([0.5, -0.5]))


def test_second_order_is_not_supported():
    def f(y, t, k):
        return -k * y

    def first(k):
        return minpy.sum(mint.odeint(f, numpy.ones(1), [0.0, 1.0], args=(k,)))
    assert float(minpy.grad(first)(minpy.array(0.5))) == pytest.approx(-numpy.exp(-0.5),
                                                                         rel=1e-6)
    with pytest.raises(NotImplementedError, match="first-order"):
        minpy.grad(lambda k: minpy.grad(first)(k))(minpy.array(0.5))


def test_docstring():
    doc = mint.odeint.__doc__
    assert "See also scipy.integrate.odeint" in doc and "Returns" in doc
    assert "first-order" in doc.replace("First-order", "first-order") or "Only first" in doc
    assert "host" in doc


# ---------------------------------------------------------------- devices (stand-in GPU)
def test_gpu_arrays_are_solved_on_the_host_and_returned(standin_gpu):
    rng = numpy.random.default_rng(2)
    w1, b1, w2, b2 = _mlp_params(rng)
    y0, t = numpy.array([0.3, 0.1]), numpy.array([0.0, 0.5, 1.0])
    with minpy.gpu(0):
        params = ([(minpy.array(w1), minpy.array(b1)), (minpy.array(w2), minpy.array(b2))],)
        gy0 = minpy.array(y0)
    ys = mint.odeint(dynamics, gy0, t, args=(params,), **TOL)
    assert ys.context == minpy.gpu(0)
    want = scipy.integrate.odeint(dynamics_np, y0, t, args=(w1, b1, w2, b2), **TOL)
    numpy.testing.assert_allclose(ys.asnumpy(), want, rtol=1e-12, atol=1e-13)
    g_params, g_y0 = minpy.grad(
        lambda p, y: minpy.sum(mint.odeint(dynamics, y, t, args=(p,), **TOL)[-1]),
        argnum=(0, 1))(params, gy0)
    assert g_y0.context == minpy.gpu(0) and g_params[0][1][0].context == minpy.gpu(0)
    host = minpy.grad(lambda y: minpy.sum(
        mint.odeint(dynamics, y, t, args=(params,), **TOL)[-1]))(minpy.array(y0))
    numpy.testing.assert_allclose(g_y0.asnumpy(), host.asnumpy(), rtol=1e-10)
