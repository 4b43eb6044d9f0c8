"""``minpy.jit``: trace a function of arrays once per signature, replay it compiled.

    @minpy.jit
    def train_step(params, x, y):
        grads, loss = minpy.grad_and_loss(loss_fn)(params, x, y)
        for k in params:
            params[k] -= 0.1 * grads[k]          # in place: seen by the caller
        return loss

The first call with a new *signature* -- the arguments' tree structure
(``minpy.core.tree``: lists, tuples, dicts, OrderedDicts, defaultdicts,
namedtuples, None and registered types), each array's shape, dtype and
device, which arguments are the same array, and the values of the other
leaves (with a GPU present, also the device policy and the ``with ctx:``
device, which decide where its calls run) -- runs the function once while
recording every call it makes, its gradient's backward pass included
(``minpy.core.trace``), and returns that run's results.  The recording
becomes a program (``minpy.jit.program``): constants folded, dead
steps dropped, elementwise chains fused into compiled kernels where that
measures faster, results written into buffers planned once (in place and
shared by lifetimes; donated arguments' buffers reused), compiled to one
Python function.  Fusion and planning apply to the calls that ran on the
host, GPU present or not; a call that ran on a GPU replays through minpy's
dispatch on its device.  Later calls with that signature replay the program:
no tape, no dispatch, no temporaries beyond the function's results.

What is static and what is traced:

- Arrays (``minpy.Array`` or ``numpy.ndarray``) anywhere in the arguments'
  trees are traced inputs; their values may change from call to call.
- Every other leaf is static, part of the signature by value: Python scalars
  (``-0.0`` and ``0.0`` differ), strings, None, and any hashable object (the
  cache holds it, so its id is never reused while cached; an object compares
  by identity unless its class defines equality).  An unhashable leaf that is
  no container (a set, a mutable object without ``__hash__``) is refused with
  a ``TypeError`` naming the argument: its contents could change unseen.  The
  arguments named by ``static_argnums`` are static whole (they must hash).
- What the function reads outside its arguments is guarded
  (``minpy.jit.guards``): the closure variables and globals its code
  reads (and, a few levels deep, those of the Python functions it calls and
  the attributes its code names on the objects, modules and classes it
  reads, ``self`` included).  Numbers, strings and tuples of them are
  compared by value, containers by contents, arrays, functions and other
  objects by identity; when one changed since a trace, the call traces again
  (the old trace stays cached for the old values), so a rebound learning rate,
  array or helper function is never replayed stale.  Arrays read from outside
  are read by reference: each replay reads their current contents, so a
  parameter updated in place is seen without tracing again.  After 8 such
  traces of one function a warning names what keeps changing (pass it as an
  argument instead).  Results the function stores outside (other than by
  writing into arrays in place) are not updated by replays; assigning into an
  argument's container (``params["w"] = ...``) is refused with
  :class:`~minpy.core.trace.JitTraceError` (write in place or return it).
- Reading an input-dependent value into Python (``if loss > 0``, ``float(x)``,
  ``x.item()``) cannot be traced: :class:`~minpy.core.trace.JitTraceError`
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
import math
import os
import threading
import warnings

import numpy

from .. import engine
from ..core import tape as _tape
from ..core import tree
from ..core.async_work import var_of
from ..core.array import Array, new, wait
from ..core.execute import mutated
from ..dispatch import state
from ..dispatch.context import explicit_context
from ..dispatch.transfer import context_of
from .fuse import fuse_steps
from .guards import scan as scan_guards
from .program import build_program
from ..core.trace import JitTraceError, Tracer, tracing

__all__ = ["jit", "JitFunction", "JitTraceError"]

_PLAIN = frozenset((int, float, complex, bool, str, bytes, type(None), slice, range,
                    type(Ellipsis)))
_ARRAY = "A"                  # an array leaf's part of a signature
_MAX_VARIANTS = 8             # traces kept per signature (one per set of guarded values)
_WARN_AFTER = 8               # traces caused by changed guards before a warning


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
    """One trace: its program (or ``eager``), its guards, its results' structure."""

    __slots__ = ("program", "eager", "guards", "out_tree", "out_leaves", "out_pos")

    def __init__(self):
        self.program = self.guards = self.out_tree = None
        self.out_leaves, self.out_pos = [], []
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
        self._cache = collections.OrderedDict()     # signature -> traces, newest first
        self._size = 0                              # traces in the cache
        self._lock = threading.Lock()
        self._warned = self._warned_guards = False
        self.hits = self.misses = self.traces = self.eager_calls = self.guard_misses = 0
        code = getattr(fun, "__code__", None)
        self._params = code.co_varnames[:code.co_argcount] if code is not None else ()
        functools.update_wrapper(self, fun)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def clear_cache(self):
        """Forget every traced program (the next call traces again)."""
        with self._lock:
            self._cache.clear()
            self._size = 0

    def cache_info(self):
        """``{'hits', 'misses', 'traces', 'size', 'maxsize', 'eager_calls', 'guard_misses'}``
        (``guard_misses``: calls whose signature was cached but whose guarded values --
        closures, globals, attributes read -- had changed)."""
        return {"hits": self.hits, "misses": self.misses, "traces": self.traces,
                "size": self._size, "maxsize": self.cache_size,
                "eager_calls": self.eager_calls, "guard_misses": self.guard_misses}

    def programs(self):
        """The compiled programs (``minpy.jit.program.Program``), newest last."""
        return [e.program for vs in self._cache.values() for e in reversed(vs)
                if e.program is not None]

    def __call__(self, *args, **kwargs):
        if tracing() or _tape.recording() or _traced_args(args, kwargs):
            self.eager_calls += 1
            return self.fun(*args, **kwargs)
        sig, arrays, order = self._signature(args, kwargs)
        with self._lock:
            variants = self._cache.get(sig)
            if variants is not None:
                self._cache.move_to_end(sig)
        changed = None
        if variants is not None:
            for entry in variants:
                if entry.eager:
                    self.hits += 1
                    self.eager_calls += 1
                    return self.fun(*args, **kwargs)
                check = entry.guards.check
                failed = -1 if check is None else check()
                if failed == -1 and entry.program.captures_match():
                    self.hits += 1
                    return self._replay(entry, arrays, order)
                if changed is None:
                    changed = "the shape or dtype of an array it reads from outside" \
                        if failed == -1 else entry.guards.describe(failed)
            self.guard_misses += 1
        self.misses += 1
        return self._trace(sig, args, kwargs, changed)

    # -------------------------------------------------------------- signature
    def _signature(self, args, kwargs):
        """``(key, arrays, order)``: the call's signature, its input Arrays in order
        and, for each, the position of the first input with its buffer."""
        static = self.static_argnums
        key, arrays = [], []
        for i, a in enumerate(args):
            if static and i in static:
                key.append(("static", _static_key(a, self.name, i)))
            elif type(a) is Array:
                arrays.append(a)
                key.append(_ARRAY)
            else:
                key.append(self._arg_key(a, arrays, i))
        if kwargs:
            for k in sorted(kwargs):
                key.append(("kw", k, self._arg_key(kwargs[k], arrays, k)))
        uniq, order, metas = {}, [], []
        for a in arrays:
            d = a._data
            order.append(uniq.setdefault(id(d), len(uniq)))
            # host arrays by type (hashing a Context per array cost ~1 us a call)
            metas.append((d.shape, d.dtype,
                          "cpu" if type(d) is numpy.ndarray else context_of(d)))
        # with a GPU, where calls run (so which replay as NumPy calls) depends on the
        # policy and the ``with ctx:`` device too
        where = None if state.process.gpu is None else (state.process.policy,
                                                         explicit_context())
        return (tuple(key), tuple(order), tuple(metas), where), arrays, order

    def _arg_key(self, a, arrays, where):
        """The signature part of argument ``a`` (a tree: structure and leaves);
        appends its arrays to ``arrays``."""
        t = type(a)
        if t is numpy.ndarray:
            arrays.append(new(a))
            return _ARRAY
        if t in _PLAIN:
            return _value_key(a, t)
        if t is dict or t is list or t is tuple:
            # one level of arrays (a dict of parameters): its key without a TreeDef
            vals = a.values() if t is dict else a
            n = len(arrays)
            for v in vals:
                if type(v) is not Array:
                    del arrays[n:]
                    break
                arrays.append(v)
            else:
                return t, (tuple(a) if t is dict else len(a))
        leaves, td = tree.flatten(a)
        if td is None:
            return self._leaf_key(a, arrays, where)
        return td, tuple([self._leaf_key(v, arrays, where) for v in leaves])

    def _leaf_key(self, v, arrays, where):
        t = type(v)
        if t is Array:
            arrays.append(v)
            return _ARRAY
        if t in _PLAIN:
            return _value_key(v, t)
        a = _as_input(v)
        if a is not None:
            arrays.append(a)
            return _ARRAY
        try:
            hash(v)
        except TypeError:
            raise TypeError(
                f"minpy.jit({self.name}): {self._describe(where)} holds a {t.__name__}, which "
                "is neither an array, a container jit looks into (list, tuple, dict, "
                "OrderedDict, defaultdict, namedtuple, None, or a type registered with "
                "minpy.core.tree.register) nor hashable, so its contents could change "
                "between calls unseen. Pass its arrays and values in such a container, make "
                "it hashable (a tuple, frozenset, frozen dataclass), or register its type"
            ) from None
        # the key holds the object itself: its id cannot be reused while it is cached
        return _value_key(v, t)

    def _describe(self, where):
        """'argument 1 ('opts')' / "argument 'opts'"."""
        if isinstance(where, str):
            return f"argument {where!r}"
        if where < len(self._params):
            return f"argument {where} ({self._params[where]!r})"
        return f"argument {where}"

    # ------------------------------------------------------------------ trace
    def _trace(self, sig, args, kwargs, changed):
        if changed is not None and self.guard_misses >= _WARN_AFTER and not self._warned_guards:
            self._warned_guards = True
            warnings.warn(
                f"minpy.jit({self.name}): traced again {self.guard_misses} times because "
                f"{changed} changed between calls (a trace keeps the values and arrays the "
                "function reads outside its arguments). Pass what changes as an argument to "
                "trace once", RuntimeWarning, stacklevel=3)
        static = self.static_argnums
        inputs, objects, passed = [], [], []
        call_args = list(args)
        for i, a in enumerate(args):
            if static and i in static:
                _objects_of(a, self._describe(i), objects)
            else:
                call_args[i] = _for_call(a, self._describe(i), inputs, objects, passed)
        call_kwargs = {}
        for k in sorted(kwargs):
            call_kwargs[k] = _for_call(kwargs[k], self._describe(k), inputs, objects, passed)
        guards = scan_guards(self.fun, objects, self.name)      # before it runs
        tracer = Tracer(self.name, self.fallback, guards.externals)
        guards.externals = None
        prev = state.enter_trace(tracer)
        try:
            unique = []
            for a in inputs:
                wait(a)
                k = tracer.add_input(a)
                if k not in unique:
                    unique.append(k)
            result = self.fun(*call_args, **call_kwargs)
        finally:
            state.exit_trace(prev)
        assigned = _assigned(passed)
        if assigned is not None:
            tracer.refuse(
                f"minpy.jit: {self.name} assigns, adds or removes an item of its {assigned}, "
                "which a replay cannot redo. Write into its arrays in place (x[...] = v, "
                "x -= v) or return the new values, or use jit(..., fallback=True) to run "
                "such a function eagerly")
        entry = _Entry()
        entry.guards = guards
        if tracer.untraceable is not None:
            entry.eager = True
            if not self._warned:
                self._warned = True
                warnings.warn(tracer.untraceable + " -- running it eagerly (fallback=True)",
                              RuntimeWarning, stacklevel=3)
        else:
            leaves, entry.out_tree = tree.flatten(result)
            entry.out_pos = [j for j, v in enumerate(leaves) if type(v) is Array]
            entry.out_leaves = [None if type(v) is Array else v for v in leaves]
            out_slots = [tracer.slot_for(leaves[j]) for j in entry.out_pos]
            donated = set()
            for i in self.donate_argnums:
                if i < len(args):
                    for v in tree.leaves(args[i]):
                        a = v if type(v) is Array else _as_input(v)
                        if a is not None:
                            donated.add(unique.index(tracer.slot_of[id(a._data)]))
            entry.program = build_program(tracer, unique, out_slots, donated,
                                          self._fuser(), self.plan_memory, self.name)
            self.traces += 1
        self._store(sig, entry)
        return result

    def _store(self, sig, entry):
        """Cache ``entry`` first among the traces of ``sig``, within the bounds."""
        with self._lock:
            old = self._cache.get(sig, ())
            variants = ((entry,) + old)[:_MAX_VARIANTS]
            self._cache[sig] = variants
            self._cache.move_to_end(sig)
            self._size += len(variants) - len(old)
            while self._size > self.cache_size:
                oldest = next(iter(self._cache))
                if oldest is sig:                       # the only signature left
                    keep = variants[:max(self.cache_size, 0)]
                    self._size -= len(variants) - len(keep)
                    if keep:
                        self._cache[sig] = keep
                    else:
                        del self._cache[sig]
                    break
                self._size -= len(self._cache.pop(oldest))

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
            return _results(entry, _push_replay(prog, inputs), _as_is)
        for a in inputs:
            if a._var is not None:
                wait(a)
        for cap, _, _ in prog.captures:
            if cap._var is not None:
                wait(cap)
        return _results(entry, prog.run(inputs), new)


def _results(entry, outs, leaf):
    """The traced results' structure with ``leaf(out)`` for each Array."""
    if entry.out_tree is None:                  # one leaf
        return leaf(outs[0]) if entry.out_pos else entry.out_leaves[0]
    leaves = list(entry.out_leaves)
    for j, out in zip(entry.out_pos, outs):
        leaves[j] = leaf(out)
    return tree.unflatten(entry.out_tree, leaves)


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
            mutated(r)                          # (no copy of the stand-in may survive)
            engine.bind_storage(data, r._var)   # views of the new buffer order with r
    engine.push(run, reads=reads, writes=writes, name=f"jit {prog.name}")
    return results


def _as_is(a):
    return a


# ----------------------------------------------------------------- arguments
def _positions(nums, what):
    if isinstance(nums, int):
        nums = (nums,)
    nums = tuple(nums)
    if not all(isinstance(n, int) and n >= 0 for n in nums):
        raise TypeError(f"minpy.jit: {what} must be non-negative ints, got {nums!r}")
    return frozenset(nums)


def _value_key(v, t):
    """The signature part of a hashable leaf: its type and value (the key holds ``v``);
    a float or complex zero with its sign (``0.0 == -0.0``, yet ``1/x`` differs), NaN
    as itself (it equals nothing); any other object also by identity, as its
    attributes the trace read are guarded on that very object (two objects equal by
    their own ``__eq__`` may carry other values)."""
    if t is float or isinstance(v, numpy.floating):
        if v == 0:
            return t, v, math.copysign(1.0, v)
        if v != v:
            return t, "nan"
    elif t is complex or isinstance(v, numpy.complexfloating):
        if v != v:
            return t, "nan", repr(v)
        return t, v, math.copysign(1.0, v.real), math.copysign(1.0, v.imag)
    elif t not in _PLAIN and not isinstance(v, numpy.generic):
        return t, v, id(v)
    return t, v


def _static_key(v, name, i):
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"minpy.jit({name}): static argument {i} ({type(v).__name__}) must be "
                        "hashable") from None
    return _value_key(v, type(v))


def _as_input(v):
    """``v`` as an input Array when it is an array (NumPy's, a subclass', the GPU's)."""
    t = type(v)
    if t is Array:
        return v
    if t is numpy.ndarray:
        return new(v)
    if isinstance(v, numpy.ndarray):                 # memmap, matrix ...
        return new(v.view(numpy.ndarray))
    gpu = state.process.gpu
    if gpu is not None and t not in _PLAIN and gpu.owns(v):
        return new(v)
    return None


def _objects_of(a, label, objects):
    """Append ``(label, leaf)`` for the leaves of ``a`` that are objects (neither arrays
    nor plain values): the guards look into them."""
    for v in tree.leaves(a):
        if type(v) not in _PLAIN and _as_input(v) is None and not isinstance(
                v, numpy.generic):
            objects.append((label, v))


def _for_call(a, label, inputs, objects, passed):
    """Argument ``a`` as the traced call gets it: its arrays as input Arrays (appended
    to ``inputs``), its objects appended to ``objects``; a container holding no bare
    NumPy array is passed as is (recorded in ``passed`` to see if the call changes it)."""
    t = type(a)
    if t is Array:
        inputs.append(a)
        return a
    leaves, td = tree.flatten(a)
    call, rebuilt = [], False
    for v in leaves:
        x = _as_input(v)
        if x is None:
            if type(v) not in _PLAIN and not isinstance(v, numpy.generic):
                objects.append((label, v))
            call.append(v)
        else:
            inputs.append(x)
            call.append(x)
            rebuilt = rebuilt or x is not v
    if td is None:
        return call[0]
    out = tree.unflatten(td, call) if rebuilt else a
    passed.append((label, out, td, call))
    return out


def _assigned(passed):
    """The first argument container the traced call changed (see :func:`_for_call`)."""
    for label, obj, td, leaves in passed:
        now, ntd = tree.flatten(obj)
        if ntd != td or any(x is not y for x, y in zip(now, leaves)):
            return label
    return None


def _traced_args(args, kwargs):
    if not state.process.tapes:
        return False
    for a in list(args) + list(kwargs.values()):
        if type(a) is Array and a._node is not None and a._node.tape.active:
            return True
    return bool(_tape.active_tapes())
