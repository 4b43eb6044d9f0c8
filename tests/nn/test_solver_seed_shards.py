"""``Solver(seed=)`` seeding a SymbolModel's Dropout, and a distributed Solver sharding the
arrays it is given (each worker a disjoint part, as an iterator's num_parts/part_index)."""
import os

import numpy
import pytest

import minpy as mp
from minpy import symbol as sym
from minpy.nn import layers
from minpy.nn.model import SymbolModel
from minpy.nn.solver import SYMBOL_DROPOUT, Solver, shard_for
from _host import host
from _jobs import MPIEXEC, needs_mpi, run_mpi


def _blobs(n=128, d=6, classes=3, seed=0):
    rng = numpy.random.default_rng(seed)
    centers = rng.normal(0, 3, size=(classes, d))
    y = rng.integers(0, classes, n)
    return (centers[y] + rng.normal(0, 1, size=(n, d))).astype(numpy.float32), y


# ---------------------------------------------------------------- seed and symbol Dropout
def _symbol_solver(seed, epochs, data=None):
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=16, name="fc1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.Dropout(net, p=0.5, name="drop1")
    net = sym.FullyConnected(net, num_hidden=3, name="fc2")
    model = SymbolModel(net, {"data": (16, 6)}, loss=layers.softmax_loss)
    x, y = _blobs()
    if data is None:
        data = (x, y)
    return Solver(model, data, batch_size=16 if isinstance(data, tuple) else None,
                  num_epochs=epochs, verbose=False, seed=seed,
                  optim_config={"learning_rate": 0.1}, keep_best=False)


def _symbol_run(seed, epochs=2):
    solver = _symbol_solver(seed, epochs)
    return {k: host(v) for k, v in solver.train().model.params.items()}


def test_the_seed_reproduces_a_symbol_models_dropout():
    # the executors' generators are shared: other draws in between must not matter
    first = _symbol_run(seed=3)
    mp.symbol.seed(123)
    numpy.random.seed(9)
    second = _symbol_run(seed=3)
    assert first.keys() == second.keys()
    for k in first:
        numpy.testing.assert_array_equal(first[k], second[k], err_msg=k)


def test_another_seed_drops_other_units():
    """Same initial parameters and batches (an unshuffled iterator): only the masks can
    make two seeds differ, and they do; the same seed again gives the same run."""
    x, y = _blobs()

    def run(seed):
        solver = _symbol_solver(seed, 1, data=mp.nn.io.NDArrayIter(x, y, batch_size=16))
        solver.model.params = {k: mp.full(c["shape"], 0.1, dtype=numpy.float32)
                               for k, c in solver.model.param_configs.items()}
        return {k: host(v) for k, v in solver.train().model.params.items()}

    a, b, again = run(3), run(4), run(3)
    assert any(not numpy.array_equal(a[k], b[k]) for k in a)
    for k in a:
        numpy.testing.assert_array_equal(a[k], again[k], err_msg=k)


def test_a_resumed_run_draws_the_same_masks(tmp_path):
    """Symbol Dropout is reseeded per epoch from (seed, epoch, rank): one epoch, a
    checkpoint, a new Solver resuming it, equals two epochs in one go."""
    whole = _symbol_run(seed=3, epochs=2)
    solver = _symbol_solver(seed=3, epochs=1)
    solver.train()
    solver.save_checkpoint(str(tmp_path / "ckpt.minpy"))
    mp.symbol.seed(77)
    later = _symbol_solver(seed=3, epochs=2)
    later.resume(str(tmp_path / "ckpt.minpy"))
    for k, v in later.model.params.items():
        numpy.testing.assert_array_equal(host(v), whole[k], err_msg=k)
    assert SYMBOL_DROPOUT not in (1, 2)         # not the shuffling or layers.dropout stream


# ---------------------------------------------------------------- shards across workers
class FakeStore:
    """What the Solver reads of a dist KVStore to shard: its rank and worker count."""

    def __init__(self, rank, num_workers):
        self.rank, self.num_workers = rank, num_workers
        self.type = "dist_sync"


@pytest.mark.parametrize("n, workers", [(10, 3), (12, 4), (7, 7)])
def test_shards_are_disjoint_and_cover_the_arrays(n, workers):
    x = numpy.arange(n * 2).reshape(n, 2)
    y = numpy.arange(n)
    parts = [shard_for((x, y), FakeStore(r, workers), "Solver: train data", 4)
             for r in range(workers)]
    ys = [p.label[0][1].tolist() for p in parts]
    assert sorted(sum(ys, [])) == list(range(n))           # disjoint and complete
    sizes = [p.num_data for p in parts]
    assert max(sizes) - min(sizes) <= 1                      # as even as it can be
    for p in parts:
        numpy.testing.assert_array_equal(p.data[0][1], x[p.label[0][1]])   # still paired
        seen = sorted(i for b in p for i in b.index.tolist())
        assert set(seen) == set(p.label[0][1].tolist())     # iterates over its part only


def test_minpy_arrays_and_several_inputs_are_sharded_as_ndarrayiter_does():
    x1, x2, y = mp.arange(12.0).reshape(6, 2), numpy.arange(6.0), mp.arange(6)
    part = shard_for(([x1, x2], y), FakeStore(1, 2), "w", 3)
    assert [k for k, _ in part.data] == ["_0_data", "_1_data"]
    assert part.data[1][1].tolist() == [3.0, 4.0, 5.0] and part.label[0][1].tolist() == [3, 4, 5]


def test_one_worker_or_no_store_or_an_iterator_is_not_sharded():
    x, y = numpy.zeros((4, 2)), numpy.arange(4)
    assert shard_for((x, y), None, "w", 2)[0] is x
    assert shard_for((x, y), FakeStore(0, 1), "w", 2)[1] is y
    it = mp.nn.io.NDArrayIter(x, y, batch_size=2)
    assert shard_for(it, FakeStore(1, 2), "w", 2) is it
    with pytest.raises(ValueError, match="same number of samples"):
        shard_for((x, numpy.arange(3)), FakeStore(0, 2), "w", 2)


def test_fewer_samples_than_workers_is_refused_by_name():
    with pytest.raises(ValueError, match="Solver: train data.*3 samples.*4 workers"):
        shard_for((numpy.zeros((3, 1)), numpy.arange(3)), FakeStore(0, 4),
                  "Solver: train data", 1)


def test_shards_with_unequal_batch_counts_are_refused_at_construction():
    """10 samples over 3 workers are parts of 3, 3 and 4: batches of 3 give 1, 1 and 2
    batches, and the workers' collectives would pair different steps."""
    with pytest.raises(ValueError, match=r"parts of \[3, 3, 4\] samples.*\[1, 1, 2\] batches"):
        shard_for((numpy.zeros((10, 1)), numpy.arange(10)), FakeStore(1, 3),
                  "Solver: train data", 3)


def test_a_dist_solver_trains_on_its_own_shard(monkeypatch):
    """Each worker's Solver iterates over its shard only (the store faked: one process)."""
    from minpy.nn import solver as solver_module
    seen = {}
    x, y = _blobs(n=40)
    for rank in range(2):
        store = FakeStore(rank, 2)
        monkeypatch.setattr(solver_module.parallel, "make_kvstore",
                            lambda who, kv, ctx, store=store: store)
        monkeypatch.setattr(solver_module.parallel, "Replicas", lambda kv, ctx: None)
        monkeypatch.setattr(solver_module, "check_lr_reaches", lambda kv: None)
        s = Solver(_Tiny(), (x, y), (x, y), batch_size=4, num_epochs=0, verbose=False,
                   kvstore="dist_sync", seed=0)
        seen[rank] = s
        assert s.train_dataiter.num_data == 20
        assert s.test_dataiter.num_data == 40           # every worker evaluates on all
    a = host(seen[0].train_dataiter.data[0][1])
    b = host(seen[1].train_dataiter.data[0][1])
    assert not set(map(tuple, a)) & set(map(tuple, b))


class _Tiny(mp.nn.model.ModelBase):
    def __init__(self):
        super().__init__()
        self.add_param("w", (6, 3))

    def forward(self, X, mode):
        return X @ self.params["w"]

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


# ---------------------------------------------------------------- a real two-worker job
@needs_mpi
def test_a_dist_sync_solver_shards_arrays_over_two_mpi_workers(tmp_path):
    """Both workers are given all 60 samples; each trains on its own 30 (the first
    feature of sample i is i), and they end with the same parameters."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "mpi_jobs", "solver_shards.py")
    job = run_mpi(MPIEXEC, 2, script, str(tmp_path), timeout=60)
    assert job.returncode == 0, job.stderr[-3000:]
    r0, r1 = (numpy.load(tmp_path / f"rank{r}.npz") for r in range(2))
    s0, s1 = set(r0["seen"].tolist()), set(r1["seen"].tolist())
    assert s0 == set(range(30)) and s1 == set(range(30, 60))
    for k in ("w", "b"):
        numpy.testing.assert_array_equal(r0[k], r1[k], err_msg=k)
