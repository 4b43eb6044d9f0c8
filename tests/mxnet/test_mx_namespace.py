"""``import minpy.mxnet as mx``: MXNet 1.x's module layout (issue 28), each name the minpy
object that does the work; values compared with real MXNet 1.9.1 (side venv; the literals and
tests/fixtures/mxnet/print_summary_mxnet191.json come from
tests/fixtures/mxnet/make_namespace_fixtures.py).
"""
import gzip
import json
import logging
import pathlib
import subprocess
import sys

import numpy
import pytest

import minpy.mxnet as mx
import minpy.numpy as mnp
from minpy.datasets import load_digits

SUMMARIES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "mxnet" / \
    "print_summary_mxnet191.json"

# MXNet 1.9.1's lr_scheduler values at these num_update (make_namespace_fixtures.py)
LR_UPDATES = [0, 1, 2, 3, 5, 9, 10, 11, 19, 20, 21, 30, 50, 99, 100, 101, 150]
LR_EXPECTED = {
    'factor':
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.0625, 0.001953125,
     0.001953125, 0.0009765625, 6.103515625e-05],
    'factor_warm':
    [0.1, 0.28, 0.45999999999999996, 0.64, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.0625,
     0.001953125, 0.001953125, 0.0009765625, 6.103515625e-05],
    'factor_stop':
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.010000000000000002,
     0.010000000000000002, 0.001, 0.001, 0.001, 0.001, 0.001],
    'multi':
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.010000000000000002,
     0.010000000000000002, 0.010000000000000002, 0.0010000000000000002, 0.0010000000000000002,
     0.0010000000000000002, 0.0010000000000000002],
    'multi_warm':
    [0.2, 0.2, 0.2, 0.2, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.010000000000000002,
     0.010000000000000002, 0.010000000000000002, 0.0010000000000000002, 0.0010000000000000002,
     0.0010000000000000002, 0.0010000000000000002],
    'poly':
    [1.0, 0.9802989999999999, 0.9607959999999999, 0.941491, 0.9034749999999999,
     0.8298190000000001, 0.8119000000000001, 0.7941790000000001, 0.6595390000000001,
     0.6436000000000002, 0.6278590000000001, 0.49509999999999993, 0.2575, 0.010099, 0.01,
     0.01, 0.01],
    'poly_warm':
    [0.1, 0.19, 0.28, 0.37, 0.55, 0.9099999999999999, 1.0, 0.9670356652949247,
     0.7290000000000001, 0.7023319615912207, 0.6763223593964335, 0.4705075445816187,
     0.1714677640603567, 1.3717421124828386e-06, 0.0, 0.0, 0.0],
    'cos':
    [1.0, 0.9997656161737225, 0.999062696003429, 0.997891933186463, 0.9941519617826905,
     0.981139500696548, 0.976751845240198, 0.9719183652532571, 0.9178632727804168,
     0.9092830723281, 0.9003236308784528, 0.8041979948389248, 0.525, 0.05023438382627749,
     0.05, 0.05, 0.05],
    'cos_warm':
    [0.0, 0.1, 0.2, 0.3, 0.5, 0.9, 1.0, 0.9996954135095479, 0.9755282581475768,
     0.9698463103929542, 0.9635919272833937, 0.883022221559489, 0.5868240888334653,
     0.00030458649045211894, 0.0, 0.0, 0.0],
}

# MXNet 1.9.1's weights after three updates of OPT_W0 by OPT_GRADS (index 0, float32)
OPT_W0 = [[1.764052391052246, 0.40015721321105957, 0.978738009929657, 2.2408931255340576],
 [1.8675580024719238, -0.9772778749465942, 0.9500884413719177, -0.15135720372200012],
 [-0.10321885347366333, 0.4105985164642334, 0.14404356479644775, 1.4542734622955322]]
OPT_GRADS = [[[0.7610377073287964, 0.12167501449584961, 0.44386324286460876, 0.3336743414402008],
  [1.4940791130065918, -0.2051582634449005, 0.3130677044391632, -0.8540957570075989],
  [-2.5529897212982178, 0.653618574142456, 0.8644362092018127, -0.7421650290489197]],
 [[2.269754648208618, -1.4543657302856445, 0.04575851559638977, -0.18718385696411133],
  [1.5327792167663574, 1.4693588018417358, 0.154947429895401, 0.37816253304481506],
  [-0.8877857327461243, -1.980796456336975, -0.34791216254234314, 0.15634897351264954]],
 [[1.2302906513214111, 1.202379822731018, -0.38732680678367615, -0.302302747964859],
  [-1.0485529899597168, -1.420017957687378, -1.7062702178955078, 1.950775384902954],
  [-0.5096521973609924, -0.4380742907524109, -1.2527953386306763, 0.7774903774261475]]]
OPT_EXPECTED = {
    'nag':
    [[1.195709228515625, 0.4585723876953125, 0.9254717230796814, 2.2197885513305664],
     [1.4890058040618896, -0.9981138110160828, 1.029984474182129, -0.24033939838409424],
     [0.5033102035522461, 0.6048697829246521, 0.16091440618038177, 1.4746899604797363]],
    'nag0':
    [[1.3330363035202026, 0.41186800599098206, 0.9656686186790466, 2.2498064041137695],
     [1.6645824909210205, -0.9586613774299622, 1.071144700050354, -0.2985208034515381],
     [0.2915341854095459, 0.5858258008956909, 0.21737700700759888, 1.4306148290634155]],
    'adadelta':
    [[1.6793049573898315, 0.37961819767951965, 0.9479811191558838, 2.181823968887329],
     [1.8000848293304443, -0.9384053945541382, 0.9206100106239319, -0.15675869584083557],
     [-0.08255390077829361, 0.4061526954174042, 0.14774009585380554, 1.407247543334961]],
    'ftrl':
    [[0.6179746985435486, 0.049173299223184586, 0.2904266119003296, 0.5683197975158691],
     [1.0402204990386963, -0.16104069352149963, 0.2525041103363037, -0.10430649667978287],
     [0.03498280048370361, 0.20024460554122925, 0.08676639944314957, 0.6150320768356323]],
    'signum':
    [[1.7335262298583984, 0.3900381922721863, 0.9484475255012512, 2.2302238941192627],
     [1.837000846862793, -0.9669855833053589, 0.9398065209388733, -0.1413148045539856],
     [-0.07319089770317078, 0.4204762876033783, 0.13400329649448395, 1.4638341665267944]],
    'signum0':
    [[1.7335262298583984, 0.3900381922721863, 0.9684473872184753, 2.2502217292785645],
     [1.8570008277893066, -0.9669855833053589, 0.9398065209388733, -0.16131280362606049],
     [-0.07319089770317078, 0.4204762876033783, 0.15400129556655884, 1.4438362121582031]],
    'nagclip':
    [[1.5225824117660522, 0.34076911211013794, 0.9077668786048889, 2.2760231494903564],
     [1.7400879859924316, -0.8984078764915466, 0.8226184248924255, -0.18648719787597656],
     [0.1382512003183365, 0.44572851061820984, 0.17917360365390778, 1.419143557548523]],
}


# ------------------------------------------------------------------ the names
def test_the_names_are_minpys_objects():
    import minpy.kvstore
    import minpy.nn.checkpoint
    import minpy.nn.io
    import minpy.symbol
    from minpy.dispatch import context
    from minpy.mxnet import (callback, initializer, lr_scheduler, metric, module, optimizer,
                             random, test_utils, visualization)
    assert mx.sym is mx.symbol is minpy.symbol
    assert mx.mod is mx.module is module
    assert (mx.mod.Module, mx.mod.BaseModule) == (module.Module, module.BaseModule)
    assert mx.kv is mx.kvstore is minpy.kvstore
    assert mx.kv.create is minpy.kvstore.create and mx.kv.KVStore is minpy.kvstore.KVStore
    assert mx.optimizer is optimizer and mx.lr_scheduler is lr_scheduler
    assert mx.init is mx.initializer is initializer
    assert mx.metric is metric and mx.callback is callback
    assert mx.model is minpy.mxnet.model and mx.model.load_checkpoint is \
        minpy.nn.checkpoint.load_checkpoint
    assert mx.random is mx.rnd is random
    assert mx.viz is mx.visualization is visualization
    assert mx.test_utils is test_utils
    for name in ("NDArrayIter", "DataBatch", "DataDesc", "DataIter", "PrefetchingIter"):
        assert getattr(mx.io, name) is getattr(minpy.nn.io, name), name
    for name in ("ResizeIter", "CSVIter", "MNISTIter"):
        assert callable(getattr(mx.io, name)), name
    assert (mx.cpu, mx.gpu, mx.Context, mx.current_context) == \
        (context.cpu, context.gpu, context.Context, context.current_context)
    assert mx.context.num_gpus is context.num_gpus and mx.context.cpu is context.cpu
    assert mx.cpu() == mx.current_context() == mx.Context("cpu", 0)
    for name in ("create", "SGD", "NAG", "Adam", "AdaGrad", "RMSProp", "AdaDelta", "Ftrl",
                 "Signum", "get_updater", "Updater", "Optimizer"):
        assert hasattr(mx.optimizer, name), name
    assert mx.optimizer.Optimizer.register is not None
    assert isinstance(mx.init.Orthogonal(), mx.init.Initializer)
    assert issubclass(mx.MXNetError, RuntimeError) and "MXNetError" in dir(mx)
    assert mx.__version__ == "1.9.1-minpy"


def test_nd_and_autograd_are_the_mxnet_faces_when_present():
    import importlib.util
    for name, path in (("nd", "minpy.mxnet.ndarray"), ("ndarray", "minpy.mxnet.ndarray"),
                       ("autograd", "minpy.mxnet.autograd")):
        if importlib.util.find_spec(path) is None:
            pytest.skip(f"{path} is not built yet")
        assert getattr(mx, name) is importlib.import_module(path)


def test_mxnet_error_catches_minpys_shape_errors():
    # MXNet raises MXNetError on a shape mismatch; minpy's ShapeError (a ValueError) is one
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    with pytest.raises(mx.MXNetError, match="FullyConnected node 'fc'") as info:
        net.infer_shape(data=(2, 3), fc_weight=(4, 5))
    assert isinstance(info.value, ValueError)


def test_gluon_says_it_is_out_of_scope():
    with pytest.raises(ImportError, match="Gluon .* out of"):
        mx.gluon
    with pytest.raises(ImportError, match="out of"):
        from minpy.mxnet import gluon  # noqa: F401
    with pytest.raises(ImportError, match="mx.image .* is not in minpy.mxnet: .*recordio"):
        mx.image


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'profiler_x'"):
        mx.profiler_x
    assert not hasattr(mx, "no_such_name")


def test_importing_minpy_mxnet_loads_no_submodule():
    code = ("import sys, minpy.mxnet as mx; "
            "print(sorted(m for m in sys.modules if m.startswith(('minpy.mxnet.', "
            "'minpy.symbol', 'minpy.nn', 'minpy.kvstore'))))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------ lr_scheduler
_MAKERS = {
    "factor": lambda s: s.FactorScheduler(step=10, factor=0.5, base_lr=1.0),
    "factor_warm": lambda s: s.FactorScheduler(step=10, factor=0.5, base_lr=1.0,
                                               warmup_steps=5, warmup_begin_lr=0.1),
    "factor_stop": lambda s: s.FactorScheduler(step=10, factor=0.1, stop_factor_lr=1e-3,
                                               base_lr=1.0),
    "multi": lambda s: s.MultiFactorScheduler(step=[10, 20, 50], factor=0.1, base_lr=1.0),
    "multi_warm": lambda s: s.MultiFactorScheduler(step=[10, 20, 50], factor=0.1, base_lr=1.0,
                                                   warmup_steps=4, warmup_begin_lr=0.2,
                                                   warmup_mode="constant"),
    "poly": lambda s: s.PolyScheduler(max_update=100, base_lr=1.0, pwr=2, final_lr=0.01),
    "poly_warm": lambda s: s.PolyScheduler(max_update=100, base_lr=1.0, pwr=3,
                                           warmup_steps=10, warmup_begin_lr=0.1),
    "cos": lambda s: s.CosineScheduler(max_update=100, base_lr=1.0, final_lr=0.05),
    "cos_warm": lambda s: s.CosineScheduler(max_update=100, base_lr=1.0, warmup_steps=10,
                                            warmup_begin_lr=0.0),
}


@pytest.mark.parametrize("name", sorted(_MAKERS))
def test_lr_scheduler_matches_mxnet(name):
    sched = _MAKERS[name](mx.lr_scheduler)
    got = [sched(n) for n in LR_UPDATES]
    numpy.testing.assert_allclose(got, LR_EXPECTED[name], rtol=1e-12, atol=0)


def test_lr_scheduler_errors_are_mxnets():
    with pytest.raises(ValueError, match="greater or equal than 1"):
        mx.lr_scheduler.FactorScheduler(step=0)
    with pytest.raises(ValueError, match="no more than 1"):
        mx.lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=2)
    with pytest.raises(ValueError, match="increasing"):
        mx.lr_scheduler.MultiFactorScheduler(step=[4, 2])
    with pytest.raises(ValueError, match="warmup_begin_lr"):
        mx.lr_scheduler.CosineScheduler(10, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(ValueError, match="linear and constant"):
        mx.lr_scheduler.PolyScheduler(10, warmup_mode="cubic")


def test_a_scheduler_drives_the_optimizer():
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5)
    opt = mx.optimizer.create("sgd", learning_rate=1.0, lr_scheduler=sched)
    w = mnp.array(numpy.zeros(2, numpy.float32))
    for _ in range(3):
        opt.update(0, w, mnp.array(numpy.ones(2, numpy.float32)))
    # num_update 1, 2, 3 -> rates 1, 0.5, 0.25 (a step counts once num_update exceeds it)
    numpy.testing.assert_allclose(w.asnumpy(), [-1.75, -1.75])


# ------------------------------------------------------------------ optimizer
@pytest.mark.parametrize("case", sorted(OPT_EXPECTED))
def test_optimizer_updates_match_mxnet(case):
    kw = {"nag": dict(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5),
          "nag0": dict(learning_rate=0.1, momentum=0.0, wd=0.01),
          "adadelta": dict(rho=0.9, epsilon=1e-5, wd=0.01, rescale_grad=0.5),
          "ftrl": dict(lamda1=0.01, learning_rate=0.1, beta=1, wd=0.01),
          "signum": dict(learning_rate=0.01, momentum=0.9, wd_lh=0.01, wd=0.01),
          "signum0": dict(learning_rate=0.01, momentum=0.0, wd=0.01),
          "nagclip": dict(learning_rate=0.1, momentum=0.9, clip_gradient=0.3,
                          rescale_grad=2.0)}[case]
    opt = mx.optimizer.create(case.rstrip("0").replace("clip", ""), **kw)
    updater = mx.optimizer.get_updater(opt)
    w = mnp.array(numpy.array(OPT_W0, numpy.float32))
    for g in OPT_GRADS:
        updater(0, mnp.array(numpy.array(g, numpy.float32)), w)
    numpy.testing.assert_allclose(w.asnumpy(), OPT_EXPECTED[case], rtol=1e-5, atol=1e-6)


def test_register_makes_an_optimizer_creatable():
    @mx.optimizer.Optimizer.register
    class HalfSGD(mx.optimizer.SGD):
        pass
    assert isinstance(mx.optimizer.create("halfsgd", learning_rate=0.1), HalfSGD)
    with pytest.raises(TypeError, match="subclass"):
        mx.optimizer.register(object)
    with pytest.raises(ValueError, match="not supported"):
        mx.optimizer.create("lamb_x")


# ------------------------------------------------------------------ kvstore
def test_kvstore_push_pull_and_updater():
    # as MXNet's tests/python/unittest/test_kvstore.py: init, push a list (summed), pull
    shape = (4, 4)
    kv = mx.kv.create("local")
    kv.init(3, mnp.array(numpy.zeros(shape, numpy.float32)))
    kv.push(3, [mnp.array(numpy.ones(shape, numpy.float32)) for _ in range(4)])
    out = mnp.array(numpy.zeros(shape, numpy.float32))
    kv.pull(3, out=out)
    numpy.testing.assert_array_equal(out.asnumpy(), numpy.full(shape, 4.0))

    def updater(key, recv, local):
        local += recv * 2
    kv.set_updater(updater)
    kv.push(3, mnp.array(numpy.ones(shape, numpy.float32)))
    kv.pull(3, out=out)
    numpy.testing.assert_array_equal(out.asnumpy(), numpy.full(shape, 6.0))

    kv2 = mx.kv.create("local")     # an MXNet optimizer's updater through the store
    kv2.init("w", mnp.array(numpy.ones(3, numpy.float32)))
    kv2.set_updater(mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5)))
    kv2.push("w", [mnp.array(numpy.ones(3, numpy.float32))] * 2)
    w = mnp.array(numpy.zeros(3, numpy.float32))
    kv2.pull("w", out=w)
    numpy.testing.assert_allclose(w.asnumpy(), numpy.zeros(3))     # 1 - 0.5 * (1 + 1)


# ------------------------------------------------------------------ the mnist_mlp script
def _mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=128)
    act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=64)
    act2 = mx.sym.Activation(data=fc2, name="relu2", act_type="relu")
    fc3 = mx.sym.FullyConnected(data=act2, name="fc3", num_hidden=10)
    return mx.sym.SoftmaxOutput(data=fc3, name="softmax")


def _cnn():
    data = mx.sym.Variable("data")
    c = mx.sym.Convolution(data=data, kernel=(3, 3), num_filter=8, name="conv1")
    b = mx.sym.BatchNorm(data=c, name="bn1")
    a = mx.sym.Activation(data=b, act_type="relu", name="relu1")
    p = mx.sym.Pooling(data=a, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    c2 = mx.sym.Convolution(data=p, kernel=(3, 3), num_filter=4, no_bias=True, name="conv2")
    s = mx.sym.elemwise_add(c2, c2, name="add")
    f = mx.sym.Flatten(data=s, name="flat")
    fc = mx.sym.FullyConnected(data=f, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(data=fc, name="softmax")


def test_mnist_mlp_script(tmp_path, caplog):
    # MXNet 1.x's example/module/mnist_mlp.py, on the bundled digits
    (x_train, y_train), (x_test, y_test) = load_digits()
    mx.random.seed(0)
    batch_size = 50
    train_iter = mx.io.NDArrayIter(x_train, y_train, batch_size, shuffle=True)
    val_iter = mx.io.NDArrayIter(x_test, y_test, batch_size)
    mod = mx.mod.Module(_mlp())
    with caplog.at_level(logging.INFO):
        mod.fit(train_iter, eval_data=val_iter, optimizer="sgd",
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                initializer=mx.init.Xavier(), eval_metric=mx.metric.Accuracy(),
                batch_end_callback=mx.callback.Speedometer(batch_size, 10), num_epoch=8)
    assert "Speed" in caplog.text
    metric = mx.metric.Accuracy()
    acc = dict(mod.score(val_iter, metric))["accuracy"]
    assert acc > 0.9, acc

    prefix = str(tmp_path / "mnist_mlp")
    arg_params, aux_params = mod.get_params()
    mx.model.save_checkpoint(prefix, 8, mod.symbol, arg_params, aux_params)
    sym, args2, auxs2 = mx.model.load_checkpoint(prefix, 8)
    assert sym.tojson() == mod.symbol.tojson()
    assert sorted(args2) == sorted(arg_params) and auxs2 == {}
    for k in arg_params:
        numpy.testing.assert_array_equal(args2[k].asnumpy(), arg_params[k].asnumpy())
    mod2 = mx.mod.Module(sym)
    mod2.bind(data_shapes=val_iter.provide_data, label_shapes=val_iter.provide_label,
              for_training=False)
    mod2.set_params(args2, auxs2)
    assert dict(mod2.score(val_iter, mx.metric.Accuracy()))["accuracy"] == acc


# ------------------------------------------------------------------ viz
@pytest.mark.parametrize("name", ["mlp", "mlp_noshape", "cnn"])
def test_print_summary_is_mxnets_text(name, capsys):
    expected = json.loads(SUMMARIES.read_text())["summaries"][name]
    net = _mlp() if name.startswith("mlp") else _cnn()
    shape = {"mlp": {"data": (1, 784)}, "mlp_noshape": None,
             "cnn": {"data": (2, 3, 12, 12)}}[name]
    mx.viz.print_summary(net, shape=shape)
    assert capsys.readouterr().out == expected


def test_print_summary_refuses_a_non_symbol():
    with pytest.raises(TypeError, match="symbol must be Symbol"):
        mx.viz.print_summary("data")


def test_plot_network_names_graphviz_when_missing():
    try:
        import graphviz  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="graphviz"):
            mx.viz.plot_network(_mlp())
    else:
        assert "fc1" in mx.viz.plot_network(_mlp(), shape={"data": (1, 784)}).source


# ------------------------------------------------------------------ io
def test_csv_iter_as_mxnet(tmp_path):
    # MXNet 1.9.1: round_batch=True pads with the first rows and starts the next epoch
    # after them; data rows reshaped to data_shape; labels (batch,) for label_shape (1,)
    (tmp_path / "d.csv").write_text("1\n2\n3\n4\n5\n")
    (tmp_path / "l.csv").write_text("0\n1\n0\n1\n0\n")
    it = mx.io.CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(1,),
                       label_csv=str(tmp_path / "l.csv"), batch_size=2)
    assert it.provide_data[0].shape == (2, 1) and it.provide_label[0].shape == (2,)
    epochs = []
    for _ in range(3):
        epochs.append([(b.data[0].asnumpy().ravel().tolist(), b.pad) for b in it])
        it.reset()
    assert epochs == [[([1, 2], 0), ([3, 4], 0), ([5, 1], 1)], [([2, 3], 0), ([4, 5], 0)],
                      [([1, 2], 0), ([3, 4], 0), ([5, 1], 1)]]
    with pytest.raises(ValueError, match="needs 4"):
        mx.io.CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(2, 2))


def test_resize_iter_as_mxnet():
    r = mx.io.ResizeIter(mx.io.NDArrayIter(numpy.arange(5.0), batch_size=2), 4)
    assert [b.data[0].asnumpy().tolist() for b in r] == [[0, 1], [2, 3], [4, 0], [0, 1]]
    r.reset()
    assert len(list(r)) == 4


def test_mnist_iter_reads_idx_files(tmp_path):
    rng = numpy.random.default_rng(0)
    images = rng.integers(0, 256, (10, 28, 28), dtype=numpy.uint8)
    labels = rng.integers(0, 10, 10, dtype=numpy.uint8)
    img = tmp_path / "img-idx3-ubyte"
    lab = tmp_path / "lab-idx1-ubyte.gz"
    img.write_bytes((2051).to_bytes(4, "big") + b"".join(n.to_bytes(4, "big")
                                                         for n in (10, 28, 28))
                    + images.tobytes())
    with gzip.open(lab, "wb") as f:
        f.write((2049).to_bytes(4, "big") + (10).to_bytes(4, "big") + labels.tobytes())
    it = mx.io.MNISTIter(image=str(img), label=str(lab), batch_size=4, shuffle=False)
    batches = list(it)
    assert len(batches) == 2                       # the last 2 images fill no batch
    assert batches[0].data[0].shape == (4, 1, 28, 28)
    numpy.testing.assert_allclose(batches[1].data[0].asnumpy(),
                                  images[4:8, None] / numpy.float32(256), rtol=1e-6)
    numpy.testing.assert_array_equal(batches[0].label[0].asnumpy(), labels[:4])
    flat = mx.io.MNISTIter(image=str(img), label=str(lab), batch_size=5, flat=True)
    assert next(iter(flat)).data[0].shape == (5, 784)
    with pytest.raises(ValueError, match="not an MNIST idx file"):
        mx.io.MNISTIter(image=str(lab), label=str(lab))


# ------------------------------------------------------------------ the rest
def test_orthogonal_initializer_gives_orthogonal_rows():
    numpy.random.seed(0)
    init = mx.init.Orthogonal(scale=1.0)
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        w = init._init_weight("w_weight", shape).reshape(shape[0], -1)
        gram = w @ w.T if shape[0] <= w.shape[1] else w.T @ w
        numpy.testing.assert_allclose(gram, numpy.eye(len(gram)), atol=1e-12)
    assert mx.init.create("orthogonal").scale == 1.414


def test_random_seed_repeats_the_draws():
    mx.random.seed(7)
    a = mnp.random.uniform(size=3).asnumpy()
    mx.random.seed(7, ctx=mx.cpu())
    b = mnp.random.uniform(size=3).asnumpy()
    numpy.testing.assert_array_equal(a, b)


def test_test_utils_basics():
    tu = mx.test_utils
    assert tu.default_context() == mx.current_context()
    a = mnp.array(numpy.ones(3, numpy.float32))
    tu.assert_almost_equal(a, numpy.ones(3) + 1e-5)         # float32: rtol 1e-4
    with pytest.raises(AssertionError, match="Location of maximum error"):
        tu.assert_almost_equal(a, numpy.ones(3) * 1.01)
    assert tu.almost_equal(a, numpy.ones(3)) and not tu.almost_equal(a, numpy.ones(3) * 1.001)
    x = tu.rand_ndarray((2, 3))
    assert x.shape == (2, 3) and x.dtype == numpy.float32
    with pytest.raises(NotImplementedError, match="sparse"):
        tu.rand_ndarray((2, 3), stype="csr")
    from minpy.dispatch.context import explicit_context
    tu.set_default_context(mx.cpu(1))
    try:
        assert tu.default_context() == mx.cpu(1) == mx.current_context()
    finally:
        tu.set_default_context(None)
    assert explicit_context() is None
