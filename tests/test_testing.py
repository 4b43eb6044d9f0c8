"""minpy.testing: numpy.testing's names on minpy Arrays, the numpy/minpy decorators, the
array API strategies over minpy, and the docs page (docs/tutorials/testing.md) running as
written."""
import inspect
import pathlib
import re
import subprocess
import sys

import numpy
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.extra.array_api import make_strategies_namespace

import minpy
import minpy.testing as mt
from minpy.testing import check_grads, numpy_minpy_allclose, numpy_minpy_array_equal
from _standin import standin_gpu  # noqa: F401  (fixture)

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "tutorials" / "testing.md"
FAST = settings(max_examples=15, derandomize=True, database=None, deadline=None)


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


# ----------------------------------------------------------------- numpy.testing's names
def test_every_numpy_testing_name_is_in_minpy_testing():
    missing = _public(numpy.testing) - _public(mt)
    assert not missing, f"minpy.testing lacks numpy.testing's {sorted(missing)}"
    for name in _public(numpy.testing):
        assert getattr(mt, name) is not None
    with pytest.raises(AttributeError, match="minpy.testing"):
        mt.no_such_name


def test_every_public_function_has_a_docstring():
    for name in mt.__all__:
        obj = getattr(mt, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), name


def test_minpy_testing_is_the_module_after_import_minpy():
    code = ("import sys, minpy, numpy\n"
            "t = minpy.testing\n"
            "assert t is sys.modules['minpy.testing'], t\n"
            "from minpy import testing\n"
            "assert testing is t\n"
            "t.assert_array_equal(minpy.arange(3), numpy.arange(3))\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# (function name, arguments that pass, arguments that fail) on host data
CASES = [
    ("assert_equal", ([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5])),
    ("assert_array_equal", ([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5])),
    ("assert_almost_equal", ([1.0, 2.0], [1.0, 2.0 + 1e-9]), ([1.0, 2.0], [1.0, 2.1])),
    ("assert_array_almost_equal", ([1.0, 2.0], [1.0, 2.0 + 1e-9]), ([1.0, 2.0], [1.0, 2.1])),
    ("assert_approx_equal", (3.0, 3.0 + 1e-9), (3.0, 3.1)),
    ("assert_array_less", ([1.0, 2.0], [2.0, 3.0]), ([1.0, 2.0], [2.0, 2.0])),
    ("assert_array_max_ulp", ([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5])),
    ("assert_array_almost_equal_nulp", ([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5])),
]


def _as(kind, args):
    out = []
    for a in args:
        if kind == "numpy" or isinstance(a, float):
            out.append(numpy.asarray(a) if kind == "numpy" else a)
        else:
            out.append(minpy.array(a))
    return out


@pytest.mark.parametrize("name,good,bad", CASES, ids=[c[0] for c in CASES])
def test_assertions_accept_minpy_arrays_with_numpys_messages(name, good, bad):
    ours, theirs = getattr(mt, name), getattr(numpy.testing, name)
    ours(*_as("minpy", good))
    with pytest.raises(AssertionError) as ours_err:
        ours(*_as("minpy", bad))
    with pytest.raises(AssertionError) as theirs_err:
        theirs(*_as("numpy", bad))
    assert str(ours_err.value) == str(theirs_err.value)
    assert inspect.signature(ours) == inspect.signature(theirs)


def test_assertions_reach_inside_containers_and_devices(standin_gpu):
    with minpy.gpu(1):
        x = minpy.arange(4.0)
    mt.assert_equal({"x": (x, [x])}, {"x": (numpy.arange(4.0), [numpy.arange(4.0)])})
    mt.assert_array_equal(x, numpy.arange(4.0))
    mt.assert_allclose(x, numpy.arange(4.0))
    mt.assert_(minpy.all(x >= 0))
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        mt.assert_array_equal(x, numpy.arange(1.0, 5.0))


@FAST
@given(hnp.arrays(st.sampled_from([numpy.float32, numpy.float64, numpy.int64]),
                  hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                  elements=st.integers(-100, 100)))
def test_array_equal_matches_numpy_over_shapes_and_dtypes(h):
    mt.assert_array_equal(minpy.array(h), h, strict=True)
    if h.size:
        bumped = h.copy()
        bumped.flat[0] += 1
        with pytest.raises(AssertionError):
            mt.assert_array_equal(minpy.array(h), bumped)


def test_allclose_is_numpys_and_assert_close_is_stricter():
    y = minpy.ones(3, dtype=numpy.float32)
    mt.assert_allclose(y, 1.0)                     # NumPy's: broadcasting, no dtype check
    mt.assert_allclose(y, numpy.ones(3))
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        mt.assert_allclose(y, 1.001)
    with pytest.raises(AssertionError):
        mt.assert_allclose(y, numpy.ones(3), strict=True)   # NumPy's strict: dtypes differ
    with pytest.raises(AssertionError, match="dtype float32 != float64"):
        mt.assert_close(y, numpy.ones(3))
    with pytest.raises(AssertionError, match=r"shape \(3,\) != \(\)"):
        mt.assert_close(y, numpy.float32(1))
    mt.assert_close(y, numpy.ones(3), check_dtype=False)


def test_raises_and_warns_are_numpys():
    assert mt.assert_raises is numpy.testing.assert_raises
    assert mt.suppress_warnings is numpy.testing.suppress_warnings
    with mt.assert_raises(ValueError):
        minpy.reshape(minpy.arange(6), (4, 4))
    with pytest.raises(AssertionError):
        with mt.assert_raises(ValueError):
            minpy.reshape(minpy.arange(6), (3, 2))


# ------------------------------------------------------------------- the decorators
@numpy_minpy_allclose(rtol=1e-12)
def test_decorated_matches(xp):
    x = xp.linspace(0.0, 1.0, 7).reshape(7, 1)
    return xp.sin(x) @ x.T, [xp.argmax(x), {"n": x.size, "s": xp.sum(x)}], None


@pytest.fixture
def offset():
    return 2.0


@pytest.mark.parametrize("n", [1, 4])
@numpy_minpy_allclose()
def test_decorated_with_fixture_and_parametrize(xp, n, offset):
    return xp.arange(n, dtype=xp.float32) + offset


@FAST
@given(x=hnp.arrays(numpy.float64, hnp.array_shapes(max_dims=2, max_side=4),
                    elements=st.floats(-5, 5)))
@numpy_minpy_allclose(rtol=1e-12)
def test_decorated_under_given(xp, x):
    return xp.cumsum(xp.asarray(x) ** 2, axis=-1)


def test_decorated_signature_hides_xp():
    sig = inspect.signature(test_decorated_with_fixture_and_parametrize)
    assert list(sig.parameters) == ["n", "offset"]
    with pytest.raises(TypeError, match="'xp' argument"):
        numpy_minpy_allclose()(lambda x: x)


def _minpy(xp):
    return xp is minpy.numpy


@pytest.mark.parametrize("body,match", [
    (lambda xp: xp.arange(3.0) + _minpy(xp), r"t with xp=minpy on cpu\(0\)"),
    (lambda xp: xp.arange(3, dtype=xp.float32 if _minpy(xp) else xp.float64), "dtypes differ"),
    (lambda xp: xp.zeros((2, 3) if _minpy(xp) else (3, 2)), "shapes differ"),
    (lambda xp: (xp.zeros(2),) if _minpy(xp) else [xp.zeros(2)], "minpy a tuple"),
    (lambda xp: (1, 2) if _minpy(xp) else (1, 2, 3), "a tuple of 3, minpy a tuple of 2"),
    (lambda xp: {"a": 1} if _minpy(xp) else {"b": 1}, "keys"),
    (lambda xp: None if _minpy(xp) else 1.0, "minpy NoneType"),
], ids=["values", "dtype", "shape", "container", "length", "keys", "none"])
def test_decorator_fails_when_minpy_differs(body, match):
    def t(xp):
        return body(xp)
    with pytest.raises(AssertionError, match=match):
        numpy_minpy_allclose()(t)()
    with pytest.raises(AssertionError, match=match):
        numpy_minpy_array_equal()(t)()


def test_decorator_tolerances_and_type_check():
    def t(xp):
        return xp.ones(3, dtype=xp.float32 if _minpy(xp) else xp.float64) * (1 + 1e-6 * _minpy(xp))
    numpy_minpy_allclose(rtol=1e-5, type_check=False)(t)()
    numpy_minpy_allclose(rtol={numpy.float64: 1e-5, "default": 0}, type_check=False)(t)()
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        numpy_minpy_allclose(rtol={numpy.float32: 1e-5, "default": 1e-9}, type_check=False)(t)()
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        numpy_minpy_array_equal(type_check=False)(t)()


def _raiser(numpy_error, minpy_error):
    def t(xp):
        err = minpy_error if _minpy(xp) else numpy_error
        if err is not None:
            raise err("boom")
        return xp.zeros(1)
    return t


def test_decorator_compares_errors():
    numpy_minpy_allclose(accept_error=True)(_raiser(ValueError, ValueError))()
    numpy_minpy_allclose(accept_error=ValueError)(_raiser(ValueError, ValueError))()
    # minpy's error must be catchable as NumPy's
    numpy_minpy_allclose(accept_error=True)(_raiser(ValueError, numpy.exceptions.AxisError))()
    with pytest.raises(ValueError, match="boom"):      # not accepted: the error stands
        numpy_minpy_allclose()(_raiser(ValueError, ValueError))()
    with pytest.raises(ValueError, match="boom"):
        numpy_minpy_allclose(accept_error=TypeError)(_raiser(ValueError, ValueError))()
    with pytest.raises(AssertionError, match="only minpy raised .*ValueError: boom"):
        numpy_minpy_allclose(accept_error=True)(_raiser(None, ValueError))()
    with pytest.raises(AssertionError, match="only numpy raised .*TypeError: boom"):
        numpy_minpy_allclose(accept_error=True)(_raiser(TypeError, None))()
    with pytest.raises(AssertionError, match="numpy raised .*AxisError.*minpy raised .*Value"):
        numpy_minpy_allclose(accept_error=True)(
            _raiser(numpy.exceptions.AxisError, ValueError))()


def test_decorator_runs_on_every_device(standin_gpu):
    seen = []

    @numpy_minpy_array_equal()
    def t(xp):
        seen.append((xp.__name__, str(minpy.current_context())))
        x = xp.arange(4.0)
        if _minpy(xp):
            assert str(x.context) == seen[-1][1]
        return x * 2

    t()
    assert seen == [("numpy", "cpu(0)"), ("minpy.numpy", "cpu(0)"),
                    ("minpy.numpy", "gpu(0)"), ("minpy.numpy", "gpu(1)")]

    @numpy_minpy_allclose()
    def only_gpu1_differs(xp):
        x = xp.arange(3.0)
        return x + 1 if _minpy(xp) and minpy.current_context() == minpy.gpu(1) else x

    with pytest.raises(AssertionError, match="on gpu\\(1\\)"):
        only_gpu1_differs()


# --------------------------------------------------------- strategies and check_grads
XPS = make_strategies_namespace(minpy)


@FAST
@given(XPS.arrays(dtype=XPS.real_dtypes(), shape=XPS.array_shapes(max_dims=3, max_side=4)))
def test_array_api_strategies_over_minpy(x):
    assert isinstance(x, minpy.Array)
    h = x.asnumpy()
    mt.assert_array_equal(minpy.flip(x, axis=None), numpy.flip(h, axis=None))


def test_check_grads_on_a_users_function():
    def layer(w, x):
        return minpy.tanh(x @ w).sum(axis=0)
    check_grads(layer, minpy.ones((3, 2)) * 0.3, minpy.linspace(-1.0, 1.0, 12).reshape(4, 3))
    with pytest.raises(AssertionError, match="check_grads.*argument 0"):
        check_grads(lambda x: x * minpy.stop_gradient(x), minpy.array([0.5, 1.5]), order=1)


# ---------------------------------------------------------- docs/tutorials/testing.md
def _blocks():
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)


def test_docs_page_has_blocks():
    assert len(_blocks()) >= 6


@pytest.mark.parametrize("i", range(len(_blocks())))
def test_docs_block_runs(i):
    code = _blocks()[i]
    exec(compile(code, f"{DOCS}:block{i}", "exec"), {"__name__": f"docs_testing_{i}"})
