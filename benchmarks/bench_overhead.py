"""Per-call overhead of minpy vs raw NumPy, measured side by side in one run.

    python benchmarks/bench_overhead.py [--sizes 4,1000000,10000000] [--json] [--quick]

``--json`` prints {case: [numpy seconds, minpy seconds]} (what
``bench_overhead_change.py`` reads to compare two revisions of minpy).

Each case runs the same expression on numpy arrays and on minpy arrays of the
same values; the ratio is minpy time / NumPy time (1.00 = no overhead).
``--quick`` (CI): sizes 4 and 1000 unless ``--sizes`` is given, one timed call each.
"""
import argparse
import json
import platform
import sys

import numpy

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import minpy                                     # noqa: E402
from _timing import per_call, fmt_time, print_table, set_quick   # noqa: E402


def cases(n):
    rng = numpy.random.default_rng(0)
    xn = rng.random(n, dtype=numpy.float32)
    yn = rng.random(n, dtype=numpy.float32)
    idx_n = rng.integers(0, n, size=min(n, 1000))
    zn = rng.random(n, dtype=numpy.float32)
    xm, ym, zm, idx_m = minpy.array(xn), minpy.array(yn), minpy.array(zn), minpy.array(idx_n)
    return [
        ("x*y+1", lambda: xn * yn + 1, lambda: xm * ym + 1),
        ("(x*y+z)*0.5+x (temporaries)", lambda: (xn * yn + zn) * 0.5 + xn,
         lambda: (xm * ym + zm) * 0.5 + xm),
        ("sum(x, axis=0)", lambda: numpy.sum(xn, axis=0), lambda: minpy.sum(xm, axis=0)),
        ("x.mean()", lambda: xn.mean(), lambda: xm.mean()),
        ("exp(x)", lambda: numpy.exp(xn), lambda: minpy.exp(xm)),
        ("x[1:-1] (slice)", lambda: xn[1:-1], lambda: xm[1:-1]),
        ("x[idx] (gather)", lambda: xn[idx_n], lambda: xm[idx_m]),
        ("x[x > 0.5] (mask)", lambda: xn[xn > 0.5], lambda: xm[xm > 0.5]),
        ("x += 1 (in place)", lambda: numpy.add(xn, 1, out=xn), lambda: xm.__iadd__(1)),
        ("s = x.sum(); s += 1 (scalar)", lambda: xn.sum() + 1, lambda: _scalar_add(xm)),
        ("x.sum()", lambda: xn.sum(), lambda: xm.sum()),
        ("x[i] (element)", lambda: xn[2], lambda: xm[2]),
        (f"s += x[i] for i < {min(n, 100)} (Python loop)", lambda: _loop(xn, min(n, 100)),
         lambda: _loop(xm, min(n, 100))),
        ("grad sum(x*y+1) (tape)", lambda: _grad_np(xn, yn), lambda: _grad_mp(xm, ym)),
    ]


def _scalar_add(x):
    s = x.sum()
    s += 1
    return s


def _loop(x, m):
    s = 0
    for i in range(m):
        s += x[i]
    return s


def _grad_np(x, y):
    """What the gradient costs by hand in NumPy (the forward and d/dx = y)."""
    numpy.sum(x * y + 1)
    return y * numpy.ones_like(x)


def _f(x, y):
    return minpy.sum(x * y + 1)


_grad_f = minpy.grad(_f)


def _grad_mp(x, y):
    return _grad_f(x, y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=None, help="default 4,1000000,10000000 (quick: 4,1000)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call each (CI)")
    opts = ap.parse_args()
    set_quick(opts.quick)
    sizes = opts.sizes or ("4,1000" if opts.quick else "4,1000000,10000000")
    rows, raw = [], {}
    for n in map(int, sizes.split(",")):
        for name, f_np, f_mp in cases(n):
            t_np = per_call(f_np)
            t_mp = per_call(f_mp)
            raw[f"{name} [{n:,}]"] = [t_np, t_mp]
            rows.append([f"{name} [{n:,}]", fmt_time(t_np), fmt_time(t_mp), f"{t_mp / t_np:5.2f}x"])
    if opts.json:
        print(json.dumps(raw))
        return
    print(f"python {platform.python_version()}, numpy {numpy.__version__}, "
          f"{platform.machine()}, minpy policy {minpy.get_policy()}, gpus {minpy.num_gpus()}")
    print_table("Per-call time, minpy vs raw NumPy (same run; ratio = minpy / numpy)",
                ["case", "numpy", "minpy", "ratio"], rows)


if __name__ == "__main__":
    main()
