"""``minpy.nn.optim.functional``: what the faces of an optimizer share.

:func:`functional` is MinPy's functional face of an :class:`Optimizer` class:
``rule(w, dw, config) -> (next_w, config)`` with the class's :meth:`rule` written
in ``minpy.numpy`` (so CPU or GPU, differentiable), out of place, the state
(``velocity``, ``cache``, ``m``, ``v``, ``t``) kept in ``config`` next to the
hyper-parameters as in MinPy. :func:`effective_grad` is the gradient every face
updates with, and :func:`check_real` the argument check of every constructor.
"""
import functools
import inspect
import numbers

from ... import numpy as mnp

__all__ = ["functional", "effective_grad", "check_real", "defaults"]


def check_real(owner, name, value, lo=0.0, lo_open=False, hi=None, hi_open=False,
               none_ok=False):
    """``value`` as a float checked against its range, or a clear error naming ``owner``."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        extra = " or None" if none_ok else ""
        raise TypeError(f"{owner}: {name} must be a real number{extra}, got {value!r}")
    v = float(value)
    if (v != v or v < lo or (lo_open and v == lo)
            or (hi is not None and (v > hi or (hi_open and v == hi)))):
        rng = f"{'>' if lo_open else '>='} {lo:g}"
        if hi is not None:
            rng += f" and {'<' if hi_open else '<='} {hi:g}"
        raise ValueError(f"{owner}: {name} must be {rng}, got {value!r}")
    return v


def effective_grad(xp, g, w, rescale, clip, wd, decay_at):
    """The gradient an update applies: ``clip(rescale * g) + wd * w``, or with
    ``decay_at='before_clip'`` ``clip(rescale * g + wd * w)``, or with
    ``decay_at='rule'`` ``clip(rescale * g)`` (the rule decays the weights itself).

    Args:
        xp: the array module of ``g`` and ``w``; clip: a bound or None.

    Returns:
        A new array (``g`` itself when nothing applies).
    """
    if rescale != 1:
        g = g * rescale
    if wd and decay_at == "before_clip":
        g = g + wd * w
    if clip is not None:
        g = xp.clip(g, -clip, clip)
    if wd and decay_at == "gradient":
        g = g + wd * w
    return g


@functools.lru_cache(maxsize=None)
def defaults(cls):
    """MinPy's config defaults of an optimizer class: ``learning_rate``, its
    ``_hyper`` keys and an explicit ``weight_decay``, as its ``__init__`` gives them."""
    params = inspect.signature(cls.__init__).parameters
    keys = ("learning_rate", "weight_decay") + tuple(cls._hyper)
    return {k: p.default for k, p in params.items()
            if k in keys and p.default is not inspect.Parameter.empty}


def functional(cls, name, w, dw, config):
    """MinPy's update rule ``name`` run by the optimizer class ``cls``.

    Args:
        cls: the :class:`~minpy.nn.optim.optimizer.Optimizer` subclass.
        name: the rule's name for messages (``optim.<name>: ...``).
        w: the weights (Array); dw: their gradient (same shape).
        config: dict or None, filled in place with :func:`defaults`; besides the
            rule's keys it reads ``weight_decay`` (0 unless the class's default
            differs) and ``clip_gradient`` (None); the rule's state is read from it
            (zeros at first) and written back, with the update count ``t`` where
            the rule keeps one.

    Returns:
        ``(next_w, config)``: a new Array and the same dict.

    Raises:
        TypeError: ``config`` is not a dict. ValueError: ``dw``'s shape differs
        from ``w``'s, or ``clip_gradient`` is not > 0.
    """
    if config is None:
        config = {}
    elif not isinstance(config, dict):
        raise TypeError(f"optim.{name}: config must be a dict or None, got {type(config).__name__}")
    if mnp.shape(w) != mnp.shape(dw):
        raise ValueError(f"optim.{name}: dw has shape {mnp.shape(dw)} but w has shape "
                         f"{mnp.shape(w)}; they must be equal")
    for key, value in defaults(cls).items():
        config.setdefault(key, value)
    clip = config.get("clip_gradient")
    if clip is not None and not clip > 0:
        raise ValueError(f"optim.{name}: clip_gradient must be > 0 or None, got {clip!r}")
    wd = config.get("weight_decay", 0.0)
    g = effective_grad(mnp, dw, w, 1, clip, wd, cls.decay_at)
    state = {s: mnp.zeros_like(w) if config.get(s) is None else config[s] for s in cls._slots}
    next_w, new_state = cls.rule(mnp, config, w, g, state, config["learning_rate"], wd,
                                 config.get("t", 0) + 1)
    config.update(new_state)
    return next_w, config
