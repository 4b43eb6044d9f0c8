"""Elementwise fusion: `f(a*b+c)*0.5+a`, f = identity, tanh, exp, log, sigmoid, float32.

Rows per expression and size: NumPy eager (the 1.00x reference), minpy eager
(`import minpy as np`), minpy fused (a Symbol bound with fusion on, forward
only; and the `fusion.Kernel` called directly), numba written by hand, torch
eager, torch.compile, jax.jit -- each where installed.  A `minpy.jit` row is
added through :func:`jit_row` (see there).  Also prints, per transcendental,
NumPy's ufunc, numba's scalar libm loop and the ``minpy.fusion.vmath`` loop
that fused kernels use (one thread each).

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

#: expression -> the unary op applied to a*b+c (None: none)
EXPRS = {"(a*b+c)*0.5+a": None, "tanh(a*b+c)*0.5+a": "tanh", "exp(a*b+c)*0.5+a": "exp",
         "log(a*b+c)*0.5+a": "log", "sigmoid(a*b+c)*0.5+a": "sigmoid"}
#: run in --quick mode as well as the others: the plain chain and tanh
QUICK_EXPRS = ("(a*b+c)*0.5+a", "tanh(a*b+c)*0.5+a", "sigmoid(a*b+c)*0.5+a")


def _op(op):
    """``op`` as accepted by older callers: True means tanh, False none."""
    return "tanh" if op is True else None if op is False else op


def unary(lib, op):
    """The function ``op`` of module ``lib`` (numpy, minpy, torch, jax.numpy), or the
    identity for None; sigmoid written as 1 / (1 + exp(-x)) where ``lib`` lacks it."""
    op = _op(op)
    if op is None:
        return lambda x: x
    if op == "sigmoid" and not hasattr(lib, "sigmoid"):
        return lambda x: 1 / (1 + lib.exp(-x))
    return getattr(lib, op)


def program(op):
    """The Program of one benchmark expression (``op`` as in :data:`EXPRS`)."""
    op = _op(op)
    ins = [("multiply", (("in", 0), ("in", 1))), ("add", (("t", 0), ("in", 2)))]
    if op is not None:
        ins.append((op, (("t", 1),)))
    j = len(ins) - 1
    ins += [("multiply", (("t", j), ("c", 0.5))), ("add", (("t", j + 1), ("in", 0)))]
    return fusion.Program(3, ins, [("t", len(ins) - 1)])


def jit_row(name, make):
    """A row ``name`` made by ``make(op)`` (``op``: None or the unary name, as in
    :data:`EXPRS`), a callable returning ``f(a, b, c)``
    (for example a ``minpy.jit``-compiled function of minpy arrays); pass it in
    ``main``'s ``extra`` list.  The row is skipped with a note when ``make`` or
    the first call raises.  The ``minpy.jit`` engineer adds, in ``main``::

        extra.append(jit_row("minpy.jit", lambda op: minpy.jit(expr_fn(op))))
    """
    def add(fns, op, a, b, c):
        try:
            f = make(op)
            f(a, b, c)
        except Exception as e:   # noqa: BLE001 -- a peer's failure skips its row only
            print(f"  ({name} skipped: {type(e).__name__}: {e})")
            return
        fns[name] = lambda: f(a, b, c)
    return add


def _jitted(op):
    """The expression written with minpy under ``minpy.jit`` (traced, fused, replayed)."""
    f = unary(minpy, op)
    return minpy.jit(lambda a, b, c: f(a * b + c) * 0.5 + a)


def rows_for(n, op, extra_rows=()):
    rng = numpy.random.default_rng(0)
    a, b, c = (rng.random(n, dtype=numpy.float32) for _ in range(3))
    fns = {}
    f_np, f_mp = unary(numpy, op), unary(minpy, op)
    fns["numpy eager"] = lambda: f_np(a * b + c) * 0.5 + a
    ma, mb, mc = (minpy.array(x) for x in (a, b, c))
    fns["minpy eager"] = lambda: f_mp(ma * mb + mc) * 0.5 + ma
    # minpy fused: a symbol bound once, forward only
    va, vb, vc = sym.Variable("a"), sym.Variable("b"), sym.Variable("c")
    e = unary(sym, op)(va * vb + vc) * 0.5 + va
    exe = e.simple_bind(minpy.cpu(), grad_req="null", a=(n,), b=(n,), c=(n,))
    for k, x in zip("abc", (a, b, c)):
        exe.arg_dict[k]._data[...] = x
    exe.forward()
    ops = [exe.plan.graph.nodes[i].op.name for i in exe.plan.order]
    fns["minpy fused (symbol)"] = lambda: exe.forward()
    t0 = time.perf_counter()
    k = fusion.compile_program(program(op), ["float32"] * 3, [(n,)] * 3, (n,))
    out = numpy.empty(n, numpy.float32)
    k([a, b, c], [out])
    first = time.perf_counter() - t0
    fns["minpy fused (Kernel)"] = lambda: k([a, b, c], [out])
    numba_row(fns, op, a, b, c)
    torch_rows(fns, op, a, b, c)
    jax_row(fns, op, a, b, c)
    for add in extra_rows:
        add(fns, op, a, b, c)
    t = per_call_interleaved(fns, min_time=0.1, rounds=5)
    base = t["numpy eager"]
    rows = [[name, fmt_time(s), f"{s / base:6.2f}x"] for name, s in t.items()]
    notes = (f"symbol runs {ops}; Kernel: fused={k.fused}, wins={k.wins}, first call "
             f"(compile or disk-cache load) {first * 1e3:.0f} ms")
    return rows, notes


def numba_row(fns, op, a, b, c):
    """numba by hand (parallel, NumPy's ``np.<op>``: numba's libm calls)."""
    numba = optional("numba") if fusion.numba_available() else None
    if numba is None:
        return
    op = _op(op)
    one = numpy.float32(1)
    f = numba.njit({None: lambda x: x, "tanh": lambda x: numpy.tanh(x),
                    "exp": lambda x: numpy.exp(x), "log": lambda x: numpy.log(x),
                    "sigmoid": lambda x: one / (one + numpy.exp(-x))}[op])

    @numba.njit(parallel=True, fastmath=False)
    def hand(a, b, c, out):
        for i in numba.prange(a.shape[0]):
            out[i] = f(a[i] * b[i] + c[i]) * numpy.float32(0.5) + a[i]
    out = numpy.empty_like(a)
    hand(a, b, c, out)
    fns["numba by hand"] = lambda: hand(a, b, c, out)


def torch_rows(fns, op, a, b, c):
    torch = optional("torch")
    if torch is None:
        return
    ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
    u = unary(torch, op)

    def f(a, b, c):
        return u(a * b + c) * 0.5 + a
    fns["torch eager"] = lambda: f(ta, tb, tc)
    try:
        g = torch.compile(f)
        g(ta, tb, tc)
        fns["torch.compile"] = lambda: g(ta, tb, tc)
    except Exception as e:   # noqa: BLE001 -- inductor needs a C compiler; skip cleanly
        print(f"  (torch.compile skipped: {type(e).__name__}: {str(e)[:80]})")


def jax_row(fns, op, a, b, c):
    jax, jnp = optional("jax"), optional("jax.numpy")
    if jax is None:
        return
    u = jax.nn.sigmoid if _op(op) == "sigmoid" else unary(jnp, op)

    @jax.jit
    def f(a, b, c):
        return u(a * b + c) * 0.5 + a
    ja, jb, jc = (jax.device_put(x) for x in (a, b, c))
    f(ja, jb, jc).block_until_ready()
    fns["jax.jit"] = lambda: f(ja, jb, jc).block_until_ready()


def transcendentals(n=1 << 22):
    """NumPy's ufunc, numba's scalar libm loop and the vmath loop, float32 and
    float64, one thread each (x in [-4, 4); log of |x| + 0.5)."""
    numba = optional("numba") if fusion.numba_available() else None
    if numba is None:
        return
    from minpy.fusion import vmath
    rows = []
    for dt in ("float32", "float64"):
        x = (numpy.random.default_rng(0).random(n) * 8 - 4).astype(dt)
        out = numpy.empty_like(x)
        for name in ("exp", "tanh", "log", "sqrt"):
            xx = numpy.abs(x) + numpy.asarray(0.5, dt) if name in ("log", "sqrt") else x
            ns = {"numpy": numpy, "vm": getattr(vmath, f"{name}_f{dt[-2:]}", None)}
            exec(f"def k(x, out):\n    for i in range(x.shape[0]):\n"
                 f"        out[i] = numpy.{name}(x[i])\n"
                 f"def v(x, out):\n    for i in range(x.shape[0]):\n"
                 f"        out[i] = vm(x[i])\n", ns)
            uf = getattr(numpy, name)
            fns = {"np": lambda: uf(xx, out=out)}
            k = numba.njit(ns["k"])
            k(xx, out)
            fns["nb"] = lambda: k(xx, out)
            if ns["vm"] is not None:
                v = numba.njit(ns["v"])
                v(xx, out)
                fns["vm"] = lambda: v(xx, out)
            t = per_call_interleaved(fns, min_time=0.05, rounds=3)
            vm = t.get("vm")
            rows.append([f"{name} {dt}", fmt_time(t["np"]), fmt_time(t["nb"]),
                         fmt_time(vm) if vm else "-",
                         f"{vm / t['np']:.2f}x" if vm else "-",
                         "vmath" if name in fusion.VMATH else "numpy side"
                         if name in fusion.NUMPY_SIDE else "numba"])
    print_table(f"transcendentals, {n} elements, one thread (loop vs NumPy ufunc)",
                ["op", "numpy", "numba libm", "vmath", "vmath/numpy", "in a kernel"], rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="default 10000000,1000000,10000 (quick: 10000)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call each (CI)")
    args = ap.parse_args(argv)
    set_quick(args.quick)
    sizes = args.sizes or ("10000" if args.quick else "10000000,1000000,10000")
    extra = [jit_row("minpy.jit", _jitted)]
    for expr, op in EXPRS.items():
        if args.quick and expr not in QUICK_EXPRS:
            continue
        for n in (int(s) for s in sizes.split(",")):
            rows, notes = rows_for(n, op, extra)
            print_table(f"{expr}, n={n} float32", ["impl", "time", "vs numpy"], rows)
            print("  " + notes)
    transcendentals(1 << 14 if args.quick else 1 << 22)


if __name__ == "__main__":
    main()
