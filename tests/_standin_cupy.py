"""Where the stand-in GPU answers as CuPy 14 does rather than as NumPy (seen on an H200
or read in CuPy's source): unordered repeated-index writes, in-place weighted polyfit,
reductions' errors, complex cond, cuFFT's errors, the refusals CuPy raises, linalg's
silent singular matrices unless ``errstate(linalg='raise')``, integer power and shifts,
the elementwise kernels minpy replaces (float remainder and floor division, 64-bit
fmod, complex division and co., small-integer lcm), float add.reduceat, weighted cov,
intersect1d(assume_unique=True), and float maximum.at/minimum.at.
See :mod:`_standin`."""
import contextlib

import numpy

from _standin_array import HostConversionError, StandinArray, _first_write_wins, _inputs, _tls


def _put_first_wins(a, ind, v, mode="raise"):
    """``numpy.put`` with CuPy's unordered repeated writes (the first one kept here)."""
    flat = numpy.arange(a.size, dtype=numpy.intp)
    sel = numpy.take(flat, numpy.asarray(ind).reshape(-1), mode=mode)
    vals = numpy.resize(numpy.asarray(v).reshape(-1), sel.size)
    _first_write_wins(a, numpy.unravel_index(sel, a.shape), vals)


def _put_along_axis_first_wins(arr, indices, values, axis):
    """``numpy.put_along_axis`` with CuPy's unordered repeated writes (the first kept)."""
    ids = numpy.arange(arr.size, dtype=numpy.intp).reshape(arr.shape)
    if axis is None:
        ids, axis = ids.reshape(-1), 0
    sel = numpy.take_along_axis(ids, indices, axis)
    _first_write_wins(arr, numpy.unravel_index(sel, arr.shape), values)


def _polyfit_scaling_y(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``numpy.polyfit`` that, as CuPy 14's, scales a float64 ``y`` by ``w`` in place
    (its ``rhs = y; rhs *= w``)."""
    r = numpy.polyfit(x, y, deg, rcond, full, w, cov)
    if w is not None and isinstance(y, numpy.ndarray) and y.dtype == numpy.float64:
        y *= numpy.asarray(w) if y.ndim == 1 else numpy.asarray(w)[:, None]
    return r


class CompileException(Exception):
    """The stand-in for cupy.cuda.compiler.CompileException (no refusal of minpy's)."""


def _cupy_reduction(name, fn):
    """``fn`` answering as CuPy 14's reduction ``name`` where NumPy raises or differs (seen
    on a real GPU): IndexError for an axis out of range (std, var, nanmedian), argmax of a
    tuple axis, no error on an empty min/max, 0 for nanvar/nanstd of nothing, keepdims
    of a 0-d median, percentile of bool, a compile error for complex percentile."""
    def call(a, *args, **kwargs):
        a = numpy.asarray(a)
        axis = args[0] if args and name not in _QUANTILES else kwargs.get("axis")
        if isinstance(axis, int) and not -a.ndim <= axis < max(a.ndim, 1) and name in (
                "std", "var", "nanmedian"):
            raise IndexError("tuple index out of range")
        if name == "argmax" and isinstance(axis, tuple):
            return fn(a)
        if name in _QUANTILES:
            if a.dtype.kind == "c":
                raise CompileException("no operator \"<\" matches these operands")
            if a.dtype.kind == "b":
                a = a.astype(numpy.float64)
        try:
            with numpy.errstate(all="ignore"):
                r = fn(a, *args, **kwargs)
        except ValueError as e:
            if "zero-size" not in str(e):
                raise
            kw = {k: v for k, v in kwargs.items() if k in ("axis", "keepdims")}
            return numpy.sum(numpy.zeros(a.shape, a.dtype), *args[:1], **kw).astype(a.dtype)
        if name in ("nanvar", "nanstd") and a.size == 0:
            r = numpy.zeros_like(r)
        if name == "median" and a.ndim == 0 and kwargs.get("keepdims"):
            r = numpy.reshape(r, (1,))
        return r
    return call


_QUANTILES = ("percentile", "quantile")


def _complex_cond(x, p=None):
    """CuPy 14's linalg.cond: complex for a complex matrix unless ``p`` is None or +-2."""
    r = numpy.linalg.cond(x, p)
    if numpy.asarray(x).dtype.kind == "c" and p is not None and p not in (2, -2):
        return numpy.asarray(r).astype(numpy.asarray(x).dtype)
    return r


class CuFFTError(RuntimeError):
    """The stand-in for cupy.cuda.cufft.CuFFTError."""


def _cufft(fn):
    """``fn`` (an inverse real FFT) raising cuFFT's error where its output is empty."""
    def call(a, *args, **kwargs):
        size = args[0] if args else kwargs.get("n", kwargs.get("s"))
        axes = args[1] if len(args) > 1 else kwargs.get("axis", kwargs.get("axes", -1))
        last = axes if isinstance(axes, int) else -1 if axes is None else axes[-1]
        if size is None and 2 * (numpy.shape(a)[last] - 1) < 1:
            raise CuFFTError("CUFFT_INVALID_SIZE")
        return fn(a, *args, **kwargs)
    return call

# where the stand-in answers as CuPy does, not as NumPy
_FIRST_WINS = {"put": _put_first_wins, "put_along_axis": _put_along_axis_first_wins,
               "polyfit": _polyfit_scaling_y,
               **{q: _cupy_reduction(q, getattr(numpy, q)) for q in (
                   "std", "var", "nanstd", "nanvar", "nanmedian", "argmax", "amin", "nanmax",
                   "median") + _QUANTILES},
               **{f"fft.{q}": _cufft(getattr(numpy.fft, q)) for q in (
                   "irfft", "hfft", "irfft2", "irfftn")},
               "linalg.cond": _complex_cond}


# ---------------------------------------------------------------- CuPy's refusals
# What CuPy 13/14 raise where NumPy accepts the call (the exception types and messages
# of CuPy's own code; seen on a real GPU), checked on the arguments as passed.
_UNSET = object()


def _arg(args, kwargs, i, name, default=_UNSET):
    return args[i] if len(args) > i else kwargs.get(name, default)


def _refuse_where(args, kwargs):
    if len(args) + len(kwargs) == 3:         # cupy.where: condition.astype('?')
        c = _arg(args, kwargs, 0, "condition")
        if type(c) is not StandinArray:
            raise AttributeError(f"'{type(c).__name__}' object has no attribute 'astype'")


def _refuse_choose(args, kwargs):
    c = _arg(args, kwargs, 1, "choices")
    if type(c) is not StandinArray:
        raise AttributeError(f"'{type(c).__name__}' object has no attribute 'shape'")


def _refuse_pad(args, kwargs):
    # cupy.pad hands constant_values (and end_values) to numpy.asarray
    for name in ("constant_values", "end_values"):
        if _inputs((kwargs.get(name),), []):
            raise HostConversionError("Implicit conversion to a NumPy array is not allowed. "
                                      "Please use `.get()` to construct a NumPy array "
                                      "explicitly.")
    mode = _arg(args, kwargs, 2, "mode", "constant")
    if mode == "median":
        raise ValueError(f"mode '{mode}' is not supported")


def _refuse_meshgrid(args, kwargs):
    if any(type(x) is StandinArray and x.ndim != 1 for x in args):
        raise ValueError("input has to be 1d")


def _refuse_cross(args, kwargs):
    x1, x2 = _arg(args, kwargs, 0, "x1", None), _arg(args, kwargs, 1, "x2", None)
    if getattr(x1, "shape", None) != getattr(x2, "shape", None):
        raise ValueError("x1 and x2 must have the same shape")


def _refuse_ediff1d(args, kwargs):
    if type(_arg(args, kwargs, 0, "arr")) is not StandinArray:
        raise TypeError("`arr` should be of type cupy.ndarray")
    for i, name in ((2, "to_begin"), (1, "to_end")):
        v = _arg(args, kwargs, i, name, None)
        if v is not None and type(v) is not StandinArray:
            raise TypeError(f"`{name}` should be of type cupy.ndarray")


_ADD_AT_DTYPES = frozenset(map(numpy.dtype, ("int32", "int64", "float16", "float32", "float64",
                                             "uint32", "uint64")))


def _refuse_add_at(args, kwargs):
    a = _arg(args, kwargs, 0, "a", None)
    if type(a) is StandinArray and a.dtype not in _ADD_AT_DTYPES:
        raise TypeError("cupy.add.at only supports int32, int64, float16, float32, float64, "
                        "uint32, uint64 as data type")


def _concat_info(obj):
    """CuPy's ``_compute_concat_info_impl``: the shape of a (nested) sequence holding
    only device arrays of one shape, else None."""
    if type(obj) is StandinArray:
        return obj.shape
    if type(obj) in (list, tuple) and len(obj):
        first = _concat_info(obj[0])
        if first is None or any(_concat_info(e) != first for e in obj[1:]):
            return None
        return (len(obj),) + first
    return None


def _refuse_mixed_sequence(args, kwargs):
    # cupy.array/asarray stack a sequence of device arrays of one shape; any other
    # sequence goes through numpy.array, which refuses the device arrays inside
    obj = _arg(args, kwargs, 0, "a", None)
    if type(obj) in (list, tuple) and _inputs(obj, []) and _concat_info(obj) is None:
        raise HostConversionError("Implicit conversion to a NumPy array is not allowed. "
                                  "Please use `.get()` to construct a NumPy array "
                                  "explicitly.")


_REFUSALS = {"where": _refuse_where, "choose": _refuse_choose, "pad": _refuse_pad,
             "meshgrid": _refuse_meshgrid, "linalg.cross": _refuse_cross,
             "ediff1d": _refuse_ediff1d, "add.at": _refuse_add_at,
             "asarray": _refuse_mixed_sequence, "array": _refuse_mixed_sequence}


# ---------------------------------------------------------------- linalg errors
# As CuPy: a linalg function on a singular (not positive definite ...) matrix returns
# NaNs silently unless ``errstate(linalg='raise')`` (per thread) is on; then NumPy's
# LinAlgError, with a cuSOLVER-like message.
def _linalg_raises():
    return getattr(_tls, "linalg", "ignore") == "raise"


@contextlib.contextmanager
def errstate(*, linalg=None):
    """The stand-in for ``cupyx.errstate(linalg=...)``."""
    prev = getattr(_tls, "linalg", "ignore")
    _tls.linalg = "ignore" if linalg is None else linalg
    try:
        yield
    finally:
        _tls.linalg = prev


def _silent_linalg(fn, a, k):
    """``fn(*a, **k)``; where NumPy raises LinAlgError, NaNs of the result's shapes."""
    try:
        with numpy.errstate(all="ignore"):
            return fn(*a, **k)
    except numpy.linalg.LinAlgError:
        if not a or type(a[0]) is not numpy.ndarray or a[0].ndim < 2:
            raise
    m = a[0]
    eye = numpy.broadcast_to(numpy.eye(m.shape[-1], dtype=m.dtype), m.shape)
    shaped = fn(*((eye,) + tuple(a[1:])), **k)       # an invertible stand-in: the shapes
    if type(shaped) is numpy.ndarray:
        return numpy.full_like(shaped, numpy.nan)
    return type(shaped)(*(numpy.full_like(r, numpy.nan) for r in shaped))


def _cupy_int_power(a):
    """CuPy's integer ``power`` raises nothing on a negative exponent (NumPy: ValueError);
    it answers 0 there (as ``1 // x ** -n``, whatever the base): the stand-in does too."""
    x, y = (numpy.asarray(v) for v in a)
    if x.dtype.kind not in "biu" or y.dtype.kind not in "biu" or not (y < 0).any():
        return a
    t = numpy.result_type(*a)
    if t.kind not in "iu":
        return a
    return [numpy.where(y < 0, 0, x).astype(t), numpy.where(y < 0, 1, y).astype(t)]


def _cuda_shift(a):
    """CUDA shifts by the low 32 bits of the amount, clamped to the bit width: a 64-bit
    amount below 0 or of 2**32 or more whose low 32 bits are under the width shifts by
    those (NumPy: all bits out)."""
    x, y = (numpy.asarray(v) for v in a)
    if x.dtype.kind not in "biu" or y.dtype.kind not in "biu":
        return a
    t = numpy.result_type(*a)
    if t.kind not in "iu":
        return a
    y = y.astype(t)
    if t.itemsize < 8:
        return a
    low = y.astype(numpy.uint64) & numpy.uint64(0xFFFFFFFF)
    return [x.astype(t), numpy.where(low < t.itemsize * 8, low, y).astype(t)]


# ---------------------------------------------------------------- CuPy's kernels
# The elementwise answers of CuPy 14 that are not NumPy's (seen on an H200): minpy runs
# NumPy's algorithm there (minpy.core.exact_forms) or the host; the stand-in answers as
# CuPy so that a call reaching the backend's own kernel shows.

def _kind(a, kinds):
    return any(numpy.asarray(x).dtype.kind in kinds for x in a)


def _floor_quotient(x, y):
    return numpy.floor(numpy.true_divide(x, y))


def _cupy_remainder(x, y):
    """CuPy's float remainder: ``x - floor(x / y) * y`` (NaN for ``x % -inf``; every
    digit lost once ``x / y`` is large), not NumPy's exact ``fmod`` fix-up."""
    return x - _floor_quotient(x, y) * y


def _real_quotient(fn):
    def kernel(x, y):
        if not _kind((x, y), "f") or numpy.result_type(x, y).kind != "f":
            return fn(x, y)
        t = numpy.result_type(x, y)
        x, y = numpy.asarray(x, t), numpy.asarray(y, t)
        q = _floor_quotient(x, y).astype(t)
        r = _cupy_remainder(x, y).astype(t)
        return {"floor_divide": q, "remainder": r}.get(fn.__name__, (q, r))
    return kernel


def _cupy_fmod(x, y):
    """CuPy's 64-bit integer fmod goes through doubles."""
    t = numpy.result_type(x, y)
    if t.kind not in "iu" or t.itemsize < 8:
        return numpy.fmod(x, y)
    xf, yf = numpy.asarray(x).astype(numpy.float64), numpy.asarray(y).astype(numpy.float64)
    r = numpy.where(yf == 0, 0, numpy.fmod(xf, numpy.where(yf == 0, 1, yf)))
    return r.astype(t)


def _naive_cdiv(x, y):
    """Complex division by the textbook formula (CuPy's thrust: NaN at infinities)."""
    x, y = numpy.asarray(x), numpy.asarray(y)
    xr, xi, yr, yi = x.real, x.imag, y.real, y.imag
    d = yr * yr + yi * yi
    return ((xr * yr + xi * yi) / d + 1j * ((xi * yr - xr * yi) / d)).astype(
        numpy.result_type(x, y))


def _complex_only(fn, naive):
    def kernel(*a):
        if not _kind(a, "c"):
            return fn(*a)
        return naive(*a)
    return kernel


def _cupy_float_power(x, y):
    """CuPy's complex float_power computes in the operands' precision."""
    t = numpy.result_type(x, y)
    return numpy.power(numpy.asarray(x, t), numpy.asarray(y, t)).astype(numpy.complex128)


def _cupy_half_nextafter(x, y):
    r = numpy.nextafter(x, y)
    if numpy.asarray(r).dtype == numpy.float16:
        r = numpy.where(numpy.isinf(x), numpy.float16("nan"), r)
    return r


def _cupy_lcm(x, y):
    """CuPy's lcm of small integers wraps the product before its absolute value."""
    t = numpy.result_type(x, y)
    if t.kind not in "iu" or t.itemsize >= 4:
        return numpy.lcm(x, y)
    x, y = numpy.asarray(x, t), numpy.asarray(y, t)
    g = numpy.gcd(x, y)
    with numpy.errstate(all="ignore"):
        r = numpy.where(g == 0, 0, (x // numpy.where(g == 0, 1, g)) * y).astype(t)
    return numpy.abs(r)


_KERNELS = {
    "remainder": _real_quotient(numpy.remainder),
    "floor_divide": _real_quotient(numpy.floor_divide),
    "divmod": _real_quotient(numpy.divmod),
    "fmod": _cupy_fmod,
    "lcm": _cupy_lcm,
    "divide": _complex_only(numpy.divide, _naive_cdiv),
    "reciprocal": _complex_only(numpy.reciprocal, lambda z: _naive_cdiv(numpy.ones_like(z), z)),
    "sign": _complex_only(numpy.sign, lambda z: _naive_cdiv(z, numpy.abs(z))),
    "log2": _complex_only(numpy.log2, lambda z: _naive_cdiv(
        numpy.log(z), numpy.asarray(numpy.log(2), z.dtype))),
    "exp2": _complex_only(numpy.exp2, lambda z: numpy.exp(z * numpy.asarray(
        numpy.log(2) + 0j, z.dtype))),
    "power": _complex_only(numpy.power, lambda x, y: numpy.exp(
        numpy.asarray(y) * numpy.log(x)).astype(numpy.result_type(x, y))),
    "float_power": _complex_only(numpy.float_power, _cupy_float_power),
    "nextafter": _cupy_half_nextafter,
}


def cupy_kernel(qualname, np_fn, a, k):
    """``np_fn(*a, **k)`` answered as CuPy's kernel for ``qualname`` would (keywords other
    than ``out``: NumPy's answer)."""
    kernel = _KERNELS.get(qualname)
    if kernel is None or set(k) - {"out"} or len(a) != (2 if qualname not in (
            "reciprocal", "sign", "log2", "exp2") else 1):
        return np_fn(*a, **k)
    r = kernel(*a)
    out = k.get("out")
    if out is None:
        return r
    outs = out if type(out) is tuple else (out,)
    for o, v in zip(outs, r if type(r) is tuple else (r,)):
        numpy.copyto(o, v, casting="unsafe")
    return out


def _reduceat_by_prefix_sums(a, indices, axis=0, dtype=None, out=None):
    """CuPy's add.reduceat of floats: differences of a running sum (inf - inf is NaN)."""
    a = numpy.asarray(a)
    if a.dtype.kind not in "fc" or dtype is not None or out is not None:
        return numpy.add.reduceat(a, indices, axis=axis, dtype=dtype, out=out)
    r = numpy.add.reduceat(a, indices, axis=axis)
    a = numpy.moveaxis(a, axis, -1)
    c = numpy.concatenate([numpy.zeros(a.shape[:-1] + (1,), a.dtype), numpy.cumsum(a, -1)], -1)
    idx = list(indices)
    ends = idx[1:] + [a.shape[-1]]
    for j, (s, e) in enumerate(zip(idx, ends)):
        if s < e:
            numpy.moveaxis(r, axis, -1)[..., j] = c[..., e] - c[..., s]
    return r


_FIRST_WINS["add.reduceat"] = _reduceat_by_prefix_sums


def _cupy_cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
              *, dtype=None):
    """CuPy's weighted cov centres the data on the *unweighted* mean
    (cupy/_statistics/correlation.py); unweighted, NumPy's own."""
    if fweights is None and aweights is None:
        return numpy.cov(m, y, rowvar, bias, ddof, dtype=dtype)
    x = numpy.array(m, ndmin=2, dtype=dtype or numpy.result_type(m, numpy.float64))
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if y is not None:
        y = numpy.array(y, ndmin=2, dtype=x.dtype)
        x = numpy.concatenate((x, y if rowvar or y.shape[0] == 1 else y.T), axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    w = None if fweights is None else numpy.asarray(fweights, dtype=float)
    if aweights is not None:
        aw = numpy.asarray(aweights, dtype=float)
        w = aw if w is None else w * aw
    w_sum = w.sum()
    fact = w_sum - ddof if aweights is None else w_sum - ddof * (w * aw).sum() / w_sum
    x = x - x.mean(axis=1)[:, None]
    return (numpy.dot(x, (x * w).T.conj()) / fact).squeeze()


def _cupy_intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """CuPy's intersect1d(assume_unique=True) binary-searches the second array as given
    (unsorted) and keeps the first one's order."""
    if not assume_unique or return_indices:
        return numpy.intersect1d(ar1, ar2, assume_unique, return_indices)
    a1, a2 = numpy.ravel(ar1), numpy.ravel(ar2)
    if not a2.size:
        return a1[:0]
    idx = numpy.clip(numpy.searchsorted(a2, a1), 0, a2.size - 1)
    return a1[a2[idx] == a1]


def _cupy_extremum_at(np_method, fill):
    """CuPy's maximum.at/minimum.at on floats: atomics through fmaxf/fminf, so the
    touched elements are rounded to float32 and a NaN operand is dropped."""
    def at(a, indices, b=None):
        if a.dtype.kind != "f" or b is None:
            return np_method(a, indices, b)
        b32 = numpy.asarray(b).astype(numpy.float32)
        b32 = numpy.where(numpy.isnan(b32), numpy.float32(fill), b32)
        a32 = a.astype(numpy.float32)
        np_method(a32, indices, b32)
        touched = numpy.zeros(a.shape, bool)
        touched[indices] = True
        a[touched] = a32[touched]
    return at


_FIRST_WINS.update({
    "cov": _cupy_cov, "intersect1d": _cupy_intersect1d,
    "maximum.at": _cupy_extremum_at(numpy.maximum.at, -numpy.inf),
    "minimum.at": _cupy_extremum_at(numpy.minimum.at, numpy.inf),
    "fmax.at": _cupy_extremum_at(numpy.fmax.at, -numpy.inf),
    "fmin.at": _cupy_extremum_at(numpy.fmin.at, numpy.inf)})
