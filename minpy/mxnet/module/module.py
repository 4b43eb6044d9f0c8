"""``minpy.mxnet.module``: MXNet 1.x's ``Module`` — a symbol bound, initialised and trained.

    mod = Module(net, data_names=['data'], label_names=['softmax_label'])
    mod.fit(train_iter, eval_data=val_iter, optimizer='sgd',
            optimizer_params={'learning_rate': 0.1, 'momentum': 0.9}, num_epoch=3)
    prob = mod.predict(val_iter)

The symbol's arguments split into inputs (``data_names``, ``label_names``) and
parameters (the rest). ``bind`` makes one :class:`~minpy.symbol.Executor`
(``simple_bind``; inputs bound as float32, MXNet's default) on one context, or
one per context over slices of each batch (:mod:`minpy.mxnet.module.executor_group`:
data parallel, gradients summed through a KVStore);
the module keeps its own CPU copies of the parameters (``get_params``), synced
from the executor after updates, as MXNet does. A batch whose data shape
differs from the bound one (a smaller last batch, another image size)
reshapes the executor, sharing the parameter arrays; a shape that would change
a parameter's shape is an error. Updates follow MXNet's optimizer semantics
(:mod:`minpy.mxnet.optimizer`: ``rescale_grad = 1 / batch_size``, no weight
decay on biases); a ``minpy.nn.optim`` optimizer object is accepted too.
Checkpoints use ``minpy.model.save_checkpoint``/``load_checkpoint``. The
parameter and optimizer methods live in :mod:`minpy.mxnet.module.module_params`.
"""
import logging
import warnings
from collections import OrderedDict

import numpy

from ...dispatch.context import Context, cpu
from ...symbol import Symbol
from .base_module import BaseModule
from ...nn.io.batch import DataBatch, DataDesc
from ...nn.checkpoint import load_checkpoint, save_checkpoint
from .executor_group import ExecutorGroup, batch_axis, bind_shared
from .module_params import ParamsMixin

__all__ = ["Module", "BaseModule", "DataBatch", "DataDesc"]

_GRAD_REQS = ("write", "add", "null")


def _contexts(context, work_load_list):
    """The list of Contexts (MXNet: one executor per context) and their work loads."""
    if context is None:
        context = cpu()
    contexts = list(context) if isinstance(context, (list, tuple)) else [context]
    if not contexts:
        raise ValueError("Module: context is an empty list")
    for c in contexts:
        if not isinstance(c, Context):
            raise TypeError(f"Module: context must be a minpy Context (minpy.cpu(), "
                            f"minpy.gpu(i)) or a list of them, got {c!r}")
    if work_load_list is None:
        work_load_list = [1] * len(contexts)
    if len(work_load_list) != len(contexts):
        raise ValueError(f"Module: work_load_list needs one entry per context, got "
                         f"{work_load_list!r} for {len(contexts)} contexts")
    return contexts, list(work_load_list)


def _descs(method, names, shapes, what, strict):
    """[DataDesc] from ``[(name, shape)]`` or objects with ``.name``/``.shape`` (None stays
    None), checked against the module's ``names``."""
    descs = None
    if shapes is not None:
        descs = []
        for item in shapes:
            try:
                name, shape = ((item.name, item.shape) if hasattr(item, "name") else item)
                # the layout says where the batch axis is (a 'TN' bucketing iterator's is 1)
                descs.append(DataDesc(name, shape, layout=getattr(item, "layout", None)
                                      or "NCHW"))
            except (TypeError, ValueError):
                raise TypeError(f"Module.{method}: {what}_shapes must hold (name, shape) pairs "
                                f"or DataDesc objects, got {item!r}") from None
    given = [d.name for d in descs or []]
    if sorted(given) != sorted(names):
        msg = (f"Module.{method}: {what}_shapes name {given}, but the module's {what}_names "
               f"are {list(names)}")
        if strict:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)
    return descs


class Module(ParamsMixin, BaseModule):
    """A module over one Symbol on one or several contexts (MXNet's ``mx.mod.Module``).

    Args:
        symbol: the network (a ``minpy.symbol.Symbol``).
        data_names, label_names: its arguments fed from ``batch.data`` /
            ``batch.label`` (None: none).
        logger: where ``fit`` logs (default: the ``logging`` module).
        context: a Context, or a list of them (default ``minpy.cpu()``): several
            split each batch among them (data parallel, as MXNet).
        work_load_list: None (equal), or one weight per context for its share.
        fixed_param_names: parameters bound without gradients (never updated).
    Raises:
        ValueError: a data name or fixed parameter name that is not an argument
            of the symbol (a label name that is not only warns, as MXNet).
        NotImplementedError: ``state_names``, ``group2ctxs``, ``compression_params``.
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if not isinstance(symbol, Symbol):
            raise TypeError(f"Module: symbol must be a minpy.symbol.Symbol, got "
                            f"{type(symbol).__name__}")
        for name, value in (("state_names", state_names), ("group2ctxs", group2ctxs),
                            ("compression_params", compression_params)):
            if value:
                raise NotImplementedError(f"Module: {name} is not supported")
        self._contexts, self._work_load_list = _contexts(context, work_load_list)
        self._context = self._contexts[0]
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        args = symbol.list_arguments()
        for names, what, strict in ((self._data_names, "data", True),
                                    (self._label_names, "label", False),
                                    (self._fixed_param_names, "fixed_param", True)):
            absent = [n for n in names if n not in args]
            if absent:
                msg = (f"Module: {what}_names {absent} are not arguments of the symbol; its "
                       f"arguments are {args}")
                if strict:
                    raise ValueError(msg)
                warnings.warn(msg, stacklevel=2)
        inputs = set(self._data_names) | set(self._label_names)
        self._param_names = [a for a in args if a not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = self._aux_params = None
        self._params_dirty = False
        self._optimizer = self._preload_opt_states = None
        self._exec = self._data_shapes = self._label_shapes = None

    @property
    def _multi(self):
        """Bound over several contexts (an ExecutorGroup)."""
        return isinstance(self._exec, ExecutorGroup)

    # ------------------------------------------------------------ description
    data_names = property(lambda self: self._data_names, doc="The data input names.")
    label_names = property(lambda self: self._label_names, doc="The label input names.")
    output_names = property(lambda self: self._output_names, doc="The symbol's output names.")

    @property
    def data_shapes(self):
        """``[DataDesc(name, shape)]`` of the bound data inputs."""
        self._need("data_shapes", params=False)
        return self._data_shapes

    @property
    def label_shapes(self):
        """``[DataDesc(name, shape)]`` of the bound labels (None when bound without)."""
        self._need("label_shapes", params=False)
        return self._label_shapes

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the outputs."""
        self._need("output_shapes", params=False)
        return [(n, tuple(o.shape)) for n, o in zip(self._output_names, self._exec.outputs)]

    # ------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Make the executor for these input shapes (ignored, with a warning, if bound).

        Args:
            data_shapes, label_shapes: ``[(name, shape)]`` or DataDesc-like objects
                (``iterator.provide_data`` / ``provide_label``); labels may be None.
            for_training: bind gradients of the parameters (else none at all).
            inputs_need_grad: also the gradients of the data inputs.
            force_rebind: rebind even if bound (the parameters are kept).
            shared_module: a bound Module with initialized parameters (bucketing: the
                default bucket's) whose parameter, gradient and aux-state arrays this
                module's executor uses as its own, as do its ``get_params`` dicts and
                its optimizer (when it has one); every parameter of this symbol must be
                one of its, with the same shape.
            grad_req: ``'write'``, ``'add'`` or ``'null'`` for the parameters, or a
                dict name -> req for every argument (absent names get ``'null'``).
        Raises:
            ValueError: data names that differ from ``data_names``, a bad
                ``grad_req``, ``inputs_need_grad`` without ``for_training``, shapes
                the symbol cannot take.
        """
        if force_rebind and self.binded:
            if self._params_dirty:
                self._sync_params_from_exec()
            self._exec, self.binded = None, False
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            self._check_shared(shared_module)
        if inputs_need_grad and not for_training:
            raise ValueError("Module.bind: inputs_need_grad=True needs for_training=True")
        data = _descs("bind", self._data_names, data_shapes, "data", True)
        labels = _descs("bind", self._label_names, label_shapes, "label", False)
        args = self._symbol.list_arguments()
        shapes = {d.name: d.shape for d in data + (labels or []) if d.name in args}
        reqs = self._grad_reqs(args, for_training, inputs_need_grad, grad_req)
        types = {k: numpy.float32 for k in shapes}
        axes = {d.name: batch_axis(d) for d in data + (labels or []) if d.name in args}
        try:
            exe = self._make_exec(shapes, axes, reqs, types, shared_module)
        except ValueError as e:
            raise ValueError(f"Module.bind: cannot bind the symbol to input shapes {shapes}: "
                             f"{e}") from e
        self._exec, self._data_shapes, self._label_shapes = exe, data, labels
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        if shared_module is not None:     # MXNet: the very dicts of the shared module
            self._arg_params, self._aux_params = shared_module._arg_params, \
                shared_module._aux_params
            self.params_initialized, self._params_dirty = True, False
            if shared_module.optimizer_initialized:
                self.borrow_optimizer(shared_module)
        elif self.params_initialized:       # a rebind, or parameters from Module.load
            self._arg_params = self._own_copies("bind", self._param_names, self._arg_params,
                                                exe.arg_dict, "arg_params")
            self._aux_params = self._own_copies("bind", self._aux_names, self._aux_params,
                                                exe.aux_dict, "aux_params")
            exe.copy_params_from(self._arg_params, self._aux_params)
            self._params_dirty = False
        else:
            self._arg_params = {n: self._zeros(exe.arg_dict[n]) for n in self._param_names}
            self._aux_params = {n: self._zeros(exe.aux_dict[n]) for n in self._aux_names}
        self.binded = True

    def _check_shared(self, shared):
        if not isinstance(shared, Module):
            raise TypeError(f"Module.bind: shared_module must be a Module, got "
                            f"{type(shared).__name__}")
        if not (shared.binded and shared.params_initialized):
            raise RuntimeError("Module.bind: shared_module must be bound with its parameters "
                               "initialized")
        if shared._multi != (len(self._contexts) > 1):
            raise ValueError(f"Module.bind: shared_module runs on {len(shared._contexts)} "
                             f"contexts, this module on {len(self._contexts)}")

    def _make_exec(self, shapes, axes, reqs, types, shared_module):
        """The Executor (one context) or ExecutorGroup; with ``shared_module``, bound to its
        parameter, gradient and aux arrays (bucketing)."""
        params = set(self._param_names)
        if len(self._contexts) == 1:
            if shared_module is not None:
                return bind_shared(self._symbol, self._context, shapes, reqs, types,
                                   shared_module._exec, params)
            return self._symbol.simple_bind(self._context, grad_req=reqs, type_dict=types,
                                            **shapes)
        if shared_module is not None:
            return ExecutorGroup.shared(self._symbol, self._contexts, self._work_load_list,
                                        shapes, axes, reqs, types, shared_module._exec, params)
        return ExecutorGroup(self._symbol, self._contexts, self._work_load_list, shapes, axes,
                             reqs, types)

    def _grad_reqs(self, args, for_training, inputs_need_grad, grad_req):
        if isinstance(grad_req, dict):
            reqs = {a: grad_req.get(a, "null") for a in args}
        elif isinstance(grad_req, str):
            reqs = {}
            for a in args:
                if a in self._data_names:
                    reqs[a] = "write" if inputs_need_grad else "null"
                elif a in self._label_names or a in self._fixed_param_names:
                    reqs[a] = "null"
                else:
                    reqs[a] = grad_req
        else:
            raise TypeError(f"Module.bind: grad_req must be a str or a dict, got "
                            f"{type(grad_req).__name__}")
        bad = {k: v for k, v in reqs.items() if v not in _GRAD_REQS}
        if bad:
            raise ValueError(f"Module.bind: grad_req values must be one of {_GRAD_REQS}, got "
                             f"{bad}")
        return reqs if for_training else dict.fromkeys(args, "null")

    def reshape(self, data_shapes, label_shapes=None):
        """Rebind for new input shapes, keeping the parameters (shared arrays).

        Raises:
            ValueError: shapes the symbol cannot take, or that would change a
                parameter's shape (naming the parameters and both shapes).
        """
        self._need("reshape", params=False)
        data = _descs("reshape", self._data_names, data_shapes, "data", True)
        labels = label_shapes and [d for d in _descs("reshape", self._label_names,
                                                     label_shapes, "label", False)
                                   if d.name in self._exec.arg_dict]
        shapes = {d.name: d.shape for d in data + (labels or [])}
        old = {d.name: d.shape for d in self._data_shapes}
        try:
            arg_shapes, _, aux_shapes = self._symbol.infer_shape_partial(**shapes)
        except ValueError as e:
            raise ValueError(f"Module.reshape: the symbol bound to data shapes {old} cannot "
                             f"take input shapes {shapes}: {e}") from e
        new = dict(zip(self._symbol.list_arguments(), arg_shapes))
        new.update(zip(self._aux_names, aux_shapes))
        changed = {n: (tuple(a.shape), new[n])
                   for n, a in list(self._exec.arg_dict.items()) + list(self._exec.aux_dict.items())
                   if n in self._arg_params or n in self._aux_params
                   if new.get(n) is not None and tuple(new[n]) != tuple(a.shape)}
        if changed:
            raise ValueError(f"Module.reshape: input shapes {shapes} would change parameter "
                             f"shapes {changed} (bound to data shapes {old})")
        self._exec = self._exec.reshape(partial_shaping=True, allow_up_sizing=True, **shapes)
        self._data_shapes = data
        if self._label_shapes is not None:
            self._label_shapes = [DataDesc(d.name, self._exec.arg_dict[d.name].shape)
                                  if d.name in self._exec.arg_dict else d
                                  for d in self._label_shapes]

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Run the network on ``data_batch`` (anything with a ``data`` list, and
        optionally ``label``, ``provide_data``, ``provide_label``).

        A batch whose data shapes differ from the bound ones reshapes the module.
        ``is_train`` None means ``for_training``.

        Raises:
            RuntimeError: not bound / parameters not initialized.
            ValueError: a wrong number of data arrays, or shapes the module cannot
                reshape to.
        """
        self._need("forward")
        data = getattr(data_batch, "data", None)
        if not isinstance(data, (list, tuple)):
            raise TypeError(f"Module.forward: data_batch.data must be a list of arrays, got "
                            f"{type(data).__name__}")
        names = [d.name for d in self._data_shapes]
        if len(data) != len(names):
            raise ValueError(f"Module.forward: the batch has {len(data)} data arrays, the "
                             f"module is bound to {len(names)}: {names}")
        labels = getattr(data_batch, "label", None) or []
        shapes = tuple(tuple(d.shape) for d in data)
        if shapes != tuple(d.shape for d in self._data_shapes):
            self._reshape_to(data_batch, shapes, labels)
        inputs = dict(zip(names, data))
        if self._label_shapes and labels:
            inputs.update((d.name, a) for d, a in zip(self._label_shapes, labels)
                          if d.name in self._exec.arg_dict)
        try:
            self._exec.forward(is_train=self.for_training if is_train is None else is_train,
                               **inputs)
        except ValueError as e:
            raise ValueError(f"Module.forward: {e}") from e

    def _reshape_to(self, data_batch, shapes, labels):
        new_data = getattr(data_batch, "provide_data", None) or \
            [DataDesc(d.name, s) for d, s in zip(self._data_shapes, shapes)]
        new_labels = getattr(data_batch, "provide_label", None)
        if new_labels:
            new_labels = [d for d in new_labels if d[0] in self._label_names] or None
        elif labels and self._label_shapes:
            new_labels = [DataDesc(d.name, a.shape) for d, a in zip(self._label_shapes, labels)]
        try:
            self.reshape(new_data, new_labels or None)
        except ValueError as e:
            raise ValueError(f"Module.forward: a batch of data shapes {list(shapes)}: {e}") from e

    def backward(self, out_grads=None):
        """Back-propagate from the outputs (``out_grads``: one per output, needed only for
        outputs that are not loss layers)."""
        self._need("backward")
        if not self.for_training:
            raise RuntimeError("Module.backward: the module is bound with for_training=False; "
                               "bind(..., for_training=True, force_rebind=True) first")
        self._exec.backward(out_grads)

    def update(self):
        """Update the parameters from the last backward's gradients with the optimizer."""
        self._need("update", optimizer=True)
        grads = self._exec.execs[0].grad_dict if self._multi else self._exec.grad_dict
        names = [n for n in self._param_names if n in grads]
        self._params_dirty = True
        if self._multi:
            self._update_through_kvstore(names, [self._exec.param_arrays(n) for n in names],
                                         [self._exec.param_grads(n) for n in names])
            return
        weights, grads = [self._exec.arg_dict[n] for n in names], [grads[n] for n in names]
        if self._kvstore is not None:
            self._update_through_kvstore(names, weights, grads)
        else:
            self._optimizer.update(names, weights, grads)

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward (the executor's arrays, overwritten by the next
        forward); ``merge_multi_context=False`` gives ``[[out], ...]``."""
        self._need("get_outputs")
        if self._multi:
            return (list(self._exec.outputs) if merge_multi_context
                    else self._exec.outputs_per_device)
        outs = list(self._exec.outputs)
        return outs if merge_multi_context else [[o] for o in outs]

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._need("get_input_grads")
        if not self.inputs_need_grad:
            raise RuntimeError("Module.get_input_grads: bind with inputs_need_grad=True")
        if self._multi and not merge_multi_context:
            return [[e.grad_dict[d.name] for e in self._exec.execs] for d in self._data_shapes]
        grads = [self._exec.grad_dict[d.name] for d in self._data_shapes]
        return grads if merge_multi_context else [[g] for g in grads]

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Add the last forward's outputs against ``labels`` (``batch.label``) to
        ``eval_metric``, by name (``update_dict``)."""
        self._need("update_metric", params=False)
        names = [d.name for d in self._label_shapes or []]
        eval_metric.update_dict(OrderedDict(zip(names, labels)),
                                OrderedDict(zip(self._output_names, self._exec.outputs)))

    def install_monitor(self, mon):
        """Install ``mon`` (an ``mx.monitor.Monitor``) on the bound executor, or on each
        executor of several contexts (MXNet's ``install_monitor``); kept on reshapes.

        Raises:
            RuntimeError: not bound.
        """
        self._need("install_monitor", params=False)
        for exe in self._exec.execs if self._multi else [self._exec]:
            mon.install(exe)

    # ------------------------------------------------------------ checkpoints
    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` (and with
        ``save_optimizer_states``, ``prefix-%04d.states``)."""
        arg_params, aux_params = self.get_params()
        save_checkpoint(prefix, epoch, self._symbol, arg_params, aux_params)
        logging.info('Saved checkpoint to "%s-%04d.params"', prefix, epoch)
        if save_optimizer_states:
            self.save_optimizer_states(f"{prefix}-{epoch:04d}.states")

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module over the checkpoint ``prefix``/``epoch``, its parameters set at ``bind``
        (and the optimizer state at ``init_optimizer`` with ``load_optimizer_states``).

        Args:
            **kwargs: the other Module arguments (``data_names``, ``context`` ...).
        """
        sym, arg_params, aux_params = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params, mod._aux_params = dict(arg_params), dict(aux_params)
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{epoch:04d}.states"
        return mod
