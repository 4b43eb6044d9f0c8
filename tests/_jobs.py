"""Running real MPI jobs from tests, on MPICH or Open MPI: each job goes through
``python -m minpy.kvstore.launch`` (which spells mpiexec's options for its flavour,
adds Open MPI's ``--allow-run-as-root`` for root, bounds the job with ``--timeout``
and removes the shared-memory files an aborted job leaves), and
:func:`mpi_flavour` tells the tests whose behaviour to expect."""
import functools
import importlib.util
import os
import subprocess
import sys

import pytest

from minpy.kvstore import launch as _launch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    MPIEXEC = _launch.find_mpiexec()
except _launch.LaunchError:
    MPIEXEC = None
needs_mpi = pytest.mark.skipif(
    MPIEXEC is None or importlib.util.find_spec("mpi4py") is None,
    reason="real jobs need an MPI (MPICH or Open MPI) and mpi4py built on it: "
           "pip install mpi4py mpich")


@functools.lru_cache(maxsize=None)
def mpi_flavour(mpiexec=None):
    """The flavour ("mpich" or "openmpi") of ``mpiexec`` (default MPIEXEC), as the
    launcher tells it; a test fails (LaunchError) when mpi4py is built on the other."""
    return _launch.mpi_flavour(mpiexec or MPIEXEC)


def run_mpi(mpiexec, n, script, *args, timeout=120, env=None, cwd=None):
    """``python -m minpy.kvstore.launch --mpiexec MPIEXEC -n W -s S --timeout T script
    args...`` for ``n`` = W + S ranks, where S is ``env``'s ``MINPY_KVSTORE_SERVERS``
    (default 0): minpy importable, one BLAS thread per rank, the job ended past
    ``timeout`` s (and the launcher killed should it overrun that). Returns the
    CompletedProcess; its stderr ends with the launcher's paragraph when the job failed."""
    full = dict(os.environ, OPENBLAS_NUM_THREADS="1",
                PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full.pop("MPIEXEC_TIMEOUT", None)
    full.update(env or {})
    servers = int(full.get("MINPY_KVSTORE_SERVERS", "0") or "0")
    argv = [sys.executable, "-m", "minpy.kvstore.launch", "--mpiexec", os.fspath(mpiexec),
            "-n", str(n - servers), "-s", str(servers), "--timeout", str(timeout),
            os.fspath(script), *[str(a) for a in args]]
    # past timeout, the launcher's own grace (TIMEOUT_GRACE + KILL_GRACE) ends the job
    return subprocess.run(argv, env=full, capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL,
                          timeout=timeout + _launch.TIMEOUT_GRACE + _launch.KILL_GRACE + 15)
