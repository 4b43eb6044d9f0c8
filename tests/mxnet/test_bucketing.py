"""minpy.mxnet.bucketing: BucketSentenceIter and BucketingFunction (one bound symbol per bucket)."""
import pickle

import numpy
import pytest
from hypothesis import assume, given, strategies as st

import minpy as np
import minpy.symbol as sym
from minpy.mxnet.bucketing import BucketingFunction, BucketSentenceIter
from minpy.testing import check_grads

VOCAB, EMBED, HIDDEN, BATCH = 8, 5, 7, 4


def _sentences(n, lo=1, hi=7, seed=0):
    """Counting sequences (next token = token + 1 mod VOCAB): learnable in a few steps."""
    rng = numpy.random.default_rng(seed)
    out = []
    for _ in range(n):
        start, length = int(rng.integers(VOCAB)), int(rng.integers(lo, hi))
        out.append([(start + i) % VOCAB for i in range(length)])
    return out


# ------------------------------------------------------------------ the iterator
@pytest.mark.filterwarnings("ignore:BucketSentenceIter. dropped")
@given(st.integers(4, 40), st.integers(1, 5), st.booleans(), st.integers(0, 9),
       st.sampled_from([None, [2, 4], [3, 6, 9], [1, 5]]))
def test_batches_are_padded_sentences_of_their_bucket(n, batch_size, shuffle, seed, buckets):
    sents = _sentences(n, seed=seed)
    try:
        it = BucketSentenceIter(sents, batch_size, buckets=buckets, shuffle=shuffle, seed=seed,
                                invalid_label=-1)
    except ValueError as e:                    # no bucket fills a batch: said so, not silent
        assert "no bucket" in str(e)
        assume(False)
    keys = it.buckets
    fits = [numpy.searchsorted(keys, len(s)) for s in sents]
    per_bucket = numpy.bincount([f for f in fits if f < len(keys)], minlength=len(keys))
    expected_batches = int(sum(c // batch_size for c in per_bucket))
    assert it.getnumiterations() == expected_batches
    for _ in range(2):
        seen = []
        for b in it:
            data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
            assert data.shape == (batch_size, b.bucket_key) == label.shape
            assert b.provide_data == [("data", data.shape)]
            numpy.testing.assert_array_equal(label[:, :-1], data[:, 1:])
            assert (label[:, -1] == -1).all()
            for row in data:
                tokens = row[row != -1].astype(int).tolist()
                assert (row[len(tokens):] == -1).all()
                assert b.bucket_key == keys[numpy.searchsorted(keys, len(tokens))]
                seen.append(tuple(tokens))
        assert len(seen) == expected_batches * batch_size
        pool = [tuple(s) for s in sents]
        for s in seen:                           # each sentence at most once per epoch
            pool.remove(s)
        it.reset()


def test_default_buckets_layout_and_provide_data():
    sents = [[1, 2]] * 4 + [[1, 2, 3]] * 3 + [[4] * 5] * 4
    it = BucketSentenceIter(sents, 4, layout="TN", shuffle=False)
    assert it.buckets == [2, 5] and it.default_bucket_key == 5
    assert it.provide_data == [("data", (5, 4))] and it.provide_label[0].layout == "TN"
    batches = list(it)
    assert [b.bucket_key for b in batches] == [2, 5]
    assert batches[0].data[0].shape == (2, 4)          # time major
    assert batches[0].data[0].dtype == numpy.float32
    # the length-3 sentences go to bucket 5, padded; 3 of them make no full batch
    it2 = BucketSentenceIter(sents, 4, buckets=[2, 5], shuffle=False)
    assert [len(d) for d in it2.data] == [4, 7]


def test_shuffle_within_buckets_is_seeded():
    sents = [[i, i + 1, i + 2] for i in range(9)]            # one bucket, distinct rows

    def order(it):
        return [int(r[0]) for b in it for r in b.data[0].asnumpy()]
    assert order(BucketSentenceIter(sents, 2, shuffle=False)) == list(range(8))
    a, b = (BucketSentenceIter(sents, 2, seed=4) for _ in range(2))
    first = order(a)
    assert first == order(b) and sorted(first) != first
    a.reset()
    assert order(a) != first                                # a new order each epoch
    pairs = {tuple(sorted(first[i:i + 2])) for i in range(0, 8, 2)}
    assert pairs != {(0, 1), (2, 3), (4, 5), (6, 7)}       # rows shuffled, not only batches


def test_long_sentences_dropped_with_a_warning_and_errors():
    with pytest.warns(UserWarning, match="dropped 2 sentences longer than the largest bucket"):
        BucketSentenceIter([[1, 2]] * 4 + [[1] * 9] * 2, 2, buckets=[3])
    with pytest.raises(ValueError, match="no bucket of \\[3\\] holds batch_size=5"):
        BucketSentenceIter([[1, 2]] * 4, 5, buckets=[3])
    with pytest.raises(ValueError, match="no buckets"):
        BucketSentenceIter([[1, 2], [1]], 2)
    with pytest.raises(TypeError, match="sentence 1 must hold integer token ids"):
        BucketSentenceIter([[1, 2], [1.5, 2.0]], 1)
    with pytest.raises(ValueError, match="sentence 0 must be 1-D"):
        BucketSentenceIter([[[1, 2]]], 1)
    with pytest.raises(ValueError, match="layout must be"):
        BucketSentenceIter([[1, 2]], 1, layout="NTC")
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        BucketSentenceIter([[1, 2]], 0)


def test_bucket_iter_state_dict_resumes_exactly():
    sents = _sentences(60)
    a = BucketSentenceIter(sents, 3, buckets=[3, 6], seed=5)
    for _ in range(4):
        next(a)
    state = pickle.loads(pickle.dumps(a.state_dict()))
    b = BucketSentenceIter(sents, 3, buckets=[3, 6], seed=99)
    b.load_state_dict(state)
    for _ in range(2):
        for x, y in zip(a, b, strict=True):
            assert x.bucket_key == y.bucket_key
            numpy.testing.assert_array_equal(x.data[0].asnumpy(), y.data[0].asnumpy())
        a.reset()
        b.reset()
    with pytest.raises(ValueError, match="buckets is \\[2, 6\\] here"):
        BucketSentenceIter(sents, 3, buckets=[2, 6]).load_state_dict(state)


# ------------------------------------------------------------------ the bucketed model
def rnn_sym_gen(length):
    """An embedding + unrolled tanh RNN over ``length`` steps; weights shared across steps."""
    emb = sym.Embedding(sym.Variable("data"), input_dim=VOCAB, output_dim=EMBED, name="embed")
    steps = sym.SliceChannel(emb, num_outputs=length, axis=1, squeeze_axis=True, name="split")
    w = {n: sym.Variable(n) for n in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias",
                                      "out_weight", "out_bias")}
    h, outs = None, []
    for t in range(length):
        x = steps[t] if length > 1 else steps
        a = sym.FullyConnected(x, weight=w["i2h_weight"], bias=w["i2h_bias"],
                               num_hidden=HIDDEN, name=f"i2h{t}")
        if h is not None:
            a = a + sym.FullyConnected(h, weight=w["h2h_weight"], bias=w["h2h_bias"],
                                       num_hidden=HIDDEN, name=f"h2h{t}")
        h = sym.Activation(a, act_type="tanh", name=f"tanh{t}")
        outs.append(sym.FullyConnected(h, weight=w["out_weight"], bias=w["out_bias"],
                                       num_hidden=VOCAB, name=f"out{t}"))
    return sym.Reshape(sym.Concat(*outs, num_args=length, dim=1), shape=(-1, VOCAB))


def rnn_reference(p, data):
    """The same network in minpy/NumPy code, from the same parameter dict."""
    x = p["embed_weight"][data.astype(int)]
    h, outs = None, []
    for t in range(data.shape[1]):
        a = x[:, t] @ p["i2h_weight"].T + p["i2h_bias"]
        if h is not None:
            a = a + h @ p["h2h_weight"].T + p["h2h_bias"]
        h = np.tanh(a)
        outs.append(h @ p["out_weight"].T + p["out_bias"])
    return np.reshape(np.stack(outs, axis=1), (-1, VOCAB))


def masked_xent(logits, label):
    y = numpy.asarray(label).reshape(-1).astype(int)
    mask = (y >= 0).astype(logits.dtype)
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(logp[numpy.arange(len(y)), numpy.maximum(y, 0)] * mask) / mask.sum()


def _model(dtype=numpy.float32):
    return BucketingFunction(rnn_sym_gen, default_bucket_key=6,
                             input_shapes_fn=lambda k: {"data": (BATCH, k)}, dtype=dtype)


def test_training_over_buckets_lowers_loss_binding_each_bucket_once():
    it = BucketSentenceIter(_sentences(64, 2, 7), BATCH, buckets=[3, 6], seed=0)
    model = _model()
    params = model.get_params(seed=0)

    def loss(params, batch):
        return masked_xent(model(batch.bucket_key, data=batch.data[0], **params),
                           batch.label[0].asnumpy())
    step = np.grad_and_loss(loss)
    losses = []
    for _ in range(6):
        total = 0.0
        for batch in it:
            grads, value = step(params, batch)
            assert sorted(grads) == sorted(params)
            for k in params:
                params[k] = params[k] - 0.5 * grads[k]
            total += float(value)
        losses.append(total / it.getnumiterations())
        it.reset()
    assert losses[-1] < 0.5 * losses[0]
    assert sorted(model.functions) == [3, 6]
    assert model.bind_count == 2                    # one plan per bucket, reused every step
    assert all(f.bind_count == 1 for f in model.functions.values())


def test_buckets_share_one_parameter_dict():
    model = _model(numpy.float64)
    params = model.get_params(seed=1)
    rng = numpy.random.default_rng(0)
    for key in (6, 2, 4):
        data = np.array(rng.integers(0, VOCAB, (BATCH, key)).astype(numpy.float64))
        numpy.testing.assert_allclose(model(key, data=data, **params).asnumpy(),
                                      rnn_reference(params, data.asnumpy()).asnumpy(),
                                      rtol=1e-10, atol=1e-12)
    params["out_bias"] = params["out_bias"] + 1.0   # every bucket sees the update
    data = np.array(rng.integers(0, VOCAB, (BATCH, 2)).astype(numpy.float64))
    numpy.testing.assert_allclose(model(2, data=data, **params).asnumpy(),
                                  rnn_reference(params, data.asnumpy()).asnumpy(), rtol=1e-10)
    aux = {id(f.aux_params) for f in model.functions.values()}
    assert aux == {id(model.aux_params)}
    assert model.bind_count == 3 and "3 bind(s)" in repr(model)


def test_bucketing_gradients_match_finite_differences():
    model = _model(numpy.float64)
    params = model.get_params(seed=2)
    names = sorted(params)
    data = numpy.array([[1, 2, 3], [4, 5, 6], [7, 0, 1], [2, 3, -1]], numpy.float64)
    label = numpy.concatenate([data[:, 1:], -numpy.ones((BATCH, 1))], axis=1)

    def loss(*weights):
        p = dict(zip(names, weights))
        return masked_xent(model(3, data=np.array(data), **p), label)
    check_grads(loss, *[params[k] for k in names], order=1)


def test_bucketing_function_errors():
    def sym_gen(key):
        net = sym.FullyConnected(sym.Variable("data"), num_hidden=3 if key < 5 else key,
                                 name="fc")
        return net, ("data",), ()
    model = BucketingFunction(sym_gen, 2, lambda k: {"data": (2, 4)})
    assert model.param_shapes == {"fc_weight": (3, 4), "fc_bias": (3,)}
    with pytest.raises(ValueError, match="'fc_weight' has shape \\(6, 4\\) in bucket 6"):
        model.function_for(6)
    with pytest.raises(TypeError, match="must return a Symbol"):
        BucketingFunction(lambda k: None, 2, lambda k: {"data": (2, 4)})
    with pytest.raises(TypeError, match="must return a dict"):
        BucketingFunction(sym_gen, 2, lambda k: (2, 4))
    with pytest.raises(TypeError, match="sym_gen must be callable"):
        BucketingFunction(3, 2, dict)
