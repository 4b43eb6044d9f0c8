"""Running real MPI jobs from tests: a hard timeout, and MPICH's leftover
shared-memory files (a killed job leaves /dev/shm/mpich_shm_*) removed."""
import glob
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
    reason='real jobs need MPICH and mpi4py: pip install mpi4py mpich')


def run_mpi(mpiexec, n, script, *args, timeout=120, env=None, cwd=None):
    """``mpiexec -n N python -m mpi4py script args...`` with minpy importable, one BLAS
    thread per rank, ``MPIEXEC_TIMEOUT`` = ``timeout`` (and a subprocess timeout a
    little longer); returns the CompletedProcess."""
    full = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPIEXEC_TIMEOUT=str(timeout),
                PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full.update(env or {})
    before = set(glob.glob("/dev/shm/mpich_shm_*"))
    try:
        return subprocess.run([mpiexec, "-n", str(n), sys.executable, "-m", "mpi4py", script,
                               *args], env=full, capture_output=True, text=True,
                              timeout=timeout + 15, cwd=cwd)
    finally:
        for f in set(glob.glob("/dev/shm/mpich_shm_*")) - before:
            try:
                os.remove(f)
            except OSError:
                pass
