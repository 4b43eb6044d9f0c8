"""Gradients of reductions, scans and statistics (minpy/numpy/vjp_reductions.py).

Every rule is checked against central finite differences to second order
(check_grads, which also runs grad of grad) on hypothesis-drawn shapes (0-d
and size-1 axes included) and axis/keepdims variants; exact expectations pin
ties, zeros in products, medians and the Hessians of a few reductions.
"""
import itertools

import numpy
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import minpy
import minpy.numpy as mnp
from minpy.core.primitive import PRIMITIVES
from minpy.testing import check_grads

grad = minpy.grad


# ---------------------------------------------------------------- strategies
@st.composite
def cases(draw, min_dims=0, max_dims=3, tuple_axis=True, none_axis=True):
    """(shape, axis, keepdims, seed): axis None, int (maybe negative) or a tuple."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=4))
    nd = len(shape)
    options = [st.none()] if none_axis or nd == 0 else []
    if nd:
        options.append(st.integers(-nd, nd - 1))
        if tuple_axis:
            options.append(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd).filter(
                lambda ax: len({a % nd for a in ax}) == len(ax)).map(tuple))
    return shape, draw(st.one_of(*options)), draw(st.booleans()), draw(st.integers(0, 2 ** 16))


def data(shape, seed, kind="normal"):
    """Distinct values (no ties), or values in +-[0.5, 1.5] (no zeros) for products."""
    rng = numpy.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(shape)
    return rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def count(shape, axis):
    axes = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return int(numpy.prod([shape[a] for a in axes]))


def numpy_accepts(f, x):
    """The case is valid for NumPy itself (e.g. axis=0 of a 0-d array is not)."""
    try:
        f(numpy, x)
    except (ValueError, TypeError, numpy.exceptions.AxisError):
        return False
    return True


def function(xp, name):
    """``xp.sum`` for 'sum', ``xp.add.reduce`` for 'add.reduce'."""
    f = xp
    for part in name.split("."):
        f = getattr(f, part)
    return f


# id -> (function name, leading args, keywords, data kind, minimum reduced count)
REDUCTIONS = {n: (n, (), {}, "nonzero" if "mul" in n or "prod" in n else "normal", 1) for n in [
    "sum", "prod", "mean", "var", "max", "min", "amax", "amin", "ptp", "average", "median",
    "add.reduce", "multiply.reduce", "maximum.reduce", "minimum.reduce", "fmax.reduce"]}
REDUCTIONS.update({
    "var_ddof1": ("var", (), {"ddof": 1}, "normal", 2),
    "std": ("std", (), {}, "normal", 2),
    "std_correction": ("std", (), {"correction": 1}, "normal", 2),
    "quantile": ("quantile", ([0.25, 0.8],), {}, "normal", 1),
    "percentile": ("percentile", (37.0,), {"method": "hazen"}, "normal", 1),
})


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(case=cases())
def test_reduction_grads(name, case):
    fname, args, kw, kind, min_count = REDUCTIONS[name]
    shape, axis, keepdims, seed = case
    assume(count(shape, axis) >= min_count)
    x = data(shape, seed, kind)

    def f(xp, v):
        return function(xp, fname)(v, *args, axis=axis, keepdims=keepdims, **kw)
    assume(numpy_accepts(f, x))
    check_grads(lambda v: f(mnp, v), mnp.array(x))


# id -> (function name, leading args, keywords)
NAN_REDUCTIONS = {n: (n, (), {}) for n in [
    "nansum", "nanmean", "nanstd", "nanmax", "nanmin", "nanprod", "nanmedian"]}
NAN_REDUCTIONS.update({"nanvar": ("nanvar", (), {"ddof": 1}),
                       "nanquantile": ("nanquantile", ([0.1, 0.6],), {}),
                       "nanpercentile": ("nanpercentile", (70,), {"method": "weibull"})})


@pytest.mark.parametrize("name", sorted(NAN_REDUCTIONS))
@given(case=cases(min_dims=1), where=st.integers(0, 10 ** 6))
def test_nan_reduction_grads(name, case, where):
    """One NaN in slices of at least 3 elements: it gets no gradient, the rest are exact."""
    shape, axis, keepdims, seed = case
    assume(count(shape, axis) >= 3)
    x = data(shape, seed, "nonzero" if name == "nanprod" else "normal")
    x.flat[where % x.size] = numpy.nan
    fname, args, kw = NAN_REDUCTIONS[name]

    def f(v):
        return function(mnp, fname)(v, *args, axis=axis, keepdims=keepdims, **kw)
    check_grads(f, mnp.array(x))
    g = grad(lambda v: mnp.sum(f(v)))(mnp.array(x))
    assert g.asnumpy().flat[where % x.size] == 0


SCANS = ["cumsum", "cumprod", "nancumsum", "nancumprod", "add.accumulate",
         "multiply.accumulate", "cumulative_sum", "cumulative_prod"]


@pytest.mark.parametrize("name", SCANS)
@given(case=cases(min_dims=1, tuple_axis=False), initial=st.booleans())
def test_scan_grads(name, case, initial):
    shape, axis, _, seed = case
    kw = {"include_initial": initial} if name.startswith("cumulative") else {}
    if axis is None and (name.endswith("accumulate") or (kw and len(shape) > 1)):
        axis = -1
    x = data(shape, seed, "nonzero" if "prod" in name or "mul" in name else "normal")
    if name.startswith("nan"):
        x.flat[seed % x.size] = numpy.nan
    check_grads(lambda v: function(mnp, name)(v, axis=axis, **kw), mnp.array(x))


# ---------------------------------------------------------------- prod with zeros
ZERO_CASES = [
    [2.0, 0.0, 3.0, -1.5],          # one zero
    [0.0, 2.0, 0.0, 1.5],           # two zeros
    [0.0, 0.0, 0.0, 0.0],           # all zeros
    [1.5, -2.0, 0.7, 0.0],          # zero last
]


def brute_prod_grad(x):
    return numpy.array([numpy.prod(numpy.delete(x, i)) for i in range(len(x))])


def brute_cumprod_grad(x, g):
    return numpy.array([sum(g[k] * numpy.prod([x[j] for j in range(k + 1) if j != i])
                            for k in range(i, len(x))) for i in range(len(x))])


@pytest.mark.parametrize("x", ZERO_CASES)
def test_prod_grad_with_zeros_exact(x):
    x = numpy.array(x)
    g = grad(lambda v: mnp.prod(v))(mnp.array(x)).asnumpy()
    numpy.testing.assert_allclose(g, brute_prod_grad(x), atol=1e-12)
    gn = grad(lambda v: mnp.nanprod(v))(mnp.array(numpy.append(x, numpy.nan))).asnumpy()
    numpy.testing.assert_allclose(gn, numpy.append(brute_prod_grad(x), 0), atol=1e-12)
    gi = grad(lambda v: mnp.prod(v, initial=2.5))(mnp.array(x)).asnumpy()
    numpy.testing.assert_allclose(gi, 2.5 * brute_prod_grad(x), atol=1e-12)
    w = numpy.linspace(-1, 2, len(x))
    gc = grad(lambda v: mnp.sum(mnp.cumprod(v) * mnp.array(w)))(mnp.array(x)).asnumpy()
    numpy.testing.assert_allclose(gc, brute_cumprod_grad(x, w), atol=1e-12)
    # Hessian: d2 prod / dx_i dx_j = product of all but i and j (0 on the diagonal)
    h = minpy.jacobian(grad(lambda v: mnp.prod(v)))(mnp.array(x)).asnumpy()
    n = len(x)
    want = numpy.array([[0.0 if i == j else numpy.prod(numpy.delete(x, [i, j]))
                         for j in range(n)] for i in range(n)])
    numpy.testing.assert_allclose(h, want, atol=1e-12)


def zeros_matrix():
    x = numpy.random.default_rng(3).uniform(0.5, 1.5, (3, 4, 2))
    x[0, 1, 0] = 0              # one zero in a slice
    x[1, 0, 1] = x[1, 3, 1] = 0  # two zeros in a slice
    x[2, :, 0] = 0              # a slice of zeros
    return x


@pytest.mark.parametrize("f", [
    lambda v: mnp.prod(v, axis=1),
    lambda v: mnp.prod(v, axis=(0, 2), keepdims=True),
    lambda v: mnp.prod(v),
    lambda v: mnp.multiply.reduce(v, axis=-1),
    lambda v: mnp.nanprod(v, axis=1),
    lambda v: mnp.prod(v, axis=1, where=numpy.arange(4)[:, None] != 2, initial=1.5),
    lambda v: mnp.cumprod(v, axis=1),
    lambda v: mnp.cumprod(v),
    lambda v: mnp.multiply.accumulate(v, axis=0),
    lambda v: mnp.cumulative_prod(v, axis=1, include_initial=True),
    lambda v: mnp.nancumprod(v, axis=2),
], ids=["prod1", "prod02", "prod", "mul.reduce", "nanprod", "where-initial", "cumprod1",
        "cumprod", "mul.accumulate", "cumulative_prod", "nancumprod"])
def test_prod_family_with_zeros(f):
    x = mnp.array(zeros_matrix())
    check_grads(f, x)
    # third order too; a wider step keeps the perturbed zeros away from roundoff
    check_grads(f, x, order=3, eps=1e-3, rtol=1e-5)


# ---------------------------------------------------------------- ties
TIE_ROWS = numpy.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, 4.0, 5.0]])


@pytest.mark.parametrize("name,want", [
    ("max", [[0, .5, .5, 0], [.25] * 4, [0, .5, 0, .5]]),
    ("amax", [[0, .5, .5, 0], [.25] * 4, [0, .5, 0, .5]]),
    ("nanmax", [[0, .5, .5, 0], [.25] * 4, [0, .5, 0, .5]]),
    ("min", [[0, 0, 0, 1], [.25] * 4, [1, 0, 0, 0]]),
    ("amin", [[0, 0, 0, 1], [.25] * 4, [1, 0, 0, 0]]),
    ("nanmin", [[0, 0, 0, 1], [.25] * 4, [1, 0, 0, 0]]),
    ("ptp", [[0, .5, .5, -1], [0] * 4, [-1, .5, 0, .5]]),
])
def test_ties_split_equally(name, want):
    g = grad(lambda v: mnp.sum(getattr(mnp, name)(v, axis=1)))(mnp.array(TIE_ROWS))
    numpy.testing.assert_allclose(g.asnumpy(), want)


def test_ties_whole_array_ufunc_method_and_initial():
    x = mnp.array(TIE_ROWS)
    numpy.testing.assert_allclose(grad(lambda v: v.max())(x).asnumpy(),
                                  [[0] * 4, [0] * 4, [0, .5, 0, .5]])
    numpy.testing.assert_allclose(
        grad(lambda v: mnp.sum(mnp.maximum.reduce(v, axis=1)))(x).asnumpy(),
        [[0, .5, .5, 0], [.25] * 4, [0, .5, 0, .5]])
    # initial above every element: no element is the maximum
    g = grad(lambda v: mnp.sum(mnp.max(v, axis=1, initial=4.5)))(x).asnumpy()
    numpy.testing.assert_allclose(g, [[0] * 4, [0] * 4, [0, .5, 0, .5]])
    # where= excludes the masked-out maxima
    mask = numpy.array([True, True, False, True])
    g = grad(lambda v: mnp.sum(mnp.max(v, axis=1, where=mask, initial=-9)))(x).asnumpy()
    numpy.testing.assert_allclose(g, [[0, 1, 0, 0], [1 / 3, 1 / 3, 0, 1 / 3], [0, .5, 0, .5]])
    with pytest.warns(RuntimeWarning, match="All-NaN"):
        g = grad(lambda v: mnp.sum(mnp.nanmax(v, axis=0)))(mnp.array([[1.0, numpy.nan],
                                                                      [1.0, numpy.nan]]))
    # all-NaN: NaN counts as equal to NaN, a tie split evenly (never all zero)
    numpy.testing.assert_allclose(g.asnumpy(), [[.5, .5], [.5, .5]])


# ---------------------------------------------------------------- keyword variants
def test_where_initial_dtype_out():
    x = mnp.array(data((3, 4), 1))
    m = numpy.array([[True, False, True, True]] * 3)
    for f in [lambda v: mnp.sum(v, axis=1, where=m), lambda v: mnp.sum(v, axis=1, initial=3.0),
              lambda v: mnp.add.reduce(v, axis=1, where=m, initial=0.0),
              lambda v: mnp.prod(v, axis=1, where=m), lambda v: mnp.mean(v, axis=1, where=m),
              lambda v: mnp.var(v, axis=1, where=m), lambda v: mnp.std(v, where=m, ddof=1),
              lambda v: mnp.nanmean(v, axis=1, where=m), lambda v: mnp.nanvar(v, where=m),
              lambda v: mnp.min(v, axis=1, where=m, initial=9.0),
              lambda v: mnp.var(v, axis=1, mean=mnp.mean(v, axis=1, keepdims=True)),
              lambda v: mnp.var(v, axis=0, mean=mnp.sum(v, axis=0, keepdims=True)),
              lambda v: mnp.std(v, axis=1, keepdims=True, mean=0.5 * v[:, :1])]:
        check_grads(f, x)
    g = grad(lambda v: mnp.sum(mnp.sum(v, axis=1, where=m)))(x).asnumpy()
    numpy.testing.assert_array_equal(g, m.astype(float))
    x32 = mnp.array(data((3, 4), 2).astype(numpy.float32))
    for f in [mnp.sum, mnp.mean, mnp.prod, mnp.var, mnp.std, mnp.cumsum, mnp.cumprod]:
        g = grad(lambda v: mnp.sum(f(v, dtype=numpy.float64)))(x32)
        assert g.dtype == numpy.float32, f
    out = mnp.zeros(3)
    g = grad(lambda v: mnp.sum(mnp.sum(v, axis=1, out=out) ** 2))(x).asnumpy()
    numpy.testing.assert_allclose(g, 2 * numpy.repeat(x.asnumpy().sum(1)[:, None], 4, 1))


def test_array_methods_route_to_rules():
    x = mnp.array(data((3, 4), 5))
    for f in [lambda v: v.sum(), lambda v: v.sum(axis=0), lambda v: v.mean(axis=-1),
              lambda v: v.max(axis=1), lambda v: v.min(), lambda v: v.prod(axis=1),
              lambda v: v.var(ddof=1), lambda v: v.std(axis=0), lambda v: v.cumsum(axis=1),
              lambda v: v.cumprod(axis=0), lambda v: v.T.sum(1)]:
        check_grads(f, x)


def test_sequence_argument():
    a, b = mnp.array([1.0, 2.0]), mnp.array([3.0, 4.0])
    ga, gb = grad(lambda a, b: mnp.sum(mnp.prod([a, b], axis=0)), argnum=(0, 1))(a, b)
    numpy.testing.assert_allclose(ga.asnumpy(), [3, 4])
    numpy.testing.assert_allclose(gb.asnumpy(), [1, 2])
    numpy.testing.assert_allclose(grad(lambda a: mnp.mean([a, b]))(a).asnumpy(), [.25, .25])


# ---------------------------------------------------------------- statistics
def test_average():
    rng = numpy.random.default_rng(7)
    x = mnp.array(rng.standard_normal((3, 4, 2)))
    w4, w42 = mnp.array(rng.random(4) + .5), mnp.array(rng.random((4, 2)) + .5)
    wfull = mnp.array(rng.random((3, 4, 2)) + .5)

    def returned(v, w):
        avg, scl = mnp.average(v, axis=1, weights=w, returned=True)
        return avg * scl + scl
    for f, args in [(lambda v, w: mnp.average(v, axis=1, weights=w), (x, w4)),
                    (lambda v, w: mnp.average(v, 1, w), (x, w4)),
                    (lambda v, w: mnp.average(v, axis=(1, 2), weights=w), (x, w42)),
                    (lambda v, w: mnp.average(v, axis=(2, 1), weights=w.T), (x, w42)),
                    (lambda v, w: mnp.average(v, weights=w), (x, wfull)),
                    (lambda v, w: mnp.average(v, axis=0, weights=w, keepdims=True), (x, wfull)),
                    (returned, (x, w4)),
                    (lambda v, w: mnp.average(v, axis=-1, returned=True)[0] * w[0], (x, w4))]:
        check_grads(f, *args)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest", "hazen",
                                    "weibull", "median_unbiased", "normal_unbiased",
                                    "inverted_cdf", "averaged_inverted_cdf",
                                    "closest_observation", "interpolated_inverted_cdf"])
def test_quantile_methods(method):
    x = mnp.array(data((3, 5, 2), 11))
    check_grads(lambda v: mnp.quantile(v, [0.13, 0.5, 0.91], axis=1, method=method), x)
    check_grads(lambda v: mnp.nanpercentile(v, [[5, 50], [77, 99]], axis=2, method=method,
                                            keepdims=True), x)
    check_grads(lambda v: mnp.percentile(v, [[5, 50], [77, 99]], axis=(0, 2), method=method,
                                         keepdims=True), x)
    check_grads(lambda v: mnp.nanquantile(v, [0.3, 0.77], axis=(0, 2), method=method), x)


def test_median_exact_and_refusals():
    g = grad(lambda v: mnp.median(v))(mnp.array([4.0, 1.0, 3.0, 2.0])).asnumpy()
    numpy.testing.assert_array_equal(g, [0, 0, .5, .5])        # even: the two middle ones
    g = grad(lambda v: mnp.median(v))(mnp.array([4.0, 1.0, 3.0])).asnumpy()
    numpy.testing.assert_array_equal(g, [0, 0, 1])
    g = grad(lambda v: mnp.quantile(v, 0.25))(mnp.array([4.0, 1.0, 3.0, 2.0, 0.0])).asnumpy()
    numpy.testing.assert_array_equal(g, [0, 1, 0, 0, 0])
    g = grad(lambda v: mnp.quantile(v, 0.3))(mnp.array([4.0, 1.0, 3.0, 2.0, 0.0])).asnumpy()
    numpy.testing.assert_allclose(g, [0, .8, 0, .2, 0])        # 0.3 * 4 = 1.2 -> ranks 1, 2
    x = mnp.array(data((3, 4), 2))
    for f in [lambda v: mnp.median(v, 1), lambda v: mnp.median(v, 0, None, False, True),
              lambda v: mnp.quantile(v, mnp.array(0.3), axis=1)]:
        check_grads(f, x)
    with pytest.raises(ValueError, match="overwrite_input"):
        grad(lambda v: mnp.median(v, overwrite_input=True))(x)
    with pytest.raises(TypeError, match="weights"):
        grad(lambda v: mnp.quantile(v, 0.5, method="inverted_cdf", weights=mnp.ones((3, 4))))(x)
    # NumPy's nanquantile lays out a 2-D q over several axes differently from quantile
    with pytest.raises(TypeError, match="layout"):
        grad(lambda v: mnp.sum(mnp.nanquantile(v, [[0.2], [0.5]], axis=(0, 1))))(x)


def test_cov_corrcoef():
    rng = numpy.random.default_rng(1)
    m, y = mnp.array(rng.standard_normal((3, 6))), mnp.array(rng.standard_normal((2, 6)))
    v = mnp.array(rng.standard_normal(6))
    fw, aw = numpy.array([1, 2, 1, 3, 1, 1]), rng.random(6) + 0.5
    z = mnp.array(rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6)))
    for f, args in [(lambda m: mnp.cov(m), (m,)), (lambda m: mnp.cov(m, bias=True), (m,)),
                    (lambda m, y: mnp.cov(m, y), (m, y)), (lambda m, y: mnp.cov(m, y=y), (m, y)),
                    (lambda m, y: mnp.cov(m.T, y.T, rowvar=False), (m, y)),
                    (lambda v: mnp.cov(v), (v,)), (lambda v, m: mnp.cov(v, m.T, rowvar=False),
                                                   (v, m)),
                    (lambda m: mnp.cov(m, fweights=fw, aweights=aw, ddof=1), (m,)),
                    (lambda m: mnp.cov(m, aweights=aw), (m,)), (lambda z: mnp.cov(z), (z,)),
                    (lambda m: mnp.corrcoef(m), (m,)), (lambda m, y: mnp.corrcoef(m, y), (m, y)),
                    (lambda m: mnp.corrcoef(m.T, rowvar=False), (m,)),
                    (lambda v: mnp.corrcoef(v, v * v), (v,))]:
        check_grads(f, *args)
    numpy.testing.assert_array_equal(grad(lambda v: mnp.corrcoef(v))(v).asnumpy(), 0)


def test_complex_inputs():
    rng = numpy.random.default_rng(4)
    z = mnp.array(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)))
    zz = z.asnumpy().copy()
    zz[0, 1] = 0
    for f, arg in [(lambda v: mnp.sum(v, axis=1), z), (lambda v: mnp.mean(v), z),
                   (lambda v: mnp.prod(v, axis=1), z), (lambda v: mnp.cumprod(v, axis=1), z),
                   (lambda v: mnp.prod(v, axis=1), mnp.array(zz)),
                   (lambda v: mnp.cumprod(v, axis=1), mnp.array(zz)),
                   (lambda v: mnp.var(v, axis=0), z), (lambda v: mnp.std(v, ddof=1), z),
                   (lambda v: mnp.cumsum(v, axis=0), z),
                   (lambda v: mnp.average(v, axis=1, weights=mnp.array([1., 2, 3, 4])), z)]:
        check_grads(f, arg)
    # var(z) = mean |z - mean|^2: gradient 2 (z - mean) / N in check_grads' convention
    zh = z.asnumpy()
    numpy.testing.assert_allclose(grad(mnp.var)(z).asnumpy(), 2 * (zh - zh.mean()) / zh.size)


def test_bincount_weights():
    idx = mnp.array([0, 2, 2, 5, 1])
    w = mnp.array(numpy.random.default_rng(0).random(5))
    check_grads(lambda w: mnp.bincount(idx, weights=w, minlength=7), w)
    check_grads(lambda w: mnp.bincount(idx, w), w)
    g = grad(lambda w: mnp.sum(mnp.bincount(idx, w) * mnp.arange(6.0)))(w).asnumpy()
    numpy.testing.assert_array_equal(g, [0, 2, 2, 5, 1])


# ---------------------------------------------------------------- grad of grad
def test_hessians_exact():
    x = numpy.array([0.3, -1.2, 2.0, 0.7])
    n = len(x)
    h = minpy.jacobian(grad(lambda v: mnp.var(v, ddof=1)))(mnp.array(x)).asnumpy()
    numpy.testing.assert_allclose(h, 2 / (n - 1) * (numpy.eye(n) - 1 / n), atol=1e-12)
    h = minpy.jacobian(grad(lambda v: mnp.sum(mnp.cumsum(v) ** 2)))(mnp.array(x)).asnumpy()
    L = numpy.tril(numpy.ones((n, n)))
    numpy.testing.assert_allclose(h, 2 * L.T @ L, atol=1e-12)
    h = minpy.jacobian(grad(lambda v: mnp.max(v) * mnp.sum(v)))(mnp.array(x)).asnumpy()
    e = numpy.eye(n)[2]
    numpy.testing.assert_allclose(h, e[:, None] + e[None, :], atol=1e-12)


@pytest.mark.parametrize("stop", [False, True], ids=["traced-max", "stopped-max"])
def test_logsumexp_both_ways(stop):
    def lse(v):
        m = mnp.max(v, axis=-1, keepdims=True)
        m = minpy.stop_gradient(m) if stop else m
        return mnp.log(mnp.sum(mnp.exp(v - m), axis=-1)) + m[..., 0]
    x = data((3, 5), 9) * 3
    check_grads(lse, mnp.array(x))
    p = numpy.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    numpy.testing.assert_allclose(grad(lambda v: mnp.sum(lse(v)))(mnp.array(x)).asnumpy(), p,
                                  rtol=1e-12)
    h = minpy.jacobian(grad(lambda v: lse(v)))(mnp.array(x[0])).asnumpy()
    numpy.testing.assert_allclose(h, numpy.diag(p[0]) - numpy.outer(p[0], p[0]), atol=1e-12)


# ---------------------------------------------------------------- not differentiable
NONDIFF = ["argmax", "argmin", "nanargmax", "nanargmin", "count_nonzero", "all", "any",
           "digitize", "searchsorted"]
# (the histograms are linear in their weights and their edges in the data's range:
# differentiable, checked in test_grad_audit.py)
DIFF = ({r[0] for r in REDUCTIONS.values()} | set(NAN_REDUCTIONS) | set(SCANS)
        | {"cov", "corrcoef", "bincount", "fmin.reduce", "histogram", "histogram2d",
           "histogramdd", "histogram_bin_edges"})


def test_every_function_of_the_chapter_is_classified():
    for name in NONDIFF:
        assert getattr(mnp, name)._prim.nondiff, name
    for name in DIFF:
        p = PRIMITIVES[name]
        assert p.vjp and not p.nondiff, name


def test_nondiff_results_are_untraced():
    x = mnp.array([[0.5, 2.0, -0.2], [-1.0, 0.3, 1.1]])
    bins = mnp.array([0.0, 1.0])
    uses = [lambda v: mnp.argmax(v, axis=1), lambda v: mnp.argmin(v), lambda v: v.argmax(),
            lambda v: mnp.nanargmax(v, axis=0), lambda v: mnp.nanargmin(v),
            lambda v: mnp.count_nonzero(v > 0), lambda v: mnp.all(v > -2), lambda v: v.any(),
            lambda v: mnp.digitize(v, bins), lambda v: mnp.searchsorted(bins, v)]
    for use in uses:
        seen = []

        def f(v):
            r = use(v)
            seen.append(r)
            return mnp.sum(v) + mnp.sum(r * 1.0)
        g = grad(f)(x)
        assert getattr(seen[0], "_node", None) is None
        numpy.testing.assert_array_equal(g.asnumpy(), numpy.ones(x.shape))
    # the classic form: x times an index gets the index as its gradient
    g = grad(lambda v: mnp.sum(v * mnp.argmax(v, axis=1)[:, None]))(x).asnumpy()
    numpy.testing.assert_array_equal(g, [[1] * 3, [2] * 3])
    g = grad(lambda v: mnp.sum(v * mnp.digitize(v, bins)))(x).asnumpy()
    numpy.testing.assert_array_equal(g, numpy.digitize(x.asnumpy(), [0.0, 1.0]))


@pytest.mark.parametrize("shape,axis", list(itertools.product([(), (1,), (2, 1, 3)],
                                                              [None, "last"])))
def test_small_and_0d_shapes(shape, axis):
    x = mnp.array(data(shape, 3))
    ax = None if axis is None or not shape else -1
    for name in ["sum", "prod", "mean", "max", "min", "ptp", "median", "nansum", "nanprod",
                 "average", "nanmean", "nanmax", "cumsum", "cumprod", "nancumsum", "var"]:
        check_grads(lambda v: getattr(mnp, name)(v, axis=ax), x)
    if x.size > 1:
        check_grads(lambda v: mnp.std(v, axis=ax), x)


def test_rules_run_on_a_device_backend():
    """The rules use minpy functions only: on a (stand-in) GPU the gradients are right
    and stay on the device, zeros, ties, NaNs and quantiles included."""
    import warnings
    from _standin import StandinArray, installed
    rng = numpy.random.default_rng(0)
    xh = rng.standard_normal((3, 4))
    xz, xn = xh.copy(), xh.copy()
    xz[1, 2] = xz[0, 0] = 0
    xn[0, 1] = numpy.nan
    fs = [lambda v: mnp.sum(v, axis=1), lambda v: mnp.prod(v, axis=1),
          lambda v: mnp.cumprod(v, axis=1), lambda v: mnp.var(v, axis=0, ddof=1),
          lambda v: mnp.max(v, axis=1), lambda v: mnp.quantile(v, [0.2, 0.7], axis=1),
          lambda v: mnp.average(v, axis=1, weights=mnp.array([1., 2, 3, 4])),
          lambda v: mnp.corrcoef(v), lambda v: mnp.maximum.reduce(v, axis=1)]
    with warnings.catch_warnings(), installed(), minpy.gpu(0):
        warnings.simplefilter("ignore", RuntimeWarning)     # CPU fallbacks are announced
        for arg, f in itertools.product((xh, xz), fs):
            x = mnp.array(arg)
            assert type(x._data) is StandinArray
            check_grads(f, x)
        for f in (mnp.nanvar, mnp.nanmax, mnp.nanprod, mnp.nancumprod):
            check_grads(lambda v: f(v, axis=1), mnp.array(xn))
        g = grad(lambda v: mnp.sum(mnp.prod(v, axis=1)))(mnp.array(xz))
        assert type(g._data) is StandinArray
        numpy.testing.assert_allclose(g.asnumpy()[0], [numpy.prod(xz[0, 1:]), 0, 0, 0])
