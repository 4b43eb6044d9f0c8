"""Functional layers and losses (MinPy's ``minpy.nn.layers``), written with minpy operations.

Every layer is a plain function of minpy arrays, so ``minpy.grad`` /
``minpy.grad_and_loss`` differentiate it (grad of grad where the layer is
smooth) on whichever device the inputs live.  Names, argument order and
return conventions follow MinPy's; the layers MinPy lacked (``leaky_relu``,
``softmax``, ``layernorm``, ``conv2d``, pooling, ``embedding``, whole-sequence
``rnn``/``lstm``/``gru``, ``sigmoid_cross_entropy``, ``mse``) follow the same
style.  Losses take labels as integer class indices of shape (N,) or as a
one-hot (N, C) array.  ``softmax_loss`` has one fused gradient,
``(softmax(x) - onehot) / N``, itself written in minpy operations so that it
can be differentiated again.

Where things live (all importable from here, as in MinPy):

- this module: the argument checks (``check_indices``, ``onehot_target``),
  ``affine``, ``batchnorm``, ``layernorm``, ``dropout``, ``embedding`` and the
  losses, ``temporal_softmax_loss`` included;
- ``minpy.nn.layers.activations``: ``relu``, ``leaky_relu``, ``sigmoid``, ``tanh``,
  ``softmax``, ``log_softmax`` and the shape checks shared with the recurrent
  layers;
- ``minpy.nn.layers.recurrent``: ``temporal_affine`` and the recurrent layers
  (``rnn_step``/``rnn``/``rnn_temporal``, ``lstm_step``/``lstm``/
  ``lstm_temporal``, ``gru_step``/``gru``);
- ``minpy.nn.layers.conv``: ``conv2d``, ``max_pool``, ``avg_pool``.

Differences from MinPy, on purpose:

- ``dropout`` is inverted: training scales the kept units by 1 / (1 - prob),
  so test mode is the identity (MinPy scaled by (1 - prob) at test time).
- ``batchnorm`` also takes (N, C, H, W) input (statistics over N, H, W); the
  running statistics it returns carry no gradient; the default running
  variance is ones (MinPy: zeros), and test mode without running statistics
  raises instead of dividing by sqrt(eps).
"""
import numpy

from ... import numpy as mnp
from ...core import customop, stop_gradient
from ...core.array import Array, wait
from ...dispatch.backend import NUMPY, backend_of
from ...dispatch.context import cpu, current_context
from ...dispatch.transfer import move_raw
from .batchnorm_ops import batchnorm_train
from .seeding import random_source, current_random_source
from .conv import conv2d, max_pool, avg_pool, shape_of, dtype_of
from .activations import (relu, leaky_relu, sigmoid, tanh, softmax, log_softmax,
                          _expect_shape, _expect_ndim)
from .recurrent import (temporal_affine, rnn_step, rnn_temporal, rnn, lstm_step,
                        lstm_temporal, lstm, gru_step, gru)

__all__ = ["affine", "relu", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
           "batchnorm", "layernorm", "dropout", "embedding",
           "conv2d", "max_pool", "avg_pool",
           "svm_loss", "softmax_cross_entropy", "softmax_loss", "l2_loss", "mse",
           "sigmoid_cross_entropy", "temporal_affine", "temporal_softmax_loss",
           "rnn_step", "rnn_temporal", "rnn", "lstm_step", "lstm_temporal", "lstm",
           "gru_step", "gru", "random_source"]

_MODES = ("train", "test")


# ---------------------------------------------------------------- argument checks
def _check_mode(layer, mode):
    if mode not in _MODES:
        raise ValueError(f"{layer}: mode must be one of {_MODES}, got {mode!r}")


def _host_min_max(a):
    """(min, max) of an integer array with one reduction where it lives: on the host for
    CPU arrays; for device arrays one device reduction, its device current, then an
    explicit two-number copy (never an implicit device-to-host conversion).

    Reads the buffer itself, not through minpy calls: a validation, not a value the
    program uses, so it is allowed while minpy.jit traces (replays of the trace do
    not check again)."""
    if type(a) is Array:
        wait(a)
        h = a._data
    else:
        h = a if backend_of(a) is not NUMPY else numpy.asarray(a)
    backend = backend_of(h)
    if backend is NUMPY:
        return int(h.min()), int(h.max())
    with backend.device(backend.device_id(h)):
        both = backend.xp.stack([backend.xp.min(h), backend.xp.max(h)])
    lo, hi = move_raw(both, cpu())
    return int(lo), int(hi)


def check_indices(layer, name, idx, size, expected_shape=None, what="class indices"):
    """Raise unless ``idx`` is an integer array with values in [0, size) (and of
    ``expected_shape`` when given); ``layer`` and ``name`` go into the message.

    One min/max reduction: on the host for CPU arrays, on the device otherwise.
    Returns None. See also onehot_target.
    """
    dt = dtype_of(idx)
    s = shape_of(idx)
    if dt.kind not in "iu":
        raise TypeError(f"{layer}: {name} has dtype {dt}; expected integer {what}"
                        + (f" of shape {expected_shape}" if expected_shape else ""))
    if expected_shape is not None and s != tuple(expected_shape):
        raise ValueError(f"{layer}: {name} has shape {s}; expected integer {what} of "
                         f"shape {tuple(expected_shape)}")
    if numpy.prod(s) == 0:
        return
    lo, hi = _host_min_max(idx)
    if lo < 0 or hi >= size:
        raise ValueError(f"{layer}: {name} has values in [{lo}, {hi}]; expected {what} "
                         f"in [0, {size})")


def onehot_target(layer, x, label):
    """The one-hot (N, C) target in ``x``'s dtype for ``label`` given as class
    indices (N,) or as a one-hot (N, C) array; ``x`` must be (N, C).

    Raises TypeError/ValueError naming ``layer`` on a bad label.
    See also check_indices, softmax_loss.
    """
    n, c = _expect_ndim(layer, "x", x, 2, "of scores (N, C)")
    ls = shape_of(label)
    if ls == (n, c):
        return mnp.astype(mnp.asarray(label), dtype_of(x), copy=False)
    dt = dtype_of(label)
    if len(ls) == 1 and dt.kind == "f":
        label, dt = _whole_labels(layer, label), numpy.dtype(numpy.int64)
    if len(ls) != 1 or dt.kind not in "iu":
        raise (ValueError if dt.kind in "iu" else TypeError)(
            f"{layer}: label has shape {ls} and dtype {dt} (x shape {(n, c)}); expected "
            f"integer class indices of shape ({n},) or a one-hot ({n}, {c}) array")
    check_indices(layer, "label", label, c, (n,))
    return _onehot(label, c, dtype_of(x))


def _whole_labels(layer, label):
    """Float class indices (MinPy's ``np.zeros([N])`` labels, MXNet's float32 labels)
    as int64 host indices; a value that is not a whole number is an error."""
    h = numpy.asarray(label.asnumpy() if hasattr(label, "asnumpy") else label)
    if not numpy.all(numpy.isfinite(h)) or not numpy.array_equal(h, numpy.round(h)):
        raise ValueError(f"{layer}: label has dtype {h.dtype} and values that are not whole "
                         f"numbers; expected class indices (integers, or floats holding "
                         f"integers) or a one-hot (N, C) array")
    return h.astype(numpy.int64)


def _onehot(label, c, dtype):
    """(N, C) one-hot of checked integer indices (N,), made on ``label``'s device."""
    label = mnp.asarray(label)
    with _context_of(label):
        classes = mnp.arange(c)
    return mnp.astype(label[:, None] == classes, dtype)


def _context_of(a):
    ctx = getattr(a, "context", None)
    return ctx if ctx is not None else current_context()


# ---------------------------------------------------------------- fully-connected
def affine(x, w, b):
    """Fully-connected layer: ``x.reshape(N, -1) @ w + b``.

    Args:
        x: input of shape (N, d1, ..., dk); each sample is flattened to D = d1*...*dk.
        w: weights of shape (D, M).
        b: bias of shape (M,), or any shape that broadcasts to (N, M) ((N, 1),
            (1, M), a scalar: MinPy computed ``x.dot(w) + b``), or None for no bias.
    Returns:
        An Array of shape (N, M).
    Raises:
        ValueError: x, w of shapes that do not chain, or b that does not
            broadcast to (N, M).

    See also temporal_affine, minpy.symbol.FullyConnected.
    """
    xs, ws = shape_of(x), shape_of(w)
    if len(xs) < 2:
        raise ValueError(f"affine: x has shape {xs}; expected (N, d1, ..., dk) with at "
                         "least 2 dimensions")
    d = int(numpy.prod(xs[1:]))
    if len(ws) != 2 or ws[0] != d:
        raise ValueError(f"affine: w has shape {ws} but x has {d} features per sample "
                         f"(x shape {xs}); expected w of shape ({d}, M)")
    if b is not None:
        bs, want = shape_of(b), (xs[0], ws[1])
        try:
            fits = numpy.broadcast_shapes(bs, want) == want
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"affine: b has shape {bs}, which does not broadcast to the "
                             f"output shape {want} (x shape {xs}, w shape {ws}); expected b "
                             f"of shape ({ws[1]},) or one that broadcasts to {want}")
    out = mnp.matmul(mnp.reshape(x, (xs[0], d)) if len(xs) != 2 else x, w)
    return out if b is None else out + b


# ---------------------------------------------------------------- normalisation, dropout
def _stat_axes(layer, x, gamma, beta):
    """Reduction axes and the broadcast shape of the per-channel parameters."""
    xs = shape_of(x)
    if len(xs) not in (2, 4):
        raise ValueError(f"{layer}: x has shape {xs}; expected (N, D) or (N, C, H, W)")
    pshape = (1, xs[1]) if len(xs) == 2 else (1, xs[1], 1, 1)
    for name, p in (("gamma", gamma), ("beta", beta)):
        ps = shape_of(p)        # (D,), or MinPy's (1, D): one value per feature
        if ps != (xs[1],) and (len(ps) > len(pshape) or numpy.prod(ps) != xs[1] or
                               ps != pshape[len(pshape) - len(ps):]):
            _expect_shape(layer, name, p, (xs[1],), f"x has shape {xs}")
    return ((0,) if len(xs) == 2 else (0, 2, 3)), pshape


def _kernel_dtypes(*arrays):
    """True when all are Arrays of one dtype, float32 or float64 (what the raw kernels take)."""
    d = dtype_of(arrays[0])
    return d in (numpy.float32, numpy.float64) and \
        all(isinstance(a, Array) and a.dtype == d for a in arrays)


def batchnorm(x, gamma, beta, mode='train', eps=1e-5, momentum=0.9, running_mean=None,
              running_var=None):
    """Batch normalisation; returns ``(out, running_mean, running_var)``.

    Train mode normalises with the batch mean and (biased) variance per feature
    and updates ``running = momentum * running + (1 - momentum) * batch_stat``;
    the statistics entering the update are ``stop_gradient``-ed, so the running
    statistics carry no gradient.  Test mode normalises with the running
    statistics and returns them unchanged.

    Args:
        x: (N, D), or (N, C, H, W) for spatial batch norm (statistics over N, H, W).
        gamma, beta: scale and shift of shape (D,) / (C,).
        mode: 'train' or 'test'.
        eps: added to the variance.
        momentum: decay of the running statistics.
        running_mean, running_var: shape (D,) / (C,); default zeros and ones in
            train mode; required in test mode.
    Returns:
        ``(out, running_mean, running_var)``: out like ``x``, the statistics (D,).

    See also layernorm, minpy.symbol.BatchNorm.
    """
    _check_mode("batchnorm", mode)
    axes, pshape = _stat_axes("batchnorm", x, gamma, beta)
    d = pshape[1]
    for name, r in (("running_mean", running_mean), ("running_var", running_var)):
        if r is not None:
            _expect_shape("batchnorm", name, r, (d,), f"x has shape {shape_of(x)}")
        elif mode == "test":
            raise ValueError("batchnorm: mode='test' needs running_mean and running_var "
                             f"of shape ({d},), got {name}=None")
    g, bt = mnp.reshape(gamma, pshape), mnp.reshape(beta, pshape)
    if mode == "test":
        scale = g / mnp.sqrt(mnp.reshape(running_var, pshape) + eps)
        return (x - mnp.reshape(running_mean, pshape)) * scale + bt, running_mean, running_var
    if _kernel_dtypes(x, gamma, beta):
        out, mean, var = batchnorm_train(x, gamma, beta, eps)
    else:
        mean = mnp.mean(x, axis=axes, keepdims=True)
        centred = x - mean
        var = mnp.mean(centred * centred, axis=axes, keepdims=True)
        out = centred * (g / mnp.sqrt(var + eps)) + bt
    with _context_of(x):
        if running_mean is None:
            running_mean = mnp.zeros(d, dtype=dtype_of(x))
        if running_var is None:
            running_var = mnp.ones(d, dtype=dtype_of(x))
    new_mean = momentum * stop_gradient(running_mean) + \
        (1.0 - momentum) * mnp.reshape(stop_gradient(mean), (d,))
    new_var = momentum * stop_gradient(running_var) + \
        (1.0 - momentum) * mnp.reshape(stop_gradient(var), (d,))
    return out, new_mean, new_var


def layernorm(x, gamma, beta, eps=1e-5):
    """Layer normalisation over the last axis: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    Args:
        x: input of shape (..., D).
        gamma, beta: scale and shift of shape (D,).
        eps: added to the (biased) variance.
    Returns:
        An Array like ``x``. See also batchnorm, torch.nn.functional.layer_norm.
    """
    xs = shape_of(x)
    if not xs:
        raise ValueError("layernorm: x is 0-d; expected shape (..., D)")
    for name, p in (("gamma", gamma), ("beta", beta)):
        _expect_shape("layernorm", name, p, (xs[-1],), f"x has shape {xs}")
    centred = x - mnp.mean(x, axis=-1, keepdims=True)
    var = mnp.mean(centred * centred, axis=-1, keepdims=True)
    return centred / mnp.sqrt(var + eps) * gamma + beta


def dropout(x, prob, mode='train', seed=None):
    """Inverted dropout: in train mode each unit is zeroed with probability
    ``prob`` and the kept ones are scaled by ``1 / (1 - prob)``; test mode (or
    ``prob == 0``) returns ``x`` itself.

    Args:
        x: input of any shape.
        prob: drop probability in [0, 1]; 1 drops everything.
        mode: 'train' or 'test'.
        seed: an int makes the mask deterministic (a private generator; the
            global state is untouched); None draws from the generator of the
            enclosing :func:`random_source` block (``Solver(seed=)`` sets one),
            else from ``minpy.random``'s global state, so ``minpy.random.seed(s)``
            reproduces a run.
    Returns:
        An Array like ``x`` (``x`` itself when nothing is dropped).

    See also minpy.symbol.Dropout.
    """
    _check_mode("dropout", mode)
    if not 0 <= prob <= 1:
        raise ValueError(f"dropout: prob must be in [0, 1], got {prob!r}")
    if mode == "test" or prob == 0:
        return x
    if prob == 1:
        return x * 0
    shape = shape_of(x)
    with _context_of(x):
        source = mnp.random.RandomState(seed) if seed is not None else current_random_source()
        u = (source if source is not None else mnp.random).random_sample(shape)
    keep = mnp.astype(u >= prob, dtype_of(x)) * (1.0 / (1.0 - prob))
    return x * keep


def embedding(indices, weight):
    """Rows of ``weight`` picked by integer ``indices``: ``weight[indices]``.

    Args:
        indices: integer array of any shape, values in [0, V).
        weight: table of shape (V, D).
    Returns:
        An Array of shape ``indices.shape + (D,)``; the gradient of ``weight``
        adds up the rows of repeated indices.

    See also minpy.symbol.Embedding, torch.nn.functional.embedding.
    """
    ws = _expect_ndim("embedding", "weight", weight, 2, "(V, D)")
    check_indices("embedding", "indices", indices, ws[0], what="row indices")
    return mnp.asarray(weight)[mnp.asarray(indices)]


# ---------------------------------------------------------------- losses
@customop
def _fused_xent(x, target, count):
    """-sum(target * log_softmax(x)) / count; gradient ``(softmax(x) * sum(target) - target)``."""
    return -mnp.sum(target * log_softmax(x)) / count


def _fused_xent_dx(ans, x, target, count):
    def vjp(g):
        mass = mnp.sum(target, axis=-1, keepdims=True)
        return (softmax(x) * mass - target) * (g / count)
    return vjp


_fused_xent.def_grad(_fused_xent_dx, argnum=0)
_fused_xent.def_grad(lambda ans, x, target, count: lambda g: log_softmax(x) * (-g / count),
                     argnum=1)


def softmax_loss(x, label):
    """Softmax cross-entropy from scores, averaged over the batch (stable).

    ``-mean_n log softmax(x)[n, label[n]]``; its gradient is one fused step
    ``(softmax(x) - onehot) / N`` that can itself be differentiated again.

    Args:
        x: scores of shape (N, C).
        label: integer class indices (N,) in [0, C), or a one-hot (N, C) array.
    Returns:
        A 0-d Array in ``x``'s dtype (float32 stays float32).

    See also softmax_cross_entropy, log_softmax, minpy.symbol.SoftmaxOutput.
    """
    target = onehot_target("softmax_loss", x, label)
    return _fused_xent(x, target, shape_of(x)[0])


def softmax_cross_entropy(prob, label):
    """Cross-entropy of probabilities: ``-sum(log(prob) * onehot) / N`` (MinPy's).

    Args:
        prob: probabilities of shape (N, C) (e.g. ``softmax(x)``).
        label: integer class indices (N,) or a one-hot (N, C) array.
    Returns:
        A 0-d Array. See also softmax_loss (from scores, stable).
    """
    target = onehot_target("softmax_cross_entropy", prob, label)
    return -mnp.sum(mnp.log(prob) * target) / shape_of(prob)[0]


def svm_loss(x, y):
    """Multiclass SVM (hinge) loss averaged over the batch:
    ``sum_{j != y} max(0, x[:, j] - x[:, y] + 1) / N``.

    Args:
        x: scores of shape (N, C).
        y: integer class indices (N,) or a one-hot (N, C) array.
    Returns:
        A 0-d Array. See also softmax_loss.
    """
    target = onehot_target("svm_loss", x, y)
    correct = mnp.sum(x * target, axis=1, keepdims=True)
    margins = mnp.maximum(x - correct + 1.0, 0) * (1 - target)
    return mnp.sum(margins) / shape_of(x)[0]


def l2_loss(x, label):
    """Squared error summed over features, averaged over the batch (MinPy's):
    ``sum((x - label) ** 2) / N``.

    Args:
        x: predictions of shape (N, ...).
        label: targets shaped like ``x``; or, for (N, C) ``x``, integer class
            indices (N,) taken as one-hot targets.
    Returns:
        A 0-d Array. See also mse.
    """
    xs = shape_of(x)
    if shape_of(label) != xs:
        if dtype_of(label).kind not in "iu":
            _expect_shape("l2_loss", "label", label, xs, f"x has shape {xs}")
        label = onehot_target("l2_loss", x, label)
    diff = x - label
    return mnp.sum(diff * diff) / xs[0]


def mse(x, label):
    """Mean squared error over all elements: ``mean((x - label) ** 2)``.

    Args:
        x, label: arrays of the same shape.
    Returns:
        A 0-d Array. See also l2_loss.
    """
    _expect_shape("mse", "label", label, shape_of(x), f"x has shape {shape_of(x)}")
    diff = x - label
    return mnp.mean(diff * diff)


def sigmoid_cross_entropy(x, label):
    """Binary cross-entropy from logits, averaged over all elements (stable):
    ``mean(log(1 + exp(x)) - label * x)``.

    Args:
        x: logits of any shape.
        label: targets in [0, 1] of the same shape.
    Returns:
        A 0-d Array. See also sigmoid, torch.nn.functional.binary_cross_entropy_with_logits.
    """
    _expect_shape("sigmoid_cross_entropy", "label", label, shape_of(x),
                  f"x has shape {shape_of(x)}")
    return mnp.mean(mnp.logaddexp(0, x) - label * x)


# ---------------------------------------------------------------- sequence loss
def temporal_softmax_loss(x, y, mask):
    """Softmax cross-entropy at every timestep, masked, summed over time and
    averaged over the batch (MinPy's): ``-sum(mask * log softmax(x)[y]) / N``.

    Args:
        x: scores of shape (N, T, V).
        y: integer indices (N, T) in [0, V).
        mask: (N, T) booleans or weights; 0 drops a step.
    Returns:
        A 0-d Array in ``x``'s dtype, with the fused gradient of softmax_loss.
    """
    n, t, v = _expect_ndim("temporal_softmax_loss", "x", x, 3, "(N, T, V)")
    _expect_shape("temporal_softmax_loss", "mask", mask, (n, t), f"x has shape {(n, t, v)}")
    check_indices("temporal_softmax_loss", "y", y, v, (n, t))
    flat = mnp.reshape(x, (n * t, v))
    target = _onehot(mnp.reshape(mnp.asarray(y), (n * t,)), v, dtype_of(x))
    weights = mnp.astype(mnp.reshape(mnp.asarray(mask), (n * t, 1)), dtype_of(x))
    return _fused_xent(flat, target * weights, n)
