"""Train a 2-layer MLP on the bundled digits data with MinPy's ``Solver``.

    python examples/mlp_digits.py [--epochs 30] [--plot mlp.png]

The model is a ``ModelBase`` subclass written with ``minpy.nn.layers``, as
MinPy programs are; the data is ``minpy.datasets.load_digits()`` (bundled in the
package); the Solver batches the arrays, initialises the model, differentiates its loss with
``minpy.grad_and_loss`` and updates it with a fused SGD-momentum kernel.
Reaches about 98.5% test accuracy in a few seconds on a CPU.
"""
import argparse

from minpy.datasets import load_digits
from minpy.nn import layers
from minpy.nn.model import ModelBase
from minpy.nn.solver import Solver


class TwoLayerNet(ModelBase):
    """affine - relu - affine, softmax cross-entropy loss."""

    def __init__(self, input_size=64, hidden_size=128, num_classes=10):
        super().__init__()
        self.add_param("w1", (input_size, hidden_size)) \
            .add_param("b1", (hidden_size,)) \
            .add_param("w2", (hidden_size, num_classes)) \
            .add_param("b2", (num_classes,))

    def forward(self, X, mode):
        h = layers.relu(layers.affine(X, self.params["w1"], self.params["b1"]))
        return layers.affine(h, self.params["w2"], self.params["b2"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--plot", default=None, help="write loss/accuracy curves to this PNG")
    args = parser.parse_args(argv)

    train, test = load_digits()          # (x, y) pairs: float32 pixels, int64 labels
    solver = Solver(TwoLayerNet(), train, test, batch_size=args.batch, num_epochs=args.epochs,
                    init_rule="gaussian", init_config={"stdvar": 0.1}, seed=42,
                    update_rule="sgd_momentum",
                    optim_config={"learning_rate": args.lr, "momentum": 0.9},
                    print_every=100, keep_best=False)
    solver.init()
    solver.train()
    acc = solver.check_accuracy(test)
    print(f"final test accuracy {acc:.4f}")
    if args.plot:
        print("curves written to", solver.plot(args.plot))
    return acc


if __name__ == "__main__":
    main()
