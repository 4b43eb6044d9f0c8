"""Import time of minpy vs NumPy, each in a fresh interpreter (issue 27: every script pays it).

    python benchmarks/bench_import.py [--repeat 15] [--quick]

Each statement (``import numpy``, ``import minpy``, and the subpackages minpy loads
on first use) runs in a new ``python`` process that times only the import
(``time.perf_counter`` around it, not the interpreter's start-up) and counts the
modules it added to ``sys.modules``; the table shows the best of ``--repeat``
runs, interleaved so that load on a shared machine hits every statement alike.
The ratio is each time over ``import numpy``'s (the target: ``import minpy`` <= 1.5).
``--quick`` (CI): one run each.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fmt_time, print_table   # noqa: E402

STATEMENTS = [
    "import numpy",
    "import minpy",
    "import minpy; minpy.symbol",
    "import minpy; minpy.nn",
    "import minpy; minpy.mxnet",
    "import minpy; minpy.kvstore",
]

_PROBE = """\
import sys, time, json
before = set(sys.modules)
t = time.perf_counter()
{statement}
t = time.perf_counter() - t
print(json.dumps([t, len(set(sys.modules) - before)]))
"""


def measure(statement):
    """(seconds, modules added) of ``statement`` run in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _PROBE.format(statement=statement)],
                         check=True, capture_output=True, text=True).stdout
    seconds, modules = json.loads(out.strip().splitlines()[-1])
    return seconds, modules


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="fresh processes per statement")
    ap.add_argument("--quick", action="store_true", help="one run each (CI)")
    args = ap.parse_args()
    repeat = 1 if args.quick else max(1, args.repeat)
    best = {s: (float("inf"), 0) for s in STATEMENTS}
    for _ in range(repeat):
        for statement in STATEMENTS:
            seconds, modules = measure(statement)
            if seconds < best[statement][0]:
                best[statement] = (seconds, modules)
    base = best["import numpy"][0]
    rows = [[s, fmt_time(t), f"{t / base:.2f}x", str(n)] for s, (t, n) in best.items()]
    print_table(f"import time, best of {repeat} fresh processes ({sys.executable})",
                ["statement", "time", "vs numpy", "modules"], rows)


if __name__ == "__main__":
    main()
