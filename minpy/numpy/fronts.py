"""The public functions that replace a generated wrapper: Python-level fronts that
keep traced arrays traced (the namespace layer; gradient rules live in the
``vjp_*`` tables).

- ``pad``: a callable ``mode`` on a traced array raises ``TypeError`` at the
  call; traced ``constant_values``/``end_values`` lists become one Array.
- ``piecewise``: on traced input (and, with a GPU, whenever it is given functions),
  NumPy's algorithm re-run with minpy indexing (``y[cond] = func(x[cond])``), so the
  functions see traced arrays.
- ``array``/``asarray``/``asanyarray`` of nested lists holding traced arrays:
  built with ``stack``, level by level (a flat list is recorded as is).
- one-argument ``where(cond)`` (that is ``nonzero``): never recorded.
- ``apply_along_axis``, ``apply_over_axes``, ``fromfunction``: under a tape
  NumPy's algorithm with minpy arrays, so gradients flow through the function.
- ``block``: traced arrays nested deeper than the top-level list go through
  one primitive over the flattened blocks (``block_leaves``).

Each front tests :func:`minpy.core.tape.recording` (this thread records) only
off the straight-NumPy path, so calls without a tape cost what they did.
"""
import numpy
from numpy.lib.array_utils import normalize_axis_index

from ..core.array import Array, new, unwrap_cpu, wrap
from ..core import tree
from ..core.autograd import stop_gradient
from ..core.tape import recording
from ..core.wrappers import make_function
from ..dispatch import state
from . import generated as gen

__all__ = ["pad", "piecewise", "array", "asarray", "asanyarray", "where", "apply_along_axis",
           "apply_over_axes", "fromfunction", "block", "FRONTS", "host", "block_leaves",
           "rebuild_nested"]

_process = state.process
_ndarray = numpy.ndarray


def host(x):
    """Host NumPy value of an index-like argument (Arrays copied to the host)."""
    if type(x) is Array:
        return x._host()
    if isinstance(x, (list, tuple)) and any(type(e) is Array for e in x):
        return type(x)(host(e) for e in x)
    return x


def _front(fn, generated):
    """``fn`` dressed as the public function that ``generated`` was (name, doc, primitive)."""
    fn.__name__ = fn.__qualname__ = generated.__name__
    fn.__doc__ = f"{fn.__doc__}\n\n{generated.__doc__}" if fn.__doc__ else generated.__doc__
    fn._prim = generated._prim
    fn.__wrapped_numpy__ = generated.__wrapped_numpy__
    return fn


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


# ---------------------------------------------------------------- pad


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array. See also numpy.pad.

    Under a gradient tape every string mode is differentiable (w.r.t. ``array``,
    ``constant_values`` and ``end_values``); a callable ``mode`` on a traced
    array raises ``TypeError`` here, at the call.
    """
    if recording():
        if callable(mode) and _traced((array, kwargs)):
            raise TypeError(f"minpy.grad: pad with mode={mode!r} (a callable) cannot be "
                            "differentiated; its result depends on a traced array (use a "
                            "string mode, or wrap the input in minpy.stop_gradient)")
        for k in ("constant_values", "end_values"):
            v = kwargs.get(k)
            if type(v) in (list, tuple) and _traced(v):
                kwargs[k] = asarray(v)         # one traced Array: recorded as such
    if isinstance(mode, str) and mode == "wrap" and not kwargs:
        x = gen.asarray(array)
        widths = numpy.broadcast_to(numpy.asarray(host(pad_width), dtype=numpy.int64),
                                    (x.ndim, 2))
        pairs = list(zip(widths.tolist(), x.shape))
        if any(max(b, a) > n for (b, a), n in pairs) and all(n or not (b or a)
                                                             for (b, a), n in pairs):
            return _pad_wrap_wide(x, widths)
    return gen.pad(array, pad_width, mode, **kwargs)


def _pad_wrap_wide(x, widths):
    """``pad(x, widths, 'wrap')`` with a width larger than its axis, as gathers of NumPy's
    own index map: NumPy (1.25+) repeats whole periods there, CuPy's pad (14.x) still
    pads as NumPy did before and answers differently."""
    for axis, ((b, a), n) in enumerate(zip(widths.tolist(), x.shape)):
        if b or a:
            x = gen.take(x, numpy.pad(numpy.arange(n), (b, a), "wrap"), axis=axis)
    return x


# ---------------------------------------------------------------- piecewise


def _piecewise_traced(x, condlist, funclist, *args, **kw):
    """numpy.piecewise's algorithm with minpy indexing, so traced values stay traced and
    the functions see Arrays where ``x`` lives."""
    x = asanyarray(x)
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
    y = gen.zeros_like(x)
    for cond, func in zip(conds, funclist):
        c = asarray(cond)
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
    extra arguments, the functions are called on traced pieces ``x[cond]``. With a
    GPU present, functions in ``funclist`` are called on the pieces as Arrays (CuPy's
    piecewise takes no functions).
    """
    if (_process.gpu is not None and (args or kw or any(map(callable, funclist)))) or (
            recording() and _traced((x, funclist, args, kw))):
        return _piecewise_traced(x, condlist, funclist, *args, **kw)
    return gen.piecewise(x, condlist, funclist, *args, **kw)


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
        return gen.stack([_stacked(e, dtype) for e in obj])
    if type(obj) is Array:
        return obj if obj.dtype == dtype else obj.astype(dtype)
    return asarray(obj, dtype=dtype)


def _from_nested(obj, dtype=None, ndmin=0):
    """``array(obj)`` for nested lists of traced arrays: stacked level by level, in the
    dtype NumPy would give (Python scalars count as float64/int64/complex128/bool)."""
    dt = numpy.dtype(dtype) if dtype is not None else numpy.result_type(*_leaf_dtypes(obj, []))
    r = _stacked(obj, dt)
    if r.ndim < ndmin:
        r = gen.reshape(r, (1,) * (ndmin - r.ndim) + r.shape)
    return r


def _creation_front(generated):
    """``array``/``asarray``/``asanyarray``: nested lists holding traced arrays are
    stacked (so they stay traced); anything else is the generated function."""
    def create(*args, ctx=None, **kwargs):
        if args and type(args[0]) in (list, tuple) and recording() \
                and _deep_traced(args[0]) and kwargs.get("copy") is not False \
                and kwargs.get("like") is None and len(args) <= 2:
            dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
            return _from_nested(args[0], dtype, kwargs.get("ndmin", 0))
        return generated(*args, ctx=ctx, **kwargs)
    return _front(create, generated)


array = _creation_front(gen.array)
asarray = _creation_front(gen.asarray)
asanyarray = _creation_front(gen.asanyarray)


# ---------------------------------------------------------------- where(cond)
_np_where = numpy.where


def where(*args, **kwargs):
    """``where(condition, x, y)``; ``where(condition)`` is ``nonzero``. See also numpy.where.

    One-argument ``where`` returns index arrays: never recorded on a tape.
    """
    if _process.fast and not kwargs:      # the generated wrapper's straight-NumPy path
        r = _np_where(*[unwrap_cpu(a) for a in args])
        return new(r) if type(r) is _ndarray else wrap(r)
    if len(args) == 1 and not kwargs:
        args = (stop_gradient(args[0]),)
    return gen.where(*args, **kwargs)


# ---------------------------------------------------------------- fronts


def _apply_along_axis_traced(func1d, axis, arr, *args, **kwargs):
    """numpy.apply_along_axis's algorithm with minpy arrays: slices, then stack."""
    arr = asanyarray(arr)
    nd = arr.ndim
    axis = normalize_axis_index(axis, nd)
    view = gen.moveaxis(arr, axis, -1)
    lead = view.shape[:-1]
    inds = list(numpy.ndindex(lead))
    if not inds:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    outs = [asanyarray(func1d(view[ind + (Ellipsis,)], *args, **kwargs)) for ind in inds]
    dt, rshape = outs[0].dtype, outs[0].shape
    outs = [o if o.dtype == dt else o.astype(dt) for o in outs]
    buff = gen.reshape(gen.stack(outs), lead + rshape)
    dims = list(range(buff.ndim))
    rnd = len(rshape)
    return gen.transpose(buff, dims[:axis] + dims[buff.ndim - rnd:] + dims[axis:buff.ndim - rnd])


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply ``func1d`` to 1-D slices along ``axis``. See also numpy.apply_along_axis.

    Differentiable: under a gradient tape (and whenever a GPU is present)
    ``func1d`` runs on minpy slices and the results are stacked, so gradients flow
    through what it does.
    """
    if recording() or _process.gpu is not None:
        # func1d returns minpy arrays: a backend's apply_along_axis (CuPy's) cannot take
        # them, so with a GPU (where the call may run, whatever arr's device) the
        # slices are stacked by minpy too
        return _apply_along_axis_traced(func1d, axis, arr, *args, **kwargs)
    return gen.apply_along_axis(func1d, axis, arr, *args, **kwargs)


def apply_over_axes(func, a, axes):
    """Apply ``func(a, axis)`` repeatedly over ``axes``. See also numpy.apply_over_axes.

    Differentiable: under a gradient tape (and whenever a GPU is present) ``func``
    runs on minpy arrays.
    """
    if not recording() and _process.gpu is None:
        return gen.apply_over_axes(func, a, axes)
    val = asarray(a)
    n = val.ndim
    if numpy.array(axes).ndim == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if res.ndim != val.ndim:
            res = gen.expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val


def fromfunction(function, shape, *, dtype=float, like=None, ctx=None, **kwargs):
    """An array from ``function`` of the index grids. See also numpy.fromfunction.

    Differentiable: under a gradient tape ``function`` gets minpy index arrays,
    so gradients flow to the arrays it uses (keyword arguments, closures).
    """
    if recording() and like is None:
        if ctx is None:
            return function(*gen.indices(shape, dtype=dtype), **kwargs)
        with ctx:
            return function(*gen.indices(shape, dtype=dtype), **kwargs)
    if like is not None:
        kwargs["like"] = like
    return gen.fromfunction(function, shape, dtype=dtype, ctx=ctx, **kwargs)


# ---------------------------------------------------------------- block
def _not_list(x):
    return type(x) is not list


def _leaves(nested):
    """The non-list items of nested lists, in order (``block``'s blocks)."""
    return tree.leaves(nested, is_leaf=_not_list)


def rebuild_nested(structure, leaves):
    """Nested lists of structure ``structure`` (a :class:`minpy.core.tree.TreeDef` of
    lists, or nested lists whose items are ignored) holding ``leaves``."""
    if not isinstance(structure, tree.TreeDef):
        structure = _skeleton(structure)
    return tree.unflatten(structure, leaves)


def _skeleton(nested):
    return tree.structure(nested, is_leaf=_not_list)


block_leaves = make_function(
    "block_leaves", None, name="block_leaves",
    forward=lambda xp, leaves, structure: xp.block(rebuild_nested(structure, list(leaves))),
    doc="``block`` of nested lists given as flat leaves (how minpy traces nested blocks).")


def block(arrays):
    """Assemble an array from nested lists of blocks. See also numpy.block.

    Under a gradient tape, traced arrays nested deeper than the top-level list
    are routed through one primitive over the flattened blocks, so their
    gradients are recorded.
    """
    if recording() and type(arrays) is list and any(type(e) is list for e in arrays):
        leaves = _leaves(arrays)
        if any(type(x) is Array and x._node is not None for x in leaves):
            return block_leaves(leaves, _skeleton(arrays))
    return gen.block(arrays)


for _f, _g in ((pad, gen.pad), (piecewise, gen.piecewise), (where, gen.where),
               (apply_along_axis, gen.apply_along_axis), (apply_over_axes, gen.apply_over_axes),
               (fromfunction, gen.fromfunction), (block, gen.block)):
    _front(_f, _g)

# numpy function -> its front, for ``numpy.f(minpy_array)`` (``__array_function__``)
FRONTS = {numpy.pad: pad, numpy.piecewise: piecewise, numpy.array: array,
          numpy.asarray: asarray, numpy.asanyarray: asanyarray, numpy.where: where,
          numpy.apply_along_axis: apply_along_axis, numpy.apply_over_axes: apply_over_axes,
          numpy.fromfunction: fromfunction, numpy.block: block}
