"""``mx.autograd``: MXNet 1.x's imperative autograd over minpy's tape.

The machinery is :mod:`minpy.core.imperative` (a recording is one minpy tape,
opened by the outermost ``record()``; marked variables become its leaves in
place; ``backward`` writes into their ``.grad``). This module is MXNet's
face of it: the same names and signatures; misuse raises ``MXNetError`` where
MXNet does (:class:`minpy.core.imperative.MXNetError`, a RuntimeError).

Example (as MXNet)::

    w = mx.nd.zeros((3, 1)); w.attach_grad()
    for _ in range(10):
        with mx.autograd.record():
            loss = ((mx.nd.dot(x, w) - y) ** 2).mean()
        loss.backward()
        w[:] -= 0.1 * w.grad

Not covered: ``get_symbol`` (minpy's tape is not a symbol graph), sparse storage
types; ``grad(create_graph=True)`` through ``Function`` or mx.nd layer operators.
"""
from ..core import imperative as _imp
from ..core.array import Array
from ..core.imperative import MXNetError
from .ndarray import _invoke as _nd_invoke

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "Function",
           "get_symbol", "MXNetError"]

is_recording = _imp.is_recording
is_training = _imp.is_training
set_recording = _imp.set_recording


def set_training(train_mode):   # pylint: disable=redefined-outer-name
    """Set training (True) or predicting (False) mode; returns the previous mode.

    mx.nd's layer operators (Dropout, BatchNorm) follow it. See also
    mxnet.autograd.set_training."""
    _nd_invoke.set_training(train_mode)
    return _imp.set_training(train_mode)


class _Scope(_imp.RecordingStateScope):
    """MXNet's ``_RecordingStateScope``: the recording and training state of
    :mod:`minpy.core.imperative`, and the training mode of mx.nd's layer operators."""

    def __init__(self, is_record, train_mode):     # pylint: disable=redefined-outer-name
        super().__init__(is_record, train_mode)
        self._prev_nd_mode = None

    def __enter__(self):
        super().__enter__()
        if self._enter_train_mode is not None:
            self._prev_nd_mode = _nd_invoke.set_training(self._enter_train_mode)
        return self

    def __exit__(self, ptype, value, trace):
        if self._enter_train_mode is not None:
            _nd_invoke.set_training(self._prev_nd_mode)
        return super().__exit__(ptype, value, trace)


def record(train_mode=True):     # pylint: disable=redefined-outer-name
    """A scope recording the computation for gradients (``with autograd.record():``).

    Args:
        train_mode: run the forward pass in training mode (Dropout drops, BatchNorm
            uses batch statistics); default True.
    See also mxnet.autograd.record.
    """
    return _Scope(True, train_mode)


def pause(train_mode=False):     # pylint: disable=redefined-outer-name
    """A scope inside ``record()`` whose computation is not recorded.

    See also mxnet.autograd.pause."""
    return _Scope(False, train_mode)


def train_mode():
    """A scope in training mode, recording state unchanged.

    See also mxnet.autograd.train_mode."""
    return _Scope(None, True)


def predict_mode():
    """A scope in predicting (inference) mode, recording state unchanged.

    See also mxnet.autograd.predict_mode."""
    return _Scope(None, False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Mark arrays as variables; ``backward`` writes their gradients into ``gradients``.

    Args:
        variables: an Array or a list of Arrays.
        gradients: the gradient buffers, one per variable (same shapes).
        grad_reqs: ``'write'``, ``'add'`` or ``'null'``, or one per variable.
    See also mxnet.autograd.mark_variables.
    """
    _imp.mark_variables(variables, gradients, grad_reqs)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # noqa: E501 pylint: disable=redefined-outer-name
    """Compute the gradients of ``heads`` w.r.t. the marked variables into their ``.grad``.

    Args:
        heads: an Array or a list of Arrays recorded in ``record()``.
        head_grads: their gradients (default ones; ``None`` entries mean ones).
        retain_graph: keep the recording for another backward (default: free it).
        train_mode: run the backward pass in training mode.
    See also mxnet.autograd.backward.
    """
    _imp.backward(heads, head_grads, retain_graph, train_mode)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):      # pylint: disable=redefined-outer-name
    """The gradients of ``heads`` w.r.t. ``variables``: a list of new Arrays (also for
    one variable, as MXNet 1.9.1 returns); ``.grad`` is left alone.

    ``create_graph=True`` records the gradient computation (replaying the recording),
    so ``dx.backward()`` gives second derivatives; calls that cannot be recorded again
    (``autograd.Function``, mx.nd layer operators) raise NotImplementedError.
    See also mxnet.autograd.grad.
    """
    return _imp.grad(heads, variables, head_grads, retain_graph, create_graph, train_mode)


def get_symbol(x):
    """Not supported: minpy records a tape of primitive calls, not a symbol graph.

    See also mxnet.autograd.get_symbol."""
    raise NotImplementedError("autograd.get_symbol: minpy's recording is a tape of NumPy "
                              "calls, not a Symbol graph; build the network with mx.sym to get "
                              "a Symbol")


Function = _imp.Function     # MXNet's autograd.Function (forward/backward, saved_tensors)
NDArray = Array     # what mxnet.autograd's namespace also exposes
