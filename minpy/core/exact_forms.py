"""NumPy's own algorithms, written in array calls, for the ufuncs whose GPU kernels
answer otherwise.

CuPy's kernels differ from NumPy's loops where it matters most to a drop-in: float
``remainder``/``floor_divide``/``divmod`` compute ``a - floor(a / b) * b`` (wrong in
every digit once ``a / b`` is large: ``111 % 1.6e-24``, and NaN for ``x % -inf``);
64-bit integer ``fmod`` goes through doubles (``fmod(2**64 - 3, 2)`` is 0); complex
division, ``reciprocal``, ``sign``, ``log2``, ``exp2`` and ``power`` lose NumPy's
handling of infinities (NaN where NumPy answers ``inf`` or 0); complex ``float_power``
computes in single precision. A GPU call of one of these runs the body here instead:
NumPy's algorithm step by step (``numpy/_core/src/umath``: ``npy_divmod``, the complex
``divide`` and ``reciprocal`` loops, ``nc_log2``, ``nc_exp2``, ``npy_cpow``), each step
one correctly rounded array call, so the device answers as NumPy does. Operands of the
dtypes the backend gets right go straight to its own function.

Each body is ``body(xp, plain, *args, **kwargs)``: ``xp`` the backend's array module,
``plain`` its own function for the ufunc. Keywords other than ``out`` go to the host
(:class:`~minpy.dispatch.backend.NeedsHost`).
"""
import math

import numpy

from ..dispatch.backend import NeedsHost
from .exact_kernels import kernel

__all__ = ["FORMS"]

_PY_SCALARS = (bool, int, float, complex)


def _dtype(a):
    return None if type(a) in _PY_SCALARS else getattr(a, "dtype", None)


def _result_dtype(args):
    """NumPy's result dtype of ufunc operands ``args`` (Python scalars weak)."""
    return numpy.result_type(*[a if type(a) in _PY_SCALARS else a.dtype for a in args])


def _any_kind(args, kinds, scalar_type=None):
    for a in args:
        dt = _dtype(a)
        if dt is not None:
            if dt.kind in kinds:
                return True
        elif scalar_type is not None and type(a) is scalar_type:
            return True
    return False


def _as(xp, a, dt):
    """Operand ``a`` as a device array of dtype ``dt``."""
    if hasattr(a, "shape") and not isinstance(a, numpy.generic):
        return a.astype(dt, copy=False)
    return xp.asarray(a, dtype=dt)


def _finish(xp, res, out, dt):
    """``res`` cast to the result dtype ``dt``, written into ``out`` when given."""
    if out is None:
        return res.astype(dt, copy=False)
    xp.copyto(out, res, casting="same_kind")
    return out


def _only_out(name, kwargs):
    """``out`` (unwrapped from a 1-tuple), after checking no other keyword is given."""
    out = kwargs.pop("out", None)
    if kwargs:
        raise NeedsHost(f"{name}: keywords {sorted(kwargs)} with NumPy's algorithm")
    if type(out) is tuple:
        out = out[0] if len(out) == 1 else out
    return out


# ---------------------------------------------------------------- real division
def _divmod_real(xp, a, b):
    """``(floor_divide, remainder)`` of float arrays as NumPy's ``npy_divmod``."""
    zero = xp.zeros((), a.dtype)
    mod0 = xp.fmod(a, b)
    div = (a - mod0) / b
    fix = (mod0 != 0) & ((b < 0) != (mod0 < 0))      # NaN != 0: as C's ``if (mod)``
    mod = xp.where(fix, mod0 + b, xp.where(mod0 == 0, xp.copysign(zero, b), mod0))
    div = xp.where(fix, div - 1, div)
    fl = xp.floor(div)
    fl = xp.where(div - fl > 0.5, fl + 1, fl)        # snap to the nearest integer
    q = a / b
    floordiv = xp.where(div != 0, fl, xp.copysign(zero, q))
    by_zero = b == 0                                 # C returns a / b and fmod there
    return xp.where(by_zero, q, floordiv), xp.where(by_zero, mod0, mod)


def _real_division(which):
    name = {0: "floor_divide", 1: "remainder", None: "divmod"}[which]

    def body(xp, plain, *args, **kwargs):
        if not _any_kind(args[:2], "f", float):
            return plain(*args, **kwargs)
        dt = _result_dtype(args[:2])
        if dt.kind != "f":
            return plain(*args, **kwargs)
        out = _only_out(name, dict(kwargs))
        k = kernel(xp, name)
        if k is not None:
            res = k(*(_as(xp, x, dt) for x in args[:2]))
        else:
            ct = numpy.dtype(numpy.float32) if dt.itemsize < 4 else dt   # NumPy's half loops
            a, b = (_as(xp, _as(xp, x, dt), ct) for x in args[:2])   # scalars: via dt
            with numpy.errstate(all="ignore"):
                res = _divmod_real(xp, a, b)
            res = res if which is None else res[which]
        if which is not None:
            return _finish(xp, res, out, dt)
        outs = out if type(out) is tuple else (None, None)
        return tuple(_finish(xp, r, o, dt) for r, o in zip(res, outs))
    body.__name__ = f"exact_{name}"
    return body


def _fmod(xp, plain, *args, **kwargs):
    """Integer ``fmod`` (C's ``%``, the sign of the dividend) from the backend's exact
    integer ``remainder`` (the sign of the divisor): CuPy's own goes through doubles."""
    dts = [_dtype(a) for a in args[:2]]
    if not all(dt is None or dt.kind in "iu" for dt in dts) or all(dt is None for dt in dts):
        return plain(*args, **kwargs)
    dt = _result_dtype(args[:2])
    if dt.kind not in "iu":
        return plain(*args, **kwargs)
    out = _only_out("fmod", dict(kwargs))
    k = kernel(xp, "fmod")
    if k is not None:
        return _finish(xp, k(*(_as(xp, x, dt) for x in args[:2])), out, dt)
    a, b = args[0], args[1]
    r = xp.remainder(a, b)
    if dt.kind == "i":
        r = xp.where((r != 0) & ((r < 0) != (xp.asarray(a) < 0)), r - b, r)
    return _finish(xp, r, out, dt)


def _lcm(xp, plain, *args, **kwargs):
    """``lcm`` of 8- and 16-bit integers: NumPy's C promotes them to int, so the product
    wraps once, after the absolute value; CuPy's wraps before it (113 for NumPy's -113 =
    lcm(13, 11) in int8)."""
    dt = _result_dtype(args[:2]) if any(_dtype(a) is not None for a in args[:2]) else None
    if dt is None or dt.kind not in "iu" or dt.itemsize >= 4:
        return plain(*args, **kwargs)
    out = _only_out("lcm", dict(kwargs))
    wide = numpy.dtype(numpy.int32)
    return _finish(xp, plain(*(_as(xp, _as(xp, x, dt), wide) for x in args[:2])), out, dt)


# ---------------------------------------------------------------- complex
def _pack(xp, re, im, dt):
    shape = numpy.broadcast_shapes(re.shape, im.shape)
    z = xp.empty(shape, dt)
    z.real[...] = re
    z.imag[...] = im
    return z


def _cmul(ar, ai, br, bi):
    """NumPy's ``cmul``: the schoolbook product (no recovery of infinities)."""
    return ar * br - ai * bi, ar * bi + ai * br


def _cdiv(xp, ar, ai, br, bi):
    """NumPy's complex ``divide`` loop (Smith's algorithm)."""
    abr, abi = xp.absolute(br), xp.absolute(bi)
    big_r = abr >= abi                               # False where either is NaN
    rat = bi / br
    scl = 1 / (br + bi * rat)
    r1, i1 = (ar + ai * rat) * scl, (ai - ar * rat) * scl
    zero = big_r & (abr == 0) & (abi == 0)
    r0, i0 = ar / abr, ai / abr
    rat2 = br / bi
    scl2 = 1 / (bi + br * rat2)
    r2, i2 = (ar * rat2 + ai) * scl2, (ai * rat2 - ar) * scl2
    re = xp.where(big_r, xp.where(zero, r0, r1), r2)
    im = xp.where(big_r, xp.where(zero, i0, i1), i2)
    return re, im


def _complex_body(name, nin, compute):
    """A body running ``compute(xp, *complex_operands)`` -> (re, im) when the result is
    complex, else the backend's own function."""
    def body(xp, plain, *args, **kwargs):
        if not _any_kind(args[:nin], "c", complex):
            return plain(*args, **kwargs)
        dt = _result_dtype(args[:nin])
        if dt.kind != "c":
            return plain(*args, **kwargs)
        out = _only_out(name, dict(kwargs))
        ops = [_as(xp, x, dt) for x in args[:nin]]
        k = kernel(xp, name)
        if k is not None:
            return _finish(xp, k(*ops), out, dt)
        with numpy.errstate(all="ignore"):
            re, im = compute(xp, *ops)
            return _finish(xp, _pack(xp, re, im, dt), out, dt)
    body.__name__ = f"exact_{name}"
    return body


def _divide(xp, a, b):
    return _cdiv(xp, a.real, a.imag, b.real, b.imag)


def _reciprocal(xp, z):
    zr, zi = z.real, z.imag
    small_i = xp.absolute(zi) <= xp.absolute(zr)
    r1 = zi / zr
    d1 = zr + zi * r1
    r2 = zr / zi
    d2 = zr * r2 + zi
    return xp.where(small_i, 1 / d1, r2 / d2), xp.where(small_i, -r1 / d1, -1 / d2)


def _sign(xp, z):
    zr, zi = z.real, z.imag
    ab = xp.hypot(zr, zi)
    one = xp.ones((), zr.dtype)
    nan = xp.full((), numpy.nan, zr.dtype)
    zero = xp.zeros((), zr.dtype)
    inf_r, inf_i = xp.isinf(zr), xp.isinf(zi)
    # |z| infinite: +-1 along an infinite axis, NaN when both are
    inf_re = xp.where(inf_r, xp.where(inf_i, nan, xp.where(zr > 0, one, -one)), zero)
    inf_im = xp.where(inf_r, xp.where(inf_i, nan, zero), xp.where(zi > 0, one, -one))
    re = xp.where(ab == 0, zero, zr / ab)
    im = xp.where(ab == 0, zero, zi / ab)
    re = xp.where(xp.isinf(ab), inf_re, re)
    im = xp.where(xp.isinf(ab), inf_im, im)
    return xp.where(xp.isnan(ab), nan, re), xp.where(xp.isnan(ab), nan, im)


def _scaled(z, c):
    """The parts of ``z`` each times the real ``c`` (in the parts' precision)."""
    c = z.real.dtype.type(c)
    return z.real * c, z.imag * c


def _log2(xp, z):
    return _scaled(xp.log(z), 1 / math.log(2))


def _exp2(xp, z):
    re, im = _scaled(z, math.log(2))
    w = xp.exp(_pack(xp, re, im, z.dtype))
    return w.real, w.imag


def _cpow_int(xp, ar, ai, n):
    """``a ** n`` for one integer ``n`` (0 < |n| < 100) as ``npy_cpow`` multiplies (a
    negative ``n``: the reciprocal by NumPy's complex division)."""
    if n in (1, 2, 3):
        if n == 1:
            return ar, ai
        sr, si = _cmul(ar, ai, ar, ai)
        return (sr, si) if n == 2 else _cmul(ar, ai, sr, si)
    m = abs(n)
    rr, ri = xp.ones_like(ar), xp.zeros_like(ai)         # c_1
    pr, pi = ar, ai
    mask = 1
    while True:
        if m & mask:
            rr, ri = _cmul(rr, ri, pr, pi)
        mask <<= 1
        if m < mask:
            break
        pr, pi = _cmul(pr, pi, pr, pi)
    if n < 0:
        one = xp.ones((), ar.dtype)
        rr, ri = _cdiv(xp, one, one * 0, rr, ri)
    return rr, ri


def _small_int(n):
    """The integer ``k`` of a complex exponent ``n`` taking NumPy's product path, else
    None."""
    if n.imag != 0 or not math.isfinite(n.real) or n.real != int(n.real):
        return None
    k = int(n.real)
    return k if -100 < k < 100 else None


def _cmul_c99(xp, a, b, c, d):
    """``(a + bi) * (c + di)`` as C99's Annex G (libgcc's ``__mulsc3``): where the
    schoolbook product is NaN in both parts but a factor or a partial product is
    infinite, the infinities are recovered."""
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    zero = xp.zeros((), a.dtype)
    one = xp.ones((), a.dtype)

    def box(v):                                  # an infinity to +-1, a finite to +-0
        return xp.copysign(xp.where(xp.isinf(v), one, zero), v)

    def unnan(v, where):
        return xp.where(where & xp.isnan(v), xp.copysign(zero, v), v)

    inf_ab = xp.isinf(a) | xp.isinf(b)
    inf_cd = xp.isinf(c) | xp.isinf(d)
    a = xp.where(inf_ab, box(a), a)
    b = xp.where(inf_ab, box(b), b)
    c, d = unnan(c, inf_ab), unnan(d, inf_ab)
    c = xp.where(inf_cd, box(c), c)
    d = xp.where(inf_cd, box(d), d)
    a, b = unnan(a, inf_cd), unnan(b, inf_cd)
    partial_inf = xp.isinf(ac) | xp.isinf(bd) | xp.isinf(ad) | xp.isinf(bc)
    other = xp.logical_not(inf_ab | inf_cd) & partial_inf
    a, b, c, d = (unnan(v, other) for v in (a, b, c, d))
    recalc = xp.isnan(x) & xp.isnan(y) & (inf_ab | inf_cd | other)
    inf = xp.full((), numpy.inf, a.dtype)
    return (xp.where(recalc, inf * (a * c - b * d), x),
            xp.where(recalc, inf * (a * d + b * c), y))


def _cpow_general(xp, a, b):
    """``exp(b * log(a))`` as the C library's ``cpow`` (its product C99's)."""
    la = xp.log(a)
    zr, zi = _cmul_c99(xp, b.real, b.imag, la.real, la.imag)
    w = xp.exp(_pack(xp, zr, zi, a.dtype))
    return w.real, w.imag


def _power(xp, a, b):
    """NumPy's ``npy_cpow``: 1 for a zero exponent; 0 or NaN for a zero base; repeated
    products for an integer exponent under 100 in size; else ``exp(b * log(a))``."""
    one_exponent = b.ndim == 0
    shape = numpy.broadcast_shapes(a.shape, b.shape)
    a, b = xp.broadcast_to(a, shape), xp.broadcast_to(b, shape)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if one_exponent:
        # one exponent (the usual ``z ** 2``): only its path runs
        n = complex(b.ravel()[0]) if b.size else 0j
        if n == 0:
            return xp.ones(shape, ar.dtype), xp.zeros(shape, ar.dtype)
        k = _small_int(n)
        re, im = _cpow_general(xp, a, b) if k is None else _cpow_int(xp, ar, ai, k)
        return _zero_base(xp, ar, ai, br, re, im)
    re, im = _cpow_general(xp, a, b)
    n_int = (bi == 0) & (br == xp.trunc(br)) & (br > -100) & (br < 100)
    ns = xp.where(n_int, br, 0).astype(numpy.int64)
    for k in sorted(set(int(v) for v in _host_values(xp, ns)) - {0}):
        kr, ki = _cpow_int(xp, ar, ai, k)
        sel = ns == k
        re, im = xp.where(sel, kr, re), xp.where(sel, ki, im)
    re, im = _zero_base(xp, ar, ai, br, re, im)
    b0 = (br == 0) & (bi == 0)
    return xp.where(b0, 1, re), xp.where(b0, 0, im)


def _host_values(xp, x):
    """The distinct values of a small-integer device array, read back once."""
    u = xp.unique(x)
    return u.get() if hasattr(u, "get") else numpy.asarray(u)


def _zero_base(xp, ar, ai, br, re, im):
    """A zero base: 0 for an exponent with a positive real part, else NaN."""
    z = (ar == 0) & (ai == 0)
    nan = numpy.nan
    return xp.where(z, xp.where(br > 0, 0, nan), re), xp.where(z, xp.where(br > 0, 0, nan), im)


def _float_power(xp, plain, *args, **kwargs):
    """``float_power`` of complex operands: NumPy computes in complex128 only."""
    if not _any_kind(args[:2], "c", complex):
        return plain(*args, **kwargs)
    args = tuple(_as(xp, x, numpy.dtype(numpy.complex128)) for x in args[:2]) + args[2:]
    return _POWER(xp, plain, *args, **kwargs)


_POWER = _complex_body("power", 2, _power)

# qualname -> body(xp, plain, *args, **kwargs)
FORMS = {
    "floor_divide": _real_division(0),
    "remainder": _real_division(1),
    "divmod": _real_division(None),
    "fmod": _fmod,
    "lcm": _lcm,
    "divide": _complex_body("divide", 2, _divide),
    "reciprocal": _complex_body("reciprocal", 1, _reciprocal),
    "sign": _complex_body("sign", 1, _sign),
    "log2": _complex_body("log2", 1, _log2),
    "exp2": _complex_body("exp2", 1, _exp2),
    "power": _POWER,
    "float_power": _float_power,
}
