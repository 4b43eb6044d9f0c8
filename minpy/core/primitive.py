"""Primitives: one registration per public function, and the general call path.

A primitive names a backend function (``qualname`` such as ``'sum'`` or
``'linalg.inv'``) whose body is resolved on the backend namespace ``xp`` of
the device chosen for the call, so one body serves NumPy and CuPy. The fast
path (no GPU, no tape) lives in the generated wrappers; everything else comes
through :func:`call`.
"""
import functools
import os
import sys
import warnings

import numpy

from ..dispatch import state
# (``minpy.dispatch.stats`` is the report function; the counters are in its module)
from ..dispatch.stats import count_call, count_fallback
from ..dispatch.backend import NUMPY
from ..dispatch.context import Context, current_context, cpu, explicit_context
from ..dispatch.transfer import backend_for, context_of, data_on, move_raw
from ..dispatch import versions

__all__ = ["Primitive", "PRIMITIVES", "call", "register"]

PRIMITIVES = {}     # qualname -> Primitive

# placements
COMPUTE = "compute"    # policy decides (prefer_gpu / only_cpu / only_gpu)
CREATE = "create"      # the current context in ``with ctx:``, else where its first array input lives
SELF = "self"          # runs where its first array argument (or out=) lives


class Primitive:
    """Registration record of one public function.

    Args:
        qualname: name in the backend namespace ('sum', 'linalg.inv', 'add.reduce').
        impl: the NumPy implementation (also used to find it on other backends
            by ``qualname`` unless ``forward`` is given).
        forward: optional ``forward(xp, *args, **kwargs)`` written against the
            backend namespace, for functions that are not a plain backend call.
        placement: COMPUTE, CREATE or SELF (see module doc).
        mutates: index of a positional argument the function writes in place.
        elementwise_inputs: for ufuncs, number of inputs that are array-likes
            (lists are converted to device arrays on non-CPU backends).
    """

    __slots__ = ("qualname", "impl", "forward", "placement", "mutates", "elementwise_inputs",
                 "vjp", "nondiff", "custom", "np_fn", "__weakref__")

    def __init__(self, qualname, impl, forward=None, placement=COMPUTE, mutates=None,
                 elementwise_inputs=0):
        self.qualname = qualname
        self.impl = impl
        self.forward = forward
        self.placement = placement
        self.mutates = mutates
        self.elementwise_inputs = elementwise_inputs
        self.vjp = None          # set by the autograd tables
        self.nondiff = False     # True: outputs carry no gradient
        self.custom = None       # customop: a Python function of Arrays, run as is
        # the NumPy callable, for the CPU-only path; None where that path must not be taken
        self.np_fn = None if mutates is not None else (
            impl if forward is None else functools.partial(forward, numpy))

    def __repr__(self):
        return f"<minpy primitive {self.qualname}>"

    def backend_impl(self, backend):
        """The function to call on ``backend``, or None if it lacks it."""
        if self.forward is not None:
            f = self.forward
            xp = backend.xp
            return lambda *a, **k: f(xp, *a, **k)
        if backend is NUMPY:
            return self.impl
        return backend.lookup(self.qualname)


def register(prim):
    PRIMITIVES[prim.qualname] = prim
    return prim


# --------------------------------------------------------------------------
# wrapping / unwrapping (the Array class registers itself here)

class _Late:
    Array = None      # set by core.array
    new = None        # fast constructor: data -> Array
    record = None     # set by core.tape
    record_np = None
    record_binary = None
    record_getitem = None


L = _Late()
_ndarray = numpy.ndarray
_generic = numpy.generic
_asarray = numpy.asarray


def wrap(res):
    """Wrap backend arrays inside ``res`` (array, tuple, namedtuple, list) as Arrays."""
    t = type(res)
    if t is _ndarray:
        return L.new(res)
    if isinstance(res, _generic):        # NumPy scalar -> 0-d Array (as CuPy does)
        return L.new(_asarray(res))
    if t is tuple or t is list:
        return t(wrap(r) for r in res)
    if isinstance(res, tuple):           # namedtuple results (linalg.eig, ...)
        return t._make(wrap(r) for r in res)
    g = state.S.gpu
    if g is not None and g.owns(res):
        return L.new(res)
    return res


def unwrap_cpu(a):
    """Host data of an Array argument (recursing into lists/tuples), for the fast path."""
    t = type(a)
    if t is L.Array:
        return a._data
    if t is tuple or t is list:
        for e in a:
            te = type(e)
            if te is L.Array or te is tuple or te is list:
                return t(unwrap_cpu(e) for e in a)
    return a


# --------------------------------------------------------------------------
# the general path

_warned = set()


def _collect(seq, ctxs, A):
    for e in seq:
        te = type(e)
        if te is A:
            ctxs.append(context_of(e._data))
        elif te is list or te is tuple:
            _collect(e, ctxs, A)


def _array_contexts(args, kwargs):
    """Contexts of the Array arguments, nested in lists/tuples and keywords (not ``out``)."""
    ctxs = []
    A = L.Array
    _collect(args, ctxs, A)
    if kwargs:
        for k, v in kwargs.items():
            if k != "out":
                _collect((v,), ctxs, A)
    return ctxs


# keyword names of the written argument of the ``mutates`` functions
_TARGET_KWARGS = ("dst", "a", "arr", "x")


def _written(prim, args, kwargs):
    """The argument ``prim`` writes in place (its ``mutates`` one), or None."""
    m = prim.mutates
    if len(args) > m:
        return args[m]
    for k in _TARGET_KWARGS:
        if kwargs and k in kwargs:
            return kwargs[k]
    return None


def _data_context(obj):
    """Context of an Array or raw ndarray argument; None for anything else."""
    t = type(obj)
    if t is L.Array:
        return context_of(obj._data)
    if t is _ndarray:
        return _CPU0
    return None


def _write_context(prim, args, kwargs):
    """Where a call writing in place must run: where the written array lives (or None)."""
    if prim.mutates is not None:
        ctx = _data_context(_written(prim, args, kwargs))
        if ctx is not None:
            return ctx
    out = kwargs.get("out") if kwargs else None
    if out is None:
        return None
    ctxs = {c for c in map(_data_context, out if isinstance(out, tuple) else (out,))
            if c is not None}
    if len(ctxs) > 1:
        raise ValueError(f"{prim.qualname}: out= arrays live on different devices "
                         f"({', '.join(sorted(map(str, ctxs)))})")
    return ctxs.pop() if ctxs else None


def choose_context(prim, args, kwargs):
    """The device a call runs on, by placement and policy.

    A call writing in place (``out=``, ``mutates``) runs where the written
    array lives. SELF runs where its first array argument lives; CREATE on
    the current context (inside ``with ctx:``), else where its first array
    argument lives; COMPUTE by the policy, on the GPU of its first GPU input
    (a call with no minpy array inputs runs on the current context).
    """
    S = state.S
    policy = S.policy
    ctx = _write_context(prim, args, kwargs)
    if ctx is not None:
        return ctx
    ctxs = _array_contexts(args, kwargs)
    if prim.placement == SELF or prim.mutates is not None:
        return ctxs[0] if ctxs else current_context()
    if S.gpu is None:
        if prim.placement == CREATE and current_context().device_type == "gpu":
            backend_for(current_context())      # raises: no GPU
        if policy == "only_gpu":
            raise RuntimeError(f"{prim.qualname}: policy 'only_gpu' but no GPU is available")
        return _CPU0
    if policy == "only_cpu":
        return _CPU0
    if prim.placement == CREATE:
        if ctxs and explicit_context() is None:
            return ctxs[0]
        return current_context()
    cur = current_context()
    gpu_ctx = next((c for c in ctxs if c.device_type == "gpu"), None)
    if gpu_ctx is None:
        if not ctxs and cur.device_type == "cpu" and policy != "only_gpu":
            return _CPU0                  # host data only: stays on the host
        gpu_ctx = cur if cur.device_type == "gpu" else Context("gpu", 0)
    if prim.backend_impl(S.gpu) is not None:
        return gpu_ctx
    if policy == "only_gpu":
        raise RuntimeError(f"{prim.qualname}: policy 'only_gpu' but the GPU backend "
                           f"({S.gpu.name}) has no implementation")
    _note_fallback(prim)
    return _CPU0


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _note_fallback(prim):
    """Count a CPU fallback of ``prim``; warn once per function, at the user's line."""
    count_fallback(prim.qualname)
    S = state.S
    if S.fallback_warn and prim.qualname not in _warned:
        _warned.add(prim.qualname)
        level, f = 2, sys._getframe(1)
        while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
            f, level = f.f_back, level + 1
        warnings.warn(f"minpy: {prim.qualname} is not available on {S.gpu.name}; running on "
                      "the CPU (inputs are copied)", RuntimeWarning, stacklevel=level)


def _to(obj, ctx, backend, listify, moved):
    """``obj`` with its arrays on ``ctx``; Arrays served by a cross-device copy go to ``moved``."""
    A = L.Array
    t = type(obj)
    if t is A:
        d = data_on(obj, ctx)
        if d is not obj._data:
            moved.append((obj, d))
        return d
    if t is _ndarray or (state.S.gpu is not None and state.S.gpu.owns(obj)):
        return move_raw(obj, ctx)
    if t is tuple or t is list:
        if listify and backend is not NUMPY:
            return _device_operand(obj, ctx, backend, moved)
        return t([_to(e, ctx, backend, False, moved) for e in obj])
    return obj


def _device_operand(seq, ctx, backend, moved):
    """A list/tuple ufunc operand as one array on ``ctx`` (GPU ufuncs take no lists)."""
    if _holds_device_data(seq):
        return backend.asarray([_to(e, ctx, backend, False, moved) for e in seq], ctx.device_id)
    return move_raw(_asarray(seq), ctx)       # one counted host -> device copy


def _holds_device_data(seq):
    g = state.S.gpu
    for e in seq:
        t = type(e)
        if t is L.Array or (g is not None and g.owns(e)):
            return True
        if (t is list or t is tuple) and _holds_device_data(e):
            return True
    return False


def _disown(res, moved, ctx):
    """A result sharing memory with a cached cross-device copy takes that buffer over.

    The copy leaves its Array's cache, so a write to the result never shows
    through a later use of the Array on ``ctx`` (and vice versa).
    """
    roots = {id(versions.root(d)): arr for arr, d in moved}
    for r in _flat(res):
        arr = roots.get(id(versions.root(r)))
        if arr is not None and arr._copies is not None:
            arr._copies.pop(ctx, None)


def _flat(res):
    if isinstance(res, (tuple, list)):
        for r in res:
            yield from _flat(r)
    elif hasattr(res, "base"):
        yield res


def run(prim, args, kwargs):
    """Run ``prim`` on the device chosen by placement and policy, moving inputs there."""
    fn = prim.np_fn
    if _S.cpu_only and fn is not None:
        # no GPU: the fast path's straight NumPy call (reached under a tape)
        if kwargs:
            if kwargs.get("out") is not None:
                return _run_general(prim, args, kwargs)
            kwargs = {k: unwrap_cpu(v) for k, v in kwargs.items()}
            return wrap(fn(*[unwrap_cpu(a) for a in args], **kwargs))
        return wrap(fn(*[unwrap_cpu(a) for a in args]))
    if prim.custom is not None:
        return prim.custom(*args, **kwargs)
    return _run_general(prim, args, kwargs)


def _run_general(prim, args, kwargs):
    ctx = choose_context(prim, args, kwargs)
    backend = backend_for(ctx)
    fn = prim.backend_impl(backend)
    if fn is None:
        return _run_on_host(prim, args, kwargs, ctx, backend)
    n = prim.elementwise_inputs
    moved = []
    cargs = [_to(a, ctx, backend, i < n, moved) for i, a in enumerate(args)]
    ckw = {k: _to(v, ctx, backend, False, moved) for k, v in kwargs.items()} if kwargs else kwargs
    with backend.device(ctx.device_id):
        res = fn(*cargs, **ckw)
    count_call(prim.qualname, backend.name)
    if moved:
        _disown(res, moved, ctx)
    out = kwargs.get("out") if kwargs else None
    if out is not None:
        return _finish_out(out, res)
    if prim.mutates is not None:
        target = _written(prim, args, kwargs)
        if type(target) is L.Array:
            mutated(target)
    return wrap(res)


def _run_on_host(prim, args, kwargs, ctx, backend):
    """``ctx``'s backend lacks ``prim``: run NumPy on host copies, copy what it writes
    back to its device, and place the results on ``ctx`` (a counted fallback)."""
    if ctx.device_type == "cpu" or state.S.policy == "only_gpu":
        raise RuntimeError(f"{prim.qualname}: not available on {backend.name}"
                           + (" (policy 'only_gpu')" if ctx.device_type == "gpu" else ""))
    _note_fallback(prim)
    back = {}            # id(Array) -> (Array, host scratch buffer) for written Arrays

    def scratch(a):
        if type(a) is L.Array and context_of(a._data) != _CPU0:
            back[id(a)] = (a, move_raw(a._data, _CPU0))
            return back[id(a)][1]
        return a
    args0, kwargs0 = args, kwargs
    args, kwargs = list(args), dict(kwargs) if kwargs else {}
    if prim.mutates is not None:
        if len(args) > prim.mutates:
            args[prim.mutates] = scratch(args[prim.mutates])
        else:
            k = next((k for k in _TARGET_KWARGS if k in kwargs), None)
            if k is not None:
                kwargs[k] = scratch(kwargs[k])
    out = kwargs.get("out")
    if out is not None:
        kwargs["out"] = tuple(map(scratch, out)) if isinstance(out, tuple) else scratch(out)
    moved = []
    cargs = [_to(a, _CPU0, NUMPY, False, moved) for a in args]
    ckw = {k: _to(v, _CPU0, NUMPY, False, moved) for k, v in kwargs.items()}
    res = prim.backend_impl(NUMPY)(*cargs, **ckw)
    count_call(prim.qualname, NUMPY.name)
    if moved:
        _disown(res, moved, _CPU0)
    for arr, host in back.values():
        dctx = context_of(arr._data)
        data = move_raw(host, dctx)
        with backend_for(dctx).device(dctx.device_id):
            arr._data[...] = data
        mutated(arr)
    if out is not None:
        return _finish_out(out, res)
    if prim.mutates is not None:
        target = _written(prim, args0, kwargs0)
        if type(target) is L.Array:
            mutated(target)
    return _placed(wrap(res), ctx)


def _placed(res, ctx):
    """``res`` with its Arrays moved to ``ctx``."""
    t = type(res)
    if t is L.Array:
        return res if context_of(res._data) == ctx else L.new(move_raw(res._data, ctx))
    if t is tuple or t is list:
        return t(_placed(r, ctx) for r in res)
    if isinstance(res, tuple):
        return t._make(_placed(r, ctx) for r in res)
    return res


def _finish_out(out, res):
    # as NumPy: the out argument itself (``out=(o,)`` gives ``o``); several
    # outputs give a tuple, with new Arrays where ``out`` held None
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if type(o) is L.Array:
            mutated(o)
    if type(res) is tuple:
        return tuple(wrap(r) if o is None else o for o, r in zip(outs, res))
    return wrap(res) if outs[0] is None else outs[0]


def mutated(arr):
    """Record an in-place write to Array ``arr`` (invalidates copies, bumps its epoch)."""
    arr._copies = None
    versions.bump(arr._data)


def call(prim, args, kwargs):
    """The general call path: tape recording, pending engine writes, devices."""
    if _S.tapes:
        return L.record(prim, args, kwargs)
    if _S.pending:
        from . import engine_bridge
        pushed = engine_bridge.try_push(prim, args, kwargs)
        if pushed is not None:
            return pushed
        engine_bridge.wait_inputs(args, kwargs)
    return run(prim, args, kwargs)


_S = state.S
_CPU0 = cpu(0)
