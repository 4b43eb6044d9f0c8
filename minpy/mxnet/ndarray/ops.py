"""MXNet 1.9.1's NDArray functions that are Python-level in MXNet (``maximum``,
``add``, ``equal`` ... taking NDArrays or scalars) or that minpy's symbol registry
lacks (``one_hot``, ``where``, ``pick``, ``topk``, ``sort``, ``argsort``), written
over ``minpy.numpy`` so ``minpy.grad`` differentiates them (index outputs excepted).
"""
import numbers

import numpy

from ... import numpy as mnp
from ...core.array import Array

__all__ = ["add", "subtract", "multiply", "divide", "modulo", "power", "maximum", "minimum",
           "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
           "true_divide", "negative", "one_hot", "where", "pick", "topk", "sort", "argsort"]


def _check(x, func, what):
    if isinstance(x, Array):
        return x
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        return x
    raise TypeError(f"mx.nd.{func}: {what} must be an NDArray or a number, got "
                    f"{type(x).__name__}")


def _binary(func, np_func, lhs, rhs):
    lhs, rhs = _check(lhs, func, "lhs"), _check(rhs, func, "rhs")
    if not isinstance(lhs, Array) and not isinstance(rhs, Array):
        return np_func(lhs, rhs)
    dtype = (lhs if isinstance(lhs, Array) else rhs).dtype
    res = getattr(mnp, np_func.__name__)(lhs, rhs)
    return res if res.dtype == dtype else res.astype(dtype)


def _make_binary(name, np_func, doc):
    def fn(lhs, rhs):
        return _binary(name, np_func, lhs, rhs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{doc} of ``lhs`` and ``rhs`` (NDArrays, broadcast, or numbers); the "
                  f"result has the NDArray's dtype (comparisons give 1 and 0 in it), as "
                  f"MXNet's. See also mxnet.ndarray.{name}.")
    return fn


add = _make_binary("add", numpy.add, "Element-wise sum")
subtract = _make_binary("subtract", numpy.subtract, "Element-wise difference")
multiply = _make_binary("multiply", numpy.multiply, "Element-wise product")
divide = _make_binary("divide", numpy.divide, "Element-wise quotient")
true_divide = _make_binary("true_divide", numpy.divide, "Element-wise quotient")
modulo = _make_binary("modulo", numpy.mod, "Element-wise remainder")
power = _make_binary("power", numpy.power, "Element-wise power")
maximum = _make_binary("maximum", numpy.maximum, "Element-wise maximum")
minimum = _make_binary("minimum", numpy.minimum, "Element-wise minimum")
equal = _make_binary("equal", numpy.equal, "Element-wise ==")
not_equal = _make_binary("not_equal", numpy.not_equal, "Element-wise !=")
greater = _make_binary("greater", numpy.greater, "Element-wise >")
greater_equal = _make_binary("greater_equal", numpy.greater_equal, "Element-wise >=")
lesser = _make_binary("lesser", numpy.less, "Element-wise <")
lesser_equal = _make_binary("lesser_equal", numpy.less_equal, "Element-wise <=")


def negative(data, out=None, name=None):
    """``-data``. See also mxnet.ndarray.negative."""
    return _out(-_array(data, "negative"), out)


def _array(x, func, what="data"):
    if not isinstance(x, Array):
        raise TypeError(f"mx.nd.{func}: {what} must be an NDArray, got {type(x).__name__}")
    return x


def _out(res, out):
    if out is None:
        return res
    out[...] = res
    return out


def _axis(axis, ndim, func):
    a = int(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"mx.nd.{func}: axis {axis} is out of range for {ndim} dimensions")
    return a % ndim


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype="float32", out=None,
            name=None):
    """One-hot encoding: a new last axis of length ``depth`` holding ``on_value`` at each
    index and ``off_value`` elsewhere (indices outside ``[0, depth)`` give a row of
    ``off_value``). See also mxnet.ndarray.one_hot."""
    idx = _array(indices, "one_hot", "indices").astype(numpy.int64)
    hit = mnp.expand_dims(idx, -1) == mnp.arange(int(depth))
    res = mnp.where(hit, on_value, off_value).astype(numpy.dtype(dtype))
    return _out(res, out)


def where(condition, x, y, out=None, name=None):
    """``x`` where ``condition`` is non-zero, else ``y``; ``condition`` has ``x``'s shape or
    is 1-d of its first dimension (a choice per row). See also mxnet.ndarray.where."""
    condition, x, y = (_array(v, "where", w) for v, w in ((condition, "condition"), (x, "x"),
                                                          (y, "y")))
    if tuple(x.shape) != tuple(y.shape):
        raise ValueError(f"mx.nd.where: x {tuple(x.shape)} and y {tuple(y.shape)} must have "
                         "one shape")
    c = condition != 0
    if tuple(condition.shape) != tuple(x.shape):
        if condition.ndim != 1 or condition.shape[0] != x.shape[0]:
            raise ValueError(f"mx.nd.where: condition {tuple(condition.shape)} must have x's "
                             f"shape {tuple(x.shape)} or be 1-d of length {x.shape[0]}")
        c = mnp.reshape(c, (-1,) + (1,) * (x.ndim - 1))
    return _out(mnp.where(c, x, y), out)


def pick(data, index, axis=-1, keepdims=False, mode="clip", out=None, name=None):
    """The element of each slice along ``axis`` at ``index`` (``mode`` 'clip' clips indices,
    'wrap' wraps them); the result drops ``axis`` unless ``keepdims``.
    See also mxnet.ndarray.pick."""
    data, index = _array(data, "pick"), _array(index, "pick", "index")
    ax = _axis(axis, data.ndim, "pick")
    n = data.shape[ax]
    idx = index.astype(numpy.int64)
    if mode == "clip":
        idx = mnp.clip(idx, 0, n - 1)
    elif mode == "wrap":
        idx = mnp.mod(idx, n)
    else:
        raise ValueError(f"mx.nd.pick: mode must be 'clip' or 'wrap', got {mode!r}")
    want = tuple(d for i, d in enumerate(data.shape) if i != ax)
    if tuple(idx.shape) not in (want, want[:ax] + (1,) + want[ax:]):
        raise ValueError(f"mx.nd.pick: index {tuple(index.shape)} must be {want} for data "
                         f"{tuple(data.shape)} and axis {axis}")
    if idx.ndim != data.ndim:
        idx = mnp.expand_dims(idx, ax)
    res = mnp.take_along_axis(data, idx, axis=ax)
    return _out(res if keepdims else mnp.squeeze(res, axis=ax), out)


def _order(data, ax, is_ascend):
    key = data if is_ascend else -data
    return mnp.argsort(key, axis=ax, kind="stable")


def sort(data, axis=-1, is_ascend=True, out=None, name=None):
    """``data`` sorted along ``axis`` (``axis=None``: flattened). See also
    mxnet.ndarray.sort."""
    data = _array(data, "sort")
    if axis is None:
        data, axis = mnp.reshape(data, (-1,)), 0
    ax = _axis(axis, data.ndim, "sort")
    return _out(mnp.take_along_axis(data, _order(data, ax, is_ascend), axis=ax), out)


def argsort(data, axis=-1, is_ascend=True, dtype="float32", out=None, name=None):
    """Indices that sort ``data`` along ``axis``, as ``dtype`` (float32, as MXNet's).
    See also mxnet.ndarray.argsort."""
    data = _array(data, "argsort")
    if axis is None:
        data, axis = mnp.reshape(data, (-1,)), 0
    ax = _axis(axis, data.ndim, "argsort")
    return _out(_order(data, ax, is_ascend).astype(numpy.dtype(dtype)), out)


def topk(data, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype="float32", out=None,
         name=None):
    """The ``k`` largest (``is_ascend``: smallest) elements along ``axis``: their indices
    (``ret_typ='indices'``, as ``dtype``), values (``'value'``), both (``'both'``: a list
    [values, indices]) or a 0/1 mask of ``data``'s shape (``'mask'``).
    See also mxnet.ndarray.topk."""
    data = _array(data, "topk")
    if axis is None:
        data, axis = mnp.reshape(data, (-1,)), 0
    ax = _axis(axis, data.ndim, "topk")
    n = data.shape[ax]
    k = int(k)
    if k < 1 or k > n:
        k = n if k < 1 else k
        if k > n:
            raise ValueError(f"mx.nd.topk: k={k} exceeds the {n} elements along axis {axis}")
    order = mnp.take(_order(data, ax, is_ascend), numpy.arange(k), axis=ax)
    if ret_typ == "indices":
        return _out(order.astype(numpy.dtype(dtype)), out)
    values = mnp.take_along_axis(data, order, axis=ax)
    if ret_typ == "value":
        return _out(values, out)
    if ret_typ == "both":
        return [values, order.astype(numpy.dtype(dtype))]
    if ret_typ == "mask":
        mask = numpy.zeros(data.shape, data.dtype)
        numpy.put_along_axis(mask, order.asnumpy(), 1, axis=ax)
        return _out(mnp.asarray(mask), out)
    raise ValueError(f"mx.nd.topk: ret_typ must be 'indices', 'value', 'both' or 'mask', "
                     f"got {ret_typ!r}")
