"""A dist_sync Solver worker (run by tests/nn/test_solver_seed_shards.py under mpiexec):
trains on (x, y) arrays given whole to every worker's Solver, which shards them; writes the
sample indices its iterator saw and its final parameters to OUTDIR/rank<r>.npz.

    solver_shards.py OUTDIR
"""
import sys

import numpy

import minpy.nn  # noqa: F401
from minpy.nn import layers
from minpy.nn.model import ModelBase
from minpy.nn.solver import Solver

N, D, C = 60, 4, 3


class Linear(ModelBase):
    def __init__(self):
        super().__init__()
        self.add_param("w", (D, C)).add_param("b", (C,))

    def forward(self, X, mode):
        return layers.affine(X, self.params["w"], self.params["b"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def main(outdir):
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((N, D)).astype(numpy.float64)
    y = numpy.arange(N) % C                      # the label of sample i is i % C
    x[:, 0] = numpy.arange(N)                    # and its first feature is i: traceable
    solver = Solver(Linear(), (x, y), batch_size=10, num_epochs=2, kvstore="dist_sync",
                    seed=0, verbose=False, keep_best=False,
                    optim_config={"learning_rate": 0.01})
    seen = []
    it = solver.train_dataiter
    it.reset()
    for batch in it:
        seen.extend(int(v) for v in batch.data[0].asnumpy()[:, 0])
    solver.train()
    rank = solver.kvstore.rank
    numpy.savez(f"{outdir}/rank{rank}.npz", seen=numpy.array(seen),
                **{k: v.asnumpy() for k, v in solver.model.params.items()})


if __name__ == "__main__":
    main(sys.argv[1])
