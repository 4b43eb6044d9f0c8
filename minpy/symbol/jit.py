"""``minpy.jit``: trace a function of arrays once per signature, replay it compiled.

    @minpy.jit
    def train_step(params, x, y):
        grads, loss = minpy.grad_and_loss(loss_fn)(params, x, y)
        for k in params:
            params[k] -= 0.1 * grads[k]          # in place: seen by the caller
        return loss

The first call with a new *signature* -- the arguments' tree structure, each
array's shape, dtype and device, which arguments are the same array, and the
values of the static arguments -- runs the function once while recording every
call it makes, its gradient's backward pass included (``minpy.symbol.trace``),
and returns that run's results.  The recording becomes a program
(``minpy.symbol.jit_program``): constants folded, dead steps dropped,
elementwise chains fused into compiled kernels where that measures faster,
results written into buffers planned once (in place and shared by lifetimes;
donated arguments' buffers reused), compiled to one Python function.  Later
calls with that signature replay the program: no tape, no dispatch, no
temporaries beyond the function's results.

What is static and what is traced:

- Arrays (``minpy.Array`` or ``numpy.ndarray``; nested in lists, tuples and
  dicts) are traced inputs; their values may change from call to call.
- Python scalars, strings, None and any other object in the arguments are
  static: part of the signature (a new value traces again).  So are the
  arguments named by ``static_argnums``.
- Arrays the function reads from outside (closures, globals, ``self``) are
  captured by reference: each replay reads their current contents, so a
  parameter updated in place is seen.  Rebinding such a name to a new Array
  needs :meth:`JitFunction.clear_cache`.  Results the function stores outside
  (other than by writing into arrays in place) are not updated by replays.
- Reading an input-dependent value into Python (``if loss > 0``, ``float(x)``,
  ``x.item()``) cannot be traced: :class:`~minpy.symbol.trace.JitTraceError`
  names the function and line; with ``fallback=True`` such a function runs
  eagerly instead, with a warning once.
- Random draws (``minpy.random``) are made again at each replay.
- Called while a gradient tape records (``minpy.grad`` of a jitted function),
  the function runs eagerly so that the tape sees it: put the ``grad`` inside.

A replay runs in the calling thread after waiting for pending engine writes
to its arrays; calls of one program are serialised (its buffers are reused).
In async mode (``minpy.async_mode()``, CPU) a replay is instead pushed to the
dependency engine as one op that reads the inputs and captures and writes the
arrays it updates in place, its buffers and its results: the call returns at
once with pending results, a chain of calls queues up behind its updates, and
an error raised inside re-raises at the next wait on what it writes.
"""
import collections
import functools
import os
import threading
import warnings

import numpy

from .. import engine
from ..core import tape as _tape
from ..core.async_work import var_of
from ..core.array import Array, new, wait
from ..dispatch import state
from ..dispatch.transfer import context_of
from .jit_fuse import fuse_steps
from .jit_program import build_program
from .trace import JitTraceError, Tracer, rewrap

__all__ = ["jit", "JitFunction", "JitTraceError"]

_SCALARS = (int, float, complex, bool, str, bytes, type(None), numpy.generic, numpy.dtype,
            type, slice, type(Ellipsis))


def jit(fun=None, *, static_argnums=(), donate_argnums=(), fallback=False, cache_size=64,
        fusion=None, plan_memory=True):
    """Trace ``fun`` once per input signature and replay it compiled (see module doc).

    Args:
        fun: a Python function of arrays (usable as ``@jit`` or ``@jit(...)``).
        static_argnums: positions of arguments that are static (part of the
            signature, never traced), e.g. a mode flag or a layer count.
        donate_argnums: positions of array arguments whose buffers the program
            may reuse (their contents are undefined after the call, as with JAX).
        fallback: run functions that cannot be traced eagerly (warning once)
            instead of raising ``JitTraceError``.
        cache_size: programs kept per function (least recently used dropped).
        fusion: fuse elementwise chains into compiled kernels (default: on unless
            env ``MINPY_FUSION`` is 0/false/off).
        plan_memory: write results into planned buffers (default True).
    Returns:
        a :class:`JitFunction`.

    See also jax.jit, torch.compile.
    """
    def make(f):
        return JitFunction(f, static_argnums, donate_argnums, fallback, cache_size, fusion,
                           plan_memory)
    return make if fun is None else make(fun)


def fusion_enabled(option=None):
    """``option`` if given, else False when env ``MINPY_FUSION`` is 0/false/off."""
    if option is not None:
        return bool(option)
    return os.environ.get("MINPY_FUSION", "1").strip().lower() not in ("0", "false", "off", "no")


class _Entry:
    __slots__ = ("program", "treedef", "eager")

    def __init__(self):
        self.program = self.treedef = None
        self.eager = False


class JitFunction:
    """A function traced and compiled per signature (see :func:`jit`).

    Attributes: ``hits``, ``misses`` (calls that replayed / traced),
    ``traces`` (programs built), ``eager_calls``.
    """

    def __init__(self, fun, static_argnums=(), donate_argnums=(), fallback=False,
                 cache_size=64, fusion=None, plan_memory=True):
        if not callable(fun):
            raise TypeError(f"minpy.jit: expected a function, got {type(fun).__name__}")
        self.fun = fun
        self.name = getattr(fun, "__qualname__", getattr(fun, "__name__", repr(fun)))
        self.static_argnums = _positions(static_argnums, "static_argnums")
        self.donate_argnums = _positions(donate_argnums, "donate_argnums")
        both = set(self.static_argnums) & set(self.donate_argnums)
        if both:
            raise ValueError(f"minpy.jit({self.name}): arguments {sorted(both)} are both "
                             "static and donated")
        self.fallback, self.cache_size = bool(fallback), int(cache_size)
        self.fusion, self.plan_memory = fusion, bool(plan_memory)
        self._cache = collections.OrderedDict()
        self._lock = threading.Lock()
        self._warned = False
        self.hits = self.misses = self.traces = self.eager_calls = 0
        functools.update_wrapper(self, fun)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def clear_cache(self):
        """Forget every traced program (the next call traces again)."""
        with self._lock:
            self._cache.clear()

    def cache_info(self):
        """``{'hits', 'misses', 'traces', 'size', 'maxsize', 'eager_calls'}``."""
        return {"hits": self.hits, "misses": self.misses, "traces": self.traces,
                "size": len(self._cache), "maxsize": self.cache_size,
                "eager_calls": self.eager_calls}

    def programs(self):
        """The compiled programs (``minpy.symbol.jit_program.Program``), newest last."""
        return [e.program for e in self._cache.values() if e.program is not None]

    def __call__(self, *args, **kwargs):
        flags = state.per_thread.flags
        if flags.tracer is not None or flags.depth or _traced_args(args, kwargs):
            self.eager_calls += 1
            return self.fun(*args, **kwargs)
        leaves, key, arrays = [], [], []
        for i, a in enumerate(args):
            if i in self.static_argnums:
                key.append(("static", _static_key(a, self.name, i)))
            else:
                key.append(_flatten(a, leaves, arrays))
        for k in sorted(kwargs):
            key.append((k, _flatten(kwargs[k], leaves, arrays)))
        uniq, order, metas = {}, [], []
        for a in arrays:
            d = a._data
            order.append(uniq.setdefault(id(d), len(uniq)))
            # host arrays by type (hashing a Context per array cost ~1 us a call)
            metas.append((d.shape, d.dtype,
                          "cpu" if type(d) is numpy.ndarray else context_of(d)))
        sig = (tuple(key), tuple(order), tuple(metas))
        with self._lock:
            entry = self._cache.get(sig)
            if entry is not None:
                self._cache.move_to_end(sig)
        if entry is not None and entry.eager:
            self.hits += 1
            self.eager_calls += 1
            return self.fun(*args, **kwargs)
        if entry is not None and entry.program.captures_match():
            self.hits += 1
            return self._replay(entry, arrays, order)
        self.misses += 1
        return self._trace(sig, args, kwargs)

    # ------------------------------------------------------------------ trace
    def _trace(self, sig, args, kwargs):
        args = tuple(a if i in self.static_argnums else rewrap(a) for i, a in enumerate(args))
        kwargs = {k: rewrap(v) for k, v in kwargs.items()}
        arrays = []
        for i, a in enumerate(args):
            if i not in self.static_argnums:
                _flatten(a, [], arrays)
        for k in sorted(kwargs):
            _flatten(kwargs[k], [], arrays)
        tracer = Tracer(self.name, self.fallback)
        prev = state.enter_trace(tracer)
        try:
            unique = []
            for a in arrays:
                wait(a)
                k = tracer.add_input(a)
                if k not in unique:
                    unique.append(k)
            result = self.fun(*args, **kwargs)
        finally:
            state.exit_trace(prev)
        entry = _Entry()
        if tracer.untraceable is not None:
            entry.eager = True
            if not self._warned:
                self._warned = True
                warnings.warn(tracer.untraceable + " -- running it eagerly (fallback=True)",
                              RuntimeWarning, stacklevel=3)
        else:
            out_leaves = []
            entry.treedef = _out_tree(result, out_leaves)
            out_slots = []
            for leaf in out_leaves:
                if type(leaf) is Array:
                    out_slots.append(tracer.slot_for(leaf))
            donated = set()
            for i in self.donate_argnums:
                if i < len(args):
                    d = []
                    _flatten(args[i], [], d)
                    donated.update(unique.index(tracer.slot_of[id(a._data)]) for a in d)
            entry.program = build_program(tracer, unique, out_slots, donated,
                                          self._fuser(), self.plan_memory, self.name)
            self.traces += 1
        with self._lock:
            self._cache[sig] = entry
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return result

    def _fuser(self):
        return fuse_steps if fusion_enabled(self.fusion) else None

    # ----------------------------------------------------------------- replay
    def _replay(self, entry, arrays, order):
        if not order or order[-1] == len(order) - 1:     # no array passed twice
            inputs = arrays
        else:
            seen, inputs = set(), []
            for a, o in zip(arrays, order):
                if o not in seen:
                    seen.add(o)
                    inputs.append(a)
        prog = entry.program
        if state.process.async_on and state.process.cpu_only:
            return _unflatten(entry.treedef, iter(_push_replay(prog, inputs)), _as_is)
        for a in inputs:
            if a._var is not None:
                wait(a)
        for cap, _, _ in prog.captures:
            if cap._var is not None:
                wait(cap)
        outs = prog.run(inputs)
        it = iter(outs)
        return _unflatten(entry.treedef, it)


def _push_replay(prog, inputs):
    """Queue one run of ``prog`` on the engine; returns its (pending) result Arrays.

    Until the run, a result holds a read-only stand-in of its shape and dtype
    (shape queries need no wait); the run puts the real buffer in place.
    """
    results = [new(numpy.broadcast_to(numpy.empty((), dtype), shape))
               for shape, dtype in prog.out_meta]
    written = prog.written_arrays(inputs)
    seen = {id(a) for a in written}
    reads = []
    for a in list(inputs) + [cap for cap, _, _ in prog.captures]:
        if id(a) not in seen:
            seen.add(id(a))
            reads.append(var_of(a))
    if prog.var is None:
        prog.var = engine.new_var()
    writes = [var_of(a) for a in written] + [var_of(r) for r in results] + [prog.var]

    def run():
        for r, data in zip(results, prog.run(inputs)):
            r._data = data
    engine.push(run, reads=reads, writes=writes, name=f"jit {prog.name}")
    return results


def _as_is(a):
    return a


# ----------------------------------------------------------------- pytrees
def _positions(nums, what):
    if isinstance(nums, int):
        nums = (nums,)
    nums = tuple(nums)
    if not all(isinstance(n, int) and n >= 0 for n in nums):
        raise TypeError(f"minpy.jit: {what} must be non-negative ints, got {nums!r}")
    return frozenset(nums)


def _static_key(v, name, i):
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"minpy.jit({name}): static argument {i} ({type(v).__name__}) must be "
                        "hashable") from None
    return (type(v), v)


def _flatten(obj, leaves, arrays):
    """The signature part of ``obj``; appends its arrays to ``arrays``."""
    t = type(obj)
    if t is Array:
        arrays.append(obj)
        return "A"
    if t is numpy.ndarray:
        arrays.append(new(obj))
        return "A"
    if t is list or t is tuple:
        return (t.__name__, tuple([_flatten(e, leaves, arrays) for e in obj]))
    if t is dict:
        return ("dict", tuple([(k, _flatten(v, leaves, arrays)) for k, v in obj.items()]))
    if isinstance(obj, _SCALARS):
        return (t, obj)
    return ("obj", id(obj))


def _traced_args(args, kwargs):
    if not state.process.tapes:
        return False
    for a in list(args) + list(kwargs.values()):
        if type(a) is Array and a._node is not None and a._node.tape.active:
            return True
    return bool(_tape.active_tapes())


def _out_tree(obj, leaves):
    t = type(obj)
    if t is Array:
        leaves.append(obj)
        return "A"
    if t is list or t is tuple:
        return (t, tuple(_out_tree(e, leaves) for e in obj))
    if t is dict:
        return (dict, tuple((k, _out_tree(v, leaves)) for k, v in obj.items()))
    if isinstance(obj, tuple) and hasattr(t, "_make"):
        return ("named", t, tuple(_out_tree(e, leaves) for e in obj))
    return ("const", obj)


def _unflatten(tree, it, leaf=new):
    """The results' structure with ``leaf(item)`` for each Array of ``it``."""
    if tree == "A":
        return leaf(next(it))
    kind = tree[0]
    if kind == "const":
        return tree[1]
    if kind is dict:
        return {k: _unflatten(v, it, leaf) for k, v in tree[1]}
    if kind == "named":
        return tree[1]._make(_unflatten(e, it, leaf) for e in tree[2])
    return kind(_unflatten(e, it, leaf) for e in tree[1])
