"""``Executor``: a symbol bound once to arrays, run many times.

At bind time (:class:`~minpy.symbol.graph_plan.GraphPlan`) the graph is extended
with its gradient, shapes and dtypes are inferred, the execution order is
fixed and internal entries are placed in storage blocks by the memory
planner.  The executor then allocates one buffer per block and one array per
external entry, and prepares one closure per node.  ``forward`` and
``backward`` only push those closures to the dependency engine
(``minpy.engine.push(fn, reads, writes)``); every storage block has one
engine Var, so the reuse of a block by a later entry is an ordinary
read/write dependency.  Both wait for the arrays they produce before
returning -- on a GPU, for the device's queued kernels too -- so results are
ready (and errors raised) at the API boundary (``backward(wait=False)`` does
not wait; ``wait_to_read`` on a gradient does).

    exe = net.simple_bind(minpy.cpu(), data=(32, 784))
    exe.forward(is_train=True, data=x, softmax_label=y)
    exe.backward()
    for name, g in exe.grad_dict.items(): ...
"""
import threading

import numpy

from .. import engine
from ..core.array import Array, new
from ..core.async_work import var_of
from ..core.execute import mutated
from ..dispatch.backend import backend_of
from ..dispatch.context import current_context
from ..dispatch.transfer import backend_for, context_of, data_on, move_raw
from .graph_plan import GraphPlan
from .registry import RunCtx

__all__ = ["Executor", "seed", "device_scope", "set_op_profiler"]

# minpy.mxnet.profiler's hook while it records: wrap(fn, name, device, sync) -> fn timed
_op_profiler = None


def set_op_profiler(wrap):
    """Have every operator an executor pushes from now on timed: ``wrap(fn, name, device,
    sync)`` returns the callable pushed in place of ``fn`` (``name`` is ``'<op>:<node>'``;
    ``device`` the executor's Context; ``sync`` None on the CPU, else a callable waiting
    for the executor's GPU). None removes it. Used by ``minpy.mxnet.profiler``; see also
    Executor.set_monitor_callback.
    """
    global _op_profiler
    _op_profiler = wrap


# ------------------------------------------------------------------- random
class _Rng:
    """The generator of one device, guarded by an engine Var (draws run in push order).

    Made (and reseeded) with its device current: a device generator keeps its state
    on the device that was current when it was made."""

    def __init__(self, ctx, seed=None):
        self.backend, self.device_id = backend_for(ctx), ctx.device_id
        self.var = engine.new_var("symbol-rng")
        self.reseed(seed)

    def reseed(self, seed):
        with self.backend.device(self.device_id):
            self.gen = self.backend.xp.random.default_rng(seed)

    def random(self, shape):
        # (called by Dropout inside its step, which runs with the device current)
        return self.gen.random(shape)


_rngs = {}
_rng_lock = threading.Lock()


def _rng_for(ctx):
    with _rng_lock:
        r = _rngs.get(ctx)
        if r is None:
            r = _rngs[ctx] = _Rng(ctx)
        return r


def seed(seed_state):
    """Seed the generators used by Dropout in executors (all devices)."""
    with _rng_lock:
        for r in _rngs.values():
            engine.wait_for(r.var)
            r.reseed(seed_state)
        ctx = current_context()
        if ctx not in _rngs:
            _rngs[ctx] = _Rng(ctx, seed_state)


# ----------------------------------------------------------------- helpers
def _as_array(value, ctx, name):
    if isinstance(value, Array):
        have = context_of(value._data)
        # host memory is one (minpy reports it as cpu(0)): a cpu(i) executor takes it
        if have != ctx and not have.device_type == ctx.device_type == "cpu":
            raise ValueError(f"bind: {name} lives on {have}, the executor on {ctx}")
        return value
    if isinstance(value, numpy.ndarray):
        return new(move_raw(value, ctx))
    raise TypeError(f"bind: {name} must be a minpy Array, got {type(value).__name__}")


def _by_name(values, names, what):
    if values is None:
        return {}
    if isinstance(values, dict):
        unknown = set(values) - set(names)
        if unknown:
            raise ValueError(f"bind: {what}: {sorted(unknown)} are not in {names}")
        return dict(values)
    values = list(values)
    if len(values) != len(names):
        raise ValueError(f"bind: {what}: {len(values)} arrays for {len(names)} names {names}")
    return dict(zip(names, values))


class Executor:
    """A symbol bound to arrays on one device (see module doc).

    Created by ``Symbol.bind`` / ``Symbol.simple_bind``; ``plan=`` (keyword) binds
    with an already-made ``GraphPlan`` of the same symbol (arrays of its shapes),
    skipping the planning, as ``minpy.core.function`` does for its executor pool.
    Attributes:
    ``outputs`` (list of Arrays), ``arg_dict``/``grad_dict``/``aux_dict``/
    ``output_dict`` (name -> Array), ``arg_arrays``/``grad_arrays``/
    ``aux_arrays`` (lists; a gradient is None where grad_req is 'null'),
    ``plan`` (the GraphPlan).

    ``mirror`` (bind / simple_bind keyword): False never recomputes; True
    lets the mirror search recompute cheap forward nodes (activations,
    BatchNorm, pooling, elementwise) in backward instead of keeping them;
    'all' lets it recompute any node (convolutions too, the sqrt(n)
    checkpointing of "Training Deep Nets with Sublinear Memory Cost"); None
    (default) means True when env ``MINPY_BACKWARD_DO_MIRROR=1``, else only
    nodes marked ``force_mirroring='True'`` are recomputed.  A recomputed
    node runs its original op on the same inputs, so results are the same;
    BatchNorm is replayed on scratch copies of its moving statistics (they
    are updated once, by the forward pass), and Dropout is never recomputed
    (its mask is random).
    """

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None,
                 plan_memory=None, memory_options=None, mirror=None, *, plan=None,
                 shared_heads=None):
        ctx = current_context() if ctx is None else ctx
        argn, auxn = symbol.list_arguments(), symbol.list_auxiliary_states()
        args = {k: _as_array(v, ctx, k) for k, v in _by_name(args, argn, "args").items()}
        missing = [n for n in argn if n not in args]
        if missing:
            raise ValueError(f"bind: no array for arguments {missing}")
        grads = {k: _as_array(v, ctx, "grad of " + k) for k, v in
                 _by_name(args_grad, argn, "args_grad").items() if v is not None}
        aux = {k: _as_array(v, ctx, k) for k, v in
               _by_name(aux_states, auxn, "aux_states").items()}
        missing = [n for n in auxn if n not in aux]
        if missing:
            raise ValueError(f"bind: no array for auxiliary states {missing}")
        if isinstance(grad_req, str):
            grad_req = {n: grad_req for n in grads}
        elif isinstance(grad_req, (list, tuple)):
            grad_req = {n: r for n, r in zip(argn, grad_req) if n in grads}
        else:
            grad_req = {n: r for n, r in grad_req.items() if n in grads}
        if plan is None:
            shapes = {k: a.shape for k, a in list(args.items()) + list(aux.items())}
            dtypes = {k: a.dtype for k, a in list(args.items()) + list(aux.items())}
            plan = GraphPlan(symbol, shapes, dtypes, grad_req, plan_memory, memory_options,
                             mirror)
        elif plan.symbol is not symbol:
            raise ValueError("bind: plan= was made for another symbol")
        with backend_for(ctx).device(ctx.device_id):     # views and fills of device memory
            self._setup(plan, ctx, args, grads, aux, shared_heads or {})

    @classmethod
    def simple(cls, symbol, ctx=None, grad_req="write", type_dict=None, plan_memory=None,
               memory_options=None, mirror=None, **shapes):
        """Bind allocating everything from input ``shapes`` (``Symbol.simple_bind``).

        Arguments and gradients start at zero, aux states at zero except
        ``*moving_var`` at one.  ``mirror``: see the class doc.
        """
        ctx = current_context() if ctx is None else ctx
        plan = GraphPlan(symbol, shapes, type_dict or {}, grad_req, plan_memory, memory_options,
                         mirror)
        xp = backend_for(ctx).xp
        alloc = _allocator(ctx)

        def zeros(e, fill=0):
            return new(alloc(xp.full, plan.shapes[e], fill, plan.dtypes[e]))
        args = {n: zeros(e) for n, e in plan.arg_entry.items()}
        aux = {n: zeros(e, 1 if n.endswith("moving_var") else 0)
               for n, e in plan.aux_entry.items()}
        grads = {n: zeros(plan.arg_entry[n]) for n, r in plan.grad_req.items() if r != "null"}
        return cls(symbol, ctx, args, grads, plan.grad_req, aux, plan=plan)

    # ------------------------------------------------------------------ setup
    def _setup(self, plan, ctx, args, grads, aux, shared_heads):
        self.plan, self._ctx, self._symbol = plan, ctx, plan.symbol
        backend = backend_for(ctx)
        xp = self._xp = backend.xp
        alloc = _allocator(ctx)
        n = plan.num_entries
        hold = [None] * n
        for k, e in plan.arg_entry.items():
            hold[e] = args[k]
        for k, e in plan.aux_entry.items():
            hold[e] = aux[k]
        for k, a in args.items():
            self._check(k, a, plan.arg_entry[k])
        for k, a in aux.items():
            self._check(k, a, plan.aux_entry[k])
        self._grads = {}
        for k, e in plan.grad_entry.items():
            self._check("gradient of " + k, grads[k], e)
            hold[e] = grads[k]
        for k, g in grads.items():
            self._grads[k] = g
            if k not in plan.grad_entry and plan.grad_req.get(k) == "write":
                _fill(g, 0)        # no gradient reaches it: it is zero
        for e, a in shared_heads.items():
            if hold[e] is None:
                self._check("output", a, e)
                hold[e] = a
        for e in list(plan.head_grad_entry.values()) + plan.heads:
            if hold[e] is None:
                hold[e] = new(alloc(xp.zeros, plan.shapes[e], plan.dtypes[e]))
        p = plan.plan
        offsets = getattr(p, "offset_of", None)
        if offsets is None:                 # one buffer per block
            blocks = {b: (alloc(xp.empty, int(nb), xp.uint8), engine.new_var(f"block{b}"))
                      for b, nb in p.block_bytes.items()}
            self._arena, self._overlap_vars = None, {}
        else:                               # blocks at offsets of one arena
            self._arena = arena = alloc(xp.empty, max(int(p.arena_bytes), 1), xp.uint8)
            blocks = {b: (arena[offsets[b]:offsets[b] + int(nb)], engine.new_var(f"block{b}"))
                      for b, nb in p.block_bytes.items()}
            # writing a block must wait for every access to blocks sharing its bytes
            overlaps = p.overlaps()
            self._overlap_vars = {b: [blocks[o][1] for o in overlaps[b]] for b in blocks}
        for e, b in p.storage_of.items():
            buf, v = blocks[b]
            nbytes = plan.entry_bytes[e]
            a = new(buf[:nbytes].view(plan.dtypes[e]).reshape(plan.shapes[e]))
            a._var = v
            hold[e] = a
        self._hold = hold
        self._blocks = blocks
        self._vars = [None if h is None else var_of(h) for h in hold]
        rng = _rng_for(ctx)
        self._device = None if ctx.device_type == "cpu" else ("gpu", ctx.device_id)
        rc = {t: RunCtx(xp, t, rng, backend, ctx.device_id) for t in (True, False)}
        self._fwd = {t: [self._step(nid, rc[t], rng) for nid in plan.order[:plan.n_forward]]
                     for t in (True, False)}
        # recomputed nodes replay the mode of the last forward
        bwd = {t: [self._step(nid, rc[t], rng) if nid in plan.origin else None
                   for nid in plan.order[plan.n_forward:]] for t in (True, False)}
        plain = [None if nid in plan.origin else self._step(nid, rc[True], rng)
                 for nid in plan.order[plan.n_forward:]]
        self._bwd_of = {t: [d or s for d, s in zip(bwd[t], plain)] for t in (True, False)}
        self._bwd = self._bwd_of[True]
        self._train_forward = True
        self.outputs = [hold[e] for e in plan.heads]
        self.arg_dict = {k: hold[plan.arg_entry[k]] for k in plan.arg_names}
        self.aux_dict = {k: hold[plan.aux_entry[k]] for k in plan.aux_names}
        self.grad_dict = {k: self._grads[k] for k in plan.arg_names if k in self._grads}
        self.output_dict = dict(zip(self._symbol.list_outputs(), self.outputs))
        self._forwarded = False
        self._monitor = None

    def _check(self, what, arr, e):
        p = self.plan
        if tuple(arr.shape) != tuple(p.shapes[e]) or arr.dtype != p.dtypes[e]:
            raise ValueError(f"bind: {what} is {tuple(arr.shape)} {arr.dtype}, the graph "
                             f"needs {p.shapes[e]} {p.dtypes[e]}")

    def _step(self, nid, rc, rng):
        plan, hold, vs = self.plan, self._hold, self._vars
        node = plan.node_of(nid)
        op, attrs = node.op, node.attrs
        ins = [hold[e] for e in plan.inputs_of[nid]]
        outs = [hold[e] for e in plan.outputs_of[nid]]
        reads = [vs[e] for e in plan.inputs_of[nid]]
        writes = [vs[e] for e in plan.outputs_of[nid]]
        if self._overlap_vars:
            storage = plan.plan.storage_of
            for e in plan.outputs_of[nid]:
                if e in storage:
                    writes += self._overlap_vars[storage[e]]
        forward = op.forward
        if nid in plan.origin:              # a recomputation (mirror)
            if op.uses_rng:
                raise RuntimeError(f"mirror: {op.name} {node.name!r} cannot be recomputed")
            if op.mutates_aux:              # replay on scratch copies of the aux states
                forward = _replay_on_scratch(forward, node.num_args, self._xp)
        written = outs
        if nid not in plan.origin:
            if op.mutates_aux and rc.is_train:
                writes += reads[node.num_args:]
                written = outs + ins[node.num_args:]
            if op.uses_rng:
                writes.append(rng.var)

        def run():
            forward(rc, attrs, [a._data for a in ins], [a._data for a in outs])
            for a in written:       # copies of them on other devices are stale now
                mutated(a)
        return self._on_device(run), reads, writes, f"{op.name}:{node.name}"

    def _on_device(self, fn):
        """``fn`` run with the executor's device current (engine workers are plain
        threads, and a device array is only usable with its own device current)."""
        if self._ctx.device_type == "cpu":
            return fn
        device, dev_id = backend_for(self._ctx).device, self._ctx.device_id

        def on_device():
            with device(dev_id):
                return fn()
        return on_device

    # ----------------------------------------------------------------- running
    def _push_all(self, steps, phase):
        push, device, wrap = engine.push, self._device, _op_profiler
        if wrap is not None:
            sync = None if device is None else self._synchronize
            steps = [(wrap(fn, name, self._ctx, sync), r, w, name)
                     for fn, r, w, name in steps]
        if self._monitor is not None:
            self._push_monitored(steps, phase)
            return
        for fn, reads, writes, name in steps:
            push(fn, reads, writes, name, device)

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, array)`` for each output of each operator that later
        forwards and backwards run, once it is computed (MXNet's executor monitor, used by
        ``mx.monitor.Monitor``): ``name`` is ``<node>_<output>`` (``fc1_output``, as
        MXNet's). With ``monitor_all``, also for each input before the operator runs:
        ``<node>_<input>`` (``fc1_weight``), preceded by the variable's own name for a
        variable input. The callback runs in the calling thread with the array ready and
        may compute on it (the next operator writes only after); the operators then run
        one at a time. Backward operators carry minpy's node names
        (``backward_fullyconnected0``), not MXNet's (``fc1_backward``); visible outputs
        only. ``reshape`` passes the monitor on to the new executor, and calls the
        callback's ``executor_reshaped(old, new)`` if it has one (``Monitor`` follows its
        executors so). ``callback=None`` removes the monitor.
        """
        if callback is not None and not callable(callback):
            raise TypeError(f"Executor.set_monitor_callback: callback must be callable or "
                            f"None, got {type(callback).__name__}")
        self._monitor = None if callback is None else (callback, bool(monitor_all))

    def _push_monitored(self, steps, phase):
        plan, hold = self.plan, self._hold
        split = plan.n_forward
        nids = plan.order[:split] if phase == "forward" else plan.order[split:]
        callback, monitor_all = self._monitor
        for (fn, reads, writes, name), nid in zip(steps, nids):
            node = plan.node_of(nid)
            if monitor_all:
                ins = plan.inputs_of[nid]
                self._wait(ins)
                self._synchronize()
                names = node.op.arguments(node.attrs) + node.op.aux(node.attrs)
                for k, e in enumerate(ins):
                    src = node.inputs[k][0] if k < len(node.inputs) else None
                    if src is not None and src.op is None:
                        callback(src.name, hold[e])
                    callback(f"{node.name}_{names[k] if k < len(names) else f'input{k}'}",
                             hold[e])
            engine.push(fn, reads, writes, name, self._device)
            outs = plan.outputs_of[nid][:node.op.num_visible(node.attrs)]
            self._wait(outs)
            self._synchronize()
            for out_name, e in zip(node.op.outputs(node.attrs), outs):
                callback(f"{node.name}_{out_name}", hold[e])

    def _copy_in(self, dst, value, what):
        if isinstance(value, Array):
            src = data_on(value, self._ctx)
        else:
            src = move_raw(numpy.asarray(value, dtype=dst.dtype), self._ctx)
        if tuple(src.shape) != tuple(dst.shape):
            raise ValueError(f"{what}: shape {tuple(src.shape)} does not match the bound "
                             f"shape {tuple(dst.shape)} (use Executor.reshape)")
        d = dst._data

        def copy():
            d[...] = src
            mutated(dst)
        reads = [var_of(value)] if isinstance(value, Array) and value is not dst else []
        engine.push(self._on_device(copy), reads, [var_of(dst)], "copy_in", self._device)

    def forward(self, is_train=False, **kwargs):
        """Run the forward graph; keyword arrays are copied into ``arg_dict`` first.

        Args:
            is_train: training mode (Dropout drops, BatchNorm uses batch
                statistics and updates its aux states).
        Returns:
            ``outputs``, the list of output Arrays (ready).
        """
        for k, v in kwargs.items():
            if k not in self.arg_dict:
                raise ValueError(f"forward: {k!r} is not an argument; arguments are "
                                 f"{list(self.arg_dict)}")
            self._copy_in(self.arg_dict[k], v, f"forward: {k}")
        self._push_all(self._fwd[bool(is_train)], "forward")
        self._train_forward = bool(is_train)
        self._wait(self.plan.heads)
        if is_train:
            self._wait(self.plan.aux_entry.values())
        self._synchronize()
        self._forwarded = True
        return self.outputs

    def backward(self, out_grads=None, wait=True):
        """Run the backward graph, writing (or adding to) ``grad_dict``.

        Args:
            out_grads: gradient of each output (an Array or a list with one
                per output; None entries mean ones).  Loss outputs
                (SoftmaxOutput ...) ignore theirs.
            wait: False returns as soon as the ops are queued (MXNet's
                asynchronous backward), so that work reading the gradients
                through the engine -- a KVStore push -- starts on each one as
                soon as it is computed, behind the rest of the backward pass.
                Wait for a gradient (``wait_to_read``) before reading it eagerly.
        Raises:
            RuntimeError: no forward since the last backward (the storage of
            forward results may have been reused by the previous backward).
        """
        if not self._forwarded:
            raise RuntimeError("backward: call forward() (is_train=True) before each backward")
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        if out_grads is not None and len(out_grads) != len(self.outputs):
            raise ValueError(f"backward: {len(out_grads)} out_grads for "
                             f"{len(self.outputs)} outputs")
        for i, e in self.plan.head_grad_entry.items():
            g = None if out_grads is None else out_grads[i]
            h = self._hold[e]
            if g is None:
                engine.push(self._on_device(lambda h=h: _fill(h, 1)), (), [self._vars[e]],
                            "ones", self._device)
            else:
                self._copy_in(h, g, f"backward: out_grads[{i}]")
        self._push_all(self._bwd_of[self._train_forward], "backward")
        self._forwarded = False
        if wait:
            self._wait(self.plan.grad_entry.values())
            self._synchronize()

    def _wait(self, entries):
        for e in entries:
            engine.wait_for(self._vars[e])

    def _synchronize(self):
        """Wait for the kernels the steps queued on the executor's GPU (the engine's
        ops return once their kernels are launched)."""
        if self._ctx.device_type != "cpu":
            backend_for(self._ctx).synchronize(self._ctx.device_id)

    # ------------------------------------------------------------------- access
    @property
    def arg_arrays(self):
        """Argument arrays in ``list_arguments`` order."""
        return [self.arg_dict[k] for k in self.plan.arg_names]

    @property
    def grad_arrays(self):
        """Gradient arrays in ``list_arguments`` order (None where not computed)."""
        return [self.grad_dict.get(k) for k in self.plan.arg_names]

    @property
    def aux_arrays(self):
        """Auxiliary-state arrays in ``list_auxiliary_states`` order."""
        return [self.aux_dict[k] for k in self.plan.aux_names]

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values into ``arg_dict`` / ``aux_dict`` by name."""
        for params, target, what in ((arg_params, self.arg_dict, "argument"),
                                     (aux_params or {}, self.aux_dict, "aux state")):
            for k, v in params.items():
                if k in target:
                    self._copy_in(target[k], v, f"copy_params_from: {k}")
                elif not allow_extra_params:
                    raise ValueError(f"copy_params_from: {k!r} is not an {what} of the "
                                     "symbol (allow_extra_params=True ignores it)")
        engine.waitall()
        self._synchronize()

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes sharing this one's memory (MXNet's
        ``Executor.reshape``: for variable-length batches and bucketing).

        An argument, gradient or aux state whose new shape has no more elements than
        the old one is a view of the old array's storage (its first elements; the
        same Array when the shape is unchanged), so writes through either executor are
        seen by both; so are the outputs. A larger one is a new array, and only with
        ``allow_up_sizing``. Unless ``partial_shaping``, only the arguments named in
        ``kwargs`` may change shape. The two executors share state: do not run them
        concurrently. See also mxnet.executor.Executor.reshape.

        Raises:
            ValueError: an unknown argument name; a larger array without
                ``allow_up_sizing``; an unnamed argument or aux state whose shape would
                change without ``partial_shaping``.
        """
        plan = self.plan
        shapes = {}
        for k, v in kwargs.items():
            if k not in self.arg_dict:
                raise ValueError(f"reshape: {k!r} is not an argument; arguments are "
                                 f"{list(self.arg_dict)}")
            if not isinstance(v, (tuple, list)):
                raise TypeError(f"reshape: the shape of {k!r} must be a tuple, got {v!r}")
            shapes[k] = tuple(int(d) for d in v)
        # infer from the new shapes; arguments they do not determine keep their shapes
        arg_s, _, aux_s = self._symbol.infer_shape_partial(**shapes)
        new_args = {k: s if s is not None else tuple(self.arg_dict[k].shape)
                    for k, s in zip(self._symbol.list_arguments(), arg_s)}
        new_aux = {k: s if s is not None else tuple(self.aux_dict[k].shape)
                   for k, s in zip(self._symbol.list_auxiliary_states(), aux_s)}

        def share(name, old, shape, named):
            if not (partial_shaping or named or shape == tuple(old.shape)):
                raise ValueError(
                    f"reshape: Shape of unspecified arg: {name} changed (from "
                    f"{tuple(old.shape)} to {shape}). This can cause the new executor to not "
                    "share parameters with the old one. Please check for error in network. "
                    "If this is intended, set partial_shaping=True")
            if _size(shape) > _size(old.shape):
                if not allow_up_sizing:
                    raise ValueError(
                        f"reshape: New shape of arg: {name} is larger than original "
                        f"({tuple(old.shape)} -> {shape}). First making a big executor and "
                        "then down sizing it is more efficient than the reverse. If you "
                        "really want to up size, set allow_up_sizing=True to enable "
                        "allocation of new arrays.")
                return None
            return _view(old, shape, f"reshape: {name}")

        args, grads, aux = {}, {}, {}
        for k, shape in new_args.items():
            old = self.arg_dict[k]
            args[k] = share(k, old, shape, k in shapes)
            if k in self._grads:
                grads[k] = None if args[k] is None else \
                    _view(self._grads[k], shape, f"reshape: gradient of {k}")
        for k, shape in new_aux.items():
            aux[k] = share(k, self.aux_dict[k], shape, False)
        dtypes = {k: a.dtype for k, a in self.arg_dict.items()}
        new_plan = GraphPlan(self._symbol, new_args, dtypes, plan.grad_req, plan.plan_enabled,
                             plan.memory_options, plan.mirror_arg, plan.fusion_arg)
        alloc, xp = _allocator(self._ctx), self._xp

        def fresh(e):
            return new(alloc(xp.zeros, new_plan.shapes[e], new_plan.dtypes[e]))
        args = {k: a if a is not None else fresh(new_plan.arg_entry[k]) for k, a in args.items()}
        aux = {k: a if a is not None else fresh(new_plan.aux_entry[k]) for k, a in aux.items()}
        grads = {k: g if g is not None else fresh(new_plan.arg_entry[k]) for k, g in grads.items()}
        heads = {}          # outputs in the old outputs' storage where they fit (MXNet's pool)
        for e, old in zip(new_plan.heads, self.outputs):
            if old.dtype == new_plan.dtypes[e] and _size(new_plan.shapes[e]) <= old.size \
                    and _contiguous(old):
                heads[e] = _view(old, new_plan.shapes[e], "reshape: output")
        exe = Executor(self._symbol, self._ctx, args, grads, plan.grad_req, aux,
                       plan=new_plan, shared_heads=heads)
        exe._monitor = self._monitor
        moved = getattr(self._monitor and self._monitor[0], "executor_reshaped", None)
        if moved is not None:
            moved(self, exe)
        return exe

    def memory_report(self, categories=True):
        """Bytes used by this executor (see ``GraphPlan.memory_report``): what
        it allocated ('internal_planned', 'arguments' ...) and, with
        ``categories``, the strategy bytes of ``minpy.symbol.plan_report``
        for its graph ('naive' ... 'both', 'mirror', 'lower_bound', 'args',
        'grads')."""
        return self.plan.memory_report(categories)

    def __repr__(self):
        return (f"<Executor {self._symbol!r} on {self._ctx}: {len(self.plan.order)} nodes, "
                f"{len(self._blocks)} blocks>")


def _replay_on_scratch(forward, num_args, xp):
    """``forward`` run on copies of its aux inputs: a recomputed BatchNorm
    gives the same outputs without updating the moving statistics again."""
    scratch = {}

    def replay(rc, attrs, ins, outs):
        aux = []
        for i, a in enumerate(ins[num_args:]):
            s = scratch.get(i)
            if s is None or s.shape != a.shape or s.dtype != a.dtype:
                s = scratch[i] = xp.empty_like(a)
            s[...] = a
            aux.append(s)
        forward(rc, attrs, list(ins[:num_args]) + aux, outs)
    return replay


def device_scope(data):
    """A context manager making the device of backend array ``data`` current (nothing
    on the host): device memory is only usable with its own device current."""
    backend = backend_of(data)
    return backend.device(backend.device_id(data))


def _fill(arr, value):
    """Set every element of Array ``arr`` to ``value`` (its device current), recorded
    as a write."""
    arr._data[...] = value
    mutated(arr)


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _contiguous(arr):
    return bool(arr._data.flags.c_contiguous)


def _view(arr, shape, what):
    """Array ``arr`` itself when it has ``shape``, else an Array viewing the first
    elements of its storage with ``shape`` (MXNet's ``NDArray.Reshape``): writes through
    either are seen by both, and the view orders against ``arr`` on the engine."""
    shape = tuple(shape)
    if tuple(arr.shape) == shape:
        return arr
    if not _contiguous(arr):
        raise ValueError(f"{what}: the bound array is not contiguous, so a smaller array "
                         "cannot share its storage")
    v = new(arr._data.reshape(-1)[:_size(shape)].reshape(shape))
    v._var = var_of(arr)
    return v


def _allocator(ctx):
    backend = backend_for(ctx)

    def alloc(fn, *args):
        with backend.device(ctx.device_id):
            return fn(*args)
    return alloc
