"""A job for tests/kvstore/test_launch.py, run by ``python -m minpy.kvstore.launch``; argv[1] picks what it does:

report ARGS...  rank 0 prints one line per rank: its rank, the size, its role by the
                launcher's contract (the last MINPY_KVSTORE_SERVERS ranks are servers),
                the variables the launcher sets and the arguments the rank got
exit CODE       every rank exits with CODE
raise           the last rank raises; the others wait for it (MPI_Iprobe and sleep)
kill            the last rank SIGKILLs itself; the others wait for it
sleep           rank 0 prints 'ready' and every pid, then every rank sleeps

The waits give up after WAIT seconds and print NOT ENDED, so a job the launcher
failed to end shows as such instead of hanging.
"""
import os
import signal
import sys

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _waits import sleep_out, wait_for                   # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
mode = sys.argv[1]


if mode == "report":
    servers = int(os.environ.get("MINPY_KVSTORE_SERVERS", "0"))
    role = "server" if rank >= size - servers else "worker"
    names = ("MINPY_KVSTORE_SERVERS", "MINPY_NUM_WORKERS", "OMP_NUM_THREADS",
             "OPENBLAS_NUM_THREADS")
    line = (f"rank {rank} size {size} role {role} "
            + " ".join(f"{k}={os.environ.get(k)}" for k in names)
            + f" args={sys.argv[2:]}")
    lines = comm.gather(line, root=0)
    if rank == 0:
        sys.stdout.write("\n".join(lines) + "\n")
elif mode == "exit":
    sys.exit(int(sys.argv[2]))
elif mode in ("raise", "kill"):
    comm.Barrier()
    last = size - 1
    if rank == last:
        if mode == "raise":
            raise RuntimeError(f"launch_job: rank {rank} failed on purpose")
        os.kill(os.getpid(), signal.SIGKILL)
    wait_for(comm, last)
elif mode == "sleep":
    pids = comm.gather(os.getpid(), root=0)
    if rank == 0:
        sys.stdout.write("ready " + " ".join(map(str, pids)) + "\n")
        sys.stdout.flush()
    sleep_out(comm)
else:
    sys.exit(f"launch_job: unknown mode {mode!r}")
