"""``minpy.mxnet.metric_base``: the metric protocol of :mod:`minpy.mxnet.metric`.

:class:`EvalMetric` (the local/global tallies), :class:`CompositeEvalMetric`,
:class:`CustomMetric` and :func:`np` (metrics from functions), the registry
(:func:`register`) and :func:`create`. The registered metrics themselves
(Accuracy, CrossEntropy ...) live in :mod:`minpy.mxnet.metric`, which registers
them on import; import that module, not this one.
"""
from collections import OrderedDict

import numpy

__all__ = ["EvalMetric", "CompositeEvalMetric", "CustomMetric", "np", "create", "register",
           "check_label_shapes"]

_REGISTRY = {}


def register(cls, *aliases):
    """Make metric class ``cls`` creatable by :func:`create` under its lower-case class
    name and ``aliases``; returns ``cls`` (usable as a decorator)."""
    for key in (cls.__name__.lower(),) + aliases:
        _REGISTRY[key.lower()] = cls
    return cls


def _host(a):
    """A NumPy array holding the values of ``a`` (a minpy Array, NumPy array, or array-like)."""
    if hasattr(a, "asnumpy"):
        return a.asnumpy()
    return numpy.asarray(a)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raise ValueError unless ``labels`` and ``preds`` have the same length (or, with
    ``shape``, the same shape); with ``wrap`` a single array becomes a one-item list.

    Returns:
        ``(labels, preds)``.
    """
    if wrap:
        labels, preds = _as_list(labels), _as_list(preds)
    a, b = (labels.shape, preds.shape) if shape else (len(labels), len(preds))
    if a != b:
        raise ValueError(f"Shape of labels {a} does not match shape of predictions {b}")
    return labels, preds


class EvalMetric:
    """Base of the metrics: a running ``sum_metric / num_inst``, local and global.

    Args:
        name: the name ``get()`` reports.
        output_names, label_names: the outputs / labels :meth:`update_dict` picks
            by name (None: all of them, in order).
        has_global_stats: whether subclasses keep the global tally (else
            ``get_global()`` is ``get()``).
        **kwargs: the constructor arguments, kept for :meth:`get_config`.

    Subclasses implement ``update(labels, preds)``, adding to the tallies with
    :meth:`_add`.
    """

    def __init__(self, name, output_names=None, label_names=None, has_global_stats=False,
                 **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = has_global_stats
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The arguments that re-create this metric with ``create(**config)``."""
        config = dict(self._kwargs)
        config.update(metric=type(self).__name__, name=self.name,
                      output_names=self.output_names, label_names=self.label_names)
        return config

    def update_dict(self, label, pred):
        """``update`` with the labels and outputs named by ``label_names``/``output_names``.

        Args:
            label, pred: ordered dicts name -> array.
        """
        preds = (list(pred.values()) if self.output_names is None
                 else [pred[k] for k in self.output_names])
        labels = (list(label.values()) if self.label_names is None
                  else [label[k] for k in self.label_names])
        self.update(labels, preds)

    def update(self, labels, preds):
        """Accumulate one batch: ``labels`` and ``preds`` are lists of arrays."""
        raise NotImplementedError(f"{type(self).__name__}.update")

    def _add(self, total, count):
        total = float(total)    # NumPy 2 would keep float32 batch values in float32
        self.sum_metric += total
        self.global_sum_metric += total
        self.num_inst += count
        self.global_num_inst += count

    def reset(self):
        """Clear both tallies."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local tally only (the global one keeps the whole epoch)."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _value(self, total, count):
        return float("nan") if count == 0 else total / count

    def get(self):
        """``(name, value)`` of the local tally (NaN before any update)."""
        return self.name, self._value(self.sum_metric, self.num_inst)

    def get_global(self):
        """``(name, value)`` of the global tally."""
        if not self._has_global_stats:
            return self.get()
        return self.name, self._value(self.global_sum_metric, self.global_num_inst)

    @staticmethod
    def _pairs(name, value):
        return list(zip(_as_list(name), _as_list(value)))

    def get_name_value(self):
        """``[(name, value)]`` of the local tally (several pairs for a composite)."""
        return self._pairs(*self.get())

    def get_global_name_value(self):
        """``[(name, value)]`` of the global tally."""
        return self._pairs(*self.get_global())


class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` gives ``([names], [values])``.

    Args:
        metrics: metrics or anything :func:`create` takes.
        name, output_names, label_names: as :class:`EvalMetric`.
    """

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def add(self, metric):
        """Append a child metric (anything :func:`create` takes)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        return self.metrics[index]

    def update_dict(self, labels, preds):
        """Give each child the labels and outputs this metric's names select."""
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for m in self.metrics:
            m.update_dict(labels, preds)

    def update(self, labels, preds):
        """Update every child with the same labels and predictions."""
        for m in self.metrics:
            m.update(labels, preds)

    def reset(self):
        """Reset every child."""
        for m in getattr(self, "metrics", ()):
            m.reset()

    def reset_local(self):
        """Reset every child's local tally."""
        for m in self.metrics:
            m.reset_local()

    def _collect(self, method):
        names, values = [], []
        for m in self.metrics:
            name, value = getattr(m, method)()
            names.extend(_as_list(name))
            values.extend(_as_list(value))
        return names, values

    def get(self):
        """``([names], [values])`` of the children's local tallies."""
        return self._collect("get")

    def get_global(self):
        """``([names], [values])`` of the children's global tallies."""
        return self._collect("get_global")

    def get_config(self):
        """The config, with each child's."""
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on NumPy arrays, returning a value (counted
    once) or a ``(sum_metric, num_inst)`` pair.

    Args:
        feval: the function.
        name: default ``feval.__name__`` (``'custom(<lambda>)'`` for a lambda).
        allow_extra_outputs: allow more predictions than labels (RNN states).
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True, feval=feval,
                         allow_extra_outputs=allow_extra_outputs)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        """Call ``feval`` on each (label, pred) pair, as NumPy arrays."""
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            value = self._feval(_host(label), _host(pred))
            if isinstance(value, tuple):
                self._add(*value)
            else:
                self._add(value, 1)

    def get_config(self):
        """Not available: a function cannot be serialised."""
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A :class:`CustomMetric` from ``numpy_feval(label, pred) -> float`` on NumPy arrays
    (MXNet's ``mx.metric.np``)."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)


def create(metric, *args, **kwargs):
    """A metric from a name, an :class:`EvalMetric`, a list of either, or a function.

    Args:
        metric: a registered name (case-insensitive: ``'acc'``/``'accuracy'``,
            ``'top_k_accuracy'``, ``'f1'``, ``'ce'``, ``'nll_loss'``, ``'mse'``,
            ``'rmse'``, ``'mae'``, ``'perplexity'``, ``'loss'``, ``'composite'`` ...);
            an EvalMetric (returned as is); a list (a :class:`CompositeEvalMetric`
            of each item); or ``feval(label, pred)`` (a :class:`CustomMetric`).
        *args, **kwargs: constructor arguments for a named metric (passed to
            each item of a list).
    Returns:
        An :class:`EvalMetric`.
    Raises:
        ValueError: an unknown name (listing the known ones).
        TypeError: anything else.
    """
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for m in metric:
            composite.add(create(m, *args, **kwargs))
        return composite
    if isinstance(metric, str):
        cls = _REGISTRY.get(metric.lower())
        if cls is None:
            raise ValueError(f"metric.create: unknown metric {metric!r}; known names are "
                             f"{sorted(_REGISTRY)}")
        return cls(*args, **kwargs)
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    raise TypeError(f"metric.create: expected a metric name, an EvalMetric, a list or a "
                    f"function, got {type(metric).__name__}")
