"""A dist_* worker (run by tests/kvstore/test_kvstore_dist.py under mpiexec): trains a small
MLP on its shard of each batch and writes its final parameters to OUTDIR/rank<r>.npz.

    sync_mlp.py OUTDIR [KIND [STEPS]]      (KIND: dist_sync (default), dist_async ...)

KIND ``dist_sync:pushpull`` trains with ``pushpull`` of each gradient into itself;
``dist_sync:2bit`` with 2-bit gradient compression (threshold ``THRESHOLD``).
"""
import os
import sys

import numpy

import minpy
import minpy as np
import minpy.nn  # noqa: F401  (minpy.nn.optim)

STEPS, BATCH, D, H, C = 5, 8, 6, 5, 3
THRESHOLD = 0.02


def data(step, rows):
    """Batch ``step``: inputs and labels a linear model can learn."""
    r = numpy.random.default_rng(100 + step)
    x = r.standard_normal((rows, D))
    return x, numpy.argmax(x @ numpy.random.default_rng(1).standard_normal((D, C)), axis=1)


def init_params():
    r = numpy.random.default_rng(0)
    return {"w1": r.standard_normal((D, H)) * 0.3, "b1": numpy.zeros(H),
            "w2": r.standard_normal((H, C)) * 0.3, "b2": numpy.zeros(C)}


def loss(p, x, y):
    h = np.tanh(x @ p["w1"] + p["b1"])
    s = h @ p["w2"] + p["b2"]
    z = s - np.max(s, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean((z - lse)[np.arange(x.shape[0]), y])


def main(outdir, kind="dist_sync", steps=STEPS):
    kind, _, mode = kind.partition(":")
    kv = minpy.kvstore.create(kind)
    rank, workers = kv.rank, kv.num_workers
    if kind != "dist_async":                 # a pushpull without updater sums in place
        kv.init("probe", np.zeros(3))
        probe = np.full(3, rank + 1.0)
        kv.pushpull("probe", probe)
        assert probe.tolist() == [workers * (workers + 1) / 2] * 3, probe
        other = np.zeros(3)                    # into another array: summed again
        kv.pushpull("probe", probe, out=other)
        assert other.tolist() == [workers * workers * (workers + 1) / 2] * 3, other
    params = {k: np.array(v) for k, v in init_params().items()}
    if rank:                                   # init must give every rank rank 0's values
        params = {k: v * 0 + 7.0 for k, v in params.items()}
    for k in sorted(params):
        kv.init(k, params[k])
        kv.pull(k, out=params[k])
    kv.set_optimizer(minpy.nn.optim.create("sgd", learning_rate=0.5))
    if mode == "2bit":
        kv.set_gradient_compression({"type": "2bit", "threshold": THRESHOLD})
    per = BATCH // workers
    for step in range(steps):
        x, y = data(step, BATCH)
        xs, ys = np.array(x[rank * per:(rank + 1) * per]), np.array(y[rank * per:(rank + 1) * per])
        grads = np.grad(loss)(params, xs, ys)
        for k in sorted(params):
            if mode == "pushpull":                  # the gradient becomes the new weight
                g = grads[k] / workers
                kv.pushpull(k, g)
                params[k] = g
            else:
                kv.push(k, grads[k] / workers)       # the mean over the whole batch
                kv.pull(k, out=params[k])
    kv.barrier()
    for k in sorted(params):                   # dist_async: the servers' final values
        kv.pull(k, out=params[k])
    numpy.savez(os.path.join(outdir, f"rank{rank}.npz"),
                **{k: v.asnumpy() for k, v in params.items()})


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:3], *map(int, sys.argv[3:4]))
