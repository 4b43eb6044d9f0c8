"""The cost of one in-place write while a gradient tape records, against the tape's size.

    python benchmarks/bench_inplace.py [--quick] [--sizes 100,1000,4000]

Cases, for each N: (a) N traced writes ``y[i % 64] = v`` inside ``minpy.grad``
(``y``, of 64 elements, traced: each write is replayed functionally and adds a
node, so the k-th write meets a tape of ~k nodes); (b) N untraced writes
``buf[i] = v`` into an array no node saved, after N traced operations were
recorded (each write is checked against what the tape saved). The time is the
write loop alone, per write; a check that scans the tape makes it grow with N
(O(N^2) for the N writes), a per-buffer index keeps it flat. ``--quick`` (CI):
N = 10, 100, one timed call.
"""
import argparse
import platform
import sys
import time

import numpy

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import minpy                                              # noqa: E402
from _timing import fmt_time, print_table, set_quick, is_quick   # noqa: E402


SIZE = 64      # elements of the written array (a write copies it: kept small and fixed)


def traced_writes(n):
    """Seconds per write of ``n`` traced writes ``y[i % SIZE] = 0.5`` inside ``minpy.grad``."""
    spent = []

    def f(x):
        y = x * 1.0
        t0 = time.perf_counter()
        for i in range(n):
            y[i % SIZE] = 0.5
        spent.append(time.perf_counter() - t0)
        return minpy.sum(y * x)
    g = minpy.grad(f)(minpy.array(numpy.ones(SIZE)))
    # the benchmark computes what it says: d/dx sum(y * x) is 0.5 where written, else 2
    written = min(n, SIZE)
    assert g.asnumpy().tolist() == [0.5] * written + [2.0] * (SIZE - written)
    return spent[-1] / n


def untraced_writes(n):
    """Seconds per write of ``n`` untraced writes under a tape holding ``n`` nodes."""
    spent = []
    buf = minpy.zeros(n)

    def f(x):
        y = x
        for _ in range(n):
            y = y * 1.0
        t0 = time.perf_counter()
        for i in range(n):
            buf[i] = 1.0
        spent.append(time.perf_counter() - t0)
        return minpy.sum(y)
    minpy.grad(f)(minpy.array(numpy.ones(3)))
    assert float(buf.asnumpy().sum()) == n
    return spent[-1] / n


def best(fn, n, repeat):
    """Best-of-``repeat`` of ``fn(n)`` (one warm-up run first)."""
    fn(min(n, 10))
    return min(fn(n) for _ in range(repeat))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 10, 100; one timed run (CI)")
    ap.add_argument("--sizes", default="100,1000,4000", help="comma-separated N")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per case (best kept)")
    opts = ap.parse_args()
    set_quick(opts.quick)
    sizes = [10, 100] if opts.quick else [int(s) for s in opts.sizes.split(",")]
    repeat = 1 if is_quick() else opts.repeat
    rows = []
    for n in sizes:
        a, b = best(traced_writes, n, repeat), best(untraced_writes, n, repeat)
        rows.append([str(n), fmt_time(a), fmt_time(a * n), fmt_time(b), fmt_time(b * n)])
    print(f"python {platform.python_version()}, numpy {numpy.__version__}, "
          f"minpy from {minpy.__file__.rsplit('/', 2)[0]}")
    print_table("In-place writes while a tape records (best of %d)" % repeat,
                ["N", "(a) traced /write", "(a) N writes", "(b) untraced /write",
                 "(b) N writes"], rows)


if __name__ == "__main__":
    main()
