"""Draw the docs site's pictures from minpy's own examples and benchmarks.

    python docs/figures/make_figures.py [--only training,memory,benchmarks] [--out DIR]

Needs matplotlib (``pip install -e ".[plot]"``); about a minute on two cores. Writes PNGs
(default: next to this script, where the docs pages find them):

- ``training_curves.png``: loss per epoch and train/validation accuracy per epoch of the
  MLP of ``examples/mlp_digits.py`` and the CNN of ``examples/cnn_digits.py`` on the
  bundled digits data (``minpy.datasets.load_digits``), trained with ``Solver`` exactly
  as the examples configure it (seed 42), for fewer epochs;
- ``memory_planner.png``: internal memory of four ImageNet networks (batch 64) under
  each planning strategy of ``minpy.symbol.plan_report`` (what ``benchmarks/bench_memory.py``
  tabulates): naive, in-place, co-share, both, and both + mirror for training. Shapes
  only: nothing is allocated, so the figure is the same on any machine;
- ``benchmarks.png``: minpy's time over NumPy's for the cases of
  ``benchmarks/bench_overhead.py`` (per-call overhead, at two sizes) and the contenders of
  ``benchmarks/bench_autograd.py`` (a gradient against the same gradient written by hand
  in NumPy; the peers autograd, PyTorch and JAX-jit where installed), built and timed
  with the benchmarks' own functions (shorter samples). Timings depend on the machine:
  the figure names the one that drew it.

The PNGs are checked in; rerun this script after a change that moves the numbers.
"""
import argparse
import importlib.util
import os
import platform
import sys
import time

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIGURES = ("training", "memory", "benchmarks")
DPI = 100


def _pyplot():
    import matplotlib              # the plot extra
    matplotlib.use("Agg")
    from matplotlib import pyplot
    return pyplot


def _example(name):
    """The module ``examples/<name>.py`` (the examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train(model, image_shape, epochs, lr, init):
    """A Solver configured as the examples configure theirs; returns it after training."""
    from minpy.datasets import load_digits
    from minpy.nn.solver import Solver
    train, test = load_digits(image_shape=image_shape)
    solver = Solver(model, train, test, batch_size=64, num_epochs=epochs, seed=42,
                    update_rule="sgd_momentum",
                    optim_config={"learning_rate": lr, "momentum": 0.9},
                    keep_best=False, verbose=False, **init)
    solver.init()
    solver.train()
    return solver


def training_curves(path, mlp_epochs=20, cnn_epochs=10):
    """Loss and accuracy per epoch of the two digits examples."""
    mlp, cnn = _example("mlp_digits"), _example("cnn_digits")
    runs = [("MLP (examples/mlp_digits.py)",
             _train(mlp.TwoLayerNet(), (64,), mlp_epochs, 0.1,
                    {"init_rule": "gaussian", "init_config": {"stdvar": 0.1}})),
            ("CNN (examples/cnn_digits.py)",
             _train(cnn.ConvNet(), (1, 8, 8), cnn_epochs, 0.05, {"init_rule": "xavier"}))]
    pyplot = _pyplot()
    fig, (ax_loss, ax_acc) = pyplot.subplots(1, 2, figsize=(10, 3.8))
    for (label, solver), color in zip(runs, ("tab:blue", "tab:orange")):
        epochs = len(solver.val_acc_history)
        per_epoch = numpy.array_split(numpy.asarray(solver.loss_history, float), epochs)
        x = numpy.arange(1, epochs + 1)
        ax_loss.plot(x, [p.mean() for p in per_epoch], "o-", color=color, ms=3, label=label)
        ax_acc.plot(x, solver.train_acc_history, "o--", color=color, ms=3,
                    label=f"{label.split()[0]} train")
        ax_acc.plot(x, solver.val_acc_history, "s-", color=color, ms=3,
                    label=f"{label.split()[0]} validation ({solver.val_acc_history[-1]:.3f})")
    ax_loss.set(xlabel="epoch", ylabel="mean training loss", yscale="log",
                title="training loss (softmax cross-entropy)")
    ax_loss.legend()
    ax_acc.set(xlabel="epoch", ylabel="accuracy", ylim=(0.4, 1.0),
               title="accuracy on the digits data (1437 train / 360 test)")
    ax_acc.legend(loc="lower right", fontsize=8)
    for ax in (ax_loss, ax_acc):
        ax.xaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    pyplot.close(fig)


def memory_planner(path, batch=64):
    """Internal memory per planning strategy (``plan_report``), inference and training."""
    from minpy.symbol import plan_report, zoo
    nets = [("VGG-16", zoo.vgg16), ("ResNet-50", lambda: zoo.resnet(50)),
            ("ResNet-152", lambda: zoo.resnet(152)), ("Inception-BN", zoo.inception_bn)]
    strategies = [("naive", "naive: a buffer per entry"), ("inplace", "in-place"),
                  ("coshare", "co-share"), ("both", "in-place + co-share (default)"),
                  ("mirror", "both + mirror (recompute cheap nodes)")]
    reports = {}
    for name, make in nets:
        net = make()
        reports[name] = {mode: plan_report(net, is_train=mode == "training",
                                           data=(batch, 3, 224, 224))
                         for mode in ("inference", "training")}
    pyplot = _pyplot()
    fig, axes = pyplot.subplots(1, 2, figsize=(11, 4.2))
    width = 0.8 / len(strategies)
    x = numpy.arange(len(nets))
    for ax, mode in zip(axes, ("inference", "training")):
        shown = strategies if mode == "training" else strategies[:-1]
        for i, (key, label) in enumerate(shown):
            gb = [reports[name][mode][key] / 1e9 for name, _ in nets]
            ax.bar(x + (i - (len(shown) - 1) / 2) * width, gb, width, label=label)
        for j, (name, _) in enumerate(nets):
            r = reports[name][mode]
            best = r["mirror"] if mode == "training" else r["both"]
            ax.annotate(f"naive / {'mirror' if mode == 'training' else 'both'}: "
                        f"{r['naive'] / best:.0f}x", (j, r["naive"] / 1e9),
                        textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
        ax.set_xticks(x, [name for name, _ in nets])
        ax.set(ylabel="internal memory (GB)",
               title=f"{mode}: batch {batch}, 224x224, float32")
        ax.set_ylim(0, max(reports[n][mode]["naive"] for n, _ in nets) / 1e9 * 1.12)
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
               frameon=False)
    fig.suptitle("minpy.symbol's memory planner (plan_report; shapes only, nothing allocated)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=DPI)
    pyplot.close(fig)


def _benchmark(name):
    """``benchmarks/<name>.py`` imported as a module (its own sys.path setup runs)."""
    bench_dir = os.path.join(ROOT, "benchmarks")
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    return importlib.import_module(name)


def _timed(timing, fns, min_time=0.04, rounds=7):
    """Best seconds per call of each of ``fns``, round robin (the benchmarks' helper), with
    shorter samples than the benchmarks take: the figure shows ratios, not records."""
    return timing.per_call_interleaved(fns, min_time=min_time, rounds=rounds)


def benchmarks(path, sizes=(4, 1_000_000)):
    """minpy's time / NumPy's: per-call overhead and gradients (and installed peers)."""
    timing = _benchmark("_timing")
    overhead_bench, autograd_bench = _benchmark("bench_overhead"), _benchmark("bench_autograd")
    overhead = {}
    for n in sizes:
        for case, f_np, f_mp in overhead_bench.cases(n):
            t = _timed(timing, {"numpy": f_np, "minpy": f_mp})
            overhead.setdefault(case, {})[n] = t["minpy"] / t["numpy"]
    rng = numpy.random.default_rng(0)
    xn, yn = rng.random(4, dtype=numpy.float32), rng.random(4, dtype=numpy.float32)
    grad_cases = [("grad sum(x*y+1), 4 elements", autograd_bench.contenders_tiny(xn, yn)),
                  ("MLP 784-128-10, batch 32",
                   autograd_bench.contenders_mlp(*autograd_bench.make_mlp(32, 784, 128, 10))),
                  ("MLP 784-1024-10, batch 512",
                   autograd_bench.contenders_mlp(*autograd_bench.make_mlp(512, 784, 1024, 10)))]
    grads = {}
    for title, contenders in grad_cases:
        contenders.pop("jax eager", None)     # ~100x the rest: off the chart
        t = _timed(timing, contenders)
        grads[title] = {k: v / t["numpy (hand)"] for k, v in t.items() if k != "numpy (hand)"}

    pyplot = _pyplot()
    fig, (ax_o, ax_g) = pyplot.subplots(1, 2, figsize=(11, 5.2),
                                        gridspec_kw={"width_ratios": [1.5, 1]})
    cases = [c for c in overhead if all(n in overhead[c] for n in sizes)]
    y = numpy.arange(len(cases))
    height = 0.8 / len(sizes)
    for i, n in enumerate(sizes):
        ax_o.barh(y + (i - (len(sizes) - 1) / 2) * height, [overhead[c][n] for c in cases],
                  height, label=f"{n:,} float32 elements")
    ax_o.axvline(1, color="k", lw=0.8)
    ax_o.set_yticks(y, cases, fontsize=8)
    ax_o.invert_yaxis()
    ax_o.set(xscale="log", xlabel="minpy time / NumPy time (1x = no overhead; log scale)",
             title="per-call overhead (benchmarks/bench_overhead.py)")
    ax_o.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=len(sizes),
                frameon=False)
    names = sorted({k for r in grads.values() for k in r}, key=lambda k: (k != "minpy", k))
    y = numpy.arange(len(grads))
    height = 0.8 / len(names)
    for i, name in enumerate(names):
        ratios = [grads[c].get(name, numpy.nan) for c in grads]
        bars = ax_g.barh(y + (i - (len(names) - 1) / 2) * height, ratios, height, label=name)
        ax_g.bar_label(bars, fmt="%.2fx", fontsize=7, padding=2)
    ax_g.axvline(1, color="k", lw=0.8)
    ax_g.set_yticks(y, list(grads), fontsize=8)
    ax_g.invert_yaxis()
    ax_g.set(xscale="log", xlabel="time / hand-written NumPy (log scale)",
             title="gradients (bench_autograd.py)")
    ax_g.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2,
                frameon=False)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    for ax in (ax_o, ax_g):
        ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax_g.set_xlim(right=ax_g.get_xlim()[1] * 1.3)      # room for the bar labels
    import minpy
    fig.text(0.01, 0.01, f"minpy {minpy.__version__}, numpy {numpy.__version__}, python "
             f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs "
             f"(shared); CPU only. Timings vary by machine: rerun "
             f"docs/figures/make_figures.py --only benchmarks", fontsize=7, color="0.3")
    fig.tight_layout(rect=(0, 0.03, 1, 1), w_pad=2)
    fig.savefig(path, dpi=DPI)
    pyplot.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(FIGURES),
                    help=f"comma-separated subset of {','.join(FIGURES)}")
    ap.add_argument("--out", default=HERE, help="directory for the PNGs (default: here)")
    opts = ap.parse_args(argv)
    wanted = [w for w in opts.only.split(",") if w]
    unknown = sorted(set(wanted) - set(FIGURES))
    if unknown:
        ap.error(f"unknown figures {unknown}; choose from {FIGURES}")
    os.makedirs(opts.out, exist_ok=True)
    makers = {"training": ("training_curves.png", training_curves),
              "memory": ("memory_planner.png", memory_planner),
              "benchmarks": ("benchmarks.png", benchmarks)}
    for name in wanted:
        filename, make = makers[name]
        start = time.perf_counter()
        path = os.path.join(opts.out, filename)
        make(path)
        print(f"{path}: {os.path.getsize(path) / 1024:.0f} KB, "
              f"{time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, ROOT)       # this checkout's minpy, as the benchmarks import it
    main()
