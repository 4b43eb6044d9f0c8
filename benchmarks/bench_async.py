"""Async mode vs eager on minpy arrays.  Run: ``python benchmarks/bench_async.py [--quick]``.

Issue 29: async mode must never be a loss.  Two programs on 1M-element float32
vectors, each timed eager and in ``minpy.async_mode()``, round robin
(``_timing.per_call_interleaved``) so that load on a shared machine hits both alike:

(1) a dependent chain ``y = y * 1.0001 + 0.5`` (``LINKS`` ops), one CPU worker:
    nothing can overlap, so async mode should be as fast as eager;
(2) two independent chains ``a = a * 1.0001 + 0.5; b = b * 1.0001 + 0.5`` with two
    CPU workers: async mode overlaps them (at best 2x on two free cores).

Each line gives eager and async time per op and eager/async (> 1: async faster);
(2) also gives the machine's ceiling: the two chains run eagerly on two plain threads.
``--quick`` (CI): 128k-element vectors, 4 links, one timed call each.
"""
import argparse
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import minpy  # noqa: E402
from minpy import engine  # noqa: E402
from _timing import fmt_time, per_call_interleaved, set_quick  # noqa: E402

N = 1_000_000
LINKS = 50


def chain(x, links):
    """``links`` dependent ops on ``x`` (two per step)."""
    for _ in range(links // 2):
        x = x * 1.0001 + 0.5
    return x


def two_chains(a, b, links):
    """Two independent chains of ``links`` ops each, interleaved by the pusher."""
    for _ in range(links // 2):
        a = a * 1.0001 + 0.5
        b = b * 1.0001 + 0.5
    return a, b


def eager_and_async(program):
    """``{"eager": fn, "async": fn}``: run ``program()`` and wait for its results."""
    def eager():
        for r in program():
            r.wait_to_read()

    def asynchronous():
        with minpy.async_mode():
            for r in program():
                r.wait_to_read()
    return {"eager": eager, "async": asynchronous}


def on_threads(programs):
    """Run each of ``programs`` eagerly on its own thread; wait for all."""
    def run(program):
        program().wait_to_read()
    threads = [threading.Thread(target=run, args=(p,)) for p in programs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def measure(label, workers, program, ops, ceiling=None):
    """Time ``program`` eager and async on a ThreadedEngine of ``workers`` CPU workers
    (and ``ceiling``, eager code on plain threads, if given), round robin."""
    engine.set_engine("threaded", num_cpu_workers=workers)
    fns = eager_and_async(program)
    if ceiling is not None:
        fns["threads"] = ceiling
    best = per_call_interleaved(fns, min_time=0.2)
    e, a = best["eager"] / ops, best["async"] / ops
    line = (f"  {label:<40} eager {fmt_time(e)}/op  async {fmt_time(a)}/op  "
            f"eager/async {e / a:5.2f}x")
    if ceiling is not None:
        line += f"  (ceiling eager/threads {best['eager'] / best['threads']:4.2f}x)"
    print(line, flush=True)
    return e / a


def check(n, links):
    """Async mode computes what eager mode does (a benchmark that measures the wrong
    thing is worse than none)."""
    x = minpy.ones((n,), dtype=minpy.float32)
    want = chain(x, links).asnumpy()
    with minpy.async_mode():
        got = chain(x, links).asnumpy()
        a, b = two_chains(x, x * 2, links)
        a, b = a.asnumpy(), b.asnumpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(b, chain(x * 2, links).asnumpy())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call (CI)")
    args = ap.parse_args()
    n, links = (1 << 17, 4) if args.quick else (N, LINKS)
    if args.quick:
        set_quick()
    t0 = time.perf_counter()
    print(f"async mode vs eager  (python {sys.version.split()[0]}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs), {n / 1e6:g}M float32, {links} ops per chain")
    previous = engine.get_engine()
    try:
        check(n, links)
        x = minpy.ones((n,), dtype=minpy.float32)
        y = minpy.ones((n,), dtype=minpy.float32) * 2
        measure("(1) dependent chain, 1 worker", 1, lambda: (chain(x, links),), links)
        measure("(2) two independent chains, 2 workers", 2,
                lambda: two_chains(x, y, links), 2 * links,
                ceiling=lambda: on_threads([lambda: chain(x, links), lambda: chain(y, links)]))
    finally:
        engine.set_engine(previous)
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
