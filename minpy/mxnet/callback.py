"""``minpy.mxnet.callback``: MXNet 1.x's training callbacks (``mx.callback``) for ``Module.fit``.

Batch-end callbacks are called with a :class:`BatchEndParam` (epoch, batch
number, the training metric, the caller's locals); epoch-end callbacks with
``(epoch, symbol, arg_params, aux_params)``. Messages go to the ``logging``
root logger, as MXNet's do.

:class:`Speedometer`, :class:`ProgressBar` and the checkpoint callbacks of
:func:`do_checkpoint` and :func:`module_checkpoint` are also
:class:`minpy.nn.callbacks.Callback` objects — the one callback protocol — so a
:class:`~minpy.nn.solver.Solver` takes them in ``callbacks=[...]``; there they
see MXNet's numbering (epochs from 0, the file of epoch ``n`` numbered ``n + 1``)
and no metric.
"""
import collections
import logging
import math
import time

from ..nn.callbacks import Callback
from ..nn.checkpoint import save_checkpoint
from ..nn.model import SymbolModel

__all__ = ["BatchEndParam", "Speedometer", "do_checkpoint", "module_checkpoint",
           "log_train_metric", "ProgressBar", "LogValidationMetricsCallback"]

BatchEndParam = collections.namedtuple("BatchEndParams",
                                       ["epoch", "nbatch", "eval_metric", "locals"])


def _solver_param(info):
    """The BatchEndParam MXNet would pass for a Solver's batch-end ``info``."""
    return BatchEndParam(info["epoch"] - 1, info["batch"], None, info)


class _EpochCheckpoint(Callback):
    """An MXNet epoch-end checkpoint callback: ``write(n, symbol, arg_params,
    aux_params)`` after every ``period``-th epoch, ``n`` the epochs done."""

    def __init__(self, period, write):
        self.period = int(max(1, period))
        self._write = write

    def __call__(self, epoch, sym=None, arg=None, aux=None):
        """MXNet's call after epoch ``epoch`` (from 0)."""
        if (epoch + 1) % self.period == 0:
            self._write(epoch + 1, sym, arg, aux)

    def on_epoch_end(self, solver, info):
        """The same after a Solver's epoch, on its chief process, with its model's parameters
        (and a SymbolModel's symbol)."""
        model = solver.model
        if solver.is_chief:
            sym = model.net.symbol if isinstance(model, SymbolModel) else None
            self(info["epoch"] - 1, sym, model.params, model.aux_params)


def do_checkpoint(prefix, period=1):
    """An epoch-end callback writing ``prefix-symbol.json`` and ``prefix-%04d.params``
    (epoch numbers from 1) every ``period`` epochs, with ``minpy.model.save_checkpoint``.

    Returns:
        ``callback(epoch, symbol, arg_params, aux_params)`` (a Callback too).
    """
    def write(n, sym, arg, aux):
        save_checkpoint(prefix, n, sym, arg, aux)
        logging.info('Saved checkpoint to "%s-%04d.params"', prefix, n)
    return _EpochCheckpoint(period, write)


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback calling ``mod.save_checkpoint(prefix, epoch + 1, ...)`` every
    ``period`` epochs.

    Returns:
        ``callback(epoch, symbol=None, arg_params=None, aux_params=None)`` (a Callback too).
    """
    return _EpochCheckpoint(period,
                            lambda n, *_: mod.save_checkpoint(prefix, n, save_optimizer_states))


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging the training metric every ``period`` batches
    (``Iter[epoch] Batch[n] Train-name=value``); ``auto_reset`` then clears its local
    tally.

    Returns:
        ``callback(param)``.
    """
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer(Callback):
    """A batch-end callback logging samples per second and the training metric every
    ``frequent`` batches (in a Solver: the speed alone).

    Args:
        batch_size: samples per batch (for the speed).
        frequent: batches between messages.
        auto_reset: clear the metric's local tally after each message, so each
            message reports the batches since the previous one.
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def __call__(self, param):
        """Log if ``param.nbatch`` is a multiple of ``frequent`` (timing starts at the
        first call of each epoch)."""
        count = param.nbatch
        if self.last_count > count:        # a new epoch
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        else:
            pairs = param.eval_metric.get_name_value()
            values = [x for pair in pairs for x in pair]
            fields = "\t%s=%f" * len(pairs)
            if self.auto_reset:
                param.eval_metric.reset_local()
                logging.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + fields,
                             param.epoch, count - self.frequent, count, speed, *values)
            else:
                logging.info("Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + fields,
                             param.epoch, count, speed, *values)
        self.tic = time.time()

    def on_batch_end(self, solver, info):
        """As MXNet's call, after a Solver's step."""
        self(_solver_param(info))


class ProgressBar(Callback):
    """A batch-end callback logging a bar of ``length`` characters for ``total`` batches
    (MXNet's; :class:`minpy.nn.callbacks.ProgressBar` is the Solver's tqdm bar)."""

    def __init__(self, total, length=80):
        self.total = total
        self.bar_len = length

    def __call__(self, param):
        """Log the bar for batch ``param.nbatch``."""
        filled = int(round(self.bar_len * param.nbatch / float(self.total)))
        percent = math.ceil(100.0 * param.nbatch / float(self.total))
        logging.info("[%s] %s%s\r", "=" * filled + "-" * (self.bar_len - filled), percent, "%")

    def on_batch_end(self, solver, info):
        """As MXNet's call, after a Solver's step."""
        self(_solver_param(info))


class LogValidationMetricsCallback:
    """An eval-end callback logging ``Epoch[n] Validation-name=value`` for each metric."""

    def __call__(self, param):
        """Log the metric in ``param`` (nothing without one)."""
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
