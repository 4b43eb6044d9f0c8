"""Data-parallel training of the digits MLP on several MPI workers (``kvstore='dist_sync'``).

    python -m minpy.kvstore.launch -n 2 examples/train_dist.py [--epochs 10] [--quick] [--save F]
    mpiexec -n 2 python -m mpi4py examples/train_dist.py ...   # the same, by hand
    python examples/train_dist.py ...                          # one process alone

Every worker reads the digits through ``minpy.nn.io.readers`` from a URL (by
default the ``file://`` URL of the archive that ships in ``minpy.datasets``;
any fsspec URL works, a plain path without fsspec), iterates over its own
part of the training set (``NDArrayIter(num_parts=kv.num_workers,
part_index=kv.rank)``) in batches of ``--batch / workers`` samples, and the
Solver sums the workers' gradients in the KVStore, where the optimizer runs:
each update equals one process training on ``--batch`` samples, so one plain
process (no MPI, or a world of one: no KVStore) trains the same model.
Rank 0 prints the progress and the final test accuracy (97-98% after 10
epochs).  Needs ``pip install mpi4py mpich`` for more than
one worker.
"""
import argparse
import importlib.util

import minpy
from minpy.datasets import DIGITS_PATH as DIGITS, split_digits
from minpy.nn.io import readers
from minpy.nn.io import NDArrayIter
from minpy.nn.solver import Solver

from mlp_digits import TwoLayerNet


def world_size():
    """The number of MPI processes this one runs among (1 without mpi4py)."""
    try:
        from mpi4py import MPI          # optional: the "dist" extra
    except ImportError:
        return 1
    return MPI.COMM_WORLD.Get_size()


def default_url():
    """The shipped archive as a ``file://`` URL, or its path when fsspec is missing."""
    return f"file://{DIGITS}" if importlib.util.find_spec("fsspec") is not None else DIGITS


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 epochs (a smoke test)")
    parser.add_argument("--batch", type=int, default=64,
                        help="samples per update, over all workers together")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--data", default=default_url(),
                        help="URL or path of digits.npz (images, target)")
    parser.add_argument("--save", default=None,
                        help="rank 0 writes the trained parameters to this file")
    args = parser.parse_args(argv)
    epochs = 3 if args.quick else args.epochs

    kv = minpy.kvstore.create("dist_sync") if world_size() > 1 else None
    workers, rank = (kv.num_workers, kv.rank) if kv is not None else (1, 0)
    per_worker = max(args.batch // workers, 1)

    (x_train, y_train), (x_test, y_test) = split_digits(readers.load_npz(args.data))
    train = NDArrayIter(x_train, y_train, batch_size=per_worker, shuffle=True, seed=0,
                        last_batch_handle="discard", num_parts=workers, part_index=rank)
    test = NDArrayIter(x_test, y_test, batch_size=256)    # every worker: the whole test set
    solver = Solver(TwoLayerNet(), train, test, num_epochs=epochs, kvstore=kv,
                    init_rule="gaussian", init_config={"stdvar": 0.1}, seed=42,
                    update_rule="sgd_momentum",
                    optim_config={"learning_rate": args.lr, "momentum": 0.9},
                    print_every=100, keep_best=False)
    if solver.is_chief:
        print(f"{workers} worker(s), kvstore {kv.type if kv is not None else None}, "
              f"{train.num_data} training samples and {per_worker} per batch on each")
    solver.train()
    acc = solver.check_accuracy(test)
    if solver.is_chief:
        print(f"final test accuracy {acc:.4f}")
        if args.save:
            solver.model.save_params(args.save)
    return acc


if __name__ == "__main__":
    main()
