"""minpy.mxnet.metric (MXNet 1.x's mx.metric): values against MXNet 1.9.1 and NumPy formulas."""
import math
from collections import OrderedDict

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
from minpy.mxnet import metric

# The values MXNet 1.9.1 gives on the inputs of cases() (the same seeded inputs as
# metric_cases() in tests/fixtures/mxnet/module/make_module_fixture.py), printed once by
#   /work/mxvenv/bin/python make_module_fixture.py --metrics
MXNET_VALUES = {
    "acc": ("accuracy", 0.3333333333333333),
    "acc_index_preds": ("accuracy", 0.3333333333333333),
    "top_k_3": ("top_k_accuracy_3", 0.9166666666666666),
    "f1_macro": ("f1", 0.4),
    "f1_micro": ("f1", 0.4000000000000001),
    "mae": ("mae", 0.8930752575397491),
    "mse": ("mse", 1.2645330429077148),
    "rmse": ("rmse", 1.119323968887329),
    "ce": ("cross-entropy", 1.1843157609303792),
    "nll_loss": ("nll-loss", 1.1843157609303792),
    "perplexity": ("perplexity", 3.2684496552237685),
    "perplexity_ignore": ("perplexity", 3.179652991184011),
    "perplexity_seq": ("perplexity", 4.308656442915537),
    "loss": ("loss", 0.25),
}


def cases():
    """{case: (name, kwargs, [(labels, preds) per update])}: metric_cases() of the generator."""
    rng = numpy.random.RandomState(3)
    probs = rng.rand(12, 4).astype("float32")
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.randint(0, 4, 12).astype("float32")
    binary = rng.rand(10, 2).astype("float32")
    blabels = rng.randint(0, 2, 10).astype("float32")
    reg_pred = rng.randn(6, 2).astype("float32")
    reg_label = rng.randn(6, 2).astype("float32")
    reg_pred1, reg_label1 = rng.randn(5).astype("float32"), rng.randn(5).astype("float32")
    seq = rng.rand(2, 3, 5).astype("float32")
    seq /= seq.sum(axis=2, keepdims=True)
    seq_label = numpy.array([[0, 1, 4], [2, 0, 3]], "float32")
    two = [(labels[:6], probs[:6]), (labels[6:], probs[6:])]
    bin_two = [(blabels[:5], binary[:5]), (blabels[5:], binary[5:])]
    reg_two = [(reg_label, reg_pred), (reg_label1, reg_pred1)]
    return {
        "acc": ("acc", {}, two),
        "acc_index_preds": ("acc", {}, [(labels, numpy.argmax(probs, 1).astype("float32"))]),
        "top_k_3": ("top_k_accuracy", {"top_k": 3}, two),
        "f1_macro": ("f1", {}, bin_two),
        "f1_micro": ("f1", {"average": "micro"}, bin_two),
        "mae": ("mae", {}, reg_two),
        "mse": ("mse", {}, reg_two),
        "rmse": ("rmse", {}, reg_two),
        "ce": ("ce", {}, two),
        "nll_loss": ("nll_loss", {}, two),
        "perplexity": ("perplexity", {"ignore_label": None}, two),
        "perplexity_ignore": ("perplexity", {"ignore_label": 1}, two),
        "perplexity_seq": ("perplexity", {"ignore_label": 0},
                           [(seq_label.reshape(-1), seq.reshape(-1, 5))]),
        "loss": ("loss", {}, [(labels, probs)]),
    }


@pytest.mark.parametrize("case", sorted(MXNET_VALUES))
@pytest.mark.parametrize("as_minpy", [False, True])
def test_values_equal_mxnets(case, as_minpy):
    name, kwargs, updates = cases()[case]
    m = metric.create(name, **kwargs)
    for label, pred in updates:
        if as_minpy:
            label, pred = minpy.array(label), minpy.array(pred)
        m.update([label], [pred])
    got_name, got = m.get()
    want_name, want = MXNET_VALUES[case]
    assert got_name == want_name
    assert got == pytest.approx(want, rel=1e-6)


def test_perplexity_takes_sequence_predictions_with_the_class_axis_last():
    name, kwargs, updates = cases()["perplexity_seq"]
    label, pred = updates[0]
    m = metric.Perplexity(**kwargs)
    m.update([label.reshape(2, 3)], [pred.reshape(2, 3, 5)])
    assert m.get()[1] == pytest.approx(MXNET_VALUES["perplexity_seq"][1], rel=1e-6)


# ------------------------------------------------------------------ NumPy formulas
_sizes = st.integers(1, 8)


@given(st.integers(1, 20), st.integers(2, 6), st.integers(0, 2 ** 31 - 1))
def test_accuracy_is_the_fraction_of_argmax_hits(n, k, seed):
    rng = numpy.random.default_rng(seed)
    pred = rng.random((n, k)).astype(numpy.float32)
    label = rng.integers(0, k, n).astype(numpy.float32)
    m = metric.Accuracy()
    m.update([minpy.array(label)], [minpy.array(pred)])
    assert m.get() == ("accuracy", pytest.approx(numpy.mean(pred.argmax(1) == label)))
    assert m.num_inst == n


@given(st.lists(st.tuples(_sizes, st.integers(1, 4)), min_size=1, max_size=4),
       st.integers(0, 2 ** 31 - 1))
def test_mse_averages_the_batch_means(shapes, seed):
    rng = numpy.random.default_rng(seed)
    m = metric.MSE()
    means = []
    for n, k in shapes:
        label = rng.standard_normal((n, k)).astype(numpy.float32)
        pred = rng.standard_normal((n, k)).astype(numpy.float32)
        m.update([label], [pred])
        means.append(numpy.mean((label - pred) ** 2))
    assert m.get()[1] == pytest.approx(numpy.mean(means), rel=1e-5)


@given(st.integers(1, 20), st.integers(2, 6), st.integers(0, 2 ** 31 - 1))
def test_cross_entropy_is_the_mean_negative_log_probability(n, k, seed):
    rng = numpy.random.default_rng(seed)
    pred = rng.random((n, k)) + 0.01
    pred = (pred / pred.sum(1, keepdims=True)).astype(numpy.float32)
    label = rng.integers(0, k, n)
    m = metric.CrossEntropy()
    m.update([label], [pred])
    want = -numpy.mean(numpy.log(pred[numpy.arange(n), label].astype(numpy.float64) + 1e-12))
    assert m.get()[1] == pytest.approx(want, rel=1e-5)


# ------------------------------------------------------------------ the protocol
def test_create_knows_mxnets_names():
    expected = {"acc": metric.Accuracy, "accuracy": metric.Accuracy, "ACC": metric.Accuracy,
                "ce": metric.CrossEntropy, "nll_loss": metric.NegativeLogLikelihood,
                "mse": metric.MSE, "rmse": metric.RMSE, "mae": metric.MAE, "f1": metric.F1,
                "loss": metric.Loss, "composite": metric.CompositeEvalMetric}
    for name, cls in expected.items():
        assert type(metric.create(name)) is cls, name
    assert type(metric.create("top_k_accuracy", top_k=5)) is metric.TopKAccuracy
    assert type(metric.create("perplexity", ignore_label=None)) is metric.Perplexity
    acc = metric.Accuracy()
    assert metric.create(acc) is acc
    with pytest.raises(ValueError, match="unknown metric 'accuracyy'.*'acc'"):
        metric.create("accuracyy")
    with pytest.raises(TypeError, match="expected a metric name"):
        metric.create(3)


def test_a_list_makes_a_composite_reporting_each_child():
    m = metric.create(["acc", "ce"])
    m.update([numpy.array([0, 1, 1])], [numpy.array([[0.3, 0.7], [0, 1.0], [0.4, 0.6]])])
    names, values = m.get()
    assert names == ["accuracy", "cross-entropy"]
    assert values[0] == pytest.approx(2 / 3)
    assert m.get_name_value() == list(zip(names, values))


def test_custom_metrics_take_numpy_arrays_and_tuples():
    seen = []

    def feval(label, pred):
        seen.append((type(label), type(pred)))
        return float(numpy.abs(label - pred).sum()), label.size
    m = metric.create(feval)
    assert m.name == "feval"
    m.update([minpy.array([1.0, 2.0])], [minpy.array([1.5, 2.0])])
    assert m.get() == ("feval", 0.25)
    assert seen == [(numpy.ndarray, numpy.ndarray)]
    lam = metric.np(lambda label, pred: 1.0)
    assert lam.name == "custom(<lambda>)"
    lam.update([numpy.zeros(2)], [numpy.zeros(2)])
    assert lam.get()[1] == 1.0
    with pytest.raises(NotImplementedError):
        m.get_config()


def test_reset_local_keeps_the_global_tally():
    m = metric.Accuracy()
    m.update([numpy.array([0, 1])], [numpy.array([0, 1])])
    m.reset_local()
    m.update([numpy.array([0, 1])], [numpy.array([1, 1])])
    assert m.get()[1] == 0.5 and m.get_global()[1] == 0.75
    assert m.get_global_name_value() == [("accuracy", 0.75)]
    m.reset()
    assert math.isnan(m.get()[1]) and math.isnan(m.get_global()[1])


def test_update_dict_picks_outputs_and_labels_by_name():
    m = metric.Accuracy(output_names=["b"], label_names=["y"])
    m.update_dict(OrderedDict(x=numpy.array([0]), y=numpy.array([1])),
                  OrderedDict(a=numpy.array([[1.0, 0.0]]), b=numpy.array([[0.0, 1.0]])))
    assert m.get()[1] == 1.0
    assert m.get_config()["label_names"] == ["y"]


def test_errors_name_the_mismatch():
    with pytest.raises(ValueError, match="does not match"):
        metric.Accuracy().update([numpy.zeros(3), numpy.zeros(3)], [numpy.zeros((3, 2))])
    with pytest.raises(ValueError, match="does not match"):
        metric.Accuracy().update([numpy.zeros(4)], [numpy.zeros((3, 2))])
    with pytest.raises(ValueError, match="top_k must be > 1"):
        metric.TopKAccuracy(1)
    with pytest.raises(ValueError, match="only supports binary"):
        metric.F1().update([numpy.array([0, 1, 2])], [numpy.zeros((3, 2))])
    with pytest.raises(ValueError, match="3 labels for 2 predictions"):
        metric.CrossEntropy().update([numpy.zeros(3)], [numpy.full((2, 2), 0.5)])
    with pytest.raises(ValueError, match="'macro' or 'micro'"):
        metric.F1(average="weighted")
