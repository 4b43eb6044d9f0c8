"""Writes into an Array's buffer outside minpy's calls (executor steps, copies into
bound arrays, KVStore, jit) invalidate its cached copies on other devices: on the
stand-in GPU (policy prefer_gpu) a host array used by a device call is copied once
and the copy reused until the array is written, so a write that is not recorded
would leave the device computing on old values with no error.

Also: an executor bound on the stand-in's gpu(1) (while device 0 is current) runs
every step with its device current, and trains as on the CPU."""
import ast
import pathlib

import numpy as np
import pytest

import minpy
import minpy.module
import minpy.symbol as sym
from minpy.mxnet import initializer
from minpy.nn.io import NDArrayIter

from _module_nets import blobs, mlp as module_mlp
from _standin import installed

PACKAGE = pathlib.Path(__file__).resolve().parent.parent.parent / "minpy"


@pytest.fixture
def gpu():
    """The stand-in GPU (devices 0 and 1) with CuPy's array methods."""
    with installed() as backend:
        yield backend


def mlp():
    x = sym.Variable("data")
    h = sym.Activation(sym.FullyConnected(x, num_hidden=6, name="fc1"), act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def bound(ctx, net=None, **shapes):
    exe = (net or mlp()).simple_bind(ctx, data=(5, 4), type_dict={"data": np.float64},
                                     **shapes)
    rng = np.random.default_rng(0)
    for k, a in exe.arg_dict.items():
        if k not in ("data", "softmax_label"):
            a[:] = rng.standard_normal(a.shape)
    return exe


def on_device(a):
    """A device computation on ``a`` (through its cached device copy when ``a`` is a
    host array), brought back to the host."""
    return (a * 1).asnumpy()


X1, X2 = np.random.default_rng(1).standard_normal((2, 5, 4))
Y1, Y2 = np.array([0, 1, 2, 1, 0.]), np.array([2, 2, 0, 1, 1.])


# ------------------------------------------------------------ stale device copies
def test_device_use_of_executor_outputs_sees_each_forward(gpu):
    exe = bound(minpy.cpu())
    first = on_device(exe.forward(data=X1)[0])
    out = exe.forward(data=X2)[0]
    assert not np.allclose(first, out.asnumpy())
    np.testing.assert_array_equal(on_device(out), out.asnumpy())


def test_device_use_of_arguments_sees_the_values_copied_in(gpu):
    exe = bound(minpy.cpu())
    exe.forward(data=X1)
    np.testing.assert_array_equal(on_device(exe.arg_dict["data"]), X1)
    exe.forward(data=X2)
    np.testing.assert_array_equal(on_device(exe.arg_dict["data"]), X2)
    exe.copy_params_from({"fc1_bias": np.full(6, 3.0)})
    np.testing.assert_array_equal(on_device(exe.arg_dict["fc1_bias"]), np.full(6, 3.0))


def test_device_use_of_gradients_sees_each_backward(gpu):
    exe = bound(minpy.cpu(), net=sym.FullyConnected(sym.Variable("data"), num_hidden=3,
                                                     name="fc"))
    exe.forward(is_train=True, data=X1)
    exe.backward()                            # head gradient: ones (the "ones" fill)
    g1 = on_device(exe.grad_dict["fc_weight"])
    np.testing.assert_allclose(g1, np.ones((3, 5)) @ X1)
    exe.forward(is_train=True, data=X2)
    exe.backward()
    np.testing.assert_allclose(on_device(exe.grad_dict["fc_weight"]), np.ones((3, 5)) @ X2)


def test_device_use_of_aux_states_sees_the_training_update(gpu):
    net = sym.BatchNorm(sym.Variable("data"), momentum=0.5, fix_gamma=False, name="bn")
    exe = net.simple_bind(minpy.cpu(), data=(5, 4), type_dict={"data": np.float64})
    before = on_device(exe.aux_dict["bn_moving_mean"])
    exe.forward(is_train=True, data=X1)
    np.testing.assert_allclose(on_device(exe.aux_dict["bn_moving_mean"]),
                               0.5 * before + 0.5 * X1.mean(0))


def fit_accuracy(ctx):
    x, y = blobs(400)
    train = NDArrayIter(x[:300], y[:300], batch_size=20, shuffle=True, seed=3)
    val = NDArrayIter(x[300:], y[300:], batch_size=20)
    minpy.random.seed(0)
    mod = minpy.module.Module(module_mlp(hidden=16), data_names=["data"],
                              label_names=["softmax_label"], context=ctx)
    mod.fit(train, eval_data=val, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4},
            eval_metric="acc", num_epoch=4, initializer=initializer.Xavier())
    return mod.score(val, "acc")[0][1], mod


@pytest.mark.parametrize("ctx", [minpy.cpu(), minpy.gpu(0), minpy.gpu(1)], ids=str)
def test_module_fit_with_a_gpu_present_learns_as_on_the_cpu(gpu, ctx):
    acc, mod = fit_accuracy(ctx)
    assert acc >= 0.95
    assert mod.get_outputs()[0].context == ctx
    if ctx.device_type == "gpu":
        assert set(gpu.devices_entered) >= {ctx.device_id}


def test_executor_on_the_second_gpu_matches_the_cpu(gpu):
    ref = bound(minpy.cpu(), net=mlp())
    exe = bound(minpy.gpu(1), net=mlp())
    for x, y in ((X1, Y1), (X2, Y2)):
        want = ref.forward(is_train=True, data=x, softmax_label=y)[0].asnumpy()
        ref.backward()
        got = exe.forward(is_train=True, data=minpy.array(x).copyto(minpy.gpu(1)),
                          softmax_label=y)[0]
        exe.backward()
        assert got.context == minpy.gpu(1)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
        for k, g in ref.grad_dict.items():
            assert exe.grad_dict[k].context == minpy.gpu(1)
            np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), g.asnumpy(), rtol=1e-10,
                                       atol=1e-12)
    assert 1 in gpu.devices_entered


def test_the_generator_of_the_second_gpu_is_made_and_seeded_on_it(gpu):
    rngs = minpy.symbol.executor._rngs
    saved = rngs.pop(minpy.gpu(1), None)
    try:
        net = sym.Dropout(sym.Variable("data"), p=0.5, name="drop")
        gpu.devices_entered.clear()
        net.simple_bind(minpy.gpu(1), data=(50, 4), type_dict={"data": np.float64})
        assert rngs[minpy.gpu(1)].gen is not None and 1 in gpu.devices_entered
        gpu.devices_entered.clear()
        minpy.symbol.executor.seed(3)        # reseeds every device's generator there
        assert 1 in gpu.devices_entered
    finally:
        rngs.pop(minpy.gpu(1), None)
        if saved is not None:
            rngs[minpy.gpu(1)] = saved


# ------------------------------------------------------------ no unrecorded writes
WRITING_METHODS = {"fill", "sort", "put", "itemset", "setfield", "partition", "resize"}
RECORDERS = {"mutated", "bump"}
SCANNED = ["symbol", "jit", "nn", "mxnet", "kvstore", "misc", "compat"]


def _is_data(node, aliases):
    """``x._data`` (any ``x``), or a name bound to one in the enclosing functions."""
    if isinstance(node, ast.Attribute) and node.attr == "_data":
        return True
    return isinstance(node, ast.Name) and node.id in aliases


def _writes(node, aliases):
    """Whether statement/expression ``node`` writes into a buffer held in ``._data``."""
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if isinstance(t, ast.Subscript) and _is_data(t.value, aliases):
                return True
            if isinstance(t, ast.Attribute) and t.attr == "_data":     # a new buffer
                return True
            if isinstance(node, ast.AugAssign) and _is_data(t, aliases):
                return True
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in WRITING_METHODS and _is_data(f.value,
                                                                                    aliases):
            return True
        if isinstance(f, ast.Attribute) and f.attr == "copyto" and node.args and \
                _is_data(node.args[0], aliases):
            return True
        for kw in node.keywords:
            if kw.arg == "out":
                vals = kw.value.elts if isinstance(kw.value, ast.Tuple) else [kw.value]
                if any(_is_data(v, aliases) for v in vals):
                    return True
    return False


def _records(fn):
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            if name in RECORDERS:
                return True
    return False


def _own_nodes(fn):
    """The nodes of function ``fn`` not inside a function nested in it."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))


def unrecorded_writes(text, where):
    """``where:line`` of each write into ``._data`` whose (innermost) function does not
    record it with ``mutated``/``versions.bump``."""
    found = []

    def visit(fn, aliases):
        aliases = set(aliases)
        args = getattr(fn, "args", None)
        if args is not None:             # def f(d=x._data) / lambda d=x._data: ...
            pos = args.posonlyargs + args.args
            for a, d in zip(pos[len(pos) - len(args.defaults):], args.defaults):
                if _is_data(d, aliases):
                    aliases.add(a.arg)
        own = list(_own_nodes(fn))
        for n in own:
            if isinstance(n, ast.Assign) and _is_data(n.value, aliases):
                aliases.update(t.id for t in n.targets if isinstance(t, ast.Name))
        records = _records(fn) if not isinstance(fn, ast.Module) else False
        for n in own:
            if _writes(n, aliases) and not records:
                found.append(f"{where}:{n.lineno}")
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(n, aliases)
    visit(ast.parse(text), set())
    return sorted(found, key=lambda w: int(w.rsplit(":", 1)[1]))


def test_the_scan_finds_unrecorded_writes():
    bad = ("def f(x, v):\n    x._data[...] = v\n"
           "def g(x):\n    d = x._data\n    def run():\n        d.fill(1)\n    return run\n"
           "def h(x, e):\n    e.push(lambda d=x._data: d.fill(1))\n"
           "def k(x, y):\n    numpy.add(x._data, 1, out=x._data)\n"
           "def m(x, y):\n    x._data = y\n")
    assert unrecorded_writes(bad, "t") == ["t:2", "t:6", "t:9", "t:11", "t:13"]
    good = ("def f(x, v):\n    x._data[...] = v\n    mutated(x)\n"
            "def g(x):\n    d = x._data\n    def run():\n        d.fill(1)\n"
            "        versions.bump(d)\n    return run\n")
    assert unrecorded_writes(good, "t") == []


def test_every_write_into_array_buffers_is_recorded():
    found = []
    for name in SCANNED:
        root = PACKAGE / name
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            found += unrecorded_writes(path.read_text(), str(path.relative_to(PACKAGE)))
    assert found == [], ("writes into Array._data without minpy.core.execute.mutated "
                         "(a device copy of the array would stay stale)")
