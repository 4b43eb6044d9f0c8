"""Benchmark of minpy.engine.  Run: ``python benchmarks/bench_engine.py [--quick]``.

(a) per-op overhead of empty ops, naive vs threaded engine;
(b) two independent chains of GIL-releasing work, threaded (2 workers) vs
    naive, with BLAS limited to one thread via threadpoolctl when available;
(c) async mode for arrays: ``A = ones((n, n)) * 2; C = A + 2; B = A + 1;
D = B * C`` at n = 4096, eager vs ``minpy.async_mode()`` (B and C overlap).
Takes well under a minute.  ``--quick`` (CI): 2000 ops in (a), 256^2 matrices and
1M-element vectors in (b), n = 512 in (c), one repetition each.
"""
import _thread
import argparse
import os
import sys
import threading
import time
from queue import SimpleQueue

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minpy  # noqa: E402
from minpy.engine import NaiveEngine, ThreadedEngine  # noqa: E402

try:
    from threadpoolctl import threadpool_limits
except ImportError:             # optional 'bench' extra
    threadpool_limits = None

N_OPS = 20000
REPEAT = 3                  # best of; --quick: 1
ROWS = []


def row(section, what, value, unit):
    ROWS.append((section, what, value, unit))
    print(f"  {section:<4} {what:<58} {value:>10.2f} {unit}", flush=True)


def best_of(fn):
    return min(fn() for _ in range(REPEAT))


def noop():
    pass


# -- (a) overhead -----------------------------------------------------------
def per_op(engine, n, make_vars):
    """Seconds per op: push n empty ops, then waitall (push -> completion)."""
    reads, writes = make_vars(engine, n)
    t = time.perf_counter()
    for i in range(n):
        engine.push(noop, reads[i], writes[i])
    engine.waitall()
    return (time.perf_counter() - t) / n


def no_vars(engine, n):
    return [()] * n, [()] * n


def own_var(engine, n):
    return [()] * n, [(engine.new_var(),) for _ in range(n)]


def one_chain(engine, n):
    v = engine.new_var()
    return [()] * n, [(v,)] * n


def mixed(engine, n):       # each op reads 2 and writes 1 of 8 vars
    vs = [engine.new_var() for _ in range(8)]
    return ([(vs[i % 8], vs[(i + 3) % 8]) for i in range(n)],
            [(vs[(i + 5) % 8],) for i in range(n)])


def round_trip(engine, n):
    """Seconds per push followed by wait_for (latency, one op in flight)."""
    v = engine.new_var()
    t = time.perf_counter()
    for _ in range(n):
        engine.push(noop, (), (v,))
        engine.wait_for(v)
    return (time.perf_counter() - t) / n


def ping_pong(n):
    """Floor: bare thread hand-off (SimpleQueue put + lock release back)."""
    q = SimpleQueue()

    def worker():
        while (lock := q.get()) is not None:
            lock.release()
    th = threading.Thread(target=worker)
    th.start()
    t = time.perf_counter()
    for _ in range(n):
        lock = _thread.allocate_lock()
        lock.acquire()
        q.put(lock)
        lock.acquire()
    dt = (time.perf_counter() - t) / n
    q.put(None)
    th.join()
    return dt


def bench_overhead():
    print("(a) per-op overhead of an empty op (push -> completion), "
          f"{N_OPS} ops, best of {REPEAT}")
    cases = [("no vars", no_vars), ("each op writes its own var", own_var),
             ("dependent chain (all write one var)", one_chain),
             ("mixed: read 2 / write 1 of 8 vars", mixed)]
    for engine in (NaiveEngine(), ThreadedEngine(num_cpu_workers=2)):
        with engine:
            for label, make in cases:
                us = best_of(lambda: per_op(engine, N_OPS, make)) * 1e6
                row("(a)", f"{engine.kind:>8}: {label}", us, "us/op")
            if engine.kind == "threaded":
                us = best_of(lambda: round_trip(engine, N_OPS // 4)) * 1e6
                row("(a)", f"{engine.kind:>8}: round trip push+wait_for, 1 op in flight",
                    us, "us/op")
                row("(a)", "         floor: bare thread ping-pong (no engine)",
                    best_of(lambda: ping_pong(N_OPS // 4)) * 1e6, "us/op")
    thr = min(r[2] for r in ROWS if "threaded: no vars" in r[1])
    row("(a)", "threaded independent-op throughput", 1e3 / thr, "k ops/s")


# -- (b) parallel speedup ---------------------------------------------------
def two_chains(engine, a, b, c, step, length):
    """Two independent chains of `length` ops; returns seconds."""
    va, vb = engine.new_var("a"), engine.new_var("b")
    t = time.perf_counter()
    for _ in range(length):
        engine.push(lambda: step(a, c), writes=va)
        engine.push(lambda: step(b, c), writes=vb)
    engine.waitall()
    return time.perf_counter() - t


def bare_threads(a, b, c, step, length):
    """Hardware ceiling: the same two chains on two plain threads."""
    def chain(x):
        for _ in range(length):
            step(x, c)
    ths = [threading.Thread(target=chain, args=(x,)) for x in (a, b)]
    t = time.perf_counter()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return time.perf_counter() - t


def speedup(label, make, step, length):
    a, b, c = make(), make(), make()
    with NaiveEngine() as naive, ThreadedEngine(num_cpu_workers=2) as threaded:
        two_chains(threaded, a, b, c, step, 1)              # warm up
        t_naive = t_thr = t_bare = float("inf")
        for _ in range(REPEAT):     # interleaved: shared machines drift
            t_naive = min(t_naive, two_chains(naive, a, b, c, step, length))
            t_thr = min(t_thr, two_chains(threaded, a, b, c, step, length))
            t_bare = min(t_bare, bare_threads(a, b, c, step, length))
    row("(b)", f"{label}: naive", t_naive * 1e3, "ms")
    row("(b)", f"{label}: threaded, 2 workers", t_thr * 1e3, "ms")
    row("(b)", f"{label}: speedup naive/threaded", t_naive / t_thr, "x")
    row("(b)", f"{label}: ceiling naive/bare-threads", t_naive / t_bare, "x")


def bench_parallel(n=2048, n_vec=20_000_000):
    print(f"(b) two independent chains, threaded (2 workers) vs naive; "
          f"{os.cpu_count()} CPUs")
    rng = np.random.default_rng(0)

    def make_mat():
        return (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)

    def matmul(x, w):
        x[...] = x @ w

    if threadpool_limits is None:
        print("     threadpoolctl not installed: BLAS threads not limited, "
              "matmul case skipped (pip install threadpoolctl)")
    else:
        with threadpool_limits(limits=1, user_api="blas"):
            speedup(f"2 x 4 matmuls {n}^2 f32, BLAS 1 thread", make_mat, matmul, 4)

    def make_vec():
        return rng.standard_normal(n_vec).astype(np.float32)

    speedup(f"2 x 10 np.add {n_vec / 1e6:g}M f32 (memory bound)", make_vec,
            lambda x, y: np.add(x, y, out=x), 10)


# -- (c) -------------------------------------------------------------------
def bench_async_arrays(n=4096, repeat=5):
    """(c) The paper's A, B, C, D program on minpy arrays, eager vs async mode."""
    def program():
        A = minpy.ones((n, n), dtype=minpy.float32) * 2
        C = A + 2
        B = A + 1
        D = B * C
        return D

    def timed(use_async):
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            if use_async:
                with minpy.async_mode():
                    D = program()
                    D.wait_to_read()
            else:
                D = program()
            best = min(best, time.perf_counter() - t)
            assert float(D[0, 0]) == 12.0
        return best

    eager = timed(False)
    asynchronous = timed(True)
    print(f"(c) A,B,C,D program, n={n} float32: eager {eager * 1e3:.1f} ms, "
          f"async {asynchronous * 1e3:.1f} ms -> {eager / asynchronous:.2f}x "
          f"({os.cpu_count()} cores)")


def main():
    global N_OPS, REPEAT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition (CI)")
    args = ap.parse_args()
    if args.quick:
        N_OPS, REPEAT = 2000, 1
    t0 = time.perf_counter()
    print(f"minpy.engine benchmark  (python {sys.version.split()[0]}, "
          f"numpy {np.__version__})")
    bench_overhead()
    if args.quick:
        bench_parallel(n=256, n_vec=1_000_000)
        bench_async_arrays(n=512, repeat=1)
    else:
        bench_parallel()
        bench_async_arrays()
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
