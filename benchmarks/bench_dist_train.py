# quick: python -m minpy.kvstore.launch -n 2 --timeout 60 benchmarks/bench_dist_train.py --quick
"""Data-parallel training steps on MPI: communication behind the backward pass, and
2 processes vs 1.

    mpiexec -n 2 python -m mpi4py benchmarks/bench_dist_train.py [--quick]
    (or: python -m minpy.kvstore.launch -n 2 benchmarks/bench_dist_train.py)

The model is a communication-heavy MLP bound as one executor (``minpy.symbol``,
``FullyConnected`` layers of HIDDEN x HIDDEN float32, SoftmaxOutput head) on a
small batch, so each step moves as many gradient bytes as it does work.  Rank 0
prints two tables, every contender timed round robin (best of the rounds):

1. **Overlap.**  One ``dist_sync`` step on every rank, three ways: *after* --
   ``backward()`` waits for every gradient, then each is ``pushpull``-ed;
   *overlapped* -- ``backward(wait=False)`` queues the backward ops and the
   pushpulls at once (last layer first, by priority), so each gradient's
   allreduce runs on the KVStore's communication thread as soon as it is
   computed, behind the rest of the backward pass; and *no communication* (the
   floor).  Ratio: after / overlapped.
2. **Throughput.**  Samples per second of the data-parallel step (each rank
   a batch of BATCH, the overlapped step) against one process training alone on
   a batch of BATCH (rank 0 while the others wait, asleep, at a barrier), and the
   scaling efficiency ``(2-rank samples/s) / (2 x 1-process samples/s)``.

``--quick`` (CI): 2 layers of 256 unless given, one round of 2 steps per contender.
Needs ``pip install "minpy[dist]"``.  Each rank runs BLAS on one thread
(OPENBLAS_NUM_THREADS=1): the ranks share the machine's cores.
"""
import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy                                                   # noqa: E402
from mpi4py import MPI                                         # noqa: E402

import minpy                                                   # noqa: E402
import minpy.nn                                                # noqa: E402,F401
import minpy.symbol as sym                                     # noqa: E402
from minpy.kvstore.wire import layout                          # noqa: E402

CLASSES = 10


def network(layers, hidden):
    net = sym.Variable("data")
    for i in range(layers):
        net = sym.Activation(sym.FullyConnected(net, num_hidden=hidden, name=f"fc{i}"),
                             act_type="relu", name=f"relu{i}")
    net = sym.FullyConnected(net, num_hidden=CLASSES, name="out")
    return sym.SoftmaxOutput(net, name="softmax")


class Trainer:
    """One bound executor and its parameters in a KVStore (or none)."""

    def __init__(self, layers, hidden, batch, kv):
        self.exe = network(layers, hidden).simple_bind(None, data=(batch, hidden))
        rng = numpy.random.default_rng(0)
        self.names = [n for n in self.exe.arg_dict if n not in ("data", "softmax_label")]
        for n in self.names:
            a = self.exe.arg_dict[n]
            a[...] = rng.standard_normal(a.shape).astype(a.dtype) * 0.02
        self.x = rng.standard_normal((batch, hidden)).astype(numpy.float32)
        self.y = rng.integers(0, CLASSES, batch).astype(numpy.float32)
        self.kv = kv
        if kv is not None:
            for n in self.names:
                kv.init(n, self.exe.arg_dict[n])
            kv.set_optimizer(minpy.nn.optim.create("sgd", learning_rate=1e-3))
        # the last layer's gradient is computed first: communicate it first
        self.order = self.names[::-1]

    def compute_only(self):
        """The step without communication: forward and backward alone."""
        self.exe.forward(is_train=True, data=self.x, softmax_label=self.y)
        self.exe.backward()

    def step(self, overlap):
        if self.kv is None:
            self.compute_only()
            return
        exe = self.exe
        exe.forward(is_train=True, data=self.x, softmax_label=self.y)
        exe.backward(wait=not overlap)
        for i, n in enumerate(self.order):
            self.kv.push(n, exe.grad_dict[n], priority=-i)
            self.kv.pull(n, out=exe.arg_dict[n], priority=-i)
        for n in self.names:
            exe.arg_dict[n].wait_to_read()


def best_of(fn, comm, rounds, reps, ranks=None):
    """Best seconds per call over ``rounds`` (the ranks in step)."""
    best = float("inf")
    for _ in range(rounds):
        _sleepy_barrier(comm)
        if ranks is None or comm.Get_rank() in ranks:
            fn()                                       # warm
            t = time.perf_counter()
            for _ in range(reps):
                fn()
            best = min(best, (time.perf_counter() - t) / reps)
    return comm.allreduce(best if best < float("inf") else 0.0, op=MPI.MAX)


def _sleepy_barrier(comm):
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(1e-3)                # idle ranks must not spin: the others need the cores


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--layers", type=int, default=None, help="default 4 (quick: 2)")
    ap.add_argument("--hidden", type=int, default=None, help="default 1024 (quick: 256)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--kvstore", default="dist_sync", choices=["dist_sync", "dist_async"],
                    help="dist_async needs server ranks (minpy.kvstore.launch --servers 1)")
    args = ap.parse_args()
    rounds, reps = (1, 2) if args.quick else (5, 6)
    if args.layers is None:
        args.layers = 2 if args.quick else 4
    if args.hidden is None:
        args.hidden = 256 if args.quick else 1024
    kv = minpy.kvstore.create(args.kvstore)       # a server rank serves here until the end
    comm = layout().workers
    dist = Trainer(args.layers, args.hidden, args.batch, kv)
    alone = Trainer(args.layers, args.hidden, args.batch, minpy.kvstore.create("local")) \
        if comm.Get_rank() == 0 else None
    times = {"after": [], "overlapped": [], "no communication": [], "1 process": []}
    for _ in range(rounds):
        times["after"].append(best_of(lambda: dist.step(False), comm, 1, reps))
        times["overlapped"].append(best_of(lambda: dist.step(True), comm, 1, reps))
        times["no communication"].append(best_of(dist.compute_only, comm, 1, reps))
        times["1 process"].append(best_of(lambda: alone.step(False), comm, 1, reps, ranks={0}))
    best = {k: min(v) for k, v in times.items()}
    if comm.Get_rank() == 0:
        n = comm.Get_size()
        grad_mb = sum(dist.exe.grad_dict[k].size * 4 for k in dist.names) / 2 ** 20
        print(f"\n{n} workers ({args.kvstore}), MLP {args.layers} x {args.hidden} (+ {CLASSES}-way softmax), batch "
              f"{args.batch} per rank, {grad_mb:.1f} MB of float32 gradients per step; "
              "best of rounds, round robin")
        print(f"{'step':>34}  {'ms':>8}  {'ratio':>7}")
        for k in ("after", "overlapped", "no communication"):
            print(f"{'communication ' + k if k != 'no communication' else k:>34}  "
                  f"{best[k] * 1e3:8.2f}  {best['after'] / best[k]:6.2f}x")
        one = args.batch / best["1 process"]
        many = n * args.batch / best["overlapped"]
        print(f"\n{'training':>34}  {'samples/s':>10}  {'vs 1':>6}")
        print(f"{'1 process (local kvstore)':>34}  {one:10.0f}  {1.0:5.2f}x")
        print(f"{f'{n} workers ({args.kvstore}, overlap)':>34}  {many:10.0f}  {many / one:5.2f}x"
              f"   (scaling efficiency {many / one / n:.0%})")


if __name__ == "__main__":
    main()
