"""``minpy.nn.model``: the model base class MinPy programs subclass, and a model from a symbol.

A model declares its parameters (``add_param``, chainable) and defines
``forward(X, mode)`` and ``loss(predict, y)``; :class:`minpy.nn.solver.Solver`
initialises the parameters, differentiates ``loss(forward(X), y)`` with respect
to ``model.params`` and updates them::

    class TwoLayerNet(ModelBase):
        def __init__(self):
            super().__init__()
            self.add_param('w1', (64, 128)).add_param('b1', (128,)) \\
                .add_param('w2', (128, 10)).add_param('b2', (10,))

        def forward(self, X, mode):
            h = layers.relu(layers.affine(X, self.params['w1'], self.params['b1']))
            return layers.affine(h, self.params['w2'], self.params['b2'])

        def loss(self, predict, y):
            return layers.softmax_loss(predict, y)

:class:`SymbolModel` is the same contract over a ``minpy.symbol`` network run
as one big operator (``minpy.symbol.function``): bound once per input shape,
its parameters and BatchNorm statistics exposed as ``params``/``aux_params``.
"""
import numpy

from .. import numpy as mnp
from ..core.array import Array
from ..core.autograd import grad_and_loss, stop_gradient
from ..symbol.function import Function
from . import checkpoint

__all__ = ["ModelBase", "SymbolModel", "ParamsNameNotFoundError"]


class ParamsNameNotFoundError(ValueError):
    """A parameter name the model does not declare (MinPy's name)."""


class ModelBase:
    """Base class of a model: parameters, auxiliary state, forward and loss.

    Attributes:
        params: dict name -> minpy Array, filled by ``Solver.init()`` (or by hand).
        param_configs: dict name -> ``{'shape': ..., **init_config}`` from ``add_param``.
        aux_params: dict name -> Array of state not trained by gradients
            (BatchNorm running statistics).
        aux_param_configs: dict name -> initial value from ``add_aux_param``.
    """

    def __init__(self):
        self.params = {}
        self.param_configs = {}
        self.aux_params = {}
        self.aux_param_configs = {}

    # ---------------------------------------------------------- declaration
    def add_param(self, name, shape, **init_config):
        """Declare trainable parameter ``name`` of ``shape``; returns ``self`` (chainable).

        ``init_config`` may name a per-parameter ``init_rule`` (``'gaussian'``,
        ``'constant'`` ...) and its ``init_config``; other keys are kept for the rule.
        """
        if name in self.param_configs:
            raise ValueError(f"{type(self).__name__}.add_param: duplicate parameter name {name!r}")
        try:
            shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        except (TypeError, ValueError):
            raise TypeError(f"{type(self).__name__}.add_param({name!r}): shape must be a tuple of "
                            f"ints, got {shape!r}") from None
        if any(s < 0 for s in shape):
            raise ValueError(f"{type(self).__name__}.add_param({name!r}): negative dimension in "
                             f"shape {shape}")
        self.param_configs[name] = dict(init_config, shape=shape)
        return self

    def add_params(self, param_dict):
        """Declare several parameters; returns ``self``.

        ``param_dict`` maps names to ``{'shape': ..., **init_config}`` (MinPy's
        form) or to arrays (``Function.get_params()``: declared with their shapes).
        """
        for name, config in param_dict.items():
            if hasattr(config, "shape") and not isinstance(config, dict):
                self.add_param(name, tuple(config.shape))
                continue
            config = dict(config)
            self.add_param(name, config.pop("shape"), **config)
        return self

    def add_aux_param(self, name, value):
        """Declare auxiliary state ``name`` with initial ``value``; returns ``self``."""
        if name in self.aux_param_configs:
            raise ValueError(f"{type(self).__name__}.add_aux_param: duplicate auxiliary "
                             f"parameter name {name!r}")
        self.aux_param_configs[name] = value
        return self

    # ---------------------------------------------------------- computation
    def forward(self, X, mode):
        """The model's output for input ``X``; ``mode`` is ``'train'`` or ``'test'``."""
        raise NotImplementedError(f"{type(self).__name__} must define forward(X, mode)")

    def loss(self, predict, y):
        """The scalar loss of output ``predict`` against labels ``y``."""
        raise NotImplementedError(f"{type(self).__name__} must define loss(predict, y)")

    def forward_batch(self, batch, mode):
        """``forward`` on a :class:`minpy.nn.io.DataBatch` (its first data array)."""
        return self.forward(batch.data[0], mode)

    def loss_batch(self, batch, forward_outputs):
        """``loss`` on a batch's first label."""
        return self.loss(forward_outputs, batch.label[0])

    def predict(self, X, batch_size=1024):
        """The model's output for ``X`` in ``'test'`` mode (no dropout, BatchNorm's
        running statistics), computed ``batch_size`` samples at a time.

        Args:
            X: inputs with samples on axis 0 (NumPy, minpy or nested lists).
            batch_size: samples per forward pass; larger inputs are split along
                axis 0 and the outputs concatenated.
        Returns:
            A minpy Array: ``forward(X, 'test')`` (for a classifier, the scores:
            ``predict(X).argmax(axis=-1)`` are the classes).
        Raises:
            ValueError: ``X`` is 0-d or empty, or ``batch_size`` < 1.
            RuntimeError: the parameters are not initialised (``Solver.init``).

        See also keras.Model.predict, mxnet.module.Module.predict.
        """
        who = f"{type(self).__name__}.predict"
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, numpy.integer)) \
                or batch_size < 1:
            raise ValueError(f"{who}: batch_size must be a positive int, got {batch_size!r}")
        if self.param_configs and not self.params:
            raise RuntimeError(f"{who}: the parameters are not initialised (train the model, "
                               "call Solver.init() or load_params first)")
        X = X if isinstance(X, Array) else mnp.array(numpy.asarray(X))
        if X.ndim == 0 or X.shape[0] == 0:
            raise ValueError(f"{who}: expected samples on axis 0, got shape {tuple(X.shape)}")
        if X.shape[0] <= batch_size:
            return self.forward(X, "test")
        return mnp.concatenate([self.forward(X[i:i + batch_size], "test")
                                for i in range(0, X.shape[0], batch_size)])

    def loss_and_grad(self, X, y=None, mode="train"):
        """``(loss, grads)`` of ``loss(forward(X, mode), y)`` w.r.t. ``params``.

        ``X`` may be a DataBatch (then ``y`` is ignored). ``grads`` is a dict
        with ``params``' keys. The auxiliary state a forward pass updates is
        kept, detached from the gradient tape.
        """
        is_batch = hasattr(X, "data") and hasattr(X, "label")

        def objective(params):
            saved, self.params = self.params, params
            try:
                if is_batch:
                    return self.loss_batch(X, self.forward_batch(X, mode))
                return self.loss(self.forward(X, mode), y)
            finally:
                self.params = saved
        grads, loss = grad_and_loss(objective)(self.params)
        # in place: a SymbolModel's dict is its Function's
        self.aux_params.update({k: stop_gradient(v) for k, v in self.aux_params.items()
                                if isinstance(v, Array)})
        return loss, grads

    # ---------------------------------------------------------- persistence
    def save_params(self, path):
        """Write ``params`` and ``aux_params`` to ``path`` atomically (see minpy.nn.checkpoint)."""
        checkpoint.save(path, {"params": checkpoint.host_copies(self.params),
                               "aux_params": checkpoint.host_copies(self.aux_params)})

    def load_params(self, path):
        """Read parameters written by :meth:`save_params`; shapes must match the declared ones."""
        state = checkpoint.load(path)
        self.set_params(state["params"], state.get("aux_params", {}))

    def set_params(self, params, aux_params=None):
        """Replace parameter values (copies), checking names and shapes against the model."""
        for name, value in params.items():
            if self.param_configs and name not in self.param_configs:
                raise ParamsNameNotFoundError(f"{type(self).__name__}: no parameter named {name!r} "
                                              f"(declared: {sorted(self.param_configs)})")
            value = numpy.asarray(value)
            expected = self.param_configs.get(name, {}).get("shape")
            if expected is not None and tuple(value.shape) != tuple(expected):
                raise ValueError(f"{type(self).__name__}: parameter {name!r} has shape "
                                 f"{tuple(value.shape)} in the file; the model declares {expected}")
            self.params[name] = mnp.array(value)
        for name, value in (aux_params or {}).items():
            self.aux_params[name] = mnp.array(numpy.asarray(value))

    # MinPy's names
    def save(self, prefix):
        """MinPy's name: :meth:`save_params` to ``prefix + '.params'``."""
        self.save_params(f"{prefix}.params")

    def load(self, prefix):
        """MinPy's name: :meth:`load_params` from ``prefix + '.params'``."""
        self.load_params(f"{prefix}.params")


class SymbolModel(ModelBase):
    """A model whose forward is a ``minpy.symbol`` network run as one big operator.

    Args:
        symbol: the network, ending at the model's output (e.g. the logits).
        input_shapes: ``{data_name: shape}`` of one batch (bound once per shape met).
        loss: ``loss(predict, y) -> scalar`` in NumPy style; default softmax
            cross-entropy with integer labels.
        data_name: the symbol's input the batch's data feeds.
        **function_options: passed to ``minpy.symbol.function``.

    ``params`` are the symbol's arguments other than the inputs (declared with
    their inferred shapes, initialised by the Solver's init rule); ``aux_params``
    are the network's BatchNorm moving statistics (updated in train mode).
    See also minpy.symbol.function.
    """

    def __init__(self, symbol, input_shapes, loss=None, data_name="data", **function_options):
        super().__init__()
        self.net = Function(symbol, dict(input_shapes), **function_options)
        self.data_name = data_name
        self._loss = loss
        for name, shape in self.net.param_shapes.items():
            self.add_param(name, shape, **_default_init(name))
        self.aux_params = self.net.aux_params
        self.aux_param_configs = dict(self.net.aux_params)

    def forward(self, X, mode):
        """The network's output on ``X`` (BatchNorm/Dropout in train mode when ``mode == 'train'``)."""
        return self.net(is_train=(mode == "train"), **{self.data_name: X}, **self.params)

    def loss(self, predict, y):
        """``loss(predict, y)`` given at construction, else mean softmax cross-entropy."""
        if self._loss is not None:
            return self._loss(predict, y)
        shifted = predict - mnp.max(predict, axis=1, keepdims=True)
        log_probs = shifted - mnp.log(mnp.sum(mnp.exp(shifted), axis=1, keepdims=True))
        return -mnp.mean(log_probs[mnp.arange(len(y)), y])

    def set_params(self, params, aux_params=None):
        super().set_params(params, None)
        if aux_params:
            self.net.set_aux_params({k: mnp.array(numpy.asarray(v))
                                     for k, v in aux_params.items()})
            self.aux_params = self.net.aux_params


def _default_init(name):
    """Biases and BatchNorm shifts start at 0, BatchNorm scales at 1 (as MXNet's initializers)."""
    if name.endswith(("_bias", "_beta")):
        return {"init_rule": "constant", "init_config": {"value": 0.0}}
    if name.endswith("_gamma"):
        return {"init_rule": "constant", "init_config": {"value": 1.0}}
    return {}
