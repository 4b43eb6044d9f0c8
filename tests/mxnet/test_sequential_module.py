"""mx.mod.SequentialModule (MXNet 1.x's chain of modules): forward, backward, input
gradients, SGD updates and metrics against MXNet 1.9.1 (tests/fixtures/mxnet/seqmod,
made by make_seqmod_fixtures.py); MXNet's example/module/sequential_module.py on small
data; binding, parameters and errors."""
import logging
import os

import numpy as np
import pytest

import minpy.mxnet as mx

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet", "seqmod")
OPT = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}


def _mlp1():
    data = mx.symbol.Variable('data')
    fc1 = mx.symbol.FullyConnected(data, name='fc1', num_hidden=6)
    act1 = mx.symbol.Activation(fc1, name='relu1', act_type="relu")
    return mx.mod.Module(act1, label_names=[], context=mx.cpu())


def _mlp2(head=True):
    data = mx.symbol.Variable('data')
    fc2 = mx.symbol.FullyConnected(data, name='fc2', num_hidden=3)
    if not head:
        return mx.mod.Module(fc2, label_names=[], context=mx.cpu())
    return mx.mod.Module(mx.symbol.SoftmaxOutput(fc2, name='softmax'), context=mx.cpu())


def _chain():
    return mx.mod.SequentialModule().add(_mlp1()).add(_mlp2(), take_labels=True,
                                                      auto_wiring=True)


def test_steps_match_mxnet():
    """Three SGD steps (momentum, wd) of relu(fc1) -> softmax(fc2): outputs, the
    gradient passed between the modules, parameters and accuracy as MXNet 1.9.1's."""
    z = np.load(os.path.join(HERE, "seqmod_cases.npz"))
    x, y = z["x"], z["y"]
    seq = _chain()
    seq.bind(data_shapes=[("data", x[0].shape)], label_shapes=[("softmax_label", y[0].shape)])
    params = {k[2:]: mx.nd.array(z[k]) for k in z.files if k.startswith("p_")}
    seq.init_params(arg_params=params)
    seq.init_optimizer(optimizer="sgd", optimizer_params=OPT)
    for step in range(len(x)):
        seq.forward(mx.io.DataBatch([mx.nd.array(x[step])], [mx.nd.array(y[step])]),
                    is_train=True)
        np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), z[f"seq_out{step}"],
                                   rtol=1e-5, atol=1e-6)
        seq.backward()
        np.testing.assert_allclose(seq._modules[1].get_input_grads()[0].asnumpy(),
                                   z[f"seq_grad{step}"], rtol=1e-5, atol=1e-6)
        seq.update()
    arg_params, aux_params = seq.get_params()
    assert sorted(arg_params) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    assert aux_params == {}
    for k, v in arg_params.items():
        np.testing.assert_allclose(v.asnumpy(), z[f"seq_param_{k}"], rtol=1e-5, atol=1e-6)
    metric = mx.metric.create("acc")
    seq.forward(mx.io.DataBatch([mx.nd.array(x[0])], [mx.nd.array(y[0])]), is_train=False)
    seq.update_metric(metric, [mx.nd.array(y[0])])
    assert metric.get() == ("accuracy", float(z["seq_acc"]))


def test_sequential_module_example_fits(caplog):
    """example/module/sequential_module.py on separable blobs instead of MNIST."""
    rng = np.random.RandomState(0)
    y = rng.randint(0, 3, 300)
    x = (rng.randn(3, 5)[y] * 4 + rng.randn(300, 5)).astype(np.float32)
    train_dataiter = mx.io.NDArrayIter(x[:200], y[:200].astype(np.float32), batch_size=20,
                                       shuffle=True, seed=10)
    val_dataiter = mx.io.NDArrayIter(x[200:], y[200:].astype(np.float32), batch_size=30)
    mod_seq = _chain()
    with caplog.at_level(logging.INFO):
        mod_seq.fit(train_dataiter, eval_data=val_dataiter,
                    optimizer_params={'learning_rate': 0.05, 'momentum': 0.9}, num_epoch=4,
                    initializer=mx.init.Xavier())
    assert "Epoch[3] Validation-accuracy=" in caplog.text
    assert mod_seq.score(val_dataiter, "acc")[0][1] >= 0.95
    pred = mod_seq.predict(mx.io.NDArrayIter(x[200:], batch_size=32))  # a padded last batch
    assert pred.shape == (100, 3)
    np.testing.assert_allclose(pred.asnumpy().sum(axis=1), 1, rtol=1e-5)
    assert mod_seq.output_shapes == [("softmax_output", (32, 3))]   # reshaped by predict
    assert mod_seq.data_names == ["data"] and mod_seq.output_names == ["softmax_output"]


def test_bind_chains_shapes_and_labels():
    seq = _chain()
    seq.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    assert seq.binded and seq.for_training
    assert seq._modules[1].data_shapes == [("data", (4, 6))]
    assert seq._modules[1].inputs_need_grad and not seq._modules[0].inputs_need_grad
    assert seq.label_shapes == [("softmax_label", (4,))]
    # no module takes labels: the chain has none
    seq = mx.mod.SequentialModule().add(_mlp1()).add(_mlp2(head=False), auto_wiring=True)
    seq.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))],
             for_training=False)
    assert seq.label_shapes is None
    assert not seq._modules[1].inputs_need_grad


def test_input_grads_of_the_chain_equal_one_module():
    """get_input_grads of the chain (inputs_need_grad) equals the one-symbol network's."""
    rng = np.random.RandomState(3)
    x = rng.randn(4, 5).astype(np.float32)
    y = np.array([0, 1, 2, 1], np.float32)
    seq = _chain()
    seq.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))],
             inputs_need_grad=True)
    seq.init_params(mx.init.Xavier())
    seq.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    arg_params, _ = seq.get_params()
    data = mx.symbol.Variable('data')
    net = mx.symbol.SoftmaxOutput(mx.symbol.FullyConnected(mx.symbol.Activation(
        mx.symbol.FullyConnected(data, name='fc1', num_hidden=6), name='relu1',
        act_type='relu'), name='fc2', num_hidden=3), name='softmax')
    one = mx.mod.Module(net)
    one.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))],
             inputs_need_grad=True)
    one.set_params(arg_params, {})
    one.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    np.testing.assert_allclose(seq.get_input_grads()[0].asnumpy(),
                               one.get_input_grads()[0].asnumpy(), rtol=1e-5, atol=1e-7)


def test_parameter_checks():
    seq = mx.mod.SequentialModule().add(_mlp1()).add(_mlp1(), auto_wiring=True)
    seq.bind(data_shapes=[("data", (2, 5))])
    with pytest.raises(ValueError, match="duplicated parameter names: 'fc1_"):
        seq.init_params()
    seq = _chain()
    seq.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    good = {"fc1_weight": np.ones((6, 5)), "fc1_bias": np.zeros(6),
            "fc2_weight": np.ones((3, 6)), "fc2_bias": np.zeros(3)}
    with pytest.raises(ValueError, match=r"arg_params has \['fc9_bias'\], which no module"):
        seq.init_params(arg_params=dict(good, fc9_bias=np.zeros(3)))
    seq.init_params(arg_params=dict(good, fc9_bias=np.zeros(3)), allow_extra=True,
                    force_init=True)
    with pytest.raises(RuntimeError, match="missing"):
        seq.set_params({"fc1_weight": np.ones((6, 5))}, {})
    seq.set_params(dict(good, fc2_bias=np.full(3, 2.0)), {})
    np.testing.assert_array_equal(seq.get_params()[0]["fc2_bias"].asnumpy(), [2, 2, 2])


def test_errors_name_the_method():
    with pytest.raises(ValueError, match="unknown meta"):
        mx.mod.SequentialModule().add(_mlp1(), take_label=True)
    with pytest.raises(RuntimeError, match="SequentialModule.bind: the chain is empty"):
        mx.mod.SequentialModule().bind(data_shapes=[("data", (2, 5))])
    seq = _chain()
    with pytest.raises(RuntimeError, match="SequentialModule.forward: the module is not bound"):
        seq.forward(mx.io.DataBatch([mx.nd.ones((2, 5))]))
    seq.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(RuntimeError, match="parameters are not initialized"):
        seq.forward(mx.io.DataBatch([mx.nd.ones((2, 5))]))
    seq.init_params()
    with pytest.raises(RuntimeError, match="SequentialModule.update: no optimizer"):
        seq.update()
    with pytest.raises(RuntimeError, match="inputs_need_grad=True"):
        seq.get_input_grads()
    with pytest.raises(ValueError, match="inputs_need_grad=True needs for_training"):
        _chain().bind(data_shapes=[("data", (2, 5))], for_training=False,
                      inputs_need_grad=True)
    bad = mx.mod.SequentialModule().add(_mlp1()).add(
        mx.mod.Module(mx.sym.Variable("a") + mx.sym.Variable("b"), data_names=["a", "b"],
                      label_names=None), auto_wiring=True)
    with pytest.raises(ValueError, match="auto-wired with data names"):
        bad.bind(data_shapes=[("data", (2, 5))])
    seq.add(_mlp2(head=False))              # adding resets the states
    assert not (seq.binded or seq.params_initialized or seq.optimizer_initialized)


def test_install_monitor_on_every_module():
    seq = _chain()
    seq.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    seq.init_params()
    mon = mx.mon.Monitor(1, pattern=".*_output")
    seq.install_monitor(mon)
    mon.tic()
    seq.forward(mx.io.DataBatch([mx.nd.ones((2, 5))], [mx.nd.zeros((2,))]), is_train=False)
    assert [k for _, k, _ in mon.toc()] == ["fc1_output", "relu1_output", "fc2_output",
                                            "softmax_output"]
