"""Forward + backward of LeNet and ResNet-20: the bound-once executor vs the tape vs PyTorch.

    python benchmarks/bench_executor.py [--quick]

Networks: LeNet (MXNet's, batch 64 [--quick: 8], 1x28x28) and the CIFAR ResNet-20
(pre-activation, BatchNorm in training mode, batch 32 [4], 3x32x32), both from
``minpy.symbol.zoo``.  One training step's gradient (all parameters, not the
data) is timed for:

- executor: ``simple_bind`` once, then ``forward(is_train=True)`` + ``backward()``
  (SoftmaxOutput loss head);
- Function: the symbol up to its logits as a ``minpy.core.function`` big
  operator, the softmax cross-entropy in NumPy glue, ``minpy.grad_and_loss``;
- executor, fused: the same after ``fuse_batchnorm_relu`` (BatchNorm + ReLU
  pairs as one op), as GraphPlan does when MINPY_FUSION is on;
- minpy tape: the same network written with ``minpy.nn`` layers (conv2d,
  batchnorm, max_pool), every op recorded and differentiated by the tape;
- PyTorch CPU (where installed): the same network with ``torch.nn.functional``.

Contenders are timed round robin (best of 7 rounds; ``--quick``: one call each).  The script sets
``OPENBLAS_THREAD_TIMEOUT=4`` (unless set) so that OpenBLAS's worker threads
sleep after a GEMM instead of spinning for ~0.1 s into the next contender's
time (or into minpy's numba kernels between GEMMs).

The executor and Function rows are timed on the default threaded engine and
again with ``minpy.engine.set_engine('naive')`` (ops run inline).

The minpy-tape and PyTorch models are built by walking the symbol's JSON, so
all run the same architecture; before timing, their losses (same
parameters, same batch) are checked to agree.  Ratios are time / executor and
time / torch.  Timings on a shared 2-core machine are rough.
"""
import argparse
import json
import os
import platform
import sys

if __name__ == "__main__":      # before NumPy loads BLAS; importing this module sets nothing
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")   # numba's and torch's OpenMP: no spin
    # OpenBLAS's workers spin ~0.1 s after each GEMM (its default timeout, 2**28 cycles):
    # timed round robin on 2 cores that bills the next contender (torch measured ~20% slower
    # right after minpy) and slows the numba kernels between minpy's GEMMs; 2**4 cycles:
    # they sleep
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minpy                                                  # noqa: E402
import minpy as np                                            # noqa: E402
import minpy.symbol as sym                                    # noqa: E402
from minpy.symbol import function                               # noqa: E402
from minpy.symbol.passes.fuse_bn_relu import fuse_batchnorm_relu       # noqa: E402
from minpy.symbol.symbol import Symbol                          # noqa: E402
from minpy.nn.layers import batchnorm, conv2d, max_pool         # noqa: E402
from _timing import (per_call, per_call_interleaved, fmt_time, print_table,  # noqa: E402
                     optional, set_quick)


# ---------------------------------------------------------- graph walking
def _pair(v, default):
    v = tuple(v) if v else default
    return v if len(v) == 2 else (v[0],) * 2


# the parameter values the ops below implement (others raise rather than compute wrong)
_PLAIN = {"dilate": ((), (1, 1)), "num_group": (1,), "layout": (None, "NCHW"),
          "pooling_convention": ("valid",), "axis": (1,), "use_global_stats": (False,)}


def node_attrs(node):
    """A JSON node's op parameters, parsed and defaulted by the op's own definition
    (``OpDef.parse``, what ``minpy.symbol`` uses to load MXNet JSON): the file holds
    strings such as ``"(5, 5)"`` and ``"True"``, and user attributes beside them."""
    op = sym.OPS[node["op"]]
    params = {k: v for k, v in node.get("attrs", {}).items() if k in op.params}
    a = op.parse(params, node["name"])
    unsupported = {k: a[k] for k, plain in _PLAIN.items() if k in a and a[k] not in plain}
    if unsupported:
        raise NotImplementedError(f"run_graph: {node['op']} {node['name']!r} with "
                                  f"{unsupported} is not written here")
    return a


def run_graph(symbol, ops, values):
    """Evaluate ``symbol`` with op implementations ``ops[op](attrs, *inputs)``;
    ``values`` maps variable names to arrays.  Returns the head before the loss."""
    graph = json.loads(symbol.tojson())
    out = []
    for node in graph["nodes"]:
        if node["op"] == "null":
            out.append(values.get(node["name"]))
            continue
        # MXNet's entries are [node, output index, version]; every op here is used
        # through its first output only (BatchNorm's mean and var are not read)
        if any(e[1] != 0 for e in node["inputs"]):
            raise NotImplementedError(f"run_graph: {node['name']!r} reads a second output")
        ins = [out[e[0]] for e in node["inputs"]]
        if node["op"] == "SoftmaxOutput":
            out.append(ins[0])          # the logits; the loss is added outside
            continue
        out.append(ops[node["op"]](node_attrs(node), *ins))
    return out[graph["heads"][0][0]]


def xent(xp, logits, y):
    z = logits - xp.max(logits, axis=1, keepdims=True)
    logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.mean(logp[xp.arange(len(y)), y])


# ------------------------------------------------- the network in minpy ops
def _mp_conv(a, x, w, b=None):
    return conv2d(x, w, b, stride=_pair(a["stride"], (1, 1)), pad=_pair(a["pad"], (0, 0)))


def _mp_pool(a, x):
    if a["global_pool"]:
        return np.mean(x, axis=(2, 3), keepdims=True)
    assert a["pool_type"] == "max"
    return max_pool(x, _pair(a["kernel"], None), _pair(a["stride"], (1, 1)),
                    _pair(a["pad"], (0, 0)))


def _mp_bn(a, x, gamma, beta, moving_mean=None, moving_var=None):
    if a["fix_gamma"]:
        gamma = np.ones_like(gamma)
    return batchnorm(x, gamma, beta, eps=a["eps"], momentum=a["momentum"])[0]


MINPY_OPS = {
    "Convolution": _mp_conv,
    "Activation": lambda a, x: np.tanh(x) if a["act_type"] == "tanh" else np.maximum(x, 0),
    "Pooling": _mp_pool,
    "BatchNorm": _mp_bn,
    "broadcast_add": lambda a, x, y: x + y,
    "Flatten": lambda a, x: np.reshape(x, (x.shape[0], -1)),
    "FullyConnected": lambda a, x, w, b=None: np.dot(x, w.T) + b,
}


# ----------------------------------------------- the network in PyTorch ops
def torch_ops(torch):
    F = torch.nn.functional

    def conv(a, x, w, b=None):
        return F.conv2d(x, w, b, stride=_pair(a["stride"], (1, 1)), padding=_pair(a["pad"], (0, 0)))

    def pool(a, x):
        if a["global_pool"]:
            return x.mean(dim=(2, 3), keepdim=True)
        return F.max_pool2d(x, _pair(a["kernel"], None), _pair(a["stride"], (1, 1)))

    def bn(a, x, gamma, beta, mm, mv):
        return F.batch_norm(x, mm, mv, None if a["fix_gamma"] else gamma, beta, training=True,
                            momentum=1 - a["momentum"], eps=a["eps"])
    return {"Convolution": conv,
            "Activation": lambda a, x: torch.tanh(x) if a["act_type"] == "tanh" else F.relu(x),
            "Pooling": pool, "BatchNorm": bn, "broadcast_add": lambda a, x, y: x + y,
            "Flatten": lambda a, x: x.flatten(1),
            "FullyConnected": lambda a, x, w, b=None: F.linear(x, w, b)}


# ------------------------------------------------------------------ cases
def executor_step(symbol, params, data_shape, xm, ym):
    """One training step's gradients by ``symbol``'s executor: bound once (a gradient for
    every parameter, none for the data), the batch copied in once; forward + backward
    with the SoftmaxOutput head."""
    req = {n: "null" if n in ("data", "softmax_label") else "write"
           for n in symbol.list_arguments()}
    exe = symbol.simple_bind(None, grad_req=req, data=data_shape)
    exe.copy_params_from(params)
    exe.forward(is_train=True, data=xm, softmax_label=ym)

    def step():
        exe.forward(is_train=True)
        exe.backward()
    return step


def case(name, symbol, logits_name, data_shape, num_classes=10, seed=0):
    """Timings of one network; returns a table row and the losses it checked."""
    rng = numpy.random.default_rng(seed)
    batch = data_shape[0]
    x = rng.standard_normal(data_shape).astype(numpy.float32)
    y = rng.integers(0, num_classes, size=batch)
    logits = symbol.get_internals()[logits_name]
    f = function(logits, {"data": data_shape}, name=name)
    params = f.get_params(seed=seed)
    xm, ym = np.array(x), np.array(y)
    results, losses = {}, {}

    results["executor"] = executor_step(symbol, params, data_shape, xm, ym)
    results["executor, fused"] = executor_step(Symbol(fuse_batchnorm_relu(symbol._outputs)),
                                               params, data_shape, xm, ym)

    # Function: big operator + NumPy loss under grad_and_loss
    fstep = np.grad_and_loss(lambda p: xent(np, f(data=xm, **p), ym))
    losses["Function"] = float(fstep(params)[1])
    results["Function"] = lambda: fstep(params)

    # minpy tape: every op recorded
    aux = {k: np.array(v.asnumpy()) for k, v in f.aux_params.items()}
    tstep = np.grad_and_loss(lambda p: xent(np, run_graph(symbol, MINPY_OPS,
                                                          dict(p, data=xm, **aux)), ym))
    g_tape, loss_tape = tstep(params)
    losses["minpy tape"] = float(loss_tape)
    g_fun = fstep(params)[0]
    # float32: measured against the largest gradient (some, like a bias feeding a
    # BatchNorm, are ~0 in exact arithmetic and pure rounding noise here)
    scale = max(float(numpy.abs(g.asnumpy()).max()) for g in g_tape.values())
    worst = max(float(numpy.abs(g_fun[k].asnumpy() - g_tape[k].asnumpy()).max())
                for k in params) / scale
    results["minpy tape"] = lambda: tstep(params)

    # the same tape step under minpy.jit: traced once, replayed
    jstep = minpy.jit(tstep)
    jstep(params)
    losses["minpy tape + jit"] = float(jstep(params)[1])
    results["minpy tape + jit"] = lambda: jstep(params)

    torch = optional("torch")
    if torch is not None:
        tops = torch_ops(torch)
        tp = {k: torch.tensor(v.asnumpy(), requires_grad=True) for k, v in params.items()}
        taux = {k: torch.tensor(v.asnumpy()) for k, v in f.aux_params.items()}
        tx, ty = torch.tensor(x), torch.tensor(y)

        def torch_step():
            for v in tp.values():
                v.grad = None
            out = run_graph(symbol, tops, dict(tp, data=tx, **taux))
            loss = torch.nn.functional.cross_entropy(out, ty)
            loss.backward()
            return loss
        losses["torch"] = float(torch_step().detach())
        results["torch"] = torch_step
    return results, losses, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="tiny batches, one timed call per contender (CI)")
    args = parser.parse_args()
    set_quick(args.quick)
    b_lenet, b_resnet = (8, 4) if args.quick else (64, 32)
    nets = [(f"LeNet b{b_lenet}", sym.zoo.lenet(), "fc2_output", (b_lenet, 1, 28, 28)),
            (f"ResNet-20 b{b_resnet}", sym.zoo.resnet(20, 10, image_shape=(3, 32, 32)),
             "fc1_output", (b_resnet, 3, 32, 32))]
    rows = []
    for label, symbol, logits_name, shape in nets:
        fns, losses, worst = case(label, symbol, logits_name, shape)
        ref = [v for v in losses.values()]
        assert max(ref) - min(ref) < 1e-3 * max(1.0, abs(ref[0])), (label, losses)
        # float32 BatchNorm sums over 32k elements (NumPy accumulates strided axes
        # naively) leave ~1e-3 of rounding; a wrong network would be off by O(1)
        assert worst < 2e-2, (label, "Function vs tape gradients differ", worst)
        times = per_call_interleaved(fns, min_time=0.2, rounds=7)
        minpy.engine.set_engine("naive")        # the same executors, every op run inline
        for k in ("executor", "Function"):
            times[f"{k}, naive engine"] = per_call(fns[k], min_time=0.2, repeat=7)
        minpy.engine.set_engine("threaded")
        base, peer = times["executor"], times.get("torch")
        for k, t in times.items():
            rows.append([label, k, fmt_time(t), f"{t / base:6.2f}x",
                         f"{t / peer:6.2f}x" if peer else "-"])
        print(f"{label}: losses agree {losses}; Function vs tape gradient max rel diff "
              f"{worst:.1e}", flush=True)
    torch = optional("torch")
    peer = f"torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch \
        else "torch absent"
    print_table(f"forward + backward, one training step (float32, CPU; minpy {minpy.__version__}, "
                f"numpy {numpy.__version__}, {peer}, {platform.machine()})",
                ["network", "implementation", "time", "vs executor", "vs torch"], rows)


if __name__ == "__main__":
    main()
