"""``minpy.mxnet.module.base_module``: MXNet 1.x's ``BaseModule`` — ``fit``, ``score``, ``predict``.

The loops every module shares, written against the intermediate API a
concrete module implements (``bind``, ``init_params``, ``init_optimizer``,
``forward``, ``backward``, ``update``, ``get_outputs``, ``update_metric``,
``get_params``/``set_params``); :class:`minpy.mxnet.module.Module` is the one
over a symbol. A module moves through the states *bound* (``binded``: shapes
known, executor made), *parameters initialised* (``params_initialized``) and
*optimizer installed* (``optimizer_initialized``).
"""
import logging
import time

from ... import numpy as mnp
from .. import metric as _metric
from ..callback import BatchEndParam
from ..initializer import Uniform
from ...nn.checkpoint import read_params, write_params
from ...nn.io import NDArrayIter

__all__ = ["BaseModule"]


def _as_list(obj):
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _call_all(callbacks, *args):
    for cb in _as_list(callbacks):
        cb(*args)


class BaseModule:
    """Base of the modules: the training and evaluation loops over the intermediate API.

    Args:
        logger: where ``fit`` reports (default: the ``logging`` module, as MXNet).
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None

    @property
    def symbol(self):
        """The symbol this module computes."""
        return self._symbol

    def _need(self, method, bound=True, params=True, optimizer=False):
        """Raise RuntimeError naming ``method`` unless the module is in the needed state."""
        if bound and not self.binded:
            raise RuntimeError(f"{type(self).__name__}.{method}: the module is not bound; "
                               f"call bind(data_shapes=..., label_shapes=...) first")
        if params and not self.params_initialized:
            raise RuntimeError(f"{type(self).__name__}.{method}: the parameters are not "
                               f"initialized; call init_params() or set_params() first")
        if optimizer and not self.optimizer_initialized:
            raise RuntimeError(f"{type(self).__name__}.{method}: no optimizer; call "
                               f"init_optimizer() first")

    # ------------------------------------------------------------ one batch
    def forward_backward(self, data_batch):
        """``forward(data_batch, is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for ``data_batch`` (nothing to do here: no buckets, no sparse rows)."""
        self._need("prepare", params=False)
        if sparse_row_id_fn is not None:
            raise NotImplementedError("prepare: sparse_row_id_fn (row_sparse parameters on a "
                                      "KVStore) is not supported")

    # ------------------------------------------------------------ evaluation
    def _iterator(self, method, data):
        """``data`` if it is a data iterator, else an NDArrayIter over the array ``data``."""
        if hasattr(data, "reset") and hasattr(data, "__iter__") and not hasattr(data, "shape"):
            return data, False
        if len(self.data_names) != 1:
            raise ValueError(f"{type(self).__name__}.{method}: an array is one input, but "
                             f"the module has data names {self.data_names}; pass an iterator")
        return NDArrayIter(data, batch_size=self.data_shapes[0].shape[0],
                           data_name=self.data_names[0], last_batch_handle="pad"), True

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Evaluate ``eval_metric`` over ``eval_data`` (inference mode).

        As MXNet, padded samples of the last batch are counted in the metric.

        Args:
            eval_data: a data iterator.
            eval_metric: an EvalMetric or anything ``metric.create`` takes.
            num_batch: stop after this many batches (None: the whole epoch).
            batch_end_callback, score_end_callback: called with a BatchEndParam.
            reset: ``eval_data.reset()`` first.
            epoch: the epoch number given to the callbacks.
        Returns:
            ``[(name, value)]``.
        """
        self._need("score")
        if reset:
            eval_data.reset()
        eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        nbatch = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn)
            self.forward(batch, is_train=False)
            self.update_metric(eval_metric, getattr(batch, "label", None) or [])
            if batch_end_callback is not None:
                _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        if score_end_callback is not None:
            _call_all(score_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` per batch, the padding of each output removed."""
        self._need("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = getattr(batch, "pad", 0) or 0
            yield [out[:out.shape[0] - pad] for out in self.get_outputs()], nbatch, batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Run inference over ``eval_data`` and collect the outputs.

        Args:
            eval_data: a data iterator, or an array (NumPy or minpy) of samples,
                served in batches of the bound size (the last one padded).
            num_batch: stop after this many batches.
            merge_batches: concatenate the batches' outputs (else a list per batch).
            reset: ``eval_data.reset()`` first.
            always_output_list: return a list even for one output.
        Returns:
            With ``merge_batches``: the single output Array (or a list, one per
            output); the padding of the last batch is dropped. Given an array,
            the first output only, as MXNet.
        Raises:
            ValueError: the batches have different numbers of outputs.
        """
        self._need("predict")
        eval_data, from_array = self._iterator("predict", eval_data)
        collected = [[out.copy() for out in outs]
                     for outs, _, _ in self.iter_predict(eval_data, num_batch, reset,
                                                         sparse_row_id_fn)]
        if not collected or not merge_batches:
            return collected
        count = len(collected[0])
        if any(len(outs) != count for outs in collected):
            raise ValueError("predict: cannot merge batches with different numbers of outputs; "
                             "use merge_batches=False")
        merged = [mnp.concatenate([outs[i] for outs in collected]) for i in range(count)]
        if from_array:
            return merged[0]
        return merged[0] if count == 1 and not always_output_list else merged

    # ------------------------------------------------------------ training
    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train: bind to ``train_data``'s shapes, initialise, then ``num_epoch`` epochs
        of forward, backward and update per batch.

        Args:
            train_data: a data iterator with ``provide_data``/``provide_label``
                (reset at the end of each epoch).
            eval_data: an iterator scored after each epoch (``validation_metric``,
                default ``eval_metric``).
            eval_metric: the training metric (anything ``metric.create`` takes).
            epoch_end_callback: ``cb(epoch, symbol, arg_params, aux_params)``.
            batch_end_callback: ``cb(BatchEndParam)`` after each batch.
            kvstore, optimizer, optimizer_params: see ``init_optimizer``.
            eval_end_callback, eval_batch_end_callback: given to ``score``.
            initializer, arg_params, aux_params, allow_missing, force_init: see
                ``init_params``.
            force_rebind: rebind even if bound.
            begin_epoch, num_epoch: the epochs run are ``range(begin_epoch, num_epoch)``.
            monitor: an ``mx.monitor.Monitor``, installed, ticked before and printed
                after each batch.
        Raises:
            ValueError: no ``num_epoch``.
        """
        if num_epoch is None:
            raise ValueError(f"{type(self).__name__}.fit: num_epoch is required")
        provide_data = getattr(train_data, "provide_data", None)
        if not provide_data:
            raise ValueError(f"{type(self).__name__}.fit: train_data must describe its batches "
                             f"with provide_data (and provide_label), as NDArrayIter does")
        self.bind(data_shapes=provide_data,
                  label_shapes=getattr(train_data, "provide_label", None),
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        validation_metric = eval_metric if validation_metric is None else validation_metric
        eval_metric = _metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            batches = iter(train_data)
            batch = next(batches, None)
            while batch is not None:
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(batch)
                self.update()
                self.update_metric(eval_metric, getattr(batch, "label", None) or [])
                if monitor is not None:
                    monitor.toc_print()
                upcoming = next(batches, None)
                if upcoming is not None:
                    self.prepare(upcoming, sparse_row_id_fn)
                else:
                    name_values = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    _call_all(batch_end_callback,
                              BatchEndParam(epoch, nbatch, eval_metric, locals()))
                nbatch += 1
                batch = upcoming
            if nbatch == 0:
                raise ValueError(f"{type(self).__name__}.fit: train_data gave no batch in "
                                 f"epoch {epoch}")
            for name, value in name_values:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            _call_all(epoch_end_callback, epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                results = self.score(eval_data, validation_metric,
                                     score_end_callback=eval_end_callback,
                                     batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, value in results:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
            train_data.reset()

    def install_monitor(self, mon):
        """Install an ``mx.monitor.Monitor`` (each module that has executors overrides this).

        Raises:
            NotImplementedError: this module has no executors to monitor.
        """
        raise NotImplementedError(f"{type(self).__name__}.install_monitor: this module has "
                                  f"no executor to install a Monitor on")

    # ------------------------------------------------------------ parameters
    def save_params(self, fname):
        """Write the parameters to ``fname`` as MXNet's ``.params`` file (keys
        ``arg:NAME`` and ``aux:NAME``), which ``mx.nd.load`` reads."""
        write_params(fname, *self.get_params())

    def load_params(self, fname):
        """Set the parameters from an MXNet ``.params`` file (``arg:``/``aux:`` keys).

        Raises:
            ValueError: a key that is neither ``arg:NAME`` nor ``aux:NAME``, or arrays
                without names (see minpy.nn.checkpoint.read_params).
        """
        self.set_params(*read_params(fname))
