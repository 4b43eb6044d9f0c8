"""First-order optimizers with autograd's interface: ``sgd``, ``rmsprop``, ``adam``.

Each is ``opt(grad, x0, callback=None, num_iters=..., step_size=..., ...)``:
``grad(x, i)`` returns the gradient at ``x`` on iteration ``i`` (``minpy.grad``
of an ``objective(params, i)`` is such a function); ``callback(x, i, g)`` is
called on each iteration before the step; ``x0`` may be an array or a nested
tuple/list/dict of arrays (see :func:`minpy.misc.flatten`) and the result has
its structure. The state lives in one flat minpy Array (on the parameters'
device). ``rmsprop`` and ``adam`` step with MinPy's rules :func:`minpy.nn.optim.rmsprop`
and :func:`minpy.nn.optim.adam` (the same operations as autograd's); ``sgd`` keeps
autograd's own momentum form. See also autograd.misc.optimizers.
"""
import functools

from .. import numpy as mnp
from ..nn import optim
from .flatten import Flattener

__all__ = ["sgd", "rmsprop", "adam"]


def _on_flat(name):
    """Run ``step_loop(flat_grad, x, flat_callback, **options)`` on flat vectors."""
    def decorate(step_loop):
        @functools.wraps(step_loop)
        def optimize(grad, x0, callback=None, *args, **kwargs):
            who = f"minpy.misc.optimizers.{name}"
            if not callable(grad):
                raise TypeError(f"{who}: grad must be a function grad(x, i), got "
                                f"{type(grad).__name__}")
            layout = Flattener(x0, who)
            if layout.dtype.kind not in "fc":
                raise TypeError(f"{who}: the parameters must be floating point, got "
                                f"{layout.dtype}")
            x = layout.flat(x0)

            def flat_grad(xf, i):
                g = grad(layout.unflat(xf), i)
                try:
                    return layout.flat(g)
                except (ValueError, TypeError) as e:
                    raise type(e)(f"{who}: grad returned a value that is not shaped like x0 "
                                  f"({e})") from None

            def flat_cb(xf, i, gf):
                callback(layout.unflat(xf), i, layout.unflat(gf))
            return layout.unflat(step_loop(flat_grad, x, None if callback is None else flat_cb,
                                           *args, **kwargs))
        return optimize
    return decorate


@_on_flat("sgd")
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Gradient descent with momentum.

    The velocity is an exponential average of minus the gradients,
    ``v <- mass v - (1 - mass) g``, and ``x <- x + step_size v``.

    Args:
        grad: ``grad(x, i)``, the gradient at ``x`` on iteration ``i``.
        x: the starting point (an array or a nested structure of them).
        callback: ``callback(x, i, g)``, called each iteration before the step.
        num_iters, step_size, mass: iterations, step length, momentum.
    Returns:
        The last ``x``, in ``x0``'s structure. See also autograd.misc.optimizers.sgd.
    """
    velocity = mnp.zeros_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback is not None:
            callback(x, i, g)
        velocity = velocity * mass - g * (1.0 - mass)
        x = x + velocity * step_size
    return x


@_on_flat("rmsprop")
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=1e-8):
    """Gradient steps scaled by a running root mean square of the gradient.

    ``r <- gamma r + (1 - gamma) g**2`` (``r`` starts at ones, as in autograd)
    and ``x <- x - step_size g / (sqrt(r) + eps)``.

    Args:
        grad, x, callback: as :func:`sgd`.
        num_iters, step_size: iterations and step length.
        gamma: decay of the running mean square; eps: guards the division.
    Returns:
        The last ``x``, in ``x0``'s structure. See also autograd.misc.optimizers.rmsprop.
    """
    config = {"learning_rate": step_size, "decay_rate": gamma, "epsilon": eps,
              "cache": mnp.ones_like(x)}
    for i in range(num_iters):
        g = grad(x, i)
        if callback is not None:
            callback(x, i, g)
        x, config = optim.rmsprop(x, g, config)
    return x


@_on_flat("adam")
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma & Ba, 2015): steps by bias-corrected moment estimates.

    First and second moments ``m <- b1 m + (1 - b1) g``, ``s <- b2 s +
    (1 - b2) g**2``; on iteration ``i`` (from 0) the step is
    ``step_size * m_hat / (sqrt(s_hat) + eps)`` with ``m_hat = m / (1 -
    b1**(i+1))`` and ``s_hat = s / (1 - b2**(i+1))``.

    Args:
        grad, x, callback: as :func:`sgd`.
        num_iters, step_size: iterations and step length.
        b1, b2: the moments' decay rates; eps: guards the division.
    Returns:
        The last ``x``, in ``x0``'s structure. See also autograd.misc.optimizers.adam.
    """
    config = {"learning_rate": step_size, "beta1": b1, "beta2": b2, "epsilon": eps}
    for i in range(num_iters):
        g = grad(x, i)
        if callback is not None:
            callback(x, i, g)
        x, config = optim.adam(x, g, config)      # t = i + 1
    return x
