"""minpy.fusion.vmath: ulp error against NumPy and float64, special values,
vectorisation, and its use inside fused kernels."""
import re

import numpy
import pytest

numba = pytest.importorskip("numba")

from minpy.fusion import cpu as fusion   # noqa: E402
from minpy.fusion import vmath           # noqa: E402

F32, F64 = numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)
#: stated bounds, in ulp (measured here: float32 0.503 exp, 0.0 log, 0.502 tanh from
#: the correctly rounded value).  float32: against the true value (NumPy's
#: float64 result), i.e. correctly rounded but for 0.01 ulp; and against NumPy's
#: float32 ufuncs, whose own errors are larger (measured: exp 2.3, log 3.1, tanh
#: 1.4 ulp from the true value).  float64: against NumPy's float64 ufuncs.
BOUND_F32_TRUE = 0.51
BOUND_F32_NUMPY = {"exp": 2.0, "log": 3.0, "tanh": 1.0}
BOUND_F64_NUMPY = {"exp": 1.0, "log": 1.0, "tanh": 2.0}


# each module compiles into a cache folder of its own (tests/fusion/conftest.py)
pytestmark = pytest.mark.usefixtures("module_cache_dir")


_loops = {}


def loop(name, dtype):
    """A numba loop applying vmath's ``name`` for ``dtype`` elementwise."""
    key = (name, dtype)
    if key not in _loops:
        f = getattr(vmath, f"{name}_{'f32' if dtype == F32 else 'f64'}")

        @numba.njit    # numba's default error_model: vmath must vectorise under it too
        def run(x, out):
            for i in range(x.shape[0]):
                out[i] = f(x[i])
        _loops[key] = run
    return _loops[key]


def apply(name, x):
    out = numpy.empty_like(x)
    loop(name, x.dtype)(x, out)
    return out


def ulp_error(got, ref, dtype):
    """|got - ref| in ulp of ``dtype`` at ``ref`` (float64 arrays); 0 where both are
    the same non-finite value or both NaN; inf where one is NaN and the other not."""
    with numpy.errstate(all="ignore"):
        got, ref = got.astype(numpy.float64), ref.astype(numpy.float64)
    with numpy.errstate(all="ignore"):
        rr = ref.astype(dtype)
    # equal to the reference rounded to dtype (this covers overflow to inf)
    same = (got == ref) | (got == rr) | (numpy.isnan(got) & numpy.isnan(ref))
    sp = numpy.spacing(numpy.abs(rr)).astype(numpy.float64)
    with numpy.errstate(all="ignore"):
        err = numpy.abs(got - ref) / sp
    err[same] = 0
    err[numpy.isnan(err)] = numpy.inf
    return err


def f32_samples(stride=257):
    """Every ``stride``-th float32 bit pattern (all exponents, both signs, NaNs,
    subnormals) plus the neighbourhood of the specials: ~17M values."""
    bits = numpy.arange(0, 1 << 32, stride, dtype=numpy.uint64).astype(numpy.uint32)
    x = bits.view(numpy.float32)
    extra = numpy.array([0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan, 1.0, -1.0,
                         88.72283, 88.72284, -87.33655, -103.972, -103.973, -104.0,
                         1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, 1e-30, -1e-30,
                         0.3, -0.3, 0.29999998, 9.0, 10.0, 20.0], numpy.float32)
    return numpy.concatenate([x, extra])


@pytest.mark.parametrize("name", ["exp", "log", "tanh"])
def test_float32_dense_ulp(name):
    x = f32_samples()
    got = apply(name, x)
    with numpy.errstate(all="ignore"):
        true = getattr(numpy, name)(x.astype(numpy.float64))
        ref32 = getattr(numpy, name)(x)
        true32 = true.astype(numpy.float32)
    e_true = ulp_error(got, true, F32)
    e_np = ulp_error(got, ref32.astype(numpy.float64), F32)
    # the true value overflows float32 exactly where vmath gives inf
    assert numpy.array_equal(numpy.isinf(got), numpy.isinf(true32))
    assert numpy.array_equal(numpy.isnan(got), numpy.isnan(true32))
    worst = int(numpy.argmax(e_true))
    assert e_true.max() <= BOUND_F32_TRUE, (name, x[worst], got[worst], true[worst])
    worst = int(numpy.argmax(e_np))
    assert e_np.max() <= BOUND_F32_NUMPY[name], (name, x[worst], got[worst], ref32[worst])


def f64_samples(name, n=1 << 20):
    rng = numpy.random.default_rng(7)
    bits = rng.integers(0, 1 << 64, n, dtype=numpy.uint64, endpoint=False)
    x = bits.view(numpy.float64)                     # every exponent, NaNs, subnormals
    lo, hi = {"exp": (-760, 720), "log": (0, 4), "tanh": (-25, 25)}[name]
    dense = rng.uniform(lo, hi, n)
    small = rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-20, 0, n)
    return numpy.concatenate([x, dense, small, [0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan,
                                                709.78, 709.79, -745.13, -745.14, 5e-324,
                                                2.2250738585072014e-308, 1e308]])


@pytest.mark.parametrize("name", ["exp", "log", "tanh"])
def test_float64_sampled_ulp(name):
    x = f64_samples(name)
    got = apply(name, x)
    with numpy.errstate(all="ignore"):
        ref = getattr(numpy, name)(x)
    err = ulp_error(got, ref, F64)
    worst = int(numpy.argmax(err))
    assert err.max() <= BOUND_F64_NUMPY[name], (name, x[worst], got[worst], ref[worst])


#: values whose results are exact in both dtypes (0, +-1, inf, NaN, or x itself)
SPECIALS = [0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan, 1e-40, -1e-40, 1000.0, -1000.0]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", ["exp", "log", "tanh"])
def test_special_values_as_numpy(name, dtype):
    x = numpy.array(SPECIALS, dtype)
    got = apply(name, x)
    with numpy.errstate(all="ignore"):
        want = getattr(numpy, name)(x)
    # exact, including the sign of zero (NaN's sign is not specified)
    numpy.testing.assert_array_equal(got, want)
    num = ~numpy.isnan(want)
    numpy.testing.assert_array_equal(numpy.signbit(got[num]), numpy.signbit(want[num]))


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", ["exp", "log", "tanh"])
def test_loop_vectorises_without_libm_calls(name, dtype):
    fn = loop(name, dtype)
    x = numpy.ones(16, dtype)
    fn(x, numpy.empty_like(x))
    asm = "\n".join(fn.inspect_asm().values())
    packed = re.findall(r"\b(?:v?mulpd|v?addpd|vfn?m(?:add|sub)\d+pd)\b", asm)
    assert len(packed) >= 4, f"{name} {dtype}: no packed float64 arithmetic in the loop"
    assert not re.search(rf"\b{name}f?\b", re.sub(r"^\s*[.#].*$", "", asm, flags=re.M)), \
        f"{name} {dtype}: the loop calls libm"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_kernel_uses_vmath(dtype):
    # tanh(a*b+c)*0.5 + sigmoid(a) + log(b) + exp(c) in one numba loop
    p = fusion.Program(3, [("multiply", (("in", 0), ("in", 1))), ("add", (("t", 0), ("in", 2))),
                           ("tanh", (("t", 1),)), ("multiply", (("t", 2), ("c", 0.5))),
                           ("sigmoid", (("in", 0),)), ("add", (("t", 3), ("t", 4))),
                           ("log", (("in", 1),)), ("add", (("t", 5), ("t", 6))),
                           ("exp", (("in", 2),)), ("add", (("t", 7), ("t", 8)))], [("t", 9)])
    n = 4099
    rng = numpy.random.default_rng(3)
    a, c = ((rng.random(n) * 8 - 4).astype(dtype) for _ in range(2))
    b = (rng.random(n) * 3).astype(dtype)
    b[:3] = [0.0, numpy.nan, -1.0]
    k = fusion.compile_program(p, [dtype] * 3, [(n,)] * 3, (n,))
    assert len(k._c.order) == 1
    suffix = "f32" if dtype == "float32" else "f64"
    for fn in ("tanh", "exp", "log"):
        assert f"_vm.{fn}_{suffix}(" in k.source
    out = numpy.empty(n, dtype)
    k([a, b, c], [out])
    want = numpy.empty(n, dtype)
    with numpy.errstate(all="ignore"):
        fusion.evaluate(p, [a, b, c], numpy, [want])
    numpy.testing.assert_array_equal(numpy.isnan(out), numpy.isnan(want))
    numpy.testing.assert_array_equal(numpy.isinf(out), numpy.isinf(want))
    fin = numpy.isfinite(want)
    tol = 1e-5 if dtype == "float32" else 1e-13
    numpy.testing.assert_allclose(out[fin], want[fin], rtol=tol, atol=tol)


def test_other_transcendentals_and_float16_stay_numpy_side():
    p = fusion.Program(1, [("sin", (("in", 0),)), ("exp", (("t", 0),))], [("t", 1)])
    k = fusion.compile_program(p, ["float32"], [(8,)], (8,))
    assert [lv.numba for lv in k._c.order] == [False, True]
    k16 = fusion.compile_program(fusion.Program(1, [("exp", (("in", 0),))], [("t", 0)]),
                                 ["float16"], [(8,)], (8,))
    assert "_vm." not in k16.source
    x = numpy.linspace(-3, 3, 8).astype(numpy.float16)
    out = numpy.empty(8, numpy.float16)
    k16([x], [out])
    numpy.testing.assert_array_equal(out, numpy.exp(x))
