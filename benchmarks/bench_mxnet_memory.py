"""Executor memory on MXNet's own exported graphs: minpy's planner vs MXNet 1.9.1's.

The graphs are MXNet 1.9.1's exports of the Gluon model zoo's ResNet-50 v1,
ResNet-152 v1, VGG-16 and Inception-v3 with a ``SoftmaxOutput`` head
(``tests/fixtures/mxnet/*-symbol.json``), bound at batch 64, float32, for
training (``grad_req='write'`` on every argument, MXNet's default) and for
inference (``grad_req='null'``).

MXNet's column is recorded in ``tests/fixtures/mxnet/mxnet_memory.json`` by
``make_fixtures.py`` (the command is in that file): the ``Total N MB
allocated`` line of ``Executor.debug_str()`` after ``simple_bind`` on the CPU
with ``MXNET_SUBGRAPH_BACKEND=NONE``.  That figure is the memory planner's
``storage_allocated_bytes`` (``src/executor/graph_executor.cc``: the bound
arguments, gradients and aux states get external storage and are not in it),
so it is compared with minpy's planned storage for the same entries
(internal + outputs, from ``Executor.memory_report()`` of a real
``simple_bind``).  The full footprint (arguments + gradients + aux states +
internal + outputs) is printed for both as well; the bound arrays are the
same size in both, so the ratio there follows the planned part.

Run: ``python benchmarks/bench_mxnet_memory.py [--json] [--quick]`` (nothing is
timed; the numbers do not depend on the machine).  ``--quick`` (CI): ResNet-50 only.
"""
import argparse
import json
import pathlib
import sys

import minpy
import minpy.symbol as sym

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mxnet"
MIB = 1 << 20


def minpy_memory(name, data_shape, is_train):
    """``(planned, full)`` bytes of minpy's executor bound to MXNet's graph ``name``."""
    net = sym.load(str(FIXTURES / f"{name}-symbol.json"))
    exe = net.simple_bind(minpy.cpu(), grad_req="write" if is_train else "null",
                          data=tuple(data_shape))
    r = exe.memory_report(categories=False)
    planned = r["internal_planned"] + r["outputs"]
    full = planned + r["arguments"] + r["gradients"] + r["aux_states"] + r["head_grads"]
    return planned, full


def rows(only=None):
    """One dict per (network, mode) with both planners' figures in MiB (of the networks
    named in ``only``, or all)."""
    recorded = json.loads((FIXTURES / "mxnet_memory.json").read_text())
    out = []
    for name, rec in recorded["networks"].items():
        if only is not None and name not in only:
            continue
        for mode in ("training", "inference"):
            planned, full = minpy_memory(name, rec["data"], mode == "training")
            ext = sum(rec[mode + "_external_bytes"].values())
            out.append({"network": name, "mode": mode,
                        "mxnet_planned": rec[mode], "minpy_planned": planned // MIB,
                        "mxnet_full": rec[mode] + ext // MIB, "minpy_full": full // MIB})
    return out, recorded["command"]


def main(argv=()):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="also print the table as JSON")
    ap.add_argument("--quick", action="store_true", help="ResNet-50 only (CI)")
    args = ap.parse_args(list(argv))
    table, command = rows(("resnet50_v1",) if args.quick else None)
    print("Executor memory, batch 64, float32 (MiB, floored as MXNet prints them)")
    print(f"MXNet 1.9.1 column recorded by: {command}")
    head = (f"{'network':<14}{'mode':<11}{'MXNet plan':>11}{'minpy plan':>11}{'ratio':>7}"
            f"{'MXNet full':>12}{'minpy full':>12}{'ratio':>7}")
    print(head)
    print("-" * len(head))
    worst = 0.0
    for r in table:
        ratio = r["minpy_planned"] / r["mxnet_planned"]
        worst = max(worst, ratio)
        print(f"{r['network']:<14}{r['mode']:<11}{r['mxnet_planned']:>11}{r['minpy_planned']:>11}"
              f"{ratio:>7.2f}{r['mxnet_full']:>12}{r['minpy_full']:>12}"
              f"{r['minpy_full'] / r['mxnet_full']:>7.2f}")
    print(f"worst planned ratio (minpy / MXNet): {worst:.3f}")
    if args.json:
        print(json.dumps(table))
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
