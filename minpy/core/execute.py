"""Running one primitive call on a device: choose the device, move the
operands there, call the backend, wrap the result.

:func:`run` is the bottom of every call that is not the wrappers' straight
NumPy path: the front door (:mod:`minpy.core.call`) and the tape (one level
down) come here. While this thread traces a function for ``minpy.jit``,
:func:`run_traced` runs each call and hands it to the tracer (below, in
:mod:`minpy.core.trace`), which records it.
"""
import functools
import os
import sys
import warnings

import numpy

from ..dispatch import state, versions
# (``minpy.dispatch.stats`` is the report function; the counters are in its module)
from ..dispatch.stats import count_call, count_fallback
from ..dispatch.backend import NUMPY, NeedsHost, backend_for
from ..dispatch.context import Context, current_context, cpu, explicit_context
from ..dispatch.transfer import context_of, disown, move_operands, move_raw
from . import exact_forms, gpu_route, tree
from .array import Array, kept, new, unwrap_cpu, wrap
from .primitive import COMPUTE, CREATE, SELF
from .recorder import OpaquePrimitive

__all__ = ["run", "run_untraced", "run_traced", "choose_context", "mutated"]

_process = state.process
_per_thread = state.per_thread
_CPU0 = cpu(0)
_ndarray = numpy.ndarray

# calls whose integer-array indices CuPy wraps around instead of raising IndexError
_BOUNDS_CHECKED = frozenset({"ndarray.__getitem__", "ndarray.__setitem__", "take"})

# keyword names of the written argument of the ``mutates`` functions
_TARGET_KWARGS = ("dst", "a", "arr", "x")


def run(prim, args, kwargs):
    """Run ``prim`` on the device chosen by placement and policy, moving inputs there;
    while this thread traces a function for ``minpy.jit``, :func:`run_traced`."""
    if _process.tracers:
        tracer = _per_thread.flags.tracer
        if tracer is not None:
            return run_traced(tracer, prim, args, kwargs)
    return run_untraced(prim, args, kwargs)


def run_traced(tracer, prim, args, kwargs):
    """Run a call of a thread that ``tracer`` (``minpy.core.trace.Tracer``) traces, and
    record it: an :class:`~minpy.core.recorder.OpaquePrimitive` as one opaque step; a
    custom op's body through the calls it makes, or as one opaque step if it computes
    on buffers (``Tracer.checked``); any other call as one step."""
    # a NumPy scalar result is a scalar Array here: the tracer must follow it
    if isinstance(prim, OpaquePrimitive):
        mark = len(tracer.steps)
        res = kept(run_untraced(prim, args, kwargs))
        tracer.record_opaque(prim, args, kwargs, res, mark)
        return res
    if prim.custom is not None:
        return kept(tracer.checked(prim.qualname, prim.custom, args, kwargs))
    res = kept(run_untraced(prim, args, kwargs))
    tracer.record(prim, args, kwargs, res)
    return res


def run_untraced(prim, args, kwargs):
    """:func:`run` without the trace hook (the front door's call when this thread
    records nothing; a ``minpy.jit`` replay's generic steps)."""
    fn = prim.host_fn
    if _process.cpu_only and fn is not None:
        # no GPU: a straight NumPy call (reached under a tape or another thread's tape)
        if kwargs:
            if kwargs.get("out") is not None:
                return _run_on_device(prim, args, kwargs)
            kwargs = {k: unwrap_cpu(v) for k, v in kwargs.items()}
            return wrap(fn(*[unwrap_cpu(a) for a in args], **kwargs))
        return wrap(fn(*[unwrap_cpu(a) for a in args]))
    if prim.custom is not None:
        return prim.custom(*args, **kwargs)
    return _run_on_device(prim, args, kwargs)


def _run_on_device(prim, args, kwargs):
    if not kwargs and prim.placement == COMPUTE and prim.mutates is None:
        res = _run_resident(prim, args)
        if res is not _MISS:
            return res
    ctx, refused = _place(prim, args, kwargs)
    if refused is None:
        return _run_at(prim, args, kwargs, ctx)
    res = _run_at(prim, args, kwargs, ctx)
    _note_fallback(prim, refused)     # once NumPy has answered: its error is the call's own
    return res


def _run_at(prim, args, kwargs, ctx):
    """``prim(*args, **kwargs)`` run on ``ctx`` (its backend's function, else the host)."""
    backend = backend_for(ctx)
    fn = prim.backend_impl(backend)
    gpu = backend is not NUMPY
    given = kwargs
    if gpu:
        fn, kwargs, reason = _gpu_call(prim, backend, fn, args, kwargs)
        if reason is not None:
            return _run_on_host(prim, args, kwargs, ctx, backend, reason)
    elif fn is None:
        return _run_on_host(prim, args, kwargs, ctx, backend, "it has no implementation")
    cargs, ckw, moved = move_operands(args, kwargs, ctx, backend, prim.elementwise_inputs)
    if gpu and prim.elementwise_inputs and backend.promotion == "legacy":
        cargs = gpu_route.legacy_operands(backend, cargs, prim.elementwise_inputs, ctx.device_id)
    dev = ctx.device_id
    if backend.current_device() == dev:
        return _call(prim, args, given, kwargs, ctx, backend, gpu, fn, cargs, ckw, moved)
    with backend.device(dev):
        return _call(prim, args, given, kwargs, ctx, backend, gpu, fn, cargs, ckw, moved)


def _call(prim, args, given, kwargs, ctx, backend, gpu, fn, cargs, ckw, moved):
    """Call ``fn`` (``prim`` on ``backend``, whose device ``ctx`` is current) on the moved
    operands ``cargs``/``ckw``; the wrapped result. ``given``: the call's own keywords."""
    if gpu and prim.qualname in _BOUNDS_CHECKED:
        gpu_route.check_bounds(backend, prim, cargs, ckw)
    try:
        res = fn(*cargs, **ckw)
    except _REFUSALS as err:
        # minpy's own errors stand (a body of minpy's raising on purpose), except
        # NeedsHost, its way of handing a call to NumPy
        if not gpu or not (isinstance(err, NeedsHost) or backend.raised_inside(err)):
            raise
        return _refused_on_device(prim, args, given, ctx, backend, err)
    if gpu:
        res = gpu_route.as_numpy_result(prim, res, args)
    count_call(prim.qualname, backend.name)
    if moved:
        disown(res, moved, ctx)
    return _result(prim, args, kwargs, res)


# ------------------------------------------------------------ the resident fast path
# A COMPUTE call without keywords whose operands are Arrays on one GPU and Python
# scalars runs there unless the backend refuses it. Whether it refuses depends only on
# the primitive, the number of arguments and the operands' dtypes (calls with a value
# check, see gpu_route.dtype_only, take the general path every time), so the answer is
# kept: (prim, nargs, *dtypes) -> reason or None, for the GPU backend _decided_for[0]
# (emptied when another is installed). The backend's function is looked up on every
# call (a test may patch it): None sends the call down the general path.
_MISS = object()
_decided = {}
_decided_for = [None]
_DECIDED_MAX = 4096
_PY_SCALARS = frozenset({int, float, bool, complex})
_gpu_contexts = {}


def _decide(gpu, prim, args, key):
    """Why ``gpu`` refuses the resident call ``prim(*args)`` (or None), as
    :func:`choose_context` answers it; kept in :data:`_decided` under ``key``."""
    if _decided_for[0] is not gpu:
        _decided.clear()
        _decided_for[0] = gpu
    if not gpu_route.dtype_only(prim.qualname):
        reason = "decided by the operands' values"
    else:
        reason = gpu_route.refusal(gpu, prim, args, {}, args)
    if len(_decided) >= _DECIDED_MAX:
        _decided.clear()
    _decided[key] = reason
    return reason


def _run_resident(prim, args):
    """``prim(*args)`` (COMPUTE, no keywords) run on the GPU holding its Array operands
    when they all live on one GPU, the other arguments are Python scalars, and the
    backend runs it as it is; else :data:`_MISS` (the general path decides)."""
    gpu = _process.gpu
    if gpu is None or _process.policy == "only_cpu":
        return _MISS
    dev = None
    key = [prim, len(args)]
    for a in args:
        t = type(a)
        if t is Array:
            d = a._data
            if not gpu.owns(d):
                return _MISS
            i = gpu.device_id(d)
            if dev is None:
                dev = i
            elif i != dev:
                return _MISS
            key.append(d.dtype)
        elif t not in _PY_SCALARS:
            return _MISS
    if dev is None:
        return _MISS
    key = tuple(key)
    reason = _decided.get(key, _MISS) if _decided_for[0] is gpu else _MISS
    if reason is _MISS:
        reason = _decide(gpu, prim, args, key)
    if reason is not None:
        return _MISS           # a fallback: the general path counts and warns
    fn = prim.backend_impl(gpu)
    if fn is None:
        return _MISS           # a composed substitute, or none: the general path
    fn, _, reason = _gpu_call(prim, gpu, fn, args, None)
    if reason is not None:
        return _MISS
    ctx = _gpu_contexts.get(dev)
    if ctx is None:
        ctx = _gpu_contexts[dev] = Context("gpu", dev)
    cargs = [a._data if type(a) is Array else a for a in args]
    if gpu.current_device() == dev:
        return _call(prim, args, None, None, ctx, gpu, True, fn, cargs, {}, None)
    with gpu.device(dev):
        return _call(prim, args, None, None, ctx, gpu, True, fn, cargs, {}, None)


def _gpu_call(prim, backend, fn, args, kwargs):
    """``(fn, kwargs, reason)`` for a call on GPU ``backend``: the function to call (a
    composed substitute or a keyword equivalent where CuPy lacks NumPy's) and the keywords
    to pass, or the reason it must run on the host instead."""
    if fn is None:
        body = gpu_route.substitute(prim, kwargs)
        if body is None:
            return None, kwargs, "it has no implementation"
        fn = backend.checked(prim.qualname, functools.partial(body, backend.xp))
    if prim.placement != COMPUTE or prim.mutates is not None or (
            kwargs and kwargs.get("out") is not None):
        # placed by its operands, not the policy: choose_context did not ask the backend
        reason = gpu_route.refusal(backend, prim, args, kwargs, _leaves(args, kwargs))
        if reason is not None:
            return None, kwargs, reason
    if kwargs:
        body = gpu_route.equivalent(prim, kwargs)
        if body is not None:
            return backend.checked(prim.qualname, functools.partial(body, backend.xp)), \
                kwargs, None
        kwargs = backend.drop_defaults(prim.qualname, kwargs)
    form = exact_forms.FORMS.get(prim.qualname)
    if form is not None:
        # NumPy's algorithm where the backend's kernel answers otherwise
        fn = functools.partial(form, backend.xp, fn)
    return fn, kwargs, None


# what a GPU backend raises where it refuses a call NumPy may accept (CuPy: "casting is
# not supported yet", "input has to be 1d", implicit host conversion of an argument it
# hands to NumPy, ``'bool' object has no attribute 'astype'`` ...). Never its CUDA
# runtime errors (RuntimeError) or out-of-memory (MemoryError). Raised by the backend's
# own code only (``Backend.raised_inside``), or as minpy's NeedsHost.
_REFUSALS = (TypeError, ValueError, NotImplementedError, AttributeError)


def _refused_on_device(prim, args, kwargs, ctx, backend, err):
    """The GPU backend raised ``err`` (one of :data:`_REFUSALS`) running ``prim``: NumPy
    is the spec, so run the call on the host. NumPy's result is a counted, warned
    fallback naming ``err``; NumPy's own error, if it raises too, is the call's error
    (no fallback counted); under policy 'only_gpu', ``err`` itself.

    Assumes the backend validated its arguments before writing: a mutating call
    (``out=``, ``mutates``) that raised has not half-written its target (CuPy checks
    dtypes, shapes and keywords before it launches a kernel)."""
    if _process.policy == "only_gpu":
        raise err
    return _run_on_host(prim, args, kwargs, ctx, backend,
                        f"{backend.name} raised {type(err).__name__}: {err}")


def _run_on_host(prim, args, kwargs, ctx, backend, reason):
    """``ctx``'s backend cannot run ``prim`` (``reason``): run NumPy on host copies, copy
    what it writes back to its device, and place the results on ``ctx`` (a counted
    fallback, counted once NumPy has run: NumPy's own error, if any, is the call's error
    and no fallback; a result of a dtype the device cannot hold stays on the host)."""
    if ctx.device_type == "cpu" or _process.policy == "only_gpu":
        raise RuntimeError(f"{prim.qualname}: not available on {backend.name}: {reason}"
                           + (" (policy 'only_gpu')" if ctx.device_type == "gpu" else ""))
    back = {}            # id(Array) -> (Array, host scratch buffer) for written Arrays

    def scratch(a):
        if type(a) is Array and context_of(a._data) != _CPU0:
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
    cargs, ckw, moved = move_operands(args, kwargs, _CPU0, NUMPY)
    res = prim.backend_impl(NUMPY)(*cargs, **ckw)
    _note_fallback(prim, reason)
    count_call(prim.qualname, NUMPY.name)
    if moved:
        disown(res, moved, _CPU0)
    for arr, host in back.values():
        dctx = context_of(arr._data)
        data = move_raw(host, dctx)
        with backend_for(dctx).device(dctx.device_id):
            arr._data[...] = data
        mutated(arr)
    if out is not None:
        return _finish_out(out, res)
    # NumPy's scalars stay scalar Arrays, placed on the device with the other results
    return _placed(kept(_result(prim, args0, kwargs0, res)), ctx)


# ------------------------------------------------------------ where a call runs
def _leaves(args, kwargs):
    """The leaves of a call's arguments, at any depth of containers and keywords (not
    ``out``)."""
    if kwargs and "out" in kwargs:
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    return tree.leaves((args, kwargs))


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
    if t is Array:
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
    ctx, reason = _place(prim, args, kwargs)
    if reason is not None:
        _note_fallback(prim, reason)
    return ctx


def _place(prim, args, kwargs):
    """(:func:`choose_context`'s answer, why the GPU backend refuses the call or None):
    the caller notes the fallback."""
    policy = _process.policy
    ctx = _write_context(prim, args, kwargs)
    if ctx is not None:
        return ctx, None
    leaves = _leaves(args, kwargs)
    ctxs = [context_of(a._data) for a in leaves if type(a) is Array]
    if prim.placement == SELF or prim.mutates is not None:
        return ctxs[0] if ctxs else current_context(), None
    gpu = _process.gpu
    if gpu is None:
        if prim.placement == CREATE and current_context().device_type == "gpu":
            backend_for(current_context())      # raises: no GPU
        if policy == "only_gpu":
            raise RuntimeError(f"{prim.qualname}: policy 'only_gpu' but no GPU is available")
        return _CPU0, None
    if policy == "only_cpu":
        return _CPU0, None
    if prim.placement == CREATE:
        if ctxs and explicit_context() is None:
            return ctxs[0], None
        return current_context(), None
    cur = current_context()
    gpu_ctx = next((c for c in ctxs if c.device_type == "gpu"), None)
    if gpu_ctx is None:
        if not ctxs and cur.device_type == "cpu" and policy != "only_gpu":
            return _CPU0, None                  # host data only: stays on the host
        gpu_ctx = cur if cur.device_type == "gpu" else Context("gpu", 0)
    if prim.backend_impl(gpu) is None and gpu_route.substitute(prim, kwargs) is None:
        reason = "it has no implementation"
    else:
        reason = gpu_route.refusal(gpu, prim, args, kwargs, leaves)
        if reason is None:
            return gpu_ctx, None
    if policy == "only_gpu":
        raise RuntimeError(f"{prim.qualname}: policy 'only_gpu' but the GPU backend "
                           f"({gpu.name}) cannot run it: {reason}")
    return _CPU0, reason


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_warned = set()


def _note_fallback(prim, reason):
    """Count a CPU fallback of ``prim``; warn once per function, at the user's line,
    saying why the GPU backend cannot run it."""
    count_fallback(prim.qualname)
    if _process.fallback_warn and prim.qualname not in _warned:
        _warned.add(prim.qualname)
        level, f = 2, sys._getframe(1)
        while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
            f, level = f.f_back, level + 1
        warnings.warn(f"minpy: {prim.qualname} is not available on {_process.gpu.name} "
                      f"({reason}); running on the CPU (inputs are copied)", RuntimeWarning,
                      stacklevel=level)


# ------------------------------------------------------------ results
def _result(prim, args, kwargs, res):
    """What the call returns: ``out`` (written), else the wrapped result; a write
    into an Array argument (``mutates``) is recorded on it."""
    out = kwargs.get("out") if kwargs else None
    if out is not None:
        return _finish_out(out, res)
    if prim.mutates is not None:
        target = _written(prim, args, kwargs)
        if type(target) is Array:
            mutated(target)
    r = wrap(res)
    if type(r) is Array and type(res) is not _ndarray and not r._scalar and r._data.ndim == 0 \
            and (prim.placement == COMPUTE or (prim.qualname == "ndarray.__getitem__"
                                                and gpu_route.scalar_key(args[1]))):
        # a 0-d device array (CuPy's reductions, ufuncs, x[i, j]) where NumPy returns a
        # scalar: marked so, as on the host (the value stays on the device)
        r._scalar = True
    return r


def _placed(res, ctx):
    """``res`` with its Arrays moved to ``ctx``."""
    t = type(res)
    if t is Array:
        if context_of(res._data) == ctx or not backend_for(ctx).holds(res._data.dtype):
            return res
        return new(move_raw(res._data, ctx))
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
        if type(o) is Array:
            mutated(o)
    if type(res) is tuple:
        return tuple(wrap(r) if o is None else o for o, r in zip(outs, res))
    return wrap(res) if outs[0] is None else outs[0]


def mutated(arr):
    """Record an in-place write to Array ``arr`` (invalidates copies, bumps its epoch)."""
    arr._copies = None
    versions.bump(arr._data)
