"""``minpy.mxnet.metric``: MXNet 1.x's evaluation metrics (``mx.metric``) on minpy arrays.

A metric accumulates over mini-batches: ``update(labels, preds)`` takes lists
of arrays (minpy Arrays, NumPy arrays, or anything with ``asnumpy()``),
``get()`` returns ``(name, value)`` (lists of both for a composite), and
``reset()`` starts over. As in MXNet 1.x each metric keeps a *local* and a
*global* tally: ``reset_local()`` (used by :class:`~minpy.mxnet.callback.Speedometer`)
clears only the local one, ``get_global()`` reads the other.

Values follow MXNet 1.9.1's formulas exactly, quirks included: the
regression metrics average per-batch means, :class:`F1` averages per-batch
scores (``average='macro'``), :class:`Accuracy` compares integer-truncated
labels, and :class:`Loss` ignores the labels.

:func:`create` maps MXNet's names (``'acc'``, ``'ce'``, ``'top_k_accuracy'`` ...),
a list of them, or a function ``feval(label, pred)`` to a metric.
"""
import math

import numpy

from .metric_base import (EvalMetric, CompositeEvalMetric, CustomMetric, np,  # noqa: F401
                          create, register, check_label_shapes, _as_list, _host)

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "Perplexity",
           "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "Loss", "CustomMetric",
           "np", "create", "register", "check_label_shapes"]


class Accuracy(EvalMetric):
    """Fraction of samples whose predicted class equals the label.

    A prediction of the label's shape is taken as class indices; otherwise its
    argmax over ``axis`` is. Both are truncated to int32 before comparing.
    """

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True, axis=axis)
        self.axis = axis

    def update(self, labels, preds):
        """Count the correct predictions of each (label, pred) pair."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label), _host(pred)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype(numpy.int32).ravel()
            label = label.astype(numpy.int32).ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest predictions.

    Args:
        top_k: at least 2 (use :class:`Accuracy` for 1); the name becomes
            ``'top_k_accuracy_<top_k>'``.
    Raises:
        ValueError: ``top_k`` below 2.
    """

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        if not top_k > 1:
            raise ValueError(f"TopKAccuracy: top_k must be > 1 (use Accuracy for top-1), "
                             f"got {top_k}")
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True, top_k=top_k)
        self.top_k = top_k
        self.name += f"_{top_k}"

    def update(self, labels, preds):
        """Count the samples whose label is in the top k of their prediction row."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _host(pred).astype(numpy.float32)
            if pred.ndim > 2:
                raise ValueError(f"TopKAccuracy: predictions must be at most 2-d, got shape "
                                 f"{pred.shape}")
            label = _host(label).astype(numpy.int32).ravel()
            order = numpy.argpartition(pred, -self.top_k)
            check_label_shapes(label, order)
            if order.ndim == 1:
                correct = int((order == label).sum())
            else:
                classes = order.shape[1]
                correct = sum(int((order[:, classes - 1 - j] == label).sum())
                              for j in range(min(classes, self.top_k)))
            self._add(correct, order.shape[0])


def _binary_counts(label, pred, owner):
    """(tp, fp, fn, tn) of one batch: predicted class = argmax over axis 1."""
    pred, label = _host(pred), _host(label).astype(numpy.int32)
    check_label_shapes(label, pred)
    if len(numpy.unique(label)) > 2:
        raise ValueError(f"{owner} currently only supports binary classification.")
    p, t = numpy.argmax(pred, axis=1) == 1, label == 1
    return (int((p & t).sum()), int((p & ~t).sum()), int((~p & t).sum()),
            int((~p & ~t).sum()))


def _fscore(tp, fp, fn):
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


class F1(EvalMetric):
    """F1 score of a binary classification (class 1 is positive).

    Args:
        average: ``'macro'`` (default): the mean of each ``update``'s F1;
            ``'micro'``: one F1 over all the samples seen.
    Raises:
        ValueError (at update): labels with more than two classes.
    """

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"F1: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        """Add each pair's true/false positive/negative counts."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            counts = _binary_counts(label, pred, "F1")
            self._local = [a + b for a, b in zip(self._local, counts)]
            self._global = [a + b for a, b in zip(self._global, counts)]
        if self.average == "macro":
            self._add(_fscore(*self._local[:3]), 1)
            self._local, self._global = [0] * 4, [0] * 4
        else:
            self.sum_metric = _fscore(*self._local[:3]) * sum(self._local)
            self.num_inst = sum(self._local)
            self.global_sum_metric = _fscore(*self._global[:3]) * sum(self._global)
            self.global_num_inst = sum(self._global)

    def reset(self):
        """Clear the tallies and the counts."""
        super().reset()
        self._local, self._global = [0] * 4, [0] * 4

    def reset_local(self):
        """Clear the local tally and counts."""
        super().reset_local()
        self._local = [0] * 4


class Perplexity(EvalMetric):
    """``exp(mean(-log p(label)))`` over the non-ignored labels.

    Args:
        ignore_label: a label value left out of the count (None: keep all).
        axis: the class axis of the predictions (last by default).
    """

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True, ignore_label=ignore_label)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        """Add the negative log-probabilities of the labels (clipped at 1e-10)."""
        if len(labels) != len(preds):
            raise ValueError(f"Perplexity: {len(labels)} labels for {len(preds)} predictions")
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            pred = numpy.moveaxis(_host(pred), self.axis, -1)
            label = _host(label).ravel()
            if label.size != pred.size // pred.shape[-1]:
                raise ValueError(f"Perplexity: shape mismatch: labels {label.shape} vs. "
                                 f"predictions {pred.shape}")
            prob = pred.reshape(-1, pred.shape[-1])[numpy.arange(label.size),
                                                    label.astype(numpy.int32)]
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(prob.dtype)
                num -= float(ignore.sum())
                prob = prob * (1 - ignore) + ignore
            loss -= float(numpy.log(numpy.maximum(1e-10, prob)).sum())
            num += prob.size
        self._add(loss, num)

    def _value(self, total, count):
        return float("nan") if count == 0 else math.exp(total / count)


def _column_pairs(labels, preds):
    """(label, pred) host pairs with 1-d arrays as columns (MXNet's regression metrics)."""
    labels, preds = check_label_shapes(labels, preds, True)
    for label, pred in zip(labels, preds):
        label, pred = _host(label), _host(pred)
        yield (label.reshape(-1, 1) if label.ndim == 1 else label,
               pred.reshape(-1, 1) if pred.ndim == 1 else pred)


class MAE(EvalMetric):
    """Mean absolute error, averaged over batches (each batch's mean counts once)."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        """Add each pair's mean absolute difference."""
        for label, pred in _column_pairs(labels, preds):
            self._add(numpy.abs(label - pred).mean(), 1)


class MSE(EvalMetric):
    """Mean squared error, averaged over batches (each batch's mean counts once)."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        """Add each pair's mean squared difference."""
        for label, pred in _column_pairs(labels, preds):
            self._add(((label - pred) ** 2.0).mean(), 1)


class RMSE(EvalMetric):
    """Root mean squared error of each batch, averaged over batches."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        """Add each pair's root mean squared difference."""
        for label, pred in _column_pairs(labels, preds):
            self._add(numpy.sqrt(((label - pred) ** 2.0).mean()), 1)


class CrossEntropy(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples; predictions are probabilities
    ``(N, classes)``, labels class indices.

    Args:
        eps: added to the probability before the log.
    """

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True, eps=eps)
        self.eps = eps

    def update(self, labels, preds):
        """Add the samples' negative log-probabilities of their labels."""
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label).ravel(), _host(pred)
            if label.shape[0] != pred.shape[0]:
                raise ValueError(f"{type(self).__name__}: {label.shape[0]} labels for "
                                 f"{pred.shape[0]} predictions")
            prob = pred[numpy.arange(label.shape[0], dtype=numpy.int64),
                        label.astype(numpy.int64)]
            self._add((-numpy.log(prob + self.eps)).sum(), label.shape[0])


class NegativeLogLikelihood(CrossEntropy):
    """The negative log-likelihood: :class:`CrossEntropy`'s value, named ``'nll-loss'``."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


class Loss(EvalMetric):
    """The mean of the predictions' elements (a loss output); labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        """Add the sum and count of every prediction's elements."""
        for pred in _as_list(preds):
            pred = _host(pred)
            self._add(float(pred.sum()), pred.size)


for _cls, _aliases in ((CompositeEvalMetric, ("composite",)), (Accuracy, ("acc",)),
                       (TopKAccuracy, ("top_k_accuracy", "top_k_acc")), (F1, ()),
                       (Perplexity, ()), (MAE, ()), (MSE, ()), (RMSE, ()),
                       (CrossEntropy, ("ce",)), (NegativeLogLikelihood, ("nll_loss",)),
                       (Loss, ()), (CustomMetric, ())):
    register(_cls, *_aliases)
