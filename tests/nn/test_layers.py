"""minpy.nn.layers: values against NumPy references, gradients against finite
differences (order 2 where the layer is smooth), modes, and error messages."""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy as np
import minpy.symbol as sym
from minpy.nn import layers as L
from minpy.symbol import function
from minpy.testing import check_grads
from minpy.nn.layers import batchnorm_ops
from _standin import installed          # tests/_standin.py: a strict NumPy-backed "GPU"
from _host import host

DTYPES = [numpy.float32, numpy.float64]
RTOL = {numpy.float32: 2e-5, numpy.float64: 1e-10}


def rand(*shape, seed=0, dtype=numpy.float64, scale=1.0):
    return (numpy.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def close(actual, desired, dtype=numpy.float64):
    a = host(actual)
    assert a.dtype == dtype, f"dtype {a.dtype}, expected {dtype}"
    numpy.testing.assert_allclose(a, desired, rtol=RTOL[dtype], atol=RTOL[dtype])


def onehot(y, c):
    return numpy.eye(c)[y]


# ---------------------------------------------------------------- NumPy references
def ref_softmax(x, axis=-1):
    e = numpy.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ref_conv(x, w, b, s, p, d, g):
    """Loops over output positions: the definition, nothing clever."""
    n, _, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = numpy.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = (h + 2 * p - d * (kh - 1) - 1) // s + 1, (wd + 2 * p - d * (kw - 1) - 1) // s + 1
    out = numpy.zeros((n, f, oh, ow), dtype=x.dtype)
    for fi in range(f):
        gi = fi // (f // g)
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, gi * cg:(gi + 1) * cg, i * s:i * s + d * (kh - 1) + 1:d,
                           j * s:j * s + d * (kw - 1) + 1:d]
                out[:, fi, i, j] = (patch * w[fi]).sum(axis=(1, 2, 3)) + (0 if b is None else b[fi])
    return out


def ref_pool(x, k, s, p, kind):
    n, c, h, w = x.shape
    fill = -numpy.inf if kind == "max" else 0
    xp = numpy.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = numpy.zeros((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return out


def ref_lstm_step(x, h, c, wx, wh, b):
    a = x @ wx + h @ wh + b
    hd = h.shape[1]
    i, f, o = (1 / (1 + numpy.exp(-a[:, k * hd:(k + 1) * hd])) for k in range(3))
    g = numpy.tanh(a[:, 3 * hd:])
    c = f * c + i * g
    return o * numpy.tanh(c), c


def ref_gru_step(x, h, wx, wh, b, wxh, whh, bh):
    hd = h.shape[1]
    a = 1 / (1 + numpy.exp(-(x @ wx + h @ wh + b)))
    r, z = a[:, :hd], a[:, hd:]
    return z * h + (1 - z) * numpy.tanh(x @ wxh + (r * h) @ whh + bh)


# ---------------------------------------------------------------- activations
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 100))
def test_activations_match_numpy(shape, dtype, seed):
    xh = rand(*shape, seed=seed, dtype=dtype, scale=3)
    x = np.array(xh)
    close(L.relu(x), numpy.maximum(xh, 0), dtype)
    close(L.leaky_relu(x, 0.1), numpy.where(xh > 0, xh, dtype(0.1) * xh), dtype)
    close(L.sigmoid(x), 1 / (1 + numpy.exp(-xh)), dtype)
    close(L.tanh(x), numpy.tanh(xh), dtype)
    for axis in range(-len(shape), len(shape)):
        close(L.softmax(x, axis=axis), ref_softmax(xh, axis), dtype)
        close(L.log_softmax(x, axis=axis), numpy.log(ref_softmax(xh, axis)), dtype)


def test_softmax_and_sigmoid_are_stable_at_extreme_inputs():
    x = np.array([[1000.0, 0.0, -1000.0]])
    with numpy.errstate(over="raise", divide="raise", invalid="raise"):
        numpy.testing.assert_allclose(host(L.softmax(x)), [[1, 0, 0]])
        numpy.testing.assert_allclose(host(L.log_softmax(x)), [[0, -1000, -2000]])
        numpy.testing.assert_allclose(host(L.sigmoid(x)), [[1, 0.5, 0]])
        assert numpy.isfinite(float(L.softmax_loss(x, numpy.array([2]))))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2)])
def test_smooth_activation_gradients_order_2(shape):
    x = np.array(rand(*shape, seed=1))
    for f in (L.sigmoid, L.tanh, L.softmax, L.log_softmax,
              lambda v: L.softmax(v, axis=0), lambda v: L.log_softmax(v, axis=0)):
        check_grads(f, x, order=2)


def test_kinked_activation_gradients_order_1():
    # relu / leaky_relu have a kink at 0: order 1 only, at points away from it
    x = rand(3, 4, seed=2)
    x = np.array(numpy.where(numpy.abs(x) < 0.1, 0.5, x))
    check_grads(L.relu, x, order=1)
    check_grads(lambda v: L.leaky_relu(v, 0.2), x, order=1)


# ---------------------------------------------------------------- affine
@given(n=st.integers(1, 4), feat=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       m=st.integers(1, 4), dtype=st.sampled_from(DTYPES))
def test_affine_flattens_each_sample(n, feat, m, dtype):
    xh = rand(n, *feat, seed=n, dtype=dtype)
    d = int(numpy.prod(feat))
    wh, bh = rand(d, m, seed=1, dtype=dtype), rand(m, seed=2, dtype=dtype)
    close(L.affine(np.array(xh), np.array(wh), np.array(bh)), xh.reshape(n, d) @ wh + bh, dtype)
    close(L.affine(xh, wh, None), xh.reshape(n, d) @ wh, dtype)


@pytest.mark.parametrize("xshape", [(3, 4), (2, 2, 3)])
def test_affine_gradient(xshape):
    d = int(numpy.prod(xshape[1:]))
    check_grads(L.affine, np.array(rand(*xshape)), np.array(rand(d, 3, seed=1)),
                np.array(rand(3, seed=2)), order=2)


def test_temporal_affine():
    x, w, b = rand(2, 3, 4), rand(4, 5, seed=1), rand(5, seed=2)
    close(L.temporal_affine(np.array(x), np.array(w), np.array(b)), x @ w + b)
    check_grads(L.temporal_affine, np.array(x), np.array(w), np.array(b), order=2)


# ---------------------------------------------------------------- convolution, pooling
CONV_CASES = [  # (N, C, H, W, F, K, stride, pad, dilation, groups)
    (2, 3, 5, 5, 4, 3, 1, 0, 1, 1),
    (2, 3, 7, 6, 4, 3, 2, 1, 1, 1),
    (1, 2, 7, 7, 3, 3, 1, 2, 2, 1),
    (2, 4, 5, 6, 6, 2, 1, 1, 1, 2),
    (1, 4, 6, 6, 4, 3, 2, 1, 2, 4),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_reference(case, dtype):
    n, c, h, w, f, k, s, p, d, g = case
    xh, wh, bh = rand(n, c, h, w, dtype=dtype), rand(f, c // g, k, k, seed=1, dtype=dtype), \
        rand(f, seed=2, dtype=dtype)
    out = L.conv2d(np.array(xh), np.array(wh), np.array(bh), stride=s, pad=p, dilation=d,
                   groups=g)
    close(out, ref_conv(xh, wh, bh, s, p, d, g), dtype)
    close(L.conv2d(xh, wh, stride=(s, s), pad=(p, p), dilation=(d, d), groups=g),
          ref_conv(xh, wh, None, s, p, d, g), dtype)


def test_conv2d_rectangular_kernel_and_pairs():
    xh, wh = rand(1, 2, 6, 7), rand(3, 2, 2, 3, seed=1)
    out = host(L.conv2d(np.array(xh), np.array(wh), stride=(1, 2), pad=(1, 0)))
    xp = numpy.pad(xh, ((0, 0), (0, 0), (1, 1), (0, 0)))
    want = numpy.zeros((1, 3, 7, 3))
    for i in range(7):
        for j in range(3):
            want[0, :, i, j] = (xp[0, :, i:i + 2, 2 * j:2 * j + 3] * wh).sum(axis=(1, 2, 3))
    numpy.testing.assert_allclose(out, want, rtol=1e-12)


def test_conv2d_and_pooling_match_symbol_operators():
    xh, wh, bh = rand(2, 4, 6, 6), rand(6, 2, 3, 3, seed=1), rand(6, seed=2)
    net = sym.Convolution(sym.Variable("data"), kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                          num_filter=6, num_group=2, name="c")
    f = function(net, {"data": xh.shape})
    want = f(data=np.array(xh), c_weight=np.array(wh), c_bias=np.array(bh))
    got = L.conv2d(np.array(xh), np.array(wh), np.array(bh), stride=2, pad=1, groups=2)
    numpy.testing.assert_allclose(host(got), host(want), rtol=1e-10)
    for kind, layer in (("max", L.max_pool), ("avg", L.avg_pool)):
        pool = function(sym.Pooling(sym.Variable("data"), kernel=(3, 3), stride=(2, 2),
                                    pad=(1, 1), pool_type=kind), {"data": xh.shape})
        numpy.testing.assert_allclose(host(layer(np.array(xh), 3, 2, 1)),
                                      host(pool(data=np.array(xh))), rtol=1e-12)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_gradient_order_2(case):
    n, c, h, w, f, k, s, p, d, g = case
    args = (np.array(rand(n, c, h, w, scale=0.5)), np.array(rand(f, c // g, k, k, seed=1)),
            np.array(rand(f, seed=2)))
    check_grads(lambda x, w, b: L.conv2d(x, w, b, stride=s, pad=p, dilation=d, groups=g),
                *args, order=2)


@pytest.mark.parametrize("case", CONV_CASES[:3])
def test_conv2d_gradient_when_data_and_filters_are_both_traced(case):
    """One variable feeds x and w, so the tape takes the joint (dx, dw) op and, at
    second order, that op's own gradients."""
    n, c, h, w, f, k, s, p, d, g = case
    xs, ws = (n, c, h, w), (f, c // g, k, k)
    nx = int(numpy.prod(xs))

    def conv_of_one(z):
        x = np.reshape(z[:nx], xs)
        return L.conv2d(x, np.reshape(z[nx:], ws), stride=s, pad=p, dilation=d, groups=g)
    z = np.array(rand(nx + int(numpy.prod(ws)), scale=0.5))
    check_grads(conv_of_one, z, order=2)


POOL_CASES = [  # (H, W, pool, stride, pad): the first two tile exactly
    (4, 6, 2, None, 0), (6, 6, 3, 3, 0), (5, 5, 2, None, 0), (5, 6, 3, 2, 1), (4, 4, 2, 1, 1),
]


@given(case=st.sampled_from(POOL_CASES), dtype=st.sampled_from(DTYPES),
       n=st.integers(1, 2), c=st.integers(1, 3), seed=st.integers(0, 50))
def test_pooling_matches_reference(case, dtype, n, c, seed):
    h, w, k, s, p = case
    xh = rand(n, c, h, w, seed=seed, dtype=dtype)
    close(L.max_pool(np.array(xh), k, s, p), ref_pool(xh, k, s or k, p, "max"), dtype)
    close(L.avg_pool(np.array(xh), k, s, p), ref_pool(xh, k, s or k, p, "avg"), dtype)


@pytest.mark.parametrize("case", POOL_CASES)
def test_pooling_gradients(case):
    h, w, k, s, p = case
    # distinct values, so that no window has a tie (max_pool is piecewise linear:
    # order 1 only); avg_pool is linear: order 2
    x = np.array(numpy.random.default_rng(3).permutation(2 * h * w).reshape(1, 2, h, w) * 0.1)
    check_grads(lambda v: L.max_pool(v, k, s, p), x, order=1)
    check_grads(lambda v: L.avg_pool(v, k, s, p), x, order=2)


def test_max_pool_gradient_goes_to_the_window_maximum():
    xh = numpy.array([[[[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 9.0, 1.0]]]])
    g = np.grad(lambda v: np.sum(L.max_pool(v, 2)))(np.array(xh))
    numpy.testing.assert_array_equal(host(g), [[[[0, 1, 0, 0], [0, 0, 1, 0]]]])


# ---------------------------------------------------------------- normalisation
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2, 2)])
def test_batchnorm_train_and_test_modes(shape, dtype):
    xh = rand(*shape, dtype=dtype, scale=2) + dtype(1)
    gh, bh = rand(shape[1], seed=1, dtype=dtype), rand(shape[1], seed=2, dtype=dtype)
    axes = (0,) if len(shape) == 2 else (0, 2, 3)
    bshape = (1, shape[1]) + (1,) * (len(shape) - 2)
    mean, var = xh.mean(axis=axes), xh.var(axis=axes)
    rm0, rv0 = rand(shape[1], seed=3, dtype=dtype), rand(shape[1], seed=4, dtype=dtype) ** 2
    out, rm, rv = L.batchnorm(np.array(xh), np.array(gh), np.array(bh), momentum=0.8,
                              running_mean=np.array(rm0), running_var=np.array(rv0))
    norm = (xh - mean.reshape(bshape)) / numpy.sqrt(var.reshape(bshape) + 1e-5)
    close(out, norm * gh.reshape(bshape) + bh.reshape(bshape), dtype)
    close(rm, 0.8 * rm0 + 0.2 * mean, dtype)
    close(rv, 0.8 * rv0 + 0.2 * var, dtype)
    out, rm2, rv2 = L.batchnorm(np.array(xh), np.array(gh), np.array(bh), mode="test",
                                running_mean=rm, running_var=rv)
    want = (xh - host(rm).reshape(bshape)) / numpy.sqrt(
        host(rv).reshape(bshape) + 1e-5) * gh.reshape(bshape) + bh.reshape(bshape)
    close(out, want, dtype)
    assert rm2 is rm and rv2 is rv
    _, rm, rv = L.batchnorm(np.array(xh), np.array(gh), np.array(bh))   # defaults 0 and 1
    close(rm, 0.1 * mean, dtype)
    close(rv, 0.9 + 0.1 * var, dtype)


@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 2, 2)])
def test_batchnorm_gradients(shape):
    x, g, b = (np.array(rand(*s, seed=k)) for k, s in enumerate((shape, shape[1:2], shape[1:2])))
    rm, rv = np.array(rand(shape[1], seed=3)), np.array(rand(shape[1], seed=4) ** 2 + 0.5)
    check_grads(lambda x, g, b: L.batchnorm(x, g, b)[0], x, g, b, order=2)
    check_grads(lambda x, g, b: L.batchnorm(x, g, b, mode="test", running_mean=rm,
                                            running_var=rv)[0], x, g, b, order=2)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5, 2)])
def test_batchnorm_kernel_op_equals_the_composed_formula(shape, dtype, monkeypatch):
    """Float Arrays take the BatchNorm kernels; a NumPy gamma the composed ops."""
    calls = []
    for name in ("bn_train_stats", "bn_backward"):
        real = getattr(batchnorm_ops.ck, name)
        monkeypatch.setattr(batchnorm_ops.ck, name,
                            lambda *a, _real=real, _name=name, **k: calls.append(_name) or
                            _real(*a, **k))
    xh = rand(*shape, dtype=dtype, scale=2) + dtype(0.5)
    gh, bh = rand(shape[1], seed=1, dtype=dtype), rand(shape[1], seed=2, dtype=dtype)
    gout = np.array(rand(*shape, seed=3, dtype=dtype))

    def loss(x, b, gamma):
        out, rm, rv = L.batchnorm(x, gamma, b)
        return np.sum(out * gout) + np.sum(rm) * 0 + np.sum(rv) * 0, (rm, rv)
    results = []
    for gamma in (np.array(gh), gh):
        grads, value = np.grad_and_loss(lambda x, b: loss(x, b, gamma)[0], argnum=(0, 1))(
            np.array(xh), np.array(bh))
        results.append([value] + list(grads) + list(loss(np.array(xh), np.array(bh), gamma)[1]))
    assert calls == ["bn_train_stats", "bn_backward", "bn_train_stats"]   # the Array runs only
    for fast, composed in zip(*results):
        close(fast, host(composed), dtype)


def test_batchnorm_running_stats_carry_no_gradient():
    x, g, b = np.array(rand(4, 3)), np.array(numpy.ones(3)), np.array(numpy.zeros(3))

    def through_stats(x, g, b):
        out, rm, rv = L.batchnorm(x, g, b, running_mean=np.zeros(3), running_var=np.ones(3))
        return np.sum(rm * 3.0 + rv * 5.0) + np.sum(out) * 0.0

    grads = np.grad(through_stats, argnum=(0, 1, 2))(x, g, b)
    for gr in grads:
        numpy.testing.assert_array_equal(host(gr), 0)
    # and the statistics themselves do depend on x
    _, rm, _ = L.batchnorm(x, g, b)
    assert numpy.any(host(rm) != 0)


def test_layernorm():
    xh, gh, bh = rand(2, 3, 5, scale=2), rand(5, seed=1), rand(5, seed=2)
    mu, var = xh.mean(-1, keepdims=True), xh.var(-1, keepdims=True)
    close(L.layernorm(np.array(xh), np.array(gh), np.array(bh)),
          (xh - mu) / numpy.sqrt(var + 1e-5) * gh + bh)
    close(L.layernorm(np.array(xh.astype(numpy.float32)), gh.astype(numpy.float32),
                      bh.astype(numpy.float32)),
          ((xh - mu) / numpy.sqrt(var + 1e-5) * gh + bh).astype(numpy.float32), numpy.float32)
    for shape in [(4, 3), (2, 2, 4)]:
        check_grads(L.layernorm, np.array(rand(*shape)), np.array(rand(shape[-1], seed=1)),
                    np.array(rand(shape[-1], seed=2)), order=2)


# ---------------------------------------------------------------- dropout
def test_dropout_modes_scale_and_determinism():
    xh = numpy.ones((200, 50))
    x = np.array(xh)
    a = host(L.dropout(x, 0.3, seed=7))
    numpy.testing.assert_array_equal(a, host(L.dropout(x, 0.3, seed=7)))
    assert set(numpy.unique(a)) <= {0.0, 1 / 0.7}
    assert abs((a == 0).mean() - 0.3) < 0.02            # 10,000 draws: ~5 sigma
    assert not numpy.array_equal(a, host(L.dropout(x, 0.3, seed=8)))
    assert L.dropout(x, 0.3, mode="test") is x
    assert L.dropout(x, 0.0) is x
    numpy.testing.assert_array_equal(host(L.dropout(x, 1.0)), 0)
    f32 = L.dropout(np.array(xh.astype(numpy.float32)), 0.5, seed=1)
    assert host(f32).dtype == numpy.float32


def test_dropout_global_seed_reproduces_and_seed_leaves_global_state():
    x = np.ones((10, 10))
    np.random.seed(3)
    a = host(L.dropout(x, 0.5))
    np.random.seed(3)
    L.dropout(x, 0.5, seed=11)               # a private generator: the global one is untouched
    b = host(L.dropout(x, 0.5))
    numpy.testing.assert_array_equal(a, b)


def test_dropout_gradient_is_the_mask():
    x = np.array(rand(6, 5))
    mask = host(L.dropout(np.ones((6, 5)), 0.4, seed=2))
    g = np.grad(lambda v: np.sum(L.dropout(v, 0.4, seed=2)))(x)
    numpy.testing.assert_allclose(host(g), mask)
    check_grads(lambda v: L.dropout(v, 0.4, seed=2), x, order=2)


@pytest.mark.parametrize("layer,call", [
    ("dropout", lambda: L.dropout(np.ones(3), 0.5, mode="eval")),
    ("batchnorm", lambda: L.batchnorm(np.ones((2, 3)), np.ones(3), np.ones(3), mode="Train")),
])
def test_invalid_mode(layer, call):
    with pytest.raises(ValueError, match=rf"{layer}: mode must be one of \('train', 'test'\)"):
        call()


# ---------------------------------------------------------------- losses
def ref_softmax_loss(x, y1h):
    return -(numpy.log(ref_softmax(x)) * y1h).sum() / x.shape[0]


@given(n=st.integers(1, 5), c=st.integers(2, 5), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 100))
def test_classification_losses_match_numpy(n, c, dtype, seed):
    xh = rand(n, c, seed=seed, dtype=dtype, scale=3)
    y = numpy.random.default_rng(seed).integers(0, c, n)
    y1h = onehot(y, c)
    want = dtype(ref_softmax_loss(xh.astype(numpy.float64), y1h))
    for label in (y, np.array(y), y1h, np.array(y1h.astype(dtype))):
        close(L.softmax_loss(np.array(xh), label), want, dtype)
    p = ref_softmax(xh)
    close(L.softmax_cross_entropy(np.array(p), y), dtype(-(numpy.log(p) * y1h).sum() / n), dtype)
    margins = numpy.maximum(0, xh - xh[numpy.arange(n), y][:, None] + 1) * (1 - y1h)
    for label in (y, y1h):
        close(L.svm_loss(np.array(xh), label), dtype(margins.sum() / n), dtype)
    close(L.l2_loss(np.array(xh), y), dtype(((xh - y1h) ** 2).sum() / n), dtype)


def test_regression_losses():
    xh, th = rand(3, 4, scale=3), rand(3, 4, seed=1)
    close(L.l2_loss(np.array(xh), th), ((xh - th) ** 2).sum() / 3)
    close(L.mse(np.array(xh), th), ((xh - th) ** 2).mean())
    p = numpy.random.default_rng(2).uniform(size=(3, 4))
    sig = 1 / (1 + numpy.exp(-xh))
    close(L.sigmoid_cross_entropy(np.array(xh), p),
          -(p * numpy.log(sig) + (1 - p) * numpy.log(1 - sig)).mean())
    with numpy.errstate(over="raise", divide="raise", invalid="raise"):
        big = float(L.sigmoid_cross_entropy(np.array([[800.0, -800.0]]), numpy.array([[0.0, 1.0]])))
    assert big == pytest.approx(800.0)


@pytest.mark.parametrize("n,c", [(3, 4), (5, 2)])
def test_loss_gradients(n, c):
    rng = numpy.random.default_rng(n)
    x = np.array(rand(n, c, seed=n))
    y = rng.integers(0, c, n)
    soft = rng.dirichlet(numpy.ones(c), n)
    check_grads(lambda v: L.softmax_loss(v, y), x, order=2)
    check_grads(lambda v, t: L.softmax_loss(v, t), x, np.array(soft), order=2)  # soft labels
    check_grads(lambda v: L.softmax_cross_entropy(L.softmax(v), y), x, order=2)
    check_grads(lambda v: L.l2_loss(v, y), x, order=2)
    check_grads(lambda v, t: L.mse(v, t), x, np.array(soft), order=2)
    check_grads(lambda v, t: L.sigmoid_cross_entropy(v, t), x, np.array(soft), order=2)
    # the hinge has kinks where a margin is 0: order 1, at scores whose margins are far from 0
    xs = np.array(numpy.arange(n * c, dtype=float).reshape(n, c) * 1.37 % 5)
    check_grads(lambda v: L.svm_loss(v, y), xs, order=1)


def test_softmax_loss_gradient_is_fused_and_float32():
    xh, y = rand(4, 3, seed=5), numpy.array([0, 2, 1, 2])
    g = np.grad(lambda v: L.softmax_loss(v, y))(np.array(xh))
    numpy.testing.assert_allclose(host(g), (ref_softmax(xh) - onehot(y, 3)) / 4)
    x32 = np.array(xh.astype(numpy.float32))
    g32, loss32 = np.grad_and_loss(lambda v: L.softmax_loss(v, y))(x32)
    assert host(loss32).dtype == numpy.float32
    assert host(g32).dtype == numpy.float32
    numpy.testing.assert_allclose(host(g32), host(g), rtol=1e-5)


def test_temporal_softmax_loss():
    n, t, v = 2, 3, 4
    xh = rand(n, t, v)
    y = numpy.array([[0, 3, 1], [2, 2, 0]])
    mask = numpy.array([[1, 1, 0], [1, 0, 1]], dtype=bool)
    lp = numpy.log(ref_softmax(xh))
    want = -(mask * numpy.take_along_axis(lp, y[..., None], -1)[..., 0]).sum() / n
    close(L.temporal_softmax_loss(np.array(xh), y, mask), want)
    check_grads(lambda x: L.temporal_softmax_loss(x, y, mask), np.array(xh), order=2)


# ---------------------------------------------------------------- recurrent layers, embedding
def rnn_params(d, h, gates, seed=0):
    return (np.array(rand(d, gates * h, seed=seed, scale=0.5)),
            np.array(rand(h, gates * h, seed=seed + 1, scale=0.5)),
            np.array(rand(gates * h, seed=seed + 2, scale=0.5)))


@pytest.mark.parametrize("n,t,d,h", [(2, 3, 4, 3), (1, 2, 2, 2)])
def test_recurrent_layers_match_numpy_steps(n, t, d, h):
    xh, h0 = rand(n, t, d, seed=9), rand(n, h, seed=10)
    x = np.array(xh)
    wx, wh, b = rnn_params(d, h, 1)
    hh, want = h0, []
    for s in range(t):
        hh = numpy.tanh(xh[:, s] @ host(wx) + hh @ host(wh) + host(b))
        want.append(hh)
    close(L.rnn(x, np.array(h0), wx, wh, b), numpy.stack(want, 1))
    close(L.rnn_temporal(x, np.array(h0), wx, wh, b), numpy.stack(want, 1))
    close(L.rnn_step(x[:, 0], np.array(h0), wx, wh, b), want[0])
    wx, wh, b = rnn_params(d, h, 4, seed=3)
    hw = [host(a) for a in (wx, wh, b)]
    c0 = rand(n, h, seed=11)
    for c_init, call in ((numpy.zeros((n, h)), lambda: L.lstm_temporal(x, np.array(h0), wx, wh, b)),
                         (c0, lambda: L.lstm(x, np.array(h0), wx, wh, b, c0=np.array(c0)))):
        hh, cc, want = h0, c_init, []
        for s in range(t):
            hh, cc = ref_lstm_step(xh[:, s], hh, cc, *hw)
            want.append(hh)
        close(call(), numpy.stack(want, 1))
    nh, nc = L.lstm_step(x[:, 0], np.array(h0), np.array(c0), wx, wh, b)
    rh, rc = ref_lstm_step(xh[:, 0], h0, c0, *hw)
    close(nh, rh)
    close(nc, rc)
    gp = rnn_params(d, h, 2, seed=5) + rnn_params(d, h, 1, seed=8)
    gh = [host(a) for a in gp]
    hh, want = h0, []
    for s in range(t):
        hh = ref_gru_step(xh[:, s], hh, *gh)
        want.append(hh)
    close(L.gru(x, np.array(h0), *gp), numpy.stack(want, 1))
    close(L.gru_step(x[:, 0], np.array(h0), *gp), want[0])


@pytest.mark.parametrize("n,t,d,h", [(2, 3, 3, 2), (1, 2, 2, 3)])
def test_recurrent_gradients_order_2(n, t, d, h):
    x, h0 = np.array(rand(n, t, d, seed=1)), np.array(rand(n, h, seed=2))
    check_grads(L.rnn, x, h0, *rnn_params(d, h, 1), order=2)
    check_grads(L.lstm, x, h0, *rnn_params(d, h, 4), np.array(rand(n, h, seed=3)), order=2)
    check_grads(L.gru, x, h0, *rnn_params(d, h, 2), *rnn_params(d, h, 1, seed=4), order=2)
    check_grads(lambda *a: L.lstm_step(*a)[1], x[:, 0], h0, np.array(rand(n, h, seed=3)),
                *rnn_params(d, h, 4), order=2)


def test_embedding():
    wh = rand(5, 3)
    idx = numpy.array([[0, 4], [4, 2]])
    close(L.embedding(idx, np.array(wh)), wh[idx])
    g = np.grad(lambda w: np.sum(L.embedding(idx, w)))(np.array(wh))
    numpy.testing.assert_array_equal(host(g), numpy.array([1, 0, 1, 0, 2])[:, None]
                                     * numpy.ones(3))
    check_grads(lambda w: L.embedding(np.array(idx), w), np.array(wh), order=2)


# ---------------------------------------------------------------- a small network
def test_two_layer_net_gradient_matches_hand_written_backward():
    rng = numpy.random.default_rng(0)
    xh, yh = rng.standard_normal((6, 2, 2)), rng.integers(0, 3, 6)
    p = {"w1": rng.standard_normal((4, 5)), "b1": rng.standard_normal(5),
         "w2": rng.standard_normal((5, 3)), "b2": rng.standard_normal(3)}

    def loss(params, x, y):
        hidden = L.relu(L.affine(x, params["w1"], params["b1"]))
        return L.softmax_loss(L.affine(hidden, params["w2"], params["b2"]), y)

    grads, value = np.grad_and_loss(loss)({k: np.array(v) for k, v in p.items()},
                                          np.array(xh), yh)
    x2 = xh.reshape(6, 4)
    pre = x2 @ p["w1"] + p["b1"]
    hid = numpy.maximum(pre, 0)
    probs = ref_softmax(hid @ p["w2"] + p["b2"])
    assert float(value) == pytest.approx(-numpy.log(probs[numpy.arange(6), yh]).mean())
    dscores = (probs - onehot(yh, 3)) / 6
    dhid = dscores @ p["w2"].T * (pre > 0)
    want = {"w2": hid.T @ dscores, "b2": dscores.sum(0), "w1": x2.T @ dhid, "b1": dhid.sum(0)}
    for k, v in want.items():
        numpy.testing.assert_allclose(host(grads[k]), v, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- errors
X24 = numpy.zeros((2, 4))


@pytest.mark.parametrize("call,exc,message", [
    (lambda: L.affine(X24, numpy.zeros((5, 3)), numpy.zeros(3)), ValueError,
     r"affine: w has shape \(5, 3\) but x has 4 features per sample \(x shape \(2, 4\)\); "
     r"expected w of shape \(4, M\)"),
    (lambda: L.affine(X24, numpy.zeros((4, 3)), numpy.zeros(2)), ValueError,
     r"affine: b has shape \(2,\), which does not broadcast to the output shape \(2, 3\).*expected b of shape \(3,\)"),
    (lambda: L.affine(numpy.zeros(4), numpy.zeros((4, 3)), numpy.zeros(3)), ValueError,
     r"affine: x has shape \(4,\)"),
    (lambda: L.softmax_loss(X24, numpy.array([0.5, 1.0])), ValueError,
     r"softmax_loss: label has dtype float64 and values that are not whole numbers"),
    (lambda: L.softmax_loss(X24, numpy.array([0, 4])), ValueError,
     r"softmax_loss: label has values in \[0, 4\]; expected class indices in \[0, 4\)"),
    (lambda: L.svm_loss(X24, numpy.array([-1, 0])), ValueError,
     r"svm_loss: label has values in \[-1, 0\]"),
    (lambda: L.softmax_loss(X24, numpy.array([0, 1, 2])), ValueError,
     r"softmax_loss: label has shape \(3,\); expected integer class indices of shape \(2,\)"),
    (lambda: L.softmax_loss(X24, numpy.zeros((2, 3))), TypeError,
     r"softmax_loss: label has shape \(2, 3\)"),
    (lambda: L.softmax_loss(numpy.zeros(4), numpy.array([0])), ValueError,
     r"softmax_loss: x has shape \(4,\); expected a 2-d array of scores \(N, C\)"),
    (lambda: L.temporal_softmax_loss(numpy.zeros((2, 3, 4)), numpy.zeros((2, 3), int),
                                     numpy.ones((3, 2))), ValueError,
     r"temporal_softmax_loss: mask has shape \(3, 2\) but x has shape \(2, 3, 4\)"),
    (lambda: L.temporal_softmax_loss(numpy.zeros((2, 3, 4)), numpy.full((2, 3), 4),
                                     numpy.ones((2, 3))), ValueError,
     r"temporal_softmax_loss: y has values in \[4, 4\]; expected class indices in \[0, 4\)"),
    (lambda: L.l2_loss(X24, numpy.zeros(2)), ValueError,
     r"l2_loss: label has shape \(2,\) but x has shape \(2, 4\); expected label of shape \(2, 4\)"),
    (lambda: L.l2_loss(X24, numpy.array([0, 9])), ValueError,
     r"l2_loss: label has values in \[0, 9\]"),
    (lambda: L.mse(X24, numpy.zeros((2, 1))), ValueError,
     r"mse: label has shape \(2, 1\) but x has shape \(2, 4\)"),
    (lambda: L.conv2d(numpy.zeros((1, 3, 5, 5)), numpy.zeros((4, 2, 3, 3))), ValueError,
     r"conv2d: w has shape \(4, 2, 3, 3\) but x has shape \(1, 3, 5, 5\) and groups=1"),
    (lambda: L.conv2d(numpy.zeros((1, 3, 5, 5)), numpy.zeros((4, 3, 3, 3)), numpy.zeros(3)),
     ValueError, r"conv2d: b has shape \(3,\); expected \(4,\)"),
    (lambda: L.conv2d(numpy.zeros((3, 5, 5)), numpy.zeros((4, 3, 3, 3))), ValueError,
     r"conv2d: x has shape \(3, 5, 5\); expected a 4-d \(N, C, H, W\) array"),
    (lambda: L.conv2d(numpy.zeros((1, 3, 2, 2)), numpy.zeros((4, 3, 3, 3))), ValueError,
     r"conv2d: input of spatial size \(2, 2\) is too small"),
    (lambda: L.conv2d(numpy.zeros((1, 3, 5, 5)), numpy.zeros((4, 3, 3, 3)), stride=0),
     ValueError, r"conv2d: stride must be at least 1"),
    (lambda: L.conv2d(numpy.zeros((1, 3, 5, 5)), numpy.zeros((4, 3, 3, 3)), pad=(1, 1, 1)),
     TypeError, r"conv2d: pad must be an int or a pair of ints"),
    (lambda: L.max_pool(numpy.zeros((1, 1, 4, 4)), 2, pad=2), ValueError,
     r"max_pool: pad \(2, 2\) must be smaller than pool_size \(2, 2\)"),
    (lambda: L.avg_pool(numpy.zeros((1, 1, 2, 2)), 3), ValueError,
     r"avg_pool: input of spatial size \(2, 2\) is too small"),
    (lambda: L.batchnorm(X24, numpy.ones(3), numpy.ones(4)), ValueError,
     r"batchnorm: gamma has shape \(3,\) but x has shape \(2, 4\); expected gamma of shape \(4,\)"),
    (lambda: L.batchnorm(X24, numpy.ones(4), numpy.ones(4), mode="test"), ValueError,
     r"batchnorm: mode='test' needs running_mean and running_var"),
    (lambda: L.layernorm(X24, numpy.ones(4), numpy.ones(2)), ValueError,
     r"layernorm: beta has shape \(2,\) but x has shape \(2, 4\)"),
    (lambda: L.dropout(X24, 1.5), ValueError, r"dropout: prob must be in \[0, 1\], got 1.5"),
    (lambda: L.embedding(numpy.array([0.0]), numpy.zeros((3, 2))), TypeError,
     r"embedding: indices has dtype float64; expected integer row indices"),
    (lambda: L.embedding(numpy.array([3]), numpy.zeros((3, 2))), ValueError,
     r"embedding: indices has values in \[3, 3\]; expected row indices in \[0, 3\)"),
    (lambda: L.rnn(numpy.zeros((2, 3, 4)), numpy.zeros((3, 5)), numpy.zeros((4, 5)),
                   numpy.zeros((5, 5)), numpy.zeros(5)), ValueError,
     r"rnn: h0 has shape \(3, 5\) but x has shape \(2, 3, 4\); expected h0 of shape \(2, H\)"),
    (lambda: L.lstm(numpy.zeros((2, 3, 4)), numpy.zeros((2, 5)), numpy.zeros((4, 5)),
                    numpy.zeros((5, 20)), numpy.zeros(20)), ValueError,
     r"lstm: Wx has shape \(4, 5\) but .*expected Wx of shape \(4, 20\)"),
    (lambda: L.gru(numpy.zeros((2, 3, 4)), numpy.zeros((2, 5)), numpy.zeros((4, 10)),
                   numpy.zeros((5, 10)), numpy.zeros(10), numpy.zeros((4, 5)),
                   numpy.zeros((5, 5)), numpy.zeros(4)), ValueError,
     r"gru: bh has shape \(4,\) but h0 has shape \(2, 5\); expected bh of shape \(5,\)"),
])
def test_errors_name_the_layer_parameter_and_shapes(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


# ---------------------------------------------------------------- on a device
def test_layers_run_on_the_standin_gpu_without_host_round_trips():
    rng = numpy.random.default_rng(0)
    values = [rng.standard_normal(s) for s in ((4, 3, 3, 3), (4,), (2, 3, 6, 6))]
    y = numpy.array([0, 3])

    def loss(w, b, x, labels):
        h = L.max_pool(L.relu(L.conv2d(x, w, b, pad=1)), 3, 2, 1)
        h = L.dropout(L.avg_pool(h, 2), 0.3, seed=1)
        out, _, _ = L.batchnorm(h, np.ones(4), np.zeros(4))
        return L.softmax_loss(L.affine(out, np.eye(4), np.zeros(4)), labels)

    want_g, want = np.grad_and_loss(loss, argnum=(0, 1, 2))(*map(np.array, values), y)
    # on the host before the stand-in replaces the suite's device (MINPY_TEST_DEVICE=cupy:
    # these live on the real GPU, which the stand-in cannot read)
    want, want_g = host(want), [host(w) for w in want_g]
    with installed():
        args = [np.array(a).copyto(np.gpu(0)) for a in values + [y]]
        grads, value = np.grad_and_loss(loss, argnum=(0, 1, 2))(*args)
        assert value.context == np.gpu(0) and all(g.context == np.gpu(0) for g in grads)
        # device -> host: only the label range check (two integers) and tiny flags
        assert np.dispatch.stats()["bytes"]["d2h"] <= 32
        numpy.testing.assert_allclose(value.asnumpy(), want, rtol=1e-12)
        for g, w in zip(grads, want_g):   # the host runs the numba kernels: other sum orders
            numpy.testing.assert_allclose(g.asnumpy(), w, rtol=1e-10, atol=1e-15)
