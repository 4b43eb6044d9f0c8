"""Gradients of array creation, grids, set operations, ``apply_*`` and the
in-place writing routines.

- No gradient (integer, boolean or index outputs, or shape-only inputs):
  ``isclose``, ``iscomplex``, ``isreal``, ``isin``, ``isneginf``, ``isposinf``,
  ``packbits``, ``unpackbits``, ``indices``, the ``*_indices`` functions,
  ``tri``, ``eye``, ``identity``, ``empty``, ``zeros``, ``ones``,
  ``broadcast_shapes``, ``mgrid``/``ogrid`` (a traced value inside a slice is
  invisible to the tape; use ``linspace`` + ``meshgrid`` for differentiable
  grids) and the windows of a length only (``bartlett``, ``blackman``,
  ``hamming``, ``hanning``).
- ``kaiser`` is differentiable w.r.t. ``beta`` (through ``i0``); ``arange``
  w.r.t. ``start`` and ``step`` (its values are ``start + k * step``; ``stop``
  only sets the length: zero gradient); integer outputs carry none.
- ``linspace`` (also ``retstep``), ``logspace`` (also ``base``), ``geomspace``
  w.r.t. their end points, any shapes and ``axis``; ``full``/``full_like``
  w.r.t. ``fill_value``; ``meshgrid``: each output broadcasts one input.
- ``union1d``, ``setdiff1d``, ``setxor1d``, ``intersect1d``: every output value
  is an input value; its gradient goes (scatter-add) to the first position
  holding that value (as ``unique``'s ``return_index``). ``intersect1d``'s
  values sit in both inputs: the gradient is split evenly between them, as
  ``maximum`` splits ties. (These functions are differentiable where the
  inputs hold distinct values; ``setdiff1d``'s second argument gets none.)
- ``apply_along_axis``, ``apply_over_axes``, ``fromfunction``: under a tape
  they run NumPy's algorithm with minpy arrays (slice by slice, then
  ``stack``), so gradients flow through whatever the function does,
  including arrays it closes over.
- ``put``, ``place``, ``putmask``, ``put_along_axis``, ``fill_diagonal`` on or
  with traced arrays are replayed out of place (``index_update`` at the
  positions NumPy writes, found by running NumPy's own function on element
  numbers) and the target is rebound, as ``core.inplace`` does for
  ``copyto``. Views of the target do not see such a write.
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numpy
from numpy.lib.array_utils import normalize_axis_index

from ..core.inplace import def_inplace_replay
from ..core.autograd import defvjp, def_nondiff
from ..core.array import Array
import minpy.numpy as mnp
from .rule_helpers import (cast_like, host, no_gradient, shape_of, unbroadcast,
                           vjp_via_reference)
from .vjp_indexing import gather_vjp, index_update
_MAX_VARARGS = 32

# ---------------------------------------------------------------- no gradient
NONDIFF = ("isclose", "iscomplex", "isreal", "isin", "isneginf", "isposinf", "packbits",
           "unpackbits", "indices", "diag_indices", "tril_indices", "triu_indices",
           "mask_indices", "tri", "eye", "identity", "empty", "zeros", "ones", "bartlett",
           "blackman", "hamming", "hanning", "broadcast_shapes")
def_nondiff(*[getattr(mnp, n) for n in NONDIFF])
def_nondiff(mnp.mgrid._fn, mnp.ogrid._fn)


def _inexact(dt):
    return dt is not None and numpy.issubdtype(numpy.dtype(dt), numpy.inexact)


def _zero_rule(ans, *args, **kwargs):
    return no_gradient


# ---------------------------------------------------------------- arange
def _arange_role(key, args, kwargs):
    """Which of start/stop/step argument ``key`` (position or name) is, as NumPy reads it."""
    names = ("start", "stop", "step")
    vals = dict(zip(names, args))
    vals.update({k: kwargs[k] for k in names if k in kwargs})
    name = names[key] if isinstance(key, int) else key
    if vals.get("stop") is None and name == "start":
        return "stop"           # arange(n): the only bound is the stop
    return name


def _arange_rule(key):
    def maker(ans, *args, **kwargs):
        role = _arange_role(key, args, kwargs)
        x = args[key] if isinstance(key, int) else kwargs[key]
        if role == "stop" or not _inexact(ans.dtype):
            return no_gradient
        if role == "start":
            return lambda g: cast_like(mnp.sum(g), x)
        k = numpy.arange(ans.shape[0], dtype=numpy.finfo(ans.dtype).dtype)
        return lambda g: cast_like(mnp.sum(g * k), x)
    return maker


defvjp(mnp.arange, _arange_rule(0), _arange_rule(1), _arange_rule(2),
       start=_arange_rule("start"), stop=_arange_rule("stop"), step=_arange_rule("step"))


# ---------------------------------------------------------------- kaiser
def _kaiser_ref(M, beta):
    """numpy.kaiser in minpy functions (for M > 1)."""
    n = numpy.arange(0, M)
    alpha = (M - 1) / 2.0
    return mnp.i0(beta * numpy.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / mnp.i0(beta)


_kaiser_via = vjp_via_reference(_kaiser_ref, 1)


def _kaiser_rule(ans, M, beta):
    if int(host(M)) <= 1:
        return no_gradient
    return _kaiser_via(ans, M, beta)


defvjp(mnp.kaiser, _zero_rule, _kaiser_rule, beta=_kaiser_rule)


# ---------------------------------------------------------------- linspace & co
def _linspace_args(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
                   *, device=None):
    return start, stop, num, endpoint, retstep, dtype, axis


def _linspace_rule(which):
    """VJP maker of linspace w.r.t. start (which=0) or stop (which=1)."""
    def maker(ans, *args, **kwargs):
        start, stop, num, endpoint, retstep, dtype, axis = _linspace_args(*args, **kwargs)
        x = (start, stop)[which]
        y = ans[0] if retstep else ans
        if not _inexact(y.dtype):
            return no_gradient
        div = num - 1 if endpoint else num
        nd = len(numpy.broadcast_shapes(shape_of(start), shape_of(stop)))
        ax = normalize_axis_index(axis, nd + 1)
        t = numpy.arange(num, dtype=numpy.float64) / div if div > 0 else numpy.zeros(num)
        if which == 0:
            t = 1.0 - t
        tshape = [1] * (nd + 1)
        tshape[ax] = num
        t = t.astype(numpy.finfo(y.dtype).dtype).reshape(tshape)
        dstep = (1.0 if which else -1.0) / div if div > 0 else 0.0

        def vjp(g):
            gy = g[0] if retstep else g
            r = mnp.sum(gy * t, axis=ax)
            if retstep and dstep:
                r = r + g[1] * dstep
            return cast_like(unbroadcast(r, x), x)
        return vjp
    return maker


_LIN0, _LIN1 = _linspace_rule(0), _linspace_rule(1)
defvjp(mnp.linspace, _LIN0, _LIN1, start=_LIN0, stop=_LIN1)


def _logspace_ref(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """numpy.logspace in minpy functions (differentiable through linspace and power)."""
    if not isinstance(base, (float, int)) and numpy.ndim(base):
        start, stop, base = (mnp.asarray(a) for a in (start, stop, base))
        ndmax = len(numpy.broadcast_shapes(start.shape, stop.shape, base.shape))
        start, stop, base = (mnp.reshape(a, (1,) * (ndmax - a.ndim) + a.shape)
                             for a in (start, stop, base))
        base = mnp.expand_dims(base, axis=axis)
    return mnp.power(base, mnp.linspace(start, stop, num=num, endpoint=endpoint, axis=axis))


def _geomspace_ref(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """numpy.geomspace in minpy functions (its sign rotation and exact end points)."""
    start, stop = mnp.asarray(start), mnp.asarray(stop)
    dt = numpy.result_type(start.dtype, stop.dtype, float(num), numpy.zeros((), dtype))
    start, stop = start.astype(dt), stop.astype(dt)
    sign = mnp.sign(start)
    a, b = start / sign, stop / sign
    r = _logspace_ref(mnp.log10(a), mnp.log10(b), num=num, endpoint=endpoint)
    if num > 0:
        r[0] = a
        if num > 1 and endpoint:
            r[-1] = b
    r = r * sign
    return mnp.moveaxis(r, 0, axis) if axis != 0 else r


def _space_rules(fn, ref, params):
    """Register ``vjp_via_reference(ref, ·)`` for the differentiable parameters of logspace/geomspace."""
    def rule(key):
        via = vjp_via_reference(ref, key)

        def maker(ans, *args, **kwargs):
            if not _inexact(ans.dtype):
                return no_gradient
            return via(ans, *args, **kwargs)
        return maker
    pos = {i: rule(i) for i, p in enumerate(params) if p is not None}
    defvjp(fn, *[pos.get(i) for i in range(len(params))],
           **{p: rule(p) for p in params if p is not None})


_space_rules(mnp.logspace, _logspace_ref, ("start", "stop", None, None, "base"))
_space_rules(mnp.geomspace, _geomspace_ref, ("start", "stop"))


# ---------------------------------------------------------------- full, full_like
def _full_rule(ans, *args, **kwargs):
    fv = args[1] if len(args) > 1 else kwargs["fill_value"]
    if not _inexact(ans.dtype):
        return no_gradient
    return lambda g: cast_like(unbroadcast(g, fv), fv)


defvjp(mnp.full, None, _full_rule, fill_value=_full_rule)
defvjp(mnp.full_like, _zero_rule, _full_rule, fill_value=_full_rule, a=_zero_rule)


# ---------------------------------------------------------------- meshgrid
def _meshgrid_rule(i):
    def maker(ans, *xi, copy=True, sparse=False, indexing="xy"):
        n = len(xi)
        shape = [1] * n
        shape[i] = -1
        if indexing == "xy" and n > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        x = xi[i]
        shape[shape.index(-1)] = int(numpy.prod(shape_of(x)))
        shape = tuple(shape)
        return lambda g: cast_like(mnp.reshape(unbroadcast(g[i], shape), shape_of(x)), x)
    return maker


defvjp(mnp.meshgrid, *[_meshgrid_rule(i) for i in range(_MAX_VARARGS)])


# ---------------------------------------------------------------- set operations
def _first_positions(values, source):
    """For each of ``values``, the first flat position of ``source`` holding it (or -1)."""
    src = numpy.ravel(source)
    u, first = numpy.unique(src, return_index=True)
    if u.size == 0:
        return numpy.full(values.shape, -1, dtype=numpy.intp)
    k = numpy.minimum(numpy.searchsorted(u, values), u.size - 1)
    hit = u[k] == values
    if values.dtype.kind in "fc":
        hit |= numpy.isnan(u[k]) & numpy.isnan(values)
    return numpy.where(hit, first[k], -1)


def _set_rule(which, weight=1.0, second=True):
    """VJP maker of a set function w.r.t. ar1 (which=0) or ar2 (which=1)."""
    def maker(ans, ar1, ar2, *args, **kwargs):
        vals = ans[0] if type(ans) is tuple else ans
        x = (ar1, ar2)[which]
        if which == 1 and not second:
            return no_gradient
        a1, a2 = numpy.asarray(host(ar1)), numpy.asarray(host(ar2))
        v = vals.asnumpy()
        if weight == 1.0 and second:      # union/xor: the first position in (ar1, ar2)
            m = _first_positions(v, numpy.concatenate([a1.ravel(), a2.ravel()]))
            m = numpy.where(m < a1.size, m, -1) if which == 0 else \
                numpy.where(m >= a1.size, m - a1.size, -1)
        else:
            m = _first_positions(v, (a1, a2)[which])
        size = int(numpy.prod(shape_of(x)))

        def vjp(g):
            gv = g[0] if type(ans) is tuple else g
            if weight != 1.0:
                gv = gv * weight
            return cast_like(mnp.reshape(gather_vjp(gv, m, size), shape_of(x)), x)
        return vjp
    return maker


defvjp(mnp.union1d, _set_rule(0), _set_rule(1))
defvjp(mnp.setxor1d, _set_rule(0), _set_rule(1))
defvjp(mnp.setdiff1d, _set_rule(0, second=False), _set_rule(1, second=False))
defvjp(mnp.intersect1d, _set_rule(0, 0.5), _set_rule(1, 0.5))




# ---------------------------------------------------------------- in-place writes
def _replay(name, target, value, call):
    """``target`` with NumPy's in-place ``name`` applied out of place, differentiably.

    ``call(map, numbers)`` runs NumPy's function on an int64 map of ``target``'s shape
    (-1: untouched) with the element numbers of ``value``: the map then says,
    per position, which value element NumPy wrote there (repeats, modes,
    broadcasting and last-write-wins are NumPy's own).
    """
    if type(target) is not Array:
        raise TypeError(f"minpy.grad: in-place {name} into a {type(target).__name__} (not a "
                        "minpy array) with traced values cannot be differentiated")
    vals = value if type(value) is Array else mnp.asarray(value)
    shape = target.shape
    imap = numpy.full(shape, -1, dtype=numpy.int64)
    call(imap, numpy.arange(vals.size, dtype=numpy.int64).reshape(vals.shape))
    flat = imap.reshape(-1)
    pos = numpy.flatnonzero(flat >= 0)
    if pos.size == 0:
        return target, target
    src = mnp.take(mnp.reshape(vals, (-1,)), flat[pos])
    res = index_update(mnp.reshape(target, (-1,)), (pos,), src)
    return target, mnp.reshape(res, shape)


def _put(a, ind, v, mode="raise"):
    return _replay("put", a, v,
                   lambda m, n: numpy.put(m, host(ind), n, mode=mode))


def _place(arr, mask, vals):
    return _replay("place", arr, vals,
                   lambda m, n: numpy.place(m, host(mask), n))


def _putmask(a, mask, values):
    return _replay("putmask", a, values,
                   lambda m, n: numpy.putmask(m, host(mask), n))


def _put_along_axis(arr, indices, values, axis):
    return _replay("put_along_axis", arr, values,
                   lambda m, n: numpy.put_along_axis(m, host(indices), n, axis))


def _fill_diagonal(a, val, wrap=False):
    return _replay("fill_diagonal", a, val,
                   lambda m, n: numpy.fill_diagonal(m, n, wrap=wrap))


INPLACE = {"put": _put, "place": _place, "putmask": _putmask,
           "put_along_axis": _put_along_axis, "fill_diagonal": _fill_diagonal}
for _name, _replay_fn in INPLACE.items():
    def_inplace_replay(getattr(mnp, _name), _replay_fn)

table_ends(__name__)
