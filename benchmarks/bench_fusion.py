"""Elementwise fusion: `(a*b+c)*0.5+a` and `tanh(a*b+c)*0.5+a` over float32 vectors.

Rows per expression and size: NumPy eager (the 1.00x reference), minpy eager
(`import minpy as np`), minpy fused (a Symbol bound with fusion on, forward
only; and the `fusion.Kernel` called directly), numba written by hand, torch
eager, torch.compile, jax.jit -- each where installed.  A `minpy.jit` row is
added through :func:`jit_row` (see there).  Also prints numba's scalar
transcendentals against NumPy's ufuncs (why `tanh`/`exp` stay NumPy calls).

    python benchmarks/bench_fusion.py [--sizes 10000000,1000000,10000] [--quick]

``--quick`` (CI): size 10000 unless ``--sizes`` is given, 16384-element
transcendentals, one timed call per row.

Timings are best-of-rounds, interleaved; on a shared 2-core machine treat them
as rough.
"""
import argparse
import os
import sys
import time

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _timing import fmt_time, optional, per_call_interleaved, print_table, set_quick  # noqa: E402

import minpy  # noqa: E402
import minpy.symbol as sym  # noqa: E402
from minpy.fusion import cpu as fusion   # noqa: E402

EXPRS = {"(a*b+c)*0.5+a": False, "tanh(a*b+c)*0.5+a": True}


def program(with_tanh):
    """The Program of one benchmark expression."""
    ins = [("multiply", (("in", 0), ("in", 1))), ("add", (("t", 0), ("in", 2)))]
    if with_tanh:
        ins.append(("tanh", (("t", 1),)))
    j = len(ins) - 1
    ins += [("multiply", (("t", j), ("c", 0.5))), ("add", (("t", j + 1), ("in", 0)))]
    return fusion.Program(3, ins, [("t", len(ins) - 1)])


def jit_row(name, make):
    """A row ``name`` made by ``make(with_tanh)``, a callable returning ``f(a, b, c)``
    (for example a ``minpy.jit``-compiled function of minpy arrays); pass it in
    ``main``'s ``extra`` list.  The row is skipped with a note when ``make`` or
    the first call raises.  The ``minpy.jit`` engineer adds, in ``main``::

        extra.append(jit_row("minpy.jit", lambda t: minpy.jit(expr_fn(t))))
    """
    def add(fns, with_tanh, a, b, c):
        try:
            f = make(with_tanh)
            f(a, b, c)
        except Exception as e:   # noqa: BLE001 -- a peer's failure skips its row only
            print(f"  ({name} skipped: {type(e).__name__}: {e})")
            return
        fns[name] = lambda: f(a, b, c)
    return add


def _jitted(with_tanh):
    """The expression written with minpy under ``minpy.jit`` (traced, fused, replayed)."""
    if with_tanh:
        return minpy.jit(lambda a, b, c: minpy.tanh(a * b + c) * 0.5 + a)
    return minpy.jit(lambda a, b, c: (a * b + c) * 0.5 + a)


def rows_for(n, with_tanh, extra_rows=()):
    rng = numpy.random.default_rng(0)
    a, b, c = (rng.random(n, dtype=numpy.float32) for _ in range(3))
    fns = {}
    if with_tanh:
        fns["numpy eager"] = lambda: numpy.tanh(a * b + c) * 0.5 + a
    else:
        fns["numpy eager"] = lambda: (a * b + c) * 0.5 + a
    ma, mb, mc = (minpy.array(x) for x in (a, b, c))
    if with_tanh:
        fns["minpy eager"] = lambda: minpy.tanh(ma * mb + mc) * 0.5 + ma
    else:
        fns["minpy eager"] = lambda: (ma * mb + mc) * 0.5 + ma
    # minpy fused: a symbol bound once, forward only
    va, vb, vc = sym.Variable("a"), sym.Variable("b"), sym.Variable("c")
    e = va * vb + vc
    e = (sym.tanh(e) if with_tanh else e) * 0.5 + va
    exe = e.simple_bind(minpy.cpu(), grad_req="null", a=(n,), b=(n,), c=(n,))
    for k, x in zip("abc", (a, b, c)):
        exe.arg_dict[k]._data[...] = x
    exe.forward()
    ops = [exe.plan.graph.nodes[i].op.name for i in exe.plan.order]
    fns["minpy fused (symbol)"] = lambda: exe.forward()
    t0 = time.perf_counter()
    k = fusion.compile_program(program(with_tanh), ["float32"] * 3, [(n,)] * 3, (n,))
    out = numpy.empty(n, numpy.float32)
    k([a, b, c], [out])
    first = time.perf_counter() - t0
    fns["minpy fused (Kernel)"] = lambda: k([a, b, c], [out])
    numba_row(fns, with_tanh, a, b, c)
    torch_rows(fns, with_tanh, a, b, c)
    jax_row(fns, with_tanh, a, b, c)
    for add in extra_rows:
        add(fns, with_tanh, a, b, c)
    t = per_call_interleaved(fns, min_time=0.1, rounds=5)
    base = t["numpy eager"]
    rows = [[name, fmt_time(s), f"{s / base:6.2f}x"] for name, s in t.items()]
    notes = (f"symbol runs {ops}; Kernel: fused={k.fused}, wins={k.wins}, first call "
             f"(compile or disk-cache load) {first * 1e3:.0f} ms")
    return rows, notes


def numba_row(fns, with_tanh, a, b, c):
    numba = optional("numba") if fusion.numba_available() else None
    if numba is None:
        return

    @numba.njit(parallel=True, fastmath=False)
    def hand(a, b, c, out):
        for i in numba.prange(a.shape[0]):
            x = a[i] * b[i] + c[i]
            if with_tanh:
                x = numpy.tanh(x)
            out[i] = x * numpy.float32(0.5) + a[i]
    out = numpy.empty_like(a)
    hand(a, b, c, out)
    fns["numba by hand"] = lambda: hand(a, b, c, out)


def torch_rows(fns, with_tanh, a, b, c):
    torch = optional("torch")
    if torch is None:
        return
    ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))

    def f(a, b, c):
        x = a * b + c
        return (torch.tanh(x) if with_tanh else x) * 0.5 + a
    fns["torch eager"] = lambda: f(ta, tb, tc)
    try:
        g = torch.compile(f)
        g(ta, tb, tc)
        fns["torch.compile"] = lambda: g(ta, tb, tc)
    except Exception as e:   # noqa: BLE001 -- inductor needs a C compiler; skip cleanly
        print(f"  (torch.compile skipped: {type(e).__name__}: {str(e)[:80]})")


def jax_row(fns, with_tanh, a, b, c):
    jax, jnp = optional("jax"), optional("jax.numpy")
    if jax is None:
        return

    @jax.jit
    def f(a, b, c):
        x = a * b + c
        return (jnp.tanh(x) if with_tanh else x) * 0.5 + a
    ja, jb, jc = (jax.device_put(x) for x in (a, b, c))
    f(ja, jb, jc).block_until_ready()
    fns["jax.jit"] = lambda: f(ja, jb, jc).block_until_ready()


def transcendentals(n=1 << 22):
    """numba's scalar exp/tanh/log loops against NumPy's ufuncs (one thread each)."""
    numba = optional("numba") if fusion.numba_available() else None
    if numba is None:
        return
    x = numpy.random.default_rng(0).random(n, dtype=numpy.float32) + 0.5
    out = numpy.empty_like(x)
    rows = []
    for name in ("exp", "tanh", "log", "sqrt"):
        src = (f"def k(x, out):\n    for i in range(x.shape[0]):\n"
               f"        out[i] = numpy.{name}(x[i])\n")
        ns = {"numpy": numpy}
        exec(src, ns)
        k = numba.njit(ns["k"])
        k(x, out)
        uf = getattr(numpy, name)
        t = per_call_interleaved({"np": lambda: uf(x, out=out), "nb": lambda: k(x, out)},
                                 min_time=0.05, rounds=3)
        rows.append([name, fmt_time(t["np"]), fmt_time(t["nb"]), f"{t['nb'] / t['np']:.2f}x",
                     "numpy side" if name in fusion.NUMPY_SIDE else "fused"])
    print_table(f"transcendentals, {n} float32 (numba scalar loop vs NumPy ufunc)",
                ["op", "numpy", "numba", "numba/numpy", "in a kernel"], rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="default 10000000,1000000,10000 (quick: 10000)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call each (CI)")
    args = ap.parse_args(argv)
    set_quick(args.quick)
    sizes = args.sizes or ("10000" if args.quick else "10000000,1000000,10000")
    extra = [jit_row("minpy.jit", _jitted)]
    for expr, with_tanh in EXPRS.items():
        for n in (int(s) for s in sizes.split(",")):
            rows, notes = rows_for(n, with_tanh, extra)
            print_table(f"{expr}, n={n} float32", ["impl", "time", "vs numpy"], rows)
            print("  " + notes)
    transcendentals(1 << 14 if args.quick else 1 << 22)


if __name__ == "__main__":
    main()
