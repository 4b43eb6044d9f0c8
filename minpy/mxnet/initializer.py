"""``minpy.mxnet.initializer``: MXNet 1.x's initializer objects (``mx.init``), for ``Module``.

An initializer is called as ``init(desc, arr)``: it fills the minpy Array
``arr`` in place, choosing by the parameter's name ``desc`` (an
:class:`InitDesc`, a ``str`` carrying the variable's attributes) as MXNet
does: ``*weight`` gets the initializer's own rule, ``*bias``/``*beta`` zero,
``*gamma`` one, BatchNorm's ``*moving_mean``/``*running_mean`` zero and
``*moving_var``/``*running_var`` one; a variable made with
``Variable(..., init=Xavier())`` uses that initializer for its weight rule.
Random values come from NumPy's global legacy state (``minpy.random.seed``),
so they are repeatable but not MXNet's draws.

MinPy's functional rules (``rule(shape, config) -> Array``) live in
:mod:`minpy.nn.init`.
"""
import json

import numpy

__all__ = ["InitDesc", "Initializer", "Uniform", "Normal", "Xavier", "MSRAPrelu", "Orthogonal",
           "LSTMBias", "Constant", "Zero", "One", "create"]

_REGISTRY = {}


class InitDesc(str):
    """A parameter's name with its symbol attributes (``attrs``, e.g. ``__init__``,
    ``__lr_mult__``) and the initializer that was given globally (``global_init``)."""

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = dict(attrs or {})
        desc.global_init = global_init
        return desc


class Initializer:
    """Base of the initializers: dispatch on the parameter's name, fill in place.

    Subclasses implement ``_init_weight(name, values)`` returning the host values
    (a NumPy array of ``values.shape``); ``**kwargs`` are kept for :meth:`dumps`.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def dumps(self):
        """The JSON ``'["name", {kwargs}]'`` that :func:`create` turns back into this."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    __str__ = dumps      # Variable(init=...) stores str(init)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"

    def __call__(self, desc, arr):
        """Fill ``arr`` (a minpy Array) in place with the values for parameter ``desc``.

        Raises:
            ValueError: a name that matches no pattern (as MXNet: give the variable
                an ``init=`` attribute).
        """
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        if desc.global_init is None:
            desc.global_init = self
        shape = tuple(arr.shape)
        own = desc.attrs.get("__init__", "")
        if own:
            host = create(own)._init_weight(desc, shape)
        elif desc.endswith("weight"):
            host = self._init_weight(desc, shape)
        elif desc.endswith(("bias", "beta", "moving_mean", "running_mean", "min")):
            host = numpy.zeros(shape)
        elif desc.endswith(("gamma", "moving_var", "running_var", "max")):
            host = numpy.ones(shape)
        else:
            raise ValueError(f"{type(self).__name__}: unknown initialization pattern for "
                             f"{str(desc)!r}; names ending in weight, bias, gamma (1.0), beta "
                             f"(0.0) and BatchNorm's moving statistics are known. Give the "
                             f"variable an initializer: Variable(name, init=Xavier())")
        arr[...] = numpy.asarray(host, dtype=arr.dtype)

    def _init_weight(self, name, shape):
        raise NotImplementedError(f"{type(self).__name__} must implement _init_weight")


def _register(cls):
    _REGISTRY[cls.__name__.lower()] = cls
    return cls


@_register
class Uniform(Initializer):
    """Weights uniform in ``[-scale, scale]``."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, shape):
        return numpy.random.uniform(-self.scale, self.scale, shape)


@_register
class Normal(Initializer):
    """Weights normal with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, shape):
        return numpy.random.normal(0.0, self.sigma, shape)


@_register
class Xavier(Initializer):
    """Glorot's initializer as MXNet defines it: scale ``sqrt(magnitude / factor)``.

    Args:
        rnd_type: ``'uniform'`` (in ``[-scale, scale]``) or ``'gaussian'`` (std ``scale``).
        factor_type: ``'avg'`` (``(fan_in + fan_out) / 2``), ``'in'`` or ``'out'``, with
            ``fan_in = shape[1] * prod(shape[2:])``, ``fan_out = shape[0] * prod(shape[2:])``.
        magnitude: the numerator (3 gives Glorot's uniform bound).
    Raises:
        ValueError (when called): a weight of fewer than 2 dimensions, or a bad type.
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise ValueError(f"Xavier: rnd_type must be 'uniform' or 'gaussian', got "
                             f"{rnd_type!r}")
        if factor_type not in ("avg", "in", "out"):
            raise ValueError(f"Xavier: factor_type must be 'avg', 'in' or 'out', got "
                             f"{factor_type!r}")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, magnitude

    def _init_weight(self, name, shape):
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to vector {str(name)!r} "
                             f"of shape {shape}; it requires at least 2 dimensions")
        field = int(numpy.prod(shape[2:])) if len(shape) > 2 else 1
        fan_in, fan_out = shape[1] * field, shape[0] * field
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = numpy.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            return numpy.random.uniform(-scale, scale, shape)
        return numpy.random.normal(0.0, scale, shape)


@_register
class MSRAPrelu(Xavier):
    """He et al.'s initializer for PReLU networks: Gaussian Xavier with
    ``magnitude = 2 / (1 + slope**2)``."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@_register
class Constant(Initializer):
    """Weights equal to ``value`` (a scalar or an array of the weight's shape)."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, name, shape):
        return numpy.broadcast_to(numpy.asarray(self.value), shape)


@_register
class Zero(Initializer):
    """Weights zero."""

    def _init_weight(self, name, shape):
        return numpy.zeros(shape)


@_register
class One(Initializer):
    """Weights one."""

    def _init_weight(self, name, shape):
        return numpy.ones(shape)


@_register
class LSTMBias(Initializer):
    """An LSTM cell's ``i2h_bias``: zero but the forget gate's quarter (the second of the
    gates i, f, c, o), ``forget_bias``. ``mx.rnn.LSTMCell`` gives it to its bias.

    See also mxnet.initializer.LSTMBias.
    """

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, shape):
        values = numpy.zeros(shape)
        num_hidden = int(shape[0] / 4)
        values[num_hidden:2 * num_hidden] = self.forget_bias
        return values


@_register
class Orthogonal(Initializer):
    """MXNet's orthogonal initializer (Saxe et al.): the ``(shape[0], prod(shape[1:]))``
    random matrix (``rand_type`` ``'uniform'`` in [-1, 1] or ``'normal'``) replaced by the
    orthonormal factor of its SVD of the same shape, times ``scale``.

    Raises:
        ValueError: an unknown ``rand_type``.

    See also mxnet.initializer.Orthogonal.
    """

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise ValueError(f"Orthogonal: rand_type must be 'uniform' or 'normal', got "
                             f"{rand_type!r}")
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, name, shape):
        nout, nin = shape[0], int(numpy.prod(shape[1:]))
        if self.rand_type == "uniform":
            tmp = numpy.random.uniform(-1.0, 1.0, (nout, nin))
        else:
            tmp = numpy.random.normal(0.0, 1.0, (nout, nin))
        u, _, v = numpy.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        return self.scale * res.reshape(shape)


_REGISTRY.update(zeros=Zero, ones=One)


def create(init):
    """An initializer from an :class:`Initializer`, a registered name (``'xavier'``,
    ``'uniform'``, ``'zero'`` ...) or the JSON of :meth:`Initializer.dumps`.

    Raises:
        ValueError: an unknown name or malformed JSON.
    """
    if isinstance(init, Initializer):
        return init
    name, kwargs = init, {}
    if isinstance(init, str) and init.lstrip().startswith("["):
        try:
            name, kwargs = json.loads(init)
        except (ValueError, TypeError):
            raise ValueError(f"initializer.create: {init!r} is not the JSON of "
                             f"Initializer.dumps()") from None
    cls = _REGISTRY.get(str(name).lower())
    if cls is None:
        raise ValueError(f"initializer.create: unknown initializer {name!r}; known: "
                         f"{sorted(_REGISTRY)}")
    return cls(**kwargs)
