"""Gradients of numpy.linalg: solves, determinants, decompositions, norms, powers,
chains, least squares. Inputs are well conditioned (A = Q diag(s) P^T with s in
[1, 3]; SPD/Hermitian for cholesky and eigh) and away from ties; every rule is
checked to second order against finite differences, plus closed forms and
HIPS autograd where they pin a convention."""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
import minpy.numpy as mnp
from minpy.testing import check_grads
from _matrices import well_conditioned
from _standin import standin_gpu  # noqa: F401  (fixture)

LA = mnp.linalg
INF = numpy.inf
RNG = numpy.random.default_rng(99)


def R(*shape):
    return mnp.array(RNG.standard_normal(shape))


def C(*shape):
    return mnp.array(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape))


def well(*shape, cplx=False, hermitian=False, seed=None):
    """Stack of well-conditioned n x n matrices as an Array (Hermitian PD if hermitian)."""
    r = RNG if seed is None else numpy.random.default_rng(seed)
    return mnp.array(well_conditioned(shape, r, hermitian=hermitian, cplx=cplx))


# ---------------------------------------------------------------- inverses, solves
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (2, 1, 2, 2)])
def test_inv_det_slogdet(shape):
    a = well(*shape)
    check_grads(LA.inv, a)
    check_grads(LA.det, a)
    check_grads(lambda a: LA.slogdet(a)[1], a)
    check_grads(lambda a: LA.slogdet(a).logabsdet * LA.slogdet(a).sign, a)


def test_inv_det_slogdet_complex():
    a = well(3, 3, cplx=True)
    check_grads(LA.inv, a)
    check_grads(LA.det, a)
    check_grads(lambda a: LA.slogdet(a)[1], a)
    check_grads(lambda a: LA.slogdet(a)[0], a)        # the phase of det moves too


def test_logdet_hessian_vector_product():
    # d/dA log|det A| = A^-T ; its derivative along V is -(A^-1 V A^-1)^T
    a, v = well(3, 3), R(3, 3)
    got = minpy.hessian_vector_product(lambda a: LA.slogdet(a)[1])(a, vector=v)
    ai = numpy.linalg.inv(a.asnumpy())
    numpy.testing.assert_allclose(got.asnumpy(), -(ai @ v.asnumpy() @ ai).T, rtol=1e-10)


def test_det_third_order():
    check_grads(LA.det, well(3, 3), order=3)


@pytest.mark.parametrize("sa,sb", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)),
                                   ((2, 3, 3), (3,)), ((3, 3), (2, 3, 2)), ((2, 3, 3), (3, 1))])
def test_solve(sa, sb):
    check_grads(LA.solve, well(*sa), R(*sb))


def test_solve_complex_and_keywords():
    check_grads(LA.solve, well(3, 3, cplx=True), C(3))
    b = R(3, 2)
    check_grads(lambda a, b: LA.solve(a=a, b=b), well(3, 3), b)
    check_grads(lambda a, b: LA.solve(a, b=b), well(3, 3), b)


def test_tensorinv_tensorsolve():
    a = mnp.reshape(well(6, 6), (2, 3, 6))
    check_grads(lambda a: LA.tensorinv(a, ind=2), a)
    check_grads(lambda a: LA.tensorinv(a, ind=1), mnp.reshape(well(6, 6), (6, 2, 3)))
    check_grads(LA.tensorsolve, mnp.reshape(well(6, 6), (2, 3, 2, 3)), R(2, 3))
    check_grads(lambda a, b: LA.tensorsolve(a, b, axes=(0,)),
                mnp.reshape(well(6, 6), (6, 2, 3)), R(2, 3))


def test_singular_matrix_still_raises_linalgerror():
    with pytest.raises(LA.LinAlgError):
        minpy.grad(lambda a: mnp.sum(LA.inv(a)))(mnp.ones((2, 2)))
    with pytest.raises(LA.LinAlgError):
        minpy.grad(lambda a: mnp.sum(LA.solve(a, mnp.ones(2))))(mnp.ones((2, 2)))


# ---------------------------------------------------------------- cholesky, eigh
@pytest.mark.parametrize("cplx", [False, True])
def test_cholesky(cplx):
    a = well(2, 3, 3, cplx=cplx, hermitian=True)
    check_grads(LA.cholesky, a)
    check_grads(lambda a: LA.cholesky(a, upper=True), a)


def test_cholesky_reads_one_triangle():
    # NumPy reads only the lower triangle: its gradient must be zero above it
    a = well(3, 3, hermitian=True)
    g = minpy.grad(lambda a: mnp.sum(LA.cholesky(a) ** 3))(a).asnumpy()
    assert numpy.all(numpy.triu(g, 1) == 0) and numpy.any(numpy.tril(g, -1) != 0)
    g = minpy.grad(lambda a: mnp.sum(LA.cholesky(a, upper=True) ** 3))(a).asnumpy()
    assert numpy.all(numpy.tril(g, -1) == 0)


def test_cholesky_of_symmetrized_input():
    # through a symmetric construction the two-triangle convention does not matter
    check_grads(lambda x: LA.cholesky(mnp.matmul(x, mnp.swapaxes(x, -1, -2)) + 3 * mnp.eye(3)),
                R(2, 3, 3))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo):
    a = well(2, 3, 3, hermitian=True)
    check_grads(lambda a: LA.eigh(a, UPLO=uplo)[0], a)
    check_grads(lambda a: LA.eigh(a, UPLO=uplo)[1], a)
    check_grads(lambda a: LA.eigh(a, uplo).eigenvectors * LA.eigh(a, uplo).eigenvalues[:, None], a)
    check_grads(lambda a: LA.eigvalsh(a, UPLO=uplo), a)


def test_eigh_complex_phase_invariant():
    a = well(3, 3, cplx=True, hermitian=True)
    check_grads(lambda a: LA.eigh(a)[0], a)
    check_grads(lambda a: mnp.abs(LA.eigh(a)[1]) ** 2, a)
    check_grads(LA.eigvalsh, a)


def test_eigh_matches_autograd():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    a = well(3, 3, hermitian=True).asnumpy()
    w = numpy.array([0.3, -1.0, 2.0])
    def f(xp, la):
        return lambda a: xp.sum(la.eigh(a)[1] ** 3 @ w) + xp.sum(la.eigh(a)[0] * w)
    want = autograd.grad(f(anp, anp.linalg))(a)
    got = minpy.grad(f(mnp, LA))(mnp.array(a)).asnumpy()
    numpy.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- svd, pinv, qr
SHAPES = [(3, 3), (4, 3), (3, 4), (2, 4, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_svd(shape):
    a = R(*shape)
    for i in range(3):
        check_grads(lambda a: LA.svd(a, full_matrices=False)[i], a)
    check_grads(lambda a: LA.svd(a, compute_uv=False), a)
    check_grads(LA.svdvals, a)


def test_svd_square_full_matrices_and_hermitian():
    a = R(3, 3)
    check_grads(lambda a: LA.svd(a)[0] * LA.svd(a)[1], a)
    check_grads(lambda a: LA.svd(a, hermitian=True)[1], well(3, 3, hermitian=True))


def test_svd_complex_gauge_invariant():
    for shape in [(4, 3), (3, 4)]:
        a = C(*shape)
        check_grads(lambda a: LA.svd(a, compute_uv=False), a)
        check_grads(lambda a: mnp.abs(LA.svd(a, full_matrices=False)[0]) ** 2, a)
        check_grads(lambda a: mnp.abs(LA.svd(a, full_matrices=False)[2]) ** 2, a)

        def low_rank(a):
            u, s, vh = LA.svd(a, full_matrices=False)
            return mnp.matmul(u[:, :2] * s[:2], vh[:2])
        check_grads(low_rank, a)


def test_svd_full_matrices_non_square_refused():
    with pytest.raises(TypeError, match="full_matrices"):
        minpy.grad(lambda a: mnp.sum(LA.svd(a)[0]))(R(4, 3))


@pytest.mark.parametrize("shape", SHAPES)
def test_pinv(shape):
    check_grads(LA.pinv, R(*shape))


def test_pinv_complex_and_hermitian():
    check_grads(LA.pinv, C(4, 3))
    check_grads(lambda a: LA.pinv(a, hermitian=True), well(3, 3, hermitian=True))


@pytest.mark.parametrize("shape", SHAPES)
def test_qr(shape):
    a = R(*shape)
    check_grads(lambda a: LA.qr(a)[0], a)
    check_grads(lambda a: LA.qr(a).R, a)
    check_grads(lambda a: LA.qr(a, mode="r"), a)


def test_qr_complex_and_modes():
    a = C(4, 3)
    check_grads(lambda a: LA.qr(a)[0], a)
    check_grads(lambda a: LA.qr(a)[1], a)
    check_grads(lambda a: LA.qr(a, mode="complete")[0], R(3, 4))    # square Q: unique
    with pytest.raises(TypeError, match="complete"):
        minpy.grad(lambda a: mnp.sum(LA.qr(a, mode="complete")[0]))(R(4, 3))
    with pytest.raises(TypeError, match="raw"):
        minpy.grad(lambda a: mnp.sum(LA.qr(a, mode="raw")[0]))(R(4, 3))


# ---------------------------------------------------------------- eig
ROT = [[0.0, -2.0, 0.3], [2.0, 0.1, 0.1], [0.2, 0.5, 1.0]]      # eigenvalues +-2i-ish and 1.07


def test_eig_eigenvalues():
    check_grads(LA.eigvals, R(3, 3), order=2)
    check_grads(LA.eigvals, R(2, 4, 4), order=1)
    check_grads(LA.eigvals, C(3, 3), order=2)
    check_grads(lambda a: LA.eig(a)[0], C(3, 3), order=2)
    check_grads(LA.eigvals, mnp.array(ROT), order=2)


def test_eig_phase_invariant_eigenvector_losses():
    """|v| (and anything of v * conj(v)) does not depend on the arbitrary phase: it has a
    gradient, for real matrices with complex eigenvalues and for complex matrices."""
    rot = mnp.array(ROT)
    assert numpy.iscomplexobj(numpy.linalg.eig(numpy.array(ROT))[1])
    for a in (rot, C(3, 3)):
        check_grads(lambda a: mnp.abs(LA.eig(a)[1]), a, order=2)
        check_grads(lambda a: mnp.abs(LA.eig(a)[1]) ** 2 * LA.eig(a)[0], a, order=2)
    check_grads(lambda a: mnp.abs(LA.eig(a)[1]), C(2, 3, 3), order=1)


def test_eig_real_eigenvectors_of_a_real_matrix():
    """Real eigenvalues: NumPy < 2.5 gives real eigenvectors (phase only a sign), so any
    loss is smooth; NumPy >= 2.5 always returns complex ones, whose phase is arbitrary,
    so only phase-invariant losses have a gradient (NumPy's result type is the spec)."""
    a = mnp.array(numpy.diag([1.0, 3.0, 6.0]) + 0.3 * RNG.standard_normal((3, 3)))
    w, v = numpy.linalg.eig(a.asnumpy())
    assert not numpy.any(numpy.imag(w)) and not numpy.any(numpy.imag(v))
    assert numpy.iscomplexobj(LA.eig(a)[1]) == numpy.iscomplexobj(v)
    if not numpy.iscomplexobj(v):
        check_grads(lambda a: LA.eig(a)[1], a, order=2)
    else:
        with pytest.raises(TypeError, match="arbitrary phase of linalg.eig's eigenvectors"):
            minpy.grad(lambda a: mnp.sum(mnp.imag(LA.eig(a)[1])))(a)
    check_grads(lambda a: mnp.abs(LA.eig(a)[1]) ** 2 * LA.eig(a)[0], a, order=2)


def test_eig_phase_dependent_losses_are_refused():
    for a in (mnp.array(ROT), C(3, 3)):
        with pytest.raises(TypeError, match="arbitrary phase of linalg.eig's eigenvectors"):
            minpy.grad(lambda a: mnp.sum(mnp.real(LA.eig(a)[1])))(a)


# ---------------------------------------------------------------- powers, chains, lstsq
@pytest.mark.parametrize("n", [0, 1, 2, 3, -1, -2])
def test_matrix_power(n):
    check_grads(lambda a: LA.matrix_power(a, n) + a, well(2, 3, 3))


def test_multi_dot():
    check_grads(lambda a, b, c: LA.multi_dot([a, b, c]), R(2, 3), R(3, 4), R(4, 2))
    check_grads(lambda a, b, c, d: LA.multi_dot([a, b, c, d]), R(3), R(3, 4), R(4, 2), R(2))
    check_grads(lambda a, b: LA.multi_dot([a, b]), R(3), R(3, 4))
    check_grads(lambda a, b: LA.multi_dot((a, b)), C(2, 3), C(3))
    check_grads(lambda a, b: LA.multi_dot(arrays=[a, b]), R(2, 3), R(3, 2))


@pytest.mark.parametrize("sa,sb", [((5, 3), (5, 2)), ((5, 3), (5,)), ((3, 5), (3,)),
                                   ((3, 3), (3, 2))])
def test_lstsq(sa, sb):
    a, b = R(*sa), R(*sb)
    check_grads(lambda a, b: LA.lstsq(a, b)[0], a, b)
    check_grads(lambda a, b: LA.lstsq(a, b)[1], a, b)
    check_grads(lambda a, b: LA.lstsq(a, b, rcond=None)[3], a, b, argnums=[0])


def test_lstsq_rank_is_untraced_and_complex():
    check_grads(lambda a, b: LA.lstsq(a, b)[0], C(5, 3), C(5))
    g = minpy.grad(lambda a: mnp.sum(LA.lstsq(a, mnp.ones(5))[2] * a))(R(5, 3))
    numpy.testing.assert_allclose(g.asnumpy(), 3 * numpy.ones((5, 3)))


def test_matrix_rank_nondiff():
    x = R(3, 4)
    g = minpy.grad(lambda x: mnp.sum(x * LA.matrix_rank(x)))(x)
    numpy.testing.assert_allclose(g.asnumpy(), numpy.full((3, 4), 3.0))


# ---------------------------------------------------------------- norms and cond
VEC_ORDS = [None, 1, 2, INF, -INF, 3, 0.5, -1]


@given(st.sampled_from(VEC_ORDS), st.sampled_from([None, 0, 1, -1, (1,)]), st.booleans(),
       st.booleans())
def test_norm_vector_hypothesis(ord, axis, keepdims, cplx):
    x = C(3, 4) if cplx else R(3, 4)
    if axis is None:
        x = x[0]
    check_grads(lambda x: LA.norm(x, ord, axis=axis, keepdims=keepdims), x)


@given(st.sampled_from(VEC_ORDS[1:]), st.sampled_from([None, 1, (0, 2), (2, 0, 1)]),
       st.booleans())
def test_vector_norm_hypothesis(ord, axis, keepdims):
    check_grads(lambda x: LA.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims), R(3, 2, 4))


MAT_ORDS = [None, "fro", "nuc", 2, -2, 1, -1, INF, -INF]


@given(st.sampled_from(MAT_ORDS), st.sampled_from([None, (0, 1), (1, 0)]), st.booleans())
def test_norm_matrix_hypothesis(ord, axis, keepdims):
    check_grads(lambda x: LA.norm(x, ord, axis=axis, keepdims=keepdims), R(3, 4))


@pytest.mark.parametrize("ord", MAT_ORDS[1:])
def test_norm_matrix_batched_axes_and_matrix_norm(ord):
    check_grads(lambda x: LA.norm(x, ord, axis=(2, 0)), R(3, 2, 4))
    check_grads(lambda x: LA.matrix_norm(x, ord=ord, keepdims=True), R(2, 3, 4))


def test_norm_defaults_and_complex_matrix():
    check_grads(LA.norm, R(2, 3, 4))
    check_grads(lambda x: LA.norm(x, keepdims=True), R(2, 3))
    check_grads(LA.vector_norm, R(2, 3))
    check_grads(LA.matrix_norm, R(3, 2))
    for ord in ("nuc", 2, "fro", 1):
        check_grads(lambda x: LA.norm(x, ord), C(3, 4))


def test_norm_ties_split_and_zero_order():
    x = mnp.array([[1.0, -3.0, 3.0], [2.0, 0.5, 1.0]])
    g = minpy.grad(lambda x: LA.norm(x, INF, axis=1).sum())(x).asnumpy()
    numpy.testing.assert_allclose(g, [[0, -0.5, 0.5], [1, 0, 0]])
    g = minpy.grad(lambda x: LA.norm(x[0], 0) * x.sum())(x).asnumpy()
    numpy.testing.assert_allclose(g, numpy.full((2, 3), 3.0))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, INF, -INF])
def test_cond(p):
    check_grads(lambda x: LA.cond(x, p), well(2, 3, 3))


def test_rules_run_on_the_gpu_backend(standin_gpu):
    """The rules on arrays living on the (strict stand-in) GPU: no host conversion, no
    fallback (constants built by the rules are copied over as plain inputs)."""
    with minpy.gpu(0):
        a, h, x = well(2, 3, 3, seed=1), well(3, 3, hermitian=True, seed=2), R(4, 3)
        check_grads(lambda a, b: mnp.einsum("bii,ij->bj", a, b), a, R(3, 2))
        check_grads(mnp.dot, R(2, 3), R(3))
        check_grads(lambda a, b: mnp.cross(a, b, axis=0), R(3, 2), R(3, 2))
        check_grads(LA.solve, a, R(3))
        check_grads(lambda a: LA.slogdet(a)[1], a)
        check_grads(LA.cholesky, h)
        check_grads(lambda a: LA.eigh(a)[1], h)
        check_grads(lambda x: LA.svd(x, full_matrices=False)[0], x)
        check_grads(lambda x: LA.qr(x)[1], x)
        check_grads(LA.pinv, x)
        check_grads(lambda x: LA.norm(x, INF, axis=1), x)
        check_grads(lambda x: LA.norm(x, "nuc"), x)
        check_grads(lambda a: LA.matrix_power(a, -2), a)
        check_grads(lambda x, y: LA.multi_dot([x, y]), x, R(3))
    calls = minpy.dispatch.stats()["calls"]
    assert {"einsum", "linalg.solve", "linalg.eigh", "linalg.svd", "matmul"} <= set(calls)
    # only what the CuPy table lacks (linalg.multi_dot) ran on the host
    missing = standin_gpu.api.never
    assert all(set(per_backend) == {"standin"} for name, per_backend in calls.items()
               if name not in missing), calls
    assert set(minpy.dispatch.stats()["fallbacks"]) <= missing
