"""MinPy's model builder (minpy.nn.model_builder) as its tutorial and
docs/tutorial/cnn_tutorial/model_builder_example.py use it: ``builder.Sequential``
of ``Affine``/``ReLU``/``Convolution``/``Pooling``/``Flatten`` ..., cast to a model
with ``builder.Model(net, 'softmax', input_shape)`` and trained by the Solver.
Only the data differ (the bundled digits instead of CIFAR-10)."""
import numpy
import pytest

import minpy.numpy as np
import minpy.nn.model_builder as builder
import minpy.symbol as mxsym
from minpy.nn import layers
from minpy.nn.io import NDArrayIter
from minpy.nn.solver import Solver
from _digits import digits

batch_size = 64
hidden_size = 128
num_classes = 10




def train(model, data, num_epochs):
    np.random.seed(0)
    train_dataiter = NDArrayIter(data['X_train'], data['y_train'], batch_size=batch_size,
                                 shuffle=True)
    test_dataiter = NDArrayIter(data['X_test'], data['y_test'], batch_size=batch_size,
                                shuffle=False)
    solver = Solver(model, train_dataiter, test_dataiter, num_epochs=num_epochs,
                    init_rule='gaussian', init_config={'stdvar': 0.1},
                    update_rule='sgd_momentum',
                    optim_config={'learning_rate': 0.1, 'momentum': 0.9},
                    verbose=False, print_every=20)
    solver.init()
    solver.train()
    return solver


def test_tutorial_mlp_trains_with_the_solver():
    # docs/tutorial/model_builder_tutorial/tutorial_mbuilder.py
    MLP = builder.Sequential(
        builder.Affine(hidden_size),
        builder.ReLU(),
        builder.Affine(num_classes)
    )
    model = builder.Model(MLP, 'softmax', (8 * 8,))
    names = sorted(model.param_configs)
    assert len(names) == 4 and all(n.startswith("affine") for n in names)
    assert {model.param_configs[n]["shape"] for n in names} == \
        {(64, hidden_size), (hidden_size,), (hidden_size, num_classes), (num_classes,)}
    solver = train(model, digits((64,)), num_epochs=6)
    assert solver.best_val_acc > 0.93
    # the same as the hand-written TwoLayerNet the tutorial compares it with
    x = digits((64,))["X_test"][:16]
    fc1, fc2 = MLP._modules[0], MLP._modules[2]
    w1, b1, w2, b2 = (model.params[n] for n in (fc1.weight, fc1.bias, fc2.weight, fc2.bias))
    want = layers.affine(layers.relu(layers.affine(x, w1, b1)), w2, b2)
    numpy.testing.assert_allclose(model.forward(np.array(x), 'test').asnumpy(),
                                  want.asnumpy(), rtol=1e-6)


def test_cnn_tutorial_model_builder_example():
    # docs/tutorial/cnn_tutorial/model_builder_example.py (8x8 digits for CIFAR-10)
    net = builder.Sequential(
        builder.Convolution((3, 3), 8),
        builder.ReLU(),
        builder.Pooling('max', (2, 2), (2, 2)),
        builder.Flatten(),
        builder.Affine(hidden_size),
        builder.Affine(num_classes),
    )
    model = builder.Model(net, 'softmax', (1, 8, 8))
    conv = net._modules[0]
    assert model.param_configs[conv.weight]["shape"] == (8, 1, 3, 3)
    assert net.output_shape((1, 8, 8)) == (num_classes,)
    assert net._modules[2].output_shape((8, 6, 6)) == (8, 3, 3)
    solver = train(model, digits((1, 8, 8)), num_epochs=3)
    assert solver.best_val_acc > 0.9
    # Convolution and Pooling compute what MinPy's mx.sym.Convolution / Pooling did
    x = digits((1, 8, 8))["X_test"][:4]
    sym = mxsym.Convolution(mxsym.Variable('inputs'), name='convolution', kernel=(3, 3),
                            num_filter=8)
    sym = mxsym.Pooling(mxsym.Activation(sym, act_type='relu'), kernel=(2, 2),
                        pool_type='max', stride=(2, 2))
    exe = sym.simple_bind(grad_req='null', inputs=x.shape)
    exe.copy_params_from({'convolution_weight': model.params[conv.weight],
                          'convolution_bias': model.params[conv.bias]})
    want = exe.forward(inputs=x)[0].asnumpy()
    got = builder.Sequential(*net._modules[:3]).forward(np.array(x), model.params)
    numpy.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_dropout_batchnorm_add_and_a_customised_module():
    # the tutorial's "Customize model builder layers": forward, output_shape,
    # parameter_shape, parameter_settings
    class Scale(builder.Module):
        def forward(self, inputs, params):
            return inputs * params['scale_factor']

        def output_shape(self, input_shape):
            return input_shape

        def parameter_shape(self, input_shape):
            return {'scale_factor': input_shape}

        def parameter_settings(self):
            return {'scale_factor': {'init_rule': 'constant', 'init_config': {'value': 2.0}}}

    net = builder.Sequential(
        builder.Affine(16), builder.BatchNormalization(), builder.Tanh(),
        builder.Add(builder.Identity(), builder.Sequential(builder.Affine(16),
                                                           builder.Sigmoid())),
        builder.Dropout(0.5), Scale(), builder.Affine(num_classes))
    model = builder.Model(net, 'softmax', (64,))
    assert model.param_configs['scale_factor'] == \
        {'shape': (16,), 'init_rule': 'constant', 'init_config': {'value': 2.0}}
    solver = train(model, digits((64,)), num_epochs=2)
    assert solver.best_val_acc > 0.5
    x = np.array(digits((64,))["X_test"][:8])
    a, b = model.forward(x, 'test'), model.forward(x, 'test')
    numpy.testing.assert_array_equal(a.asnumpy(), b.asnumpy())     # no dropout in test
    assert '__training_in_progress__' not in model.params


def test_builder_errors():
    with pytest.raises(TypeError, match="Sequential: expected model_builder modules"):
        builder.Sequential(builder.ReLU(), layers.relu)
    with pytest.raises(ValueError, match="Model: loss must be 'l2', 'softmax', 'svm'"):
        builder.Model(builder.Sequential(builder.Affine(3)), 'hinge', (4,))
    with pytest.raises(ValueError, match=r"Convolution: .*expected \(C, H, W\)"):
        builder.Model(builder.Sequential(builder.Convolution((3, 3), 4)), 'softmax', (64,))
    with pytest.raises(ValueError, match="Pooling: mode must be"):
        builder.Pooling('min', (2, 2))
