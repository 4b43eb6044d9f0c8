"""``minpy.nn.model_builder``: MinPy's model builder (its tutorial's Keras-like classes).

::

    import minpy.nn.model_builder as builder
    MLP = builder.Sequential(
        builder.Affine(512),
        builder.ReLU(),
        builder.Affine(10)
    )
    model = builder.Model(MLP, 'softmax', (3 * 32 * 32,))   # a ModelBase for Solver
    solver = Solver(model, train_dataiter, test_dataiter, ...)

Thin faces over :mod:`minpy.nn.layers` and :class:`minpy.nn.model.ModelBase`,
with MinPy's names and interface (MinPy 0.3's ``model_builder.py``, the one its
model-builder tutorial documents):

- A module has ``forward(inputs, params)``, ``output_shape(input_shape)`` and
  ``parameter_shape(input_shape)`` (shapes of one sample, without the batch
  axis), and optionally ``parameter_settings()`` (per-parameter ``init_rule`` /
  ``init_config`` for the Solver). Customised modules subclass :class:`Module`.
- Parameter names are MinPy's: ``affine0_weight``, ``convolution1_bias``,
  ``BN0_gamma``, ``SpatialBN0_beta`` (a counter per class, as MinPy).
- ``params`` passed to ``forward`` holds the model's parameters and
  ``'__training_in_progress__'``: the mode (``'train'`` / ``'test'``) that
  Dropout and BatchNormalization read, as in MinPy (a copy: ``model.params``
  itself is not modified).
- ``Convolution`` and ``Pooling`` run :func:`minpy.nn.layers.conv2d` /
  ``max_pool`` / ``avg_pool`` where MinPy bound an MXNet symbol; the shapes
  follow MXNet's (``(H + 2*pad - kernel) // stride + 1``).

MinPy's later rewrite of this module (master, 2017: ``Layer``, ``Model.__call__``,
``Updater``, with the layers in ``minpy.nn.modules``) is :mod:`minpy.nn.modular`.
Its names that do not clash with the ones above are here too (``Layer``,
``Container``, ``Binary``, ``Sub``, ``Mul``, ``Updater``), and ``Model`` serves
both: ``Model(container, loss, input_shape)`` is the tutorial's model below;
``Model(loss=...)`` and subclasses of ``Model`` (``class ResNet(Model)``) are
MinPy master's :class:`minpy.nn.modular.Model`. ``from minpy.nn.modules import *``
after ``from minpy.nn.model_builder import *`` (MinPy's examples) gives MinPy
master's names throughout.
"""
import functools

import numpy

from .. import numpy as np
from . import layers
from . import modular
from .model import ModelBase
from .modular import Layer, Container, Binary, Sub, Mul
from .updater import Updater

__all__ = ["Module", "Sequential", "Parallel", "Affine", "BatchNormalization",
           "SpatialBatchNormalization", "Convolution", "Dropout", "Pooling", "Identity",
           "Export", "ReLU", "Sigmoid", "Tanh", "Reshape", "Flatten", "Add", "Model",
           "normal_shape", "Layer", "Container", "Binary", "Sub", "Mul", "Updater"]

_MODE = "__training_in_progress__"


def normal_shape(shape):
    """``shape`` as a tuple of Python ints."""
    return tuple(int(d) for d in shape)


def _pair(where, value):
    value = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(value) != 2:
        raise ValueError(f"{where}: expected an (x, y) pair, got {value!r}")
    return tuple(int(v) for v in value)


class Module:
    """The base of the building blocks (MinPy's ``model_builder.Module``).

    A subclass implements ``forward(inputs, params)`` and ``output_shape(input_shape)``;
    one with parameters also ``parameter_shape(input_shape)`` (dict name -> shape)
    and optionally ``parameter_settings()`` (dict name -> Solver init settings).
    Shapes are those of one sample, e.g. (3072,) or (3, 32, 32).
    """

    def forward(self, inputs, params):
        """The module's output for ``inputs`` with the model's ``params``."""
        raise NotImplementedError(f"{type(self).__name__} must define forward(inputs, params)")

    def output_shape(self, input_shape):
        """The shape of one output sample for one input sample of ``input_shape``."""
        raise NotImplementedError(f"{type(self).__name__} must define "
                                  f"output_shape(input_shape)")

    def parameter_shape(self, input_shape):
        """Dict parameter name -> shape (none by default)."""
        return {}

    def parameter_settings(self):
        """Dict parameter name -> ``{'init_rule': ..., 'init_config': {...}}`` (none)."""
        return {}


class Parallel(Module):
    """MinPy's placeholder for parallel containers (see :class:`Add`)."""


class _Container(Module):
    def __init__(self, modules, who):
        for m in modules:
            if not isinstance(m, Module):
                raise TypeError(f"{who}: expected model_builder modules, got "
                                f"{type(m).__name__}")
        self._modules = list(modules)

    def parameter_settings(self):
        settings = {}
        for module in self._modules:
            settings.update(module.parameter_settings())
        return settings


class Sequential(_Container):
    """A feedforward chain of modules (``append``, ``insert``, ``remove`` edit it)."""

    def __init__(self, *args):
        super().__init__(args, "Sequential")

    def forward(self, X, params):
        return functools.reduce(lambda inputs, m: m.forward(inputs, params), self._modules, X)

    def output_shape(self, input_shape):
        return functools.reduce(lambda shape, m: m.output_shape(shape), self._modules,
                                input_shape)

    def parameter_shape(self, input_shape):
        shapes = {}

        def update_shapes(shape, module):
            shapes.update(module.parameter_shape(shape))
            return module.output_shape(shape)
        functools.reduce(update_shapes, self._modules, input_shape)
        return shapes

    def append(self, module):
        """Append ``module`` at the end."""
        self._check(module, "append")
        self._modules.append(module)

    def insert(self, index, module):
        """Insert ``module`` at ``index``."""
        self._check(module, "insert")
        self._modules.insert(index, module)

    def remove(self, index):
        """Remove the module at ``index``.

        Raises:
            IndexError: ``index`` outside ``[0, len)``.
        """
        if not 0 <= index < len(self._modules):
            raise IndexError(f"Sequential.remove: index {index} outside [0, "
                             f"{len(self._modules)})")
        del self._modules[index]

    @staticmethod
    def _check(module, what):
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.{what}: expected a model_builder module, got "
                            f"{type(module).__name__}")


class Add(_Container):
    """The elementwise sum of several modules applied to the same input."""

    def __init__(self, *args):
        super().__init__(args, "Add")

    def forward(self, inputs, params):
        return sum(m.forward(inputs, params) for m in self._modules)

    def output_shape(self, input_shape):
        shapes = [tuple(m.output_shape(input_shape)) for m in self._modules]
        if len(set(shapes)) > 1:
            raise ValueError(f"Add: the branches give different output shapes {shapes}")
        return shapes[0]

    def parameter_shape(self, input_shape):
        shapes = {}
        for m in self._modules:
            shapes.update(m.parameter_shape(input_shape))
        return shapes


class _Counted(Module):
    """A module named ``<prefix><count>_<param>`` with a per-class counter (MinPy's)."""

    count = 0
    prefix = ""

    def _names(self, *params):
        cls = type(self)
        number = cls.__dict__.get("count", 0)
        cls.count = number + 1
        return tuple(f"{self.prefix}{number}_{p}" for p in params)


class Affine(_Counted):
    """A fully connected layer of ``hidden_number`` units (``layers.affine``)."""

    prefix = "affine"

    def __init__(self, hidden_number, initializer=None):
        self.hidden_number = int(hidden_number)
        self.weight, self.bias = self._names("weight", "bias")
        self.initializer = initializer

    def forward(self, inputs, params):
        return layers.affine(inputs, params[self.weight], params[self.bias])

    def parameter_shape(self, input_shape):
        d = int(numpy.prod(input_shape))        # affine flattens each sample
        return {self.weight: (d, self.hidden_number), self.bias: (self.hidden_number,)}

    def output_shape(self, _):
        return (self.hidden_number,)

    def parameter_settings(self):
        return self.initializer if self.initializer else \
            {self.weight: {"init_rule": "xavier"}, self.bias: {"init_rule": "constant"}}


class BatchNormalization(_Counted):
    """Batch normalisation over features (``layers.batchnorm``); running statistics
    kept on the module, as MinPy."""

    prefix = "BN"

    def __init__(self, epsilon=1e-5, momentum=0.9):
        self.epsilon, self.momentum = epsilon, momentum
        self.running_mean = self.running_variance = None
        self.gamma, self.beta = self._names("gamma", "beta")

    def _normalise(self, inputs, params):
        outputs, mean, var = layers.batchnorm(
            inputs, params[self.gamma], params[self.beta], params.get(_MODE, "train"),
            self.epsilon, self.momentum, self.running_mean, self.running_variance)
        self.running_mean, self.running_variance = mean, var
        return outputs

    def forward(self, inputs, params):
        return self._normalise(inputs, params)

    def output_shape(self, input_shape):
        return input_shape

    def parameter_shape(self, input_shape):
        return {self.gamma: tuple(input_shape), self.beta: tuple(input_shape)}

    def parameter_settings(self):
        return {self.gamma: {"init_rule": "constant", "init_config": {"value": 1.0}},
                self.beta: {"init_rule": "constant"}}


class SpatialBatchNormalization(BatchNormalization):
    """Batch normalisation per channel of (N, C, H, W) inputs."""

    prefix = "SpatialBN"
    count = 0

    def forward(self, inputs, params):
        return self._normalise(inputs, params)      # layers.batchnorm takes NCHW

    def parameter_shape(self, input_shape):
        return {self.gamma: (input_shape[0],), self.beta: (input_shape[0],)}


class Convolution(_Counted):
    """A 2-d convolution of ``kernel_number`` kernels of ``kernel_shape`` (x, y)."""

    prefix = "convolution"

    def __init__(self, kernel_shape, kernel_number, stride=(1, 1), pad=(0, 0),
                 initializer=None):
        self.kernel_shape = _pair("Convolution", kernel_shape)
        self.kernel_number = int(kernel_number)
        self.stride, self.pad = _pair("Convolution", stride), _pair("Convolution", pad)
        self.weight, self.bias = self._names("weight", "bias")
        self.initializer = initializer

    def forward(self, inputs, params):
        return layers.conv2d(inputs, params[self.weight], params[self.bias],
                             stride=self.stride, pad=self.pad)

    def output_shape(self, input_shape):
        c, h, w = _chw("Convolution", input_shape)
        (kh, kw), (sh, sw), (ph, pw) = self.kernel_shape, self.stride, self.pad
        return (self.kernel_number, (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1)

    def parameter_shape(self, input_shape):
        c, _, _ = _chw("Convolution", input_shape)
        return {self.weight: (self.kernel_number, c) + self.kernel_shape,
                self.bias: (self.kernel_number,)}

    def parameter_settings(self):
        return self.initializer if self.initializer else \
            {self.weight: {"init_rule": "xavier"}, self.bias: {"init_rule": "constant"}}


def _chw(who, input_shape):
    if len(input_shape) != 3:
        raise ValueError(f"{who}: the input samples have shape {tuple(input_shape)}; "
                         f"expected (C, H, W) (the input tensor should be 4D)")
    return tuple(int(d) for d in input_shape)


class Pooling(Module):
    """2-d pooling: ``mode`` ``'max'``, ``'avg'`` or ``'sum'`` over ``kernel_shape``."""

    count = 0

    def __init__(self, mode, kernel_shape, stride=(1, 1), pad=(0, 0)):
        if mode not in ("max", "avg", "sum"):
            raise ValueError(f"Pooling: mode must be 'max', 'avg' or 'sum', got {mode!r}")
        self.mode = mode
        self.kernel_shape = _pair("Pooling", kernel_shape)
        self.stride, self.pad = _pair("Pooling", stride), _pair("Pooling", pad)
        type(self).count += 1

    def forward(self, inputs, params):
        pool = layers.max_pool if self.mode == "max" else layers.avg_pool
        out = pool(inputs, self.kernel_shape, self.stride, self.pad)
        return out * float(numpy.prod(self.kernel_shape)) if self.mode == "sum" else out

    def output_shape(self, input_shape):
        c, h, w = _chw("Pooling", input_shape)
        (kh, kw), (sh, sw), (ph, pw) = self.kernel_shape, self.stride, self.pad
        return (c, (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1)


class Dropout(Module):
    """Dropout with probability ``p`` in training mode (``layers.dropout``)."""

    def __init__(self, p):
        self.probability = p

    def forward(self, inputs, params):
        return layers.dropout(inputs, self.probability, params.get(_MODE, "train"))

    def output_shape(self, input_shape):
        return input_shape


class Identity(Module):
    """The input unchanged."""

    def forward(self, inputs, *args):
        return inputs

    def output_shape(self, input_shape):
        return input_shape


class Export(Identity):
    """The input unchanged, also stored as ``storage[label]`` at each forward."""

    def __init__(self, label, storage):
        if label in storage:
            raise ValueError(f"Export: duplicated label {label!r}")
        self.label, self.storage = label, storage
        self.storage[label] = None

    def forward(self, inputs, *args):
        self.storage[self.label] = inputs
        return inputs


class _Elementwise(Identity):
    fn = None

    def forward(self, inputs, *args):
        return type(self).fn(inputs)


class ReLU(_Elementwise):
    """Rectified linear unit (``layers.relu``)."""
    fn = staticmethod(layers.relu)


class Sigmoid(_Elementwise):
    """Logistic sigmoid ``1 / (1 + exp(-x))``."""
    fn = staticmethod(lambda x: 1 / (1 + np.exp(-x)))


class Tanh(_Elementwise):
    """Hyperbolic tangent."""
    fn = staticmethod(lambda x: np.tanh(x))


class Reshape(Module):
    """Reshape each sample to ``shape``, e.g. (3, 32, 32)."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, inputs, *args):
        return np.reshape(inputs, (inputs.shape[0],) + self.shape)

    def output_shape(self, input_shape):
        return self.shape


class Flatten(Module):
    """Flatten each sample to a vector."""

    def forward(self, inputs, *args):
        return np.reshape(inputs, (inputs.shape[0], int(numpy.prod(inputs.shape[1:]))))

    def output_shape(self, input_shape):
        return (int(numpy.prod(input_shape)),)


class _EitherModel(type):
    """``Model``'s metaclass: a class deriving from ``Model`` derives from MinPy master's
    :class:`minpy.nn.modular.Model` instead (MinPy's rewrite kept the name), and
    ``isinstance(m, Model)`` holds for both kinds."""

    def __new__(mcs, name, bases, namespace, **kwargs):
        if any(b.__class__ is mcs for b in bases):
            bases = tuple(modular.Model if b.__class__ is mcs else b for b in bases)
            return type(modular.Model)(name, bases, namespace, **kwargs)
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    def __instancecheck__(cls, instance):
        return isinstance(instance, (modular.Model,)) or type.__instancecheck__(cls, instance)


class Model(ModelBase, metaclass=_EitherModel):
    """A network of modules as a :class:`~minpy.nn.model.ModelBase` for the Solver.

    Args:
        container: the network (a :class:`Module`, usually :class:`Sequential`).
        loss: ``'l2'``, ``'softmax'``, ``'svm'`` (``layers.<loss>_loss``) or a
            callable ``loss(prediction, labels)``.
        input_shape: the shape of one sample, e.g. (3072,) or (3, 32, 32).
    Raises:
        TypeError: ``container`` is not a module; ValueError: an unknown loss name.

    ``Model()`` / ``Model(loss=...)`` and subclasses are MinPy master's
    :class:`minpy.nn.modular.Model` (module docstring).
    """

    def __new__(cls, *args, **kwargs):
        if len(args) > 1 or (args and isinstance(args[0], Module)) \
                or {"container", "input_shape"} & set(kwargs):
            return super().__new__(cls)
        return modular.Model(*args, **kwargs)          # Model(loss=...): MinPy master's

    def __init__(self, container, loss, input_shape):
        if not isinstance(container, Module):
            raise TypeError(f"Model: container must be a model_builder module, got "
                            f"{type(container).__name__}")
        if isinstance(loss, str) and loss not in ("l2", "softmax", "svm"):
            raise ValueError(f"Model: loss must be 'l2', 'softmax', 'svm' or a callable, "
                             f"got {loss!r}")
        if not isinstance(loss, str) and not callable(loss):
            raise TypeError(f"Model: loss must be a name or a callable, got {loss!r}")
        super().__init__()
        self.loss_function = loss
        self._container = container
        shapes = container.parameter_shape(tuple(input_shape))
        settings = container.parameter_settings()
        for key, shape in shapes.items():
            self.add_param(name=key, shape=shape, **settings.get(key, {}))

    def forward(self, X, mode):
        params = dict(self.params)
        params[_MODE] = mode
        return self._container.forward(X, params)

    def loss(self, prediction, labels):
        if isinstance(self.loss_function, str):
            return getattr(layers, f"{self.loss_function}_loss")(prediction, labels)
        return self.loss_function(prediction, labels)
