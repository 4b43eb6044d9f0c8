"""Branch-free ``exp``, ``log`` and ``tanh`` for numba loops that LLVM vectorises.

numba lowers ``np.exp``/``np.tanh`` inside a loop to scalar libm calls, which
do not vectorise (no SVML here: the pip llvmlite is not SVML-patched, see
``python -m numba -s``), so a fused kernel with ``tanh`` in it ran ~30x slower
than NumPy's SIMD ufunc.  These functions use only arithmetic, comparisons
(``a if c else b`` on already-computed values: LLVM selects), ``llvm.fmuladd``
(:func:`_fma`), division without numba's zero check (:func:`_div`) and
integer operations on the float's bits (:func:`_bits64`,
:func:`_float64`); numba inlines them (``inline="always"``) into the calling
loop, which LLVM then vectorises like plain arithmetic (packed AVX2/AVX-512 on
the test machine: ``tests/fusion/test_vmath.py`` checks the assembly).  No
``fastmath`` flags: NaN and inf handling stays exact.

Method: ``exp``: ``x = n ln2 + r``, ``|r| <= ln2/2`` (round by adding
``1.5 * 2**52``; ``ln2`` split hi/lo), Taylor polynomial of ``exp(r)``,
``2**n`` built from bits in two factors (one rounding, also for subnormal
results).  ``log``: ``x = 2**e m``, ``m`` in ``[sqrt(1/2), sqrt(2))``,
``log m = 2 atanh(s)``, ``s = (m-1)/(m+1)``, odd series.  ``tanh``: ``1 -
2/(exp(2|x|)+1)`` from 0.3, the Taylor series below (no cancellation).  The
float32 versions compute in float64 (shorter polynomials) and round once.

Accuracy (measured on every 257th float32 bit pattern and 3M float64 samples,
``tests/fusion/test_vmath.py``): float32 within 0.51 ulp of the true value
(correctly rounded but for a few cases within 0.01 ulp of a midpoint);
NumPy's own float32 ufuncs are up to 2.3 (exp), 3.1 (log), 1.4 (tanh) ulp off,
so results differ from NumPy's by up to 2, 3, 1 ulp.  float64: within 1 (exp,
log) and 2 (tanh) ulp of NumPy's.

Special values follow NumPy: ``exp``: NaN -> NaN, +inf -> inf, -inf -> 0,
overflow -> inf, underflow -> subnormal/0; ``log``: NaN -> NaN, x < 0 -> NaN
(NumPy's NaN has the sign bit set, these don't), +-0 -> -inf, +inf -> inf,
subnormals exact; ``tanh``: NaN -> NaN, +-inf -> +-1, -0 -> -0.  No
floating-point warnings are raised (numba kernels never raise them).

See also: ``minpy.fusion.cpu`` (emits calls to these into fused kernels).
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["exp_f64", "exp_f32", "log_f64", "log_f32", "tanh_f64", "tanh_f32"]


@intrinsic
def _bits64(typingctx, x):
    """The int64 whose bits are the float64 ``x`` (a bitcast, vectorisable)."""
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float64(typingctx, i):
    """The float64 whose bits are the int64 ``i``."""
    if i != types.int64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c``, fused where the CPU has FMA (``llvm.fmuladd``: one rounding
    there, two elsewhere), whatever the caller's fastmath flags."""
    if not (a == b == c == types.float64):
        return None

    def codegen(context, builder, sig, args):
        d = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d, [d, d, d]),
                                            "llvm.fmuladd.f64")
        return builder.call(fn, args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def _div(typingctx, a, b):
    """``a / b`` (same float type), IEEE, without the zero check numba's default
    ``error_model="python"`` adds (which would stop the loop vectorising)."""
    if not (a == b and isinstance(a, types.Float)):
        return None

    def codegen(context, builder, sig, args):
        return builder.fdiv(args[0], args[1])
    return a(a, a), codegen


# inlined by numba into every caller (a kernel loop), so that LLVM sees one loop
# body to vectorise, whatever its inlining heuristics would decide
_NJ = dict(nogil=True, cache=True, error_model="numpy", inline="always")
_CORE = _NJ


@njit(**_CORE)
def _exp_core(x):
    # x already clamped to [-746, 710] (NaN passes through)
    shift = 6755399441055744.0                       # 1.5 * 2**52: adding it rounds
    kd = x * 1.4426950408889634 + shift
    nf = kd - shift
    n = _bits64(kd) - _bits64(shift)                 # the same integer, exactly
    r = (x - nf * 0.6931471803691238) - nf * 1.9082149292705877e-10
    p = 1.6059043836821613e-10
    p = _fma(p, r, 2.08767569878681e-09)
    p = _fma(p, r, 2.505210838544172e-08)
    p = _fma(p, r, 2.755731922398589e-07)
    p = _fma(p, r, 2.7557319223985893e-06)
    p = _fma(p, r, 2.48015873015873e-05)
    p = _fma(p, r, 0.0001984126984126984)
    p = _fma(p, r, 0.001388888888888889)
    p = _fma(p, r, 0.008333333333333333)
    p = _fma(p, r, 0.041666666666666664)
    p = _fma(p, r, 0.16666666666666666)
    p = _fma(p, r, 0.5)
    p = (p * r) * r + r + 1.0
    h = n >> 1                                       # 2**n as 2**h * 2**(n-h): n may be 1025
    s1 = _float64((h + 1023) << 52)
    s2 = _float64((n - h + 1023) << 52)
    return (p * s1) * s2                             # p * s1 exact: one rounding


@njit(**_CORE)
def _exp_core32(x):
    # float32 accuracy in float64: degree 8 (|r| <= ln2/2: relative error < 1e-10)
    shift = 6755399441055744.0
    kd = x * 1.4426950408889634 + shift
    nf = kd - shift
    n = _bits64(kd) - _bits64(shift)
    r = x - nf * 0.6931471805599453
    p = 2.48015873015873e-05
    p = _fma(p, r, 0.0001984126984126984)
    p = _fma(p, r, 0.001388888888888889)
    p = _fma(p, r, 0.008333333333333333)
    p = _fma(p, r, 0.041666666666666664)
    p = _fma(p, r, 0.16666666666666666)
    p = _fma(p, r, 0.5)
    p = (p * r) * r + r + 1.0
    return p * _float64((n + 1023) << 52)           # |n| < 200: one factor


@njit(**_CORE)
def _recip(d):
    # 1/d to ~1e-14 for float32-range d: a float32 division (twice the lanes of a
    # float64 one, and faster) and one Newton step in float64
    y = np.float64(_div(np.float32(1.0), np.float32(d)))
    return _fma(y, _fma(-d, y, 1.0), y)


@njit(**_NJ)
def exp_f64(x):
    """``numpy.exp`` for a float64 (<= 1 ulp measured; see module doc)."""
    x = 710.0 if x > 710.0 else x
    x = -746.0 if x < -746.0 else x
    return _exp_core(x)


@njit(**_NJ)
def exp_f32(x):
    """``numpy.exp`` for a float32 (computed in float64, rounded once)."""
    d = np.float64(x)
    d = 100.0 if d > 100.0 else d
    d = -120.0 if d < -120.0 else d
    return np.float32(_exp_core32(d))


@njit(**_CORE)
def _log_core(x):
    # x > 0 finite or not: specials are selected by the callers
    sub = x < 2.2250738585072014e-308
    xs = x * 18014398509481984.0 if sub else x       # 2**54: subnormals become normal
    b = _bits64(xs)
    e = ((b >> 52) & 0x7ff) - (1023 + 54 if sub else 1023)
    m = _float64((b & 0xfffffffffffff) | 0x3ff0000000000000)   # [1, 2)
    big = m > 1.4142135623730951
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    s = _div(m - 1.0, m + 1.0)
    z = s * s
    q = 0.08695652173913043                          # 1/23
    q = _fma(q, z, 0.09523809523809523)
    q = _fma(q, z, 0.10526315789473684)
    q = _fma(q, z, 0.11764705882352941)
    q = _fma(q, z, 0.13333333333333333)
    q = _fma(q, z, 0.15384615384615385)
    q = _fma(q, z, 0.18181818181818182)
    q = _fma(q, z, 0.2222222222222222)
    q = _fma(q, z, 0.2857142857142857)
    q = _fma(q, z, 0.4)
    q = _fma(q, z, 0.6666666666666666)               # 2 * (1/3 + z/5 + ...)
    ef = np.float64(e)
    return ef * 0.6931471803691238 + ((s + s) + (s * z * q + ef * 1.9082149292705877e-10))


@njit(**_NJ)
def log_f64(x):
    """``numpy.log`` for a float64 (<= 1 ulp measured; see module doc)."""
    v = _log_core(x)
    v = -np.inf if x == 0.0 else v
    v = np.inf if x == np.inf else v
    v = np.nan if x < 0.0 else v
    return x if x != x else v


@njit(**_NJ)
def log_f32(x):
    """``numpy.log`` for a float32 (computed in float64, rounded once)."""
    d = np.float64(x)                                # float32 subnormals are normal here
    b = _bits64(d)
    e = ((b >> 52) & 0x7ff) - 1023
    m = _float64((b & 0xfffffffffffff) | 0x3ff0000000000000)
    big = m > 1.4142135623730951
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    s = (m - 1.0) * _recip(m + 1.0)
    z = s * s                                        # z < 0.0295: 7 terms, error < 1e-12
    q = 0.15384615384615385
    q = _fma(q, z, 0.18181818181818182)
    q = _fma(q, z, 0.2222222222222222)
    q = _fma(q, z, 0.2857142857142857)
    q = _fma(q, z, 0.4)
    q = _fma(q, z, 0.6666666666666666)
    v = _fma(np.float64(e), 0.6931471805599453, _fma(s * z, q, s + s))
    v = -np.inf if d == 0.0 else v
    v = np.inf if d == np.inf else v
    v = np.nan if d < 0.0 else v
    return np.float32(d if d != d else v)


# Taylor coefficients of tanh(x)/x - 1 in x**2, highest first (the float64 series; float32
# needs only the last six)
_TANH_SERIES = (-6.451689215655431e-06, 1.5918905069328964e-05, -3.927832388331683e-05,
                9.691537956929451e-05, -0.00023912911424355248, 0.000590027440945586,
                -0.0014558343870513183, 0.003592128036572481, -0.008863235529902197,
                0.021869488536155203, -0.05396825396825397, 0.13333333333333333,
                -0.3333333333333333)


@njit(**_NJ)
def _tanh_series(x, first):
    """tanh(x) for |x| < 0.3 by the series from coefficient ``first`` on (Horner, FMA)."""
    z = x * x
    p = _TANH_SERIES[first]
    for i in range(first + 1, len(_TANH_SERIES)):
        p = _fma(p, z, _TANH_SERIES[i])
    small = _fma(x * z, p, x)
    return x if z == 0.0 else small                  # keeps the sign of -0.0


@njit(**_CORE)
def _tanh_core(x):
    ax = abs(x)
    ax = 20.0 if ax > 20.0 else ax                   # tanh(20) is 1.0 in float64
    e = _exp_core(ax + ax)
    big = 1.0 - _div(2.0, e + 1.0)
    small = _tanh_series(x, 0)                       # Taylor series of tanh, |x| < 0.3
    big = -big if x < 0.0 else big
    return small if ax < 0.3 else big                # NaN: big, which is NaN


@njit(**_NJ)
def tanh_f64(x):
    """``numpy.tanh`` for a float64 (<= 2 ulp measured; see module doc)."""
    return _tanh_core(x)


@njit(**_NJ)
def tanh_f32(x):
    """``numpy.tanh`` for a float32 (computed in float64, rounded once)."""
    d = np.float64(x)
    ax = abs(d)
    ax = 10.0 if ax > 10.0 else ax                   # tanh(10) rounds to 1.0 in float32
    e = _exp_core32(ax + ax)
    big = 1.0 - 2.0 * _recip(e + 1.0)
    small = _tanh_series(d, 7)                       # series below 0.3: its last 6 terms
    big = -big if d < 0.0 else big
    return np.float32(small if ax < 0.3 else big)
