"""``minpy.nn.optim.adam``: Adam and AdamW (decoupled weight decay)."""
from .functional import check_real, functional
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW", "adam", "adamw"]


class Adam(Optimizer):
    """In-place Adam with bias correction (MinPy's formula). State: ``m``, ``v`` and
    the update count ``t`` per parameter.

    Args:
        learning_rate: 1e-3; beta1: 0.9; beta2: 0.999 (each in [0, 1)); epsilon: 1e-8.
        **common: the keyword arguments of :class:`~minpy.nn.optim.optimizer.Optimizer`.

    See also minpy.nn.optim.adam, AdamW, torch.optim.Adam.
    """

    update_rule = "adam"
    _slots = ("m", "v")
    _hyper = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-8, **common):
        super().__init__(learning_rate, **common)
        owner = type(self).__name__
        self.beta1 = check_real(owner, "beta1", beta1, hi=1.0, hi_open=True)
        self.beta2 = check_real(owner, "beta2", beta2, hi=1.0, hi_open=True)
        self.epsilon = check_real(owner, "epsilon", epsilon)

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """``m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g**2``, then
        ``w - lr * (m / (1-beta1**t)) / (sqrt(v / (1-beta2**t)) + epsilon)``, the
        weights decayed first where ``decay_at == 'rule'`` (see Optimizer.rule)."""
        b1, b2 = hp["beta1"], hp["beta2"]
        m = b1 * state["m"] + (1 - b1) * g
        v = b2 * state["v"] + (1 - b2) * (g * g)     # not g ** 2: a device's pow is inexact
        if cls.decay_at == "rule" and wd:
            w = w * (1 - lr * wd)
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        return w - lr * m_hat / (xp.sqrt(v_hat) + cls._epsilon(hp, t)), {"m": m, "v": v, "t": t}

    @classmethod
    def _epsilon(cls, hp, t):
        """The epsilon added to ``sqrt(v_hat)`` at update ``t``."""
        return hp["epsilon"]

    def _kind(self):
        return "adam"

    def _kernel_params(self, t, lr, wd):
        b1, b2 = self.beta1, self.beta2
        decay = 1.0 - lr * wd if self.decay_at == "rule" else 1.0
        return (b1, 1.0 - b1, b2, 1.0 - b2, 1.0 - b1 ** t, 1.0 - b2 ** t,
                self._epsilon(self._hp(), t), decay)


class AdamW(Adam):
    """In-place AdamW: Adam with decoupled weight decay ``w *= 1 - lr*weight_decay``
    before each step (``weight_decay`` defaults to 0.01 and is not added to the
    gradient).

    See also minpy.nn.optim.adamw, torch.optim.AdamW.
    """

    update_rule = "adamw"
    decay_at = "rule"

    def __init__(self, learning_rate=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 weight_decay=0.01, **common):
        super().__init__(learning_rate, beta1, beta2, epsilon, weight_decay=weight_decay,
                         **common)


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
    return functional(Adam, "adam", w, dw, config)


def adamw(w, dw, config=None):
    """AdamW: :func:`adam` with decoupled weight decay ``w *= 1 - learning_rate *
    weight_decay`` applied before the step (``weight_decay`` defaults to 0.01 and
    is not added to the gradient).

    See also minpy.nn.optim.AdamW, torch.optim.AdamW.
    """
    return functional(AdamW, "adamw", w, dw, config)
