"""python -m minpy.kvstore.launch under Open MPI's mpiexec as well as MPICH's: telling
the flavour from ``mpiexec --version`` and ``MPI.Get_library_version()``, the command
lines for Open MPI, and stand-in Open MPI mpiexecs (no Open MPI needed here)."""
import errno
import os
import shlex
import signal
import subprocess
import sys

import pytest

from minpy.kvstore import launch as ml
from minpy.kvstore import mpi_flavours as mf

from test_launch import JOB, ROOT, _env, needs_mpi4py, run_launcher

OPENMPI_4 = ("mpiexec (OpenRTE) 4.1.6\n\n"
             "Report bugs to http://www.open-mpi.org/community/help/\n")
OPENMPI_5 = ("mpiexec (Open MPI) 5.0.3\n\n"
             "Report bugs to https://www.open-mpi.org/community/help/\n")
MPICH_4 = """HYDRA build details:
    Version:                                 4.2.0
    Release Date:                            Fri Feb  9 12:29:21 CST 2024
    CC:                              gcc
    Configure options:                       '--disable-option-checking' '--prefix=/usr'
    Process Manager:                         pmi
    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist
    Topology libraries available:            hwloc
    Resource management kernels available:   user slurm ll lsf sge pbs cobalt
    Demux engines available:                 poll select
"""
INTEL = ("Intel(R) MPI Library for Linux* OS, Version 2021.11 Build 20231005 (id: 74c4a23)\n"
         "Copyright 2003-2023, Intel Corporation.\n")
LIB_OPENMPI = ("Open MPI v4.1.6, package: Debian OpenMPI, ident: 4.1.6, repo rev: v4.1.6, "
               "Sep 30, 2023")
LIB_MPICH = ("MPICH Version:      4.2.0\nMPICH Release date: Fri Feb  9 12:29:21 CST 2024\n"
             "MPICH ABI:          16:0:4\nMPICH Device:       ch4:ofi\n")
LIB_INTEL = "Intel(R) MPI Library 2021.11 for Linux* OS\n"
LIB_MVAPICH = "MVAPICH2 Version      :\t2.3.7\nMVAPICH2 Release date :\tWed March 02 22:00:00 EST 2022\n"


@pytest.mark.parametrize("text,flavour", [
    (OPENMPI_4, "openmpi"), (OPENMPI_5, "openmpi"), (MPICH_4, "mpich"), (INTEL, "mpich"),
    (LIB_OPENMPI, "openmpi"), (LIB_MPICH, "mpich"), (LIB_INTEL, "mpich"),
    (LIB_MVAPICH, "mpich"), ("", None), ("mpiexec: command not found", None),
])
def test_the_flavour_is_told_from_the_version_text(text, flavour):
    assert mf.flavour_of(text) == flavour


# ---- command lines for Open MPI ---------------------------------------------------------

OMPI_ENV = ["-x", "MINPY_KVSTORE_SERVERS=1", "-x", "MINPY_NUM_WORKERS=4",
            "-x", "OMP_NUM_THREADS=1", "-x", "OPENBLAS_NUM_THREADS=1",
            "-x", "PYTHONUNBUFFERED=1"]
RANKS = ["-n", "5", "/py", "-m", "mpi4py", "train.py", "--lr", "0.1"]


@pytest.mark.parametrize("launcher,hostfile,head", [
    ("local", None, ["--host", "localhost:5", "--bind-to", "none"]),
    (None, None, ["--host", "localhost:5", "--bind-to", "none"]),
    ("mpi", "hosts.txt", ["--hostfile", "hosts.txt"]),
    (None, "hosts.txt", ["--hostfile", "hosts.txt"]),
    ("mpi", None, []),
    ("ssh", "hosts.txt", ["--mca", "plm", "rsh", "--hostfile", "hosts.txt"]),
])
@pytest.mark.parametrize("as_root", [False, True])
def test_the_open_mpi_command_line_for_each_launcher(launcher, hostfile, head, as_root):
    cmd = ml.build_command("train.py", ["--lr", 0.1], 4, 1, hostfile=hostfile,
                           launcher=launcher, mpiexec="/usr/bin/mpiexec", python="/py",
                           environ={}, flavour="openmpi", as_root=as_root)
    root = ["--allow-run-as-root"] if as_root else []
    assert cmd.argv == ["/usr/bin/mpiexec", *root, *head, *OMPI_ENV, *RANKS]
    assert cmd.env == {}


def test_open_mpi_gets_the_timeout_and_the_watch_like_mpich():
    cmd = ml.build_command("train.py", [], 2, mpiexec="mpiexec", python="/py", timeout=30,
                           environ={"OMP_NUM_THREADS": "2"}, flavour="openmpi",
                           as_root=False, report_dir="/tmp/r")
    assert cmd.env == {"MPIEXEC_TIMEOUT": "30"}        # orterun and prterun read it too
    assert cmd.argv == ["mpiexec", "--host", "localhost:2", "--bind-to", "none",
                        "-x", "MINPY_KVSTORE_SERVERS=0", "-x", "MINPY_NUM_WORKERS=2",
                        "-x", "PYTHONUNBUFFERED=1", "-x", f"{ml.REPORTS_VARIABLE}=/tmp/r",
                        "-n", "2", "/py", "-m", "mpi4py", "-m", "minpy.kvstore.launch",
                        "--rank", "train.py"]


def test_mpich_is_the_default_and_root_changes_nothing_for_it():
    plain = ml.build_command("train.py", [], 2, python="/py", environ={})
    assert plain == ml.build_command("train.py", [], 2, python="/py", environ={},
                                     flavour="mpich", as_root=True)
    assert plain.argv[1:5] == ["-launcher", "fork", "-hosts", "localhost"]


def test_root_is_told_from_the_user_id(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert "--allow-run-as-root" in ml.build_command("t.py", python="/py",
                                                     flavour="openmpi").argv
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "--allow-run-as-root" not in ml.build_command("t.py", python="/py",
                                                         flavour="openmpi").argv


def test_an_unknown_flavour_is_named():
    with pytest.raises(ml.LaunchError, match="^--mpi must be one of mpich, openmpi; got 'lam'"):
        ml.build_command("train.py", n=2, flavour="lam")


@pytest.mark.parametrize("text,converted", [
    ("node1:2\nnode2:4\n", "node1 slots=2\nnode2 slots=4\n"),
    ("# hosts\nnode1:2  # the big one\nnode2\n\n",
     "# hosts\nnode1 slots=2 # the big one\nnode2\n\n"),
    ("node1 slots=2\nnode2\n", None),          # already Open MPI's (or plain hosts)
])
def test_an_mpich_hostfile_is_converted_for_open_mpi(text, converted):
    assert mf.openmpi_hostfile(text) == converted


# ---- stand-in Open MPI mpiexecs -----------------------------------------------------------

def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _open_mpi(tmp_path, run="exit 0\n"):
    """A stand-in Open MPI mpiexec: ``--version`` as orterun 4.1.6 answers it; any other
    call writes its arguments and the hostfile it names to ``tmp_path/called``, then
    runs ``run``."""
    called = tmp_path / "called"
    return _script(tmp_path / "mpiexec", f"""if [ "$1" = --version ]; then
  printf '{OPENMPI_4}'; exit 0
fi
for a in "$@"; do printf '%s\\n' "$a"; done > {called}
prev=
for a in "$@"; do
  if [ "$prev" = --hostfile ]; then echo '--- hostfile'; cat "$a"; fi; prev=$a
done >> {called}
{run}""")


def test_the_flavour_comes_from_mpiexec_and_is_checked_against_mpi4py(tmp_path):
    mpiexec = _open_mpi(tmp_path)
    assert mf.probe_mpiexec(mpiexec) == ("openmpi", OPENMPI_4.strip())
    ompi_python = _script(tmp_path / "ompi-python", f"printf '{LIB_OPENMPI}\\n'\n")
    assert ml.mpi_flavour(mpiexec, python=ompi_python) == "openmpi"
    mpich_python = _script(tmp_path / "mpich-python", f"printf '{LIB_MPICH}'\n")
    with pytest.raises(ml.LaunchError, match=r"mpiexec is Open MPI's mpiexec \(mpiexec "
                       r"\(OpenRTE\) 4.1.6\), but mpi4py of .*mpich-python is built on "
                       r"MPICH .*MPICH Version: +4.2.0\): its ranks would each run alone"):
        ml.mpi_flavour(mpiexec, python=mpich_python)
    # mpi4py's library cannot be told: no complaint
    assert ml.mpi_flavour(mpiexec, python=_script(tmp_path / "bad", "exit 1\n")) == "openmpi"
    # an mpiexec that names no flavour (or fails) is taken for hydra, as before
    assert ml.mpi_flavour(_script(tmp_path / "quiet", "exit 0\n")) == "mpich"
    assert ml.mpi_flavour(_script(tmp_path / "fails", "echo no; exit 3\n")) == "mpich"


def test_a_version_probe_that_hangs_is_given_up(tmp_path):
    # its child keeps the output open: the probe must not wait for it
    hangs = _script(tmp_path / "hangs", "sleep 30 &\nsleep 30\n")
    assert mf._output([hangs], timeout=0.5) is None


@needs_mpi4py
def test_open_mpi_is_run_with_its_own_options_and_hostfile(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    mpiexec = _open_mpi(tmp_path)
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:2\nnode2:2\n")
    status = ml.launch(JOB, ["report"], n=3, servers=1, hostfile=str(hosts), mpiexec=mpiexec,
                       flavour="openmpi", timeout=20)
    assert status == 0
    called = (tmp_path / "called").read_text().split("--- hostfile\n")
    argv = called[0].splitlines()
    assert argv[:2] == ["--allow-run-as-root", "--hostfile"]
    assert argv[2] != str(hosts)                     # a converted copy, since removed
    assert called[1] == "node1 slots=2\nnode2 slots=2\n"
    assert "-x" in argv and "MINPY_NUM_WORKERS=3" in argv and "-genv" not in argv
    assert argv[argv.index("-n") + 1] == "4"


@needs_mpi4py
def test_an_open_mpi_timeout_that_mpiexec_reports_as_0_still_fails(tmp_path, capfd):
    mpiexec = _open_mpi(tmp_path, run="sleep 1.5\nexit 0\n")
    status = ml.launch(JOB, ["sleep"], n=2, mpiexec=mpiexec, flavour="openmpi", timeout=1)
    assert status == mf.TIMEOUT_STATUS["openmpi"] == errno.ETIMEDOUT
    assert "the job ran past --timeout 1 s, so it was ended" in capfd.readouterr().err


def test_the_dry_run_tells_open_mpi_and_notes_the_hostfile(tmp_path):
    mpiexec = _open_mpi(tmp_path)
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:2\n")
    status, out, err, _ = run_launcher("--dry-run", "-n", "2", "--hostfile", str(hosts),
                                       "--mpiexec", mpiexec, JOB, "report")
    assert status == 0, err
    assert shlex.split(out) == ml.build_command(JOB, ["report"], 2, hostfile=str(hosts),
                                                mpiexec=mpiexec, environ=_env(),
                                                flavour="openmpi").argv
    assert "'host slots=N' form" in err
    status, out, err, _ = run_launcher("--dry-run", "--mpi", "openmpi", "-n", "2",
                                       "--mpiexec", "/x/mpiexec", JOB)
    assert status == 0 and "--host localhost:2" in out, err


def test_a_rank_under_open_mpi_reports_to_the_watch(tmp_path):
    # Open MPI sets OMPI_COMM_WORLD_RANK where hydra sets PMI_RANK
    script = tmp_path / "ok.py"
    script.write_text("print('ran')\n")
    env = {k: v for k, v in os.environ.items() if k != "PMI_RANK"}
    env.update(OMPI_COMM_WORLD_RANK="1", PYTHONPATH=ROOT, **{ml.REPORTS_VARIABLE: str(tmp_path)})
    out = subprocess.run([sys.executable, "-m", "minpy.kvstore.launch", "--rank", str(script)],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "ran\n", out.stderr
    assert (tmp_path / "start-1").exists() and (tmp_path / "done-1").exists()


def test_open_mpi_shared_memory_is_watched_too():
    assert "/dev/shm/vader_segment.*" in ml.SHM_PATTERNS
    assert "/dev/shm/mpich_shm_*" in ml.SHM_PATTERNS


def test_each_flavour_reports_a_killed_rank_with_its_own_status():
    """Hydra's mpiexec exits with the signal's number, Open MPI's with 128 + it; the
    launcher's note on a failed job reads the status as its flavour's mpiexec meant it."""
    assert mf.killed_status("mpich", signal.SIGKILL) == 9
    assert mf.killed_status("openmpi", signal.SIGKILL) == 137
    with pytest.raises(ValueError, match="killed_status: flavour must be one of"):
        mf.killed_status("lam", 9)
    note = "is also how mpiexec reports a rank killed by SIGKILL"
    assert f"9 {note}" in ml._explain(9, 9, None, None, 0.1, False, "mpich")
    assert note not in ml._explain(9, 9, None, None, 0.1, False, "openmpi")   # sys.exit(9)
    assert f"137 {note}" in ml._explain(137, 137, None, None, 0.1, False, "openmpi")
    assert note not in ml._explain(137, 137, None, None, 0.1, False, "mpich")
    assert "'BAD TERMINATION'" in ml._explain(1, 1, None, None, 0.1, False, "mpich")
    assert "mpiexec noticed that process rank" in \
        ml._explain(1, 1, None, None, 0.1, False, "openmpi")


def test_a_rank_that_left_by_os_exit_is_named_when_mpiexec_failed_the_job(tmp_path):
    """Open MPI's mpiexec fails a job (status 1) whose rank called os._exit(0) without
    MPI_Finalize; the reports still name that rank, and only it."""
    for rank in range(3):
        (tmp_path / f"start-{rank}").write_text(f"{1000 + rank}\n")
    (tmp_path / "exit-1").write_text("0\n")
    message = ml._explain_unfinished(
        {r: c for r, c in ml._unfinished_ranks(str(tmp_path)).items() if c is not None}, 1, 1)
    assert message.startswith("minpy.kvstore.launch: rank 1 ended abnormally: it called "
                              "os._exit(0)")
    assert "rank 0" not in message and "rank 2" not in message
    assert "mpiexec reported exit status" not in message      # its status stands
