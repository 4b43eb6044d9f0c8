"""``minpy.nn.modular``: MinPy's later model API -- ``Layer``, containers, ``Model``.

MinPy's master branch (dmlc/minpy, April-May 2017; branches ``model_builder`` and
``nn_gan``) rewrote ``minpy/nn/model_builder.py`` around these classes, with the
layers in ``minpy/nn/modules.py`` (:mod:`minpy.nn.modules` here). Its examples
(examples/nn/resnet.py, rnn_on_mnist.py, stochastic_depth_network.py, vgg.py,
symbolic_resnet.py) are written as::

    from minpy.nn.model_builder import *
    from minpy.nn.modules import *

    class RNNModel(Model):
        def __init__(self, hidden_state_size):
            super(RNNModel, self).__init__(loss='softmax_loss')
            self._rnn = RNN(hidden_state_size, 'tanh')
            self._linear = FullyConnected(num_hidden=10)

        def forward(self, data, mode='training'):
            hidden = None
            for i in range(data.shape[1]):
                hidden = self._rnn(data[:, i, :], hidden)
            return self._linear(hidden)

    model = RNNModel(128)
    updater = Updater(model, update_rule='rmsprop', learning_rate=0.002)
    loss = model(data, labels=labels)       # forward + loss, recorded
    grad_dict = model.backward()            # {param name: gradient}
    updater(grad_dict)                      # or: grad_dict, loss = model.grad_and_loss(data, labels)
    scores = model.forward(data, 'inference')

The names mirror MinPy master's ``model_builder.py`` (``Module``, ``Container``,
``Sequential``, ``Parallel``, ``Binary``, ``Add``, ``Sub``, ``Mul``, ``Layer``,
``Model``, ``Updater``), as thin faces over minpy's machinery:

- A :class:`Layer` is registered on a model by assigning it (or a container, or a
  list/tuple/dict holding them) to an attribute of the model. Its parameters are
  created on its first call from the shapes of the arrays it is given, by the
  rule of ``minpy.nn.init`` its init config names (``weight``: xavier, ``bias``,
  ``beta``, ``moving_mean``: 0, ``gamma``, ``moving_var``: 1), and live in
  ``model.params`` / ``model.aux_params`` under global names
  ``<layer name>_<local name>``.
- ``model(...)`` differentiates with :func:`minpy.make_vjp` over ``model.params``;
  ``backward()`` runs the recorded VJP. A call that creates parameters (the first,
  or the first that reaches a layer) runs the forward a second time with them
  traced, restoring the auxiliary state the first run changed (dropout masks and
  other random draws of the first run are discarded: MinPy ran it once).
- ``Updater`` (:mod:`minpy.nn.updater`) runs MinPy's update functions of :mod:`minpy.nn.optim`
  (``sgd``, ``sgd_momentum``, ``rmsprop``, ``adam`` ...), per-parameter configs as
  MinPy's.

Differences from MinPy, where MinPy's code did not work: ``attach``/``detach``
and ``attach_all=False`` raise NotImplementedError (MinPy's needed its tape
internals); a model assigned as an attribute of another model raises TypeError
(MinPy's ``_register_model`` was undefined); a layer without parameters may be
called outside a model (``ReLU()(x)``, as MinPy's later ``model_builder_gtc``
branch allowed). ``Model`` also serves the :class:`~minpy.nn.solver.Solver`
(``loss_and_grad``, ``forward_batch`` with its ``'train'``/``'test'`` modes
translated to ``'training'``/``'inference'``) and :meth:`ModelBase.predict`.
MinPy's JIT branch (``model_builder_gtc``: mxnet NDArrays, ``Model.decorator``)
needs a fork of MXNet and is not built.

See also minpy.nn.modules (the layers), minpy.nn.model_builder (MinPy 0.3's builder).
"""
import functools
import operator

import numpy

from .. import numpy as mnp
from ..core.array import Array
from ..core.differentials import make_vjp
from . import init as _init
from . import layers as _layers
from .model import ModelBase

__all__ = ["Module", "Container", "Sequential", "Parallel", "Binary", "Add", "Sub", "Mul",
           "Layer", "Model"]

_module_counter = {}
_MODES = {"train": "training", "test": "inference"}   # the Solver's names -> MinPy's


def _module_prefix(module_name):
    """``<module_name><n>``: a counter per module name, as MinPy's."""
    index = _module_counter.setdefault(module_name, 0)
    _module_counter[module_name] = index + 1
    return f"{module_name}{index}"


def _is_array(value):
    return isinstance(value, (Array, numpy.ndarray))


def _as_array(value):
    return mnp.asarray(value) if isinstance(value, numpy.ndarray) else value


def _as_tuple(value):
    if value is None:
        return ()
    return value if isinstance(value, tuple) else (value,)


class Module:
    """Base of layers and containers (MinPy master's ``model_builder.Module``).

    Args:
        name: the module's name; None: ``<_module_name><n>`` (a counter per kind).
    Subclasses set ``_module_name`` and define ``forward``.
    """

    _module_name = None

    def __init__(self, name=None):
        if self._module_name is None and name is None:
            raise NotImplementedError(f"{type(self).__name__}: a module class must set "
                                      "_module_name (or be given a name)")
        self._name = _module_prefix(self._module_name) if name is None else str(name)

    @property
    def name(self):
        """The module's name (prefix of its parameters' global names)."""
        return self._name

    def forward(self, *args, **kwargs):
        """The module's output (defined by subclasses)."""
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def __repr__(self):
        return str(self)

    def __str__(self):
        return self._name

    def __add__(self, other):
        return Add(self, other)

    def __sub__(self, other):
        return Sub(self, other)

    def __mul__(self, other):
        return Mul(self, other)

    def training(self):
        """Switch to training mode (Dropout drops, BatchNorm uses batch statistics)."""

    def inference(self):
        """Switch to inference mode."""

    def _affiliate_to(self, model):
        """Bind the module (and what it contains) to ``model``."""
        raise NotImplementedError(f"{type(self).__name__} must define _affiliate_to")

    def _layers(self):
        """The layers in this module (itself, or those it contains)."""
        return ()


class Container(Module):
    """A module made of modules (MinPy's ``Container``)."""

    def _children(self):
        return ()

    def training(self):
        for module in self._children():
            module.training()

    def inference(self):
        for module in self._children():
            module.inference()

    def _affiliate_to(self, model):
        for module in self._children():
            module._affiliate_to(model)

    def _layers(self):
        return tuple(layer for module in self._children() for layer in module._layers())

    def param_shapes(self, input_shape):
        """MinPy's placeholder: a container's parameters belong to its modules."""
        return {}

    def aux_param_shapes(self, input_shape):
        """MinPy's placeholder: a container's auxiliary state belongs to its modules."""
        return {}


class Sequential(Container):
    """Modules applied in order, each to the previous one's outputs (MinPy's ``Sequential``).

    Args:
        *args: the modules; ``name=`` keyword optional. A module returning a tuple
            passes it on as several positional arguments.
    ``append``, ``insert``, ``pop``, ``reverse``, iteration, ``len`` and indexing
    act on the list of modules.
    """

    _module_name = "sequential"

    def __init__(self, *args, **kwargs):
        super().__init__(kwargs.pop("name", None))
        if kwargs:
            raise TypeError(f"Sequential: unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            self._check(arg, "Sequential")
        self._modules = list(args)

    @staticmethod
    def _check(module, who):
        if not isinstance(module, Module):
            raise TypeError(f"{who}: expected a module of minpy.nn.modules, got "
                            f"{type(module).__name__}")

    def append(self, module):
        """Append ``module``."""
        self._check(module, "Sequential.append")
        self._modules.append(module)

    def insert(self, index, module):
        """Insert ``module`` at ``index``."""
        self._check(module, "Sequential.insert")
        self._modules.insert(index, module)

    def pop(self, index=-1):
        """Remove and return the module at ``index``."""
        return self._modules.pop(index)

    def reverse(self):
        """Reverse the order of the modules."""
        self._modules.reverse()

    def __iter__(self):
        return iter(self._modules)

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, index):
        return self._modules[index]

    def __str__(self):
        return str(self._modules)

    def _children(self):
        return tuple(self._modules)

    def forward(self, *args):
        """The last module's output; tuples are passed on as positional arguments."""
        result = functools.reduce(lambda values, module: _as_tuple(module(*values)),
                                  self._modules, args)
        return result[0] if len(result) == 1 else result


class Parallel(Container):
    """Base of modules combining branches applied to the same input (MinPy's)."""


class Binary(Parallel):
    """``operator(left(X), right(X))`` (MinPy's ``Binary``; see Add, Sub, Mul)."""

    def __init__(self, left, right, op, name=None):
        super().__init__(name)
        Sequential._check(left, type(self).__name__)
        Sequential._check(right, type(self).__name__)
        self._left, self._right, self._operator = left, right, op

    def __str__(self):
        return f"{self._left} {self._module_name} {self._right}"

    def _children(self):
        return (self._left, self._right)

    def forward(self, X):
        """Both branches on ``X``, combined."""
        return self._operator(self._left(X), self._right(X))


class Add(Binary):
    """``left(X) + right(X)`` (also ``left + right`` on modules)."""

    _module_name = "add"

    def __init__(self, left, right, name=None):
        super().__init__(left, right, operator.add, name)


class Sub(Binary):
    """``left(X) - right(X)`` (also ``left - right`` on modules)."""

    _module_name = "sub"

    def __init__(self, left, right, name=None):
        super().__init__(left, right, operator.sub, name)


class Mul(Binary):
    """``left(X) * right(X)`` (also ``left * right`` on modules)."""

    _module_name = "mul"

    def __init__(self, left, right, name=None):
        super().__init__(left, right, operator.mul, name)


def _register_configs(configs, to_register):
    """MinPy's rule: a key naming a parameter updates that parameter's config; any
    other key is an attribute set on every parameter's config."""
    specific = {}
    for identifier, value in to_register.items():
        if not isinstance(identifier, str):
            raise TypeError(f"Layer: config keys must be parameter or attribute names, got "
                            f"{identifier!r}")
        if identifier in configs:
            specific[identifier] = value
        else:
            for config in configs.values():
                config[identifier] = value
    for identifier, value in specific.items():
        if not isinstance(value, dict):
            raise TypeError(f"Layer: the config of parameter {identifier!r} must be a dict, "
                            f"got {type(value).__name__}")
        configs[identifier].update(value)


def _default_init_config(param_name):
    """MinPy's defaults by name: weights xavier; biases, betas, means 0; gammas, variances 1."""
    if "weight" in param_name:
        return {"init_rule": "xavier"}
    if "gamma" in param_name or "moving_var" in param_name:
        return {"init_rule": "constant", "value": 1}
    return {"init_rule": "constant", "value": 0}


class Layer(Module):
    """A module with parameters held by a model (MinPy master's ``Layer``).

    Args:
        params: local names of the trainable parameters (``('weight', 'bias')``).
        aux_params: local names of the auxiliary state.
        name: the layer's name (default ``<_module_name><n>``).

    Each local name ``p`` becomes an attribute holding the global name
    (``self.weight == 'dense0_weight'``; an aux name as ``self._p``). A subclass
    defines ``forward`` (reading values with ``_get_param(self.weight)``) and
    ``param_shapes(*input_shapes)`` / ``aux_param_shapes(*input_shapes)`` returning
    ``{global name: shape}``; the values are created on the first call.
    ``_register_init_configs`` / ``_register_update_configs`` take ``{local or
    global name: {...}}`` or attributes for every parameter (``{'init_rule':
    'gaussian', 'stdvar': 0.01}``; a tuple of names as a key configures a group).
    """

    def __init__(self, params=None, aux_params=None, name=None):
        super().__init__(name)
        self._module_param_names = tuple(params or ())
        self._param_names = self._assign_param_names(*self._module_param_names)
        for local, full in zip(self._module_param_names, self._param_names):
            setattr(self, local, full)
        self._module_aux_param_names = tuple(aux_params or ())
        self._aux_param_names = self._assign_param_names(*self._module_aux_param_names)
        for local, full in zip(self._module_aux_param_names, self._aux_param_names):
            setattr(self, f"_{local}", full)
        self._model = None
        self._init_configs = {n: {} for n in self._param_names + self._aux_param_names}
        self._register_init_configs(
            {n: _default_init_config(n)
             for n in self._module_param_names + self._module_aux_param_names})
        self._update_configs = {n: {} for n in self._param_names}
        self._register_update_configs({"update_rule": "unspecified"})
        self._mode = "training"
        self._initialized = not (self._param_names or self._aux_param_names)

    def __call__(self, *args, **kwargs):
        if not self._initialized:
            if self._model is None:
                raise RuntimeError(f"{type(self).__name__} {self._name!r}: a layer with "
                                   "parameters must be assigned to an attribute of a Model "
                                   "before it is called")
            arg_shapes = tuple(tuple(a.shape) for a in args if _is_array(a))
            kwarg_shapes = {k: tuple(v.shape) for k, v in kwargs.items() if _is_array(v)}
            self._init_params(self.param_shapes(*arg_shapes, **kwarg_shapes))
            self._init_aux_params(self.aux_param_shapes(*arg_shapes, **kwarg_shapes))
            self._initialized = True
        return self.forward(*args, **kwargs)

    def _assign_param_names(self, *params):
        return tuple(f"{self._name}_{p}" for p in params)

    def _affiliate_to(self, model):
        if self._model is not None and self._model is not model:
            raise ValueError(f"{type(self).__name__} {self._name!r} already belongs to another "
                             "model; a layer's parameters live in one model")
        model._update_configs.update(self._update_configs)
        self._model = model

    def _layers(self):
        return (self,)

    def _make(self, name, shape):
        config = self._init_configs[name]
        rule = config.get("init_rule")
        fn = getattr(_init, str(rule), None) if not str(rule).startswith("_") else None
        if fn is None:
            raise ValueError(f"{type(self).__name__} {self._name!r}: unknown init_rule {rule!r} "
                             f"for {name!r} (minpy.nn.init: {_init.__all__})")
        return fn(tuple(int(s) for s in shape), config)

    def _init_params(self, param_shapes):
        for name, shape in param_shapes.items():
            if name not in self._init_configs:
                raise KeyError(f"{type(self).__name__}.param_shapes: {name!r} is not one of "
                               f"the layer's parameters {self._param_names}")
            if name not in self._model.params:          # pre-loaded values are kept
                self._model.params[name] = self._make(name, shape)

    def _init_aux_params(self, aux_param_shapes):
        for name, shape in aux_param_shapes.items():
            if name not in self._init_configs:
                raise KeyError(f"{type(self).__name__}.aux_param_shapes: {name!r} is not one "
                               f"of the layer's auxiliary parameters {self._aux_param_names}")
            if name not in self._model.aux_params:
                self._model.aux_params[name] = self._make(name, shape)
            self._model._remember_aux(name)

    def _get_param(self, param_name):
        return self._model.params[param_name]

    def _get_params(self, *param_names):
        return tuple(self._model.params[n] for n in param_names)

    def _get_aux_param(self, aux_param_name):
        return self._model.aux_params[aux_param_name]

    def _get_aux_params(self, *aux_param_names):
        return tuple(self._model.aux_params[n] for n in aux_param_names)

    def _parse_param_configs(self, configs):
        if configs is None:
            return {}
        parsed = {}
        for key, value in configs.items():
            for one in (key if isinstance(key, tuple) else (key,)):
                parsed[one] = value
        to_global = dict(zip(self._module_param_names + self._module_aux_param_names,
                             self._param_names + self._aux_param_names))
        return {to_global.get(k, k): v for k, v in parsed.items()}

    def _register_init_configs(self, init_configs):
        _register_configs(self._init_configs, self._parse_param_configs(init_configs))

    def _register_update_configs(self, update_configs):
        _register_configs(self._update_configs, self._parse_param_configs(update_configs))

    def training(self):
        self._mode = "training"

    def inference(self):
        self._mode = "inference"

    @property
    def param_dict(self):
        """``{global name: value}`` of the layer's parameters."""
        return dict(zip(self._param_names, self._get_params(*self._param_names)))

    @property
    def aux_param_dict(self):
        """``{global name: value}`` of the layer's auxiliary state."""
        return dict(zip(self._aux_param_names, self._get_aux_params(*self._aux_param_names)))

    def param_shapes(self, *args, **kwargs):
        """``{global name: shape}`` of every parameter for inputs of these shapes."""
        return {}

    def aux_param_shapes(self, *args, **kwargs):
        """``{global name: shape}`` of every auxiliary parameter."""
        return {}


class _InferenceView:
    """The model as :meth:`ModelBase.predict` sees it: the Solver's mode names translated."""

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)

    def forward(self, X, mode):
        return self._model.forward(X, _MODES.get(mode, mode))


# ModelBase's own dicts: assigned often (loss_and_grad swaps params), never modules
_PLAIN = frozenset({"params", "param_configs", "aux_params", "aux_param_configs"})


class Model(ModelBase):
    """A model whose layers are its attributes (MinPy master's ``model_builder.Model``).

    Args:
        loss: None (the forward's outputs are what ``backward`` differentiates,
            unless the subclass defines ``loss``), the name of a loss of
            ``minpy.nn.layers`` (``'softmax_loss'``, ``'l2_loss'`` ...) or a callable
            ``loss(*predictions, *labels, **loss_kwargs)``.

    A subclass assigns its layers (or containers, or lists/tuples/dicts of them)
    to attributes in ``__init__`` and defines ``forward(*data, mode='training')``.
    See the module docstring for the training loop.

    Raises:
        ValueError: an unknown loss name. TypeError: a model assigned as an
        attribute (MinPy's nested models never worked).
    """

    def __init__(self, loss=None):
        object.__setattr__(self, "_modules", [])
        object.__setattr__(self, "_layer_names", {})
        object.__setattr__(self, "_update_configs", {})
        object.__setattr__(self, "_vjp", None)
        object.__setattr__(self, "_results", None)
        object.__setattr__(self, "_aux_snapshot", None)
        super().__init__()
        if loss is not None:
            self.loss = self._resolve_loss(loss, f"{type(self).__name__}")

    # ------------------------------------------------------------- registration
    def __setattr__(self, attr, attr_value):
        if attr not in _PLAIN:
            self._register(attr_value, attr)
        object.__setattr__(self, attr, attr_value)

    def _register(self, value, attr):
        if isinstance(value, Model):
            raise TypeError(f"{type(self).__name__}.{attr}: a Model cannot be an attribute of "
                            "another Model (MinPy never supported it); assign its layers, "
                            "or keep the two models apart")
        if isinstance(value, Module):
            self._register_module(value)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for element in value:
                self._register(element, attr)
        elif isinstance(value, dict):
            for element in value.values():
                self._register(element, attr)

    def _register_module(self, module):
        if any(m is module for m in self._modules):
            return
        for layer in module._layers():
            other = self._layer_names.get(layer.name)
            if other is not None and other is not layer:
                raise ValueError(f"{type(self).__name__}: two layers are named {layer.name!r}; "
                                 "their parameters would share names")
        module._affiliate_to(self)
        self._modules.append(module)
        for layer in module._layers():
            self._layer_names[layer.name] = layer

    def add_param(self, *args, **kwargs):
        """Refused: a layer creates its parameters (MinPy's ``Model`` disabled it too)."""
        raise NotImplementedError(f"{type(self).__name__}.add_param: parameters of a "
                                  "minpy.nn.modules Model are created by its layers")

    def add_params(self, *args, **kwargs):
        """Refused, as :meth:`add_param`."""
        self.add_param()

    def add_aux_param(self, *args, **kwargs):
        """Refused, as :meth:`add_param`."""
        self.add_param()

    def attach(self, name, array):
        """MinPy's tape-level attach: not built (every parameter is differentiated)."""
        raise NotImplementedError(f"{type(self).__name__}.attach: minpy differentiates every "
                                  "parameter in model.params; select gradients from the "
                                  "dict backward() returns")

    def detach(self, name):
        """MinPy's tape-level detach: not built (see :meth:`attach`)."""
        self.attach(name, None)

    # ------------------------------------------------------------- modes
    def training(self):
        """Training mode for every registered module."""
        for module in self._modules:
            module.training()

    def inference(self):
        """Inference mode for every registered module."""
        for module in self._modules:
            module.inference()

    # ------------------------------------------------------------- computation
    def forward(self, *args, **kwargs):
        """The model's outputs (defined by subclasses: ``forward(*data, mode='training')``)."""
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def _resolve_loss(self, loss, who):
        if isinstance(loss, str):
            fn = getattr(_layers, loss, None)
            if fn is None or loss.startswith("_") or not callable(fn):
                raise ValueError(f"{who}: unknown loss {loss!r}: not a function of "
                                 "minpy.nn.layers (e.g. 'softmax_loss', 'l2_loss', 'svm_loss')")
            return fn
        if not callable(loss):
            raise TypeError(f"{who}: loss must be a name of minpy.nn.layers or a callable, "
                            f"got {loss!r}")
        return loss

    def _loss_function(self, loss, who):
        if loss is not None:
            return self._resolve_loss(loss, who)
        if "loss" in self.__dict__ or type(self).loss is not ModelBase.loss:
            return self.loss
        return None

    def _pending(self):
        return any(not layer._initialized for layer in self._layer_names.values())

    def _remember_aux(self, name):
        """Called by a layer making or binding aux state ``name`` during a call that
        may run twice: keep its value now, to restore before the second run."""
        snapshot = self._aux_snapshot
        if snapshot is not None and name not in snapshot and name in self.aux_params:
            value = self.aux_params[name]
            snapshot[name] = (value, numpy.array(value.asnumpy() if isinstance(value, Array)
                                                 else value, copy=True))

    def _restore_aux(self):
        for name, (value, host) in self._aux_snapshot.items():
            self.aux_params[name] = value
            if isinstance(value, Array):
                value[...] = host

    def __call__(self, forward_args=None, forward_kwargs=None, labels=None, loss_kwargs=None,
                 forward=None, loss=None, attach_all=True, reduce_array=False):
        """Run forward and loss on the tape (MinPy master's ``Model.__call__``).

        Args:
            forward_args: an array or a tuple of arrays (NumPy arrays are converted).
            forward_kwargs: dict of keyword arguments of the forward (``mode`` is
                set to ``'training'``).
            labels: an array or a tuple of arrays, after the predictions in the
                loss's arguments.
            loss_kwargs: dict of keyword arguments of the loss.
            forward: the forward function (default ``self.forward``).
            loss: a name of ``minpy.nn.layers`` or a callable (default the model's).
            attach_all: must be True (every parameter is differentiated).
            reduce_array: return a size-1 result as a Python float.
        Returns:
            The loss (or the forward's outputs when there is no loss); then
            :meth:`backward` gives the gradients.
        Raises:
            TypeError: ``forward_kwargs`` is not a dict (labels go in ``labels=``),
            or the forward returned something other than arrays.
            NotImplementedError: ``attach_all=False``.
        """
        who = f"{type(self).__name__}.__call__"
        if not attach_all:
            raise NotImplementedError(f"{who}: attach_all=False is not built; every parameter "
                                      "is differentiated (pick gradients from backward())")
        if forward_kwargs is not None and not isinstance(forward_kwargs, dict):
            raise TypeError(f"{who}: forward_kwargs (the second positional argument) must be a "
                            f"dict, got {type(forward_kwargs).__name__}; give labels as "
                            "model(data, labels=labels)")
        args = tuple(_as_array(a) for a in _as_tuple(forward_args))
        kwargs = dict(forward_kwargs or {}, mode="training")
        labels = tuple(_as_array(a) for a in _as_tuple(labels))
        loss_kwargs = dict(loss_kwargs or {})
        forward = self.forward if forward is None else forward
        loss_fn = self._loss_function(loss, who)
        seen = {}

        def objective(params):
            saved = self.params
            seen["params"] = params
            object.__setattr__(self, "params", params)
            try:
                predictions = forward(*args, **kwargs)
                outs = predictions if isinstance(predictions, (tuple, list)) else (predictions,)
                if not outs or not all(isinstance(p, Array) for p in outs):
                    raise TypeError(f"{who}: the forward must return an array or a tuple of "
                                    f"arrays, got {type(predictions).__name__}")
                if loss_fn is None:
                    return predictions
                return loss_fn(*(tuple(outs) + labels), **loss_kwargs)
            finally:
                object.__setattr__(self, "params", saved)

        object.__setattr__(self, "_vjp", None)
        for _ in range(len(self._layer_names) + 2):
            pending = self._pending()
            object.__setattr__(self, "_aux_snapshot", {} if pending else None)
            if pending:
                for name in list(self.aux_params):
                    self._remember_aux(name)
            try:
                vjp, results = make_vjp(objective)(dict(self.params))
                created = {k: v for k, v in seen["params"].items() if k not in self.params}
                if not created:
                    break
                # parameters made during the pass were not traced: run it again with them
                self.params.update(created)
                self._restore_aux()
            finally:
                object.__setattr__(self, "_aux_snapshot", None)
        else:
            raise RuntimeError(f"{who}: every run of the forward made new parameters; a "
                               "layer must be an attribute of the model, made once")
        object.__setattr__(self, "_vjp", vjp)
        object.__setattr__(self, "_results", results)
        return self._reduce_array(results) if reduce_array else results

    @staticmethod
    def _reduce_array(value):
        if isinstance(value, (tuple, list)):
            return type(value)(Model._reduce_array(v) for v in value)
        if isinstance(value, Array) and value.size == 1:
            return float(value.asnumpy().reshape(()))
        return value

    def backward(self, upstream=None):
        """The gradients of the last call's results w.r.t. every parameter.

        Args:
            upstream: the gradient of the results (an array, or a tuple for
                several); default ones (a scalar loss: its plain gradient).
        Returns:
            dict global parameter name -> gradient Array.
        Raises:
            RuntimeError: no call to record the results first.
        """
        if self._vjp is None:
            raise RuntimeError(f"{type(self).__name__}.backward: call the model first "
                               "(loss = model(data, labels=labels))")
        results = self._results
        if upstream is None:
            if isinstance(results, (tuple, list)):
                upstream = type(results)(mnp.ones_like(r) for r in results)
            else:
                upstream = mnp.ones_like(results)
        else:
            upstream = tuple(_as_array(u) for u in upstream) \
                if isinstance(upstream, (tuple, list)) else _as_array(upstream)
        return dict(self._vjp(upstream))

    def grad_and_loss(self, data, labels):
        """``(grad_dict, loss)`` on one batch (MinPy's; ``loss`` a float when scalar).

        Args:
            data: an array or a tuple of arrays (the forward's positional arguments).
            labels: an array or a tuple of arrays.
        """
        results = self(data, labels=labels)
        return self.backward(), self._reduce_array(results)

    # ------------------------------------------------------------- the Solver's protocol
    def forward_batch(self, batch, mode):
        """``forward`` on a batch's first data array, ``'train'``/``'test'`` as MinPy's modes."""
        return self.forward(batch.data[0], mode=_MODES.get(mode, mode))

    def loss_batch(self, batch, forward_outputs):
        """The model's loss on a batch's first label."""
        loss_fn = self._loss_function(None, f"{type(self).__name__}.loss_batch")
        if loss_fn is None:
            raise NotImplementedError(f"{type(self).__name__}: no loss (give Model(loss=...))")
        return loss_fn(*(_as_tuple(forward_outputs) + (batch.label[0],)))

    def loss_and_grad(self, X, y=None, mode="train"):
        """``(loss, grads)`` on ``X`` (or a DataBatch) and ``y`` through :meth:`__call__`."""
        if mode != "train":
            raise ValueError(f"{type(self).__name__}.loss_and_grad: MinPy's Model trains in "
                             f"'training' mode only, got mode={mode!r}")
        if hasattr(X, "data") and hasattr(X, "label"):
            X, y = X.data[0], X.label[0]
        loss = self(X, labels=y)
        return loss, self.backward()

    def predict(self, X, batch_size=1024):
        """:meth:`ModelBase.predict`: ``forward(X, mode='inference')`` in batches."""
        return ModelBase.predict(_InferenceView(self), X, batch_size)
