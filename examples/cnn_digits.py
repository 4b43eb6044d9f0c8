"""Train a small CNN on the bundled digits data: symbols as big operators,
the loss in NumPy, both differentiated together by ``minpy.grad_and_loss``.

    python examples/cnn_digits.py [--epochs 15]

The convolutional body (conv 3x3 x16 -> relu -> max-pool 2 -> FC 64 -> relu
-> FC 10) is a ``minpy.symbol`` graph wrapped by ``minpy.core.function``:
bound once, run by its executor, differentiated by the executor's backward.
The softmax cross-entropy is ordinary NumPy-style code on the logits.
Reaches about 97% test accuracy in a few seconds on a CPU.
"""
import argparse
import os
import time

import minpy as np
import minpy.symbol as sym
from minpy.symbol import function

HERE = os.path.dirname(os.path.abspath(__file__))


def load_digits(seed=0):
    """(x_train, y_train), (x_test, y_test): 8x8 images as (N, 1, 8, 8) float32 in [0, 1]."""
    data = np.load(os.path.join(HERE, "data", "digits.npz"))
    x = np.reshape(data["images"], (-1, 1, 8, 8)).astype(np.float32) / 16.0
    y = data["target"].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    split = int(0.8 * len(y))
    return (x[:split], y[:split]), (x[split:], y[split:])


def cnn_symbol(num_classes=10):
    """conv3x3x16 - relu - maxpool2 - FC64 - relu - FC(num_classes): the logits."""
    net = sym.Variable("data")
    net = sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = sym.FullyConnected(sym.Flatten(net), num_hidden=64, name="fc1")
    net = sym.Activation(net, act_type="relu", name="relu2")
    return sym.FullyConnected(net, num_hidden=num_classes, name="fc2")


def softmax_cross_entropy(logits, y):
    """Mean cross-entropy of integer labels ``y`` -- plain NumPy glue."""
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(log_probs[np.arange(len(y)), y])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    (x_train, y_train), (x_test, y_test) = load_digits()
    net = function(cnn_symbol(), {"data": (args.batch, 1, 8, 8)}, name="cnn")
    params = net.get_params(seed=42)

    def loss(params, x, y):
        return softmax_cross_entropy(net(data=x, **params), y)

    def accuracy(x, y):
        return float(np.mean(np.argmax(net(data=x, **params), axis=1) == y))

    step = np.grad_and_loss(loss)
    velocity = {k: np.zeros_like(p) for k, p in params.items()}
    rng = np.random.default_rng(1)
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(len(y_train))
        total = 0.0
        for i in range(0, len(order) - args.batch + 1, args.batch):   # full batches only
            idx = order[i:i + args.batch]
            grads, l = step(params, x_train[idx], y_train[idx])
            for k, p in params.items():
                v = velocity[k]
                v *= 0.9
                v -= args.lr * grads[k]
                p += v
            total += float(l) * len(idx)
        if epoch % 5 == 4 or epoch == args.epochs - 1:
            print(f"epoch {epoch + 1:3d}  loss {total / len(order):.4f}  "
                  f"test accuracy {accuracy(x_test, y_test):.4f}")
    acc = accuracy(x_test, y_test)
    print(f"final test accuracy {acc:.4f} in {time.perf_counter() - start:.1f} s "
          f"({net.bind_count} binds, {net.num_executors} executors)")
    return acc


if __name__ == "__main__":
    main()
