"""minpy.core.exact_kernels: the CUDA kernels' very source, compiled by the host's C++
compiler (``__device__`` empty, std::complex for CuPy's complex), answers as NumPy's
loops bit for bit. The device compiles the same text with ``--fmad=false``; the host
build has no contraction either (``-ffp-contract=off``)."""
import ctypes
import itertools
import shutil
import subprocess

import numpy
import pytest

from minpy.core.exact_kernels import KERNELS, PREAMBLE

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

_CTYPES = {"float32": "float", "float64": "double", "int8": "int8_t", "int32": "int32_t",
           "int64": "int64_t", "uint8": "uint8_t", "uint64": "uint64_t",
           "complex64": "complex<float>", "complex128": "complex<double>"}
_CASES = {"floor_divide": ("float32", "float64"), "remainder": ("float32", "float64"),
          "divmod": ("float32", "float64"),
          "fmod": ("int8", "int32", "int64", "uint8", "uint64"),
          "divide": ("complex64", "complex128"), "reciprocal": ("complex64", "complex128")}


def _names(params):
    return [p.split()[1] for p in params.split(",")]


def _source():
    lines = ["#include <cmath>", "#include <complex>", "#include <cstdint>",
             "using namespace std;", "#define __device__", PREAMBLE]
    for name, dtypes in _CASES.items():
        ins, outs, body = KERNELS[name]
        for dt in dtypes:
            c = _CTYPES[dt]
            args = [f"const {c}* {n}_" for n in _names(ins)] + [f"{c}* {n}_" for n in
                                                                 _names(outs)]
            loads = " ".join(f"const T {n} = {n}_[i];" for n in _names(ins))
            refs = " ".join(f"T& {n} = {n}_[i];" for n in _names(outs))
            lines.append(f'extern "C" void k_{name}_{dt}({", ".join(args)}, long n) {{\n'
                         f"  typedef {_CTYPES[dt]} T;\n"
                         f"  for (long i = 0; i < n; i++) {{ {loads} {refs} {body} }}\n}}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler on this machine (g++ or c++)")
    d = tmp_path_factory.mktemp("exact_kernels")
    (d / "k.cpp").write_text(_source())
    subprocess.run([cxx, "-O2", "-ffp-contract=off", "-shared", "-fPIC", "-o",
                    str(d / "k.so"), str(d / "k.cpp")], check=True, capture_output=True)
    return ctypes.CDLL(str(d / "k.so"))


def _run_kernel(lib, name, dt, *ins):
    nout = len(_names(KERNELS[name][1]))
    ins = [numpy.ascontiguousarray(x, dtype=dt) for x in ins]
    outs = [numpy.empty_like(ins[0]) for _ in range(nout)]
    fn = getattr(lib, f"k_{name}_{dt}")
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in ins + outs], ctypes.c_long(ins[0].size))
    return outs[0] if nout == 1 else tuple(outs)


def _bits_equal(got, exp):
    assert got.dtype == exp.dtype
    if exp.dtype.kind not in "fc":
        numpy.testing.assert_array_equal(got, exp)
        return
    for g, e in ([(got.real, exp.real), (got.imag, exp.imag)] if exp.dtype.kind == "c"
                 else [(got, exp)]):
        same = (numpy.isnan(g) & numpy.isnan(e)) | ((g == e) & (
            numpy.signbit(g) == numpy.signbit(e)))
        assert same.all(), (g[~same], e[~same])


_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 7.0, 1.6e-24, 111.0, 5.4e16, -5.9e16,
            3.4e38, 1e300, numpy.inf, -numpy.inf, numpy.nan]


def _pairs(values, dt, rng_values=0):
    vals = list(values)
    if rng_values:
        r = numpy.random.default_rng(0)
        vals += list(r.standard_normal(rng_values) * 10.0 ** r.integers(-30, 30, rng_values))
    p = numpy.array(list(itertools.product(vals, vals)))
    with numpy.errstate(all="ignore"):
        return p[:, 0].astype(dt), p[:, 1].astype(dt)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "divmod"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_real_division_kernels_are_numpys(lib, name, dt):
    x, y = _pairs(_SPECIAL, dt, rng_values=40)
    with numpy.errstate(all="ignore"):
        exp = getattr(numpy, name)(x, y)
    got = _run_kernel(lib, name, dt, x, y)
    for g, e in zip(got, exp) if name == "divmod" else [(got, exp)]:
        _bits_equal(g, e)


@pytest.mark.parametrize("dt", _CASES["fmod"])
def test_integer_fmod_kernel_is_numpys(lib, dt):
    info = numpy.iinfo(dt)
    vals = [v for v in (0, 1, -1, 2, 3, -5, 7, -128, 127, 2**62, -2**63)
            if info.min <= v <= info.max] + [info.min, info.max, info.max - 2]
    x, y = _pairs(vals, dt)
    with numpy.errstate(all="ignore"):
        _bits_equal(_run_kernel(lib, "fmod", dt, x, y), numpy.fmod(x, y))


def _complex(dt, n_random=30):
    parts = _SPECIAL[::2] + [numpy.nan]
    vals = [complex(p, q) for p in parts for q in _SPECIAL[1::2]]
    r = numpy.random.default_rng(1)
    vals += list((r.standard_normal(n_random) + 1j * r.standard_normal(n_random))
                 * 10.0 ** r.integers(-20, 20, n_random))
    with numpy.errstate(all="ignore"):
        return numpy.array(vals).astype(dt)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_divide_kernel_is_numpys(lib, dt):
    v = _complex(dt)
    p = numpy.array(list(itertools.product(v, v[::2])))
    x, y = p[:, 0].astype(dt), p[:, 1].astype(dt)
    with numpy.errstate(all="ignore"):
        _bits_equal(_run_kernel(lib, "divide", dt, x, y), numpy.divide(x, y))


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_reciprocal_kernel_is_numpys(lib, dt):
    v = _complex(dt)
    with numpy.errstate(all="ignore"):
        _bits_equal(_run_kernel(lib, "reciprocal", dt, v), numpy.reciprocal(v))


def test_every_kernel_is_checked_here():
    assert set(_CASES) == set(KERNELS)
