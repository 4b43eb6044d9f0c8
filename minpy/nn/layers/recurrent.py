"""Recurrent layers (MinPy's ``rnn_step`` / ``lstm_step`` / ``gru_step`` and the
whole-sequence ``rnn`` / ``lstm`` / ``gru``) and ``temporal_affine``, written
with minpy operations.

Re-exported by ``minpy.nn.layers``, so ``minpy.nn.layers.lstm_step`` and the
rest keep working.  The whole-sequence layers project the inputs of all
timesteps with one matrix product, then loop over time; everything is an
ordinary composition of minpy calls, so ``minpy.grad`` differentiates it on
whichever device the inputs live.  Gate orders follow MinPy's: i, f, o, g for
the LSTM; reset r then update z for the GRU.  The sequence loss
``temporal_softmax_loss`` stays with the other losses in ``minpy.nn.layers``.
"""
import numpy

from ... import numpy as mnp
from .activations import sigmoid, _expect_shape, _expect_ndim
from .conv import shape_of

__all__ = ["temporal_affine", "rnn_step", "rnn_temporal", "rnn", "lstm_step",
           "lstm_temporal", "lstm", "gru_step", "gru"]


def temporal_affine(x, w, b):
    """Affine map applied at every timestep: (N, T, D) @ (D, M) + (M,) -> (N, T, M).

    See also minpy.nn.layers.affine.
    """
    n, t, d = _expect_ndim("temporal_affine", "x", x, 3, "(N, T, D)")
    ws = shape_of(w)
    if len(ws) != 2 or ws[0] != d:
        raise ValueError(f"temporal_affine: w has shape {ws} but x has {d} features per "
                         f"step (x shape {(n, t, d)}); expected w of shape ({d}, M)")
    _expect_shape("temporal_affine", "b", b, (ws[1],), f"w has shape {ws}")
    return mnp.reshape(mnp.matmul(mnp.reshape(x, (n * t, d)), w), (n, t, ws[1])) + b


def _check_recurrent(layer, x, h0, wx, wh, b, gates):
    """(N, T, D, H) after checking x (N, T, D), h0 (N, H), wx (D, gH), wh (H, gH), b (gH,)."""
    n, t, d = _expect_ndim(layer, "x", x, 3, "(N, T, D)")
    hs = shape_of(h0)
    if len(hs) != 2 or hs[0] != n:
        raise ValueError(f"{layer}: h0 has shape {hs} but x has shape {(n, t, d)}; "
                         f"expected h0 of shape ({n}, H)")
    h = hs[1]
    _expect_shape(layer, "Wx", wx, (d, gates * h), f"x has shape {(n, t, d)} and h0 {hs}")
    _expect_shape(layer, "Wh", wh, (h, gates * h), f"h0 has shape {hs}")
    _expect_step_bias(layer, "b", b, n, gates * h, f"h0 has shape {hs}")
    return n, t, d, h


def _expect_step_bias(layer, name, b, n, width, context):
    """Raise unless bias ``b`` broadcasts to one step's (N, width), as MinPy added it at
    every step (``np.dot(x, Wx) + np.dot(prev_h, Wh) + b``): (width,), (1, width),
    (N, 1), (N, width) or a scalar."""
    bs = shape_of(b)
    try:
        fits = len(bs) <= 2 and numpy.broadcast_shapes(bs, (n, width)) == (n, width)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{layer}: {name} has shape {bs} but {context}; expected {name} of "
                         f"shape ({width},) or one that broadcasts to ({n}, {width})")


def _step_bias(b):
    """A 2-d step bias (N or 1, width) as (N or 1, 1, width) for all timesteps at once."""
    bs = shape_of(b)
    return mnp.reshape(b, (bs[0], 1, bs[1])) if len(bs) == 2 else b


def _inputs_projected(x, wx, b, n, t, d):
    """``x @ Wx + b`` for all timesteps in one matrix product, shape (N, T, gH)."""
    return mnp.reshape(mnp.matmul(mnp.reshape(x, (n * t, d)), wx), (n, t, -1)) + _step_bias(b)


def rnn_step(x, prev_h, Wx, Wh, b):
    """One step of a tanh RNN: ``tanh(x @ Wx + prev_h @ Wh + b)``.

    Args:
        x: (N, D); prev_h: (N, H); Wx: (D, H); Wh: (H, H); b: (H,).
    Returns:
        next_h of shape (N, H). See also rnn_temporal.
    """
    return mnp.tanh(mnp.matmul(x, Wx) + mnp.matmul(prev_h, Wh) + b)


def rnn(x, h0, Wx, Wh, b):
    """A tanh RNN over a whole sequence; returns all hidden states (N, T, H).

    Args:
        x: (N, T, D); h0: (N, H); Wx: (D, H); Wh: (H, H); b: (H,).
    Returns:
        h of shape (N, T, H). See also rnn_step, lstm, gru.
    """
    n, t, d, _ = _check_recurrent("rnn", x, h0, Wx, Wh, b, 1)
    xw = _inputs_projected(x, Wx, b, n, t, d)
    h, hs = h0, []
    for step in range(t):
        h = mnp.tanh(xw[:, step] + mnp.matmul(h, Wh))
        hs.append(h)
    return mnp.stack(hs, axis=1)


rnn_temporal = rnn      # MinPy's name


def _lstm_cell(a, prev_c, h):
    """Gates i, f, o, g from the pre-activation ``a`` (N, 4H) -> (next_h, next_c)."""
    i, f, o = sigmoid(a[:, :h]), sigmoid(a[:, h:2 * h]), sigmoid(a[:, 2 * h:3 * h])
    next_c = f * prev_c + i * mnp.tanh(a[:, 3 * h:])
    return o * mnp.tanh(next_c), next_c


def lstm_step(x, prev_h, prev_c, Wx, Wh, b):
    """One LSTM step (gate order i, f, o, g as MinPy); returns ``(next_h, next_c)``.

    Args:
        x: (N, D); prev_h, prev_c: (N, H); Wx: (D, 4H); Wh: (H, 4H); b: (4H,).
    Returns:
        ``(next_h, next_c)``, each (N, H). See also lstm.
    """
    a = mnp.matmul(x, Wx) + mnp.matmul(prev_h, Wh) + b
    return _lstm_cell(a, prev_c, shape_of(prev_h)[1])


def lstm(x, h0, Wx, Wh, b, c0=None):
    """An LSTM over a whole sequence; returns all hidden states (N, T, H).

    Args:
        x: (N, T, D); h0: (N, H); Wx: (D, 4H); Wh: (H, 4H); b: (4H,).
        c0: initial cell state (N, H); default zeros.
    Returns:
        h of shape (N, T, H). See also lstm_step, lstm_temporal (MinPy's name,
        c0 = 0).
    """
    n, t, d, h = _check_recurrent("lstm", x, h0, Wx, Wh, b, 4)
    if c0 is None:
        c0 = mnp.zeros_like(h0)
    else:
        _expect_shape("lstm", "c0", c0, (n, h), f"h0 has shape {(n, h)}")
    xw = _inputs_projected(x, Wx, b, n, t, d)
    hc, c, hs = h0, c0, []
    for step in range(t):
        hc, c = _lstm_cell(xw[:, step] + mnp.matmul(hc, Wh), c, h)
        hs.append(hc)
    return mnp.stack(hs, axis=1)


def lstm_temporal(x, h0, Wx, Wh, b):
    """MinPy's whole-sequence LSTM (zero initial cell state): ``lstm(x, h0, Wx, Wh, b)``."""
    return lstm(x, h0, Wx, Wh, b)


def _gru_cell(xr, xh, prev_h, Wh, Whh, h):
    """One GRU update from the input projections ``xr`` (N, 2H) and ``xh`` (N, H)."""
    a = sigmoid(xr + mnp.matmul(prev_h, Wh))
    r, z = a[:, :h], a[:, h:]
    cand = mnp.tanh(xh + mnp.matmul(r * prev_h, Whh))
    return z * prev_h + (1 - z) * cand


def gru_step(x, prev_h, Wx, Wh, b, Wxh, Whh, bh):
    """One GRU step (MinPy's: reset r and update z gates, ``z * h + (1 - z) * h~``).

    Args:
        x: (N, D); prev_h: (N, H); Wx: (D, 2H), Wh: (H, 2H), b: (2H,) for the
        r and z gates; Wxh: (D, H), Whh: (H, H), bh: (H,) for the candidate.
    Returns:
        next_h of shape (N, H). See also gru.
    """
    return _gru_cell(mnp.matmul(x, Wx) + b, mnp.matmul(x, Wxh) + bh, prev_h, Wh, Whh,
                     shape_of(prev_h)[1])


def gru(x, h0, Wx, Wh, b, Wxh, Whh, bh):
    """A GRU over a whole sequence; returns all hidden states (N, T, H).

    Args as :func:`gru_step`, with x of shape (N, T, D) and h0 (N, H).
    Returns:
        h of shape (N, T, H). See also gru_step, lstm, rnn.
    """
    n, t, d, h = _check_recurrent("gru", x, h0, Wx, Wh, b, 2)
    _expect_shape("gru", "Wxh", Wxh, (d, h), f"x has shape {(n, t, d)} and h0 {(n, h)}")
    _expect_shape("gru", "Whh", Whh, (h, h), f"h0 has shape {(n, h)}")
    _expect_step_bias("gru", "bh", bh, n, h, f"h0 has shape {(n, h)}")
    xr = _inputs_projected(x, Wx, b, n, t, d)
    xh = _inputs_projected(x, Wxh, bh, n, t, d)
    hs, hcur = [], h0
    for step in range(t):
        hcur = _gru_cell(xr[:, step], xh[:, step], hcur, Wh, Whh, h)
        hs.append(hcur)
    return mnp.stack(hs, axis=1)
