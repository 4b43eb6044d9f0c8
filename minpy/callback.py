"""``minpy.callback``: MXNet's ``mx.callback`` — a thin re-export of :mod:`minpy.nn.callback`."""
from .nn.callback import (BatchEndParam, Speedometer, do_checkpoint, module_checkpoint,
                          log_train_metric, ProgressBar, LogValidationMetricsCallback)

__all__ = ["BatchEndParam", "Speedometer", "do_checkpoint", "module_checkpoint",
           "log_train_metric", "ProgressBar", "LogValidationMetricsCallback"]
