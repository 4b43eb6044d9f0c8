# quick: python -m minpy.kvstore.launch -n 2 --timeout 60 benchmarks/bench_kvstore.py --quick
"""dist_sync pushpull vs raw MPI Allreduce vs one numpy.copyto, 2 ranks on this machine.

    mpiexec -n 2 python -m mpi4py benchmarks/bench_kvstore.py [--quick]

For float32 arrays from 1 KB to 64 MB, rank 0 prints one table, timed round
robin (best of the rounds): ``kv.pushpull`` of a ``dist_sync`` KVStore (no
updater: the summed value comes back), ``comm.Allreduce`` of the same bytes
(the MPI floor; blocking, so it spins), ``comm.Allreduce`` in place, and
``numpy.copyto`` of the same bytes (one machine's memory-bandwidth ceiling).
``--quick`` (CI): 1 KB to 128 KB, one round.  Needs ``pip install "minpy[dist]"``.
"""
import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy                                                   # noqa: E402
from mpi4py import MPI                                         # noqa: E402

import minpy                                                   # noqa: E402
import minpy as np                                             # noqa: E402

SIZES = [1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 23, 1 << 26]     # bytes


def best_of(fn, comm, rounds, reps):
    """Best seconds per call over ``rounds`` of ``reps`` calls, the ranks in step."""
    best = float("inf")
    for _ in range(rounds):
        comm.Barrier()
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t) / reps)
    return comm.allreduce(best, op=MPI.MAX)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    kv = minpy.kvstore.create("dist_sync")
    rows = []
    for nbytes in SIZES[:3] if args.quick else SIZES:
        n = nbytes // 4
        a = numpy.full(n, comm.Get_rank() + 1.0, numpy.float32)
        out = numpy.empty_like(a)
        arr = np.array(a)
        key = f"k{nbytes}"
        kv.init(key, arr)
        reps = max(1, min(200, (1 << 24) // nbytes))
        rounds = 1 if args.quick else 7
        t_kv = best_of(lambda: kv.pushpull(key, arr), comm, rounds, reps)
        arr[...] = a
        kv.pushpull(key, arr)
        assert float(arr[0]) == sum(range(1, comm.Get_size() + 1)), float(arr[0])
        t_mpi = best_of(lambda: comm.Allreduce(a, out), comm, rounds, reps)
        t_inplace = best_of(lambda: comm.Allreduce(MPI.IN_PLACE, out), comm, rounds, reps)
        t_copy = best_of(lambda: numpy.copyto(out, a), comm, rounds, reps)
        rows.append((nbytes, t_kv, t_mpi, t_inplace, t_copy))
    if comm.Get_rank() == 0:
        print(f"\n{comm.Get_size()} ranks, float32; times per call (best of rounds); "
              "ratio = raw Allreduce time / pushpull time")
        print(f"{'bytes':>10}  {'pushpull':>11}  {'Allreduce':>11}  {'in place':>11}  "
              f"{'copyto':>11}  {'GB/s kv':>8}  {'vs MPI':>7}")
        for nbytes, t_kv, t_mpi, t_in, t_copy in rows:
            print(f"{nbytes:>10}  {t_kv * 1e6:9.1f}us  {t_mpi * 1e6:9.1f}us  "
                  f"{t_in * 1e6:9.1f}us  {t_copy * 1e6:9.1f}us  {nbytes / t_kv / 1e9:8.2f}  "
                  f"{t_mpi / t_kv:6.2f}x")


if __name__ == "__main__":
    main()
