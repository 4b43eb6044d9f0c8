"""Executor: bound once and reused, gradients vs a NumPy reference, grad_req,
reshape (shared parameters), aux updates, memory planning (planned == unplanned),
engine integration, and small zoo networks that learn."""
import threading

import numpy as np
import pytest

import minpy
import minpy.engine as engine
import minpy.symbol as sym
from minpy.symbol import zoo
from minpy.symbol.graph_plan import GraphPlan

from _standin import installed

R = np.random.default_rng(11)


def mlp():
    x = sym.Variable("data")
    h = sym.Activation(sym.FullyConnected(x, num_hidden=6, name="fc1"), act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def ref_mlp(p, x, y):
    """Forward probabilities and gradients of the mlp, in NumPy."""
    h1 = x @ p["fc1_weight"].T + p["fc1_bias"]
    a = np.maximum(h1, 0)
    z = a @ p["fc2_weight"].T + p["fc2_bias"]
    e = np.exp(z - z.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    dz = prob - np.eye(3)[y.astype(int)]
    da = dz @ p["fc2_weight"]
    dh = da * (h1 > 0)
    return prob, {"fc2_weight": dz.T @ a, "fc2_bias": dz.sum(0), "fc1_weight": dh.T @ x,
                  "fc1_bias": dh.sum(0), "data": dh @ p["fc1_weight"]}


def params(exe, rng=R, skip=("data", "softmax_label")):
    p = {}
    for k, a in exe.arg_dict.items():
        if k not in skip:
            p[k] = rng.standard_normal(a.shape).astype(a.dtype)
            a[:] = p[k]
    return p


def test_bound_once_and_reused_matches_numpy():
    exe = mlp().simple_bind(minpy.cpu(), data=(5, 4), type_dict={"data": np.float64})
    p = params(exe)
    steps, outputs = exe._fwd, exe.outputs
    for it in range(4):
        x, y = R.standard_normal((5, 4)), R.integers(0, 3, 5).astype(float)
        out = exe.forward(is_train=True, data=x, softmax_label=y)
        exe.backward()
        prob, grads = ref_mlp(p, x, y)
        np.testing.assert_allclose(out[0].asnumpy(), prob, rtol=1e-12)
        for k, g in grads.items():
            np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), g, rtol=1e-10, atol=1e-12)
        assert not exe.grad_dict["softmax_label"].asnumpy().any()
    assert exe._fwd is steps and exe.outputs is outputs and out is outputs
    assert exe.output_dict["softmax_output"] is outputs[0]
    assert [a is exe.arg_dict[k] for k, a in zip(mlp().list_arguments(), exe.arg_arrays)]


def test_backward_without_waiting_gives_the_same_gradients_through_the_engine():
    exe = mlp().simple_bind(minpy.cpu(), data=(5, 4), type_dict={"data": np.float64})
    rng = np.random.default_rng(5)           # not R: later tests' draws stay as they were
    p = params(exe, rng)
    x, y = rng.standard_normal((5, 4)), rng.integers(0, 3, 5).astype(float)
    _, grads = ref_mlp(p, x, y)
    exe.forward(is_train=True, data=x, softmax_label=y)
    gate = threading.Event()
    held = next(iter(grads))                   # an op holding one gradient's var ...
    engine.push(gate.wait, writes=[minpy.core.async_work.var_of(exe.grad_dict[held])])
    caller = threading.Thread(target=exe.backward, kwargs={"wait": False})
    caller.start()
    caller.join(10)
    assert not caller.is_alive()               # ... does not hold up the return
    gate.set()
    copies = {}
    for k in grads:                            # engine ops reading the gradients wait for them
        copies[k] = minpy.zeros(exe.grad_dict[k].shape)
        g, c = exe.grad_dict[k], copies[k]
        engine.push(lambda g=g, c=c: c._data.__setitem__(Ellipsis, g._data),
                    reads=[minpy.core.async_work.var_of(g)],
                    writes=[minpy.core.async_work.var_of(c)])
    for k, g in grads.items():
        np.testing.assert_allclose(copies[k].wait_to_read().asnumpy(), g, rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(exe.grad_dict[k].wait_to_read().asnumpy(), g, rtol=1e-10,
                                   atol=1e-12)


def test_forward_backward_misuse():
    exe = mlp().simple_bind(data=(2, 4))
    with pytest.raises(RuntimeError, match="before each backward"):
        exe.backward()
    exe.forward(is_train=True)
    exe.backward()
    with pytest.raises(RuntimeError, match="before each backward"):
        exe.backward()
    with pytest.raises(ValueError, match="not an argument"):
        exe.forward(dat=np.ones((2, 4)))
    with pytest.raises(ValueError, match="use Executor.reshape"):
        exe.forward(data=np.ones((3, 4)))
    with pytest.raises(ValueError, match="out_grads"):
        exe.forward(is_train=True)
        exe.backward([None, None])


def test_bind_with_given_arrays_and_errors():
    net = mlp()
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(2, 4))[0]))
    args = {k: minpy.array(R.standard_normal(s)) for k, s in shapes.items()}
    args["softmax_label"] = minpy.array([0.0, 2.0])         # class indices, not noise
    grads = {"fc1_weight": minpy.zeros(shapes["fc1_weight"])}
    exe = net.bind(minpy.cpu(), args, args_grad=grads)
    assert exe.arg_dict["fc1_weight"] is args["fc1_weight"]       # no copy
    exe.forward(is_train=True)
    exe.backward()
    assert exe.grad_dict == {"fc1_weight": grads["fc1_weight"]}
    assert grads["fc1_weight"].asnumpy().any()
    assert exe.grad_arrays[0] is None
    exe2 = net.bind(minpy.cpu(), [args[k] for k in net.list_arguments()])
    assert exe2.grad_dict == {} and exe2.plan.bwd_order == []
    with pytest.raises(ValueError, match="no array for arguments"):
        net.bind(minpy.cpu(), {"data": args["data"]})
    bad = dict(args, fc1_weight=minpy.zeros((6, 5)))
    with pytest.raises(ValueError, match="FullyConnected node 'fc1'"):
        net.bind(minpy.cpu(), bad)
    dup = sym.Variable("w") + sym.Variable("w")
    with pytest.raises(ValueError, match="several variables are named"):
        dup.simple_bind(w=(2,))


def test_grad_req_add_null_and_dict():
    net = mlp()
    exe = net.simple_bind(data=(3, 4), grad_req={"fc1_weight": "add", "fc2_bias": "write"})
    params(exe)
    assert set(exe.grad_dict) == {"fc1_weight", "fc2_bias"}
    x = R.standard_normal((3, 4))
    y = np.array([0.0, 1, 2])
    exe.forward(is_train=True, data=x, softmax_label=y)
    exe.backward()
    g1 = exe.grad_dict["fc1_weight"].asnumpy().copy()
    b1 = exe.grad_dict["fc2_bias"].asnumpy().copy()
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(exe.grad_dict["fc1_weight"].asnumpy(), 2 * g1, rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["fc2_bias"].asnumpy(), b1, rtol=1e-6)
    exe = net.simple_bind(data=(3, 4), grad_req="null")
    assert exe.grad_dict == {} and all(g is None for g in exe.grad_arrays)
    with pytest.raises(ValueError, match="grad_req"):
        net.simple_bind(data=(3, 4), grad_req="sometimes")


def test_gradient_of_shared_and_reused_entries():
    x, w = sym.Variable("x"), sym.Variable("w")
    y = sym.FullyConnected(x, weight=w, num_hidden=2, no_bias=True, name="a")
    z = sym.FullyConnected(y, weight=w, num_hidden=2, no_bias=True, name="b")   # w used twice
    out = z * y + y                                                              # y used 3 times
    adds = [n for n in GraphPlan(out, {"x": (3, 2), "w": (2, 2)}, {}).graph.nodes
            if n.op is not None and n.op.name == "ElementWiseSum"]
    assert adds and all(n.name.endswith("_grad_add") for n in adds)
    sym.check_symbol_grad(out, {"x": R.standard_normal((3, 2)), "w": R.standard_normal((2, 2))})


def test_outputs_that_are_variables_and_identity_gradients():
    x, y = sym.Variable("x"), sym.Variable("y")
    g = sym.Group([x, x + y])
    exe = g.simple_bind(x=(2,), y=(2,))
    a, b = exe.forward(is_train=True, x=np.array([1.0, 2.0]), y=np.array([3.0, 4.0]))
    assert a is exe.arg_dict["x"]
    np.testing.assert_allclose(b.asnumpy(), [4, 6])
    exe.backward([minpy.array([1.0, 1.0]), minpy.array([10.0, 20.0])])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [11, 21])
    np.testing.assert_allclose(exe.grad_dict["y"].asnumpy(), [10, 20])
    exe.forward(is_train=True)
    exe.backward()                              # default head gradients: ones
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [2, 2])


def test_reshape_shares_parameters():
    net = mlp()
    exe = net.simple_bind(data=(4, 4))
    params(exe)
    x = R.standard_normal((6, 4)).astype(np.float32)
    small = exe.reshape(data=(2, 4), softmax_label=(2,))
    big = exe.reshape(partial_shaping=True, allow_up_sizing=True,
                      data=(6, 4))                             # label shape inferred
    for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
        assert small.arg_dict[k] is exe.arg_dict[k] and big.arg_dict[k] is exe.arg_dict[k]
        assert big.grad_dict[k] is exe.grad_dict[k]
    assert small.arg_dict["data"] is not exe.arg_dict["data"]       # a view of its first rows
    a = big.forward(data=x)[0].asnumpy()
    b = small.forward(data=x[:2])[0].asnumpy().copy()
    np.testing.assert_allclose(a[:2], b, rtol=1e-6)
    exe.arg_dict["fc2_bias"][:] = minpy.array([5.0, 0.0, -5.0])   # visible to every bucket
    assert not np.allclose(small.forward(data=x[:2])[0].asnumpy(), b)
    with pytest.raises(ValueError, match="Shape of unspecified arg: softmax_label changed"):
        exe.reshape(data=(2, 4))              # MXNet: unspecified arguments keep their shape


def test_batchnorm_aux_updates_in_executor():
    net = sym.BatchNorm(sym.Variable("x"), momentum=0.5, fix_gamma=False, name="bn")
    exe = net.simple_bind(x=(8, 3), type_dict={"x": np.float64})
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_var"].asnumpy(), np.ones(3))
    x = R.standard_normal((8, 3)) * 2 + 1
    exe.arg_dict["bn_gamma"][:] = 1.0
    exe.forward(is_train=True, x=x)
    exe.forward(is_train=True)
    mean = exe.aux_dict["bn_moving_mean"].asnumpy()
    np.testing.assert_allclose(mean, 0.75 * x.mean(0))          # 0.5 * (0.5 * m) + ...
    inf = exe.forward(is_train=False)[0].asnumpy()
    mv = exe.aux_dict["bn_moving_var"].asnumpy()
    np.testing.assert_allclose(inf, (x - mean) / np.sqrt(mv + 1e-3))
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_mean"].asnumpy(), mean)  # unchanged


def _run(net, shapes, plan, steps=2, seed=0):
    rng = np.random.default_rng(seed)
    exe = net.simple_bind(minpy.cpu(), plan_memory=plan, **shapes)
    params(exe, rng, skip=())
    if "softmax_label" in exe.arg_dict:
        n = exe.outputs[0].shape[-1]
        exe.arg_dict["softmax_label"][:] = rng.integers(0, n, exe.arg_dict["softmax_label"].shape)
    if "data" in exe.arg_dict and "embed_weight" in exe.arg_dict:
        exe.arg_dict["data"][:] = rng.integers(0, 6, exe.arg_dict["data"].shape)
    res = []
    for _ in range(steps):
        sym.seed(5)
        res += [o.asnumpy().copy() for o in exe.forward(is_train=True)]
        exe.backward()
        res += [g.asnumpy().copy() for g in exe.grad_arrays if g is not None]
    return exe, res


NETS = {
    "mlp": (zoo.mlp, {"data": (4, 6)}),
    "lenet": (lambda: zoo.lenet(num_filter=(2, 3), num_hidden=8), {"data": (2, 1, 16, 16)}),
    "resnet": (lambda: zoo.resnet(8, 4, (3, 8, 8), filter_list=[2, 4, 4, 4]),
               {"data": (2, 3, 8, 8)}),
    "convnet-dropout": (lambda: sym.SoftmaxOutput(sym.FullyConnected(sym.Dropout(sym.Pooling(
        sym.Activation(sym.Convolution(sym.Variable("data"), kernel=(3, 3), num_filter=3),
                       act_type="sigmoid"), kernel=(2, 2), stride=(2, 2)), p=0.4),
        num_hidden=3), name="softmax"), {"data": (2, 2, 6, 6)}),
    "lstm_lm": (lambda: zoo.lstm_lm(3, 6, 4, 5, 2, dropout=0.2),
                zoo.lstm_lm_shapes(2, 3, 5, 2)),
}


@pytest.mark.parametrize("name", sorted(NETS))
def test_planned_equals_unplanned(name):
    make, shapes = NETS[name]
    net = make()
    planned, a = _run(net, shapes, True)
    unplanned, b = _run(net, shapes, False)
    assert planned.plan.planner == "plan_memory" and unplanned.plan.planner.startswith("trivial")
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    r, u = planned.memory_report(), unplanned.memory_report()
    assert r["internal_lower_bound"] <= r["internal_planned"] < r["internal_naive"]
    assert u["internal_planned"] == u["internal_naive"] == r["internal_naive"]
    assert r["total"] == r["internal_planned"] + r["arguments"] + r["gradients"] + \
        r["aux_states"] + r["outputs"] + r["head_grads"]
    assert len(planned._blocks) == r["num_blocks"] < u["num_blocks"]


def test_env_var_turns_planning_off(monkeypatch):
    monkeypatch.setenv("MINPY_PLAN_MEMORY", "0")
    assert mlp().memory_plan(data=(2, 4)).planner.startswith("trivial")
    monkeypatch.setenv("MINPY_PLAN_MEMORY", "1")
    assert mlp().memory_plan(data=(2, 4)).planner == "plan_memory"


def test_engine_vars_and_storage_blocks():
    exe = mlp().simple_bind(data=(3, 4))
    blocks = {id(v) for _, v in exe._blocks.values()}
    for step in exe._fwd[True] + exe._bwd:
        for v in step[1] + step[2]:
            assert isinstance(v, engine.Var)
    internal = [exe._hold[e] for e in exe.plan.plan.storage_of]
    assert internal and all(id(a._var) in blocks for a in internal)
    assert exe.outputs[0]._var is not None and exe.outputs[0]._var is exe._vars[exe.plan.heads[0]]
    # entries sharing a block share its Var, so reuse is a plain write-after-read dependency
    by_block = {}
    for e, b in exe.plan.plan.storage_of.items():
        by_block.setdefault(b, []).append(exe._hold[e]._var)
    assert any(len(vs) > 1 for vs in by_block.values())
    assert all(len({id(v) for v in vs}) == 1 for vs in by_block.values())


def test_naive_engine_gives_same_results():
    make, shapes = NETS["resnet"]
    _, a = _run(make(), shapes, True)
    old = engine.get_engine()
    try:
        engine.set_engine("naive")
        _, b = _run(make(), shapes, True)
    finally:
        engine.set_engine(type(old)())
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_copy_params_from():
    exe = mlp().simple_bind(data=(2, 4))
    w = R.standard_normal((6, 4)).astype(np.float32)
    exe.copy_params_from({"fc1_weight": minpy.array(w), "fc1_bias": np.ones(6)})
    np.testing.assert_array_equal(exe.arg_dict["fc1_weight"].asnumpy(), w)
    np.testing.assert_array_equal(exe.arg_dict["fc1_bias"].asnumpy(), np.ones(6))
    with pytest.raises(ValueError, match="allow_extra_params"):
        exe.copy_params_from({"nope": np.ones(1)})
    exe.copy_params_from({"nope": np.ones(1)}, allow_extra_params=True)


def _train(net, shapes, steps, lr, nclass):
    rng = np.random.default_rng(0)
    exe = net.simple_bind(minpy.cpu(), **shapes)
    for k, a in exe.arg_dict.items():
        if k in ("data", "softmax_label"):
            continue
        if k.endswith("gamma"):
            a[:] = 1.0
        elif k.endswith(("beta", "bias")):
            a[:] = 0.0
        else:
            a[:] = rng.standard_normal(a.shape) * np.sqrt(2.0 / max(1, np.prod(a.shape[1:])))
    x = rng.standard_normal(shapes["data"]).astype(np.float32)
    y = rng.integers(0, nclass, shapes["data"][0]).astype(np.float32)
    losses = []
    for _ in range(steps):
        p = exe.forward(is_train=True, data=x, softmax_label=y)[0].asnumpy()
        losses.append(-np.log(p[np.arange(len(y)), y.astype(int)] + 1e-12).mean())
        exe.backward()
        for k, g in exe.grad_dict.items():
            if k not in ("data", "softmax_label"):
                exe.arg_dict[k][:] = exe.arg_dict[k] - lr * g
    return losses


@pytest.mark.parametrize("name,net,shapes", [
    ("mlp", zoo.mlp(), {"data": (16, 20)}),
    ("lenet", zoo.lenet(num_filter=(4, 8), num_hidden=32), {"data": (8, 1, 28, 28)}),
    ("resnet", zoo.resnet(8, 10, (3, 8, 8), filter_list=[4, 4, 8, 8]), {"data": (8, 3, 8, 8)}),
])
def test_zoo_nets_learn(name, net, shapes):
    losses = _train(net, shapes, 8, 0.1, 10)
    assert losses[-1] < 0.5 * losses[0], losses


def test_lstm_lm_trains_and_shares_weights_over_time():
    net = zoo.lstm_lm(seq_len=3, vocab_size=6, num_embed=4, num_hidden=5, num_layers=2)
    shapes = zoo.lstm_lm_shapes(2, 3, 5, 2)
    args = net.list_arguments()
    assert args.count("l0_i2h_weight") == 1 and "l1_h2h_bias" in args
    assert net.infer_shape(**shapes)[1] == [(6, 6)]
    # its own generator: the module's R is drawn in whatever order (xdist) tests run
    rng = np.random.default_rng(1)
    loc = {k: rng.standard_normal(s) * 0.5 for k, s in zip(args, net.infer_shape(**shapes)[0])}
    loc["data"] = rng.integers(0, 6, (2, 3)).astype(float)
    loc["softmax_label"] = rng.integers(0, 6, (2, 3)).astype(float)
    lab = loc["softmax_label"].T.reshape(-1).astype(int)

    def nll(outs):
        return -np.log(outs[0][np.arange(6), lab]).sum() / 6   # "batch": the 6 rows
    sym.check_symbol_grad(net, loc, grad_nodes=["cls_bias", "l0_h2h_bias", "embed_weight"],
                          objective=nll, rtol=1e-5, atol=1e-8)
    exe = net.simple_bind(**shapes)
    exe.copy_params_from({k: v for k, v in loc.items()})
    first = None
    for _ in range(30):
        p = exe.forward(is_train=True)[0].asnumpy()
        loss = -np.log(p[np.arange(6), lab]).mean()
        first = loss if first is None else first
        exe.backward()
        for k, g in exe.grad_dict.items():
            if k not in ("data", "softmax_label"):
                exe.arg_dict[k][:] = exe.arg_dict[k] - 0.5 * g
    assert loss < 0.6 * first          # 0.44 of it on the host


@pytest.mark.parametrize("make,shapes", [
    (zoo.vgg16, {"data": (8, 3, 224, 224)}),
    (lambda: zoo.resnet(152), {"data": (8, 3, 224, 224)}),
    (zoo.inception_bn, {"data": (8, 3, 224, 224)}),
])
def test_memory_tables_of_big_nets_without_running(make, shapes):
    plan = make().memory_plan(**shapes)
    r = plan.memory_report()
    assert r["internal_lower_bound"] <= r["internal_planned"] < 0.6 * r["internal_naive"]
    assert r["num_nodes"] > 50 and plan.shapes[plan.heads[0]] == (8, 1000)


def test_op_error_is_raised_by_forward(monkeypatch):
    from minpy.symbol.registry import OPS

    def boom(rc, attrs, ins, outs):
        raise FloatingPointError("boom inside Activation")
    monkeypatch.setattr(OPS["Activation"], "forward", boom)
    exe = mlp().simple_bind(data=(2, 4))
    with pytest.raises(FloatingPointError, match="boom inside Activation"):
        exe.forward(is_train=True)
    with pytest.raises(FloatingPointError):          # raised again by the next pass
        exe.forward()
    monkeypatch.undo()
    exe = mlp().simple_bind(data=(2, 4))
    assert exe.forward()[0].shape == (2, 3)


# Dropout draws from each device's own generator (CuPy's default_rng(seed) is not NumPy's
# stream), so a net with Dropout is compared in inference mode, or built without it.
DEVICE_NETS = {
    "lenet": (NETS["lenet"], True), "resnet": (NETS["resnet"], True),
    "lstm_lm": ((lambda: zoo.lstm_lm(3, 6, 4, 5, 2, dropout=0.0), NETS["lstm_lm"][1]), True),
    "lstm_lm-dropout": (NETS["lstm_lm"], False),
    "convnet-dropout": (NETS["convnet-dropout"], False),
}


def _device_executor_matches_cpu(name, ctx):
    """Forward and backward of DEVICE_NETS[name] on ``ctx`` match the CPU's."""
    (make, shapes), is_train = DEVICE_NETS[name]
    net = make()
    rng = np.random.default_rng(0)
    cpu = net.simple_bind(minpy.cpu(), **shapes)
    dev = net.simple_bind(ctx, **shapes)

    def value(k, a):
        if k == "softmax_label" or (k == "data" and "embed_weight" in cpu.arg_dict):
            return rng.integers(0, 3, a.shape).astype(a.dtype)       # class / word ids
        return rng.standard_normal(a.shape).astype(a.dtype)
    vals = {k: value(k, a) for k, a in cpu.arg_dict.items()}
    for exe in (cpu, dev):
        exe.copy_params_from(vals)
        sym.seed(1)
        exe.forward(is_train=is_train)
        exe.backward()
    assert dev.outputs[0].context == ctx
    np.testing.assert_allclose(dev.outputs[0].asnumpy(), cpu.outputs[0].asnumpy(), rtol=1e-4,
                               atol=1e-5)
    for k, g in cpu.grad_dict.items():
        np.testing.assert_allclose(dev.grad_dict[k].asnumpy(), g.asnumpy(), rtol=1e-3,
                                   atol=1e-4, err_msg=k)


@pytest.mark.gpu
@pytest.mark.skipif(minpy.num_gpus() == 0, reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("name", sorted(DEVICE_NETS))
def test_gpu_executor_matches_cpu(name):     # pragma: no cover - GPU only
    _device_executor_matches_cpu(name, minpy.gpu(0))


@pytest.mark.parametrize("name", sorted(DEVICE_NETS))
def test_standin_executor_matches_cpu(name):
    """The same on the stand-in GPU (repeated word ids: the Embedding gradient)."""
    with installed():
        _device_executor_matches_cpu(name, minpy.gpu(0))


def test_bind_with_a_ready_plan():
    import minpy.symbol as sym
    from minpy.symbol.graph_plan import GraphPlan
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="fc")
    plan = GraphPlan(net, {"data": (2, 4)}, {}, "write")
    arrays = {"data": np.ones((2, 4), np.float32), "fc_weight": np.ones((3, 4), np.float32),
              "fc_bias": np.zeros(3, np.float32)}
    exe = sym.Executor(net, None, arrays, {k: np.zeros_like(v) for k, v in arrays.items()},
                       "write", plan=plan)
    assert exe.plan is plan
    exe.forward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), np.full((2, 3), 4.0))
    other = sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="fc")
    with pytest.raises(ValueError, match="another symbol"):
        sym.Executor(other, None, arrays, plan=plan)
