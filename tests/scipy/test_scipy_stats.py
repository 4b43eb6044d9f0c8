"""minpy.scipy.stats: every function's values against scipy.stats (hypothesis over
broadcast shapes and float32/float64), gradients w.r.t. x and the parameters
against finite differences to second order (check_grads), SciPy's answers off
the support and for invalid parameters (with finite gradients there), and errors
naming the function and shapes."""
import numpy
import pytest
import scipy.stats as ss
from hypothesis import given, strategies as st

import minpy
import minpy.numpy as mnp
from minpy.scipy import stats
from minpy.testing import arrays, broadcastable_shapes, check_grads, shapes
from _host import assert_result_type, host as _host

RNG = numpy.random.default_rng(11)


def U(lo, hi, shape=(3,)):
    return mnp.array(RNG.uniform(lo, hi, shape))


X = (-3, 3)
LOC = (-1, 1)
SCALE = (0.5, 2)
# (distribution, function) -> (domains of the arguments, positions differentiable)
CASES = {
    **{("norm", f): ([X, LOC, SCALE], (0, 1, 2))
       for f in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf")},
    ("norm", "ppf"): ([(0.0625, 0.9375), LOC, SCALE], (0, 1, 2)),
    ("norm", "isf"): ([(0.0625, 0.9375), LOC, SCALE], (0, 1, 2)),
    ("norm", "entropy"): ([LOC, SCALE], (1,)),
    **{("t", f): ([X, (1, 8), LOC, SCALE], (0, 1, 2, 3)) for f in ("pdf", "logpdf")},
    **{("t", f): ([X, (1, 8), LOC, SCALE], (0, 2, 3))
       for f in ("cdf", "logcdf", "sf", "logsf")},
    ("t", "ppf"): ([(0.0625, 0.9375), (1, 8), LOC, SCALE], (0, 2, 3)),
    **{("beta", f): ([(0.3, 0.7), (0.5, 3), (0.5, 3), (-0.2, 0.2), (1, 1.5)], (0, 1, 2, 3, 4))
       for f in ("pdf", "logpdf")},
    **{("beta", f): ([(0.3, 0.7), (0.5, 3), (0.5, 3), (-0.2, 0.2), (1, 1.5)], (0, 3, 4))
       for f in ("cdf", "logcdf", "sf", "logsf")},
    **{("gamma", f): ([(0.5, 4), (0.5, 3), (-0.4, 0.4), SCALE], (0, 1, 2, 3))
       for f in ("pdf", "logpdf")},
    **{("gamma", f): ([(0.5, 4), (0.5, 3), (-0.4, 0.4), SCALE], (0, 2, 3))
       for f in ("cdf", "logcdf", "sf", "logsf")},
    **{("chi2", f): ([(0.5, 4), (0.5, 5), (-0.4, 0.4), SCALE], (0, 1, 2, 3))
       for f in ("pdf", "logpdf")},
    **{("chi2", f): ([(0.5, 4), (0.5, 5), (-0.4, 0.4), SCALE], (0, 2, 3))
       for f in ("cdf", "logcdf", "sf", "logsf")},
}
POISSON = ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf")


# distribution -> SciPy's parameters for a sampler test
RVS = {"norm": (0.5, 2.0), "t": (3.0,), "beta": (2.0, 3.0), "gamma": (2.0,), "chi2": (3.0,),
       "poisson": (2.5,), "multivariate_normal": ([0.0, 1.0], [[2.0, 0.3], [0.3, 1.0]]),
       "dirichlet": ([1.0, 2.0, 3.0],)}


def test_every_public_function_is_tested_and_documented():
    covered = {(d, f) for d, f in CASES} | {("poisson", f) for f in POISSON} | {
        ("multivariate_normal", f) for f in ("pdf", "logpdf", "entropy")} | {
        ("dirichlet", f) for f in ("pdf", "logpdf", "entropy")} | {
        (d, "rvs") for d in RVS}
    for dist in stats.__all__:
        mod = getattr(stats, dist)
        assert mod.__doc__
        for f in mod.__all__:
            assert (dist, f) in covered, (dist, f)
            doc = getattr(mod, f).__doc__
            assert f"scipy.stats.{dist}.{f}" in doc and "Returns:" in doc, (dist, f)


def _floats(lo, hi, dtype):
    """Floats in [lo, hi] exactly representable in ``dtype``."""
    return st.floats(lo, hi).map(lambda v: float(numpy.dtype(dtype).type(v)))


def _ref(dist, fn):
    return getattr(getattr(ss, dist), fn)


# ---------------------------------------------------------------- values
@pytest.mark.parametrize("dist,fn", sorted(CASES))
@given(data=st.data())
def test_values_match_scipy(dist, fn, data):
    domains, _ = CASES[(dist, fn)]
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    shp = data.draw(broadcastable_shapes(len(domains), max_dims=3, max_side=4))
    args = [data.draw(arrays(dtype, s, _floats(lo, hi, dtype), minpy=False))
            for s, (lo, hi) in zip(shp, domains)]
    got = getattr(getattr(stats, dist), fn)(*[mnp.array(a) for a in args])
    want = _ref(dist, fn)(*args)
    assert_result_type(got, numpy.asarray(want, dtype)[()])   # SciPy's kind, inputs' dtype
    assert got.dtype == dtype
    tol = 2e-4 if dtype == numpy.float32 else 1e-9
    numpy.testing.assert_allclose(_host(got), want, rtol=tol, atol=tol)
    assert got.shape == numpy.shape(want)


@pytest.mark.parametrize("fn", POISSON)
@given(data=st.data())
def test_poisson_values_match_scipy(fn, data):
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    s1, s2 = data.draw(broadcastable_shapes(2, max_dims=3, max_side=4))
    k = data.draw(arrays(numpy.int64, s1, st.integers(-2, 12), minpy=False))
    mu = data.draw(arrays(dtype, s2, _floats(0.25, 6, dtype),
                          minpy=False))
    got = getattr(stats.poisson, fn)(mnp.array(k), mnp.array(mu))
    assert got.dtype == dtype
    tol = 2e-4 if dtype == numpy.float32 else 1e-9
    with numpy.errstate(divide="ignore"):
        want = _ref("poisson", fn)(k, mu)
    numpy.testing.assert_allclose(_host(got), want, rtol=tol, atol=tol)


def test_python_scalars_lists_and_defaults():
    numpy.testing.assert_allclose(_host(stats.norm.logpdf(0.3)), ss.norm.logpdf(0.3))
    numpy.testing.assert_allclose(_host(stats.norm.cdf([0.1, 0.2], 1, 2)),
                                  ss.norm.cdf([0.1, 0.2], 1, 2))
    numpy.testing.assert_allclose(_host(stats.t.pdf([0.5], 3)), ss.t.pdf([0.5], 3))
    numpy.testing.assert_allclose(_host(stats.gamma.logpdf(2.0, 3.0)),
                                  ss.gamma.logpdf(2.0, 3.0))
    numpy.testing.assert_allclose(_host(stats.poisson.pmf(3, 2.5)), ss.poisson.pmf(3, 2.5))
    numpy.testing.assert_allclose(_host(stats.poisson.logpmf(4, 2.5, loc=1)),
                                  ss.poisson.logpmf(4, 2.5, loc=1))
    numpy.testing.assert_allclose(_host(stats.norm.entropy(0.0, 2.0)),
                                  ss.norm.entropy(0.0, 2.0))


# ---------------------------------------------------------------- gradients
GRAD_SHAPES = {2: [((2, 3), (3,)), ((), (2, 1))],
               3: [((2, 3), (3,), (2, 1)), ((), (), ())],
               4: [((2, 3), (3,), (2, 1), ()), ((3,), (), (), (3,))],
               5: [((2, 3), (3,), (2, 1), (), (1, 3)), ((), (), (), (), ())]}


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("dist,fn", sorted(CASES))
def test_gradients(dist, fn, which):
    domains, diff = CASES[(dist, fn)]
    shp = GRAD_SHAPES[len(domains)][which]
    args = [U(lo, hi, s) for (lo, hi), s in zip(domains, shp)]
    check_grads(getattr(getattr(stats, dist), fn), *args, argnums=list(diff), order=2)


@pytest.mark.parametrize("fn", POISSON)
def test_poisson_gradients(fn):
    k = mnp.array([[0, 1, 4], [2, 3, 7]])
    check_grads(lambda mu: getattr(stats.poisson, fn)(k, mu), U(0.5, 5), order=2)
    check_grads(lambda mu: getattr(stats.poisson, fn)(2, mu, 1), U(0.5, 5, ()), order=2)
    # k is a count: no gradient
    kf = mnp.array([1.0, 2.0, 3.0])
    g = minpy.grad(lambda k: mnp.sum(getattr(stats.poisson, fn)(k, 2.0)))(kf)
    numpy.testing.assert_array_equal(_host(g), 0.0)


def test_cdf_shape_parameters_have_no_rule():
    for f in (lambda df: stats.t.cdf(0.3, df), lambda a: stats.gamma.cdf(1.0, a),
              lambda a: stats.beta.cdf(0.5, a, 2.0)):
        with pytest.raises(TypeError, match="has no gradient with respect to argument 0"):
            minpy.grad(lambda p: mnp.sum(f(p)))(mnp.array([2.0, 3.0]))


def test_float32_gradients_stay_float32():
    x = mnp.array(numpy.array([0.1, 0.5], numpy.float32))
    for f in (stats.norm.logpdf, stats.norm.logcdf, lambda x: stats.t.logpdf(x, 3.0),
              lambda x: stats.beta.logpdf(x, 2.0, 3.0), lambda x: stats.gamma.cdf(x, 2.0)):
        g = minpy.grad(lambda x: mnp.sum(f(x)))(x)
        assert g.dtype == numpy.float32 and numpy.all(numpy.isfinite(_host(g)))


# ---------------------------------------------------------------- support, invalid parameters
def test_off_support_and_invalid_parameters_as_scipy():
    xb = numpy.array([-0.5, 0.0, 0.3, 1.0, 1.5])
    with numpy.errstate(all="ignore"):
        for fn in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
            for a, b in ((2.0, 3.0), (1.0, 1.0), (0.5, 2.0), (-1.0, 2.0)):
                numpy.testing.assert_allclose(
                    _host(getattr(stats.beta, fn)(mnp.array(xb), a, b)),
                    getattr(ss.beta, fn)(xb, a, b), rtol=1e-12, err_msg=f"beta.{fn}({a}, {b})")
            numpy.testing.assert_allclose(
                _host(getattr(stats.gamma, fn)(mnp.array(xb), 1.5, -0.2, 0.7)),
                getattr(ss.gamma, fn)(xb, 1.5, -0.2, 0.7), rtol=1e-12)
            numpy.testing.assert_allclose(
                _host(getattr(stats.gamma, fn)(mnp.array(xb), mnp.array([1.5, 0, -1, 2, 3]))),
                getattr(ss.gamma, fn)(xb, [1.5, 0, -1, 2, 3]), rtol=1e-12)
            numpy.testing.assert_allclose(
                _host(getattr(stats.norm, fn)(mnp.array(xb), 0.0, mnp.array([1, 0, -1, 2, 3.]))),
                getattr(ss.norm, fn)(xb, 0.0, [1, 0, -1, 2, 3.]), rtol=1e-12)
            numpy.testing.assert_allclose(
                _host(getattr(stats.t, fn)(mnp.array(xb), mnp.array([1, 0, -1, 2, numpy.inf]))),
                getattr(ss.t, fn)(xb, [1, 0, -1, 2, numpy.inf]), rtol=1e-12)
        k = numpy.array([-1, 0, 1.5, 2, 3])
        for fn in POISSON:
            numpy.testing.assert_allclose(
                _host(getattr(stats.poisson, fn)(mnp.array(k), mnp.array([1, 1, 1, 0, -1.]))),
                getattr(ss.poisson, fn)(k, [1, 1, 1, 0, -1.]), rtol=1e-12)


def test_gradients_are_finite_off_the_support():
    xb = mnp.array([-0.5, 0.3, 1.5])
    g = _host(minpy.grad(lambda x: mnp.sum(stats.beta.pdf(x, 2.0, 3.0)))(xb))
    assert g[0] == 0 and g[2] == 0 and numpy.isfinite(g[1]) and g[1] != 0
    g = minpy.grad(lambda a: mnp.sum(stats.gamma.pdf(xb, a)))(mnp.array([1.5, 2.0, 2.5]))
    assert numpy.all(numpy.isfinite(_host(g))) and _host(g)[0] == 0


def test_t_with_infinite_df_is_the_normal():
    x = U(-2, 2, (4,))
    df = mnp.array([numpy.inf, 3.0, numpy.inf, 5.0])
    numpy.testing.assert_allclose(_host(stats.t.logpdf(x, df)),
                                  ss.t.logpdf(_host(x), _host(df)), rtol=1e-12)
    numpy.testing.assert_allclose(_host(stats.t.logpdf(x, numpy.inf)),
                                  ss.norm.logpdf(_host(x)), rtol=1e-12)
    check_grads(lambda x: stats.t.logpdf(x, df), x, order=2)
    check_grads(lambda x: stats.t.cdf(x, df), x, order=2)
    gd = _host(minpy.grad(lambda d: mnp.sum(stats.t.logpdf(x, d)))(df))
    assert gd[0] == 0 and gd[2] == 0 and numpy.all(numpy.isfinite(gd))


# ---------------------------------------------------------------- multivariate normal
MVN = stats.multivariate_normal


def _spd(d, seed=0):
    r = numpy.random.default_rng(seed)
    a = r.standard_normal((d, d))
    return a @ a.T + d * numpy.eye(d)


@given(data=st.data())
def test_multivariate_normal_values(data):
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    d = data.draw(st.integers(1, 4))
    lead = data.draw(shapes(min_dims=0, max_dims=2, max_side=3))
    x = data.draw(arrays(dtype, lead + (d,), minpy=False))
    mean = data.draw(arrays(dtype, (d,), minpy=False))
    kind = data.draw(st.sampled_from(["matrix", "vector", "scalar", "default"]))
    cov = {"matrix": _spd(d).astype(dtype), "vector": numpy.arange(1, d + 1, dtype=dtype),
           "scalar": dtype(2.5), "default": None}[kind]
    allow = data.draw(st.booleans())
    if kind == "default":
        got = MVN.logpdf(mnp.array(x), mnp.array(mean), allow_singular=allow)
        want = ss.multivariate_normal.logpdf(x, mean, allow_singular=allow)
    else:
        got = MVN.logpdf(mnp.array(x), mnp.array(mean), mnp.array(cov), allow_singular=allow)
        want = ss.multivariate_normal.logpdf(x, mean, cov, allow_singular=allow)
    tol = 5e-4 if dtype == numpy.float32 else 1e-9
    numpy.testing.assert_allclose(_host(got), want, rtol=tol, atol=tol)
    assert got.shape == numpy.shape(want)
    if kind == "matrix":
        got = MVN.pdf(mnp.array(x), mnp.array(mean), mnp.array(cov))
        numpy.testing.assert_allclose(_host(got), ss.multivariate_normal.pdf(x, mean, cov),
                                      rtol=tol, atol=1e-12)
        numpy.testing.assert_allclose(_host(MVN.entropy(mnp.array(mean), mnp.array(cov))),
                                      ss.multivariate_normal.entropy(mean, cov), rtol=tol)


def test_multivariate_normal_one_dimension_and_defaults():
    x = numpy.array([0.3, -1.2, 2.0])
    for args in ((), (0.5,), (0.5, 2.0), ([0.5], [[2.0]])):
        numpy.testing.assert_allclose(_host(MVN.logpdf(mnp.array(x), *args)),
                                      ss.multivariate_normal.logpdf(x, *args), rtol=1e-12)
    numpy.testing.assert_allclose(_host(MVN.logpdf(0.3)), ss.multivariate_normal.logpdf(0.3))
    numpy.testing.assert_allclose(_host(MVN.entropy()), ss.multivariate_normal.entropy())


@pytest.mark.parametrize("xshape", [(3,), (4, 3), (2, 2, 3)])
def test_multivariate_normal_gradients(xshape):
    x, mean, cov = U(-2, 2, xshape), U(-1, 1, (3,)), mnp.array(_spd(3))
    check_grads(MVN.logpdf, x, mean, cov, order=2)
    check_grads(MVN.pdf, x, mean, cov, order=2)
    check_grads(lambda x, m, c: MVN.logpdf(x, m, c, allow_singular=True), x, mean, cov, order=2)
    check_grads(lambda c: MVN.logpdf(x, mean, c), U(0.5, 2, (3,)), order=2)      # diagonal
    check_grads(lambda c: MVN.logpdf(x, mean, c), U(0.5, 2, ()), order=2)        # scalar
    check_grads(MVN.entropy, mean, cov, argnums=[1], order=2)


def test_multivariate_normal_reads_the_lower_triangle():
    cov = _spd(3)
    upset = cov + numpy.triu(numpy.ones((3, 3)), 1) * 5      # upper triangle ignored
    x = U(-1, 1, (2, 3))
    numpy.testing.assert_allclose(_host(MVN.logpdf(x, None, mnp.array(upset))),
                                  ss.multivariate_normal.logpdf(_host(x), None, cov),
                                  rtol=1e-12)
    g = _host(minpy.grad(lambda c: mnp.sum(MVN.logpdf(x, None, c)))(mnp.array(cov)))
    assert numpy.all(numpy.triu(g, 1) == 0)


def test_multivariate_normal_singular_covariance():
    v = numpy.random.default_rng(3).standard_normal((3, 2))
    cov = v @ v.T                                   # rank 2
    z = U(-1, 1, (4, 2))
    x = numpy.concatenate([(_host(z) @ v.T), [[1.0, -2.0, 0.5]]])     # last: off support
    got = _host(MVN.logpdf(mnp.array(x), None, mnp.array(cov), allow_singular=True))
    want = ss.multivariate_normal.logpdf(x, None, cov, allow_singular=True)
    numpy.testing.assert_allclose(got, want, rtol=1e-9)
    assert got[-1] == -numpy.inf
    numpy.testing.assert_allclose(_host(MVN.entropy(None, mnp.array(cov))),
                                  ss.multivariate_normal.entropy(None, cov), rtol=1e-9)
    # along the support and along rank-2 covariances (the eigenvalues stay distinct)
    check_grads(lambda z, v: MVN.logpdf(mnp.matmul(z, v.T), None, mnp.matmul(v, v.T),
                                        allow_singular=True), z, mnp.array(v), order=2)
    check_grads(lambda v: MVN.entropy(None, mnp.matmul(v, v.T)), mnp.array(v), order=2)


def test_multivariate_normal_errors():
    with pytest.raises(ValueError, match=r"minpy\.scipy\.stats\.multivariate_normal\.logpdf: "
                                         r".*length 3.*\(2, 4\)"):
        MVN.logpdf(mnp.ones((2, 4)), mnp.zeros(3), mnp.eye(3))
    with pytest.raises(ValueError, match=r"multivariate_normal\.logpdf: .*\(2, 2\)"):
        MVN.logpdf(mnp.ones(3), mnp.zeros(3), mnp.eye(2))
    with pytest.raises(ValueError, match=r"multivariate_normal\.pdf: .*mean"):
        MVN.pdf(mnp.ones(3), mnp.zeros((1, 3)), mnp.eye(3))
    singular = numpy.ones((3, 3))
    with pytest.raises(numpy.linalg.LinAlgError,
                       match=r"multivariate_normal\.logpdf: cov of shape \(3, 3\) is not "
                             r"positive definite \(pass allow_singular=True"):
        MVN.logpdf(mnp.ones(3), None, mnp.array(singular))
    with pytest.raises(ValueError, match="positive semidefinite"):
        MVN.logpdf(mnp.ones(3), None, mnp.array(-numpy.eye(3)), allow_singular=True)


# ---------------------------------------------------------------- dirichlet
@given(data=st.data())
def test_dirichlet_values(data):
    k = data.draw(st.integers(2, 5))
    n = data.draw(st.sampled_from([None, 1, 4]))
    seed = data.draw(st.integers(0, 2 ** 16))
    r = numpy.random.default_rng(seed)
    alpha = r.uniform(0.5, 4, k)
    x = r.dirichlet(alpha, n or 1).T          # components on the first axis (SciPy's layout)
    x = numpy.clip(x, 1e-6, None)
    x = x / x.sum(axis=0)
    if n is None:
        x = x[:, 0]
    short = data.draw(st.booleans())
    xs = x[:-1] if short else x
    for fn in ("logpdf", "pdf"):
        got = getattr(stats.dirichlet, fn)(mnp.array(xs), mnp.array(alpha))
        want = getattr(ss.dirichlet, fn)(xs, alpha)
        numpy.testing.assert_allclose(_host(got), want, rtol=1e-9)
        assert got.shape == numpy.shape(want)
    numpy.testing.assert_allclose(_host(stats.dirichlet.entropy(mnp.array(alpha))),
                                  ss.dirichlet.entropy(alpha), rtol=1e-9)


def test_dirichlet_gradients():
    alpha = U(0.5, 3, (4,))
    x = mnp.array(RNG.dirichlet(_host(alpha), 3).T)          # (4, 3)
    # x on the simplex: K - 1 free coordinates (the last one is 1 - sum)
    check_grads(stats.dirichlet.logpdf, x[:-1], alpha, order=2)
    check_grads(stats.dirichlet.pdf, x[:-1, 0], alpha, order=2)
    check_grads(lambda x, a: stats.dirichlet.logpdf(x / mnp.sum(x, axis=0), a), x, alpha,
                order=2)
    check_grads(stats.dirichlet.entropy, alpha, order=2)


def test_dirichlet_errors():
    alpha = mnp.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"minpy\.scipy\.stats\.dirichlet\.logpdf: .*simplex"):
        stats.dirichlet.logpdf(mnp.array([0.2, 0.2, 0.2]), alpha)
    with pytest.raises(ValueError, match=r"dirichlet\.logpdf: .*3 or 2 entries.*\(5,\)"):
        stats.dirichlet.logpdf(mnp.ones(5) / 5, alpha)
    with pytest.raises(ValueError, match=r"dirichlet\.pdf: .*alpha"):
        stats.dirichlet.pdf(mnp.array([0.5, 0.5]), mnp.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"dirichlet\.logpdf: .*may be 0 only"):
        stats.dirichlet.logpdf(mnp.array([0.0, 1.0]), mnp.array([0.5, 2.0]))
    with pytest.raises(ValueError, match=r"dirichlet\.entropy: .*one-dimensional"):
        stats.dirichlet.entropy(mnp.ones((2, 2)))


def test_broadcast_errors_name_the_function():
    with pytest.raises(ValueError, match=r"minpy\.scipy\.stats\.norm\.logpdf: .*\(2,\), "
                                         r"\(3,\)"):
        stats.norm.logpdf(mnp.ones(2), mnp.ones(3))
    with pytest.raises(ValueError, match=r"minpy\.scipy\.stats\.t\.cdf: .*"):
        stats.t.cdf(mnp.ones(2), mnp.ones(3))


# ---------------------------------------------------------------- samplers
@pytest.mark.parametrize("dist", sorted(RVS))
def test_rvs_are_scipys_draws_as_minpy_arrays(dist):
    params = RVS[dist]
    got = getattr(stats, dist).rvs(*params, size=4, random_state=3)
    want = getattr(ss, dist).rvs(*params, size=4, random_state=3)
    assert type(got) is minpy.Array and got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_array_equal(_host(got), want)
    # minpy arrays as parameters are read to the host
    arr = [mnp.array(p) for p in params]
    numpy.testing.assert_array_equal(
        _host(getattr(stats, dist).rvs(*arr, size=4, random_state=3)), want)


def test_rvs_errors_name_the_function():
    with pytest.raises(ValueError, match="minpy.scipy.stats.dirichlet.rvs"):
        stats.dirichlet.rvs([1.0, -2.0], size=2)


def test_chi2_is_a_gamma_of_half_df():
    x = mnp.array([0.0, 0.5, 3.0, 9.0])
    for fn in ("pdf", "logpdf", "cdf", "sf"):
        with numpy.errstate(divide="ignore"):
            want = _ref("chi2", fn)(_host(x), 1.0)
        numpy.testing.assert_allclose(_host(getattr(stats.chi2, fn)(x, 1.0)), want,
                                      rtol=1e-12)
    assert numpy.isnan(_host(stats.chi2.pdf(1.0, -1.0)))
