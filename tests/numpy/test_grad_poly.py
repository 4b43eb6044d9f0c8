"""Gradients of the polynomial functions (minpy/numpy/vjp_poly.py): poly, polyadd,
polysub, polymul, polyder, polyint, polydiv, polyfit, roots, vander.

The re-implementations the rules differentiate must give NumPy's values and
shapes (fixed and hypothesis-drawn inputs, leading zeros included); every
differentiable argument is checked against finite differences to second
order, on real and complex coefficients. ``roots`` is checked at distinct
roots only: at a repeated root the gradient is singular (inf/nan), which one
test documents."""
import warnings

import numpy
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import minpy
import minpy.numpy as mnp
from minpy.numpy import vjp_poly as vp
from minpy.testing import check_grads

from _standin import standin_gpu  # noqa: F401  (fixture)
from _strategies import random_array as rnd


def host(a):
    return a.asnumpy() if isinstance(a, minpy.Array) else numpy.asarray(a)


def close(actual, desired, dtype=True):
    """Values and shape (and dtype, unless ``dtype=False``) of ``actual`` equal NumPy's."""
    if isinstance(desired, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(desired)
        for a, d in zip(actual, desired):
            close(a, d, dtype)
        return
    a, d = host(actual), numpy.asarray(desired)
    assert a.shape == d.shape, (a.shape, d.shape)
    if dtype:
        assert a.dtype == d.dtype, (a.dtype, d.dtype)
    numpy.testing.assert_allclose(a, d, rtol=1e-9, atol=1e-9)


def cg(f, *args, **kw):
    check_grads(f, *args, order=2, **kw)


def arr(values, dtype=numpy.float64):
    return mnp.array(numpy.asarray(values, dtype))


def cplx(shape, seed=0):
    return rnd(shape, seed=seed, dtype=numpy.complex128)


X7 = numpy.linspace(-1.0, 1.5, 7)
W7 = numpy.linspace(0.5, 2.0, 7)


# ------------------------------------------------------------ re-implementations vs NumPy
def _mk(values):
    return [numpy.asarray(v) for v in values]


# (name, ref, numpy function, host arguments, keyword arguments)
REF_CASES = [
    ("poly_real", vp._poly_ref, numpy.poly, _mk([[0.5, -1.0, 2.0, 3.0]]), {}),
    ("poly_conj_pair", vp._poly_ref, numpy.poly, _mk([[1 + 2j, 1 - 2j, 3.0]]), {}),
    ("poly_complex", vp._poly_ref, numpy.poly, _mk([[1 + 2j, -0.5j, 3.0]]), {}),
    ("poly_repeated", vp._poly_ref, numpy.poly, _mk([[2.0, 2.0, -1.0]]), {}),
    ("poly_matrix", vp._poly_ref, numpy.poly, _mk([[[1.0, 2, 0], [3, -1, 4], [0.5, 2, 2]]]), {}),
    ("poly_matrix_c", vp._poly_ref, numpy.poly, _mk([[[1j, 2], [3, -1 + 1j]]]), {}),
    ("poly_matrix_eye", vp._poly_ref, numpy.poly, _mk([numpy.eye(3)]), {}),
    ("polyadd_short_long", vp._polyadd_ref, numpy.polyadd, _mk([[1.0, 2], [3.0, 4, 5, 6]]), {}),
    ("polyadd_long_short", vp._polyadd_ref, numpy.polyadd, _mk([[1.0, 2, 3], [4.0]]), {}),
    ("polyadd_scalar", vp._polyadd_ref, numpy.polyadd, _mk([2.0, [1.0, 2, 3]]), {}),
    ("polyadd_2d", vp._polyadd_ref, numpy.polyadd, _mk([numpy.ones((3, 2)), numpy.eye(3, 2)]),
     {}),
    ("polysub", vp._polysub_ref, numpy.polysub, _mk([[1.0, 2], [3.0, 4j, 5]]), {}),
    ("polysub_rev", vp._polysub_ref, numpy.polysub, _mk([[1.0, 2, 7], [3.0]]), {}),
    ("polymul", vp._polymul_ref, numpy.polymul, _mk([[1.0, 2, 3], [4.0, 5]]), {}),
    ("polymul_lead0", vp._polymul_ref, numpy.polymul, _mk([[0.0, 0, 2, 3], [0.0, 4, 5]]), {}),
    ("polymul_zero", vp._polymul_ref, numpy.polymul, _mk([[0.0, 0], [4.0, 5]]), {}),
    ("polymul_scalar_c", vp._polymul_ref, numpy.polymul, _mk([2j, [4.0, 5]]), {}),
    ("polyder", vp._polyder_ref, numpy.polyder, _mk([[1.0, 2, 3, 4]]), {}),
    ("polyder_m0", vp._polyder_ref, numpy.polyder, _mk([[1.0, 2, 3, 4]]), {"m": 0}),
    ("polyder_m2", vp._polyder_ref, numpy.polyder, _mk([[1.0, 2j, 3, 4]]), {"m": 2}),
    ("polyder_m6", vp._polyder_ref, numpy.polyder, _mk([[1.0, 2, 3, 4]]), {"m": 6}),
    ("polyint", vp._polyint_ref, numpy.polyint, _mk([[1.0, 2, 3]]), {}),
    ("polyint_m0", vp._polyint_ref, numpy.polyint, _mk([[1.0, 2, 3]]), {"m": 0}),
    ("polyint_m3_k", vp._polyint_ref, numpy.polyint, _mk([[1.0, 2, 3]]),
     {"m": 3, "k": numpy.array([6.0, 5, 3])}),
    ("polyint_m3_kscalar", vp._polyint_ref, numpy.polyint, _mk([[1.0, 2, 3]]),
     {"m": 3, "k": 2.5}),
    ("polyint_klong_c", vp._polyint_ref, numpy.polyint, _mk([[1j, 2]]),
     {"m": 2, "k": [1.0, 2.0, 9.0]}),
    ("polydiv", vp._polydiv_ref, numpy.polydiv, _mk([[3.0, 5, 2, 7], [2.0, 1]]), {}),
    ("polydiv_exact", vp._polydiv_ref, numpy.polydiv, _mk([numpy.polymul([1.0, 2, 3],
                                                                          [2.0, -1]),
                                                           [2.0, -1]]), {}),
    ("polydiv_short", vp._polydiv_ref, numpy.polydiv, _mk([[3.0, 5], [2.0, 1, 4]]), {}),
    ("polydiv_scalars", vp._polydiv_ref, numpy.polydiv, _mk([3.0, 2.0]), {}),
    ("polydiv_c", vp._polydiv_ref, numpy.polydiv, _mk([[3.0, 5j, 2], [2.0, 1 + 1j]]), {}),
    ("polyfit", vp._polyfit_ref, numpy.polyfit, _mk([X7, numpy.sin(X7), 2]), {}),
    ("polyfit_w_cov", vp._polyfit_ref, numpy.polyfit, _mk([X7, numpy.sin(X7), 2]),
     {"w": W7, "cov": True}),
    ("polyfit_unscaled_2d", vp._polyfit_ref, numpy.polyfit,
     _mk([X7, numpy.stack([numpy.sin(X7), X7 ** 3], 1), 2]), {"cov": "unscaled"}),
    ("polyfit_full", vp._polyfit_ref, numpy.polyfit, _mk([X7, numpy.cos(X7), 3]),
     {"full": True, "rcond": 1e-10}),
    ("polyfit_complex", vp._polyfit_ref, numpy.polyfit, _mk([X7, numpy.exp(1j * X7), 2]), {}),
]


@pytest.mark.parametrize("name,ref,np_fn,args,kw", REF_CASES, ids=[c[0] for c in REF_CASES])
def test_reimplementation_matches_numpy(name, ref, np_fn, args, kw):
    want = np_fn(*args, **kw)
    ans = tuple(mnp.asarray(w) for w in want) if isinstance(want, tuple) else mnp.asarray(want)
    got = ref(ans, *[mnp.array(a) for a in args], **kw)
    if isinstance(want, tuple) and kw.get("full"):        # rank and rcond: as NumPy's
        assert int(got[2]) == want[2] and got[4] == want[4]
        got, want = (got[0], got[1], got[3]), (want[0], want[1], want[3])
    # the re-implementations compute in float64/complex128; NumPy's conjugate-pair
    # result is real (close() compares the complex values with it)
    close(got, want, dtype=False)


coeffs = hnp.arrays(numpy.float64, st.integers(1, 6),
                    elements=st.integers(-3, 3).map(float))      # zeros: trimming paths


@given(coeffs, coeffs)
def test_reimplementations_match_numpy_drawn(a, b):
    for ref, fn in [(vp._polyadd_ref, numpy.polyadd), (vp._polysub_ref, numpy.polysub),
                    (vp._polymul_ref, numpy.polymul)]:
        want = fn(a, b)
        close(ref(mnp.asarray(want), mnp.array(a), mnp.array(b)), want)
    close(vp._polyder_ref(None, mnp.array(a), 2), numpy.polyder(a, 2))
    close(vp._polyint_ref(None, mnp.array(a), 2, b[:2]), numpy.polyint(a, 2, b[:2]))
    close(vp._poly_ref(None, mnp.array(a)), numpy.poly(a))
    if b[0] != 0:
        q, r = numpy.polydiv(a, b)
        close(vp._polydiv_ref((mnp.asarray(q), mnp.asarray(r)), mnp.array(a), mnp.array(b)),
              (q, r))


# ------------------------------------------------------------ forward values under a tape
FORWARD = [
    ("poly", lambda x: mnp.poly(x), numpy.poly, [0.5, -1.0, 2.0]),
    ("poly_f32", lambda x: mnp.poly(x), numpy.poly, numpy.float32([0.5, -1.0])),
    ("roots", lambda p: mnp.roots(p), numpy.roots, [1.0, -2.0, 5.0]),
    ("roots_real", lambda p: mnp.roots(p), numpy.roots, [0.0, 1.0, -3.0, 2.0, 0.0]),
    ("vander", lambda x: mnp.vander(x, 4, increasing=True),
     lambda x: numpy.vander(x, 4, increasing=True), [1.0, 2.0, -3.0]),
    ("polyint", lambda p: mnp.polyint(p, 2, k=[1.0, 2.0]),
     lambda p: numpy.polyint(p, 2, k=[1.0, 2.0]), [1.0, 2.0, 3.0]),
    ("polydiv", lambda u: mnp.polydiv(u, [2.0, 1.0])[1],
     lambda u: numpy.polydiv(u, [2.0, 1.0])[1], [3.0, 5.0, 2.0]),
    ("polyfit", lambda y: mnp.polyfit(X7, y, 2), lambda y: numpy.polyfit(X7, y, 2),
     numpy.sin(X7)),
]


@pytest.mark.parametrize("name,f,np_f,x", FORWARD, ids=[c[0] for c in FORWARD])
def test_traced_values_match_numpy(name, f, np_f, x):
    seen = []

    def loss(v):
        out = f(v)
        seen.append(minpy.stop_gradient(out))
        return mnp.sum(mnp.real(out))
    minpy.grad(loss)(mnp.array(x))
    close(seen[0], np_f(numpy.asarray(x)))


# ------------------------------------------------------------ gradients, second order
R3 = numpy.roots(numpy.poly([0.5, -1.2, 2.0]) * 1.5)      # distinct real roots


def poly_cases():
    return [
        ("poly_roots", mnp.poly, [rnd((4,))]),
        ("poly_roots_c", mnp.poly, [cplx((3,))]),
        ("poly_matrix", mnp.poly, [rnd((3, 3), seed=1)]),
        ("poly_matrix_c", mnp.poly, [cplx((3, 3), seed=2)]),
        ("poly_list", lambda a: mnp.poly([a, 2.0, a * a]), [rnd((), seed=3)]),
        ("polyadd", mnp.polyadd, [rnd((4,)), rnd((2,), seed=1)]),
        ("polyadd_c", mnp.polyadd, [cplx((2,)), rnd((4,), seed=1)]),
        ("polyadd_0d", mnp.polyadd, [rnd(()), rnd((3,), seed=1)]),
        ("polyadd_2d", mnp.polyadd, [rnd((3, 2)), rnd((3, 2), seed=1)]),
        ("polysub", mnp.polysub, [rnd((4,)), rnd((2,), seed=1)]),
        ("polysub_c", mnp.polysub, [rnd((2,)), cplx((3,), seed=1)]),
        ("polymul", mnp.polymul, [rnd((4,)), rnd((3,), seed=1)]),
        ("polymul_c", mnp.polymul, [cplx((3,)), cplx((2,), seed=1)]),
        ("polymul_0d", mnp.polymul, [rnd(()), rnd((3,), seed=1)]),
        ("polymul_lead0", lambda a, b: mnp.polymul(mnp.concatenate((mnp.zeros(2), a)), b),
         [rnd((3,)), rnd((2,), seed=1)]),
        ("polyder", mnp.polyder, [rnd((5,))]),
        ("polyder_m3_c", lambda p: mnp.polyder(p, m=3), [cplx((5,))]),
        ("polyint", mnp.polyint, [rnd((4,))]),
        ("polyint_m2_k", lambda p, k: mnp.polyint(p, 2, k), [rnd((3,)), rnd((2,), seed=1)]),
        ("polyint_m3_kscalar_kw", lambda p, k: mnp.polyint(p, m=3, k=k),
         [cplx((3,)), rnd((), seed=1)]),
        ("polyint_klist", lambda k: mnp.polyint(mnp.array([1.0, 2.0]), 2, k=[k, 2.0 * k]),
         [rnd(())]),
        ("polydiv", lambda u, v: mnp.concatenate(mnp.polydiv(u, v)), [rnd((5,)), rnd((3,), 1)]),
        ("polydiv_q", lambda u, v: mnp.polydiv(u, v)[0], [rnd((5,)), rnd((2,), seed=1)]),
        ("polydiv_r", lambda u, v: mnp.polydiv(u, v)[1], [rnd((5,)), rnd((3,), seed=1)]),
        ("polydiv_c", lambda u, v: mnp.concatenate(mnp.polydiv(u, v)),
         [cplx((4,)), cplx((2,), seed=1)]),
        ("polydiv_short", lambda u, v: mnp.concatenate(mnp.polydiv(u, v)),
         [rnd((2,)), rnd((3,), seed=1)]),
        ("polydiv_0d", lambda u, v: mnp.concatenate(mnp.polydiv(u, v)),
         [rnd((3,)), rnd((), seed=1)]),
        ("polyfit_w", lambda x, y, w: mnp.polyfit(x, y, 2, w=w),
         [arr(X7), rnd((7,)), arr(W7)]),
        ("polyfit_2d_kw", lambda x, y: mnp.polyfit(x=x, y=y, deg=2), [arr(X7), rnd((7, 3))]),
        ("polyfit_c", lambda x, y: mnp.polyfit(x, y, 1), [cplx((5,)), cplx((5,), seed=1)]),
        ("polyfit_under", lambda x, y: mnp.polyfit(x, y, 3), [arr([0.0, 1, 2]), rnd((3,))]),
        ("polyfit_full_resid", lambda x, y, w: mnp.polyfit(x, y, 2, None, True, w)[1],
         [arr(X7), rnd((7,)), arr(W7)]),
        ("polyfit_full_sv", lambda x, w: mnp.polyfit(x, X7, 2, full=True, w=w)[3],
         [arr(X7), arr(W7)]),
        ("polyfit_cov", lambda x, y: mnp.polyfit(x, y, 2, cov=True)[1], [arr(X7), rnd((7,))]),
        ("polyfit_cov_unscaled_2d", lambda x, y, w: mnp.polyfit(x, y, 1, w=w,
                                                                cov="unscaled")[1],
         [arr(X7), rnd((7, 2)), arr(W7)]),
        ("roots_real", mnp.roots, [arr(numpy.poly(R3) * 1.5)]),
        ("roots_complex", mnp.roots, [arr([1.0, 2.0, 3.0, 4.0])]),
        ("roots_c_coeffs", mnp.roots, [cplx((4,))]),
        ("roots_lead0_trail0", lambda p: mnp.roots(mnp.concatenate((mnp.zeros(1), p,
                                                                    mnp.zeros(1)))),
         [arr([2.0, -1.0, 3.0])]),
        ("roots_list", lambda a: mnp.roots([1.0, a, 2.0]), [arr(5.0)]),
        ("vander", mnp.vander, [rnd((4,))]),
        ("vander_N_inc", lambda x: mnp.vander(x, N=3, increasing=True), [cplx((4,))]),
        ("vander_N1", lambda x: mnp.vander(x, 1) + 0.0, [rnd((3,))]),
    ]


CASES = poly_cases()


@pytest.mark.parametrize("name,f,args", CASES, ids=[c[0] for c in CASES])
def test_check_grads(name, f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numpy.exceptions.RankWarning)
        cg(f, *args)


@given(st.integers(1, 5), st.integers(1, 4), st.integers(0, 2 ** 16))
def test_check_grads_drawn(n, m, seed):
    a, b = rnd((n,), seed=seed), rnd((m,), seed=seed + 1)
    cg(mnp.polymul, a, b)
    cg(mnp.polysub, a, b)
    cg(lambda u, v: mnp.concatenate(mnp.polydiv(u, v)), a, b + 3.0 * numpy.sign(host(b)))
    cg(mnp.poly, a)


def test_float32_gradient_dtypes():
    x = mnp.array([1.0, 2.0, 3.0], dtype=numpy.float32)
    for f in (mnp.poly, mnp.vander, mnp.polyder, mnp.polyint,
              lambda p: mnp.real(mnp.roots(p)), lambda p: mnp.polymul(p, p)):
        g = minpy.grad(lambda p: mnp.sum(f(p)))(x)
        assert g.dtype == numpy.float32 and g.shape == (3,)


def test_real_coefficients_get_real_gradients_from_complex_roots():
    p = arr([1.0, 2.0, 3.0, 4.0])                     # one real root, a conjugate pair
    ans = mnp.roots(p)
    assert ans.dtype.kind == "c"
    g = mnp.roots._prim.vjp[0](ans, p)(mnp.ones_like(ans))
    assert g.dtype == numpy.float64 and g.shape == (4,)


def test_list_arguments_get_a_gradient_per_traced_element():
    # d/da sum(poly([a, 2, a])) = d/da -(1 - a)^2 (1 - 2) ... = 2 (1 - a)
    g = minpy.grad(lambda a: mnp.sum(mnp.poly([a, 2.0, a])))(mnp.array(5.0))
    assert float(g) == pytest.approx(-8.0)
    ga, gb = minpy.grad(lambda a, b: mnp.sum(mnp.polyint(mnp.array([1.0, 2.0]), 2, [a, b])),
                        argnum=(0, 1))(mnp.array(1.0), mnp.array(2.0))
    assert (float(ga), float(gb)) == (1.0, 1.0)


# ------------------------------------------------------------ refusals and singular points
def test_repeated_root_gradient_is_singular():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = minpy.grad(lambda p: mnp.sum(mnp.real(mnp.roots(p))))(arr([1.0, -2.0, 1.0]))
    assert not numpy.all(numpy.isfinite(host(g)))


def test_polyfit_rank_deficient_x_refused_y_kept():
    x, y = arr([0.0, 0.0, 1.0, 1.0, 1.0]), rnd((5,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numpy.exceptions.RankWarning)
        with pytest.raises(TypeError, match="polyfit.*rank-deficient.*respect to x"):
            minpy.grad(lambda x: mnp.sum(mnp.polyfit(x, y, 2)))(x)
        cg(lambda y: mnp.polyfit(x, y, 2), y)


def test_no_gradient_wrt_deg():
    # an integer degree is refused as a leaf: gradients need float inputs
    with pytest.raises(TypeError, match="dtype int64; gradients need float"):
        minpy.grad(lambda d: mnp.sum(mnp.polyfit(arr(X7), arr(X7), d)))(mnp.array(2))


def test_poly1d_with_traced_array_refused():
    # a poly1d cannot carry a gradient: refused at the call, naming the function
    with pytest.raises(TypeError, match="polyadd returned a poly1d"):
        minpy.grad(lambda x: mnp.sum(mnp.asarray(mnp.polyadd(numpy.poly1d([1.0, 2.0]),
                                                              x).coeffs)))(rnd((3,)))


@pytest.mark.parametrize("yshape", [(6,), (6, 2)], ids=["1d", "2d"])
def test_weighted_polyfit_on_a_device_leaves_y_alone(standin_gpu, yshape):
    """CuPy 14's polyfit scales a float64 ``y`` by ``w`` in place (as the stand-in
    does): minpy hands it a copy, so ``y`` keeps its values and finite differences
    through repeated calls agree with the gradient."""
    x = numpy.array([0.1, 0.55, 0.9, 0.3, 0.2, 0.72])
    yh = numpy.random.default_rng(3).standard_normal(yshape)
    wh = numpy.linspace(0.5, 2.0, 6)
    with minpy.gpu(0):
        y, w = mnp.array(yh), mnp.array(wh)
        c = mnp.polyfit(mnp.array(x), y, 2, w=w)
        assert standin_gpu.owns(c._data)
        numpy.testing.assert_allclose(c.asnumpy(), numpy.polyfit(x, yh, 2, w=wh), rtol=1e-12)
        numpy.testing.assert_array_equal(y.asnumpy(), yh)
        check_grads(lambda y, w: mnp.polyfit(mnp.array(x), y, 2, w=w), y, w, order=1)
