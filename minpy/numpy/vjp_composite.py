"""Gradients of functions that NumPy implements in Python over its own API, and
minpy's Python-level fronts that keep traced arrays traced:

- ``pad``: every string mode. constant/empty and even edge/reflect/symmetric/wrap
  use a slice or an index map; odd reflections, ``linear_ramp`` and the statistic
  modes (maximum, minimum, mean, median) are differentiated through a
  re-implementation in minpy functions (:func:`_pad_ref`), also w.r.t. traced
  ``constant_values``/``end_values``. A callable ``mode`` on a traced array
  raises ``TypeError`` at the call.
- ``r_``/``c_``: an index map (NumPy's own concatenator applied to element
  numbers), whose adjoint is a scatter-add.
- ``piecewise``: on traced input, NumPy's algorithm re-run with minpy indexing
  (``y[cond] = func(x[cond])``), so the functions see traced arrays.
- ``array``/``asarray``/``asanyarray`` of nested lists holding traced arrays:
  built with ``stack``, level by level (a flat list is recorded as is).
- one-argument ``where(cond)`` (that is ``nonzero``): never recorded.

Each front checks ``state.S.tapes`` only off the straight-NumPy path, so calls
without a tape cost what they did.
"""
import numbers

import numpy

from ..core.array import Array, new, unwrap_cpu, wrap
from ..core.autograd import defvjp, stop_gradient
from ..dispatch import state
import minpy.numpy as mnp
from .array_methods import NP_TO_MINPY as _NP_TO_MINPY
from .vjp_indexing import cast_like, gather_vjp, host, nograd
from .vjp_math import _via

_S = state.S
_ndarray = numpy.ndarray


def _traced(x):
    """True when ``x`` (or an item of nested lists/tuples/dicts) is a traced Array."""
    t = type(x)
    if t is Array:
        return x._node is not None
    if t is list or t is tuple:
        return any(_traced(e) for e in x)
    if t is dict:
        return any(_traced(e) for e in x.values())
    return False


def _install(name, fn, np_fn):
    """Make ``fn`` the public ``minpy.numpy.<name>`` (also for ``numpy.<name>(Array)``)."""
    old = getattr(mnp, name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{fn.__doc__}\n\n{old.__doc__}"
    fn._prim = old._prim
    fn.__wrapped_numpy__ = np_fn
    setattr(mnp, name, fn)
    _NP_TO_MINPY[np_fn] = fn


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
    via = _via(_pad_ref, which)

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
_pad_prim = mnp.pad


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array. See also numpy.pad.

    Under a gradient tape every string mode is differentiable (w.r.t. ``array``,
    ``constant_values`` and ``end_values``); a callable ``mode`` on a traced
    array raises ``TypeError`` here, at the call.
    """
    if _S.tapes:
        if callable(mode) and _traced((array, kwargs)):
            raise TypeError(f"minpy.grad: pad with mode={mode!r} (a callable) cannot be "
                            "differentiated; its result depends on a traced array (use a "
                            "string mode, or wrap the input in minpy.stop_gradient)")
        for k in ("constant_values", "end_values"):
            v = kwargs.get(k)
            if type(v) in (list, tuple) and _traced(v):
                kwargs[k] = mnp.asarray(v)         # one traced Array: recorded as such
    return _pad_prim(array, pad_width, mode, **kwargs)


_install("pad", pad, numpy.pad)


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


# ---------------------------------------------------------------- piecewise
_piecewise_prim = mnp.piecewise


def _piecewise_traced(x, condlist, funclist, *args, **kw):
    """numpy.piecewise's algorithm with minpy indexing, so traced values stay traced."""
    x = mnp.asanyarray(x)
    n2 = len(funclist)
    condlist = host(condlist)      # what NumPy sees: Arrays as ndarrays
    if numpy.isscalar(condlist) or (
            not isinstance(condlist[0], (list, numpy.ndarray)) and x.ndim != 0):
        condlist = [condlist]
    conds = numpy.asarray(condlist, dtype=bool)
    n = len(conds)
    if n == n2 - 1:
        conds = numpy.concatenate([conds, ~numpy.any(conds, axis=0, keepdims=True)], axis=0)
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = mnp.zeros_like(x)
    for cond, func in zip(conds, funclist):
        c = mnp.asarray(cond)
        if not callable(func):
            y[c] = func
        else:
            vals = x[c]
            if vals.size > 0:
                y[c] = func(vals, *args, **kw)
    return y


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate a piecewise-defined function. See also numpy.piecewise.

    Differentiable: under a gradient tape with traced ``x``, constant values or
    extra arguments, the functions are called on traced pieces ``x[cond]``.
    """
    if _S.tapes and _traced((x, funclist, args, kw)):
        return _piecewise_traced(x, condlist, funclist, *args, **kw)
    return _piecewise_prim(x, condlist, funclist, *args, **kw)


_install("piecewise", piecewise, numpy.piecewise)


# ---------------------------------------------------------------- array of nested lists
def _deep_traced(obj):
    """True when a list/tuple inside ``obj`` holds a traced Array (depth >= 2)."""
    return any((type(e) is list or type(e) is tuple) and _traced(e) for e in obj)


def _leaf_dtypes(obj, out):
    if type(obj) is list or type(obj) is tuple:
        for e in obj:
            _leaf_dtypes(e, out)
    else:
        out.append(obj.dtype if hasattr(obj, "dtype") else numpy.asarray(obj).dtype)
    return out


def _stacked(obj, dtype):
    if type(obj) is list or type(obj) is tuple:
        return mnp.stack([_stacked(e, dtype) for e in obj])
    if type(obj) is Array:
        return obj if obj.dtype == dtype else obj.astype(dtype)
    return mnp.asarray(obj, dtype=dtype)


def _from_nested(obj, dtype=None, ndmin=0):
    """``array(obj)`` for nested lists of traced arrays: stacked level by level, in the
    dtype NumPy would give (Python scalars count as float64/int64/complex128/bool)."""
    dt = numpy.dtype(dtype) if dtype is not None else numpy.result_type(*_leaf_dtypes(obj, []))
    r = _stacked(obj, dt)
    if r.ndim < ndmin:
        r = mnp.reshape(r, (1,) * (ndmin - r.ndim) + r.shape)
    return r


def _creation_front(name):
    old = getattr(mnp, name)
    inner = old._inner

    def create(*args, ctx=None, **kwargs):
        if _S.tapes and args and type(args[0]) in (list, tuple) and _deep_traced(args[0]) \
                and kwargs.get("copy") is not False and kwargs.get("like") is None \
                and len(args) <= 2:
            dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
            return _from_nested(args[0], dtype, kwargs.get("ndmin", 0))
        if ctx is None or (_S.fast and ctx.device_type == "cpu"):
            return inner(*args, **kwargs)
        with ctx:
            return inner(*args, **kwargs)
    create.__name__ = create.__qualname__ = name
    create.__doc__ = old.__doc__
    create._prim = old._prim
    create._inner = inner
    create.__wrapped_numpy__ = old.__wrapped_numpy__
    setattr(mnp, name, create)


for _name in ("array", "asarray", "asanyarray"):
    _creation_front(_name)


# ---------------------------------------------------------------- where(cond)
_where_prim = mnp.where
_np_where = numpy.where
_new = new


def where(*args, **kwargs):
    """``where(condition, x, y)``; ``where(condition)`` is ``nonzero``. See also numpy.where.

    One-argument ``where`` returns index arrays: never recorded on a tape.
    """
    if _S.fast and not kwargs:      # the generated wrapper's straight-NumPy path
        r = _np_where(*[unwrap_cpu(a) for a in args])
        return _new(r) if type(r) is _ndarray else wrap(r)
    if len(args) == 1 and not kwargs:
        args = (stop_gradient(args[0]),)
    return _where_prim(*args, **kwargs)


_install("where", where, numpy.where)
