"""minpy.scipy.special: values against SciPy (hypothesis over shapes and dtypes),
every gradient rule against finite differences to second order (check_grads) on
several shapes with broadcasting and keyword variants, second derivatives
against SciPy's closed forms, arguments without a gradient, errors naming the
function, the GPU path on the strict stand-in device, and the ImportError
without SciPy."""
import importlib
import sys
import warnings

import numpy
import pytest
import scipy.special as ss
from hypothesis import given, strategies as st

import minpy
import minpy.numpy as mnp
from minpy.core.primitive import PRIMITIVES
from minpy.scipy import special as S
from minpy.scipy import _util
from minpy.testing import arrays, assert_close as assert_allclose, broadcastable_shapes, check_grads, shapes
from _standin import StandinNamespace, installed
from _host import assert_result_type, host as _host
from _strategies import gpu_tolerance, on_real_gpu

RNG = numpy.random.default_rng(7)


def U(lo, hi, shape=(3,)):
    """A float64 minpy Array, uniform on [lo, hi)."""
    return mnp.array(RNG.uniform(lo, hi, shape))


# name -> domain of its argument (dyadic bounds: exact in float32), away from poles
UNARY = {
    "gammaln": (0.5, 4), "loggamma": (0.5, 4), "gamma": (0.5, 3), "rgamma": (0.5, 3),
    "digamma": (0.5, 4), "expit": (-4, 4), "logit": (0.125, 0.875), "log_expit": (-4, 4),
    "erf": (-2, 2), "erfc": (-2, 2), "erfcx": (-2, 2), "erfinv": (-0.875, 0.875),
    "erfcinv": (0.125, 1.875), "ndtr": (-3, 3), "log_ndtr": (-6, 3),
    "ndtri": (0.125, 0.875), "i0": (-3, 3), "i1": (-3, 3), "i0e": (0.25, 3),
    "i1e": (0.25, 3), "j0": (0.5, 6), "j1": (0.5, 6), "y0": (0.5, 6), "y1": (0.5, 6),
    "k0": (0.5, 3), "k1": (0.5, 3), "k0e": (0.5, 3), "k1e": (0.5, 3), "entr": (0.25, 3),
}
# name -> (function of the differentiable arguments, their domains, fixed extra args)
ORDER = 1.5                     # a non-integer order for the Bessel functions
BINARY = {
    "polygamma": (lambda x: S.polygamma(numpy.array([0, 1, 2]), x), [(0.5, 3)]),
    "multigammaln": (lambda a: S.multigammaln(a, 3), [(1.5, 4)]),
    "beta": (S.beta, [(0.5, 3), (0.5, 3)]),
    "betaln": (S.betaln, [(0.5, 3), (0.5, 3)]),
    "betainc": (lambda x: S.betainc(numpy.array([0.5, 2.0, 3.0]), 2.5, x), [(0.1, 0.9)]),
    "gammainc": (lambda x: S.gammainc(numpy.array([0.5, 1.0, 2.5]), x), [(0.2, 3)]),
    "gammaincc": (lambda x: S.gammaincc(1.5, x), [(0.2, 3)]),
    "iv": (lambda z: S.iv(ORDER, z), [(0.2, 3)]),
    "ive": (lambda z: S.ive(numpy.array([0.0, 0.5, 2.0]), z), [(0.2, 3)]),
    "jv": (lambda z: S.jv(ORDER, z), [(0.5, 5)]),
    "jn": (lambda z: S.jn(2, z), [(0.5, 5)]),
    "yv": (lambda z: S.yv(ORDER, z), [(0.5, 5)]),
    "yn": (lambda z: S.yn(numpy.array([0, 1, 3]), z), [(0.5, 5)]),
    "kv": (lambda z: S.kv(ORDER, z), [(0.5, 3)]),
    "kve": (lambda z: S.kve(ORDER, z), [(0.5, 3)]),
    "xlogy": (S.xlogy, [(-2, 2), (0.5, 3)]),
    "xlog1py": (S.xlog1py, [(-2, 2), (-0.5, 3)]),
    "stdtr": (lambda t: S.stdtr(numpy.array([1.0, 3.5, numpy.inf]), t), [(-3, 3)]),
    "stdtrit": (lambda p: S.stdtrit(4.0, p), [(0.1, 0.9)]),
}
GRAD_SHAPES = [(), (3,), (2, 3)]
# shapes for the two operands of a broadcasting binary function
PAIR_SHAPES = [((3,), (3,)), ((2, 1), (3,)), ((), (2, 3)), ((2, 3), (1, 1))]


def test_every_public_function_is_tested_and_documented():
    tested = set(UNARY) | set(BINARY) | {"gammasgn", "psi", "logsumexp", "softmax",
                                          "log_softmax"}
    assert set(S.__all__) == tested
    for name in S.__all__:
        fn = getattr(S, name)
        assert fn.__doc__ and f"scipy.special.{getattr(fn, '__name__', name)}" in fn.__doc__, \
            name
        assert "Args:" in fn.__doc__ and "Returns:" in fn.__doc__, name
    assert S.psi is S.digamma and S.jn is S.jv


def test_every_scipy_primitive_has_a_rule_or_is_marked_nondiff():
    ours = {q: p for q, p in PRIMITIVES.items()
            if q.startswith(("scipy.special.", "scipy.linalg."))}
    assert len(ours) >= len(S.__all__) - 2 + 4          # special (less aliases) + linalg
    assert [q for q, p in ours.items() if not p.vjp and not p.nondiff] == []
    assert [q for q, p in ours.items() if p.nondiff] == ["scipy.special.gammasgn"]


# ---------------------------------------------------------------- values
@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_values_match_scipy(name, data):
    lo, hi = UNARY[name]
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    x = data.draw(arrays(dtype, shapes(max_dims=3),
                         st.floats(lo, hi, width=numpy.dtype(dtype).itemsize * 8),
                         minpy=False))
    out = getattr(S, name)(mnp.array(x))
    want = getattr(ss, name)(x)
    assert_result_type(out, want)
    if on_real_gpu():     # CUDA's float32 kernels flush subnormal results to zero
        rtol = 1e-5 if dtype == numpy.float32 else 1e-7
        assert_allclose(out, want, *gpu_tolerance(numpy.asarray(want), rtol, 0.0))
    else:
        assert_allclose(out, want)


@given(data=st.data())
def test_binary_values_broadcast_as_scipy(data):
    name = data.draw(st.sampled_from(["beta", "betaln", "xlogy", "xlog1py", "gammainc",
                                      "gammaincc", "iv", "jv", "kv", "stdtr"]))
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    s1, s2 = data.draw(broadcastable_shapes(2, max_dims=3))
    width = numpy.dtype(dtype).itemsize * 8
    a = data.draw(arrays(dtype, s1, st.floats(0.5, 4, width=width), minpy=False))
    b = data.draw(arrays(dtype, s2, st.floats(0.25, 3, width=width), minpy=False))
    out = getattr(S, name)(mnp.array(a), mnp.array(b))
    assert_allclose(out, getattr(ss, name)(a, b))
    # mixed Array / NumPy / Python-scalar operands
    assert_allclose(getattr(S, name)(a, mnp.array(b)), getattr(ss, name)(a, b))
    assert_allclose(getattr(S, name)(1.5, mnp.array(b)), getattr(ss, name)(1.5, b))


def test_scalars_and_lists():
    assert_allclose(S.gammaln(3.5), ss.gammaln(3.5))
    assert S.gammaln(3.5).shape == ()
    assert_allclose(S.expit([0.0, 1.0]), ss.expit([0.0, 1.0]))
    assert_allclose(S.polygamma([0, 1], [1.5, 2.5]), ss.polygamma([0, 1], [1.5, 2.5]))
    assert_allclose(S.multigammaln(numpy.array([2.0, 3.0]), 2),
                    ss.multigammaln(numpy.array([2.0, 3.0]), 2))
    assert_allclose(S.gammasgn(numpy.array([-0.5, 1.5])), [-1.0, 1.0])


@given(data=st.data())
def test_reductions_match_scipy(data):
    dtype = data.draw(st.sampled_from([numpy.float32, numpy.float64]))
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    a = data.draw(arrays(dtype, shape, minpy=False))
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                               st.sets(st.integers(0, nd - 1), min_size=1).map(tuple)))
    keepdims = data.draw(st.booleans())
    with_b = data.draw(st.booleans())
    b = data.draw(arrays(dtype, shape[data.draw(st.integers(0, nd)):],
                         st.floats(-2, 2, width=numpy.dtype(dtype).itemsize * 8),
                         minpy=False)) if with_b else None
    kw = {"axis": axis, "keepdims": keepdims, "b": b}
    rtol = 2e-5 if dtype == numpy.float32 else 1e-10
    got_v, got_s = S.logsumexp(mnp.array(a), return_sign=True, **kw)
    want_v, want_s = ss.logsumexp(a, return_sign=True, **kw)
    assert_allclose(got_v, want_v, rtol=rtol, atol=rtol)
    assert_allclose(got_s, want_s)
    if not with_b:
        assert_allclose(S.logsumexp(mnp.array(a), axis=axis, keepdims=keepdims),
                        ss.logsumexp(a, axis=axis, keepdims=keepdims), rtol=rtol, atol=rtol)
        assert_allclose(S.softmax(mnp.array(a), axis=axis), ss.softmax(a, axis=axis),
                        rtol=rtol, atol=rtol)
        assert_allclose(S.log_softmax(mnp.array(a), axis=axis), ss.log_softmax(a, axis=axis),
                        rtol=rtol, atol=rtol)


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("shape", GRAD_SHAPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients(name, shape):
    check_grads(getattr(S, name), U(*UNARY[name], shape), order=2)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradients(name):
    f, domains = BINARY[name]
    check_grads(f, *[U(lo, hi, (3,)) for lo, hi in domains], order=2)


@pytest.mark.parametrize("s1,s2", PAIR_SHAPES)
@pytest.mark.parametrize("name", ["beta", "betaln", "xlogy", "xlog1py"])
def test_binary_gradients_broadcast(name, s1, s2):
    (lo1, hi1), (lo2, hi2) = BINARY[name][1]
    x, y = U(lo1, hi1, s1), U(lo2, hi2, s2)
    check_grads(getattr(S, name), x, y, order=2)
    # the gradients have the operands' shapes (summed over the broadcast axes)
    gx, gy = minpy.grad(lambda x, y: mnp.sum(getattr(S, name)(x, y)), (0, 1))(x, y)
    assert gx.shape == s1 and gy.shape == s2


@pytest.mark.parametrize("s1,s2", PAIR_SHAPES)
def test_gradients_broadcast_against_fixed_arguments(s1, s2):
    order, z = U(0.0, 2.0, s1), U(0.5, 3, s2)       # the order is a constant here
    a = U(0.5, 3, s1)
    check_grads(lambda z: S.iv(order, z), z, order=2)
    check_grads(lambda z: S.jv(order, z), z, order=2)
    check_grads(lambda x: S.gammainc(a, x), z, order=2)
    check_grads(lambda x: S.polygamma(numpy.ones(s1, int), x), z, order=2)
    assert minpy.grad(lambda z: mnp.sum(S.kve(order, z)))(z).shape == s2


def test_xlogy_gradient_at_x_zero():
    # d/dy x log y = x / y, defined 0 where x == 0 (also at y == 0)
    g = minpy.grad(lambda y: mnp.sum(S.xlogy(mnp.array([0.0, 2.0]), y)))(mnp.array([0.0, 4.0]))
    numpy.testing.assert_allclose(_host(g), [0.0, 0.5])
    g = minpy.grad(lambda y: mnp.sum(S.xlog1py(mnp.array([0.0, 2.0]), y)))(mnp.array([-1., 3.]))
    numpy.testing.assert_allclose(_host(g), [0.0, 0.5])


def test_second_derivatives_match_closed_forms():
    x = U(0.5, 4, (4,))
    h = _host(x)
    d2 = minpy.grad(lambda x: mnp.sum(minpy.grad(lambda y: mnp.sum(S.gammaln(y)))(x)))(x)
    numpy.testing.assert_allclose(_host(d2), ss.polygamma(1, h), rtol=1e-12)
    d3 = minpy.grad(lambda x: mnp.sum(minpy.grad(
        lambda y: mnp.sum(minpy.grad(lambda z: mnp.sum(S.digamma(z)))(y)))(x)))(x)
    numpy.testing.assert_allclose(_host(d3), ss.polygamma(3, h), rtol=1e-10)
    # i0'' = i1' = (i0 + i2) / 2
    d2 = minpy.grad(lambda x: mnp.sum(minpy.grad(lambda y: mnp.sum(S.i0(y)))(x)))(x)
    numpy.testing.assert_allclose(_host(d2), (ss.i0(h) + ss.iv(2, h)) / 2, rtol=1e-12)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
def test_gradients_keep_the_dtype(dtype):
    x = mnp.array(numpy.array([0.5, 1.5], dtype))
    for f in (S.gammaln, S.erf, S.expit, S.i1, lambda x: S.xlogy(x, 2.0),
              lambda x: S.logsumexp(x, b=numpy.array([1.0, 2.0], dtype))):
        g = minpy.grad(lambda x: mnp.sum(f(x)))(x)
        assert g.dtype == dtype


@pytest.mark.parametrize("kw", [
    {}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 2)},
    {"axis": 1, "b": "col"}, {"axis": None, "b": "full", "keepdims": True},
    {"axis": 2, "b": "neg", "return_sign": True},
])
def test_logsumexp_gradients(kw):
    a = U(-2, 2, (2, 3, 4))
    b = {"col": U(0.5, 2, (3, 1)), "full": U(0.5, 2, (2, 3, 4)),
         "neg": mnp.array(RNG.choice([-1.0, 1.0], (3, 4)) * RNG.uniform(0.5, 2, (3, 4)))}
    kw = dict(kw)
    bb = b.get(kw.pop("b", None))
    sign = kw.get("return_sign", False)

    def f(a, *rest):
        out = S.logsumexp(a, b=rest[0] if rest else None, **kw)
        return out[0] if sign else out
    args = (a,) if bb is None else (a, bb)
    if sign:        # away from sums near zero, where |sum| has a kink
        v, s = ss.logsumexp(_host(a), axis=kw["axis"], b=_host(bb), return_sign=True)
        assert numpy.all(numpy.abs(numpy.exp(v)) > 1e-3)
    check_grads(f, *args, order=2)


def test_logsumexp_complex_gradient():
    a = mnp.array(RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3)))
    assert_allclose(S.logsumexp(a, axis=1), ss.logsumexp(_host(a), axis=1))
    check_grads(lambda a: S.logsumexp(a, axis=1), a, order=2)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_softmax_gradients(axis):
    x = U(-2, 2, (2, 3))
    check_grads(lambda x: S.softmax(x, axis=axis), x, order=2)
    check_grads(lambda x: S.log_softmax(x, axis=axis), x, order=2)


# ---------------------------------------------------------------- no gradient
def test_integer_arguments_get_no_gradient():
    n, x = mnp.array([1.0, 2.0]), U(0.5, 3, (2,))
    gn, gx = minpy.grad(lambda n, x: mnp.sum(S.polygamma(n, x)), (0, 1))(n, x)
    numpy.testing.assert_array_equal(_host(gn), 0.0)
    numpy.testing.assert_allclose(_host(gx), ss.polygamma(_host(n) + 1, _host(x)))
    gn = minpy.grad(lambda n: mnp.sum(S.yn(n, x)))(n)
    numpy.testing.assert_array_equal(_host(gn), 0.0)
    g = minpy.grad(lambda x: mnp.sum(S.gammasgn(x) * x))(mnp.array([-0.5, 1.5]))
    numpy.testing.assert_array_equal(_host(g), [-1.0, 1.0])


@pytest.mark.parametrize("f", [
    lambda a: S.gammainc(a, 1.0), lambda a: S.gammaincc(a, 1.0),
    lambda a: S.betainc(a, 2.0, 0.5), lambda v: S.iv(v, 1.0), lambda v: S.jv(v, 1.0),
    lambda df: S.stdtr(df, 0.5),
], ids=["gammainc", "gammaincc", "betainc", "iv", "jv", "stdtr"])
def test_arguments_without_a_rule_raise_at_backward(f):
    with pytest.raises(TypeError, match=r"scipy\.special\.\w+ has no gradient with respect "
                                        r"to argument 0"):
        minpy.grad(lambda a: mnp.sum(f(a)))(mnp.array([1.5, 2.5]))


# ---------------------------------------------------------------- errors
def test_bad_input_errors_name_the_function_and_shapes():
    with pytest.raises(ValueError, match=r"minpy\.scipy\.special\.xlogy: .*\(2,\), \(3,\)"):
        S.xlogy(mnp.ones(2), mnp.ones(3))
    with pytest.raises(ValueError, match=r"minpy\.scipy\.special\.logsumexp: .*\(2, 3\)"):
        S.logsumexp(mnp.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match=r"minpy\.scipy\.special\.logsumexp: .*"):
        S.logsumexp(mnp.ones((2, 3)), b=mnp.ones(4))
    with pytest.raises(ValueError, match=r"minpy\.scipy\.special\.multigammaln"):
        S.multigammaln(mnp.array([0.5]), 3)        # needs a > (d - 1) / 2
    with pytest.raises(TypeError, match=r"minpy\.scipy\.special\.gammaln"):
        S.gammaln("abc")


# ---------------------------------------------------------------- GPU path (stand-in)
@pytest.fixture
def standin_scipy():
    """The stand-in GPU with stand-ins of cupyx.scipy.special/linalg (SciPy's functions
    over device arrays, refusing host conversion); ``scipy.special.stdtr`` missing."""
    with installed() as backend:
        backend.missing = backend.missing | {"scipy.special.stdtr"}
        _util.GPU_NAMESPACES["standin"] = {
            "special": StandinNamespace(backend, ss, "scipy.special."),
            "linalg": StandinNamespace(backend, importlib.import_module("scipy.linalg"),
                                       "scipy.linalg.")}
        try:
            yield backend
        finally:
            del _util.GPU_NAMESPACES["standin"]


def test_functions_and_rules_run_on_the_gpu_backend(standin_scipy):
    with minpy.gpu(0):
        x = U(0.5, 3, (2, 3))
        assert x.context == minpy.gpu(0)
        y = S.gammaln(x)
        assert y.context == minpy.gpu(0)
        assert_allclose(y, ss.gammaln(_host(x)))
        check_grads(S.gammaln, x, order=2)
        check_grads(lambda a, b: S.logsumexp(a, axis=1, b=b), x, U(0.5, 2, (3,)), order=2)
        w = U(-1, 1, (3,))
        check_grads(lambda x: S.xlogy(w, x), x, order=2)
    calls = minpy.dispatch.stats()["calls"]
    for q in ("scipy.special.gammaln", "scipy.special.digamma", "scipy.special.polygamma",
              "scipy.special.logsumexp", "scipy.special.xlogy"):
        assert set(calls[q]) == {"standin"}, (q, calls[q])
    assert standin_scipy.calls["scipy.special.gammaln"] > 0
    assert not minpy.dispatch.stats()["fallbacks"]


def _cuda_yn(n, x):
    """``yn`` as CUDA's math library (what cupyx.scipy.special.yn calls): NaN for n < 0."""
    return numpy.where(numpy.asarray(n) < 0, numpy.nan, ss.yn(n, x))


def test_yn_gradient_needs_no_negative_order(standin_scipy, monkeypatch):
    """The derivative of yn(0, x) is -y1(x); CUDA's yn(-1, x) is NaN, so the rule must
    not go through order n - 1."""
    monkeypatch.setattr(_util.GPU_NAMESPACES["standin"]["special"], "yn",
                        StandinNamespace(standin_scipy, type("M", (), {"yn": staticmethod(
                            _cuda_yn)}), "scipy.special.").yn, raising=False)
    with minpy.gpu(0):
        x = U(0.5, 5, (3,))
        g = minpy.grad(lambda x: mnp.sum(S.yn(numpy.array([0, 1, 3]), x)))(x)
        assert g.context == minpy.gpu(0)
        h = _host(x)
        assert_allclose(g, [-ss.y1(h[0]), ss.yvp(1, h[1]), ss.yvp(3, h[2])], rtol=1e-10)


def test_a_function_the_gpu_lacks_falls_back_to_the_cpu(standin_scipy):
    with minpy.gpu(0):
        t = U(-2, 2, (3,))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = S.stdtr(3.0, t)
        assert any("scipy.special.stdtr is not available" in str(m.message) for m in w)
        assert_allclose(out, ss.stdtr(3.0, _host(t)))
        check_grads(lambda t: S.stdtr(3.0, t), t, order=2)
    assert minpy.dispatch.stats()["fallbacks"]["scipy.special.stdtr"] >= 1


def test_backend_namespace():
    assert _util.backend_namespace(numpy, "special") is ss
    assert _util.backend_namespace(object(), "special") is None
    saved = _util.GPU_NAMESPACES.get("cupy")
    _util.GPU_NAMESPACES["fakecupy"] = {"special": "no_such_module_xyz.special"}

    class Fake:
        __name__ = "fakecupy"
    try:
        assert _util.backend_namespace(Fake(), "special") is None     # import failed
        assert _util.GPU_NAMESPACES["fakecupy"]["special"] is None    # remembered
    finally:
        del _util.GPU_NAMESPACES["fakecupy"]
    assert _util.GPU_NAMESPACES.get("cupy") == saved


# ---------------------------------------------------------------- import
def test_import_without_scipy_says_how_to_install(monkeypatch):
    saved = {k: v for k, v in sys.modules.items()
             if k == "minpy.scipy" or k.startswith("minpy.scipy.")}
    for k in saved:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.setitem(sys.modules, "scipy", None)      # "import scipy" now fails
    try:
        with pytest.raises(ImportError, match=r'pip install scipy \(in a minpy checkout: pip install -e "\.\[scipy\]"\)'):
            importlib.import_module("minpy.scipy")
    finally:
        sys.modules.update(saved)
