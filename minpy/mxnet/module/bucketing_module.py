"""``mx.mod.BucketingModule``: MXNet 1.x's module over one symbol per bucket key.

``sym_gen(bucket_key) -> (symbol, data_names, label_names)`` makes the network
for a key (a sequence length, say); each key gets its own
:class:`~minpy.mxnet.module.Module`, bound the first time a batch of that key
(``data_batch.bucket_key``) arrives, sharing the default bucket's parameter,
gradient and auxiliary-state arrays and its optimizer
(``Module.bind(shared_module=...)``), so one update is seen by every bucket::

    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(num_hidden=200, prefix='lstm_l0_'))
    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        embed = mx.sym.Embedding(data=data, input_dim=vocab, output_dim=200, name='embed')
        stack.reset()
        outputs = stack.unroll(seq_len, inputs=embed, merge_outputs=True)[0]
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, 200)),
                                     num_hidden=vocab, name='pred')
        label = mx.sym.Reshape(mx.sym.Variable('softmax_label'), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name='softmax'), ('data',), ('softmax_label',)
    model = mx.mod.BucketingModule(sym_gen, default_bucket_key=train.default_bucket_key)
    model.fit(train, eval_metric=mx.metric.Perplexity(0), num_epoch=5)

``fit``, ``score`` and ``predict`` come from
:class:`~minpy.mxnet.module.base_module.BaseModule`. Each ``sym_gen`` call counts
automatic node names from 0 (MXNet's ``NameManager``), so unnamed layers get
the same parameter names in every bucket. The parameters are read and set
through the default bucket's module, whose symbol holds every parameter (a
bucket's parameters must be among them).

See also mxnet.module.BucketingModule, :class:`minpy.mxnet.bucketing.BucketingFunction`
(the same for ``minpy.grad``).
"""
import logging
import warnings

import numpy

from ...symbol import load as load_symbol
from ...symbol.format.params import load as nd_load, save as nd_save
from ...symbol.registry import fresh_names
from ...nn.checkpoint import load_params
from .base_module import BaseModule
from ..initializer import Uniform
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """A module whose symbol depends on each batch's ``bucket_key`` (module doc).

    Args:
        sym_gen: ``sym_gen(bucket_key) -> (symbol, data_names, label_names)``.
        default_bucket_key: the key bound first (usually the largest bucket), whose
            module owns the parameters.
        logger, context, work_load_list, fixed_param_names: as :class:`Module`.
        state_names, group2ctxs, compression_params: not supported (as Module).
    Raises:
        ValueError: no ``default_bucket_key``; data or fixed parameter names that are
            not arguments of the default bucket's symbol.
        NotImplementedError: ``state_names``, ``group2ctxs``, ``compression_params``.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule: default_bucket_key is required")
        for name, value in (("state_names", state_names), ("group2ctxs", group2ctxs),
                            ("compression_params", compression_params)):
            if value:
                raise NotImplementedError(f"BucketingModule: {name} is not supported")
        if not callable(sym_gen):
            raise TypeError(f"BucketingModule: sym_gen must be a function of the bucket key, "
                            f"got {type(sym_gen).__name__}")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, _ = self._call_sym_gen(default_bucket_key)
        self._fixed_param_names = list(fixed_param_names or [])
        args = symbol.list_arguments()
        for names, what in ((data_names or [], "data"), (self._fixed_param_names, "fixed_param")):
            absent = [n for n in names if n not in args]
            if absent:
                raise ValueError(f"BucketingModule: {what}_names {absent} are not arguments of "
                                 f"the default bucket's symbol; its arguments are {args}")
        self._context = context
        self._work_load_list = work_load_list
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, bucket_key):
        with fresh_names():
            out = self._sym_gen(bucket_key)
        if not (isinstance(out, (tuple, list)) and len(out) == 3):
            raise TypeError(f"BucketingModule: sym_gen({bucket_key!r}) must return (symbol, "
                            f"data_names, label_names), got {type(out).__name__}")
        return out

    def _new_module(self, bucket_key):
        symbol, data_names, label_names = self._call_sym_gen(bucket_key)
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names)

    @property
    def _default_module(self):
        """The default bucket's module: it holds every parameter, shared by the others."""
        return self._buckets.get(self._default_bucket_key, self._curr_module)

    # ------------------------------------------------------------ description
    @property
    def data_names(self):
        """The current bucket's data names (the default bucket's before binding)."""
        if self.binded:
            return self._curr_module.data_names
        return list(self._call_sym_gen(self._default_bucket_key)[1])

    @property
    def output_names(self):
        """The current bucket's output names (the default bucket's before binding)."""
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        """The current bucket's ``[DataDesc]`` of its data."""
        self._need("data_shapes", params=False)
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        """The current bucket's ``[DataDesc]`` of its labels (None without)."""
        self._need("label_shapes", params=False)
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        """The current bucket's ``[(name, shape)]`` of its outputs."""
        self._need("output_shapes", params=False)
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The current bucket's symbol."""
        self._need("symbol", params=False)
        return self._curr_module.symbol

    # ------------------------------------------------------------ parameters
    def get_params(self):
        """``(arg_params, aux_params)``: the parameters shared by every bucket (CPU
        copies, brought up to date). See also Module.get_params."""
        self._need("get_params", bound=False)
        mod = self._default_module
        mod._params_dirty = mod._params_dirty or self._params_dirty
        params = mod.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter values by name, for every bucket (see Module.set_params)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._need("set_params", params=False)
        self._default_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                        force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the shared parameters (nothing when already initialized, unless
        ``force_init``). See also Module.init_params."""
        if self.params_initialized and not force_init:
            return
        self._need("init_params", params=False)
        self._default_module.init_params(initializer=initializer, arg_params=arg_params,
                                         aux_params=aux_params, allow_missing=allow_missing,
                                         force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        """Not supported: minpy's modules have no ``state_names``."""
        raise NotImplementedError("BucketingModule.get_states: state_names are not supported")

    def set_states(self, states=None, value=None):
        """Not supported: minpy's modules have no ``state_names``."""
        raise NotImplementedError("BucketingModule.set_states: state_names are not supported")

    # ------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Bind the default bucket's module to these shapes (the default bucket's); the
        other buckets are bound when first switched to. Parameters already set are
        kept. Arguments as Module.bind.

        Raises:
            NotImplementedError: ``shared_module`` (as MXNet).
        """
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise NotImplementedError("BucketingModule.bind: shared_module is not supported")
        module = self._buckets.get(self._default_bucket_key)
        if module is None:
            module = self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        self.binded = True
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make ``bucket_key``'s module the current one, binding it (to ``data_shapes``,
        ``label_shapes``, sharing the default bucket's arrays) the first time.

        Raises:
            RuntimeError: not bound.
            ValueError: a new bucket without ``data_shapes``.
        """
        self._need("switch_bucket", params=False)
        module = self._buckets.get(bucket_key)
        if module is None or not module.binded:
            if data_shapes is None:
                raise ValueError(f"BucketingModule.switch_bucket: bucket {bucket_key!r} is "
                                 f"not bound yet; give its data_shapes")
            if module is None:
                module = self._new_module(bucket_key)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Install the optimizer on the default bucket's module; every bucket uses it
        (``borrow_optimizer``). Arguments as Module.init_optimizer."""
        self._need("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        default = self._default_module
        default.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not default:
                mod.borrow_optimizer(default)
        self.optimizer_initialized = True

    # ------------------------------------------------------------ computation
    @staticmethod
    def _bucket_key(method, data_batch):
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            raise ValueError(f"BucketingModule.{method}: the batch has no bucket_key (use a "
                             f"bucketing iterator such as mx.rnn.BucketSentenceIter, or set "
                             f"DataBatch(bucket_key=...))")
        return key

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind ``data_batch``'s bucket if it is new (then switch back)."""
        self._need("prepare")
        original = self._curr_bucket_key
        self.switch_bucket(self._bucket_key("prepare", data_batch),
                           getattr(data_batch, "provide_data", None),
                           getattr(data_batch, "provide_label", None))
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        """Switch to ``data_batch.bucket_key``'s module and run it (see Module.forward)."""
        self._need("forward")
        self.switch_bucket(self._bucket_key("forward", data_batch),
                           getattr(data_batch, "provide_data", None),
                           getattr(data_batch, "provide_label", None))
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        """The current bucket's backward (see Module.backward)."""
        self._need("backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        """Update the shared parameters from the current bucket's gradients."""
        self._need("update", optimizer=True)
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        """The current bucket's outputs of the last forward."""
        self._need("get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The current bucket's input gradients (bind with ``inputs_need_grad``)."""
        self._need("get_input_grads")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Add the current bucket's last outputs against ``labels`` to ``eval_metric``."""
        self._need("update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Install ``mon`` on every bucket's module (and on those bound later)."""
        self._need("install_monitor", params=False)
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    # ------------------------------------------------------------ checkpoints
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Write ``prefix-%04d.params``, ``prefix-KEY-symbol.json`` for every bound bucket
        and ``prefix.buckets`` (the keys, an int32 NDArray file), as MXNet.

        Raises:
            RuntimeError: no bucket is bound.
        """
        if not self._buckets:
            raise RuntimeError("BucketingModule.save_checkpoint: an empty BucketingModule "
                               "cannot be saved; bind it first")
        self.save_params(f"{prefix}-{epoch:04d}.params")
        for bucket_key in self._buckets:
            symbol, _, _ = self._call_sym_gen(bucket_key)
            symbol.save(f"{prefix}-{bucket_key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd_save(f"{prefix}.buckets", numpy.array(list(self._buckets), dtype=numpy.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from :meth:`save_checkpoint`'s files (its parameters set at
        ``bind``).

        Args:
            sym_gen, default_bucket_key: as the constructor (required).
            **kwargs: the other constructor arguments.
        Raises:
            ValueError: no ``sym_gen`` or ``default_bucket_key``.
        """
        if sym_gen is None or default_bucket_key is None:
            raise ValueError("BucketingModule.load: sym_gen and default_bucket_key are "
                             "required")
        buckets = nd_load(f"{prefix}.buckets")
        keys = [int(k) for k in buckets[0].asnumpy().astype("int32")]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for bucket_key in keys:
            _, data_names, label_names = mod._call_sym_gen(bucket_key)
            symbol = load_symbol(f"{prefix}-{bucket_key}-symbol.json")
            mod._buckets[bucket_key] = Module(symbol, data_names, label_names, **kwargs)
        arg_params, aux_params = load_params(prefix, epoch)
        mod._set_loaded(arg_params, aux_params, "load")
        return mod

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from ``{bucket_key: symbol}`` and shared parameters.

        Raises:
            ValueError: any of the arguments missing.
        """
        for name, value in (("sym_dict", sym_dict), ("arg_params", arg_params),
                            ("aux_params", aux_params),
                            ("default_bucket_key", default_bucket_key)):
            if value is None:
                raise ValueError(f"BucketingModule.load_dict: {name} is required")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for bucket_key, loaded_sym in sym_dict.items():
            _, data_names, label_names = mod._call_sym_gen(bucket_key)
            mod._buckets[bucket_key] = Module(loaded_sym, data_names, label_names, **kwargs)
        mod._set_loaded(arg_params, aux_params, "load_dict")
        return mod

    def _set_loaded(self, arg_params, aux_params, method):
        default = self._buckets.get(self._default_bucket_key)
        if default is None:
            raise ValueError(f"BucketingModule.{method}: no symbol for the default bucket key "
                             f"{self._default_bucket_key!r}; buckets are {list(self._buckets)}")
        self._curr_module = default
        default._arg_params, default._aux_params = dict(arg_params), dict(aux_params)
        default.params_initialized = True
        self.params_initialized = True
