"""Train a small CNN on the bundled digits data with ``Solver``, two ways.

    python examples/cnn_digits.py [--epochs 15] [--symbol] [--plot cnn.png]

conv 3x3 x16 -> relu -> max-pool 2 -> affine 64 -> relu -> affine 10.

- default: a ``ModelBase`` written with ``minpy.nn.layers`` (``conv2d``,
  ``max_pool``, ``affine``): every op is recorded on the tape.
- ``--symbol``: the same network as a ``minpy.symbol`` graph in a
  ``SymbolModel`` -- one big operator, bound once, planned, run by the
  executor -- with the loss in NumPy.

Both reach about 97-98% test accuracy in a few seconds on a CPU.
"""
import argparse

import minpy.symbol as sym
from minpy.datasets import load_digits
from minpy.nn import layers
from minpy.nn.model import ModelBase, SymbolModel
from minpy.nn.solver import Solver


class ConvNet(ModelBase):
    """conv3x3x16 - relu - maxpool2 - affine64 - relu - affine10."""

    def __init__(self, filters=16, hidden=64, num_classes=10):
        super().__init__()
        self.add_param("conv_w", (filters, 1, 3, 3)) \
            .add_param("conv_b", (filters,), init_rule="constant", init_config={"value": 0.0}) \
            .add_param("w1", (filters * 4 * 4, hidden)) \
            .add_param("b1", (hidden,), init_rule="constant", init_config={"value": 0.0}) \
            .add_param("w2", (hidden, num_classes)) \
            .add_param("b2", (num_classes,), init_rule="constant", init_config={"value": 0.0})

    def forward(self, X, mode):
        p = self.params
        h = layers.relu(layers.conv2d(X, p["conv_w"], p["conv_b"], pad=1))
        h = layers.max_pool(h, pool_size=2, stride=2)
        h = layers.relu(layers.affine(h, p["w1"], p["b1"]))
        return layers.affine(h, p["w2"], p["b2"])

    def loss(self, predict, y):
        return layers.softmax_loss(predict, y)


def conv_symbol(filters=16, hidden=64, num_classes=10):
    """The same network as a minpy.symbol graph ending at the logits."""
    net = sym.Variable("data")
    net = sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=filters, name="conv1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = sym.FullyConnected(sym.Flatten(net), num_hidden=hidden, name="fc1")
    net = sym.Activation(net, act_type="relu", name="relu2")
    return sym.FullyConnected(net, num_hidden=num_classes, name="fc2")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--symbol", action="store_true", help="the network as a symbol")
    parser.add_argument("--plot", default=None, help="write loss/accuracy curves to this PNG")
    args = parser.parse_args(argv)

    train, test = load_digits(image_shape=(1, 8, 8))     # (x, y) pairs
    if args.symbol:
        model = SymbolModel(conv_symbol(), {"data": (args.batch, 1, 8, 8)},
                            loss=layers.softmax_loss)
    else:
        model = ConvNet()
    solver = Solver(model, train, test, batch_size=args.batch, num_epochs=args.epochs,
                    init_rule="xavier", seed=42,
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
