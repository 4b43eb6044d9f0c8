"""minpy.core.exact_forms: NumPy's algorithms written in array calls answer bit for bit
as NumPy's loops (signed zeros, NaN and infinities included), run here with NumPy as
the array module. (That the GPU path takes them: the ufunc tests on the stand-in, whose
kernels answer as CuPy's.)"""
import itertools
import warnings

import numpy
import pytest
from hypothesis import example, given, strategies as st

from minpy.core.exact_forms import FORMS

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 7.0, 1.6e-24, 111.0, 5.4e16, -5.9e16,
            3.4e38, 1e300, numpy.inf, -numpy.inf, numpy.nan]

floats = st.one_of(st.sampled_from(_SPECIAL), st.floats(allow_subnormal=False))
REAL = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]


def _bits_equal(got, exp):
    got, exp = numpy.asarray(got), numpy.asarray(exp)
    assert got.dtype == exp.dtype and got.shape == exp.shape
    if exp.dtype.kind not in "fc":
        numpy.testing.assert_array_equal(got, exp)
        return
    pairs = [(got.real, exp.real), (got.imag, exp.imag)] if exp.dtype.kind == "c" else [
        (got, exp)]
    for g, e in pairs:
        same = (numpy.isnan(g) & numpy.isnan(e)) | ((g == e) & (
            numpy.signbit(g) == numpy.signbit(e)))
        assert same.all(), (g[~same], e[~same])


def _run(name, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with numpy.errstate(all="ignore"):
            exp = getattr(numpy, name)(*args, **kw)
        got = FORMS[name](numpy, getattr(numpy, name), *args, **kw)
    for g, e in zip(got, exp) if name == "divmod" else [(got, exp)]:
        _bits_equal(g, e)


def _grid(dtype, values):
    pairs = numpy.array(list(itertools.product(values, values)))
    return pairs[:, 0].astype(dtype), pairs[:, 1].astype(dtype)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "divmod"])
def test_real_division_on_every_pair_of_special_values(name, dtype):
    with numpy.errstate(all="ignore"):
        _run(name, *_grid(dtype, _SPECIAL))


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "divmod"])
@given(x=st.lists(floats, min_size=1, max_size=6), y=floats,
       dtype=st.sampled_from(REAL))
@example(x=[111.0], y=1.6e-24, dtype="float32")        # CuPy: every digit wrong
@example(x=[111.0, -2.0], y=-numpy.inf, dtype="float32")   # CuPy: NaN
@example(x=[0.18181818181818182], y=0.18181818181818182, dtype="float16")  # y: float16 first
def test_real_division_hypothesis(name, x, y, dtype):
    with numpy.errstate(all="ignore"):
        a = numpy.array(x).astype(dtype)
        _run(name, a, numpy.array(y).astype(dtype))
        _run(name, a, y)                       # a weak Python scalar


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_integer_fmod_on_every_pair(dtype):
    info = numpy.iinfo(dtype)
    vals = [v for v in (0, 1, -1, 2, 3, -5, 7, -128, 127, 2**62, -2**63, 2**63 - 1)
            if info.min <= v <= info.max] + [info.max, info.max - 2]
    with numpy.errstate(all="ignore"):
        _run("fmod", *_grid(dtype, vals))
        _run("fmod", numpy.array(vals, dtype), 3)


def test_integer_fmod_of_a_big_unsigned_is_exact():
    _run("fmod", numpy.array([2**64 - 3], numpy.uint64), numpy.array([2], numpy.uint64))


def _complex_values():
    parts = _SPECIAL[::2] + [numpy.nan]
    return [complex(p, q) for p in parts for q in _SPECIAL[1::2]]


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["divide", "power", "float_power"])
def test_complex_binary_on_special_values(name, dtype):
    v = _complex_values()
    pairs = numpy.array(list(itertools.product(v, v[::3]))).astype(dtype)
    _run(name, pairs[:, 0].copy(), pairs[:, 1].copy())


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["reciprocal", "sign", "log2", "exp2"])
def test_complex_unary_on_special_values(name, dtype):
    _run(name, numpy.array(_complex_values()).astype(dtype))


@pytest.mark.parametrize("exponent", [0, 0.0, 1, 2, 3, 4, -1, -2, 5, -7, 99, 100, -100,
                                      2.5, 1j, -0.5 + 2j, numpy.float64(3),
                                      numpy.complex64(2), numpy.nan, numpy.inf])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_power_of_one_exponent(exponent, dtype):
    x = numpy.array([complex(p, q) for p in _SPECIAL for q in _SPECIAL[::2]]).astype(dtype)
    _run("power", x, exponent)
    _run("float_power", x, exponent)


@given(re=st.lists(floats, min_size=2, max_size=2), im=st.lists(floats, min_size=2,
                                                                 max_size=2),
       dtype=st.sampled_from(COMPLEX), name=st.sampled_from(["divide", "power"]))
@example(re=[-4.7e79, 3.67e16], im=[-1.78e52, 0.1176], dtype="complex128", name="power")
def test_complex_binary_hypothesis(re, im, dtype, name):
    z = (numpy.array(re) + 1j * numpy.array(im)).astype(dtype)
    _run(name, z[:1], z[1:])
    _run(name, z[:1], complex(z[1]))


def test_scalar_divisor_keeps_the_array_precision():
    z = numpy.array([numpy.inf + 2j, 1 - 1j], numpy.complex64)
    _run("divide", z, 1 - 2j)
    _run("divide", 3, z)


def test_out_is_written_and_returned():
    x = numpy.array([1.5, -2.0, numpy.inf], numpy.float32)
    out = numpy.empty(3, numpy.float32)
    assert FORMS["remainder"](numpy, numpy.remainder, x, 0.7, out=out) is out
    _bits_equal(out, numpy.remainder(x, 0.7))
    q, r = numpy.empty(3), numpy.empty(3)
    FORMS["divmod"](numpy, numpy.divmod, x, 0.7, out=(q, r))
    _bits_equal(q, numpy.divmod(x, 0.7)[0].astype(numpy.float64))


def test_other_keywords_go_to_the_host():
    from minpy.dispatch.backend import NeedsHost
    with pytest.raises(NeedsHost, match="remainder"):
        FORMS["remainder"](numpy, numpy.remainder, numpy.ones(2), 0.5, where=True)


def test_dtypes_the_backend_answers_go_to_its_own_function():
    calls = []

    def plain(*a, **k):
        calls.append(a)
        return numpy.remainder(*a, **k)
    FORMS["remainder"](numpy, plain, numpy.arange(4), 3)
    FORMS["divide"](numpy, plain, numpy.ones(2, numpy.float32), 2.0)
    assert len(calls) == 2


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16", "int32"])
def test_small_integer_lcm_wraps_as_numpy(dtype):
    info = numpy.iinfo(dtype)
    v = numpy.arange(info.min, info.max + 1, max(1, (info.max - info.min) // 200)).astype(dtype)
    _run("lcm", *_grid(dtype, v))
    _run("lcm", numpy.array([13], dtype), numpy.array([11], dtype))
