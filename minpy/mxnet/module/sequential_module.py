"""``mx.mod.SequentialModule``: MXNet 1.x's chain of modules, each one's outputs the next
one's data.

    mod1 = mx.mod.Module(act1, label_names=[])
    mod2 = mx.mod.Module(softmax)                    # data_names=['data']
    seq = mx.mod.SequentialModule()
    seq.add(mod1).add(mod2, take_labels=True, auto_wiring=True)
    seq.fit(train_iter, num_epoch=2, optimizer_params={'learning_rate': 0.01})

``bind`` binds each module to the previous one's output shapes (every module after
the first with ``inputs_need_grad`` when training), ``forward`` feeds each module's
outputs to the next, ``backward`` feeds each module's input gradients back as the
previous one's output gradients. Labels go to every module added with
``take_labels=True``; ``auto_wiring=True`` renames the previous outputs to the
module's ``data_names``. ``fit``/``score``/``predict`` are :class:`BaseModule`'s.

Where MXNet's would fail or misreport, this one does the evident thing: a smaller
last batch reshapes every module (the wired names kept), ``get_input_grads`` works
when bound with ``inputs_need_grad``, and MXNet's ``assert``s are errors naming the
method. See also mxnet.module.SequentialModule.
"""
import copy
import logging

from .base_module import BaseModule
from ..initializer import Uniform
from ...nn.io.batch import DataDesc

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """Modules chained one after the other (MXNet's ``SequentialModule``).

    Args:
        logger: where ``fit`` reports.

    See also mxnet.module.SequentialModule.
    """

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Append ``module`` to the chain; returns ``self`` (so ``add`` calls chain).

        Args:
            module: a module (``Module``, ``PythonLossModule``, another chain ...).
            take_labels: the module gets the batch's labels (bind, forward, metric).
            auto_wiring: the previous module's outputs take this module's data names.
        Raises:
            ValueError: an unknown keyword (a typo).
        """
        unknown = sorted(set(kwargs) - self._meta_keys)
        if unknown:
            raise ValueError(f"SequentialModule.add: unknown meta {unknown}, a typo? "
                             f"Known: {sorted(self._meta_keys)}")
        self._modules.append(module)
        self._metas.append(kwargs)
        # a new module: everything must be bound and initialised again
        self.binded = self.params_initialized = self.optimizer_initialized = False
        return self

    def _takes(self, i, key):
        return bool(self._metas[i].get(key, False))

    def _check(self, method, params=True, optimizer=False):
        if not self._modules:
            raise RuntimeError(f"SequentialModule.{method}: the chain is empty; add() "
                               f"modules first")
        self._need(method, params=params, optimizer=optimizer)

    # ------------------------------------------------------------ description
    @property
    def data_names(self):
        """The first module's data names."""
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        """The last module's output names."""
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        """The first module's data shapes."""
        self._check("data_shapes", params=False)
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        """The label shapes given to ``bind`` (None when no module takes labels)."""
        self._check("label_shapes", params=False)
        return self._label_shapes

    @property
    def output_shapes(self):
        """The last module's output shapes."""
        self._check("output_shapes", params=False)
        return self._modules[-1].output_shapes

    # ------------------------------------------------------------ parameters
    def get_params(self):
        """``(arg_params, aux_params)`` of all the modules, merged."""
        self._check("get_params")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialise every module's parameters from the merged ``arg_params``/``aux_params``
        (each module takes its own names) or ``initializer``.

        Nothing happens when already initialised, unless ``force_init``.

        Raises:
            RuntimeError: not bound; a name missing from a given dict (without
                ``allow_missing``).
            ValueError: names no module takes (without ``allow_extra``); two modules
                with a parameter of the same name.
        """
        if self.params_initialized and not force_init:
            return
        self._check("init_params", params=False)
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=True)
        owner = ({}, {})
        for i, module in enumerate(self._modules):
            for known, names in zip(owner, module.get_params()):
                for name in names:
                    if name in known:
                        raise ValueError(
                            f"SequentialModule.init_params: duplicated parameter names: "
                            f"{name!r} in layer {i} ({type(module).__name__}) is already "
                            f"used in layer {known[name]} "
                            f"({type(self._modules[known[name]]).__name__})")
                    known[name] = i
        if not allow_extra:
            inputs = {n for m in self._modules for n in m.data_names}
            inputs |= {d[0] for d in self._label_shapes or []}
            for given, known, what in ((arg_params, owner[0], "arg_params"),
                                       (aux_params, owner[1], "aux_params")):
                extra = sorted(k for k in given or () if k not in known and k not in inputs)
                if extra:
                    raise ValueError(f"SequentialModule.init_params: {what} has {extra}, "
                                     f"which no module takes (allow_extra=True ignores them)")
        self.params_initialized = True

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign the parameters by name (``init_params`` without an initializer)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    # ------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Bind each module to the previous one's output shapes (see module doc).

        Raises:
            ValueError: ``inputs_need_grad`` without ``for_training``; an auto-wired
                module whose number of data names differs from the previous module's
                number of outputs.
            NotImplementedError: ``shared_module``.
        """
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("SequentialModule.bind: inputs_need_grad=True needs "
                             "for_training=True")
        if shared_module is not None:
            raise NotImplementedError("SequentialModule.bind: shared_module is not supported")
        if not self._modules:
            raise RuntimeError("SequentialModule.bind: the chain is empty; add() modules first")
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        anybody_needs_labels = False
        for i, module in enumerate(self._modules):
            my_label_shapes = None
            if self._takes(i, self.META_TAKE_LABELS):
                my_label_shapes = label_shapes
                anybody_needs_labels = True
            if self._takes(i, self.META_AUTO_WIRING):
                my_data_shapes = self._wired(i, my_data_shapes)
            module.bind(data_shapes=my_data_shapes, label_shapes=my_label_shapes,
                        for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            my_data_shapes = module.output_shapes
        if not anybody_needs_labels:
            self._label_shapes = None
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self.binded = True

    def _wired(self, i, shapes):
        """``shapes`` renamed to module ``i``'s data names (auto-wiring)."""
        names = self._modules[i].data_names
        shapes = list(shapes)
        if len(names) != len(shapes):
            raise ValueError(f"SequentialModule: layer {i} ({type(self._modules[i]).__name__}) "
                             f"is auto-wired with data names {list(names)}, but receives "
                             f"{len(shapes)} inputs {[d[0] for d in shapes]}")
        return [DataDesc(name, tuple(d[1])) for name, d in zip(names, shapes)]

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Install the optimizer in every module (ignored, with a warning, if installed)."""
        self._check("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Run the modules in turn; each gets a shallow copy of ``data_batch`` whose
        ``data`` (and ``provide_data``) are the previous module's outputs."""
        self._check("forward")
        data_batch = copy.copy(data_batch)
        last = len(self._modules) - 1
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i == last:
                break
            data_batch.data = module.get_outputs()
            # the next module's view of them: names it knows, shapes of this batch
            names = [d[0] for d in module.output_shapes]
            if self._takes(i + 1, self.META_AUTO_WIRING):
                names = list(self._modules[i + 1].data_names)
            if len(names) != len(data_batch.data):
                raise ValueError(f"SequentialModule.forward: layer {i} gave "
                                 f"{len(data_batch.data)} outputs for {len(names)} names "
                                 f"{names}")
            data_batch.provide_data = [DataDesc(n, tuple(x.shape))
                                       for n, x in zip(names, data_batch.data)]

    def backward(self, out_grads=None):
        """Back-propagate through the modules, last to first."""
        self._check("backward")
        for i in range(len(self._modules) - 1, -1, -1):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        """Update every module's parameters."""
        self._check("update", optimizer=True)
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        """The last module's outputs."""
        self._check("get_outputs")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The first module's input gradients (bind with ``inputs_need_grad=True``)."""
        self._check("get_input_grads")
        if not self.inputs_need_grad:
            raise RuntimeError("SequentialModule.get_input_grads: bind with "
                               "inputs_need_grad=True")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` from every module added with ``take_labels``."""
        self._check("update_metric")
        for i, module in enumerate(self._modules):
            if self._takes(i, self.META_TAKE_LABELS):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Install ``mon`` on every module's executors."""
        self._check("install_monitor", params=False)
        for module in self._modules:
            module.install_monitor(mon)
