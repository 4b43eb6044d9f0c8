"""mx.model.FeedForward, written as MXNet 1.x's scripts used it; values against MXNet 1.9.1
(tests/fixtures/mxnet/make_feedforward_fixtures.py)."""
import logging
import pathlib
import warnings

import numpy
import pytest

import minpy.mxnet as mx

FIX = numpy.load(pathlib.Path(__file__).parents[1] / "fixtures" / "mxnet" / "feedforward.npz")
PARAMS = ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")
pytestmark = pytest.mark.filterwarnings("ignore:mxnet.model.FeedForward has been deprecated")


def net():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    act = mx.sym.Activation(fc1, act_type="tanh", name="act1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _model(**kw):
    return mx.model.FeedForward(net(), num_epoch=2, epoch_size=3, learning_rate=0.2,
                                momentum=0.9, wd=0.01,
                                arg_params={k: mx.nd.array(FIX["init_" + k]) for k in PARAMS},
                                **kw)


def test_fit_matches_mxnet_epoch_size_and_updates():
    model = _model()
    batches = []
    model.fit(mx.io.NDArrayIter(FIX["X"], FIX["y"], 10, shuffle=False),
              batch_end_callback=lambda p: batches.append([p.epoch, p.nbatch]))
    assert batches == FIX["batches"].tolist()     # epoch_size=3 of a 4-batch iterator
    for k in PARAMS:
        numpy.testing.assert_allclose(model.arg_params[k].asnumpy(), FIX["fit_" + k],
                                      rtol=1e-4, atol=1e-5, err_msg=k)
    pred = model.predict(mx.io.NDArrayIter(FIX["X"], FIX["y"], 10, shuffle=False))
    numpy.testing.assert_allclose(pred, FIX["pred"], rtol=1e-4, atol=1e-5)


def test_predict_keeps_every_batch_not_the_last_buffer():
    # the executor's output buffer is rewritten by each forward: predict must keep values
    model = _model()
    X = FIX["X"]
    pred = model.predict(X)                       # 40 rows, one batch of 40
    model.numpy_batch_size = 7                    # six batches, the last one padded
    model._pred_exec = None
    pred7 = model.predict(X)
    assert pred7.shape == (40, 3)
    numpy.testing.assert_allclose(pred7, pred, rtol=1e-5)


def test_fit_on_numpy_arrays_learns_and_logs(caplog):
    rs = numpy.random.RandomState(0)
    X = rs.randn(200, 6).astype(numpy.float32)
    y = (X[:, 0] - X[:, 1] > 0).astype(numpy.float32)
    mx.random.seed(0)
    model = mx.model.FeedForward(net(), num_epoch=6, learning_rate=0.5, numpy_batch_size=50,
                                 initializer=mx.init.Xavier())
    with caplog.at_level(logging.INFO):
        model.fit(X, y.reshape(-1, 1), eval_data=(X, y))
    assert "Epoch[5] Validation-accuracy=" in caplog.text
    assert "Epoch[0] Resetting Data Iterator" in caplog.text
    assert model.score(mx.io.NDArrayIter(X, y, 50)) > 0.95
    assert (model.predict(X).argmax(axis=1) == y).mean() > 0.95


def test_save_load_create(tmp_path):
    model = _model()
    model.fit(mx.io.NDArrayIter(FIX["X"], FIX["y"], 10, shuffle=False))
    model.save(str(tmp_path / "ff"))              # epoch defaults to num_epoch
    again = mx.model.FeedForward.load(str(tmp_path / "ff"), 2)
    assert again.begin_epoch == 2
    numpy.testing.assert_allclose(again.predict(FIX["X"]), model.predict(FIX["X"]), rtol=1e-6)
    made = mx.model.FeedForward.create(net(), FIX["X"], FIX["y"], num_epoch=1,
                                       numpy_batch_size=20, learning_rate=0.1)
    assert sorted(made.arg_params) == sorted(PARAMS)


def test_errors_name_what_is_wrong():
    model = _model()
    with pytest.raises(ValueError, match="y must be specified"):
        model.fit(FIX["X"])
    with pytest.raises(ValueError, match="numbers of data points and labels"):
        model.fit(FIX["X"], FIX["y"][:5])
    with pytest.raises(TypeError, match="X must be DataIter"):
        model.fit([[1.0]])
    with pytest.raises(ValueError, match="num_epoch"):
        mx.model.FeedForward(net()).fit(FIX["X"], FIX["y"])
    with pytest.raises(RuntimeError, match="no parameters"):
        mx.model.FeedForward(net()).predict(FIX["X"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mx.model.FeedForward(net())
    assert any(issubclass(x.category, DeprecationWarning) for x in w)


@pytest.mark.skipif(__import__("minpy").dispatch.gpu_backend() is None,
                    reason="needs a GPU backend (CuPy, or the stand-in of "
                           "MINPY_TEST_DEVICE=standin)")
def test_fit_on_gpu_matches_mxnet():
    model = _model(ctx=mx.gpu(0))
    model.fit(mx.io.NDArrayIter(FIX["X"], FIX["y"], 10, shuffle=False))
    for k in PARAMS:
        numpy.testing.assert_allclose(model.arg_params[k].asnumpy(), FIX["fit_" + k],
                                      rtol=1e-4, atol=1e-5, err_msg=k)
    pred = model.predict(mx.io.NDArrayIter(FIX["X"], FIX["y"], 10, shuffle=False))
    numpy.testing.assert_allclose(pred, FIX["pred"], rtol=1e-4, atol=1e-5)
