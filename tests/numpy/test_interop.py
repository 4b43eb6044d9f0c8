"""Real programs' use of minpy values: scalars that behave like NumPy's, and SciPy,
matplotlib and scikit-learn taking what minpy returns (the interop design in the
README: NumPy's functions answer in NumPy for host arrays nothing differentiates).
"""
import math
import numbers

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy as np
from minpy.testing import arrays

from _standin import standin_gpu  # noqa: F401  (fixture)
from minpy.core.array import new_scalar
from _host import assert_result_type


# ---------------------------------------------------------------- scalars
class WeightsParser:
    """Parameter packing as autograd's examples write it: ``self.N += np.prod(shape)``."""

    def __init__(self):
        self.idxs_and_shapes = {}
        self.N = 0

    def add_weights(self, name, shape):
        start = self.N
        self.N += np.prod(shape)
        self.idxs_and_shapes[name] = (slice(start, self.N), shape)

    def get(self, vect, name):
        idxs, shape = self.idxs_and_shapes[name]
        return np.reshape(vect[idxs], shape)


def test_parameter_packing_with_augmented_assignment():
    parser = WeightsParser()
    parser.add_weights("W1", (3, 4))
    parser.add_weights("b1", (4,))
    parser.add_weights("W2", (4, 2))
    assert parser.N == 3 * 4 + 4 + 4 * 2
    v = np.arange(float(parser.N))
    assert parser.get(v, "b1").tolist() == [12.0, 13.0, 14.0, 15.0]
    assert parser.get(v, "W2").shape == (4, 2) and float(parser.get(v, "W2")[0, 0]) == 16.0

    def loss(v):
        return np.sum(parser.get(v, "W1") ** 2) + np.sum(parser.get(v, "W2"))
    g = np.grad(loss)(v)
    want = numpy.zeros(parser.N)
    want[:12] = 2 * numpy.arange(12.0)
    want[16:] = 1
    numpy.testing.assert_allclose(g.asnumpy(), want)


_SCALAR_DTYPES = [numpy.float32, numpy.float64, numpy.int64, numpy.int8, numpy.complex128,
                  numpy.bool_]


@given(st.sampled_from(_SCALAR_DTYPES).flatmap(lambda dt: arrays(dtype=dt, minpy=False)))
def test_scalar_results_match_numpys_scalars(a):
    """Where NumPy returns a scalar, minpy's untraced host result is that scalar; a
    scalar Array (a traced or device result) passes the same number checks, converts,
    formats and hashes the same, and is immutable."""
    want = a.sum() if a.dtype != numpy.bool_ else a.any()
    res = np.sum(np.array(a)) if a.dtype != numpy.bool_ else np.any(np.array(a))
    assert_result_type(res, want)       # NumPy's scalar on the host, a 0-d Array on a GPU
    got = new_scalar(numpy.asarray(want))
    assert isinstance(want, numpy.generic) and getattr(got, "_scalar", False)
    for abc in (numbers.Number, numbers.Complex, numbers.Real, numbers.Integral):
        assert isinstance(got, abc) == isinstance(want, abc), abc
    assert complex(got) == complex(want) or (math.isnan(complex(want).real))
    if want.dtype.kind != "c":
        assert float(got) == float(want) or math.isnan(float(want))
        assert format(got, ".3g") == format(want, ".3g")
        assert str(got) == str(want)
    if want.dtype.kind in "iub":
        assert hash(got) == hash(want) and {want.item(): 1}[got] == 1
        assert list(range(int(got) % 5)) == list(range(got % 5))
    before = got
    got += 1
    assert before is not got and float(before.real) == float(want.real)


def test_scalars_from_indexing_and_reductions_are_traced():
    def f(w):
        total = 0.0
        total += w[0, 1] * w.sum()          # scalars on the tape, += rebinding
        total += np.max(w)
        return total
    w = np.array(numpy.arange(6.0).reshape(2, 3))
    g = np.grad(f)(w)
    want = numpy.full((2, 3), 1.0)
    want[0, 1] += 15.0
    want[1, 2] += 1.0
    numpy.testing.assert_allclose(g.asnumpy(), want)


def test_arrays_are_not_numbers_and_do_not_hash():
    x = np.zeros(3)
    assert not isinstance(x, numbers.Number) and not isinstance(np.zeros(()), numbers.Number)
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    y = np.zeros(())          # a 0-d array, not a scalar: mutable, as NumPy's
    alias = y
    y += 1
    assert alias is y and float(alias) == 1.0
    s = np.sum(x)
    with pytest.raises(TypeError, match="does not support item assignment"):
        s[...] = 3


def test_comparison_with_none_on_a_device(standin_gpu):
    """``x != None`` (matplotlib's ``alpha != self._alpha``) answers as NumPy on a GPU
    too (CuPy refuses a None operand)."""
    with np.gpu(0):
        x = np.array(numpy.array([1.0, 2.0]))
        s, i = np.sum(x), np.arange(3)
    for a in (x, s, i):
        for got, want in ((a != None, True), (a == None, False),       # noqa: E711
                          (None != a, True), (None == a, False)):      # noqa: E711
            assert standin_gpu.owns(got._data)
            numpy.testing.assert_array_equal(got.asnumpy(), numpy.full(a.shape, want))


# ---------------------------------------------------------------- SciPy
# (these take host arrays: with a GPU, minpy's results live there and NumPy code must
# call .asnumpy(), as the README says, so they run with no GPU backend)
@pytest.mark.cpu_only
def test_scipy_minimize_lbfgsb_with_minpy_gradient():
    so = pytest.importorskip("scipy.optimize")
    A = numpy.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.5]])
    b = numpy.array([1.0, -2.0, 0.5])

    def f(x):
        return 0.5 * np.dot(x, np.dot(A, x)) - np.dot(b, x) + 0.1 * np.sum(x ** 4)

    def f_np(x):
        return 0.5 * x @ A @ x - b @ x + 0.1 * numpy.sum(x ** 4)

    def g_np(x):
        return A @ x - b + 0.4 * x ** 3
    mine = so.minimize(f, numpy.zeros(3), jac=np.grad(f), method="L-BFGS-B")
    ref = so.minimize(f_np, numpy.zeros(3), jac=g_np, method="L-BFGS-B")
    assert mine.success and ref.success
    numpy.testing.assert_allclose(mine.x, ref.x, rtol=1e-6, atol=1e-8)
    numpy.testing.assert_allclose(mine.fun, ref.fun, rtol=1e-10)
    bfgs = so.minimize(f, numpy.zeros(3), jac=np.grad(f), method="BFGS")
    numpy.testing.assert_allclose(bfgs.x, ref.x, rtol=1e-5, atol=1e-7)


@pytest.mark.cpu_only       # host arrays (see the SciPy section)
def test_scipy_integrate_and_root_take_minpy_functions():
    si = pytest.importorskip("scipy.integrate")
    so = pytest.importorskip("scipy.optimize")
    val, _ = si.quad(lambda t: np.exp(-t) * np.sin(t), 0, numpy.pi)
    assert abs(val - (1 + numpy.exp(-numpy.pi)) / 2) < 1e-10
    sol = si.solve_ivp(lambda t, y: -0.5 * y, (0, 2), numpy.array([1.0, 2.0]), rtol=1e-8)
    numpy.testing.assert_allclose(sol.y[:, -1], numpy.array([1.0, 2.0]) * numpy.exp(-1),
                                  rtol=1e-6)
    ys = si.odeint(lambda y, t: -y * np.cos(t), numpy.array([1.0]), numpy.linspace(0, 1, 5))
    numpy.testing.assert_allclose(ys[:, 0], numpy.exp(-numpy.sin(numpy.linspace(0, 1, 5))),
                                  rtol=1e-6)
    r = so.root(lambda x: x ** 3 - 2, numpy.array([1.0]), jac=np.jacobian(lambda x: x ** 3 - 2))
    numpy.testing.assert_allclose(r.x, [2 ** (1 / 3)], rtol=1e-8)


# ---------------------------------------------------------------- matplotlib
@pytest.mark.cpu_only       # host arrays (see the SciPy section)
def test_matplotlib_takes_minpy_values(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x = np.linspace(0, 1, 20)
    y = np.sin(x) ** 2
    fig, ax = plt.subplots()
    ax.plot(x, y, alpha=np.mean(y) + 0.3)          # a minpy scalar as alpha
    ax.scatter(x, y, s=np.abs(y) * 20 + 1, alpha=np.max(y) / 2)
    ax.set_xlim(np.min(x), np.max(x))
    ax.set_ylim(0, float(np.max(y)) * 1.1)
    ax.fill_between(x, y, 0, alpha=np.float64(0.2) * 1)
    ax.imshow(np.outer(y, y), alpha=np.std(y) + 0.5)
    path = tmp_path / "fig.png"
    fig.savefig(path)
    plt.close(fig)
    assert path.stat().st_size > 1000
    lo, hi = ax.get_xlim()
    assert (lo, hi) == (0.0, 1.0)


# ---------------------------------------------------------------- scikit-learn
@pytest.mark.cpu_only       # host arrays (see the SciPy section)
def test_scikit_learn_takes_minpy_arrays():
    linear_model = pytest.importorskip("sklearn.linear_model")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    rng = numpy.random.default_rng(0)
    Xn = rng.normal(size=(50, 3))
    yn = Xn @ numpy.array([1.0, -2.0, 0.5]) + 0.3
    X, y = np.array(Xn), np.array(yn)
    model = linear_model.LinearRegression().fit(X, y)
    numpy.testing.assert_allclose(model.coef_, [1.0, -2.0, 0.5], rtol=1e-8)
    numpy.testing.assert_allclose(model.predict(X[:5]), yn[:5], rtol=1e-8)
    scaled = preprocessing.StandardScaler().fit_transform(X)
    assert type(scaled) is numpy.ndarray
    numpy.testing.assert_allclose(scaled.mean(0), 0, atol=1e-12)
    clf = linear_model.LogisticRegression().fit(X, y > 0)
    assert clf.score(X, y > 0) > 0.9
