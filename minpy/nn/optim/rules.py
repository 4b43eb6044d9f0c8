"""``minpy.nn.optim.rules``: MinPy's rule names and :func:`create`, an optimizer by name."""
from .adagrad import AdaGrad
from .adam import Adam, AdamW
from .momentum import SGDMomentum
from .rmsprop import RMSProp
from .sgd import SGD

__all__ = ["RULES", "create"]

_COMMON = ("learning_rate", "weight_decay", "clip_gradient", "clip_norm", "lr_schedule",
           "backend")
RULES = {"sgd": SGD, "sgd_momentum": SGDMomentum, "nesterov": SGDMomentum,
         "rmsprop": RMSProp, "adagrad": AdaGrad, "adam": Adam, "adamw": AdamW}


def create(update_rule, **config):
    """An in-place optimizer for ``update_rule`` with MinPy's config keys.

    Args:
        update_rule: one of ``'sgd', 'sgd_momentum', 'nesterov', 'rmsprop',
            'adagrad', 'adam', 'adamw'``.
        **config: the rule's hyper-parameters (``learning_rate``, ``momentum``,
            ``decay_rate``, ``epsilon``, ``beta1``, ``beta2`` ...) and the options of
            :class:`~minpy.nn.optim.optimizer.Optimizer` (``weight_decay``,
            ``clip_gradient``, ``clip_norm``, ``lr_schedule``, ``backend``).

    Returns:
        An :class:`~minpy.nn.optim.optimizer.Optimizer`.

    Raises:
        ValueError: unknown rule (the message lists the valid ones).
        TypeError: a config key the rule does not take.

    See also mxnet.optimizer.create.
    """
    cls = RULES.get(update_rule) if isinstance(update_rule, str) else None
    if cls is None:
        raise ValueError(f"optim.create: unknown update_rule {update_rule!r}; valid rules "
                         f"are {sorted(RULES)}")
    valid = set(_COMMON) | set(cls._hyper)
    unknown = sorted(set(config) - valid)
    if unknown:
        raise TypeError(f"optim.create: unknown config key(s) {unknown} for "
                        f"{update_rule!r}; valid keys are {sorted(valid)}")
    if update_rule == "nesterov":
        if config.get("nesterov", True) is not True:
            raise ValueError("optim.create: rule 'nesterov' with nesterov=False; use "
                             "'sgd_momentum'")
        config["nesterov"] = True
    return cls(**config)
