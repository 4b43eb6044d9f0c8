"""No silent wrong answers in the training and job stack: SoftmaxOutput's labels,
the Solver's checkpoint order, the loaders' errors on hostile files, kvstore.create
with a stalled rank, and the launcher's view of ranks that end abnormally and of the
shared-memory files a job leaves behind."""
import os
import re
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

import minpy
import minpy.symbol as sym
from minpy.kvstore import launch as ml
from minpy.nd import NDArrayFileError
from minpy.symbol.format.minpy_json import SymbolFileError

from _jobs import MPIEXEC, mpi_flavour, needs_mpi, run_mpi

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "nn"))     # the Solver tests' _resumable


# ---- SoftmaxOutput: labels are class indices ------------------------------------------

def _softmax_grad(label, data_shape=(3, 4), **attrs):
    """The data gradient of SoftmaxOutput(data=zeros) for ``label``."""
    s = sym.SoftmaxOutput(sym.Variable("x"), sym.Variable("label"), **attrs)
    label = np.asarray(label, dtype=np.float64)
    exe = s.simple_bind(x=data_shape, label=label.shape,
                        type_dict={"x": np.float64, "label": np.float64})
    exe.forward(is_train=True, x=np.zeros(data_shape), label=label)
    exe.backward()
    return exe.grad_dict["x"].asnumpy()


@pytest.mark.parametrize("label,bad,pos", [
    ([0, 7, 1], "7", "(1,)"),
    ([0, 2, -1], "-1", "(2,)"),
    ([0.5, 1, 2], "0.5", "(0,)"),
    ([0, 1, np.nan], "nan", "(2,)"),
    ([4, 1, 2], "4", "(0,)"),
])
def test_softmax_output_refuses_labels_that_are_not_class_indices(label, bad, pos):
    with pytest.raises(ValueError) as info:
        _softmax_grad(label)
    msg = str(info.value)
    assert "SoftmaxOutput" in msg and "4 classes" in msg, msg
    assert f"label {bad} at position {pos}" in msg, msg


def test_softmax_output_ignore_label_is_allowed_only_with_use_ignore():
    g = _softmax_grad([0, -1, 3], use_ignore=True, ignore_label=-1)
    want = np.full((3, 4), 0.25) - np.eye(4)[[0, 0, 3]]
    want[1] = 0
    np.testing.assert_allclose(g, want)
    with pytest.raises(ValueError, match="label 5 at position"):
        _softmax_grad([0, 5, 3], use_ignore=True, ignore_label=-1)
    with pytest.raises(ValueError, match=r"label -1 at position \(1,\)"):
        _softmax_grad([0, -1, 3])


def test_softmax_output_checks_multi_output_and_preserve_shape_labels():
    ok = [[0, 1, 2, 2], [1, 1, 0, 2.0]]
    assert np.isfinite(_softmax_grad(ok, (2, 3, 4), multi_output=True)).all()
    with pytest.raises(ValueError, match=r"label 3 at position \(1, 2\).*3 classes"):
        _softmax_grad([[0, 1, 2, 2], [1, 1, 3, 2.0]], (2, 3, 4), multi_output=True)
    assert np.isfinite(_softmax_grad([[0, 1, 2], [3, 3, 0.0]], (2, 3, 4),
                                     preserve_shape=True)).all()
    with pytest.raises(ValueError, match=r"label 4 at position \(0, 1\).*4 classes"):
        _softmax_grad([[0, 4, 2], [3, 3, 0.0]], (2, 3, 4), preserve_shape=True)


def test_softmax_output_probability_labels_are_not_indices():
    p = np.full((3, 4), 0.25)
    assert np.allclose(_softmax_grad(p), 0)


# ---- Solver checkpoints: newest by epoch number -----------------------------------------

def test_checkpoint_rotation_and_resume_order_by_epoch_number(tmp_path):
    from test_solver import _resumable     # tests/nn/test_solver.py
    solver = _resumable(str(tmp_path), epochs=1)
    solver.init()
    for epoch in (9998, 9999, 10000):
        solver.epoch = epoch
        solver.save_checkpoint(str(tmp_path / f"checkpoint-{epoch:04d}.minpy"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint-10000.minpy", "checkpoint-9999.minpy"]
    other = _resumable(str(tmp_path), epochs=1)
    assert other.load_checkpoint(str(tmp_path)).endswith("checkpoint-10000.minpy")
    assert other.epoch == 10000


def test_checkpoint_rotation_leaves_files_that_are_not_numbered(tmp_path):
    from test_solver import _resumable     # tests/nn/test_solver.py
    (tmp_path / "checkpoint-best.minpy").write_bytes(b"mine")
    solver = _resumable(str(tmp_path), epochs=1)
    solver.keep_checkpoints = 1
    solver.init()
    for epoch in (1, 2):
        solver.epoch = epoch
        solver.save_checkpoint(str(tmp_path / f"checkpoint-{epoch:04d}.minpy"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint-0002.minpy", "checkpoint-best.minpy"]
    assert _resumable(str(tmp_path)).load_checkpoint(str(tmp_path)).endswith("0002.minpy")


# ---- loaders: their own errors on hostile files -----------------------------------------

def test_symbol_load_of_non_utf8_bytes_names_file_and_offset(tmp_path):
    good = sym.FullyConnected(sym.Variable("data"), num_hidden=2, name="fc").tojson()
    raw = good.encode()
    at = raw.index(b"fc")
    bad = tmp_path / "net-symbol.json"
    bad.write_bytes(raw[:at] + b"\xff\xfe" + raw[at:])
    with pytest.raises(SymbolFileError) as info:
        sym.load(str(bad))
    assert isinstance(info.value, ValueError)
    assert str(bad) in str(info.value) and f"byte {at}" in str(info.value)
    for loader in (sym.load_json, sym.fromjson):
        with pytest.raises(SymbolFileError, match=f"byte {at}"):
            loader(raw[:at] + b"\xff" + raw[at:])


@pytest.mark.parametrize("depth", [100_000, 3_000, 200])
def test_deeply_nested_symbol_json_is_the_loaders_error(tmp_path, depth):
    """The loader's nesting limit, whatever the depth at which this Python's json runs
    out of stack (3.12's C recursion limit is not 3.11's)."""
    text = '{"nodes": ' + "[" * depth + "]" * depth + ', "heads": []}'
    with pytest.raises(SymbolFileError, match=r"at character 109: .*nested more than 100 levels"):
        sym.load_json(text)
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(SymbolFileError, match=re.escape(str(path))):
        sym.load(str(path))


def test_symbol_load_errors_stay_value_errors_naming_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"nodes": [}')
    with pytest.raises(SymbolFileError, match=re.escape(str(path)) + ".*not JSON"):
        sym.load(str(path))


def _nd_file(shape, flag=0, magic=0xF993FAC9):
    """An NDArray list of one V2 record of ``shape`` with no data bytes and no names."""
    return (struct.pack("<QQQ", 0x112, 0, 1)
            + struct.pack(f"<IIi{len(shape)}q", magic, 0, len(shape), *shape)
            + struct.pack("<iii", 1, 0, flag) + struct.pack("<Q", 0))


@pytest.mark.parametrize("shape,message", [
    ((0, 2**62, 2**62), r"array 0: at byte 32: expected a shape of at most .* bytes"),
    ((0, 2**40, 2**40, 2**40), r"at byte 32: expected a shape of at most"),
    ((0,) * 100, r"array 0: at byte 32: expected at most \d+ dims .*found 100"),
    ((2**40, 2**40), r"expected 1208925819614629174706176 float32 values"),
])
def test_nd_load_of_absurd_shapes_is_the_loaders_error(shape, message, tmp_path):
    path = tmp_path / "absurd.params"
    path.write_bytes(_nd_file(shape))
    with pytest.raises(NDArrayFileError, match=message):
        minpy.nd.load(str(path))
    with pytest.raises(NDArrayFileError, match=message):
        minpy.nd.loads(_nd_file(shape))


def test_nd_load_of_a_huge_ndim_fails_before_reading_dims():
    blob = struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<IIi", 0xF993FAC9, 0, 2**31 - 1)
    with pytest.raises(NDArrayFileError, match=r"at byte 32: expected at most \d+ dims"):
        minpy.nd.loads(blob)


# ---- kvstore.create: a stalled rank ends the job ----------------------------------------
@needs_mpi
@pytest.mark.parametrize("kind,servers,n,late", [("dist_sync", 0, 2, 1),
                                                 ("dist_async", 1, 3, 2)])
def test_a_rank_stalled_before_create_ends_the_job_with_a_clear_error(kind, servers, n, late):
    start = time.monotonic()
    job = run_mpi(MPIEXEC, n, os.path.join(HERE, "mpi_jobs", "create_stalls.py"), kind,
                  timeout=60, env={"MINPY_KVSTORE_TIMEOUT": "2",
                                   "MINPY_KVSTORE_SERVERS": str(servers)})
    took = time.monotonic() - start
    assert job.returncode != 0, (job.stdout, job.stderr[-3000:])
    # every waiting rank times out; the first to abort may end the others before they print
    assert re.search(rf"TimeoutError: minpy\.kvstore\.create\({kind!r}\): rank [0-{late - 1}] "
                     rf"waited 2 s for rank\(s\) {late} of the job's {n}\b", job.stderr), \
        job.stderr[-3000:]
    assert "MINPY_KVSTORE_TIMEOUT" in job.stderr
    assert "created" not in job.stdout and "NOT ENDED" not in job.stdout
    assert took < 40, took


# ---- the launcher: ranks that end abnormally, and the job's shared memory -------------

JOB = os.path.join(HERE, "mpi_jobs", "abnormal_job.py")


def _segments(out):
    """The MPI shared-memory files (MPICH's mpich_shm_*, Open MPI's vader_segment.*)
    the job's ranks reported mapping."""
    found = set()
    for line in out.splitlines():
        if line.startswith("shm "):
            found.update(line.split()[2:])
    return found


def _launch(*argv, timeout=40):
    from test_launch import run_launcher
    return run_launcher(*argv, timeout=timeout)


def test_ranks_run_through_the_reporting_wrapper_only_when_watched():
    plain = ml.build_command("train.py", ["--lr", 0.1], 2, mpiexec="mpiexec", python="/py",
                             environ={})
    assert plain.argv[-6:] == ["/py", "-m", "mpi4py", "train.py", "--lr", "0.1"]
    assert "MINPY_LAUNCH_REPORTS" not in plain.argv
    watched = ml.build_command("train.py", ["--lr", 0.1], 2, mpiexec="mpiexec", python="/py",
                               environ={}, report_dir="/tmp/r")
    assert watched.argv[-9:] == ["/py", "-m", "mpi4py", "-m", "minpy.kvstore.launch", "--rank",
                                 "train.py", "--lr", "0.1"]
    at = watched.argv.index("MINPY_LAUNCH_REPORTS")
    assert watched.argv[at - 1:at + 2] == ["-genv", "MINPY_LAUNCH_REPORTS", "/tmp/r"]


@needs_mpi
def test_a_rank_that_calls_os_exit_0_mid_job_fails_the_job():
    status, out, err, took = _launch("-n", "2", "--timeout", "30", JOB, "exit0")
    # MPICH's mpiexec says 0 and the launcher fails the job (ABNORMAL_STATUS); Open
    # MPI's fails it itself, with 1, for a rank that left without MPI_Finalize: either
    # way the launcher names the rank and how it left
    assert status == {"mpich": ml.ABNORMAL_STATUS, "openmpi": 1}[mpi_flavour()] != 0, \
        (status, out, err)
    assert "minpy.kvstore.launch: rank 1 ended abnormally: it called os._exit(0)" in err, err
    assert "NOT ENDED" not in out and took < 20
    assert not any(os.path.exists(p) for p in _segments(out))


@needs_mpi
def test_a_rank_that_calls_os_exit_0_after_finalize_fails_the_job():
    status, out, err, _ = _launch("-n", "2", "--timeout", "30", JOB, "finalized")
    assert status == ml.ABNORMAL_STATUS, (status, out, err)
    assert "rank 1 ended abnormally: it called os._exit(0)" in err, err
    assert not any(os.path.exists(p) for p in _segments(out))


@needs_mpi
def test_a_job_that_ends_normally_is_still_status_0():
    status, out, err, _ = _launch("-n", "2", "--timeout", "30", JOB, "ok")
    assert status == 0, (status, out, err)
    assert out.count("done") == 2 and "minpy.kvstore.launch" not in err
    assert not any(os.path.exists(p) for p in _segments(out))


def test_the_reports_name_ranks_that_did_not_finish(tmp_path):
    """Without MPI: the report files a watched rank leaves, as the launcher reads them."""
    for rank in range(4):
        (tmp_path / f"start-{rank}").write_text(f"{1000 + rank} localhost\n")
    (tmp_path / "done-0").write_text("")
    (tmp_path / "done-3").write_text("")
    (tmp_path / "exit-2").write_text("0\n")
    assert ml._unfinished_ranks(str(tmp_path)) == {1: None, 2: 0}
    message = ml._explain_unfinished({1: None, 2: 0}, 0, ml.ABNORMAL_STATUS)
    assert "rank 2 ended abnormally: it called os._exit(0)" in message
    assert "Rank 1 ended with it, unfinished" in message


@needs_mpi
def test_an_aborted_job_leaves_no_shared_memory_behind():
    status, out, err, _ = _launch("-n", "2", "--timeout", "30", JOB, "raise")
    assert status == 1, (status, out, err)
    segments = _segments(out)
    assert segments, out                    # the ranks share memory: there was one
    assert not any(os.path.exists(p) for p in segments), segments


@needs_mpi
def test_a_killed_rank_leaves_no_shared_memory_behind():
    status, out, err, _ = _launch("-n", "2", "--timeout", "30", JOB, "kill")
    # mpiexec's status for a rank killed by SIGKILL: hydra's 9, Open MPI's 128 + 9
    assert status == {"mpich": 9, "openmpi": 137}[mpi_flavour()], (status, out, err)
    segments = _segments(out)
    assert segments and not any(os.path.exists(p) for p in segments), segments


@needs_mpi
def test_shared_memory_the_job_does_not_map_is_left_alone():
    status, out, err, _ = _launch("-n", "2", "--timeout", "30", JOB, "foreign")
    foreign = [line.split()[1] for line in out.splitlines() if line.startswith("foreign ")]
    try:
        assert status == 0, (status, out, err)
        assert len(foreign) == 1 and os.path.exists(foreign[0]), out
    finally:
        for path in foreign:
            os.remove(path)


@needs_mpi
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launcher_leaves_no_shared_memory_behind(sig):
    import queue
    import threading
    from test_launch import _cli, _env
    proc = subprocess.Popen(_cli("-n", "2", "--timeout", "40", JOB, "sleep"), cwd=ROOT,
                            env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()

    def read():
        for line in proc.stdout:
            lines.put(line)
    threading.Thread(target=read, daemon=True).start()
    seen = []
    try:
        while not seen or not seen[-1].startswith("ready "):
            seen.append(lines.get(timeout=20))
        proc.send_signal(sig)
        proc.wait(timeout=15)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    time.sleep(0.2)
    while not lines.empty():
        seen.append(lines.get())
    assert proc.returncode == 128 + sig, err
    segments = _segments("".join(seen))
    assert segments, seen
    assert not any(os.path.exists(p) for p in segments), segments


@pytest.mark.parametrize("raw", ["soon", "0", "-3", "nan"])
def test_a_bad_kvstore_timeout_is_named(monkeypatch, raw):
    from minpy.kvstore import wire
    monkeypatch.setenv("MINPY_KVSTORE_TIMEOUT", raw)
    with pytest.raises(ValueError, match=f"MINPY_KVSTORE_TIMEOUT={raw!r} must be a positive"):
        wire._timeout()


def test_symbol_load_checkpoint_of_non_utf8_names_the_file(tmp_path):
    prefix = tmp_path / "net"
    (tmp_path / "net-symbol.json").write_bytes(b'{"nodes": [\xff]}')
    with pytest.raises(SymbolFileError, match=r"net-symbol\.json: .*at byte 11"):
        minpy.model.load_checkpoint(str(prefix), 0)
