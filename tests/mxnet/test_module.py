"""minpy.mxnet.module (MXNet 1.x's Module API): training, inference, parameters, checkpoints
(MXNet 1.9.1's files and outputs, tests/fixtures/mxnet/module), errors, callbacks.
The optimizers under Module: tests/mxnet/test_optimizer.py."""
import logging
import os

import numpy
import pytest

import minpy
import minpy.callback
import minpy.metric
import minpy.module
from minpy.symbol.format import params as ndfile
from minpy.mxnet import callback, initializer, metric, optimizer as module_optim
from minpy.nn.io import NDArrayIter
from minpy.mxnet.module import DataBatch, Module

from _module_nets import Batch, FIXTURE, blobs, bound, host, manual_forward, mlp, params_of

# ------------------------------------------------------------------ training
def test_fit_learns_separable_data_and_calls_back(caplog):
    x, y = blobs(400)
    train = NDArrayIter(x[:300], y[:300], batch_size=20, shuffle=True, seed=3)
    val = NDArrayIter(x[300:], y[300:], batch_size=20)
    ends, batches = [], []
    minpy.random.seed(0)
    mod = minpy.module.Module(mlp(hidden=16), data_names=["data"],
                              label_names=["softmax_label"], context=minpy.cpu())
    with caplog.at_level(logging.INFO):
        mod.fit(train, eval_data=val, optimizer="sgd",
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4},
                eval_metric="acc", num_epoch=4, initializer=initializer.Xavier(),
                batch_end_callback=[minpy.callback.Speedometer(20, 5), batches.append],
                epoch_end_callback=lambda *a: ends.append(a))
    assert mod.score(val, "acc")[0][1] >= 0.95
    assert [e[0] for e in ends] == [0, 1, 2, 3] and ends[0][1] is mod.symbol
    assert set(ends[-1][2]) == {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"}
    assert len(batches) == 4 * 15 and batches[16].epoch == 1 and batches[16].nbatch == 1
    assert isinstance(batches[0].eval_metric, metric.Accuracy)
    text = caplog.text
    assert "Epoch[3] Train-accuracy=" in text and "Epoch[3] Validation-accuracy=" in text
    assert "Epoch[0] Batch [5-10]\tSpeed:" in text


# ------------------------------------------------------------------ inference
def test_predict_equals_a_manual_forward_and_drops_the_pad():
    x, _ = blobs(20)
    params = params_of()
    mod = bound(for_training=False, params=params)
    want = manual_forward(x, params)
    it = NDArrayIter(x, batch_size=8)
    pred = mod.predict(it)
    assert pred.shape == (20, 3)
    numpy.testing.assert_allclose(pred.asnumpy(), want, rtol=1e-6)
    per_batch = mod.predict(it, merge_batches=False)
    assert [p[0].shape for p in per_batch] == [(8, 3), (8, 3), (4, 3)]
    numpy.testing.assert_allclose(mod.predict(x).asnumpy(), want, rtol=1e-6)
    numpy.testing.assert_allclose(mod.predict(minpy.array(x)).asnumpy(), want, rtol=1e-6)
    assert mod.predict(it, num_batch=1).shape == (8, 3)
    assert len(mod.predict(it, always_output_list=True)) == 1


def test_inference_bind_forward_equals_simple_bind():
    x, _ = blobs(1)
    params = params_of()
    mod = Module(mlp(head=False), label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (1, 6))])
    mod.set_params(params, {})
    mod.forward(Batch([minpy.array(x)]))
    out = mod.get_outputs()[0]
    assert out.shape == (1, 3) and mod.output_names == ["fc2_output"]
    numpy.testing.assert_allclose(out.asnumpy(), manual_forward(x, params, head=False),
                                  rtol=1e-6)
    assert mod.get_outputs(merge_multi_context=False)[0][0] is out


def test_forward_reshapes_for_another_batch_size_sharing_parameters():
    x, y = blobs(13)
    params = params_of()
    mod = bound(params=params)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    mod.forward(DataBatch([x[:5]], [y[:5]]), is_train=False)
    assert mod.get_outputs()[0].shape == (5, 3)
    assert mod.data_shapes[0].shape == (5, 6) and mod.label_shapes[0].shape == (5,)
    numpy.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                                  manual_forward(x[:5], params), rtol=1e-6)
    mod.forward_backward(DataBatch([x[5:13]], [y[5:13]]))     # back to 8, and train
    mod.update()
    trained = host(mod.get_params()[0])
    mod.forward(Batch([x[:5]]), is_train=False)
    numpy.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                                  manual_forward(x[:5], trained), rtol=1e-6)


def test_get_input_grads_are_the_data_gradients():
    x, y = blobs(8)
    params = params_of()
    mod = Module(mlp())
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))], inputs_need_grad=True)
    mod.set_params(params, {})
    mod.forward_backward(DataBatch([x], [y]))
    exe = mlp().simple_bind(minpy.cpu(), data=(8, 6))
    for k, v in params.items():
        exe.arg_dict[k][...] = v
    exe.forward(is_train=True, data=x, softmax_label=y)
    exe.backward()
    grads = mod.get_input_grads()
    assert len(grads) == 1 and grads[0].shape == (8, 6)
    numpy.testing.assert_allclose(grads[0].asnumpy(), exe.grad_dict["data"].asnumpy(),
                                  rtol=1e-6)


def test_update_metric_uses_the_last_outputs_and_the_labels():
    x, y = blobs(8)
    mod = bound(for_training=False)
    mod.forward(DataBatch([x], [y]))
    acc = metric.Accuracy()
    mod.update_metric(acc, [y])
    want = numpy.mean(manual_forward(x, params_of()).argmax(1) == y)
    assert acc.get()[1] == pytest.approx(want)


# ------------------------------------------------------------------ parameters
def test_set_params_get_params_round_trip_with_own_copies():
    x, y = blobs(8)
    params = params_of(seed=5)
    mod = bound(params=params)
    got, aux = mod.get_params()
    assert aux == {} and set(got) == set(params)
    for k, v in params.items():
        assert isinstance(got[k], minpy.Array)
        numpy.testing.assert_array_equal(got[k].asnumpy(), v)
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    before = host(got)
    mod.forward_backward(DataBatch([x], [y]))
    mod.update()
    assert all(numpy.array_equal(got[k].asnumpy(), before[k]) for k in before)  # not live
    after = host(mod.get_params()[0])
    assert not numpy.allclose(after["fc1_weight"], before["fc1_weight"])


def test_init_params_fills_weights_with_the_initializer_and_biases_with_zero():
    mod = Module(mlp())
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    minpy.random.seed(0)
    mod.init_params(initializer.Uniform(0.5))
    arg = host(mod.get_params()[0])
    assert numpy.all(arg["fc1_bias"] == 0) and numpy.all(arg["fc2_bias"] == 0)
    assert 0 < numpy.abs(arg["fc1_weight"]).max() <= 0.5
    mod.init_params(initializer.Uniform(5.0), force_init=True, allow_missing=True,
                    arg_params={"fc1_bias": numpy.ones(8)})
    arg = host(mod.get_params()[0])
    assert numpy.all(arg["fc1_bias"] == 1) and numpy.abs(arg["fc1_weight"]).max() > 0.5


def test_params_missing_extra_or_misshapen_are_errors():
    mod = Module(mlp())
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    part = {k: v for k, v in params_of().items() if k != "fc2_bias"}
    with pytest.raises(RuntimeError, match=r"init_params: \['fc2_bias'\] are missing"):
        mod.set_params(part, {})
    with pytest.raises(ValueError, match=r"\['bogus'\], which the symbol does not take"):
        mod.set_params(dict(params_of(), bogus=numpy.zeros(1)), {})
    mod.set_params(dict(params_of(), bogus=numpy.zeros(1)), {}, allow_extra=True)
    bad = dict(params_of(), fc1_weight=numpy.zeros((8, 7)))
    with pytest.raises(ValueError, match=r"fc1_weight'\] has shape \(8, 7\).*\(8, 6\)"):
        mod.set_params(bad, {})
    mod.set_params(part, {}, allow_missing=True)       # the rest keeps its values
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()


# ------------------------------------------------------------------ errors
def test_state_errors_name_the_method():
    x, y = blobs(8)
    mod = Module(mlp())
    with pytest.raises(RuntimeError, match=r"Module.forward: the module is not bound"):
        mod.forward(DataBatch([x], [y]))
    with pytest.raises(RuntimeError, match=r"Module.init_params: the module is not bound"):
        mod.init_params()
    mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
    with pytest.raises(RuntimeError, match=r"Module.forward: the parameters are not init"):
        mod.forward(DataBatch([x], [y]))
    mod.init_params()
    mod.forward_backward(DataBatch([x], [y]))
    with pytest.raises(RuntimeError, match=r"Module.update: no optimizer"):
        mod.update()
    with pytest.raises(ValueError, match=r"optimizer 'sgdd' is not supported.*'adam'"):
        mod.init_optimizer(optimizer="sgdd")
    with pytest.raises(TypeError, match=r"'adam' does not take \['momentum'\]"):
        mod.init_optimizer(optimizer="adam", optimizer_params={"momentum": 0.9})
    with pytest.raises(ValueError, match="unknown kvstore 'bogus'"):
        mod.init_optimizer(kvstore="bogus")
    with pytest.raises(RuntimeError, match="inputs_need_grad=True"):
        mod.get_input_grads()
    with pytest.raises(ValueError, match=r"the batch has 2 data arrays.*\['data'\]"):
        mod.forward(DataBatch([x, x], [y]))


def test_shapes_that_would_change_parameters_are_errors():
    mod = bound()
    with pytest.raises(ValueError, match=r"Module.forward: .*fc1_weight.*\(8, 6\).*\(8, 7\)"):
        mod.forward(Batch([numpy.zeros((8, 7), numpy.float32)]))
    assert mod.data_shapes[0].shape == (8, 6)


def test_construction_and_bind_errors():
    with pytest.raises(ValueError, match=r"data_names \['x'\] are not arguments"):
        Module(mlp(), data_names=["x"])
    with pytest.warns(UserWarning, match=r"label_names \['y'\]"):
        Module(mlp(head=False), label_names=["y"])
    with pytest.raises(ValueError, match="work_load_list needs one entry per context"):
        Module(mlp(), context=[minpy.cpu(0), minpy.cpu(1)], work_load_list=[1, 1, 1])
    mod = Module(mlp())
    with pytest.raises(ValueError, match=r"data_shapes name \['img'\].*\['data'\]"):
        mod.bind([("img", (8, 6))], [("softmax_label", (8,))])
    with pytest.raises(ValueError, match="inputs_need_grad=True needs for_training"):
        mod.bind([("data", (8, 6))], for_training=False, inputs_need_grad=True)
    infer = bound(for_training=False)
    infer.forward(Batch([numpy.zeros((8, 6), numpy.float32)]))
    with pytest.raises(RuntimeError, match="bound with for_training=False"):
        infer.backward()
    with pytest.raises(ValueError, match="num_epoch is required"):
        Module(mlp()).fit(NDArrayIter(numpy.zeros((8, 6)), numpy.zeros(8), batch_size=8))


def test_binding_twice_warns_and_force_rebind_keeps_the_parameters(caplog):
    x, y = blobs(8)
    mod = bound()
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward_backward(DataBatch([x], [y]))
    mod.update()
    with caplog.at_level(logging.WARNING):
        mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
    assert "Already bound" in caplog.text
    trained = host(mod.get_params()[0])
    with pytest.warns(UserWarning, match="label_shapes name"):
        mod.bind([("data", (3, 6))], for_training=False, force_rebind=True)
    mod.forward(Batch([x[:3]]))
    numpy.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                                  manual_forward(x[:3], trained), rtol=1e-6)


# ------------------------------------------------------------------ checkpoints
def test_an_mxnet_checkpoint_loads_into_a_module_that_predicts_as_mxnet():
    fx = numpy.load(FIXTURE)
    mod = Module.load(os.path.join(os.path.dirname(FIXTURE), "mlp"), 1)
    with pytest.warns(UserWarning, match="label_shapes name"):    # as MXNet warns
        mod.bind(data_shapes=[("data", (8, 6))], for_training=False)
    pred = mod.predict(NDArrayIter(fx["x_pred"], batch_size=8))
    numpy.testing.assert_allclose(pred.asnumpy(), fx["sgd_momentum/predict"], rtol=1e-5,
                                  atol=1e-6)


def test_the_mxnet_inference_recipe_gives_mxnets_logits():
    fx = numpy.load(FIXTURE)
    prefix = os.path.join(os.path.dirname(FIXTURE), "mlp_logits")
    net, arg_params, aux_params = minpy.model.load_checkpoint(prefix, 1)
    mod = minpy.module.Module(net, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (1, 6))])
    mod.set_params(arg_params, aux_params)
    mod.forward(Batch([minpy.array(fx["x_pred"][:1])]))
    numpy.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), fx["logits"], rtol=1e-5,
                                  atol=1e-6)


def test_save_params_and_load_params_round_trip(tmp_path):
    a = bound(params=params_of(seed=9))
    a.save_params(str(tmp_path / "p.params"))
    b = bound()
    b.load_params(str(tmp_path / "p.params"))
    for k, v in params_of(seed=9).items():
        numpy.testing.assert_array_equal(host(b.get_params()[0])[k], v)
    assert sorted(ndfile.load(str(tmp_path / "p.params"))) == \
        ["arg:fc1_bias", "arg:fc1_weight", "arg:fc2_bias", "arg:fc2_weight"]


def test_checkpoint_round_trip_continues_training_identically(tmp_path):
    x, y = blobs(16)
    prefix = str(tmp_path / "mlp")
    a = bound()
    a.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    a.forward_backward(DataBatch([x[:8]], [y[:8]]))
    a.update()
    a.save_checkpoint(prefix, 3, save_optimizer_states=True)
    assert os.path.exists(prefix + "-symbol.json") and os.path.exists(prefix + "-0003.params")
    b = Module.load(prefix, 3, load_optimizer_states=True)
    b.bind([("data", (8, 6))], [("softmax_label", (8,))])
    b.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for mod in (a, b):
        mod.forward_backward(DataBatch([x[8:]], [y[8:]]))
        mod.update()
    for k, v in host(a.get_params()[0]).items():
        numpy.testing.assert_allclose(host(b.get_params()[0])[k], v, rtol=1e-6)


def test_do_checkpoint_writes_every_period(tmp_path):
    prefix = str(tmp_path / "net")
    cb = callback.do_checkpoint(prefix, period=2)
    mod = bound()
    for epoch in range(4):
        cb(epoch, mod.symbol, *mod.get_params())
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".params")) == \
        ["net-0002.params", "net-0004.params"]


# ------------------------------------------------------------------ spellings, callbacks
def test_top_level_spellings_are_the_nn_modules():
    assert minpy.module.Module is Module and minpy.module.BaseModule.__name__ == "BaseModule"
    assert minpy.metric.create is metric.create and minpy.metric.np is metric.np
    assert minpy.callback.Speedometer is callback.Speedometer
    assert minpy.mod(7, 3) == 1             # NumPy's mod stays NumPy's mod
    assert module_optim.create("SGD").lr == 0.01


def test_log_train_metric_and_speedometer_without_reset(caplog):
    acc = metric.Accuracy()
    acc.update([numpy.array([1])], [numpy.array([1])])
    log = callback.log_train_metric(2, auto_reset=True)
    speed = callback.Speedometer(4, frequent=2, auto_reset=False)
    with caplog.at_level(logging.INFO):
        for n in range(3):
            param = callback.BatchEndParam(epoch=1, nbatch=n, eval_metric=acc, locals={})
            speed(param)
            log(param)
    assert "Iter[1] Batch[0] Train-accuracy=1.000000" in caplog.text
    assert "Epoch[1] Batch [0-2]\tSpeed:" in caplog.text
    assert acc.num_inst == 0 and acc.global_num_inst == 1
