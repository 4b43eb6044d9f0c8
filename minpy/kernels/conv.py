"""Raw backend kernels for convolution, pooling and BatchNorm(+ReLU), NCHW.

Written against an ``xp`` namespace (numpy or cupy) on backend arrays, shared
by the symbol operators (``minpy.symbol.ops.nn``) and the tape layers
(``minpy.nn.layers.conv``).  Nothing here records on the tape.

Convolution, stride 1 ("shifted flat GEMM"): the input is copied once into a
channels-first *grid* ``(C, lo + N*Hp*Wp + hi)``: every image's plane sits in
an ``Hp x Wp`` block whose extra rows and columns are zeros, so one zero
column serves as the right pad of a row and the left pad of the next.  Output
position ``q`` on the grid reads input ``q + shift(i, j)`` for kernel offset
``(i, j)``, so each offset is a contiguous column slice of the grid, a
BLAS-compatible operand with no copy.  Two schedules, picked by which
temporary is smaller:

- ``C >= K``: one GEMM ``(KH*KW*K, C) @ grid`` and a sum of ``KH*KW`` shifted
  row blocks of the product;
- ``C < K``: the ``KH*KW`` shifted slices stacked (an im2col, but built from
  contiguous copies) and one GEMM ``(K, KH*KW*C) @ cols``.

Outputs at the grid's pad positions are garbage and dropped; for the gradient
the output gradient is zero there, so it contributes nothing.  The data
gradient is the same structure with the weight transposed and the shifts
negated; the weight gradient is one GEMM per offset against the shifted
slices.  A 1x1 convolution is one GEMM; a strided 1x1 subsamples first; other
strided convolutions use an im2col of the strided windows (a quarter of the
stride-1 work at stride 2).

With numba importable (``minpy.kernels.conv_numba``; ``MINPY_CONV_NUMBA=0``
turns it off) the im2col and its scatter-back, the shifted-GEMM sum, the
pooling gradient and BatchNorm(+ReLU) (float64 accumulation) run as parallel
numba kernels; otherwise the NumPy formulation here.
"""
import os

import numpy

from .conv_numba import POOL_KINDS, numba_kernels

__all__ = ["conv_out_hw", "conv2d_forward", "conv2d_backward", "pool_out_hw",
           "pool2d_forward", "pool2d_backward", "pool2d_gather", "bn_train_stats", "bn_apply",
           "bn_backward", "numba_kernels"]


# ------------------------------------------------------------------ geometry
def conv_out_hw(hw, kernel, stride, pad, dilate):
    """Output (OH, OW) of a 2-d convolution; either may be < 1 for too-small input.

    See also torch.nn.Conv2d (the same formula).
    """
    return tuple((hw[a] + 2 * pad[a] - dilate[a] * (kernel[a] - 1) - 1) // stride[a] + 1
                 for a in range(2))


class _Grid:
    """The flat padded layout of a stride-1 convolution (see module doc)."""

    def __init__(self, n, hw, kernel, pad, dilate):
        h, w = hw
        oh, ow = conv_out_hw(hw, kernel, (1, 1), pad, dilate)
        self.n, self.h, self.w, self.oh, self.ow = n, h, w, oh, ow
        # a zero gap of `pad` rows/columns between planes serves both sides
        self.wp = max(w + pad[1], ow)
        self.hp = max(h + pad[0], oh)
        self.size = n * self.hp * self.wp
        self.shifts = [(i * dilate[0] - pad[0]) * self.wp + (j * dilate[1] - pad[1])
                       for i in range(kernel[0]) for j in range(kernel[1])]
        self.lo = max(0, -min(self.shifts))
        self.hi = max(0, max(self.shifts))

    def plane(self, xp, buf, start):
        """The (rows, N, Hp, Wp) view of ``buf[:, start:start + size]``."""
        return xp.reshape(buf[:, start:start + self.size], (buf.shape[0], self.n, self.hp, self.wp))


def _to_grid(xp, a, grid, before, after, hw):
    """``a`` (N, R, h, w) as a zero-filled (R, before + size + after) grid buffer."""
    buf = xp.zeros((a.shape[1], before + grid.size + after), dtype=a.dtype)
    grid.plane(xp, buf, before)[:, :, :hw[0], :hw[1]] = xp.transpose(a, (1, 0, 2, 3))
    return buf


def _from_grid(xp, acc, grid, hw, out):
    """Write the (R, size) grid ``acc``'s valid (h, w) block into ``out`` (N, R, h, w)."""
    v = xp.reshape(acc, (acc.shape[0], grid.n, grid.hp, grid.wp))[:, :, :hw[0], :hw[1]]
    out[...] = xp.transpose(v, (1, 0, 2, 3))


def _shift_sum(xp, prod, rows, starts, length):
    """sum_o prod[o*rows:(o+1)*rows, starts[o]:starts[o] + length] (a new array)."""
    acc = prod[0:rows, starts[0]:starts[0] + length].copy()
    for o in range(1, len(starts)):
        acc += prod[o * rows:(o + 1) * rows, starts[o]:starts[o] + length]
    return acc


def _shift_sum_into(xp, prod, rows, starts, grid, out):
    """The numba form of ``_shift_sum`` + ``_from_grid`` writing ``out`` directly;
    False when the numba kernels are not in use."""
    nk = _numba(xp)
    if nk is None:
        return False
    nk["shift_sum"](prod, rows, numpy.asarray(starts, numpy.int64), (grid.hp, grid.wp), out)
    return True


def _stack_shifted(xp, buf, starts, length):
    """The (len(starts) * R, length) stack of ``buf[:, s:s + length]`` (an im2col)."""
    r = buf.shape[0]
    cols = xp.empty((len(starts) * r, length), dtype=buf.dtype)
    for o, s in enumerate(starts):
        cols[o * r:(o + 1) * r] = buf[:, s:s + length]
    return cols


# ----------------------------------------------------------- stride-1 kernels
def _fwd_s1(xp, x, w, pad, dilate, out):
    n, c = x.shape[:2]
    k, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    grid = _Grid(n, x.shape[2:], (kh, kw), pad, dilate)
    xb = _to_grid(xp, x, grid, grid.lo, grid.hi, x.shape[2:])
    starts = [grid.lo + s for s in grid.shifts]
    if len(starts) == 1:
        acc = xp.reshape(w, (k, c)) @ xb[:, starts[0]:starts[0] + grid.size]
    elif c >= k:
        wall = xp.reshape(xp.transpose(w, (2, 3, 0, 1)), (kh * kw * k, c))
        prod = wall @ xb
        if _shift_sum_into(xp, prod, k, starts, grid, out):
            return
        acc = _shift_sum(xp, prod, k, starts, grid.size)
    else:
        wall = xp.reshape(xp.transpose(w, (0, 2, 3, 1)), (k, kh * kw * c))
        acc = wall @ _stack_shifted(xp, xb, starts, grid.size)
    _from_grid(xp, acc, grid, (grid.oh, grid.ow), out)


def _bwd_s1(xp, g, x, w, pad, dilate, dx, dw):
    n, c = x.shape[:2]
    k, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    grid = _Grid(n, x.shape[2:], (kh, kw), pad, dilate)
    # the output gradient on the same grid, zero at the garbage positions; the data
    # gradient reads it at q - shift, hence the guards swap sides
    gb = _to_grid(xp, g, grid, grid.hi, grid.lo, (grid.oh, grid.ow))
    gv = gb[:, grid.hi:grid.hi + grid.size]
    if dw is not None:
        xb = _to_grid(xp, x, grid, grid.lo, grid.hi, x.shape[2:])
        dwo = xp.empty((kh * kw, k, c), dtype=dw.dtype)
        for o, s in enumerate(grid.shifts):
            xp.matmul(gv, xb[:, grid.lo + s:grid.lo + s + grid.size].T, out=dwo[o])
        dw[...] = xp.transpose(xp.reshape(dwo, (kh, kw, k, c)), (2, 3, 0, 1))
    if dx is None:
        return
    starts = [grid.hi - s for s in grid.shifts]
    if len(starts) == 1:
        acc = xp.reshape(w, (k, c)).T @ gb[:, starts[0]:starts[0] + grid.size]
    elif k >= c:
        wall = xp.reshape(xp.transpose(w, (2, 3, 1, 0)), (kh * kw * c, k))
        prod = wall @ gb
        if _shift_sum_into(xp, prod, c, starts, grid, dx):
            return
        acc = _shift_sum(xp, prod, c, starts, grid.size)
    else:
        wall = xp.reshape(xp.transpose(w, (1, 2, 3, 0)), (c, kh * kw * k))
        acc = wall @ _stack_shifted(xp, gb, starts, grid.size)
    _from_grid(xp, acc, grid, x.shape[2:], dx)


# ------------------------------------------------------ strided: im2col path
def _windows(a, b, dilate, stride, oh, ow):
    return (slice(a * dilate[0], a * dilate[0] + stride[0] * (oh - 1) + 1, stride[0]),
            slice(b * dilate[1], b * dilate[1] + stride[1] * (ow - 1) + 1, stride[1]))


def _pad4(xp, x, pad):
    if not any(pad):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))


def _numba(xp):
    """The numba kernels when ``xp`` is NumPy and they are available, else None."""
    return numba_kernels() if xp is numpy else None


def _geom(*pairs):
    """(h, w) pairs flattened into the int tuple the numba kernels take."""
    return tuple(int(v) for pair in pairs for v in pair)


def _im2col(xp, x, kernel, stride, pad, dilate, oh, ow):
    """Window columns (KH*KW*C, N*OH*OW) of unpadded ``x``: one numba pass, or one
    strided copy per kernel offset of the padded input."""
    n, c = x.shape[:2]
    cols = xp.empty((kernel[0], kernel[1], c, n, oh, ow), dtype=x.dtype)
    nk = _numba(xp)
    if nk is not None:
        nk["im2col"](x, _geom(kernel, stride, pad, dilate), cols)
        return cols.reshape(-1, n * oh * ow)
    xpad = _pad4(xp, x, pad)
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            sa, sb = _windows(a, b, dilate, stride, oh, ow)
            cols[a, b] = xp.transpose(xpad[:, :, sa, sb], (1, 0, 2, 3))
    return xp.reshape(cols, (-1, n * oh * ow))


def _col2im(xp, dcols, kernel, stride, pad, dilate, dx):
    """Scatter-add window columns (KH, KW, C, N, OH, OW) back into ``dx`` (N, C, H, W)."""
    nk = _numba(xp)
    if nk is not None:
        nk["col2im"](dcols, _geom(kernel, stride, pad, dilate), dx)
        return
    n, c, h, w = dx.shape
    oh, ow = dcols.shape[4:]
    dxpad = xp.zeros((n, c, h + 2 * pad[0], w + 2 * pad[1]), dtype=dx.dtype)
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            sa, sb = _windows(a, b, dilate, stride, oh, ow)
            dxpad[:, :, sa, sb] += xp.transpose(dcols[a, b], (1, 0, 2, 3))
    dx[...] = dxpad[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w]


def _fwd_strided(xp, x, w, stride, pad, dilate, out):
    k, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    n, (oh, ow) = x.shape[0], out.shape[2:]
    cols = _im2col(xp, x, (kh, kw), stride, pad, dilate, oh, ow)
    r = xp.reshape(xp.transpose(w, (0, 2, 3, 1)), (k, -1)) @ cols
    out[...] = xp.transpose(xp.reshape(r, (k, n, oh, ow)), (1, 0, 2, 3))


def _bwd_strided(xp, g, x, w, stride, pad, dilate, dx, dw):
    k, c, kh, kw = w.shape
    n, (oh, ow) = x.shape[0], g.shape[2:]
    g2 = xp.reshape(xp.transpose(g, (1, 0, 2, 3)), (k, -1))
    if dw is not None:
        cols = _im2col(xp, x, (kh, kw), stride, pad, dilate, oh, ow)
        dw[...] = xp.transpose(xp.reshape(g2 @ cols.T, (k, kh, kw, c)), (0, 3, 1, 2))
    if dx is None:
        return
    wt = xp.reshape(xp.transpose(w, (2, 3, 1, 0)), (-1, k))
    _col2im(xp, xp.reshape(wt @ g2, (kh, kw, c, n, oh, ow)), (kh, kw), stride, pad, dilate, dx)


def _subsample(x, stride, oh, ow):
    return x[:, :, ::stride[0], ::stride[1]][:, :, :oh, :ow]


# ------------------------------------------------------------- convolution
def _grid_pays(xshape, kernel, pad, dilate):
    """The grid's extra positions cost less than an im2col of strided windows:
    measured break-even near 1.5x as many grid positions as outputs (LeNet's
    5x5 on 12x12 has 2.25x and runs faster as im2col)."""
    g = _Grid(xshape[0], xshape[2:], kernel, pad, dilate)
    return g.size <= 1.5 * xshape[0] * g.oh * g.ow


def _check_conv(where, x, w, stride, pad, dilate, groups):
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ValueError(f"{where}: expected 4-d x (N, C, H, W) and w (K, C/groups, KH, KW), "
                         f"got x {tuple(x.shape)} and w {tuple(w.shape)}")
    if groups < 1 or w.shape[0] % groups or x.shape[1] != w.shape[1] * groups:
        raise ValueError(f"{where}: w {tuple(w.shape)} does not match x {tuple(x.shape)} "
                         f"with groups={groups}; expected w of shape (K, C/groups, KH, KW) "
                         "with K and C divisible by groups")
    oh, ow = conv_out_hw(x.shape[2:], w.shape[2:], stride, pad, dilate)
    if oh < 1 or ow < 1:
        raise ValueError(f"{where}: input {tuple(x.shape)} too small for kernel "
                         f"{tuple(w.shape[2:])} (stride {stride}, pad {pad}, dilate {dilate})")
    return oh, ow


def conv2d_forward(xp, x, w, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1, out=None):
    """2-d cross-correlation of NCHW ``x`` with ``w`` (K, C/groups, KH, KW), no bias.

    Args:
        xp: the backend namespace (numpy or cupy) of ``x`` and ``w``.
        x, w: backend arrays of one float dtype.
        stride, pad, dilate: (h, w) pairs; ``groups``: channel groups.
        out: optional (N, K, OH, OW) array to write into.
    Returns:
        ``out`` (a new array when None was given).
    Raises:
        ValueError naming the shapes when they do not fit.

    See also torch.nn.functional.conv2d, minpy.symbol.Convolution.
    """
    oh, ow = _check_conv("conv2d_forward", x, w, stride, pad, dilate, groups)
    if out is None:
        out = xp.empty((x.shape[0], w.shape[0], oh, ow), dtype=x.dtype)
    cg, kg = x.shape[1] // groups, w.shape[0] // groups
    kh, kw = w.shape[2:]
    for i in range(groups):
        xi, wi = x[:, i * cg:(i + 1) * cg], w[i * kg:(i + 1) * kg]
        oi = out[:, i * kg:(i + 1) * kg]
        if tuple(stride) == (1, 1) and _grid_pays(x.shape, (kh, kw), pad, dilate):
            _fwd_s1(xp, xi, wi, pad, dilate, oi)
        elif (kh, kw) == (1, 1) and not any(pad):
            _fwd_s1(xp, _subsample(xi, stride, oh, ow), wi, (0, 0), (1, 1), oi)
        else:
            _fwd_strided(xp, xi, wi, stride, pad, dilate, oi)
    return out


def conv2d_backward(xp, g, x, w, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1,
                    dx=None, dw=None, need_dx=True, need_dw=True):
    """Gradients of :func:`conv2d_forward` with respect to ``x`` and ``w``.

    Args:
        xp: the backend namespace; ``g``: the output gradient (N, K, OH, OW);
        x, w, stride, pad, dilate, groups: as given to the forward.
        dx, dw: optional arrays to write into.
        need_dx, need_dw: False skips that gradient (returned as None).
    Returns:
        ``(dx, dw)``.

    See also conv2d_forward, torch.nn.grad.conv2d_input / conv2d_weight.
    """
    oh, ow = _check_conv("conv2d_backward", x, w, stride, pad, dilate, groups)
    if tuple(g.shape) != (x.shape[0], w.shape[0], oh, ow):
        raise ValueError(f"conv2d_backward: out_grad has shape {tuple(g.shape)}; expected "
                         f"{(x.shape[0], w.shape[0], oh, ow)} for x {tuple(x.shape)}, "
                         f"w {tuple(w.shape)}")
    if need_dx and dx is None:
        dx = xp.empty(x.shape, dtype=x.dtype)
    if need_dw and dw is None:
        dw = xp.empty(w.shape, dtype=w.dtype)
    dx, dw = (dx if need_dx else None), (dw if need_dw else None)
    cg, kg = x.shape[1] // groups, w.shape[0] // groups
    kh, kw = w.shape[2:]
    for i in range(groups):
        xi, wi, gi = x[:, i * cg:(i + 1) * cg], w[i * kg:(i + 1) * kg], g[:, i * kg:(i + 1) * kg]
        dxi = None if dx is None else dx[:, i * cg:(i + 1) * cg]
        dwi = None if dw is None else dw[i * kg:(i + 1) * kg]
        if tuple(stride) == (1, 1) and _grid_pays(x.shape, (kh, kw), pad, dilate):
            _bwd_s1(xp, gi, xi, wi, pad, dilate, dxi, dwi)
        elif (kh, kw) == (1, 1) and not any(pad):
            sub = None if dxi is None else xp.empty((x.shape[0], cg, oh, ow), dtype=x.dtype)
            _bwd_s1(xp, gi, _subsample(xi, stride, oh, ow), wi, (0, 0), (1, 1), sub, dwi)
            if dxi is not None:
                dxi[...] = 0
                _subsample(dxi, stride, oh, ow)[...] = sub
        else:
            _bwd_strided(xp, gi, xi, wi, stride, pad, dilate, dxi, dwi)
    return dx, dw


# ------------------------------------------------------------------ pooling
def pool_out_hw(hw, kernel, stride, pad, full=False):
    """Output (OH, OW) of pooling; ``full`` rounds partial windows up (MXNet 'full').

    Raises:
        ValueError: the padded input is smaller than the kernel.
    """
    out = []
    for a in range(2):
        span = hw[a] + 2 * pad[a] - kernel[a]
        if span < 0:
            raise ValueError(f"pooling: spatial size {tuple(hw)} smaller than kernel "
                             f"{tuple(kernel)} with pad {tuple(pad)}")
        out.append(1 + (-(-span // stride[a]) if full else span // stride[a]))
    return tuple(out)


def _pool_pad(xp, x, kernel, stride, pad, out_hw, fill):
    extra = [max(0, (o - 1) * stride[a] + kernel[a] - (x.shape[2 + a] + 2 * pad[a]))
             for a, o in enumerate(out_hw)]
    if not any(pad) and not any(extra):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (pad[0], pad[0] + extra[0]), (pad[1], pad[1] + extra[1])),
                  constant_values=fill)


def _tiles(xp, x, kernel, stride, pad, out_hw):
    """(N, C, OH, KH, OW, KW) reshape view when the windows tile ``x`` exactly."""
    n, c, h, w = x.shape
    if (tuple(stride) == tuple(kernel) and not any(pad) and out_hw[0] * kernel[0] == h
            and out_hw[1] * kernel[1] == w):
        return xp.reshape(x, (n, c, out_hw[0], kernel[0], out_hw[1], kernel[1]))
    return None


def _fill(xp, dtype, kind, typed=False):
    """The padding value of ``kind`` pooling (a NumPy scalar of ``dtype`` if ``typed``)."""
    v = 0 if kind != "max" else (-xp.inf if numpy.dtype(dtype).kind in "fc"
                                 else numpy.iinfo(dtype).min)
    return numpy.asarray(v, dtype)[()] if typed else v


def _is_max(v, best):
    """``v == best``, NaN matching NaN (a NaN window's max is its first NaN)."""
    hit = v == best
    if v.dtype.kind in "fc":
        hit |= (v != v) & (best != best)
    return hit


def pool2d_forward(xp, x, kernel, stride, pad, kind="max", out_hw=None, out=None):
    """Max / avg / sum pooling of NCHW ``x`` (avg divides by KH*KW, padding counts).

    Args:
        xp: backend namespace; x: (N, C, H, W) backend array.
        kernel, stride, pad: (h, w) pairs; kind: 'max', 'avg' or 'sum'.
        out_hw: the output size (default: the 'valid' convention).
        out: optional (N, C, OH, OW) array to write into.
    Returns:
        ``out``. No Python loop runs per output position: one vectorised pass
        per kernel offset over strided views.

    See also torch.nn.functional.max_pool2d, minpy.symbol.Pooling.
    """
    if out_hw is None:
        out_hw = pool_out_hw(x.shape[2:], kernel, stride, pad)
    if out is None:
        out = xp.empty(x.shape[:2] + tuple(out_hw), dtype=x.dtype)
    # elementwise passes beat a reduction over the small window axes of a strided view
    xpad = _pool_pad(xp, x, kernel, stride, pad, out_hw, _fill(xp, x.dtype, kind))
    combine = xp.maximum if kind == "max" else xp.add
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            v = xpad[(slice(None), slice(None)) + _windows(a, b, (1, 1), stride, *out_hw)]
            if a == 0 and b == 0:
                out[...] = v
            else:
                combine(out, v, out=out)
    if kind == "avg":
        out *= 1.0 / (kernel[0] * kernel[1])
    return out


def pool2d_backward(xp, g, x, kernel, stride, pad, kind="max", out_hw=None, dx=None):
    """Gradient of :func:`pool2d_forward`; max routes each window's gradient to its
    first maximum in row-major order (ties: the first one only).

    Args:
        g: output gradient (N, C, OH, OW); the rest as the forward.
        dx: optional array to write into.
    Returns:
        ``dx`` of x's shape.
    """
    if out_hw is None:
        out_hw = pool_out_hw(x.shape[2:], kernel, stride, pad)
    if dx is None:
        dx = xp.empty(x.shape, dtype=g.dtype)
    nk = _numba(xp)
    if nk is not None:
        nk["pool_bwd"](g, x, _geom(kernel, stride, pad), POOL_KINDS[kind],
                       _fill(xp, x.dtype, kind, typed=True), dx)
        return dx
    t = _tiles(xp, x, kernel, stride, pad, out_hw)
    if t is not None and kind != "max":
        scale = 1.0 / (kernel[0] * kernel[1]) if kind == "avg" else 1.0
        xp.reshape(dx, t.shape)[...] = (g * scale)[:, :, :, None, :, None]
        return dx
    xpad = _pool_pad(xp, x, kernel, stride, pad, out_hw, _fill(xp, x.dtype, kind))
    dxpad = xp.zeros(xpad.shape, dtype=dx.dtype)
    win = [(slice(None), slice(None)) + _windows(a, b, (1, 1), stride, *out_hw)
           for a in range(kernel[0]) for b in range(kernel[1])]
    if kind == "max":
        best = pool2d_forward(xp, x, kernel, stride, pad, "max", out_hw)
        free = xp.ones(g.shape, dtype=bool)
        for s in win:
            hit = _is_max(xpad[s], best)
            hit &= free
            free &= xp.logical_not(hit)
            dxpad[s] += g * hit
    else:
        c = g * (1.0 / (kernel[0] * kernel[1])) if kind == "avg" else g
        for s in win:
            dxpad[s] += c
    dx[...] = dxpad[:, :, pad[0]:pad[0] + x.shape[2], pad[1]:pad[1] + x.shape[3]]
    return dx


def pool2d_gather(xp, h, x, kernel, stride, pad, out_hw=None, out=None):
    """The transpose of max pooling's gradient routing: for each window of ``x``,
    ``h`` (x's shape) read at the window's first maximum.

    ``pool2d_backward(g, x)`` scatters ``g`` to those positions, so
    ``<pool2d_gather(h, x), g> == <h, pool2d_backward(g, x)>``; the tape uses it
    for the second-order gradient of max pooling.

    Returns:
        ``out`` (N, C, OH, OW).
    """
    if out_hw is None:
        out_hw = pool_out_hw(x.shape[2:], kernel, stride, pad)
    if out is None:
        out = xp.empty(x.shape[:2] + tuple(out_hw), dtype=h.dtype)
    nk = _numba(xp)
    if nk is not None:
        nk["pool_gather"](h, x, _geom(kernel, stride, pad), _fill(xp, x.dtype, "max", typed=True),
                          out)
        return out
    fill = _fill(xp, x.dtype, "max")
    xpad = _pool_pad(xp, x, kernel, stride, pad, out_hw, fill)
    hpad = _pool_pad(xp, h, kernel, stride, pad, out_hw, 0)
    best = pool2d_forward(xp, x, kernel, stride, pad, "max", out_hw)
    free = xp.ones(out.shape, dtype=bool)
    out[...] = 0
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            s = (slice(None), slice(None)) + _windows(a, b, (1, 1), stride, *out_hw)
            hit = _is_max(xpad[s], best)
            hit &= free
            free &= xp.logical_not(hit)
            out += hpad[s] * hit
    return out


# ---------------------------------------------------------------- BatchNorm
def _acc(xp, x):
    return xp.float64 if x.dtype.itemsize < 8 else x.dtype


def _as3(a):
    """NCHW (or NC) as (N, C, S) without copying a contiguous array."""
    return a.reshape(a.shape[0], a.shape[1], -1)


def bn_train_stats(xp, x):
    """Per-channel batch mean and biased variance of NCHW / NC ``x`` (axis 1),
    accumulated in float64 below float64.

    Returns:
        ``(mean, var)``, each (C,) in the accumulator dtype.
    See also numpy.mean, numpy.var.
    """
    nk = _numba(xp)
    if nk is not None and x.flags.c_contiguous:
        mean = numpy.empty(x.shape[1], numpy.float64)
        var = numpy.empty(x.shape[1], numpy.float64)
        nk["bn_stats"](_as3(x), mean, var)
        return mean, var
    red = (0,) + tuple(range(2, x.ndim))
    acc = _acc(xp, x)
    mean = xp.mean(x, axis=red, dtype=acc)
    bs = (1, -1) + (1,) * (x.ndim - 2)
    var = xp.mean(xp.square(x - xp.reshape(mean, bs).astype(x.dtype)), axis=red, dtype=acc)
    return mean, var


def bn_apply(xp, x, scale, shift, out, relu=False):
    """``out = x * scale + shift`` per channel (axis 1), then ``max(out, 0)`` if ``relu``.

    Args:
        scale, shift: (C,) arrays (any float dtype). ``out`` may be ``x``.
    Returns:
        ``out``.
    """
    nk = _numba(xp)
    if nk is not None and x.flags.c_contiguous and out.flags.c_contiguous:
        nk["bn_apply"](_as3(x), numpy.asarray(scale, x.dtype), numpy.asarray(shift, x.dtype),
                       _as3(out), relu)
        return out
    bs = (1, -1) + (1,) * (x.ndim - 2)
    xp.multiply(x, xp.reshape(scale, bs).astype(x.dtype), out=out)
    out += xp.reshape(shift, bs).astype(x.dtype)
    if relu:
        xp.maximum(out, 0, out=out)
    return out


def bn_backward(xp, g, x, mean, invstd, gamma_scale, dx, y=None, global_stats=False):
    """Gradients of ``y = [relu]((x - mean) * invstd * gamma_scale + beta)``.

    Args:
        g: output gradient like ``x``; ``y``: the forward output when a ReLU
            followed (its mask ``y > 0`` gates ``g``), else None.
        mean, invstd, gamma_scale: (C,) per-channel statistics and the scale
            (``gamma``, or ones under fix_gamma).
        dx: array to write the data gradient into.
        global_stats: the statistics were constants (inference statistics).
    Returns:
        ``(dgamma_raw, dbeta)``: (C,) ``sum(g' * xhat)`` and ``sum(g')`` in the
        accumulator dtype, ``g'`` the gated gradient.
    """
    c = x.shape[1]
    m = x.size // c
    scale = invstd * gamma_scale
    nk = _numba(xp)
    contig = all(a.flags.c_contiguous for a in (g, x, dx) + ((y,) if y is not None else ()))
    if nk is not None and contig:
        yy = _as3(y) if y is not None else _as3(x)
        sg = numpy.empty(c, numpy.float64)
        sgx = numpy.empty(c, numpy.float64)
        mean64, inv64 = numpy.asarray(mean, numpy.float64), numpy.asarray(invstd, numpy.float64)
        nk["bn_bwd_sums"](_as3(g), _as3(x), yy, y is not None, mean64, inv64, sg, sgx)
        sc = numpy.asarray(scale, numpy.float64)
        # dx = scale * g' + b * (x - mean) + k0, per channel
        if global_stats:
            b, k0 = numpy.zeros(c), numpy.zeros(c)
        else:
            b, k0 = -sc * sgx * inv64 / m, -sc * sg / m
        dt = x.dtype
        nk["bn_bwd_dx"](_as3(g), _as3(x), yy, y is not None, sc.astype(dt), mean64.astype(dt),
                        b.astype(dt), k0.astype(dt), _as3(dx))
        return sgx, sg
    bs = (1, -1) + (1,) * (x.ndim - 2)
    red = (0,) + tuple(range(2, x.ndim))
    acc = _acc(xp, x)
    if y is not None:
        g = g * (y > 0)
    xhat = (x - xp.reshape(mean, bs).astype(x.dtype)) * xp.reshape(invstd, bs).astype(x.dtype)
    sg = xp.sum(g, axis=red, dtype=acc)
    sgx = xp.sum(g * xhat, axis=red, dtype=acc)
    if global_stats:
        xp.multiply(g, xp.reshape(scale, bs).astype(x.dtype), out=dx)
    else:
        t = g * m - xp.reshape(sg, bs).astype(x.dtype) - xhat * xp.reshape(sgx, bs).astype(x.dtype)
        xp.multiply(t, xp.reshape((scale / m), bs).astype(x.dtype), out=dx)
    return sgx, sg
