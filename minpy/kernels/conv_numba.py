"""numba kernels for convolution, pooling and BatchNorm on NCHW NumPy arrays.

Compiled on first use (``parallel=True``, disk-cached) when numba is
importable and ``MINPY_CONV_NUMBA`` is not ``0``; :func:`numba_kernels` returns
None otherwise and ``minpy.kernels.conv`` keeps its NumPy formulation.
Every kernel runs one parallel loop over independent rows or planes, so no
two iterations write the same element.

- ``im2col`` / ``col2im``: window columns ``(KH, KW, C, N, OH, OW)`` read from
  and scattered back to the unpadded input (padding is a bounds test, never a
  padded copy);
- ``shift_sum``: the stride-1 convolution's sum of shifted GEMM row blocks,
  written straight into the NCHW output (no accumulator grid, one pass);
- ``pool_bwd`` / ``pool_gather``: the gradient of max, avg and sum pooling
  (max routes each window's gradient to its first maximum in row-major
  order), and for max the transpose of that routing (``h`` read there); the
  forward stays NumPy's elementwise passes over strided views, which measure
  faster;
- ``bn_*``: BatchNorm statistics, affine (+ReLU) and gradient, float64 sums.
"""
import os

import numpy

__all__ = ["numba_kernels", "POOL_KINDS"]

POOL_KINDS = {"max": 0, "avg": 1, "sum": 2}

# Kernel bodies are module-level functions (numba's cache never hits a closure);
# `prange` is rebound to numba.prange before they are compiled.
prange = range
_NUMBA = {}


def _im2col_py(x, geom, cols):
    kh, kw, sh, sw, ph, pw, dh, dw = geom
    n, c, h, w = x.shape
    oh, ow = cols.shape[4], cols.shape[5]
    for r in prange(kh * kw * c):
        a, b, ch = r // (kw * c), (r // c) % kw, r % c
        for i in range(n):
            for p in range(oh):
                y = p * sh + a * dh - ph
                for q in range(ow):
                    xx = q * sw + b * dw - pw
                    if 0 <= y < h and 0 <= xx < w:
                        cols[a, b, ch, i, p, q] = x[i, ch, y, xx]
                    else:
                        cols[a, b, ch, i, p, q] = 0


def _col2im_py(dcols, geom, dx):
    kh, kw, sh, sw, ph, pw, dh, dw = geom
    n, c, h, w = dx.shape
    oh, ow = dcols.shape[4], dcols.shape[5]
    for r in prange(n * c):
        i, ch = r // c, r % c
        for y in range(h):
            for xx in range(w):
                dx[i, ch, y, xx] = 0
        for a in range(kh):
            for b in range(kw):
                for p in range(oh):
                    y = p * sh + a * dh - ph
                    if 0 <= y < h:
                        for q in range(ow):
                            xx = q * sw + b * dw - pw
                            if 0 <= xx < w:
                                dx[i, ch, y, xx] += dcols[a, b, ch, i, p, q]


def _shift_sum_py(prod, rows, starts, plane, out):
    """``out[i, r, y, x] = sum_o prod[o*rows + r, starts[o] + q]`` with ``q`` the
    grid position ``i*Hp*Wp + y*Wp + x``: the shifted-GEMM convolution's sum of
    kernel offsets and its copy out of the padded grid in one pass.  One task per
    row ``r`` streams through that row of every block (1-d slices vectorise)."""
    hp, wp = plane
    n, oh, ow = out.shape[0], out.shape[2], out.shape[3]
    for r in prange(rows):
        for i in range(n):
            for y in range(oh):
                q = i * hp * wp + y * wp
                dst = out[i, r, y]
                src = prod[r, starts[0] + q:starts[0] + q + ow]
                for x in range(ow):
                    dst[x] = src[x]
                for o in range(1, starts.shape[0]):
                    src = prod[o * rows + r, starts[o] + q:starts[o] + q + ow]
                    for x in range(ow):
                        dst[x] += src[x]


def _span(a, s, pad, n_in, n_out):
    """Outputs ``[lo, hi)`` whose window offset ``a`` lands inside the input:
    ``0 <= p*s + a - pad < n_in``."""
    lo = (pad - a + s - 1) // s if pad > a else 0
    top = n_in - 1 - a + pad
    hi = top // s + 1 if top >= 0 else 0
    return lo, min(hi, n_out)


def _plane_max(x, i, ch, geom, fill, best):
    """``best[p, q]``: the max of window (p, q) of plane (i, ch), ``fill`` where a
    window holds no input element; NaN wins, as numpy.maximum.  Offset-major
    loops without branches, so the compiler vectorises them."""
    kh, kw, sh, sw, ph, pw = geom
    h, w = x.shape[2], x.shape[3]
    oh, ow = best.shape
    for p in range(oh):
        for q in range(ow):
            best[p, q] = fill
    for a in range(kh):
        p0, p1 = _span(a, sh, ph, h, oh)
        for b in range(kw):
            q0, q1 = _span(b, sw, pw, w, ow)
            for p in range(p0, p1):
                y = p * sh + a - ph
                for q in range(q0, q1):
                    v = x[i, ch, y, q * sw + b - pw]
                    m = best[p, q]
                    best[p, q] = v if (v > m or v != v) else m


def _is_max(v, m):
    """``v`` is the window max ``m`` (NaN matching NaN)."""
    return (v == m) | ((v != v) & (m != m))


def _pool_bwd_py(g, x, geom, kind, fill, dx):
    kh, kw, sh, sw, ph, pw = geom
    n, c, h, w = x.shape
    oh, ow = g.shape[2], g.shape[3]
    scale = 1.0 / (kh * kw) if kind == 1 else 1.0
    for r in prange(n * c):
        i, ch = r // c, r % c
        for y in range(h):
            for xx in range(w):
                dx[i, ch, y, xx] = 0
        if kind != 0:
            for a in range(kh):
                p0, p1 = _span(a, sh, ph, h, oh)
                for b in range(kw):
                    q0, q1 = _span(b, sw, pw, w, ow)
                    for p in range(p0, p1):
                        y = p * sh + a - ph
                        for q in range(q0, q1):
                            dx[i, ch, y, q * sw + b - pw] += g[i, ch, p, q] * scale
            continue
        best = numpy.empty((oh, ow), x.dtype)
        _plane_max(x, i, ch, geom, fill, best)
        left = numpy.empty((oh, ow), g.dtype)     # what a window has still to route
        for p in range(oh):
            for q in range(ow):
                left[p, q] = g[i, ch, p, q]
        for a in range(kh):
            p0, p1 = _span(a, sh, ph, h, oh)
            for b in range(kw):
                q0, q1 = _span(b, sw, pw, w, ow)
                for p in range(p0, p1):
                    y = p * sh + a - ph
                    for q in range(q0, q1):
                        # the first element equal to the max takes it all
                        xx = q * sw + b - pw
                        hit = _is_max(x[i, ch, y, xx], best[p, q])
                        dx[i, ch, y, xx] += left[p, q] if hit else 0
                        left[p, q] = 0 if hit else left[p, q]


def _pool_gather_py(h_in, x, geom, fill, out):
    kh, kw, sh, sw, ph, pw = geom
    n, c, h, w = x.shape
    oh, ow = out.shape[2], out.shape[3]
    for r in prange(n * c):
        i, ch = r // c, r % c
        best = numpy.empty((oh, ow), x.dtype)
        _plane_max(x, i, ch, geom, fill, best)
        left = numpy.ones((oh, ow), numpy.bool_)  # the window has not read yet
        for p in range(oh):
            for q in range(ow):
                out[i, ch, p, q] = 0
        for a in range(kh):
            p0, p1 = _span(a, sh, ph, h, oh)
            for b in range(kw):
                q0, q1 = _span(b, sw, pw, w, ow)
                for p in range(p0, p1):
                    y = p * sh + a - ph
                    for q in range(q0, q1):
                        xx = q * sw + b - pw
                        hit = left[p, q] & _is_max(x[i, ch, y, xx], best[p, q])
                        out[i, ch, p, q] += h_in[i, ch, y, xx] if hit else 0
                        left[p, q] = left[p, q] & ~hit


def _bn_stats_py(x, mean, var):
    n, c, s = x.shape
    for ch in prange(c):
        t = 0.0
        for i in range(n):
            for j in range(s):
                t += x[i, ch, j]
        mu = t / (n * s)
        q = 0.0
        for i in range(n):
            for j in range(s):
                d = x[i, ch, j] - mu
                q += d * d
        mean[ch] = mu
        var[ch] = q / (n * s)


def _bn_apply_py(x, scale, shift, out, relu):
    n, c, s = x.shape
    for k in prange(n * c):
        i, ch = k // c, k % c
        a = scale[ch]
        b = shift[ch]
        if relu:
            for j in range(s):
                v = x[i, ch, j] * a + b
                out[i, ch, j] = v if v > 0 else v - v
        else:
            for j in range(s):
                out[i, ch, j] = x[i, ch, j] * a + b


def _bn_bwd_sums_py(g, x, y, relu, mean, invstd, sg, sgx):
    n, c, s = x.shape
    for ch in prange(c):
        t = 0.0
        tx = 0.0
        mu = mean[ch]
        for i in range(n):
            for j in range(s):
                gi = g[i, ch, j]
                if relu and not y[i, ch, j] > 0:
                    gi = 0
                t += gi
                tx += gi * (x[i, ch, j] - mu)
        sg[ch] = t
        sgx[ch] = tx * invstd[ch]


def _bn_bwd_dx_py(g, x, y, relu, a, mu, b, k0, dx):
    n, c, s = x.shape
    for k in prange(n * c):
        i, ch = k // c, k % c
        ai, mi, bi, ki = a[ch], mu[ch], b[ch], k0[ch]
        zero = ai - ai
        for j in range(s):
            gi = g[i, ch, j]
            if relu and not y[i, ch, j] > 0:
                gi = zero
            dx[i, ch, j] = ai * gi + bi * (x[i, ch, j] - mi) + ki



def numba_kernels():
    """The compiled numba kernels (a dict of name -> dispatcher), or None when numba
    is not importable or ``MINPY_CONV_NUMBA=0``."""
    if "kernels" in _NUMBA:
        return _NUMBA["kernels"]
    if os.environ.get("MINPY_CONV_NUMBA", "1") == "0":
        _NUMBA["kernels"] = None
        return None
    # numba's OpenMP workers must idle between kernels, not spin on the cores the next
    # BLAS call needs (read by libgomp when numba first loads it)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import numba        # optional dependency (the `jit` extra), imported on first use
    except ImportError:
        _NUMBA["kernels"] = None
        return None
    global prange
    prange = numba.prange
    par = dict(parallel=True, cache=True, nogil=True)
    # reassociation lets LLVM vectorize the float64 sums (their order is free anyway)
    red = dict(par, fastmath={"reassoc", "contract"})
    global _span, _plane_max, _is_max
    inline = dict(cache=True, inline="always")
    _span, _plane_max, _is_max = (numba.njit(**inline)(f) for f in (_span, _plane_max, _is_max))
    _NUMBA["kernels"] = {
        "im2col": numba.njit(**par)(_im2col_py),
        "col2im": numba.njit(**par)(_col2im_py),
        "shift_sum": numba.njit(**par)(_shift_sum_py),
        "pool_bwd": numba.njit(**par)(_pool_bwd_py),
        "pool_gather": numba.njit(**par)(_pool_gather_py),
        "bn_stats": numba.njit(**red)(_bn_stats_py),
        "bn_apply": numba.njit(**par)(_bn_apply_py),
        "bn_bwd_sums": numba.njit(**red)(_bn_bwd_sums_py),
        "bn_bwd_dx": numba.njit(**par)(_bn_bwd_dx_py),
    }
    return _NUMBA["kernels"]
