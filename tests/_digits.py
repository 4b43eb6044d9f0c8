"""The bundled digits as MinPy's example programs load them (a fixed shuffle, 1400 train)."""
import numpy

from minpy.datasets import DIGITS_PATH


def digits(image_shape):
    """{X_train, y_train, X_test, y_test} with images reshaped to ``image_shape``."""
    data = numpy.load(DIGITS_PATH)
    x = data["images"].reshape((-1,) + image_shape).astype(numpy.float32) / 16.0
    y = data["target"].astype(numpy.int64)
    order = numpy.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    return {"X_train": x[:1400], "y_train": y[:1400], "X_test": x[1400:], "y_test": y[1400:]}
