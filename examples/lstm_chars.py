"""A character-level LSTM language model on text that ships with Python.

    python examples/lstm_chars.py [--epochs 8] [--plot lstm.png]

The corpus is the Python documentation that ships inside the standard
library (``pydoc_data.topics``, the text ``help()`` shows; nothing is
downloaded): its first 80,000 characters, the last 10% held out. The
model -- embedding -> LSTM -> per-step affine -> softmax cross-entropy -- is a
MinPy-style ``ModelBase`` written with ``minpy.nn.layers``, trained by the
``Solver`` with Adam; the progress bar shows loss and samples/s on a
terminal. It reaches about 50% next-character accuracy on the held-out text
(a unigram guess gets ~15%).
"""
import argparse
from pydoc_data.topics import topics

import numpy

import minpy as mp
from minpy.nn import layers
from minpy.nn.io import NDArrayIter
from minpy.nn.model import ModelBase
from minpy.nn.solver import Solver


def load_corpus(seq_len=32, holdout=0.1, size=80_000):
    """Integer-coded (inputs, next-char targets) windows for training and held-out text."""
    text = " ".join(" ".join(topics[k].split()) for k in sorted(topics))[:size]
    vocab = sorted(set(text))
    codes = numpy.array([vocab.index(c) for c in text], dtype=numpy.int64)
    cut = int(len(codes) * (1 - holdout))

    def windows(part):
        n = (len(part) - 1) // seq_len
        x = part[:n * seq_len].reshape(n, seq_len)
        y = part[1:n * seq_len + 1].reshape(n, seq_len)
        return x, y
    return windows(codes[:cut]), windows(codes[cut:]), vocab


class CharLSTM(ModelBase):
    """embedding(V, E) -> LSTM(H) -> affine(V) at every step."""

    def __init__(self, vocab_size, embed=32, hidden=128):
        super().__init__()
        self.hidden = hidden
        self.add_param("embed", (vocab_size, embed), init_rule="gaussian",
                       init_config={"stdvar": 0.1}) \
            .add_param("Wx", (embed, 4 * hidden)) \
            .add_param("Wh", (hidden, 4 * hidden)) \
            .add_param("b", (4 * hidden,), init_rule="constant", init_config={"value": 0.0}) \
            .add_param("Wout", (hidden, vocab_size)) \
            .add_param("bout", (vocab_size,), init_rule="constant", init_config={"value": 0.0})

    def forward(self, X, mode):
        p = self.params
        x = layers.embedding(X, p["embed"])
        h0 = mp.zeros((X.shape[0], self.hidden), dtype=numpy.float32)
        h = layers.lstm(x, h0, p["Wx"], p["Wh"], p["b"])
        return layers.temporal_affine(h, p["Wout"], p["bout"])

    def loss(self, predict, y):
        return layers.temporal_softmax_loss(predict, y, mp.ones(y.shape, dtype=numpy.float32)) \
            / y.shape[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--plot", default=None, help="write loss/accuracy curves to this PNG")
    args = parser.parse_args(argv)

    (x_train, y_train), (x_test, y_test), vocab = load_corpus()
    train = NDArrayIter(x_train, y_train, batch_size=args.batch, shuffle=True, seed=0)
    test = NDArrayIter(x_test, y_test, batch_size=args.batch)
    solver = Solver(CharLSTM(len(vocab)), train, test, num_epochs=args.epochs,
                    init_rule="xavier", seed=1, update_rule="adam",
                    optim_config={"learning_rate": args.lr, "clip_norm": 5.0},
                    print_every=50, keep_best=False)
    solver.init()
    solver.train()
    acc = solver.check_accuracy(test)
    print(f"held-out next-character accuracy {acc:.4f} ({len(vocab)} symbols)")
    if args.plot:
        print("curves written to", solver.plot(args.plot))
    return acc


if __name__ == "__main__":
    main()
