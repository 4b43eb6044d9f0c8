"""Gradients of the norms of ``numpy.linalg``: ``norm``, ``vector_norm``,
``matrix_norm`` (every ``ord``, ``axis``, ``keepdims``) and ``cond``.

Max/min-type norms (``inf``, matrix ``1``/``inf``) split the gradient evenly
between tied entries; the spectral and nuclear norms go through the SVD
(distinct singular values assumed). Conventions: see
:mod:`minpy.numpy.vjp_products`.
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numpy

from ..core.autograd import stop_gradient
import minpy.numpy as mnp
from .rule_helpers import defvjp_by_name, is_complex, unbroadcast_to_operand
from .vjp_linalg import inv_vjp, onehot, svd_grad

__all__ = []

_LA = mnp.linalg
_mm = mnp.matmul


# ---------------------------------------------------------------- norms
def _sgn(x):
    if is_complex(x):
        ax = mnp.abs(x)
        return x / mnp.where(stop_gradient(ax) == 0, 1, ax)
    return mnp.sign(x)


def _ext_mask(z, axes, lowest):
    """Untraced weights 1/count on the entries of ``z`` equal to its max (min) over ``axes``."""
    z = stop_gradient(z)
    ext = (mnp.min if lowest else mnp.max)(z, axis=axes, keepdims=True)
    mask = mnp.asarray(z == ext, dtype=z.real.dtype if is_complex(z) else z.dtype)
    return mask / mnp.sum(mask, axis=axes, keepdims=True)


def _vector_norm_grad(x, n, g, ord, axes):
    """Gradient of the vector ``ord``-norm over ``axes`` (g, n with those axes kept)."""
    if ord is None or ord == 2:
        return g * x / n
    if ord == 0:
        return mnp.zeros_like(x)
    if ord == 1:
        return g * _sgn(x)
    if ord in (numpy.inf, -numpy.inf):
        return g * _sgn(x) * _ext_mask(mnp.abs(x), axes, ord < 0)
    ax = mnp.abs(x)
    return g * _sgn(x) * ax ** (ord - 1) / n ** (ord - 1)


def _matrix_norm_grad(x, n, g, ord, r, c):
    """Gradient of the matrix ``ord``-norm over axes (r, c) (g, n with those axes kept)."""
    if ord in (None, "fro", "f"):
        return g * x / n
    if ord in ("nuc", 2, -2):
        xm = mnp.moveaxis(x, (r, c), (-2, -1))
        u, s, vh = _LA.svd(xm, full_matrices=False)
        if ord == "nuc":
            core = _mm(u, vh)
        else:
            k = s.shape[-1]
            core = _mm(u * onehot(k, 0 if ord == 2 else k - 1, s.dtype), vh)
        return g * mnp.moveaxis(core, (-2, -1), (r, c))
    if ord in (1, -1):
        sums = mnp.sum(mnp.abs(x), axis=r, keepdims=True)
        return g * _sgn(x) * _ext_mask(sums, c, ord < 0)
    if ord in (numpy.inf, -numpy.inf):
        sums = mnp.sum(mnp.abs(x), axis=c, keepdims=True)
        return g * _sgn(x) * _ext_mask(sums, r, ord < 0)
    raise ValueError("Invalid norm order for matrices.")


def _norm_grad(x, ans, g, ord, axis, keepdims):
    nd = numpy.ndim(x)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            axes, ord = tuple(range(nd)), None
        else:
            axes = tuple(range(nd))
    else:
        axes = (axis,) if numpy.ndim(axis) == 0 else tuple(axis)
    axes = tuple(int(a) % nd for a in axes)
    kshape = tuple(1 if i in axes else d for i, d in enumerate(numpy.shape(x)))
    if not keepdims:
        g, ans = mnp.reshape(g, kshape), mnp.reshape(ans, kshape)
    if len(axes) == 2 and ord is not None:
        gx = _matrix_norm_grad(x, ans, g, ord, axes[0], axes[1])
    else:
        gx = _vector_norm_grad(x, ans, g, ord, axes)
    return unbroadcast_to_operand(gx, x)


def _norm_vjp(ans, x, ord=None, axis=None, keepdims=False):
    return lambda g: _norm_grad(x, ans, g, ord, axis, keepdims)


def _vector_norm_vjp(ans, x, /, *, axis=None, keepdims=False, ord=2):
    nd = numpy.ndim(x)
    axes = tuple(range(nd)) if axis is None else axis
    def vjp(g):
        ax = (axes,) if numpy.ndim(axes) == 0 else tuple(axes)
        ax = tuple(int(a) % nd for a in ax)
        kshape = tuple(1 if i in ax else d for i, d in enumerate(numpy.shape(x)))
        gg, nn = (g, ans) if keepdims else (mnp.reshape(g, kshape), mnp.reshape(ans, kshape))
        return unbroadcast_to_operand(_vector_norm_grad(x, nn, gg, ord, ax), x)
    return vjp


def _matrix_norm_vjp(ans, x, /, *, keepdims=False, ord="fro"):
    return lambda g: _norm_grad(x, ans, g, ord, (-2, -1), keepdims)


def _cond_vjp(ans, x, p=None):
    def vjp(g):
        if p in (None, 2, -2):
            u, s, vh = _LA.svd(x, full_matrices=False)
            k = s.shape[-1]
            hi, lo = s[..., :1], s[..., k - 1:]
            e0, e1 = onehot(k, 0, s.dtype), onehot(k, k - 1, s.dtype)
            if p == -2:           # s_min / s_max
                gs = (e1 / hi - e0 * lo / (hi * hi)) * mnp.expand_dims(g, -1)
            else:                 # s_max / s_min
                gs = (e0 / lo - e1 * hi / (lo * lo)) * mnp.expand_dims(g, -1)
            return unbroadcast_to_operand(svd_grad(x, u, s, vh, None, gs, None), x)
        xi = _LA.inv(x)
        n1 = _LA.norm(x, p, axis=(-2, -1))
        n2 = _LA.norm(xi, p, axis=(-2, -1))
        g1 = _norm_grad(x, n1, g * n2, p, (-2, -1), False)
        g2 = _norm_grad(xi, n2, g * n1, p, (-2, -1), False)
        return unbroadcast_to_operand(g1 + inv_vjp(xi, x)(g2), x)
    return vjp


defvjp_by_name(_LA.norm, _norm_vjp)
defvjp_by_name(_LA.vector_norm, _vector_norm_vjp)
defvjp_by_name(_LA.matrix_norm, _matrix_norm_vjp)
defvjp_by_name(_LA.cond, _cond_vjp)

table_ends(__name__)
