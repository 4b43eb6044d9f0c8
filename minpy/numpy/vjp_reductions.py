"""Gradient rules for reductions, scans and statistics: sum, prod, mean, var,
std, max/min/amax/amin, ptp, average, cumsum, cumprod, cumulative_sum/prod,
the nan* variants, median and the quantile family, cov, corrcoef, bincount
(w.r.t. weights), ``add/multiply/maximum/minimum/fmax/fmin.reduce`` and
``add/multiply.accumulate``; argmax & co. are marked not differentiable. Rules
use minpy's own functions, so they are differentiable again (grad of grad).

- axis None/int/negative/tuple, keepdims, dtype (gradients are cast back to
  the input's dtype), initial= and where= (zero gradient where False).
- Ties (max/min & co., ptp, maximum/minimum.reduce): the gradient is split
  equally among the elements equal to the extremum, as in HIPS autograd.
- NaN (max/min/amax/amin/maximum.reduce/minimum.reduce propagate it; nanmax/
  nanmin/fmax.reduce/fmin.reduce ignore it): the gradient goes to the element(s)
  the forward selects, NaN counting as equal to NaN — to the NaN of ``max([1,
  nan, 2])`` (as PyTorch and JAX), to the 2 of ``nanmax``; several NaNs (an
  all-NaN slice of nanmax) are a tie, split equally. Never all zero. (ptp = max -
  min: the two cancel at a NaN.)
- prod/cumprod with zeros are exact: with no zero, autograd's ``prod/x`` and
  ``revcumsum(g*cumprod)/x``; with zeros, the exclusive product (left times
  right exclusive cumprods) and, for cumprod, ``L_i * S_i`` with ``S_i = g_i +
  x_{i+1} S_{i+1}`` by a log-depth scan: polynomials in x, exact at any order.
- Quantiles (any method): a result is ``(1-t) xs[lo] + t xs[hi]`` of the
  sorted slice, lo, hi, t read off ``quantile(arange(count), q, method)``; the
  gradient goes to the elements of those ranks (ties: one of them). q and
  weights= get none; overwrite_input=True is refused (it reorders the input).
- Complex: check_grads' convention, a holomorphic f has VJP ``g * conj(f')``;
  ``var(z)`` gives ``2 (z - mean) / (N - ddof)``; corrcoef is real-only.
- std/nanstd where the result is 0 (a single-element axis, or a constant
  slice): the gradient is 0, the finite-difference answer (as HIPS autograd
  gives for one element) rather than the 0/0 = NaN of ``(x - m) / (std (N -
  ddof))``; for a single-element axis it is exact at every order. (A constant
  slice of several elements is a kink of std: no derivative exists there and
  0 is the central difference.) var needs no such care: ``2 (x - m) / (N -
  ddof)`` is 0 there already.
- ddof >= N: NumPy divides by ``max(N - ddof, 0)`` = 0 (an inf/NaN result); the
  rules divide by the same float 0, so the gradient is inf/NaN too (no
  ZeroDivisionError, and no finite gradient of the wrong sign for ddof > N). An
  empty input (a reduction over an empty axis: NaN result) gets an empty gradient.
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import math

import numpy
from numpy.lib.array_utils import normalize_axis_tuple

import minpy.numpy as mnp
from ..core.array import Array
from ..core.autograd import defvjp, def_nondiff, stop_gradient
from .rule_helpers import broadcast_grad, has_nan, jit_tracing, unbroadcast

_NO = numpy._NoValue


# ---------------------------------------------------------------- helpers
def _arr(x):
    return x if type(x) is Array else mnp.asarray(x)


def _const(x):
    """``x`` as an Array no tape traces (for masks, ranks, counts)."""
    return stop_gradient(x) if type(x) is Array else mnp.asarray(x)


def _shape(a):
    return tuple(a.shape) if type(a) is Array else numpy.shape(a)


def _shape_axes(a, axis):
    shape = _shape(a)
    key = (shape, axis)
    try:
        hit = _AXES.get(key)
    except TypeError:           # an unhashable axis (a list): no caching
        hit, key = None, None
    if hit is None:
        hit = shape, tuple(range(len(shape))) if axis is None else \
            normalize_axis_tuple(axis, len(shape))
        if key is not None and len(_AXES) < 4096:
            _AXES[key] = hit
    return hit


_AXES = {}


def _keep_shape(shape, axes):
    ks = _KS.get((shape, axes))
    if ks is None:
        ks = tuple(1 if i in axes else s for i, s in enumerate(shape))
        if len(_KS) < 4096:
            _KS[(shape, axes)] = ks
    return ks


_KS = {}


def _keep(g, shape, axes):
    """A reduced gradient reshaped to the keepdims shape (it broadcasts against ``shape``)."""
    if g.ndim == 0:
        return g
    ks = _keep_shape(shape, axes)
    return g if g.shape == ks else mnp.reshape(g, ks)


def _expand(g, shape, axes):
    """A reduced (or keepdims) gradient broadcast back to ``shape``."""
    g = _keep(g, shape, axes)
    return g if g.shape == shape else broadcast_grad(g, shape)


def _dtype(x):
    return x.dtype if type(x) is Array else numpy.result_type(x)


def _cast_like(g, x):
    """Gradient ``g`` in the dtype of input ``x`` (real part for a real input)."""
    return _cast_to(g, x.dtype if type(x) is Array else numpy.result_type(x))


def _cast_to(g, dt):
    gt = g._data.dtype if type(g) is Array else g.dtype
    if gt == dt or dt.kind not in "fc":
        return g
    if gt.kind == "c" and dt.kind != "c":
        g = mnp.real(g)
    return g if g.dtype == dt else g.astype(dt)


def _conj(v):
    return mnp.conj(v) if v.dtype.kind == "c" else v


def _mask(where, a=None, nan=False):
    """None for no mask, else an untraced bool Array (``where`` and, if ``nan``, not NaN)."""
    m = None if where is _NO or where is None or where is True else \
        mnp.asarray(_const(where), dtype=bool)
    if nan:
        ok = mnp.logical_not(mnp.isnan(_const(a)))
        m = ok if m is None else mnp.logical_and(m, ok)
    return m


def _masked(r, mask):
    return r if mask is None else mnp.where(mask, r, 0)


def _count(mask, shape, axes):
    """Elements per reduced slice: an int, or a keepdims-shaped Array under a mask."""
    if mask is None:
        return math.prod(shape[i] for i in axes)
    return mnp.sum(mnp.broadcast_to(mask, shape), axis=axes, keepdims=True)


def _seq(maker):
    """Let a rule for argument 0 accept a list/tuple of arrays (``sum([x, y])``)."""
    def m(ans, a, *args, **kw):
        if type(a) is Array:
            return maker(ans, a, *args, **kw) if kw else maker(ans, a, *args)
        if isinstance(a, (list, tuple)):
            inner = maker(ans, mnp.stack([_arr(e) for e in a]), *args, **kw)
            return lambda g: (lambda full: [full[j] for j in range(len(a))])(inner(g))
        return maker(ans, a, *args, **kw)
    return m


def _to_last(x, axes):
    """Move ``axes`` to the end and flatten them: (x', perm, moved shape)."""
    shape = tuple(x.shape)
    rest = [i for i in range(len(shape)) if i not in axes]
    perm = rest + list(axes)
    if perm != sorted(perm):
        x = mnp.transpose(x, perm)
    moved = tuple(shape[i] for i in perm)
    return mnp.reshape(x, moved[:len(rest)] + (math.prod(shape[i] for i in axes),)), perm, moved


def _from_last(y, perm, moved):
    y = mnp.reshape(y, moved)
    return y if perm == sorted(perm) else mnp.transpose(y, [int(i) for i in numpy.argsort(perm)])


def _excl_cumprod(v):
    """Exclusive cumulative product along the last axis: [1, v0, v0 v1, ...]."""
    one = mnp.ones(tuple(v.shape[:-1]) + (1,), dtype=v.dtype)
    return mnp.cumprod(mnp.concatenate([one, v[..., :-1]], axis=-1), axis=-1)


def _shift_left(v, d):
    pad = mnp.zeros(tuple(v.shape[:-1]) + (min(d, v.shape[-1]),), dtype=v.dtype)
    return mnp.concatenate([v[..., d:], pad], axis=-1)


def rev_recurrence(a, b):
    """S with S_i = b_i + a_i S_{i+1} (S past the end is 0), by a log-depth scan."""
    n, d = b.shape[-1], 1
    while d < n:
        b = b + a * _shift_left(b, d)
        a = a * _shift_left(a, d)
        d *= 2
    return b


def revcumsum(g, axis):
    return mnp.flip(mnp.cumsum(mnp.flip(g, axis), axis=axis), axis)


# ---------------------------------------------------------------- sum / mean / prod
def _sum_maker(default_axis, nan=False, mean=False):
    def maker(ans, a, axis=default_axis, dtype=None, out=None, keepdims=False,
              initial=_NO, where=_NO):
        if type(a) is not Array and isinstance(a, (list, tuple)):     # sum([x, y])
            return seq_maker(ans, a, axis, dtype, out, keepdims, initial, where)
        if axis is None and where is _NO and not nan and type(a) is Array:
            d = a._data        # the most common case: sum(x), mean(x)
            if mean:
                n = d.size
                return lambda g: _cast_to(broadcast_grad(g / n, d.shape), d.dtype)
            return lambda g: _cast_to(broadcast_grad(g, d.shape), d.dtype)
        shape, axes = _shape_axes(a, axis)
        if where is _NO and not nan:        # the common case: no mask
            dt = _dtype(a)
            if mean:
                n = math.prod(shape[i] for i in axes)
                # scale the small reduced gradient, then broadcast it
                return lambda g: _cast_to(_expand(g / n, shape, axes), dt)
            if axis is None:
                return lambda g: _cast_to(broadcast_grad(g, shape), dt)
            return lambda g: _cast_to(_expand(g, shape, axes), dt)
        mask = _mask(where, a, nan)
        if mean:
            n = _count(mask, shape, axes)
            return lambda g: _cast_like(_masked(_expand(g, shape, axes) / n, mask), a)
        return lambda g: _cast_like(_masked(_expand(g, shape, axes), mask), a)
    # the sum of one Array is the hottest rule: it checks for a sequence itself
    # rather than through the _seq wrapper (one call less)
    seq_maker = _seq(maker)
    return maker


def _prod_maker(default_axis, nan=False):
    def maker(ans, a, axis=default_axis, dtype=None, out=None, keepdims=False,
              initial=_NO, where=_NO):
        shape, axes = _shape_axes(a, axis)
        mask = _mask(where, a, nan)

        def vjp(g):
            x = _arr(a) if mask is None else mnp.where(mask, a, 1)
            if x.dtype != ans.dtype:
                x = x.astype(ans.dtype)
            if bool(mnp.any(_const(x) == 0)):        # exclusive product, no division
                xt, perm, moved = _to_last(x, axes)
                ex = _excl_cumprod(xt) * mnp.flip(_excl_cumprod(mnp.flip(xt, -1)), -1)
                ex = _from_last(ex, perm, moved)
                if initial is not _NO:
                    ex = ex * initial
            else:
                ex = _expand(ans, shape, axes) / x
            return _cast_like(_masked(_expand(g, shape, axes) * _conj(ex), mask), a)
        return vjp
    return _seq(maker)


# ---------------------------------------------------------------- var / std
def _var_rule(std, nan, for_mean=False):
    """The rule for ``a`` (or, ``for_mean``, for the ``mean=`` argument) of var/std."""
    def maker(ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
              where=_NO, mean=_NO, correction=_NO):
        ddof = ddof if correction is _NO else correction
        shape, axes = _shape_axes(a, axis)
        if 0 in shape:          # an empty input: an empty gradient (the result is NaN)
            src = mean if for_mean else a
            return lambda g: _cast_like(mnp.zeros(_shape(src)), src) if for_mean else \
                _cast_like(mnp.zeros(shape), a)
        mask = _mask(where, a, nan)
        n = _count(mask, shape, axes)
        # NumPy divides by max(n - ddof, 0): ddof >= n gives inf/NaN, and so does the
        # gradient (a float 0 divisor, not Python's ZeroDivisionError nor n - ddof < 0)
        d = float(max(n - ddof, 0)) if type(n) is int else mnp.maximum(n - ddof, 0)

        def vjp(g):
            x = _arr(a) if not nan else mnp.where(mask, a, 0)
            m = mean if mean is not _NO else mnp.mean(
                x, axis=axes, dtype=dtype, keepdims=True, where=True if mask is None else mask)
            gk = _keep(g, shape, axes)          # reduced shapes until the last product
            if std:
                # d std = (x - m) / (std (N - ddof)); where std is 0 the finite-difference
                # answer, 0 (the division by a safe 1 keeps grad of grad free of NaN)
                s = _keep(ans, shape, axes)
                zero = _const(s) == 0
                coef = mnp.where(zero, 0, gk) / (mnp.where(zero, 1, s) * d)
            else:
                coef = gk * (2 / d) if type(d) is not float or d else (gk * 2.0) / d
            r = _masked(coef * (x - m), mask)
            if for_mean:
                return _cast_like(unbroadcast(-mnp.sum(r, axis=axes, keepdims=True), mean), mean)
            return _cast_like(r, a)
        return vjp
    return maker if for_mean else _seq(maker)


# ---------------------------------------------------------------- max / min / ptp
def _ext_weights(a, ext, shape, axes, mask=None):
    """Untraced weights: 1/count on the elements equal to the extremum ``ext`` (NaN
    equal to NaN: a NaN extremum is the NaNs' — max/min propagate NaN, and
    nanmax/nanmin return NaN only for an all-NaN slice)."""
    ek = _keep(_const(ext), shape, axes)
    hit = a == ek                               # comparisons are never recorded
    if _dtype(a).kind in "fc" and (jit_tracing() or has_nan(ek)):
        hit = mnp.logical_or(hit, mnp.logical_and(mnp.isnan(_const(a)), mnp.isnan(ek)))
    if mask is not None:
        hit = mnp.logical_and(hit, mask)
    dt = _dtype(a)
    dt = _REAL.get(dt.char, numpy.float64) if dt.kind in "fc" else numpy.float64
    cnt = mnp.maximum(mnp.sum(hit, axis=axes, keepdims=True, dtype=dt), 1)
    return hit / cnt


_REAL = {c: numpy.empty(0, c).real.dtype for c in numpy.typecodes["AllFloat"]}


def _ext_rule(ans, a, axis=None, out=None, keepdims=False, initial=_NO, where=_NO):
    shape, axes = _shape_axes(a, axis)
    w = _ext_weights(a, ans, shape, axes, None if where is _NO else _mask(where))
    dt = _dtype(a)
    return lambda g: _cast_to(_keep(g, shape, axes) * w, dt)


def _ext_ufunc_rule(ans, a, axis=0, dtype=None, out=None, keepdims=False, initial=_NO,
                    where=True):
    return _ext_rule(ans, a, axis, None, keepdims, initial, where)


def _ptp_rule(ans, a, axis=None, out=None, keepdims=False):
    shape, axes = _shape_axes(a, axis)
    w = _ext_weights(a, mnp.max(_const(a), axis=axes, keepdims=True), shape, axes) - \
        _ext_weights(a, mnp.min(_const(a), axis=axes, keepdims=True), shape, axes)
    return lambda g: _cast_like(_keep(g, shape, axes) * w, a)


# ---------------------------------------------------------------- average
def _avg_weights(a, axis, weights):
    """(weights shaped to broadcast against a, their sums, axes, undo) as NumPy does."""
    shape, axes = _shape_axes(a, axis)
    w = _arr(weights)
    if tuple(w.shape) == shape:
        return w, mnp.sum(w, axis=axes, keepdims=True), axes, lambda r: r
    perm = [int(i) for i in numpy.argsort(axes)]
    wt = mnp.transpose(w, perm) if perm != sorted(perm) else w
    wb = mnp.reshape(wt, tuple(s if i in axes else 1 for i, s in enumerate(shape)))
    return wb, mnp.sum(wb, axis=axes, keepdims=True), axes, \
        lambda r: _from_last(r, perm, tuple(wt.shape))


def _avg_a(ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    def vjp(g):
        ga = g[0] if returned else g
        if weights is None:
            shape, axes = _shape_axes(a, axis)
            return _cast_like(_expand(ga, shape, axes) / _count(None, shape, axes), a)
        wb, sw, axes, _ = _avg_weights(a, axis, weights)
        return _cast_like(_expand(ga, tuple(a.shape), axes) * _conj(wb / sw), a)
    return vjp


def _avg_w(ans, a, axis=None, weights=None, returned=False, *, keepdims=False):
    def vjp(g):
        ga, gs = g if returned else (g, None)
        x = _arr(a)
        wb, sw, axes, undo = _avg_weights(x, axis, weights)
        shape = tuple(x.shape)
        r = _expand(ga, shape, axes) * _conj(
            (x - _expand(ans[0] if returned else ans, shape, axes)) / sw)
        if gs is not None:
            r = r + _expand(gs, shape, axes)
        return _cast_like(undo(unbroadcast(r, tuple(wb.shape))), weights)
    return vjp


# ---------------------------------------------------------------- cumulative
def _scan_prep(a, axis, g, ans, include_initial):
    """(x flattened when axis is None, normalized axis, g and ans without the initial)."""
    x = _arr(a)
    if axis is None:
        x, ax = (x if x.ndim == 1 else mnp.reshape(x, (-1,))), 0
    else:
        ax = normalize_axis_tuple(axis, x.ndim)[0]
    if include_initial:
        key = (slice(None),) * ax + (slice(1, None),)
        g, ans = g[key], ans[key]
    return x, ax, g, ans


def _cumsum_maker(default_axis, nan=False):
    def maker(ans, a, axis=default_axis, dtype=None, out=None, include_initial=False):
        mask = _mask(_NO, a, nan)

        def vjp(g):
            _, ax, g, _ = _scan_prep(a, axis, g, ans, include_initial)
            return _cast_like(_masked(mnp.reshape(revcumsum(g, ax), _shape(a)), mask), a)
        return vjp
    return maker


def _cumprod_maker(default_axis, nan=False):
    def maker(ans, a, axis=default_axis, dtype=None, out=None, include_initial=False):
        mask = _mask(_NO, a, nan)

        def vjp(g):
            x = _arr(a) if mask is None else mnp.where(mask, a, 1)
            x, ax, g, an = _scan_prep(x, axis, g, ans, include_initial)
            if x.dtype != an.dtype:
                x = x.astype(an.dtype)
            xc = _conj(x)
            if not bool(mnp.any(_const(x) == 0)):
                r = revcumsum(g * _conj(an), ax) / xc
            else:
                xc, perm, moved = _to_last(xc, (ax,))
                r = _excl_cumprod(xc) * rev_recurrence(_shift_left(xc, 1), _to_last(g, (ax,))[0])
                r = _from_last(r, perm, moved)
            return _cast_like(_masked(mnp.reshape(r, _shape(a)), mask), a)
        return vjp
    return maker


# ---------------------------------------------------------------- quantiles
def _quantile_weights(a, q, axis, method, nan, scale):
    """Untraced interpolation weights, shape q.shape + rest + (n,), and the layout."""
    shape, axes = _shape_axes(a, axis)
    xm, perm, moved = _to_last(_const(a), axes)
    rank = mnp.argsort(mnp.argsort(xm, axis=-1), axis=-1)
    qh = numpy.asarray(_const(q).asnumpy(), dtype=numpy.float64) / scale
    rest = tuple(xm.shape[:-1])
    cnt = (mnp.sum(mnp.logical_not(mnp.isnan(xm)), axis=-1).asnumpy() if nan
           else numpy.full(rest, xm.shape[-1]))
    v = numpy.full(qh.shape + rest, numpy.nan)
    for c in numpy.unique(cnt):
        if c > 0:
            vc = numpy.quantile(numpy.arange(c, dtype=numpy.float64), qh, method=method)
            if rest:
                v[..., cnt == c] = vc[..., None]
            else:
                v = numpy.asarray(vc)
    ok = ~numpy.isnan(v)
    lo = numpy.where(ok, numpy.floor(numpy.where(ok, v, 0)), -1)
    t = numpy.where(ok, v - lo, 0)
    hi = numpy.where(ok, numpy.minimum(lo + 1, cnt - 1), -1)
    dt = _dtype(a) if _dtype(a).kind == "f" else numpy.dtype(numpy.float64)
    lo, hi, t = (mnp.asarray(z[..., None]) for z in (lo, hi, t))
    w = (rank == lo).astype(dt) * (1 - t).astype(dt) + (rank == hi).astype(dt) * t.astype(dt)
    return w, qh.shape, rest, perm, moved


def _quantile_maker(nan, scale):
    def maker(ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
              keepdims=False, *, weights=None):
        if overwrite_input:
            raise ValueError("minpy.grad: a quantile/median with overwrite_input=True reorders "
                             "its input and cannot be differentiated; drop overwrite_input")
        if weights is not None or (nan and numpy.ndim(q) > 1 and len(_shape_axes(a, axis)[1]) > 1):
            raise TypeError("minpy.grad: quantile/percentile with weights=, or a nan-quantile "
                            "with a q of 2+ dimensions over several axes (where NumPy's result "
                            "layout differs from quantile's), has no gradient rule")
        w, qs, rest, perm, moved = _quantile_weights(a, q, axis, method, nan, scale)

        def vjp(g):
            r = mnp.reshape(g, qs + rest + (1,)) * w
            if qs:
                r = mnp.sum(r, axis=tuple(range(len(qs))))
            return _cast_like(_from_last(r, perm, moved), a)
        return vjp
    return maker


def _median_maker(nan):
    quantile_rule = _quantile_maker(nan, 1)

    def maker(ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
        return quantile_rule(ans, a, 0.5, axis, out, overwrite_input)
    return maker


# ---------------------------------------------------------------- cov / corrcoef
def _cov_vjp(m, y, rowvar, bias, ddof, fweights, aweights):
    """g (cotangent of cov's result) -> (grad m, grad y), as minpy expressions."""
    parts, backs = [], []
    for k, v in enumerate((m, y)):
        if v is None:
            continue
        v = _arr(v)
        X = v if v.ndim == 2 else mnp.reshape(v, (1, -1))
        flip = not rowvar and (v.ndim != 1 if k == 0 else X.shape[0] != 1)
        parts.append(mnp.transpose(X) if flip else X)
        backs.append((flip, tuple(v.shape), X.shape[0] if not flip else X.shape[1]))
    X = parts[0] if len(parts) == 1 else mnp.concatenate(parts, axis=0)
    n = X.shape[1]
    ddof = (1 if not bias else 0) if ddof is None else ddof
    fw = None if fweights is None else numpy.asarray(_const(fweights).asnumpy(), float)
    aw = None if aweights is None else numpy.asarray(_const(aweights).asnumpy(), float)
    w = fw if aw is None else (aw if fw is None else fw * aw)
    if w is None:
        xc, fact = X - mnp.mean(X, axis=1, keepdims=True), n - ddof
    else:
        ws = w.sum()
        xc = X - mnp.sum(X * w, axis=1, keepdims=True) / ws
        fact = ws if ddof == 0 else (ws - ddof if aw is None else ws - ddof * (w * aw).sum() / ws)
    fact = max(fact, 0.0)
    xw = xc if w is None else xc * mnp.asarray(w)

    def vjp(g):
        g = mnp.reshape(g, (X.shape[0],) * 2)
        gx = mnp.matmul(g + mnp.transpose(_conj(g)), xw) / fact
        out, start = [], 0
        for flip, shp, rows in backs:
            piece = gx[start:start + rows]
            start += rows
            out.append(mnp.reshape(mnp.transpose(piece) if flip else piece, shp))
        return out
    return vjp


def _cov_rule(k):
    def maker(ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None,
              aweights=None, *, dtype=None):
        src = (m, y)[k]
        f = _cov_vjp(_arr(m), y, rowvar, bias, ddof, fweights, aweights)
        return lambda g: _cast_like(f(g)[k], src)
    return maker


def _corrcoef_rule(k):
    def maker(ans, x, y=None, rowvar=True, *, dtype=None):
        src = (x, y)[k]
        if _dtype(x).kind == "c" or (y is not None and _dtype(y).kind == "c"):
            raise TypeError("minpy.grad: corrcoef of complex data has no gradient rule")

        def vjp(g):
            if ans.ndim == 0:           # one variable: the constant 1
                return mnp.zeros_like(_const(src))
            c = mnp.cov(x, y, rowvar, dtype=dtype)
            s = mnp.sqrt(mnp.diagonal(c))
            gr = g * ans
            gc = g / (s[:, None] * s[None, :]) - \
                mnp.diag((mnp.sum(gr, axis=0) + mnp.sum(gr, axis=1)) / (2 * s * s))
            return _cast_like(_cov_vjp(_arr(x), y, rowvar, False, None, None, None)(gc)[k], src)
        return vjp
    return maker


# ---------------------------------------------------------------- registration
def _bincount_w(ans, x, weights=None, minlength=0):
    return lambda g: _cast_like(g[_const(x)], weights)


def _install():
    defvjp(mnp.sum, _sum_maker(None))
    defvjp(mnp.nansum, _sum_maker(None, nan=True))
    defvjp(mnp.add._method("reduce"), _sum_maker(0))
    defvjp(mnp.mean, _sum_maker(None, mean=True))
    defvjp(mnp.nanmean, _sum_maker(None, nan=True, mean=True))
    defvjp(mnp.prod, _prod_maker(None))
    defvjp(mnp.nanprod, _prod_maker(None, nan=True))
    defvjp(mnp.multiply._method("reduce"), _prod_maker(0))
    for f, std, nan in ((mnp.var, False, False), (mnp.std, True, False),
                        (mnp.nanvar, False, True), (mnp.nanstd, True, True)):
        defvjp(f, _var_rule(std, nan), mean=_var_rule(std, nan, for_mean=True))
    for f in (mnp.max, mnp.min, mnp.amax, mnp.amin, mnp.nanmax, mnp.nanmin):
        defvjp(f, _seq(_ext_rule))
    for uf in (mnp.maximum, mnp.minimum, mnp.fmax, mnp.fmin):
        defvjp(uf._method("reduce"), _seq(_ext_ufunc_rule))
    defvjp(mnp.ptp, _seq(_ptp_rule))
    defvjp(mnp.average, _seq(_avg_a), None, _avg_w, weights=_avg_w)
    for f, ax, nan in ((mnp.cumsum, None, False), (mnp.cumulative_sum, None, False),
                       (mnp.nancumsum, None, True), (mnp.add._method("accumulate"), 0, False)):
        defvjp(f, _cumsum_maker(ax, nan))
    for f, ax, nan in ((mnp.cumprod, None, False), (mnp.cumulative_prod, None, False),
                       (mnp.nancumprod, None, True),
                       (mnp.multiply._method("accumulate"), 0, False)):
        defvjp(f, _cumprod_maker(ax, nan))
    for f, nan, scale in ((mnp.quantile, False, 1), (mnp.percentile, False, 100),
                          (mnp.nanquantile, True, 1), (mnp.nanpercentile, True, 100)):
        defvjp(f, _quantile_maker(nan, scale))
    defvjp(mnp.median, _median_maker(False))
    defvjp(mnp.nanmedian, _median_maker(True))
    defvjp(mnp.cov, _cov_rule(0), _cov_rule(1), y=_cov_rule(1))
    defvjp(mnp.corrcoef, _corrcoef_rule(0), _corrcoef_rule(1), y=_corrcoef_rule(1))
    # bincount: differentiable in its weights; the integer input gets none
    defvjp(mnp.bincount, lambda ans, *a, **k: lambda g: None, _bincount_w, weights=_bincount_w)
    # Not differentiable: integer/bool results (positions, counts, truth values, bin
    # numbers, insertion points). (The histograms are linear in their weights and
    # their edges in the data's range: their rules are in vjp_nondiff.py.)
    def_nondiff(mnp.argmax, mnp.argmin, mnp.nanargmax, mnp.nanargmin, mnp.count_nonzero,
                mnp.all, mnp.any, mnp.digitize, mnp.searchsorted)


_install()

table_ends(__name__)
