"""MinPy's names over minpy's API: the one module of aliases and adapters.

Programs written for MinPy (dmlc/minpy, 2017) import ``minpy.core``,
``minpy.context``, ``minpy.array``, ``minpy.array_variants``,
``minpy.primitive``, ``minpy.utils.gradient_checker`` and
``minpy.utils.minprof``; those modules re-export what is defined here, each
item a thin layer over minpy's own API:

- :func:`grad_and_loss` / :func:`grad` with MinPy's semantics (``minpy.core``):
  the differentiated Array objects are traced *in place* for the call, so a
  loss that reads parameters from elsewhere (``model.params``) still gets
  gradients; a non-scalar output is seeded with ones; one argnum gives one
  gradient. ``minpy.grad`` keeps autograd's strict semantics.
- converters :func:`numpy_to_minpy`, :func:`minpy_to_numpy`,
  :func:`convert_args`, :func:`return_numpy`; the types :class:`Number`,
  :class:`Value` and :class:`ArrayType`;
- :class:`Function` (``minpy.core.Function``): a symbol as a big operator,
  taking MinPy's call (extra keyword arguments ignored) and ``get_params``;
- :func:`customop` (MinPy's ``@customop('numpy')``), :func:`set_context`,
  :func:`set_global_policy`, :func:`wrap_policy`, :func:`record_op_stat` /
  :func:`show_op_stat`, :data:`minprof` and :func:`quick_grad_check`.
"""
import enum
import functools
import math
import numbers
import sys
import threading
import time

import numpy

from . import dispatch
from . import numpy as mnp
from .core import autograd, tree
from .core.custom_ops import customop as _core_customop
from .core.array import Array, new
from .dispatch import Context, cpu, gpu, current_context   # noqa: F401  (minpy.context)
from .dispatch.context import explicit_context
from .symbol.function import Function as _SymbolFunction
from .testing import check_grads

__all__ = ["grad_and_loss", "grad", "numpy_to_minpy", "minpy_to_numpy", "convert_args",
           "return_numpy", "wrap", "Number", "Value", "ArrayType", "customop", "Context", "cpu",
           "gpu", "current_context", "set_context", "set_global_policy", "get_global_policy",
           "wrap_policy", "record_op_stat", "show_op_stat", "Profiler", "minprof",
           "quick_grad_check", "Function"]


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


# ---------------------------------------------------------------- converters and types
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


wrap = numpy_to_minpy      # MinPy's ``minpy.array.wrap``


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


class _TestedType(type):
    """A type whose ``isinstance`` is the class's ``_test`` (MinPy's wrapper types)."""

    def __instancecheck__(cls, obj):
        return cls._test(obj)


def _is_number(obj):
    if type(obj) is Array:
        return obj.ndim == 0
    return isinstance(obj, (numbers.Number, numpy.number)) and not isinstance(obj, bool)


class Number(metaclass=_TestedType):
    """MinPy's scalar type, as an ``isinstance`` test.

    MinPy wrapped scalars in a ``float`` subclass; minpy's scalar results are
    0-d Arrays (they carry gradients) or Python/NumPy numbers, and
    ``isinstance(x, Number)`` is true for those (not for ``bool``).
    ``Number(v)`` returns ``minpy.asarray(v)``, a 0-d Array.
    """
    _test = staticmethod(_is_number)

    def __new__(cls, val):
        return mnp.asarray(val)


class Value(metaclass=_TestedType):
    """MinPy's base of ``Array`` and ``Number``: ``isinstance(x, Value)`` is true for
    minpy Arrays and numbers."""
    _test = staticmethod(lambda obj: type(obj) is Array or _is_number(obj))


class ArrayType(enum.Enum):
    """MinPy's array kinds. ``NUMPY``: host NumPy arrays (minpy's CPU, ``cpu(i)``);
    ``MXNET``: MinPy's device arrays, which in minpy are CuPy arrays on ``gpu(i)``."""
    NUMPY = 0
    MXNET = 1


# ---------------------------------------------------------------- custom operators
class _HostCustomOp(_core_customop):
    """A customop whose forward and gradient functions see host NumPy arrays."""

    def def_grad(self, maker, argnum=0):
        """Register ``maker(ans, *args) -> (lambda g: grad)``, all NumPy arrays."""
        @functools.wraps(maker)
        def on_host(ans, *args, **kwargs):
            g_fn = maker(minpy_to_numpy(ans), *minpy_to_numpy(args), **minpy_to_numpy(kwargs))
            return lambda g: _result_to_minpy(g_fn(minpy_to_numpy(g)))
        super().def_grad(on_host, argnum)
        return maker


def _result_to_minpy(r):
    if isinstance(r, tuple):
        return tuple(_result_to_minpy(e) for e in r)
    return r if r is None or type(r) is Array else mnp.asarray(r)


def customop(op_type):
    """MinPy's ``@customop('numpy')`` / ``@customop('mxnet')``; also ``@customop`` bare.

    ``'numpy'``: the function and its gradient (``.def_grad(maker, argnum=0)``)
    receive host NumPy arrays and may return NumPy arrays or scalars (they run
    on the CPU). ``'mxnet'``: they receive minpy Arrays on the array's device
    (MinPy's MXNet arrays are minpy's GPU arrays). See also minpy.customop.
    """
    if callable(op_type):
        return _core_customop(op_type)
    if op_type == "mxnet":
        return _core_customop
    if op_type != "numpy":
        raise ValueError(f"customop: op_type must be 'numpy' or 'mxnet', got {op_type!r}")

    def decorate(fn):
        @functools.wraps(fn)
        def on_host(*args, **kwargs):
            return _result_to_minpy(fn(*minpy_to_numpy(args), **minpy_to_numpy(kwargs)))
        return _HostCustomOp(on_host)
    return decorate


# ---------------------------------------------------------------- contexts
_set_here = threading.local()     # the context set_context pushed in this thread


def set_context(ctx):
    """Make ``ctx`` the default context of this thread (MinPy's ``set_context``).

    Like entering ``with ctx:`` for the rest of the thread (minpy's default
    context is per thread; MinPy's was per process): ``gpu(i)`` without a GPU
    raises RuntimeError, as ``with minpy.gpu(i):`` does. A later call
    replaces it; ``set_context(None)`` goes back to the default, ``cpu(0)``.
    Calling it inside a ``with ctx:`` block raises RuntimeError.
    See also minpy.current_context.
    """
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"set_context: expected a Context such as minpy.cpu() or "
                        f"minpy.gpu(0), got {type(ctx).__name__}")
    prev = getattr(_set_here, "ctx", None)
    top = explicit_context()
    if top is not None and top is not prev:
        raise RuntimeError(f"set_context({ctx}) inside a 'with {top}:' block; call it outside "
                           "any 'with' context block")
    if top is not None:           # what the last set_context left on this thread's stack
        top.__exit__(None, None, None)
        _set_here.ctx = None
    if ctx is None:
        return
    ctx = Context(ctx.device_type, ctx.device_id)    # our own object: `is` finds it again
    try:
        ctx.__enter__()
    except BaseException:
        if top is not None:
            top.__enter__()
            _set_here.ctx = top
        raise
    _set_here.ctx = ctx


# ---------------------------------------------------------------- policies
def set_global_policy(plc):
    """Set the process-wide device policy (MinPy's ``minpy.set_global_policy``).

    ``plc``: a policy name — MinPy's ``'prefer_mxnet'``, ``'only_numpy'``,
    ``'only_mxnet'`` or minpy's ``'prefer_gpu'``, ``'only_cpu'``, ``'only_gpu'``
    — or a policy object (``minpy.dispatch.policy.OnlyNumPyPolicy()``).
    Unknown names raise ValueError listing the valid ones. See also minpy.set_policy.
    """
    dispatch.set_policy(plc)


def get_global_policy():
    """The current policy name (MinPy's ``minpy.get_global_policy``). See also minpy.get_policy."""
    return dispatch.get_policy()


def wrap_policy(plc):
    """Decorator running a function under policy ``plc`` (MinPy's ``minpy.wrap_policy``).

    See also minpy.policy, set_global_policy.
    """
    return dispatch.policy(plc)


# ---------------------------------------------------------------- op statistics
def record_op_stat():
    """Start counting calls per backend (MinPy's ``minpy.numpy.record_op_stat``).

    Zeroes :func:`minpy.dispatch.stats`, which counts the calls that take the
    dispatch's device path; without a GPU every call is a plain NumPy call and
    is not counted. See also show_op_stat.
    """
    dispatch.reset_stats()


def show_op_stat(file=None):
    """Print the calls per function and backend since :func:`record_op_stat`.

    A table of function, backend and calls, the share of each backend, and
    the copies between devices. See also minpy.dispatch.stats.
    """
    file = sys.stdout if file is None else file
    s = dispatch.stats()
    rows = sorted((fn, be, n) for fn, per in s["calls"].items() for be, n in per.items())
    totals = {}
    for _, be, n in rows:
        totals[be] = totals.get(be, 0) + n
    print("-------- op dispatch statistics --------", file=file)
    if not rows:
        why = "" if dispatch.gpu_backend() is not None else \
            " (no GPU backend: every call ran as a plain NumPy call, which is not counted)"
        print("no calls counted" + why, file=file)
    else:
        width = max(len("function"), *(len(fn) for fn, _, _ in rows))
        print(f"{'function':<{width}}  {'backend':<8} {'calls':>8}", file=file)
        for fn, be, n in rows:
            print(f"{fn:<{width}}  {be:<8} {n:>8}", file=file)
        total = sum(totals.values())
        print("total: " + ", ".join(f"{n} on {be} ({n / total:.1%})"
                                    for be, n in sorted(totals.items())), file=file)
    for direction, n in sorted(s["copies"].items()):
        print(f"copies {direction}: {n} ({s['bytes'].get(direction, 0)} bytes)", file=file)


# ---------------------------------------------------------------- minprof
def _dispatch_totals():
    s = dispatch.stats()
    return (sum(n for per in s["calls"].values() for n in per.values()),
            sum(s["bytes"].values()))


class _Region:
    """One timed region of a :class:`Profiler` (a ``with`` block or a call)."""

    __slots__ = ("prof", "label", "start")

    def __init__(self, prof, label):
        self.prof, self.label, self.start = prof, label, None

    def __enter__(self):
        if self.label is None:
            f = sys._getframe(1)
            self.label = f"{f.f_code.co_filename}:{f.f_lineno}"
        self.start = (time.perf_counter(), *_dispatch_totals())
        return self

    def __exit__(self, *exc):
        t0, calls0, bytes0 = self.start
        calls1, bytes1 = _dispatch_totals()
        rec = self.prof.records.setdefault(self.label, [0, 0.0, 0, 0])
        rec[0] += 1
        rec[1] += time.perf_counter() - t0
        rec[2] += calls1 - calls0
        rec[3] += bytes1 - bytes0
        return False


class Profiler:
    """MinPy's ``minprof``: time functions (``@minprof``) and blocks (``with minprof():``,
    ``with minprof('label'):``), with the dispatch calls and bytes copied inside them.

    ``records`` maps a label to ``[calls, seconds, dispatch calls, bytes copied]``
    (nested regions count in each enclosing one). See also minpy.dispatch.stats.
    """

    def __init__(self):
        self.records = {}

    def __call__(self, func=None):
        if func is None or isinstance(func, str):
            return _Region(self, func)
        if not callable(func):
            raise TypeError(f"minprof: expected a function, a label or nothing, got "
                            f"{type(func).__name__}")
        code = getattr(func, "__code__", None)
        label = getattr(func, "__qualname__", repr(func)) + (
            f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else "")

        @functools.wraps(func)
        def timed(*args, **kwargs):
            with _Region(self, label):
                return func(*args, **kwargs)
        return timed

    def get_stats(self):
        """A copy of :attr:`records`."""
        return {k: list(v) for k, v in self.records.items()}

    def reset(self):
        """Forget every record."""
        self.records.clear()

    def print_stats(self, stream=None):
        """Print one line per label: calls, total and per-call ms, dispatch calls, bytes."""
        stream = sys.stdout if stream is None else stream
        stream.write(f"{'ncalls':>8} {'total ms':>10} {'per call':>10} {'dispatch':>9} "
                     f"{'copied B':>10}  region\n")
        for label, (n, secs, calls, nbytes) in sorted(self.records.items(),
                                                      key=lambda kv: -kv[1][1]):
            stream.write(f"{n:>8} {secs * 1e3:>10.3f} {secs * 1e3 / n:>10.4f} {calls:>9} "
                         f"{nbytes:>10}  {label}\n")


minprof = Profiler()


# ---------------------------------------------------------------- gradient checking
def quick_grad_check(fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-2,
                     rtol=1e-2, atol=1e-2, rs=None):
    """Check ``fun``'s gradient w.r.t. its first argument along a random direction
    (MinPy's ``minpy.utils.gradient_checker.quick_grad_check``).

    ``fun(arg0, *extra_args, **kwargs)`` may return any shape; the check runs
    in float64 with a central difference of step ``eps`` along a direction of
    about unit length. ``rs``: a ``numpy.random.RandomState`` seeding it.

    Returns:
        True if the gradient matches, else False; prints the outcome when ``verbose``.

    See also minpy.testing.check_grads (which raises instead).
    """
    kwargs = kwargs or {}
    seed = int(rs.randint(2 ** 31 - 1)) if rs is not None else None
    size = max(int(numpy.size(minpy_to_numpy(arg0))), 1)
    name = getattr(fun, "__name__", repr(fun))
    try:
        check_grads(lambda x: fun(x, *extra_args, **kwargs), arg0, order=1, argnums=[0],
                    eps=eps / math.sqrt(size), rtol=rtol, atol=atol, seed=seed)
    except AssertionError as e:
        if verbose:
            print(f"Check failed! {e}")
        return False
    if verbose:
        print(f"Gradient projection OK ({name}: gradient matches finite differences)")
    return True


# ---------------------------------------------------------------- big operators
class Function(_SymbolFunction):
    """MinPy's ``minpy.core.Function``: :class:`minpy.symbol.Function` with MinPy's calls.

    - A call ignores keyword arguments the symbol does not take: MinPy
      programs pass the whole ``model.params`` (``self.conv(X=X, **self.params)``).
    - ``get_params()`` returns MinPy's parameter configs ``{name: {'shape': shape}}``
      for ``ModelBase.add_params``; ``get_param_arrays`` gives initialised arrays
      (``minpy.symbol.Function.get_params``).
    """

    def __call__(self, *args, is_train=None, **inputs):
        known = self._known_names
        return super().__call__(*args, is_train=is_train,
                                **{k: v for k, v in inputs.items() if k in known})

    @functools.cached_property
    def _known_names(self):
        return frozenset(self.arg_names) | frozenset(self.aux_names)

    def get_params(self):
        """MinPy's form: ``{name: {'shape': shape}}`` for each parameter."""
        return {name: {"shape": tuple(shape)} for name, shape in self.param_shapes.items()}

    def get_param_arrays(self, init="xavier", seed=None, dtype=None):
        """Initialised parameter Arrays (see minpy.symbol.Function.get_params)."""
        return super().get_params(init=init, seed=seed, dtype=dtype)
