"""MXNet 1.9.1's own Module and io cases (tests/python/unittest/test_module.py,
test_io.py; example/image-classification/common/fit.py) as MXNet writes them,
with ``minpy.symbol`` for ``mx.sym``, ``minpy.kvstore`` for ``mx.kv``."""
import numpy
import pytest

import minpy
import minpy.kvstore as kv_module
import minpy.symbol as sym
from minpy.mxnet import initializer
from minpy.mxnet.module import DataBatch, Module
from minpy.nn.io import NDArrayIter

from _module_nets import host          # dict name -> Array: host copies


def _set_params_net():
    x = sym.Variable('data')
    x = sym.FullyConnected(name='fc_0', data=x, num_hidden=2)
    x = sym.Activation(name="act_0", data=x, act_type='sigmoid')
    x = sym.FullyConnected(name='fc_1', data=x, num_hidden=2)
    x = sym.Activation(name="act_1", data=x, act_type='sigmoid')
    return sym.LinearRegressionOutput(data=x, name='softmax', grad_scale=2)


def test_module_set_params():
    # MXNet's test_module_set_params, verbatim but for the array constructors
    data = numpy.array([[0.05, .10]], numpy.float32)
    label = numpy.array([[.01, 0.99]], numpy.float32)
    train_data = NDArrayIter(data, label, batch_size=1)
    mod = Module(_set_params_net(), context=[minpy.cpu()])
    mod.bind(train_data.provide_data, label_shapes=train_data.provide_label, for_training=True)
    a = lambda v: numpy.array(v, numpy.float32)     # noqa: E731
    arg_params_correct = {'fc_0_weight': a([[.15, .20], [.25, .30]]),
                          'fc_0_bias': a([.35, .35]),
                          'fc_1_weight': a([[.40, .45], [.50, .55]]),
                          'fc_1_bias': a([.60, .60])}
    arg_params_missing = {'fc_0_weight': a([[.15, .20], [.25, .30]]),
                          'fc_0_bias': a([.35, .35]),
                          'fc_1_weight': a([[.40, .45], [.50, .55]])}
    arg_params_extra = dict(arg_params_correct, fc_2_weight=a([.6, .6]))
    arg_params_missing_extra = {'fc_2_weight': a([.35])}
    mod.set_params(force_init=True, arg_params=arg_params_correct, aux_params={})
    mod.set_params(force_init=True, arg_params=arg_params_missing, aux_params={},
                   allow_missing=True)
    with pytest.raises(RuntimeError):
        mod.set_params(force_init=True, arg_params=arg_params_missing, aux_params={},
                       allow_missing=False)
    mod.set_params(force_init=True, arg_params=arg_params_extra, aux_params={},
                   allow_missing=True, allow_extra=True)
    with pytest.raises(ValueError):
        mod.set_params(force_init=True, arg_params=arg_params_extra, aux_params={},
                       allow_missing=True, allow_extra=False)
    # missing + extra: MXNet's init_params finds the missing one first
    with pytest.raises(RuntimeError, match="fc_0_bias"):
        mod.set_params(force_init=True, arg_params=arg_params_missing_extra, aux_params={},
                       allow_missing=False, allow_extra=False)
    with pytest.raises(ValueError, match="fc_2_weight"):
        mod.set_params(force_init=True, arg_params=arg_params_missing_extra, aux_params={},
                       allow_missing=True, allow_extra=False)
    # missing + extra with allow_extra: still the missing one (MXNet: RuntimeError)
    with pytest.raises(RuntimeError, match="fc_0_bias"):
        mod.set_params(force_init=True, arg_params=arg_params_missing_extra, aux_params={},
                       allow_missing=False, allow_extra=True)
    mod.set_params(force_init=True, arg_params=arg_params_missing_extra, aux_params={},
                   allow_missing=True, allow_extra=True)
    assert numpy.array_equal(host(mod.get_params()[0])['fc_1_weight'],
                             arg_params_correct['fc_1_weight'])


def test_databatch_str_is_mxnets():
    # MXNet 1.9.1 io.DataBatch.__str__: "{cls}: data shapes: {..} label shapes: {..}"
    batch = DataBatch(data=[minpy.numpy.zeros((2, 3)), minpy.numpy.zeros((2, 5, 5))],
                      label=[minpy.numpy.zeros((2,))])
    assert str(batch) == "DataBatch: data shapes: [(2, 3), (2, 5, 5)] label shapes: [(2,)]"
    assert str(DataBatch(data=[minpy.numpy.zeros((4, 1))])) == \
        "DataBatch: data shapes: [(4, 1)] label shapes: None"
    it = NDArrayIter(numpy.zeros((4, 3)), numpy.zeros(4), batch_size=2)
    assert str(next(iter(it))) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"


def _mlp():
    data = sym.Variable('data')
    fc1 = sym.FullyConnected(data, name='fc1', num_hidden=16)
    act1 = sym.Activation(fc1, name='relu1', act_type="relu")
    fc2 = sym.FullyConnected(act1, name='fc2', num_hidden=3)
    return sym.SoftmaxOutput(fc2, name='softmax')


def _fit(kvstore, num_epoch=2):
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((60, 5)).astype(numpy.float32)
    y = (x[:, 0] > 0).astype(numpy.float32) + (x[:, 1] > 0)
    train = NDArrayIter(x, y, batch_size=20)
    mod = Module(_mlp(), context=minpy.cpu())
    mod.fit(train, kvstore=kvstore, optimizer='sgd',
            optimizer_params={'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-4},
            initializer=initializer.Xavier(rnd_type='gaussian', factor_type="in",
                                           magnitude=2),
            arg_params={k: v for k, v in _init_params().items()}, num_epoch=num_epoch)
    return host(mod.get_params()[0])


def _init_params():
    rng = numpy.random.default_rng(1)
    shapes = {'fc1_weight': (16, 5), 'fc1_bias': (16,), 'fc2_weight': (3, 16),
              'fc2_bias': (3,)}
    return {k: (0.3 * rng.standard_normal(s)).astype(numpy.float32) for k, s in shapes.items()}


@pytest.mark.parametrize("kind", ["local", "device"])
def test_fit_takes_a_kvstore_object_as_common_fit_py(kind):
    # example/image-classification/common/fit.py: kv = mx.kvstore.create(args.kv_store)
    # ... model.fit(train, ..., kvstore=kv, ...)
    kv = kv_module.create(kind)
    got = _fit(kv)
    want = _fit(kind)            # the name: no KVStore on one device, the same updates
    for k in want:
        numpy.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
    assert not numpy.allclose(want['fc1_weight'], _init_params()['fc1_weight'])
    with pytest.raises(TypeError, match="kvstore must be a KVStore"):
        _fit(object())


def _module(context, work_load_list=None, batch=12):
    mod = Module(_mlp(), context=context, work_load_list=work_load_list)
    mod.bind(data_shapes=[('data', (batch, 5))], label_shapes=[('softmax_label', (batch,))])
    mod.init_params(arg_params=_init_params())
    mod.init_optimizer(kvstore='local', optimizer='sgd',
                       optimizer_params={'learning_rate': 0.5, 'momentum': 0.9, 'wd': 1e-3})
    return mod


@pytest.mark.parametrize("work_load_list", [None, [1, 2], [3, 1, 2]])
def test_module_over_several_contexts_equals_one_context(work_load_list):
    # MXNet splits each batch across the contexts by work_load_list, concatenates the
    # outputs and sums the gradients (kvstore 'local'): the same numbers as one context
    ctxs = [minpy.cpu(i) for i in range(len(work_load_list or [1, 1]))]
    rng = numpy.random.default_rng(2)
    x = rng.standard_normal((12, 5)).astype(numpy.float32)
    y = rng.integers(0, 3, 12).astype(numpy.float32)
    single, multi = _module(minpy.cpu()), _module(ctxs, work_load_list)
    for step in range(2):
        batch = DataBatch(data=[x + step], label=[y])
        for mod in (single, multi):
            mod.forward(batch, is_train=True)
            mod.backward()
        numpy.testing.assert_allclose(multi.get_outputs()[0].asnumpy(),
                                      single.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6)
        for mod in (single, multi):
            mod.update()
        want, got = host(single.get_params()[0]), host(multi.get_params()[0])
        for k in want:
            numpy.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
    assert not numpy.allclose(want['fc1_weight'], _init_params()['fc1_weight'])
    per_device = multi.get_outputs(merge_multi_context=False)
    assert [o.shape[0] for o in per_device[0]] == \
        {None: [6, 6], (1, 2): [4, 8], (3, 1, 2): [6, 2, 4]}[
            None if work_load_list is None else tuple(work_load_list)]


def test_module_over_several_contexts_fits_and_scores_as_one_context():
    # example/image-classification/common/fit.py with --gpus 0,1: context=[...] and a
    # KVStore object; a last batch of another size reshapes every executor
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((50, 5)).astype(numpy.float32)
    y = ((x[:, 0] > 0).astype(numpy.float32) + (x[:, 1] > 0))
    results = []
    for ctx, kv in ((minpy.cpu(), 'local'), ([minpy.cpu(0), minpy.cpu(1)],
                                             kv_module.create('device'))):
        train = NDArrayIter(x, y, batch_size=20, last_batch_handle='discard')
        mod = Module(_mlp(), context=ctx)
        mod.fit(train, kvstore=kv, optimizer='sgd', arg_params=_init_params(),
                optimizer_params={'learning_rate': 0.1}, num_epoch=2)
        score = mod.score(NDArrayIter(x, y, batch_size=15), 'acc')
        pred = mod.predict(NDArrayIter(x, y, batch_size=15))
        results.append((host(mod.get_params()[0]), score, pred.asnumpy()))
    (want, want_score, want_pred), (got, got_score, got_pred) = results
    for k in want:
        numpy.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)
    assert got_score == want_score
    numpy.testing.assert_allclose(got_pred, want_pred, rtol=1e-5, atol=1e-6)


def test_module_over_several_contexts_errors():
    with pytest.raises(ValueError, match="work_load_list needs one entry per context"):
        Module(_mlp(), context=[minpy.cpu(0), minpy.cpu(1)], work_load_list=[1])
    mod = Module(_mlp(), context=[minpy.cpu(0), minpy.cpu(1), minpy.cpu(2)])
    with pytest.raises(ValueError, match="leaves a device without samples"):
        mod.bind(data_shapes=[('data', (2, 5))], label_shapes=[('softmax_label', (2,))])
    mod.bind(data_shapes=[('data', (6, 5))], label_shapes=[('softmax_label', (6,))])
    mod.init_params()
    with pytest.raises(NotImplementedError, match="kvstore=None over several contexts"):
        mod.init_optimizer(kvstore=None)


def test_module_over_several_contexts_input_grads_are_merged():
    # MXNet's get_input_grads: merged over the contexts (concatenated on the batch axis)
    rng = numpy.random.default_rng(3)
    x = rng.standard_normal((7, 5)).astype(numpy.float32)
    y = rng.integers(0, 3, 7).astype(numpy.float32)
    grads = []
    for ctx in (minpy.cpu(), [minpy.cpu(0), minpy.cpu(1)]):
        mod = Module(_mlp(), context=ctx)
        mod.bind(data_shapes=[('data', (7, 5))], label_shapes=[('softmax_label', (7,))],
                 inputs_need_grad=True)
        mod.init_params(arg_params=_init_params())
        mod.forward_backward(DataBatch(data=[x], label=[y]))
        grads.append(mod.get_input_grads()[0].asnumpy())
    assert grads[1].shape == (7, 5)
    numpy.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
    # MXNet's _split_input_slice: round(3.5) = 4 samples, then the 3 left
    assert [g.shape for g in mod.get_input_grads(merge_multi_context=False)[0]] == \
        [(4, 5), (3, 5)]
