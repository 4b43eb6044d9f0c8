"""``minpy.metric``: MXNet's ``mx.metric`` — a thin re-export of :mod:`minpy.mxnet.metric`."""
from .mxnet.metric import (EvalMetric, CompositeEvalMetric, Accuracy, TopKAccuracy, F1,
                        Perplexity, MAE, MSE, RMSE, CrossEntropy, NegativeLogLikelihood, Loss,
                        CustomMetric, np, create, register, check_label_shapes)

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "Perplexity",
           "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "Loss", "CustomMetric",
           "np", "create", "register", "check_label_shapes"]
