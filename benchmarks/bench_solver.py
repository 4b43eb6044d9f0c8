"""Training-loop overhead: one epoch of an MLP, by hand and through minpy's Solver.

Run: ``python benchmarks/bench_solver.py [--hidden 256] [--rounds 5] [--quick]``.

The same epoch (MLP 784-H-10, ReLU, softmax cross-entropy, SGD with momentum
0.9, batch 64, 100 steps over fixed shuffled data) five ways, timed round robin:

- ``numpy (hand)``: forward, backward and the momentum update written out in
  NumPy with in-place updates -- no framework at all;
- ``minpy loop``: ``grad_and_loss`` of the loss over a params dict, slicing the
  arrays by hand, momentum update with minpy in-place operators;
- ``minpy Solver``: ``NDArrayIter`` + ``ModelBase`` + ``Solver`` with the fused
  ``sgd_momentum`` kernel (the epoch's accuracy check on 64 samples included);
- ``torch eager``: ``nn.Linear`` layers, ``optim.SGD(momentum=0.9,
  foreach=True)`` (PyTorch 2.13 CPU, where installed).

The ratio is time / ``numpy (hand)``. All contenders start from the same
weights; the first step's loss is checked equal (float32 rounding) before timing.
``--quick`` (CI): hidden 32, 10 steps, one round.
"""
import argparse
import os
import sys
import time

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minpy  # noqa: E402
from minpy.nn import layers  # noqa: E402
from minpy.nn.io import NDArrayIter  # noqa: E402
from minpy.nn.model import ModelBase  # noqa: E402
from minpy.nn.solver import Solver  # noqa: E402
from _timing import optional  # noqa: E402

BATCH, N_IN, N_OUT, STEPS, LR = 64, 784, 10, 100, 0.01


def make_problem(hidden, steps=STEPS, seed=0):
    """Data for an epoch of ``steps`` batches, and initial weights."""
    rng = numpy.random.default_rng(seed)
    x = rng.standard_normal((BATCH * steps, N_IN)).astype(numpy.float32)
    y = rng.integers(0, N_OUT, BATCH * steps)
    w = {"w1": (rng.standard_normal((N_IN, hidden)) * 0.05).astype(numpy.float32),
         "b1": numpy.zeros(hidden, numpy.float32),
         "w2": (rng.standard_normal((hidden, N_OUT)) * 0.05).astype(numpy.float32),
         "b2": numpy.zeros(N_OUT, numpy.float32)}
    return x, y, w


def numpy_epoch(x, y, w0):
    """Hand-written forward/backward/momentum; returns the first step's loss."""
    p = {k: v.copy() for k, v in w0.items()}
    vel = {k: numpy.zeros_like(v) for k, v in p.items()}
    first = None
    for i in range(len(x) // BATCH):
        xb, yb = x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]
        h_pre = xb @ p["w1"] + p["b1"]
        h = numpy.maximum(h_pre, 0)
        z = h @ p["w2"] + p["b2"]
        z -= z.max(axis=1, keepdims=True)
        e = numpy.exp(z)
        prob = e / e.sum(axis=1, keepdims=True)
        if first is None:
            first = -numpy.mean(numpy.log(prob[numpy.arange(BATCH), yb]))
        prob[numpy.arange(BATCH), yb] -= 1
        dz = prob / BATCH
        grads = {"w2": h.T @ dz, "b2": dz.sum(0)}
        dh = dz @ p["w2"].T
        dh[h_pre <= 0] = 0
        grads["w1"], grads["b1"] = xb.T @ dh, dh.sum(0)
        for k in p:
            vel[k] *= 0.9
            vel[k] -= LR * grads[k]
            p[k] += vel[k]
    return float(first)


def minpy_loss(params, xb, yb):
    h = layers.relu(layers.affine(xb, params["w1"], params["b1"]))
    return layers.softmax_loss(layers.affine(h, params["w2"], params["b2"]), yb)


def minpy_epoch(x, y, w0):
    p = {k: minpy.array(v) for k, v in w0.items()}
    vel = {k: minpy.zeros_like(v) for k, v in p.items()}
    xs, ys = minpy.array(x), minpy.array(y)
    step = minpy.grad_and_loss(minpy_loss)
    first = None
    for i in range(len(x) // BATCH):
        grads, loss = step(p, xs[i * BATCH:(i + 1) * BATCH], ys[i * BATCH:(i + 1) * BATCH])
        first = float(loss) if first is None else first
        for k in p:
            v = vel[k]
            v *= 0.9
            v -= LR * grads[k]
            p[k] += v
    return first


class MLP(ModelBase):
    def __init__(self, w0):
        super().__init__()
        for k, v in w0.items():
            self.add_param(k, v.shape)

    def forward(self, X, mode):
        h = layers.relu(layers.affine(X, self.params["w1"], self.params["b1"]))
        return layers.affine(h, self.params["w2"], self.params["b2"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def solver_epoch(x, y, w0):
    it = NDArrayIter(x, y, batch_size=BATCH, shuffle=False)
    solver = Solver(MLP(w0), it, None, num_epochs=1, update_rule="sgd_momentum",
                    optim_config={"learning_rate": LR, "momentum": 0.9}, verbose=False,
                    train_acc_num_samples=BATCH, keep_best=False)
    solver.model.params = {k: minpy.array(v) for k, v in w0.items()}
    solver.train()
    return solver.loss_history[0]


def torch_epoch_maker():
    torch = optional("torch")
    if torch is None:
        return None
    torch.set_num_threads(2)

    def torch_epoch(x, y, w0):
        net = torch.nn.Sequential(torch.nn.Linear(N_IN, w0["w1"].shape[1]), torch.nn.ReLU(),
                                  torch.nn.Linear(w0["w1"].shape[1], N_OUT))
        with torch.no_grad():
            net[0].weight.copy_(torch.from_numpy(w0["w1"].T.copy()))
            net[0].bias.zero_()
            net[2].weight.copy_(torch.from_numpy(w0["w2"].T.copy()))
            net[2].bias.zero_()
        opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9, foreach=True)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        first = None
        for i in range(len(x) // BATCH):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(xt[i * BATCH:(i + 1) * BATCH]),
                                                     yt[i * BATCH:(i + 1) * BATCH])
            loss.backward()
            opt.step()
            first = float(loss) if first is None else first
        return first
    return torch_epoch


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="hidden 32, 10 steps, one round (CI)")
    args = parser.parse_args()
    steps = STEPS
    if args.quick:
        args.hidden, args.rounds, steps = 32, 1, 10
    x, y, w0 = make_problem(args.hidden, steps)
    contenders = {"numpy (hand)": numpy_epoch, "minpy loop (grad_and_loss)": minpy_epoch,
                  "minpy Solver (fused sgd_momentum)": solver_epoch}
    # minpy's first step loads numba's OpenMP runtime with OMP_WAIT_POLICY=PASSIVE; torch,
    # imported first, would load its own libgomp (RTLD_GLOBAL) with spinning workers for both
    solver_epoch(x, y, w0)
    torch_epoch = torch_epoch_maker()
    if torch_epoch is not None:
        contenders["torch eager (SGD foreach)"] = torch_epoch
    reference = numpy_epoch(x, y, w0)
    for name, fn in contenders.items():      # also warms up numba's kernel
        got = fn(x, y, w0)
        if not numpy.isclose(got, reference, rtol=1e-4):
            raise SystemExit(f"{name}: first loss {got} differs from NumPy's {reference}")
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn(x, y, w0)
            best[name] = min(best[name], time.perf_counter() - start)
    base = best["numpy (hand)"]
    print(f"\nOne epoch: MLP {N_IN}-{args.hidden}-{N_OUT}, batch {BATCH}, {steps} steps, "
          f"SGD momentum (best of {args.rounds}, round robin)")
    print(f"{'contender':36s} {'epoch':>10s} {'per step':>10s} {'vs numpy':>9s}")
    for name, t in best.items():
        print(f"{name:36s} {t * 1e3:8.1f} ms {t / steps * 1e3:8.3f} ms {t / base:8.2f}x")


if __name__ == "__main__":
    main()
