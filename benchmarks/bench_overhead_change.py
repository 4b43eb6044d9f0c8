# quick: python benchmarks/bench_overhead_change.py HEAD --quick
"""Per-call overhead before and after a change: bench_overhead.py and bench_autograd.py
run on two revisions of minpy, alternating, in one run.

    python benchmarks/bench_overhead_change.py BASE_REV [--rounds 3] [--sizes 4]
                                               [--no-autograd] [--quick]

BASE_REV is checked out into a temporary git worktree; each round runs
bench_overhead.py --json (and bench_autograd.py --json) once with the base on
``sys.path`` and once with this checkout, so machine noise hits both alike. The table gives, per case, the best
minpy/NumPy ratio of each revision and their quotient (after / before; 1.00 =
unchanged).  ``--quick`` (CI; ``HEAD`` as BASE_REV compares this checkout with its
last commit): one round, and both scripts in their own ``--quick`` mode.
"""
import argparse
import json
import pathlib
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import print_table   # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


# Runs bench_overhead.py with minpy imported from the tree given: an editable install's
# import hook would otherwise win over sys.path, so it is taken out first.
_BOOT = """
import runpy, sys
tree, script = sys.argv[1], sys.argv[2]
sys.meta_path[:] = [f for f in sys.meta_path
                    if not type(f).__module__.startswith("__editable__")]
sys.path.insert(0, tree)
import minpy
if not minpy.__file__.startswith(tree):
    sys.exit(f"minpy imported from {minpy.__file__}, not from {tree}")
sys.argv = [script] + sys.argv[3:]
runpy.run_path(script, run_name="__main__")
"""


def run_script(tree, script, *flags):
    """{case: [numpy seconds, minpy seconds]} from ``script --json`` with minpy from ``tree``
    (the scripts of this checkout, so both revisions run the same benchmark)."""
    out = subprocess.run([sys.executable, "-c", _BOOT, str(tree), str(HERE / script),
                          "--json", *flags], capture_output=True, text=True,
                         check=True, cwd=str(tree))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="4")
    ap.add_argument("--no-autograd", action="store_true", help="bench_overhead.py only")
    ap.add_argument("--quick", action="store_true",
                    help="one round, the scripts in --quick mode (CI)")
    opts = ap.parse_args()
    quick = ("--quick",) if opts.quick else ()
    if opts.quick:
        opts.rounds = 1
    scripts = [("bench_overhead.py", ("--sizes", opts.sizes) + quick)]
    if not opts.no_autograd:
        scripts.append(("bench_autograd.py", quick))
    best = {"before": {}, "after": {}}
    # a SIGTERM (CI's timeout) unwinds like an exception: the worktree is removed below
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(base),
                        opts.base], check=True, capture_output=True)
        try:
            for _ in range(opts.rounds):
                for script, flags in scripts:
                    for label, tree in (("before", base), ("after", REPO)):
                        for case, (t_np, t_mp) in run_script(tree, script, *flags).items():
                            r = t_mp / t_np
                            best[label][case] = min(best[label].get(case, r), r)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(base)], check=False, capture_output=True)
    rows = []
    for case in best["after"]:
        b = best["before"].get(case)
        a = best["after"][case]
        rows.append([case, "-" if b is None else f"{b:6.2f}x", f"{a:6.2f}x",
                     "-" if b is None else f"{a / b:5.2f}"])
    print(f"base {opts.base} vs this checkout; {opts.rounds} rounds, best ratio of each")
    print_table("minpy/NumPy per-call ratio, before and after (after/before: 1.00 = unchanged)",
                ["case", "before", "after", "after/before"], rows)


if __name__ == "__main__":
    main()
