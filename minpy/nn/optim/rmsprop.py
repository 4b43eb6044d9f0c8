"""``minpy.nn.optim.rmsprop``: RMSProp, steps scaled by a running root mean square."""
from .functional import check_real, functional
from .optimizer import Optimizer

__all__ = ["RMSProp", "rmsprop"]


class RMSProp(Optimizer):
    """In-place RMSProp: ``cache = decay_rate*cache + (1-decay_rate)*g**2;
    w -= lr*g / (sqrt(cache) + epsilon)``. State: ``cache``.

    Args:
        learning_rate: 1e-2; decay_rate: in [0, 1], 0.99; epsilon: 1e-8.
        **common: the keyword arguments of :class:`~minpy.nn.optim.optimizer.Optimizer`.

    See also minpy.nn.optim.rmsprop, torch.optim.RMSprop.
    """

    update_rule = "rmsprop"
    _slots = ("cache",)
    _hyper = ("decay_rate", "epsilon")

    def __init__(self, learning_rate=1e-2, decay_rate=0.99, epsilon=1e-8, **common):
        super().__init__(learning_rate, **common)
        self.decay_rate = check_real("RMSProp", "decay_rate", decay_rate, hi=1.0)
        self.epsilon = check_real("RMSProp", "epsilon", epsilon)

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """``cache = decay_rate*cache + (1-decay_rate)*g**2`` (see Optimizer.rule)."""
        dr = hp["decay_rate"]
        # g * g, not g ** 2: a device's pow is not correctly rounded (CuPy's is powf)
        cache = state["cache"] * dr + g * g * (1 - dr)
        return scaled_step(xp, w, lr, g, cache, hp["epsilon"]), {"cache": cache}

    def _kind(self):
        return "rms"

    def _kernel_params(self, t, lr, wd):
        return (self.decay_rate, 1.0 - self.decay_rate, self.epsilon)


def scaled_step(xp, w, lr, g, cache, eps):
    """``w - lr * g / (sqrt(cache) + eps)``: the step of RMSProp and AdaGrad."""
    return w - lr * g / (xp.sqrt(cache) + eps)


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
    return functional(RMSProp, "rmsprop", w, dw, config)
