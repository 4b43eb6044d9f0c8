"""Device memory is used with its own device current: arrays on the stand-in's gpu(1)
while device 0 is current (the stand-in raises ValueError, as CuPy, when an array of
device 1 is used while device 0 is current) go through the custom conv / pool /
batchnorm ops, a convolutional executor, the executor's generator, a KVStore of kind
``device``, an optimizer and ``from_dlpack(copy=True)``, giving the CPU's values on
gpu(1)."""
import numpy as np
import pytest

import minpy
import minpy.symbol as sym
from minpy.nn.layers import batchnorm_ops, conv
from minpy.nn import optim
from minpy.symbol import zoo
from minpy.symbol.function import Function

from _standin import installed

GPU1 = minpy.gpu(1)
R = np.random.default_rng(4)
XH, WH = R.standard_normal((2, 3, 6, 6)), R.standard_normal((4, 3, 3, 3))


@pytest.fixture
def gpu():
    with installed() as backend:
        yield backend


def on1(host):
    return minpy.array(host).copyto(GPU1)


def assert_on1_equal(got, want, rtol=1e-10):
    for g, w in zip(got, want):
        assert g.context == GPU1
        np.testing.assert_allclose(g.asnumpy(), np.asarray(w.asnumpy()), rtol=rtol,
                                   atol=1e-12)


def conv_loss(x, w):
    y = conv.conv2d(x, w, pad=1, stride=1)
    y = conv.max_pool(y, 2)
    return minpy.sum(conv.avg_pool(y, pool_size=1) ** 2)


def test_conv_and_pool_ops_and_their_gradients_run_on_the_arrays_device(gpu):
    want = minpy.grad(conv_loss, argnum=[0, 1])(minpy.array(XH), minpy.array(WH))
    gpu.devices_entered.clear()
    got = minpy.grad(conv_loss, argnum=[0, 1])(on1(XH), on1(WH))
    assert_on1_equal(got, want)
    assert set(gpu.devices_entered) == {1}


def test_second_order_conv_gradient_on_the_second_gpu(gpu):
    def gnorm(x, w):
        return minpy.sum(minpy.grad(conv_loss, argnum=1)(x, w) ** 2)
    want = minpy.grad(gnorm, argnum=0)(minpy.array(XH), minpy.array(WH))
    got = minpy.grad(gnorm, argnum=0)(on1(XH), on1(WH))
    assert_on1_equal([got], [want], rtol=1e-8)


def test_batchnorm_op_and_its_gradients_run_on_the_arrays_device(gpu):
    gamma, beta = R.standard_normal(3), R.standard_normal(3)

    def f(x, g, b):
        out, mean, var = batchnorm_ops.batchnorm_train(x, g, b, 1e-5)
        return minpy.sum(out * x) + minpy.sum(mean) + minpy.sum(var)
    want = minpy.grad(f, argnum=[0, 1, 2])(minpy.array(XH), minpy.array(gamma),
                                           minpy.array(beta))
    gpu.devices_entered.clear()
    got = minpy.grad(f, argnum=[0, 1, 2])(on1(XH), on1(gamma), on1(beta))
    assert_on1_equal(got, want)
    assert set(gpu.devices_entered) == {1}


def convnet():
    x = sym.Variable("data")
    h = sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    h = sym.BatchNorm(h, fix_gamma=False, name="bn")
    h = sym.Pooling(sym.Activation(h, act_type="relu"), kernel=(2, 2), stride=(2, 2),
                    pool_type="max")
    h = sym.FullyConnected(sym.Flatten(h), num_hidden=3, name="fc")
    return sym.SoftmaxOutput(h, name="softmax")


def test_a_convolutional_executor_on_the_second_gpu_matches_the_cpu(gpu):
    y = np.array([0., 2.])
    exes = [convnet().simple_bind(ctx, data=XH.shape, type_dict={"data": np.float64})
            for ctx in (minpy.cpu(), GPU1)]
    rng = np.random.default_rng(0)
    for k, a in exes[0].arg_dict.items():
        if k not in ("data", "softmax_label"):
            v = rng.standard_normal(a.shape)
            for e in exes:
                e.arg_dict[k][:] = v
    for e in exes:
        e.forward(is_train=True, data=XH, softmax_label=y)
        e.backward()
    assert_on1_equal(exes[1].outputs, exes[0].outputs)
    names = sorted(exes[0].grad_dict)
    assert_on1_equal([exes[1].grad_dict[k] for k in names], [exes[0].grad_dict[k] for k in names])
    names = sorted(exes[0].aux_dict)
    assert_on1_equal([exes[1].aux_dict[k] for k in names], [exes[0].aux_dict[k] for k in names])


def test_a_symbol_function_on_the_second_gpu_keeps_its_results_there(gpu):
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="fc")
    f = Function(net, {"data": (2, 4)}, dtype=np.float64)
    params = {k: on1(v.asnumpy().astype(np.float64)) for k, v in f.get_params(seed=0).items()}
    x = np.arange(8.0).reshape(2, 4)
    want = x @ params["fc_weight"].asnumpy().T + params["fc_bias"].asnumpy()
    out = f(data=on1(x), **params)
    assert_on1_equal([out], [minpy.array(want)])
    g = minpy.grad(lambda w: minpy.sum(f(data=on1(x), fc_weight=w,
                                         fc_bias=params["fc_bias"])))(params["fc_weight"])
    assert_on1_equal([g], [minpy.array(np.ones((2, 3)).T @ x)])


def test_a_device_kvstore_keeps_a_second_gpu_value_there(gpu):
    w0 = R.standard_normal((2, 3))
    kv = minpy.kvstore.create("device")
    kv.init("w", on1(w0))
    assert kv._store["w"].context == GPU1
    kv.set_optimizer(optim.create("sgd", learning_rate=0.5))
    grads = [on1(np.ones((2, 3))), minpy.array(np.ones((2, 3)))]
    kv.push("w", grads)
    out = [on1(np.zeros((2, 3))), minpy.zeros((2, 3))]
    kv.pull("w", out=out)
    assert out[0].context == GPU1
    for o in out:
        np.testing.assert_allclose(o.asnumpy(), w0 - 0.5 * 2)


def test_an_optimizer_casts_a_gradient_on_the_parameters_device(gpu):
    w = on1(np.ones(3, np.float32))
    optim.create("sgd", learning_rate=1.0).update("w", w, on1(np.full(3, 0.5)))
    assert w.context == GPU1 and w.dtype == np.float32
    np.testing.assert_allclose(w.asnumpy(), np.full(3, 0.5))


def test_from_dlpack_copy_stays_on_the_producers_device(gpu):
    x = on1(np.arange(4.0))
    c = minpy.from_dlpack(x, copy=True)
    assert c.context == GPU1
    c[0] = 7.0
    np.testing.assert_array_equal(x.asnumpy(), np.arange(4.0))
    np.testing.assert_array_equal(c.asnumpy(), [7.0, 1, 2, 3])


ZOO = {
    "lenet": (lambda: zoo.lenet(num_filter=(2, 3), num_hidden=8), {"data": (2, 1, 16, 16)}),
    "resnet": (lambda: zoo.resnet(8, 4, (3, 8, 8), filter_list=[2, 4, 4, 4]),
               {"data": (2, 3, 8, 8)}),
    "lstm_lm": (lambda: zoo.lstm_lm(3, 6, 4, 5, 2, dropout=0.0), zoo.lstm_lm_shapes(2, 3, 5, 2)),
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_executors_on_the_second_gpu_match_the_cpu(gpu, name):
    make, shapes = ZOO[name]
    net = make()
    cpu, dev = (net.simple_bind(ctx, **shapes) for ctx in (minpy.cpu(), GPU1))
    rng = np.random.default_rng(0)

    def value(k, a):
        if k == "softmax_label" or (k == "data" and "embed_weight" in cpu.arg_dict):
            return rng.integers(0, 3, a.shape).astype(a.dtype)       # class / word ids
        return rng.standard_normal(a.shape).astype(a.dtype)
    vals = {k: value(k, a) for k, a in cpu.arg_dict.items()}
    for exe in (cpu, dev):
        exe.copy_params_from(vals)
        exe.forward(is_train=True)
        exe.backward()
    assert_on1_equal(dev.outputs[:1], cpu.outputs[:1], rtol=1e-4)
    for k, g in cpu.grad_dict.items():
        assert dev.grad_dict[k].context == GPU1
        np.testing.assert_allclose(dev.grad_dict[k].asnumpy(), g.asnumpy(), rtol=1e-3,
                                   atol=1e-4, err_msg=k)
