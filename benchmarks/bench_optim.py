"""One optimizer step over many tensors: minpy's fused kernels vs NumPy and PyTorch, in one run.

    python benchmarks/bench_optim.py [--tensors 50] [--total 10000000] [--quick]

Problem: ``--tensors`` float32 parameters of varied sizes (log-normal), ``--total``
elements in all, one gradient each; each contender makes one update step.
Contenders: NumPy written out with temporaries; NumPy in place (``out=`` into one
scratch buffer); PyTorch's optimizer as a for-loop, ``foreach=True`` and
``fused=True`` (when torch is installed); minpy's multi-tensor ``step`` (one
numba kernel call for all tensors), minpy's per-parameter ``update`` (one call per
tensor) and minpy with ``backend='numpy'``. Every contender's first step is
checked against a float64 NumPy reference (to float32 rounding) before timing.
Timed round robin (best of 7 rounds); ratios are to PyTorch fused (else NumPy in
place). numba and torch get the same thread count (the CPUs available).
``--quick`` (CI): 5 tensors, 10,000 elements, one timed call each.
"""
import argparse
import os
import platform
import sys

import numpy

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import minpy                                                  # noqa: E402
from minpy.kernels import optim as fused   # noqa: E402
from minpy.nn import optim
from _timing import per_call_interleaved, fmt_time, optional, print_table, set_quick  # noqa: E402

HYPER = {"adam": {"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
         "sgd_momentum": {"learning_rate": 1e-2, "momentum": 0.9}}


def make_problem(n_tensors=50, total=10_000_000, seed=0):
    """``{'w': [...], 'g': [...]}``: float32 weights and gradients, sizes log-normal
    summing to ``total``."""
    rng = numpy.random.default_rng(seed)
    raw = rng.lognormal(0.0, 1.5, n_tensors)
    sizes = numpy.maximum(1, (raw / raw.sum() * total).astype(numpy.int64))
    sizes[numpy.argmax(sizes)] += total - sizes.sum()
    return {"w": [rng.standard_normal(n).astype(numpy.float32) for n in sizes],
            "g": [rng.standard_normal(n).astype(numpy.float32) for n in sizes]}


def reference(rule, ws, gs):
    """The first step from zero state, in float64."""
    h = HYPER[rule]
    lr = h["learning_rate"]
    out = []
    for w, g in zip(ws, gs):
        w, g = w.astype(numpy.float64), g.astype(numpy.float64)
        if rule == "adam":
            m, v = (1 - h["beta1"]) * g, (1 - h["beta2"]) * g * g
            out.append(w - lr * (m / (1 - h["beta1"])) /
                       (numpy.sqrt(v / (1 - h["beta2"])) + h["epsilon"]))
        else:
            out.append(w - lr * g)
    return out


# ------------------------------------------------------------------ NumPy
def numpy_temporaries(rule, ws, gs):
    """The update written as NumPy expressions (a temporary per operation)."""
    h = HYPER[rule]
    w = [x.copy() for x in ws]
    s1, s2 = [numpy.zeros_like(x) for x in ws], [numpy.zeros_like(x) for x in ws]
    t = [0]

    def step():
        t[0] += 1
        lr = h["learning_rate"]
        for i, g in enumerate(gs):
            if rule == "adam":
                b1, b2 = h["beta1"], h["beta2"]
                s1[i] = b1 * s1[i] + (1 - b1) * g
                s2[i] = b2 * s2[i] + (1 - b2) * (g * g)
                w[i] = w[i] - lr * (s1[i] / (1 - b1 ** t[0])) / (
                    numpy.sqrt(s2[i] / (1 - b2 ** t[0])) + h["epsilon"])
            else:
                s1[i] = h["momentum"] * s1[i] - lr * g
                w[i] = w[i] + s1[i]
    return step, lambda: w


def numpy_inplace(rule, ws, gs):
    """The update with ``out=`` into one scratch buffer: no temporaries."""
    h = HYPER[rule]
    w = [x.copy() for x in ws]
    s1, s2 = [numpy.zeros_like(x) for x in ws], [numpy.zeros_like(x) for x in ws]
    flat = numpy.empty(max(x.size for x in ws), numpy.float32)
    t = [0]

    def step():
        t[0] += 1
        lr = h["learning_rate"]
        for wi, g, m, v in zip(w, gs, s1, s2):
            tmp = flat[:g.size]
            if rule == "adam":
                b1, b2 = h["beta1"], h["beta2"]
                m *= b1
                numpy.multiply(g, 1 - b1, out=tmp)
                m += tmp
                v *= b2
                numpy.multiply(g, g, out=tmp)
                tmp *= 1 - b2
                v += tmp
                numpy.divide(v, 1 - b2 ** t[0], out=tmp)
                numpy.sqrt(tmp, out=tmp)
                tmp += h["epsilon"]
                numpy.divide(m, tmp, out=tmp)
                tmp *= lr / (1 - b1 ** t[0])
                wi -= tmp
            else:
                m *= h["momentum"]
                numpy.multiply(g, lr, out=tmp)
                m -= tmp
                wi += m
    return step, lambda: w


# ------------------------------------------------------------------ PyTorch
def torch_optimizer(rule, ws, gs, **mode):
    import torch
    h = HYPER[rule]
    params = [torch.tensor(x) for x in ws]
    for p, g in zip(params, gs):
        p.grad = torch.from_numpy(g)
    if rule == "adam":
        opt = torch.optim.Adam(params, lr=h["learning_rate"], betas=(h["beta1"], h["beta2"]),
                               eps=h["epsilon"], **mode)
    else:
        opt = torch.optim.SGD(params, lr=h["learning_rate"], momentum=h["momentum"], **mode)
    return opt.step, lambda: [p.detach().numpy() for p in params]


# ------------------------------------------------------------------ minpy
def minpy_optimizer(rule, ws, gs, per_parameter=False, backend="auto"):
    params = {f"p{i}": minpy.array(x.copy()) for i, x in enumerate(ws)}
    grads = {f"p{i}": minpy.array(g) for i, g in enumerate(gs)}
    opt = optim.create(rule, backend=backend, **HYPER[rule])
    if per_parameter:
        def step():
            for k, w in params.items():
                opt.update(k, w, grads[k])
    else:
        def step():
            opt.step(params, grads)
    return step, lambda: [w.asnumpy() for w in params.values()]


def contenders(rule, problem):
    """{name: (step, weights)}: each steps its own copy of the problem."""
    ws, gs = problem["w"], problem["g"]
    out = {"numpy (temporaries)": numpy_temporaries(rule, ws, gs),
           "numpy (in place, out=)": numpy_inplace(rule, ws, gs)}
    if optional("torch") is not None:
        out["torch for-loop"] = torch_optimizer(rule, ws, gs, foreach=False)
        out["torch foreach"] = torch_optimizer(rule, ws, gs, foreach=True)
        out["torch fused"] = torch_optimizer(rule, ws, gs, fused=True)
    kernel = "numba" if fused.numba_available() else "numpy fallback"
    out[f"minpy step ({kernel}, multi-tensor)"] = minpy_optimizer(rule, ws, gs)
    out[f"minpy update ({kernel}, per parameter)"] = minpy_optimizer(rule, ws, gs,
                                                                    per_parameter=True)
    out["minpy step (backend='numpy')"] = minpy_optimizer(rule, ws, gs, backend="numpy")
    return out


def check_contenders(rule, problem):
    """Run each contender's first step and compare with the float64 reference.

    Returns the contenders (already stepped once); raises AssertionError naming a
    contender whose values differ beyond float32 rounding.
    """
    ref = reference(rule, problem["w"], problem["g"])
    made = contenders(rule, problem)
    for name, (step, weights) in made.items():
        step()
        for got, want in zip(weights(), ref):
            numpy.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                          err_msg=f"{rule}: {name}")
    return made


def _set_threads(n):
    # torch first: when numba's OpenMP layer starts before torch is imported, torch's
    # for-loop and foreach optimizers ran ~15x slower on the machine this was written on
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(n)
    try:
        import numba
        numba.set_num_threads(n)
    except ImportError:
        pass
    try:
        import threadpoolctl
        threadpoolctl.threadpool_limits(n)
    except ImportError:
        pass


def run(rule, problem):
    made = check_contenders(rule, problem)
    times = per_call_interleaved({k: step for k, (step, _) in made.items()})
    base_name = "torch fused" if "torch fused" in times else "numpy (in place, out=)"
    rows = [[k, fmt_time(t), f"{t / times[base_name]:.2f}x"] for k, t in times.items()]
    n = len(problem["w"])
    total = sum(w.size for w in problem["w"])
    print_table(f"{rule}: one step over {n} float32 tensors, {total:,} elements",
                ["contender", "time", f"vs {base_name}"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=None, help="default 50 (quick: 5)")
    parser.add_argument("--total", type=int, default=None,
                        help="default 10000000 (quick: 10000)")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny problem, one timed call each (CI)")
    args = parser.parse_args()
    set_quick(args.quick)
    if args.tensors is None:
        args.tensors = 5 if args.quick else 50
    if args.total is None:
        args.total = 10_000 if args.quick else 10_000_000
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count()
    _set_threads(threads)
    versions = [f"numpy {numpy.__version__}"]
    for mod in ("numba", "torch"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            versions.append(f"{mod} absent")
    print(f"{platform.processor() or platform.machine()}, {threads} threads; "
          + ", ".join(versions))
    problem = make_problem(args.tensors, args.total)
    for rule in ("adam", "sgd_momentum"):
        run(rule, problem)


if __name__ == "__main__":
    main()
