"""Training-mode batch normalisation as custom ops on the raw BatchNorm kernels.

``batchnorm`` composed of minpy calls costs a dozen full passes over the
activation forward and backward; here the forward is two passes (the
statistics, then ``x * scale + shift``) and the first-order gradient two more
(the two per-channel sums, then ``dx``), through
``minpy.kernels.conv.bn_*`` (numba kernels on the CPU when numba is
installed, array calls otherwise, CuPy included).

The forward op takes ``(x, gamma, beta)`` as one sequence argument so the
tape asks for all three gradients with one call.  That gradient runs the fast
kernels when nothing records it (a first-order gradient, or ``minpy.jit``
tracing one); while a tape records it (grad of grad) it is the composed
formula instead, which that tape differentiates op by op.
"""
from ... import numpy as mnp
from ...core import customop, new
from ...core.tape import recording
from ...kernels import conv as ck
from .conv import on_input_device, raw_of

__all__ = ["batchnorm_train"]


def batchnorm_train(x, gamma, beta, eps):
    """Train-mode batch norm of ``x`` (N, C) / (N, C, H, W) over every axis but 1.

    Args:
        x, gamma, beta: Arrays of one float dtype; gamma and beta of shape (C,).
        eps: added to the variance.
    Returns:
        ``(out, mean, var)``: ``out`` like ``x``; the batch mean and biased
        variance, (C,) in ``x``'s dtype.  The statistics are constants to the
        gradient (``batchnorm`` only passes them on through ``stop_gradient``).

    See also minpy.nn.layers.batchnorm_ops.
    """
    return _bn_op((x, gamma, beta), eps)


@customop
@on_input_device
def _bn_op(xgb, eps):
    x, gamma, beta = xgb
    xd, xp = raw_of(x)
    mean, var = ck.bn_train_stats(xp, xd)
    scale = raw_of(gamma, xd)[0].astype(mean.dtype) / xp.sqrt(var + eps)
    shift = raw_of(beta, xd)[0].astype(mean.dtype) - mean * scale
    out = ck.bn_apply(xp, xd, scale, shift, xp.empty(xd.shape, dtype=xd.dtype))
    return new(out), new(mean.astype(xd.dtype)), new(var.astype(xd.dtype))


@customop
@on_input_device
def _bn_grads_op(g, x, gamma, mean, var, eps):
    """``(dx, dgamma, dbeta)`` of ``_bn_op`` for the output gradient ``g``; never recorded."""
    gd, xp = raw_of(g)
    xd = raw_of(x, gd)[0]
    m = raw_of(mean, gd)[0].astype(xp.float64)
    invstd = 1.0 / xp.sqrt(raw_of(var, gd)[0].astype(xp.float64) + eps)
    dx = xp.empty(xd.shape, dtype=xd.dtype)
    gamma64 = raw_of(gamma, gd)[0].astype(xp.float64)
    dgamma, dbeta = ck.bn_backward(xp, gd, xd, m, invstd, gamma64, dx)
    return new(dx), new(dgamma.astype(xd.dtype)), new(dbeta.astype(xd.dtype))


def _composed_grads(g, x, gamma, eps):
    """The same gradients written in minpy calls (differentiable again)."""
    axes = (0,) + tuple(range(2, len(x.shape)))
    pshape = (1, x.shape[1]) + (1,) * (len(x.shape) - 2)
    centred = x - mnp.mean(x, axis=axes, keepdims=True)
    invstd = 1.0 / mnp.sqrt(mnp.mean(centred * centred, axis=axes, keepdims=True) + eps)
    xhat = centred * invstd
    gx = g * xhat
    dx = (mnp.reshape(gamma, pshape) * invstd) * (
        g - mnp.mean(g, axis=axes, keepdims=True) - xhat * mnp.mean(gx, axis=axes, keepdims=True))
    return dx, mnp.sum(gx, axis=axes), mnp.sum(g, axis=axes)


def _bn_vjp(ans, xgb, eps):
    x, gamma, _ = xgb
    _, mean, var = ans

    def vjp(gs):
        if recording():
            return _composed_grads(gs[0], x, gamma, eps)
        return _bn_grads_op(gs[0], x, gamma, mean, var, eps)
    return vjp


_bn_op.def_grad(_bn_vjp, argnum=0)
