"""mx.mod.PythonModule / PythonLossModule (MXNet 1.x's modules written in Python):
example/module/python_loss.py's hinge loss after an MLP, trained three SGD steps as
MXNet 1.9.1 does (tests/fixtures/mxnet/seqmod, made by make_seqmod_fixtures.py), and
fitted on small data; a PythonModule subclass; errors."""
import os

import numpy as np
import pytest

import minpy.mxnet as mx

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet", "seqmod")
OPT = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}


def mc_hinge_grad(scores, labels):
    """example/module/python_loss.py's gradient (there under numba.jit)."""
    scores = scores.asnumpy()
    labels = labels.asnumpy().astype(int)
    n, _ = scores.shape
    grad = np.zeros_like(scores)
    for i in range(n):
        score = 1 + scores[i] - scores[i, labels[i]]
        score[labels[i]] = 0
        ind_pred = score.argmax()
        grad[i, labels[i]] -= 1
        grad[i, ind_pred] += 1
    return grad


def _mlp(hidden=6, classes=3):
    data = mx.symbol.Variable('data')
    fc1 = mx.symbol.FullyConnected(data, name='fc1', num_hidden=hidden)
    act1 = mx.symbol.Activation(fc1, name='relu1', act_type="relu")
    fc2 = mx.symbol.FullyConnected(act1, name='fc2', num_hidden=classes)
    return mx.mod.Module(fc2, label_names=[], context=mx.cpu())


def _with_loss(mlp, **kwargs):
    loss = mx.mod.PythonLossModule(grad_func=mc_hinge_grad, **kwargs)
    return mx.mod.SequentialModule().add(mlp).add(loss, take_labels=True, auto_wiring=True)


def test_hinge_loss_steps_match_mxnet():
    """MXNet's fixture chains two modules (relu(fc1), fc2) before the loss; one MLP module
    computes the same."""
    z = np.load(os.path.join(HERE, "seqmod_cases.npz"))
    x, y = z["x"], z["y"]
    mod = _with_loss(_mlp())
    mod.bind(data_shapes=[("data", x[0].shape)], label_shapes=[("softmax_label", y[0].shape)])
    mod.init_params(arg_params={k[2:]: mx.nd.array(z[k]) for k in z.files
                                if k.startswith("p_")})
    mod.init_optimizer(optimizer="sgd", optimizer_params=OPT)
    for step in range(len(x)):
        mod.forward(mx.io.DataBatch([mx.nd.array(x[step])], [mx.nd.array(y[step])]),
                    is_train=True)
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), z[f"pyloss_out{step}"],
                                   rtol=1e-5, atol=1e-6)
        mod.backward()
        mod.update()
    for k, v in mod.get_params()[0].items():
        np.testing.assert_allclose(v.asnumpy(), z[f"pyloss_param_{k}"], rtol=1e-5, atol=1e-6)
    metric = mx.metric.create("acc")
    mod.forward(mx.io.DataBatch([mx.nd.array(x[0])], [mx.nd.array(y[0])]), is_train=False)
    mod.update_metric(metric, [mx.nd.array(y[0])])
    assert metric.get()[1] == float(z["pyloss_acc"])


def test_python_loss_example_fits():
    """example/module/python_loss.py on separable blobs instead of MNIST."""
    rng = np.random.RandomState(1)
    y = rng.randint(0, 4, 400).astype(np.float32)
    x = (rng.randn(4, 8)[y.astype(int)] * 3 + rng.randn(400, 8)).astype(np.float32)
    train = mx.io.NDArrayIter(x[:300], y[:300], batch_size=25, shuffle=True, seed=10)
    val = mx.io.NDArrayIter(x[300:], y[300:], batch_size=25)
    mod = _with_loss(_mlp(hidden=16, classes=4))
    mod.fit(train, eval_data=val, optimizer_params={'learning_rate': 0.01, 'momentum': 0.9},
            num_epoch=5, initializer=mx.init.Xavier())
    assert mod.score(val, "acc")[0][1] >= 0.95
    assert mod.output_names == ["pyloss_output"]


def test_loss_module_alone():
    loss = mx.mod.PythonLossModule(name="hinge", grad_func=lambda s, l: s * 2)
    loss.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    assert loss.output_shapes == [("hinge_output", (2, 3))]
    assert loss.get_params() == ({}, {})
    scores = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    loss.forward(mx.io.DataBatch([scores], [mx.nd.array([0, 1])]))
    assert loss.get_outputs()[0] is scores
    loss.backward()
    grad = loss.get_input_grads()[0]
    assert isinstance(grad, mx.nd.NDArray)
    np.testing.assert_array_equal(grad.asnumpy(), scores.asnumpy() * 2)


class _Scale(mx.mod.PythonModule):
    """A PythonModule subclass: outputs 3 * data, passes 3 * out_grad back."""

    def __init__(self):
        super().__init__(["data"], None, ["scale_output"])

    def _compute_output_shapes(self):
        return [("scale_output", self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        self._out = data_batch.data[0] * 3

    def get_outputs(self, merge_multi_context=True):
        return [self._out]

    def backward(self, out_grads=None):
        self._grad = out_grads[0] * 3

    def get_input_grads(self, merge_multi_context=True):
        return [self._grad]


def test_python_module_subclass_in_a_chain():
    data = mx.symbol.Variable("data")
    head = mx.mod.Module(mx.symbol.LinearRegressionOutput(
        mx.symbol.FullyConnected(data, name="fc", num_hidden=1), name="lro"),
        label_names=["lro_label"])
    seq = mx.mod.SequentialModule().add(_Scale()).add(head, take_labels=True,
                                                      auto_wiring=True)
    seq.bind(data_shapes=[("data", (2, 2))], label_shapes=[("lro_label", (2, 1))])
    seq.init_params(arg_params={"fc_weight": np.array([[1.0, 2.0]]), "fc_bias": np.zeros(1)})
    seq.forward(mx.io.DataBatch([mx.nd.array([[1, 1], [0, 1]])], [mx.nd.zeros((2, 1))]))
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), [[9], [6]])
    seq.backward()
    # d(out)/d(data) = 3 * fc_weight * (out - label) for LinearRegressionOutput
    np.testing.assert_allclose(seq._modules[1].get_input_grads()[0].asnumpy(),
                               [[9, 18], [6, 12]])
    np.testing.assert_allclose(seq._modules[0].get_input_grads()[0].asnumpy(),
                               [[27, 54], [18, 36]])


def test_errors():
    with pytest.raises(ValueError, match="one data name and one label name"):
        mx.mod.PythonLossModule(data_names=["a", "b"])
    with pytest.raises(TypeError, match="grad_func must be callable"):
        mx.mod.PythonLossModule(grad_func=3)
    loss = mx.mod.PythonLossModule()
    with pytest.raises(ValueError, match="grad_req='write'"):
        loss.bind(data_shapes=[("data", (2, 3))], grad_req="add")
    with pytest.raises(ValueError, match=r"data_shapes name \['x'\]"):
        loss.bind(data_shapes=[("x", (2, 3))])
    loss.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(ValueError, match="training needs the batch's labels"):
        loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]))
    loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]))
    with pytest.raises(NotImplementedError, match="give grad_func"):
        loss.backward()
    with pytest.raises(ValueError, match="takes no out_grads"):
        loss.backward([mx.nd.ones((2, 3))])
    with pytest.raises(NotImplementedError, match="install_monitor"):
        loss.install_monitor(mx.mon.Monitor(1))
    shaped = mx.mod.PythonLossModule(grad_func=lambda s, l: np.zeros(3))
    shaped.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    shaped.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]))
    with pytest.raises(ValueError, match=r"grad_func returned shape \(3,\)"):
        shaped.backward()
    with pytest.raises(NotImplementedError, match="_compute_output_shapes"):
        mx.mod.PythonModule(["data"], None, ["out"]).bind(data_shapes=[("data", (1,))])
