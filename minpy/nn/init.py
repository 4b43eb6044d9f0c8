"""``minpy.nn.init``: parameter initializers in MinPy's form ``rule(shape, config) -> Array``.

Rules: :func:`gaussian`, :func:`uniform`, :func:`xavier`, :func:`kaiming`,
:func:`constant`, :func:`custom`. ``config`` is a dict (or None) of the
rule's keys (MinPy's names and defaults) and these common ones:

- ``'dtype'``: the result's dtype (default ``numpy.float32``);
- ``'rng'``: a ``numpy.random.Generator`` (or ``RandomState``) to draw from;
- ``'seed'``: an int: draw from ``numpy.random.default_rng(seed)``;
- neither: draw from NumPy's global legacy state, which ``minpy.random.seed``
  seeds, so a seeded program initialises the same way every run.

Keys a rule does not use are ignored (MinPy passes one config to several
rules). Values are drawn on the host and placed on the current context.

Fans, for :func:`xavier` and :func:`kaiming`: a 1-d shape ``(n,)`` has
``fan_in = fan_out = n``; a 2-d weight ``(D, M)`` of MinPy's affine layer
(``x @ w``) has ``fan_in = D`` and ``fan_out = M``; a convolution weight
``(F, C, *kernel)`` has ``fan_in = C * prod(kernel)`` and ``fan_out = F *
prod(kernel)``. ``config['fan_in']``/``['fan_out']`` override them.
"""
import math
import numbers

import numpy

from .. import numpy as mnp

__all__ = ["gaussian", "uniform", "xavier", "kaiming", "constant", "custom", "fans"]


def _shape(rule, shape):
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 0
            for s in shape):
        raise ValueError(f"init.{rule}: shape must be a tuple of non-negative ints, "
                         f"got {shape!r}")
    return tuple(int(s) for s in shape)


def _config(rule, config):
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise TypeError(f"init.{rule}: config must be a dict or None, got "
                        f"{type(config).__name__}")
    return config


def _dtype(rule, config, floating=True):
    dt = numpy.dtype(config.get("dtype", numpy.float32))
    if floating and dt.kind != "f":
        raise TypeError(f"init.{rule}: dtype must be a floating dtype for random values, "
                        f"got {dt}")
    return dt


def _generator(rule, config):
    rng, seed = config.get("rng"), config.get("seed")
    if rng is not None and seed is not None:
        raise ValueError(f"init.{rule}: give config['rng'] or config['seed'], not both")
    if rng is not None:
        if not isinstance(rng, (numpy.random.Generator, numpy.random.RandomState)):
            raise TypeError(f"init.{rule}: config['rng'] must be a numpy.random.Generator or "
                            f"RandomState, got {type(rng).__name__}")
        return rng
    if seed is not None:
        return numpy.random.default_rng(seed)
    return numpy.random            # the global legacy state (minpy.random.seed)


def _number(rule, config, key, default, positive=False):
    v = config.get(key, default)
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or v != v:
        raise TypeError(f"init.{rule}: config[{key!r}] must be a real number, got {v!r}")
    if positive and not v > 0:
        raise ValueError(f"init.{rule}: config[{key!r}] must be > 0, got {v!r}")
    return float(v)


def _place(host, dtype):
    return mnp.asarray(numpy.asarray(host, dtype=dtype))


def fans(shape):
    """``(fan_in, fan_out)`` of a weight of ``shape`` (see the module docstring).

    Raises:
        ValueError: ``shape`` has no dimension.
    """
    shape = _shape("fans", shape)
    if len(shape) == 0:
        raise ValueError("init.fans: a 0-d shape has no fans; give config['fan_in'] and "
                         "config['fan_out'] or use a 1-d shape")
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    field = math.prod(shape[2:])
    return shape[1] * field, shape[0] * field


def _fans(rule, shape, config):
    if "fan_in" in config and "fan_out" in config:
        return (_number(rule, config, "fan_in", 0, positive=True),
                _number(rule, config, "fan_out", 0, positive=True))
    fan_in, fan_out = fans(shape)
    return (_number(rule, config, "fan_in", fan_in), _number(rule, config, "fan_out", fan_out))


def gaussian(shape, config=None):
    """Normal values: ``mu + stdvar * N(0, 1)``.

    Args:
        shape: tuple of ints.
        config: ``'mu'`` (mean, 0.0), ``'stdvar'`` (standard deviation, 0.001;
            MinPy's name and default), plus ``'dtype'``, ``'rng'``, ``'seed'``.

    Returns:
        A minpy Array of ``shape`` on the current context.

    See also numpy.random.normal, mxnet.init.Normal.
    """
    config = _config("gaussian", config)
    shape = _shape("gaussian", shape)
    mu = _number("gaussian", config, "mu", 0.0)
    std = _number("gaussian", config, "stdvar", 0.001)
    if std < 0:
        raise ValueError(f"init.gaussian: config['stdvar'] must be >= 0, got {std!r}")
    dt = _dtype("gaussian", config)
    return _place(_generator("gaussian", config).normal(mu, std, size=shape), dt)


def uniform(shape, config=None):
    """Uniform values in ``[low, high)``.

    Args:
        shape: tuple of ints.
        config: ``'low'`` (-0.07) and ``'high'`` (0.07), plus ``'dtype'``, ``'rng'``,
            ``'seed'``.

    Returns:
        A minpy Array of ``shape`` on the current context.

    See also numpy.random.uniform, mxnet.init.Uniform.
    """
    config = _config("uniform", config)
    shape = _shape("uniform", shape)
    low = _number("uniform", config, "low", -0.07)
    high = _number("uniform", config, "high", 0.07)
    if not low <= high:
        raise ValueError(f"init.uniform: config['low'] ({low}) must be <= config['high'] "
                         f"({high})")
    dt = _dtype("uniform", config)
    return _place(_generator("uniform", config).uniform(low, high, size=shape), dt)


def xavier(shape, config=None):
    """Glorot/Xavier: variance ``gain**2 * 2 / (fan_in + fan_out)``.

    Uniform in ``[-a, a]`` with ``a = gain * sqrt(6 / (fan_in + fan_out))`` by
    default; ``config['distribution'] = 'normal'`` draws normal values with the
    same variance. (MinPy drew normal values with standard deviation ``a``,
    sqrt(3) times Glorot's; this follows Glorot and Bengio, 2010.)

    Args:
        shape: tuple of ints, at least 1-d (see the module docstring for fans).
        config: ``'gain'`` (1.0), ``'distribution'`` (``'uniform'`` or ``'normal'``),
            ``'fan_in'``/``'fan_out'``, plus ``'dtype'``, ``'rng'``, ``'seed'``.

    Returns:
        A minpy Array of ``shape`` on the current context.

    See also mxnet.init.Xavier, torch.nn.init.xavier_uniform_.
    """
    config = _config("xavier", config)
    shape = _shape("xavier", shape)
    fan_in, fan_out = _fans("xavier", shape, config)
    gain = _number("xavier", config, "gain", 1.0)
    dt = _dtype("xavier", config)
    dist = config.get("distribution", "uniform")
    rng = _generator("xavier", config)
    if fan_in + fan_out == 0:
        return _place(numpy.zeros(shape), dt)
    if dist == "uniform":
        a = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return _place(rng.uniform(-a, a, size=shape), dt)
    if dist == "normal":
        return _place(rng.normal(0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), size=shape), dt)
    raise ValueError(f"init.xavier: config['distribution'] must be 'uniform' or 'normal', "
                     f"got {dist!r}")


def kaiming(shape, config=None):
    """He/Kaiming normal: standard deviation ``gain / sqrt(fan)``.

    Args:
        shape: tuple of ints, at least 1-d (see the module docstring for fans).
        config: ``'gain'`` (sqrt(2), for ReLU), ``'mode'`` (``'fan_in'`` default, or
            ``'fan_out'``), ``'fan_in'``/``'fan_out'``, plus ``'dtype'``, ``'rng'``,
            ``'seed'``.

    Returns:
        A minpy Array of ``shape`` on the current context.

    See also torch.nn.init.kaiming_normal_, mxnet.init.MSRAPrelu.
    """
    config = _config("kaiming", config)
    shape = _shape("kaiming", shape)
    fan_in, fan_out = _fans("kaiming", shape, config)
    gain = _number("kaiming", config, "gain", math.sqrt(2.0))
    mode = config.get("mode", "fan_in")
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init.kaiming: config['mode'] must be 'fan_in' or 'fan_out', "
                         f"got {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    dt = _dtype("kaiming", config)
    rng = _generator("kaiming", config)
    if fan == 0:
        return _place(numpy.zeros(shape), dt)
    return _place(rng.normal(0.0, gain / math.sqrt(fan), size=shape), dt)


def constant(shape, config=None):
    """Every element ``config['value']`` (default 0.0), of ``config['dtype']``
    (default float32; any dtype).

    See also numpy.full, mxnet.init.Constant.
    """
    config = _config("constant", config)
    shape = _shape("constant", shape)
    value = config.get("value", 0.0)
    dt = _dtype("constant", config, floating=False)
    try:
        host = numpy.full(shape, value, dtype=dt)
    except (TypeError, ValueError) as e:
        raise TypeError(f"init.constant: config['value'] {value!r} does not fit dtype "
                        f"{dt}: {e}") from None
    return _place(host, dt)


def custom(shape, config=None):
    """The values ``config['function'](shape)`` (a user initializer).

    Args:
        shape: tuple of ints.
        config: ``'function'`` (required): called with the shape tuple, returns an
            array of that shape; ``'dtype'`` casts the result when given.

    Returns:
        A minpy Array of ``shape`` on the current context.

    Raises:
        KeyError: no ``'function'``; ValueError: it returned another shape.
    """
    config = _config("custom", config)
    shape = _shape("custom", shape)
    fn = config.get("function")
    if fn is None:
        raise KeyError("init.custom: config['function'] is required: a callable taking the "
                       "shape tuple and returning an array of that shape")
    if not callable(fn):
        raise TypeError(f"init.custom: config['function'] must be callable, got "
                        f"{type(fn).__name__}")
    out = mnp.asarray(fn(shape))
    if out.shape != shape:
        raise ValueError(f"init.custom: config['function'] returned shape {out.shape} for "
                         f"requested shape {shape}")
    if "dtype" in config and out.dtype != numpy.dtype(config["dtype"]):
        out = out.astype(config["dtype"])
    return out
