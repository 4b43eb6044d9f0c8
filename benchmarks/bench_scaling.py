"""How each one's cost grows with the work: one training step of an MLP and of LeNet,
swept over batch size and width, for NumPy, minpy (eager, jit, executor), JAX jit and
PyTorch, side by side.

    python benchmarks/bench_scaling.py [--quick] [--plot docs/figures/scaling.png]

Sweeps (``--quick``: two points each, one timed call per contender):

- MLP 784-W-10 (ReLU, softmax cross-entropy, SGD in place; bench_jit.py's step for
  every contender): batch 8 ... 1024 at width 256, and width 64 ... 2048 at batch 64;
  NumPy by hand, minpy eager (``grad_and_loss``), minpy jit, JAX jit, PyTorch eager;
- LeNet (``minpy.symbol.zoo.lenet``, gradient of every parameter; bench_executor.py's
  graph walk for the tape and for PyTorch): batch 4 ... 128, and the filters scaled
  x0.5 ... x4 at batch 16; the minpy executor (``simple_bind`` once), the minpy tape,
  the tape under ``minpy.jit``, JAX jit (the same graph in ``jax.lax``), PyTorch. No
  NumPy-by-hand convolution is written: the executor is minpy's NumPy path there.

Each point is timed round robin (best of 5 rounds); the table gives the time per step
and per sample and each contender's ratio to the first. ``--plot`` draws microseconds
per sample against the swept size, one panel per sweep, one line per contender
(matplotlib, the ``plot`` extra). Absent peers are said and skipped.
"""
import argparse
import os
import platform
import sys

if __name__ == "__main__":      # before NumPy loads BLAS (see bench_executor.py)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minpy                                                     # noqa: E402
import minpy as np                                               # noqa: E402
from minpy.symbol import function, zoo                           # noqa: E402
from _timing import (fmt_time, is_quick, optional, per_call_interleaved,  # noqa: E402
                     print_table, set_quick)
import bench_executor as bx                                      # noqa: E402
import bench_jit as bj                                           # noqa: E402

MLP_BATCHES = (8, 32, 128, 512, 1024)
MLP_WIDTHS = (64, 256, 1024, 2048)
CNN_BATCHES = (4, 16, 64, 128)
CNN_SCALES = (0.5, 1, 2, 4)


# ----------------------------------------------------------------------- MLP
def mlp_contenders(batch, width):
    """bench_jit.py's contenders for one MLP 784-width-10 step at ``batch``."""
    r = numpy.random.default_rng(1)
    x = r.standard_normal((batch, 784)).astype("f4")
    y = r.integers(0, 10, batch)
    p0 = bj.init(784, width, 10)
    pn = {k: v.copy() for k, v in p0.items()}
    pe = {k: np.array(v) for k, v in p0.items()}
    pj = {k: np.array(v) for k, v in p0.items()}
    xm, ym = np.array(x), np.array(y)
    jitted = minpy.jit(bj.minpy_step)
    fns = {"NumPy by hand": lambda: bj.numpy_step(pn, x, y),
           "minpy eager": lambda: bj.minpy_step(pe, xm, ym),
           "minpy jit": lambda: jitted(pj, xm, ym)}
    jx = bj.jax_contender(p0, x, y)
    if jx is not None:
        fns["JAX jit"] = jx
    torch = bj.torch_contenders(p0, x, y) if optional("torch") is not None else {}
    if "PyTorch eager" in torch:
        fns["PyTorch"] = torch["PyTorch eager"]
    losses = {k: float(f()) for k, f in fns.items()}      # one step each from p0
    ref = losses["NumPy by hand"]
    for k, v in losses.items():
        if not numpy.isclose(v, ref, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"MLP b{batch} w{width}: {k}'s loss {v} is not NumPy's {ref}")
    return fns


# ---------------------------------------------------------------------- CNN
def jax_ops(jax):
    """The graph walk's ops in ``jax.lax`` (NCHW, OIHW)."""
    lax, jnp = jax.lax, jax.numpy

    def conv(a, x, w, b=None):
        s, p = bx._pair(a["stride"], (1, 1)), bx._pair(a["pad"], (0, 0))
        out = lax.conv_general_dilated(x, w, s, [(p[0], p[0]), (p[1], p[1])],
                                       dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out if b is None else out + b[None, :, None, None]

    def pool(a, x):
        k, s = bx._pair(a["kernel"], None), bx._pair(a["stride"], (1, 1))
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1) + k, (1, 1) + s, "VALID")
    return {"Convolution": conv,
            "Activation": lambda a, x: jnp.tanh(x) if a["act_type"] == "tanh"
            else jnp.maximum(x, 0),
            "Pooling": pool, "Flatten": lambda a, x: x.reshape(x.shape[0], -1),
            "FullyConnected": lambda a, x, w, b=None: x @ w.T + b}


def cnn_contenders(batch, scale):
    """LeNet (filters x ``scale``) at ``batch``: executor, tape, tape + jit, JAX, torch."""
    symbol = zoo.lenet(num_filter=(max(1, round(20 * scale)), max(1, round(50 * scale))))
    shape = (batch, 1, 28, 28)
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal(shape).astype(numpy.float32)
    y = rng.integers(0, 10, size=batch)
    logits = symbol.get_internals()["fc2_output"]
    f = function(logits, {"data": shape}, name=f"lenet_{batch}_{scale}")
    params = f.get_params(seed=0)
    xm, ym = np.array(x), np.array(y)
    tstep = np.grad_and_loss(lambda p: bx.xent(np, bx.run_graph(
        symbol, bx.MINPY_OPS, dict(p, data=xm)), ym))
    jstep = minpy.jit(tstep)
    losses = {"minpy tape": float(tstep(params)[1]), "minpy tape + jit": float(jstep(params)[1])}
    fns = {"minpy executor": bx.executor_step(symbol, params, shape, xm, ym),
           "minpy tape": lambda: tstep(params),
           "minpy tape + jit": lambda: jstep(params)}
    jax = optional("jax")
    if jax is not None:
        ops = jax_ops(jax)
        jp = {k: jax.numpy.asarray(v.asnumpy()) for k, v in params.items()}
        jx, jy = jax.numpy.asarray(x), jax.numpy.asarray(y)
        jgrad = jax.jit(jax.value_and_grad(lambda p: bx.xent(jax.numpy, bx.run_graph(
            symbol, ops, dict(p, data=jx)), jy)))
        losses["JAX jit"] = float(jgrad(jp)[0])
        fns["JAX jit"] = lambda: jax.block_until_ready(jgrad(jp))
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(2)
        tops = bx.torch_ops(torch)
        tp = {k: torch.tensor(v.asnumpy(), requires_grad=True) for k, v in params.items()}
        tx, ty = torch.tensor(x), torch.tensor(y)

        def torch_step():
            for v in tp.values():
                v.grad = None
            loss = torch.nn.functional.cross_entropy(
                bx.run_graph(symbol, tops, dict(tp, data=tx)), ty)
            loss.backward()
            return loss
        losses["PyTorch"] = float(torch_step().detach())
        fns["PyTorch"] = torch_step
    ref = losses["minpy tape"]
    for k, v in losses.items():
        if not numpy.isclose(v, ref, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"LeNet b{batch} x{scale}: {k}'s loss {v} is not the tape's {ref}")
    return fns


# -------------------------------------------------------------------- sweeps
def sweep(title, label, points, build, batch_of):
    """Time every contender at every point; print one table; return
    {contender: [(point, seconds per sample)]}."""
    curves, rows = {}, []
    for pt in points:
        fns = build(pt)
        t = per_call_interleaved(fns, min_time=0.1, rounds=5)
        first = next(iter(t.values()))
        for k, v in t.items():
            per = v / batch_of(pt)
            curves.setdefault(k, []).append((pt, per))
            rows.append([f"{label} {pt}", k, fmt_time(v), fmt_time(per), f"{v / first:.2f}x"])
        print(f"timed: {title}, {label} {pt}", flush=True)
    print_table(title, [label, "contender", "per step", "per sample",
                        f"vs {next(iter(curves))}"], rows)
    return curves


def plot(panels, path):
    """Microseconds per sample against the swept size, one panel per sweep."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install 'minpy[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for ax, (title, xlabel, curves) in zip(axes.ravel(), panels):
        for name, pts in curves.items():
            xs, ys = zip(*pts)
            ax.plot(xs, [v * 1e6 for v in ys], marker="o", label=name)
        ax.set(xscale="log", yscale="log", title=title, xlabel=xlabel,
               ylabel="µs per sample (one training step)")
        ax.set_xticks([p for p, _ in next(iter(curves.values()))])
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Cost per sample as the work grows ({platform.machine()}, "
                 f"{os.cpu_count()} cores; lower is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    shrink_png(path)
    print(f"plot: {path}")


def shrink_png(path):
    """Re-save ``path`` with a 256-colour palette (a line chart loses nothing; the file
    is a third of the size, small enough to commit)."""
    from PIL import Image            # matplotlib's own dependency
    with Image.open(path) as im:
        small = im.convert("RGB").quantize(256)
    small.save(path, optimize=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two points per sweep, one call each")
    ap.add_argument("--plot", metavar="PNG", help="draw the curves into this file")
    args = ap.parse_args(argv)
    set_quick(args.quick)
    q = is_quick()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"NumPy {numpy.__version__}, minpy {minpy.__version__}")
    sweeps = [  # (title, its x label, the points, contenders at a point, batch at a point)
        ("MLP 784-256-10 by batch", "batch", MLP_BATCHES, lambda b: mlp_contenders(b, 256),
         lambda b: b),
        ("MLP 784-W-10 at batch 64 by width", "width", MLP_WIDTHS,
         lambda w: mlp_contenders(64, w), lambda w: 64),
        ("LeNet by batch", "batch", CNN_BATCHES, lambda b: cnn_contenders(b, 1), lambda b: b),
        ("LeNet at batch 16, filters scaled", "filters x", CNN_SCALES,
         lambda s: cnn_contenders(16, s), lambda s: 16),
    ]
    panels = [(title, label, sweep(f"{title}: one training step", label,
                                   points[:2] if q else points, build, batch_of))
              for title, label, points, build, batch_of in sweeps]
    if args.plot:
        plot(panels, args.plot)


if __name__ == "__main__":
    main()
