"""Writes through integer indices with NumPy's answer on every backend: the last write wins.

NumPy applies the writes of ``x[idx] = v``, ``put`` and ``put_along_axis`` in order,
so where an element is written several times the last value stays. CuPy leaves that
order undefined (its kernels write in parallel). On a backend other than NumPy the
writes are first reduced to the last one per element; basic indices, boolean masks
and a single written value cannot repeat and are written as they are.
"""
import numpy

__all__ = ["write", "put_forward", "put_along_axis_forward", "index_update_forward"]


def _may_repeat(item):
    """True when index ``item`` may select an element more than once (an integer array
    or a list of indices)."""
    if type(item) is list:
        return True
    dt = getattr(item, "dtype", None)
    return dt is not None and dt.kind in "iu" and getattr(item, "ndim", 0) > 0


def _one_value(value):
    return getattr(value, "size", None) == 1 or (
        not hasattr(value, "ndim") and not isinstance(value, (list, tuple)))


def _write_numbers(xp, x, numbers, value):
    """``x.flat[numbers] = value`` (``value`` broadcast to ``numbers``' shape as by
    ``x[key] = value``) with the last write kept per element, for any layout of ``x``."""
    v = xp.asarray(value)
    lead = v.ndim - numbers.ndim
    if lead > 0:                        # NumPy drops leading length-1 axes of the value
        v = v.reshape(v.shape[lead:])
    v = xp.broadcast_to(v, numbers.shape).reshape(-1)
    rev = numbers.reshape(-1)[::-1]
    kept, first = xp.unique(rev, return_index=True)
    x[xp.unravel_index(kept, x.shape)] = v[::-1][first]


def write(xp, x, key, value):
    """``x[key] = value`` on backend namespace ``xp`` with NumPy's answer where integer
    indices repeat (the last write wins)."""
    items = key if type(key) is tuple else (key,)
    if xp is numpy or _one_value(value) or not any(_may_repeat(k) for k in items):
        x[key] = value
        return
    if _may_repeat(items[0]) and x.ndim and x.shape[0] and all(
            k is Ellipsis or type(k) is slice for k in items[1:]):
        _write_rows(xp, x, items[0], items[1:], value)
        return
    # any other mix: number every element (O(x.size) scratch), then write each once
    numbers = xp.arange(x.size).reshape(x.shape)[key]
    if numbers.size < 2:
        x[key] = value
        return
    _write_numbers(xp, x, numbers, value)


def _write_rows(xp, x, idx, rest, value):
    """``x[(idx,) + rest] = value`` for one integer array ``idx`` on the first axis and
    slices after it: the rows are reduced to their last write (O(idx.size) scratch)."""
    idx = xp.asarray(idx)
    if idx.size < 2 or idx.dtype.kind == "b":
        x[(idx,) + rest] = value
        return
    tail = x[(0,) + rest].shape                 # what one row of the write covers
    v = xp.asarray(value)
    shape = idx.shape + tail
    lead = v.ndim - len(shape)
    if lead > 0:                                # NumPy drops leading length-1 axes
        v = v.reshape(v.shape[lead:])
    v = xp.broadcast_to(v, shape).reshape((idx.size,) + tail)
    rows = (idx % x.shape[0]).reshape(-1)[::-1]  # -1 and n - 1 are the same row
    kept, first = xp.unique(rows, return_index=True)
    x[(kept,) + rest] = v[idx.size - 1 - first]


def put_forward(xp, a, ind, v, mode="raise"):
    """``put(a, ind, v, mode)`` on ``xp`` with NumPy's last-write-wins for repeated
    indices (``mode`` as NumPy's: 'raise', 'wrap' or 'clip')."""
    if xp is numpy:
        return xp.put(a, ind, v, mode=mode)
    if type(ind) in (list, tuple) and not ind:
        ind = xp.zeros(0, numpy.intp)        # (an empty list would be float64 to CuPy)
    if _one_value(v):
        return xp.put(a, ind, v, mode=mode)
    ind = xp.asarray(ind).reshape(-1)
    if ind.size < 2 or a.size == 0:
        return xp.put(a, ind, v, mode=mode)
    n = a.size
    if mode == "wrap":
        ind = ind % n
    elif mode == "clip":
        ind = xp.clip(ind, 0, n - 1)
    else:
        ind = xp.where(ind < 0, ind + n, ind)
    vals = xp.asarray(v).reshape(-1)
    if vals.size == 0:
        return xp.put(a, ind, vals, mode=mode)
    vals = vals[xp.arange(ind.size) % vals.size]      # NumPy repeats v over ind
    kept, first = xp.unique(ind[::-1], return_index=True)
    return xp.put(a, kept, vals[::-1][first], mode=mode)


def put_along_axis_forward(xp, arr, indices, values, axis):
    """``put_along_axis(arr, indices, values, axis)`` on ``xp`` with NumPy's
    last-write-wins for repeated indices."""
    if xp is numpy or _one_value(values) or getattr(indices, "size", 0) < 2:
        return xp.put_along_axis(arr, indices, values, axis)
    numbers = xp.arange(arr.size).reshape(arr.shape)
    if axis is None:
        numbers, axis = numbers.reshape(-1), 0
    _write_numbers(xp, arr, xp.take_along_axis(numbers, indices, axis), values)
    return None


def index_update_forward(xp, x, key, value):
    """``x[key] = value`` as a value: a copy of ``x`` with the write."""
    out = x.copy()
    write(xp, out, key, value)
    return out
