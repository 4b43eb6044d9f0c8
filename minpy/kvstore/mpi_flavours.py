"""The MPI flavours minpy.kvstore.launch drives, and how each spells its options.

Two families of ``mpiexec`` take different command lines:

  mpich    MPICH's hydra (also Intel MPI's and MVAPICH's mpiexec):
           ``-launcher fork -hosts localhost``, ``-f FILE``, ``-genv NAME VALUE``
  openmpi  Open MPI's (orterun in 4.x, prterun in 5.x): ``--host localhost:N``,
           ``--hostfile FILE``, ``-x NAME=VALUE``, and ``--allow-run-as-root``,
           without which it refuses to run as root

Both honour ``MPIEXEC_TIMEOUT``. :func:`flavour_of` maps the text of
``mpiexec --version`` or of mpi4py's ``MPI.Get_library_version()`` to a flavour;
:func:`probe_mpiexec` and :func:`probe_mpi4py` run those.
"""
import errno
import os
import re
import signal
import subprocess
import sys
import tempfile

__all__ = ["FLAVOURS", "TIMEOUT_STATUS", "SHM_PATTERNS", "SHM_PATTERN", "flavour_of",
           "killed_status", "probe_mpiexec", "probe_mpi4py", "launcher_args", "env_args",
           "root_args", "openmpi_hostfile"]

FLAVOURS = ("mpich", "openmpi")
# the status mpiexec exits with for a job ended by MPIEXEC_TIMEOUT: hydra's 255,
# orterun's ETIMEDOUT (orte_timeout_wakeup)
TIMEOUT_STATUS = {"mpich": 255, "openmpi": errno.ETIMEDOUT}
# shared memory an aborted job may leave: MPICH's, Open MPI 4's vader BTL's
SHM_PATTERN = {"mpich": "/dev/shm/mpich_shm_*", "openmpi": "/dev/shm/vader_segment.*"}
SHM_PATTERNS = tuple(SHM_PATTERN[f] for f in FLAVOURS)
PROBE_TIMEOUT = 10.0    # seconds `mpiexec --version` or the mpi4py probe may take

_OPENMPI = re.compile(r"Open MPI|OpenRTE|open-mpi\.org|Open RTE|PRRTE")
_MPICH = re.compile(r"HYDRA|MPICH|MVAPICH|Intel\(R\) MPI", re.IGNORECASE)
# mpi4py's library, without MPI_Init (allowed before it since MPI-3)
_LIBRARY_CODE = ("import mpi4py; mpi4py.rc.initialize = mpi4py.rc.finalize = False; "
                 "from mpi4py import MPI; print(MPI.Get_library_version())")


def flavour_of(text):
    """The flavour ("mpich" or "openmpi") that ``text`` (the output of
    ``mpiexec --version`` or of ``MPI.Get_library_version()``) names; None when it
    names neither."""
    if _OPENMPI.search(text):
        return "openmpi"
    if _MPICH.search(text):
        return "mpich"
    return None


def killed_status(flavour, signum):
    """The exit status ``mpiexec`` of ``flavour`` gives a job one of whose ranks was
    killed by signal ``signum``: hydra's is the signal's number (9 for SIGKILL),
    orterun's 128 + it (137), as a shell reports a killed command."""
    if flavour not in FLAVOURS:
        raise ValueError(f"killed_status: flavour must be one of {', '.join(FLAVOURS)}; "
                         f"got {flavour!r}")
    return 128 + int(signum) if flavour == "openmpi" else int(signum)


def _output(argv, timeout):
    """What ``argv`` prints (stdout and stderr) when it exits 0 within ``timeout`` s;
    None otherwise. Output goes to a file, not a pipe, so a child that outlives the
    command cannot keep this waiting."""
    with tempfile.TemporaryFile() as out:
        try:
            # Open MPI run by root refuses most things without these
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, env=env,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError:
            return None
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            return None
        out.seek(0)
        return out.read().decode(errors="replace") if rc == 0 else None


def probe_mpiexec(mpiexec, timeout=PROBE_TIMEOUT):
    """(flavour, text): what ``mpiexec --version`` says, and the flavour it names
    (None when it fails, runs past ``timeout`` s or names no flavour we know)."""
    text = _output([os.fspath(mpiexec), "--version"], timeout)
    return (None, "") if text is None else (flavour_of(text), text.strip())


def probe_mpi4py(python=None, timeout=PROBE_TIMEOUT):
    """(flavour, text): the MPI library mpi4py of ``python`` (default
    ``sys.executable``) is loaded with, per ``MPI.Get_library_version()`` (MPI is
    not initialised); (None, "") when that cannot be told."""
    text = _output([python or sys.executable, "-c", _LIBRARY_CODE], timeout)
    return (None, "") if text is None else (flavour_of(text), text.strip())


def launcher_args(flavour, launcher, hostfile, ranks):
    """mpiexec's options that say where the ``ranks`` ranks run, for ``launcher``
    (local, mpi or ssh; checked by the caller) and ``hostfile`` (a path or None)."""
    if flavour == "openmpi":
        if launcher == "local":
            # slots for every rank whatever the core count, and no binding (as hydra):
            # Open MPI would otherwise refuse more ranks than cores
            return ["--host", f"localhost:{ranks}", "--bind-to", "none"]
        if launcher == "ssh":
            return ["--mca", "plm", "rsh", "--hostfile", os.fspath(hostfile)]
        return ["--hostfile", os.fspath(hostfile)] if hostfile else []
    if launcher == "local":
        return ["-launcher", "fork", "-hosts", "localhost"]
    if launcher == "ssh":
        return ["-launcher", "ssh", "-f", os.fspath(hostfile)]
    return ["-f", os.fspath(hostfile)] if hostfile else []


def env_args(flavour, env):
    """mpiexec's options that give every rank the variables ``env`` ({name: value})."""
    argv = []
    for name, value in env.items():
        argv += ["-x", f"{name}={value}"] if flavour == "openmpi" else ["-genv", name, value]
    return argv


def root_args(flavour, as_root):
    """``--allow-run-as-root`` for Open MPI run by root (it refuses otherwise)."""
    return ["--allow-run-as-root"] if flavour == "openmpi" and as_root else []


def openmpi_hostfile(text):
    """``text``, a hostfile in MPICH's form (``host`` or ``host:slots`` per line), in
    Open MPI's (``host slots=N``); None when it needs no change. Comments and lines
    already in Open MPI's form are kept."""
    lines, changed = [], False
    for line in text.splitlines():
        body, hash_, comment = line.partition("#")
        match = re.fullmatch(r"\s*([^\s:]+):(\d+)\s*", body)
        if match:
            line, changed = f"{match[1]} slots={match[2]}" + (f" #{comment}" if hash_ else ""), True
        lines.append(line)
    return "".join(f"{line}\n" for line in lines) if changed else None
