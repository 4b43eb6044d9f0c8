"""MinPy's ``minpy.core``: its ``grad``/``grad_and_loss``, converters and ``Function``.

Each name is a thin layer over minpy's own API, with MinPy's behaviour:

- :func:`grad_and_loss` / :func:`grad`: the differentiated Array objects are
  traced *in place* for the call, so a loss that reads parameters from
  elsewhere (``model.params``) still gets gradients; a non-scalar output is
  seeded with ones; one argnum gives one gradient. ``minpy.grad`` (autograd's,
  :mod:`minpy.core.autograd`) keeps the strict semantics.
- converters :func:`numpy_to_minpy`, :func:`minpy_to_numpy`,
  :func:`convert_args`, :func:`return_numpy`;
- :class:`Function`: a symbol as a big operator (:class:`minpy.symbol.Function`),
  taking MinPy's call (extra keyword arguments ignored) and ``get_params``;
  :func:`function` is :func:`minpy.symbol.function`. Both are defined in
  :mod:`.symbol_function` and imported on first use (they need ``minpy.symbol``).

These names are also ``minpy.core``'s: see :mod:`minpy.compat` for why they are
bound there rather than defined in core.
"""
import functools

import numpy

from .. import numpy as mnp
from ..core import autograd, tree
from ..core.array import Array, new

__all__ = ["grad_and_loss", "grad", "numpy_to_minpy", "minpy_to_numpy", "convert_args",
           "return_numpy", "Function", "function"]


# ---------------------------------------------------------------- MinPy's autograd
def _argnums(argnum, who):
    if isinstance(argnum, int) and not isinstance(argnum, bool):
        return (argnum,)
    try:
        nums = tuple(argnum)
    except TypeError:
        nums = ()
    if not nums or not all(isinstance(a, int) and not isinstance(a, bool) for a in nums):
        raise TypeError(f"{who}: argnum must be an int or a non-empty sequence of ints "
                        f"(a list, tuple or range), got {argnum!r}")
    return nums


def _clone(a):
    """A second Array object for ``a``'s buffer and tape state (what gets boxed)."""
    c = new(a._data)
    c._node, c._var = a._node, a._var
    return c


def _as_target(out):
    """The function's output as the scalar the strict ``grad`` differentiates: a
    fresh Array (not an argument object, whose tape state is restored before
    backward), summed when it has several elements; tuples are summed together."""
    if isinstance(out, (tuple, list)):
        parts = [_as_target(o) for o in out]
        return functools.reduce(lambda s, p: s + p, parts) if parts else 0.0
    if type(out) is Array:
        return mnp.sum(out) if out.size != 1 else _clone(out)
    return out


def _mark_in_place(original, boxed, marks):
    """The argument tree ``func`` gets: each Array of ``original`` traced in place as
    its leaf in ``boxed`` (its old state appended to ``marks``); other leaves boxed."""
    it = iter(tree.leaves(boxed))

    def one(o):
        b = next(it)
        if type(o) is not Array:
            return b
        marks.append((o, (o._data, o._node, o._var, o._copies)))
        o._node = b._node
        return o
    return tree.map_tree(one, original)


def _unbox(x, tape):
    """``x`` one tracing level below ``tape`` (the loss as the caller sees it)."""
    n = getattr(x, "_node", None)
    if type(x) is Array and n is not None and n.tape is tape:
        return n.value
    if isinstance(x, (tuple, list)):
        return type(x)(_unbox(e, tape) for e in x)
    return x


def _positions(argnums, args):
    """The sorted argument positions ``argnums`` names; refuses one Array object twice."""
    for a in argnums:
        if not -len(args) <= a < len(args):
            raise IndexError(f"minpy.core.grad_and_loss: argnum {a} out of range for "
                             f"{len(args)} arguments")
    positions = sorted({a % len(args) for a in argnums})
    seen = {}
    for i in positions:
        for leaf in tree.leaves(args[i]):
            if type(leaf) is Array:
                if id(leaf) in seen:
                    raise ValueError(
                        "minpy.core.grad_and_loss: the same Array object is passed twice among "
                        f"the differentiated arguments (arguments {seen[id(leaf)]} and {i}); "
                        "MinPy's semantics trace arrays in place, so pass a copy")
                seen[id(leaf)] = i
    return positions


def _numpy_argument(a, differentiated):
    """A NumPy array argument as a minpy Array; a differentiated integer or bool one
    as float64, as MinPy differentiated it (minpy.grad refuses integer arrays)."""
    if not isinstance(a, numpy.ndarray):
        return a
    if differentiated and a.dtype.kind in "iub":
        a = a.astype(numpy.float64)
    return numpy_to_minpy(a)


def grad_and_loss(func, argnum=0):
    """MinPy's ``minpy.core.grad_and_loss``: ``func -> (lambda *args: (grads, loss))``.

    Differs from the strict :func:`minpy.grad_and_loss` as MinPy did:

    - the Array objects passed at ``argnum`` are traced *in place* while
      ``func`` runs (MinPy's ``mark_for_bp``), so every reference to them
      counts, e.g. ``def loss(*params): return model.loss(X)`` reading
      ``model.params``; their state is restored when the call returns (writes
      into them inside ``func`` do not reach the caller, as with the strict
      version). Marking is visible to other threads during the call.
    - a non-scalar output (or a tuple of outputs) is differentiated as the sum
      of its elements (seeded with ones);
    - ``argnum`` may be any sequence of ints (a ``range``); with one index the
      gradient is returned alone. NumPy arrays among the arguments become
      minpy Arrays first.

    Passing the same Array object twice among the differentiated arguments
    raises ValueError (in-place marking cannot tell the two positions apart).

    Returns:
        A function returning ``(grads, loss)`` with ``loss`` as ``func`` returned it.

    See also minpy.grad_and_loss, minpy.value_and_grad.
    """
    argnums = _argnums(argnum, "minpy.core.grad_and_loss")
    single = len(argnums) == 1

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        positions = _positions(argnums, args)
        args = [_numpy_argument(a, i in positions) for i, a in enumerate(args)]
        originals = {i: args[i] for i in positions}
        for i in positions:
            args[i] = tree.map_tree(lambda v: _clone(v) if type(v) is Array else v, args[i])
        found = {}

        def body(*boxed_args, **kw):
            marks = []      # (original Array, its saved state)
            call = list(boxed_args)
            try:
                for i in positions:
                    call[i] = _mark_in_place(originals[i], boxed_args[i], marks)
                found["tape"] = next((b._node.tape for i in positions
                                      for b in tree.leaves(boxed_args[i])), None)
                out = found["out"] = func(*call, **kw)
                return _as_target(out)
            finally:
                for o, (d, n, v, c) in reversed(marks):
                    o._data, o._node, o._var, o._copies = d, n, v, c
        grads, _ = autograd.grad_and_loss(body, tuple(positions))(*args, **kwargs)
        by_position = dict(zip(positions, grads))
        grads = tuple(by_position[a % len(args)] for a in argnums)
        return (grads[0] if single else grads), _unbox(found["out"], found.get("tape"))
    return wrapped


def grad(func, argnum=0):
    """MinPy's ``minpy.core.grad``: the gradients of :func:`grad_and_loss` alone.

    See also minpy.grad (strict: arguments boxed, scalar output required).
    """
    gl = grad_and_loss(func, argnum)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return gl(*args, **kwargs)[0]
    return wrapped


# ---------------------------------------------------------------- converters
def _to_minpy(x):
    return mnp.asarray(x) if isinstance(x, numpy.ndarray) else x


def numpy_to_minpy(var):
    """NumPy arrays in ``var`` (one, or nested lists/tuples/dicts) as minpy Arrays.

    Arrays land on the current context (no copy on the CPU); other leaves
    (numbers, Arrays, None) are returned unchanged. See also minpy.asarray.
    """
    return tree.map_tree(_to_minpy, var)


def _to_numpy(x):
    return x.asnumpy() if type(x) is Array else x


def minpy_to_numpy(var):
    """minpy Arrays in ``var`` (one, or nested lists/tuples/dicts) as host NumPy arrays.

    See also minpy.Array.asnumpy.
    """
    return tree.map_tree(_to_numpy, var)


def convert_args(func):
    """Decorator: NumPy arrays among ``func``'s arguments become minpy Arrays.

    See also numpy_to_minpy.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*numpy_to_minpy(args), **numpy_to_minpy(kwargs))
    return wrapper


def return_numpy(func):
    """Decorator: minpy Arrays in ``func``'s result become NumPy arrays.

    See also minpy_to_numpy.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return minpy_to_numpy(func(*args, **kwargs))
    return wrapper


# ---------------------------------------------------------------- big operators
def __getattr__(name):
    """``Function`` and ``function`` (:mod:`.symbol_function`), imported on first use:
    they need :mod:`minpy.symbol`, which ``import minpy`` does not load (issue 27).

    Raises AttributeError (as any module does) for any other missing name.
    """
    if name in ("Function", "function"):
        from .symbol_function import Function, function
        globals().update(Function=Function, function=function)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
