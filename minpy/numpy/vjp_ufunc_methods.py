"""Gradients of the ufunc methods ``reduce``, ``accumulate``, ``reduceat``, ``outer``
and ``at`` that no other table covers (vjp_reductions: add/multiply/maximum/minimum/
fmax/fmin ``.reduce``, add/multiply ``.accumulate``; vjp_math: single-output ``outer``).

Every method of every ufunc of the namespace is made at import and given its rule
here (:func:`install_method`); a ufunc made later (one of another library reaching
minpy through ``__array_ufunc__``) has methods without rules.

- Closed forms where they exist, else the gradient of a re-implementation by the ufunc
  itself (``vjp_via_reference``): a fold over the axis from ``initial=``, else the ufunc's identity,
  else the first element, as NumPy does.

  * ``reduce``: subtract (first +g, the rest -g; all -g from ``initial``), logaddexp(2)
    (softmax weights), hypot (``x / ans``); ``initial=`` gets a gradient (the fold).
    NumPy 2.4's power/arctan2 ``.reduce`` over a contiguous axis (and ``.reduceat``
    segments of 3+) give ``x0 op x_last``; the gradient is the true fold's.
  * ``accumulate``: subtract (reverse cumsum), maximum/minimum/fmax/fmin (to the
    position that set the running extremum; later equal values do not take it over;
    the NaN results of maximum/minimum go to the first NaN, which set them; an
    all-NaN start of fmax/fmin to its first element), logaddexp(2) (the reverse scan
    ``S_k = g_k + exp(out_k - out_{k+1}) S_{k+1}``, log depth, no overflow), hypot.
  * ``reduceat``: segments ``[lo, lo + count)``, the counts from NumPy's own
    ``add.reduceat`` on ones (non-increasing indices select one element); add,
    maximum & co. (ties split evenly, NaN equal to NaN), logaddexp(2), multiply
    (without zeros) by gather/scatter-add; the others through a fold vectorized over
    the segments.
  * ``outer``: the elementwise rule on ``a`` reshaped to ``a.shape + (1,) * b.ndim``.
  * ``at`` on or with traced arrays: replayed out of place, the target rebound
    (the primitive's ``inplace_replay``); positions by NumPy's own indexing of an
    element-number map. add/subtract: one scatter-add; the others apply the ufunc in
    rounds (round k: the k-th occurrence of each position), so repeated indices are
    updated in order, as NumPy does. Views of the target do not see the write.
- Methods NumPy rejects (``sin.reduce``, ``divmod.at``: it raises before anything is
  recorded) and every method of a non-differentiable ufunc are marked nondiff (their
  ``at`` is still replayed: the written positions get no gradient).
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import math

import numpy
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

import minpy.numpy as mnp
from ..core.inplace import def_inplace_replay
from ..core.array import Array
from ..core.autograd import defvjp, def_nondiff, stop_gradient
from ..core.wrappers import METHODS, UFUNCS
from .rule_helpers import cast_like, host, vjp_via_reference
from .vjp_indexing import index_update, scatter_add
from .vjp_reductions import rev_recurrence, revcumsum

__all__ = ["install_method", "supported_methods", "fold_reduce", "fold_accumulate",
           "fold_reduceat", "at_replay"]

_NO = numpy._NoValue
_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")


# ---------------------------------------------------------------- helpers
def _arr(x):
    if type(x) is Array:
        return x
    if isinstance(x, (list, tuple)) and any(type(e) is Array for e in x):
        return mnp.stack([_arr(e) for e in x])
    return mnp.asarray(x)


def _const(x):
    return stop_gradient(x) if type(x) is Array else mnp.asarray(host(x))


def _cast(g, x):
    return None if g is None else cast_like(g, x)


def _start(uf, initial):
    """The value a reduction starts from; None: from the first element."""
    return uf.identity if initial is _NO else initial


def _axes(ndim, axis):
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _acc_axis(x, axis):
    return normalize_axis_index(0 if axis is None else axis, x.ndim)


def _expand(v, shape, axes):
    """A reduced (or keepdims) result broadcast back to ``shape``."""
    ks = tuple(1 if i in axes else s for i, s in enumerate(shape))
    if tuple(v.shape) != ks:
        v = mnp.reshape(v, ks)
    return v if ks == shape else mnp.broadcast_to(v, shape)


def _mask(where, shape):
    if where is True or where is None or where is _NO:
        return None
    return mnp.broadcast_to(mnp.asarray(_const(where), dtype=bool), shape)


def _masked(v, mask):
    return v if mask is None else mnp.where(mask, v, 0)


def _last(x, ax):
    return x if ax == x.ndim - 1 else mnp.moveaxis(x, ax, -1)


def _unlast(x, ax):
    return x if ax == x.ndim - 1 else mnp.moveaxis(x, -1, ax)


def _first_mask(n, ndim, ax):
    """Host bool array, True at position 0 of axis ``ax`` (broadcastable)."""
    m = numpy.zeros(n, bool)
    m[:1] = True
    return m.reshape([n if i == ax else 1 for i in range(ndim)])


def _seq(maker):
    """Let a rule for argument 0 take a list/tuple of arrays (``subtract.reduce([x, y])``)."""
    def m(ans, a, *args, **kw):
        if type(a) is not Array and isinstance(a, (list, tuple)):
            inner = maker(ans, _arr(a), *args, **kw)
            return lambda g: (lambda full: [full[j] for j in range(len(a))])(inner(g))
        return maker(ans, a, *args, **kw)
    return m


def _segments(n, indices):
    """reduceat's segments of an axis of length ``n``: (lo, count), NumPy's own semantics."""
    lo = numpy.asarray(host(indices), dtype=numpy.intp)
    return lo, numpy.add.reduceat(numpy.ones(n, numpy.intp), lo)


def _seg_maps(lo, cnt):
    """(P, S): the positions of all segments, concatenated, and their segment numbers."""
    seg = numpy.repeat(numpy.arange(len(lo)), cnt)
    first = numpy.cumsum(cnt) - cnt
    return lo[seg] + numpy.arange(seg.size) - first[seg], seg


# ---------------------------------------------------------------- re-implementations
def fold_reduce(uf):
    """``uf.reduce`` as a fold of ``uf`` calls (what the generic reduce rule differentiates)."""
    def ref(array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO, where=True):
        x = _arr(array)
        if dtype is not None:
            x = x.astype(dtype)
        shape, axes = tuple(x.shape), _axes(x.ndim, axis)
        rest = [i for i in range(x.ndim) if i not in axes]
        rshape = tuple(shape[i] for i in rest)
        n = math.prod(shape[i] for i in axes)
        perm = rest + list(axes)
        xt = mnp.reshape(mnp.transpose(x, perm) if perm != sorted(perm) else x, rshape + (n,))
        m = _mask(where, shape)
        if m is not None:
            m = mnp.reshape(mnp.transpose(m, perm), rshape + (n,))
        r = _start(uf, initial)
        for k in range(n):
            v = xt[..., k]
            if r is None:
                r = v
                continue
            nr = uf(r, v)
            r = nr if m is None else mnp.where(m[..., k], nr, r)
        r = mnp.broadcast_to(r, rshape) if n == 0 or type(r) is not Array else r
        return mnp.reshape(r, tuple(1 if i in axes else s for i, s in enumerate(shape))) \
            if keepdims else r
    return ref


def fold_accumulate(uf):
    """``uf.accumulate`` as a fold of ``uf`` calls."""
    def ref(array, axis=0, dtype=None, out=None):
        x = _arr(array)
        if dtype is not None:
            x = x.astype(dtype)
        ax = _acc_axis(x, axis)
        xt = _last(x, ax)
        if xt.shape[-1] == 0:
            return x
        r = xt[..., 0]
        outs = [r]
        for k in range(1, xt.shape[-1]):
            r = uf(r, xt[..., k])
            outs.append(r)
        return _unlast(mnp.stack(outs, axis=-1), ax)
    return ref


def fold_reduceat(uf):
    """``uf.reduceat`` as a fold over the segments, vectorized across them."""
    def ref(array, indices, axis=0, dtype=None, out=None):
        x = _arr(array)
        if dtype is not None:
            x = x.astype(dtype)
        ax = normalize_axis_index(axis, x.ndim)
        xt = _last(x, ax)
        lo, cnt = _segments(xt.shape[-1], indices)
        r = xt[..., lo]
        for t in range(1, int(cnt.max(initial=1))):
            live = numpy.flatnonzero(cnt > t)
            new = uf(r[..., live], xt[..., lo[live] + t])
            r = index_update(r, (Ellipsis, live), new)
        return _unlast(r, ax)
    return ref


# ---------------------------------------------------------------- reduce
def _subtract_reduce(ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO,
                     where=True):
    x = _arr(array)
    shape, axes = tuple(x.shape), _axes(x.ndim, axis)
    mask = _mask(where, shape)
    from_first = _start(mnp.subtract, initial) is None     # x0 - x1 - ..., else s - x0 - ...
    first = _first_mask(shape[axes[0]], len(shape), axes[0]) if from_first and axes else None

    def vjp(g):
        ge = _expand(g, shape, axes)
        if first is not None:
            ge = mnp.where(first, ge, -ge)
        elif not from_first:
            ge = -ge
        return _cast(_masked(ge, mask), x)
    return vjp


def _logaddexp_reduce(exp):
    def maker(ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO,
              where=True):
        x = _arr(array)
        shape, axes = tuple(x.shape), _axes(x.ndim, axis)
        mask = _mask(where, shape)
        return lambda g: _cast(_masked(_expand(g, shape, axes) *
                                       exp(x - _expand(ans, shape, axes)), mask), x)
    return maker


def _hypot_reduce(ans, array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO,
                  where=True):
    x = _arr(array)
    shape, axes = tuple(x.shape), _axes(x.ndim, axis)
    mask = _mask(where, shape)

    def vjp(g):
        a = _expand(ans, shape, axes)
        return _cast(_masked(_expand(g, shape, axes) * x / mnp.where(a == 0, 1, a), mask), x)
    return vjp


# ---------------------------------------------------------------- accumulate
def _subtract_accumulate(ans, array, axis=0, dtype=None, out=None):
    x = _arr(array)
    ax = _acc_axis(x, axis)
    first = _first_mask(x.shape[ax], x.ndim, ax)

    def vjp(g):
        s = revcumsum(g, ax)
        return _cast(mnp.where(first, s, -s), x)
    return vjp


def _extremum_accumulate(ans, array, axis=0, dtype=None, out=None):
    x = _arr(array)
    ax = _acc_axis(x, axis)

    def vjp(g):
        xc, oc, gl = _last(_const(x), ax), _last(_const(ans), ax), _last(g, ax)
        if xc.dtype != oc.dtype:            # dtype=: compare in the result's dtype
            xc = xc.astype(oc.dtype)
        shape = tuple(gl.shape)
        n = shape[-1]
        if n == 0 or gl.size == 0:
            return _cast(g, x)
        k = mnp.arange(n)
        prev = mnp.concatenate([oc[..., :1], oc[..., :-1]], axis=-1)
        record = mnp.logical_or(mnp.logical_and(xc == oc, prev != oc), k == 0)
        if oc.dtype.kind in "fc":       # the first NaN of maximum/minimum sets the NaNs after it
            on = mnp.isnan(oc)
            record = mnp.logical_or(record, mnp.logical_and(
                mnp.logical_and(on, mnp.isnan(xc)), mnp.logical_not(mnp.isnan(prev))))
        src = mnp.maximum.accumulate(mnp.where(record, k, 0), axis=-1)   # who set out[i]
        rows = math.prod(shape[:-1])
        flat = mnp.reshape(mnp.reshape(mnp.arange(rows) * n, (rows, 1)) +
                           mnp.reshape(src, (rows, n)), (-1,))
        gx = scatter_add(mnp.reshape(gl, (-1,)), (rows * n,), (flat,))
        return _cast(_unlast(mnp.reshape(gx, shape), ax), x)
    return vjp


def _logaddexp_accumulate(exp):
    def maker(ans, array, axis=0, dtype=None, out=None):
        x = _arr(array)
        ax = _acc_axis(x, axis)

        def vjp(g):
            o, xl, gl = _last(ans, ax), _last(x, ax), _last(g, ax)
            a = exp(o[..., :-1] - o[..., 1:])
            a = mnp.concatenate([a, mnp.zeros(tuple(a.shape[:-1]) + (1,), a.dtype)], axis=-1)
            return _cast(_unlast(exp(xl - o) * rev_recurrence(a, gl), ax), x)
        return vjp
    return maker


def _hypot_accumulate(ans, array, axis=0, dtype=None, out=None):
    x = _arr(array)
    ax = _acc_axis(x, axis)
    first = _first_mask(x.shape[ax], x.ndim, ax)

    def vjp(g):
        q = mnp.where(first, 0, g / mnp.where(ans == 0, 1, ans))     # out_0 = x_0: no 1/out
        return _cast(mnp.where(first, g, 0) + x * revcumsum(q, ax), x)
    return vjp


# ---------------------------------------------------------------- reduceat
def _reduceat_rule(kind):
    """Closed forms by gather (segment values) and scatter-add (back to positions)."""
    def maker(ans, array, indices, axis=0, dtype=None, out=None):
        x = _arr(array)
        ax = normalize_axis_index(axis, x.ndim)
        n = x.shape[ax]
        pos, seg = _seg_maps(*_segments(n, indices))
        if kind == "multiply" and bool(mnp.any(_const(x) == 0)):
            return vjp_via_reference(fold_reduceat(mnp.multiply), 0)(ans, array, indices, axis, dtype)

        def vjp(g):
            gl = _last(g, ax)
            gs = gl[..., seg]
            if kind == "add":
                c = gs
            else:
                xs, os = _last(x, ax)[..., pos], _last(ans, ax)[..., seg]
                if xs.dtype != os.dtype:
                    xs = xs.astype(os.dtype)
                if kind == "extremum":     # NaN equal to NaN: a NaN result is the NaNs'
                    xk, ok = _const(xs), _const(os)
                    hit = xk == ok
                    if ok.dtype.kind in "fc":
                        hit = mnp.logical_or(hit, mnp.logical_and(mnp.isnan(xk), mnp.isnan(ok)))
                    cnt = scatter_add(hit.astype(gl.real.dtype), tuple(gl.shape), (Ellipsis, seg))
                    c = gs * (hit / mnp.maximum(cnt, 1)[..., seg]).astype(gl.real.dtype)
                elif kind == "multiply":
                    r = os / xs
                    c = gs * (mnp.conj(r) if r.dtype.kind == "c" else r)
                else:           # logaddexp, logaddexp2: softmax weights
                    c = gs * (mnp.exp if kind == "logaddexp" else mnp.exp2)(xs - os)
            lead = tuple(gl.shape[:-1])
            return _cast(_unlast(scatter_add(c, lead + (n,), (Ellipsis, pos)), ax), x)
        return vjp
    return maker


# ---------------------------------------------------------------- outer
def _outer_maker(elementwise, i):
    def maker(ans, a, b, **kw):
        sa = numpy.shape(a) if type(a) is not Array else tuple(a.shape)
        vjp = elementwise(ans, mnp.reshape(a, sa + (1,) * mnp.ndim(b)), b, **kw)
        if i == 0:
            return lambda g: (lambda r: None if r is None else mnp.reshape(r, sa))(vjp(g))
        return vjp
    return maker


# ---------------------------------------------------------------- at
def _occurrences(pos):
    """Per element of ``pos``: how many earlier elements hold the same position."""
    order = numpy.argsort(pos, kind="stable")
    sp = pos[order]
    idx = numpy.arange(pos.size)
    start = numpy.maximum.accumulate(numpy.where(numpy.r_[True, sp[1:] != sp[:-1]], idx, 0))
    rank = numpy.empty_like(idx)
    rank[order] = idx - start
    return rank


def at_replay(uf):
    """The in-place replay of ``uf.at``: (target, its new value), differentiable."""
    name = f"{uf.__name__}.at"

    def replay(a, indices, b=None):
        if type(a) is not Array:
            raise TypeError(f"minpy.grad: in-place {name} into a {type(a).__name__} (not a "
                            "minpy array) with traced values cannot be differentiated")
        if (b is None) != (uf.nin == 1):
            raise ValueError(f"{name} takes {uf.nin} operand(s)")
        shape = tuple(a.shape)
        pos = numpy.arange(a.size, dtype=numpy.intp).reshape(shape)[host(indices)]
        pshape, pos = pos.shape, pos.reshape(-1)
        flat = mnp.reshape(a, (-1,))
        vals = None if b is None else mnp.reshape(mnp.broadcast_to(_arr(b), pshape), (-1,))
        if pos.size == 0:
            return a, a
        if uf.__name__ in ("add", "subtract"):
            s = scatter_add(vals, (a.size,), (pos,))
            res = flat + s if uf.__name__ == "add" else flat - s
        else:
            rank = _occurrences(pos)
            res = flat
            for r in range(int(rank.max()) + 1):
                sel = numpy.flatnonzero(rank == r)
                p = pos[sel]
                new = uf(res[p]) if vals is None else uf(res[p], vals[sel])
                res = index_update(res, (p,), new)
        if res.dtype != a.dtype:
            res = res.astype(a.dtype)
        return a, mnp.reshape(res, shape)
    return replay


def _rejected_at(uf):
    """The replay of an ``at`` NumPy rejects (``divmod.at``): NumPy's own error."""
    def replay(a, *args, **kwargs):
        uf._np.at(numpy.array(host(a)), *[host(v) for v in args], **kwargs)
        raise TypeError(f"minpy.grad: {uf.__name__}.at on a traced array cannot be differentiated")
    return replay


# ---------------------------------------------------------------- registration
_REDUCE = {"subtract": _subtract_reduce, "logaddexp": _logaddexp_reduce(mnp.exp),
           "logaddexp2": _logaddexp_reduce(mnp.exp2), "hypot": _hypot_reduce}
_ACCUMULATE = {"subtract": _subtract_accumulate, "maximum": _extremum_accumulate,
               "minimum": _extremum_accumulate, "fmax": _extremum_accumulate,
               "fmin": _extremum_accumulate, "logaddexp": _logaddexp_accumulate(mnp.exp),
               "logaddexp2": _logaddexp_accumulate(mnp.exp2), "hypot": _hypot_accumulate}
_REDUCEAT = {"add": _reduceat_rule("add"), "multiply": _reduceat_rule("multiply"),
             "logaddexp": _reduceat_rule("logaddexp"), "logaddexp2": _reduceat_rule("logaddexp2"),
             **{n: _reduceat_rule("extremum") for n in ("maximum", "minimum", "fmax", "fmin")}}


def _no_grad(ans, *args, **kwargs):
    return lambda g: None


def supported_methods(uf):
    """The methods NumPy accepts for ``uf`` (the others raise whatever the inputs)."""
    if uf.signature is not None:
        return ()
    if uf.nin == 2:
        return _METHODS if uf.nout == 1 else ("outer",)
    return ("at",) if uf.nin == 1 and uf.nout == 1 else ()


def install_method(uf, method, fn):
    """Give the method primitive ``fn`` (``uf.<method>``) its rule or no-gradient mark.

    A rule or mark set elsewhere is kept (a ``reduce`` rule without one for ``initial=``
    gets it). ``at`` gets none: it is replayed.
    """
    p, up = fn._prim, uf._prim
    if method == "at":
        def_inplace_replay(fn, at_replay(uf) if "at" in supported_methods(uf)
                           else _rejected_at(uf))
    if p.vjp and method == "reduce" and up.vjp and "initial" not in p.vjp \
            and method in supported_methods(uf):
        defvjp(fn, initial=vjp_via_reference(fold_reduce(uf), "initial"))
    if p.vjp or p.nondiff:
        return
    if up.nondiff or method not in supported_methods(uf):
        def_nondiff(fn)
        return
    if not up.vjp or method == "at":
        return
    name = uf.__name__
    if method == "reduce":
        ref = fold_reduce(uf)
        defvjp(fn, _seq(_REDUCE.get(name) or vjp_via_reference(ref, 0)), initial=vjp_via_reference(ref, "initial"))
    elif method == "accumulate":
        defvjp(fn, _seq(_ACCUMULATE.get(name) or vjp_via_reference(fold_accumulate(uf), 0)))
    elif method == "reduceat":
        defvjp(fn, _seq(_REDUCEAT.get(name) or vjp_via_reference(fold_reduceat(uf), 0)), _no_grad)
    else:       # outer
        defvjp(fn, *[_outer_maker(up.vjp[k], k) if k in up.vjp else None for k in range(2)])


def _install():
    # every method of every namespace ufunc, made now, gets its rule (or mark) here
    for uf in list(UFUNCS.values()):
        for method in METHODS:
            install_method(uf, method, uf._method(method))


_install()

table_ends(__name__)
