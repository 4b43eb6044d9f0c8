"""Gradients of functions that NumPy implements in Python over its own API (their
fronts, which keep traced arrays traced, are in :mod:`minpy.numpy.fronts`):

- ``pad``: every string mode. constant/empty and even edge/reflect/symmetric/wrap
  use a slice or an index map; odd reflections, ``linear_ramp`` and the statistic
  modes (maximum, minimum, mean, median) are differentiated through a
  re-implementation in minpy functions (:func:`_pad_ref`), also w.r.t. traced
  ``constant_values``/``end_values``. A callable ``mode`` on a traced array
  raises ``TypeError`` at the call.
- ``r_``/``c_``: an index map (NumPy's own concatenator applied to element
  numbers), whose adjoint is a scatter-add.
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numbers

import numpy

from ..core.array import Array
from ..core.autograd import defvjp
import minpy.numpy as mnp
from .rule_helpers import cast_like, host, nograd, vjp_via_reference
from .vjp_indexing import gather_vjp


# ---------------------------------------------------------------- pad
_SELECTING = ("edge", "reflect", "symmetric", "wrap")
_STATS = {"maximum": mnp.max, "minimum": mnp.min, "mean": mnp.mean, "median": mnp.median}


def _pad_pairs(pad_width, nd):
    return numpy.broadcast_to(numpy.asarray(host(pad_width), dtype=numpy.int64), (nd, 2))


def _value_pairs(v, nd):
    """NumPy's ``_as_pairs`` for pad values that may be (or hold) traced arrays."""
    if isinstance(v, numbers.Number):
        return [(v, v)] * nd
    a = mnp.asarray(v)
    if a.size == 1:
        s = mnp.reshape(a, ())
        return [(s, s)] * nd
    if a.size == 2 and a.shape != (2, 1):
        r = mnp.reshape(a, (2,))
        return [(r[0], r[1])] * nd
    b = mnp.broadcast_to(a, (nd, 2))
    return [(b[i, 0], b[i, 1]) for i in range(nd)]


def _length_pairs(v, nd):
    if v is None:
        return [(None, None)] * nd
    r = numpy.broadcast_to(numpy.round(numpy.asarray(host(v))).astype(numpy.int64), (nd, 2))
    return [(int(p), int(q)) for p, q in r]


def _along(c, axis, x):
    """Host vector ``c`` shaped to broadcast along ``axis`` of ``x``, in x's real dtype."""
    shape = [1] * x.ndim
    shape[axis] = len(c)
    dt = numpy.finfo(x.dtype).dtype if x.dtype.kind in "fc" else numpy.float64
    return numpy.asarray(c, dtype=dt).reshape(shape)


def _widened(x, axis, width):
    shape = list(x.shape)
    shape[axis] = width
    return tuple(shape)


def _like(r, x):
    """``r`` in the dtype of ``x`` (NumPy writes pad values into the array's dtype)."""
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def _fill(x, axis, width, value):
    return _like(mnp.zeros(_widened(x, axis, width), dtype=x.dtype) + value, x)


def _pad_select(x, axis, b, a, mode, reflect_type):
    n = x.shape[axis]
    if n == 1:
        mode = "edge"           # NumPy: a singleton axis is extended with its value
    out = mnp.take(x, numpy.pad(numpy.arange(n), (b, a), mode), axis=axis)
    if reflect_type != "odd" or mode in ("edge", "wrap"):
        return out
    # an odd reflection is +-x[E] plus multiples of the two edge values (E: the
    # even index map); the three coefficient vectors come from padding probes
    probe = [numpy.ones(n), numpy.zeros(n), numpy.zeros(n)]
    probe[0][[0, -1]] = 0
    probe[1][0] = probe[2][-1] = 1
    cm, c0, c1 = (_along(numpy.pad(p, (b, a), mode, reflect_type="odd"), axis, x)
                  for p in probe)
    return out * cm + mnp.take(x, [0], axis=axis) * c0 + mnp.take(x, [n - 1], axis=axis) * c1


def _pad_axis(x, axis, b, a, mode, kw, value_pair, length_pair):
    n = x.shape[axis]
    if mode in _SELECTING:
        return _pad_select(x, axis, b, a, mode, kw.get("reflect_type", "even"))
    if mode in ("constant", "empty"):
        left, right = value_pair
        pieces = [_fill(x, axis, b, left), x, _fill(x, axis, a, right)]
    elif mode == "linear_ramp":      # linspace(end, edge, width, endpoint=False) per side
        tl = _along(numpy.arange(b) / max(b, 1), axis, x)
        tr = _along((a - 1 - numpy.arange(a)) / max(a, 1), axis, x)
        el, er = mnp.take(x, [0], axis=axis), mnp.take(x, [n - 1], axis=axis)
        pieces = [_like(value_pair[0] * (1 - tl) + el * tl, x), x,
                  _like(value_pair[1] * (1 - tr) + er * tr, x)]
    else:
        stat = _STATS[mode]
        ll, lr = (n if k is None or k > n else k for k in length_pair)
        pre = (slice(None),) * axis
        sl = stat(x[pre + (slice(0, ll),)], axis=axis, keepdims=True)
        sr = stat(x[pre + (slice(n - lr, n),)], axis=axis, keepdims=True)
        pieces = [mnp.broadcast_to(sl, _widened(x, axis, b)), x,
                  mnp.broadcast_to(sr, _widened(x, axis, a))]
    return mnp.concatenate([p for p, w in zip(pieces, (b, 1, a)) if w], axis=axis)


def _pad_ref(array, pad_width, mode="constant", **kw):
    """numpy.pad in minpy functions, axis after axis as NumPy pads (string modes)."""
    x = mnp.asarray(array)
    nd = x.ndim
    pw = _pad_pairs(pad_width, nd)
    values = [(0, 0)] * nd
    if mode in ("constant", "linear_ramp"):
        values = _value_pairs(kw.get("constant_values" if mode == "constant" else
                                     "end_values", 0), nd)
    lengths = _length_pairs(kw.get("stat_length"), nd)
    for ax in range(nd):
        b, a = int(pw[ax, 0]), int(pw[ax, 1])
        if b or a:
            x = _pad_axis(x, ax, b, a, mode, kw, values[ax], lengths[ax])
    return x


def _pad_rule(which):
    """VJP maker of pad w.r.t. ``array`` (which=0) or a keyword (constant/end values)."""
    via = vjp_via_reference(_pad_ref, which)

    def maker(ans, array, pad_width, mode="constant", **kw):
        if which != 0 or type(array) is not Array:      # values, or a list of items
            return via(ans, array, pad_width, mode, **kw)
        if array.dtype.kind not in "fc":
            return lambda g: None
        if mode in ("constant", "empty"):
            pw = _pad_pairs(pad_width, array.ndim)
            key = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(pw, array.shape))
            return lambda g: g[key]
        if mode in _SELECTING and kw.get("reflect_type", "even") == "even":
            size = array.size
            imap = numpy.pad(numpy.arange(size).reshape(array.shape), host(pad_width), mode)
            return lambda g: mnp.reshape(gather_vjp(g, imap, size), array.shape)
        if array.size == 0:
            return lambda g: mnp.zeros_like(array)
        return via(ans, array, pad_width, mode, **kw)
    return maker


defvjp(mnp.pad, _pad_rule(0), nograd(1), constant_values=_pad_rule("constant_values"),
       end_values=_pad_rule("end_values"))
# ---------------------------------------------------------------- r_, c_
def _concatenator_rule(name):
    trick = getattr(numpy, name)

    def maker(ans, key):
        items = key if type(key) is tuple else (key,)
        arrays = [e for e in items if type(e) is Array]
        sizes = [e.size for e in arrays]
        starts = numpy.concatenate([[1], 1 + numpy.cumsum(sizes)]).astype(numpy.int64)
        numbered, zeroed, k = [], [], 0
        for e in items:
            if type(e) is Array:
                numbered.append(numpy.arange(starts[k], starts[k + 1]).reshape(e.shape))
                zeroed.append(numpy.zeros(e.shape, numpy.int64))
                k += 1
            elif isinstance(e, (str, slice)):
                numbered.append(e)
                zeroed.append(e)
            else:        # constants: zeros (slices give the same values in both passes)
                z = type(e)(0) if isinstance(e, numbers.Number) else numpy.zeros(numpy.shape(e))
                numbered.append(z)
                zeroed.append(z)
        diff = numpy.real(numpy.asarray(trick[tuple(numbered)]) - trick[tuple(zeroed)])
        imap = numpy.rint(diff).astype(numpy.int64) - 1
        total = int(sum(sizes))

        def vjp(g):
            flat = gather_vjp(g, imap, total)
            parts = mnp.split(flat, list(numpy.cumsum(sizes)[:-1])) if len(sizes) > 1 \
                else [flat]
            grads = iter(cast_like(mnp.reshape(p, e.shape), e) for p, e in zip(parts, arrays))
            out = [next(grads) if type(e) is Array else None for e in items]
            return out if type(key) is tuple else out[0]
        return vjp
    return maker


defvjp(mnp.r_._fn, _concatenator_rule("r_"))
defvjp(mnp.c_._fn, _concatenator_rule("c_"))

table_ends(__name__)
