"""minpy.symbol.function (also minpy.core.Function): symbols as big operators inside grad / grad_and_loss."""
import numpy
import pytest

import minpy as np
import minpy.symbol as sym
from minpy.symbol import Function, function
from minpy.testing import check_grads
from _host import host
from _standin import standin_gpu  # noqa: F401  (fixture)

RNG = numpy.random.default_rng(0)


def _arr(*shape, dtype=numpy.float64, rng=RNG):
    return np.array(rng.normal(size=shape).astype(dtype))


def _close(a, b, tol=1e-10):
    numpy.testing.assert_allclose(host(a), host(b), rtol=tol, atol=tol)


# ------------------------------------------------------------------ models
def mlp_symbol():
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=16, name="fc1")
    net = sym.Activation(net, act_type="tanh", name="tanh1")
    return sym.FullyConnected(net, num_hidden=5, name="fc2")


def mlp_ref(p, x):
    h = np.tanh(np.dot(x, p["fc1_weight"].T) + p["fc1_bias"])
    return np.dot(h, p["fc2_weight"].T) + p["fc2_bias"]


def conv_symbol():
    net = sym.Convolution(sym.Variable("data"), kernel=(3, 3), pad=(1, 1), num_filter=3,
                          name="conv1")
    net = sym.Activation(net, act_type="tanh", name="tanh1")
    net = sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool1")
    return sym.FullyConnected(sym.Flatten(net), num_hidden=4, name="fc1")


def conv_ref(p, x):
    """The same network written with minpy functions (the tape differentiates it)."""
    w, b = p["conv1_weight"], p["conv1_bias"]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = x.shape[2], x.shape[3]
    out = 0
    for a in range(3):
        for c in range(3):
            out = out + np.einsum("nchw,fc->nfhw", xp[:, :, a:a + oh, c:c + ow], w[:, :, a, c])
    h = np.tanh(out + np.reshape(b, (1, -1, 1, 1)))
    n, f = h.shape[:2]
    h = np.mean(np.reshape(h, (n, f, oh // 2, 2, ow // 2, 2)), axis=(3, 5))
    return np.dot(np.reshape(h, (n, -1)), p["fc1_weight"].T) + p["fc1_bias"]


def xent(logits, y):
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(len(y)), y])


@pytest.fixture
def mlp():
    f = function(mlp_symbol(), {"data": (6, 7)})
    return f, f.get_params(seed=1, dtype=numpy.float64), _arr(6, 7)


@pytest.fixture
def conv():
    f = function(conv_symbol(), {"data": (2, 2, 4, 4)})
    return f, f.get_params(seed=2, dtype=numpy.float64), _arr(2, 2, 4, 4)


# ----------------------------------------------------------------- forward
def test_shapes_and_params(mlp):
    f, p, _ = mlp
    assert isinstance(f, Function)
    assert f.arg_shapes == {"data": (6, 7), "fc1_weight": (16, 7), "fc1_bias": (16,),
                            "fc2_weight": (5, 16), "fc2_bias": (5,)}
    assert f.output_shapes == {"fc2_output": (6, 5)}
    assert set(p) == set(f.param_shapes) == set(f.arg_shapes) - {"data"}
    assert all(p[k].shape == s and p[k].dtype == numpy.float64 for k, s in f.param_shapes.items())
    assert not p["fc1_bias"].asnumpy().any() and p["fc1_weight"].asnumpy().std() > 0.05


def test_forward_equals_executor_and_pure_minpy(mlp):
    f, p, x = mlp
    out = f(data=x, **p)
    assert isinstance(out, np.Array) and out.shape == (6, 5) and out.dtype == numpy.float64
    exe = mlp_symbol().simple_bind(None, type_dict={"data": numpy.float64}, data=(6, 7))
    exe.copy_params_from(p)
    _close(out, exe.forward(data=x)[0])
    _close(out, mlp_ref(p, x))


def test_conv_forward_equals_pure_minpy(conv):
    f, p, x = conv
    _close(f(data=x, **p), conv_ref(p, x))


def test_outputs_are_copies(mlp):
    f, p, x = mlp
    first = f(data=x, **p)
    kept = first.asnumpy().copy()
    f(data=x * 3, **p)
    _close(first, kept, 0)


# -------------------------------------------------------------- gradients
def test_grads_equal_pure_minpy_mlp(mlp):
    f, p, x = mlp
    g, loss = np.grad_and_loss(lambda p: np.sum(np.tanh(f(data=x, **p))))(p)
    g_ref, loss_ref = np.grad_and_loss(lambda p: np.sum(np.tanh(mlp_ref(p, x))))(p)
    _close(loss, loss_ref)
    assert set(g) == set(p)
    for k in p:
        assert g[k].shape == p[k].shape and g[k].dtype == p[k].dtype
        _close(g[k], g_ref[k])


def _positional(f, names):
    def fn(*arrays):
        return f(**dict(zip(names, arrays)))
    return fn


def test_check_grads_mlp(mlp):
    f, p, x = mlp
    names = ["data"] + list(p)
    check_grads(_positional(f, names), x, *p.values(), order=1)


def test_check_grads_conv(conv):
    f, p, x = conv
    names = ["data"] + list(p)
    check_grads(_positional(f, names), x, *p.values(), order=1)


def test_conv_grads_equal_pure_minpy(conv):
    f, p, x = conv
    y = np.array([0, 3])
    g, loss = np.grad_and_loss(lambda p, x: xent(f(data=x, **p), y), argnum=(0, 1))(p, x)
    g_ref, loss_ref = np.grad_and_loss(lambda p, x: xent(conv_ref(p, x), y), argnum=(0, 1))(p, x)
    _close(loss, loss_ref)
    _close(g[1], g_ref[1])
    for k in p:
        _close(g[0][k], g_ref[0][k])


def test_numpy_glue_between_two_functions():
    """f2(tanh(f1(x)) * 2) with the loss in NumPy: two big operators and small ops."""
    f1 = function(sym.FullyConnected(sym.Variable("data"), num_hidden=8, name="a"),
                  {"data": (5, 4)})
    f2 = function(sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="b"),
                  {"data": (5, 8)})
    p1, p2 = f1.get_params(seed=3, dtype="float64"), f2.get_params(seed=4, dtype="float64")
    x, y = _arr(5, 4), np.array([0, 1, 2, 1, 0])

    def loss(p1, p2):
        h = np.tanh(f1(data=x, **p1)) * 2
        return xent(f2(data=h, **p2), y) + 0.1 * np.sum(p1["a_weight"] ** 2)

    def loss_ref(p1, p2):
        h = np.tanh(np.dot(x, p1["a_weight"].T) + p1["a_bias"]) * 2
        return xent(np.dot(h, p2["b_weight"].T) + p2["b_bias"], y) + \
            0.1 * np.sum(p1["a_weight"] ** 2)
    g, loss_v = np.grad_and_loss(loss, argnum=(0, 1))(p1, p2)
    g_ref, loss_r = np.grad_and_loss(loss_ref, argnum=(0, 1))(p1, p2)
    _close(loss_v, loss_r)
    for a, b in zip(g, g_ref):
        for k in a:
            _close(a[k], b[k])


def test_same_function_twice_in_one_grad(mlp):
    f, p, x = mlp
    x2 = _arr(6, 7)

    def loss(p):
        return np.sum(f(data=x, **p) * f(data=x2, **p))
    g, _ = np.grad_and_loss(loss)(p)
    g_ref, _ = np.grad_and_loss(lambda p: np.sum(mlp_ref(p, x) * mlp_ref(p, x2)))(p)
    for k in p:
        _close(g[k], g_ref[k])
    assert f.num_executors == 2 and f.bind_count == 1
    for _ in range(3):          # executors go back to the pool after each backward
        np.grad_and_loss(loss)(p)
    assert f.num_executors == 2


def test_multi_output_returns_tuple():
    data = sym.Variable("data")
    a = sym.FullyConnected(data, num_hidden=3, name="a")
    b = sym.FullyConnected(data, num_hidden=2, name="b")
    f = function(sym.Group([a, sym.tanh(b)]), {"data": (4, 5)})
    p, x = f.get_params(seed=5, dtype="float64"), _arr(4, 5)
    out = f(data=x, **p)
    assert isinstance(out, tuple) and [o.shape for o in out] == [(4, 3), (4, 2)]

    def loss(p):
        u, v = f(data=x, **p)
        return np.sum(u ** 2) + np.sum(v * 3)

    def loss_ref(p):
        u = np.dot(x, p["a_weight"].T) + p["a_bias"]
        v = np.tanh(np.dot(x, p["b_weight"].T) + p["b_bias"])
        return np.sum(u ** 2) + np.sum(v * 3)
    g, g_ref = np.grad(loss)(p), np.grad(loss_ref)(p)
    for k in p:
        _close(g[k], g_ref[k])


def test_untraced_argument_gets_no_gradient_work(mlp):
    """Gradients are computed only where needed: data is not planned until traced."""
    f, p, x = mlp
    np.grad(lambda p: np.sum(f(data=x, **p)))(p)
    assert f.bind_count == 1
    gx = np.grad(lambda x: np.sum(f(data=x, **p)))(x)
    gx_ref = np.grad(lambda x: np.sum(mlp_ref(p, x)))(x)
    _close(gx, gx_ref)
    assert f.bind_count == 2      # promoted once for the traced input
    np.grad(lambda x: np.sum(f(data=x, **p)))(x)
    np.grad(lambda p: np.sum(f(data=x, **p)))(p)
    assert f.bind_count == 2


def test_jacobian_through_function(mlp):
    f, p, x = mlp
    b = p["fc2_bias"]
    rest = {k: v for k, v in p.items() if k != "fc2_bias"}
    J = np.jacobian(lambda b: np.tanh(f(data=x, fc2_bias=b, **rest))[0])(b)
    J_ref = np.jacobian(lambda b: np.tanh(mlp_ref(dict(rest, fc2_bias=b), x))[0])(b)
    _close(J, J_ref)


def test_jacobian_replay_does_not_update_aux_twice():
    f = _bn_function()
    p, x = f.get_params(dtype="float64"), _arr(8, 3)
    J = np.jacobian(lambda beta: f(data=x, bn_gamma=p["bn_gamma"], bn_beta=beta)[0])(
        p["bn_beta"])
    _close(J, numpy.eye(3))
    _close(f.aux_params["bn_moving_mean"], 0.1 * x.asnumpy().mean(0))   # one update, 3 rows


def test_jacobian_of_stochastic_training_call_refuses_replay():
    net = sym.Dropout(sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="fc"), p=0.5)
    f = function(net, {"data": (4, 2)})
    p, x = f.get_params(seed=0, dtype="float64"), _arr(4, 2)
    with pytest.raises(RuntimeError, match="Dropout"):
        np.jacobian(lambda b: f(data=x, fc_weight=p["fc_weight"], fc_bias=b)[0])(p["fc_bias"])


def test_dropped_call_returns_its_executor(mlp):
    f, p, x = mlp

    def loss(p):
        f(data=x, **p)                  # traced, never differentiated
        return np.sum(f(data=x, **p))
    for _ in range(4):
        np.grad(loss)(p)
    assert f.num_executors == 2


# ------------------------------------------------------------- bind once
def test_bound_once_per_shape(mlp):
    f, p, x = mlp
    step = np.grad_and_loss(lambda p, x: np.sum(f(data=x, **p) ** 2))
    for _ in range(10):
        step(p, x)
        f(data=x, **p)              # inference outside the tape reuses the plan
    assert f.bind_count == 1 and f.num_executors == 1
    x9 = _arr(9, 7)
    g, _ = step(p, x9)
    assert f.bind_count == 2
    g_ref, _ = np.grad_and_loss(lambda p: np.sum(mlp_ref(p, x9) ** 2))(p)
    _close(g["fc1_weight"], g_ref["fc1_weight"])
    step(p, x)
    step(p, x9)
    assert f.bind_count == 2


# -------------------------------------------------------------- BatchNorm
def _bn_function():
    net = sym.BatchNorm(sym.Variable("data"), fix_gamma=False, momentum=0.9, eps=1e-5,
                        name="bn")
    return function(net, {"data": (8, 3)}, dtype="float64")


def test_batchnorm_aux_updated_in_training_only():
    f = _bn_function()
    p, x = f.get_params(dtype="float64"), _arr(8, 3) * 2 + 1
    mm, mv = f.aux_params["bn_moving_mean"], f.aux_params["bn_moving_var"]
    assert mm.asnumpy().tolist() == [0, 0, 0] and mv.asnumpy().tolist() == [1, 1, 1]
    xn = x.asnumpy()
    # eval outside a tape: moving stats used, not changed
    _close(f(data=x, **p), xn / numpy.sqrt(1 + 1e-5))
    assert mm.asnumpy().tolist() == [0, 0, 0]
    # under a tape: training mode, batch statistics, aux updated once
    np.grad(lambda p: np.sum(f(data=x, **p) ** 3))(p)
    _close(mm, 0.1 * xn.mean(0))
    _close(mv, 0.9 + 0.1 * xn.var(0))
    # explicit modes override the tape
    f.eval()
    np.grad(lambda p: np.sum(f(data=x, **p) ** 3))(p)
    _close(mm, 0.1 * xn.mean(0))
    f.train()
    out = f(data=x, **p)
    _close(out, (xn - xn.mean(0)) / numpy.sqrt(xn.var(0) + 1e-5))
    _close(mm, 0.19 * xn.mean(0))
    f.train(None)
    f(data=x, is_train=True, **p)
    _close(mm, 0.271 * xn.mean(0))


def test_aux_params_move_between_devices_in_place(standin_gpu):
    """A call on another device moves the aux states there as the same Arrays: a
    reference taken before the call sees its updates."""
    f = _bn_function()
    p, xn = f.get_params(dtype="float64"), RNG.normal(size=(8, 3)) * 2 + 1
    mm = f.aux_params["bn_moving_mean"]
    np.grad(lambda p: np.sum(f(data=np.array(xn).copyto(np.gpu(0)), **p) ** 3))(p)
    assert f.aux_params["bn_moving_mean"] is mm and mm.context == np.gpu(0)
    _close(mm, 0.1 * xn.mean(0))
    f(data=np.array(xn).copyto(np.cpu()), is_train=True, **p)   # back on the host
    assert f.aux_params["bn_moving_mean"] is mm and mm.context == np.cpu()
    _close(mm, 0.19 * xn.mean(0))


def test_batchnorm_grads_and_shared_aux_across_binds():
    f = _bn_function()
    p, x = f.get_params(dtype="float64"), _arr(8, 3)
    g = np.grad(lambda gamma: np.sum(f(data=x, bn_gamma=gamma, bn_beta=p["bn_beta"]) ** 3))(
        p["bn_gamma"])
    xn = x.asnumpy()
    xhat = (xn - xn.mean(0)) / numpy.sqrt(xn.var(0) + 1e-5)
    _close(g, (3 * xhat ** 3).sum(0), 1e-8)
    f(data=_arr(5, 3), is_train=True, **p)      # another batch size: same aux arrays
    assert f.bind_count == 2 and len(f.aux_params) == 2
    assert not numpy.allclose(f.aux_params["bn_moving_mean"].asnumpy(), 0.1 * xn.mean(0))


# ----------------------------------------------------------------- errors
def test_missing_and_unknown_names(mlp):
    f, p, x = mlp
    with pytest.raises(TypeError, match="fc2_bias"):
        f(data=x, **{k: v for k, v in p.items() if k != "fc2_bias"})
    with pytest.raises(TypeError, match="fc3_weight"):
        f(data=x, fc3_weight=x, **p)
    with pytest.raises(TypeError, match="positional"):
        f(x, **p)
    with pytest.raises(TypeError, match="labels"):
        function(mlp_symbol(), {"data": (6, 7), "labels": (6,)})


def test_wrong_shape_names_the_node(conv):
    f, p, x = conv
    with pytest.raises(sym.ShapeError, match="conv1"):
        f(data=_arr(2, 3, 4, 4), **p)
    with pytest.raises(sym.ShapeError, match="fc1"):
        f(data=x, **dict(p, fc1_weight=_arr(4, 5)))
    assert f.bind_count == 0


def test_grad_of_grad_raises(mlp):
    f, p, x = mlp
    b = p["fc2_bias"]
    rest = {k: v for k, v in p.items() if k != "fc2_bias"}

    def inner(b):
        return np.sum(np.tanh(f(data=x, fc2_bias=b, **rest)))
    with pytest.raises(TypeError, match="grad of grad"):
        np.grad(lambda b: np.sum(np.grad(inner)(b)))(b)
