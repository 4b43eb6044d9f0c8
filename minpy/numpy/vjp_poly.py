"""Gradients of NumPy's (old-API) polynomial functions: poly, polyadd, polysub,
polymul, polyder, polyint, polydiv, polyfit, roots, vander.

Complex convention (that of :func:`minpy.testing.check_grads`): the gradient
``g_in`` of a real loss ``L`` satisfies ``dL = Re(sum(conj(g_in) * dx))``.

How each rule is made:

- ``vander`` and ``roots`` have direct rules. ``roots`` uses the implicit
  function theorem: a simple root ``r`` of ``p`` moves by
  ``dr = -dp(r) / p'(r)``. At a repeated root ``p'(r) = 0`` and the roots are
  not differentiable (the result is inf/nan there). Leading zeros of ``p``
  (which NumPy strips) get a zero gradient; trailing zeros (roots at 0) are
  differentiated like any coefficient (a simple root at 0 is fine).
- The others are differentiated through a re-implementation in minpy
  functions (``_via``): repeated convolution for ``poly`` of roots, the
  Faddeev-LeVerrier recursion for ``poly`` of a matrix (the characteristic
  polynomial, polynomial in the entries: no eigenvalues, so repeated
  eigenvalues are fine), long division for ``polydiv``, the scaled weighted
  ``lstsq`` for ``polyfit`` (gradients w.r.t. ``x``, ``y`` and ``w``, and of
  every floating output of ``full=True`` and ``cov=True``/``'unscaled'``).
- Where NumPy trims (the leading zeros of ``polymul``'s operands, the
  near-zero leading entries of ``polydiv``'s remainder) the re-implementation
  computes untrimmed and drops the same output entries (which so carry no
  gradient). A leading zero of a ``polymul`` operand thus gets the one-sided
  derivative of the kept coefficients (perturbing it changes NumPy's output
  length, so no two-sided derivative exists there).
- ``polyfit``: every option is supported (``w``, ``rcond``, ``full=True``:
  gradients of the coefficients, residuals and singular values; ``cov=True``
  and ``cov='unscaled'``). The gradient w.r.t. ``x`` of a rank-deficient fit
  (rank < min(len(x), deg + 1)) is refused (TypeError naming polyfit): the
  rank jumps as ``x`` moves. ``y`` and ``w`` keep their gradient there (that
  of lstsq's minimum-norm solution).
- ``numpy.poly1d`` arguments: the call returns a poly1d, which the tape cannot
  trace; differentiate the coefficient arrays (``p.coeffs``) instead.

Every rule is written with minpy's own functions, so it is differentiable
again (grad of grad).
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import warnings

import numpy

from ..core.autograd import defvjp
from ..core.array import Array
import minpy.numpy as mnp
from .rule_helpers import conj_if_complex, is_complex, vjp_via_reference

__all__ = []


# ------------------------------------------------------------------ helpers
def _host(x):
    return x.asnumpy() if type(x) is Array else numpy.asarray(x)


def _arr(a):
    """``a`` as an array, keeping gradients: Arrays as they are, a list/tuple
    holding traced Arrays stacked, anything else through ``mnp.asarray``."""
    if type(a) is Array:
        return a
    if isinstance(a, (list, tuple)) and any(type(e) is Array for e in a):
        return mnp.stack([mnp.asarray(e) for e in a])
    return mnp.asarray(a)


def _1d(a):
    """``numpy.atleast_1d`` for one argument, keeping gradients."""
    a = _arr(a)
    return mnp.reshape(a, (1,)) if a.ndim == 0 else a


def _via(ref, key):
    """VJP maker w.r.t. ``key`` by differentiating ``ref(ans, *args, **kwargs)``, the
    minpy re-implementation (``ans``, NumPy's result, gives only output shapes). A
    list argument of traced scalars gets a list of gradients."""
    return vjp_via_reference(ref, key, pass_ans=True)


def _seq_aware(rule):
    """A direct rule made to accept a list/tuple of traced scalars for its first argument."""
    def maker(ans, x, *args, **kw):
        if isinstance(x, (list, tuple)):
            vjp = rule(ans, _arr(x), *args, **kw)

            def seq_vjp(g):
                gx = vjp(g)
                return [None] * len(x) if gx is None else [gx[i] for i in range(len(x))]
            return seq_vjp
        return rule(ans, x, *args, **kw)
    return maker


# ------------------------------------------------------------------ poly
def _charpoly(a):
    """Coefficients of det(t I - a), highest power first (Faddeev-LeVerrier)."""
    n = a.shape[0]
    eye = mnp.eye(n)
    m, coeffs = eye, []
    for k in range(1, n + 1):
        am = mnp.matmul(a, m)
        c = -mnp.trace(am) / k
        coeffs.append(c)
        m = am + c * eye
    return mnp.concatenate((mnp.ones(1), mnp.stack(coeffs)))


def _poly_ref(ans, seq_of_zeros):
    """numpy.poly in minpy functions."""
    z = _1d(seq_of_zeros)
    if z.ndim == 2:
        return _charpoly(z)
    c, zero = mnp.ones(1), mnp.zeros(1)
    for i in range(z.shape[0]):       # convolve with [1, -z_i]
        c = mnp.concatenate((c, zero)) - z[i] * mnp.concatenate((zero, c))
    return c


# ------------------------------------------------------------------ sums and products
def _pad_front(a, n):
    k = n - a.shape[0]
    return mnp.concatenate((mnp.zeros(k, a.dtype), a)) if k > 0 else a


def _polyadd_ref(ans, a1, a2):
    a1, a2 = _1d(a1), _1d(a2)
    n = max(a1.shape[0], a2.shape[0])
    return _pad_front(a1, n) + _pad_front(a2, n)


def _polysub_ref(ans, a1, a2):
    a1, a2 = _1d(a1), _1d(a2)
    n = max(a1.shape[0], a2.shape[0])
    return _pad_front(a1, n) - _pad_front(a2, n)


def _polymul_ref(ans, a1, a2):
    """convolve(a1, a2) of the untrimmed operands, less the entries NumPy's
    trimming of leading zeros drops."""
    a1, a2 = _1d(a1), _1d(a2)
    a1 = a1 if a1.shape[0] else mnp.zeros(1, a1.dtype)
    a2 = a2 if a2.shape[0] else mnp.zeros(1, a2.dtype)
    c = mnp.convolve(a1, a2)
    return c[c.shape[0] - mnp.shape(ans)[0]:]


# ------------------------------------------------------------------ calculus
def _polyder_ref(ans, p, m=1):
    p = _arr(p)
    for _ in range(int(m)):
        n = p.shape[0] - 1
        p = p[:-1] * mnp.arange(n, 0, -1)
    return p


def _polyint_ref(ans, p, m=1, k=None):
    m = int(m)
    k = mnp.zeros(m) if k is None else _1d(k)
    if k.shape[0] == 1 and m > 1:
        k = k[0] * mnp.ones(m)
    p = _arr(p)
    for i in range(m):
        p = mnp.concatenate((p / mnp.arange(p.shape[0], 0, -1), mnp.reshape(k[i], (1,))))
    return p


# ------------------------------------------------------------------ division
def _polydiv_ref(ans, u, v):
    """Long division in minpy functions; the remainder keeps NumPy's length."""
    u, v = _1d(u) + 0.0, _1d(v) + 0.0
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    r, qs = u, []
    for k in range(m - n + 1):
        d = scale * r[k]
        qs.append(d)
        r = r - d * mnp.concatenate((mnp.zeros(k), v, mnp.zeros(m - n - k)))
    q = mnp.stack(qs) if qs else mnp.zeros(1)
    return q, r[r.shape[0] - mnp.shape(ans[1])[0]:]


# ------------------------------------------------------------------ fitting
def _polyfit_ref(ans, x, y, deg, rcond=None, full=False, w=None, cov=False):
    """numpy.polyfit in minpy functions (the same scaled, weighted lstsq)."""
    order = int(deg) + 1
    x, y = _arr(x) + 0.0, _arr(y) + 0.0
    if rcond is None:
        rcond = x.shape[0] * numpy.finfo(x.dtype).eps
    lhs, rhs = mnp.vander(x, order), y
    if w is not None:
        w = _arr(w) + 0.0
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if rhs.ndim == 2 else w)
    scale = mnp.sqrt(mnp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = mnp.linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    vbase = mnp.linalg.inv(mnp.dot(lhs.T, lhs)) / mnp.outer(scale, scale)
    fac = 1 if cov == "unscaled" else resids / (x.shape[0] - order)
    return c, (vbase * fac if y.ndim == 1 else vbase[:, :, None] * fac)


def _polyfit_args(x, y, deg, rcond=None, full=False, w=None, cov=False):
    return x, y, deg, rcond, w


def _polyfit_x(key):
    """Gradient w.r.t. ``x``, refused for a rank-deficient fit (NumPy's own rank)."""
    via = _via(_polyfit_ref, key)

    def maker(ans, *args, **kw):
        x, y, deg, rcond, w = _polyfit_args(*args, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numpy.exceptions.RankWarning)
            rank = numpy.polyfit(_host(x), _host(y), deg, rcond, True,
                                 None if w is None else _host(w))[2]
        full_rank = min(numpy.shape(x)[0], int(deg) + 1)
        if rank < full_rank:
            raise TypeError(f"minpy.grad: polyfit of a rank-deficient fit (rank {rank} < "
                            f"{full_rank}) has no gradient with respect to x")
        return via(ans, *args, **kw)
    return maker


# ------------------------------------------------------------------ direct rules
def _vander_vjp(ans, x, N=None, increasing=False):
    """V[:, j] = x**p_j: the gradient is sum_j g[:, j] p_j x**(p_j - 1)."""
    n = mnp.shape(ans)[1]

    def vjp(g):
        if n <= 1:
            return None
        w = conj_if_complex(mnp.vander(x, n - 1, increasing))
        if increasing:
            return mnp.sum(g[:, 1:] * mnp.arange(1, n) * w, axis=1)
        return mnp.sum(g[:, :-1] * mnp.arange(n - 1, 0, -1) * w, axis=1)
    return vjp


def _roots_vjp(ans, p):
    """dr_i = -(sum_k dp_k r_i**(d-k)) / p'(r_i) for p stripped of its leading zeros."""
    shape = mnp.shape(p)
    p1 = _1d(p)
    nz = numpy.nonzero(_host(p1))[0]
    lead = int(nz[0]) if len(nz) else p1.shape[0]
    q = p1[lead:]
    deg = q.shape[0] - 1

    def vjp(g):
        if deg <= 0:
            return None
        v = mnp.vander(ans, deg + 1)                                 # r_i ** (deg - k)
        dp = mnp.matmul(v[:, 1:], q[:-1] * mnp.arange(deg, 0, -1))   # p'(r_i)
        gq = -mnp.matmul(mnp.swapaxes(conj_if_complex(v), 0, 1), g / conj_if_complex(dp))
        if not is_complex(p1):
            gq = mnp.real(gq) if is_complex(gq) else gq
        if lead:
            gq = mnp.concatenate((mnp.zeros(lead, gq.dtype), gq))
        return mnp.reshape(gq, shape)
    return vjp


# ------------------------------------------------------------------ registration
def _rules(fn, names, make):
    """Register ``make(key)`` for each differentiable argument, by position and by name."""
    defvjp(fn, *[None if n is None else make(i) for i, n in enumerate(names)],
           **{n: make(n) for n in names if n is not None})


_rules(mnp.poly, ["seq_of_zeros"], lambda k: _via(_poly_ref, k))
_rules(mnp.polyadd, ["a1", "a2"], lambda k: _via(_polyadd_ref, k))
_rules(mnp.polysub, ["a1", "a2"], lambda k: _via(_polysub_ref, k))
_rules(mnp.polymul, ["a1", "a2"], lambda k: _via(_polymul_ref, k))
_rules(mnp.polyder, ["p"], lambda k: _via(_polyder_ref, k))
_rules(mnp.polyint, ["p", None, "k"], lambda k: _via(_polyint_ref, k))
_rules(mnp.polydiv, ["u", "v"], lambda k: _via(_polydiv_ref, k))
_rules(mnp.polyfit, ["x", "y", None, None, None, "w"],
       lambda k: _polyfit_x(k) if k in (0, "x") else _via(_polyfit_ref, k))
_rules(mnp.roots, ["p"], lambda k: _seq_aware(_roots_vjp))
_rules(mnp.vander, ["x"], lambda k: _seq_aware(_vander_vjp))

table_ends(__name__)
