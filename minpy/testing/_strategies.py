"""Hypothesis strategies of shapes and arrays (minpy Arrays or NumPy's).

hypothesis is a test dependency, not minpy's: it is imported when a strategy is built.
For the array API's strategies over minpy, see
``hypothesis.extra.array_api.make_strategies_namespace(minpy)``.
"""
import numpy

from .. import numpy as mnp

float_dtypes = (numpy.float32, numpy.float64)


def shapes(min_dims=0, max_dims=4, min_side=1, max_side=5):
    """Hypothesis strategy of array shapes (tuples of ints).

    Args:
        min_dims, max_dims: bounds on the number of dimensions.
        min_side, max_side: bounds on each dimension's length.

    Returns:
        A hypothesis strategy. See also hypothesis.extra.numpy.array_shapes.
    """
    from hypothesis.extra import numpy as hnp
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtype=numpy.float64, shape=None, elements=None, minpy=True):
    """Hypothesis strategy of arrays: minpy Arrays (NumPy's with ``minpy=False``).

    Args:
        dtype: the arrays' dtype.
        shape: a shape or a strategy of shapes (default :func:`shapes`).
        elements: a strategy of elements; floats default to finite values in [-10, 10].
        minpy: make minpy Arrays (on the current device) rather than NumPy's.

    Returns:
        A hypothesis strategy. See also hypothesis.extra.numpy.arrays.
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
    if shape is None:
        shape = shapes()
    if elements is None and numpy.dtype(dtype).kind == "f":
        elements = st.floats(-10, 10, allow_nan=False, width=numpy.dtype(dtype).itemsize * 8)
    strat = hnp.arrays(dtype, shape, elements=elements)
    return strat.map(mnp.array) if minpy else strat


def broadcastable_shapes(num_shapes=2, max_dims=4, max_side=5):
    """Hypothesis strategy of tuples of ``num_shapes`` mutually broadcastable shapes.

    Args:
        num_shapes: how many shapes in each tuple.
        max_dims, max_side: bounds on the dimensions and their lengths.

    Returns:
        A hypothesis strategy. See also
        hypothesis.extra.numpy.mutually_broadcastable_shapes.
    """
    from hypothesis.extra import numpy as hnp
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, max_dims=max_dims,
                                             max_side=max_side).map(lambda r: r.input_shapes)
