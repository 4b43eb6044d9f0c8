"""``minpy.nn.optim.adagrad``: AdaGrad, steps scaled by the root of the summed squares."""
from .functional import check_real, functional
from .optimizer import Optimizer
from .rmsprop import scaled_step

__all__ = ["AdaGrad", "adagrad"]


class AdaGrad(Optimizer):
    """In-place AdaGrad: ``cache += g**2; w -= lr*g / (sqrt(cache) + epsilon)``.

    Args:
        learning_rate: 1e-2; epsilon: 1e-8. State: ``cache``.
        **common: the keyword arguments of :class:`~minpy.nn.optim.optimizer.Optimizer`.

    See also minpy.nn.optim.adagrad, torch.optim.Adagrad.
    """

    update_rule = "adagrad"
    _slots = ("cache",)
    _hyper = ("epsilon",)

    def __init__(self, learning_rate=1e-2, epsilon=1e-8, **common):
        super().__init__(learning_rate, **common)
        self.epsilon = check_real("AdaGrad", "epsilon", epsilon)

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """``cache += g**2`` and RMSProp's step (see Optimizer.rule)."""
        cache = state["cache"] + g * g     # not g ** 2: a device's pow is inexact
        return scaled_step(xp, w, lr, g, cache, hp["epsilon"]), {"cache": cache}

    def _kind(self):
        return "rms"           # RMSProp's kernel with decay 1 and weight 1

    def _kernel_params(self, t, lr, wd):
        return (1.0, 1.0, self.epsilon)


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
    return functional(AdaGrad, "adagrad", w, dw, config)
