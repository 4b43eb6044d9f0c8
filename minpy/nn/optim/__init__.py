"""``minpy.nn.optim``: first-order update rules, in two forms.

1. MinPy's functions ``rule(w, dw, config=None) -> (next_w, config)``, defined
   here: :func:`sgd`, :func:`sgd_momentum`, :func:`nesterov`, :func:`rmsprop`,
   :func:`adagrad`, :func:`adam`, :func:`adamw`. Written with minpy's own
   operations (CPU or GPU, differentiable), out of place; the rule's state
   (``velocity``, ``cache``, ``m``, ``v``, ``t``) lives in ``config`` as in
   MinPy, next to the hyper-parameters (MinPy's keys and defaults), plus
   ``weight_decay`` (L2 added to the gradient) and ``clip_gradient``
   (elementwise bound on the gradient).

2. In-place optimizers (:func:`create`, :class:`SGD` ... :class:`AdamW`,
   ``RULES``), defined in :mod:`minpy.nn.optim.optimizers` and re-exported here, that
   update parameter Arrays in their own buffers with the fused kernels of
   :mod:`minpy.kernels.optim`: one multi-tensor kernel call per ``step`` on the CPU
   (numba), one ``cupy.ElementwiseKernel`` per parameter on the GPU, NumPy
   ``out=`` ufuncs otherwise. They compute the same values as the functions.

The learning-rate schedules of :mod:`minpy.nn.optim.schedule` are re-exported too.
"""
from ... import numpy as mnp
from .optimizers import (  # noqa: F401  (re-exported)
    RULES, AdaGrad, Adam, AdamW, Optimizer, RMSProp, SGD, SGDMomentum, create)
from .schedule import Schedule, StepSchedule, CosineSchedule, WarmupSchedule  # noqa: F401

__all__ = ["sgd", "sgd_momentum", "nesterov", "rmsprop", "adagrad", "adam", "adamw",
           "create", "Optimizer", "SGD", "SGDMomentum", "RMSProp", "AdaGrad", "Adam", "AdamW",
           "Schedule", "StepSchedule", "CosineSchedule", "WarmupSchedule", "RULES"]


def _setup(rule, w, dw, config, defaults):
    """``config`` with its defaults filled in, and the effective gradient
    ``clip(dw) + weight_decay * w`` (AdamW adds no decay here)."""
    if config is None:
        config = {}
    elif not isinstance(config, dict):
        raise TypeError(f"optim.{rule}: config must be a dict or None, got {type(config).__name__}")
    if mnp.shape(w) != mnp.shape(dw):
        raise ValueError(f"optim.{rule}: dw has shape {mnp.shape(dw)} but w has shape "
                         f"{mnp.shape(w)}; they must be equal")
    for key, value in defaults.items():
        config.setdefault(key, value)
    g = dw
    clip = config.get("clip_gradient")
    if clip is not None:
        if not clip > 0:
            raise ValueError(f"optim.{rule}: clip_gradient must be > 0 or None, got {clip!r}")
        g = mnp.clip(g, -clip, clip)
    wd = config.get("weight_decay", 0.0)
    if wd and rule != "adamw":
        g = g + wd * w
    return config, g


def _state(config, key, w):
    s = config.get(key)
    return mnp.zeros_like(w) if s is None else s


def sgd(w, dw, config=None):
    """Vanilla stochastic gradient descent: ``next_w = w - learning_rate * dw``.

    Args:
        w: the weights (Array).
        dw: the gradient of the loss with respect to ``w`` (same shape).
        config: dict of hyper-parameters, filled in place with defaults:
            ``learning_rate`` (1e-2), ``weight_decay`` (0), ``clip_gradient`` (None).

    Returns:
        ``(next_w, config)``: a new Array and the same config dict.

    See also minpy.nn.optim.SGD (in place, fused), torch.optim.SGD.
    """
    config, g = _setup("sgd", w, dw, config, {"learning_rate": 1e-2})
    return w - config["learning_rate"] * g, config


def sgd_momentum(w, dw, config=None):
    """SGD with momentum: ``v = momentum * v - learning_rate * dw; next_w = w + v``.

    With ``config['nesterov']`` true, Nesterov's form
    ``next_w = w + momentum * v - learning_rate * dw`` (``v`` the new velocity).

    Args:
        w, dw: weights and their gradient (same shape).
        config: ``learning_rate`` (1e-2), ``momentum`` (0.9), ``nesterov`` (False),
            ``weight_decay``, ``clip_gradient``; state ``velocity`` (zeros at first).

    Returns:
        ``(next_w, config)`` with ``config['velocity']`` updated.

    See also minpy.nn.optim.SGDMomentum, torch.optim.SGD(momentum=...).
    """
    config, g = _setup("sgd_momentum", w, dw, config,
                       {"learning_rate": 1e-2, "momentum": 0.9, "nesterov": False})
    lr, mom = config["learning_rate"], config["momentum"]
    v = _state(config, "velocity", w) * mom - g * lr
    config["velocity"] = v
    if config["nesterov"]:
        return (w + mom * v) - lr * g, config
    return w + v, config


def nesterov(w, dw, config=None):
    """SGD with Nesterov momentum: :func:`sgd_momentum` with ``config['nesterov'] = True``.

    See also minpy.nn.optim.SGDMomentum(nesterov=True).
    """
    if config is None:
        config = {}
    if config.get("nesterov") is False:
        raise ValueError("optim.nesterov: config['nesterov'] is False; use sgd_momentum")
    config["nesterov"] = True
    return sgd_momentum(w, dw, config)


def _scaled_step(w, lr, g, cache, eps):
    return w - lr * g / (mnp.sqrt(cache) + eps)


def rmsprop(w, dw, config=None):
    """RMSProp: ``cache = decay_rate * cache + (1 - decay_rate) * dw**2;
    next_w = w - learning_rate * dw / (sqrt(cache) + epsilon)``.

    Args:
        w, dw: weights and their gradient (same shape).
        config: ``learning_rate`` (1e-2), ``decay_rate`` (0.99), ``epsilon`` (1e-8),
            ``weight_decay``, ``clip_gradient``; state ``cache``.

    Returns:
        ``(next_w, config)`` with ``config['cache']`` updated.

    See also minpy.nn.optim.RMSProp, torch.optim.RMSprop.
    """
    config, g = _setup("rmsprop", w, dw, config,
                       {"learning_rate": 1e-2, "decay_rate": 0.99, "epsilon": 1e-8})
    dr = config["decay_rate"]
    cache = _state(config, "cache", w) * dr + g ** 2 * (1 - dr)
    config["cache"] = cache
    return _scaled_step(w, config["learning_rate"], g, cache, config["epsilon"]), config


def adagrad(w, dw, config=None):
    """AdaGrad: ``cache += dw**2; next_w = w - learning_rate * dw / (sqrt(cache) + epsilon)``.

    Args:
        w, dw: weights and their gradient (same shape).
        config: ``learning_rate`` (1e-2), ``epsilon`` (1e-8), ``weight_decay``,
            ``clip_gradient``; state ``cache``.

    Returns:
        ``(next_w, config)`` with ``config['cache']`` updated.

    See also minpy.nn.optim.AdaGrad, torch.optim.Adagrad.
    """
    config, g = _setup("adagrad", w, dw, config, {"learning_rate": 1e-2, "epsilon": 1e-8})
    cache = _state(config, "cache", w) + g ** 2
    config["cache"] = cache
    return _scaled_step(w, config["learning_rate"], g, cache, config["epsilon"]), config


def _adam(rule, w, dw, config, defaults):
    config, g = _setup(rule, w, dw, config, {
        "learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, **defaults})
    lr, b1, b2 = config["learning_rate"], config["beta1"], config["beta2"]
    t = config.get("t", 0) + 1
    m = b1 * _state(config, "m", w) + (1 - b1) * g
    v = b2 * _state(config, "v", w) + (1 - b2) * (g ** 2)
    config.update(m=m, v=v, t=t)
    if rule == "adamw" and config["weight_decay"]:
        w = w * (1 - lr * config["weight_decay"])
    m_hat = m / (1 - b1 ** t)
    v_hat = v / (1 - b2 ** t)
    return w - lr * m_hat / (mnp.sqrt(v_hat) + config["epsilon"]), config


def adam(w, dw, config=None):
    """Adam: moving averages of the gradient and its square, bias-corrected.

    ``m = beta1*m + (1-beta1)*dw; v = beta2*v + (1-beta2)*dw**2; t += 1;
    next_w = w - learning_rate * (m / (1-beta1**t)) / (sqrt(v / (1-beta2**t)) + epsilon)``.

    Args:
        w, dw: weights and their gradient (same shape).
        config: ``learning_rate`` (1e-3), ``beta1`` (0.9), ``beta2`` (0.999),
            ``epsilon`` (1e-8), ``weight_decay`` (L2 on the gradient),
            ``clip_gradient``; state ``m``, ``v``, ``t``.

    Returns:
        ``(next_w, config)`` with ``m``, ``v`` and ``t`` updated.

    See also minpy.nn.optim.Adam, adamw, torch.optim.Adam.
    """
    return _adam("adam", w, dw, config, {})


def adamw(w, dw, config=None):
    """AdamW: :func:`adam` with decoupled weight decay ``w *= 1 - learning_rate *
    weight_decay`` applied before the step (``weight_decay`` defaults to 0.01 and
    is not added to the gradient).

    See also minpy.nn.optim.AdamW, torch.optim.AdamW.
    """
    return _adam("adamw", w, dw, config, {"weight_decay": 0.01})

