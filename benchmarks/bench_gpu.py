# quick: python benchmarks/bench_gpu.py --quick --standin
"""minpy on the GPU (CuPy) against NumPy, raw CuPy and PyTorch CUDA.

    python benchmarks/bench_gpu.py [--quick] [--standin]

Cases (sizes in brackets: ``--quick``):

1. ``matmul``: 4096 x 4096 float32 [1024] -- numpy, minpy-gpu, cupy;
2. ``elementwise``: ``exp(x) * y + sin(x)`` on 10M float32 [1M] -- numpy,
   minpy-gpu, cupy;
3. ``per-op overhead``: ``x + y`` on 8-element float32 arrays, 100 calls then
   one synchronisation, reported per call -- numpy, minpy-gpu, cupy;
4. ``MLP step``: 784-512-512-10 ReLU, softmax cross-entropy, batch 256, plain
   SGD -- minpy-gpu (``grad_and_loss`` + in-place updates), torch-cuda;
5. ``LeNet step``: MXNet's LeNet (``minpy.symbol.zoo.lenet``), batch 64
   [16], forward + backward + SGD -- minpy-gpu (the bound executor on
   ``gpu(0)``), torch-cuda (the same layers in ``torch.nn.functional``).

Every timed call ends by synchronising its device (``minpy.waitall()``,
``cupy.cuda.Device().synchronize()``, ``torch.cuda.synchronize()``), so a
call's time is its work done, not queued; contenders are timed round robin
(best of the rounds). Before timing, each case checks the contenders agree
(results, or the first step's loss). A contender whose library or device is
missing is reported as ``absent``; with no GPU at all the script says so and
exits 0. ``--standin`` runs the minpy-gpu contender on the test suite's
stand-in device (``tests/_standin.py``, NumPy memory): it checks this script,
its timings mean nothing.
"""
import argparse
import os
import platform
import sys
import time
import traceback

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import minpy                                                   # noqa: E402
import minpy as np                                             # noqa: E402
import minpy.symbol as sym                                     # noqa: E402
from _timing import fmt_time, print_table                      # noqa: E402

ABSENT = "absent"
LR = 0.01
TORCH_DEVICE = "cuda"


# ------------------------------------------------------------ the contenders
def load_cupy():
    """(cupy, None) when CuPy imports and sees a device, else (None, why)."""
    try:
        import cupy
    except ImportError as e:
        return None, f"not installed ({e})"
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy, None
    except Exception as e:      # noqa: BLE001  (any CUDA failure: no CuPy contender)
        return None, f"no device ({type(e).__name__}: {e})"
    return None, "no device"


def load_torch():
    """(torch, None) when PyTorch imports and has CUDA, else (None, why)."""
    try:
        import torch
    except ImportError:
        return None, "not installed"
    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} without CUDA"
    return torch, None


def load_minpy_gpu(standin):
    """The minpy GPU backend (the stand-in's with ``standin``), or None and why."""
    if standin:
        sys.path.insert(0, os.path.join(HERE, "..", "tests"))
        from _standin import StandinBackend      # (its arrays have CuPy's methods)
        minpy.dispatch.set_gpu_backend(StandinBackend())
        minpy.set_policy("prefer_gpu")
    backend = minpy.dispatch.gpu_backend()
    if backend is None:
        return None, minpy.dispatch.gpu_problem() or "no GPU backend"
    return backend, None


class Contenders:
    """The libraries present: ``minpy`` (the GPU backend), ``cupy``, ``torch``."""

    def __init__(self, standin):
        self.minpy, self.why_minpy = load_minpy_gpu(standin)
        self.cupy, self.why_cupy = load_cupy()
        self.torch, self.why_torch = load_torch()
        self.label = "minpy-gpu (stand-in)" if standin else "minpy-gpu"

    def any_gpu(self):
        return any(x is not None for x in (self.minpy, self.cupy, self.torch))

    def cupy_sync(self):
        self.cupy.cuda.Device().synchronize()

    def describe(self):
        """One line per library: its version and device, or why it is absent."""
        lines = [f"minpy {minpy.__version__}, numpy {numpy.__version__}, "
                 f"python {platform.python_version()}, {platform.machine()}"]
        lines.append(f"{self.label}: " + (self.minpy.name if self.minpy else
                                          f"{ABSENT} ({self.why_minpy})"))
        if self.cupy is not None:
            props = self.cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
            lines.append(f"cupy {self.cupy.__version__} on {name} "
                         f"(CUDA runtime {self.cupy.cuda.runtime.runtimeGetVersion()})")
        else:
            lines.append(f"cupy: {ABSENT} ({self.why_cupy})")
        lines.append(f"torch {self.torch.__version__} CUDA {self.torch.version.cuda}"
                     if self.torch is not None else f"torch-cuda: {ABSENT} ({self.why_torch})")
        return lines


def on_gpu(host):
    """minpy Array of numpy ``host`` on gpu(0)."""
    with minpy.gpu(0):
        return np.array(host)


def check_close(case, got, want, rtol):
    got, want = numpy.asarray(got, numpy.float64), numpy.asarray(want, numpy.float64)
    err = numpy.abs(got - want).max() / max(numpy.abs(want).max(), 1e-30)
    if not err <= rtol:
        raise AssertionError(f"{case}: results differ (max relative error {err:.2e})")


# ------------------------------------------------------------------- cases
def matmul_case(c, n):
    """``a @ b`` on n x n float32."""
    rng = numpy.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(numpy.float32) for _ in range(2))
    want = a @ b
    fns = {"numpy": lambda: a @ b}
    if c.minpy:
        ma, mb = on_gpu(a), on_gpu(b)
        check_close("matmul minpy", (ma @ mb).asnumpy(), want, 1e-3)

        def minpy_mm():
            ma @ mb
            minpy.waitall()
        fns[c.label] = minpy_mm
    if c.cupy:
        ca, cb = c.cupy.asarray(a), c.cupy.asarray(b)
        check_close("matmul cupy", c.cupy.asnumpy(ca @ cb), want, 1e-3)

        def cupy_mm():
            ca @ cb
            c.cupy_sync()
        fns["cupy"] = cupy_mm
    return f"matmul {n}x{n} float32", fns


def chain_case(c, n):
    """``exp(x) * y + sin(x)`` on n float32."""
    rng = numpy.random.default_rng(1)
    x, y = (rng.standard_normal(n).astype(numpy.float32) for _ in range(2))
    want = numpy.exp(x) * y + numpy.sin(x)
    fns = {"numpy": lambda: numpy.exp(x) * y + numpy.sin(x)}
    if c.minpy:
        mx, my = on_gpu(x), on_gpu(y)
        check_close("elementwise minpy", (np.exp(mx) * my + np.sin(mx)).asnumpy(), want, 1e-5)

        def minpy_chain():
            np.exp(mx) * my + np.sin(mx)
            minpy.waitall()
        fns[c.label] = minpy_chain
    if c.cupy:
        cp = c.cupy
        cx, cy = cp.asarray(x), cp.asarray(y)
        check_close("elementwise cupy", cp.asnumpy(cp.exp(cx) * cy + cp.sin(cx)), want, 1e-5)

        def cupy_chain():
            cp.exp(cx) * cy + cp.sin(cx)
            c.cupy_sync()
        fns["cupy"] = cupy_chain
    return f"exp(x)*y+sin(x), {n:,} float32", fns


def remainder_case(c, n):
    """``x % y`` on n float32 with zeros and infinities: minpy runs NumPy's ``npy_divmod``
    (one kernel, minpy.core.exact_kernels), CuPy its own formula (not NumPy's answer:
    the table says how far off it is)."""
    rng = numpy.random.default_rng(2)
    x, y = (rng.standard_normal(n).astype(numpy.float32) * 100 for _ in range(2))
    y[::7], x[1::5] = 0, numpy.inf
    with numpy.errstate(all="ignore"):
        want = numpy.remainder(x, y)
    fns = {"numpy": lambda: numpy.remainder(x, y)}
    if c.minpy:
        mx, my = on_gpu(x), on_gpu(y)
        got = (mx % my).asnumpy()
        if not numpy.array_equal(got, want, equal_nan=True):
            raise AssertionError("remainder minpy: not NumPy's answer bit for bit")

        def minpy_rem():
            mx % my
            minpy.waitall()
        fns[c.label] = minpy_rem
    if c.cupy:
        cx, cy = c.cupy.asarray(x), c.cupy.asarray(y)
        off = int((~((c.cupy.asnumpy(cx % cy) == want) | numpy.isnan(want))).sum())
        print(f"cupy's x % y differs from NumPy's in {off:,} of {n:,} elements")

        def cupy_rem():
            cx % cy
            c.cupy_sync()
        fns["cupy"] = cupy_rem
    return f"x % y (NumPy's algorithm), {n:,} float32", fns


OPS_PER_CALL = 100


def overhead_case(c, n=8):
    """``x + y`` on n float32, OPS_PER_CALL calls then one synchronisation."""
    x = numpy.arange(n, dtype=numpy.float32)
    y = x + 1

    def numpy_adds():
        for _ in range(OPS_PER_CALL):
            x + y
    fns = {"numpy": numpy_adds}
    if c.minpy:
        mx, my = on_gpu(x), on_gpu(y)
        check_close("add minpy", (mx + my).asnumpy(), x + y, 0)

        def minpy_adds():
            for _ in range(OPS_PER_CALL):
                mx + my
            minpy.waitall()
        fns[c.label] = minpy_adds
    if c.cupy:
        cx, cy = c.cupy.asarray(x), c.cupy.asarray(y)

        def cupy_adds():
            for _ in range(OPS_PER_CALL):
                cx + cy
            c.cupy_sync()
        fns["cupy"] = cupy_adds
    return f"per-op overhead: x + y, {n} float32 (per call)", fns


def xent(xp, logits, y):
    """Mean softmax cross-entropy of ``logits`` against integer labels ``y``."""
    z = logits - xp.max(logits, axis=1, keepdims=True)
    logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.mean(logp[xp.arange(len(y)), y])


def mlp_params(sizes, seed=0):
    rng = numpy.random.default_rng(seed)
    p = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        p[f"w{i}"] = (rng.standard_normal((m, n)) * numpy.sqrt(2.0 / m)).astype(numpy.float32)
        p[f"b{i}"] = numpy.zeros(n, numpy.float32)
    return p


def mlp_logits(xp, relu, p, x):
    layers = len(p) // 2
    for i in range(layers):
        x = x @ p[f"w{i}"] + p[f"b{i}"]
        if i < layers - 1:
            x = relu(x)
    return x


def mlp_case(c, batch, sizes=(784, 512, 512, 10)):
    """One SGD step of the MLP ``sizes`` on a batch; returns (title, fns)."""
    rng = numpy.random.default_rng(2)
    x = rng.standard_normal((batch, sizes[0])).astype(numpy.float32)
    y = rng.integers(0, sizes[-1], batch)
    p0 = mlp_params(sizes)
    fns, losses = {}, {}
    if c.minpy:
        mp = {k: on_gpu(v) for k, v in p0.items()}
        mx, my = on_gpu(x), on_gpu(y)
        step = np.grad_and_loss(lambda p, x, y: xent(np, mlp_logits(np, lambda h: np.maximum(h, 0),
                                                                      p, x), y))

        def minpy_step():
            g, loss = step(mp, mx, my)
            for k in mp:
                mp[k] -= LR * g[k]
            minpy.waitall()
            return loss
        losses[c.label] = float(minpy_step())
        fns[c.label] = minpy_step
    if c.torch:
        torch = c.torch
        tp = {k: torch.tensor(v, device=TORCH_DEVICE, requires_grad=True) for k, v in p0.items()}
        tx = torch.tensor(x, device=TORCH_DEVICE)
        ty = torch.tensor(y, device=TORCH_DEVICE)

        def torch_step():
            for v in tp.values():
                v.grad = None
            loss = torch.nn.functional.cross_entropy(mlp_logits(torch, torch.relu, tp, tx), ty)
            loss.backward()
            with torch.no_grad():
                for v in tp.values():
                    v -= LR * v.grad
            torch.cuda.synchronize()
            return loss
        losses["torch-cuda"] = float(torch_step().detach())
        fns["torch-cuda"] = torch_step
    check_losses("MLP", losses)
    return f"MLP {'-'.join(map(str, sizes))} SGD step, batch {batch}", fns


def check_losses(case, losses):
    ref = list(losses.values())
    if ref and max(ref) - min(ref) > 1e-3 * max(1.0, abs(ref[0])):
        raise AssertionError(f"{case}: first-step losses differ: {losses}")


def torch_lenet(torch, p, x):
    """LeNet's logits (``minpy.symbol.zoo.lenet``'s layers and parameter names) in torch."""
    F = torch.nn.functional
    for i in (1, 2):
        x = F.max_pool2d(torch.tanh(F.conv2d(x, p[f"conv{i}_weight"], p[f"conv{i}_bias"])), 2, 2)
    x = torch.tanh(F.linear(x.flatten(1), p["fc1_weight"], p["fc1_bias"]))
    return F.linear(x, p["fc2_weight"], p["fc2_bias"])


def lenet_case(c, batch):
    """One SGD step of LeNet: minpy's bound executor on gpu(0) vs the same graph in torch."""
    symbol = sym.zoo.lenet()
    shape = (batch, 1, 28, 28)
    rng = numpy.random.default_rng(3)
    x = rng.standard_normal(shape).astype(numpy.float32)
    y = rng.integers(0, 10, batch)
    shapes, _, _ = symbol.infer_shape(data=shape)
    names = [n for n in symbol.list_arguments() if n not in ("data", "softmax_label")]
    p0 = {n: (rng.standard_normal(s) * 0.1).astype(numpy.float32)
          for n, s in zip(symbol.list_arguments(), shapes) if n in names}
    fns, losses = {}, {}
    if c.minpy:
        req = {n: "write" if n in names else "null" for n in symbol.list_arguments()}
        exe = symbol.simple_bind(minpy.gpu(0), grad_req=req, data=shape)
        exe.copy_params_from({k: on_gpu(v) for k, v in p0.items()})
        exe.forward(is_train=True, data=on_gpu(x), softmax_label=on_gpu(y))
        prob = exe.outputs[0].asnumpy()
        losses[c.label] = float(-numpy.log(prob[numpy.arange(batch), y]).mean())
        exe.backward()

        def executor_step():
            exe.forward(is_train=True)
            exe.backward()
            for n in names:
                exe.arg_dict[n] -= LR * exe.grad_dict[n]
            minpy.waitall()
        fns[c.label] = executor_step
    if c.torch:
        torch = c.torch
        tp = {k: torch.tensor(v, device=TORCH_DEVICE, requires_grad=True) for k, v in p0.items()}
        tx = torch.tensor(x, device=TORCH_DEVICE)
        ty = torch.tensor(y, device=TORCH_DEVICE)

        def torch_step():
            for v in tp.values():
                v.grad = None
            loss = torch.nn.functional.cross_entropy(torch_lenet(torch, tp, tx), ty)
            loss.backward()
            with torch.no_grad():
                for v in tp.values():
                    v -= LR * v.grad
            torch.cuda.synchronize()
            return loss
        losses["torch-cuda"] = float(torch_step().detach())
        fns["torch-cuda"] = torch_step
    check_losses("LeNet", losses)
    return f"LeNet SGD step, batch {batch}", fns


# ------------------------------------------------------------------- driver
def round_robin(fns, rounds, min_time):
    """Best-of-``rounds`` seconds per call of each of ``fns`` (a dict), timed round robin;
    each round calls a function enough times to last about ``min_time`` (one warm-up call
    calibrates, so ``--quick`` stays short where ``timeit.autorange`` would take 0.2 s)."""
    numbers = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        fn()
        numbers[name] = max(1, int(min_time / max(time.perf_counter() - t0, 1e-9)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(numbers[name]):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / numbers[name])
    return best


def title_contenders(title):
    """The contenders a case compares: array cases NumPy, minpy and CuPy; training steps
    minpy and PyTorch."""
    return ("minpy", "torch") if "step" in title else ("numpy", "minpy", "cupy")


def rows_of(c, title, fns, rounds, min_time, scale=1):
    """Table rows for one case: every contender's time and its ratios to numpy and to the
    raw GPU library (cupy, or torch-cuda for the training steps)."""
    times = {k: t / scale for k, t in round_robin(fns, rounds, min_time).items()}
    peer = "cupy" if "numpy" in title_contenders(title) else "torch-cuda"
    order = (["numpy"] if peer == "cupy" else []) + [c.label, peer]
    why = {c.label: c.why_minpy, "cupy": c.why_cupy, "torch-cuda": c.why_torch}
    base, ref = times.get("numpy"), times.get(peer)
    rows = []
    for k in order:
        if k not in times:
            rows.append([title, k, f"{ABSENT} ({why[k]})"[:60], "-", "-"])
            continue
        t = times[k]
        rows.append([title, k, fmt_time(t), f"{t / base:7.2f}x" if base else "-",
                     f"{t / ref:7.2f}x" if ref else "-"])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round (CI)")
    parser.add_argument("--standin", action="store_true",
                        help="minpy-gpu on tests/_standin.py's stand-in device (checks the script)")
    args = parser.parse_args(argv)
    c = Contenders(args.standin)
    for line in c.describe():
        print(line)
    if not c.any_gpu():
        print("no GPU present: nothing to compare (minpy-gpu, cupy and torch-cuda absent)")
        return 0
    rounds, min_time = (1, 0.02) if args.quick else (7, 0.2)
    n_mm, n_chain, lenet_batch = (1024, 10 ** 6, 16) if args.quick else (4096, 10 ** 7, 64)
    cases = [(matmul_case, (n_mm,), 1), (chain_case, (n_chain,), 1),
             (remainder_case, (n_chain,), 1),
             (overhead_case, (), OPS_PER_CALL), (mlp_case, (256,), 1),
             (lenet_case, (lenet_batch,), 1)]
    rows, failed = [], []
    for build, case_args, scale in cases:
        try:
            title, fns = build(c, *case_args)
            rows += rows_of(c, title, fns, rounds, min_time, scale)
        except Exception:      # noqa: BLE001  (report the case, go on with the others)
            traceback.print_exc()
            failed.append(build.__name__)
            rows.append([build.__name__, "-", "error (traceback above)", "-", "-"])
            continue
        print(f"timed: {title}", flush=True)
    print_table("GPU benchmarks (best of rounds, round robin; every call synchronised)",
                ["case", "contender", "time", "vs numpy", "vs cupy/torch"], rows)
    if failed:
        print(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
