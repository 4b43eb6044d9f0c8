"""The autograd API that programs written for HIPS autograd reach for.

elementwise_grad, make_vjp, make_jvp, hessian, grad_named, holomorphic_grad
(minpy.core.differentials); hessian_vector_product's positional vector,
argnum as any sequence, defvjp / defvjp_argnums on custom ops, and the
std/var gradient where std is 0. Every gradient is checked against finite
differences (minpy.testing.check_grads) or against an independent route.
"""
import numpy
import pytest

import minpy as mp
from minpy.core.autograd import defvjp, defvjp_argnums
from minpy.core.differentials import (elementwise_grad, grad_named, hessian, holomorphic_grad,
                                      make_jvp, make_vjp)
from minpy.testing import check_grads
from _standin import standin_gpu  # noqa: F401  (fixture)
from _host import host

RNG = numpy.random.default_rng(0)


def rand(*shape):
    return mp.array(RNG.standard_normal(shape))


def close(a, b, **kw):
    numpy.testing.assert_allclose(host(a), host(b), rtol=kw.pop("rtol", 1e-7),
                                  atol=kw.pop("atol", 1e-9), **kw)


# ---------------------------------------------------------------- elementwise_grad
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 1, 3)])
def test_elementwise_grad_is_the_elementwise_derivative(shape):
    x = rand(*shape)
    f = lambda x: mp.sin(x) * x + mp.tanh(x) ** 2
    xn = host(x)
    expected = numpy.cos(xn) * xn + numpy.sin(xn) + 2 * numpy.tanh(xn) / numpy.cosh(xn) ** 2
    g = elementwise_grad(f)(x)
    assert g.shape == x.shape and g.dtype == x.dtype
    close(g, expected)
    # and it is itself differentiable (2nd and 3rd derivatives against finite differences)
    check_grads(elementwise_grad(f), x, order=2)


def test_elementwise_grad_is_the_sum_of_jacobian_rows_with_broadcasting():
    w = rand(3, 1, 4)
    x = rand(2, 4)
    f = lambda x: mp.exp(x * w) / (1 + x ** 2)          # output (3, 2, 4): broadcast
    close(elementwise_grad(f)(x), mp.jacobian(f)(x).sum(axis=(0, 1, 2)))
    check_grads(elementwise_grad(f), x, order=1)
    gw, gx = elementwise_grad(lambda w, x: mp.exp(x * w) / (1 + x ** 2), argnum=[0, 1])(w, x)
    assert gw.shape == w.shape and gx.shape == x.shape
    close(gx, elementwise_grad(f)(x))


def test_elementwise_grad_of_python_floats_and_tuple_outputs():
    assert elementwise_grad(lambda t: t ** 3)(2.0) == pytest.approx(12.0)
    x = rand(3)
    g = elementwise_grad(lambda x: (x ** 2, mp.sin(x)))(x)      # ones for each output
    close(g, 2 * host(x) + numpy.cos(host(x)))


# ---------------------------------------------------------------- make_vjp
@pytest.mark.parametrize("xshape,oshape", [((3,), (2,)), ((2, 3), (4,)), ((4,), (2, 3)),
                                           ((), (3,)), ((3,), ())])
def test_make_vjp_matches_the_jacobian(xshape, oshape):
    x = rand(*xshape)
    n_in, n_out = int(numpy.prod(xshape)), int(numpy.prod(oshape))
    A = rand(n_out, n_in)

    def f(x):
        y = mp.tanh(mp.dot(A, mp.reshape(x, (n_in,)))) * 2.0
        return mp.reshape(y, oshape)
    vjp, ans = make_vjp(f)(x)
    close(ans, f(x))
    J = host(mp.jacobian(f)(x)).reshape(n_out, n_in)
    for _ in range(3):                       # one forward, several cotangents
        u = rand(*oshape)
        g = vjp(u)
        assert g.shape == x.shape and g.dtype == x.dtype
        close(g, (host(u).reshape(n_out) @ J).reshape(xshape))


def test_make_vjp_is_differentiable_in_the_point_and_the_cotangent():
    A = rand(2, 3)
    f = lambda x: mp.sin(mp.dot(A, x)) * mp.sum(x ** 2)
    u = rand(2)
    check_grads(lambda x: make_vjp(f)(x)[0](u), rand(3), order=2)
    x = rand(3)
    check_grads(lambda u: make_vjp(f)(x)[0](u), u, order=1)


def test_make_vjp_structures_and_errors():
    p = {"w": rand(2, 3), "b": rand(2)}
    x = rand(3)

    def layer(p, x):
        h = mp.dot(p["w"], x) + p["b"]
        return mp.tanh(h), mp.sum(h ** 2)
    vjp, (y, s) = make_vjp(layer)(p, x)
    g = vjp((mp.ones(2), 1.0))
    assert set(g) == {"w", "b"} and g["w"].shape == (2, 3)
    # the same as grad of the matching scalar
    expected = mp.grad(lambda p: mp.sum(layer(p, x)[0]) + layer(p, x)[1])(p)
    close(g["w"], expected["w"])
    close(g["b"], expected["b"])
    gp, gx = make_vjp(layer, argnum=(0, 1))(p, x)[0]((mp.ones(2), 0.0))
    close(gp["b"], 1 - host(y) ** 2)
    assert gx.shape == (3,)
    with pytest.raises(ValueError, match=r"make_vjp\(layer\): the cotangent\[0\] has shape "
                                         r"\(3,\), the function's output\[0\] has shape \(2,\)"):
        vjp((mp.ones(3), 1.0))
    with pytest.raises(ValueError, match="must have the structure"):
        vjp(mp.ones(2))
    with pytest.raises(IndexError, match=r"make_vjp\(layer\): argnum 2 out of range for 2"):
        make_vjp(layer, argnum=2)(p, x)
    with pytest.raises(TypeError, match="returned a str"):
        make_vjp(lambda x: "no")(x)


def test_dict_cotangents_and_tangents_are_matched_by_key():
    x = rand(3)
    f = lambda x: {"sq": x ** 2, "sin": mp.sin(x)}
    vjp, ans = make_vjp(f)(x)
    u1, u2 = rand(3), rand(3)
    expected = 2 * host(x) * host(u1) + numpy.cos(host(x)) * host(u2)
    close(vjp({"sin": u2, "sq": u1}), expected)                 # another key order
    _, jv = make_jvp(lambda p: p["a"] * p["b"] ** 2)({"a": x, "b": x})({"b": u1, "a": u2})
    close(jv, host(u2) * host(x) ** 2 + 2 * host(x) ** 2 * host(u1))
    hv = mp.hessian_vector_product(lambda p: mp.sum(p["a"] ** 2 * p["b"]))(
        {"a": x, "b": x}, {"b": u1, "a": u2})
    close(hv["a"], 2 * host(x) * host(u2) + 2 * host(x) * host(u1))
    close(hv["b"], 2 * host(x) * host(u2))


def test_make_vjp_of_an_output_that_does_not_depend_on_x_is_zero():
    x = rand(3)
    vjp, ans = make_vjp(lambda x: mp.ones(2))(x)
    close(vjp(mp.ones(2)), numpy.zeros(3))


# ---------------------------------------------------------------- make_jvp
@pytest.mark.parametrize("xshape,oshape", [((3,), (2,)), ((2,), (5,)), ((2, 2), (3, 2)),
                                           ((4,), ())])
def test_make_jvp_is_the_jacobian_times_v(xshape, oshape):
    x = rand(*xshape)
    n_in, n_out = int(numpy.prod(xshape)), int(numpy.prod(oshape))
    A = rand(n_out, n_in)

    def f(x):
        xf = mp.reshape(x, (n_in,))
        return mp.reshape(mp.sin(mp.dot(A, xf)) * mp.sum(xf ** 2), oshape)
    jvp = make_jvp(f)(x)
    J = host(mp.jacobian(f)(x)).reshape(n_out, n_in)
    for _ in range(2):
        v = rand(*xshape)
        ans, jv = jvp(v)
        close(ans, f(x))
        assert jv.shape == oshape
        close(jv, (J @ host(v).reshape(n_in)).reshape(oshape))
        # the directional derivative, by central differences
        eps = 1e-6
        fd = (host(f(x + eps * v)) - host(f(x - eps * v))) / (2 * eps)
        close(jv, fd, rtol=1e-5, atol=1e-7)


JVP_FUNCTIONS = {
    "max": lambda x: mp.max(x.reshape(3, 4), axis=1) * x[:3],
    "logsumexp": lambda x: mp.log(mp.sum(mp.exp(x.reshape(2, 6)), axis=1)),
    "concatenate_cumsum": lambda x: mp.concatenate([x[:5] ** 2, mp.cumsum(x)]),
    "where": lambda x: mp.where(x > 0, x ** 2, mp.sin(x)),
    "std_var": lambda x: mp.std(x.reshape(3, 4), axis=0) + mp.var(x),
    "norm": lambda x: mp.linalg.norm(x.reshape(3, 4), axis=1),
    "solve": lambda x: mp.linalg.solve(x[:9].reshape(3, 3) + 3 * mp.eye(3), x[9:]),
    "matmul_broadcast": lambda x: (x.reshape(2, 2, 3) @ x[:3].reshape(3, 1)).ravel(),
    "sort": lambda x: mp.sort(x)[::2],
    "prod": lambda x: mp.prod(x.reshape(4, 3), axis=1),
    "fancy_index": lambda x: x[mp.array([0, 3, 3, 7])] * x[1],
    "einsum": lambda x: mp.einsum("ij,jk->ik", x.reshape(3, 4), x.reshape(4, 3)),
}


@pytest.mark.parametrize("name", sorted(JVP_FUNCTIONS))
def test_make_jvp_through_many_rules(name):
    """The double-VJP trick needs every rule to be differentiable in its cotangent."""
    f = JVP_FUNCTIONS[name]
    x, v = rand(12), rand(12)
    J = host(mp.jacobian(f)(x))
    jv = make_jvp(f)(x)(v)[1]
    close(jv, (J.reshape(-1, 12) @ host(v)).reshape(jv.shape))


def test_make_jvp_is_differentiable_and_takes_structures():
    v = rand(3)

    def f(x):
        return mp.exp(x[:2] * x[1:]) + mp.sum(x)
    check_grads(lambda x: make_jvp(f)(x)(v)[1], rand(3), order=1)
    p = {"a": rand(2), "s": 0.5}
    g = lambda p: p["a"] * p["s"] ** 2
    ans, jv = make_jvp(g)(p)({"a": mp.ones(2), "s": 1.0})
    close(jv, 0.25 + 2 * 0.5 * host(p["a"]))
    jv2 = make_jvp(lambda a, s: a * s ** 2, argnum=(0, 1))(p["a"], p["s"])((mp.ones(2), 1.0))[1]
    close(jv2, jv)
    with pytest.raises(ValueError, match=r"make_jvp\(f\): the tangent has shape \(2,\), the "
                                         r"argument has shape \(3,\)"):
        make_jvp(f)(rand(3))(mp.ones(2))


def test_make_jvp_complex_is_the_directional_derivative():
    z = mp.array(RNG.standard_normal(3) + 1j * RNG.standard_normal(3))
    f = lambda z: mp.exp(z) * z ** 2                    # holomorphic: J v = f'(z) v
    v = mp.array(RNG.standard_normal(3) + 1j * RNG.standard_normal(3))
    zn, vn = host(z), host(v)
    _, jv = make_jvp(f)(z)(v)
    close(jv, (numpy.exp(zn) * zn ** 2 + 2 * zn * numpy.exp(zn)) * vn)
    g = lambda z: mp.abs(z) ** 2 * z                    # not holomorphic
    eps = 1e-6
    fd = (host(g(z + eps * v)) - host(g(z - eps * v))) / (2 * eps)
    close(make_jvp(g)(z)(v)[1], fd, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- hessian
def test_hessian_shape_and_values():
    A = rand(3, 3)
    A = A + A.T
    x = rand(3)
    f = lambda x: 0.5 * mp.dot(x, mp.dot(A, x)) + mp.sum(mp.sin(x))
    H = hessian(f)(x)
    assert H.shape == (3, 3)
    close(H, host(A) - numpy.diag(numpy.sin(host(x))))
    X = rand(2, 2)
    h = lambda X: mp.sum(X ** 3) + mp.sum(X[0] * X[1])
    H = hessian(h)(X)
    assert H.shape == (2, 2, 2, 2)
    expected = numpy.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            expected[i, j, i, j] = 6 * host(X)[i, j]
    for j in range(2):
        expected[0, j, 1, j] = expected[1, j, 0, j] = 1.0
    close(H, expected)
    assert float(hessian(lambda t: t ** 4)(2.0)) == pytest.approx(48.0)
    # against finite differences of the gradient, column by column
    g = mp.grad(f)
    eps = 1e-6
    for k in range(3):
        e = numpy.zeros(3)
        e[k] = eps
        fd = (host(g(x + e)) - host(g(x - e))) / (2 * eps)
        close(hessian(f)(x)[:, k], fd, rtol=1e-5, atol=1e-7)
    with pytest.raises(TypeError, match="hessian: argnum must be an int"):
        hessian(f, argnum=(0,))


# ---------------------------------------------------------------- hessian_vector_product
def test_hessian_vector_product_positional_and_keyword():
    A = rand(4, 4)
    x, v = rand(4), rand(4)
    f = lambda x, A: mp.sum(mp.tanh(mp.dot(A, x)) ** 2)
    H = host(hessian(f)(x, A))
    hvp = mp.hessian_vector_product(f)
    close(hvp(x, A, v), H @ host(v))            # autograd's signature: vector last
    close(hvp(x, A, vector=v), H @ host(v))
    hvp1 = mp.hessian_vector_product(f, argnum=1)
    V = rand(4, 4)
    Hw = host(hessian(f, argnum=1)(x, A)).reshape(16, 16)
    close(hvp1(x, A, V), (Hw @ host(V).reshape(16)).reshape(4, 4))
    with pytest.raises(ValueError, match=r"vector has shape \(3,\), argument 0 has shape \(4,\)"):
        hvp(x, A, mp.ones(3))
    with pytest.raises(TypeError, match="missing the vector"):
        hvp()
    # a block Hessian with argnum as a sequence: the vector has one part per argument
    g = lambda a, b: mp.sum(a ** 2 * b) + mp.sum(b ** 3)
    a, b = rand(3), rand(3)
    ha, hb = mp.hessian_vector_product(g, argnum=[0, 1])(a, b, (mp.ones(3), mp.zeros(3)))
    close(ha, 2 * host(b))
    close(hb, 2 * host(a))


# ---------------------------------------------------------------- argnum as a sequence
def test_argnum_any_sequence():
    x, y, z = rand(3), rand(3), rand(3)
    f = lambda x, y, z: mp.sum(x * y * z)
    for argnum in (range(3), [0, 1, 2], (0, 1, 2), numpy.arange(3).tolist()):
        gs = mp.grad(f, argnum=argnum)(x, y, z)
        assert isinstance(gs, tuple) and len(gs) == 3
        close(gs[0], host(y) * host(z))
        close(gs[2], host(x) * host(y))
    (gx, gz), loss = mp.grad_and_loss(f, argnum=[0, -1])(x, y, z)
    close(gz, host(x) * host(y))
    loss2, (gy,) = mp.value_and_grad(f, argnum=range(1, 2))(x, y, z)
    close(gy, host(x) * host(z))
    assert float(loss) == pytest.approx(float(loss2))
    assert mp.grad(f, argnum=numpy.int64(1))(x, y, z).shape == (3,)
    jx, jy = mp.jacobian(lambda x, y: x * y, argnum=range(2))(x, y)
    close(jx, numpy.diag(host(y)))
    close(jy, numpy.diag(host(x)))
    with pytest.raises(ValueError, match="names an argument twice"):
        mp.grad(f, argnum=[0, 0])
    with pytest.raises(ValueError, match="names an argument twice"):
        mp.grad(f, argnum=[2, -1])(x, y, z)
    with pytest.raises(IndexError, match=r"minpy.grad\(<lambda>\): argnum 3 out of range for 3"):
        mp.grad(f, argnum=range(4))(x, y, z)
    with pytest.raises(IndexError, match=r"minpy.jacobian\(<lambda>\): argnum 5 out of range"):
        mp.jacobian(f, argnum=5)(x, y, z)
    with pytest.raises(TypeError, match="argnum must be an int or a non-empty sequence"):
        mp.jacobian(f, argnum="01")


def test_jacobian_of_nested_arguments_and_constant_outputs():
    p = {"w": rand(2, 3), "b": rand(2)}
    x = rand(3)
    J = mp.jacobian(lambda p: mp.dot(p["w"], x) + p["b"])(p)
    assert J["w"].shape == (2, 2, 3) and J["b"].shape == (2, 2)
    close(J["b"], numpy.eye(2))
    close(J["w"][1, 1], host(x))
    close(mp.jacobian(lambda x: mp.ones(2))(x), numpy.zeros((2, 3)))
    with pytest.raises(TypeError, match=r"jacobian\(<lambda>\): the function returned a list"):
        mp.jacobian(lambda x: [x])(x)


# ---------------------------------------------------------------- grad_named
def test_grad_named_positional_keyword_and_default():
    def loss(weights, inputs, scale=2.0):
        return mp.sum(mp.tanh(mp.dot(inputs, weights))) * scale

    w, X = rand(3), rand(4, 3)
    expected = mp.grad(loss)(w, X)
    close(grad_named(loss, "weights")(w, X), expected)
    close(grad_named(loss, "weights")(inputs=X, weights=w), expected)
    close(grad_named(loss, "inputs")(w, X), mp.grad(loss, argnum=1)(w, X))
    s = grad_named(loss, "scale")(w, X)                 # the default, as a Python float
    assert isinstance(s, float)
    assert s == pytest.approx(float(loss(w, X, 1.0)))
    close(grad_named(loss, "scale")(w, X, scale=mp.array(3.0)), loss(w, X, 1.0))
    check_grads(lambda w: grad_named(loss, "weights")(inputs=X, weights=w), w, order=1)
    with pytest.raises(ValueError, match=r"loss has no argument named 'bias' \(its arguments: "
                                         r"weights, inputs, scale\)"):
        grad_named(loss, "bias")
    with pytest.raises(TypeError, match=r"grad_named\(loss\): missing a required argument"):
        grad_named(loss, "weights")(w)


# ---------------------------------------------------------------- holomorphic_grad
HOLOMORPHIC = [
    (lambda z: z ** 3 - 2 * z, lambda z: 3 * z ** 2 - 2),
    (lambda z: mp.exp(z) * mp.sin(z), lambda z: numpy.exp(z) * (numpy.sin(z) + numpy.cos(z))),
    (lambda z: 1 / (1 + z ** 2), lambda z: -2 * z / (1 + z ** 2) ** 2),
]


@pytest.mark.parametrize("k", range(len(HOLOMORPHIC)))
def test_holomorphic_grad_is_the_complex_derivative(k):
    f, df = HOLOMORPHIC[k]
    for z0 in (0.3 + 0.7j, -1.1 + 0.2j):
        z = mp.array(z0)
        d = complex(holomorphic_grad(f)(z))
        assert d == pytest.approx(complex(df(z0)), rel=1e-10)
        # finite differences along the real and the imaginary axis give the same f'
        h = 1e-6
        fd_re = (complex(f(mp.array(z0 + h))) - complex(f(mp.array(z0 - h)))) / (2 * h)
        fd_im = (complex(f(mp.array(z0 + 1j * h))) - complex(f(mp.array(z0 - 1j * h)))) / (2j * h)
        assert d == pytest.approx(fd_re, rel=1e-6) and d == pytest.approx(fd_im, rel=1e-6)
        # as autograd, minpy.grad refuses a complex output (not silently Re f)
        with pytest.raises(TypeError, match="holomorphic_grad"):
            mp.grad(f)(z)


def test_holomorphic_grad_arrays_nesting_and_warning():
    z = mp.array(RNG.standard_normal(4) + 1j * RNG.standard_normal(4))
    f = lambda z: mp.sum(mp.exp(z) * z)
    close(holomorphic_grad(f)(z), numpy.exp(host(z)) * (host(z) + 1))
    second = holomorphic_grad(holomorphic_grad(lambda z: z ** 4))(mp.array(1.0 + 1.0j))
    assert complex(second) == pytest.approx(12 * (1.0 + 1.0j) ** 2)
    a, b = holomorphic_grad(lambda a, b: mp.sum(a * b ** 2), argnum=(0, 1))(z, z)
    close(a, host(z) ** 2)
    close(b, 2 * host(z) ** 2)
    with pytest.warns(UserWarning, match="not complex"):
        assert holomorphic_grad(lambda x: x ** 2)(3.0) == pytest.approx(6.0)


# ---------------------------------------------------------------- defvjp / defvjp_argnums
def _fresh_op():
    @mp.customop
    def scaled_dot(a, b, scale):
        return mp.sum(a * b) * scale
    return scaled_dot


def test_defvjp_one_rule_per_positional_argument():
    op = _fresh_op()
    defvjp(op,
           lambda ans, a, b, s: lambda g: g * b * s,
           lambda ans, a, b, s: lambda g: g * a * s,
           lambda ans, a, b, s: lambda g: g * mp.sum(a * b))
    a, b = rand(3), rand(3)
    check_grads(lambda a, b, s: op(a, b, s) ** 2, a, b, 1.5, order=2)
    ga, gs = mp.grad(op, argnum=(0, 2))(a, b, 1.5)
    close(ga, 1.5 * host(b))
    assert gs == pytest.approx(float(mp.sum(a * b)))

    op2 = _fresh_op()
    defvjp(op2, lambda ans, a, b, s: lambda g: g * a * s, argnums=[1])
    close(mp.grad(op2, argnum=1)(a, b, 2.0), 2 * host(a))
    with pytest.raises(TypeError, match="has no gradient with respect to argument 0"):
        mp.grad(op2)(a, b, 2.0)
    with pytest.raises(TypeError, match="argnums must be one int per maker"):
        defvjp(op2, lambda *a: None, argnums=[0, 1])


def test_defvjp_argnums_one_maker_for_all_arguments():
    op = _fresh_op()
    calls = []

    def vjp_maker(argnums, ans, args, kwargs):
        a, b, s = args
        calls.append(argnums)
        parts = {0: lambda g: g * b * s, 1: lambda g: g * a * s,
                 2: lambda g: g * mp.sum(a * b)}
        return lambda g: tuple(parts[i](g) for i in argnums)
    defvjp_argnums(op, vjp_maker)
    a, b = rand(2, 3), rand(2, 3)
    check_grads(lambda a, b, s: op(a, b, s), a, b, 0.5, order=2)
    calls.clear()
    gb = mp.grad(op, argnum=1)(a, b, 0.5)
    assert calls == [(1,)]
    close(gb, 0.5 * host(a))
    bad = _fresh_op()
    defvjp_argnums(bad, lambda argnums, ans, args, kwargs: lambda g: g)
    with pytest.raises(TypeError, match="must return a tuple with one gradient per argnum"):
        mp.grad(bad)(a, b, 0.5)


# ---------------------------------------------------------------- std / var at std == 0
STD_CASES = [
    ((3, 1), dict(axis=1)),
    ((3, 1), dict(axis=1, keepdims=True)),
    ((1,), dict()),
    ((2, 1, 3), dict(axis=1)),
    ((1, 4, 1), dict(axis=(0, 2))),
    ((1, 4, 1), dict(axis=(0, 2), keepdims=True)),
    ((4, 1), dict(axis=-1, ddof=0)),
    ((1, 1), dict(axis=None)),
]


@pytest.mark.parametrize("shape,kw", STD_CASES)
@pytest.mark.parametrize("name", ["std", "var", "nanstd", "nanvar"])
def test_std_var_of_single_element_axes_have_zero_gradient(name, shape, kw):
    fn = getattr(mp, name)
    x = rand(*shape)
    w = rand(*numpy.shape(host(fn(x, **kw))))
    f = lambda x: fn(x, **kw) * w
    g = mp.grad(lambda x: mp.sum(f(x)))(x)
    assert not numpy.isnan(host(g)).any()
    close(g, numpy.zeros(shape))
    check_grads(f, x, order=2)
    # mixed with a normal reduction in the same function: both parts right
    check_grads(lambda x: f(x) + mp.sum(fn(mp.concatenate([x, x * 2.0 + 1.0], axis=0))), x,
                order=2)


def test_std_of_a_constant_slice_gets_the_finite_difference_answer():
    x = mp.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    for ddof in (0, 1):
        g = mp.grad(lambda x: mp.sum(mp.std(x, axis=1, ddof=ddof)))(x)
        assert not numpy.isnan(host(g)).any()
        close(g[0], numpy.zeros(3))
        check_grads(lambda x: mp.std(x, axis=1, ddof=ddof), x, order=1)
    # nanstd: a slice with one value left after the NaNs
    y = mp.array([[numpy.nan, 1.5, numpy.nan], [1.0, 2.0, 4.0]])
    g = mp.grad(lambda y: mp.sum(mp.nanstd(y, axis=1)))(y)
    close(g[0], numpy.zeros(3))
    check_grads(lambda y: mp.nanstd(y, axis=1), y, order=2)
    # the usual case is unchanged: (x - mean) / (std * N)
    xn = host(x)[1]
    close(g[1], (xn - xn.mean()) / (xn.std() * 3))


# ---------------------------------------------------------------- on a (stand-in) GPU
def test_the_api_on_the_gpu_backend(standin_gpu):
    """Results stay on the arrays' device; no host fallback."""
    with mp.gpu(0):
        x = mp.array(RNG.standard_normal(3))
        A = mp.array(RNG.standard_normal((2, 3)))
        f = lambda x: mp.tanh(mp.dot(A, x)) * mp.sum(x ** 2)
        vjp, ans = make_vjp(f)(x)
        g = vjp(mp.ones(2))
        _, jv = make_jvp(f)(x)(mp.ones(3))
        H = hessian(lambda x: mp.sum(mp.sin(x) * x))(x)
        e = elementwise_grad(mp.sin)(x)
        s = mp.grad(lambda x: mp.sum(mp.std(x, axis=1)))(mp.array(RNG.standard_normal((2, 1))))
        for r in (ans, g, jv, H, e, s):
            assert r.context == mp.gpu(0)
        J = mp.jacobian(f)(x)
        close(g, host(J).sum(axis=0))
        close(jv, host(J).sum(axis=1))
        close(s, numpy.zeros((2, 1)))
        check_grads(lambda x: make_vjp(f)(x)[0](mp.ones(2)), x, order=1)
    assert not mp.dispatch.stats()["fallbacks"]
