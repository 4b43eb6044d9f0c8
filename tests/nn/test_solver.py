"""The Solver: training, history, progress, plots, callbacks, non-finite losses, checkpoints."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy
import pytest

import minpy as mp
from minpy.nn import layers
from minpy.nn.checkpoint import CheckpointError
from minpy.nn.io import NDArrayIter
from minpy.nn.model import ModelBase, SymbolModel
from minpy.nn.solver import Callback, Solver, StopTraining
import minpy.symbol as sym
from _host import host

ROOT = os.path.join(os.path.dirname(os.path.dirname(__file__)), os.pardir)


def _blobs(n=240, d=6, classes=3, seed=0):
    """Linearly separable-ish Gaussian blobs: (x float32, y int64)."""
    rng = numpy.random.default_rng(seed)
    centers = rng.normal(0, 3, size=(classes, d))
    y = rng.integers(0, classes, n)
    x = (centers[y] + rng.normal(0, 1, size=(n, d))).astype(numpy.float32)
    return x, y.astype(numpy.int64)


class MLP(ModelBase):
    def __init__(self, d=6, hidden=16, classes=3, dropout=0.0):
        super().__init__()
        self.dropout = dropout
        self.add_param("w1", (d, hidden)).add_param("b1", (hidden,)) \
            .add_param("w2", (hidden, classes)).add_param("b2", (classes,))

    def forward(self, X, mode):
        h = layers.relu(layers.affine(X, self.params["w1"], self.params["b1"]))
        if self.dropout:
            h = layers.dropout(h, self.dropout, mode=mode)
        return layers.affine(h, self.params["w2"], self.params["b2"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def _iters(batch=32, seed=3, **kw):
    x, y = _blobs()
    return (NDArrayIter(x[:180], y[:180], batch_size=batch, shuffle=True, seed=seed, **kw),
            NDArrayIter(x[180:], y[180:], batch_size=batch))


def _solver(model=None, epochs=3, **kw):
    train, test = _iters()
    options = dict(num_epochs=epochs, init_rule="gaussian", init_config={"stdvar": 0.1},
                   update_rule="sgd_momentum", optim_config={"learning_rate": 0.1},
                   verbose=False, seed=7)
    options.update(kw)
    return Solver(model or MLP(), train, test, **options)


def test_trains_and_records_history():
    solver = _solver(epochs=4)
    solver.init()
    assert set(solver.model.params) == {"w1", "b1", "w2", "b2"}
    solver.train()
    steps = 4 * 6     # 180 samples / 32 per batch, last batch padded
    assert len(solver.loss_history) == steps == solver.step_count
    assert len(solver.train_acc_history) == len(solver.val_acc_history) == 4
    assert solver.loss_history[-1] < solver.loss_history[0]
    assert solver.val_acc_history[-1] > 0.9


@pytest.mark.parametrize("rule", ["sgd", "sgd_momentum", "nesterov", "rmsprop", "adagrad",
                                  "adam", "adamw"])
def test_every_update_rule_lowers_the_loss(rule):
    lr = {"sgd": 0.2, "sgd_momentum": 0.1, "nesterov": 0.1, "adagrad": 0.1}.get(rule, 0.01)
    solver = _solver(epochs=3, update_rule=rule, optim_config={"learning_rate": lr})
    solver.train()
    first, last = numpy.mean(solver.loss_history[:3]), numpy.mean(solver.loss_history[-3:])
    assert last < 0.7 * first, (rule, first, last)


def test_minpy_style_function_update_rule():
    def plain_sgd(w, dw, config):
        return w - config["learning_rate"] * dw, config
    solver = _solver(update_rule=plain_sgd, optim_config={"learning_rate": 0.2})
    solver.train()
    assert solver.val_acc_history[-1] > 0.9


def test_same_seed_same_run_and_lr_decay():
    a, b = _solver(lr_decay=0.5), _solver(lr_decay=0.5)
    a.train(), b.train()
    assert a.loss_history == b.loss_history
    assert a.optimizer.learning_rate == pytest.approx(0.1 * 0.5 ** 3)


def test_keep_best_restores_best_validation_params():
    solver = _solver(epochs=3, keep_best=True)
    solver.train()
    assert solver.best_val_acc == max(solver.val_acc_history)
    for k, v in solver.best_params.items():
        numpy.testing.assert_array_equal(host(solver.model.params[k]), v)


def test_callbacks_and_early_stop():
    seen = []

    class Stopper(Callback):
        def on_batch_end(self, solver, info):
            seen.append(("batch", info["step"]))

        def on_epoch_end(self, solver, info):
            seen.append(("epoch", info["epoch"]))
            if info["epoch"] == 2:
                raise StopTraining
    solver = _solver(epochs=5, callbacks=[Stopper()],
                     epoch_end_callback=lambda s, info: seen.append(("fn", info["epoch"])))
    solver.train()
    assert solver.epoch == 2
    assert [e for e in seen if e[0] == "epoch"] == [("epoch", 1), ("epoch", 2)]
    assert ("fn", 1) in seen and ("batch", 12) in seen


class Exploding(MLP):
    def loss(self, predict, y):
        return layers.softmax_loss(predict, y) * mp.array(numpy.float32(numpy.inf))


def test_nonfinite_loss_stops_with_the_step_named():
    solver = _solver(model=Exploding())
    solver.init()
    before = {k: host(v).copy() for k, v in solver.model.params.items()}
    with pytest.raises(FloatingPointError, match=r"loss is (inf|nan) at epoch 1, batch 0 \(step 0\)"):
        solver.train()
    for k, v in solver.model.params.items():     # the bad step was not applied
        numpy.testing.assert_array_equal(host(v), before[k])


def test_nonfinite_loss_can_be_skipped():
    solver = _solver(model=Exploding(), epochs=1, on_nonfinite="skip")
    solver.train()
    assert solver.skipped_steps == 6


def test_progress_bar_shows_loss_and_rate(capsys):
    pytest.importorskip("tqdm")
    solver = _solver(epochs=1, progress=True, verbose=True)
    solver.train()
    err = capsys.readouterr().err
    assert "epoch 1/1" in err and "samples_per_s" in err and "loss" in err


def test_plain_printing_without_a_bar(capsys):
    solver = _solver(epochs=1, progress=False, verbose=True, print_every=2)
    solver.train()
    out = capsys.readouterr().out
    assert "(Iteration 1) loss:" in out and "(Epoch 1 / 1) train acc:" in out


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    solver = _solver(epochs=2)
    solver.train()
    path = solver.plot(str(tmp_path / "curves.png"))
    blob = open(path, "rb").read()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n" and len(blob) > 5000


def test_bad_arguments_are_refused():
    train, test = _iters()
    with pytest.raises(ValueError, match="update_rule"):
        Solver(MLP(), train, test, update_rule="sgdd")
    with pytest.raises(ValueError, match="task_type"):
        Solver(MLP(), train, test, task_type="ranking")
    with pytest.raises(ValueError, match="init_rule"):
        Solver(MLP(), train, test, init_rule="nope").init()


# ---------------------------------------------------------------- checkpoints and resume
class BNDropoutNet(ModelBase):
    """affine - batchnorm - relu - dropout - affine: aux state and randomness in the step."""

    def __init__(self, d=6, hidden=16, classes=3):
        super().__init__()
        self.add_param("w1", (d, hidden)).add_param("b1", (hidden,)) \
            .add_param("gamma", (hidden,), init_rule="constant", init_config={"value": 1.0}) \
            .add_param("beta", (hidden,), init_rule="constant", init_config={"value": 0.0}) \
            .add_param("w2", (hidden, classes)).add_param("b2", (classes,))
        self.add_aux_param("running_mean", mp.zeros(hidden, dtype=numpy.float32)) \
            .add_aux_param("running_var", mp.ones(hidden, dtype=numpy.float32))

    def forward(self, X, mode):
        p, aux = self.params, self.aux_params
        h = layers.affine(X, p["w1"], p["b1"])
        h, aux["running_mean"], aux["running_var"] = layers.batchnorm(
            h, p["gamma"], p["beta"], mode=mode, running_mean=aux["running_mean"],
            running_var=aux["running_var"])
        h = layers.dropout(layers.relu(h), 0.3, mode=mode)
        return layers.affine(h, p["w2"], p["b2"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def _resumable(ckpt_dir, epochs=3, rule="adam"):
    return _solver(model=BNDropoutNet(), epochs=epochs, update_rule=rule,
                   optim_config={"learning_rate": 0.01}, checkpoint_dir=ckpt_dir,
                   lr_decay=0.9)


def _params(solver):
    return {k: host(v).copy() for k, v in solver.model.params.items()} | \
        {k: host(v).copy() for k, v in solver.model.aux_params.items()}


@pytest.mark.parametrize("rule", ["adam", "sgd_momentum"])
def test_resume_after_interruption_is_bit_identical(tmp_path, rule):
    mp.random.seed(11)
    full = _resumable(str(tmp_path / "full"), rule=rule)
    full.train()
    expected = _params(full)

    class Kill(Callback):
        def on_epoch_end(self, solver, info):
            if info["epoch"] == 1:
                raise StopTraining
    mp.random.seed(11)
    first = _resumable(str(tmp_path / "cut"), rule=rule)
    first.callbacks.append(Kill())
    first.train()
    assert first.epoch == 1
    numpy.random.seed(999)             # the interruption disturbs the global state
    second = _resumable(str(tmp_path / "cut"), rule=rule)
    second.resume(str(tmp_path / "cut"))
    assert second.epoch == 3
    got = _params(second)
    for k in expected:
        numpy.testing.assert_array_equal(got[k], expected[k], err_msg=k)
    assert second.loss_history == full.loss_history


def test_killed_process_resumes_bit_identical(tmp_path):
    """SIGKILL a training process after its first checkpoint; a new process finishes the run."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time, numpy
        sys.path[:0] = [{os.path.dirname(os.path.abspath(__file__))!r},
                        {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r}]
        import minpy as mp
        from minpy.nn.solver import Callback
        from test_solver import _resumable, _params
        mode, ckpt, out = sys.argv[1:4]
        mp.random.seed(11)
        solver = _resumable(ckpt)

        class Slow(Callback):
            def on_epoch_end(self, solver, info):
                if mode == "killme" and info["epoch"] == 1:
                    print("CHECKPOINTED", flush=True)
                    time.sleep(60)
        solver.callbacks.append(Slow())
        if mode == "resume":
            solver.resume(ckpt)
        else:
            solver.train()
        numpy.savez(out, **_params(solver))
    """))
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT))
    run = [sys.executable, str(script)]
    subprocess.run(run + ["full", str(tmp_path / "full"), str(tmp_path / "full.npz")],
                   check=True, env=env, timeout=300)
    victim = subprocess.Popen(run + ["killme", str(tmp_path / "cut"), str(tmp_path / "x.npz")],
                              env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert victim.stdout.readline().strip() == "CHECKPOINTED"
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
    subprocess.run(run + ["resume", str(tmp_path / "cut"), str(tmp_path / "resumed.npz")],
                   check=True, env=env, timeout=300)
    full, resumed = numpy.load(tmp_path / "full.npz"), numpy.load(tmp_path / "resumed.npz")
    assert sorted(full.files) == sorted(resumed.files)
    for k in full.files:
        numpy.testing.assert_array_equal(resumed[k], full[k], err_msg=k)


def test_corrupt_checkpoint_is_refused_and_the_good_one_kept(tmp_path):
    ckpt = tmp_path / "ck"
    solver = _resumable(str(ckpt), epochs=2)
    solver.train()
    files = sorted(os.listdir(ckpt))
    assert files == ["checkpoint-0001.minpy", "checkpoint-0002.minpy"]
    good = (ckpt / files[0]).read_bytes()
    newest = ckpt / files[1]
    newest.write_bytes(newest.read_bytes()[:100])           # truncated on disk
    with pytest.raises(CheckpointError, match="truncated"):
        _resumable(str(ckpt)).load_checkpoint(str(ckpt))
    assert (ckpt / files[0]).read_bytes() == good
    restored = _resumable(str(ckpt))
    restored.load_checkpoint(str(ckpt / files[0]))
    assert restored.epoch == 1


def test_checkpoints_are_pruned(tmp_path):
    solver = _resumable(str(tmp_path), epochs=3)
    solver.keep_checkpoints = 1
    solver.train()
    assert os.listdir(tmp_path) == ["checkpoint-0003.minpy"]


# ---------------------------------------------------------------- models
def test_model_save_and_load_params(tmp_path):
    solver = _solver(epochs=1)
    solver.train()
    path = str(tmp_path / "m.params")
    solver.model.save_params(path)
    fresh = MLP()
    fresh.load_params(path)
    for k, v in solver.model.params.items():
        numpy.testing.assert_array_equal(host(fresh.params[k]), host(v))
    other = MLP(hidden=8)
    with pytest.raises(ValueError, match=r"'w1' has shape \(6, 16\).*declares \(6, 8\)"):
        other.load_params(path)


def test_model_loss_and_grad_matches_grad_and_loss():
    model = MLP()
    solver = _solver(model=model)
    solver.init()
    x, y = _blobs(n=16)
    loss, grads = model.loss_and_grad(mp.array(x), mp.array(y))

    def f(params):
        return layers.softmax_loss(MLP.forward(_with(model, params), mp.array(x), "train"),
                                   mp.array(y))
    expected, expected_loss = mp.grad_and_loss(f)(model.params)
    assert float(loss) == pytest.approx(float(expected_loss))
    for k in grads:
        numpy.testing.assert_allclose(host(grads[k]), host(expected[k]),
                                      rtol=1e-6)


def _with(model, params):
    clone = MLP()
    clone.params = params
    return clone


def test_add_param_errors():
    m = ModelBase().add_param("w", (2, 3))
    with pytest.raises(ValueError, match="duplicate parameter name 'w'"):
        m.add_param("w", (2, 3))
    with pytest.raises(TypeError, match="shape must be a tuple of ints"):
        m.add_param("v", "big")


def test_symbol_model_trains():
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=16, name="fc1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.FullyConnected(net, num_hidden=3, name="fc2")
    model = SymbolModel(net, {"data": (32, 6)}, loss=layers.softmax_loss)
    assert model.param_configs["fc1_weight"]["shape"] == (16, 6)
    solver = _solver(model=model, epochs=4, init_rule="xavier")
    solver.train()
    assert solver.val_acc_history[-1] > 0.9


def test_prefetching_iterator_trains_identically():
    """prefetch=2 prepares batches on a thread; the run is bit-identical to prefetch=0."""
    runs = []
    for prefetch in (0, 2):
        mp.random.seed(1)
        train, test = _iters(prefetch=prefetch)
        solver = Solver(BNDropoutNet(), train, test, num_epochs=2, update_rule="adam",
                        optim_config={"learning_rate": 0.01}, verbose=False, seed=7)
        solver.train()
        runs.append(solver)
    assert runs[0].loss_history == runs[1].loss_history
    for k, v in runs[0].model.params.items():
        numpy.testing.assert_array_equal(host(runs[1].model.params[k]), host(v))
