"""Import time of minpy vs NumPy, each in a fresh interpreter (issue 27: every script pays it).

    python benchmarks/bench_import.py [--repeat 9] [--quick] [--no-bytecode-cache]

Each statement (``import numpy``, ``import minpy``, a first computation, and the
subpackages minpy loads on first use) runs in a new ``python`` process that times only
the statement (``time.perf_counter`` around it, not the interpreter's start-up; also its
CPU time, ``time.process_time``, steadier on a loaded machine) and counts the modules it
added to ``sys.modules``. The table shows the median and the best of ``--repeat`` runs,
interleaved so that load on a shared machine hits every statement alike. The ratio is
each median over ``import numpy``'s (the target: ``import minpy`` <= 1.5).

Bytecode: an installed package imports from cached ``.pyc`` files. Where
``PYTHONDONTWRITEBYTECODE`` is set (or the source tree is read-only), every run would
compile minpy's sources again, and measure the compiler; so by default the runs use a
bytecode cache of their own (``PYTHONPYCACHEPREFIX``, a temporary folder, filled by a
first, untimed run). ``--no-bytecode-cache`` keeps the environment as it is.
``--quick`` (CI): one run each.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fmt_time, print_table   # noqa: E402

STATEMENTS = [
    "import numpy",
    "import minpy",
    "import minpy as np; np.zeros(3) + 1",
    "import minpy; minpy.grad(minpy.sin)(1.0)",
    "import minpy; minpy.random",
    "import minpy; minpy.jit",
    "import minpy; minpy.symbol",
    "import minpy; minpy.nn",
    "import minpy; minpy.mxnet",
    "import minpy; minpy.kvstore",
]

_PROBE = """\
import sys, time, json
before = set(sys.modules)
c = time.process_time()
t = time.perf_counter()
{statement}
t = time.perf_counter() - t
c = time.process_time() - c
print(json.dumps([t, c, len(set(sys.modules) - before)]))
"""


def measure(statement, env=None):
    """(seconds, CPU seconds, modules added) of ``statement`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _PROBE.format(statement=statement)],
                         check=True, capture_output=True, text=True, env=env).stdout
    seconds, cpu, modules = json.loads(out.strip().splitlines()[-1])
    return seconds, cpu, modules


def bytecode_env(folder):
    """The environment of runs that read (and first write) bytecode under ``folder``."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = folder
    return env


def run(repeat, env):
    """{statement: [(seconds, cpu, modules)] * repeat}, the statements interleaved."""
    for statement in STATEMENTS:           # untimed: fills the bytecode cache
        measure(statement, env)
    runs = {s: [] for s in STATEMENTS}
    for _ in range(repeat):
        for statement in STATEMENTS:
            runs[statement].append(measure(statement, env))
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9, help="fresh processes per statement")
    ap.add_argument("--quick", action="store_true", help="one run each (CI)")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="run in this environment as it is (PYTHONDONTWRITEBYTECODE ...)")
    args = ap.parse_args()
    repeat = 1 if args.quick else max(1, args.repeat)
    with tempfile.TemporaryDirectory(prefix="minpy-bench-pyc-") as folder:
        env = None if args.no_bytecode_cache else bytecode_env(folder)
        runs = run(repeat, env)
    med = {s: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
           for s, v in runs.items()}
    base, base_cpu = med["import numpy"]
    rows = [[s, fmt_time(t), fmt_time(min(r[0] for r in runs[s])), f"{t / base:.2f}x",
             fmt_time(c), f"{c / base_cpu:.2f}x", str(runs[s][0][2])]
            for s, (t, c) in med.items()]
    cache = "as the environment is" if args.no_bytecode_cache else "bytecode cached"
    print_table(f"import time, median of {repeat} fresh processes ({sys.executable}; {cache})",
                ["statement", "median", "best", "vs numpy", "CPU median", "CPU vs numpy",
                 "modules"], rows)


if __name__ == "__main__":
    main()
