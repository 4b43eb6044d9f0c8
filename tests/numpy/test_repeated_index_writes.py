"""Writes through repeated integer indices keep NumPy's last write on a device.

CuPy leaves the order of such writes undefined; the stand-in GPU keeps the FIRST
write, so any path that writes without reducing to the last one answers unlike NumPy.
"""
import numpy
import pytest

import minpy
import minpy.numpy as mnp
from _standin import standin_gpu  # noqa: F401  (fixture)

I = numpy.array

SETITEM_CASES = [
    ("int_list", (5,), [0, 0, 3, 0], [1.0, 2.0, 3.0, 4.0]),
    ("negative_alias", (5,), I([1, -4, 4, -1]), I([1.0, 2.0, 3.0, 4.0])),
    ("rows_broadcast_value", (4, 3), I([2, 2, 0]), I([[1.0], [2.0], [3.0]])),
    ("two_arrays", (3, 4), (I([0, 0, 1]), I([2, 2, 3])), I([5.0, 6.0, 7.0])),
    ("array_and_slice", (3, 4), (slice(None), I([1, 1])), I([8.0, 9.0])),
    ("leading_one_value", (4,), I([2, 2]), I([[1.0, 2.0]])),
    ("scalar_value", (4,), I([1, 1]), 7.0),
    ("bool_mask", (4,), I([True, False, True, False]), I([1.0, 2.0])),
    ("bool_list", (4,), [True, False, True, False], I([1.0, 2.0])),
    ("rows_then_slice", (4, 3), (I([1, -3, 1]), slice(0, 2)),
     I([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])),
    ("rows_ellipsis_2d_index", (4, 2, 2), (I([[0, 3], [0, 3]]), Ellipsis),
     I([[[[1.0]]], [[[2.0]]]])),
    ("general_mix", (3, 4, 2), (0, I([1, 1, 3]), I([0, 0, 1])), I([1.0, 2.0, 3.0])),
]


@pytest.mark.parametrize("shape,key,value", [c[1:] for c in SETITEM_CASES],
                         ids=[c[0] for c in SETITEM_CASES])
def test_setitem_last_write_wins_on_device(standin_gpu, shape, key, value):
    want = numpy.arange(numpy.prod(shape), dtype=float).reshape(shape)
    x0 = want.copy()
    want[key] = value
    with minpy.gpu(0):
        x = mnp.array(x0)
        k = tuple(mnp.array(e) if isinstance(e, numpy.ndarray) else e for e in key) \
            if type(key) is tuple else (mnp.array(key) if isinstance(key, numpy.ndarray) else key)
        v = mnp.array(value) if isinstance(value, numpy.ndarray) else value
        assert standin_gpu.owns(x._data)
        x[k] = v
        numpy.testing.assert_array_equal(x.asnumpy(), want)

        if isinstance(value, numpy.ndarray):    # traced replay (index_update), gradient
            w = numpy.arange(1.0, 1.0 + want.size).reshape(shape)
            g = minpy.grad(lambda v: mnp.sum(_written(x0, k, v) * mnp.array(w)))(mnp.array(value))
            numpy.testing.assert_array_equal(g.asnumpy(), _value_grad(shape, key, value, w))


def _written(x0, k, v):
    y = mnp.array(x0)
    y[k] = v
    return y


def _value_grad(shape, key, value, w):
    """NumPy's gradient of sum(w * (x with x[key] = value)) w.r.t. value: each element
    of w goes to the value element whose write survived."""
    sel_shape = numpy.zeros(shape)[key].shape
    vb = numpy.broadcast_shapes(value.shape[max(0, value.ndim - len(sel_shape)):], sel_shape)
    target = numpy.full(shape, -1)
    target[key] = numpy.arange(numpy.prod(vb)).reshape(vb)
    g = numpy.zeros(int(numpy.prod(vb)))
    numpy.add.at(g, target[target >= 0], w[target >= 0])
    g = g.reshape(vb)
    while g.ndim > value.ndim:
        g = g.sum(0)
    lead = value.ndim - g.ndim
    g = g.reshape((1,) * lead + g.shape)
    for ax, n in enumerate(value.shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(ax, keepdims=True)
    return g


@pytest.mark.parametrize("mode,ind", [("raise", [0, 0, 4, -1, 2]), ("wrap", [6, 1, -4, 12]),
                                      ("clip", [-3, 0, 9, 4, 4])])
def test_put_last_write_wins_on_device(standin_gpu, mode, ind):
    vals = numpy.array([1.0, 2.0, 3.0])
    want = numpy.zeros(5)
    numpy.put(want, ind, vals, mode=mode)
    with minpy.gpu(0):
        a = mnp.zeros(5)
        mnp.put(a, mnp.array(numpy.array(ind)), mnp.array(vals), mode=mode)
        numpy.testing.assert_array_equal(a.asnumpy(), want)
        b = mnp.zeros(5)
        b.put(mnp.array(numpy.array(ind)), mnp.array(vals), mode=mode)
        numpy.testing.assert_array_equal(b.asnumpy(), want)


@pytest.mark.parametrize("axis,ind,vshape", [(None, [3, 3, 0, 3], (4,)), (1, [[0, 0], [2, 2], [1, 0]], (3, 2)),
                                             (0, [[1, 1, 0, 2]], (1, 4))])
def test_put_along_axis_last_write_wins_on_device(standin_gpu, axis, ind, vshape):
    vals = numpy.arange(1.0, 1.0 + numpy.prod(vshape)).reshape(vshape)
    want = numpy.zeros((3, 4))
    numpy.put_along_axis(want, numpy.array(ind), vals, axis)
    with minpy.gpu(0):
        a = mnp.zeros((3, 4))
        mnp.put_along_axis(a, mnp.array(numpy.array(ind)), mnp.array(vals), axis)
        numpy.testing.assert_array_equal(a.asnumpy(), want)
