"""dist_device_sync on the strict stand-in GPU (run by tests/kvstore/test_kvstore_dist.py):
each rank pushes arrays from two stand-in devices; the value stays on gpu(0), is
summed over devices and ranks, and is pulled back onto both devices and the host."""
import os
import sys

import numpy

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minpy as np                       # noqa: E402
import minpy.nn                          # noqa: E402,F401
from _standin import installed            # noqa: E402


def main():
    with installed():
        kv = np.kvstore.create("dist_device_sync")
        rank, n = kv.rank, kv.num_workers
        base = numpy.arange(6.0).reshape(2, 3)
        kv.init("w", np.array(base * (rank + 1)).copyto(np.gpu(0)))
        assert kv._store["w"].context == np.gpu(0), kv._store["w"].context
        out0 = np.zeros((2, 3)).copyto(np.gpu(0))
        kv.pull("w", out=out0)                    # every rank: rank 0's value
        numpy.testing.assert_array_equal(out0.asnumpy(), base)
        grads = [np.array(base + rank).copyto(np.gpu(0)), np.array(base * 2).copyto(np.gpu(1))]
        kv.push("w", grads)
        outs = [np.zeros((2, 3)).copyto(np.gpu(1)), np.zeros((2, 3))]
        kv.pull("w", out=outs)
        want = sum(base + r + base * 2 for r in range(n))
        for o in outs:
            numpy.testing.assert_array_equal(o.asnumpy(), want)
        assert outs[0].context == np.gpu(1) and outs[1].context == np.cpu(0)
        kv.set_optimizer(np.nn.optim.create("sgd", learning_rate=0.5))
        kv.push("w", grads)
        kv.pull("w", out=outs)
        numpy.testing.assert_allclose(outs[1].asnumpy(), want - 0.5 * want)
        assert kv._store["w"].context == np.gpu(0)
        kv.barrier()
        print(f"rank {rank} ok")


if __name__ == "__main__":
    main()
