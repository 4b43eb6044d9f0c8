"""One CUDA kernel each for the commonest of :mod:`minpy.core.exact_forms`' algorithms.

Written in array calls, NumPy's ``npy_divmod`` takes fifteen kernel launches on a
device (twenty times CuPy's own ``%`` on ten million floats); here it is one
elementwise kernel of the same C, compiled by CuPy on first use (``--fmad=false``: no
fused multiply-adds NumPy's loops do not make). The sources are plain C++ over a
``__device__`` macro, so the tests compile the very same text with the host compiler
and compare it with NumPy bit for bit (``tests/core/test_exact_kernels.py``).
"""
import functools

__all__ = ["PREAMBLE", "KERNELS", "kernel"]

PREAMBLE = r"""
template <typename T> struct exact_compute { typedef T type; };
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
template <> struct exact_compute<float16> { typedef float type; };  // NumPy's half loops
#endif

// numpy/_core/src/npymath/npy_math_internal.h.src: npy_divmod
template <typename C>
__device__ C exact_divmod(C a, C b, C* modulus) {
    C mod = fmod(a, b);
    if (!(b != 0)) {            // b == 0, not NaN
        *modulus = mod;
        return a / b;
    }
    C div = (a - mod) / b;
    if (mod != 0) {             // true for NaN, as C's if (mod)
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= (C)1;
        }
    } else {
        mod = copysign((C)0, b);
    }
    C floordiv;
    if (div != 0) {
        floordiv = floor(div);
        if (div - floordiv > (C)0.5) floordiv += (C)1;
    } else {
        floordiv = copysign((C)0, a / b);
    }
    *modulus = mod;
    return floordiv;
}

// C's % with NumPy's answers where C has none (x % 0 is 0, INT_MIN % -1 is 0)
template <typename T>
__device__ T exact_fmod(T x, T y) {
    if (y == 0) return 0;
    if ((T)-1 < 0 && y == (T)-1) return 0;
    return x % y;
}

// numpy/_core/src/umath/loops.c.src: the complex divide loop (Smith's algorithm)
template <typename Z>
__device__ Z exact_cdiv(Z x, Z y) {
    typedef typename Z::value_type R;
    const R ar = x.real(), ai = x.imag(), br = y.real(), bi = y.imag();
    const R abr = fabs(br), abi = fabs(bi);
    if (abr >= abi) {
        if (abr == 0 && abi == 0) return Z(ar / abr, ai / abr);
        const R rat = bi / br;
        const R scl = (R)1 / (br + bi * rat);
        return Z((ar + ai * rat) * scl, (ai - ar * rat) * scl);
    }
    const R rat = br / bi;
    const R scl = (R)1 / (bi + br * rat);
    return Z((ar * rat + ai) * scl, (ai * rat - ar) * scl);
}

// the complex reciprocal loop
template <typename Z>
__device__ Z exact_creciprocal(Z z) {
    typedef typename Z::value_type R;
    const R zr = z.real(), zi = z.imag();
    if (fabs(zi) <= fabs(zr)) {
        const R r = zi / zr;
        const R d = zr + zi * r;
        return Z((R)1 / d, -r / d);
    }
    const R r = zr / zi;
    const R d = zr * r + zi;
    return Z(r / d, (R)-1 / d);
}
"""

_DIVMOD = "typedef typename exact_compute<T>::type C; C m_; "

# name -> (inputs, outputs, body)
KERNELS = {
    "floor_divide": ("T x, T y", "T q", _DIVMOD + "q = (T)exact_divmod<C>((C)x, (C)y, &m_);"),
    "remainder": ("T x, T y", "T r", _DIVMOD + "exact_divmod<C>((C)x, (C)y, &m_); r = (T)m_;"),
    "divmod": ("T x, T y", "T q, T r",
               _DIVMOD + "q = (T)exact_divmod<C>((C)x, (C)y, &m_); r = (T)m_;"),
    "fmod": ("T x, T y", "T r", "r = exact_fmod<T>(x, y);"),
    "divide": ("T x, T y", "T z", "z = exact_cdiv<T>(x, y);"),
    "reciprocal": ("T x", "T z", "z = exact_creciprocal<T>(x);"),
}


@functools.lru_cache(maxsize=None)
def _build(xp, name):
    ins, outs, body = KERNELS[name]
    return xp.ElementwiseKernel(ins, outs, body, f"minpy_exact_{name}", preamble=PREAMBLE,
                                options=("--fmad=false",))


def kernel(xp, name):
    """The compiled kernel ``name`` of :data:`KERNELS` for array module ``xp`` (a CuPy),
    or None where ``xp`` compiles no kernels (NumPy, the stand-in)."""
    if name not in KERNELS or not hasattr(xp, "ElementwiseKernel"):
        return None
    return _build(xp, name)
