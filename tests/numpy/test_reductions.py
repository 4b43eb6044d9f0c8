"""Reductions and scans (function and method forms) compared between NumPy and minpy."""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
from _host import assert_result_type
from _strategies import (ALL_DTYPES, BOOL, FLOATS, INTS, NUMERIC, UINTS, arrays, compare_numpy,
                         run_both, with_axis)

# axis: None, int or tuple, and keepdims
TUPLE_AXIS = ["sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin", "ptp", "all",
              "any", "nansum", "nanprod", "nanmean", "nanstd", "nanvar", "nanmax", "nanmin",
              "median", "nanmedian", "count_nonzero"]
# axis: None or int only
INT_AXIS_KEEPDIMS = ["argmax", "argmin", "nanargmax", "nanargmin"]
SCANS = ["cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod"]
METHODS = ["sum", "prod", "mean", "std", "var", "max", "min", "all", "any"]

small = dict(max_dims=3, max_side=3)
REAL = INTS + UINTS + FLOATS


@pytest.mark.parametrize("name", TUPLE_AXIS)
@given(a_ax=with_axis(arrays(ALL_DTYPES, **small)), keep=st.booleans())
@compare_numpy
def test_reduction_axis_keepdims(name, a_ax, keep, xp):
    a, ax = a_ax
    return getattr(xp, name)(xp.asarray(a), axis=ax, keepdims=keep)


@pytest.mark.parametrize("name", TUPLE_AXIS)
@given(a=arrays(ALL_DTYPES, **small))
@compare_numpy
def test_reduction_default_axis(name, a, xp):
    return getattr(xp, name)(xp.asarray(a))


@pytest.mark.parametrize("name", INT_AXIS_KEEPDIMS)
@given(a_ax=with_axis(arrays(ALL_DTYPES, **small), allow_tuple=False), keep=st.booleans())
@compare_numpy
def test_arg_reductions(name, a_ax, keep, xp):
    a, ax = a_ax
    return getattr(xp, name)(xp.asarray(a), axis=ax, keepdims=keep)


@pytest.mark.parametrize("name", SCANS)
@given(a_ax=with_axis(arrays(ALL_DTYPES, min_dims=1, **small), allow_tuple=False))
@compare_numpy
def test_scans(name, a_ax, xp):
    a, ax = a_ax
    if name.startswith("cumulative") and a.ndim > 1 and ax is None:
        ax = 0
    return getattr(xp, name)(xp.asarray(a), axis=ax)


@pytest.mark.parametrize("name", ["percentile", "quantile", "nanpercentile", "nanquantile"])
@given(a_ax=with_axis(arrays(REAL, min_side=1, **small)), keep=st.booleans(),
       q=st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1, max_size=3)),
       method=st.sampled_from(["linear", "lower", "higher", "nearest", "midpoint"]))
@compare_numpy
def test_percentile_quantile(name, a_ax, keep, q, method, xp):
    a, ax = a_ax
    if "percentile" in name:
        q = numpy.multiply(q, 100).tolist()
    return getattr(xp, name)(xp.asarray(a), q, axis=ax, keepdims=keep, method=method)


@given(a_ax=with_axis(arrays(NUMERIC, min_side=1, **small), allow_tuple=False),
       returned=st.booleans(), weighted=st.booleans())
@compare_numpy
def test_average(a_ax, returned, weighted, xp):
    a, ax = a_ax
    w = None
    if weighted:
        n = a.size if ax is None else a.shape[ax]
        w = numpy.arange(1, n + 1, dtype=numpy.float64)
        w = w.reshape(a.shape) if ax is None else w
    return xp.average(xp.asarray(a), axis=ax, weights=None if w is None else xp.asarray(w),
                      returned=returned)


@pytest.mark.parametrize("name", ["percentile", "quantile", "median"])
@pytest.mark.parametrize("dtype", BOOL + ("complex64",))
@compare_numpy
def test_percentile_bad_dtypes(name, dtype, xp):
    a = xp.asarray(numpy.ones(4, dtype=dtype))
    return xp.median(a) if name == "median" else getattr(xp, name)(a, 0.5)


def test_average_zero_weights_error():
    run_both(lambda xp: xp.average(xp.ones(3), weights=xp.zeros(3)))


@pytest.mark.parametrize("name", METHODS)
@given(a_ax=with_axis(arrays(ALL_DTYPES, **small)), keep=st.booleans())
@compare_numpy
def test_method_forms(name, a_ax, keep, xp):
    a, ax = a_ax
    return getattr(xp.asarray(a), name)(axis=ax, keepdims=keep)


@pytest.mark.parametrize("name", ["argmax", "argmin", "cumsum", "cumprod"])
@given(a_ax=with_axis(arrays(ALL_DTYPES, min_dims=1, min_side=1, **small),
                      allow_tuple=False))
@compare_numpy
def test_method_forms_int_axis(name, a_ax, xp):
    a, ax = a_ax
    x = xp.asarray(a)
    return getattr(x, name)(axis=ax), getattr(x, name)()


@given(a=arrays(ALL_DTYPES, **small))
@compare_numpy
def test_methods_without_arguments(a, xp):
    x = xp.asarray(a)
    return [getattr(x, m)() for m in METHODS if m not in ("max", "min") or a.size]


@pytest.mark.parametrize("name", ["std", "var", "nanstd", "nanvar"])
@given(a_ax=with_axis(arrays(("float32", "float64", "complex64", "int32"), **small)),
       ddof=st.integers(0, 2))
@compare_numpy
def test_ddof(name, a_ax, ddof, xp):
    a, ax = a_ax
    return getattr(xp, name)(xp.asarray(a), axis=ax, ddof=ddof)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum", "nansum"])
@pytest.mark.parametrize("dtype", ["float32", "int16", "complex128", "uint8"])
@compare_numpy
def test_dtype_keyword(name, dtype, xp):
    a = xp.asarray(numpy.arange(12, dtype=numpy.int64).reshape(3, 4))
    return getattr(xp, name)(a, axis=0, dtype=dtype), getattr(a, name.replace("nan", ""))(
        dtype=dtype)


@pytest.mark.parametrize("name", ["sum", "max", "mean", "any", "cumsum", "argmin"])
@compare_numpy
def test_out_keyword(name, xp):
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    out = xp.zeros(4, dtype=numpy.int64 if name == "argmin" else numpy.float64)
    if name == "cumsum":
        out = xp.zeros((3, 4))
    res = getattr(xp, name)(a, axis=0, out=out)
    assert res is out
    return out


@compare_numpy
def test_where_keyword(xp):
    a = xp.asarray(numpy.arange(12.0).reshape(3, 4))
    m = xp.asarray(numpy.arange(12).reshape(3, 4) % 3 == 0)
    return (xp.sum(a, where=m), xp.max(a, axis=1, where=m, initial=-1), a.mean(where=m),
            xp.all(a, where=m))


@compare_numpy
def test_initial_keyword(xp):
    a = xp.asarray(numpy.arange(6).reshape(2, 3))
    return xp.sum(a, initial=10), xp.max(xp.asarray(numpy.zeros((0, 3))), axis=0, initial=5)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("name", TUPLE_AXIS + INT_AXIS_KEEPDIMS + SCANS[:4])
@pytest.mark.parametrize("axis", [2, -3, 5])
@compare_numpy
def test_axis_out_of_range(name, axis, xp):
    getattr(xp, name)(xp.ones((2, 3)), axis=axis)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "any"])
def test_axis_error_is_numpys(name):
    with pytest.raises(numpy.exceptions.AxisError):
        getattr(minpy, name)(minpy.ones((2, 3)), axis=2)
    with pytest.raises(numpy.exceptions.AxisError):
        getattr(minpy.ones((2, 3)), name)(axis=-3)


@pytest.mark.parametrize("name", ["sum", "max", "median", "argmax"])
@compare_numpy
def test_duplicate_or_bad_tuple_axis(name, xp):
    getattr(xp, name)(xp.ones((2, 3)), axis=(0, 0) if name != "argmax" else (0, 1))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "ptp", "nanmax"])
@compare_numpy
def test_empty_reduction_errors(name, xp):
    getattr(xp, name)(xp.zeros((0, 3)))


@compare_numpy
def test_empty_mean_is_nan(xp):
    return xp.mean(xp.zeros((0, 3))), xp.mean(xp.zeros((0, 3)), axis=0), xp.sum(xp.zeros(0))


@compare_numpy
def test_scalar_results_are_numpy_scalars(xp):
    a = xp.asarray(numpy.arange(6.0))
    res = xp.sum(a), a.max(), xp.argmax(a), xp.count_nonzero(a), xp.all(a)
    if xp is minpy:     # NumPy's scalar types on the host; 0-d Arrays on a device
        want = (numpy.float64(0), numpy.float64(0), numpy.intp(0), numpy.intp(0), numpy.bool_(0))
        for r, w in zip(res, want):
            assert_result_type(r, w)
    return res
