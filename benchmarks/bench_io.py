"""Input pipeline benchmark: batch preparation overlapped with training by prefetching.

Run: ``python benchmarks/bench_io.py [--batches N] [--rounds R] [--quick]``.
``--quick`` (CI): 4 batches, one round, a short calibration.

An MLP (784-1024-10, batch 256) takes minpy gradient steps on batches from
``NDArrayIter``; each batch first goes through a ``transform`` that does NumPy
work about as long as one step (passes of row sorts over the (batch, 784)
float32 data, a stand-in for rank filtering: NumPy releases the GIL inside
them, as real decoding/augmentation code does).  Throughput in batches/s
over the same batches with ``prefetch=0`` (prepare, then step), with
``prefetch=2`` (the next batches are prepared on a background thread during
the step) and through the generic ``PrefetchingIter``.  On two cores the
ideal ratio is ``(prepare + step) / max(prepare, step)``, ~2x.

BLAS is limited to one thread (``OPENBLAS_NUM_THREADS`` etc., unless set
already) so that the step uses one core and the prefetch thread the other.
"""
import argparse
import os
import sys
import time

if __name__ == "__main__":         # before NumPy loads BLAS; importing this module sets nothing
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minpy  # noqa: E402
from minpy.nn.io import DataBatch, NDArrayIter, PrefetchingIter  # noqa: E402
from _timing import print_table  # noqa: E402

BATCH, N_IN, N_HIDDEN, N_OUT = 256, 784, 1024, 10


def make_data(n_batches, seed=0):
    rng = numpy.random.default_rng(seed)
    x = rng.random((n_batches * BATCH, N_IN), dtype=numpy.float32)
    return x, rng.integers(0, N_OUT, n_batches * BATCH)


def make_params(seed=0):
    rng = numpy.random.default_rng(seed)
    return {"w1": minpy.array(rng.normal(0, 0.05, (N_IN, N_HIDDEN)).astype(numpy.float32)),
            "b1": minpy.zeros(N_HIDDEN, dtype=numpy.float32),
            "w2": minpy.array(rng.normal(0, 0.05, (N_HIDDEN, N_OUT)).astype(numpy.float32)),
            "b2": minpy.zeros(N_OUT, dtype=numpy.float32)}


def loss_fn(p, x, y):
    """Softmax cross entropy of a 2-layer ReLU MLP (minpy code, differentiated by the tape)."""
    h = minpy.maximum(x @ p["w1"] + p["b1"], 0)
    z = h @ p["w2"] + p["b2"]
    z = z - minpy.max(z, axis=1, keepdims=True)
    logp = z - minpy.log(minpy.sum(minpy.exp(z), axis=1, keepdims=True))
    return -minpy.mean(logp[numpy.arange(len(y)), y])


_step = minpy.grad_and_loss(loss_fn)


def train_step(params, batch, lr=0.1):
    """One SGD step on ``batch`` (updates ``params``); returns the loss as a float."""
    grads, loss = _step(params, batch.data[0], batch.label[0].asnumpy())
    for k in params:
        params[k] = params[k] - lr * grads[k]
    return float(loss)


def make_transform(passes):
    """A batch transform of ``passes`` GIL-releasing NumPy passes (a stand-in for decoding
    and augmentation): a per-sample normalised, filtered copy of the data."""
    def transform(batch):
        x = numpy.array(batch.data[0].asnumpy())
        buf = numpy.empty_like(x)
        for _ in range(passes):         # rank-order filtering: sorts release the GIL
            buf[...] = x
            buf.sort(axis=1)
            numpy.add(x, buf, out=x)
            x *= 0.5
        x -= x.mean(axis=1, keepdims=True)
        return DataBatch([minpy.array(x)], batch.label, pad=batch.pad, index=batch.index)
    return transform


def run_epoch(x, y, prefetch, transform, params):
    """Seconds for one epoch of training steps, and the losses (equal for every setting).

    ``prefetch``: an int for ``NDArrayIter(prefetch=...)``, or ``"wrap"`` for
    ``PrefetchingIter(NDArrayIter(transform=...), prefetch=2)``.
    """
    kw = dict(batch_size=BATCH, shuffle=True, seed=1, transform=transform,
              last_batch_handle="discard")
    it = PrefetchingIter(NDArrayIter(x, y, **kw), prefetch=2) if prefetch == "wrap" \
        else NDArrayIter(x, y, prefetch=prefetch, **kw)
    start = time.perf_counter()
    losses = [train_step(params, b) for b in it]
    elapsed = time.perf_counter() - start
    it.close()
    return elapsed, losses


def calibrate(x, y, reps=10):
    """Step time, and the number of transform passes taking about as long (each the
    best of ``reps`` timings)."""
    params = make_params()
    batch = next(NDArrayIter(x, y, batch_size=BATCH))
    for _ in range(3):
        train_step(params, batch)
    step = min(_timed(lambda: train_step(params, batch)) for _ in range(reps))
    fixed = min(_timed(lambda: make_transform(0)(batch)) for _ in range(reps))
    per_pass = (min(_timed(lambda: make_transform(10)(batch))
                    for _ in range(max(1, reps // 2))) - fixed) / 10
    passes = max(1, round((step - fixed) / max(per_pass, 1e-9)))
    prep = min(_timed(lambda: make_transform(passes)(batch)) for _ in range(reps))
    return step, passes, prep


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=60, help="batches per epoch")
    parser.add_argument("--rounds", type=int, default=3, help="epochs per setting (best kept)")
    parser.add_argument("--quick", action="store_true",
                        help="4 batches, one round, short calibration (CI)")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches, args.rounds = 4, 1
    x, y = make_data(args.batches)
    step, passes, prep = calibrate(x, y, reps=2 if args.quick else 10)
    print(f"step {step * 1e3:.2f} ms, batch preparation {prep * 1e3:.2f} ms ({passes} passes); "
          f"ideal prefetch speed-up {(step + prep) / max(step, prep):.2f}x; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    transform = make_transform(passes)
    best, losses = {0: float("inf"), 2: float("inf"), "wrap": float("inf")}, {}
    for _ in range(args.rounds):            # interleaved, so load bursts hit both settings
        for k in best:
            elapsed, losses[k] = run_epoch(x, y, k, transform, make_params())
            best[k] = min(best[k], elapsed)
    assert losses[0] == losses[2] == losses["wrap"], "prefetching changed the losses"
    names = {0: "prefetch=0", 2: "prefetch=2", "wrap": "PrefetchingIter(prefetch=2)"}
    rows = [[names[k], f"{args.batches / t:8.1f}", f"{t / args.batches * 1e3:7.2f}",
             f"{best[0] / t:5.2f}x"] for k, t in best.items()]
    print_table(f"NDArrayIter + transform + MLP grad step, {args.batches} batches of {BATCH} "
                f"(best of {args.rounds})", ["setting", "batches/s", "ms/batch", "vs prefetch=0"],
                rows)
    return best


if __name__ == "__main__":
    main()
