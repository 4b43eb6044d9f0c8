"""Shared by the Module tests: the fixture's MLP, data, parameters and a bound Module."""
import collections
import os

import numpy

import minpy
import minpy.symbol as sym
from minpy.mxnet.module import Module

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet", "module",
                       "module_fit.npz")
# the optimizer configurations of make_module_fixture.py's CONFIGS
CONFIGS = {
    "sgd_momentum": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    "sgd_clip": ("sgd", {"learning_rate": 0.5, "wd": 1e-2, "clip_gradient": 0.05}),
    "adam": ("adam", {"learning_rate": 0.01, "wd": 1e-3, "clip_gradient": 0.1}),
    "rmsprop": ("rmsprop", {"learning_rate": 0.01, "wd": 1e-3}),
    "adagrad": ("adagrad", {"learning_rate": 0.1, "wd": 1e-3}),
}
Batch = collections.namedtuple("Batch", ["data"])     # MXNet programs' minimal batch


def mlp(hidden=8, classes=3, head=True, fc1_weight=None):
    """The fixture's network: data -> fc1 -> relu -> fc2 (-> SoftmaxOutput)."""
    extra = {} if fc1_weight is None else {"weight": fc1_weight}
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=hidden, name="fc1", **extra)
    net = sym.FullyConnected(sym.Activation(net, act_type="relu", name="relu1"),
                             num_hidden=classes, name="fc2")
    return sym.SoftmaxOutput(net, name="softmax") if head else net


def blobs(n, dim=6, classes=3, seed=0):
    """Separable data: Gaussian clusters around far-apart centres."""
    rng = numpy.random.RandomState(seed)
    y = rng.randint(0, classes, n)
    x = rng.randn(classes, dim)[y] * 4 + rng.randn(n, dim)
    return x.astype(numpy.float32), y.astype(numpy.float32)


def params_of(seed=1, dim=6, hidden=8, classes=3):
    """Seeded parameters of :func:`mlp` (host float32 arrays)."""
    rng = numpy.random.RandomState(seed)
    shapes = {"fc1_weight": (hidden, dim), "fc1_bias": (hidden,),
              "fc2_weight": (classes, hidden), "fc2_bias": (classes,)}
    return {k: (rng.randn(*s) * 0.4).astype(numpy.float32) for k, s in shapes.items()}


def bound(batch=8, for_training=True, params=None, **kwargs):
    """A Module over :func:`mlp`, bound to ``batch`` samples, its parameters set."""
    mod = Module(mlp(), **kwargs)
    mod.bind(data_shapes=[("data", (batch, 6))], label_shapes=[("softmax_label", (batch,))],
             for_training=for_training)
    mod.set_params(params or params_of(), {})
    return mod


def manual_forward(x, params, head=True):
    """The network's outputs on ``x`` by a plain simple_bind executor."""
    exe = mlp(head=head).simple_bind(minpy.cpu(), data=x.shape)
    for k, v in params.items():
        exe.arg_dict[k][...] = v
    return exe.forward(is_train=False, data=x)[0].asnumpy()


def host(params):
    """Host copies (``asnumpy()`` of a CPU Array may share its memory)."""
    return {k: numpy.array(v.asnumpy()) for k, v in params.items()}
