"""autograd's remaining API (minpy.core.autograd_extra): vspace, deriv, make_hvp,
make_ggnvp, tensor_jacobian_product, grad_and_aux. Each result is compared with
an independent route (hessian, jacobian, NumPy) and differentiated again with
check_grads (orders 1 and 2)."""
import numpy
import pytest

import minpy as mp
from minpy.testing import check_grads
from _host import host

RNG = numpy.random.default_rng(7)


def rand(*shape):
    return mp.array(RNG.standard_normal(shape))


def close(a, b, rtol=1e-7, atol=1e-9):
    numpy.testing.assert_allclose(host(a), host(b), rtol=rtol, atol=atol)


def scalar_fun(x):
    return mp.sum(mp.sin(x) ** 2) * mp.sum(x ** 3)


# ---------------------------------------------------------------- vspace
@pytest.mark.parametrize("value, shape, dtype, size, iscomplex", [
    (numpy.zeros((2, 3), numpy.float32), (2, 3), numpy.float32, 6, False),
    (1.5, (), numpy.float64, 1, False),
    (numpy.ones(4, numpy.complex128), (4,), numpy.complex128, 8, True),
])
def test_vspace_of_arrays(value, shape, dtype, size, iscomplex):
    for v in (value, mp.array(value)):
        vs = mp.vspace(v)
        assert (vs.shape, vs.dtype, vs.size, vs.iscomplex, vs.ndim) == \
            (shape, numpy.dtype(dtype), size, iscomplex, len(shape))
        z, o, r = vs.zeros(), vs.ones(), vs.randn()
        for a in (z, o, r):
            assert isinstance(a, mp.Array) and a.shape == shape and a.dtype == dtype
        close(z, numpy.zeros(shape, dtype))
        close(o, numpy.ones(shape) * ((1 + 1j) if iscomplex else 1))
        basis = list(vs.standard_basis())
        assert len(basis) == size
        flat = numpy.array([host(b).ravel() for b in basis])
        assert numpy.count_nonzero(flat) == size
        assert vs == mp.vspace(vs.zeros())


def test_vspace_inner_prod_is_real_and_containers_add_up():
    x = mp.array([1 + 2j, 3 - 1j])
    y = mp.array([2 - 1j, 1j])
    vs = mp.vspace(x)
    close(vs.inner_prod(x, y), numpy.real(numpy.vdot(host(x), host(y))))
    close(vs.covector(x), numpy.conj(host(x)))
    c = mp.vspace({"a": rand(2, 2), "b": [1.0, x]})
    assert c.size == 4 + 1 + 4 and c.iscomplex
    z = c.zeros()
    assert set(z) == {"a", "b"} and z["a"].shape == (2, 2) and z["b"][1].dtype == numpy.complex128
    assert len(list(c.standard_basis())) == c.size


def test_vspace_of_a_traced_value_and_bad_values():
    seen = []
    mp.grad(lambda x: (seen.append(mp.vspace(x)), mp.sum(x))[1])(rand(3))
    assert seen[0].shape == (3,) and seen[0].dtype == numpy.float64
    for bad in ("abc", None, True):
        with pytest.raises(TypeError, match="minpy.vspace"):
            mp.vspace(bad)


# ---------------------------------------------------------------- deriv
def test_deriv_is_elementwise_grad():
    x = rand(5)
    close(mp.deriv(mp.tanh)(x), 1 - numpy.tanh(host(x)) ** 2)
    check_grads(mp.deriv(mp.tanh), x)


# ---------------------------------------------------------------- make_hvp
def test_make_hvp_matches_the_hessian():
    x = rand(4)
    hvp, g = mp.make_hvp(scalar_fun)(x)
    close(g, mp.grad(scalar_fun)(x))
    H = host(mp.hessian(scalar_fun)(x))
    for v in (numpy.eye(4)[1], RNG.standard_normal(4)):
        close(hvp(mp.array(v)), H @ v)
    check_grads(lambda x, v: mp.make_hvp(scalar_fun)(x)[0](v), x, rand(4))


def test_make_hvp_second_argument():
    f = lambda a, b: mp.sum(a * mp.exp(b) ** 2)
    a, b = rand(3), rand(3)
    hvp, _ = mp.make_hvp(f, argnum=1)(a, b)
    v = rand(3)
    close(hvp(v), host(a) * 4 * numpy.exp(2 * host(b)) * host(v))


# ---------------------------------------------------------------- make_ggnvp
def test_make_ggnvp_default_loss_is_jt_j():
    A = rand(5, 3)
    model = lambda x: mp.tanh(A @ x)
    x, v = rand(3), rand(3)
    J = host(mp.jacobian(model)(x))
    close(mp.make_ggnvp(model)(x)(v), J.T @ (J @ host(v)))
    check_grads(lambda x, v: mp.make_ggnvp(model)(x)(v), x, v)


def test_make_ggnvp_with_a_loss_and_f_argnum():
    model = lambda w, x: mp.sin(w @ x)
    loss = lambda y: mp.sum(mp.exp(y))             # Hessian diag(exp(y))
    w, x, v = rand(4, 3), rand(3), rand(3)
    y = host(model(w, x))
    J = host(mp.jacobian(model, 1)(w, x))
    close(mp.make_ggnvp(model, loss, f_argnum=1)(w, x)(v), J.T @ (numpy.exp(y) * (J @ host(v))))


# ---------------------------------------------------------------- tensor_jacobian_product
@pytest.mark.parametrize("vshape", [(4,), (4, 2), ()])
def test_tensor_jacobian_product_is_tensordot_with_the_jacobian(vshape):
    B = rand(4, 2, 3)
    fun = lambda x: mp.sin(B @ x)                 # (4, 2)
    x, v = rand(3), rand(*vshape)
    J = host(mp.jacobian(fun)(x))                 # (4, 2, 3)
    expected = numpy.tensordot(host(v), J, axes=len(vshape))
    got = mp.tensor_jacobian_product(fun)(x, v)
    assert got.shape == expected.shape
    close(got, expected)
    assert mp.vector_jacobian_product is mp.tensor_jacobian_product
    check_grads(lambda x, v: mp.tensor_jacobian_product(fun)(x, v), x, v)


def test_tensor_jacobian_product_refuses_a_mismatched_vector():
    with pytest.raises(ValueError, match="tensor_jacobian_product.*leading axes"):
        mp.tensor_jacobian_product(mp.sin)(rand(3), rand(4))
    with pytest.raises(TypeError, match="missing the vector"):
        mp.tensor_jacobian_product(mp.sin)()


# ---------------------------------------------------------------- grad_and_aux
def test_grad_and_aux_returns_the_aux_unchanged():
    def f(x, y):
        loss = mp.sum(x ** 2 * y)
        return loss, {"loss": loss, "tag": "ok", "sq": x ** 2}
    x, y = rand(3), rand(3)
    g, aux = mp.grad_and_aux(f)(x, y)
    close(g, 2 * host(x) * host(y))
    assert aux["tag"] == "ok" and aux["loss"]._node is None and aux["sq"]._node is None
    close(aux["loss"], numpy.sum(host(x) ** 2 * host(y)))
    (gx, gy), _ = mp.grad_and_aux(f, argnum=(0, 1))(x, y)
    close(gy, host(x) ** 2)
    check_grads(lambda x: mp.grad_and_aux(f)(x, y)[0], x)


def test_grad_and_aux_refuses_bad_outputs():
    with pytest.raises(TypeError, match="grad_and_aux.*pair"):
        mp.grad_and_aux(lambda x: mp.sum(x))(rand(2))
    with pytest.raises(TypeError, match="scalar"):
        mp.grad_and_aux(lambda x: (x, 0))(rand(2))


# ---------------------------------------------------------------- np.where keywords
@pytest.mark.parametrize("kwargs, args", [({"condition": True, "x": 1, "y": 2}, ()),
                                          ({"x": 1, "y": 2}, (True,))])
def test_where_keywords_raise_as_numpy(kwargs, args):
    """NumPy's where is positional-only; minpy raises the same TypeError (autograd's
    wrapper passing keywords would be wrong on NumPy too)."""
    with pytest.raises(TypeError) as want:
        numpy.where(*args, **kwargs)
    with pytest.raises(TypeError) as got:
        mp.where(*args, **kwargs)
    assert str(got.value) == str(want.value)
    close(mp.where(mp.array([True, False]), 1.0, 2.0), [1.0, 2.0])
