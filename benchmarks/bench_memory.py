"""Memory benchmark.  Run: ``python benchmarks/bench_memory.py [--quick]`` (about 3 min).

Table 1 -- the MXNet paper's memory figure ("Internal memory usage of MXNet
under various allocation strategies for only forward (left) and
forward-backward (right) with batch size 64"): internal memory (MB) of
VGG-16, ResNet-50, ResNet-152 and Inception-BN on 224x224 ImageNet inputs,
inference and training, under naive / inplace / co-share / both, with the
lower bound (peak of live internal bytes in the execution order), MXNet's
block layout for comparison, and the mirror (cheap nodes recomputed).  Shapes
only: nothing is allocated.  Targets: naive/both >= 2 (training), >= 4
(inference); both/lower bound <= 1.15.

Table 2 -- trading computation for memory ("Training Deep Nets with
Sublinear Memory Cost"): (a) a deep CIFAR ResNet (default depth 1001,
batch 32), training internal memory without mirror, with the cheap mirror
(``mirror=True``) and with the full search (``mirror='all'``), shapes only;
target >= 5x less.  (b) a runnable ResNet (default depth 56, batch 32,
32x32): forward+backward wall time measured with and without mirror
(interleaved repetitions, best and median), the time spent in recomputed
nodes, and a check that outputs and gradients are identical; target <= 35%
more compute.

``--quick`` (CI): Table 1 as above (shapes only), Table 2a at depth 56, Table 2b
at depth 20, batch 4, one repetition; the Table 2 targets are for the full sizes.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minpy  # noqa: E402
import minpy.symbol as sym  # noqa: E402
from minpy.symbol import plan_report, zoo  # noqa: E402
from _timing import print_table  # noqa: E402

MB = 1e6
NETS = [("VGG-16", zoo.vgg16), ("ResNet-50", lambda: zoo.resnet(50)),
        ("ResNet-152", lambda: zoo.resnet(152)), ("Inception-BN", zoo.inception_bn)]


def mb(x):
    return f"{x / MB:.0f}"


def table1(batch):
    rows, misses = [], []
    for name, make in NETS:
        net = make()
        for is_train, target in ((False, 4), (True, 2)):
            t = time.perf_counter()
            r = plan_report(net, is_train=is_train, data=(batch, 3, 224, 224))
            red, gap = r["naive"] / r["both"], r["both"] / r["lower_bound"]
            ok = red >= target and gap <= 1.15
            if not ok:
                misses.append(f"{name} {'training' if is_train else 'inference'}")
            rows.append([name, "training" if is_train else "inference", mb(r["naive"]),
                         mb(r["inplace"]), mb(r["coshare"]), mb(r["both"]),
                         mb(r["lower_bound"]), mb(r["both_blocks"]), mb(r["mirror"]),
                         f"{r['naive'] / r['inplace']:.2f}", f"{r['naive'] / r['coshare']:.2f}",
                         f"{red:.2f} (>={target})", f"{gap:.3f}", "yes" if ok else "NO",
                         f"{time.perf_counter() - t:.1f}"])
    print_table(f"Table 1: internal memory (MB), batch {batch}, 224x224, float32",
                ["net", "mode", "naive", "inplace", "co-share", "both", "lower bd",
                 "blocks", "mirror", "n/inpl", "n/cosh", "naive/both", "both/lb", "met",
                 "plan s"], rows)
    print("  inplace/co-share/both: arena layout (the executor's default); blocks: 'both' "
          "with MXNet's one-buffer-per-block layout; mirror: 'both' after recomputing "
          "cheap nodes (training)")
    return misses


def table2_shapes(depth, batch):
    net = zoo.resnet(depth, 10, (3, 32, 32))
    rows, plans = [], {}
    for label, mirror in (("no mirror", False), ("mirror=True (cheap)", True),
                          ("mirror='all'", "all")):
        t = time.perf_counter()
        p = net.memory_plan(data=(batch, 3, 32, 32), mirror=mirror)
        plans[label] = p
        base = plans["no mirror"].plan.total_bytes
        rows.append([label, mb(p.plan.total_bytes), f"{base / p.plan.total_bytes:.2f}x",
                     f"{len(p.recompute)}/{len(p.fwd_order)}",
                     f"{time.perf_counter() - t:.1f}"])
    print_table(f"Table 2a: ResNet-{depth} (CIFAR, bottleneck), batch {batch}, training "
                "internal memory (MB), shapes only",
                ["plan", "internal MB", "vs no mirror", "recomputed nodes", "plan s"], rows)
    ratio = plans["no mirror"].plan.total_bytes / plans["mirror='all'"].plan.total_bytes
    return ratio


def _bind(net, shape, mirror):
    exe = net.simple_bind(minpy.cpu(), mirror=mirror, data=shape)
    rng = np.random.default_rng(0)
    for k, a in exe.arg_dict.items():
        a[:] = (rng.standard_normal(a.shape) * 0.1).astype(a.dtype)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 10, shape[0])
    # time spent in recomputed (duplicate) nodes, measured inside each op
    spent = [0.0]
    steps = exe._bwd_of[True]
    for i, nid in enumerate(exe.plan.order[exe.plan.n_forward:]):
        if nid in exe.plan.origin:
            fn, reads, writes, name = steps[i]

            def timed(fn=fn):
                t = time.perf_counter()
                fn()
                spent[0] += time.perf_counter() - t
            steps[i] = (timed, reads, writes, name)
    return exe, spent


def table2_run(depth, batch, reps):
    net = zoo.resnet(depth, 10, (3, 32, 32))
    shape = (batch, 3, 32, 32)
    runs = {m: _bind(net, shape, m) for m in (False, True, "all")}
    results = {}
    for m, (exe, _) in runs.items():            # warm up, and record the results
        exe.forward(is_train=True)
        exe.backward()
        results[m] = [o.asnumpy().copy() for o in exe.outputs] + \
            [g.asnumpy().copy() for g in exe.grad_arrays if g is not None]
    times = {m: [] for m in runs}
    recompute = {m: [] for m in runs}
    for _ in range(reps):                       # interleaved, so load hits all alike
        for m, (exe, spent) in runs.items():
            spent[0] = 0.0
            t = time.perf_counter()
            exe.forward(is_train=True)
            exe.backward()
            times[m].append(time.perf_counter() - t)
            recompute[m].append(spent[0])
    best0, med0 = min(times[False]), float(np.median(times[False]))
    rows, worst = [], 0.0
    for label, m in (("no mirror", False), ("mirror=True (cheap)", True),
                     ("mirror='all'", "all")):
        exe = runs[m][0]
        same = all(np.array_equal(a, b) for a, b in zip(results[False], results[m]))
        best, med = min(times[m]), float(np.median(times[m]))
        share = min(recompute[m]) / best0
        if m:
            worst = max(worst, best / best0 - 1)
        rows.append([label, mb(exe.memory_report(False)["internal_planned"]),
                     f"{best:.3f}", f"{med:.3f}", f"{100 * (best / best0 - 1):+.1f}%",
                     f"{100 * (med / med0 - 1):+.1f}%", f"{100 * share:.1f}%",
                     "identical" if same else "DIFFER"])
    print_table(f"Table 2b: ResNet-{depth} (CIFAR), batch {batch}, forward+backward, "
                f"{reps} interleaved repetitions, float32",
                ["plan", "internal MB", "best s", "median s", "best vs none",
                 "median vs none", "recompute time", "outputs+grads"], rows)
    print("  recompute time: time inside the recomputed nodes / best no-mirror "
          "forward+backward")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--deep-depth", type=int, default=1001)
    ap.add_argument("--deep-batch", type=int, default=32)
    ap.add_argument("--run-depth", type=int, default=56)
    ap.add_argument("--run-batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true",
                    help="depths 56 (2a) and 20 (2b), batch 4 in 2b, one repetition (CI)")
    args = ap.parse_args()
    if args.quick:
        args.deep_depth, args.run_depth, args.run_batch, args.reps = 56, 20, 4, 1
    misses = table1(args.batch)
    ratio = table2_shapes(args.deep_depth, args.deep_batch)
    worst = table2_run(args.run_depth, args.run_batch, args.reps)
    print("\nTargets:")
    print(f"  paper reductions and <= 1.15x lower bound: "
          f"{'met on every net' if not misses else 'missed on ' + ', '.join(misses)}")
    print(f"  deep ResNet mirror memory >= 5x lower: {ratio:.1f}x "
          f"({'met' if ratio >= 5 else 'missed'})")
    print(f"  mirror compute overhead <= 35% (best times): {100 * worst:.1f}% "
          f"({'met' if worst <= 0.35 else 'missed'})")
    sym.seed(0)


if __name__ == "__main__":
    main()
