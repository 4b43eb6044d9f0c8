"""``minpy.nn.modules``: MinPy master's layers (its ``minpy/nn/modules.py``, 2017).

The layers of MinPy's later model API, for models built as
:class:`minpy.nn.modular.Model` subclasses (see that module for the training
loop). Programs import them as MinPy's examples do::

    from minpy.nn.model_builder import *
    from minpy.nn.modules import *

so this module also exports the model API itself (``Model``, ``Updater``,
``Layer``, ``Sequential``, ``Add`` ...): the later import wins over MinPy 0.3's
builder names of :mod:`minpy.nn.model_builder`, as MinPy's rewrite replaced them.

Layers (MinPy's names and arguments):

- elementwise and shapes: ``Identity``, ``ReLU``, ``Logistic``, ``Tanh``,
  ``Dropout(p)``, ``Reshape(shape)``, ``BatchReshape(shape)`` (per sample),
  ``Flatten`` (to one vector), ``BatchFlatten`` (to (N, D));
- ``Variable(shape)``: a trainable array the forward returns;
- ``Symbolic(symbol, variables=('data',))``: a ``minpy.symbol`` network run as
  one differentiable operator (:class:`minpy.symbol.Function`), its other
  arguments as parameters and its auxiliary states (BatchNorm's moving
  statistics) in ``model.aux_params``; called with the variables as keywords;
- one MXNet operator each, keyword arguments as MXNet's: ``FullyConnected``,
  ``Embedding``, ``Convolution``, ``Pooling``, ``BatchNorm`` (``init_configs=`` /
  ``update_configs=`` per layer, ``name=`` names the operator as MinPy's);
- ``RNN(num_hidden, act_type)``: one Elman step ``act(W x + U h + b)``, called as
  ``rnn(x, h)`` (``h=None``: zeros); ``LSTM(num_hidden, act_type)``: one LSTM step
  called as ``lstm(x, h, c)``, returning ``(h, c)`` (gates ``i, f, o, g`` from one
  affine map of ``x`` and one of ``h``).

From MinPy's later branches (``model_builder_gtc``, ``nn_gan``: their DCGAN and LSTM
benchmarks): ``Activation``, ``Deconvolution`` (``DeConvolution``, the DCGAN
example's spelling), ``LeakyReLU`` (MXNet's operators, as above), ``Sigmoid``, and
``FullyConnectedND(num_hidden)`` (``X W + b`` with ``W`` of shape (in, out)).

Where MinPy's code did not run (``Dropout``, ``Logistic`` and ``Tanh`` named
undefined modules) the layers do what their docstrings said; ``Dropout`` is the
identity in inference mode. ``RNN``'s hidden-to-hidden weight starts from
xavier, as MinPy's did (its identity ``value`` was ignored by the xavier rule).

See also minpy.nn.modular (Module, Layer, Model), minpy.nn.updater (Updater).
"""
import functools
import operator

from .. import numpy as mnp
from .. import symbol as _sym
from ..symbol.function import Function
from . import layers as _layers
from .modular import Module, Container, Sequential, Parallel, Binary, Add, Sub, Mul, Layer, Model
from .updater import Updater

__all__ = ["Module", "Container", "Sequential", "Parallel", "Binary", "Add", "Sub", "Mul",
           "Layer", "Model", "Updater",
           "Variable", "Identity", "ReLU", "Dropout", "Logistic", "Tanh", "Reshape",
           "BatchReshape", "Flatten", "BatchFlatten", "Symbolic", "FullyConnected", "Embedding",
           "Convolution", "Pooling", "BatchNorm", "RNN", "LSTM",
           "Activation", "Deconvolution", "DeConvolution", "LeakyReLU", "Sigmoid",
           "FullyConnectedND"]


class Variable(Layer):
    """A trainable array of ``shape``, returned by ``forward()`` (MinPy's ``Variable``)."""

    _module_name = "variable"

    def __init__(self, shape, init_configs=None, update_configs=None, name=None):
        self._shape = tuple(shape)
        super().__init__(("variable",), None, name)
        self._register_init_configs(init_configs)
        self._register_update_configs(update_configs)

    def forward(self):
        return self._get_param(self.variable)

    def param_shapes(self, *args):
        return {self.variable: self._shape}


class Identity(Layer):
    """``X`` unchanged."""

    _module_name = "identity"

    def __init__(self, name=None):
        super().__init__(name=name)

    def forward(self, X):
        return X


class ReLU(Layer):
    """Rectified linear unit (``minpy.nn.layers.relu``)."""

    _module_name = "ReLU"

    def __init__(self, name=None):
        super().__init__(name=name)

    def forward(self, X, *args):
        return _layers.relu(X)


class Dropout(Layer):
    """Inverted dropout with drop probability ``p`` in training mode; identity in inference."""

    _module_name = "dropout"

    def __init__(self, p, name=None):
        super().__init__(name=name)
        self._p = p

    def forward(self, data):
        return _layers.dropout(data, self._p, mode="train" if self._mode == "training" else "test")


class Logistic(Layer):
    """The logistic function ``1 / (1 + exp(-X))``."""

    _module_name = "logistic"

    def __init__(self, name=None):
        super().__init__(name=name)

    def forward(self, X, *args):
        return _layers.sigmoid(X)


class Tanh(Layer):
    """The hyperbolic tangent."""

    _module_name = "tanh"

    def __init__(self, name=None):
        super().__init__(name=name)

    def forward(self, X, *args):
        return mnp.tanh(X)


class Reshape(Layer):
    """``X`` reshaped to ``shape`` (the whole array, batch axis included)."""

    _module_name = "reshape"

    def __init__(self, shape, name=None):
        super().__init__(name=name)
        self._shape = tuple(shape)

    def forward(self, X, *args):
        return mnp.reshape(X, self._shape)


class BatchReshape(Reshape):
    """Each sample reshaped to ``shape``: ``X.shape[:1] + shape``."""

    _module_name = "batch_reshape"

    def forward(self, X, *args):
        return mnp.reshape(X, tuple(X.shape[:1]) + self._shape)


class Flatten(Layer):
    """``X`` as one vector (the batch axis included, as MinPy's)."""

    _module_name = "flatten"

    def __init__(self, name=None):
        super().__init__(name=name)

    def forward(self, X):
        return mnp.reshape(X, (functools.reduce(operator.mul, X.shape, 1),))


class BatchFlatten(Flatten):
    """Each sample flattened: shape ``(N, D)``."""

    def forward(self, X):
        return mnp.reshape(X, (X.shape[0], functools.reduce(operator.mul, X.shape[1:], 1)))


class Symbolic(Layer):
    """A ``minpy.symbol`` network as a layer (MinPy's ``Symbolic``).

    Args:
        symbol: the network; its arguments other than ``variables`` are the
            layer's parameters, its auxiliary states the layer's aux params.
        variables: the names of the inputs (default ``('data',)``), given as
            keywords when the layer is called.
        init_configs, update_configs: as :class:`Layer`'s registrations.
        name: the layer's name.

    Runs the network as one differentiable operator (a
    :class:`minpy.symbol.Function` made on the first call, rebound per input
    shape), in training mode when the layer is (BatchNorm's batch statistics,
    Dropout); several outputs come back as a tuple. Floating inputs of another
    dtype are cast to the parameters' (float32), as MinPy's MXNet symbols did.
    """

    _module_name = "symbolic"

    def __init__(self, symbol, variables=None, init_configs=None, update_configs=None,
                 name=None):
        self._symbol = symbol
        self._variables = ("data",) if variables is None else tuple(variables)
        arguments = list(symbol.list_arguments())
        missing = [v for v in self._variables if v not in arguments]
        if missing:
            raise ValueError(f"Symbolic: variables {missing} are not arguments of the symbol "
                             f"{arguments}")
        super().__init__(tuple(a for a in arguments if a not in self._variables),
                         tuple(symbol.list_auxiliary_states()), name)
        self._register_init_configs(init_configs)
        self._register_update_configs(update_configs)
        self._func = None

    def _function(self, shapes):
        if self._func is None:
            unknown = sorted(set(shapes) - set(self._variables))
            if unknown:
                raise TypeError(f"{type(self).__name__} {self._name!r}: unknown inputs {unknown}; "
                                f"the variables are {self._variables}")
            self._func = Function(self._symbol, dict(shapes), name=self._name)
        return self._func

    def _sync_aux(self, func, into_function):
        for local, full in zip(self._module_aux_param_names, self._aux_param_names):
            ours, its = self._model.aux_params.get(full), func.aux_params[local]
            if into_function:
                if ours is not None and ours is not its:
                    func.set_aux_params({local: ours})     # pre-loaded or restored values
                self._model.aux_params[full] = func.aux_params[local]
                self._model._remember_aux(full)
            else:
                self._model.aux_params[full] = its

    def forward(self, **kwargs):
        """The network's output(s) on the variables given as keywords."""
        missing = [v for v in self._variables if v not in kwargs]
        if missing:
            raise TypeError(f"{type(self).__name__} {self._name!r}: missing inputs {missing}")
        func = self._function({k: tuple(v.shape) for k, v in kwargs.items()})
        if self._aux_param_names:
            self._sync_aux(func, into_function=True)
        params = self._get_params(*self._param_names)
        dtype = params[0].dtype if params else func.dtype
        # MinPy ran symbols in MXNet's float32 whatever NumPy's dtype: floats follow the params
        inputs = {k: _floats_as(mnp.asarray(v), dtype) for k, v in kwargs.items()}
        inputs.update(zip(self._module_param_names, params))
        outputs = func(is_train=self._mode == "training", **inputs)
        if self._aux_param_names:
            self._sync_aux(func, into_function=False)
        return outputs

    def param_shapes(self, **kwargs):
        """``{global name: shape}`` inferred from the variables' shapes (keywords)."""
        to_global = dict(zip(self._module_param_names, self._param_names))
        shapes = self._function(kwargs).param_shapes
        return {to_global[k]: s for k, s in shapes.items()}

    def aux_param_shapes(self, **kwargs):
        """``{global name: shape}`` of the auxiliary states."""
        to_global = dict(zip(self._module_aux_param_names, self._aux_param_names))
        return {to_global[k]: s for k, s in self._function(kwargs).aux_shapes.items()}


def _floats_as(x, dtype):
    return mnp.astype(x, dtype) if x.dtype.kind == "f" and x.dtype != dtype else x


class _Operator(Symbolic):
    """One ``minpy.symbol`` operator on ``data``, MXNet's keyword arguments."""

    _operator = None

    def __init__(self, *args, **kwargs):
        init_configs = kwargs.pop("init_configs", None)
        update_configs = kwargs.pop("update_configs", None)
        symbol = getattr(_sym, self._operator)(_sym.Variable("data"), *args, **kwargs)
        super().__init__(symbol, init_configs=init_configs, update_configs=update_configs)

    def forward(self, data):
        return super().forward(data=data)

    def param_shapes(self, input_shape):
        return super().param_shapes(data=input_shape)

    def aux_param_shapes(self, input_shape):
        return super().aux_param_shapes(data=input_shape)


class FullyConnected(_Operator):
    """MXNet's ``FullyConnected`` (``num_hidden``, ``no_bias``, ``flatten``) as a layer."""

    _operator = "FullyConnected"


class Embedding(_Operator):
    """MXNet's ``Embedding`` (``input_dim``, ``output_dim``) as a layer."""

    _operator = "Embedding"


class Convolution(_Operator):
    """MXNet's ``Convolution`` (``num_filter``, ``kernel``, ``stride``, ``pad``, ``no_bias``)."""

    _operator = "Convolution"


class Pooling(_Operator):
    """MXNet's ``Pooling`` (``pool_type``, ``kernel``, ``stride``, ``pad``, ``global_pool``)."""

    _operator = "Pooling"


class BatchNorm(_Operator):
    """MXNet's ``BatchNorm`` (``fix_gamma``, ``eps``, ``momentum``); moving statistics in
    ``model.aux_params``, updated in training mode."""

    _operator = "BatchNorm"


class Activation(_Operator):
    """MXNet's ``Activation`` (``act_type``) as a layer (MinPy's ``model_builder_gtc``)."""

    _operator = "Activation"


class Deconvolution(_Operator):
    """MXNet's ``Deconvolution`` (``num_filter``, ``kernel``, ``stride``, ``pad``, ``adj``,
    ``no_bias``) as a layer (MinPy's ``model_builder_gtc``)."""

    _operator = "Deconvolution"


DeConvolution = Deconvolution          # the spelling of MinPy's nn_gan DCGAN example


class LeakyReLU(_Operator):
    """MXNet's ``LeakyReLU`` (``act_type``, ``slope``) as a layer (MinPy's ``model_builder_gtc``)."""

    _operator = "LeakyReLU"


class Sigmoid(Logistic):
    """The logistic function (MinPy ``model_builder_gtc``'s name)."""

    _module_name = "sigmoid"


class FullyConnectedND(Layer):
    """``X W + b`` with ``W`` of shape (in, out), samples flattened (MinPy
    ``model_builder_gtc``'s layer of its LSTM benchmarks)."""

    _module_name = "fullyconnected-nd"

    def __init__(self, num_hidden, name=None):
        super().__init__(params=("weight", "bias"), name=name)
        self._num_hidden = num_hidden

    def forward(self, X):
        if len(X.shape) > 2:
            X = mnp.reshape(X, (X.shape[0], -1))
        return mnp.dot(X, self._get_param(self.weight)) + self._get_param(self.bias)

    def param_shapes(self, input_shape):
        fan_in = functools.reduce(operator.mul, input_shape[1:], 1)
        return {self.weight: (fan_in, self._num_hidden), self.bias: (self._num_hidden,)}


def _zeros_like_state(data, num_hidden):
    return mnp.zeros((data.shape[0], num_hidden), dtype=data.dtype)


class RNN(Symbolic):
    """One step of an Elman RNN: ``act(x W + h U + b)`` (MinPy's ``RNN``).

    Args:
        num_hidden: the state size.
        act_type: ``'relu'``, ``'sigmoid'``, ``'softrelu'`` or ``'tanh'``.
    Called as ``rnn(x, h)``; ``h=None`` starts from zeros.
    """

    def __init__(self, num_hidden, act_type):
        data = _sym.FullyConnected(data=_sym.Variable("data"), num_hidden=num_hidden,
                                   no_bias=True)
        hidden = _sym.FullyConnected(data=_sym.Variable("hidden"), num_hidden=num_hidden,
                                     name="HH")
        network = _sym.Activation(data=data + hidden, act_type=act_type)
        super().__init__(network, ("data", "hidden"))
        self._num_hidden = num_hidden

    def forward(self, data, hidden=None):
        if hidden is None:
            hidden = _zeros_like_state(data, self._num_hidden)
        return super().forward(data=data, hidden=hidden)

    def param_shapes(self, data_shape, hidden_shape=None):
        hidden_shape = (data_shape[0], self._num_hidden) if hidden_shape is None else hidden_shape
        return super().param_shapes(data=data_shape, hidden=hidden_shape)

    def aux_param_shapes(self, *args):
        return {}


class LSTM(Symbolic):
    """One LSTM step (MinPy's ``LSTM``): ``[i, f, o, g] = x W + h U + b``,
    ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``, ``h' = sigmoid(o) * act(c')``.

    Args:
        num_hidden: the state size.
        act_type: the activation of the cell in the output (MinPy's examples: ``'tanh'``).
    Called as ``lstm(x, h, c)`` (``None``: zeros); returns ``(h', c')``.
    """

    def __init__(self, num_hidden, act_type):
        data = _sym.FullyConnected(data=_sym.Variable("data"), num_hidden=4 * num_hidden,
                                   no_bias=True)
        hidden = _sym.FullyConnected(data=_sym.Variable("hidden"), num_hidden=4 * num_hidden)
        sliced = _sym.SliceChannel(data=data + hidden, num_outputs=4, axis=1)
        i = _sym.Activation(data=sliced[0], act_type="sigmoid")
        f = _sym.Activation(data=sliced[1], act_type="sigmoid")
        o = _sym.Activation(data=sliced[2], act_type="sigmoid")
        g = _sym.Activation(data=sliced[3], act_type="tanh")
        next_cell = f * _sym.Variable("cell") + i * g
        next_hidden = o * _sym.Activation(data=next_cell, act_type=act_type)
        super().__init__(_sym.Group([next_hidden, next_cell]), ("data", "hidden", "cell"))
        self._num_hidden = num_hidden

    def forward(self, data, hidden=None, cell=None):
        if hidden is None:
            hidden = _zeros_like_state(data, self._num_hidden)
        if cell is None:
            cell = _zeros_like_state(data, self._num_hidden)
        return super().forward(data=data, hidden=hidden, cell=cell)

    def param_shapes(self, data_shape, hidden_shape=None, cell_shape=None):
        state = (data_shape[0], self._num_hidden)
        return super().param_shapes(data=data_shape, hidden=hidden_shape or state,
                                    cell=cell_shape or state)

    def aux_param_shapes(self, *args):
        return {}
