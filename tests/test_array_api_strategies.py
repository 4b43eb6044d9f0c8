"""``hypothesis.extra.array_api.make_strategies_namespace(minpy)``: Hypothesis's array API
strategies draw minpy arrays, and minpy's functions on them answer as NumPy's on the
same values (values, dtype, shape)."""
import warnings

import numpy
from hypothesis import given, settings, strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import minpy
from _strategies import gpu_tolerance, on_real_gpu

XPS = make_strategies_namespace(minpy)
FAST = settings(max_examples=25, derandomize=True, database=None, deadline=None)
SHAPES = XPS.array_shapes(min_dims=0, max_dims=3, max_side=4)


def _same(got, want):
    got = numpy.asarray(got.asnumpy() if isinstance(got, minpy.Array) else got)
    want = numpy.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc" and on_real_gpu():
        # CUDA's math library (exp ...) is within a few ulps of NumPy's, not bit-exact;
        # NaNs and infinities stay where NumPy has them
        rtol, atol = gpu_tolerance(want, 0, 0)
        numpy.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        numpy.testing.assert_array_equal(got, want)


@FAST
@given(XPS.arrays(dtype=XPS.numeric_dtypes(), shape=SHAPES))
def test_drawn_arrays_are_minpy_arrays_with_the_drawn_dtype(x):
    assert type(x) is minpy.Array
    assert x.dtype == x.asnumpy().dtype and x.shape == x.asnumpy().shape


@FAST
@given(XPS.arrays(dtype=XPS.real_dtypes(), shape=SHAPES),
       st.sampled_from(["abs", "negative", "sign", "square", "sort", "cumsum", "flip"]))
def test_elementwise_and_ordering_functions_match_numpy(x, name):
    h = x.asnumpy().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)       # overflow, as NumPy warns
        if name in ("sort", "cumsum") and h.ndim == 0:
            kw = {"axis": None}
        else:
            kw = {}
        _same(getattr(minpy, name)(x, **kw), getattr(numpy, name)(h, **kw))


@FAST
@given(XPS.arrays(dtype=XPS.floating_dtypes(), shape=SHAPES,
                  elements={"allow_nan": True, "allow_infinity": True}))
def test_reductions_and_math_match_numpy_with_nan_and_inf(x):
    h = x.asnumpy().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(minpy.sum(x), numpy.sum(h))
        _same(minpy.max(x, initial=-numpy.inf), numpy.max(h, initial=-numpy.inf))
        _same(minpy.exp(x), numpy.exp(h))
        _same(minpy.isnan(x), numpy.isnan(h))
        _same(minpy.where(minpy.isfinite(x), x, 0), numpy.where(numpy.isfinite(h), h, 0))


@FAST
@given(XPS.arrays(dtype=XPS.integer_dtypes(), shape=XPS.array_shapes(min_dims=1, max_dims=2,
                                                                     max_side=4)),
       XPS.arrays(dtype=XPS.integer_dtypes(), shape=XPS.array_shapes(min_dims=1, max_dims=2,
                                                                     max_side=4)))
def test_mixed_integer_promotion_matches_numpy(a, b):
    ha, hb = a.asnumpy().copy(), b.asnumpy().copy()
    try:
        want = numpy.add(ha, hb)
    except ValueError:                    # shapes that do not broadcast: the same error
        try:
            minpy.add(a, b)
        except ValueError:
            return
        raise AssertionError("minpy.add broadcast shapes NumPy refuses")
    _same(minpy.add(a, b), want)
