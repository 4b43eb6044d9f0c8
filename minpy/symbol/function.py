"""``minpy.symbol.function``: a symbol wrapped as one differentiable "big operator".

MinPy's idea: heavy layers are declared as a symbolic graph (``minpy.symbol``)
and run by an executor bound once, while the rest of the model -- the loss,
glue, anything -- stays plain NumPy code.  Both mix in one differentiated
function::

    import minpy as np, minpy.symbol as sym
    from minpy.symbol import function
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=10, name='fc')
    f = function(net, {'data': (32, 64)})
    params = f.get_params(seed=0)            # {'fc_weight': ..., 'fc_bias': ...}

    def loss(params, x, y):
        logits = f(data=x, **params)          # the executor's forward
        z = logits - np.max(logits, axis=1, keepdims=True)
        return -np.mean(z[np.arange(len(y)), y] - np.log(np.sum(np.exp(z), axis=1)))
    grads, l = np.grad_and_loss(loss)(params, x, y)   # executor's backward inside

How it works.  A ``Function`` is a tape primitive whose keyword arguments are
the symbol's arguments.  Its forward copies the inputs into an executor and
copies the outputs out; its VJP runs ``executor.backward(out_grads)`` and
copies out the gradients of the arguments that are traced.

- Bound once per distinct (device, argument shapes, dtypes): the graph plan
  is built the first time a combination is seen and reused after
  (``bind_count`` counts plans).  Gradients are planned for every parameter
  (an argument not named in ``input_shapes``) and for an input from the
  first call that traces it (one more bind).  ``grad_req`` overrides.
- Executor pool: an executor holds the forward state its backward needs, so
  each traced call takes a free executor from the plan's pool (making one
  from the same plan if none is free) and keeps it until its backward has
  run, or until the call is dropped without one (the tape freed).  Calling
  the same Function twice in one differentiated function therefore uses two
  executors, and neither backward clobbers the other.  An untraced call
  returns its executor at once.  Outputs and gradients are copies: they stay
  valid when the executor runs again.
- Aux states (BatchNorm moving statistics) belong to the Function
  (``aux_params``) and are shared by all its executors; a call on another
  device moves them there in place (the same Arrays, a counted copy), so a
  reference to an ``aux_params`` entry always sees the updates.  Training mode
  (BatchNorm batch statistics and moving-stat updates, Dropout) is on when a
  gradient tape is recording in this thread, unless fixed by ``f.train()`` /
  ``f.eval()`` or per call with ``is_train=``.
- A loss head (``SoftmaxOutput`` ...) gives its own gradient and ignores the
  incoming one, as in MXNet; for exact composition with NumPy glue end the
  symbol at the logits and write the loss in NumPy.
- Grad of grad through a Function is not supported: the gradient comes from
  the executor, outside the tape, and differentiating it again raises
  TypeError.
"""
import functools
import math
import threading

import numpy

from .. import numpy as mnp
from .. import engine
from ..core.array import Array, new, wait
from ..core.call import call as front_door
from ..core.execute import mutated
from ..core.recorder import OpaquePrimitive
from ..core import tape as _tape
from ..dispatch.context import current_context
from ..dispatch.transfer import backend_for, context_of, data_on, move_raw
from .graph_plan import GraphPlan
from .executor import Executor, device_scope
from .registry import ShapeError

__all__ = ["function", "Function"]

_STATE = "__function_call_state__"      # the hidden keyword carrying a call's state


def function(symbol, input_shapes, name=None, **options):
    """Wrap ``symbol`` as a differentiable big operator (see :class:`Function`).

    Args:
        symbol: a ``minpy.symbol.Symbol``.
        input_shapes: dict name -> shape of the data inputs (``{'data': (64, 784)}``);
            the other argument shapes are inferred from them.
        name: a name for error messages (default: the symbol's name).
        **options: ``grad_req``, ``dtype``, ``ctx`` (see :class:`Function`).
    Returns:
        A :class:`Function`; call it with keyword arrays named after
        ``symbol.list_arguments()``.
    """
    return Function(symbol, input_shapes, name=name, **options)


class Function:
    """A symbol as a differentiable operator on minpy Arrays (module doc).

    Args:
        symbol: the ``minpy.symbol.Symbol``.
        input_shapes: dict name -> shape of the data inputs; the shapes of the
            other arguments (the parameters) and outputs are inferred.
        name: label for errors (default: the symbol's name).
        grad_req: ``None`` (gradients for the parameters, and for inputs once
            traced), ``'write'`` (for every argument), or a dict name ->
            ``'write'``/``'null'`` (a traced ``'null'`` argument is promoted).
        dtype: dtype of ``get_params`` and of the aux states (default float32).
        ctx: device to run on (default: where the call's first Array lives).

    Attributes:
        arg_shapes, param_shapes, aux_shapes, output_shapes: dicts name -> shape
            for the shapes in ``input_shapes``.
        aux_params: dict name -> Array of the aux states (shared by all binds).
        bind_count: number of graph plans built; ``num_executors``: executors made.
    """

    def __init__(self, symbol, input_shapes, name=None, grad_req=None, dtype=numpy.float32,
                 ctx=None):
        self.symbol = symbol
        self.name = name or symbol.name or "function"
        self.arg_names = list(symbol.list_arguments())
        self.aux_names = list(symbol.list_auxiliary_states())
        self.output_names = list(symbol.list_outputs())
        self.input_names = list(input_shapes)
        self._check_names(input_shapes, self.arg_names + self.aux_names, "input_shapes")
        arg_s, out_s, aux_s = symbol.infer_shape_partial(**input_shapes)
        unknown = [n for n, s in zip(self.arg_names + self.aux_names, arg_s + aux_s) if s is None]
        if unknown:
            raise ShapeError(f"Function {self.name!r}: cannot infer the shapes of {unknown} "
                             f"from input_shapes {input_shapes}")
        self.arg_shapes = dict(zip(self.arg_names, arg_s))
        self.param_shapes = {k: s for k, s in self.arg_shapes.items() if k not in input_shapes}
        self.aux_shapes = dict(zip(self.aux_names, aux_s))
        self.output_shapes = dict(zip(self.output_names, out_s))
        if grad_req is None:
            req = {n: "null" if n in input_shapes else "write" for n in self.arg_names}
        elif isinstance(grad_req, str):
            req = {n: grad_req for n in self.arg_names}
        else:
            self._check_names(grad_req, self.arg_names, "grad_req")
            req = {n: grad_req.get(n, "write") for n in self.arg_names}
        self._req = req
        self.dtype = numpy.dtype(dtype)
        self.ctx = ctx
        self.aux_params = {n: new(numpy.full(s, 1 if n.endswith("moving_var") else 0,
                                             self.dtype))
                           for n, s in self.aux_shapes.items()}
        self.bind_count = 0
        self.num_executors = 0
        self.mode = None            # None: automatic; True: train; False: eval
        self._bound = {}            # (ctx, shapes, dtypes) -> _Bound
        self._lock = threading.Lock()
        self._stochastic = None
        # both run the executor, outside minpy's primitives: minpy.jit replays each
        # call as one opaque step; the backward takes the forward's call state
        prim = OpaquePrimitive(f"function.{self.name}", self._forward, self._replay_step,
                               side_effect=True)
        prim.vjp = {n: functools.partial(_vjp_maker, n) for n in self.arg_names}
        self._prim = prim
        self._backward_prim = OpaquePrimitive(f"function.{self.name}.backward", _backward,
                                              _backward_step)

    # ----------------------------------------------------------------- calls
    def __call__(self, *args, is_train=None, **inputs):
        """Run the symbol on keyword Arrays named after its arguments.

        Args:
            is_train: training mode for this call (default: ``self.mode``, else
                whether a gradient tape is recording in this thread).
            **inputs: one Array (or array-like) per argument of the symbol.
        Returns:
            An Array, or a tuple of Arrays for a symbol with several outputs.
        Raises:
            TypeError: positional, missing or unknown arguments.
            minpy.symbol.ShapeError: shapes the graph cannot take (names the node).
        """
        if args:
            raise TypeError(f"Function {self.name!r} takes keyword arguments named after the "
                            f"symbol's arguments {self.arg_names}, got {len(args)} positional")
        self._check_names(inputs, self.arg_names, "call")
        missing = [n for n in self.arg_names if n not in inputs]
        if missing:
            raise TypeError(f"Function {self.name!r}: missing arguments {missing}; the symbol's "
                            f"arguments are {self.arg_names}")
        traced = set()
        for k, v in inputs.items():
            if type(v) is not Array:
                inputs[k] = _to_array(v)
            elif v._node is not None and v._node.tape.active:
                traced.add(k)
        if is_train is None:
            is_train = self.mode if self.mode is not None else bool(_tape.active_tapes())
        inputs[_STATE] = _Call(self, bool(is_train), traced)
        if not traced:
            return front_door(self._prim, (), inputs)
        return _tape.record(self._prim, (), inputs)

    def train(self, mode=True):
        """Fix the mode: ``True`` training, ``False`` inference, ``None`` automatic.
        Returns ``self``."""
        self.mode = None if mode is None else bool(mode)
        return self

    def eval(self):
        """Fix inference mode (BatchNorm uses its moving statistics). Returns ``self``."""
        return self.train(False)

    def _forward(self, **kwargs):
        call = kwargs.pop(_STATE)
        bound = self._bound_for(kwargs, call.need)
        self._aux_on(bound.ctx)
        exe = bound.take()
        try:
            outs = exe.forward(is_train=call.is_train, **kwargs)
        except BaseException:
            bound.give(exe)
            raise
        result = tuple(new(_copied(o._data)) for o in outs)
        if call.need:
            call.hold(bound, exe, kwargs)
        else:
            bound.give(exe)
        return result[0] if len(result) == 1 else result

    def _replay_step(self, args, kwargs, res):
        """The opaque step ``minpy.jit`` records for a call (see ``OpaquePrimitive``):
        the symbol's arguments in, its outputs and the call's state out."""
        call = kwargs[_STATE]
        outs = list(res) if isinstance(res, tuple) else [res]
        return self._replayer(call), [kwargs[n] for n in self.arg_names], outs + [call], ()

    def _replayer(self, traced_call):
        """The forward of a call as ``minpy.jit`` replays it: backend arrays in
        argument order -> (backend outputs ..., the new call's state)."""
        names, is_train, need = self.arg_names, traced_call.is_train, traced_call.need

        def replay(*raws):
            call = _Call(self, is_train, need)
            res = self._forward(**{n: new(r) for n, r in zip(names, raws)}, **{_STATE: call})
            res = res if isinstance(res, tuple) else (res,)
            return tuple(r._data for r in res) + (call,)
        return replay

    # ---------------------------------------------------------------- binding
    def _bound_for(self, inputs, need):
        ctx = self.ctx
        if ctx is None:
            ctx = context_of(inputs[self.arg_names[0]]._data) if self.arg_names \
                else current_context()
        shapes = tuple(tuple(inputs[n].shape) for n in self.arg_names)
        dtypes = tuple(inputs[n].dtype for n in self.arg_names)
        key = (ctx, shapes, dtypes)
        with self._lock:
            b = self._bound.get(key)
            if b is None or not need <= b.requested:
                requested = set(need) | {n for n, r in self._req.items() if r == "write"}
                if b is not None:
                    requested |= b.requested
                b = self._bound[key] = _Bound(self, ctx, dict(zip(self.arg_names, shapes)),
                                              dict(zip(self.arg_names, dtypes)), requested)
                self.bind_count += 1
            return b

    def _aux_on(self, ctx):
        """Move the aux states to ``ctx``, where a call runs, as the same Arrays (a
        counted copy): every executor and every holder of an ``aux_params`` entry
        keeps seeing one set of states, whichever device the calls run on."""
        with self._lock:
            for a in self.aux_params.values():
                if not _same_device(context_of(a._data), ctx):
                    wait(a)                 # pushed work on the old buffer finishes first
                    a._data = data_on(a, ctx)
                    mutated(a)
                    if a._var is not None:
                        engine.bind_storage(a._data, a._var)

    def _aux_for(self, plan, ctx):
        # the shared aux Arrays, converted once if a plan needs another dtype or device
        aux = {}
        for n, e in plan.aux_entry.items():
            a = self.aux_params[n]
            shape, dtype = tuple(plan.shapes[e]), plan.dtypes[e]
            if tuple(a.shape) != shape or a.dtype != dtype or \
                    not _same_device(context_of(a._data), ctx):
                a = self.aux_params[n] = _alloc(ctx, shape, dtype,
                                                a.asnumpy() if tuple(a.shape) == shape else 0)
            aux[n] = a
        return aux

    def set_aux_params(self, values):
        """Copy ``values`` (dict name -> array) into the aux states, in place."""
        self._check_names(values, self.aux_names, "set_aux_params")
        for k, v in values.items():
            a = self.aux_params[k]
            src = move_raw(numpy.asarray(v.asnumpy() if isinstance(v, Array) else v),
                           context_of(a._data))
            with device_scope(a._data):
                a._data[...] = src
            mutated(a)

    # --------------------------------------------------------------- helpers
    def get_params(self, init="xavier", seed=None, dtype=None):
        """Fresh parameter Arrays for ``param_shapes`` (dict name -> Array).

        Args:
            init: ``'xavier'`` (uniform, MXNet's Xavier 'avg' magnitude 3),
                a float (normal with that standard deviation), or a callable
                ``init(name, shape, rng) -> array``.  Names ending in
                ``bias``/``beta`` start at zero and ``gamma`` at one.
            seed: seed of the generator.
            dtype: default the Function's ``dtype``.
        """
        rng = numpy.random.default_rng(seed)
        dtype = self.dtype if dtype is None else numpy.dtype(dtype)
        out = {}
        for n, s in self.param_shapes.items():
            if n.endswith(("bias", "beta")):
                v = numpy.zeros(s)
            elif n.endswith("gamma"):
                v = numpy.ones(s)
            elif callable(init):
                v = numpy.asarray(init(n, s, rng))
            elif len(s) < 2:
                v = numpy.zeros(s)
            elif init == "xavier":
                rf = math.prod(s[2:])
                scale = math.sqrt(3.0 / ((s[1] * rf + s[0] * rf) / 2.0))
                v = rng.uniform(-scale, scale, s)
            else:
                v = rng.normal(0.0, float(init), s)
            out[n] = _alloc(self.ctx or current_context(), s, dtype, numpy.asarray(v, dtype))
        return out

    def get_output_shapes(self):
        """MinPy's name: dict output name -> shape."""
        return dict(self.output_shapes)

    def get_one_output_shape(self):
        """MinPy's name: the shape of the only output (ValueError if there are several)."""
        if len(self.output_shapes) != 1:
            raise ValueError(f"Function {self.name!r} has {len(self.output_shapes)} outputs "
                             f"({self.output_names}); get_one_output_shape needs exactly one")
        return next(iter(self.output_shapes.values()))

    def _check_names(self, given, allowed, what):
        unknown = [k for k in given if k not in allowed]
        if unknown:
            raise TypeError(f"Function {self.name!r}: {what}: unknown argument names {unknown}; "
                            f"the symbol's arguments are {allowed}")

    def _is_stochastic(self, plan):
        if self._stochastic is None:
            self._stochastic = any(n.op is not None and n.op.uses_rng for n in plan.graph.nodes)
        return self._stochastic

    def __repr__(self):
        return (f"<minpy.symbol.Function {self.name!r}: arguments {self.arg_names}, "
                f"{self.bind_count} bind(s), {self.num_executors} executor(s)>")


def _same_device(a, b):
    return a == b or (a.device_type == "cpu" and b.device_type == "cpu")


def _copied(data):
    """A copy of backend array ``data`` on its own device (CuPy copies to the current one)."""
    with device_scope(data):
        return data.copy()


def _to_array(v):
    return mnp.asarray(v)


def _alloc(ctx, shape, dtype, fill=0):
    backend = backend_for(ctx)
    with backend.device(ctx.device_id):
        a = backend.xp.empty(shape, dtype)
        a[...] = move_raw(fill, ctx) if isinstance(fill, numpy.ndarray) else fill
    return new(a)


class _Bound:
    """One graph plan of a Function and its pool of free executors."""

    def __init__(self, fn, ctx, shapes, dtypes, requested):
        self.fn, self.ctx = fn, ctx
        self.requested = frozenset(requested)
        req = {n: "write" if n in requested else "null" for n in fn.arg_names}
        self.plan = GraphPlan(fn.symbol, shapes, dtypes, req)
        self.free = []
        # reentrant: a dropped call's __del__ may give an executor back from inside take()
        self.lock = threading.RLock()

    def take(self):
        with self.lock:
            if self.free:
                return self.free.pop()
        p, fn = self.plan, self.fn
        args = {n: _alloc(self.ctx, p.shapes[e], p.dtypes[e]) for n, e in p.arg_entry.items()}
        grads = {n: _alloc(self.ctx, p.shapes[p.arg_entry[n]], p.dtypes[p.arg_entry[n]])
                 for n in p.grad_entry}
        with fn._lock:
            aux = fn._aux_for(p, self.ctx)
            fn.num_executors += 1
        return Executor(fn.symbol, self.ctx, args, grads, "write", aux, plan=p)

    def give(self, exe):
        with self.lock:
            self.free.append(exe)


class _Call:
    """The state of one traced call: its executor (held until its backward),
    its inputs, and the gradients of the last backward."""

    def __init__(self, fn, is_train, traced):
        self.fn, self.is_train, self.need = fn, is_train, frozenset(traced)
        self.bound = self.exe = self.inputs = None
        self.g = self.grads = None

    def hold(self, bound, exe, inputs):
        self.bound, self.exe, self.inputs = bound, exe, inputs

    def release(self):
        exe, self.exe = self.exe, None
        if exe is not None:
            self.bound.give(exe)

    def __del__(self):
        self.release()

    def gradients(self, g, inputs):
        """Gradients of the traced arguments for output gradient ``g`` (cached per ``g``)."""
        if self.g is g:
            return self.grads
        fn = self.fn
        if _traced_now(g) or any(_traced_now(v) for v in inputs.values()):
            raise TypeError(f"minpy.grad: grad of grad through Function {fn.name!r} is not "
                            "supported: its gradient comes from the symbol's executor and cannot "
                            "be differentiated again")
        outs = g if isinstance(g, tuple) else (g,)
        grads = front_door(fn._backward_prim, (self,) + tuple(outs), {})
        self.grads = dict(zip(self.grad_names(), grads))
        self.g = g
        return self.grads

    def grad_names(self):
        """The traced arguments this call's backward gives gradients of, sorted."""
        return sorted(n for n in self.need if n in self.bound.plan.grad_entry)

    def _forward_again(self):
        fn, bound = self.fn, self.bound
        if self.is_train and fn._is_stochastic(bound.plan):
            raise RuntimeError(f"Function {fn.name!r}: a second backward through one training "
                               "call of a stochastic symbol (Dropout) cannot replay its forward")
        fn._aux_on(bound.ctx)
        exe = bound.take()
        saved = {k: _copied(a._data) for k, a in exe.aux_dict.items()} if self.is_train else {}
        try:
            exe.forward(is_train=self.is_train, **self.inputs)
        except BaseException:
            bound.give(exe)
            raise
        finally:
            for k, d in saved.items():          # the replay must not update aux states again
                a = exe.aux_dict[k]
                with device_scope(d):
                    a._data[...] = d
                mutated(a)
        self.exe = exe


def _backward(call, *outs):
    """The executor's backward of ``call`` (a :class:`_Call`) for output gradients
    ``outs``: a tuple of the gradients of ``call.grad_names()``."""
    if call.exe is None:        # a second backward through this call (jacobian ...)
        call._forward_again()
    exe = call.exe
    out_grads = []
    for o, h in zip(outs, exe.outputs):
        if tuple(o.shape) != tuple(h.shape):
            o = mnp.broadcast_to(o, h.shape)
        out_grads.append(o)
    try:
        exe.backward(out_grads)
        return tuple(new(_copied(exe.grad_dict[n]._data)) for n in call.grad_names())
    finally:
        call.release()


def _backward_step(args, kwargs, res):
    """The opaque step ``minpy.jit`` records for a backward: (call state, output
    gradients ...) in, the gradients out; the replay runs the backward of the
    replayed forward's call state."""
    def replay(call, *gs):
        return tuple(r._data for r in _backward(call, *[new(x) for x in gs]))
    return replay, list(args), list(res), ()


def _traced_now(a):
    return type(a) is Array and a._node is not None and a._node.tape.active


def _vjp_maker(name, ans, **kwargs):
    call = kwargs.pop(_STATE)

    def vjp(g):
        return call.gradients(g, kwargs).get(name)
    return vjp
