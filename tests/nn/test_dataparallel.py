"""Data parallelism in the training stack: iterator parts (num_parts/part_index) and
the Solver over several contexts and workers (ctx=, kvstore=), each checked against
an independent single-process, single-context run of the same training."""
import importlib.util
import os
import re
import subprocess
import sys
import types

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import minpy
import minpy as mp
from minpy.kvstore import KVStore
from minpy.nn import checkpoint, layers, optim, parallel
from minpy.nn.io import readers
from minpy.nn.io import DataBatch, DataIter, NDArrayIter
from minpy.nn.model import ModelBase, SymbolModel
from minpy.nn.solver import Callback, Solver, StopTraining
import minpy.symbol as sym

from _jobs import MPIEXEC, run_mpi
from _standin import installed           # the strict stand-in GPU of the dispatch tests
from test_io import _epochs

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
EXAMPLE = os.path.join(ROOT, "examples", "train_dist.py")
HANDLES = ("pad", "discard", "roll_over")


# ---------------------------------------------------------------------- iterator parts
def _dataset(n):
    """Sample i holds the value i, so a batch shows which samples it gathered."""
    return numpy.repeat(numpy.arange(n, dtype=numpy.float32)[:, None], 2, axis=1), \
        numpy.arange(n) * 10



parts_of = st.integers(1, 5).flatmap(lambda k: st.tuples(st.just(k), st.integers(0, k - 1)))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), parts=parts_of, batch_size=st.integers(1, 7),
       handle=st.sampled_from(HANDLES), shuffle=st.booleans(), seed=st.integers(0, 50))
def test_each_part_iterates_like_an_iterator_over_its_slice(n, parts, batch_size, handle,
                                                            shuffle, seed):
    k, p = parts
    if k > n:
        with pytest.raises(ValueError, match=rf"num_parts={k} parts of {n} samples would "
                                             rf"leave some parts empty \(part_index={p}\)"):
            NDArrayIter(*_dataset(n), num_parts=k, part_index=p)
        return
    lo, hi = n * p // k, n * (p + 1) // k
    if handle != "pad" and hi - lo < batch_size:
        return
    x, y = _dataset(n)
    kw = dict(batch_size=batch_size, shuffle=shuffle, last_batch_handle=handle, seed=seed)
    part = NDArrayIter(x, y, num_parts=k, part_index=p, **kw)
    alone = NDArrayIter(x[lo:hi], y[lo:hi], **kw)
    assert part.num_data == hi - lo and part.getnumiterations() == alone.getnumiterations()
    got, want = _epochs(part, 3), _epochs(alone, 3)
    assert [len(e) for e in got] == [len(e) for e in want]
    for eg, ew in zip(got, want):
        for (xg, yg, pg, ig), (xw, yw, pw, iw) in zip(eg, ew):
            numpy.testing.assert_array_equal(xg, xw)
            numpy.testing.assert_array_equal(yg, yw)
            numpy.testing.assert_array_equal(ig, iw + lo)     # indices into the whole data
            assert pg == pw


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(1, 6), batch_size=st.integers(1, 7),
       shuffle=st.booleans())
def test_parts_are_disjoint_cover_the_data_and_differ_by_one_sample(n, k, batch_size, shuffle):
    if k > n:
        return
    seen, sizes = [], []
    for p in range(k):
        it = NDArrayIter(*_dataset(n), batch_size=batch_size, num_parts=k, part_index=p,
                         shuffle=shuffle, seed=p)
        sizes.append(it.num_data)
        mine = [i for b in it for i in b.index[:batch_size - b.pad].tolist()]
        assert sorted(mine) == list(range(n * p // k, n * (p + 1) // k))   # contiguous
        seen.extend(mine)
    assert sorted(seen) == list(range(n))            # disjoint, and every sample once
    assert max(sizes) - min(sizes) <= 1


def test_discard_drops_each_parts_own_remainder():
    x, y = _dataset(23)                               # parts of 7, 8, 8 samples
    kept = []
    for p in range(3):
        it = NDArrayIter(x, y, batch_size=3, num_parts=3, part_index=p,
                         last_batch_handle="discard")
        kept.append([i for b in it for i in b.index.tolist()])
    assert kept == [[0, 1, 2, 3, 4, 5], [7, 8, 9, 10, 11, 12], [15, 16, 17, 18, 19, 20]]


@pytest.mark.parametrize("kwargs,error,match", [
    ({"num_parts": 0}, ValueError, "NDArrayIter: num_parts must be >= 1, got 0"),
    ({"num_parts": 2.0}, TypeError, "NDArrayIter: num_parts must be an int"),
    ({"num_parts": 3, "part_index": 3}, ValueError, "part_index must be < num_parts=3, got 3"),
    ({"part_index": -1}, ValueError, "NDArrayIter: part_index must be >= 0"),
    ({"num_parts": 6, "part_index": 1}, ValueError,
     r"NDArrayIter: num_parts=6 parts of 5 samples would leave some parts empty "
     r"\(part_index=1\); use num_parts <= 5"),
])
def test_bad_parts_are_refused_naming_them(kwargs, error, match):
    with pytest.raises(error, match=match):
        NDArrayIter(*_dataset(5), **kwargs)


# ---------------------------------------------------------------------- the Solver
def _blobs(n=180, d=6, classes=3, seed=0):
    rng = numpy.random.default_rng(seed)
    centers = rng.normal(0, 3, size=(classes, d))
    y = rng.integers(0, classes, n)
    x = (centers[y] + rng.normal(0, 1, size=(n, d))).astype(numpy.float32)
    return x, y.astype(numpy.int64)


class MLP(ModelBase):
    def __init__(self, d=6, hidden=16, classes=3):
        super().__init__()
        self.add_param("w1", (d, hidden)).add_param("b1", (hidden,)) \
            .add_param("w2", (hidden, classes)).add_param("b2", (classes,))

    def forward(self, X, mode):
        h = layers.relu(layers.affine(X, self.params["w1"], self.params["b1"]))
        return layers.affine(h, self.params["w2"], self.params["b2"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


class Exploding(MLP):
    def loss(self, predict, y):
        return layers.softmax_loss(predict, y) * mp.array(numpy.float32(numpy.inf))


def _solver(epochs=2, batch=32, model=None, train=None, **kw):
    x, y = _blobs()
    if train is None:
        train = NDArrayIter(x[:150], y[:150], batch_size=batch, shuffle=True, seed=3)
    test = NDArrayIter(x[150:], y[150:], batch_size=batch)
    options = dict(num_epochs=epochs, init_rule="gaussian", init_config={"stdvar": 0.3},
                   update_rule="sgd", optim_config={"learning_rate": 0.2}, verbose=False,
                   seed=7, keep_best=False)
    options.update(kw)
    return Solver(model or MLP(), train, test, **options)


def _params(solver):
    return {k: v.asnumpy().copy() for k, v in solver.model.params.items()}


def _trained(**kw):
    solver = _solver(**kw)
    solver.train()
    return solver


def _assert_same_training(got, want, rtol=2e-5, atol=2e-6):
    """Same parameters (to float rounding: the parts' sums are added in another
    order) and the same losses; and the training did move the parameters."""
    for k, v in _params(want).items():
        numpy.testing.assert_allclose(_params(got)[k], v, rtol=rtol, atol=atol, err_msg=k)
    numpy.testing.assert_allclose(got.loss_history, want.loss_history, rtol=1e-5)
    assert got.step_count == want.step_count > 0
    fresh = _solver()
    fresh.init()
    assert max(numpy.abs(_params(got)[k] - v).max() for k, v in _params(fresh).items()) > 1e-2


CPUS = {2: [mp.cpu(0), mp.cpu(1)], 3: [mp.cpu(0), mp.cpu(1), mp.cpu(2)]}
RULES = {"sgd": {"learning_rate": 0.2}, "adam": {"learning_rate": 0.02}}


@pytest.mark.parametrize("kind", ["device", "local"])
@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("contexts", [2, 3])
def test_contexts_train_like_one_context_on_the_whole_batches(kind, rule, contexts):
    """3 contexts split a batch of 32 into 10 + 11 + 11 samples, the padded last
    batch of each epoch too: the weighting by each part's share is exercised."""
    want = _trained(update_rule=rule, optim_config=RULES[rule])
    got = _trained(update_rule=rule, optim_config=RULES[rule], ctx=CPUS[contexts],
                   kvstore=kind)
    assert got.kvstore.type == kind and got.kvstore.num_workers == 1
    _assert_same_training(got, want)
    assert got.optimizer.num_update == want.optimizer.num_update == got.step_count


@pytest.mark.parametrize("rule", ["adam", optim.adam], ids=["named rule", "minpy function"])
def test_async_mode_trains_alike(rule):
    """In async mode pushes and pulls return at once: each step must still start
    from the values the last one pulled."""
    want = _trained(update_rule=rule, optim_config=RULES["adam"])
    with mp.async_mode():
        got = _trained(update_rule=rule, optim_config=RULES["adam"], ctx=CPUS[2])
        state = got.state_dict()
    _assert_same_training(got, want)
    if got.optimizer is not None:
        assert all(s["t"] == got.step_count for s in state["optimizer"]["state"].values())


def test_several_contexts_use_the_device_kvstore_by_default_and_one_context_none():
    assert _solver(ctx=CPUS[2]).kvstore.type == "device"
    assert _solver(ctx=mp.cpu(0)).kvstore is None
    assert _solver(ctx=[mp.cpu(0)]).kvstore is None
    assert _solver().kvstore is None and _solver().ctx is None


def test_a_kvstore_object_and_no_ctx_train_like_no_kvstore():
    kv = minpy.kvstore.create("local")
    want = _trained(update_rule="adam", optim_config=RULES["adam"])
    got = _solver(update_rule="adam", optim_config=RULES["adam"], kvstore=kv)
    own = got.model.params
    got.train()
    assert got.kvstore is kv and got.model.params is own      # updated in place
    _assert_same_training(got, want)
    out = mp.zeros_like(got.model.params["w1"])
    kv.pull("w1", out=out)                                     # the store holds them too
    numpy.testing.assert_array_equal(out.asnumpy(), _params(got)["w1"])


def test_minpy_style_update_rule_runs_in_the_kvstore():
    config = {"learning_rate": 0.1, "momentum": 0.9}
    want = _trained(update_rule=optim.sgd_momentum, optim_config=config)
    got = _trained(update_rule=optim.sgd_momentum, optim_config=config, ctx=CPUS[2],
                   kvstore="local")
    _assert_same_training(got, want)
    for k in want.optim_configs:             # the rule's state lives in the Solver's configs
        numpy.testing.assert_allclose(got.optim_configs[k]["velocity"].asnumpy(),
                                      want.optim_configs[k]["velocity"].asnumpy(),
                                      rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("rule", ["adam", optim.sgd_momentum], ids=["adam", "minpy function"])
def test_learning_rate_decay_reaches_the_optimizer_in_the_kvstore(rule):
    config = {"learning_rate": 0.05}
    want = _trained(epochs=3, update_rule=rule, optim_config=config, lr_decay=0.3)
    got = _trained(epochs=3, update_rule=rule, optim_config=config, lr_decay=0.3,
                   ctx=CPUS[2], kvstore="device")
    undecayed = _trained(epochs=3, update_rule=rule, optim_config=config, ctx=CPUS[2],
                         kvstore="device")
    _assert_same_training(got, want)
    gap = max(numpy.abs(_params(got)[k] - v).max() for k, v in _params(undecayed).items())
    assert gap > 1e-3                        # the decay changed the training
    if got.optimizer is not None:
        assert got.optimizer.learning_rate == pytest.approx(0.05 * 0.3 ** 3)
    else:
        assert got.optim_configs["w1"]["learning_rate"] == pytest.approx(0.05 * 0.3 ** 3)


# ---------------------------------------------------------------------- devices
def test_two_standin_gpus_train_like_one_cpu():
    want = _trained(update_rule="adam", optim_config=RULES["adam"])
    with installed() as gpu:
        got = _trained(update_rule="adam", optim_config=RULES["adam"],
                       ctx=[mp.gpu(0), mp.gpu(1)])
        assert got.kvstore.type == "device"
        assert {v.context for v in got.model.params.values()} == {mp.gpu(0)}
        assert 1 in gpu.devices_entered and gpu.calls["matmul"] > 0
        _assert_same_training(got, want)


def test_one_standin_gpu_context_keeps_the_solvers_own_optimizer():
    want = _trained(update_rule="adam", optim_config=RULES["adam"])
    with installed() as gpu:
        got = _trained(update_rule="adam", optim_config=RULES["adam"], ctx=mp.gpu(1))
        assert got.kvstore is None
        assert {v.context for v in got.model.params.values()} == {mp.gpu(1)}
        assert set(gpu.devices_entered) == {1}
        _assert_same_training(got, want)


def test_symbol_model_with_batchnorm_trains_over_two_contexts():
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=16, name="fc1")
    net = sym.BatchNorm(net, name="bn1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.FullyConnected(net, num_hidden=3, name="fc2")
    model = SymbolModel(net, {"data": (32, 6)}, loss=layers.softmax_loss)
    solver = _trained(model=model, epochs=4, init_rule="xavier", ctx=CPUS[2],
                      update_rule="adam", optim_config=RULES["adam"])
    assert solver.val_acc_history[-1] > 0.9


# ---------------------------------------------------------------------- workers
class TwoWorkers(KVStore):
    """A local store posing as one of two workers whose twin pushes the same
    gradients: every push counts twice, as dist_sync's allreduce would sum them."""

    def __init__(self, rank=0, kind="local"):
        super().__init__(kind)
        self._rank = rank

    rank = property(lambda self: self._rank)
    num_workers = property(lambda self: 2)

    def push(self, key, value, priority=0):
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        super().push(key, values * 2, priority)


@pytest.mark.parametrize("contexts", [None, CPUS[2]])
def test_each_workers_gradient_is_scaled_so_two_workers_equal_one_process(contexts):
    want = _trained(update_rule="sgd_momentum", optim_config={"learning_rate": 0.1})
    got = _trained(update_rule="sgd_momentum", optim_config={"learning_rate": 0.1},
                   kvstore=TwoWorkers(), ctx=contexts)      # (not Adam: blind to a scale)
    _assert_same_training(got, want)


def test_workers_with_different_batch_counts_are_refused_naming_both():
    class Rank0HasMore(TwoWorkers):
        def init(self, key, value):
            if key == parallel.AGREE_KEY:                  # rank 0's counts, broadcast
                value = mp.array(numpy.array([7, 32], numpy.int64))
            super().init(key, value)
    solver = _solver(kvstore=Rank0HasMore(rank=1))
    with pytest.raises(ValueError, match=r"worker 1 has 5 batches of 32 samples per epoch, "
                                         r"but worker 0 has 7 batches of 32.*num_parts="):
        solver.train()


def test_only_rank_0_prints_and_writes_checkpoints(tmp_path, capsys):
    for rank in (1, 0):
        solver = _solver(kvstore=TwoWorkers(rank), verbose=True, progress=False,
                         checkpoint_dir=str(tmp_path / f"rank{rank}"))
        assert solver.is_chief == (rank == 0)
        solver.train()
        out = capsys.readouterr().out
        if rank:
            assert out == "" and not (tmp_path / "rank1").exists()
        else:
            assert "(Epoch 2 / 2)" in out and len(os.listdir(tmp_path / "rank0")) == 2


@pytest.mark.parametrize("rule", ["sgd", optim.sgd], ids=["named rule", "minpy function"])
@pytest.mark.parametrize("kv", ["local", "two workers"])
def test_nonfinite_losses_are_skipped_on_every_worker(kv, rule):
    store = TwoWorkers() if kv == "two workers" else kv
    solver = _solver(model=Exploding(), epochs=1, ctx=CPUS[2], kvstore=store, update_rule=rule,
                     on_nonfinite="skip")
    solver.init()
    before = _params(solver)
    solver.train()
    assert solver.skipped_steps == solver.step_count == 5
    for k, v in _params(solver).items():
        numpy.testing.assert_array_equal(v, before[k])


def test_nonfinite_loss_raises_before_the_update():
    solver = _solver(model=Exploding(), ctx=CPUS[2])
    solver.init()
    before = _params(solver)
    with pytest.raises(FloatingPointError, match=r"loss is (inf|nan) at epoch 1, batch 0"):
        solver.train()
    for k, v in _params(solver).items():
        numpy.testing.assert_array_equal(v, before[k])
    two = _solver(model=Exploding(), kvstore=TwoWorkers(rank=1))
    with pytest.raises(FloatingPointError, match=r"batch 0 \(step 0\) on worker 1"):
        two.train()


# ---------------------------------------------------------------------- state
def test_resume_with_a_kvstore_is_bit_identical_and_the_checkpoint_is_shared(tmp_path):
    def run(ckpt, **kw):
        return _solver(epochs=3, update_rule="adam", optim_config=RULES["adam"], lr_decay=0.5,
                       checkpoint_dir=str(ckpt), keep_checkpoints=0, **kw)
    full = run(tmp_path / "full", ctx=CPUS[2])
    full.train()

    class Kill(Callback):
        def on_epoch_end(self, solver, info):
            if info["epoch"] == 1:
                raise StopTraining
    first = run(tmp_path / "cut", ctx=CPUS[2], callbacks=[Kill()])
    first.train()
    assert first.epoch == 1
    second = run(tmp_path / "cut", ctx=CPUS[2])
    second.resume(str(tmp_path / "cut"))
    assert second.epoch == 3 and second.loss_history == full.loss_history
    for k, v in _params(full).items():
        numpy.testing.assert_array_equal(_params(second)[k], v, err_msg=k)
    alone = run(tmp_path / "cut2")                 # the same checkpoint, one context
    alone.load_checkpoint(str(tmp_path / "cut" / "checkpoint-0001.minpy"))
    alone.train()
    for k, v in _params(full).items():
        numpy.testing.assert_allclose(_params(alone)[k], v, rtol=2e-5, atol=2e-6, err_msg=k)


def test_parameters_set_between_runs_reach_every_replica_and_the_store():
    """A second train() after set_params (or keep_best) starts from the model's
    parameters: the store and every replica take them."""
    runs = []
    for kw in ({}, {"ctx": CPUS[2], "kvstore": "device"}):
        solver = _solver(update_rule="sgd_momentum", optim_config={"learning_rate": 0.1}, **kw)
        solver.init()
        start = _params(solver)
        solver.train()
        solver.model.set_params({k: v * 0.5 for k, v in start.items()})
        solver.num_epochs = 3
        solver.train()
        runs.append(solver)
    _assert_same_training(runs[1], runs[0])


def test_keep_best_with_a_kvstore_ends_with_the_best_parameters():
    solver = _trained(epochs=3, ctx=CPUS[2], keep_best=True)
    assert solver.best_val_acc == max(solver.val_acc_history)
    for k, v in solver.best_params.items():
        numpy.testing.assert_array_equal(_params(solver)[k], v)


# ---------------------------------------------------------------------- errors
class ServerSide(KVStore):
    """A store whose optimizer would run elsewhere (as dist_async's servers)."""

    def __init__(self):
        super().__init__("local")
        self.type = "dist_async"


@pytest.mark.parametrize("kwargs,error,match", [
    ({"ctx": []}, ValueError, r"Solver: ctx is an empty list"),
    ({"ctx": [mp.cpu(0), "gpu(1)"]}, TypeError,
     r"Solver: ctx\[1\] must be a Context \(minpy.cpu\(i\) or minpy.gpu\(i\)\), got 'gpu\(1\)'"),
    ({"ctx": "cpu"}, TypeError, r"Solver: ctx must be None, a Context or a list of Contexts"),
    ({"kvstore": "dist_sink"}, ValueError,
     r"Solver: unknown kvstore kind 'dist_sink'; expected one of \('local', 'device', "),
    ({"kvstore": 3}, TypeError, r"Solver: kvstore must be None, a kind name .* got int"),
    ({"kvstore": "local", "optim_config": {"clip_norm": 1.0}}, ValueError,
     r"clip_norm .* cannot be used with a kvstore"),
    ({"ctx": CPUS[2], "optim_config": {"clip_norm": 1.0}}, ValueError, r"clip_norm"),
    ({"kvstore": ServerSide(), "lr_decay": 0.5}, ValueError,
     r"lr_decay cannot reach the optimizer of a 'dist_async' kvstore"),
])
def test_bad_data_parallel_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        _solver(**kwargs)


def test_a_batch_smaller_than_the_contexts_is_refused_naming_both():
    solver = _solver(batch=2, ctx=CPUS[3])
    with pytest.raises(ValueError, match=r"a batch of 2 samples cannot be split over the 3 "
                                         r"contexts .*use a batch_size of at least 3"):
        solver.train()


# ---------------------------------------------------------------------- the example
def _load_example(monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(EXAMPLE))
    spec = importlib.util.spec_from_file_location("train_dist", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_train_dist_example_alone_reads_a_plain_path_without_fsspec(monkeypatch, capsys):
    mod = _load_example(monkeypatch)
    monkeypatch.setattr(mod, "world_size", lambda: 1)             # no MPI in this process
    monkeypatch.setattr(readers, "_import_fsspec", lambda: None)  # as if not installed ...
    monkeypatch.setattr(mod, "importlib", types.SimpleNamespace(     # ... for the example too
        util=types.SimpleNamespace(find_spec=lambda name: None)))
    assert mod.default_url() == mod.DIGITS
    assert mod.main(["--quick"]) > 0.9
    out = capsys.readouterr().out
    assert "1 worker(s), kvstore None, 1437 training samples" in out and "(Epoch 3 / 3)" in out


# ---------------------------------------------------------------------- a real MPI job
def _final_accuracy(stdout):
    found = re.findall(r"final test accuracy ([0-9.]+)", stdout)
    assert len(found) == 1, stdout                # rank 0 alone prints it
    return float(found[0])


class Concatenated(DataIter):
    """One process's view of a 2-worker step: the workers' batches, concatenated."""

    def __init__(self, parts):
        super().__init__(sum(p.batch_size for p in parts))
        self.parts = parts

    def reset(self):
        for p in self.parts:
            p.reset()

    def next(self):
        batches = [p.next() for p in self.parts]
        return DataBatch([mp.concatenate([b.data[0] for b in batches])],
                         [mp.concatenate([b.label[0] for b in batches])])


def _one_process_reference(example, epochs):
    """The example's training, in this process, on the 2 workers' batches concatenated."""
    (x, y), (xt, yt) = example.split_digits(readers.load_npz(example.DIGITS))
    parts = [NDArrayIter(x, y, batch_size=32, shuffle=True, seed=0, last_batch_handle="discard",
                         num_parts=2, part_index=p) for p in range(2)]
    solver = Solver(example.TwoLayerNet(), Concatenated(parts), None, num_epochs=epochs,
                    init_rule="gaussian", init_config={"stdvar": 0.1}, seed=42,
                    update_rule="sgd_momentum", optim_config={"learning_rate": 0.1,
                                                              "momentum": 0.9},
                    keep_best=False, verbose=False)
    solver.train()
    return _params(solver)


def test_train_dist_example_on_two_mpi_workers_learns_as_one_process(tmp_path, monkeypatch):
    if MPIEXEC is None or importlib.util.find_spec("mpi4py") is None:
        pytest.skip("dist_sync needs an MPI and mpi4py: pip install mpi4py mpich")
    job = run_mpi(MPIEXEC, 2, EXAMPLE, "--quick", "--save", "dist.params", timeout=60,
                  env={"MINPY_KVSTORE_SERVERS": "0"}, cwd=str(tmp_path))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    assert job.returncode == 0, job.stderr[-3000:]
    assert "2 worker(s), kvstore dist_sync" in job.stdout
    assert job.stdout.count("(Epoch 3 / 3)") == 1, job.stdout     # rank 0 alone prints
    alone = subprocess.run([sys.executable, EXAMPLE, "--quick"], env=env, capture_output=True,
                           text=True, timeout=60, cwd=str(tmp_path))
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "1 worker(s), kvstore None" in alone.stdout
    dist, single = _final_accuracy(job.stdout), _final_accuracy(alone.stdout)
    assert single > 0.9 and dist >= single - 0.03, (dist, single)
    # each update of the job equals one process's on both workers' batches together
    got = checkpoint.load(str(tmp_path / "dist.params"))["params"]
    want = _one_process_reference(_load_example(monkeypatch), epochs=3)
    for k, v in want.items():
        numpy.testing.assert_allclose(got[k], v, rtol=1e-4, atol=1e-5, err_msg=k)
