"""Start a minpy job on MPI ranks: ``python -m minpy.kvstore.launch -n 4 script.py args...``.

The launcher wraps ``mpiexec``: MPICH's (``pip install mpi4py mpich`` installs
MPICH and mpi4py; the mpich wheel puts ``mpiexec`` beside the Python
interpreter; Intel MPI's and MVAPICH's take the same options) or Open MPI's.
Which one it is comes from ``mpiexec --version`` (or ``--mpi mpich|openmpi``),
and the options are spelt for it (see minpy.kvstore.mpi_flavours). mpi4py must
be built on the same MPI: when ``MPI.Get_library_version()`` names the other
one, the ranks would each run alone, so the launcher refuses to start. It
starts N + S ranks, each running

    <this python> -m mpi4py script.py args...

``python -m mpi4py`` turns an uncaught exception on one rank into MPI_Abort,
so the job ends instead of the other ranks waiting for it forever.

Roles. The first N ranks of COMM_WORLD are workers, the last S
(``--servers S``) are parameter-server ranks. Every rank gets
``MINPY_KVSTORE_SERVERS=S`` (the contract with minpy.kvstore) and
``MINPY_NUM_WORKERS=N``.

Threads. Every rank also gets ``OMP_NUM_THREADS=1`` and
``OPENBLAS_NUM_THREADS=1`` unless you set them yourself (OpenBLAS falls back
to ``OMP_NUM_THREADS``, so setting that one keeps OpenBLAS's default off
too): each rank's BLAS would otherwise start one thread per core, and N
ranks on one machine would run N times as many threads as there are cores,
which makes the job slower, not faster. ``PYTHONUNBUFFERED=1`` (unless set)
makes what a rank prints show up at once, and not be lost when the job is
torn down.

Where the ranks run (``--launcher``; MPICH's options, then Open MPI's):

  local   every rank on this machine (the default without --hostfile):
          mpiexec -launcher fork -hosts localhost;
          Open MPI: --host localhost:N --bind-to none (N ranks whatever the
          number of cores)
  mpi     mpiexec's own choice of hosts: the hosts of --hostfile
          (mpiexec -f FILE, Open MPI: --hostfile FILE; the default with
          --hostfile), or without one a batch system's allocation (Slurm,
          PBS, ...) or this machine
  ssh     mpiexec starts the ranks over ssh on the hosts of --hostfile
          (mpiexec -launcher ssh -f FILE; Open MPI: --mca plm rsh --hostfile
          FILE); needs password-less ssh

A hostfile has one ``host`` or ``host:slots`` per line (MPICH's format); for
Open MPI the launcher passes a copy in its ``host slots=N`` form. Every rank's
variables go as ``-genv NAME VALUE`` (Open MPI: ``-x NAME=VALUE``). Run as
root, Open MPI's mpiexec gets ``--allow-run-as-root``. On other hosts the same
Python (same path), minpy, mpi4py and the script must exist; the ranks start
in the current directory's path.

Ending. A rank that raises, exits with a non-zero status or is killed makes
mpiexec end every other rank; the launcher then exits with the job's status
and says so on stderr. ``--timeout SEC`` bounds the whole job
(``MPIEXEC_TIMEOUT``, which MPICH and Open MPI both honour; the launcher kills
what is left should mpiexec overrun it). SIGINT, SIGTERM and SIGHUP sent to the launcher are
passed on to mpiexec, which ends the ranks; the launcher then exits with
128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM), and kills
whatever is left of the job 5 s later, or at once on a third signal.

Abnormal ends mpiexec does not report. MPICH's mpiexec exits with 0 when a
rank leaves by ``os._exit(0)`` (skipping Python's exit: atexit handlers,
flushing what it printed, MPI_Finalize), even after killing the other ranks
for it. So each rank runs the script through ``python -m minpy.kvstore.launch --rank``,
which notes in a temporary folder of the launcher's when the rank starts, when
it ends with a normal Python exit and when it calls ``os._exit``; a rank that
started but did not end normally fails the job (exit status 1, the ranks
named on stderr). Open MPI's mpiexec fails such a job itself (exit status 1,
when the rank had not called MPI_Finalize); the launcher then still names the
rank that called ``os._exit``. Ranks on other hosts are watched only where
that folder is on a shared file system. ``--dry-run`` prints the command
without this watch.

Shared memory. MPICH leaves its ``/dev/shm/mpich_shm_*`` files (Open MPI 4
its ``/dev/shm/vader_segment.*``) behind when a job is aborted, killed or
signalled. After the job, however it ended, the launcher removes the ones its
ranks mapped; other jobs' files are left alone.

Exit status: the job's (mpiexec's: for a rank killed by signal N, MPICH's
hydra gives N, Open MPI's 128 + N); 1 when mpiexec said 0 but a rank did
not end normally; 128 + N when ended by signal N; 2 when the job could not
be started (bad options, no mpiexec or mpi4py).

From Python: ``minpy.kvstore.launch.launch("train.py", ["--epochs", "3"], n=2)``
returns the exit status; ``build_command`` gives the command line without
running it (``--dry-run`` prints it).
"""
import argparse
import glob
import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import NamedTuple

from . import mpi_flavours as _flavours
from .rank_watch import (REPORTS_VARIABLE, _PROG, _RANK_FLAG, _mapped_shm, _ranks,
                         _reported_shm, _unfinished_ranks, run_rank)

__all__ = ["LaunchError", "Command", "LAUNCHERS", "FLAVOURS", "rank_environment",
           "build_command", "find_mpiexec", "check_mpi4py", "mpi_flavour", "launch",
           "run_rank", "main"]

LAUNCHERS = ("local", "mpi", "ssh")
FLAVOURS = _flavours.FLAVOURS     # mpich (hydra: MPICH, Intel MPI, MVAPICH), openmpi
INSTALL = 'pip install mpi4py mpich'
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
KILL_GRACE = 5.0        # seconds between a forwarded signal and killing what is left
TIMEOUT_STATUS = _flavours.TIMEOUT_STATUS["mpich"]  # hydra's status for a timed-out job
TIMEOUT_GRACE = 10.0    # seconds mpiexec may overrun --timeout before the launcher steps in
ABNORMAL_STATUS = 1     # a job mpiexec says ended well (0) but in which a rank did not finish
SHM_PATTERNS = _flavours.SHM_PATTERNS      # MPI's shared memory; an aborted job leaves it
SHM_ATTRIBUTE_S = 1.0   # seconds a new segment may go unmapped by the job before it is foreign
_POLL = 0.1             # seconds between checks on a running job
# signals that kill a rank; mpiexec reports such a rank with the signal's number
_KILL_SIGNALS = frozenset(int(s) for s in (signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV,
                                           signal.SIGABRT, signal.SIGBUS, signal.SIGFPE,
                                           signal.SIGILL))


class LaunchError(Exception):
    """A job that cannot be started as asked; the message says what is wrong and how to fix it."""


class Command(NamedTuple):
    """The command line that starts a job: ``argv`` for ``mpiexec`` and ``env``, the
    variables added to mpiexec's own environment (the ranks' are in ``argv`` as
    ``-genv NAME VALUE``, for Open MPI ``-x NAME=VALUE``)."""
    argv: list
    env: dict

    def shell(self):
        """The command as one line for a POSIX shell (variables first)."""
        prefix = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return " ".join(prefix + [shlex.join(self.argv)])


def rank_environment(n, servers=0, environ=None):
    """The variables every rank gets, as {name: value}: the roles
    (``MINPY_KVSTORE_SERVERS``, ``MINPY_NUM_WORKERS``), one BLAS/OpenMP thread per
    rank and unbuffered output unless ``environ`` (default ``os.environ``) sets them."""
    environ = os.environ if environ is None else environ
    env = {"MINPY_KVSTORE_SERVERS": str(servers), "MINPY_NUM_WORKERS": str(n)}
    if "OMP_NUM_THREADS" not in environ:
        env["OMP_NUM_THREADS"] = "1"
    if "OPENBLAS_NUM_THREADS" not in environ and "OMP_NUM_THREADS" not in environ:
        env["OPENBLAS_NUM_THREADS"] = "1"       # OpenBLAS falls back to OMP_NUM_THREADS
    if "PYTHONUNBUFFERED" not in environ:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def _check_counts(n, servers, timeout):
    """Raise LaunchError unless the rank counts and the timeout make sense."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LaunchError(f"-n must be a whole number of worker ranks, at least 1; got {n!r}")
    if isinstance(servers, bool) or not isinstance(servers, int) or servers < 0:
        raise LaunchError("--servers must be a whole number of parameter-server ranks, "
                          f"0 or more; got {servers!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)
                                or timeout < 1):
        raise LaunchError("--timeout must be a whole number of seconds, at least 1 "
                          f"(MPIEXEC_TIMEOUT); got {timeout!r}")


def _pick_launcher(launcher, hostfile):
    """The launcher to use: the one asked for, checked against ``hostfile``, or the
    default (``mpi`` with a hostfile, ``local`` without)."""
    if launcher is None:
        return "mpi" if hostfile else "local"
    if launcher not in LAUNCHERS:
        raise LaunchError(f"--launcher must be one of {', '.join(LAUNCHERS)}; got {launcher!r}")
    if launcher == "local" and hostfile:
        raise LaunchError("--launcher local runs every rank on this machine and takes no "
                          "--hostfile; drop --hostfile, or use --launcher mpi or ssh to run "
                          "on the hosts it names")
    if launcher == "ssh" and not hostfile:
        raise LaunchError("--launcher ssh needs --hostfile FILE naming the hosts to ssh to "
                          "(one 'host' or 'host:slots' per line)")
    return launcher


def _check_flavour(flavour):
    """Raise LaunchError unless ``flavour`` is one of FLAVOURS."""
    if flavour not in FLAVOURS:
        raise LaunchError(f"--mpi must be one of {', '.join(FLAVOURS)}; got {flavour!r}")


def build_command(script, args=(), n=1, servers=0, *, hostfile=None, launcher=None,
                  mpiexec="mpiexec", python=None, timeout=None, environ=None,
                  report_dir=None, flavour="mpich", as_root=None):
    """The :class:`Command` that runs ``script args...`` on ``n`` worker ranks and
    ``servers`` parameter-server ranks (the last ones). Pure: checks the values
    but not the files. ``python`` defaults to ``sys.executable``, ``environ`` (whose
    thread settings are left alone) to ``os.environ``. With ``report_dir`` each
    rank runs the script through ``-m minpy.kvstore.launch --rank``, which records in that
    folder whether the rank ended with a normal Python exit (see :func:`launch`).
    ``flavour`` ("mpich" or "openmpi") says whose options mpiexec takes;
    ``as_root`` (default: whether this process runs as root) adds Open MPI's
    ``--allow-run-as-root``. An Open MPI hostfile must be in its own form
    (see :func:`launch`, which converts one)."""
    _check_counts(n, servers, timeout)
    _check_flavour(flavour)
    launcher = _pick_launcher(launcher, hostfile)
    if as_root is None:
        as_root = os.geteuid() == 0
    argv = [os.fspath(mpiexec), *_flavours.root_args(flavour, as_root)]
    argv += _flavours.launcher_args(flavour, launcher, hostfile, n + servers)
    ranks = rank_environment(n, servers, environ)
    if report_dir is not None:
        ranks[REPORTS_VARIABLE] = os.fspath(report_dir)
    argv += _flavours.env_args(flavour, ranks)
    argv += ["-n", str(n + servers), python or sys.executable, "-m", "mpi4py"]
    if report_dir is not None:
        argv += ["-m", "minpy.kvstore.launch", _RANK_FLAG]
    argv += [os.fspath(script), *[str(a) for a in args]]
    env = {} if timeout is None else {"MPIEXEC_TIMEOUT": str(timeout)}
    return Command(argv, env)


def _executable(path):
    """Whether ``path`` is a file this user may run."""
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_mpiexec(override=None, python=None, path=None):
    """The path of ``mpiexec``: ``override`` if given (a path, or a name looked up on
    ``path``), else the one beside ``python`` (default ``sys.executable``; the mpich
    wheel installs it there), else the first on ``path`` (default ``$PATH``).
    Raises LaunchError naming the fix when there is none."""
    if override:
        found = override if os.sep in override else shutil.which(override, path=path)
        if found and _executable(found):
            return found
        raise LaunchError(f"--mpiexec {override}: no such executable; give the path of "
                          f"MPICH's or Open MPI's mpiexec, or leave --mpiexec out to use "
                          f"the one that {INSTALL} installs beside Python")
    beside = os.path.join(os.path.dirname(python or sys.executable), "mpiexec")
    if _executable(beside):
        return beside
    found = shutil.which("mpiexec", path=path)
    if found:
        return found
    raise LaunchError(f"no mpiexec beside {python or sys.executable} or on PATH: install "
                      f"MPICH and mpi4py with {INSTALL} (the mpich wheel puts mpiexec "
                      "beside the Python interpreter), or name one with --mpiexec PATH")


def check_mpi4py():
    """Raise LaunchError unless this interpreter (the ranks' one) can import mpi4py."""
    if importlib.util.find_spec("mpi4py") is None:
        raise LaunchError(f"mpi4py is not installed for {sys.executable}, and every rank "
                          f"runs '{os.path.basename(sys.executable)} -m mpi4py script.py': "
                          f"install it with {INSTALL}")


def mpi_flavour(mpiexec, python=None):
    """The flavour ("mpich" or "openmpi") of ``mpiexec``, from ``mpiexec --version``;
    "mpich" when that names neither (hydra's options, as before flavours were told
    apart). Raises LaunchError when mpi4py of ``python`` (default
    ``sys.executable``) is built on the other flavour: each rank would then start
    as an MPI job of its own."""
    flavour, text = _flavours.probe_mpiexec(mpiexec)
    if flavour is None:
        return "mpich"
    library, version = _flavours.probe_mpi4py(python)
    if library is not None and library != flavour:
        names = {"mpich": "MPICH (or an MPICH-like MPI)", "openmpi": "Open MPI"}
        raise LaunchError(
            f"{mpiexec} is {names[flavour]}'s mpiexec ({text.splitlines()[0]}), but mpi4py "
            f"of {python or sys.executable} is built on {names[library]} "
            f"({version.splitlines()[0]}): its ranks would each run alone, as COMM_WORLD "
            f"of size 1. Name the mpiexec of mpi4py's MPI with --mpiexec PATH, or install "
            f"mpi4py on this one (for MPICH: {INSTALL})")
    return flavour


def _check_files(script, hostfile):
    """Raise LaunchError unless the script and the hostfile exist."""
    if not os.path.isfile(script):
        raise LaunchError(f"{script}: no such file (the Python script every rank runs)")
    if hostfile and not os.path.isfile(hostfile):
        raise LaunchError(f"--hostfile {hostfile}: no such file (it lists the hosts, one "
                          "'host' or 'host:slots' per line)")


def _descendants(pid):
    """The pids of every process below ``pid`` (from /proc; empty where there is none).
    Hydra starts its proxies and the ranks each in a session of their own, so a
    signal to mpiexec's process group does not reach them."""
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal(proc, signum):
    """Send ``signum`` to mpiexec's process group (mpiexec passes it on to the ranks)."""
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_job(proc):
    """SIGKILL mpiexec and everything it started."""
    for pid in _descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _signal(proc, signal.SIGKILL)


class _Forwarder:
    """While a job runs, SIGINT/SIGTERM/SIGHUP to the launcher go to mpiexec (the
    first two as they are, a third as SIGKILL to the whole job); the previous
    handlers come back afterwards. Installed before mpiexec starts, so a signal in
    between is held and passed on once it runs. Only in the main thread, where
    Python allows signal handlers."""

    def __init__(self):
        self.proc, self.signum, self.count, self.at, self.saved = None, None, 0, None, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in FORWARDED_SIGNALS:
                self.saved[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc):
        for s, handler in self.saved.items():
            signal.signal(s, handler)

    def attach(self, proc):
        """Forward to ``proc`` from now on, and pass on a signal that came before it."""
        self.proc = proc
        if self.signum is not None:
            self._forward(self.signum)

    def _handle(self, signum, frame):
        """The signal handler: note the first signal's time, forward once mpiexec runs."""
        self.count += 1
        if self.signum is None:
            self.signum, self.at = signum, time.monotonic()
        if self.proc is not None:
            self._forward(signum)

    def _forward(self, signum):
        """Pass ``signum`` on to mpiexec; from the third signal on, kill the job."""
        if self.count >= 3:
            _kill_job(self.proc)
        else:
            _signal(self.proc, signum)


def _wait(proc, forwarder, timeout, tick=None):
    """Wait for mpiexec and return (its status, whether it overran ``timeout``). What is
    left of the job is killed KILL_GRACE s after a forwarded signal; should mpiexec
    overrun ``timeout`` by TIMEOUT_GRACE s, it gets SIGTERM, then after KILL_GRACE s
    the job is killed. ``tick()`` runs between the checks."""
    start, overran_at = time.monotonic(), None
    while True:
        if tick is not None:
            tick()
        try:
            return proc.wait(timeout=_POLL), overran_at is not None
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if forwarder.at is not None and now - forwarder.at > KILL_GRACE:
            _kill_job(proc)
        if timeout is not None and now - start > timeout + TIMEOUT_GRACE:
            if overran_at is None:
                overran_at = now
                _signal(proc, signal.SIGTERM)
            elif now - overran_at > KILL_GRACE:
                _kill_job(proc)


def _shm_files():
    """The MPI shared-memory files now in /dev/shm (SHM_PATTERNS)."""
    return {path for pattern in SHM_PATTERNS for path in glob.glob(pattern)}


class _SharedMemory:
    """The MPI shared-memory files (SHM_PATTERNS: MPICH's ``/dev/shm/mpich_shm_*``,
    Open MPI's ``/dev/shm/vader_segment.*``) of one job: those that appear while it
    runs and that a process of the job maps. MPI removes them when the job ends
    normally and may leave them behind when it is aborted or killed; files of
    other jobs on this machine, running or not, are left alone."""

    def __init__(self):
        self.before = _shm_files()
        self.ours, self.foreign, self.first_seen = set(), set(), {}

    def watch(self, pid):
        """Attribute the segments that appeared since the job started to the job below
        ``pid`` (mpiexec) when one of its processes maps them; a segment none of them
        maps within SHM_ATTRIBUTE_S s belongs to another job."""
        new = _shm_files() - self.before - self.ours - self.foreign
        if not new:
            return
        now = time.monotonic()
        mapped = _mapped_shm([pid] + _descendants(pid))
        for path in new:
            if path in mapped:
                self.ours.add(path)
            elif now - self.first_seen.setdefault(path, now) > SHM_ATTRIBUTE_S:
                self.foreign.add(path)

    def claim(self, paths):
        """Count as the job's those of ``paths`` (segments its ranks reported mapping)
        that appeared since it started."""
        self.ours |= (set(paths) - self.before) & _shm_files()

    def remove(self):
        """Remove the job's segments that are still there."""
        for path in sorted(self.ours):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                print(f"{_PROG}: could not remove the job's shared memory {path}: {e}",
                      file=sys.stderr, flush=True)


def _explain_unfinished(unfinished, rc, status):
    """The paragraph for stderr about ranks that ended without a normal Python exit
    in a job mpiexec reports as ``rc`` (its exit status being ``status``)."""
    exited = {r: c for r, c in unfinished.items() if c is not None}
    others = [r for r in unfinished if r not in exited]
    parts = [f"{_PROG}: rank {r} ended abnormally: it called os._exit({c}) before the job "
             "finished, which skips Python's exit (atexit handlers, flushing what it "
             "printed) and MPI_Finalize." for r, c in exited.items()]
    if others and exited:
        parts.append(f"{_ranks(others).capitalize()} ended with it, unfinished (mpiexec "
                     "ends every other rank when one leaves without MPI_Finalize).")
    elif others:
        parts.append(f"{_PROG}: {_ranks(others)} ended abnormally: without a normal Python "
                     "exit (os._exit, a C-level exit() or a crash that mpiexec did not "
                     "report), before the job finished.")
    if rc == 0:
        parts.append(f"mpiexec reported exit status {rc}, but the job did not finish "
                     f"(exit status {status}).")
    return " ".join(parts)


def _signame(signum):
    """``SIGTERM`` for 15; ``signal 99`` for a number without a name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# how each flavour's mpiexec names the rank that failed a job
_NOTICE = {"mpich": "mpiexec's 'BAD TERMINATION' notice",
           "openmpi": "mpiexec's notice ('mpiexec noticed that process rank N ...')"}


def _killed_by(rc, flavour):
    """The signal whose killing of a rank ``flavour``'s mpiexec reports as status
    ``rc`` (hydra: the signal's number; Open MPI: 128 + it); None when there is none."""
    found = [s for s in _KILL_SIGNALS if _flavours.killed_status(flavour, s) == rc]
    return found[0] if found else None


def _explain(status, rc, signum, timeout, elapsed, overran, flavour="mpich"):
    """The paragraph for stderr about a job that did not end with status 0, run by
    ``flavour``'s mpiexec."""
    if signum is not None:
        return (f"{_PROG}: stopped the job on {_signame(signum)}: the signal "
                f"went to mpiexec, which ends every rank (exit status {status}).")
    if overran:
        return (f"{_PROG}: mpiexec overran --timeout {timeout} s by {TIMEOUT_GRACE:g} s, "
                f"so {_PROG} ended the job itself (exit status {status}).")
    if rc < 0:
        return (f"{_PROG}: mpiexec was killed by {_signame(-rc)}, which ended "
                f"the job (exit status {status}).")
    if timeout is not None and elapsed >= timeout:
        return (f"{_PROG}: the job ran past --timeout {timeout} s, so it was ended: "
                f"mpiexec stopped every rank (exit status {status}). Look above "
                "for a rank that stalled, or raise --timeout if the job needs longer.")
    why, killed = "", _killed_by(rc, flavour)
    if killed is not None:
        why = f"; {rc} is also how mpiexec reports a rank killed by {_signame(killed)}"
    return (f"{_PROG}: the job failed with exit status {status} and was ended: when a rank "
            "raises an uncaught exception (python -m mpi4py then calls MPI_Abort), exits "
            "with a non-zero status or is killed, mpiexec stops every other rank "
            "(or mpiexec could not start the ranks at all). The rank's traceback or "
            f"{_NOTICE.get(flavour, _NOTICE['mpich'])} above says which rank{why}.")


def _converted_hostfile(hostfile):
    """The text of ``hostfile`` in Open MPI's form; None when it is in that form."""
    try:
        with open(hostfile) as f:
            return _flavours.openmpi_hostfile(f.read())
    except OSError as e:
        raise LaunchError(f"--hostfile {hostfile}: cannot read it: {e}") from e


def _openmpi_hostfile(hostfile, folder):
    """``hostfile`` as Open MPI reads it: itself, or a copy in ``folder`` with its
    ``host:slots`` lines written ``host slots=N``."""
    converted = _converted_hostfile(hostfile)
    if converted is None:
        return hostfile
    copy = os.path.join(folder, "hostfile")
    with open(copy, "w") as f:
        f.write(converted)
    return copy


def launch(script, args=(), n=1, servers=0, *, hostfile=None, launcher=None, timeout=None,
           mpiexec=None, dry_run=False, stdin=None, stdout=None, stderr=None, flavour=None):
    """Run ``script args...`` on ``n`` worker ranks and ``servers`` parameter-server
    ranks under mpiexec and return the job's exit status (128 + N when a
    signal N sent to this process ended it). ``flavour`` ("mpich" or "openmpi")
    says whose mpiexec it is; by default :func:`mpi_flavour` tells (and checks it
    against mpi4py's MPI). ``dry_run`` prints the command line
    instead and returns 0. ``stdin``/``stdout``/``stderr`` go to mpiexec as in
    :class:`subprocess.Popen`; this function's own message about a failed job goes
    to ``sys.stderr``. Signals are forwarded only when called from the main thread.
    A job in which a rank did not end with a normal Python exit fails with
    ABNORMAL_STATUS even when mpiexec says 0; the job's MPI shared-memory files
    are removed afterwards (see the module's documentation).
    Raises LaunchError when the job cannot be started."""
    _check_counts(n, servers, timeout)
    if flavour is not None:
        _check_flavour(flavour)
    _check_files(script, hostfile)
    if dry_run:
        try:
            mpiexec = find_mpiexec(mpiexec)
            flavour = flavour or _flavours.probe_mpiexec(mpiexec)[0]
        except LaunchError:
            mpiexec = mpiexec or "mpiexec"        # printing it needs no MPI here
        flavour = flavour or "mpich"
        command = build_command(script, args, n, servers, hostfile=hostfile,
                                launcher=launcher, mpiexec=mpiexec, timeout=timeout,
                                flavour=flavour)
        if flavour == "openmpi" and hostfile and _converted_hostfile(hostfile):
            print(f"# {hostfile} is in MPICH's 'host:slots' form; a real run passes "
                  "Open MPI a copy in its 'host slots=N' form", file=sys.stderr)
        print(command.shell(), flush=True)
        return 0
    mpiexec = find_mpiexec(mpiexec)
    _pick_launcher(launcher, hostfile)
    check_mpi4py()
    flavour = flavour or mpi_flavour(mpiexec)
    reports = tempfile.mkdtemp(prefix="minpy-launch-")
    try:
        if flavour == "openmpi" and hostfile:
            hostfile = _openmpi_hostfile(hostfile, reports)
        command = build_command(script, args, n, servers, hostfile=hostfile,
                                launcher=launcher, mpiexec=mpiexec, timeout=timeout,
                                report_dir=reports, flavour=flavour)
        return _run(command, timeout, reports, stdin, stdout, stderr, flavour)
    finally:
        shutil.rmtree(reports, ignore_errors=True)


def _run(command, timeout, reports, stdin, stdout, stderr, flavour="mpich"):
    """Run ``command``, whose ranks report in the folder ``reports``; return the job's
    exit status (see :func:`launch`) after removing the job's shared memory."""
    env = dict(os.environ, **command.env)
    start = time.monotonic()
    shm = _SharedMemory()
    try:
        with _Forwarder() as forwarder:
            try:
                proc = subprocess.Popen(command.argv, env=env, start_new_session=True,
                                        stdin=stdin, stdout=stdout, stderr=stderr)
            except OSError as e:
                raise LaunchError(f"could not start {command.argv[0]}: {e}; give an "
                                  f"mpiexec with --mpiexec PATH, or reinstall it with "
                                  f"{INSTALL}") from e
            forwarder.attach(proc)
            try:
                rc, overran = _wait(proc, forwarder, timeout, lambda: shm.watch(proc.pid))
            except BaseException:
                _kill_job(proc)                     # never leave the job running behind us
                proc.wait()
                raise
    finally:
        shm.claim(_reported_shm(reports))
        shm.remove()
    elapsed = time.monotonic() - start
    if forwarder.signum is not None:
        status = 128 + forwarder.signum
    else:
        status = 128 - rc if rc < 0 else rc
    if status == 0 and timeout is not None and elapsed >= timeout:
        # MPICH's hydra sometimes exits 0 after printing "APPLICATION TIMED OUT" (when a
        # proxy hits its demux error while being killed): a job that reached --timeout
        # was ended, whatever mpiexec says, so it fails as a timeout normally does
        status = rc = TIMEOUT_STATUS if flavour == "mpich" else \
            _flavours.TIMEOUT_STATUS[flavour]
    unfinished = _unfinished_ranks(reports)
    if status:
        print(_explain(status, rc, forwarder.signum, timeout, elapsed, overran, flavour),
              file=sys.stderr, flush=True)
        # Open MPI fails a job whose rank left by os._exit (without MPI_Finalize) itself;
        # the reports still say which rank did, and with what status
        exited = {r: c for r, c in unfinished.items() if c is not None}
        if exited and forwarder.signum is None:
            print(_explain_unfinished(exited, rc, status), file=sys.stderr, flush=True)
        return status
    # hydra reports 0 for a rank that left by os._exit(0), even after killing the others
    if unfinished:
        status = ABNORMAL_STATUS
        print(_explain_unfinished(unfinished, rc, status), file=sys.stderr, flush=True)
    return status


def _parser():
    """The command line's parser; ``--help`` shows this module's documentation."""
    doc = (__doc__ or "").split("\n\n", 1)
    parser = argparse.ArgumentParser(
        prog=f"python -m {_PROG}", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=doc[0], epilog=doc[1] if len(doc) > 1 else None)
    parser.add_argument("-n", "--workers", type=int, required=True, metavar="N",
                        help="worker ranks (the first N of COMM_WORLD)")
    parser.add_argument("-s", "--servers", type=int, default=0, metavar="S",
                        help="parameter-server ranks, after the workers (default 0)")
    parser.add_argument("--hostfile", metavar="FILE",
                        help="hosts to run on, one 'host' or 'host:slots' per line")
    parser.add_argument("--launcher", choices=LAUNCHERS,
                        help="local (default without --hostfile), mpi (default with "
                             "one) or ssh")
    parser.add_argument("--timeout", type=int, metavar="SEC",
                        help="end the whole job after SEC seconds (MPIEXEC_TIMEOUT)")
    parser.add_argument("--mpiexec", metavar="PATH",
                        help="the mpiexec to use (default: the one beside this "
                             "Python, else the first on PATH)")
    parser.add_argument("--mpi", choices=FLAVOURS,
                        help="whose mpiexec it is, to spell its options (default: "
                             "told by 'mpiexec --version')")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command line and exit")
    parser.add_argument("script", help="the Python script every rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return parser


def main(argv=None):
    """The command line: parse ``argv`` (default ``sys.argv[1:]``), run the job and
    return its exit status (2 when it cannot be started). ``--rank SCRIPT ARGS`` (how
    the launcher starts each rank) runs SCRIPT as :func:`run_rank` does."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == [_RANK_FLAG]:
        return run_rank(argv[1:])
    a = _parser().parse_args(argv)
    try:
        return launch(a.script, a.args, a.workers, a.servers, hostfile=a.hostfile,
                      launcher=a.launcher, timeout=a.timeout, mpiexec=a.mpiexec,
                      dry_run=a.dry_run, flavour=a.mpi)
    except LaunchError as e:
        print(f"{_PROG}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
