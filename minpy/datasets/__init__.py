"""``minpy.datasets``: small datasets that ship inside the package (no downloads).

::

    (x_train, y_train), (x_test, y_test) = minpy.datasets.load_digits()
    Solver(model, (x_train, y_train), (x_test, y_test), batch_size=64).train()

The arrays are host ``numpy.ndarray`` objects, as ``sklearn.datasets`` and
``keras.datasets`` give them: ``Solver``, ``NDArrayIter`` and ``minpy.array``
take them as they are, and each batch moves to the device once.
"""
import os

import numpy

__all__ = ["load_digits", "split_digits", "DIGITS_PATH"]

DIGITS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.npz")
"""The bundled archive: ``images`` (uint8, 1797x8x8, values 0-16) and ``target`` (uint8).

The "Optical Recognition of Handwritten Digits" test set by E. Alpaydin and C. Kaynak
(UCI Machine Learning Repository, CC BY 4.0), as ``sklearn.datasets.load_digits`` has it.
"""


def load_digits(image_shape=(64,), split=0.8, seed=0):
    """The bundled 8x8 handwritten digits, split into a training and a test set.

    Args:
        image_shape: the shape of one sample: ``(64,)`` (flat, for an MLP),
            ``(8, 8)`` or ``(1, 8, 8)`` (channels first, for a CNN).
        split: the fraction of the 1,797 samples in the training set, in (0, 1).
        seed: seed of the fixed random permutation applied before splitting.
    Returns:
        ``(x_train, y_train), (x_test, y_test)``: float32 pixels in [0, 1] of
        shape ``(n,) + image_shape`` and int64 labels 0-9 of shape ``(n,)``.
    Raises:
        ValueError: ``image_shape`` does not hold 64 pixels, or ``split`` is not in (0, 1).

    See also sklearn.datasets.load_digits, keras.datasets.mnist.load_data.
    """
    with numpy.load(DIGITS_PATH) as archive:
        arrays = {"images": archive["images"], "target": archive["target"]}
    return split_digits(arrays, image_shape, split, seed)


def split_digits(arrays, image_shape=(64,), split=0.8, seed=0):
    """:func:`load_digits` on the archive's arrays however they were read (from a
    URL with ``minpy.nn.io.readers.load_npz``, say).

    Args:
        arrays: a mapping with ``images`` (n, 8, 8) and ``target`` (n,).
        image_shape, split, seed: as :func:`load_digits`.
    Returns:
        ``(x_train, y_train), (x_test, y_test)`` as :func:`load_digits`.

    See also minpy.datasets.load_digits.
    """
    try:
        image_shape = tuple(int(s) for s in image_shape)
    except TypeError:
        raise TypeError(f"load_digits: image_shape must be a tuple of ints, "
                        f"got {image_shape!r}") from None
    if int(numpy.prod(image_shape)) != 64:
        raise ValueError(f"load_digits: image_shape {image_shape} does not hold the 64 pixels "
                         "of an 8x8 image")
    if not 0 < split < 1:
        raise ValueError(f"load_digits: split must be in (0, 1), got {split!r}")
    x = numpy.asarray(arrays["images"]).reshape((-1,) + image_shape).astype(numpy.float32) / 16.0
    y = numpy.asarray(arrays["target"]).astype(numpy.int64)
    order = numpy.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    cut = int(split * len(y))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])
