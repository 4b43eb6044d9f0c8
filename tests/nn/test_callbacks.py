"""minpy.nn.callbacks: the one callback protocol — each stock callback alone, user callbacks
in a Solver, the order of the hooks, StopTraining, MXNet's mx.callback in a Solver."""
import logging
import os
import types

import numpy
import pytest

import minpy
import minpy.model
from minpy.mxnet import callback as mx_callback
from minpy.nn import callbacks as cbs, checkpoint
from minpy.nn.callbacks import (Callback, CallbackList, Checkpoint, LambdaCallback, LRDecay,
                                Plot, ProgressBar, StopOnNonFinite, StopTraining)
from minpy.nn.io import NDArrayIter
from minpy.nn.solver import Solver
from _host import host
from test_solver import MLP, BNDropoutNet, Exploding, _blobs, _params, _resumable, _solver


def _fake_solver(**kw):
    """The attributes the stock callbacks read, without training anything."""
    fields = dict(is_chief=True, num_epochs=2, task_type="classification", epoch=0,
                  kvstore=None, optimizer=None, optim_configs={}, test_dataiter=None,
                  loss_history=[], train_acc_history=[], val_acc_history=[])
    fields.update(kw)
    return types.SimpleNamespace(**fields)


def _epoch_info(epoch, acc=0.5):
    return {"epoch": epoch, "step": 3 * epoch, "train_acc": acc, "val_acc": acc, "time": 0.5,
            "samples": 96, "samples_per_sec": 192.0}


# ---------------------------------------------------------------- each stock callback alone
def test_progress_bar_plain_lines_on_the_chief_only(capsys):
    bar = ProgressBar(verbose=True, progress=False, print_every=2)
    for chief in (True, False):
        solver = _fake_solver(is_chief=chief)
        bar.on_epoch_begin(solver, {"epoch": 1, "batches": 3})
        for step in (1, 2, 3):
            bar.on_batch_end(solver, {"epoch": 1, "batch": step - 1, "step": step,
                                      "loss": 1.0 / step, "samples_per_sec": 10.0})
        bar.on_epoch_end(solver, _epoch_info(1, acc=0.75))
        out = capsys.readouterr().out
        if chief:
            assert out.splitlines() == [
                "(Iteration 1) loss: 1.000000", "(Iteration 3) loss: 0.333333",
                "(Epoch 1 / 2) train acc: 0.7500, val acc: 0.7500, time: 0.50 s, 192 samples/s"]
        else:
            assert out == ""


def test_progress_bar_tqdm_is_closed_however_training_ends(capsys):
    pytest.importorskip("tqdm")
    bar = ProgressBar(progress=True)
    solver = _fake_solver()
    bar.on_epoch_begin(solver, {"epoch": 1, "batches": 4})
    bar.on_batch_end(solver, {"epoch": 1, "batch": 0, "step": 1, "loss": 2.0,
                              "samples_per_sec": 50.0})
    assert bar._bar is not None
    bar.on_train_end(solver, {"epoch": 0, "step": 1, "error": RuntimeError("boom")})
    assert bar._bar is None
    assert "epoch 1/2" in capsys.readouterr().err


class _StateSolver:
    """What Checkpoint needs of a solver: state_dict, load_checkpoint, is_chief, epoch."""

    def __init__(self, chief=True):
        self.is_chief, self.epoch, self.loaded = chief, 0, []

    def state_dict(self):
        return {"epoch": self.epoch}

    def load_checkpoint(self, path):
        self.loaded.append(path)
        self.epoch = checkpoint.load(path)["epoch"]


def test_checkpoint_writes_every_n_epochs_keeps_the_newest_and_resumes(tmp_path):
    ckpt = Checkpoint(str(tmp_path / "ck"), every=2, keep=2)
    solver = _StateSolver()
    for epoch in range(1, 9):
        solver.epoch = epoch
        ckpt.on_epoch_end(solver, {"epoch": epoch})
    assert sorted(os.listdir(tmp_path / "ck")) == ["checkpoint-0006.minpy",
                                                   "checkpoint-0008.minpy"]
    Checkpoint(str(tmp_path / "ck")).on_train_begin(solver, {})       # resume=False
    fresh = _StateSolver()
    Checkpoint(str(tmp_path / "ck"), resume=True).on_train_begin(fresh, {})
    assert fresh.loaded == [str(tmp_path / "ck" / "checkpoint-0008.minpy")] and fresh.epoch == 8
    other = _StateSolver(chief=False)
    Checkpoint(str(tmp_path / "worker1")).on_epoch_end(other, {"epoch": 1})
    assert not (tmp_path / "worker1").exists()
    Checkpoint(None).on_epoch_end(solver, {"epoch": 1})        # no directory: nothing written
    with pytest.raises(ValueError, match="Checkpoint: every must be >= 1"):
        Checkpoint(str(tmp_path), every=0)


def test_stop_on_non_finite_raises_naming_the_step_or_skips():
    info = {"epoch": 2, "batch": 1, "step": 7, "loss": float("nan"),
            "where": "epoch 2, batch 1 (step 6)", "skip": False}
    with pytest.raises(FloatingPointError, match=r"loss is nan at epoch 2, batch 1 \(step 6\)"):
        StopOnNonFinite("raise").on_before_update(_fake_solver(), dict(info))
    skipped = dict(info)
    StopOnNonFinite("skip").on_before_update(_fake_solver(), skipped)
    assert skipped["skip"] is True
    finite = dict(info, loss=1.5)
    StopOnNonFinite("raise").on_before_update(_fake_solver(), finite)
    assert finite["skip"] is False
    with pytest.raises(ValueError, match="StopOnNonFinite: mode must be one of"):
        StopOnNonFinite("ignore")


def test_lr_decay_reaches_the_optimizer_or_the_rule_configs():
    solver = _fake_solver(optimizer=types.SimpleNamespace(learning_rate=0.1))
    decay = LRDecay(0.5)
    decay.on_epoch_end(solver, _epoch_info(1))
    decay.on_epoch_end(solver, _epoch_info(2))
    assert solver.optimizer.learning_rate == pytest.approx(0.025)
    rules = _fake_solver(optim_configs={"w": {"learning_rate": 0.2}, "b": {}})
    decay.on_epoch_end(rules, _epoch_info(1))
    assert rules.optim_configs == {"w": {"learning_rate": 0.1}, "b": {"learning_rate": 0.005}}
    remote = _fake_solver(kvstore=types.SimpleNamespace(type="dist_async"))
    with pytest.raises(ValueError, match="lr_decay cannot reach the optimizer of a 'dist_async'"):
        decay.on_train_begin(remote, {"epoch": 0, "num_epochs": 2})


def test_plot_writes_at_the_end_of_a_run_without_error(tmp_path):
    pytest.importorskip("matplotlib")
    solver = _fake_solver(loss_history=list(numpy.linspace(2, 0.1, 30)),
                          train_acc_history=[0.5, 0.8], val_acc_history=[0.4, 0.7])
    path = tmp_path / "curves.png"
    Plot(str(path)).on_train_end(solver, {"epoch": 2, "step": 30,
                                          "error": FloatingPointError("nan")})
    assert not path.exists()
    every = Plot(str(path), every=2)
    every.on_epoch_end(solver, _epoch_info(1))
    assert not path.exists()
    every.on_epoch_end(solver, _epoch_info(2))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    path.unlink()
    Plot(str(path)).on_train_end(solver, {"epoch": 2, "step": 30, "error": None})
    assert path.exists()


def test_lambda_callback_and_callback_list_refuse_what_is_not_a_callback():
    with pytest.raises(TypeError, match=r"LambdaCallback: on_epoch_ends="):
        LambdaCallback(on_epoch_ends=print)
    with pytest.raises(TypeError, match="Solver: .* is not a callback .*LambdaCallback"):
        _solver(callbacks=[lambda solver, info: None])
    seen = []
    listed = CallbackList([LambdaCallback(on_batch_end=lambda s, i: seen.append(i["step"]))])
    listed.on_batch_end(None, {"step": 3})
    listed.on_epoch_end(None, {})                   # hooks a callback lacks are skipped
    assert seen == [3] and len(listed) == 1
    listed.remove(listed[0])
    listed.on_batch_end(None, {"step": 4})
    assert seen == [3] and len(listed) == 0


# ---------------------------------------------------------------- callbacks in a Solver
class Recorder(Callback):
    """Records ``(hook, epoch, batch, step)`` per call, and each call's info."""

    def __init__(self):
        self.events, self.infos = [], []

    def _record(self, hook, info):
        self.infos.append((hook, dict(info)))
        self.events.append((hook,) + tuple(info.get(k) for k in ("epoch", "batch", "step")))

    def on_train_begin(self, solver, info):
        self._record("train_begin", info)

    def on_epoch_begin(self, solver, info):
        self._record("epoch_begin", info)

    def on_batch_begin(self, solver, info):
        self._record("batch_begin", info)

    def on_before_update(self, solver, info):
        self._record("before_update", info)

    def on_batch_end(self, solver, info):
        self._record("batch_end", info)

    def on_epoch_end(self, solver, info):
        self._record("epoch_end", info)

    def on_train_end(self, solver, info):
        self.infos.append(("train_end", dict(info)))
        self.events.append(("train_end", info["epoch"], info["error"]))


def _batch(epoch, batch, step):
    return [("batch_begin", epoch, batch, step), ("before_update", epoch, batch, step),
            ("batch_end", epoch, batch, step)]


def test_hooks_come_in_order_with_their_info():
    train, test = _two_batch_iters()
    rec = Recorder()
    Solver(MLP(), train, test, num_epochs=2, verbose=False, seed=1, callbacks=[rec]).train()
    assert rec.events == (
        [("train_begin", 0, None, None), ("epoch_begin", 1, None, None)] + _batch(1, 0, 1)
        + _batch(1, 1, 2) + [("epoch_end", 1, None, 2), ("epoch_begin", 2, None, None)]
        + _batch(2, 0, 3) + _batch(2, 1, 4) + [("epoch_end", 2, None, 4), ("train_end", 2, None)])
    infos = dict(rec.infos[:6])       # the first epoch's first step, by hook
    assert infos["train_begin"] == {"epoch": 0, "num_epochs": 2}
    assert infos["epoch_begin"] == {"epoch": 1, "batches": 2}
    assert infos["before_update"]["skip"] is False and \
        infos["before_update"]["where"] == "epoch 1, batch 0 (step 0)"
    end = infos["batch_end"]
    assert end["batch_size"] == 90 and end["samples"] == 90 and end["samples_per_sec"] > 0
    assert end["loss"] == infos["before_update"]["loss"]
    epoch_end = [i for h, i in rec.infos if h == "epoch_end"][0]
    assert epoch_end["samples"] == 180 and 0 <= epoch_end["train_acc"] <= 1 and \
        0 <= epoch_end["val_acc"] <= 1 and epoch_end["time"] > 0


def _two_batch_iters():
    x, y = _blobs()
    return NDArrayIter(x[:180], y[:180], batch_size=90), NDArrayIter(x[180:], y[180:],
                                                                     batch_size=30)


def test_stop_training_ends_after_the_current_step_and_train_end_still_runs():
    class StopAtStep3(Callback):
        def on_batch_end(self, solver, info):
            if info["step"] == 3:
                raise StopTraining
    rec = Recorder()
    solver = _solver(epochs=5, callbacks=[rec, StopAtStep3()], keep_best=False)
    solver.train()
    assert solver.step_count == 3 and solver.epoch == 0 and len(solver.loss_history) == 3
    assert rec.events[-1] == ("train_end", 0, None)
    assert [e for e in rec.events if e[0] == "batch_end"][-1] == ("batch_end", 1, 2, 3)

    class StopAtOnce(Callback):
        def on_train_begin(self, solver, info):
            raise StopTraining
    solver = _solver(callbacks=[StopAtOnce()])
    solver.train()
    assert solver.step_count == 0


def test_train_end_sees_the_error_that_ends_training():
    rec = Recorder()
    with pytest.raises(FloatingPointError):
        _solver(model=Exploding(), callbacks=[rec]).train()
    hook, epoch, error = rec.events[-1]
    assert hook == "train_end" and epoch == 0 and isinstance(error, FloatingPointError)


def test_a_user_callback_runs_after_the_stock_ones_unless_its_order_says(tmp_path):
    seen = []

    class Late(Callback):
        def on_epoch_end(self, solver, info):
            seen.append(("late", sorted(os.listdir(tmp_path)),
                         solver.optimizer.learning_rate))

    class Early(Callback):
        order = -100

        def on_epoch_end(self, solver, info):
            seen.append(("early", sorted(os.listdir(tmp_path)),
                         solver.optimizer.learning_rate))
    solver = _solver(epochs=1, checkpoint_dir=str(tmp_path), lr_decay=0.5,
                     callbacks=[Late(), Early()])
    solver.train()
    # the early one ran before the decay and the checkpoint, the late one after both
    assert seen == [("early", [], 0.1), ("late", ["checkpoint-0001.minpy"], 0.05)]
    assert [type(cb).__name__ for cb in solver.callbacks] == \
        ["Early", "StopOnNonFinite", "LRDecay", "ProgressBar", "Checkpoint", "Late"]


def test_a_stock_callback_given_replaces_the_default_and_conflicts_are_refused(tmp_path):
    mine = Checkpoint(str(tmp_path / "mine"), keep=1)
    solver = _solver(epochs=2, callbacks=[mine, StopOnNonFinite("skip")])
    assert solver.checkpointer is mine and solver.keep_checkpoints == 1
    assert [type(cb) for cb in solver.callbacks].count(StopOnNonFinite) == 1
    solver.train()
    assert os.listdir(tmp_path / "mine") == ["checkpoint-0002.minpy"]
    with pytest.raises(ValueError, match="a Checkpoint in callbacks and its Solver argument"):
        _solver(checkpoint_dir=str(tmp_path), callbacks=[Checkpoint(str(tmp_path))])
    with pytest.raises(ValueError, match="a LRDecay in callbacks"):
        _solver(lr_decay=0.5, callbacks=[LRDecay(0.9)])


def test_a_user_callback_can_skip_a_step():
    class SkipOdd(Callback):
        def on_before_update(self, solver, info):
            info["skip"] = info["step"] % 2 == 1
    solver = _solver(epochs=1, callbacks=[SkipOdd()])
    solver.init()
    solver.train()
    assert solver.skipped_steps == 3 and solver.step_count == 6


def test_checkpoint_resume_carries_on_bit_identically(tmp_path):
    minpy.random.seed(11)
    full = _resumable(str(tmp_path / "full"))
    full.train()

    class Kill(Callback):
        def on_epoch_end(self, solver, info):
            if info["epoch"] == 2:
                raise StopTraining
    minpy.random.seed(11)
    first = _resumable(str(tmp_path / "cut"))
    first.callbacks.append(Kill())
    first.train()
    numpy.random.seed(5)
    again = _solver(model=BNDropoutNet(), epochs=3, update_rule="adam",
                    optim_config={"learning_rate": 0.01}, lr_decay=0.9,
                    callbacks=[Checkpoint(str(tmp_path / "cut"), resume=True)])
    again.train()
    assert again.epoch == 3 and again.loss_history == full.loss_history
    for k, v in _params(full).items():
        numpy.testing.assert_array_equal(_params(again)[k], v, err_msg=k)


# ---------------------------------------------------------------- MXNet's callbacks in a Solver
def test_mxnet_callbacks_are_callbacks_a_solver_takes(tmp_path, caplog):
    prefix = str(tmp_path / "net")
    save = mx_callback.do_checkpoint(prefix, period=2)
    speed = mx_callback.Speedometer(32, frequent=2)
    assert isinstance(save, Callback) and isinstance(speed, Callback)
    with caplog.at_level(logging.INFO):
        solver = _solver(epochs=2, callbacks=[save, speed], keep_best=False)
        solver.train()
    assert sorted(os.listdir(tmp_path)) == ["net-0002.params"]
    arg, aux = minpy.model.load_params(prefix, 2)
    for k, v in solver.model.params.items():
        numpy.testing.assert_array_equal(host(arg[k]), host(v))
    assert "Iter[1] Batch [2]\tSpeed:" in caplog.text          # MXNet's epochs from 0
    assert cbs.HOOKS[0] == "on_train_begin"
