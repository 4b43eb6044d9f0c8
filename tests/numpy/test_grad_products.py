"""Gradients of products: dot, vdot, inner, outer, tensordot, einsum, kron, cross and
the numpy.linalg aliases (outer, tensordot, cross, matmul, vecdot, matrix_transpose,
trace, diagonal). Every rule is checked against finite differences to second order
(``check_grads(order=2)`` exercises grad of grad)."""
import re
import warnings

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
import minpy.numpy as mnp
from _strategies import random_array
from minpy.testing import check_grads

RNG = numpy.random.default_rng(1234)
LA = mnp.linalg


def R(*shape):
    return mnp.array(RNG.standard_normal(shape))


def C(*shape):
    return mnp.array(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape))


def _arr(shape, cplx, seed):
    return random_array(shape, seed, numpy.complex128 if cplx else numpy.float64)


# ---------------------------------------------------------------- dot family
DOT_CASES = [((3, 4), (4, 2)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)),
             ((2, 3, 4), (5, 4, 2)), ((), (3, 2)), ((3, 2), ()), ((2, 1, 3), (3,))]


@pytest.mark.parametrize("sa,sb", DOT_CASES)
@pytest.mark.parametrize("cplx", [False, True])
def test_dot(sa, sb, cplx):
    check_grads(mnp.dot, _arr(sa, cplx, 1), _arr(sb, cplx, 2))


def test_dot_mixed_real_complex_and_python_scalar():
    check_grads(mnp.dot, R(3, 4), C(4, 2))
    check_grads(mnp.dot, R(3, 2), 2.5)
    check_grads(lambda a: a.dot(mnp.ones(2)), R(3, 2))          # method form


def test_dot_keyword_operand():
    b = R(4, 2)
    check_grads(lambda a, b: mnp.dot(a, b=b), R(3, 4), b)
    check_grads(lambda a, b: mnp.dot(a=a, b=b), R(3, 4), b)


@given(st.integers(0, 3), st.integers(1, 3), st.data())
def test_dot_nd_hypothesis(na, nb, data):
    k = data.draw(st.integers(1, 3))
    sa = tuple(data.draw(st.lists(st.integers(1, 3), min_size=na, max_size=na))) + (k,)
    sb = tuple(data.draw(st.lists(st.integers(1, 3), min_size=nb - 1, max_size=nb - 1)))
    sb = sb[:-1] + (k,) + sb[-1:] if nb > 1 else (k,)
    check_grads(mnp.dot, _arr(sa, False, na), _arr(sb, False, nb))


@pytest.mark.parametrize("cplx", [False, True])
def test_vdot_inner_outer(cplx):
    check_grads(mnp.vdot, _arr((2, 3), cplx, 3), _arr((6,), cplx, 4))
    check_grads(mnp.inner, _arr((2, 3), cplx, 5), _arr((4, 3), cplx, 6))
    check_grads(mnp.inner, _arr((3,), cplx, 7), _arr((2, 2, 3), cplx, 8))
    check_grads(mnp.inner, _arr((), cplx, 7), _arr((2, 3), cplx, 8))
    check_grads(mnp.outer, _arr((2, 3), cplx, 9), _arr((4,), cplx, 10))
    check_grads(LA.outer, _arr((3,), cplx, 11), _arr((2,), cplx, 12))


def test_vdot_is_antilinear_in_first_argument():
    # vdot(a, b) = sum(conj(a) * b): a wrong (non-conjugated) rule fails here
    a, b = C(4), C(4)
    g = minpy.grad(lambda a: mnp.real(mnp.vdot(a, b)))(a)
    numpy.testing.assert_allclose(g.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("axes,sa,sb", [
    (2, (2, 3, 4), (3, 4, 5)), (0, (2, 3), (4,)), (1, (2, 3), (3, 2)),
    (([0, 2], [2, 0]), (2, 3, 4), (4, 5, 2)), ((1, 0), (2, 3), (3, 4)),
    (([1], [-1]), (2, 3), (4, 3)), (([], []), (2,), (3,)),
])
def test_tensordot(axes, sa, sb):
    check_grads(lambda a, b: mnp.tensordot(a, b, axes), R(*sa), R(*sb))
    check_grads(lambda a, b: LA.tensordot(a, b, axes=axes), R(*sa), R(*sb))


def test_tensordot_complex():
    check_grads(lambda a, b: mnp.tensordot(a, b, ([1], [0])), C(2, 3), C(3, 2))


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 2)), ((3,), (2, 2)), ((2, 1, 2), (3,)), ((), (2,))])
def test_kron(sa, sb):
    check_grads(mnp.kron, R(*sa), R(*sb))


def test_kron_complex():
    check_grads(mnp.kron, C(2, 2), C(3))


@pytest.mark.parametrize("cplx", [False, True])
def test_cross(cplx):
    check_grads(mnp.cross, _arr((4, 3), cplx, 1), _arr((3,), cplx, 2))
    check_grads(lambda a, b: mnp.cross(a, b, axisa=0, axisb=1, axisc=0),
                _arr((3, 4), cplx, 3), _arr((4, 3), cplx, 4))
    check_grads(lambda a, b: mnp.cross(a, b, axis=0), _arr((3, 4), cplx, 5), _arr((3, 1), cplx, 6))
    check_grads(lambda a, b: LA.cross(a, b, axis=0), _arr((3, 4), cplx, 7), _arr((3, 4), cplx, 8))


def _numpy_cross_2d_error():
    """The error NumPy raises for 2-vectors in cross (NumPy >= 2.5), or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            numpy.cross(numpy.ones(2), numpy.ones(2))
        except ValueError as e:
            return e
    return None


def test_cross_2d_vectors():
    """NumPy 2.0-2.4 deprecate 2-vectors, NumPy 2.5 refuses them: minpy follows."""
    err = _numpy_cross_2d_error()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # NumPy 2 deprecates 2-vectors
        for a, b in ((R(4, 2), R(4, 2)), (R(4, 2), R(4, 3)), (R(3), R(2))):
            if err is None:
                check_grads(mnp.cross, a, b)
            else:
                with pytest.raises(ValueError, match=re.escape(str(err)[:40])):
                    mnp.cross(a, b)


# ---------------------------------------------------------------- einsum
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]), ("ij->ji", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]), ("i...i", [(3, 2, 3)]),
    ("...,...->...", [(1, 3), (4, 1)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,ij,ij->i", [(2, 3)] * 3), ("iij->j", [(3, 3, 2)]), ("iji->j", [(2, 3, 2)]),
    ("i,j->ij", [(2,), (3,)]), ("i,i", [(3,), (3,)]), ("ba,Ab", [(2, 3), (4, 2)]),
    ("...i->...", [(2, 3)]), (" i j , j k -> k i ", [(2, 3), (3, 4)]), ("i,->i", [(3,), ()]),
    ("ij,j->i", [(2, 3), (1,)]), ("ii,i->i", [(3, 3), (3,)]),
]


@pytest.mark.parametrize("subs,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum(subs, shapes):
    args = [R(*s) for s in shapes]
    check_grads(lambda *a: mnp.einsum(subs, *a), *args)


def test_einsum_complex_sublist_and_optimize():
    check_grads(lambda a, b: mnp.einsum("ij,jk->ik", a, b), C(2, 3), C(3, 4))
    check_grads(lambda a, b: mnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), R(2, 3), R(3, 4))
    check_grads(lambda a, b: mnp.einsum(a, [Ellipsis, 1], b, [1]), R(2, 3), R(3))
    check_grads(lambda a, b, c: mnp.einsum("ij,jk,kl->il", a, b, c, optimize=True),
                R(2, 3), R(3, 4), R(4, 2))
    check_grads(lambda a, b, c: mnp.einsum("ij,jk,kl->il", a, b, c, optimize="greedy"),
                R(2, 3), R(3, 4), R(4, 2))


@st.composite
def einsum_problems(draw):
    """Random subscripts over 'abcd' (sizes fixed per letter; repeats and sums allowed)."""
    sizes = dict(zip("abcd", draw(st.lists(st.integers(1, 3), min_size=4, max_size=4))))
    nops = draw(st.integers(1, 3))
    terms = [draw(st.lists(st.sampled_from("abcd"), min_size=0, max_size=3)) for _ in range(nops)]
    used = sorted(set("".join("".join(t) for t in terms)))
    if draw(st.booleans()):
        out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
        subs = ",".join("".join(t) for t in terms) + "->" + "".join(out)
    else:
        subs = ",".join("".join(t) for t in terms)
    shapes = [tuple(sizes[c] for c in t) for t in terms]
    return subs, shapes, draw(st.booleans())


@given(einsum_problems())
def test_einsum_hypothesis(problem):
    subs, shapes, cplx = problem
    args = [_arr(s, cplx, i) for i, s in enumerate(shapes)]
    check_grads(lambda *a: mnp.einsum(subs, *a), *args)


def test_einsum_hessian_vector_product():
    # f(x) = tr(x^3): grad = 3 (x^2)^T, H[v] = 3 (x v + v x)^T
    x, v = R(3, 3), R(3, 3)
    hvp = minpy.hessian_vector_product(lambda x: mnp.einsum("ij,jk,ki->", x, x, x))
    got = hvp(x, vector=v)
    xn, vn = x.asnumpy(), v.asnumpy()
    numpy.testing.assert_allclose(got.asnumpy(), 3 * (xn @ vn + vn @ xn).T, rtol=1e-10)


def test_einsum_third_order():
    check_grads(lambda a, b: mnp.einsum("ij,jk->ik", a * a, b), R(2, 3), R(3, 2), order=3)


def test_einsum_path_is_not_differentiated():
    def f(x):
        path = mnp.einsum_path("ij,jk->ik", x, x)
        assert path[0][0] == "einsum_path"
        return mnp.sum(x)
    numpy.testing.assert_allclose(minpy.grad(f)(R(2, 2)).asnumpy(), numpy.ones((2, 2)))


# ---------------------------------------------------------------- linalg aliases
@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (4, 2)), ((4,), (2, 4, 2)), ((2, 3, 4), (4,)),
                                   ((4,), (4,)), ((1, 3, 4), (2, 4, 1))])
def test_linalg_matmul(sa, sb):
    check_grads(LA.matmul, R(*sa), R(*sb))


def test_linalg_matmul_vecdot_complex():
    check_grads(LA.matmul, C(3, 4), C(4, 2))
    check_grads(LA.vecdot, C(2, 3), C(3))
    check_grads(lambda a, b: LA.vecdot(a, b, axis=0), R(3, 2), R(3, 1))


def test_linalg_transpose_trace_diagonal():
    check_grads(LA.matrix_transpose, R(2, 3, 4))
    for off in (0, 1, -2):
        check_grads(lambda x: LA.trace(x, offset=off), R(2, 3, 4))
    for off, shp in ((0, (2, 3, 4)), (2, (2, 3, 4)), (-1, (2, 3, 4)), (-1, (4, 3)), (1, (4, 3))):
        check_grads(lambda x: LA.diagonal(x, offset=off), R(*shp))


def test_linalg_trace_values_under_grad():
    x = R(2, 3, 3)
    loss, g = minpy.value_and_grad(lambda x: mnp.sum(LA.trace(x) ** 2))(x)
    t = numpy.trace(x.asnumpy(), axis1=-2, axis2=-1)
    numpy.testing.assert_allclose(float(loss), numpy.sum(t ** 2))
    numpy.testing.assert_allclose(g.asnumpy(), 2 * t[:, None, None] * numpy.eye(3))


def test_float32_gradients_stay_float32():
    a, b = mnp.ones((2, 3), dtype=numpy.float32), mnp.ones((3, 2), dtype=numpy.float32)
    assert minpy.grad(lambda a: mnp.sum(mnp.dot(a, b)))(a).dtype == numpy.float32
    assert minpy.grad(lambda a: mnp.sum(mnp.einsum("ij,jk", a, b)))(a).dtype == numpy.float32

