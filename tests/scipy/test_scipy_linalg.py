"""minpy.scipy.linalg: values against scipy.linalg (hypothesis over sizes, batches and
float32/float64), every function's gradient against finite differences to second
order (check_grads) with its keyword variants (trans, lower, unit_diagonal,
assume_a, transposed), SciPy's conventions (upper Cholesky factor by default, one
triangle read), errors naming the function and shapes, and the GPU path on the
strict stand-in device."""
import importlib
import warnings

import numpy
import pytest
import scipy.linalg as sl
from hypothesis import given, strategies as st

import minpy
import minpy.numpy as mnp
from minpy.scipy import linalg as L
from minpy.scipy import _util
from minpy.testing import check_grads

from _matrices import well_conditioned
from _standin import StandinNamespace, installed
from _host import host as _host

RNG = numpy.random.default_rng(5)


def well(*shape, seed=None, spd=False, cplx=False):
    """Host stack of well-conditioned n x n matrices (SPD when ``spd``)."""
    r = RNG if seed is None else numpy.random.default_rng(seed)
    return well_conditioned(shape, r, hermitian=spd, cplx=cplx)


def tri(*shape, lower=False, cplx=False):
    """Triangular matrices with diagonal entries of modulus in [1, 2]."""
    a = RNG.uniform(-0.5, 0.5, shape) + (1j * RNG.uniform(-0.5, 0.5, shape) if cplx else 0)
    n = shape[-1]
    d = RNG.uniform(1, 2, shape[:-1]) * RNG.choice([-1, 1], shape[:-1])
    a = a * (1 - numpy.eye(n)) + d[..., None] * numpy.eye(n)
    return numpy.tril(a) if lower else numpy.triu(a)


def R(*shape):
    return RNG.standard_normal(shape)


A = mnp.array


def test_every_public_function_is_documented():
    for name in L.__all__:
        if name == "LinAlgError":
            assert L.LinAlgError is numpy.linalg.LinAlgError
            continue
        doc = getattr(L, name).__doc__
        assert f"See also scipy.linalg.{name}." in doc and "Args:" in doc and \
            "Returns:" in doc, name


# ---------------------------------------------------------------- values
@given(data=st.data())
def test_solve_triangular_values(data):
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    n = data.draw(st.integers(1, 4))
    batch = data.draw(st.sampled_from([(), (2,), (2, 1)]))
    vector = data.draw(st.booleans())
    lower = data.draw(st.booleans())
    unit = data.draw(st.booleans())
    trans = data.draw(st.sampled_from([0, 1, 2, "N", "T", "C"]))
    # noise everywhere: the other triangle (and with unit_diagonal the diagonal) is not read
    a = (tri(*batch, n, n, lower=lower) + R(*batch, n, n) * 0.1).astype(dtype)
    b = (R(n) if vector else R(*batch[1:], n, 2)).astype(dtype)
    got = L.solve_triangular(A(a), A(b), trans=trans, lower=lower, unit_diagonal=unit)
    want = sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-4 if dtype == numpy.float32 else 1e-10
    numpy.testing.assert_allclose(_host(got), want, rtol=tol, atol=tol)


@given(data=st.data())
def test_factorizations_and_functions_values(data):
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    n = data.draw(st.integers(1, 4))
    lower = data.draw(st.booleans())
    spd = well(n, n, spd=True, seed=n).astype(dtype)
    gen = well(n, n, seed=n + 10).astype(dtype)
    tol = 2e-4 if dtype == numpy.float32 else 1e-9

    def same(got, want, dtype_as_scipy=True):
        got = _host(got)
        assert got.shape == numpy.shape(want)
        assert got.dtype == (numpy.asarray(want).dtype if dtype_as_scipy else dtype)
        numpy.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    same(L.cholesky(A(spd), lower=lower), sl.cholesky(spd, lower=lower))
    c, lo = L.cho_factor(A(spd), lower=lower)
    assert lo == lower
    b = R(n, 2).astype(dtype)
    same(L.cho_solve((c, lo), A(b)), sl.cho_solve(sl.cho_factor(spd, lower=lower), b))
    same(L.inv(A(gen)), sl.inv(gen))
    same(L.det(A(gen)), sl.det(gen), dtype_as_scipy=False)   # SciPy: float64 for float32
    same(L.expm(A(gen / 2)), sl.expm(gen / 2))
    same(L.sqrtm(A(spd)), sl.sqrtm(spd))
    w, v = L.eigh(A(spd), lower=lower)
    same(w, sl.eigh(spd, lower=lower)[0])
    same(L.eigh(A(spd), eigvals_only=True), sl.eigh(spd, eigvals_only=True))
    q = R(n, 2).astype(dtype)
    bb = well(2, 2, seed=3).astype(dtype)
    same(L.solve_sylvester(A(gen), A(bb), A(q)), sl.solve_sylvester(gen, bb, q))


ASSUME = [None, "gen", "sym", "her", "pos", "diagonal", "tridiagonal", "banded",
          "upper triangular", "lower triangular"]


@pytest.mark.parametrize("assume_a", ASSUME)
@pytest.mark.parametrize("lower", [False, True])
def test_solve_values_read_what_scipy_reads(assume_a, lower):
    spd = well(4, 4, spd=True)
    noisy = spd + numpy.triu(R(4, 4), 1) if lower else spd + numpy.tril(R(4, 4), -1)
    if assume_a in ("sym", "her", "pos"):
        a = noisy                # the triangle not read holds garbage
    elif assume_a in ("diagonal", "tridiagonal", "upper triangular", "lower triangular"):
        a = spd + R(4, 4) * 0.3  # entries outside the structure are not read
    else:
        a = well(4, 4)
    for b in (R(4), R(4, 2)):
        got = _host(L.solve(A(a), A(b), assume_a=assume_a, lower=lower))
        numpy.testing.assert_allclose(got, sl.solve(a, b, assume_a=assume_a, lower=lower),
                                      rtol=1e-9, atol=1e-12)
    if assume_a not in ("sym", "her", "pos"):
        b = R(4, 2)
        got = _host(L.solve(A(a), A(b), assume_a=assume_a, transposed=True))
        numpy.testing.assert_allclose(got, sl.solve(a, b, assume_a=assume_a, transposed=True),
                                      rtol=1e-9, atol=1e-12)
    if assume_a == "tridiagonal":        # SciPy's inv does not take it: the band's inverse
        want = numpy.linalg.inv(numpy.triu(numpy.tril(a, 1), -1))
    elif assume_a == "diagonal":         # SciPy 1.17 leaves a's off-diagonal entries there
        want = numpy.diag(1 / numpy.diag(a))
    elif assume_a == "banded":
        want = numpy.linalg.inv(a)
    else:
        want = sl.inv(a, assume_a=assume_a, lower=lower)
    numpy.testing.assert_allclose(_host(L.inv(A(a), assume_a=assume_a, lower=lower)), want,
                                  rtol=1e-9, atol=1e-12)


def test_batched_values():
    a, spd, t = well(2, 3, 3), well(2, 3, 3, spd=True), tri(2, 3, 3, lower=True)
    numpy.testing.assert_allclose(_host(L.expm(A(a / 2))), sl.expm(a / 2), rtol=1e-10)
    numpy.testing.assert_allclose(_host(L.sqrtm(A(spd))),
                                  numpy.stack([sl.sqrtm(m) for m in spd]), rtol=1e-9)
    numpy.testing.assert_allclose(_host(L.cholesky(A(spd))),
                                  numpy.stack([sl.cholesky(m) for m in spd]), rtol=1e-10)
    b = R(3)
    numpy.testing.assert_allclose(_host(L.solve_triangular(A(t), A(b), lower=True)),
                                  numpy.stack([sl.solve_triangular(m, b, lower=True)
                                               for m in t]), rtol=1e-10)
    b = R(4, 1, 3, 2)       # batch (4, 1) broadcasts with a's (2,)
    got = _host(L.solve_triangular(A(t), A(b), lower=True, trans=1))
    assert got.shape == (4, 2, 3, 2)
    numpy.testing.assert_allclose(got[3, 1], sl.solve_triangular(t[1], b[3, 0], lower=True,
                                                                 trans=1), rtol=1e-10)
    q = R(2, 3, 2)
    bb = well(2, 2)
    numpy.testing.assert_allclose(_host(L.solve_sylvester(A(a), A(bb), A(q))),
                                  numpy.stack([sl.solve_sylvester(a[i], bb, q[i])
                                               for i in range(2)]), rtol=1e-9)


def test_cholesky_is_upper_by_default_and_reads_one_triangle():
    spd = well(3, 3, spd=True)
    u = _host(L.cholesky(A(spd)))
    numpy.testing.assert_allclose(u, numpy.triu(u))
    numpy.testing.assert_allclose(u.T @ u, spd, rtol=1e-12)
    garbage = numpy.tril(R(3, 3), -1)
    numpy.testing.assert_allclose(_host(L.cholesky(A(numpy.triu(spd) + garbage))), u)
    g = _host(minpy.grad(lambda a: mnp.sum(L.cholesky(a)))(A(spd)))
    assert numpy.all(numpy.tril(g, -1) == 0)         # the lower triangle is not read
    g = _host(minpy.grad(lambda a: mnp.sum(L.cholesky(a, lower=True)))(A(spd)))
    assert numpy.all(numpy.triu(g, 1) == 0)


def test_sqrtm_of_a_matrix_with_negative_eigenvalues_is_complex():
    a = numpy.array([[-2.0, 1.0], [0.5, 3.0]])
    got = L.sqrtm(A(a))
    numpy.testing.assert_allclose(_host(got), sl.sqrtm(a), rtol=1e-10)
    check_grads(lambda a: mnp.real(L.sqrtm(a)), A(a), order=1)


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_gradients(trans, lower, unit):
    a = A(tri(3, 3, lower=lower))
    check_grads(lambda a, b: L.solve_triangular(a, b, trans=trans, lower=lower,
                                                unit_diagonal=unit), a, A(R(3)), order=2)
    check_grads(lambda a, b: L.solve_triangular(a, b, trans=trans, lower=lower,
                                                unit_diagonal=unit), a, A(R(3, 2)), order=2)


def test_solve_triangular_gradients_batched_and_complex():
    a = A(tri(2, 3, 3, lower=True))
    check_grads(lambda a, b: L.solve_triangular(a, b, lower=True), a, A(R(3)), order=2)
    check_grads(lambda a, b: L.solve_triangular(a, b, trans="T", lower=True), a,
                A(R(3, 1, 3, 2)), order=2)
    c = A(tri(3, 3, cplx=True))
    bc = A(R(3, 2) + 1j * R(3, 2))
    for trans in (0, 1, 2):
        check_grads(lambda a, b: L.solve_triangular(a, b, trans=trans), c, bc, order=2)
    # the triangle not read and (unit_diagonal) the diagonal get no gradient
    g = minpy.grad(lambda a: mnp.sum(L.solve_triangular(a, A(R(3)), unit_diagonal=True)))(
_host(        A(tri(3, 3))))
    assert numpy.all(numpy.tril(g) == 0)


@pytest.mark.parametrize("shape", [(3, 3), (2, 2, 2)])
def test_matrix_function_gradients(shape):
    spd, gen = A(well(*shape, spd=True)), A(well(*shape))
    check_grads(L.expm, gen * 0.5, order=2)
    check_grads(L.sqrtm, spd, order=2)
    check_grads(L.sqrtm, gen + 3 * mnp.eye(shape[-1]), order=2)     # non-symmetric
    check_grads(lambda a: L.cholesky(a), spd, order=2)
    check_grads(lambda a: L.cholesky(a, lower=True), spd, order=2)
    check_grads(L.inv, gen, order=2)
    check_grads(L.det, gen, order=2)
    check_grads(lambda a: L.eigh(a)[0], spd, order=2)
    check_grads(lambda a: L.eigh(a, lower=False, eigvals_only=True), spd, order=2)


def test_expm_gradient_complex():
    a = A(well(3, 3, cplx=True) * 0.3)
    check_grads(L.expm, a, order=2)


def test_solve_sylvester_gradients():
    a, b, q = A(well(3, 3)), A(well(2, 2)), A(R(3, 2))
    check_grads(L.solve_sylvester, a, b, q, order=2)
    check_grads(L.solve_sylvester, A(well(2, 3, 3)), b, A(R(2, 3, 2)), order=2)   # broadcast


@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_gradients(lower):
    spd = A(well(3, 3, spd=True))
    for b in (A(R(3)), A(R(3, 2))):
        check_grads(lambda a, b: L.cho_solve(L.cho_factor(a, lower=lower), b), spd, b, order=2)


@pytest.mark.parametrize("assume_a", ASSUME)
def test_solve_gradients(assume_a):
    spd = A(well(3, 3, spd=True))
    check_grads(lambda a, b: L.solve(a, b, assume_a=assume_a), spd, A(R(3, 2)), order=2)
    check_grads(lambda a, b: L.solve(a, b, assume_a=assume_a, lower=True, transposed=True),
                spd, A(R(3)), order=2)
    check_grads(lambda a: L.inv(a, assume_a=assume_a), spd, order=2)


# ---------------------------------------------------------------- errors
def test_errors_name_the_function_and_shapes():
    with pytest.raises(ValueError, match=r"minpy\.scipy\.linalg\.cholesky: .*square.*\(2, 3\)"):
        L.cholesky(mnp.ones((2, 3)))
    with pytest.raises(numpy.linalg.LinAlgError,
                       match=r"minpy\.scipy\.linalg\.cholesky: the matrix of shape \(2, 2\) "
                             r"is not positive definite"):
        L.cholesky(-mnp.eye(2))
    with pytest.raises(ValueError, match=r"minpy\.scipy\.linalg\.solve_triangular: .*\(3,\).*"
                                         r"\(3, 3\).*\(4,\)"):
        L.solve_triangular(mnp.eye(3), mnp.ones(4))
    with pytest.raises(ValueError, match=r"solve_triangular: trans must be"):
        L.solve_triangular(mnp.eye(3), mnp.ones(3), trans=3)
    with pytest.raises(ValueError, match=r"minpy\.scipy\.linalg\.solve: .*infs or NaNs"):
        L.solve(mnp.array([[1.0, numpy.nan], [0.0, 1.0]]), mnp.ones(2))
    with pytest.raises(ValueError, match=r"minpy\.scipy\.linalg\.solve: assume_a='weird'"):
        L.solve(mnp.eye(2), mnp.ones(2), assume_a="weird")
    with pytest.raises(ValueError, match=r"minpy\.scipy\.linalg\.solve_sylvester: q must have "
                                         r"shape \(\.\.\., 3, 2\)"):
        L.solve_sylvester(mnp.eye(3), mnp.eye(2), mnp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"minpy\.scipy\.linalg\.expm: A must be a square"):
        L.expm(mnp.ones(3))
    with pytest.raises(NotImplementedError, match="generalized"):
        L.eigh(mnp.eye(2), mnp.eye(2))
    with pytest.raises(TypeError, match=r"cho_solve: c_and_lower must be the pair"):
        L.cho_solve(mnp.eye(2), mnp.ones(2))
    # check_finite=False skips the check (SciPy's LAPACK then gets the NaN)
    out = L.solve_triangular(mnp.array([[1.0, numpy.nan], [0.0, 1.0]]), mnp.ones(2),
                             check_finite=False)
    assert numpy.isnan(_host(out)).any()


# ---------------------------------------------------------------- GPU path (stand-in)
def test_primitives_run_on_the_gpu_backend_and_fall_back_where_missing():
    with installed() as backend:
        backend.missing = backend.missing | {"scipy.linalg.sqrtm"}
        _util.GPU_NAMESPACES["standin"] = {"linalg": StandinNamespace(
            backend, importlib.import_module("scipy.linalg"), "scipy.linalg.")}
        try:
            with minpy.gpu(0):
                t, b = A(tri(2, 3, 3, lower=True)), A(R(3, 2))
                x = L.solve_triangular(t, b, lower=True)
                assert x.context == minpy.gpu(0)
                check_grads(lambda t, b: L.solve_triangular(t, b, lower=True, trans=1), t, b,
                            order=2)
                check_grads(L.expm, A(well(3, 3)) * 0.5, order=2)
                calls = minpy.dispatch.stats()["calls"]
                assert set(calls["scipy.linalg.solve_triangular"]) == {"standin"}
                assert set(calls["scipy.linalg.expm"]) == {"standin"}
                assert not minpy.dispatch.stats()["fallbacks"]
                spd = A(well(3, 3, spd=True))
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    r = L.sqrtm(spd)
                assert any("scipy.linalg.sqrtm is not available" in str(m.message) for m in w)
                numpy.testing.assert_allclose(_host(r), sl.sqrtm(_host(spd)), rtol=1e-10)
                assert minpy.dispatch.stats()["fallbacks"]["scipy.linalg.sqrtm"] == 1
        finally:
            del _util.GPU_NAMESPACES["standin"]


# ---------------------------------------------------------------- solve_banded
def _band(l, u, m, complex_=False, seed=0):
    rng = numpy.random.default_rng(seed)
    ab = rng.standard_normal((l + u + 1, m))
    if complex_:
        ab = ab + 1j * rng.standard_normal(ab.shape)
    ab[u] += 4.0            # diagonally dominant: well conditioned
    return ab


@pytest.mark.parametrize("l,u", [(0, 0), (1, 1), (2, 1), (0, 2), (3, 0)])
@pytest.mark.parametrize("bshape", [(5,), (5, 2)])
def test_solve_banded_values_and_gradients(l, u, bshape):
    ab, b = _band(l, u, 5), numpy.random.default_rng(1).standard_normal(bshape)
    got = L.solve_banded((l, u), A(ab), A(b))
    want = sl.solve_banded((l, u), ab, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    numpy.testing.assert_allclose(_host(got), want, rtol=1e-12, atol=1e-12)
    check_grads(lambda ab, b: L.solve_banded((l, u), ab, b), A(ab), A(b), order=2)


def test_solve_banded_gradient_is_zero_on_the_unused_corners_and_complex():
    l, u = 1, 2
    g = minpy.grad(lambda ab: mnp.sum(L.solve_banded((l, u), ab, A(numpy.ones(5)))))(
        A(_band(l, u, 5)))
    g = _host(g)
    assert (g[0, :2] == 0).all() and g[1, 0] == 0 and g[3, -1] == 0 and (g[2] != 0).all()
    abc, bc = _band(l, u, 4, complex_=True), numpy.arange(4) + 1j
    numpy.testing.assert_allclose(_host(L.solve_banded((l, u), A(abc), A(bc))),
                                  sl.solve_banded((l, u), abc, bc), rtol=1e-12)
    check_grads(lambda ab, b: mnp.abs(L.solve_banded((l, u), ab, b)) ** 2, A(abc), A(bc),
                order=2)


def test_solve_banded_errors_name_the_function():
    ab = A(_band(1, 1, 4))
    with pytest.raises(ValueError, match=r"minpy.scipy.linalg.solve_banded: ab must have "
                                         r"shape \(4, M\)"):
        L.solve_banded((2, 1), ab, A(numpy.ones(4)))
    with pytest.raises(ValueError, match="minpy.scipy.linalg.solve_banded: b must have"):
        L.solve_banded((1, 1), ab, A(numpy.ones(3)))
    with pytest.raises(ValueError, match="solve_banded: l must be a non-negative int"):
        L.solve_banded((-1, 1), ab, A(numpy.ones(4)))
    with pytest.raises(ValueError, match="solve_banded: l_and_u must be a pair"):
        L.solve_banded(3, ab, A(numpy.ones(4)))
