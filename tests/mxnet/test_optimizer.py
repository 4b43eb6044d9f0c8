"""minpy.mxnet.optimizer under Module: MXNet 1.9.1's updates (tests/fixtures/mxnet/module),
minpy optimizers, frozen parameters, optimizer state files, learning-rate schedules; MXNet's
update counts (begin_num_update), its one-index update and create_state, device parameters."""
import numpy
import pytest

import minpy
import minpy.symbol as sym
from minpy.mxnet import optimizer as module_optim
from minpy.nn import optim
from minpy.nn.io import NDArrayIter
from minpy.mxnet.module import DataBatch, Module
from minpy.nn.optim.schedule import StepSchedule

from _module_nets import CONFIGS, FIXTURE, blobs, bound, host, mlp, params_of
from _standin import standin_gpu  # noqa: F401


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_two_steps_equal_mxnets(config):
    fx = numpy.load(FIXTURE)
    init = {k: fx[f"init/{k}"] for k in params_of()}
    name, params = CONFIGS[config]
    mod = Module(mlp(), data_names=["data"], label_names=["softmax_label"])
    mod.fit(NDArrayIter(fx["x"], fx["y"], batch_size=8, shuffle=False), optimizer=name,
            optimizer_params=params, num_epoch=1, arg_params=init, eval_metric="acc")
    arg_params, aux_params = mod.get_params()
    assert aux_params == {}
    for k, v in host(arg_params).items():
        assert not numpy.allclose(v, init[k]), k          # it trained
        numpy.testing.assert_allclose(v, fx[f"{config}/{k}"], rtol=1e-5, atol=1e-6,
                                      err_msg=k)
    pred = mod.predict(NDArrayIter(fx["x_pred"], batch_size=8))
    assert pred.shape == (20, 3)
    numpy.testing.assert_allclose(pred.asnumpy(), fx[f"{config}/predict"], rtol=1e-5,
                                  atol=1e-6)
    score = mod.score(NDArrayIter(fx["x"], fx["y"], batch_size=8), ["acc", "ce"])
    assert [n for n, _ in score] == ["accuracy", "cross-entropy"]
    numpy.testing.assert_allclose([v for _, v in score], fx[f"{config}/score"], rtol=1e-5)


def test_a_minpy_optimizer_object_steps_with_gradients_over_the_batch_size():
    x, y = blobs(8)
    a, b = bound(), bound()
    a.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2})
    b.init_optimizer(optimizer=optim.SGD(learning_rate=0.2))
    for mod in (a, b):
        mod.forward_backward(DataBatch([x], [y]))
        mod.update()
    for k, v in host(a.get_params()[0]).items():
        numpy.testing.assert_allclose(host(b.get_params()[0])[k], v, rtol=1e-6)


def test_fixed_params_and_lr_mult_zero_are_not_updated():
    x, y = blobs(8)
    frozen = Module(mlp(fc1_weight=sym.Variable("fc1_weight", lr_mult=0.0)))
    fixed = Module(mlp(), fixed_param_names=["fc2_weight"])
    for mod, still in ((frozen, "fc1_weight"), (fixed, "fc2_weight")):
        mod.bind([("data", (8, 6))], [("softmax_label", (8,))])
        mod.set_params(params_of(), {})
        mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
        mod.forward_backward(DataBatch([x], [y]))
        mod.update()
        after = host(mod.get_params()[0])
        numpy.testing.assert_array_equal(after[still], params_of()[still])
        assert not numpy.allclose(after["fc1_bias"], params_of()["fc1_bias"])


@pytest.mark.parametrize("name,params", [("sgd", {"momentum": 0.9}), ("adam", {}),
                                         ("rmsprop", {"centered": True})])
def test_optimizer_state_save_and_load_continue_identically(tmp_path, name, params):
    x, y = blobs(16)
    params = dict(params, learning_rate=0.1)
    a = bound()
    a.init_optimizer(optimizer=name, optimizer_params=params)
    for i in (0, 8):
        a.forward_backward(DataBatch([x[i:i + 8]], [y[i:i + 8]]))
        a.update()
    a.save_optimizer_states(str(tmp_path / "opt.states"))
    b = bound(params=host(a.get_params()[0]))
    b.init_optimizer(optimizer=name, optimizer_params=params)
    b.load_optimizer_states(str(tmp_path / "opt.states"))
    for mod in (a, b):
        mod.forward_backward(DataBatch([x[:8]], [y[:8]]))
        mod.update()
    for k, v in host(a.get_params()[0]).items():
        numpy.testing.assert_array_equal(host(b.get_params()[0])[k], v)


@pytest.mark.parametrize("scheduler,want", [(lambda n: 0.1 * n, -0.3),
                                            (StepSchedule(1, 0.5), -1.5)])
def test_lr_schedulers_see_mxnets_update_count(scheduler, want):
    opt = module_optim.create("sgd", learning_rate=1.0, lr_scheduler=scheduler)
    w = minpy.zeros(3, dtype=numpy.float32)
    for _ in range(2):
        opt.update(["w"], [w], [minpy.ones(3, dtype=numpy.float32)])
    numpy.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
    assert opt.num_update == 2


def test_adam_counts_from_begin_num_update_as_mxnet():
    # MXNet's Adam corrects its bias with the parameter's count, which starts at
    # begin_num_update: the first update here is t = 5
    opt = module_optim.create("adam", learning_rate=0.1, begin_num_update=4)
    w = minpy.zeros(3, dtype=numpy.float64)
    g = numpy.array([1.0, -2.0, 0.5])
    opt.update(["w"], [w], [minpy.array(g)])
    b1, b2, t = 0.9, 0.999, 5
    m, v = (1 - b1) * g, (1 - b2) * g * g
    want = -0.1 * numpy.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (numpy.sqrt(v) + 1e-8)
    numpy.testing.assert_allclose(w.asnumpy(), want, rtol=1e-12)
    assert opt.num_update == 5


def test_update_takes_mxnets_single_index_form_and_create_state():
    opt = module_optim.create("sgd", learning_rate=0.5, momentum=0.9)
    w = minpy.ones(2, dtype=numpy.float32)
    state = opt.create_state(0, w)
    assert set(state) == {"t", "velocity"} and state["t"] == 0
    opt.update(0, w, minpy.ones(2, dtype=numpy.float32), state)
    numpy.testing.assert_array_equal(w.asnumpy(), [0.5, 0.5])
    numpy.testing.assert_array_equal(state["velocity"], [-0.5, -0.5])
    with pytest.raises(ValueError, match="not the one create_state made"):
        opt.update(0, w, minpy.ones(2, dtype=numpy.float32), {"velocity": 0})
    with pytest.raises(ValueError, match="distinct indices"):
        opt.update([0, 0], [w, w], [w, w])
    plain = module_optim.create("sgd", learning_rate=0.5)
    plain.update("w", w, minpy.ones(2, dtype=numpy.float32))
    assert plain.state_dict()["state"]["w"] == {"t": 1}         # no momentum: no state
    numpy.testing.assert_array_equal(w.asnumpy(), [0.0, 0.0])


@pytest.mark.parametrize("name,params", [
    ("rmsprop", {"centered": True, "clip_weights": 0.8}), ("adagrad", {}), ("adam", {}),
    ("sgd", {"momentum": 0.5})])
def test_a_device_parameter_is_updated_there_as_on_the_host(standin_gpu, name, params):
    # RMSProp and AdaGrad run their rule with the device's array module, Adam makes its
    # gradient there first (decay before the clip), SGD runs its kernel there
    rng = numpy.random.default_rng(2)
    w0 = rng.standard_normal((3, 4)).astype(numpy.float32)
    grads = [rng.standard_normal((3, 4)).astype(numpy.float32) * 4 for _ in range(3)]
    kw = dict(params, learning_rate=0.1, wd=0.01, clip_gradient=0.5, rescale_grad=0.5)
    on_dev, on_host = module_optim.create(name, **kw), module_optim.create(name, **kw)
    with minpy.gpu(1):
        wg = minpy.array(w0)
    wc = minpy.array(w0)
    for g in grads:
        on_dev.update(["p_weight"], [wg], [minpy.array(g)])
        on_host.update(["p_weight"], [wc], [minpy.array(g)])
    assert wg.context == minpy.gpu(1)
    numpy.testing.assert_allclose(wg.asnumpy(), wc.asnumpy(), rtol=1e-6, atol=1e-7)
    assert not numpy.allclose(wc.asnumpy(), w0)
