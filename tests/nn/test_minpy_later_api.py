"""MinPy's later model API (dmlc/minpy master, 2017): ``Model`` subclasses with layers
as attributes, ``model(data, labels=...)``, ``model.backward()``, ``Updater``.

The models follow MinPy's examples line for line in their use of the API
(examples/nn/rnn_on_mnist.py, resnet.py, stochastic_depth_network.py,
symbolic_resnet.py, and the nn_gan / model_builder_gtc branches' gan/dcgan_model.py
and gtc_benchmark/naive_lstm.py; their two star imports, ``from minpy.nn.model_builder import *``
then ``from minpy.nn.modules import *``, are checked to give these names in
test_model_builder_model_is_both_kinds); only the data differ (the
bundled 8x8 digits, or small separable sets, for MNIST and CIFAR-10) and the sizes.
Gradients are checked against the same network written in plain minpy and
against finite differences.
"""
import random

import numpy
import pytest

import minpy
import minpy.numpy as np
import minpy.symbol as mxsym            # MinPy's examples: from mxnet.symbol import *
from minpy.nn import layers, model_builder as builder, modular
from minpy.nn.io import NDArrayIter
from minpy.nn.modules import (Model, Updater, Sequential, FullyConnected, ReLU, RNN, LSTM,
                              BatchNorm, Convolution, Pooling, BatchFlatten, Dropout, Variable,
                              Layer, Add, LeakyReLU, DeConvolution, Tanh, FullyConnectedND)
from minpy.nn.solver import Solver
from _digits import digits
from _strategies import gpu_tolerance, on_real_gpu


def separable(n=96, d=6, classes=3, seed=0):
    """Gaussian clusters around one-hot centres (3 apart): linearly separable."""
    rng = numpy.random.RandomState(seed)
    y = rng.randint(0, classes, n)
    X = rng.randn(n, d) + 3.0 * numpy.eye(classes, d)[y]
    return X.astype(numpy.float32), y


def unpack_batch(batch):
    return batch.data[0], batch.label[0]


# ------------------------------------------------------------------ examples/nn/rnn_on_mnist.py
class RNNModel(Model):
    def __init__(self, hidden_state_size, activation='tanh'):
        super(RNNModel, self).__init__(loss='softmax_loss')

        self._rnn = RNN(hidden_state_size, activation)
        self._linear = FullyConnected(num_hidden=10)

    def forward(self, data, mode='training'):
        N, length, D = data.shape

        hidden = None

        for i in range(length):
            patch = data[:, i, :]
            hidden = self._rnn(patch, hidden)

        return self._linear(hidden)


class LSTMModel(Model):
    def __init__(self, hidden_state_size, activation='tanh'):
        super(LSTMModel, self).__init__(loss='softmax_loss')

        self._rnn = LSTM(hidden_state_size, activation)
        self._linear = FullyConnected(num_hidden=10)

    def forward(self, data, mode='training'):
        N, length, D = data.shape

        hidden, cell = None, None

        for i in range(length):
            patch = data[:, i, :]
            hidden, cell = self._rnn(patch, hidden, cell)

        return self._linear(hidden)


def train_rnn_on_digits(model, epochs, learning_rate):
    np.random.seed(0)
    data = digits((8, 8))              # 8 rows of 8 pixels: a sequence of length 8
    train_data_iter = NDArrayIter(data['X_train'], data['y_train'], 64, shuffle=True)
    test_data_iter = NDArrayIter(data['X_test'], data['y_test'], 64, shuffle=False)

    updater = Updater(model, update_rule='rmsprop', learning_rate=learning_rate)

    losses = []
    for epoch_number in range(epochs):
        train_data_iter.reset()
        for iteration, batch in enumerate(train_data_iter):
            data, labels = unpack_batch(batch)
            grad_dict, loss = model.grad_and_loss(data, labels)
            updater(grad_dict)
            losses.append(loss)

    test_data_iter.reset()
    errors, samples = 0, 0
    for batch in test_data_iter:
        data, labels = unpack_batch(batch)
        scores = model.forward(data, 'inference')
        predictions = np.argmax(scores, axis=1)
        errors += np.count_nonzero(predictions - labels)
        samples += data.shape[0]
    return losses, errors / float(samples)


def test_rnn_on_digits():
    losses, error = train_rnn_on_digits(RNNModel(32), epochs=3, learning_rate=0.005)
    assert isinstance(losses[0], float)
    assert numpy.mean(losses[-10:]) < 0.5 < losses[0]
    assert error < 0.12


def test_lstm_on_digits():
    losses, error = train_rnn_on_digits(LSTMModel(32), epochs=3, learning_rate=0.005)
    assert numpy.mean(losses[-10:]) < 0.6 < losses[0]
    assert error < 0.15


def test_rnn_gradient_matches_plain_minpy():
    """The RNN model's gradients equal those of the same recurrence written in minpy."""
    X = numpy.random.RandomState(1).randn(5, 3, 4).astype(numpy.float32)
    y = numpy.array([0, 1, 2, 3, 4])
    model = RNNModel(6)
    loss = model(X, labels=y)
    grads = model.backward()
    rnn, linear = model._rnn, model._linear
    wx, wh, bh = rnn._param_names                   # data's FC, then HH's weight and bias
    wo, bo = linear._param_names
    assert (wh, bh) == (rnn.HH_weight, rnn.HH_bias)
    names = {'Wx': wx, 'Wh': wh, 'bh': bh, 'Wo': wo, 'bo': bo}
    assert set(names.values()) == set(grads) == set(model.params)

    def plain(p):
        h = np.zeros((5, 6), dtype=np.float32)
        for i in range(3):
            h = np.tanh(np.dot(X[:, i, :], p['Wx'].T) + np.dot(h, p['Wh'].T) + p['bh'])
        return layers.softmax_loss(np.dot(h, p['Wo'].T) + p['bo'], y)
    params = {k: model.params[v] for k, v in names.items()}
    expected, expected_loss = minpy.grad_and_loss(plain)(params)
    numpy.testing.assert_allclose(float(loss), float(expected_loss), rtol=1e-5)
    for k, v in names.items():
        numpy.testing.assert_allclose(grads[v].asnumpy(), expected[k].asnumpy(),
                                      rtol=1e-4, atol=1e-6, err_msg=k)


# ------------------------------------------------------------------ examples/nn/resnet.py
class ResNet(Model):
    def __init__(self, block_number, filter_numbers):
        super(ResNet, self).__init__(loss='softmax_loss')

        f0, f1, f2 = filter_numbers

        # register blocks reducing size of feature maps
        self._shrinking_blocks = (
            Convolution(
                num_filter = f0,
                kernel     = (3, 3),
                stride     = (1, 1),
                pad        = (1, 1),
                no_bias    = True,
            ),
            self._shrinking_block(f1),
            self._shrinking_block(f2),
        )

        # register blocks preserving size of feature maps
        self._residual_blocks = tuple(
            tuple(
                ResNet._residual_block(f) \
                  for i in range(block_number)
            ) for f in filter_numbers
        )

        # compute class scores from feature maps
        self._to_scores = Sequential(
            BatchNorm(fix_gamma=False),
            ReLU(),
            Pooling(pool_type='avg', kernel=(2, 2), stride=(1, 1)),   # MinPy: (8, 8) on 32x32
            BatchFlatten(),
            FullyConnected(num_hidden=10),
        )

    def forward(self, data, mode='training'):
        if mode == 'training': self.training()
        elif mode == 'inference': self.inference()

        for shrink, residual in zip(self._shrinking_blocks, self._residual_blocks):
            data = shrink(data)
            for r in residual:
                data = data + r(data)

        return self._to_scores(data)

    @staticmethod
    def _convolution(**kwargs):
        defaults = {'kernel' : (3, 3), 'stride' : (1, 1), 'pad' : (1, 1), 'no_bias' : True}
        defaults.update(kwargs)
        return Sequential(
            BatchNorm(fix_gamma=False),
            ReLU(),
            Convolution(**defaults),
        )

    @staticmethod
    def _residual_block(f):
        residual = Sequential(
            ResNet._convolution(num_filter=f),
            ResNet._convolution(num_filter=f),
        )
        return residual

    @staticmethod
    def _shrinking_block(f):
        return Sequential(
            ResNet._convolution(num_filter=f, stride=(2, 2)),
            ResNet._convolution(num_filter=f),
        ) + ResNet._convolution(num_filter=f, kernel=(1, 1), stride=(2, 2), pad=(0, 0))


def test_resnet_on_digits():
    data = digits((1, 8, 8))
    train_data_iter = NDArrayIter(data=data['X_train'], label=data['y_train'],
                                  batch_size=64, shuffle=True)
    val_data_iter = NDArrayIter(data=data['X_test'], label=data['y_test'], batch_size=64,
                                shuffle=False)
    np.random.seed(0)
    model = ResNet(1, (8, 8, 8))
    # MinPy's example: learning_rate=0.1 (and 'momentem', which sgd ignores, as MinPy's did)
    updater = Updater(model, update_rule='sgd', learning_rate=0.3, momentem=0.9)

    losses = []
    for epoch_number in range(5):
        train_data_iter.reset()
        for iteration, batch in enumerate(train_data_iter):
            data, labels = unpack_batch(batch)
            loss = model(data, labels=labels)
            grad_dict = model.backward()
            updater(grad_dict)
            losses.append(float(loss))
        if epoch_number == 2:
            updater.learning_rate = updater.learning_rate * 0.5
    assert updater.learning_rate == pytest.approx(0.15)

    val_data_iter.reset()
    errors, samples = 0, 0
    for batch in val_data_iter:
        data, labels = unpack_batch(batch)
        scores = model.forward(data, 'inference')
        predictions = np.argmax(scores, axis=1)
        errors += np.count_nonzero(predictions - labels)
        samples += len(data)
    assert numpy.mean(losses[-8:]) < 0.3 < 2.0 < losses[0]
    assert errors / float(samples) < 0.08
    # BatchNorm's moving statistics: model.aux_params, updated by training calls only
    assert len(model.aux_params) == 2 * 13 and all(
        n.endswith(('_moving_mean', '_moving_var')) for n in model.aux_params)
    before = {k: v.asnumpy().copy() for k, v in model.aux_params.items()}
    a = model.forward(data, 'inference').asnumpy()
    numpy.testing.assert_array_equal(a, model.forward(data, 'inference').asnumpy())
    for k, v in model.aux_params.items():
        numpy.testing.assert_array_equal(v.asnumpy(), before[k])


class BNNet(Model):
    def __init__(self):
        super(BNNet, self).__init__(loss='softmax_loss')
        self._net = Sequential(BatchNorm(fix_gamma=False), FullyConnected(num_hidden=3))

    def forward(self, data, mode='training'):
        return self._net(data)


def test_first_call_updates_moving_statistics_once():
    """The first call creates the parameters and runs the forward again with them
    traced; BatchNorm's moving statistics are updated once, as one MXNet step."""
    X, y = separable(16, 4)
    model = BNNet()
    model(X, labels=y)
    bn = model._net[0]
    mean = model.aux_params[bn._aux_param_names[0]].asnumpy()
    var = model.aux_params[bn._aux_param_names[1]].asnumpy()
    numpy.testing.assert_allclose(mean, 0.1 * X.mean(axis=0), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(var, 0.9 + 0.1 * X.var(axis=0), rtol=1e-4)
    model(X, labels=y)                          # a second step: one more update
    numpy.testing.assert_allclose(model.aux_params[bn._aux_param_names[0]].asnumpy(),
                                  0.19 * X.mean(axis=0), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ stochastic_depth_network.py
class StochasticDepthNetwork(Model):
    def __init__(self, block_number, p):
        super(StochasticDepthNetwork, self).__init__(loss='softmax_loss')
        self._block_number = block_number
        self._p = p
        self._input = FullyConnected(num_hidden=8)
        self._residual_blocks = tuple(
            Sequential(ReLU(), FullyConnected(num_hidden=8)) for i in range(block_number))
        self._to_scores = FullyConnected(num_hidden=3)

    def forward(self, data, mode='training'):
        if mode == 'training': self.training()       # MinPy: "mode is 'training'"
        elif mode == 'inference': self.inference()
        data = self._input(data)
        for index, r in enumerate(self._residual_blocks):
            p_block = 1 - (index + 1.0) / self._block_number * (1 - self._p)
            if mode != 'training' or random.random() < p_block:
                data = data + r(data)
        return self._to_scores(data)


def test_stochastic_depth_layers_made_when_first_reached(monkeypatch):
    """A block skipped by the first calls gets its parameters when first reached, and
    that call's gradients include them (checked by finite differences)."""
    X, y = separable(24, 6)
    model = StochasticDepthNetwork(3, 0.1)
    monkeypatch.setattr(random, 'random', lambda: 0.95)    # every block skipped at first
    for step in range(2):
        model(X, labels=y)
        grads = model.backward()
        assert set(grads) == set(model.params)
        assert len(model.params) == 4                      # the input and score layers
    last = model._residual_blocks[-1][1]
    monkeypatch.setattr(random, 'random', lambda: 0.0)     # every block taken from now on
    loss = model(X, labels=y)                              # makes the last block's params
    grads = model.backward()
    assert len(model.params) == 2 + 2 * 3 + 2 and set(grads) == set(model.params)
    name = last._param_names[0]
    w = model.params[name]
    assert float(np.max(np.abs(grads[name]))) > 1e-4
    assert float(model(X, labels=y)) == pytest.approx(float(loss), rel=1e-6)

    def loss_at(idx, delta):
        value = w.asnumpy().astype(numpy.float64)
        value[idx] += delta
        model.params[name] = np.array(value.astype(numpy.float32))
        try:
            return float(model(X, labels=y))
        finally:
            model.params[name] = w
    eps = 1e-2
    for idx in [(0, 0), (3, 5), (7, 2)]:
        numeric = (loss_at(idx, eps) - loss_at(idx, -eps)) / (2 * eps)
        assert numeric == pytest.approx(float(grads[name].asnumpy()[idx]), rel=3e-2, abs=2e-4)


# ------------------------------------------------------------------ examples/nn/symbolic_resnet.py
def test_symbolic_model_imported_from_model_builder():
    from minpy.nn.model_builder import Model, Updater
    from minpy.nn.modules import Symbolic

    class SymbolicNet(Model):
        def __init__(self):
            super(SymbolicNet, self).__init__(loss='softmax_loss')
            network = mxsym.Variable('data')
            network = mxsym.FullyConnected(data=network, num_hidden=16)
            network = mxsym.BatchNorm(data=network, fix_gamma=False)
            network = mxsym.Activation(data=network, act_type='relu')
            network = mxsym.FullyConnected(data=network, num_hidden=3)
            self._symbolic = Symbolic(network)

        def forward(self, data, mode='training'):
            if mode == 'training': self.training()
            elif mode == 'inference': self.inference()
            return self._symbolic(data=data)

    X, y = separable(96, 6)
    model = SymbolicNet()
    assert isinstance(model, modular.Model) and isinstance(model, builder.Model)
    updater = Updater(model, update_rule='sgd', learning_rate=0.5, momentem=0.9)
    first = float(model(X, labels=y))
    for _ in range(40):
        loss = model(X, labels=y)
        updater(model.backward())
    assert float(loss) < 0.1 < first
    scores = model.forward(X, 'inference')
    assert (numpy.argmax(scores.asnumpy(), 1) == y).mean() > 0.95
    assert len(model.aux_params) == 2
    with pytest.raises(TypeError, match="forward_kwargs .* must be a dict"):
        model(X, y)                      # MinPy's symbolic_resnet.py passed labels here


# ------------------------------------------------------------------ gradients and Updater
class MLP(Model):
    def __init__(self, hidden=8, classes=3):
        super(MLP, self).__init__(loss='softmax_loss')
        self._affine0 = FullyConnected(num_hidden=hidden)
        self._affine1 = FullyConnected(num_hidden=classes)

    def forward(self, data, mode='training'):
        return self._affine1(ReLU()(self._affine0(data)))


def test_gradients_equal_plain_minpy():
    X, y = separable(10, 5)
    model = MLP()
    loss = model(X, labels=y)
    grads = model.backward()
    w0, b0 = model._affine0._param_names
    w1, b1 = model._affine1._param_names
    assert model.params[w0].shape == (8, 5) and model.params[b1].shape == (3,)

    def plain(p):
        h = layers.relu(np.dot(X, p[w0].T) + p[b0])
        return layers.softmax_loss(np.dot(h, p[w1].T) + p[b1], y)
    expected, expected_loss = minpy.grad_and_loss(plain)(dict(model.params))
    assert float(loss) == pytest.approx(float(expected_loss), rel=1e-6)
    for k in model.params:
        numpy.testing.assert_allclose(grads[k].asnumpy(), expected[k].asnumpy(),
                                      rtol=1e-5, atol=1e-7)
    # grad_and_loss: the same, the loss as a float
    g2, l2 = model.grad_and_loss(X, y)
    assert isinstance(l2, float) and l2 == pytest.approx(float(loss), rel=1e-6)
    numpy.testing.assert_allclose(g2[w0].asnumpy(), grads[w0].asnumpy(), rtol=1e-6)
    # an upstream gradient scales them
    model(X, labels=y)
    g3 = model.backward(np.array(2.0, dtype=np.float32))
    numpy.testing.assert_allclose(g3[w1].asnumpy(), 2 * grads[w1].asnumpy(), rtol=1e-6)


def test_updater_runs_minpy_optim_rules():
    X, y = separable(10, 5)
    model = MLP()
    updater = Updater(model, update_rule='sgd_momentum', learning_rate=0.5, momentum=0.9)
    w0 = model._affine0._param_names[0]
    updater[w0].learning_rate = 0.25              # one parameter's own setting
    with pytest.raises(AttributeError, match="not one value shared"):
        updater.learning_rate
    assert updater.momentum == 0.9
    model(X, labels=y)
    before = {k: v.asnumpy().copy() for k, v in model.params.items()}
    grads = model.backward()
    updater(grads)
    for k, g in grads.items():
        lr = 0.25 if k == w0 else 0.5
        numpy.testing.assert_allclose(model.params[k].asnumpy(),
                                      before[k] - lr * g.asnumpy(), rtol=1e-5, atol=1e-7)
    # the velocity is kept per parameter: the second step adds 0.9 of the first
    model(X, labels=y)
    grads2 = model.backward()
    after1 = {k: v.asnumpy().copy() for k, v in model.params.items()}
    updater(grads2)
    k = model._affine1._param_names[0]
    v1 = -0.5 * grads[k].asnumpy()
    numpy.testing.assert_allclose(model.params[k].asnumpy(),
                                  after1[k] + 0.9 * v1 - 0.5 * grads2[k].asnumpy(),
                                  rtol=1e-4, atol=1e-6)


def test_updater_errors():
    X, y = separable(10, 5)
    model = MLP()
    model(X, labels=y)
    with pytest.raises(ValueError, match="update_rule 'unspecified'"):
        Updater(model)(model.backward())
    updater = Updater(model, update_rule='sgd')
    model.extra = FullyConnected(num_hidden=2)      # registered after the updater
    model.extra(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(KeyError, match="registered after this Updater"):
        updater({model.extra._param_names[0]: np.ones((2, 3))})
    with pytest.raises(TypeError, match="Updater: expected a minpy.nn.modules Model"):
        Updater(object())


# ------------------------------------------------------------------ layers and containers
class Scaled(Layer):
    """A customised layer as MinPy's docs describe: local names, param_shapes, forward."""
    _module_name = 'scaled'

    def __init__(self, name=None):
        super(Scaled, self).__init__(params=('weight', 'bias'), name=name)
        self._register_init_configs({'weight': {'init_rule': 'constant', 'value': 2.0}})

    def forward(self, X):
        return X * self._get_param(self.weight) + self._get_param(self.bias)

    def param_shapes(self, input_shape):
        return {self.weight: input_shape[1:], self.bias: input_shape[1:]}


class Composite(Model):
    def __init__(self):
        super(Composite, self).__init__()             # no loss: the outputs are differentiated
        self._layers = {'scaled': Scaled(), 'both': Add(Scaled(), Dropout(0.5))}
        self._v = Variable((4,))

    def forward(self, data, mode='training'):
        return self._layers['scaled'](data) * self._v() + self._layers['both'](data)


def test_custom_layer_variable_containers_and_modes():
    X = np.array(numpy.random.RandomState(0).rand(3, 4).astype(numpy.float32))
    model = Composite()
    s = model._layers['scaled']
    assert s.weight == s.name + '_weight' and s.name.startswith('scaled')
    model.inference()                                  # Dropout: the identity
    out = model(X)
    v = model.params[model._v.variable]
    numpy.testing.assert_allclose(model.params[s.weight].asnumpy(), 2.0)
    expected = (X * 2.0) * v + X * 2.0 + X
    numpy.testing.assert_allclose(out.asnumpy(), expected.asnumpy(), rtol=1e-6)
    grads = model.backward()                           # d sum(out): ones upstream
    numpy.testing.assert_allclose(grads[model._v.variable].asnumpy(),
                                  (2.0 * X).asnumpy().sum(axis=0), rtol=1e-5)
    numpy.testing.assert_allclose(grads[s.bias].asnumpy(), v.asnumpy() * 3, rtol=1e-5)
    model.training()                                   # Dropout drops about half
    dropped = model._layers['both']._right(np.ones((200, 4)))
    assert 0.3 < float(np.mean(dropped == 0)) < 0.7


def test_solver_and_predict_take_the_model():
    X, y = separable(128, 6)
    model = MLP()
    solver = Solver(model, NDArrayIter(X[:96], y[:96], batch_size=32, shuffle=True),
                    NDArrayIter(X[96:], y[96:], batch_size=32), num_epochs=4,
                    update_rule='sgd_momentum', optim_config={'learning_rate': 0.1,
                                                              'momentum': 0.9},
                    verbose=False, seed=0)
    solver.init()
    solver.train()
    assert solver.best_val_acc > 0.95
    scores = model.predict(X[96:])
    numpy.testing.assert_allclose(scores.asnumpy(),
                                  model.forward(X[96:], 'inference').asnumpy(), rtol=1e-6)


def test_errors_name_the_function():
    X, y = separable(4, 5)
    with pytest.raises(RuntimeError, match="must be assigned to an attribute of a Model"):
        FullyConnected(num_hidden=2)(np.ones((2, 3)))
    model = MLP()
    with pytest.raises(RuntimeError, match=r"MLP.backward: call the model first"):
        model.backward()
    with pytest.raises(NotImplementedError, match="attach_all=False"):
        model(X, labels=y, attach_all=False)
    with pytest.raises(NotImplementedError, match="MLP.add_param"):
        model.add_param('w', (2,))
    with pytest.raises(TypeError, match="cannot be an attribute of another Model"):
        model.sub = MLP()
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        Model(loss='hinge')
    other = MLP()
    with pytest.raises(ValueError, match="already belongs to another model"):
        other.stolen = model._affine0


def test_model_builder_model_is_both_kinds():
    """``model_builder.Model``: the tutorial's Model(container, loss, input_shape), and
    MinPy master's Model when called with a loss only or subclassed."""
    old = builder.Model(builder.Sequential(builder.Affine(3)), 'softmax', (4,))
    assert type(old) is builder.Model and not isinstance(old, modular.Model)
    new = builder.Model(loss='l2_loss')
    assert type(new) is modular.Model and isinstance(new, builder.Model)
    assert new.loss is layers.l2_loss

    class Subclassed(builder.Model):
        pass
    assert issubclass(Subclassed, modular.Model) and isinstance(Subclassed(), builder.Model)
    # MinPy's examples' two star imports: the later API's names win
    import minpy.nn.modules as modules
    names = {}
    exec("from minpy.nn.model_builder import *\nfrom minpy.nn.modules import *", names)
    for name in ('Model', 'Sequential', 'ReLU', 'Convolution', 'Add', 'Dropout', 'Updater'):
        assert names[name] is getattr(modules, name), name
    assert names['Sequential'] is modular.Sequential and names['Affine'] is builder.Affine


# ------------------------------------------------------------------ nn_gan / model_builder_gtc
class DiscriminativeNet(Model):                    # examples/gan/dcgan_model.py (nn_gan)
    def __init__(self, ndf, no_bias):
        super(DiscriminativeNet, self).__init__()
        self.layers = Sequential(
                self._convolution_leaky(kernel=(4,4), stride=(2,2), pad=(1,1), num_filter=ndf, no_bias=no_bias),
                self._convolution_bn_leaky(kernel=(4,4), stride=(2,2), pad=(1,1), num_filter=ndf*2, no_bias=no_bias),
                Convolution(kernel=(2,2), num_filter=1, no_bias=no_bias),
                BatchFlatten(),                     # MinPy's: Flatten() (the whole batch)
        )

    @staticmethod
    def _convolution_bn_leaky(**kwargs):
        defaults = {'kernel' : (3, 3), 'stride' : (1, 1), 'pad' : (1, 1), 'no_bias' : True}
        defaults.update(kwargs)
        leaky_defaults = {'slope': 0.2}
        return Sequential(
            Convolution(**defaults),
            BatchNorm(fix_gamma=False),
            LeakyReLU(**leaky_defaults),
        )

    @staticmethod
    def _convolution_leaky(**kwargs):
        defaults = {'kernel' : (3, 3), 'stride' : (1, 1), 'pad' : (1, 1), 'no_bias' : True}
        defaults.update(kwargs)
        return Sequential(Convolution(**defaults), LeakyReLU(slope=0.2))

    def forward(self, data, mode='training'):
        return self.layers(data)

    def loss(self, data, labels):                   # MinPy's: mx.nd.LogisticRegressionOutput
        return layers.sigmoid_cross_entropy(data, np.reshape(labels, data.shape))


class GenerativeNet(Model):
    def __init__(self, ngf, nc, no_bias):
        super(GenerativeNet, self).__init__()
        self.layers = Sequential (
                self._deconvolution_bn_relu(kernel=(4,4), num_filter=ngf*2, no_bias=no_bias),
                DeConvolution(kernel=(4,4), stride=(2,2), pad=(1,1), num_filter=nc, no_bias=no_bias),
                Tanh(),
        )

    @staticmethod
    def _deconvolution_bn_relu(**kwargs):
        defaults = {'kernel' : (3, 3), 'no_bias' : True}
        defaults.update(kwargs)
        return Sequential(DeConvolution(**defaults), BatchNorm(fix_gamma=False), ReLU())

    def forward(self, data, mode='training'):
        return self.layers(data)


def test_dcgan_discriminator_and_generator_layers():
    rng = numpy.random.RandomState(0)
    labels = rng.randint(0, 2, 32).astype(numpy.float32)
    images = rng.rand(32, 1, 8, 8).astype(numpy.float32) * 0.5
    images[labels == 1, :, 2:6, 2:6] += 1.0        # a bright square: the "real" images
    dnet = DiscriminativeNet(4, True)
    updater = Updater(dnet, update_rule='adam', learning_rate=0.02)
    losses = []
    for step in range(40):
        losses.append(float(dnet(images, labels=labels)))
        updater(dnet.backward())
    assert losses[-1] < 0.1 < 0.5 < losses[0]
    scores = dnet.forward(images, 'inference').asnumpy().reshape(-1)
    assert ((scores > 0) == (labels == 1)).mean() > 0.95

    gnet = GenerativeNet(4, 1, True)
    noise = np.array(rng.randn(5, 6, 1, 1).astype(numpy.float32))
    out = gnet(noise)                               # no loss: the images themselves
    assert out.shape == (5, 1, 8, 8) and float(np.max(np.abs(out))) <= 1.0
    grads = gnet.backward(np.ones_like(out))
    name = gnet.layers[1]._param_names[0]
    assert gnet.params[name].shape == (8, 1, 4, 4)  # Deconvolution: (in, out, kh, kw)
    w = gnet.params[name]

    def total(delta):
        value = w.asnumpy().astype(numpy.float64)
        value[0, 0, 1, 2] += delta
        gnet.params[name] = np.array(value.astype(numpy.float32))
        try:
            return float(np.sum(gnet(noise)))
        finally:
            gnet.params[name] = w
    numeric = (total(1e-2) - total(-1e-2)) / 2e-2
    assert numeric == pytest.approx(float(grads[name].asnumpy()[0, 0, 1, 2]), rel=2e-2, abs=1e-3)


def sigmoid(x):                                     # examples/gtc_benchmark/naive_lstm.py
    return .5 * (np.tanh(.5 * x) + 1)


class NaiveLSTM(Model):
    def __init__(self, num_hidden):
        super(NaiveLSTM, self).__init__(loss='softmax_loss')
        self._num_hidden = num_hidden
        self._xi = FullyConnectedND(num_hidden=num_hidden)
        self._xf = FullyConnectedND(num_hidden=num_hidden)
        self._xo = FullyConnectedND(num_hidden=num_hidden)
        self._xg = FullyConnectedND(num_hidden=num_hidden)
        self._hi = FullyConnectedND(num_hidden=num_hidden)
        self._hf = FullyConnectedND(num_hidden=num_hidden)
        self._ho = FullyConnectedND(num_hidden=num_hidden)
        self._hg = FullyConnectedND(num_hidden=num_hidden)
        self._linear = FullyConnectedND(num_hidden=10)

    def _step(self, x, h, c):
        i = sigmoid(self._xi(x) + self._hi(h))
        f = sigmoid(self._xf(x) + self._hf(h))
        o = sigmoid(self._xo(x) + self._ho(h))
        g = np.tanh(self._xg(x) + self._hg(h))
        c = f * c + i * g
        h = o * np.tanh(c)
        return h, c

    def forward(self, data, mode='training'):
        N, L, D = data.shape
        h = np.zeros((N, self._num_hidden), dtype=data.dtype)
        c = np.zeros((N, self._num_hidden), dtype=data.dtype)
        for i in range(L):
            patch = data[:, i:i + 1, :]             # MinPy's: mx.nd.slice_axis
            h, c = self._step(patch, h, c)
        return self._linear(h)


def test_naive_lstm_of_fully_connected_nd():
    losses, error = train_rnn_on_digits(NaiveLSTM(24), epochs=4, learning_rate=0.01)
    assert numpy.mean(losses[-10:]) < 0.6 < losses[0]
    assert error < 0.15


def test_nn_utils():
    from minpy.nn.utils import cross_entropy, unpack_batch, count_params, copy_arrays
    p = numpy.array([[0.5, 0.5], [0.25, 0.75]])
    assert cross_entropy(np.array(p), np.array([0., 1.])) == pytest.approx(
        -(numpy.log(0.5) + numpy.log(0.75)) / 2)
    batch = next(iter(NDArrayIter(numpy.arange(12.).reshape(6, 2), numpy.arange(6), 3)))
    data, label = unpack_batch(batch)
    numpy.testing.assert_array_equal(data.asnumpy(), [[0, 1], [2, 3], [4, 5]])
    numpy.testing.assert_array_equal(label.asnumpy(), [0, 1, 2])
    model = MLP()
    model.forward(separable(4, 5)[0])              # untraced: makes the parameters
    assert count_params(model.params) == 8 * 5 + 8 + 3 * 8 + 3
    copies = copy_arrays(model.params)
    name = model._affine0._param_names[0]
    model.params[name][...] = 0.0
    assert float(np.max(np.abs(copies[name]))) > 0
    with pytest.raises(ValueError, match="cross_entropy: expected p of shape"):
        cross_entropy(numpy.ones(3), numpy.ones(3))


def test_float64_data_runs_in_float32_as_minpy():
    """MinPy's symbols ran in MXNet's float32 whatever NumPy gave; so do the layers."""
    X, y = separable(10, 5)
    model = MLP()
    loss64 = model(X.astype(numpy.float64), labels=y)
    g64 = model.backward()
    loss32 = model(X, labels=y)
    g32 = model.backward()
    assert loss64.dtype == numpy.float32
    for k in g32:
        assert g64[k].dtype == g32[k].dtype == numpy.float32
    if on_real_gpu():
        # the float64 data is cast on the device, so the first layer runs there; float32
        # host data runs it on the host (the layer runs where its data is): cuBLAS and
        # NumPy's BLAS sum in other orders, a few ulps apart (an H200 gave 3e-8 in dW0)
        rtol, atol = gpu_tolerance(numpy.asarray(float(loss32)), 0, 0)
        assert float(loss64) == pytest.approx(float(loss32), rel=rtol, abs=atol)
        for k in g32:
            want = g32[k].asnumpy()
            rtol, atol = gpu_tolerance(want, 0, 0)
            numpy.testing.assert_allclose(g64[k].asnumpy(), want, rtol=rtol, atol=atol)
        return
    assert float(loss64) == float(loss32)
    for k in g32:
        numpy.testing.assert_array_equal(g64[k].asnumpy(), g32[k].asnumpy())
