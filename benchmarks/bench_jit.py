"""One MLP training step (loss, 4 gradients, SGD update): ``minpy.jit`` vs the rest.

    python benchmarks/bench_jit.py [--quick]

Networks: 784-128-10 at batch 32 and 784-1024-10 at batch 512 (``--quick``: 784-256-10
at batch 64, and every contender timed once), ReLU, softmax
cross-entropy, float32, SGD with learning rate 0.01 in place.  Contenders, timed
round robin in one process:

- NumPy by hand: forward, backward and update written out (the reference);
- minpy eager: the loss written with ``import minpy as np``, gradients by
  ``minpy.grad_and_loss``, parameters updated with ``p[k] -= lr * g[k]``;
- minpy jit: that same step function under ``minpy.jit`` (traced once, replayed);
- JAX jit (where installed): ``jax.jit`` of ``value_and_grad`` + the update;
- PyTorch eager and ``torch.compile`` (where installed and working).

Before timing, every contender's loss after two steps from the same parameters
is checked against NumPy's.  Then memory: the jitted step's planned buffer
(bytes) and its per-call peak beside the eager step's peak (tracemalloc), as
the issue asks ("the planned one must be lower").
"""
import argparse
import os
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")    # numba's and torch's OpenMP: no spinning
import platform
import sys
import tracemalloc

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minpy                                                  # noqa: E402
import minpy as np                                            # noqa: E402
from _timing import per_call_interleaved, fmt_time, optional, print_table, set_quick  # noqa: E402

LR = 0.01


def init(d, h, c, seed=0):
    r = numpy.random.default_rng(seed)
    return {"w1": (r.standard_normal((d, h)) * 0.05).astype("f4"), "b1": numpy.zeros(h, "f4"),
            "w2": (r.standard_normal((h, c)) * 0.05).astype("f4"), "b2": numpy.zeros(c, "f4")}


def numpy_step(p, x, y):
    a = x @ p["w1"] + p["b1"]
    h = numpy.maximum(a, 0)
    s = h @ p["w2"] + p["b2"]
    z = s - s.max(axis=1, keepdims=True)
    e = numpy.exp(z)
    se = e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    rows = numpy.arange(n)
    loss = -(z[rows, y] - numpy.log(se[:, 0])).mean()
    ds = e / se
    ds[rows, y] -= 1
    ds /= n
    dw2 = h.T @ ds
    db2 = ds.sum(0)
    dh = ds @ p["w2"].T
    dh *= a > 0
    dw1 = x.T @ dh
    db1 = dh.sum(0)
    p["w1"] -= LR * dw1
    p["b1"] -= LR * db1
    p["w2"] -= LR * dw2
    p["b2"] -= LR * db2
    return loss


def minpy_loss(p, x, y):
    h = np.maximum(x @ p["w1"] + p["b1"], 0)
    s = h @ p["w2"] + p["b2"]
    z = s - np.max(s, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean((z - lse)[np.arange(x.shape[0]), y])


def minpy_step(p, x, y):
    g, loss = np.grad_and_loss(minpy_loss)(p, x, y)
    for k in p:
        p[k] -= LR * g[k]
    return loss


def jax_contender(p0, x, y):
    jax, jnp = optional("jax"), optional("jax.numpy")
    if jax is None:
        return None

    def loss(p, x, y):
        h = jnp.maximum(x @ p["w1"] + p["b1"], 0)
        s = h @ p["w2"] + p["b2"]
        return -jnp.mean(jax.nn.log_softmax(s)[jnp.arange(x.shape[0]), y])

    @jax.jit
    def step(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return {k: p[k] - LR * g[k] for k in p}, l
    state = {"p": {k: jnp.asarray(v) for k, v in p0.items()}}
    jx, jy = jnp.asarray(x), jnp.asarray(y)

    def run():
        state["p"], l = step(state["p"], jx, jy)
        return l.block_until_ready()
    return run


def torch_contenders(p0, x, y):
    torch = optional("torch")
    if torch is None:
        return {}
    torch.set_num_threads(2)
    tx, ty = torch.tensor(x), torch.tensor(y)

    def make(compiled):
        w = {k: torch.tensor(v, requires_grad=True) for k, v in p0.items()}

        def loss():
            h = torch.relu(tx @ w["w1"] + w["b1"])
            return torch.nn.functional.cross_entropy(h @ w["w2"] + w["b2"], ty)
        fwd = torch.compile(loss) if compiled else loss

        def run():
            for v in w.values():
                v.grad = None
            out = fwd()
            out.backward()
            with torch.no_grad():
                for v in w.values():
                    v -= LR * v.grad
            return out.detach()
        return run
    out = {"PyTorch eager": make(False)}
    try:
        make(True)()                          # compiles (the graph is cached)
        out["torch.compile"] = make(True)
    except Exception as e:                    # noqa: BLE001 -- an optional peer; say why
        print(f"(torch.compile unavailable: {type(e).__name__}: {str(e)[:80]})")
    return out


def bench(b, d, h, c):
    r = numpy.random.default_rng(1)
    x = r.standard_normal((b, d)).astype("f4")
    y = r.integers(0, c, b)
    p0 = init(d, h, c)
    pn = {k: v.copy() for k, v in p0.items()}
    pe = {k: np.array(v) for k, v in p0.items()}
    pj = {k: np.array(v) for k, v in p0.items()}
    xm, ym = np.array(x), np.array(y)
    jitted = minpy.jit(minpy_step)
    fns = {"NumPy by hand": lambda: numpy_step(pn, x, y),
           "minpy eager": lambda: minpy_step(pe, xm, ym),
           "minpy jit": lambda: jitted(pj, xm, ym)}
    jx = jax_contender(p0, x, y)
    if jx is not None:
        fns["JAX jit"] = jx
    fns.update(torch_contenders(p0, x, y))
    losses = {k: [float(f()) for _ in range(2)] for k, f in fns.items()}
    ref = losses["NumPy by hand"]
    for k, v in losses.items():
        if not numpy.allclose(v, ref, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"{k}: losses {v} differ from NumPy's {ref}")
    t = per_call_interleaved(fns, min_time=0.2, rounds=7)
    base = t["NumPy by hand"]
    rows = [[k, fmt_time(v), f"{v / base:.2f}x"] for k, v in t.items()]
    print_table(f"MLP {d}-{h}-{c}, batch {b}: one training step", ["contender", "time",
                                                                   "vs NumPy"], rows)
    prog = jitted.programs()[0]
    tracemalloc.start()
    minpy_step(pe, xm, ym)
    eager_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    jitted(pj, xm, ym)
    jit_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"memory: jit planned buffer {prog.planned_bytes / 1e6:.3f} MB (naive "
          f"{prog.naive_bytes / 1e6:.3f} MB) + {jit_peak / 1e6:.3f} MB per call; eager peak "
          f"{eager_peak / 1e6:.3f} MB; {prog.traced_steps} traced steps -> {prog.num_steps} "
          f"run ({prog.folded} constants, {prog.fused} fused kernels, "
          f"{prog.host_forms} custom steps in their host form)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="a smaller second network, one timed call each (CI)")
    args = ap.parse_args()
    set_quick(args.quick)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"NumPy {numpy.__version__}")
    bench(32, 784, 128, 10)
    bench(*((64, 784, 256, 10) if args.quick else (512, 784, 1024, 10)))


if __name__ == "__main__":
    main()
