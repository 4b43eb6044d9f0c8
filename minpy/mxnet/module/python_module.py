"""``mx.mod.PythonModule`` / ``mx.mod.PythonLossModule``: MXNet 1.x's modules written in
Python, without a symbol — most often a loss at the end of a ``SequentialModule``.

    def hinge_grad(scores, labels):            # d loss / d scores, NumPy or minpy
        ...
    loss = mx.mod.PythonLossModule(grad_func=hinge_grad)
    seq = mx.mod.SequentialModule().add(mlp).add(loss, take_labels=True,
                                                 auto_wiring=True)

:class:`PythonModule` implements the module API with no parameters (``get_params``
gives empty dicts, ``init_params``/``init_optimizer``/``update`` do nothing);
a subclass computes its output shapes (``_compute_output_shapes``), ``forward``,
``backward``, ``get_outputs`` and ``get_input_grads``. :class:`PythonLossModule`
outputs its input scores unchanged and, in ``backward``, their gradient
``grad_func(scores, labels)``. See also mxnet.module.PythonModule.
"""
import logging

from .base_module import BaseModule
from ..initializer import Uniform
from ... import numpy as mnp
from ...core.array import Array
from ...nn.io.batch import DataDesc

__all__ = ["PythonModule", "PythonLossModule"]


def _names(shapes):
    """The names of ``[(name, shape)]`` / DataDesc lists."""
    return [d[0] for d in shapes]


class PythonModule(BaseModule):
    """A module written in Python, with no parameters (MXNet's ``PythonModule``).

    Args:
        data_names: the data input names.
        label_names: the label names (None: none).
        output_names: the output names.
        logger: where ``fit`` reports.

    See also mxnet.module.PythonModule.
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = None if label_names is None else list(label_names)
        self._output_names = list(output_names)
        self._data_shapes = self._label_shapes = self._output_shapes = None

    data_names = property(lambda self: self._data_names, doc="The data input names.")
    output_names = property(lambda self: self._output_names, doc="The output names.")
    data_shapes = property(lambda self: self._data_shapes,
                           doc="``[(name, shape)]`` of the data inputs bound.")
    label_shapes = property(lambda self: self._label_shapes,
                            doc="``[(name, shape)]`` of the labels bound (None: none).")
    output_shapes = property(lambda self: self._output_shapes,
                             doc="``[(name, shape)]`` of the outputs.")

    def get_params(self):
        """``({}, {})``: no parameters (a subclass with some overrides this)."""
        return {}, {}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Nothing to initialise (a subclass with parameters overrides this)."""
        self.params_initialized = True

    def update(self):
        """Nothing to update (a subclass with parameters overrides this)."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` with the outputs against ``labels`` (nothing when bound
        without labels).

        Raises:
            NotImplementedError: ``pre_sliced``.
        """
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise NotImplementedError(f"{type(self).__name__}.update_metric: pre-sliced "
                                      f"labels are not supported")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Take the input shapes and compute the output shapes.

        Raises:
            ValueError: names that are not ``data_names``/``label_names`` (in order),
                labels for a module without label names, ``grad_req`` other than
                ``'write'``.
        """
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        cls = type(self).__name__
        if grad_req != "write":
            raise ValueError(f"{cls}.bind: a Python module only supports grad_req='write', "
                             f"got {grad_req!r}")
        data_shapes = list(data_shapes)
        if _names(data_shapes) != self._data_names:
            raise ValueError(f"{cls}.bind: data_shapes name {_names(data_shapes)}, "
                             f"the module's data_names are {self._data_names}")
        if label_shapes is not None:
            label_shapes = list(label_shapes)
            if self._label_names is None or _names(label_shapes) != self._label_names:
                raise ValueError(f"{cls}.bind: label_shapes name "
                                 f"{_names(label_shapes)}, the module's label_names "
                                 f"are {self._label_names}")
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._data_shapes = [DataDesc(n, s) for n, s in data_shapes]
        self._label_shapes = label_shapes and [DataDesc(n, s) for n, s in label_shapes]
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        """``[(name, shape)]`` of the outputs from ``self._data_shapes`` and
        ``self._label_shapes`` (a subclass implements this)."""
        raise NotImplementedError(f"{type(self).__name__}._compute_output_shapes: a "
                                  f"PythonModule subclass must compute its output shapes")

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """No parameters, no optimizer state (a subclass with parameters overrides this)."""
        self.optimizer_initialized = True


class PythonLossModule(PythonModule):
    """A loss written in Python: outputs its input scores, and in ``backward`` the
    gradient ``grad_func(scores, labels)`` (MXNet's ``PythonLossModule``).

    Args:
        name: outputs are named ``[name + '_output']``.
        data_names, label_names: one name each.
        logger: where ``fit`` reports.
        grad_func: ``(scores, labels) -> gradient of the loss w.r.t. the scores``
            (minpy Arrays in; a NumPy or minpy array out); None: a subclass
            overrides ``_backward_impl``.
    Raises:
        ValueError: several data or label names.
        TypeError: ``grad_func`` is not callable.

    See also mxnet.module.PythonLossModule.
    """

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or len(self._label_names) != 1:
            raise ValueError(f"PythonLossModule: one data name and one label name, got "
                             f"data_names={self._data_names}, label_names={self._label_names}")
        if grad_func is not None and not callable(grad_func):
            raise TypeError(f"PythonLossModule: grad_func must be callable, got "
                            f"{type(grad_func).__name__}")
        self._name = name
        self._scores = self._labels = self._scores_grad = None
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        """The output is the scores: the data shape."""
        return [(self._name + "_output", tuple(self._data_shapes[0][1]))]

    def forward(self, data_batch, is_train=None):
        """Keep the scores (``data_batch.data[0]``) and, when training, the labels."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            labels = getattr(data_batch, "label", None)
            if not labels:
                raise ValueError("PythonLossModule.forward: training needs the batch's "
                                 "labels (add the module with take_labels=True)")
            self._labels = labels[0]

    def get_outputs(self, merge_multi_context=True):
        """``[scores]``: the input of the last forward."""
        self._need_merged("get_outputs", merge_multi_context)
        return [self._scores]

    def backward(self, out_grads=None):
        """Compute the gradient of the scores (``grad_func``).

        Raises:
            ValueError: ``out_grads`` given (a loss takes none).
            RuntimeError: bound with ``for_training=False``.
        """
        if out_grads is not None:
            raise ValueError("PythonLossModule.backward: a loss module takes no out_grads")
        if not self.for_training:
            raise RuntimeError("PythonLossModule.backward: the module is bound with "
                               "for_training=False")
        self._backward_impl()

    def _backward_impl(self):
        """``self._scores_grad = grad_func(self._scores, self._labels)`` as a minpy Array
        (a subclass without ``grad_func`` overrides this)."""
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule.backward: give grad_func, or "
                                      "override _backward_impl in a subclass")
        grad = self._grad_func(self._scores, self._labels)
        if not isinstance(grad, Array):
            grad = mnp.array(grad)
        if tuple(grad.shape) != tuple(self._scores.shape):
            raise ValueError(f"PythonLossModule.backward: grad_func returned shape "
                             f"{tuple(grad.shape)}, the scores have {tuple(self._scores.shape)}")
        self._scores_grad = grad

    def get_input_grads(self, merge_multi_context=True):
        """``[gradient of the scores]`` from the last backward."""
        self._need_merged("get_input_grads", merge_multi_context)
        return [self._scores_grad]

    @staticmethod
    def _need_merged(method, merge_multi_context):
        if merge_multi_context is not True:
            raise NotImplementedError(f"PythonLossModule.{method}: one context only "
                                      f"(merge_multi_context must be True)")

    def install_monitor(self, mon):
        """Not supported: a Python module has no executor."""
        raise NotImplementedError("PythonLossModule.install_monitor: a Python module has "
                                  "no executor to monitor")
