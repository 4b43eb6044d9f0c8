"""Gradients of ``numpy.fft``.

Every transform is linear, so its VJP is its adjoint (``dL = Re(sum(conj(gx) dx))``):
- the adjoint of a complex transform is the inverse transform with the
  opposite normalisation (``fft(norm=n)^H = ifft(norm=swap(n))``), followed by
  undoing ``n``/``s`` (the adjoint of zero-padding is truncation and back);
- ``rfft`` maps real to half a spectrum, so its adjoint is ``Re(F^H P^T g)``:
  computed as ``irfft`` of ``g`` with the bins that stand for two conjugate
  frequencies halved (all but DC and Nyquist);
- ``irfft`` reads half a spectrum (dropping the imaginary parts of DC and
  Nyquist), so its adjoint is ``rfft(g)`` with those bins doubled;
- ``hfft(a) = irfft(conj(a))`` and ``ihfft(a) = conj(rfft(a))`` (swapped
  norms), and conjugation maps a gradient to its conjugate.
The rules call minpy's own transforms, so they differentiate again.
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numpy

import minpy.numpy as mnp
from .rule_helpers import defvjp_by_name, unbroadcast

__all__ = []

_F = mnp.fft
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _fit(x, axis, m):
    """``x`` cut or zero-padded to length ``m`` along ``axis`` (adjoint of the forward's fit)."""
    n = x.shape[axis]
    if n == m:
        return x
    axis = axis % x.ndim
    if n > m:
        return x[(slice(None),) * axis + (slice(0, m),)]
    pad = list(x.shape)
    pad[axis] = m - n
    return mnp.concatenate([x, mnp.zeros_like(x, shape=tuple(pad))], axis=axis)


def _fit_all(x, a, axes):
    for ax in axes:
        x = _fit(x, ax, numpy.shape(a)[ax])
    return x


def _bin_weights(n, like, axis, double):
    """Per-bin weights of a half spectrum of a length-``n`` signal, shaped to broadcast
    along ``axis`` of ``like``: 2 (or 1/2) on bins standing for a conjugate pair."""
    nb = n // 2 + 1
    w = numpy.full(nb, 2.0 if double else 0.5)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    axis = axis % like.ndim
    w = w.reshape((nb,) + (1,) * (like.ndim - axis - 1))
    return w.astype(numpy.empty(0, like.dtype).real.dtype)


def _rfft_adjoint(g, n, axis, norm):
    """``Re(F^H P^T g)`` for the real-to-half-spectrum transform of length ``n``."""
    return _F.irfft(g * _bin_weights(n, g, axis, False), n=n, axis=axis, norm=_SWAP[norm])


def _irfft_adjoint(g, n, axis, norm):
    """The gradient of ``irfft(h, n)`` w.r.t. the half spectrum ``h``."""
    r = _F.rfft(g, n=n, axis=axis, norm=_SWAP[norm])
    return r * _bin_weights(n, r, axis, True)


def _cook(a, s, axes, invreal=False):
    """NumPy's (s, axes) defaults for the n-D transforms, axes made non-negative."""
    shp = numpy.shape(a)
    if s is None:
        shapeless = True
        s = list(shp) if axes is None else [shp[ax] for ax in axes]
    else:
        shapeless = False
    s = list(s)
    if axes is None:
        axes = list(range(-len(s), 0))
    axes = [int(ax) % len(shp) for ax in axes]
    if invreal and shapeless:
        s[-1] = (shp[axes[-1]] - 1) * 2
    s = [shp[ax] if (v is None or v == -1) else int(v) for v, ax in zip(s, axes)]
    return s, axes


# ---------------------------------------------------------------- 1-D
def _c2c_maker(adjoint):
    def maker(ans, a, n=None, axis=-1, norm=None, out=None):
        def vjp(g):
            return unbroadcast(_fit(adjoint(g, axis=axis, norm=_SWAP[norm]), axis,
                                    numpy.shape(a)[axis]), a)
        return vjp
    return maker


def _rfft_vjp(ans, a, n=None, axis=-1, norm=None, out=None):
    m = numpy.shape(a)[axis]
    n = m if n is None else n
    return lambda g: unbroadcast(_fit(_rfft_adjoint(g, n, axis, norm), axis, m), a)


def _irfft_vjp(ans, a, n=None, axis=-1, norm=None, out=None):
    m = numpy.shape(a)[axis]
    n = 2 * (m - 1) if n is None else n
    return lambda g: unbroadcast(_fit(_irfft_adjoint(g, n, axis, norm), axis, m), a)


def _hfft_vjp(ans, a, n=None, axis=-1, norm=None, out=None):
    # hfft(a) = irfft(conj(a), norm=swap(norm))
    m = numpy.shape(a)[axis]
    n = 2 * (m - 1) if n is None else n
    return lambda g: unbroadcast(
        mnp.conj(_fit(_irfft_adjoint(g, n, axis, _SWAP[norm]), axis, m)), a)


def _ihfft_vjp(ans, a, n=None, axis=-1, norm=None, out=None):
    # ihfft(a) = conj(rfft(a, norm=swap(norm)))
    m = numpy.shape(a)[axis]
    n = m if n is None else n
    return lambda g: unbroadcast(_fit(_rfft_adjoint(mnp.conj(g), n, axis, _SWAP[norm]),
                                      axis, m), a)


# ---------------------------------------------------------------- n-D
def _c2cn_maker(adjoint, default_axes=None):
    def maker(ans, a, s=None, axes=default_axes, norm=None, out=None):
        _, axs = _cook(a, s, axes)
        def vjp(g):
            return unbroadcast(_fit_all(adjoint(g, axes=axs, norm=_SWAP[norm]), a, axs), a)
        return vjp
    return maker


def _rfftn_maker(default_axes=None):
    def maker(ans, a, s=None, axes=default_axes, norm=None, out=None):
        s_, axs = _cook(a, s, axes)
        def vjp(g):
            if len(axs) > 1:
                g = _F.ifftn(g, axes=axs[:-1], norm=_SWAP[norm])
            r = _rfft_adjoint(g, s_[-1], axs[-1], norm)
            return unbroadcast(_fit_all(r, a, axs), a)
        return vjp
    return maker


def _irfftn_maker(default_axes=None):
    def maker(ans, a, s=None, axes=default_axes, norm=None, out=None):
        s_, axs = _cook(a, s, axes, invreal=True)
        def vjp(g):
            r = _irfft_adjoint(g, s_[-1], axs[-1], norm)
            if len(axs) > 1:
                r = _F.fftn(r, axes=axs[:-1], norm=_SWAP[norm])
            return unbroadcast(_fit_all(r, a, axs), a)
        return vjp
    return maker


def _shift_maker(inverse):
    def maker(ans, x, axes=None):
        return lambda g: (_F.fftshift if inverse else _F.ifftshift)(g, axes=axes)
    return maker


defvjp_by_name(_F.fft, _c2c_maker(_F.ifft))
defvjp_by_name(_F.ifft, _c2c_maker(_F.fft))
defvjp_by_name(_F.fftn, _c2cn_maker(_F.ifftn))
defvjp_by_name(_F.ifftn, _c2cn_maker(_F.fftn))
defvjp_by_name(_F.fft2, _c2cn_maker(_F.ifftn, (-2, -1)))
defvjp_by_name(_F.ifft2, _c2cn_maker(_F.fftn, (-2, -1)))
defvjp_by_name(_F.rfft, _rfft_vjp)
defvjp_by_name(_F.irfft, _irfft_vjp)
defvjp_by_name(_F.rfftn, _rfftn_maker())
defvjp_by_name(_F.irfftn, _irfftn_maker())
defvjp_by_name(_F.rfft2, _rfftn_maker((-2, -1)))
defvjp_by_name(_F.irfft2, _irfftn_maker((-2, -1)))
defvjp_by_name(_F.hfft, _hfft_vjp)
defvjp_by_name(_F.ihfft, _ihfft_vjp)
defvjp_by_name(_F.fftshift, _shift_maker(False))
defvjp_by_name(_F.ifftshift, _shift_maker(True))
# (fftfreq/rfftfreq are smooth in their spacing d: their rules are in vjp_nondiff.py)

table_ends(__name__)
