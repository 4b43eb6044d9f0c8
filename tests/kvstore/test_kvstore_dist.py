"""dist_sync on real MPI jobs (MPICH or Open MPI, 2 to 5 ranks, each started by
python -m minpy.kvstore.launch under a hard timeout): data-parallel training equals
one process training on the whole batches."""
import importlib.util
import os
import sys

import numpy
import pytest

import minpy
import minpy as np
import minpy.nn  # noqa: F401
from _jobs import MPIEXEC, needs_mpi, run_mpi
from minpy.kvstore import compression

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
pytestmark = needs_mpi


def _worker_module():
    spec = importlib.util.spec_from_file_location("sync_mlp", os.path.join(HERE, "mpi_jobs",
                                                                           "sync_mlp.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_job(n, script, *args, timeout=120, env=None):
    """Run ``tests/mpi_jobs/script`` on ``n`` ranks (the last ``MINPY_KVSTORE_SERVERS``
    of them servers) through the launcher; the job is ended (and the test fails) past
    ``timeout`` seconds."""
    return run_mpi(MPIEXEC, n, os.path.join(HERE, "mpi_jobs", script), *args,
                   timeout=timeout, env=env)


def one_process_params(mod, steps):
    """The MLP's parameters after ``steps`` steps of one process on the whole batches."""
    params = {k: np.array(v) for k, v in mod.init_params().items()}
    kv = minpy.kvstore.create("local")              # the same update in one process
    for k in sorted(params):
        kv.init(k, params[k])
    kv.set_optimizer(minpy.nn.optim.create("sgd", learning_rate=0.5))
    for step in range(steps):
        x, y = mod.data(step, mod.BATCH)
        grads = np.grad(mod.loss)(params, np.array(x), np.array(y))
        for k in sorted(params):
            kv.push(k, grads[k])
            kv.pull(k, out=params[k])
    return {k: v.asnumpy() for k, v in params.items()}


def assert_all_ranks_hold(tmp_path, ranks, params):
    for r in range(ranks):
        got = numpy.load(tmp_path / f"rank{r}.npz")
        for k, v in params.items():
            numpy.testing.assert_allclose(got[k], v, rtol=1e-10, atol=1e-12,
                                          err_msg=f"rank {r}, parameter {k}")


@pytest.mark.parametrize("workers, servers", [(2, 0), (4, 0), (2, 1)])
def test_dist_sync_training_equals_one_process_on_whole_batches(workers, servers, tmp_path):
    # with a server rank in the job (launched for dist_async), dist_sync leaves it idle
    job = run_job(workers + servers, "sync_mlp.py", str(tmp_path),
                  env={"MINPY_KVSTORE_SERVERS": str(servers)})
    assert job.returncode == 0, job.stderr[-3000:]
    mod = _worker_module()
    assert_all_ranks_hold(tmp_path, workers, one_process_params(mod, mod.STEPS))
    moved = numpy.load(tmp_path / "rank0.npz")["w1"] - mod.init_params()["w1"]
    assert numpy.abs(moved).max() > 1e-3               # training did move the weights


@pytest.mark.parametrize("kind", ["dist_device_sync", "dist_sync:pushpull"])
def test_dist_device_sync_and_pushpull_training_equal_one_process(kind, tmp_path):
    job = run_job(2, "sync_mlp.py", str(tmp_path), kind)
    assert job.returncode == 0, job.stderr[-3000:]
    mod = _worker_module()
    assert_all_ranks_hold(tmp_path, 2, one_process_params(mod, mod.STEPS))


def test_dist_async_with_one_worker_equals_one_process_keys_split_over_servers(tmp_path):
    # one worker: no asynchrony, so the servers' updates must be exactly the local ones;
    # the bound of 8 elements splits w1 (30) and w2 (15) over both servers
    job = run_job(3, "sync_mlp.py", str(tmp_path), "dist_async",
                  env={"MINPY_KVSTORE_SERVERS": "2", "MINPY_KVSTORE_BIGARRAY_BOUND": "8"})
    assert job.returncode == 0, job.stderr[-3000:]
    mod = _worker_module()
    assert_all_ranks_hold(tmp_path, 1, one_process_params(mod, mod.STEPS))


def test_dist_sync_2bit_compression_equals_its_one_process_simulation(tmp_path):
    job = run_job(2, "sync_mlp.py", str(tmp_path), "dist_sync:2bit")
    assert job.returncode == 0, job.stderr[-3000:]
    mod = _worker_module()
    # each worker compresses its own gradient with its own residuals; the update
    # applies the sum of what both sent
    params = {k: np.array(v) for k, v in mod.init_params().items()}
    comps = [compression.create_compression({"type": "2bit", "threshold": mod.THRESHOLD})
             for _ in range(2)]
    opt = minpy.nn.optim.create("sgd", learning_rate=0.5)
    per = mod.BATCH // 2
    for step in range(mod.STEPS):
        x, y = mod.data(step, mod.BATCH)
        grads = [np.grad(mod.loss)(params, np.array(x[r * per:(r + 1) * per]),
                                   np.array(y[r * per:(r + 1) * per])) for r in range(2)]
        for k in sorted(params):
            sent = [comps[r].compress(k, (grads[r][k] / 2).asnumpy()) for r in range(2)]
            total = comps[0].decompress_sum(sent, params[k].shape, numpy.float64)
            opt.update(k, params[k], np.array(total))
    assert_all_ranks_hold(tmp_path, 2, {k: v.asnumpy() for k, v in params.items()})
    exact = one_process_params(mod, mod.STEPS)
    assert any(numpy.abs(exact[k] - params[k].asnumpy()).max() > 1e-6 for k in exact)


def test_gradient_compression_is_refused_by_local_kinds():
    with pytest.raises(ValueError, match=r"compression needs kind 'dist_sync'"):
        minpy.kvstore.create("device").set_gradient_compression({"type": "2bit"})


def _full_loss(mod, params, steps):
    x = numpy.concatenate([mod.data(s, mod.BATCH)[0] for s in range(steps)])
    y = numpy.concatenate([mod.data(s, mod.BATCH)[1] for s in range(steps)])
    return float(mod.loss({k: np.array(v) for k, v in params.items()}, np.array(x),
                          np.array(y)))


@pytest.mark.parametrize("workers,servers", [(2, 1), (3, 2)])
def test_dist_async_converges(workers, servers, tmp_path):
    steps = 40
    job = run_job(workers + servers, "sync_mlp.py", str(tmp_path), "dist_async", str(steps),
                  env={"MINPY_KVSTORE_SERVERS": str(servers), "MINPY_KVSTORE_BIGARRAY_BOUND": "8"})
    assert job.returncode == 0, job.stderr[-3000:]
    mod = _worker_module()
    start = _full_loss(mod, mod.init_params(), steps)
    finals = [dict(numpy.load(tmp_path / f"rank{r}.npz")) for r in range(workers)]
    for r, got in enumerate(finals):          # after the barrier every worker sees the same
        for k in got:
            numpy.testing.assert_array_equal(got[k], finals[0][k], err_msg=f"rank {r} {k}")
    end = _full_loss(mod, finals[0], steps)
    reference = _full_loss(mod, one_process_params(mod, steps), steps)
    assert end < 0.5 * start and end < 2 * reference + 0.05, (start, end, reference)


def test_dist_kind_without_mpi_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)     # as if not installed
    with pytest.raises(ImportError, match=r'pip install mpi4py mpich'):
        minpy.kvstore.create("dist_sync")


def test_a_stalled_rank_makes_the_others_fail_with_a_clear_error():
    job = run_job(2, "stalls.py", "stalls", timeout=60, env={"MINPY_KVSTORE_TIMEOUT": "3"})
    assert job.returncode != 0
    assert "push of key 'w': rank 0 waited 3 s for the other 1 worker(s)" in job.stderr
    assert "finished" not in job.stdout


def test_a_killed_rank_ends_the_job_at_once():
    job = run_job(2, "stalls.py", "dies", timeout=60, env={"MINPY_KVSTORE_TIMEOUT": "30"})
    assert job.returncode != 0 and "finished" not in job.stdout


def test_dist_device_sync_keeps_values_on_the_standin_gpu():
    job = run_job(2, "device_sync.py")
    assert job.returncode == 0, job.stderr[-3000:]
    assert job.stdout.count(" ok") == 2


def test_dist_async_bad_input_and_a_job_without_servers():
    job = run_job(2, "async_errors.py", env={"MINPY_KVSTORE_SERVERS": "1"})
    assert job.returncode == 0 and "checked" in job.stdout, job.stderr[-3000:]
    job = run_job(1, "async_errors.py", env={"MINPY_KVSTORE_SERVERS": "0"})
    assert job.returncode == 0 and "refused" in job.stdout, job.stderr[-3000:]
