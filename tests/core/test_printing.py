"""Printing: a host Array's repr, str and format are NumPy's, character for character.

Host arrays are made with ``ctx=mp.cpu()`` and computed on under ``only_cpu``, so these
hold on the stand-in and real GPU passes too.
"""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy as mp
from _standin import installed
from _strategies import ALL_DTYPES, FLOATS, INTS, COMPLEX, arrays

CPU = mp.cpu()
HOST_ONLY = mp.policy("only_cpu")     # results of host arrays stay on the host under any policy


def host(h):
    return mp.array(h, ctx=CPU)


def assert_prints_as(x, h):
    """``x`` prints as NumPy's ``h`` on its own and inside containers."""
    assert repr(x) == repr(h)
    assert str(x) == str(h)
    assert format(x) == format(h) and f"{x}" == f"{h}" and f"{x!r}" == f"{h!r}"
    assert repr((x,)) == repr((h,))
    assert str([x, x]) == str([h, h])
    assert repr({"k": x}) == repr({"k": h})


# NumPy's print options, drawn: summarising (threshold, edgeitems), precision, layout
print_options = st.fixed_dictionaries({}, optional={
    "precision": st.integers(0, 10),
    "threshold": st.integers(0, 30),
    "edgeitems": st.integers(1, 3),
    "linewidth": st.integers(10, 100),
    "suppress": st.booleans(),
    "sign": st.sampled_from(["-", "+", " "]),
    "floatmode": st.sampled_from(["fixed", "unique", "maxprec", "maxprec_equal"]),
})


@given(arrays(ALL_DTYPES, max_dims=3, max_side=5), print_options)
def test_host_arrays_print_as_numpy(h, options):
    with numpy.printoptions(**options):
        assert_prints_as(host(h), h)


@given(arrays(FLOATS + INTS + COMPLEX, shape=()), st.sampled_from([".3f", "e", ">12.2g", ""]))
def test_0d_format_specs(h, spec):
    x = host(h)
    assert format(x, spec) == format(h, spec)
    assert f"{x:{spec}}" == f"{h:{spec}}"


@given(arrays(ALL_DTYPES, shape=(4,)), st.integers(-4, 3))
def test_scalar_results_print_as_numpy_scalars(h, i):
    x = host(h)
    with HOST_ONLY:
        assert_prints_as(x[i], h[i])             # np.float32(1.5), np.True_, ...
        assert_prints_as(x.sum(), h.sum())
        if h.dtype.kind in "fiu":
            assert format(x.max(), ".3f") == format(h.max(), ".3f")


@mp.policy("only_cpu")
def test_scalar_results_follow_print_options():
    x, h = host(numpy.arange(4.0) / 3), numpy.arange(4.0) / 3
    with numpy.printoptions(precision=2):        # a scalar ignores precision, a 0-d array not
        assert_prints_as(x.mean(), h.mean())
        assert_prints_as(mp.array(h.mean(), ctx=CPU), numpy.array(h.mean()))
    with numpy.printoptions(legacy="1.25"):      # NumPy 1's bare scalar reprs
        assert repr(x.sum()) == repr(h.sum()) == "2.0"


def test_global_set_printoptions_is_respected():
    h = numpy.linspace(0, 1, 7)
    saved = numpy.get_printoptions()
    try:
        numpy.set_printoptions(precision=2, linewidth=20)
        assert_prints_as(host(h), h)
        assert repr(host(h)).startswith("array([0.  , 0.17,")
    finally:
        numpy.set_printoptions(**saved)


@pytest.mark.parametrize("h", [
    numpy.arange(2000),                           # summarised with "..."
    numpy.arange(30000.0).reshape(100, 300) / 7,
    numpy.zeros((2, 0)), numpy.zeros(0, numpy.int8), numpy.array(3.5), numpy.array(-0.0),
    numpy.array([1 + 2j, numpy.nan, -numpy.inf]), numpy.array([True, False]),
    numpy.array([(1, 2.5), (3, -1.0)], dtype=[("a", "i4"), ("b", "f8")]),
    numpy.array(["2020-01-01", "NaT"], dtype="datetime64[D]"),
    numpy.array([1, 2], dtype="timedelta64[s]"),
    numpy.array(["ab", "c"]), numpy.array([1, 2], dtype=numpy.uint16),
    numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4),
])
def test_dtypes_and_shapes_print_as_numpy(h):
    assert_prints_as(host(h), h)


@mp.policy("only_cpu")
def test_examples():
    assert repr((mp.array([0, 1, 4], ctx=CPU),)) == "(array([0, 1, 4]),)"
    assert repr(mp.array([1, 2], dtype=numpy.int8, ctx=CPU)) == "array([1, 2], dtype=int8)"
    assert "..." in repr(mp.arange(2000, ctx=CPU))
    assert repr(mp.arange(3, ctx=CPU).sum()) == "np.int64(3)"


# ------------------------------------------------------------------ devices
def test_device_arrays_show_their_device():
    h = numpy.arange(6.0).reshape(2, 3)
    with installed(), mp.gpu(0):
        x = mp.array(h)
        assert repr(x) == "array([[0., 1., 2.],\n       [3., 4., 5.]], device=gpu(0))"
        assert str(x) == str(h) and format(x) == format(h)
        assert repr(mp.array([1, 2], dtype=numpy.int8)) == "array([1, 2], dtype=int8, device=gpu(0))"
        assert repr(x.sum()) == "np.float64(15.0, device=gpu(0))"
        assert str(x.sum()) == "15.0" and format(x.sum(), ".2f") == "15.00"
        with numpy.printoptions(legacy="1.25"):
            assert repr(x.sum()) == "15.0 (device=gpu(0))"
        again = eval(repr(x), {"array": mp.array, "gpu": mp.gpu})   # the repr recreates it
        assert again.context == mp.gpu(0)
        numpy.testing.assert_array_equal(again.asnumpy(), h)


# ------------------------------------------------------------------ jit tracing
def test_traced_values_never_print_as_plain_values():
    seen = []

    @mp.jit
    def f(x):
        y = x * 2
        seen.append((repr(y), str(y), f"{y}", repr([y])))
        with pytest.raises(mp.JitTraceError):
            format(y, ".2f")                     # a spec needs the value, unknown here
        return y

    numpy.testing.assert_array_equal(f(mp.arange(3.0, ctx=CPU)).asnumpy(), [0.0, 2.0, 4.0])
    text = "Array(<traced by minpy.jit>, shape=(3,), dtype=float64)"
    assert seen[0] == (text, text, text, f"[{text}]")
