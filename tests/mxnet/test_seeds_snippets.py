"""The MXNet code of the documents minpy was designed from, run verbatim with
``import minpy.mxnet as mx``: the MXNet/MinPy talk's slides, the backend-optimization
slides and the MXNet paper (``../shared/seeds/``, beside the checkout).

Only data and names the slides leave undefined are stood in for, each marked
``# stand-in`` (``data_shape``, ``train_iter``, ``update_keys``, ``learning_rate``,
``copy_data_slice``, the elided arguments of ``bind()`` and ``set_updater(...)``);
GPUs are ``mx.cpu(i)``. Every result is checked against NumPy. Not run: the talk's
``mx.th`` (MXNet's Torch plugin), MinPy's ``minpy.core.function(sigmoid, ...)`` (elided
arguments; ``tests/core`` covers big operators) and the paper's C-like pseudo-code
(``while(1){ kv.pull(net.w); ... }``: the talk's data-parallel loop below is its Python).
"""
import numpy as np
import pytest

import minpy
import minpy.mxnet as mx


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def fc_softmax_grads(x, y, w, b):
    """NumPy's gradients of FullyConnected + SoftmaxOutput (MXNet's: softmax - onehot,
    summed over the batch)."""
    g = softmax(x @ w.T + b)
    g[np.arange(len(y)), y.astype(int)] -= 1
    return g.T @ x, g.sum(axis=0)


# ------------------------------------------------------------------ the talk
def test_talk_imperative_ndarray_api():
    a = mx.nd.zeros((100, 50))
    assert a.shape == (100, 50)                # the slide's Python 2 shows (100L, 50L)
    b = mx.nd.ones((100, 50))
    c = a + b
    b += c
    np.testing.assert_array_equal(c.asnumpy(), np.ones((100, 50), np.float32))
    np.testing.assert_array_equal(b.asnumpy(), np.full((100, 50), 2, np.float32))


def test_talk_declarative_symbolic_executor():
    data_shape = (32, 100)                                   # stand-in
    net = mx.symbol.Variable('data')
    net = mx.symbol.FullyConnected(data=net, num_hidden=128)
    net = mx.symbol.SoftmaxOutput(data=net)
    assert type(net).__name__ == "Symbol" and isinstance(net, mx.symbol.Symbol)
    texec = net.simple_bind(data=data_shape)
    # (the auto-names' numbers depend on the symbols made before)
    shapes = [texec.arg_dict[k].shape for k in net.list_arguments()]
    assert shapes == [(32, 100), (128, 100), (128,), (32,)]
    assert net.list_arguments()[0] == "data" and net.list_arguments()[3].endswith("_label")
    texec.arg_dict["data"][:] = 1
    texec.forward()
    np.testing.assert_allclose(texec.outputs[0].asnumpy().sum(axis=1), 1, rtol=1e-5)


def test_talk_mixed_style_training_loop():
    rs = np.random.RandomState(0)
    x = rs.normal(size=(40, 6)).astype(np.float32)
    y = rs.randint(0, 3, 40).astype(np.float32)
    w0 = rs.normal(scale=0.1, size=(3, 6)).astype(np.float32)
    # stand-ins: the network, bind()'s elided arguments, the iterator and the names
    data = mx.symbol.Variable('data')
    net = mx.symbol.FullyConnected(data=data, num_hidden=3, name='fc')
    net = mx.symbol.SoftmaxOutput(data=net, name='softmax')

    class declarative_symbol:
        @staticmethod
        def bind():
            exe = net.simple_bind(mx.cpu(), data=(10, 6))
            exe.arg_dict["fc_weight"][:] = w0
            exe.arg_dict["fc_bias"][:] = 0
            return exe
    train_iter = mx.io.NDArrayIter(x, y, batch_size=10)
    learning_rate = 0.1
    update_keys = ["fc_weight", "fc_bias"]

    executor = declarative_symbol.bind()
    args, grads = executor.arg_dict, executor.grad_dict     # stand-in
    # the slide, verbatim
    for i in range(3):
        train_iter.reset()
        for dbatch in train_iter:
            args["data"][:] = dbatch.data[0]
            args["softmax_label"][:] = dbatch.label[0]
            executor.forward(is_train=True)
            executor.backward()
        for key in update_keys:
            args[key] -= learning_rate * grads[key]
    # NumPy: the update after each epoch uses the last batch's gradients (the slide's
    # indentation)
    w, b = w0.astype(np.float64), np.zeros(3)
    for _ in range(3):
        gw, gb = fc_softmax_grads(x[30:], y[30:], w, b)
        w, b = w - learning_rate * gw, b - learning_rate * gb
    np.testing.assert_allclose(args["fc_weight"].asnumpy(), w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(args["fc_bias"].asnumpy(), b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_talk_auto_parallelization(asynchronous):
    with minpy.async_mode(asynchronous):
        A = mx.nd.ones((2,2)) *2  # noqa: E225,E231
        C = A + 2
        B = A + 1
        D = B * C
        np.testing.assert_array_equal(D.asnumpy(), np.full((2, 2), 12, np.float32))

        A = mx.nd.ones((2,2)) *2  # noqa: E225,E231
        C = A + 2
        B = A + 1
        del A
        np.testing.assert_array_equal(C.asnumpy(), np.full((2, 2), 4, np.float32))
        np.testing.assert_array_equal(B.asnumpy(), np.full((2, 2), 3, np.float32))


def test_talk_uniform_shape_first():
    # MXNet 1.9.1 refuses this form (a tuple as low); minpy reads it as the talk means
    # it: samples of `shape` over [-10, 10)
    shape = (500, 4)                                        # stand-in
    mx.random.seed(7)
    A = mx.nd.uniform(shape, 10, -10)
    B = mx.nd.uniform(shape, 10, -10)
    for X in (A, B):
        v = X.asnumpy()
        assert X.shape == shape and X.dtype == np.float32
        assert v.min() >= -10 and v.max() < 10 and v.min() < -9 and v.max() > 9
    assert not np.array_equal(A.asnumpy(), B.asnumpy())
    mx.random.seed(7)
    np.testing.assert_array_equal(mx.nd.uniform(shape, 10, -10).asnumpy(), A.asnumpy())
    # MXNet 1.9.1's own order draws the same numbers
    mx.random.seed(7)
    np.testing.assert_array_equal(mx.nd.uniform(-10, 10, shape).asnumpy(), A.asnumpy())
    mx.random.seed(7)
    n = mx.nd.normal((2000,), 1.0, 0.5, mx.cpu(), "float64").asnumpy()
    assert n.dtype == np.float64 and abs(n.mean() - 1) < 0.05 and abs(n.std() - 0.5) < 0.05
    with pytest.raises(TypeError, match=r"mx\.nd\.uniform\(\) got multiple values for 'shape'"):
        mx.nd.uniform(shape, 10, -10, shape=shape)
    with pytest.raises(TypeError, match="the bounds must be numbers"):
        mx.nd.uniform(shape, mx.nd.ones(shape), 10)


def test_talk_data_parallel_kvstore_loop():
    rs = np.random.RandomState(1)
    x = rs.normal(size=(24, 5)).astype(np.float32)
    y = rs.randint(0, 4, 24).astype(np.float32)
    w0 = rs.normal(scale=0.1, size=(4, 5)).astype(np.float32)
    ngpu, learning_rate, per = 2, 0.05, 6
    # stand-ins: the network, bind()'s elided arguments (an executor naming its arrays
    # as the slide does), the updater, the store, the iterator, copy_data_slice
    data = mx.symbol.Variable('data')
    net = mx.symbol.SoftmaxOutput(mx.symbol.FullyConnected(data, num_hidden=4, name='fc'),
                                  name='softmax')

    class symbol:
        @staticmethod
        def bind(ctx):
            exe = net.simple_bind(ctx, data=(per, 5))
            exe.weight_array, exe.grad_array = exe.arg_dict, exe.grad_dict
            return exe

    def update(key, grad, weight):          # w -= learning_rate * grad
        weight -= learning_rate * grad

    update_keys = ["fc_weight", "fc_bias"]
    kvstore = mx.kv.create('local')
    kvstore.init("fc_weight", mx.nd.array(w0))
    kvstore.init("fc_bias", mx.nd.zeros((4,)))
    train_iter = mx.io.NDArrayIter(x, y, batch_size=per * ngpu)

    def copy_data_slice(dbatch, exe):
        i = execs.index(exe)
        exe.arg_dict["data"][:] = dbatch.data[0][i * per:(i + 1) * per]
        exe.arg_dict["softmax_label"][:] = dbatch.label[0][i * per:(i + 1) * per]

    # the slide, verbatim (mx.cpu(i) for mx.gpu(i), `update` for the elided `...`)
    # create executor for each GPU
    execs = [symbol.bind(mx.cpu(i)) for i in range(ngpu)]
    # w -= learning_rate * grad
    kvstore.set_updater(update)
    # iterating on data
    for dbatch in train_iter:
        # iterating on GPUs
        for i in range(ngpu):
            # read a data partition
            copy_data_slice(dbatch, execs[i])
            # pull the parameters
            for key in update_keys:
                kvstore.pull(key, execs[i].weight_array[key])
            # compute the gradient
            execs[i].forward(is_train=True)
            execs[i].backward()
            # push the gradient
            for key in update_keys:
                kvstore.push(key, execs[i].grad_array[key])

    assert [e._ctx for e in execs] == [mx.cpu(0), mx.cpu(1)]     # MXNet's private name too
    # NumPy: each slice pulls the weights its predecessor's push updated
    w, b = w0.astype(np.float64), np.zeros(4)
    for s in range(0, 24, per):
        gw, gb = fc_softmax_grads(x[s:s + per], y[s:s + per], w, b)
        w, b = w - learning_rate * gw, b - learning_rate * gb
    out = mx.nd.zeros((4, 5))
    kvstore.pull("fc_weight", out)
    np.testing.assert_allclose(out.asnumpy(), w, rtol=1e-4, atol=1e-5)
    out = mx.nd.zeros((4,))
    kvstore.pull("fc_bias", out)
    np.testing.assert_allclose(out.asnumpy(), b, rtol=1e-4, atol=1e-5)


# ------------------------------------------------- the backend-optimization slides
def test_backend_slides_ndarray_and_module():
    a = mx.nd.zeros((100, 50))
    b = mx.nd.ones((100, 50))
    c = a * b
    c += 1
    np.testing.assert_array_equal(c.asnumpy(), np.ones((100, 50), np.float32))
    net = mx.symbol.Variable('data')
    net = mx.symbol.FullyConnected(data=net, num_hidden=128)
    net = mx.symbol.SoftmaxOutput(data=net)
    texec = mx.module.Module(net, label_names=None)
    # the slide's texec.forward(data=c) is shorthand: Module.forward takes a DataBatch, in
    # MXNet 1.9.1 too (TypeError there as here)
    with pytest.raises(TypeError, match="data"):
        texec.forward(data=c)
    with pytest.raises(RuntimeError, match="Module.backward: the module is not bound"):
        texec.backward()


# ------------------------------------------------------------------ the paper
def test_paper_ndarray_interface(capsys):
    a = mx.nd.ones((2, 3),
                   mx.cpu(1))                 # stand-in: mx.gpu()
    print((a * 2).asnumpy())                  # the paper's Python 2: print (a * 2).asnumpy()
    assert capsys.readouterr().out == "[[2. 2. 2.]\n [2. 2. 2.]]\n"
    # host memory is one in minpy: its arrays say cpu(0) where MXNet's say cpu(1)
    assert a.context.device_type == "cpu"
