"""``mx.mod.BucketingModule`` and ``Module.bind(shared_module=...)``, written as MXNet
1.9.1's example/rnn/bucketing/lstm_bucketing.py is: a bucketing LSTM language model.

Against real MXNet 1.9.1 (tests/fixtures/mxnet/make_rnn_fixtures.py, ``rnn/bucketing.*``):
the same parameters and the same fixed batches of three buckets give the same loss at
every step of a forward/backward/update loop, the same parameters after it, and the
same parameters and perplexity after ``fit``.
"""
import json
import os

import numpy as np
import pytest
from numpy.testing import assert_allclose

import minpy.mxnet as mx

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet", "rnn")
FIX = np.load(os.path.join(HERE, "bucketing.npz"))
with open(os.path.join(HERE, "bucketing.json"), encoding="utf-8") as _f:
    META = json.load(_f)
VOCAB, EMBED, HIDDEN, BATCH = META["vocab"], META["embed"], META["hidden"], META["batch"]
BUCKETS = META["buckets"]


def sym_gen_factory(num_layers=2, num_hidden=HIDDEN, vocab=VOCAB, num_embed=EMBED,
                    layout='NTC'):
    # lstm_bucketing.py's network
    stack = mx.rnn.SequentialRNNCell()
    for i in range(num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=num_hidden, prefix='lstm_l%d_' % i))

    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        label = mx.sym.Variable('softmax_label')
        embed = mx.sym.Embedding(data=data, input_dim=vocab,
                                 output_dim=num_embed, name='embed')

        stack.reset()
        outputs = stack.unroll(seq_len, inputs=embed, merge_outputs=True, layout=layout)[0]

        pred = mx.sym.Reshape(outputs, shape=(-1, num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab, name='pred')

        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name='softmax')

        return pred, ('data',), ('softmax_label',)
    return sym_gen


class FixedBatches(mx.io.DataIter):
    """The fixture's batches, in order, every epoch (as the fixture script's iterator)."""

    def __init__(self):
        super().__init__(BATCH)
        self.batches = [(key, FIX[f"batch{i}/data"], FIX[f"batch{i}/label"])
                        for i, key in enumerate(META["keys"])]
        self.cursor = 0
        key = self.default_bucket_key = max(BUCKETS)
        self.provide_data = [mx.io.DataDesc("data", (BATCH, key), layout="NT")]
        self.provide_label = [mx.io.DataDesc("softmax_label", (BATCH, key), layout="NT")]

    def reset(self):
        self.cursor = 0

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        if self.cursor == len(self.batches):
            raise StopIteration
        key, data, label = self.batches[self.cursor]
        self.cursor += 1
        return mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)], pad=0,
                               bucket_key=key,
                               provide_data=[mx.io.DataDesc("data", data.shape, layout="NT")],
                               provide_label=[mx.io.DataDesc("softmax_label", label.shape,
                                                             layout="NT")])


def _init():
    return {k[len("init/"):]: mx.nd.array(FIX[k]) for k in FIX.files if k.startswith("init/")}


def _bound(it):
    mod = mx.mod.BucketingModule(sym_gen_factory(), default_bucket_key=max(BUCKETS),
                                 context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.set_params(_init(), {})
    mod.init_optimizer(optimizer="sgd", optimizer_params=META["optimizer_params"])
    return mod


def _loss(prob, label):
    p = prob[np.arange(prob.shape[0]), label.reshape(-1).astype(int)]
    return float(-np.log(np.maximum(p, 1e-10)).mean())


def _assert_params(params, prefix):
    names = sorted(k[len(prefix):] for k in FIX.files if k.startswith(prefix))
    assert sorted(params) == names
    for k in names:
        assert_allclose(params[k].asnumpy(), FIX[prefix + k], rtol=1e-4, atol=2e-5,
                        err_msg=k)


# ------------------------------------------------------------ against MXNet 1.9.1
def test_loop_losses_and_params_match_mxnet():
    it = FixedBatches()
    mod = _bound(it)
    losses = []
    for batch in it:
        mod.forward(batch, is_train=True)
        losses.append(_loss(mod.get_outputs()[0].asnumpy(), batch.label[0].asnumpy()))
        mod.backward()
        mod.update()
    assert sorted(mod._buckets) == sorted(set(META["keys"]))
    assert_allclose(losses, META["losses"], rtol=1e-5)
    _assert_params(mod.get_params()[0], "loop/")


def test_fit_matches_mxnet():
    it = FixedBatches()
    mod = mx.mod.BucketingModule(sym_gen_factory(), default_bucket_key=max(BUCKETS),
                                 context=mx.cpu())
    mod.fit(it, eval_metric=mx.metric.Perplexity(0), optimizer="sgd",
            optimizer_params=META["optimizer_params"], arg_params=_init(), aux_params={},
            num_epoch=2)
    _assert_params(mod.get_params()[0], "fit/")
    score = dict(mod.score(it, mx.metric.Perplexity(0)))
    assert_allclose(score["perplexity"], META["score"]["perplexity"], rtol=1e-5)


def test_loop_on_two_contexts_matches_mxnet():
    # data parallel over two contexts: every bucket's executor group shares the default
    # bucket's, executor by executor; gradients summed through the KVStore
    it = FixedBatches()
    mod = mx.mod.BucketingModule(sym_gen_factory(), default_bucket_key=max(BUCKETS),
                                 context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(it.provide_data, it.provide_label)
    mod.set_params(_init(), {})
    mod.init_optimizer(kvstore='local', optimizer="sgd",
                       optimizer_params=META["optimizer_params"])
    losses = []
    for batch in it:
        mod.forward(batch, is_train=True)
        losses.append(_loss(mod.get_outputs()[0].asnumpy(), batch.label[0].asnumpy()))
        mod.backward()
        mod.update()
    assert_allclose(losses, META["losses"], rtol=1e-5)
    _assert_params(mod.get_params()[0], "loop/")
    small = mod._buckets[min(BUCKETS)]._exec
    big = mod._buckets[max(BUCKETS)]._exec
    assert all(a is b for a, b in zip(small.param_arrays("pred_weight"),
                                      big.param_arrays("pred_weight")))


# ------------------------------------------------------------ sharing
def test_buckets_share_parameters_gradients_and_optimizer():
    it = FixedBatches()
    mod = _bound(it)
    for batch in it:                    # bind every bucket
        mod.forward(batch, is_train=False)
    mods = [mod._buckets[k] for k in BUCKETS]
    for name in ("embed_weight", "lstm_l0_i2h_weight", "lstm_l1_h2h_bias", "pred_weight"):
        arrays = [m._exec.arg_dict[name] for m in mods]
        grads = [m._exec.grad_dict[name] for m in mods]
        assert all(a is arrays[0] for a in arrays) and all(g is grads[0] for g in grads)
    assert all(m._arg_params is mods[0]._arg_params for m in mods)
    assert all(m._optimizer is mods[0]._optimizer for m in mods)
    # one update from the smallest bucket is seen by every bucket
    before = mod.get_params()[0]["lstm_l0_h2h_weight"].asnumpy().copy()
    small = next(b for b in FixedBatches() if b.bucket_key == min(BUCKETS))
    mod.forward(small, is_train=True)
    mod.backward()
    mod.update()
    after = mod.get_params()[0]["lstm_l0_h2h_weight"].asnumpy()
    assert not np.allclose(before, after)
    for m in mods:
        assert_allclose(m._exec.arg_dict["lstm_l0_h2h_weight"].asnumpy(), after)
    # and the largest bucket computes with it
    big = next(b for b in FixedBatches() if b.bucket_key == max(BUCKETS))
    mod.forward(big, is_train=False)
    assert mod._curr_bucket_key == max(BUCKETS)
    assert_allclose(mod._curr_module._exec.arg_dict["lstm_l0_h2h_weight"].asnumpy(), after)


def test_module_bind_shared_module():
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    net = mx.sym.SoftmaxOutput(net, name='softmax')
    a = mx.mod.Module(net)
    a.bind([('data', (4, 5))], [('softmax_label', (4,))])
    a.init_params(mx.init.Xavier())
    a.init_optimizer(optimizer_params={'learning_rate': 0.1})
    b = mx.mod.Module(net)
    b.bind([('data', (2, 5))], [('softmax_label', (2,))], shared_module=a)
    assert b.params_initialized and b.optimizer_initialized
    assert b._exec.arg_dict['fc_weight'] is a._exec.arg_dict['fc_weight']
    assert b._exec.grad_dict['fc_weight'] is a._exec.grad_dict['fc_weight']
    assert b._exec.arg_dict['data'] is not a._exec.arg_dict['data']
    before = a.get_params()[0]['fc_weight'].asnumpy().copy()
    batch = mx.io.DataBatch([mx.nd.ones((2, 5))], [mx.nd.array([0, 1])])
    b.forward(batch, is_train=True)
    b.backward()
    b.update()
    # b's update is in a's executor, and b's get_params syncs the dicts both hold
    assert_allclose(a._exec.arg_dict['fc_weight'].asnumpy(),
                    b._exec.arg_dict['fc_weight'].asnumpy())
    assert b.get_params()[0] is a._arg_params
    assert_allclose(a._arg_params['fc_weight'].asnumpy(),
                    b._exec.arg_dict['fc_weight'].asnumpy())
    assert not np.allclose(a._arg_params['fc_weight'].asnumpy(), before)


def test_module_bind_shared_module_errors():
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    a = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name='softmax'))
    with pytest.raises(RuntimeError, match="shared_module must be bound"):
        mx.mod.Module(mx.sym.SoftmaxOutput(fc, name='softmax')).bind(
            [('data', (2, 5))], [('softmax_label', (2,))], shared_module=a)
    a.bind([('data', (4, 5))], [('softmax_label', (4,))])
    a.init_params()
    other = mx.sym.FullyConnected(fc, num_hidden=2, name='fc2')
    b = mx.mod.Module(mx.sym.SoftmaxOutput(other, name='softmax'))
    with pytest.raises(ValueError, match="no parameter 'fc2_weight'"):
        b.bind([('data', (2, 5))], [('softmax_label', (2,))], shared_module=a)
    c = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name='softmax'))
    with pytest.raises(ValueError, match=r"'fc_weight' is \(3, 6\)"):
        c.bind([('data', (2, 6))], [('softmax_label', (2,))], shared_module=a)
    with pytest.raises(TypeError, match="must be a Module"):
        c.bind([('data', (2, 5))], [('softmax_label', (2,))], shared_module=object())


def test_time_major_batches_rescale_by_batch_size():
    # layout 'TN': the batch axis is 1, so rescale_grad is 1/batch, not 1/seq_len
    mod = mx.mod.BucketingModule(sym_gen_factory(num_layers=1, layout='TNC'),
                                 default_bucket_key=7)
    mod.bind([mx.io.DataDesc('data', (7, BATCH), layout='TN')],
             [mx.io.DataDesc('softmax_label', (7, BATCH), layout='TN')])
    mod.init_params()
    mod.init_optimizer()
    assert mod._curr_module._optimizer.rescale_grad == pytest.approx(1.0 / BATCH)


# ------------------------------------------------------------ the example, trained
def test_lstm_bucketing_example_learns():
    # lstm_bucketing.py on a tiny synthetic corpus: counting sentences (each token the
    # previous plus one), which a small LSTM learns; perplexity must fall a lot
    rng = np.random.RandomState(0)
    vocab = 10
    sentences = []
    for _ in range(96):
        n = rng.choice([4, 6, 8])
        start = rng.randint(1, vocab - n + 1)
        sentences.append(list(range(start, start + n)))
    invalid_label = 0
    data_train = mx.rnn.BucketSentenceIter(sentences, 8, buckets=[5, 7, 9],
                                           invalid_label=invalid_label, seed=0)
    sym_gen = sym_gen_factory(num_layers=1, num_hidden=16, vocab=vocab, num_embed=8)
    model = mx.mod.BucketingModule(sym_gen=sym_gen,
                                   default_bucket_key=data_train.default_bucket_key,
                                   context=mx.cpu(0))
    mx.random.seed(0)
    np.random.seed(0)
    model.bind(data_train.provide_data, data_train.provide_label)
    model.init_params(mx.init.Xavier(factor_type="in", magnitude=2.34))
    before = dict(model.score(data_train, mx.metric.Perplexity(invalid_label)))["perplexity"]
    data_train.reset()          # score leaves it at the end, and fit does not reset first
    model.fit(
        train_data=data_train,
        eval_metric=mx.metric.Perplexity(invalid_label),
        kvstore='device',
        optimizer='sgd',
        optimizer_params={'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.00001},
        initializer=mx.init.Xavier(factor_type="in", magnitude=2.34),
        num_epoch=6,
        batch_end_callback=mx.callback.Speedometer(8, 50, auto_reset=False))
    after = dict(model.score(data_train, mx.metric.Perplexity(invalid_label)))["perplexity"]
    assert sorted(model._buckets) == [5, 7, 9]
    assert before > 5.0 and after < min(2.0, 0.3 * before), (before, after)


# ------------------------------------------------------------ API
def test_bucketing_errors():
    with pytest.raises(ValueError, match="default_bucket_key is required"):
        mx.mod.BucketingModule(sym_gen_factory())
    with pytest.raises(NotImplementedError, match="state_names"):
        mx.mod.BucketingModule(sym_gen_factory(), 7, state_names=['s'])
    mod = mx.mod.BucketingModule(sym_gen_factory(), 7)
    assert mod.data_names == ['data'] and mod.output_names == ['softmax_output']
    with pytest.raises(RuntimeError, match="not bound"):
        mod.switch_bucket(3, [('data', (BATCH, 3))])
    it = FixedBatches()
    with pytest.raises(NotImplementedError, match="shared_module"):
        mod.bind(it.provide_data, it.provide_label, shared_module=mod)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    with pytest.raises(ValueError, match="no bucket_key"):
        mod.forward(mx.io.DataBatch([mx.nd.zeros((BATCH, 7))], [mx.nd.zeros((BATCH, 7))]))
    with pytest.raises(ValueError, match="give its data_shapes"):
        mod.switch_bucket(3, None)


def test_unnamed_layers_share_names_across_buckets():
    # sym_gen runs with automatic names counted afresh (MXNet's NameManager)
    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        net = mx.sym.FullyConnected(mx.sym.Reshape(data, shape=(-1, 1)), num_hidden=2)
        return mx.sym.SoftmaxOutput(net, name='softmax'), ('data',), ('softmax_label',)
    mod = mx.mod.BucketingModule(sym_gen, 4)
    mod.bind([('data', (2, 4))], [('softmax_label', (8,))])
    mod.init_params()
    batch = mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((6,))], bucket_key=3,
                            provide_data=[('data', (2, 3))],
                            provide_label=[('softmax_label', (6,))])
    mod.forward(batch, is_train=False)
    assert mod._buckets[3].symbol.list_arguments() == mod._buckets[4].symbol.list_arguments()


def test_checkpoint_round_trip(tmp_path):
    it = FixedBatches()
    mod = _bound(it)
    for batch in it:
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    prefix = str(tmp_path / "lm")
    mod.save_checkpoint(prefix, 1)
    for key in BUCKETS:
        assert os.path.exists(f"{prefix}-{key}-symbol.json")
    loaded = mx.mod.BucketingModule.load(prefix, 1, sym_gen=sym_gen_factory(),
                                         default_bucket_key=max(BUCKETS))
    loaded.bind(it.provide_data, it.provide_label, for_training=False)
    want = mod.get_params()[0]
    got = loaded.get_params()[0]
    for k in want:
        assert_allclose(got[k].asnumpy(), want[k].asnumpy())
    it.reset()
    batch = next(it)
    mod.forward(batch, is_train=False)
    loaded.forward(batch, is_train=False)
    assert_allclose(loaded.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy(),
                    rtol=1e-6)


def test_install_monitor_delegates(monkeypatch):
    # on every bucket's module, those bound later included
    seen = []
    monkeypatch.setattr(mx.mod.Module, "install_monitor",
                        lambda self, mon: seen.append((self, mon)))
    it = FixedBatches()
    mod = _bound(it)
    mon = object()
    mod.install_monitor(mon)
    assert seen == [(mod._buckets[max(BUCKETS)], mon)]
    small = next(b for b in it if b.bucket_key == min(BUCKETS))
    mod.forward(small, is_train=False)
    assert seen[-1] == (mod._buckets[min(BUCKETS)], mon) and len(seen) == 2
