"""``minpy.nn.optim.momentum``: SGD with momentum, MinPy's form and Nesterov's."""
from .functional import check_real, functional
from .optimizer import Optimizer

__all__ = ["SGDMomentum", "sgd_momentum", "nesterov"]


class SGDMomentum(Optimizer):
    """In-place SGD with momentum, MinPy's form ``v = momentum*v - lr*g; w += v``;
    ``nesterov=True``: ``w += momentum*v - lr*g``. State: ``velocity``.

    Args:
        learning_rate: 1e-2 by default.
        momentum: in [0, 1), 0.9 by default.
        nesterov: Nesterov's look-ahead form.
        **common: the keyword arguments of :class:`~minpy.nn.optim.optimizer.Optimizer`.

    See also minpy.nn.optim.sgd_momentum, torch.optim.SGD.
    """

    update_rule = "sgd_momentum"
    _slots = ("velocity",)
    _hyper = ("momentum", "nesterov")

    def __init__(self, learning_rate=1e-2, momentum=0.9, nesterov=False, **common):
        super().__init__(learning_rate, **common)
        self.momentum = check_real(type(self).__name__, "momentum", momentum, hi=1.0,
                                   hi_open=True)
        if not isinstance(nesterov, bool):
            raise TypeError(f"{type(self).__name__}: nesterov must be a bool, got {nesterov!r}")
        self.nesterov = nesterov

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """``v = momentum*v - lr*g``, then ``w + v`` or Nesterov's
        ``(w + momentum*v) - lr*g`` (see Optimizer.rule)."""
        mom = hp["momentum"]
        v = state["velocity"] * mom - g * lr
        if hp["nesterov"]:
            return (w + mom * v) - lr * g, {"velocity": v}
        return w + v, {"velocity": v}

    def _kind(self):
        return "nesterov" if self.nesterov else "momentum"

    def _kernel_params(self, t, lr, wd):
        return (self.momentum,)


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
    return functional(SGDMomentum, "sgd_momentum", w, dw, config)


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
