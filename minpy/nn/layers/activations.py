"""Shape checks and elementwise activations shared by ``minpy.nn.layers`` and
``minpy.nn.layers.recurrent``.

This module sits below both (it imports neither), so each can use it without a
circle: ``_expect_shape`` / ``_expect_ndim`` raise the layers' shape errors,
and ``relu``, ``leaky_relu``, ``sigmoid``, ``tanh``, ``softmax`` and
``log_softmax`` are plain functions of minpy arrays (differentiable by
``minpy.grad``).  Their public home is ``minpy.nn.layers``, which re-exports
them.
"""
from ... import numpy as mnp
from ...core import stop_gradient
from .conv import shape_of

__all__ = ["relu", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax"]


# ---------------------------------------------------------------- argument checks
def _expect_shape(layer, name, a, expected, context):
    """Raise unless ``a`` has shape ``expected``; ``context`` says why that shape."""
    s = shape_of(a)
    if s != tuple(expected):
        raise ValueError(f"{layer}: {name} has shape {s} but {context}; "
                         f"expected {name} of shape {tuple(expected)}")


def _expect_ndim(layer, name, a, ndim, layout):
    s = shape_of(a)
    if len(s) != ndim:
        raise ValueError(f"{layer}: {name} has shape {s}; expected a {ndim}-d array {layout}")
    return s


# ---------------------------------------------------------------- activations
def relu(x):
    """Rectified linear unit: ``maximum(x, 0)`` elementwise.

    Args:
        x: input of any shape.
    Returns:
        An Array like ``x``. See also leaky_relu, minpy.symbol.Activation.
    """
    return mnp.maximum(x, 0)


def leaky_relu(x, alpha=0.01):
    """``x`` where positive, ``alpha * x`` elsewhere (elementwise).

    Args:
        x: input of any shape.
        alpha: slope for negative inputs (a Python float).
    Returns:
        An Array like ``x``. See also relu, minpy.symbol.LeakyReLU.
    """
    return mnp.where(x > 0, x, x * alpha)


def sigmoid(x):
    """Logistic function ``1 / (1 + exp(-x))`` elementwise.

    Computed as ``(tanh(x / 2) + 1) / 2``: no overflow for large ``|x|``.

    Args:
        x: input of any shape.
    Returns:
        An Array like ``x``. See also tanh, sigmoid_cross_entropy, scipy.special.expit.
    """
    return (mnp.tanh(x * 0.5) + 1) * 0.5


def tanh(x):
    """Hyperbolic tangent elementwise.

    Args:
        x: input of any shape.
    Returns:
        An Array like ``x``. See also numpy.tanh, sigmoid.
    """
    return mnp.tanh(x)


def _shifted(x, axis):
    """``x`` minus its maximum along ``axis``: the shift changes no softmax, so it
    is taken as a constant (no gradient through the max, exact either way)."""
    return x - stop_gradient(mnp.max(x, axis=axis, keepdims=True))


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably (max subtracted first).

    Args:
        x: input of any shape.
        axis: the axis that sums to one.
    Returns:
        An Array like ``x``. See also log_softmax, softmax_loss, scipy.special.softmax.
    """
    e = mnp.exp(_shifted(x, axis))
    return e / mnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    """``log(softmax(x, axis))`` computed stably (no log of an underflowed 0).

    Args:
        x: input of any shape.
        axis: the axis normalised over.
    Returns:
        An Array like ``x``. See also softmax, scipy.special.log_softmax.
    """
    z = _shifted(x, axis)
    return z - mnp.log(mnp.sum(mnp.exp(z), axis=axis, keepdims=True))
