"""What a Keras or scikit-learn user expects of the Solver: arrays in, ``predict``,
``Solver(seed=)`` reproducing dropout and shuffling, progress on any terminal."""
import fcntl
import os
import pty
import struct
import sys
import termios

import numpy
import pytest

import minpy as mp
from minpy.nn import layers
from minpy.nn.io import NDArrayIter
from minpy.nn.model import ModelBase
from minpy.nn.solver import Solver
from minpy.testing import check_grads
from _host import host


def _blobs(n=200, d=6, classes=3, seed=0):
    rng = numpy.random.default_rng(seed)
    centers = rng.normal(0, 3, size=(classes, d))
    y = rng.integers(0, classes, n)
    return (centers[y] + rng.normal(0, 1, size=(n, d))).astype(numpy.float32), y


class DropoutMLP(ModelBase):
    def __init__(self, d=6, hidden=16, classes=3, prob=0.3):
        super().__init__()
        self.prob = prob
        self.add_param("w1", (d, hidden)).add_param("b1", (hidden,)) \
            .add_param("w2", (hidden, classes)).add_param("b2", (classes,))

    def forward(self, X, mode):
        h = layers.relu(layers.affine(X, self.params["w1"], self.params["b1"]))
        h = layers.dropout(h, self.prob, mode=mode)
        return layers.affine(h, self.params["w2"], self.params["b2"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def _train(seed=5, epochs=2, **kw):
    x, y = _blobs()
    solver = Solver(DropoutMLP(), (x[:150], y[:150]), (x[150:], y[150:]), batch_size=16,
                    num_epochs=epochs, optim_config={"learning_rate": 0.1},
                    **dict(dict(verbose=False, seed=seed), **kw))
    return solver.train()


def _params(solver):
    return {k: host(v) for k, v in solver.model.params.items()}


# ---------------------------------------------------------------- arrays in
def test_solver_takes_x_y_tuples_and_batches_them():
    solver = _train(epochs=3)
    it = solver.train_dataiter
    assert isinstance(it, NDArrayIter) and it.batch_size == 16 and it.shuffle
    assert isinstance(solver.test_dataiter, NDArrayIter) and not solver.test_dataiter.shuffle
    assert len(solver.loss_history) == 3 * 10               # ceil(150 / 16) batches an epoch
    assert solver.val_acc_history[-1] > 0.8
    x, y = _blobs()
    assert solver.check_accuracy((x[150:], y[150:])) == solver.check_accuracy(
        NDArrayIter(x[150:], y[150:], batch_size=7))


def test_solver_refuses_what_it_cannot_batch():
    x, y = _blobs()
    with pytest.raises(TypeError, match=r"Solver: train data must be an \(x, y\) tuple.*"
                                        r"array of shape \(200, 6\)"):
        Solver(DropoutMLP(), x)
    with pytest.raises(TypeError, match=r"Solver: test data .* got tuple of length 3"):
        Solver(DropoutMLP(), (x, y), (x, y, y))
    with pytest.raises(ValueError, match="batch_size applies to data given as"):
        Solver(DropoutMLP(), NDArrayIter(x, y), batch_size=8)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="Solver: batch_size must be a positive int"):
            Solver(DropoutMLP(), (x, y), batch_size=bad)
    with pytest.raises(ValueError):
        Solver(DropoutMLP(), (x, y[:10]))


# ---------------------------------------------------------------- seeds
def test_the_same_seed_trains_bit_identically_without_numpy_global_state():
    numpy.random.seed(1)
    first = _params(_train(seed=5))
    numpy.random.seed(2)
    before = numpy.random.get_state()[1].copy()
    second = _params(_train(seed=5))
    numpy.testing.assert_array_equal(numpy.random.get_state()[1], before)   # untouched
    for k in first:
        numpy.testing.assert_array_equal(first[k], second[k], err_msg=k)
    other = _params(_train(seed=6))
    assert not numpy.array_equal(first["w1"], other["w1"])


def test_dropout_and_shuffling_each_follow_the_seed():
    """Same initial parameters, different seed: the masks and the order change the run."""
    a, b = _train(seed=5, epochs=0), _train(seed=6, epochs=0)
    b.model.set_params(_params(a))
    for solver in (a, b):
        solver.num_epochs = 1
        solver.train()
    assert not numpy.array_equal(_params(a)["w1"], _params(b)["w1"])


def test_resume_restores_the_dropout_generator(tmp_path):
    whole = _params(_train(seed=5, epochs=2))
    first = _train(seed=5, epochs=1)
    first.save_checkpoint(str(tmp_path / "one.minpy"))
    x, y = _blobs()
    again = Solver(DropoutMLP(), (x[:150], y[:150]), (x[150:], y[150:]), batch_size=16,
                   num_epochs=2, optim_config={"learning_rate": 0.1}, verbose=False, seed=5)
    again.resume(str(tmp_path / "one.minpy"))
    for k, v in _params(again).items():
        numpy.testing.assert_array_equal(v, whole[k], err_msg=k)


def test_dropout_draws_from_the_random_source_and_its_gradient_checks():
    x = mp.array(numpy.random.default_rng(0).normal(size=(4, 5)))
    with layers.random_source(mp.random.RandomState(3)):
        a = host(layers.dropout(x, 0.5))
    with layers.random_source(mp.random.RandomState(3)):
        b = host(layers.dropout(x, 0.5))
    numpy.testing.assert_array_equal(a, b)
    kept = a != 0
    numpy.testing.assert_allclose(a[kept], 2 * host(x)[kept])   # inverted: scaled by 1/(1-p)

    def f(v):      # a fixed mask per call: dropout is then linear in v
        with layers.random_source(mp.random.RandomState(3)):
            return mp.sum(mp.tanh(layers.dropout(v, 0.5)))
    check_grads(f, x, order=2)
    with pytest.raises(TypeError, match="random_source: expected a minpy.random.RandomState"):
        with layers.random_source(numpy.random.default_rng(0)):
            pass


# ---------------------------------------------------------------- predict
def test_predict_is_the_test_mode_forward_in_batches():
    solver = _train(epochs=1)
    model, p = solver.model, _params(solver)
    x, _ = _blobs()
    want = numpy.maximum(x @ p["w1"] + p["b1"], 0) @ p["w2"] + p["b2"]     # no dropout
    numpy.testing.assert_allclose(host(model.predict(x)), want, rtol=1e-5, atol=1e-5)
    numpy.testing.assert_allclose(host(model.predict(x.tolist(), batch_size=7)), want,
                                  rtol=1e-5, atol=1e-5)
    assert model.predict(x, batch_size=7).shape == (200, 3)
    assert (host(model.predict(x)).argmax(-1) == want.argmax(-1)).all()
    with pytest.raises(ValueError, match="DropoutMLP.predict: batch_size must be"):
        model.predict(x, batch_size=0)
    with pytest.raises(ValueError, match=r"DropoutMLP.predict: expected samples on axis 0"):
        model.predict(numpy.float32(1))
    with pytest.raises(RuntimeError, match="DropoutMLP.predict: the parameters are not"):
        DropoutMLP().predict(x)


# ---------------------------------------------------------------- progress anywhere
def _pty(columns):
    """A pseudo-terminal ``columns`` wide, as a writable text stream, and its reader fd."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return os.fdopen(follower, "w"), leader


@pytest.mark.parametrize("progress", [None, True])
def test_a_zero_width_terminal_gets_the_plain_lines(monkeypatch, capsys, progress):
    stream, leader = _pty(0)
    try:
        monkeypatch.setattr(sys, "stderr", stream)
        _train(epochs=2, verbose=True, progress=progress, print_every=5)
    finally:
        stream.close()
        os.close(leader)
    out = capsys.readouterr().out
    assert "(Epoch 1 / 2) train acc:" in out and "(Epoch 2 / 2)" in out, out
    assert "(Iteration 1) loss:" in out and "(Iteration 6) loss:" in out


def test_a_wide_terminal_gets_the_bar(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    stream, leader = _pty(120)
    try:
        monkeypatch.setattr(sys, "stderr", stream)
        _train(epochs=1, verbose=True)
    finally:
        stream.close()
        os.close(leader)
    assert "(Epoch 1 / 1)" not in capsys.readouterr().out        # the bar shows it


def test_not_a_terminal_gets_the_plain_lines(capsys):
    _train(epochs=1, verbose=True)          # pytest's captured stderr is no terminal
    assert "(Epoch 1 / 1) train acc:" in capsys.readouterr().out
