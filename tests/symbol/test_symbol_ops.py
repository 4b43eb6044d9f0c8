"""Every symbol operator: forward against an independent NumPy reference, and
its graph-built gradient against central differences (float64)."""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import minpy as mp
import minpy.symbol as sym
from minpy.symbol import check_symbol_forward, check_symbol_grad

R = np.random.default_rng(1234)


def rnd(*shape):
    return R.standard_normal(shape)


def pos(*shape):
    return R.uniform(0.5, 2.0, shape)


X, Y = sym.Variable("x"), sym.Variable("y")


# ------------------------------------------------------------ NumPy references
def ref_conv(x, w, b, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for b_ in range(n):
        for o in range(f):
            g = o // fg
            for i in range(oh):
                for j in range(ow):
                    r0, c0 = i * stride[0], j * stride[1]
                    patch = xp[b_, g * cg:(g + 1) * cg,
                               r0:r0 + dilate[0] * (kh - 1) + 1:dilate[0],
                               c0:c0 + dilate[1] * (kw - 1) + 1:dilate[1]]
                    out[b_, o, i, j] = (patch * w[o]).sum() + (0 if b is None else b[o])
    return out


def ref_pool(x, kernel, stride, pad, kind, full=False):
    n, c, h, w = x.shape
    kh, kw = kernel
    oh = [(h + 2 * pad[0] - kh) // stride[0] + 1, -(-(h + 2 * pad[0] - kh) // stride[0]) + 1][full]
    ow = [(w + 2 * pad[1] - kw) // stride[1] + 1, -(-(w + 2 * pad[1] - kw) // stride[1]) + 1][full]
    fill = -np.inf if kind == "max" else 0.0
    xp = np.full((n, c, h + 2 * pad[0] + kh, w + 2 * pad[1] + kw), fill)
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w] = x
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
            # MXNet's average divides by the window's part inside the padded input
            # (only the 'full' convention's last windows reach past it)
            area = (max(1, min(i * stride[0] + kh, h + 2 * pad[0]) - i * stride[0])
                    * max(1, min(j * stride[1] + kw, w + 2 * pad[1]) - j * stride[1]))
            # (a 'full' window wholly past the input is empty: max -inf, sum 0)
            out[:, :, i, j] = {"max": win.max((2, 3), initial=-np.inf), "sum": win.sum((2, 3)),
                               "avg": win.sum((2, 3)) / area}[kind]
    return out


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ------------------------------------------------------------------- the table
# (id, symbol, location, reference(loc) -> list of outputs, grad-check kwargs)
def _fc(flatten=True, no_bias=False):
    s = sym.FullyConnected(X, num_hidden=3, flatten=flatten, no_bias=no_bias, name="fc")
    loc = {"x": rnd(2, 2, 2), "fc_weight": rnd(3, 4 if flatten else 2)}
    if not no_bias:
        loc["fc_bias"] = rnd(3)

    def ref(l):
        x = l["x"].reshape(2, -1) if flatten else l["x"]
        return [x @ l["fc_weight"].T + l.get("fc_bias", 0)]
    return s, loc, ref


def _conv(stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1, no_bias=False):
    s = sym.Convolution(X, kernel=(3, 2), num_filter=4, stride=stride, pad=pad, dilate=dilate,
                        num_group=groups, no_bias=no_bias, name="cv")
    loc = {"x": rnd(2, 2, 6, 5), "cv_weight": rnd(4, 2 // groups, 3, 2)}
    if not no_bias:
        loc["cv_bias"] = rnd(4)
    return s, loc, lambda l: [ref_conv(l["x"], l["cv_weight"], l.get("cv_bias"), stride, pad,
                                       dilate, groups)]


def _pool(kind, kernel=(2, 2), stride=(2, 2), pad=(0, 0), full=False):
    s = sym.Pooling(X, kernel=kernel, stride=stride, pad=pad, pool_type=kind,
                    pooling_convention="full" if full else "valid")
    return s, {"x": rnd(2, 2, 5, 5)}, lambda l: [ref_pool(l["x"], kernel, stride, pad, kind,
                                                          full)]


def _unary(fn, ref, data=None):
    return fn(X), {"x": rnd(2, 3) if data is None else data}, lambda l: [ref(l["x"])]


def _binary(fn, ref, sx=(2, 3), sy=(2, 3), positive=False):
    g = pos if positive else rnd
    return fn(X, Y), {"x": g(*sx), "y": g(*sy)}, lambda l: [ref(l["x"], l["y"])]


def _bn(train, fix_gamma, global_stats=False):
    s = sym.BatchNorm(X, fix_gamma=fix_gamma, use_global_stats=global_stats, eps=1e-3,
                      name="bn")
    loc = {"x": rnd(3, 2, 2, 2), "bn_gamma": pos(2), "bn_beta": rnd(2)}
    aux = {"bn_moving_mean": rnd(2), "bn_moving_var": pos(2)}

    def ref(l):
        x = l["x"]
        if train and not global_stats:
            m, v = x.mean((0, 2, 3)), x.var((0, 2, 3))
        else:
            m, v = aux["bn_moving_mean"], aux["bn_moving_var"]
        g = 1.0 if fix_gamma else l["bn_gamma"]
        sh = (1, -1, 1, 1)
        return [(x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + 1e-3) * np.reshape(g, (1, -1, 1, 1))
                + l["bn_beta"].reshape(sh)]
    return s, loc, ref, aux


CASES = {
    "FullyConnected": _fc(),
    "FullyConnected-no_bias": _fc(no_bias=True),
    "FullyConnected-noflatten": _fc(flatten=False),
    "Convolution": _conv(),
    "Convolution-stride-pad": _conv(stride=(2, 1), pad=(1, 2)),
    "Convolution-dilate-group": _conv(dilate=(2, 1), groups=2, no_bias=True),
    "Pooling-max": _pool("max"),
    "Pooling-max-pad-stride1": _pool("max", (3, 3), (1, 1), (1, 1)),
    "Pooling-avg": _pool("avg", (3, 3), (2, 2), (1, 1)),
    "Pooling-sum-full": _pool("sum", (2, 2), (2, 2), (0, 0), full=True),
    "Pooling-global": (sym.Pooling(X, global_pool=True, pool_type="avg"), {"x": rnd(2, 3, 3, 2)},
                       lambda l: [l["x"].mean((2, 3), keepdims=True)]),
    "Activation-relu": _unary(lambda x: sym.Activation(x, act_type="relu"),
                              lambda x: np.maximum(x, 0)),
    "Activation-sigmoid": _unary(lambda x: sym.Activation(x, act_type="sigmoid"), sigmoid),
    "Activation-tanh": _unary(lambda x: sym.Activation(x, act_type="tanh"), np.tanh),
    "Activation-softrelu": _unary(lambda x: sym.Activation(x, act_type="softrelu"),
                                  lambda x: np.log1p(np.exp(x))),
    "LeakyReLU": _unary(lambda x: sym.LeakyReLU(x, slope=0.1),
                        lambda x: np.where(x > 0, x, 0.1 * x)),
    "LeakyReLU-elu": _unary(lambda x: sym.LeakyReLU(x, act_type="elu", slope=0.5),
                            lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "Flatten": _unary(sym.Flatten, lambda x: x.reshape(2, -1), rnd(2, 3, 2)),
    "Reshape": _unary(lambda x: sym.Reshape(x, shape=(0, -1)), lambda x: x.reshape(2, 6),
                      rnd(2, 3, 2)),
    "Reshape-special": _unary(lambda x: sym.Reshape(x, shape=(-3, -4, 2, -1)),
                              lambda x: x.reshape(6, 2, 1), rnd(2, 3, 2)),
    "transpose": _unary(lambda x: sym.transpose(x, axes=(1, 2, 0)),
                        lambda x: x.transpose(1, 2, 0), rnd(2, 3, 4)),
    "Concat": (sym.Concat(X, Y, sym.Variable("z"), dim=1), {"x": rnd(2, 1), "y": rnd(2, 3),
                                                            "z": rnd(2, 2)},
               lambda l: [np.concatenate([l["x"], l["y"], l["z"]], 1)]),
    "SliceChannel": (sym.SliceChannel(X, num_outputs=3, axis=1), {"x": rnd(2, 6)},
                     lambda l: list(np.split(l["x"], 3, axis=1))),
    "SliceChannel-squeeze": (sym.SliceChannel(X, num_outputs=3, axis=0, squeeze_axis=True),
                             {"x": rnd(3, 2)}, lambda l: [l["x"][i] for i in range(3)]),
    "SliceChannel-partial": (sym.SliceChannel(X, num_outputs=2)[1], {"x": rnd(2, 4)},
                             lambda l: [l["x"][:, 2:]]),
    "sum": _unary(lambda x: sym.sum(x, axis=1), lambda x: x.sum(1), rnd(2, 3, 2)),
    "sum-all": _unary(sym.sum, lambda x: x.sum(), rnd(2, 3)),
    "mean-keepdims": _unary(lambda x: sym.mean(x, axis=(0, 2), keepdims=True),
                            lambda x: x.mean((0, 2), keepdims=True), rnd(2, 3, 2)),
    "dot": _binary(sym.dot, lambda a, b: a @ b, (2, 3), (3, 4)),
    "dot-ta": _binary(lambda a, b: sym.dot(a, b, transpose_a=True), lambda a, b: a.T @ b,
                      (3, 2), (3, 4)),
    "dot-tb": _binary(lambda a, b: sym.dot(a, b, transpose_b=True), lambda a, b: a @ b.T,
                      (2, 3), (4, 3)),
    "dot-tatb": _binary(lambda a, b: sym.dot(a, b, transpose_a=True, transpose_b=True),
                        lambda a, b: a.T @ b.T, (3, 2), (4, 3)),
    "elemwise_add": _binary(sym.elemwise_add, np.add),
    "elemwise_sub": _binary(sym.elemwise_sub, np.subtract),
    "elemwise_mul": _binary(sym.elemwise_mul, np.multiply),
    "elemwise_div": _binary(sym.elemwise_div, np.divide, positive=True),
    "broadcast_add": _binary(sym.broadcast_add, np.add, (2, 3), (3,)),
    "broadcast_sub": _binary(sym.broadcast_sub, np.subtract, (2, 1, 3), (4, 1)),
    "broadcast_mul": _binary(sym.broadcast_mul, np.multiply, (1, 3), (2, 1)),
    "broadcast_div": _binary(sym.broadcast_div, np.divide, (2, 3), (2, 1), positive=True),
    "broadcast_power": _binary(sym.broadcast_power, np.power, (2, 3), (3,), positive=True),
    "op+": _binary(lambda a, b: a + b, np.add, (2, 3), (1, 3)),
    "op-*/": _binary(lambda a, b: (a - b) * a / b, lambda a, b: (a - b) * a / b, positive=True),
    "op**": _binary(lambda a, b: a ** b, np.power, positive=True),
    "_plus_scalar": _unary(lambda x: x + 2, lambda x: x + 2),
    "_minus_scalar": _unary(lambda x: x - 2, lambda x: x - 2),
    "_rminus_scalar": _unary(lambda x: 2 - x, lambda x: 2 - x),
    "_mul_scalar": _unary(lambda x: x * 3, lambda x: x * 3),
    "_div_scalar": _unary(lambda x: x / 4, lambda x: x / 4),
    "_rdiv_scalar": _unary(lambda x: 3 / x, lambda x: 3 / x, pos(2, 3)),
    "_power_scalar": _unary(lambda x: x ** 3, lambda x: x ** 3, pos(2, 3)),
    "_rpower_scalar": _unary(lambda x: 2.0 ** x, lambda x: 2.0 ** x),
    "negative": _unary(lambda x: -x, np.negative),
    "exp": _unary(sym.exp, np.exp),
    "log": _unary(sym.log, np.log, pos(2, 3)),
    "sqrt": _unary(sym.sqrt, np.sqrt, pos(2, 3)),
    "square": _unary(sym.square, np.square),
    "tanh": _unary(sym.tanh, np.tanh),
    "sigmoid": _unary(sym.sigmoid, sigmoid),
    "abs": _unary(sym.abs, np.abs),
    "ElementWiseSum": (sym.ElementWiseSum(X, Y, X * 2), {"x": rnd(2, 3), "y": rnd(2, 3)},
                       lambda l: [3 * l["x"] + l["y"]]),
    "_copy": _unary(sym._copy, lambda x: x),
    "Embedding": (sym.Embedding(X, input_dim=5, output_dim=3, name="emb"),
                  {"x": np.array([[0, 4, 2], [2, 2, 1]], float), "emb_weight": rnd(5, 3)},
                  lambda l: [l["emb_weight"][l["x"].astype(int)]]),
    # instance mode: over the last axis (MXNet 1.9.1); 2-d, where MXNet's gradient is right
    "SoftmaxActivation": _unary(sym.SoftmaxActivation, lambda x: softmax(x, -1), rnd(2, 3)),
    "SoftmaxActivation-channel": _unary(lambda x: sym.SoftmaxActivation(x, mode="channel"),
                                        lambda x: softmax(x, 1), rnd(2, 3, 2)),
    "BlockGrad-mix": (X * sym.BlockGrad(X), {"x": rnd(2, 3)}, lambda l: [l["x"] ** 2]),
    "lstm_cell": None, "gru_cell": None,
}
GRAD_KW = {"Embedding": {"grad_nodes": ["emb_weight"]}}


def _cell_case(kind):
    h, c = sym.Variable("h"), sym.Variable("c")
    loc = {"x": rnd(2, 3), "h": rnd(2, 2), "c": rnd(2, 2), "p_i2h_weight": rnd(4 * 2, 3) / 2,
           "p_i2h_bias": rnd(8), "p_h2h_weight": rnd(8, 2) / 2, "p_h2h_bias": rnd(8)}
    if kind == "lstm":
        nh, nc = sym.lstm_cell(X, h, c, 2, prefix="p_")
        s = sym.Group([nh, nc])
    else:
        del loc["c"]
        for k in ("p_i2h_weight", "p_i2h_bias", "p_h2h_weight", "p_h2h_bias"):
            loc[k] = loc[k][:6]
        s = sym.gru_cell(X, h, 2, prefix="p_")

    def ref(l):
        gx = l["x"] @ l["p_i2h_weight"].T + l["p_i2h_bias"]
        gh = l["h"] @ l["p_h2h_weight"].T + l["p_h2h_bias"]
        if kind == "lstm":
            g = gx + gh
            i, t, f, o = sigmoid(g[:, :2]), np.tanh(g[:, 2:4]), sigmoid(g[:, 4:6]), \
                sigmoid(g[:, 6:])
            nc = f * l["c"] + i * t
            return [o * np.tanh(nc), nc]
        r, z = sigmoid(gx[:, :2] + gh[:, :2]), sigmoid(gx[:, 2:4] + gh[:, 2:4])
        n = np.tanh(gx[:, 4:] + r * gh[:, 4:])
        return [(1 - z) * n + z * l["h"]]
    return s, loc, ref


CASES["lstm_cell"] = _cell_case("lstm")
CASES["gru_cell"] = _cell_case("gru")


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_matches_numpy(name):
    s, loc, ref = CASES[name][:3]
    check_symbol_forward(s, loc, ref(loc), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(set(CASES) - {"BlockGrad-mix"}))
def test_gradient_numeric(name):
    s, loc = CASES[name][:2]
    check_symbol_grad(s, loc, rtol=1e-5, atol=1e-7, **GRAD_KW.get(name, {}))


@pytest.mark.parametrize("train,fix_gamma,global_stats", [
    (True, False, False), (True, True, False), (False, False, False), (True, False, True)])
def test_batchnorm(train, fix_gamma, global_stats):
    s, loc, ref, aux = _bn(train, fix_gamma, global_stats)
    exe = check_symbol_forward(s, loc, ref(loc), aux_states=aux, is_train=train, rtol=1e-10)
    mm, mv = exe.aux_dict["bn_moving_mean"].asnumpy(), exe.aux_dict["bn_moving_var"].asnumpy()
    if train and not global_stats:     # moving = 0.9 * moving + 0.1 * batch statistics
        x = loc["x"]
        np.testing.assert_allclose(mm, 0.9 * aux["bn_moving_mean"] + 0.1 * x.mean((0, 2, 3)))
        np.testing.assert_allclose(mv, 0.9 * aux["bn_moving_var"] + 0.1 * x.var((0, 2, 3)))
    else:
        np.testing.assert_allclose(mm, aux["bn_moving_mean"])
        np.testing.assert_allclose(mv, aux["bn_moving_var"])
    if train:
        r = check_symbol_grad(s, loc, aux_states=aux, rtol=1e-5, atol=1e-7)
        if fix_gamma:
            assert not r["bn_gamma"][0].any()


def test_batchnorm_output_mean_var():
    s = sym.BatchNorm(X, output_mean_var=True, name="bn")
    assert s.list_outputs() == ["bn_output", "bn_mean", "bn_var"]
    x = rnd(4, 3)
    beta = rnd(3)
    exe = check_symbol_forward(s, {"x": x, "bn_gamma": pos(3), "bn_beta": beta},
                               [(x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3) + beta, x.mean(0),
                                1 / np.sqrt(x.var(0) + 1e-3)],      # MXNet's third output
                               aux_states={"bn_moving_mean": rnd(3), "bn_moving_var": pos(3)},
                               is_train=True)
    assert exe.outputs[0].shape == (4, 3)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.75])
def test_dropout_train_and_inference(p):
    s = sym.Dropout(X, p=p)
    x = pos(50, 40)
    exe = s.simple_bind(x=x.shape, type_dict={"x": np.float64})
    out = exe.forward(is_train=False, x=x)[0].asnumpy()
    np.testing.assert_array_equal(out, x)
    out = exe.forward(is_train=True)[0].asnumpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], x[kept] / (1 - p))
    assert abs(kept.mean() - (1 - p)) < 0.05
    exe.backward(np.ones_like(x))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), kept / (1 - p))
    check_symbol_grad(s, {"x": rnd(3, 4)}, seed=7)


def test_dropout_always_mode_and_seed_reproducible():
    s = sym.Dropout(X, p=0.5, mode="always")
    exe = s.simple_bind(x=(20, 20))
    sym.seed(3)
    a = exe.forward(x=np.ones((20, 20)))[0].asnumpy().copy()
    sym.seed(3)
    b = exe.forward()[0].asnumpy()
    assert (a == 0).any()
    np.testing.assert_array_equal(a, b)


# --------------------------------------------------------- loss operators
def _nll(p, label, norm=1.0):
    return -np.log(p[np.arange(len(label)), label.astype(int)]).sum() / norm


@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
def test_softmax_output(normalization):
    s = sym.SoftmaxOutput(X, sym.Variable("label"), normalization=normalization,
                          use_ignore=True, ignore_label=1, grad_scale=2.0)
    x, label = rnd(5, 4), np.array([0, 1, 3, 2, 1.0])
    keep = label != 1
    check_symbol_forward(s, {"x": x, "label": label}, [softmax(x)])
    norm = {"null": 1.0, "batch": 5.0, "valid": float(keep.sum())}[normalization]

    def loss(outs):
        return 2.0 * _nll(outs[0][keep], label[keep], norm)
    r = check_symbol_grad(s, {"x": x, "label": label}, grad_nodes=["x"], objective=loss)
    g = (softmax(x) - np.eye(4)[label.astype(int)]) * keep[:, None] * 2.0 / norm
    np.testing.assert_allclose(r["x"][0], g, atol=1e-12)


def test_softmax_output_multi_output_ignores_head_gradient():
    s = sym.SoftmaxOutput(X, sym.Variable("label"), multi_output=True)
    x, label = rnd(2, 3, 4), np.array([[0, 1, 2, 2], [1, 1, 0, 2.0]])
    p = softmax(x, 1)
    check_symbol_forward(s, {"x": x, "label": label}, [p])

    def loss(outs):
        q = outs[0]
        # MXNet's multi_output gradient is divided by the spatial size (4) under 'null'
        return -sum(np.log(q[n, int(label[n, j]), j]) for n in range(2) for j in range(4)) / 4
    check_symbol_grad(s, {"x": x, "label": label}, grad_nodes=["x"], objective=loss)
    assert s.infer_shape(x=(2, 3, 4))[0][1] == (2, 4)


@pytest.mark.parametrize("kind", ["Linear", "Logistic", "MAE"])
def test_regression_outputs(kind):
    op = getattr(sym, f"{kind}RegressionOutput")
    s = op(X, sym.Variable("label"), grad_scale=3.0)
    x, label = rnd(4, 2), R.uniform(0.1, 0.9, (4, 2))
    out = sigmoid(x) if kind == "Logistic" else x
    check_symbol_forward(s, {"x": x, "label": label}, [out])

    def loss(outs):
        o = outs[0]
        if kind == "Linear":
            v = 0.5 * ((o - label) ** 2).sum()
        elif kind == "MAE":
            v = np.abs(o - label).sum()
        else:
            v = -(label * np.log(o) + (1 - label) * np.log(1 - o)).sum()
        return 3.0 * v / 2         # num_output = 2 per sample
    check_symbol_grad(s, {"x": x, "label": label}, grad_nodes=["x"], objective=loss)


def test_blockgrad_stops_gradient():
    s = X * sym.BlockGrad(X)          # numerically d/dx x^2 = 2x; symbolically x
    x, u = rnd(2, 3), rnd(2, 3)
    exe = s.simple_bind(x=x.shape, type_dict={"x": np.float64})
    exe.forward(is_train=True, x=x)
    exe.backward(u)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), u * x)
    exe = sym.stop_gradient(X).simple_bind(x=(2, 3))
    exe.forward(is_train=True, x=x)
    exe.backward(u)
    assert not exe.grad_dict["x"].asnumpy().any()


def test_reshape_special_values():
    from minpy.symbol.ops.shape import reshape_shape
    from minpy.symbol.registry import Mismatch
    assert reshape_shape((2, 3, 4), (0, -1)) == (2, 12)
    assert reshape_shape((2, 3, 4), (-2,)) == (2, 3, 4)
    assert reshape_shape((2, 3, 4), (-3, 0)) == (6, 4)
    assert reshape_shape((2, 3, 4), (0, -4, -1, 1, 0)) == (2, 3, 1, 4)
    assert reshape_shape((2, 3, 4), (4, 0, -1)) == (4, 3, 2)
    for bad in [(5, -1), (-1, -1), (0, 0, 0, 0)]:
        with pytest.raises(Mismatch):
            reshape_shape((2, 3, 4), bad)


def test_every_registered_forward_op_is_tested():
    names = {k.split("-")[0] for k in CASES}
    names |= {"BatchNorm", "_BatchNormReLU", "_FusedElemwise", "Dropout", "SoftmaxOutput",
              "LinearRegressionOutput",
              "LogisticRegressionOutput", "MAERegressionOutput", "ElementWiseSum"}
    names |= {"broadcast_add", "_greater_scalar", "sign", "zeros_like", "ones_like", "BlockGrad",
              "_grad_accumulate"}    # covered in test_symbol.py / test_executor.py
    names |= {"Custom"}       # tests/mxnet/test_custom_op.py (against MXNet too)
    cases = json.loads((pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "mxnet" /
                        "ops_cases.json").read_text())["cases"]
    names |= {c["op"] for c in cases}         # against MXNet: tests/symbol/test_mxnet_ops.py
    public = {k for k, op in sym.OPS.items() if not op.is_backward}
    assert public - names == set(), f"untested operators: {sorted(public - names)}"


def test_conv_bigger_matches_reference_quickly():
    x, w = rnd(4, 3, 12, 12), rnd(8, 3, 3, 3)
    s = sym.Convolution(X, kernel=(3, 3), num_filter=8, pad=(1, 1), no_bias=True, name="c")
    check_symbol_forward(s, {"x": x, "c_weight": w}, [ref_conv(x, w, None, pad=(1, 1))],
                         rtol=1e-9)


@given(k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       p=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)), groups=st.sampled_from([1, 2]),
       hw=st.tuples(st.integers(5, 8), st.integers(5, 8)))
def test_convolution_geometry_property(k, s, p, d, groups, hw):
    x, w, b = rnd(2, 2, *hw), rnd(4, 2 // groups, *k), rnd(4)
    net = sym.Convolution(X, kernel=k, stride=s, pad=p, dilate=d, num_group=groups,
                          num_filter=4, name="c")
    ref = ref_conv(x, w, b, s, p, d, groups)
    assert net.infer_shape(x=x.shape)[1] == [ref.shape]
    check_symbol_forward(net, {"x": x, "c_weight": w, "c_bias": b}, [ref], rtol=1e-10,
                         atol=1e-12)


@given(k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       p=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       kind=st.sampled_from(["max", "avg", "sum"]), full=st.booleans(),
       hw=st.tuples(st.integers(3, 7), st.integers(3, 7)))
def test_pooling_geometry_property(k, s, p, kind, full, hw):
    p = tuple(min(a, b - 1) for a, b in zip(p, k))       # padding smaller than the kernel
    x = rnd(1, 2, *hw)
    net = sym.Pooling(X, kernel=k, stride=s, pad=p, pool_type=kind,
                      pooling_convention="full" if full else "valid")
    ref = ref_pool(x, k, s, p, kind, full)
    assert net.infer_shape(x=x.shape)[1] == [ref.shape]
    check_symbol_forward(net, {"x": x}, [ref], rtol=1e-10, atol=1e-12)


@given(k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       p=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)), groups=st.sampled_from([1, 2]),
       hw=st.tuples(st.integers(5, 7), st.integers(5, 7)), no_bias=st.booleans())
def test_convolution_gradient_geometry_property(k, s, p, d, groups, hw, no_bias):
    # im2col + GEMM forward, col2im backward: every geometry against finite differences
    net = sym.Convolution(X, kernel=k, stride=s, pad=p, dilate=d, num_group=groups,
                          num_filter=4, no_bias=no_bias, name="c")
    loc = {"x": rnd(2, 2, *hw), "c_weight": rnd(4, 2 // groups, *k)}
    if not no_bias:
        loc["c_bias"] = rnd(4)
    check_symbol_grad(net, loc, rtol=1e-5, atol=1e-7)


@given(k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       p=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       kind=st.sampled_from(["max", "avg", "sum"]), full=st.booleans(),
       hw=st.tuples(st.integers(3, 7), st.integers(3, 7)))
def test_pooling_gradient_geometry_property(k, s, p, kind, full, hw):
    p = tuple(min(a, b - 1) for a, b in zip(p, k))
    net = sym.Pooling(X, kernel=k, stride=s, pad=p, pool_type=kind,
                      pooling_convention="full" if full else "valid")
    # distinct values: the max has one winner per window (no tie for differences to split)
    x = R.permutation(2 * 2 * hw[0] * hw[1]).reshape(2, 2, *hw) * 0.1
    check_symbol_grad(net, {"x": x}, rtol=1e-5, atol=1e-7)


def test_max_pool_gradient_goes_to_the_first_maximum_on_ties():
    net = sym.Pooling(X, kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = np.array([[[[1.0, 1.0], [0.0, 1.0]]]])
    exe = net.simple_bind(None, x=x.shape)
    exe.forward(is_train=True, x=x)
    exe.backward([mp.array(np.array([[[[3.0]]]]))])
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [[[[3.0, 0.0], [0.0, 0.0]]]])
