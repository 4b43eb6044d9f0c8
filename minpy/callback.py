"""``minpy.callback``: MXNet's ``mx.callback`` — a thin re-export of :mod:`minpy.mxnet.callback`."""
from .mxnet.callback import (BatchEndParam, Speedometer, do_checkpoint, module_checkpoint,
                          log_train_metric, ProgressBar, LogValidationMetricsCallback)

__all__ = ["BatchEndParam", "Speedometer", "do_checkpoint", "module_checkpoint",
           "log_train_metric", "ProgressBar", "LogValidationMetricsCallback"]
