"""MinPy's own unit tests (tests/unittest/test_layers.py) as MinPy wrote them: the
layer functions and ``core.Function`` accept what MinPy accepted -- a bias of shape
(N, 1), gamma/beta of shape (1, D), float class labels, float64 inputs to a float32
symbol, arguments left out of a ``Function`` call -- with gradients checked."""
import numpy as np
import pytest

import minpy.numpy as mp
import minpy.symbol as mxsym              # MinPy: import mxnet as mx; mx.sym
from minpy import core
import minpy.nn.layers as layers
from minpy.testing import check_grads

rng = np.random.RandomState(42)


def test_affine_with_a_bias_that_broadcasts():
    # MinPy's test_affine: b of shape (20, 1); MinPy computed x.dot(w) + b
    x = rng.randn(20, 10)
    b = rng.randn(20, 1)
    fake_y = np.zeros([20, 5])
    fake_y[:, 0] = 1
    w = rng.randn(10, 5)
    out = layers.affine(x, w, b)
    np.testing.assert_allclose(out.asnumpy(), x.dot(w) + b, rtol=1e-12)
    check_grads(lambda w: layers.softmax_loss(layers.affine(x, w, b), fake_y), w, order=1)
    check_grads(lambda b: layers.softmax_loss(layers.affine(x, w, b), fake_y), b, order=1)
    for bias in (rng.randn(1, 5), rng.randn(5), np.float64(0.5), rng.randn(20, 5)):
        check_grads(lambda b: mp.sum(layers.affine(x, w, b) ** 2), bias, order=1)
        np.testing.assert_allclose(layers.affine(x, w, bias).asnumpy(), x.dot(w) + bias,
                                   rtol=1e-12)
    for bad in ((20, 2), (6,), (3, 20, 5), (5, 1)):
        with pytest.raises(ValueError, match=r"affine: b has shape .* does not broadcast"):
            layers.affine(x, w, np.zeros(bad))


def test_batchnorm_with_gamma_and_beta_of_shape_1_d():
    # MinPy's test_batchnorm: gamma, beta of shape (1, 40)
    x = rng.randn(20, 40)
    gamma = rng.randn(1, 40)
    beta = rng.randn(1, 40)
    fake_y = np.zeros([20, 40])
    fake_y[:, 0] = 1
    y, _, _ = layers.batchnorm(x, gamma, beta)
    y_flat, _, _ = layers.batchnorm(x, gamma.ravel(), beta.ravel())
    np.testing.assert_allclose(y.asnumpy(), y_flat.asnumpy(), rtol=1e-12)
    check_grads(lambda g: layers.softmax_loss(layers.batchnorm(x, g, beta)[0], fake_y),
                gamma, order=1)
    check_grads(lambda b: layers.softmax_loss(layers.batchnorm(x, gamma, b)[0], fake_y),
                beta, order=1)
    with pytest.raises(ValueError, match="batchnorm: gamma has shape"):
        layers.batchnorm(x, rng.randn(2, 20), beta)
    with pytest.raises(ValueError, match="batchnorm: gamma has shape"):
        layers.batchnorm(rng.randn(2, 3, 4, 4), np.ones((1, 1)), np.zeros(3))


def test_softmax_loss_with_float_class_labels():
    # MinPy's test_softmax: lbl = np.zeros([20]) (float64 class indices)
    lbl = np.zeros([20])
    x = rng.randn(20, 10)
    want = layers.softmax_loss(x, lbl.astype(np.int64)).asnumpy()
    np.testing.assert_allclose(layers.softmax_loss(x, lbl).asnumpy(), want, rtol=1e-12)
    check_grads(lambda x: layers.softmax_loss(x, lbl), x, order=1)
    with pytest.raises(ValueError, match="softmax_loss: label .* not whole numbers"):
        layers.softmax_loss(x, lbl + 0.5)
    with pytest.raises(ValueError, match="softmax_loss: label has values in"):
        layers.softmax_loss(x, lbl + 10)


def test_mxnet_affine_leaves_the_bias_at_its_bound_value():
    # MinPy's test_mxnet_affine: float64 x and weights into a float32 symbol, fc_bias
    # left out of the call (MinPy's executor kept it at its bound zeros)
    xshape = (10, 40)
    fake_y = np.zeros([10, 20])
    fake_y[:, 0] = 1
    x = rng.randn(*xshape)
    inputs = mxsym.Variable(name='x')
    fc = mxsym.FullyConnected(name='fc', data=inputs, num_hidden=20)
    f = core.Function(fc, {'x': xshape})
    weights = rng.randn(20, 40) * 0.01
    out = f(x=x, fc_weight=weights)
    assert out.dtype == np.float32
    want = x.astype(np.float32) @ weights.astype(np.float32).T
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)

    def check_fn(weights):
        return layers.softmax_loss(f(x=x, fc_weight=weights), fake_y)
    grad = core.grad(check_fn)(weights)
    w32 = weights.astype(np.float32)
    z = x.astype(np.float32) @ w32.T
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(grad.asnumpy(), ((p - fake_y) / 10).T @ x, rtol=1e-3,
                               atol=1e-6)


def test_mxnet_softmax_with_float64_labels():
    # MinPy's test_mxnet_softmax: float64 x, labels, weights; fc_bias left out
    xshape = (10, 40)
    fake_y = np.zeros([10, ])
    x = rng.randn(*xshape)
    net = mxsym.Variable(name='x')
    net = mxsym.FullyConnected(net, name='fc', num_hidden=20)
    net = mxsym.SoftmaxOutput(net, name='softmax', normalization='batch')
    f = core.Function(net, {'x': xshape, 'softmax_label': fake_y.shape})
    weights = rng.randn(20, 40) * 0.01

    def check_fn(weights):
        return layers.softmax_cross_entropy(
            f(x=x, softmax_label=fake_y, fc_weight=weights), fake_y)
    loss = check_fn(weights)
    z = x @ weights.T
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(float(loss), -np.log(p[:, 0]).mean(), rtol=1e-5)
    grad = core.grad(check_fn)(weights)
    assert grad.shape == (20, 40) and np.all(np.isfinite(grad.asnumpy()))
    # prediction without the label: MinPy's executor kept the label at its bound zeros
    np.testing.assert_allclose(f(x=x, fc_weight=weights).asnumpy(), p, rtol=1e-4)


@pytest.mark.parametrize("bshape", [(1, 6), (3, 6), (3, 1), ()])
def test_rnn_temporal_adds_a_broadcasting_bias_at_every_step(bshape):
    # MinPy's rnn_temporal added b at each rnn_step: np.tanh(x.dot(Wx) + h.dot(Wh) + b)
    N, T, D, H = 3, 4, 5, 6
    x, h0 = rng.randn(N, T, D), rng.randn(N, H)
    Wx, Wh, b = rng.randn(D, H) * 0.3, rng.randn(H, H) * 0.3, rng.randn(*bshape)
    h, want = h0, []
    for t in range(T):
        h = np.tanh(x[:, t, :].dot(Wx) + h.dot(Wh) + b)
        want.append(h)
    got = layers.rnn_temporal(x, h0, Wx, Wh, b)
    np.testing.assert_allclose(got.asnumpy(), np.stack(want, axis=1), rtol=1e-10)
    check_grads(lambda b: mp.sum(layers.rnn_temporal(x, h0, Wx, Wh, b) ** 2), b, order=1)


def test_recurrent_bias_that_does_not_broadcast_is_an_error():
    x, h0 = np.zeros((3, 4, 5)), np.zeros((3, 6))
    for bad in ((4, 6), (3, 4, 6), (7,)):
        with pytest.raises(ValueError, match=r"rnn: b has shape .* broadcasts to \(3, 6\)"):
            layers.rnn_temporal(x, h0, np.zeros((5, 6)), np.zeros((6, 6)), np.zeros(bad))
    with pytest.raises(ValueError, match=r"lstm: b has shape \(3, 6\)"):
        layers.lstm_temporal(x, h0, np.zeros((5, 24)), np.zeros((6, 24)), np.zeros((3, 6)))
