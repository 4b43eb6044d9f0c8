"""Every registered symbol operator as an imperative ``mx.nd`` function.

``op_function(name)`` makes ``nd.FullyConnected(x, w, b, num_hidden=4)``: MXNet's
calling convention (inputs first, positionally or by name, then the parameters
in MXNet's positional order from ``SIGNATURES``; ``out=`` and ``name=`` as MXNet's
generated functions take them) over one mechanism, the op's own ``forward``:

- untraced: the op's shape and dtype rules size the outputs, its ``forward`` runs on
  the inputs' backend arrays (training mode when a gradient tape records in this
  thread, as ``mx.autograd.record`` does); Dropout draws from minpy's global random
  state (``minpy.random.seed`` / ``mx.random.seed`` seed it), traced or not; BatchNorm's moving
  statistics are updated in place in training mode, as MXNet's are;
- traced (an input recorded on an active ``minpy.grad`` tape): the call runs as a
  ``minpy.symbol.Function`` over a one-node symbol (cached per op and parameters),
  so the op's registered gradient gives the inputs' gradients. Grad of grad through
  such a call is refused by ``Function`` with a clear TypeError. Traced Dropout is the
  exception: its mask is drawn as untraced, the product recorded on the tape;
- inside a function ``minpy.jit`` traces: a ``Function`` call too (one opaque step of
  the replay; Dropout then draws from the executors' generator, ``minpy.symbol``'s).
"""
import threading

import numpy

from ... import engine
from ... import numpy as mnp
from ...core.array import Array, new, wait
from ...core import async_work
from ...core.execute import mutated
from ...core import tape as _tape
from ...dispatch import state as _state
from ...dispatch.context import current_context
from ...dispatch.transfer import backend_for, context_of, data_on
from ...symbol.function import Function
from ...symbol.graph import Node
from ...symbol.ops.mxnet_signatures import SIGNATURES
from ...symbol.registry import OPS, DTypeError, Mismatch, RunCtx, ShapeError
from ...symbol.symbol import Symbol, Variable

__all__ = ["op_function", "invoke", "is_training", "set_training", "set_op_profiler"]

_mode = threading.local()
_process = _state.process
# minpy.mxnet.profiler's hook while it records imperative calls (profile_imperative):
# wrap(fn, name, device, sync) -> fn timed
_op_profiler = None


def set_op_profiler(wrap):
    """Have every imperative ``mx.nd`` operator call from now on timed: ``wrap(fn, name,
    device, sync)`` returns the callable run in place of ``fn`` (``name`` is
    ``'<op>:'``, ``device`` the call's Context, ``sync`` None on the CPU, else a callable
    waiting for the device). None removes it. Used by ``minpy.mxnet.profiler``."""
    global _op_profiler
    _op_profiler = wrap


def is_training():
    """Whether imperative layer ops (Dropout, BatchNorm) run in training mode: the mode
    :func:`set_training` fixed for this thread, else whether a gradient tape records in
    this thread (``mx.autograd.record()``'s default ``train_mode``)."""
    fixed = getattr(_mode, "value", None)
    return bool(_tape.active_tapes()) if fixed is None else fixed


def set_training(mode):
    """Fix this thread's training mode for imperative layer ops (``True``/``False``;
    ``None``: automatic, see :func:`is_training`). Returns the previous setting, for
    ``mx.autograd.train_mode()`` / ``predict_mode()`` to restore."""
    prev = getattr(_mode, "value", None)
    _mode.value = None if mode is None else bool(mode)
    return prev


class _GlobalRng:
    """The ``rc.rng`` of an imperative call: draws from the global random state of the
    backend serving the call (NumPy's legacy state on the host), which
    ``minpy.random.seed`` seeds."""

    __slots__ = ("xp",)

    def __init__(self, xp):
        self.xp = xp

    def random(self, shape):
        return self.xp.random.random_sample(shape)


def _as_input(v, key, slot):
    if isinstance(v, Array):
        return v
    if isinstance(v, (numpy.ndarray, list, tuple, numpy.generic, int, float)) and \
            not isinstance(v, bool):
        return mnp.asarray(numpy.asarray(v, dtype=numpy.float32)
                           if not isinstance(v, numpy.ndarray) else v)
    raise TypeError(f"mx.nd.{key}: input {slot!r} must be an NDArray, got {type(v).__name__}")


def _split(op, key, args, kwargs):
    """(inputs given {slot or position: value}, params) of one call."""
    params, named = {}, {}
    for k, v in kwargs.items():
        if isinstance(v, (Array, numpy.ndarray)):
            named[k] = v
        else:
            params[k] = v
    if op.variadic:
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        n = params.get(op.variadic)
        if n is not None and int(n) != len(args):
            raise ValueError(f"mx.nd.{key}: {op.variadic}={n} but {len(args)} inputs given")
        params[op.variadic] = len(args)
        return list(args), named, params
    sig = SIGNATURES.get(key) or SIGNATURES.get(op.name)
    n_in = len(sig[0]) if sig else len(args)
    positional = list(args[:n_in])
    for i, v in enumerate(args[n_in:]):
        if i >= len(sig[1]):
            raise TypeError(f"mx.nd.{key}: {len(args)} positional arguments, at most "
                            f"{n_in + len(sig[1])} ({', '.join(sig[0] + sig[1])})")
        p = sig[1][i]
        if p in params:
            raise TypeError(f"mx.nd.{key}() got multiple values for argument {p!r}")
        params[p] = v
    return positional, named, params


def invoke(key, args, kwargs):
    """Run registered op ``key`` on NDArrays; returns an Array or a list of Arrays."""
    op = OPS[key]
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    positional, named, params = _split(op, key, args, kwargs)
    try:
        attrs = op.parse(params)
    except ValueError as e:
        raise ValueError(f"mx.nd.{key}: {e}") from None
    argn, auxn = list(op.arguments(attrs)), list(op.aux(attrs))
    slots = argn + auxn
    if len(positional) > len(slots):
        raise TypeError(f"mx.nd.{key}: {len(positional)} inputs given, it takes {len(slots)} "
                        f"({', '.join(slots)})")
    given = {k: v for k, v in zip(slots, positional) if v is not None}
    for k, v in named.items():
        if k not in slots:
            raise TypeError(f"mx.nd.{key}: unknown input {k!r}; inputs are {slots}")
        if k in given:
            raise TypeError(f"mx.nd.{key}: input {k!r} given twice")
        given[k] = v
    missing = [k for k in slots if k not in given]
    if missing:
        raise TypeError(f"mx.nd.{key}: missing input(s) {missing}; inputs are {slots}")
    ins = [_as_input(given[k], key, k) for k in slots]
    traced = [a for a in ins[:len(argn)] if a._node is not None and a._node.tape.active]
    jit = bool(_state.process.tracers)      # minpy.jit records a Function call as one step
    if traced and op.name == "Dropout" and not jit:
        # its mask drawn here, from minpy's global random state; the product recorded
        # on the tape (gradient: mask * g, Dropout's registered gradient)
        _, mask = _direct(op, key, attrs, ins, visible_only=False)   # reads data only
        res = [mnp.multiply(ins[0], mask)]
    elif traced or jit:
        res = _traced(op, key, attrs, argn, auxn, ins)
    else:
        res = _direct(op, key, attrs, ins)
    if out is not None:
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o, r in zip(outs, res):
            o[...] = r
        return out
    return res[0] if len(res) == 1 else list(res)


def _direct(op, key, attrs, ins, visible_only=True):
    ctx = context_of(ins[0]._data) if ins else current_context()
    backend = backend_for(ctx)
    pushed = _process.async_on and ctx.device_type == "cpu"
    for a in ins:
        # a queued call reads host inputs when it runs; one copied here is read now
        if not pushed or context_of(a._data).device_type != "cpu":
            wait(a)
    datas = [data_on(a, ctx) for a in ins]
    n_out = op.num_outputs(attrs)
    try:
        s_in, s_out = op.infer_shape(attrs, [tuple(d.shape) for d in datas], [None] * n_out)
    except Mismatch as e:
        raise ShapeError(f"mx.nd.{key}: inputs {[tuple(d.shape) for d in datas]}: {e}") from None
    try:
        t_in, t_out = op.infer_type(attrs, [numpy.dtype(d.dtype) for d in datas], [None] * n_out)
    except Mismatch as e:
        raise DTypeError(f"mx.nd.{key}: input dtypes {[str(d.dtype) for d in datas]}: "
                         f"{e}") from None
    for i, (s, d) in enumerate(zip(s_in, datas)):
        if s is not None and tuple(s) != tuple(d.shape):
            raise ShapeError(f"mx.nd.{key}: input {i} has shape {tuple(d.shape)}, "
                             f"expected {tuple(s)}")
    if any(s is None for s in s_out) or any(t is None for t in t_out):
        raise ShapeError(f"mx.nd.{key}: cannot infer its output shapes from inputs "
                         f"{[tuple(d.shape) for d in datas]}")
    is_train = is_training()
    n_args = len(op.arguments(attrs))
    writes_aux = op.mutates_aux and is_train
    with backend.device(ctx.device_id):
        xp = backend.xp
        outs = [xp.empty(tuple(s), numpy.dtype(t)) for s, t in zip(s_out, t_out)]
        rc = RunCtx(xp, is_train, _GlobalRng(xp), backend, ctx.device_id)

        results = [new(o) for o in outs]
        forward = lambda: op.forward(rc, attrs, datas, outs)   # noqa: E731
        if _op_profiler is not None:
            sync = None if ctx.device_type == "cpu" else \
                (lambda: backend.synchronize(ctx.device_id))
            forward = _op_profiler(forward, f"{key}:", ctx, sync)
        if pushed:
            # MXNet's engine: the call is queued behind the writes of its inputs; its
            # outputs (and the aux states it updates: host buffers, the inputs' own) are
            # written when it runs. A draw (training Dropout) also writes the random
            # state, so draws keep push order.
            n_read = n_args if writes_aux else len(ins)
            rng = (engine.GLOBAL_STATE,) if op.name == "Dropout" and is_train else ()
            async_work.push(forward, reads=ins[:n_read],
                            writes=[*results, *ins[n_read:]], name=f"mx.nd.{key}",
                            resources=rng, nbytes=sum(o.nbytes for o in outs))
        else:
            forward()
    if writes_aux:
        for a, d in zip(ins[n_args:], datas[n_args:]):
            if d is not a._data:          # an input copied to the op's device
                a._data[...] = d
            mutated(a)
    return results[:op.num_visible(attrs)] if visible_only else results


_functions = {}
_functions_lock = threading.Lock()


def _freeze(v):
    return tuple(v) if isinstance(v, list) else v


def _traced(op, key, attrs, argn, auxn, ins):
    shapes = {k: tuple(a.shape) for k, a in zip(argn + auxn, ins)}
    # a Function's aux states have one shape: calls with other aux shapes need another
    fkey = (key, tuple(sorted((k, _freeze(v)) for k, v in attrs.items())),
            tuple(shapes[k] for k in auxn))
    with _functions_lock:
        fn = _functions.get(fkey)
        if fn is None:
            node = Node(op, key.lower(), [Variable(k)._outputs[0] for k in argn + auxn], attrs)
            sym = Symbol([(node, i) for i in range(node.num_visible)])
            fn = _functions[fkey] = Function(sym, shapes, name=f"mx.nd.{key}",
                                             dtype=ins[0].dtype)
    aux = dict(zip(auxn, ins[len(argn):]))
    if aux:
        fn.set_aux_params(aux)
    res = fn(is_train=is_training(), **dict(zip(argn, ins[:len(argn)])))
    if aux and is_training() and op.mutates_aux:
        for k, a in aux.items():
            a[...] = fn.aux_params[k]
    return list(res) if isinstance(res, tuple) else [res]


def op_function(key):
    """The imperative ``mx.nd`` function of registered op ``key``."""
    op = OPS[key]

    def fn(*args, **kwargs):
        return invoke(key, args, kwargs)

    fn.__name__ = fn.__qualname__ = key
    fn.__doc__ = (f"{op.doc}\n\nImperative MXNet operator {key}: inputs (NDArrays) first, "
                  "positionally or by name, then the parameters in MXNet's order or by "
                  "keyword; ``out=`` writes the result into given NDArrays. Returns an "
                  f"NDArray, or a list for several outputs. See also mxnet.ndarray.{key}.")
    return fn
