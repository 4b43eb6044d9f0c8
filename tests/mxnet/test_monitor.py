"""mx.monitor (MXNet 1.x's Monitor) and Executor.set_monitor_callback: MXNet 1.9.1's
unit test (test_module.py::test_monitor) and the rows MXNet 1.9.1 prints for a fixed
net (tests/fixtures/mxnet/seqmod/monitor_cases.json, made by make_seqmod_fixtures.py)."""
import json
import logging
import os
import re
from functools import reduce

import numpy as np
import pytest

import minpy.mxnet as mx
from minpy.symbol.registry import fresh_names

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet", "seqmod")


def _fixture():
    with open(os.path.join(HERE, "monitor_cases.json")) as f:
        rows = json.load(f)["rows"]
    return rows, np.load(os.path.join(HERE, "seqmod_cases.npz"))


def _value(text):
    return float(text.strip())


def _unittest_net():
    x = mx.symbol.Variable('data')
    x = mx.symbol.FullyConnected(name='fc_0', data=x, num_hidden=2)
    x = mx.symbol.Activation(name="act_0", data=x, act_type='sigmoid')
    x = mx.symbol.FullyConnected(name='fc_1', data=x, num_hidden=2)
    x = mx.symbol.Activation(name="act_1", data=x, act_type='sigmoid')
    return mx.symbol.LinearRegressionOutput(data=x, name='softmax', grad_scale=2)


def _mean_abs(x):
    sum_abs = mx.ndarray.sum(mx.ndarray.abs(x))
    return mx.ndarray.divide(sum_abs, reduce(lambda x, y: x * y, x.shape))


def test_monitor():
    """MXNet 1.9.1's test_module.py::test_monitor: 21 rows; the forward and argument rows
    are MXNet's (names and values); the backward rows carry minpy's node names, their
    values are MXNet's gradients."""
    data = mx.nd.array([[0.05, .10]])
    label = mx.nd.array([[.01, 0.99]])
    train_data = mx.io.NDArrayIter(data, label, batch_size=1)
    mon = mx.mon.Monitor(1, stat_func=_mean_abs, pattern='.*', sort=True)
    with fresh_names():       # the backward rows' automatic node names, from 0
        mod = mx.mod.Module(_unittest_net(), context=[mx.cpu()])
        mod.bind(train_data.provide_data, label_shapes=train_data.provide_label,
                 for_training=True)
    mod.install_monitor(mon)
    arg_params = {'fc_0_weight': mx.nd.array([[.15, .20], [.25, .30]]),
                  'fc_0_bias': mx.nd.array([.35, .35]),
                  'fc_1_weight': mx.nd.array([[.40, .45], [.50, .55]]),
                  'fc_1_bias': mx.nd.array([.60, .60])}
    mod.init_params(arg_params=arg_params)
    data_batch = next(iter(train_data))
    mon.tic()
    mod.forward_backward(data_batch)
    res = mon.toc()
    assert len(res) == 21
    assert [k for _, k, _ in res] == sorted(k for _, k, _ in res)
    theirs = _fixture()[0]["unittest_test_monitor"]
    want = {k: _value(v) for _, k, v in theirs if "backward" not in k}
    got = {k: _value(v) for _, k, v in res if "backward" not in k}
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
    # MXNet's backward rows, less the two gradients it does not compute (data, label)
    their_grads = [_value(v) for _, k, v in theirs
                   if "backward" in k and k not in ("fc_0_backward_output0",
                                                    "softmax_backward_output1")]
    our_grads = [_value(v) for _, k, v in res
                 if "backward" in k and not k.endswith("_label")
                 and k != "backward_fullyconnected1_data"]
    np.testing.assert_allclose(sorted(our_grads), sorted(their_grads), rtol=1e-6)


@pytest.mark.parametrize("case,kwargs", [
    ("default", {}),
    ("pattern_sorted", {"pattern": ".*weight|.*output", "sort": True}),
    ("all", {"monitor_all": True}),
])
def test_rows_match_mxnets_on_a_fixed_net(case, kwargs):
    rows, z = _fixture()
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.Activation(mx.sym.FullyConnected(data, name="fc1", num_hidden=6),
                          name="relu1", act_type="relu"), name="fc2", num_hidden=3),
        name="softmax")
    exe = net.simple_bind(mx.cpu(), data=(4, 5), grad_req="null")
    for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
        exe.arg_dict[k][:] = z["p_" + k]
    exe.arg_dict["data"][:] = z["x"][0]
    exe.arg_dict["softmax_label"][:] = z["y"][0]
    mon = mx.mon.Monitor(1, **kwargs)
    mon.install(exe)
    mon.tic()
    exe.forward(is_train=False)
    res = mon.toc()
    # minpy names an operator input by the operator's argument name, where MXNet says
    # input<i> for operators that declare no input names (Activation)
    want = [(n, k.replace("relu1_input0", "relu1_data"), v) for n, k, v in rows[case]]
    assert [(n, k) for n, k, _ in res] == [(n, k) for n, k, _ in want]
    np.testing.assert_allclose([_value(v) for _, _, v in res],
                               [_value(v) for _, _, v in want], rtol=1e-6)
    assert all(v.endswith("\t") for _, _, v in res)


def test_interval_toc_print_and_fit(caplog):
    x = np.random.RandomState(0).randn(12, 5).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc",
                                                     num_hidden=2), name="softmax")
    mon = mx.mon.Monitor(2, pattern="fc.*")
    mod = mx.mod.Module(net)
    with caplog.at_level(logging.INFO):
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=4), num_epoch=1, monitor=mon)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Batch:")]
    # batches 1 and 3 of 3 are collected (every 2nd tic): fc_output, fc_weight, fc_bias
    # each, and minpy's backward rows do not match 'fc.*'
    assert len(lines) == 6
    assert lines[0].startswith("Batch:       1 fc_output")
    assert mon.step == 3
    mon.tic()                               # step 3: not collected
    assert mon.toc() == [] and not mon.activated


def test_every_executor_of_several_contexts_and_reshape():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=3)
    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (4, 2))], for_training=False)
    mod.init_params()
    mon = mx.mon.Monitor(1, pattern="fc_output")
    mod.install_monitor(mon)
    assert len(mon.exes) == 2
    mon.tic()
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 2))]))
    assert [k for _, k, _ in mon.toc()] == ["fc_output", "fc_output"]
    mon.tic()                       # a smaller batch reshapes: the monitor stays
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 2))]))
    assert [k for _, k, _ in mon.toc()] == ["fc_output", "fc_output"]
    # and toc reads the reshaped executors' arguments: this batch's data only
    mon.re_prog = re.compile("data")
    mon.tic()
    mod.forward(mx.io.DataBatch([mx.nd.array([[3, 4], [0, 0]])]))
    (_, k0, v0), (_, k1, v1) = mon.toc()     # one sample per executor
    assert (k0, k1, _value(v1)) == ("data", "data", 0.0)
    np.testing.assert_allclose(_value(v0), 5 / np.sqrt(2), rtol=1e-6)


def test_stat_func_and_errors():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=3)
    exe = net.simple_bind(mx.cpu(), data=(2, 2), grad_req="null")
    exe.arg_dict["fc_weight"][:] = 1.0
    mon = mx.mon.Monitor(1, stat_func=lambda a: [mx.nd.max(a), a], pattern="fc_weight")
    mon.install(exe)
    mon.tic()
    exe.forward()
    (step, name, text), = mon.toc()
    assert (step, name) == (1, "fc_weight") and text.startswith("1.0\t[[1. 1.]")
    bad = mx.mon.Monitor(1, stat_func=lambda a: 3.0)
    bad.install(exe)
    bad.tic()
    exe.forward()
    with pytest.raises(TypeError, match="Monitor.toc: stat_func must return an array"):
        bad.toc()
    with pytest.raises(ValueError, match="interval"):
        mx.mon.Monitor(0)
    with pytest.raises(TypeError, match="Monitor.install: expected an Executor"):
        mx.mon.Monitor(1).install(object())
    with pytest.raises(RuntimeError, match="not bound"):
        mx.mod.Module(net, label_names=None).install_monitor(mon)
    exe.set_monitor_callback(None)          # removed: forward runs unmonitored
    mon.tic()
    exe.forward()
    assert mon.queue == [] and mon.activated


def test_on_a_gpu_executor_rows_equal_the_cpus():
    """On the stand-in GPU's gpu(1): the same rows as on the CPU (the callback sees each
    output once its step ran on the device)."""
    from _standin import installed
    rows, z = _fixture()
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(
        data, name="fc1", num_hidden=6), name="relu1", act_type="relu"), name="fc2",
        num_hidden=3)
    results = []
    with installed() as backend:
        for ctx in (mx.cpu(), mx.gpu(1)):
            exe = net.simple_bind(ctx, data=(4, 5), grad_req="null")
            for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
                exe.arg_dict[k][:] = z["p_" + k]
            exe.arg_dict["data"][:] = z["x"][0]
            mon = mx.mon.Monitor(1, monitor_all=True)
            mon.install(exe)
            mon.tic()
            exe.forward()
            results.append(mon.toc())
        assert 1 in backend.syncs
    assert [k for _, k, _ in results[0]] == [k for _, k, _ in results[1]]
    np.testing.assert_allclose([_value(v) for _, _, v in results[1]],
                               [_value(v) for _, _, v in results[0]], rtol=1e-6)
