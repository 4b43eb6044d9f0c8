"""Untraced host results are NumPy's own scalars; traced and device results stay Arrays.

Written the way users write code: ``round``, ``json.dumps``, ``statistics``,
``isinstance(m, float)``, a dict key, a Python loop ``s += a[i]``. Where nothing is
differentiated and the data lives on the host, a minpy reduction, element or ufunc of
scalars returns exactly the type and value NumPy returns; under ``minpy.grad`` and
``minpy.jit`` the scalar is an Array (the tape and the tracer must see it).
"""
import json
import math
import numbers
import statistics

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import minpy
import minpy as mp
from minpy.core.array import Array
from _standin import installed

# the host tests assert host placement: under MINPY_TEST_DEVICE they run without a GPU
pytestmark = pytest.mark.cpu_only


_DTYPES = ["float64", "float32", "float16", "int64", "int32", "int8", "uint8", "uint16",
           "bool", "complex128"]


def _pair(dtype, n=5):
    h = (numpy.arange(n) % 3 + 1).astype(dtype)
    return h, mp.array(h)


def _same_scalar(got, want):
    assert type(got) is type(want), (type(got), type(want))
    assert repr(got) == repr(want)
    if isinstance(want, numpy.inexact) and numpy.isnan(want):
        assert numpy.isnan(got)
    else:
        assert got == want


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_DTYPES), st.integers(1, 6), st.integers(0, 5))
def test_reductions_and_elements_are_numpy_scalars(dtype, n, i):
    h, m = _pair(dtype, n)
    i = i % n
    _same_scalar(m[i], h[i])
    _same_scalar(m.sum(), h.sum())
    _same_scalar(mp.sum(m), numpy.sum(h))
    _same_scalar(m.max(), h.max())
    _same_scalar(mp.any(m), numpy.any(h))
    if dtype != "bool":
        _same_scalar(m.mean(), h.mean())
        _same_scalar(mp.prod(m), numpy.prod(h))
    _same_scalar(mp.dot(m, m), numpy.dot(h, h))
    _same_scalar(m[i] * 2, h[i] * 2)


def test_user_code_with_a_mean():
    x = mp.array([1.0, 2.0, 3.0, 4.0])
    m = x.mean()
    assert isinstance(m, float) and type(m) is numpy.float64
    assert round(m, 1) == 2.5
    assert json.dumps({"m": m}) == '{"m": 2.5}'
    assert statistics.mean([x.mean(), x.std()]) == pytest.approx((2.5 + numpy.std([1, 2, 3, 4])) / 2)
    assert mp.isscalar(m) and numpy.isscalar(m)
    assert repr(m) == repr(numpy.float64(2.5))
    assert {m: 1}[2.5] == 1
    assert math.isclose(m, 2.5)
    assert f"{m:.3f}" == "2.500"
    n = mp.array([1, 2, 3]).sum()
    assert isinstance(n, numpy.integer) and type(n) is numpy.int64
    assert [0, 1, 2, 3, 4, 5, 6][n] == 6          # an index, as NumPy's integers are
    assert isinstance(mp.array([True, False]).any(), numpy.bool_)


def test_python_loop_over_elements():
    h = numpy.linspace(0.0, 1.0, 11)
    a = mp.array(h)
    s = 0
    for i in range(len(a)):
        s += a[i]
    t = 0
    for i in range(len(h)):
        t += h[i]
    assert type(s) is type(t) and s == t


def test_scalars_mix_with_arrays():
    x = mp.array([1.0, 2.0, 3.0])
    s = x.sum()
    for r in (s * x, x * s, s + x, x / s, mp.exp(s) * x, numpy.float64(2.0) * x):
        assert type(r) is Array, type(r)
    assert numpy.array_equal((s * x).asnumpy(), numpy.array([6.0, 12.0, 18.0]))
    assert type(mp.exp(s)) is numpy.float64      # a ufunc of a NumPy scalar, as NumPy


def test_traced_scalars_stay_arrays():
    seen = []

    def f(x):
        s = x.sum()
        seen.append(type(s))
        e = x[0]
        seen.append(type(e))
        return s * e

    g = minpy.grad(f)(mp.array([1.0, 2.0, 3.0]))
    assert seen == [Array, Array]
    assert numpy.allclose(g.asnumpy(), [6.0 + 1.0, 1.0, 1.0])


def test_constants_under_a_tape_are_numpy_scalars():
    c = mp.array([1.0, 2.0])

    def f(x):
        k = c.sum()                     # untraced data: a constant, as in autograd
        assert type(k) is numpy.float64
        return (x * k).sum()

    g = minpy.grad(f)(mp.array([1.0, 1.0]))
    assert numpy.allclose(g.asnumpy(), [3.0, 3.0])


def test_jit_traced_scalars_are_not_baked_in():
    @minpy.jit
    def f(x):
        s = x.sum()
        return x * s

    for v in ([1.0, 2.0], [3.0, 5.0], [0.5, 0.25]):
        h = numpy.array(v)
        assert numpy.allclose(f(mp.array(h)).asnumpy(), h * h.sum())


def test_jit_returning_a_scalar():
    @minpy.jit
    def f(x):
        return x.sum() * 2

    for v in ([1.0, 2.0], [3.0, 5.0]):
        r = f(mp.array(v))
        assert float(r) == 2 * sum(v)


def test_grad_and_loss_loss_is_an_array_or_number():
    def f(x):
        return (x * x).sum()

    g, loss = minpy.grad_and_loss(f)(mp.array([1.0, 2.0]))
    assert float(loss) == 5.0
    assert numpy.allclose(g.asnumpy(), [2.0, 4.0])


def test_device_scalars_stay_arrays_on_their_device():
    with installed():
        x = mp.array([1.0, 2.0, 3.0], ctx=mp.gpu(0))
        s = x.sum()
        assert type(s) is Array and s.context == mp.gpu(0)
        assert float(s) == 6.0 and isinstance(s, numbers.Real)     # a number all the same
        e = x[1]
        assert type(e) is Array and e.context == mp.gpu(0) and float(e) == 2.0
        assert round(s) == 6 and type(round(s)) is int and round(e * 1.26, 1) == 2.5
        h = mp.array([1.0, 2.0, 3.0])          # host data: computed where the policy says,
        assert type(h[0]) is numpy.float64     # an element read on the host is NumPy's


def test_pandas_columns_of_results_are_numeric():
    pandas = pytest.importorskip("pandas")    # in the test extra: runs in CI
    xs = [mp.array([1.0, 2.0, 3.0]) * k for k in range(1, 4)]
    df = pandas.DataFrame({"mean": [x.mean() for x in xs], "n": [x.size for x in xs],
                           "first": [x[0] for x in xs]})
    assert list(df.dtypes) == [numpy.dtype("float64"), numpy.dtype("int64"),
                               numpy.dtype("float64")]
    assert df["mean"].sum() == 12.0
    # the mechanism pandas relies on: NumPy's conversion of a list of results
    assert numpy.array([x.mean() for x in xs]).dtype == numpy.float64
