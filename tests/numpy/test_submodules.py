"""NumPy's other submodules in minpy (ma, lib, polynomial, char, strings, rec, emath,
typing, ctypeslib), the host-only names (frompyfunc, asmatrix, bmat), and the Array's
``base``, ``ctypes`` and buffer protocol — used the way NumPy users write them."""
import sys
import warnings

import numpy
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import minpy as np
from minpy.testing import check_grads


def host(x):
    return x._host() if isinstance(x, np.Array) else numpy.asarray(x)


# ------------------------------------------------------------ import paths
def test_import_paths_are_the_same_modules():
    import minpy.ma
    import minpy.numpy.polynomial.polynomial
    from minpy.lib.stride_tricks import sliding_window_view
    from minpy.numpy.lib import stride_tricks
    assert minpy.ma is np.ma is sys.modules["minpy.numpy.ma"]
    assert sliding_window_view is stride_tricks.sliding_window_view
    assert np.lib.stride_tricks is stride_tricks
    assert minpy.numpy.polynomial.polynomial is np.polynomial.polynomial
    assert np.emath is np.lib.scimath


def test_minpy_core_stays_minpys():
    # numpy.core (deprecated in NumPy 2) is not offered: minpy.core is MinPy's module
    assert np.core.grad_and_loss is not None and np.core.Function is not None
    assert np.rec.fromrecords is not None        # NumPy's public name for core.records


# ------------------------------------------------------- stride_tricks
@settings(max_examples=25, derandomize=True, deadline=None)
@given(data=st.data())
def test_sliding_window_view_matches_numpy(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    a = numpy.arange(numpy.prod(shape), dtype=numpy.float64).reshape(shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    w = data.draw(st.integers(1, shape[axis]))
    expected = numpy.lib.stride_tricks.sliding_window_view(a, w, axis=axis)
    got = np.lib.stride_tricks.sliding_window_view(np.array(a), w, axis=axis)
    assert type(got) is np.Array
    assert got.shape == expected.shape and got.dtype == expected.dtype
    numpy.testing.assert_array_equal(host(got), expected)
    # the traced path (a gather) gives the same values
    traced = np.grad(lambda x: (np.lib.stride_tricks.sliding_window_view(x, w, axis=axis)
                                * np.array(expected)).sum())(np.array(a))
    assert traced.shape == a.shape


def test_sliding_window_view_is_a_read_only_view_on_the_host():
    x = np.arange(6.0)
    v = np.lib.stride_tricks.sliding_window_view(x, 3)
    assert numpy.shares_memory(host(v), host(x))
    assert not host(v).flags.writeable


def test_sliding_window_view_gradients():
    x = np.array(numpy.random.default_rng(0).normal(size=(4, 5)))
    swv = np.lib.stride_tricks.sliding_window_view
    check_grads(lambda a: np.sin(swv(a, (2, 3))).sum(axis=(-1, -2)), x, order=2)
    check_grads(lambda a: (swv(a, 2, axis=1) ** 2).mean(), x, order=2)


def test_sliding_window_view_errors_are_numpys():
    x = np.arange(4.0)
    with pytest.raises(ValueError, match="window shape cannot be larger"):
        np.lib.stride_tricks.sliding_window_view(x, 5)
    with pytest.raises(ValueError, match="writeable=True"):
        np.grad(lambda a: np.lib.stride_tricks.sliding_window_view(
            a, 2, writeable=True).sum())(x)


def test_as_strided_runs_on_host_data():
    x = np.arange(6.0)
    got = np.lib.stride_tricks.as_strided(x, shape=(2, 3), strides=(24, 8))
    assert type(got) is np.Array
    numpy.testing.assert_array_equal(host(got), [[0, 1, 2], [3, 4, 5]])


# ------------------------------------------------------------------ ma
def test_ma_masked_invalid_on_minpy_arrays():
    x = np.array([1.0, numpy.nan, 3.0, numpy.inf])
    m = np.ma.masked_invalid(x)
    expected = numpy.ma.masked_invalid(host(x))
    assert type(m) is numpy.ma.MaskedArray
    numpy.testing.assert_array_equal(m.mask, expected.mask)
    assert m.mean() == expected.mean() == 2.0
    assert np.ma.MaskedArray is numpy.ma.MaskedArray and np.ma.masked is numpy.ma.masked
    assert np.ma.add.reduce(np.array([1.0, 2.0])) == 3.0      # ma's operations as NumPy's


def test_host_functions_refuse_arrays_being_differentiated():
    def f(a):
        return np.ma.masked_invalid(a).sum()
    with pytest.raises(TypeError, match=r"minpy\.ma\.masked_invalid: .*differentiated"):
        np.grad(f)(np.array([1.0, 2.0]))


def test_host_function_results():
    r = np.ma.getmaskarray(np.ma.masked_invalid(np.array([1.0, numpy.nan])))
    assert type(r) is np.Array and r.tolist() == [False, True]        # plain ndarray -> Array
    keys, counts = np.lib.array_utils.normalize_axis_tuple(-1, 2), None
    assert keys == (1,) and counts is None                              # others as NumPy's
    assert "See also numpy.ma.masked_invalid" in np.ma.masked_invalid.__doc__


# ----------------------------------------------------------- polynomial
@pytest.mark.cpu_only      # NumPy's Polynomial takes host data (device Arrays are refused)
def test_polynomial_fit_on_minpy_arrays():
    x = np.linspace(-1, 1, 20)
    y = 3 * x ** 2 - x + 0.5
    p = np.polynomial.Polynomial.fit(x, y, 2)
    expected = numpy.polynomial.Polynomial.fit(host(x), host(y), 2)
    numpy.testing.assert_allclose(p.convert().coef, [0.5, -1.0, 3.0], atol=1e-12)
    numpy.testing.assert_allclose(p.convert().coef, expected.convert().coef)
    c = np.polynomial.polynomial.polyfit(x, y, 2)
    assert type(c) is np.Array
    numpy.testing.assert_allclose(host(c), [0.5, -1.0, 3.0], atol=1e-12)
    assert np.polynomial.Chebyshev is numpy.polynomial.Chebyshev


# ------------------------------------------------- char, strings, rec ...
def test_strings_char_rec_typing_ctypeslib():
    s = np.array(["ab", "cde"])
    assert np.strings.str_len(s).tolist() == [2, 3]
    assert np.char.upper(s).tolist() == ["AB", "CDE"]
    assert np.strings.add is np.add                       # shared with numpy: minpy's ufunc
    r = np.rec.fromarrays([np.array([1, 2]), np.array([0.5, 1.5])], names="a,b")
    assert type(r) is numpy.rec.recarray and r.b.tolist() == [0.5, 1.5]
    assert np.typing.NDArray is numpy.typing.NDArray
    x = np.arange(3)
    c = np.ctypeslib.as_ctypes(x)
    assert list(c) == [0, 1, 2]
    back = np.ctypeslib.as_array(c)
    assert type(back) is np.Array and back.tolist() == [0, 1, 2]


def test_frompyfunc_asmatrix_bmat():
    f = np.frompyfunc(lambda a, b: a * 10 + b, 2, 1)
    got = f(np.arange(3), 1)
    assert got.dtype == object and got.tolist() == [1, 11, 21]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        m = np.asmatrix(np.eye(2))
        assert type(m) is numpy.matrix
        b = np.bmat([[np.eye(2), np.zeros((2, 1))]])
        expected = numpy.bmat([[numpy.eye(2), numpy.zeros((2, 1))]])
    numpy.testing.assert_array_equal(b, expected)


# ---------------------------------------------------------------- emath
EMATH_INPUTS = [[4.0, 0.25], [-4.0, 0.25], [0.5, -0.5], [2.0, -3.0], [-2, 3]]


@pytest.mark.parametrize("name", ["sqrt", "log", "log10", "log2", "arccos", "arcsin",
                                  "arctanh"])
@pytest.mark.parametrize("values", EMATH_INPUTS)
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64, numpy.int64])
def test_emath_matches_numpy(name, values, dtype):
    a = numpy.array(values, dtype=dtype)
    with numpy.errstate(all="ignore"):
        expected = getattr(numpy.emath, name)(a)
        got = getattr(np.emath, name)(np.array(a))
    assert got.dtype == expected.dtype
    numpy.testing.assert_allclose(host(got), expected, rtol=1e-6)


def test_emath_logn_power_and_scalars():
    a = numpy.array([-8.0, 8.0])
    numpy.testing.assert_allclose(host(np.emath.logn(2, np.array(a))), numpy.emath.logn(2, a))
    for p in (2, -2, 0.5):
        expected = numpy.emath.power(a, p)
        got = np.emath.power(np.array(a), p)
        assert got.dtype == expected.dtype
        numpy.testing.assert_allclose(host(got), expected)
    assert complex(np.emath.sqrt(-1)) == 1j


def test_emath_gradients_on_both_branches():
    check_grads(np.emath.sqrt, np.array([0.5, 2.0]), order=2)
    check_grads(lambda x: np.real(np.emath.sqrt(x) * (1 - 2j)), np.array([-0.5, 2.0]),
                order=2)
    check_grads(lambda x: np.imag(np.emath.log(x)) + np.real(np.emath.log(x)),
                np.array([-1.5, 2.0]), order=2)
    check_grads(np.emath.arcsin, np.array([0.3, -0.2]), order=2)


# ------------------------------------------------- base, ctypes, buffer
@pytest.mark.parametrize("make", [
    lambda xp: xp.arange(6.0)[1:], lambda xp: xp.arange(6.0), lambda xp: xp.arange(6.0) + 1,
    lambda xp: xp.arange(6.0).reshape(2, 3), lambda xp: xp.arange(6.0).reshape(2, 3).T,
    lambda xp: xp.zeros(3), lambda xp: xp.arange(6.0).copy(),
    lambda xp: xp.frombuffer(b"abcd", dtype=numpy.uint8)])
def test_base_is_none_exactly_where_numpys_is(make):
    mine, theirs = make(np), make(numpy)
    assert (mine.base is None) == (theirs.base is None)
    if theirs.base is not None:
        numpy.testing.assert_array_equal(host(mine.base), numpy.asarray(theirs.base))


def test_base_of_a_view_shares_its_memory():
    x = np.arange(6.0)
    assert numpy.shares_memory(host(x[1:].base), host(x))


def test_ctypes_and_buffer_of_a_host_array():
    x = np.arange(4.0)
    assert x.ctypes.data == host(x).ctypes.data and tuple(x.ctypes.shape) == (4,)
    view = x.__buffer__(0)
    assert view.format == "d" and view.tolist() == [0.0, 1.0, 2.0, 3.0]
    if sys.version_info >= (3, 12):          # Python < 3.12 has no Python-level buffers
        assert memoryview(x).tolist() == [0.0, 1.0, 2.0, 3.0]


# --------------------------------------------- nothing of NumPy's goes missing
# (numpy module, public name): why minpy does not offer it. Printed by the test below.
NAME_EXCLUSIONS = {
    ("numpy", "f2py"): "builds Python extensions from Fortran: a build tool, no array API",
    ("numpy.ma", "core"): "ma's implementation module: its public names are numpy.ma's",
    ("numpy.ma", "extras"): "ma's implementation module: its public names are numpy.ma's",
    ("numpy.ma", "mrecords"): "masked record arrays: not mirrored yet (numpy.ma.mrecords "
                              "works on minpy host arrays through __array__)",
    ("numpy.random", "mtrand"): "RandomState's implementation module: its names are "
                                "numpy.random's",
}


def _numpy_modules():
    import numpy.testing   # noqa: F401  (loaded lazily by NumPy)
    import minpy.numpy.submodules as sub
    pairs = [(numpy, np), (numpy.linalg, np.linalg), (numpy.fft, np.fft),
             (numpy.random, np.random), (numpy.dtypes, np.dtypes),
             (numpy.exceptions, np.exceptions), (numpy.testing, np.testing)]
    for name, mine in sub.SUBMODULES.items():
        theirs = numpy
        for part in name.split("."):
            theirs = getattr(theirs, part)
        pairs.append((theirs, mine))
    return pairs


def _public_names(mod):
    """Public names of NumPy module ``mod``, less the modules its code imports for itself
    (``numpy.polynomial.chebyshev.np``): those are not part of its API."""
    names = []
    for name in dir(mod):
        obj = getattr(mod, name)
        if name.startswith("_") or type(obj).__name__ == "PytestTester":
            continue          # numpy.test, numpy.<sub>.test: NumPy's own test runners
        if isinstance(obj, type(sys)) and not obj.__name__.startswith(mod.__name__ + "."):
            continue
        names.append(name)
    return names


def test_every_public_numpy_name_exists_in_minpy():
    print("\nNumPy names minpy does not offer (besides numpy.test, numpy.<module>.test: "
          "NumPy's own test runners):")
    for (mod, name), why in sorted(NAME_EXCLUSIONS.items()):
        print(f"  {mod}.{name}: {why}")
    missing = []
    for theirs, mine in _numpy_modules():
        for name in _public_names(theirs):
            if not hasattr(mine, name) and (theirs.__name__, name) not in NAME_EXCLUSIONS:
                missing.append(f"{theirs.__name__}.{name}")
    assert not missing, f"NumPy names missing in minpy (add them, or to NAME_EXCLUSIONS " \
                        f"with a reason): {missing}"


def test_name_exclusions_are_live():
    for mod_name, name in NAME_EXCLUSIONS:
        mod = dict((t.__name__, t) for t, _ in _numpy_modules())[mod_name]
        assert name in _public_names(mod), f"{mod_name}.{name} is no longer NumPy's"
