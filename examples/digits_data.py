"""The bundled digits data (``examples/data/digits.npz``) as NDArrayIters for the examples."""
import os

import numpy

from minpy.nn.io import NDArrayIter

HERE = os.path.dirname(os.path.abspath(__file__))
DIGITS = os.path.join(HERE, "data", "digits.npz")


def load_digits(image_shape=(64,), seed=0, split=0.8):
    """``(x_train, y_train), (x_test, y_test)``: float32 pixels in [0, 1], int64 labels.

    ``image_shape`` is the shape of one sample: ``(64,)`` for an MLP,
    ``(1, 8, 8)`` for a CNN. The split is a fixed random permutation.
    """
    return split_digits(numpy.load(DIGITS), image_shape, seed, split)


def split_digits(arrays, image_shape=(64,), seed=0, split=0.8):
    """:func:`load_digits` on the archive's arrays (``images``, ``target``), however
    they were read (``minpy.nn.io.readers.load_npz`` from a URL, say)."""
    x = arrays["images"].reshape((-1,) + tuple(image_shape)).astype(numpy.float32) / 16.0
    y = arrays["target"].astype(numpy.int64)
    order = numpy.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    cut = int(split * len(y))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def digits_iters(batch_size, image_shape=(64,), seed=0):
    """Training (shuffled, seeded) and test iterators over the digits."""
    (x_train, y_train), (x_test, y_test) = load_digits(image_shape)
    train = NDArrayIter(x_train, y_train, batch_size=batch_size, shuffle=True, seed=seed)
    test = NDArrayIter(x_test, y_test, batch_size=batch_size, shuffle=False)
    return train, test
