"""``mx.random``: ``seed`` over minpy's generators.

See also mxnet.random.
"""
from ..numpy import random as _np_random
from ..symbol import executor as _executor

__all__ = ["seed"]


def seed(seed_state, ctx="all"):
    """Seed minpy's random generators: the global ones (``minpy.random``, NumPy's legacy
    state, which the initializers and ``NDArrayIter`` draw from, and the GPU backend's)
    and the executors' Dropout generators. MXNet's ``ctx`` (one device's generators
    only) is accepted: minpy seeds all of them whatever it is, so a program that seeds
    one device gets repeatable runs all the same.

    Raises:
        ValueError: a seed that is not an int (as NumPy).

    See also mxnet.random.seed.
    """
    _np_random.seed(seed_state)
    _executor.seed(seed_state)
