"""2-d convolution and pooling (NCHW) written with minpy operations.

``conv2d`` on float inputs of one dtype is three custom ops -- the forward,
its data gradient and its weight gradient -- whose bodies call the raw
kernels of ``minpy.kernels.conv`` (shifted flat GEMMs) and whose VJPs
are each other, so the tape differentiates it to any order.  Other inputs
(integers, mixed dtypes) take the composed formulation: one matrix product
per kernel offset ``(i, j)`` over the strided view of the padded input that
the offset reads, contracted with the ``(F, C)`` weight slice
``w[:, :, i, j]``; the tape differentiates that one op by op.  Pooling on float
Arrays is likewise three custom ops (the forward, its gradient routing, and
for max the transpose of that routing, which the routing's own VJP needs);
other inputs compose minpy calls:

- ``max_pool`` / ``avg_pool`` reshape and reduce when the windows tile the
  input exactly (stride == pool size, no padding, divisible sizes); otherwise
  they stack the ``KH * KW`` strided views and reduce over the stack.

Loops run over kernel offsets only, never over output positions.
"""
import functools

import numpy

from ... import numpy as mnp
from ...core import Array, customop, new, tree
from ...core.array import wait
from ...dispatch.backend import backend_of
from ...dispatch.transfer import context_of, data_on
from ...numpy.rule_helpers import shape_of
from ...kernels import conv as ck
from ...symbol.executor import device_scope

__all__ = ["conv2d", "max_pool", "avg_pool", "raw_of", "on_input_device"]


def dtype_of(a):
    """The dtype of an Array, a NumPy array or anything ``numpy.asarray`` accepts.

    See also numpy.result_type.
    """
    d = getattr(a, "dtype", None)
    return numpy.dtype(d) if d is not None else numpy.asarray(a).dtype


def pair(layer, name, value, minimum):
    """``value`` (an int or a pair of ints) as a pair of ints, each at least ``minimum``.

    Raises TypeError/ValueError naming ``layer`` and ``name``. See also conv2d.
    """
    v = (value, value) if isinstance(value, (int, numpy.integer)) else tuple(value)
    if len(v) != 2 or not all(isinstance(e, (int, numpy.integer)) for e in v):
        raise TypeError(f"{layer}: {name} must be an int or a pair of ints, got {value!r}")
    if min(v) < minimum:
        raise ValueError(f"{layer}: {name} must be at least {minimum}, got {value!r}")
    return int(v[0]), int(v[1])


def _check_nchw(layer, x):
    s = shape_of(x)
    if len(s) != 4:
        raise ValueError(f"{layer}: x has shape {s}; expected a 4-d (N, C, H, W) array")
    return s


def _out_size(layer, hw, k, stride, pad, dilation=(1, 1)):
    """Output height and width of a 'valid' sliding window."""
    out = tuple((hw[a] + 2 * pad[a] - dilation[a] * (k[a] - 1) - 1) // stride[a] + 1
                for a in range(2))
    if min(out) < 1:
        raise ValueError(f"{layer}: input of spatial size {hw} is too small for a window of "
                         f"{k} (dilation {dilation}, pad {pad}); the output would be empty")
    return out


def _padded(x, pad, value=0):
    if not any(pad):
        return x
    widths = ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1]))
    return mnp.pad(x, widths, mode="constant", constant_values=value)


def _window(xp, i, j, stride, out_hw):
    """The (..., OH, OW) strided view kernel offset ``(i, j)`` (already dilated) reads."""
    return xp[..., i:i + stride[0] * (out_hw[0] - 1) + 1:stride[0],
              j:j + stride[1] * (out_hw[1] - 1) + 1:stride[1]]


def conv2d(x, w, b=None, stride=1, pad=0, dilation=1, groups=1):
    """2-d cross-correlation (a convolution layer) over NCHW input.

    ``out[n, f, oh, ow] = b[f] + sum_{c, i, j} w[f, c, i, j] *
    xpad[n, g*C/groups + c, oh*sh + i*dh, ow*sw + j*dw]`` where ``g`` is the
    group of filter ``f`` and ``xpad`` is ``x`` zero-padded by ``pad``.

    Args:
        x: input of shape (N, C, H, W).
        w: filters of shape (F, C // groups, KH, KW); F divisible by ``groups``.
        b: optional bias of shape (F,).
        stride, pad, dilation: an int or an (h, w) pair each.
        groups: number of channel groups (C and F both divisible by it).
    Returns:
        An Array of shape (N, F, OH, OW) with
        ``OH = (H + 2*ph - dh*(KH - 1) - 1) // sh + 1`` (likewise OW).
    Raises:
        ValueError naming the mismatching shapes.

    See also minpy.symbol.Convolution, torch.nn.functional.conv2d.
    """
    n, c, h, wd = _check_nchw("conv2d", x)
    ws = shape_of(w)
    if not isinstance(groups, (int, numpy.integer)) or groups < 1:
        raise ValueError(f"conv2d: groups must be a positive int, got {groups!r}")
    if len(ws) != 4 or ws[0] % groups or c != ws[1] * groups:
        raise ValueError(f"conv2d: w has shape {ws} but x has shape {(n, c, h, wd)} and "
                         f"groups={groups}; expected w of shape (F, C/groups, KH, KW) "
                         f"with F and C={c} divisible by groups")
    f, cg, kh, kw = ws
    if b is not None and shape_of(b) != (f,):
        raise ValueError(f"conv2d: b has shape {shape_of(b)}; expected ({f},) for w of shape {ws}")
    s = pair("conv2d", "stride", stride, 1)
    p = pair("conv2d", "pad", pad, 0)
    d = pair("conv2d", "dilation", dilation, 1)
    out_hw = _out_size("conv2d", (h, wd), (kh, kw), s, p, d)
    dx_, dw_ = dtype_of(x), dtype_of(w)
    if dx_ == dw_ and dx_.kind == "f" and isinstance(x, Array) and isinstance(w, Array):
        if x._node is not None and w._node is not None:    # both traced: one backward op
            out = _conv_xw_op((x, w), s, p, d, groups)
        else:
            out = _conv_op(x, w, s, p, d, groups)
        if b is not None:
            out = out + mnp.reshape(b, (1, f, 1, 1))
        return out
    xp = _padded(x, p)
    if groups > 1:
        xp = mnp.reshape(xp, (n, groups, cg) + shape_of(xp)[2:])
        wg = mnp.reshape(w, (groups, f // groups, cg, kh, kw))
    out = None
    for i in range(kh):
        for j in range(kw):
            if groups == 1:
                # one GEMM: (F, C) x (C, N*OH*OW) -> (F, N, OH, OW)
                t = mnp.tensordot(w[:, :, i, j], _window(xp, i * d[0], j * d[1], s, out_hw),
                                  axes=([1], [1]))
            else:
                v = _window(xp, i * d[0], j * d[1], s, out_hw)
                # (G, F/G, C/G) @ (N, G, C/G, OH*OW) -> (N, G, F/G, OH*OW)
                t = mnp.matmul(wg[:, :, :, i, j],
                               mnp.reshape(v, (n, groups, cg, out_hw[0] * out_hw[1])))
            out = t if out is None else out + t
    if groups == 1:
        out = mnp.transpose(out, (1, 0, 2, 3))
    else:
        out = mnp.reshape(out, (n, f) + out_hw)
    if b is not None:
        out = out + mnp.reshape(b, (1, f, 1, 1))
    return out


# ------------------------------------------------ conv2d as three custom ops
def raw_of(a, like=None):
    """The backend array of Array ``a`` (after its pending writes) and its namespace.

    With ``like`` (a backend array) the data comes on ``like``'s device: a
    cached, counted copy where ``a`` lives elsewhere.  See also minpy.Array.copyto.
    """
    wait(a)
    d = a._data if like is None else data_on(a, context_of(like))
    return d, backend_of(d).xp


def on_input_device(body):
    """Custom-op ``body`` (computing on raw buffers) run with the device of its first
    Array argument current: the kernels it calls allocate on the current device, and
    a device array is only usable with its own device current."""
    @functools.wraps(body)
    def run(*args, **kwargs):
        first = next((a for a in tree.leaves(args) if type(a) is Array), None)
        if first is None:
            return body(*args, **kwargs)
        with device_scope(first._data):
            return body(*args, **kwargs)
    return run


def _forward(x, w, stride, pad, dilation, groups):
    """conv2d without bias through the raw kernels (x, w: Arrays of one float dtype)."""
    xd, xp = raw_of(x)
    return new(ck.conv2d_forward(xp, xd, raw_of(w, xd)[0], stride, pad, dilation, groups))


@customop
@on_input_device
def _conv_op(x, w, stride, pad, dilation, groups):
    """conv2d without bias, differentiated to any order by the ops below."""
    return _forward(x, w, stride, pad, dilation, groups)


@customop
@on_input_device
def _conv_dx_op(g, w, x_shape, stride, pad, dilation, groups):
    """The data gradient of conv2d: linear in ``g`` and in ``w``."""
    gd, xp = raw_of(g)
    wd = raw_of(w, gd)[0]
    xfake = xp.empty(x_shape, dtype=wd.dtype)     # only its shape is read
    return new(ck.conv2d_backward(xp, gd, xfake, wd, stride, pad, dilation, groups,
                                  need_dw=False)[0])


@customop
@on_input_device
def _conv_dw_op(g, x, w_shape, stride, pad, dilation, groups):
    """The weight gradient of conv2d: linear in ``g`` and in ``x``."""
    gd, xp = raw_of(g)
    xd = raw_of(x, gd)[0]
    wfake = xp.empty(w_shape, dtype=xd.dtype)     # only its shape is read
    return new(ck.conv2d_backward(xp, gd, xd, wfake, stride, pad, dilation, groups,
                                  need_dx=False)[1])


@customop
@on_input_device
def _conv_xw_op(xw, stride, pad, dilation, groups):
    """``_conv_op`` taking ``(x, w)`` as one argument, so the tape asks for both
    gradients in one call (one ``_conv_bwd_op``: the output gradient laid out once)."""
    return _forward(xw[0], xw[1], stride, pad, dilation, groups)


@customop
@on_input_device
def _conv_bwd_op(g, x, w, stride, pad, dilation, groups):
    """``(dx, dw)`` of conv2d in one kernel call: ``_conv_dx_op`` and ``_conv_dw_op`` together."""
    gd, xp = raw_of(g)
    dx, dw = ck.conv2d_backward(xp, gd, raw_of(x, gd)[0], raw_of(w, gd)[0], stride, pad,
                                dilation, groups)
    return new(dx), new(dw)


# <h, Dx(g, w)> = <g, F(h, w)> = <w, Dw(g, h)>: each op's VJPs are the other two
_conv_op.def_grad(lambda ans, x, w, s, p, d, gr: lambda g: _conv_dx_op(
    g, w, shape_of(x), s, p, d, gr), argnum=0)
_conv_op.def_grad(lambda ans, x, w, s, p, d, gr: lambda g: _conv_dw_op(
    g, x, shape_of(w), s, p, d, gr), argnum=1)
_conv_dx_op.def_grad(lambda ans, g, w, xs, s, p, d, gr: lambda h: _conv_op(
    h, w, s, p, d, gr), argnum=0)
_conv_dx_op.def_grad(lambda ans, g, w, xs, s, p, d, gr: lambda h: _conv_dw_op(
    g, h, shape_of(w), s, p, d, gr), argnum=1)
_conv_dw_op.def_grad(lambda ans, g, x, ws, s, p, d, gr: lambda k: _conv_op(
    x, k, s, p, d, gr), argnum=0)
_conv_dw_op.def_grad(lambda ans, g, x, ws, s, p, d, gr: lambda k: _conv_dx_op(
    g, k, shape_of(x), s, p, d, gr), argnum=1)


_conv_xw_op.def_grad(lambda ans, xw, s, p, d, gr: lambda g: _conv_bwd_op(
    g, xw[0], xw[1], s, p, d, gr), argnum=0)
# (dx, dw) = (Dx(g, w), Dw(g, x)) against cotangents (hx, hw)
_conv_bwd_op.def_grad(lambda ans, g, x, w, s, p, d, gr: lambda h: _conv_op(
    h[0], w, s, p, d, gr) + _conv_op(x, h[1], s, p, d, gr), argnum=0)
_conv_bwd_op.def_grad(lambda ans, g, x, w, s, p, d, gr: lambda h: _conv_dx_op(
    g, h[1], shape_of(x), s, p, d, gr), argnum=1)
_conv_bwd_op.def_grad(lambda ans, g, x, w, s, p, d, gr: lambda h: _conv_dw_op(
    g, h[0], shape_of(w), s, p, d, gr), argnum=2)


@customop
@on_input_device
def _pool_op(x, kernel, stride, pad, kind):
    """max/avg pooling through the raw kernels (x: a float Array)."""
    xd, xp = raw_of(x)
    return new(ck.pool2d_forward(xp, xd, kernel, stride, pad, kind))


@customop
@on_input_device
def _pool_bwd_op(g, x, kernel, stride, pad, kind):
    """The gradient of pooling: linear in ``g``; for max, routed by ``x``'s maxima."""
    gd, xp = raw_of(g)
    return new(ck.pool2d_backward(xp, gd, raw_of(x, gd)[0], kernel, stride, pad, kind))


@customop
@on_input_device
def _pool_gather_op(h, x, kernel, stride, pad):
    """The transpose of max pooling's routing: ``h`` read at each window's maximum."""
    hd, xp = raw_of(h)
    return new(ck.pool2d_gather(xp, hd, raw_of(x, hd)[0], kernel, stride, pad))


def _zero_grad(ans, *args):
    """The VJP with respect to the routing argument ``x`` of a piecewise-linear op."""
    return lambda g: mnp.zeros(shape_of(args[1]), dtype_of(args[1]))


def _pool_transpose(h, x, k, s, p, kind):
    """<_pool_bwd_op(g, x), h> == <g, _pool_transpose(h, x)>."""
    return _pool_gather_op(h, x, k, s, p) if kind == "max" else _pool_op(h, k, s, p, kind)


_pool_op.def_grad(lambda ans, x, k, s, p, kind: lambda g: _pool_bwd_op(g, x, k, s, p, kind))
_pool_bwd_op.def_grad(lambda ans, g, x, k, s, p, kind: lambda h: _pool_transpose(
    h, x, k, s, p, kind), argnum=0)
_pool_bwd_op.def_grad(_zero_grad, argnum=1)
_pool_gather_op.def_grad(lambda ans, h, x, k, s, p: lambda g: _pool_bwd_op(
    g, x, k, s, p, "max"), argnum=0)
_pool_gather_op.def_grad(_zero_grad, argnum=1)


def _pool(layer, x, pool_size, stride, pad, kind):
    n, c, h, wd = _check_nchw(layer, x)
    k = pair(layer, "pool_size", pool_size, 1)
    s = k if stride is None else pair(layer, "stride", stride, 1)
    p = pair(layer, "pad", pad, 0)
    if p[0] >= k[0] or p[1] >= k[1]:
        raise ValueError(f"{layer}: pad {p} must be smaller than pool_size {k} "
                         "(a window would see padding only)")
    out_hw = _out_size(layer, (h, wd), k, s, p)
    if isinstance(x, Array) and dtype_of(x).kind == "f":
        return _pool_op(x, k, s, p, kind)
    reduce = mnp.max if kind == "max" else mnp.mean
    if s == k and not any(p) and h % k[0] == 0 and wd % k[1] == 0:
        tiles = mnp.reshape(x, (n, c, h // k[0], k[0], wd // k[1], k[1]))
        return reduce(tiles, axis=(3, 5))
    fill = 0
    if kind == "max":
        dt = dtype_of(x)
        fill = -numpy.inf if dt.kind in "fc" else numpy.iinfo(dt).min
    xp = _padded(x, p, fill)
    views = [_window(xp, i, j, s, out_hw) for i in range(k[0]) for j in range(k[1])]
    return reduce(mnp.stack(views, axis=0), axis=0)


def max_pool(x, pool_size=2, stride=None, pad=0):
    """2-d max pooling over NCHW input.

    Args:
        x: input of shape (N, C, H, W).
        pool_size: window (KH, KW), an int or a pair.
        stride: an int or a pair; default ``pool_size`` (non-overlapping windows).
        pad: implicit -inf padding on each side, an int or a pair, smaller than
            ``pool_size``.
    Returns:
        An Array of shape (N, C, OH, OW), ``OH = (H + 2*ph - KH) // sh + 1``
        (windows that do not fit are dropped, as MXNet's 'valid' convention).
        On float Arrays the gradient of a window goes to its first maximum in
        row-major order (as MXNet and PyTorch); otherwise it is split among ties.

    See also avg_pool, minpy.symbol.Pooling, torch.nn.functional.max_pool2d.
    """
    return _pool("max_pool", x, pool_size, stride, pad, "max")


def avg_pool(x, pool_size=2, stride=None, pad=0):
    """2-d average pooling over NCHW input.

    Args and shapes as :func:`max_pool`; padding is zeros and counts in the
    average (every window divides by KH * KW, as MXNet and PyTorch's default
    ``count_include_pad=True``).

    See also max_pool, minpy.symbol.Pooling, torch.nn.functional.avg_pool2d.
    """
    return _pool("avg_pool", x, pool_size, stride, pad, "avg")
