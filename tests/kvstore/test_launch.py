"""python -m minpy.kvstore.launch: the command lines it builds (local, mpi, ssh), its checks and
errors, and real jobs on this machine, MPICH's or Open MPI's (each under a hard timeout,
leftover shared-memory files removed): roles, exit status, a rank that raises or is killed,
--timeout, and SIGTERM/SIGINT to the launcher."""
import glob
import importlib.util
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

from minpy.kvstore import launch as ml

from _jobs import mpi_flavour, needs_mpi

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
JOB = os.path.join(HERE, "mpi_jobs", "launch_job.py")
INSTALL = r'pip install mpi4py mpich'



SHM_PREFIXES = tuple(pattern.rstrip("*") for pattern in ml.SHM_PATTERNS)


def _shm_files():
    """MPI's shared-memory files in /dev/shm (MPICH's and Open MPI's, ml.SHM_PATTERNS)."""
    return {path for pattern in ml.SHM_PATTERNS for path in glob.glob(pattern)}


def _mapped_shm():
    """The MPI shared-memory files some process has mapped: a running job's."""
    mapped = set()
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            with open(maps) as f:
                mapped.update(line.split()[-1] for line in f
                              if any(prefix in line for prefix in SHM_PREFIXES))
        except OSError:
            pass
    return mapped


@pytest.fixture
def shm():
    """Remove the MPI shared-memory files a test's jobs leave (MPICH's mpich_shm_*,
    Open MPI's vader_segment.*; an aborted job may leave them); files some process
    still maps belong to a job running beside this test and stay."""
    before = _shm_files()
    yield
    for f in _shm_files() - before - _mapped_shm():
        try:
            os.remove(f)
        except OSError:
            pass


def _env(extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("MPIEXEC_TIMEOUT", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "MINPY_KVSTORE_SERVERS", "MINPY_NUM_WORKERS"):
        env.pop(k, None)
    env.update(extra or {})
    return env


def _cli(*argv):
    return [sys.executable, "-m", "minpy.kvstore.launch", *argv]


def run_launcher(*argv, timeout=30, env=None):
    """Run ``python -m minpy.kvstore.launch argv``; past ``timeout`` s it gets SIGTERM (which it
    passes on to the job), then SIGKILL, and the test fails. Returns (status, stdout,
    stderr, seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen(_cli(*argv), cwd=ROOT, env=_env(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        pytest.fail(f"minpy.kvstore.launch {argv} ran past {timeout} s\n{out[-2000:]}\n{err[-2000:]}")
    return proc.returncode, out, err, time.monotonic() - start


def _alive(pid):
    """Whether ``pid`` runs (a zombie nobody reaps counts as ended)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1] != "Z"
    except OSError:
        return False
    return True


def _ended(pids, within=5):
    """Whether every pid in ``pids`` has ended, waiting up to ``within`` s."""
    end = time.monotonic() + within
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.02)
    return not any(_alive(p) for p in pids)


# ---- the command lines ------------------------------------------------------------------

RANK_ENV = ["-genv", "MINPY_KVSTORE_SERVERS", "1", "-genv", "MINPY_NUM_WORKERS", "4",
            "-genv", "OMP_NUM_THREADS", "1", "-genv", "OPENBLAS_NUM_THREADS", "1",
            "-genv", "PYTHONUNBUFFERED", "1"]
RANKS = ["-n", "5", "/py", "-m", "mpi4py", "train.py", "--lr", "0.1"]


@pytest.mark.parametrize("launcher,hostfile,head", [
    ("local", None, ["-launcher", "fork", "-hosts", "localhost"]),
    (None, None, ["-launcher", "fork", "-hosts", "localhost"]),
    ("mpi", "hosts.txt", ["-f", "hosts.txt"]),
    (None, "hosts.txt", ["-f", "hosts.txt"]),
    ("mpi", None, []),
    ("ssh", "hosts.txt", ["-launcher", "ssh", "-f", "hosts.txt"]),
])
def test_the_command_line_for_each_launcher(launcher, hostfile, head):
    cmd = ml.build_command("train.py", ["--lr", 0.1], 4, 1, hostfile=hostfile,
                           launcher=launcher, mpiexec="/bin/mpiexec", python="/py",
                           environ={})
    assert cmd.argv == ["/bin/mpiexec", *head, *RANK_ENV, *RANKS]
    assert cmd.env == {}


def test_timeout_goes_to_mpiexec_and_the_dry_run_prints_the_command(tmp_path):
    cmd = ml.build_command("a b.py", [], 2, mpiexec="mpiexec", python="/py", timeout=30,
                           environ={})
    assert cmd.env == {"MPIEXEC_TIMEOUT": "30"}
    assert cmd.shell().startswith("MPIEXEC_TIMEOUT=30 mpiexec -launcher fork")
    assert shlex.split(cmd.shell())[1:] == cmd.argv
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:2\nnode2:2\n")
    status, out, err, _ = run_launcher("--dry-run", "-n", "3", "--servers", "1", "--hostfile",
                                       str(hosts), "--launcher", "ssh", "--mpiexec", "/x/mpiexec",
                                       JOB, "report", "-n", "9")
    assert status == 0, err
    assert shlex.split(out) == ml.build_command(JOB, ["report", "-n", "9"], 3, 1,
                                                hostfile=str(hosts), launcher="ssh",
                                                mpiexec="/x/mpiexec",
                                                environ=_env()).argv


@pytest.mark.parametrize("environ,expected", [
    ({}, {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}),
    ({"OMP_NUM_THREADS": "4"}, {"PYTHONUNBUFFERED": "1"}),     # OpenBLAS falls back to it
    ({"OPENBLAS_NUM_THREADS": "2", "PYTHONUNBUFFERED": "0"}, {"OMP_NUM_THREADS": "1"}),
])
def test_thread_counts_are_one_per_rank_unless_set(environ, expected):
    env = ml.rank_environment(3, 2, environ)
    assert env == {"MINPY_KVSTORE_SERVERS": "2", "MINPY_NUM_WORKERS": "3", **expected}


@pytest.mark.parametrize("kwargs,message", [
    ({"n": 0}, "-n must be a whole number of worker ranks, at least 1; got 0"),
    ({"n": 2.0}, "-n must be"),
    ({"servers": -1}, "--servers must be a whole number of parameter-server ranks, 0 or more"),
    ({"timeout": 0}, "--timeout must be a whole number of seconds, at least 1"),
    ({"launcher": "pbs"}, "--launcher must be one of local, mpi, ssh; got 'pbs'"),
    ({"launcher": "local", "hostfile": "h"}, "--launcher local runs every rank on this "
                                             "machine and takes no --hostfile"),
    ({"launcher": "ssh"}, "--launcher ssh needs --hostfile FILE"),
])
def test_bad_options_are_named(kwargs, message):
    kwargs = {"n": 2, **kwargs}
    with pytest.raises(ml.LaunchError, match="^" + re.escape(message)):
        ml.build_command("train.py", **kwargs)


def test_missing_files_are_named(tmp_path):
    with pytest.raises(ml.LaunchError, match="nope.py: no such file"):
        ml.launch(str(tmp_path / "nope.py"), n=2, dry_run=True)
    with pytest.raises(ml.LaunchError, match="--hostfile .*hosts: no such file"):
        ml.launch(JOB, n=2, hostfile=str(tmp_path / "hosts"), dry_run=True)
    status, _, err, _ = run_launcher("-n", "0", JOB, "report")
    assert status == 2 and "minpy.kvstore.launch: error: -n must be" in err


# ---- finding MPI ----------------------------------------------------------------------

def _fake_mpiexec(folder):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mpiexec"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_mpiexec_is_found_beside_python_first_then_on_path(tmp_path):
    venv_bin, other = tmp_path / "venv" / "bin", tmp_path / "other"
    on_path = _fake_mpiexec(other)
    python = str(venv_bin / "python")
    assert ml.find_mpiexec(python=python, path=str(other)) == on_path
    beside = _fake_mpiexec(venv_bin)
    assert ml.find_mpiexec(python=python, path=str(other)) == beside
    assert ml.find_mpiexec(on_path, python=python, path="") == on_path


def test_no_mpiexec_is_a_clear_error(tmp_path):
    with pytest.raises(ml.LaunchError, match=f"no mpiexec beside .* or on PATH: .*{INSTALL}"):
        ml.find_mpiexec(python=str(tmp_path / "python"), path="")
    with pytest.raises(ml.LaunchError, match=f"--mpiexec /nonexistent: no such .*{INSTALL}"):
        ml.find_mpiexec("/nonexistent")
    status, out, err, _ = run_launcher("--mpiexec", "/nonexistent", "-n", "2", JOB, "report")
    assert status == 2 and out == ""
    assert 'minpy.kvstore.launch: error: --mpiexec /nonexistent: no such executable' in err
    assert 'pip install mpi4py mpich' in err


def test_no_mpi4py_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "mpi4py", None)        # as if not installed
    with pytest.raises(ml.LaunchError, match=f"mpi4py is not installed for .*{INSTALL}"):
        ml.check_mpi4py()
    with pytest.raises(ml.LaunchError, match="mpi4py is not installed"):
        ml.launch(JOB, ["report"], n=2, mpiexec=_fake_mpiexec(tmp_path))


@needs_mpi
def test_a_timed_out_job_fails_even_when_mpiexec_exits_0(tmp_path):
    # MPICH's hydra now and then exits 0 after "APPLICATION TIMED OUT" (seen on this
    # project's VM about one run in three under pytest); a stand-in mpiexec does so always
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\nsleep 1.5\necho '[mpiexec@vm] APPLICATION TIMED OUT, "
                    "TIMEOUT = 1s'\nexit 0\n")
    fake.chmod(0o755)
    status, out, err, took = run_launcher("--mpiexec", str(fake), "--mpi", "mpich", "-n", "2",
                                          "--timeout", "1", JOB, "sleep")
    assert status == ml.TIMEOUT_STATUS, (status, out, err)
    assert "the job ran past --timeout 1 s, so it was ended" in err


def test_help_documents_the_launcher():
    status, out, _, _ = run_launcher("--help")
    assert status == 0
    for needle in ("--servers", "--hostfile", "--launcher", "--timeout", "--mpiexec",
                   "--dry-run", "MINPY_KVSTORE_SERVERS", "MINPY_NUM_WORKERS",
                   "OPENBLAS_NUM_THREADS", "MPIEXEC_TIMEOUT", "-launcher ssh -f FILE",
                   "python -m mpi4py", 'pip install mpi4py mpich', "143 for SIGTERM"):
        assert needle in out, needle


# ---- a job that will not end: the launcher's own last resort ---------------------------

needs_mpi4py = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                                  reason='needs mpi4py: pip install mpi4py mpich')


def _stubborn_mpiexec(tmp_path):
    """A stand-in mpiexec that ignores SIGINT/SIGTERM/SIGHUP and starts a child in a
    session of its own (as hydra starts its proxies); it writes the child's pid to
    ``child`` once running."""
    path = tmp_path / "mpiexec"
    path.write_text("#!/bin/sh\ntrap '' INT TERM HUP\n"
                    f"setsid sleep 60 &\necho $! > {tmp_path / 'child.tmp'}\n"
                    f"mv {tmp_path / 'child.tmp'} {tmp_path / 'child'}\nsleep 60\n")
    path.chmod(0o755)
    return str(path)


def _child_pid(tmp_path, within=10):
    end = time.monotonic() + within
    while not (tmp_path / "child").exists() and time.monotonic() < end:
        time.sleep(0.02)
    return int((tmp_path / "child").read_text())


@needs_mpi4py
def test_a_job_that_ignores_the_signal_is_killed(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(ml, "KILL_GRACE", 0.5)
    done = threading.Event()

    def sigterm_once_running():
        _child_pid(tmp_path)
        if not done.is_set():
            os.kill(os.getpid(), signal.SIGTERM)     # to this process, i.e. the launcher
    threading.Thread(target=sigterm_once_running, daemon=True).start()
    start = time.monotonic()
    try:
        status = ml.launch(JOB, ["sleep"], n=1, mpiexec=_stubborn_mpiexec(tmp_path),
                           timeout=30, flavour="mpich")
    finally:
        done.set()
    assert status == 143 and time.monotonic() - start < 5
    assert "minpy.kvstore.launch: stopped the job on SIGTERM" in capfd.readouterr().err
    assert _ended([_child_pid(tmp_path)], within=2)


@needs_mpi4py
def test_a_job_that_overruns_its_timeout_is_killed(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(ml, "TIMEOUT_GRACE", 0.3)
    monkeypatch.setattr(ml, "KILL_GRACE", 0.3)
    start = time.monotonic()
    status = ml.launch(JOB, ["sleep"], n=1, mpiexec=_stubborn_mpiexec(tmp_path), timeout=1,
                       flavour="mpich")
    assert status == 137 and time.monotonic() - start < 5
    assert "mpiexec overran --timeout 1 s by 0.3 s, so minpy.kvstore.launch ended the job" in \
        capfd.readouterr().err
    assert _ended([_child_pid(tmp_path)], within=2)


# ---- real jobs --------------------------------------------------------------------------

def _report(out):
    """{rank: {field: value}} from the report job's lines."""
    ranks = {}
    for line in out.splitlines():
        if line.startswith("rank "):
            words = line.split(" args=")[0].split()
            fields = dict(zip(words[0::2], words[1::2]))
            fields.update(w.split("=", 1) for w in words if "=" in w)
            fields["args"] = line.split(" args=")[1]
            ranks[int(fields["rank"])] = fields
    return ranks


@needs_mpi
def test_two_workers_get_their_ranks_and_the_users_thread_setting(shm):
    status, out, err, _ = run_launcher(
        "-n", "2", "--timeout", "20", JOB, "report",
        env={"OMP_NUM_THREADS": "3", "MINPY_KVSTORE_SERVERS": "7"})   # 7: stale, overridden
    assert status == 0, err
    ranks = _report(out)
    assert sorted(ranks) == [0, 1]
    for r, f in ranks.items():
        assert (f["size"], f["role"], f["MINPY_KVSTORE_SERVERS"], f["MINPY_NUM_WORKERS"],
                f["OMP_NUM_THREADS"], f["OPENBLAS_NUM_THREADS"]) == \
            ("2", "worker", "0", "2", "3", "None")


@needs_mpi
def test_servers_are_the_last_ranks(shm):
    status, out, err, _ = run_launcher("-n", "2", "--servers", "1", "--timeout", "20", JOB,
                                       "report", "--flag", "a b")
    assert status == 0, err
    ranks = _report(out)
    assert {r: f["role"] for r, f in ranks.items()} == {0: "worker", 1: "worker", 2: "server"}
    for f in ranks.values():
        assert (f["size"], f["MINPY_KVSTORE_SERVERS"], f["MINPY_NUM_WORKERS"],
                f["OMP_NUM_THREADS"], f["OPENBLAS_NUM_THREADS"], f["args"]) == \
            ("3", "1", "2", "1", "1", "['--flag', 'a b']")


@needs_mpi
def test_the_exit_status_comes_back_from_python(shm, capfd):
    assert ml.launch(JOB, ["exit", "3"], n=2, timeout=20, stdin=subprocess.DEVNULL) == 3
    err = capfd.readouterr().err
    assert "minpy.kvstore.launch: the job failed with exit status 3 and was ended" in err


@needs_mpi
def test_a_rank_that_raises_ends_the_job(shm):
    status, out, err, took = run_launcher("-n", "2", "--timeout", "30", JOB, "raise")
    assert status == 1, err
    assert "RuntimeError: launch_job: rank 1 failed on purpose" in err
    assert "minpy.kvstore.launch: the job failed with exit status 1 and was ended" in err
    assert "NOT ENDED" not in out and took < 15


@needs_mpi
def test_a_killed_rank_ends_the_job_at_once(shm):
    status, out, err, took = run_launcher("-n", "2", "--timeout", "30", JOB, "kill")
    # the job's status is mpiexec's: hydra's is the signal's number (9), Open MPI's
    # 128 + it (137); the launcher says which signal that status may stand for
    killed = {"mpich": 9, "openmpi": 137}[mpi_flavour()]
    assert status == killed, out + err
    assert f"{killed} is also how mpiexec reports a rank killed by SIGKILL" in err
    assert "NOT ENDED" not in out and took < 20     # not its 30 s timeout (10.2 s under load)


@needs_mpi
def test_timeout_ends_the_whole_job(shm):
    status, out, err, took = run_launcher("-n", "2", "--timeout", "2", JOB, "sleep")
    assert status != 0 and "NOT ENDED" not in out, (status, out, err, took)
    assert "minpy.kvstore.launch: the job ran past --timeout 2 s, so it was ended" in err
    assert 2 <= took < 10


@needs_mpi
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launcher_ends_the_job(sig, shm):
    proc = subprocess.Popen(_cli("-n", "2", "--timeout", "40", JOB, "sleep"), cwd=ROOT,
                            env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        ready = lines.get(timeout=20)
        assert ready.startswith("ready "), ready
        pids = [int(p) for p in ready.split()[1:]]
        start = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    assert f"minpy.kvstore.launch: stopped the job on {sig.name}" in err
    assert "NOT ENDED" not in out and took < 5
    assert _ended(pids), "a rank outlived the job"
