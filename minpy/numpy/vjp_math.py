"""Gradients of NumPy's mathematical functions: every ufunc, plus clip, where,
nan_to_num, real_if_close, interp, convolve, correlate, sinc, i0, unwrap,
polyval, trapezoid, angle, real, imag.

Complex convention (that of :func:`minpy.testing.check_grads`): the gradient
``g_in`` of a real loss ``L`` satisfies ``dL = Re(sum(conj(g_in) * dx))``, so
a holomorphic ``f`` has VJP ``g * conj(f'(x))``; real inputs get real gradients.

Choices:

- ``maximum``/``minimum``/``fmax``/``fmin``: the gradient goes to the argument
  NumPy's forward selects; ties split it evenly (half to each argument). NaN: a
  NaN result was selected from a NaN argument, so the gradient goes to the NaN
  (``maximum(nan, 2)``: all to the NaN, as PyTorch and JAX do), while ``fmax``/
  ``fmin`` ignore a NaN and give it to the number they return; two NaNs are a tie
  (half each). NaN counts as equal to NaN, so a gradient is never all zero.
  (Costs one ``min`` pass over the result to look for a NaN.)
- ``clip`` gives the gradient to ``a`` when ``a`` equals a bound;
- integer and bool operands of every ufunc rule enter it as floats, in the
  result's float dtype (``float_operands``: what the ufunc's loop computed in),
  so ``x * x`` of an int32 constant cannot overflow and ``log`` of an int8 one
  does not run in float16 (``ldexp``'s exponent stays an integer);
- ``remainder``/``fmod``: 1 w.r.t. x, minus the integer quotient w.r.t. y;
- zero but defined gradients (not "nondiff", as they are differentiable in
  some argument): ``copysign`` and ``ldexp`` w.r.t. their second argument,
  ``heaviside`` w.r.t. x1 (x2 gets g where x1 == 0), ``nextafter`` (1 w.r.t.
  x), ``sign`` of real input (complex: the derivative of z/|z|);
- ``matmul``/``vecdot``/``matvec``/``vecmat`` broadcast and take 1-D operands;
  ``axes=``, ``axis=`` and ``keepdims=True`` move the core axes last (_gufunc_axes.py);
- ``i0``, ``polyval``, ``trapezoid`` and ``interp`` are differentiated through
  a re-implementation in minpy functions (``vjp_via_reference``); ``interp`` has no
  gradient w.r.t. ``xp``;
- every binary ufunc's ``outer`` method gets the elementwise rule.

Every rule is written with minpy's own functions, so it is differentiable
again (grad of grad).
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import math
import numbers

import numpy

from ..core.autograd import defvjp, def_nondiff, stop_gradient
from ..core.custom_ops import customop
from ..core.wrappers import ufunc as _ufunc_type
from ..core.array import Array, new, wait
from ..core.tape import recording
from ..dispatch.backend import NUMPY, backend_for, backend_of
from ..dispatch.transfer import context_of, data_on, move_raw
import minpy.numpy as mnp
from .rule_helpers import (NEEDS_FLOAT, conj_if_complex, float_operand, float_operands, has_nan,
                           is_complex, jit_tracing, real_part, unbroadcast, vjp_via_reference)

__all__ = ["NONDIFF_UFUNCS", "NONDIFF_FUNCTIONS"]

# Piecewise constant, boolean, integer-only or datetime: no gradient.
NONDIFF_UFUNCS = (
    "floor", "ceil", "trunc", "rint", "signbit", "spacing", "floor_divide",
    "isnan", "isinf", "isfinite", "isnat",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_count", "invert",
    "left_shift", "right_shift", "gcd", "lcm",
)
# Rounding functions (piecewise constant).
NONDIFF_FUNCTIONS = ("around", "round", "fix")


# ------------------------------------------------------------------ helpers
def _mask(g, where):
    if type(g) is tuple:
        return tuple(mnp.where(where, gi, 0) for gi in g)
    return mnp.where(where, g, 0)


def _maker(d, i, with_kw, cast=True):
    """``cast``: integer/bool operands enter ``d`` in the float dtype of the result
    (:func:`float_operands`; what the ufunc's loop computed in)."""
    def general(ans, *args, where=True, **kw):
        target = args[i]
        if cast:
            args = float_operands(ans, args)
        vjp = d(ans, *args, **kw) if with_kw else d(ans, *args)

        def apply(g):
            if where is not True:
                g = _mask(g, where)
            r = vjp(g)
            return None if r is None else unbroadcast(r, target)
        return apply

    def maker(ans, *args, **kw):
        if kw:
            return general(ans, *args, **kw)
        target = args[i]
        if cast:        # float_operands' test inline: this runs for every traced ufunc
            for a in args:
                ta = type(a)
                if ta is Array:
                    if a._data.dtype.kind in NEEDS_FLOAT:
                        args = float_operands(ans, args)
                        break
                elif ta is not float and ta is not int and a is not None:
                    args = float_operands(ans, args)
                    break
        vjp = d(ans, *args)
        return lambda g: unbroadcast(vjp(g), target)
    return maker


def _rules(uf, *derivs, with_kw=False, cast=True):
    """Register ``uf``'s VJP: ``derivs[i](ans, *args) -> (g -> grad wrt args[i])``
    (before unbroadcasting; None as grad means zero). ``where=`` masks ``g``.
    Integer/bool operands reach ``derivs`` as floats unless ``cast`` is False."""
    defvjp(uf, *[None if d is None else _maker(d, i, with_kw, cast)
                 for i, d in enumerate(derivs)])


def _holo(uf, deriv):
    """Unary holomorphic (or real) ``uf`` with derivative ``deriv(ans, x)``."""
    def d(ans, x):
        dx = deriv(ans, x)
        return (lambda g: g * mnp.conj(dx)) if is_complex(dx) else (lambda g: g * dx)
    _rules(uf, d)


def _zero(ans, *args):
    return lambda g: None


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_D2R = math.pi / 180.0

# ------------------------------------------------------------------ unary ufuncs
_rules(mnp.negative, lambda ans, x: lambda g: -g)
_holo(mnp.positive, lambda ans, x: 1.0)
_holo(mnp.sqrt, lambda ans, x: 0.5 / ans)
_holo(mnp.cbrt, lambda ans, x: 1.0 / (3.0 * ans * ans))
_holo(mnp.square, lambda ans, x: 2.0 * x)
_holo(mnp.reciprocal, lambda ans, x: -ans * ans)
_holo(mnp.exp, lambda ans, x: ans)
_holo(mnp.exp2, lambda ans, x: ans * _LN2)
_holo(mnp.expm1, lambda ans, x: ans + 1.0)
_rules(mnp.log, lambda ans, x: lambda g: g / conj_if_complex(x))
_holo(mnp.log2, lambda ans, x: 1.0 / (x * _LN2))
_holo(mnp.log10, lambda ans, x: 1.0 / (x * _LN10))
_holo(mnp.log1p, lambda ans, x: 1.0 / (x + 1.0))
_holo(mnp.sin, lambda ans, x: mnp.cos(x))
_holo(mnp.cos, lambda ans, x: -mnp.sin(x))
_holo(mnp.tan, lambda ans, x: ans * ans + 1.0)
_holo(mnp.arcsin, lambda ans, x: 1.0 / mnp.sqrt(1.0 - x * x))
_holo(mnp.arccos, lambda ans, x: -1.0 / mnp.sqrt(1.0 - x * x))
_holo(mnp.arctan, lambda ans, x: 1.0 / (x * x + 1.0))
_holo(mnp.sinh, lambda ans, x: mnp.cosh(x))
_holo(mnp.cosh, lambda ans, x: mnp.sinh(x))
_holo(mnp.tanh, lambda ans, x: 1.0 - ans * ans)
_holo(mnp.arcsinh, lambda ans, x: 1.0 / mnp.sqrt(x * x + 1.0))
_holo(mnp.arccosh, lambda ans, x: 1.0 / (mnp.sqrt(x - 1.0) * mnp.sqrt(x + 1.0)))
_holo(mnp.arctanh, lambda ans, x: 1.0 / (1.0 - x * x))
for _f in (mnp.deg2rad, mnp.radians):
    _holo(_f, lambda ans, x: _D2R)
for _f in (mnp.rad2deg, mnp.degrees):
    _holo(_f, lambda ans, x: 1.0 / _D2R)


def _abs_d(ans, x):
    if is_complex(x):       # |z| is real: g_in = Re(g) * z / |z| (0 at z = 0)
        return lambda g: real_part(g) * x / mnp.where(ans == 0, 1, ans)
    return lambda g: g * mnp.sign(x)


def _sign_d(ans, x):
    if is_complex(x):       # sign(z) = z / |z|
        return lambda g: vjp_via_reference(lambda z: z / mnp.abs(z), 0)(ans, x)(g)
    return lambda g: None


_rules(mnp.absolute, _abs_d)
_rules(mnp.fabs, lambda ans, x: lambda g: g * mnp.sign(x))
_rules(mnp.sign, _sign_d)
_rules(mnp.conjugate, lambda ans, x: lambda g: mnp.conj(g))

# ------------------------------------------------------------------ binary ufuncs
_rules(mnp.add, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: g)
# y's gradient is summed down to y's shape first, then negated (the smaller array)
_rules(mnp.subtract, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: -unbroadcast(g, y))
_rules(mnp.multiply,
       lambda ans, x, y: (lambda g: g * mnp.conj(y)) if is_complex(y) else (lambda g: g * y),
       lambda ans, x, y: (lambda g: g * mnp.conj(x)) if is_complex(x) else (lambda g: g * x))
_rules(mnp.divide, lambda ans, x, y: lambda g: g / conj_if_complex(y),
       lambda ans, x, y: lambda g: -g * conj_if_complex(ans / y))


def _pow_less_one(power, x, y):
    """``x ** (y - 1)`` for a constant ``y``. For ``power`` on a real ``x`` that is ones
    for y = 1, ``x`` itself for y = 2 and ``x * x`` for y = 3 (floating x), NumPy's own
    values: a device's pow may be an ulp off even there."""
    e = y - 1
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if power is mnp.power and kind is not None:
        if e == 0 and kind in "fiu":
            return mnp.ones_like(x)
        if e == 1 and kind in "fiu":
            return x
        if e == 2 and kind == "f":
            return x * x
    return power(x, e)


def _pow_dx(power):
    def d(ans, x, y):
        if isinstance(y, numbers.Number):
            if y == 0:
                return lambda g: None
            return lambda g: g * conj_if_complex(y * _pow_less_one(power, x, y))
        # x ** where(y, y - 1, 1): no 0 * inf at x = y = 0
        return lambda g: g * conj_if_complex(y * power(x, mnp.where(y == 0, 1, y - 1)))
    return d


def _pow_dy(ans, x, y):
    # log(x) with x = 0 replaced (there d/dy x**y = 0 for y > 0)
    return lambda g: g * conj_if_complex(ans * mnp.log(mnp.where(x == 0, 1, x)))


_rules(mnp.power, _pow_dx(mnp.power), _pow_dy)
_rules(mnp.float_power, _pow_dx(mnp.float_power), _pow_dy)


def _atan2_d(i):
    def d(ans, x1, x2):
        return lambda g: g * (x2 if i == 0 else -x1) / (x1 * x1 + x2 * x2)
    return d


_rules(mnp.arctan2, _atan2_d(0), _atan2_d(1))
_rules(mnp.hypot, lambda ans, x, y: lambda g: g * x / ans, lambda ans, x, y: lambda g: g * y / ans)
_rules(mnp.logaddexp, lambda ans, x, y: lambda g: g * mnp.exp(x - ans),
       lambda ans, x, y: lambda g: g * mnp.exp(y - ans))
_rules(mnp.logaddexp2, lambda ans, x, y: lambda g: g * mnp.exp2(x - ans),
       lambda ans, x, y: lambda g: g * mnp.exp2(y - ans))


def _buffer_on(v, ctx):
    """The backend array of an Array on ``ctx`` (after its pending writes; a cached copy
    where it lives elsewhere), a bare backend array moved there; numbers as they are."""
    if type(v) is Array:
        wait(v)
        return data_on(v, ctx)
    if isinstance(v, numpy.ndarray) or backend_of(v) is not NUMPY:
        return move_raw(v, ctx)
    return v


def _same(u, v, xp):
    """``u == v`` with NaN equal to NaN (backend arrays or numbers)."""
    return (u == v) | (xp.isnan(u) & xp.isnan(v))


@customop
def _picked_gradient(g, ans, a, x, y):
    """``_pick``'s first-order gradient as one step on buffers, for ``minpy.jit`` to
    replay with the tie and NaN tests made at each call: four passes instead of six
    recorded calls (ReLU's backward; -0.14 ms of a 7.2 ms MLP step at 512x1024).

    Runs where ``ans`` lives, its device current, every operand brought there; on a
    GPU without branching on values (a branch would read the device to the host)."""
    ctx = context_of(ans._data)
    backend = backend_for(ctx)
    xp = backend.xp
    ad, gd, a_d, xd, yd = (_buffer_on(v, ctx) for v in (ans, g, a, x, y))
    floating = ad.dtype.kind in "fc"
    with backend.device(ctx.device_id):
        if backend is not NUMPY:
            if floating:
                sel, tie = _same(ad, a_d, xp), _same(xd, yd, xp)
            else:
                sel, tie = ad == a_d, xd == yd
            picked = gd * sel
            return new(picked - 0.5 * (picked * tie))
        return new(picked_gradient_host(gd, ad, a_d, xd, yd))


def picked_gradient_host(g, ans, a, x, y):
    """``_picked_gradient`` on host buffers (NumPy arrays or numbers): returns the
    gradient's buffer; ``minpy.jit`` replays this directly (see ``JIT_HOST_FORMS``)."""
    if ans.dtype.kind in "fc" and numpy.count_nonzero(numpy.isnan(ans)):
        picked = g * _same(ans, a, numpy)
        tie = _same(x, y, numpy)
    else:
        picked = g * (ans == a)
        tie = x == y
    if numpy.count_nonzero(tie):
        picked = picked - 0.5 * (picked * tie)
    return picked


# custom ops' lean forms for ``minpy.jit`` to replay on host buffers:
# {qualified name: fn(*backend arrays) -> tuple of backend arrays}
JIT_HOST_FORMS = {"customop._picked_gradient": lambda *a: (picked_gradient_host(*a),)}


def _pick(i):
    """Gradient to the selected argument of maximum/minimum/fmax/fmin; half each on ties.

    A NaN result is selected from a NaN argument (maximum/minimum propagate NaN;
    fmax/fmin give NaN only when both are): NaN counts as equal to NaN, so the
    gradient goes to the NaN, half each when both are NaN (a tie)."""
    def d(ans, x, y):
        a = x if i == 0 else y

        def vjp(g):
            tracing = jit_tracing()
            if tracing and not recording():
                return _picked_gradient(g, ans, a, x, y)
            if tracing or has_nan(ans):
                # NaN-aware masks (always while tracing: no branching on values)
                sel = (ans == a) | (mnp.isnan(ans) & mnp.isnan(a))
                picked = g * sel
                return picked - 0.5 * (picked * ((x == y) | (mnp.isnan(x) & mnp.isnan(y))))
            # multiply by the mask, not where(): branch-free, ~15x faster on random masks
            picked = g * (ans == a)
            tie = x == y
            if not tie.any():     # common case: one pass less
                return picked
            return picked - 0.5 * (picked * tie)       # stays in g's dtype
        return vjp
    return d


for _f in (mnp.maximum, mnp.minimum, mnp.fmax, mnp.fmin):
    _rules(_f, _pick(0), _pick(1))


def _mod_dy(ans, x, y):
    # x - ans = n * y with n the integer quotient (trunc for fmod, floor for remainder)
    return lambda g: -g * mnp.rint((x - ans) / y)


for _f in (mnp.fmod, mnp.remainder):
    _rules(_f, lambda ans, x, y: lambda g: g, _mod_dy)
_rules(mnp.divmod, lambda ans, x, y: lambda g: g[1],
       lambda ans, x, y: lambda g: -g[1] * ans[0])
_rules(mnp.modf, lambda ans, x: lambda g: g[0])
_rules(mnp.frexp, lambda ans, x: lambda g: mnp.ldexp(g[0], -ans[1]))
_rules(mnp.ldexp, lambda ans, x, n: lambda g: mnp.ldexp(g, n), _zero,  # n is an integer
       cast=False)
_rules(mnp.copysign,
       lambda ans, x, y: lambda g: mnp.where(mnp.signbit(x) != mnp.signbit(ans), -g, g), _zero)
_rules(mnp.nextafter, lambda ans, x, y: lambda g: g, _zero)      # x plus one ulp
# heaviside(x1, x2) is x2 where x1 == 0, constant elsewhere
_rules(mnp.heaviside, _zero, lambda ans, x1, x2: lambda g: mnp.where(x1 == 0, g, 0))


# ------------------------------------------------------------------ matmul & co
# axes=/axis=/keepdims=: core axes moved last, the rule below applied, moved back
from ._gufunc_axes import on_core_axes as _on_core_axes     # noqa: E402


def _matmul_d(i):
    def d(ans, a, b):
        def vjp(g):
            a2 = mnp.expand_dims(a, 0) if mnp.ndim(a) == 1 else a
            b2 = mnp.expand_dims(b, -1) if mnp.ndim(b) == 1 else b
            if mnp.ndim(b) == 1:
                g = mnp.expand_dims(g, -1)
            if mnp.ndim(a) == 1:
                g = mnp.expand_dims(g, -2)
            if i == 0:
                r = mnp.matmul(g, mnp.swapaxes(conj_if_complex(b2), -1, -2))
                return r[..., 0, :] if mnp.ndim(a) == 1 else r
            r = mnp.matmul(mnp.swapaxes(conj_if_complex(a2), -1, -2), g)
            return r[..., 0] if mnp.ndim(b) == 1 else r
        return vjp
    return d


_rules(mnp.matmul, _on_core_axes("matmul", 0, _matmul_d(0)),
       _on_core_axes("matmul", 1, _matmul_d(1)), with_kw=True)
# vecdot(x1, x2) = sum(conj(x1) * x2, -1); matvec(A, v) = A @ v; vecmat(x, A) = conj(x) @ A
_rules(mnp.vecdot,
       _on_core_axes("vecdot", 0, lambda ans, x1, x2: lambda g: conj_if_complex(g)[..., None] * x2),
       _on_core_axes("vecdot", 1, lambda ans, x1, x2: lambda g: g[..., None] * x1),
       with_kw=True)
_rules(mnp.matvec,
       _on_core_axes("matvec", 0,
                     lambda ans, a, v: lambda g: g[..., :, None] * conj_if_complex(v)[..., None, :]),
       _on_core_axes("matvec", 1, lambda ans, a, v: lambda g: conj_if_complex(mnp.vecmat(g, a))),
       with_kw=True)
_rules(mnp.vecmat,
       _on_core_axes("vecmat", 0, lambda ans, x, a: lambda g: mnp.matvec(a, conj_if_complex(g))),
       _on_core_axes("vecmat", 1, lambda ans, x, a: lambda g: x[..., :, None] * g[..., None, :]),
       with_kw=True)

def_nondiff(*[getattr(mnp, n) for n in NONDIFF_UFUNCS + NONDIFF_FUNCTIONS])


# ------------------------------------------------------------------ complex parts
_rules(mnp.real, lambda ans, x: lambda g: real_part(g))
_rules(mnp.imag, lambda ans, x: (lambda g: 1j * real_part(g)) if is_complex(x) else (lambda g: None))


def _angle_d(ans, z, deg=False):
    if not is_complex(z):
        return lambda g: None          # 0 or pi: piecewise constant
    scale = 1.0 / _D2R if deg else 1.0
    return lambda g: unbroadcast(1j * scale * real_part(g) / mnp.conj(z), z)


defvjp(mnp.angle, _angle_d)


# ------------------------------------------------------------------ selection
def _clip_bounds(args, kw):
    lo = args[1] if len(args) > 1 else kw.get("a_min", kw.get("min"))
    hi = args[2] if len(args) > 2 else kw.get("a_max", kw.get("max"))
    return lo, hi


def _clip_d(part):
    """clip = minimum(maximum(a, lo), hi): ``a`` gets g inside [lo, hi] (bounds included)."""
    def maker(ans, a, *args, **kw):
        lo, hi = _clip_bounds((a,) + args, kw)
        m = a if lo is None else mnp.maximum(a, lo)
        to_hi = mnp.zeros(mnp.shape(ans), bool) if hi is None else m > hi
        if part == "hi":
            return lambda g: unbroadcast(mnp.where(to_hi, g, 0), hi)
        to_lo = mnp.zeros(mnp.shape(ans), bool) if lo is None else a < lo
        sel = to_lo if part == "lo" else ~to_lo
        target = lo if part == "lo" else a
        return lambda g: unbroadcast(mnp.where(to_hi, 0, mnp.where(sel, g, 0)), target)
    return maker


defvjp(mnp.clip, _clip_d("a"), _clip_d("lo"), _clip_d("hi"), a_min=_clip_d("lo"),
       min=_clip_d("lo"), a_max=_clip_d("hi"), max=_clip_d("hi"))
defvjp(mnp.where, _zero,
       lambda ans, c, x, y: lambda g: unbroadcast(mnp.where(c, g, 0), x),
       lambda ans, c, x, y: lambda g: unbroadcast(mnp.where(c, 0, g), y))
defvjp(mnp.nan_to_num, lambda ans, x, *a, **k: lambda g: mnp.where(mnp.isfinite(x), g, 0))
defvjp(mnp.real_if_close, lambda ans, a, *args, **kw: lambda g: g)
# unwrap adds piecewise-constant multiples of the period
defvjp(mnp.unwrap, lambda ans, p, *args, **kw: lambda g: g)


def _sinc_d(ans, x):
    # (cos(pi x) - sinc(x)) / x, and its Taylor series near 0 (exact to all orders there)
    small = mnp.abs(x) < 1e-3
    safe = mnp.where(small, 1.0, x)
    series = x * (x * x * (math.pi ** 4 / 30.0) - math.pi ** 2 / 3.0)
    return lambda g: g * conj_if_complex(mnp.where(small, series, (mnp.cos(math.pi * safe) - ans) / safe))


_rules(mnp.sinc, _sinc_d)


# ------------------------------------------------------------------ re-implemented
def _chbevl(x, vals):
    b0, b1, b2 = vals[0], 0.0, 0.0
    for v in vals[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + v
    return 0.5 * (b0 - b2)


def _i0_ref(x):
    """numpy.i0's Chebyshev approximation in minpy functions (its derivative is i1)."""
    from numpy.lib._function_base_impl import _i0A, _i0B
    x = mnp.abs(x)
    small = x <= 8.0
    xs, xl = mnp.where(small, x, 0.0), mnp.where(small, 9.0, x)     # no inf in either branch
    return mnp.where(small, mnp.exp(xs) * _chbevl(xs / 2.0 - 2, _i0A),
                     mnp.exp(xl) * _chbevl(32.0 / xl - 2.0, _i0B) / mnp.sqrt(xl))


def _polyval_ref(p, x):
    if isinstance(p, numpy.poly1d):      # p[k] of a poly1d is the power-k coefficient
        p = p.coeffs
    y = mnp.zeros_like(x) if not isinstance(x, numbers.Number) else 0.0
    for k in range(numpy.shape(p)[0]):
        y = y * x + p[k]
    return y


def _trapezoid_ref(y, x=None, dx=1.0, axis=-1):
    nd = mnp.ndim(y)
    if x is None:
        d = dx
    elif mnp.ndim(x) == 1:
        shape = [1] * nd
        shape[axis] = numpy.shape(x)[0] - 1
        d = mnp.reshape(x[1:] - x[:-1], shape)
    else:
        d = mnp.diff(x, axis=axis)
    s1, s2 = [slice(None)] * nd, [slice(None)] * nd
    s1[axis], s2[axis] = slice(1, None), slice(None, -1)
    return mnp.sum(d * (y[tuple(s1)] + y[tuple(s2)]) / 2.0, axis=axis)


def _interp_ref(x, xp, fp, left=None, right=None, period=None):
    """numpy.interp in minpy functions, differentiable in x, fp, left, right (not xp).
    Integer/bool x, xp and fp are floats, as NumPy converts them (no overflow in
    ``xp[j + 1] - xp[j]``)."""
    f64 = numpy.float64
    x = float_operand(x, f64)
    xp = stop_gradient(float_operand(mnp.asarray(xp), f64))
    fp = float_operand(mnp.asarray(fp), f64)
    if period is not None:
        x, xp = x % period, xp % period
        order = mnp.argsort(xp)
        ext = mnp.concatenate((order[-1:], order, order[:1]))
        xp, fp = xp[ext] + mnp.asarray([-period] + [0.0] * (len(order)) + [period]), fp[ext]
        left = right = None
    xs, n = stop_gradient(x), numpy.shape(xp)[0]
    j = mnp.clip(mnp.searchsorted(xp, xs, side="right") - 1, 0, max(n - 2, 0))
    if n == 1:
        val = fp[j] + mnp.zeros_like(xs)
    else:
        t = (x - xp[j]) / (xp[j + 1] - xp[j])
        val = fp[j] * (1.0 - t) + fp[j + 1] * t
    val = mnp.where(xs < xp[0], fp[0] if left is None else left, val)
    return mnp.where(xs > xp[-1], fp[-1] if right is None else right, val)


defvjp(mnp.interp, vjp_via_reference(_interp_ref, 0), None, vjp_via_reference(_interp_ref, 2), vjp_via_reference(_interp_ref, 3),
       vjp_via_reference(_interp_ref, 4), left=vjp_via_reference(_interp_ref, "left"), right=vjp_via_reference(_interp_ref, "right"))
defvjp(mnp.i0, vjp_via_reference(_i0_ref, 0))
defvjp(mnp.polyval, vjp_via_reference(_polyval_ref, 0), vjp_via_reference(_polyval_ref, 1))
defvjp(mnp.trapezoid, vjp_via_reference(_trapezoid_ref, 0), vjp_via_reference(_trapezoid_ref, 1), vjp_via_reference(_trapezoid_ref, 2),
       x=vjp_via_reference(_trapezoid_ref, "x"), dx=vjp_via_reference(_trapezoid_ref, "dx"))


# ------------------------------------------------------------------ convolve / correlate
def _conv_offset(n, m, mode, correlate):
    """Start of the ``mode`` output inside the 'full' one."""
    k = min(n, m)
    if mode == "full":
        return 0
    if mode == "valid":
        return k - 1
    return k // 2 if correlate and n < m else (k - 1) // 2


def _conv_d(i, correlate):
    def maker(ans, a, v, mode="valid" if correlate else "full"):
        n, m = numpy.shape(a)[0], numpy.shape(v)[0]
        off, length = _conv_offset(n, m, mode, correlate), numpy.shape(ans)[0]
        if i == 0:      # both: g_a = convolve(g, v, 'full')[m-1-off : m-1-off+n]
            s = m - 1 - off
            if correlate:
                return lambda g: mnp.convolve(g, v, "full")[s:s + n]
            return lambda g: mnp.correlate(g, v, "full")[s:s + n]
        if correlate:   # g_v = correlate(a, g, 'full')[off+L-m : off+L]
            return lambda g: mnp.correlate(a, g, "full")[off + length - m:off + length]
        s = n - 1 - off
        return lambda g: mnp.correlate(g, a, "full")[s:s + m]
    return maker


defvjp(mnp.convolve, _conv_d(0, False), _conv_d(1, False))
defvjp(mnp.correlate, _conv_d(0, True), _conv_d(1, True))


# ------------------------------------------------------------------ ufunc.outer
def _outer_maker(elementwise, i):
    def maker(ans, a, b, **kw):
        shape_a = numpy.shape(a)
        a2 = mnp.reshape(a, shape_a + (1,) * mnp.ndim(b))
        vjp = elementwise(ans, a2, b, **kw)
        if i == 0:       # a zero gradient (None) stays None
            return lambda g: (lambda r: None if r is None else mnp.reshape(r, shape_a))(vjp(g))
        return vjp
    return maker


for _name, _uf in sorted(vars(mnp).items()):
    _p = getattr(_uf, "_prim", None)
    if isinstance(_uf, _ufunc_type) and _p.vjp and _uf.nin == 2 and _uf.nout == 1 \
            and _uf.signature is None and _name == _uf.__name__:
        defvjp(_uf._method("outer"), *[_outer_maker(_p.vjp[k], k) if k in _p.vjp else None
                                        for k in range(2)])

table_ends(__name__)
