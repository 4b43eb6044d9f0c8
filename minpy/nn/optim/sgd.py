"""``minpy.nn.optim.sgd``: stochastic gradient descent, ``w -= learning_rate * g``."""
from .functional import functional
from .optimizer import Optimizer

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """In-place SGD: ``w -= learning_rate * g`` (defaults: learning_rate 1e-2).

    Takes the keyword arguments of :class:`~minpy.nn.optim.optimizer.Optimizer`.
    See also minpy.nn.optim.sgd, torch.optim.SGD.
    """

    update_rule = "sgd"

    def __init__(self, learning_rate=1e-2, **common):
        super().__init__(learning_rate, **common)

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """``w - lr * g`` (see Optimizer.rule)."""
        return w - lr * g, {}

    def _kind(self):
        return "sgd"


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
    return functional(SGD, "sgd", w, dw, config)
