"""MinPy programs run unchanged: models written as MinPy's own examples write them.

Each class below follows one of MinPy's examples (examples/nn/mlp.py, cnn.py,
mlp_bn_dropout.py, lstm.py/rnn.py) line for line in its use of the API:
``minpy.numpy`` as np, ``ModelBase`` subclasses with ``add_param`` chains
given by keyword, ``layers.*``, ``NDArrayIter``, ``Solver(...)`` with MinPy's
keywords, ``solver.init(); solver.train()``. Only the data differ (the bundled
digits, or a generated adding problem, instead of CIFAR-10), and the CNN
builds its symbol with ``minpy.symbol`` where MinPy imported ``mxnet.sym``.
"""

import numpy
import pytest

import minpy.numpy as np
import minpy.symbol as mxsym             # MinPy's examples: mx.sym
from minpy.core import Function
from minpy.nn import layers
from minpy.nn.io import NDArrayIter
from minpy.nn.model import ModelBase
from minpy.nn.solver import Solver
from _digits import digits
from _host import host

batch_size = 64




def solve(model, data, **kw):
    np.random.seed(0)
    train_dataiter = NDArrayIter(data=data["X_train"], label=data["y_train"],
                                 batch_size=batch_size, shuffle=True)
    test_dataiter = NDArrayIter(data=data["X_test"], label=data["y_test"],
                                batch_size=batch_size, shuffle=False)
    solver = Solver(model, train_dataiter, test_dataiter, verbose=False, print_every=20, **kw)
    solver.init()
    solver.train()
    return solver


class TwoLayerNet(ModelBase):                      # examples/nn/mlp.py
    def __init__(self):
        super(TwoLayerNet, self).__init__()
        self.add_param(name='w1', shape=(64, 128)) \
            .add_param(name='b1', shape=(128,)) \
            .add_param(name='w2', shape=(128, 10)) \
            .add_param(name='b2', shape=(10,))

    def forward(self, X, mode):
        y1 = layers.affine(X, self.params['w1'], self.params['b1'])
        y2 = layers.relu(y1)
        y3 = layers.affine(y2, self.params['w2'], self.params['b2'])
        return y3

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def test_minpy_mlp():
    solver = solve(TwoLayerNet(), digits((64,)), num_epochs=8, init_rule='gaussian',
                   init_config={'stdvar': 0.1}, update_rule='sgd_momentum',
                   optim_config={'learning_rate': 0.1, 'momentum': 0.9})
    assert solver.best_val_acc > 0.95


class ConvolutionNet(ModelBase):                   # examples/nn/cnn.py
    def __init__(self):
        super(ConvolutionNet, self).__init__()
        net = mxsym.Variable(name='X')
        net = mxsym.Convolution(data=net, name='conv', kernel=(3, 3), num_filter=16)
        net = mxsym.Activation(data=net, act_type='relu')
        net = mxsym.Pooling(data=net, name='pool', pool_type='max', kernel=(2, 2),
                            stride=(2, 2))
        net = mxsym.Flatten(data=net)
        self.conv = Function(net, input_shapes={'X': (batch_size, 1, 8, 8)}, name='conv')
        self.add_params(self.conv.get_params())
        output_shape = self.conv.get_one_output_shape()
        conv_out_size = output_shape[1]
        self.add_param(name='w1', shape=(conv_out_size, 64)) \
            .add_param(name='b1', shape=(64,)) \
            .add_param(name='w2', shape=(64, 10)) \
            .add_param(name='b2', shape=(10,))

    def forward(self, X, mode):
        out = self.conv(X=X, **self.params)
        out = layers.affine(out, self.params['w1'], self.params['b1'])
        out = layers.relu(out)
        out = layers.affine(out, self.params['w2'], self.params['b2'])
        return out

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def test_minpy_cnn_with_a_symbol_function():
    solver = solve(ConvolutionNet(), digits((1, 8, 8)), num_epochs=6, init_rule='gaussian',
                   init_config={'stdvar': 0.1}, update_rule='sgd_momentum',
                   optim_config={'learning_rate': 0.05, 'momentum': 0.9})
    assert solver.best_val_acc > 0.95


class BNDropoutNet(ModelBase):                     # examples/nn/mlp_bn_dropout.py
    def __init__(self):
        super(BNDropoutNet, self).__init__()
        self.add_param(name='w1', shape=(64, 128)) \
            .add_param(name='b1', shape=(128,)) \
            .add_param(name='w2', shape=(128, 10)) \
            .add_param(name='b2', shape=(10,)) \
            .add_param(name='gamma', shape=(128,), init_rule='constant',
                       init_config={'value': 1.0}) \
            .add_param(name='beta', shape=(128,), init_rule='constant') \
            .add_aux_param(name='running_mean', value=None) \
            .add_aux_param(name='running_var', value=None)

    def forward(self, X, mode):
        X = np.reshape(X, (X.shape[0], 64))
        y1 = layers.affine(X, self.params['w1'], self.params['b1'])
        y2 = layers.relu(y1)
        y3, self.aux_params['running_mean'], self.aux_params['running_var'] = layers.batchnorm(
            y2, self.params['gamma'], self.params['beta'], mode=mode,
            running_mean=self.aux_params['running_mean'],
            running_var=self.aux_params['running_var'])
        y4 = layers.affine(y3, self.params['w2'], self.params['b2'])
        y5 = layers.dropout(y4, 0.2, mode=mode)
        return y5

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def test_minpy_mlp_with_batchnorm_and_dropout():
    solver = solve(BNDropoutNet(), digits((64,)), num_epochs=8, init_rule='gaussian',
                   init_config={'stdvar': 0.05}, update_rule='sgd_momentum',
                   optim_config={'learning_rate': 0.05, 'momentum': 0.9})
    assert solver.best_val_acc > 0.93
    running_var = host(solver.model.aux_params['running_var'])
    assert running_var.shape == (128,) and numpy.all(running_var > 0)


def adding_problem(n, seq_len=10, seed=0):
    """MinPy's examples/utils adding problem: (N, T, 2) inputs, target = sum of 2 marked values."""
    rng = numpy.random.default_rng(seed)
    values = rng.uniform(0, 1, (n, seq_len))
    marks = numpy.zeros((n, seq_len))
    for i in range(n):
        marks[i, rng.choice(seq_len, 2, replace=False)] = 1
    x = numpy.stack([values, marks], axis=2).astype(numpy.float32)
    y = numpy.sum(values * marks, axis=1, keepdims=True).astype(numpy.float32)
    return x, y


class LSTMNet(ModelBase):                          # examples/nn/lstm.py
    def __init__(self, input_size=2, hidden_size=32, num_classes=1):
        super(LSTMNet, self).__init__()
        self.add_param(name='Wx', shape=(input_size, 4 * hidden_size)) \
            .add_param(name='Wh', shape=(hidden_size, 4 * hidden_size)) \
            .add_param(name='b', shape=(4 * hidden_size,)) \
            .add_param(name='Wa', shape=(hidden_size, num_classes)) \
            .add_param(name='ba', shape=(num_classes,))

    def forward(self, X, mode):
        seq_len = X.shape[1]
        batch_size = X.shape[0]
        hidden_size = self.params['Wh'].shape[0]
        h = np.zeros((batch_size, hidden_size))
        c = np.zeros((batch_size, hidden_size))
        for t in range(seq_len):
            h, c = layers.lstm_step(X[:, t, :], h, c, self.params['Wx'], self.params['Wh'],
                                    self.params['b'])
        y = layers.affine(h, self.params['Wa'], self.params['ba'])
        return y

    def loss(self, predict, y):
        return layers.l2_loss(predict, y)


class RNNNet(ModelBase):                           # examples/nn/rnn.py
    def __init__(self, input_size=2, hidden_size=32, num_classes=1):
        super(RNNNet, self).__init__()
        self.add_param(name='Wx', shape=(input_size, hidden_size)) \
            .add_param(name='Wh', shape=(hidden_size, hidden_size)) \
            .add_param(name='b', shape=(hidden_size,)) \
            .add_param(name='Wa', shape=(hidden_size, num_classes)) \
            .add_param(name='ba', shape=(num_classes,))

    def forward(self, X, mode):
        seq_len = X.shape[1]
        batch_size = X.shape[0]
        hidden_size = self.params['Wh'].shape[0]
        h = np.zeros((batch_size, hidden_size))
        for t in range(seq_len):
            h = layers.rnn_step(X[:, t, :], h, self.params['Wx'], self.params['Wh'],
                                self.params['b'])
        y = layers.affine(h, self.params['Wa'], self.params['ba'])
        return y

    def loss(self, predict, y):
        return layers.l2_loss(predict, y)


@pytest.mark.parametrize("net", [LSTMNet, RNNNet])
def test_minpy_recurrent_regression(net):
    x_train, y_train = adding_problem(1000, seq_len=6)
    x_test, y_test = adding_problem(200, seq_len=6, seed=1)
    data = {"X_train": x_train, "y_train": y_train, "X_test": x_test, "y_test": y_test}
    solver = solve(net(), data, num_epochs=8, init_rule='xavier', update_rule='adam',
                   optim_config={'learning_rate': 0.03}, task_type='regression')
    # a constant guess (1.0) has an l2 loss of var(u1 + u2) = 1/6; learning the sum halves it
    assert solver.val_acc_history[-1] < 0.09, solver.val_acc_history
