"""Gradients of ``numpy.linalg``: inverses and solves, determinants,
decompositions (cholesky, eigh, svd, qr, eig), powers and chains (norms and
``cond`` are in :mod:`minpy.numpy.vjp_norms`).

Conventions (see :mod:`minpy.numpy.vjp_products`): ``dL = Re(sum(conj(gx) * dx))``.
Functions that read one triangle of their argument (``cholesky``, ``eigh``,
``eigvalsh``, ``svd``/``pinv`` with ``hermitian=True``) get the gradient of
exactly that function: it lives on the triangle that is read (off-diagonal
entries count for both of their symmetric places). Decompositions assume
what makes them differentiable: distinct eigen/singular values, full rank,
non-singular matrices. Not supported (TypeError at backward, or the call):
``svd(full_matrices=True)`` and ``qr(mode='complete')`` of non-square
matrices (the extra columns are not unique), ``qr(mode='raw')``, and losses
that depend on the arbitrary phase of ``eig``'s eigenvectors (phase-invariant
ones, such as of ``abs(v)``, are differentiated).
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numpy

from ..core.autograd import def_nondiff, stop_gradient
import minpy.numpy as mnp
from .rule_helpers import (conj_if_complex, defvjp_by_name, float_operand, hermitian,
                           is_complex, unbroadcast_to_operand)

__all__ = []

_LA = mnp.linalg
_mm = mnp.matmul


def _batch(g, extra=2):
    """``g`` with ``extra`` trailing axes of size 1 (batched scalar -> batched matrix)."""
    return mnp.reshape(g, tuple(g.shape) + (1,) * extra)


def _rdt(dt):
    return numpy.empty(0, dt).real.dtype


def _eye(n, dt):
    return numpy.eye(n, dtype=_rdt(dt))


def onehot(k, i, dt):
    e = numpy.zeros(k, dtype=_rdt(dt))
    e[i] = 1
    return e


def _tri_read(G, n, upper, dt):
    """Gradient of a function reading one triangle of a Hermitian matrix from the
    gradient ``G`` of its symmetric extension: off-diagonal ``G_ij + conj(G_ji)``
    on the triangle read, ``Re G_ii`` on the diagonal."""
    e = _eye(n, dt)
    strict = numpy.triu(numpy.ones((n, n), e.dtype), 1) if upper else \
        numpy.tril(numpy.ones((n, n), e.dtype), -1)
    diag = mnp.real(G) * e if is_complex(G) else G * e
    return (G + hermitian(G)) * strict + diag


def _solve_h(a, y):
    """``a^{-H} y`` for a matrix (stack) ``y``."""
    return _LA.solve(hermitian(a), y)


# ---------------------------------------------------------------- inverses and solves
def inv_vjp(ans, a):
    return lambda g: -_mm(hermitian(ans), _mm(g, hermitian(ans)))


def _solve_grads(a, b, x, g):
    if numpy.ndim(b) == 1:                       # NumPy 2: b is a vector only when 1-D
        gb = mnp.reshape(_solve_h(a, _batch(g, 1)), g.shape)
        ga = -_mm(_batch(gb, 1), conj_if_complex(mnp.expand_dims(x, -2)))
    else:
        gb = _solve_h(a, g)
        ga = -_mm(gb, hermitian(x))
    return unbroadcast_to_operand(ga, a), unbroadcast_to_operand(gb, b)


def _solve_maker(which):
    return lambda ans, a, b: lambda g: _solve_grads(a, b, ans, g)[which]


def _tensorinv_vjp(ans, a, ind=2):
    shp = numpy.shape(a)
    front = int(numpy.prod(shp[:ind]))
    def vjp(g):
        inv2 = mnp.reshape(ans, (-1, front))
        return mnp.reshape(inv_vjp(inv2, None)(mnp.reshape(g, (-1, front))), shp)
    return vjp


def _tensorsolve_prep(a, b, axes):
    perm = list(range(numpy.ndim(a)))
    if axes is not None:
        for k in axes:
            perm.remove(k % numpy.ndim(a))
            perm.append(k % numpy.ndim(a))
    return perm, int(numpy.prod(numpy.shape(b)))


def _tensorsolve_maker(which):
    def maker(ans, a, b, axes=None):
        perm, nb = _tensorsolve_prep(a, b, axes)
        def vjp(g):
            at = a if perm == sorted(perm) else mnp.transpose(a, perm)
            a2 = mnp.reshape(at, (nb, nb))
            ga2, gb = _solve_grads(a2, mnp.reshape(b, (nb,)), mnp.reshape(ans, (nb,)),
                                   mnp.reshape(g, (nb,)))
            if which == 1:
                return unbroadcast_to_operand(mnp.reshape(gb, numpy.shape(b)), b)
            ga = mnp.reshape(ga2, at.shape)
            if perm != sorted(perm):
                ga = mnp.transpose(ga, numpy.argsort(perm).tolist())
            return unbroadcast_to_operand(ga, a)
        return vjp
    return maker


# ---------------------------------------------------------------- determinants
def _det_vjp(ans, a):
    return lambda g: _batch(g * conj_if_complex(ans)) * hermitian(_LA.inv(a))


def _slogdet_vjp(ans, a):
    sign = ans[0]
    def vjp(g):
        gs, gl = g
        c = gl
        if is_complex(sign):   # sign = det/|det| moves with the phase of det
            c = gl - 1j * mnp.imag(mnp.conj(gs) * sign)
        return _batch(c) * hermitian(_LA.inv(a))
    return vjp


# ---------------------------------------------------------------- cholesky, eigh
def _cholesky_vjp(ans, a, /, *, upper=False):
    n = numpy.shape(a)[-1]
    e = _eye(n, ans.dtype)
    phi = numpy.tril(numpy.ones((n, n), e.dtype), -1) + 0.5 * e
    read = numpy.triu(numpy.ones((n, n), e.dtype), 1) if upper else \
        numpy.tril(numpy.ones((n, n), e.dtype), -1)
    def vjp(g):
        L, gL = (hermitian(ans), hermitian(g)) if upper else (ans, g)
        P = _mm(hermitian(L), gL) * phi
        S = hermitian(_solve_h(L, hermitian(_solve_h(L, P))))          # L^-H P L^-1
        return (S + hermitian(S)) * (read + 0.5 * e)
    return vjp


def _eigh_grad(a, w, v, gw, gv, upper):
    n = numpy.shape(a)[-1]
    inner = mnp.expand_dims(gw, -1) * _eye(n, w.dtype) if gw is not None else 0
    if gv is not None:
        e = _eye(n, w.dtype)
        diff = mnp.expand_dims(w, -2) - mnp.expand_dims(w, -1)       # w_j - w_i
        F = (1 - e) / (diff + e)
        inner = inner + F * _mm(hermitian(v), gv)
    G = _mm(v, _mm(inner, hermitian(v)))
    return unbroadcast_to_operand(_tri_read(G, n, upper, w.dtype), a)


def _eigh_vjp(ans, a, UPLO="L"):
    w, v = ans
    return lambda g: _eigh_grad(a, w, v, g[0], g[1], UPLO.upper() == "U")


def _eigvalsh_vjp(ans, a, UPLO="L"):
    def vjp(g):
        w, v = _LA.eigh(a, UPLO)
        return _eigh_grad(a, w, v, g, None, UPLO.upper() == "U")
    return vjp


# ---------------------------------------------------------------- svd, pinv
def svd_grad(a, u, s, vh, gu, gs, gvh):
    m, n = numpy.shape(a)[-2:]
    k = min(m, n)
    e = _eye(k, s.dtype)
    inner = mnp.expand_dims(gs, -1) * e if gs is not None else 0
    if gu is not None or gvh is not None:
        s2 = s * s
        F = (1 - e) / (mnp.expand_dims(s2, -2) - mnp.expand_dims(s2, -1) + e)  # 1/(s_j^2-s_i^2)
        srow, scol = mnp.expand_dims(s, -2), mnp.expand_dims(s, -1)
        v = hermitian(vh)
    if gu is not None:
        uhgu = _mm(hermitian(u), gu)
        inner = inner + (F * (uhgu - hermitian(uhgu))) * srow
        if is_complex(uhgu):
            inner = inner + 1j * mnp.imag(uhgu * e) / (2 * srow)
    if gvh is not None:
        gv = hermitian(gvh)
        vhgv = _mm(vh, gv)
        inner = inner + scol * (F * (vhgv - hermitian(vhgv)))
        if is_complex(vhgv):
            inner = inner - 1j * mnp.imag(vhgv * e) / (2 * srow)
    ga = _mm(u, _mm(inner, vh))
    if gu is not None and m > k:                  # (I - U U^H) gU S^-1 V^H
        t = gu / srow
        ga = ga + _mm(t - _mm(u, _mm(hermitian(u), t)), vh)
    if gvh is not None and n > k:                 # U S^-1 gV^H (I - V V^H)
        t = hermitian(gv) / scol
        ga = ga + _mm(u, t - _mm(_mm(t, v), vh))
    return ga


def _svd_vjp(ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    m, n = numpy.shape(a)[-2:]
    def vjp(g):
        if not compute_uv:
            u, s, vh = _LA.svd(a, full_matrices=False, hermitian=hermitian)
            ga = svd_grad(a, u, s, vh, None, g, None)
        else:
            if full_matrices and m != n:
                raise TypeError("minpy.grad: svd(full_matrices=True) of a non-square matrix "
                                "has no gradient (the extra singular vectors are not unique); "
                                "use full_matrices=False")
            u, s, vh = ans
            ga = svd_grad(a, u, s, vh, g[0], g[1], g[2])
        if hermitian:
            ga = _tri_read(ga, n, False, s.dtype)
        return unbroadcast_to_operand(ga, a)
    return vjp


def _svdvals_vjp(ans, x, /):
    def vjp(g):
        u, s, vh = _LA.svd(x, full_matrices=False)
        return unbroadcast_to_operand(svd_grad(x, u, s, vh, None, g, None), x)
    return vjp


def _pinv_grad(a, p, g):
    """Gradient of ``P = pinv(A)`` at constant rank:
    ``-P^H g P^H + (I - A P) g^H P P^H + P^H P g^H (I - P A)``."""
    ph, gh = hermitian(p), hermitian(g)
    x = _mm(gh, _mm(p, ph))
    y = _mm(ph, _mm(p, gh))
    return -_mm(ph, _mm(g, ph)) + x - _mm(a, _mm(p, x)) + y - _mm(_mm(y, p), a)


def _pinv_vjp(ans, a, rcond=None, hermitian=False, **kw):
    def vjp(g):
        ga = _pinv_grad(a, ans, g)
        if hermitian:
            ga = _tri_read(ga, numpy.shape(a)[-1], False, ans.dtype)
        return unbroadcast_to_operand(ga, a)
    return vjp


# ---------------------------------------------------------------- qr
def _qr_square(q, r, gq, gr):
    """QR gradient for m >= n (reduced): (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q."""
    n = r.shape[-1]
    e = _eye(n, r.dtype)
    low = numpy.tril(numpy.ones((n, n), e.dtype), -1)
    M = 0
    if gr is not None:
        M = _mm(r, hermitian(gr))
    if gq is not None:
        M = M - _mm(hermitian(gq), q)
    b = gq if gq is not None else 0
    if not isinstance(M, int):
        Ml = M * low
        diag = mnp.real(M) * e if is_complex(M) else M * e
        b = b + _mm(q, Ml + hermitian(Ml) + diag)
    return hermitian(_LA.solve(r, hermitian(b)))


def _qr_vjp(ans, a, mode="reduced"):
    m, n = numpy.shape(a)[-2:]
    def vjp(g):
        if mode == "raw" or (mode == "complete" and m > n):
            raise TypeError(f"minpy.grad: qr(mode={mode!r}) has no gradient here; use "
                            "mode='reduced'")
        if mode == "r":
            q, r = _LA.qr(a)
            gq, gr = None, g
        else:
            (q, r), (gq, gr) = ans, g
        if m >= n:
            return unbroadcast_to_operand(_qr_square(q, r, gq, gr), a)
        x, y = a[..., :m], a[..., m:]
        gx_r, gy_r = (gr[..., :m], gr[..., m:]) if gr is not None else (None, None)
        gy = _mm(q, gy_r) if gy_r is not None else mnp.zeros_like(y)
        gq2 = gq
        if gy_r is not None:
            gq2 = _mm(y, hermitian(gy_r)) if gq is None else gq + _mm(y, hermitian(gy_r))
        gx = _qr_square(q, r[..., :m], gq2, gx_r)
        return unbroadcast_to_operand(mnp.concatenate([gx, gy], axis=-1), a)
    return vjp


# ---------------------------------------------------------------- eig
def _eig_values_grad(a, w, v, gw):
    G = _mm(hermitian(_LA.inv(v)), mnp.expand_dims(gw, -1) * hermitian(v))   # V^-H diag(gw) V^H
    return unbroadcast_to_operand(G, a)


def _check_phase_invariant(v, gv):
    """Refuse a cotangent that depends on the eigenvectors' arbitrary phase: a loss
    invariant under ``v_k -> exp(i t) v_k`` has ``Im(v_k^H gv_k) = 0`` for each k."""
    vh, gh = stop_gradient(v).asnumpy(), stop_gradient(gv).asnumpy()
    im = numpy.abs(numpy.imag(numpy.sum(numpy.conj(vh) * gh, axis=-2)))
    scale = numpy.linalg.norm(gh, axis=-2) + numpy.finfo(_rdt(vh.dtype)).tiny
    if numpy.any(im > 10 * numpy.finfo(_rdt(vh.dtype)).eps ** 0.5 * scale):
        raise TypeError("minpy.grad: the loss depends on the arbitrary phase of linalg.eig's "
                        "eigenvectors (Im(v_k^H dL/dv_k) != 0), so it has no gradient; make "
                        "it phase-invariant (abs(v), v * conj(v) ...), use eigh for Hermitian "
                        "matrices, or use the eigenvalues only")


def _eig_grad(a, w, v, gw, gv):
    """``V^-H M V^H`` with ``M = diag(gw) + conj(F) o (V^H gV - V^H V diag(Re diag(V^H gV)))``,
    ``F_ij = 1 / (w_j - w_i)``: the second term keeps each column at unit norm, as LAPACK
    returns it; the phase term vanishes for a phase-invariant loss (checked)."""
    n = numpy.shape(a)[-1]
    e = _eye(n, w.dtype)
    vh = hermitian(v)
    vg = _mm(vh, gv)
    s = mnp.real(mnp.sum(mnp.conj(v) * gv, axis=-2)) if is_complex(v) or is_complex(gv) \
        else mnp.sum(v * gv, axis=-2)
    F = (1 - e) / (mnp.expand_dims(w, -2) - mnp.expand_dims(w, -1) + e)
    inner = conj_if_complex(F) * (vg - _mm(vh, v) * mnp.expand_dims(s, -2))
    if gw is not None:
        inner = inner + mnp.expand_dims(gw, -1) * e
    return unbroadcast_to_operand(_mm(hermitian(_LA.inv(v)), _mm(inner, vh)), a)


def _eig_vjp(ans, a):
    w, v = ans
    def vjp(g):
        if not bool(mnp.any(stop_gradient(g[1]) != 0)):
            return _eig_values_grad(a, w, v, g[0])
        _check_phase_invariant(v, g[1])
        return _eig_grad(a, w, v, g[0], g[1])
    return vjp


def _eigvals_vjp(ans, a):
    def vjp(g):
        w, v = _LA.eig(a)
        return _eig_values_grad(a, w, v, g)
    return vjp


# ---------------------------------------------------------------- powers and chains
def _power_grad(b, m, g):
    """Gradient of B**m (m >= 1) w.r.t. B: sum_k (B^k)^H g (B^(m-1-k))^H."""
    pw = [None, b]
    for _ in range(2, m):
        pw.append(_mm(pw[-1], b))
    total = None
    for k in range(m):
        t = g if k == 0 else _mm(hermitian(pw[k]), g)
        if m - 1 - k:
            t = _mm(t, hermitian(pw[m - 1 - k]))
        total = t if total is None else total + t
    return total


def _matrix_power_vjp(ans, a, n):
    n = int(n)
    def vjp(g):
        if n == 0:
            return mnp.zeros_like(a)
        if n > 0:
            return _power_grad(a, n, g)
        b = _LA.inv(a)
        return inv_vjp(b, a)(_power_grad(b, -n, g))
    return vjp


def _multi_dot_vjp(ans, arrays, *, out=None):
    def vjp(g):
        shapes = [numpy.shape(x) for x in arrays]
        # integer/bool matrices as floats: products of them (``right``) must not overflow
        mats = [float_operand(x, ans) for x in arrays]
        if len(shapes[0]) == 1:
            mats[0] = mnp.reshape(mats[0], (1, -1))
        if len(shapes[-1]) == 1:
            mats[-1] = mnp.reshape(mats[-1], (-1, 1))
        G = mnp.reshape(g, (mats[0].shape[0], mats[-1].shape[1]))
        lefts = [G]                                   # (A_0..A_{i-1})^H G
        for x in mats[:-1]:
            lefts.append(_mm(hermitian(x), lefts[-1]))
        out_grads, right = [None] * len(mats), None   # right = A_{i+1}..A_{n-1}
        for i in range(len(mats) - 1, -1, -1):
            gi = lefts[i] if right is None else _mm(lefts[i], hermitian(right))
            out_grads[i] = unbroadcast_to_operand(mnp.reshape(gi, shapes[i]), arrays[i])
            right = mats[i] if right is None else _mm(mats[i], right)
        return out_grads
    return vjp


def _lstsq_maker(which):
    def maker(ans, a, b, rcond=None):
        x = ans[0]
        vec = numpy.ndim(b) == 1
        def vjp(g):
            gx, gres, _, gs = g
            p = _LA.pinv(a)
            xc, gxc, bc = (_batch(x, 1), _batch(gx, 1), _batch(b, 1)) if vec else (x, gx, b)
            if which == 1:
                gb = _mm(hermitian(p), gxc)
            else:
                ga = _pinv_grad(a, p, _mm(gxc, hermitian(bc)))
            if gres.size:                      # residuals |b - A x|^2 (full rank, m > n)
                r = bc - _mm(a, xc)
                rg = r * gres
                if which == 1:
                    gb = gb + 2 * rg
                else:
                    ga = ga - 2 * _mm(rg, hermitian(xc))
            if which == 1:
                return unbroadcast_to_operand(mnp.reshape(gb, numpy.shape(b)), b)
            if bool(mnp.any(stop_gradient(gs) != 0)):
                u, s, vh = _LA.svd(a, full_matrices=False)
                ga = ga + svd_grad(a, u, s, vh, None, gs, None)
            return unbroadcast_to_operand(ga, a)
        return vjp
    return maker


defvjp_by_name(_LA.inv, inv_vjp)
defvjp_by_name(_LA.solve, _solve_maker(0), _solve_maker(1))
defvjp_by_name(_LA.tensorinv, _tensorinv_vjp)
defvjp_by_name(_LA.tensorsolve, _tensorsolve_maker(0), _tensorsolve_maker(1))
defvjp_by_name(_LA.det, _det_vjp)
defvjp_by_name(_LA.slogdet, _slogdet_vjp)
defvjp_by_name(_LA.cholesky, _cholesky_vjp)
defvjp_by_name(_LA.eigh, _eigh_vjp)
defvjp_by_name(_LA.eigvalsh, _eigvalsh_vjp)
defvjp_by_name(_LA.svd, _svd_vjp)
defvjp_by_name(_LA.svdvals, _svdvals_vjp)
defvjp_by_name(_LA.pinv, _pinv_vjp)
defvjp_by_name(_LA.qr, _qr_vjp)
defvjp_by_name(_LA.eig, _eig_vjp)
defvjp_by_name(_LA.eigvals, _eigvals_vjp)
defvjp_by_name(_LA.matrix_power, _matrix_power_vjp)
defvjp_by_name(_LA.multi_dot, _multi_dot_vjp)
defvjp_by_name(_LA.lstsq, _lstsq_maker(0), _lstsq_maker(1))
# matrix_rank: an integer (count of singular values above a tolerance); no gradient.
def_nondiff(_LA.matrix_rank)

table_ends(__name__)
