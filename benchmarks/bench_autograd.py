"""Gradient cost of minpy vs hand-written NumPy and the installed peers, in one run.

    python benchmarks/bench_autograd.py [--quick] [--json]

Cases: (a) gradient of sum(x*y+1) on 4 float32 elements; (b) a 2-layer MLP
(784-128-10, batch 32): softmax cross-entropy loss and the gradients of its 4
parameters; (c) the same at 784-1024-10, batch 512 (``--quick``: 784-256-10,
batch 64; every contender timed once). "numpy (hand)" is the
forward and backward written out by hand; ratios are against it. Peers are
HIPS autograd, PyTorch (CPU) and JAX (CPU, eager and jit) where installed.
"numpy (tape floor)" runs, in raw NumPy, exactly the VJPs an op-by-op tape must
run for the MLP loss as written (no framework at all): no tape can be faster.
Contenders are timed round robin (best of 7 rounds) so load bursts hit all alike.
"""
import argparse
import json
import platform
import sys

import numpy

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import minpy                                              # noqa: E402
from _timing import (per_call, per_call_interleaved, fmt_time, print_table,  # noqa: E402
                     optional, set_quick)


# ----------------------------------------------------------- the problems
def make_mlp(batch, n_in, n_hidden, n_out, seed=0):
    rng = numpy.random.default_rng(seed)
    x = rng.standard_normal((batch, n_in)).astype(numpy.float32)
    y = rng.integers(0, n_out, size=batch)
    params = [(rng.standard_normal((n_in, n_hidden)) * 0.05).astype(numpy.float32),
              numpy.zeros(n_hidden, numpy.float32),
              (rng.standard_normal((n_hidden, n_out)) * 0.05).astype(numpy.float32),
              numpy.zeros(n_out, numpy.float32)]
    return params, x, y


def numpy_mlp_grad(params, x, y):
    """Forward and backward by hand (the reference)."""
    w1, b1, w2, b2 = params
    a = x @ w1 + b1
    h = numpy.maximum(a, 0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = numpy.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    n = len(y)
    loss = -numpy.mean(shifted[numpy.arange(n), y] - numpy.log(s[:, 0]))
    dlogits = e / s
    dlogits[numpy.arange(n), y] -= 1
    dlogits /= n
    dw2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = dlogits @ w2.T
    da = dh * (a > 0)
    dw1 = x.T @ da
    db1 = da.sum(axis=0)
    return [dw1, db1, dw2, db2], loss


def numpy_tape_floor(params, x, y):
    """What any op-by-op reverse mode must compute for :func:`mlp_loss`, in raw NumPy.

    The forward of ``mlp_loss`` as written, then one VJP per recorded op (the
    gradient through the max shift, the scatter of the picked entries, the
    unbroadcast sums), with no framework around it: a lower bound for a tape.
    """
    w1, b1, w2, b2 = params
    a = numpy.dot(x, w1) + b1
    h = numpy.maximum(a, 0)
    logits = numpy.dot(h, w2) + b2
    m = numpy.max(logits, axis=1, keepdims=True)
    shifted = logits - m
    e = numpy.exp(shifted)
    s = numpy.sum(e, axis=1, keepdims=True)
    logp = shifted - numpy.log(s)
    idx = numpy.arange(len(y))
    picked = logp[idx, y]
    loss = -numpy.mean(picked)
    g_picked = numpy.broadcast_to(-numpy.ones((), logp.dtype) / picked.shape[0], picked.shape)
    g_logp = numpy.zeros_like(logp)
    numpy.add.at(g_logp, (idx, y), g_picked)
    g_s = -numpy.add.reduce(g_logp, 1, keepdims=True) / s
    g_shifted = g_logp + numpy.broadcast_to(g_s, e.shape) * e
    g_m = -numpy.add.reduce(g_shifted, 1, keepdims=True)
    hit = logits == m
    ties = numpy.maximum(hit.sum(axis=1, keepdims=True, dtype=logits.dtype), 1)
    g_logits = g_shifted + g_m * (hit / ties)
    g_h = g_logits @ w2.T
    g_a = g_h * (h == a)
    if (a == 0).any():
        g_a = g_a * (1 - 0.5 * (a == 0))
    return [x.T @ g_a, numpy.add.reduce(g_a, 0), h.T @ g_logits,
            numpy.add.reduce(g_logits, 0)], loss


def mlp_loss(np_, params, x, y):
    """The same loss written once against a NumPy-like module ``np_``."""
    w1, b1, w2, b2 = params
    h = np_.maximum(np_.dot(x, w1) + b1, 0)
    logits = np_.dot(h, w2) + b2
    shifted = logits - np_.max(logits, axis=1, keepdims=True)
    logp = shifted - np_.log(np_.sum(np_.exp(shifted), axis=1, keepdims=True))
    return -np_.mean(logp[np_.arange(len(y)), y])


# ----------------------------------------------------------- contenders
def contenders_tiny(xn, yn):
    out = {}
    out["numpy (hand)"] = lambda: (numpy.sum(xn * yn + 1), yn.copy())
    xm, ym = minpy.array(xn), minpy.array(yn)
    g = minpy.grad(lambda x, y: minpy.sum(x * y + 1))
    out["minpy"] = lambda: g(xm, ym)
    autograd, anp = optional("autograd"), optional("autograd.numpy")
    if autograd is not None:
        ga = autograd.grad(lambda x, y: anp.sum(x * y + 1))
        out["autograd"] = lambda: ga(xn, yn)
    torch = optional("torch")
    if torch is not None:
        xt = torch.tensor(xn, requires_grad=True)
        yt = torch.tensor(yn)

        def torch_grad():
            xt.grad = None
            torch.sum(xt * yt + 1).backward()
            return xt.grad
        out["torch"] = torch_grad
    _add_jax(out, lambda jnp, x, y: jnp.sum(x * y + 1), (xn, yn))
    return out


def contenders_mlp(params, x, y):
    out = {"numpy (hand)": lambda: numpy_mlp_grad(params, x, y),
           "numpy (tape floor)": lambda: numpy_tape_floor(params, x, y)}
    pm = [minpy.array(p) for p in params]
    xm, ym = minpy.array(x), minpy.array(y)
    gm = minpy.grad_and_loss(lambda p, x, y: mlp_loss(minpy, p, x, y))
    out["minpy"] = lambda: gm(pm, xm, ym)
    # the benchmark times the same computation: check it first
    (g_ref, loss_ref), (g_mp, loss_mp) = numpy_mlp_grad(params, x, y), gm(pm, xm, ym)
    g_fl, loss_fl = numpy_tape_floor(params, x, y)
    numpy.testing.assert_allclose(float(loss_mp), loss_ref, rtol=1e-4)
    numpy.testing.assert_allclose(loss_fl, loss_ref, rtol=1e-4)
    for a, b, c in zip(g_mp, g_ref, g_fl):
        numpy.testing.assert_allclose(a.asnumpy(), b, rtol=1e-3, atol=1e-5)
        numpy.testing.assert_allclose(c, b, rtol=1e-3, atol=1e-5)
    autograd, anp = optional("autograd"), optional("autograd.numpy")
    if autograd is not None:
        ga = autograd.grad(lambda p, x, y: mlp_loss(anp, p, x, y))
        out["autograd"] = lambda: ga(params, x, y)
    torch = optional("torch")
    if torch is not None:
        pt = [torch.tensor(p, requires_grad=True) for p in params]
        xt, yt = torch.tensor(x), torch.tensor(y)

        def torch_grad():
            for p in pt:
                p.grad = None
            w1, b1, w2, b2 = pt
            logits = torch.relu(xt @ w1 + b1) @ w2 + b2
            loss = torch.nn.functional.cross_entropy(logits, yt)
            loss.backward()
            return [p.grad for p in pt]
        out["torch"] = torch_grad

    def jax_loss(jnp, p, x, y):
        return mlp_loss(jnp, p, x, y)
    _add_jax(out, jax_loss, (params, x, y), argnums=0)
    return out


def _add_jax(out, fn, args, argnums=0):
    jax, jnp = optional("jax"), optional("jax.numpy")
    if jax is None:
        return
    jax.config.update("jax_platforms", "cpu")
    g = jax.grad(lambda *a: fn(jnp, *a), argnums=argnums)
    jargs = jax.tree_util.tree_map(jnp.asarray, args)
    out["jax eager"] = lambda: jax.block_until_ready(g(*jargs))
    gj = jax.jit(g)
    jax.block_until_ready(gj(*jargs))
    out["jax jit"] = lambda: jax.block_until_ready(gj(*jargs))


def run_case(title, contenders, rows):
    # jax eager is ~100x slower than the rest: timed on its own, not in the rounds
    slow = {k: v for k, v in contenders.items() if k == "jax eager"}
    fast = {k: v for k, v in contenders.items() if k not in slow}
    times = per_call_interleaved(fast)
    times.update({k: per_call(fn) for k, fn in slow.items()})
    ref = times["numpy (hand)"]
    for name in contenders:
        t = times[name]
        rows.append([title, name, fmt_time(t), f"{t / ref:6.2f}x"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true",
                    help="time minpy and the hand-written NumPy only; print "
                         "{case: [numpy seconds, minpy seconds]} (bench_overhead_change.py)")
    ap.add_argument("--quick", action="store_true",
                    help="case (c) at 784-256-10, batch 64; one timed call each (CI)")
    opts = ap.parse_args()
    set_quick(opts.quick)
    big = (64, 784, 256, 10) if opts.quick else (512, 784, 1024, 10)
    rows = []
    rng = numpy.random.default_rng(0)
    xn = rng.random(4, dtype=numpy.float32)
    yn = rng.random(4, dtype=numpy.float32)
    cases = [("(a) grad sum(x*y+1), 4 el.", contenders_tiny(xn, yn)),
             ("(b) MLP 784-128-10, b=32", contenders_mlp(*make_mlp(32, 784, 128, 10))),
             (f"(c) MLP {big[1]}-{big[2]}-{big[3]}, b={big[0]}", contenders_mlp(*make_mlp(*big)))]
    if opts.json:
        raw = {}
        for title, contenders in cases:
            t = per_call_interleaved({k: contenders[k] for k in ("numpy (hand)", "minpy")})
            raw[f"grad {title}"] = [t["numpy (hand)"], t["minpy"]]
        print(json.dumps(raw))
        return
    for title, contenders in cases:
        run_case(title, contenders, rows)
    print(f"python {platform.python_version()}, numpy {numpy.__version__}, {platform.machine()}")
    print_table("Gradient cost (same run; ratio = time / hand-written NumPy)",
                ["case", "implementation", "time", "ratio"], rows)


if __name__ == "__main__":
    main()
