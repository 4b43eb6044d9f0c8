"""What a user hands the Solver, turned into data iterators; seeds derived from one seed.

``Solver(model, (x, y), (x_test, y_test), batch_size=64, seed=0)`` wraps the
arrays in :class:`minpy.nn.io.NDArrayIter` (the training set shuffled each
epoch from a generator derived from ``seed``); an iterator is used as it is.
"""
import numpy

from .io import NDArrayIter

__all__ = ["as_dataiter", "child_seed", "DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE = 32      # as Keras's fit; MinPy's Solver took iterators only

# which stream of a Solver's seed feeds what (the parameter init keeps the seed itself)
SHUFFLE, DROPOUT = 1, 2


def child_seed(seed, stream):
    """An independent 32-bit seed for ``stream`` derived from ``seed`` (None: None).

    See also numpy.random.SeedSequence.spawn.
    """
    if seed is None:
        return None
    return int(numpy.random.SeedSequence(seed, spawn_key=(stream,)).generate_state(1)[0])


def is_dataiter(data):
    """Whether ``data`` is used as an iterator of DataBatch (it has ``reset``)."""
    return hasattr(data, "reset")


def as_dataiter(data, who, batch_size, shuffle=False, seed=None):
    """``data`` as an iterator of DataBatch.

    Args:
        data: None, an iterator (returned as it is), or an ``(x, y)`` tuple or
            list of two arrays (NumPy, minpy or nested lists; samples on axis 0).
        who: the caller and argument, for errors (``'Solver: train data'``).
        batch_size: samples per batch of a wrapped ``(x, y)``.
        shuffle, seed: shuffle each epoch, from a generator seeded by ``seed``
            (None: drawn from NumPy's global state, as NDArrayIter's).
    Returns:
        None, ``data``, or an NDArrayIter (``last_batch_handle='pad'``: every
        sample each epoch; the padding is not counted in accuracies).
    Raises:
        TypeError: anything else, a bare array included (its labels are missing).
        ValueError: x and y of different lengths (from NDArrayIter).

    See also minpy.nn.io.NDArrayIter, keras.Model.fit.
    """
    if data is None or is_dataiter(data):
        return data
    if isinstance(data, (tuple, list)) and len(data) == 2:
        x, y = data
        return NDArrayIter(x, y, batch_size=batch_size, shuffle=shuffle, seed=seed)
    shape = getattr(data, "shape", None)
    got = (f"an array of shape {tuple(shape)} (where are its labels?)" if shape is not None
           else f"{type(data).__name__}" + (f" of length {len(data)}"
                                            if isinstance(data, (tuple, list)) else ""))
    raise TypeError(f"{who} must be an (x, y) tuple of arrays or a data iterator "
                    f"(minpy.nn.io.NDArrayIter), got {got}")
