"""``mx.model``: MXNet 1.x's checkpoint functions and its old ``FeedForward`` estimator.

``save_checkpoint``/``load_checkpoint``/``load_params`` are
:mod:`minpy.nn.checkpoint`'s (MXNet's file formats). :class:`FeedForward` is
MXNet 1.9.1's deprecated estimator (``model = FeedForward(net, num_epoch=10,
learning_rate=0.1); model.fit(X, y); model.predict(X)``) as a thin face over
:class:`minpy.mxnet.module.Module`: the same training loop as MXNet's
``_train_multi_device`` (``epoch_size`` batches per epoch, the iterator reset only
when exhausted, ``Epoch[%d] ...`` log lines), parameters kept as NDArrays in
``arg_params``/``aux_params``.

See also mxnet.model.
"""
import logging
import time
import warnings

import numpy

from ..core.array import Array
from ..dispatch.context import Context, cpu
from ..nn.checkpoint import load_checkpoint, load_params, save_checkpoint
from ..nn.io import DataDesc, DataIter, NDArrayIter
from ..symbol import Symbol
from . import metric as _metric
from . import optimizer as _opt
from .callback import BatchEndParam, LogValidationMetricsCallback
from .initializer import Uniform
from .module import Module
from .module.base_module import _call_all

__all__ = ["FeedForward", "BatchEndParam", "save_checkpoint", "load_checkpoint",
           "load_params"]


class FeedForward:
    """MXNet 1.x's feed-forward estimator (deprecated there in favour of ``Module``).

    Args:
        symbol: the network, or ``sym_gen(bucket_key) -> Symbol`` (called with the
            training iterator's ``default_bucket_key``).
        ctx: a Context or a list of them (data parallel); default ``cpu()``.
        num_epoch: epochs ``fit`` runs (up to, from ``begin_epoch``).
        epoch_size: batches per epoch (default: the whole iterator).
        optimizer: a name or an ``mx.optimizer.Optimizer``.
        initializer: for parameters not given in ``arg_params``/``aux_params``.
        numpy_batch_size: batch size when ``fit``/``predict`` get arrays.
        arg_params, aux_params: initial parameters (dicts of NDArrays).
        allow_extra_params: drop entries of those dicts the symbol lacks (else kept).
        begin_epoch: the first epoch's number.
        **kwargs: optimizer keywords (``learning_rate``, ``momentum``, ``wd`` ...).

    See also mxnet.model.FeedForward.
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None,
                 aux_params=None, allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn("mxnet.model.FeedForward has been deprecated. Please use "
                      "mxnet.mod.Module instead.", DeprecationWarning, stacklevel=2)
        if isinstance(symbol, Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise TypeError(f"FeedForward: symbol must be a Symbol or sym_gen(bucket_key), "
                            f"got {type(symbol).__name__}")
        self.arg_params, self.aux_params = arg_params, aux_params
        self.allow_extra_params = allow_extra_params
        if self.symbol is not None:
            self._drop_extra()
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = list(ctx)
        self.num_epoch, self.epoch_size = num_epoch, epoch_size
        self.kwargs = dict(kwargs)
        self.optimizer, self.initializer = optimizer, initializer
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self._pred_exec = None

    def _drop_extra(self):
        if not self.allow_extra_params:
            return
        if self.arg_params:
            names = set(self.symbol.list_arguments())
            self.arg_params = {k: v for k, v in self.arg_params.items() if k in names}
        if self.aux_params:
            names = set(self.symbol.list_auxiliary_states())
            self.aux_params = {k: v for k, v in self.aux_params.items() if k in names}

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pred_exec"] = None
        return state

    # ------------------------------------------------------------ data
    def _init_iter(self, X, y, is_train):
        if isinstance(X, (numpy.ndarray, Array)):
            if y is None:
                if is_train:
                    raise ValueError("y must be specified when X is numpy.ndarray")
                y = numpy.zeros(X.shape[0])
            if not isinstance(y, (numpy.ndarray, Array)):
                raise TypeError("y must be ndarray when X is numpy.ndarray")
            if X.shape[0] != y.shape[0]:
                raise ValueError("The numbers of data points and labels not equal")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.flatten()
            if y.ndim != 1:
                raise ValueError("Label must be 1D or 2D (with 2nd dimension being 1)")
            batch = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return NDArrayIter(X, y, batch, shuffle=True, last_batch_handle="roll_over")
            return NDArrayIter(X, y, batch, shuffle=False)
        if not isinstance(X, DataIter):
            raise TypeError("X must be DataIter, NDArray or numpy.ndarray")
        return X

    def _init_eval_iter(self, eval_data):
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            if eval_data[0] is None:
                raise ValueError("Eval data is NONE")
            if eval_data[1] is None and isinstance(eval_data[0], DataIter):
                return eval_data[0]
            data, label = (numpy.array(v) if isinstance(v, list) else v for v in eval_data)
            return self._init_iter(data, label, is_train=True)
        if not isinstance(eval_data, DataIter):
            raise TypeError("Eval data must be DataIter, or NDArray/numpy.ndarray/list pair "
                            "(i.e. tuple/list of length 2)")
        return eval_data

    # ------------------------------------------------------------ training
    def _module(self, data, logger):
        data_names = [d[0] for d in data.provide_data]
        label_names = [d[0] for d in (data.provide_label or [])]
        return Module(self.symbol, data_names=data_names, label_names=label_names,
                      logger=logger or logging, context=self.ctx)

    def _optimizer(self, data, kvstore):
        inputs = {d[0] for d in list(data.provide_data) + list(data.provide_label or [])}
        names = [n for n in self.symbol.list_arguments() if n not in inputs]
        if isinstance(self.optimizer, str):
            params = dict(self.kwargs)
            # the names give MXNet's default of no weight decay on biases
            params.setdefault("param_idx2name", dict(enumerate(names)))
            batch_size = data.batch_size
            kv_type = kvstore if isinstance(kvstore, str) else getattr(kvstore, "type", "")
            if kv_type and "dist" in kv_type and "_async" not in kv_type:
                batch_size *= kvstore.num_workers
            params.setdefault("rescale_grad", 1.0 / batch_size)
            return _opt.create(self.optimizer, sym=self.symbol, **params)
        if isinstance(self.optimizer, _opt.Optimizer):
            if not self.optimizer.idx2name:
                self.optimizer.idx2name = dict(enumerate(names))
            return self.optimizer
        raise TypeError(f"FeedForward.fit: optimizer must be a name or an "
                        f"mx.optimizer.Optimizer, got {type(self.optimizer).__name__}")

    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
            monitor=None, eval_end_callback=LogValidationMetricsCallback(),
            eval_batch_end_callback=None):
        """Train for epochs ``begin_epoch .. num_epoch - 1``.

        Args:
            X: a DataIter, or an array of samples (then ``y``, the labels, too).
            y: labels for an array ``X`` (1-D, or 2-D with one column).
            eval_data: a DataIter or a ``(data, label)`` pair, scored after each epoch.
            eval_metric: the metric (a name, an EvalMetric or a function).
            epoch_end_callback: ``cb(epoch, symbol, arg_params, aux_params)``.
            batch_end_callback: ``cb(BatchEndParam)`` after each batch.
            kvstore: ``'local'``, a kind or a KVStore (as ``Module.fit``).
            logger: where the ``Epoch[..]`` lines go (default: ``logging``).
            work_load_list: relative work per context.
            monitor: an ``mx.monitor.Monitor`` installed on the executors.
            eval_end_callback, eval_batch_end_callback: called while scoring.
        Raises:
            ValueError: no ``num_epoch``; mismatched ``X``/``y``.

        See also mxnet.model.FeedForward.fit.
        """
        if self.num_epoch is None:
            raise ValueError("FeedForward.fit: num_epoch is required")
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen is not None:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._drop_extra()
        logger = logger or logging
        mod = self._module(data, logger)
        if work_load_list is not None:
            mod = Module(self.symbol, data_names=mod.data_names, label_names=mod.label_names,
                         logger=logger, context=self.ctx, work_load_list=work_load_list)
        mod.bind(data_shapes=data.provide_data, label_shapes=data.provide_label,
                 for_training=True)
        mod.init_params(initializer=self.initializer, arg_params=self.arg_params,
                        aux_params=self.aux_params, allow_missing=True)
        mod.init_optimizer(kvstore=kvstore, optimizer=self._optimizer(data, kvstore))
        if monitor is not None:
            mod.install_monitor(monitor)
        eval_metric = (eval_metric if isinstance(eval_metric, _metric.EvalMetric)
                       else _metric.create(eval_metric))
        data.reset()
        for epoch in range(self.begin_epoch, self.num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            while True:
                do_reset = True
                for data_batch in data:
                    if monitor is not None:
                        monitor.tic()
                    mod.forward_backward(data_batch)
                    mod.update()
                    if monitor is not None:
                        monitor.toc_print()
                    mod.update_metric(eval_metric, data_batch.label)
                    nbatch += 1
                    _call_all(batch_end_callback,
                              BatchEndParam(epoch, nbatch, eval_metric, locals()))
                    if self.epoch_size is not None and nbatch >= self.epoch_size:
                        do_reset = False
                        break
                if do_reset:
                    logger.info("Epoch[%d] Resetting Data Iterator", epoch)
                    data.reset()
                if self.epoch_size is None or nbatch >= self.epoch_size:
                    break
            logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            self.arg_params, self.aux_params = mod.get_params()
            _call_all(epoch_end_callback, epoch, self.symbol, self.arg_params,
                      self.aux_params)
            if eval_data is not None:
                eval_metric.reset()
                eval_data.reset()
                total = 0
                for i, eval_batch in enumerate(eval_data):
                    mod.forward(eval_batch, is_train=False)
                    mod.update_metric(eval_metric, eval_batch.label)
                    _call_all(eval_batch_end_callback,
                              BatchEndParam(epoch, i, eval_metric, locals()))
                    total += 1
                _call_all(eval_end_callback, BatchEndParam(epoch, total, eval_metric,
                                                           locals()))
                eval_data.reset()
        self._pred_exec = None

    # ------------------------------------------------------------ inference
    def _init_predictor(self, provide_data):
        if not self.arg_params:
            raise RuntimeError("FeedForward: no parameters; fit the model or give "
                               "arg_params first")
        shapes = {k: tuple(v.shape) for k, v in self.arg_params.items()}
        shapes.update({d[0]: tuple(d[1]) for d in provide_data})
        types = {k: v.dtype for k, v in self.arg_params.items()}
        types.update({d.name: d.dtype for d in provide_data if isinstance(d, DataDesc)})
        if self._pred_exec is not None:
            arg_shapes, _, _ = self.symbol.infer_shape(**shapes)
            if arg_shapes == [tuple(a.shape) for a in self._pred_exec.arg_arrays]:
                return
        exe = self.symbol.simple_bind(self.ctx[0], grad_req="null", type_dict=types, **shapes)
        exe.copy_params_from(self.arg_params, self.aux_params or {})
        self._pred_exec = exe

    def _batches(self, X, num_batch, reset):
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        self._init_predictor(X.provide_data)
        names = [d[0] for d in X.provide_data]
        inputs = [self._pred_exec.arg_dict[n] for n in names]
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            for dst, src in zip(inputs, batch.data):
                dst[:] = src
            self._pred_exec.forward(is_train=False)
            yield X.batch_size - (batch.pad or 0), batch

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """Run the network over ``X`` (on the first context).

        Returns:
            The output as a NumPy array (a list for several outputs), the last batch's
            padding dropped; with ``return_data``, ``(outputs, data, label)``.

        See also mxnet.model.FeedForward.predict.
        """
        outputs, datas, labels = None, [], []
        for real, batch in self._batches(X, num_batch, reset):
            outs = [o[0:real].asnumpy() for o in self._pred_exec.outputs]
            outputs = [[] for _ in outs] if outputs is None else outputs
            for acc, o in zip(outputs, outs):
                acc.append(o)
            if return_data:
                datas.append([d[0:real].asnumpy() for d in batch.data])
                labels.append([d[0:real].asnumpy() for d in batch.label or []])
        outputs = [numpy.concatenate(o) for o in outputs or []]
        outputs = outputs[0] if len(outputs) == 1 else outputs
        if not return_data:
            return outputs

        def merged(parts):
            cols = [numpy.concatenate(c) for c in zip(*parts)]
            return cols[0] if len(cols) == 1 else cols
        return outputs, merged(datas), merged(labels)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None,
              reset=True):
        """The metric's value over ``X``. See also mxnet.model.FeedForward.score."""
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        for i, (_, batch) in enumerate(self._batches(X, num_batch, reset)):
            eval_metric.update(batch.label, self._pred_exec.outputs)
            _call_all(batch_end_callback, BatchEndParam(0, i, eval_metric, locals()))
        return eval_metric.get()[1]

    # ------------------------------------------------------------ files
    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Write ``prefix-symbol.json`` and ``prefix-EPOCH.params`` (default epoch:
        ``num_epoch``). See also mxnet.model.FeedForward.save."""
        epoch = self.num_epoch if epoch is None else epoch
        if epoch is None:
            raise ValueError("FeedForward.save: give epoch (num_epoch is not set)")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params or {},
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward over a checkpoint (``begin_epoch=epoch``). See also
        mxnet.model.FeedForward.load."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
               initializer=Uniform(0.01), eval_data=None, eval_metric="acc",
               epoch_end_callback=None, batch_end_callback=None, kvstore="local", logger=None,
               work_load_list=None, eval_end_callback=LogValidationMetricsCallback(),
               eval_batch_end_callback=None, **kwargs):
        """Make a FeedForward and ``fit`` it. See also mxnet.model.FeedForward.create."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback,
                  batch_end_callback=batch_end_callback, kvstore=kvstore, logger=logger,
                  work_load_list=work_load_list, eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model
