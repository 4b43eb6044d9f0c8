"""A job for tests/kvstore/test_no_silent_jobs.py, run by ``python -m minpy.kvstore.launch``. Every rank
first prints ``shm RANK PATHS`` (the MPI shared-memory files it maps: MPICH's
/dev/shm/mpich_shm_*, Open MPI 4's /dev/shm/vader_segment.*); then argv[1]:

exit0       the last rank calls os._exit(0) mid-job; the others wait for it
finalized   every rank finalizes MPI, then the last calls os._exit(0)
raise       the last rank raises; the others wait for it
kill        the last rank SIGKILLs itself at once; the others wait for it
foreign     rank 0 makes a file in /dev/shm named as its MPI names its shared memory, that
            no process maps (as another job's leftover would be), prints
            'foreign PATH', then every rank ends normally
sleep       rank 0 prints 'ready' and every pid, then every rank sleeps
ok          every rank prints 'done' and ends normally

The waits give up after WAIT seconds and print NOT ENDED.
"""
import os
import signal
import sys

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _waits import sleep_out, wait_for                   # noqa: E402
from minpy.kvstore import mpi_flavours                   # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
mode = sys.argv[1]
PREFIXES = tuple(pattern.rstrip("*") for pattern in mpi_flavours.SHM_PATTERNS)
with open("/proc/self/maps") as f:
    paths = sorted({line.split()[-1] for line in f if any(p in line for p in PREFIXES)})
sys.stdout.write(f"shm {rank} {' '.join(paths)}\n")       # one write: lines stay whole
pids = comm.gather(os.getpid(), root=0)
last = size - 1


if mode == "exit0":
    if rank == last:
        os._exit(0)
    wait_for(comm, last)
elif mode == "finalized":
    MPI.Finalize()
    if rank == last:
        os._exit(0)
    print(f"rank {rank}: done", flush=True)
elif mode == "kill":
    if rank == last:
        os.kill(os.getpid(), signal.SIGKILL)
    wait_for(comm, last)
elif mode == "foreign":
    if rank == 0:
        flavour = mpi_flavours.flavour_of(MPI.Get_library_version()) or "mpich"
        path = mpi_flavours.SHM_PATTERN[flavour].replace("*", f"minpytest{os.getpid()}.0")
        with open(path, "wb") as f:
            f.write(b"\0" * 64)
        sys.stdout.write(f"foreign {path}\n")
    comm.Barrier()
elif mode == "raise":
    if rank == last:
        raise RuntimeError(f"abnormal_job: rank {rank} failed on purpose")
    wait_for(comm, last)
elif mode == "sleep":
    if rank == 0:
        print("ready " + " ".join(map(str, pids)), flush=True)
    sleep_out(comm)
elif mode == "ok":
    print(f"rank {rank}: done", flush=True)
else:
    sys.exit(f"abnormal_job: unknown mode {mode!r}")
