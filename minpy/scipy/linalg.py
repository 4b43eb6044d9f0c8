"""``minpy.scipy.linalg``: SciPy's linear algebra on minpy arrays, differentiable.

- ``solve_triangular``, ``sqrtm``, ``expm``, ``solve_sylvester`` are
  primitives: SciPy on the CPU, ``cupyx.scipy.linalg`` on the GPU where CuPy
  has the function (else the CPU, with minpy's counted fallback). Their rules
  are written with minpy functions and these primitives (grad of grad works):
  ``expm``'s through the Frechet derivative (``expm`` of a 2n x 2n block
  matrix), ``sqrtm``'s through ``solve_sylvester``.
- ``cholesky``, ``cho_factor``, ``cho_solve``, ``solve``, ``inv``, ``det``,
  ``eigh`` are SciPy's signatures over ``minpy.linalg`` and the primitives
  above; their gradients come from those.

SciPy's conventions are kept: ``cholesky`` returns the UPPER factor by
default (``lower=False``) and reads only that triangle; ``solve`` with
``assume_a='sym'/'her'/'pos'`` reads one triangle (``lower``); gradients are
those of the function of what is read. Every function takes a stack of
matrices (``(..., n, n)``). ``overwrite_*`` are accepted and ignored: minpy
never writes into its inputs. ``check_finite=True`` (the default) reads the
data back to check it (skipped while ``minpy.jit`` traces).
"""
import numpy

from ..core.autograd import defvjp
import minpy.numpy as mnp
from ..numpy.rule_helpers import conj_if_complex, hermitian, unbroadcast_to_operand
from ._util import as_operand, backend_namespace, jit_tracing, named, scipy_function

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "solve", "inv", "det",
           "eigh", "sqrtm", "expm", "solve_sylvester", "solve_banded", "LinAlgError"]

LinAlgError = numpy.linalg.LinAlgError
_LA = mnp.linalg
_mm = mnp.matmul


# ------------------------------------------------------------------ checks
def _square(a, what="a"):
    """``a`` as an Array, checked to be a (stack of) square matrices."""
    a = mnp.asarray(as_operand(a))
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what} must be a square matrix (or a stack of them, shape "
                         f"(..., n, n)); got shape {a.shape}")
    return a


def _check_finite(check, *arrays):
    if not check or jit_tracing():
        return
    for x in arrays:
        if not bool(mnp.all(mnp.isfinite(x))):
            raise ValueError(f"array of shape {x.shape} must not contain infs or NaNs "
                             "(or pass check_finite=False)")


def _trans_code(trans):
    code = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}.get(trans) \
        if isinstance(trans, (int, str)) and not isinstance(trans, bool) else None
    if code is None:
        raise ValueError(f"trans must be 0/'N', 1/'T' or 2/'C'; got {trans!r}")
    return code


def _over_batch(xp, f, args, cores):
    """``f`` applied matrix by matrix over the broadcast leading (batch) axes of
    ``args``; ``cores[i]``: the number of trailing core axes of ``args[i]``."""
    batch = numpy.broadcast_shapes(*(tuple(x.shape[:x.ndim - c]) for x, c in zip(args, cores)))
    if not batch:
        return f(*args)
    if 0 in batch:
        raise ValueError(f"empty batch of shape {batch}")
    args = [xp.broadcast_to(x, batch + tuple(x.shape[x.ndim - c:])) for x, c in zip(args, cores)]
    outs = [f(*(x[i] for x in args)) for i in numpy.ndindex(*batch)]
    return xp.reshape(xp.stack(outs), batch + tuple(outs[0].shape))


# ------------------------------------------------------------------ solve_triangular
def _solve_triangular_forward(xp, a, b, trans=0, lower=False, unit_diagonal=False,
                              check_finite=True):
    st = backend_namespace(xp, "linalg").solve_triangular
    kw = {"trans": trans, "lower": lower, "unit_diagonal": unit_diagonal,
          "check_finite": check_finite}
    return _over_batch(xp, lambda m, v: st(m, v, **kw), (a, b), (2, 1 if b.ndim == 1 else 2))


_solve_triangular = scipy_function(
    "linalg", "solve_triangular", "solve_triangular primitive (see solve_triangular).",
    forward=_solve_triangular_forward, needs=("solve_triangular",))


@named("linalg.solve_triangular")
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """Solve ``op(a) x = b`` for a triangular ``a``, reading one triangle only.

    Args:
        a: (..., n, n) array_like; only its ``lower`` (else upper) triangle is read.
        b: (n,) vector or (..., n, k) matrices; batch axes broadcast with ``a``'s.
        trans: 0/'N' (``a x = b``), 1/'T' (``a^T x = b``), 2/'C' (``a^H x = b``).
        lower: use the lower triangle (default: the upper one, as SciPy).
        unit_diagonal: take the diagonal as ones (it is not read).
        overwrite_b: ignored (minpy never writes into its inputs).
        check_finite: raise ValueError on infs/NaNs.
    Returns:
        The Array ``x``, shaped like the broadcast ``b``.

    Gradient: w.r.t. ``b`` ``op(a)^-H g``; w.r.t. ``a`` the outer product
    ``-op(a)^-H g x^H`` (transposed as ``op``) on the triangle read.

    See also scipy.linalg.solve_triangular.
    """
    a = _square(a)
    b = mnp.asarray(as_operand(b))
    n = a.shape[-1]
    if b.ndim == 0 or (b.shape[0] if b.ndim == 1 else b.shape[-2]) != n:
        raise ValueError(f"b must have shape ({n},) or (..., {n}, k) to match a of shape "
                         f"{a.shape}; got {b.shape}")
    return _solve_triangular(a, b, trans=_trans_code(trans), lower=bool(lower),
                             unit_diagonal=bool(unit_diagonal), check_finite=bool(check_finite))


def _tri_mask(n, lower, unit_diagonal):
    k = -1 if unit_diagonal else 0
    ones = numpy.ones((n, n))
    return numpy.tril(ones, k) if lower else numpy.triu(ones, -k)


def _solve_triangular_grads(ans, a, b, g, trans, lower, unit_diagonal, check_finite):
    kw = {"lower": lower, "unit_diagonal": unit_diagonal, "check_finite": check_finite}
    vec = numpy.ndim(b) == 1
    gm = mnp.expand_dims(g, -1) if vec else g
    xm = mnp.expand_dims(ans, -1) if vec else ans
    if trans == 0:       # a^-H g
        gbm = _solve_triangular(a, gm, trans=2, **kw)
    elif trans == 2:     # (a^H)^-H g = a^-1 g
        gbm = _solve_triangular(a, gm, trans=0, **kw)
    else:                # (a^T)^-H g = conj(a^-1 conj(g))
        gbm = conj_if_complex(_solve_triangular(a, conj_if_complex(gm), trans=0, **kw))
    g_op = -_mm(gbm, hermitian(xm))
    if trans == 1:
        g_op = mnp.swapaxes(g_op, -1, -2)
    elif trans == 2:
        g_op = hermitian(g_op)
    mask = _tri_mask(a.shape[-1], lower, unit_diagonal).astype(
        numpy.empty(0, a.dtype).real.dtype if a.dtype.kind in "fc" else numpy.float64)
    gb = mnp.reshape(gbm, gbm.shape[:-1]) if vec else gbm
    return g_op * mask, gb


def _solve_triangular_maker(which):
    def maker(ans, a, b, trans=0, lower=False, unit_diagonal=False, check_finite=True):
        def vjp(g):
            ga, gb = _solve_triangular_grads(ans, a, b, g, trans, lower, unit_diagonal,
                                             check_finite)
            return unbroadcast_to_operand(ga, a) if which == 0 else \
                unbroadcast_to_operand(gb, b)
        return vjp
    return maker


defvjp(_solve_triangular._prim, _solve_triangular_maker(0), _solve_triangular_maker(1),
       a=_solve_triangular_maker(0), b=_solve_triangular_maker(1))


# ------------------------------------------------------------------ cholesky
@named("linalg.cholesky")
def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factor of a Hermitian positive-definite matrix.

    Args:
        a: (..., n, n) array_like; only the triangle of the requested factor is
            read (the upper one by default, as SciPy).
        lower: return the lower factor ``L`` (``a = L L^H``); default the upper
            factor ``U`` (``a = U^H U``).
        overwrite_a: ignored.
        check_finite: raise ValueError on infs/NaNs.
    Returns:
        The triangular factor, an Array shaped like ``a``.
    Raises:
        LinAlgError naming the shape when ``a`` is not positive definite.

    Gradient: through ``minpy.linalg.cholesky``'s rule (on the triangle read).

    See also scipy.linalg.cholesky.
    """
    a = _square(a)
    _check_finite(check_finite, a)
    try:
        return _LA.cholesky(a, upper=not lower)
    except LinAlgError as e:
        raise LinAlgError(f"minpy.scipy.linalg.cholesky: the matrix of shape {a.shape} is "
                          f"not positive definite ({e})") from e


@named("linalg.cho_factor")
def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factorization for :func:`cho_solve`.

    Args:
        a, lower, overwrite_a, check_finite: as :func:`cholesky`.
    Returns:
        ``(c, lower)``: ``c`` the triangular factor (zeros in the other
        triangle, where SciPy leaves whatever was there).

    See also scipy.linalg.cho_factor.
    """
    return cholesky(a, lower=lower, check_finite=check_finite), bool(lower)


@named("linalg.cho_solve")
def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` given the Cholesky factorization of ``a`` from :func:`cho_factor`.

    Args:
        c_and_lower: ``(c, lower)`` as returned by :func:`cho_factor`.
        b: (n,) vector or (..., n, k) matrices.
        overwrite_b: ignored.
        check_finite: raise ValueError on infs/NaNs.
    Returns:
        The Array ``x`` (differentiable in ``c`` and ``b``).

    See also scipy.linalg.cho_solve.
    """
    if not isinstance(c_and_lower, (tuple, list)) or len(c_and_lower) != 2 or \
            not isinstance(c_and_lower[1], (bool, numpy.bool_, int)):
        raise TypeError("c_and_lower must be the pair (c, lower) returned by cho_factor; got "
                        f"a {type(c_and_lower).__name__}")
    c, lower = c_and_lower
    lower = bool(lower)
    if lower:     # a = L L^H
        y = solve_triangular(c, b, lower=True, check_finite=check_finite)
        return solve_triangular(c, y, trans=2, lower=True, check_finite=False)
    y = solve_triangular(c, b, trans=2, lower=False, check_finite=check_finite)   # a = U^H U
    return solve_triangular(c, y, lower=False, check_finite=False)


# ------------------------------------------------------------------ solve, inv, det, eigh
_GENERAL = (None, "gen", "general")
_SYMMETRIC = ("sym", "symmetric")
_HERMITIAN = ("her", "hermitian", "pos", "positive definite")
_TRIANGULAR = ("upper triangular", "lower triangular")
_OTHER = ("diagonal", "tridiagonal", "banded")


def _from_triangle(a, lower, conj):
    """The symmetric (``conj``: Hermitian) matrix whose ``lower`` (else upper) triangle
    is that of ``a``."""
    n = a.shape[-1]
    strict = numpy.tril(numpy.ones((n, n)), -1) if lower else numpy.triu(numpy.ones((n, n)), 1)
    eye = numpy.eye(n)
    rdt = numpy.empty(0, a.dtype).real.dtype if a.dtype.kind in "fc" else numpy.float64
    off = a * strict.astype(rdt)
    other = hermitian(off) if conj else mnp.swapaxes(off, -1, -2)
    diag = a * eye.astype(rdt)
    if conj and a.dtype.kind == "c":
        diag = mnp.real(diag)
    return off + other + diag


def _structured(a, assume_a, lower):
    """``a`` as the matrix SciPy's solver reads under ``assume_a``."""
    if assume_a in _GENERAL or assume_a == "banded":
        return a
    if assume_a in _SYMMETRIC:
        return _from_triangle(a, lower, conj=False)
    if assume_a in _HERMITIAN:
        return _from_triangle(a, lower, conj=True)
    n = a.shape[-1]
    if assume_a == "diagonal":
        mask = numpy.eye(n)
    elif assume_a == "tridiagonal":
        mask = numpy.tri(n, n, 1) * numpy.tri(n, n, 1).T
    elif assume_a in _TRIANGULAR:
        mask = numpy.tril(numpy.ones((n, n))) if assume_a.startswith("lower") else \
            numpy.triu(numpy.ones((n, n)))
    else:
        known = [v for v in _GENERAL + _SYMMETRIC + _HERMITIAN + _TRIANGULAR + _OTHER if v]
        raise ValueError(f"assume_a={assume_a!r} is not one of {known}")
    rdt = numpy.empty(0, a.dtype).real.dtype if a.dtype.kind in "fc" else numpy.float64
    return a * mask.astype(rdt)


@named("linalg.solve")
def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """Solve ``a x = b`` for square ``a``.

    Args:
        a: (..., n, n) array_like.
        b: (n,) vector or (..., n, k) matrices.
        lower: with ``assume_a`` 'sym'/'her'/'pos', read the lower triangle (default upper).
        overwrite_a, overwrite_b: ignored.
        check_finite: raise ValueError on infs/NaNs.
        assume_a: None/'gen'/'general', 'sym', 'her', 'pos', 'diagonal', 'tridiagonal',
            'banded', 'upper triangular', 'lower triangular': the structure SciPy
            assumes, and so the part of ``a`` that is read (here the matrix is
            then solved by a general solver: same values, gradient on what is read).
        transposed: solve ``a^T x = b``.
    Returns:
        The Array ``x`` (differentiable in ``a`` and ``b``).

    See also scipy.linalg.solve.
    """
    a = _square(a)
    b = mnp.asarray(as_operand(b))
    _check_finite(check_finite, a, b)
    m = _structured(a, assume_a, lower)
    if transposed:
        m = mnp.swapaxes(m, -1, -2)
    return _LA.solve(m, b)


@named("linalg.inv")
def inv(a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
    """Inverse of a square matrix (or a stack of them).

    Args:
        a: (..., n, n) array_like.
        overwrite_a: ignored.
        check_finite: raise ValueError on infs/NaNs.
        assume_a, lower: the structure of ``a`` and the triangle read, as :func:`solve`.
    Returns:
        The inverse, an Array shaped like ``a``.

    See also scipy.linalg.inv.
    """
    a = _square(a)
    _check_finite(check_finite, a)
    return _LA.inv(_structured(a, assume_a, lower))


@named("linalg.det")
def det(a, overwrite_a=False, check_finite=True):
    """Determinant of a square matrix (or a stack of them).

    Args:
        a: (..., n, n) array_like.
        overwrite_a: ignored.
        check_finite: raise ValueError on infs/NaNs.
    Returns:
        An Array of shape ``a.shape[:-2]``.

    See also scipy.linalg.det.
    """
    a = _square(a)
    _check_finite(check_finite, a)
    return _LA.det(a)


@named("linalg.eigh")
def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix.

    Args:
        a: (..., n, n) array_like; only its ``lower`` (default) or upper triangle is read.
        b: must be None (the generalized problem is not offered).
        lower: which triangle of ``a`` is read.
        eigvals_only: return the eigenvalues only.
        overwrite_a, overwrite_b, type, driver: ignored.
        check_finite: raise ValueError on infs/NaNs.
        subset_by_index, subset_by_value: must be None.
    Returns:
        ``w`` (``(..., n)``) or ``(w, v)``; differentiable for distinct eigenvalues.

    See also scipy.linalg.eigh.
    """
    if b is not None or subset_by_index is not None or subset_by_value is not None:
        raise NotImplementedError("minpy.scipy.linalg.eigh: the generalized problem (b) and "
                                  "eigenvalue subsets are not supported")
    a = _square(a)
    _check_finite(check_finite, a)
    uplo = "L" if lower else "U"
    if eigvals_only:
        return _LA.eigvalsh(a, UPLO=uplo)
    w, v = _LA.eigh(a, UPLO=uplo)
    return w, v


# ------------------------------------------------------------------ sqrtm, expm, sylvester
def _sqrtm_forward(xp, a):
    f = backend_namespace(xp, "linalg").sqrtm
    return _over_batch(xp, f, (a,), (2,))


def _expm_forward(xp, a):
    f = backend_namespace(xp, "linalg").expm
    if xp is numpy:
        return f(a)             # SciPy takes stacks
    return _over_batch(xp, f, (a,), (2,))


def _sylvester_forward(xp, a, b, q):
    f = backend_namespace(xp, "linalg").solve_sylvester
    return _over_batch(xp, f, (a, b, q), (2, 2, 2))


_sqrtm = scipy_function("linalg", "sqrtm", "sqrtm primitive (see sqrtm).",
                        forward=_sqrtm_forward, needs=("sqrtm",))
_expm = scipy_function("linalg", "expm", "expm primitive (see expm).",
                       forward=_expm_forward, needs=("expm",))
_solve_sylvester = scipy_function("linalg", "solve_sylvester",
                                  "solve_sylvester primitive (see solve_sylvester).",
                                  forward=_sylvester_forward, needs=("solve_sylvester",))


@named("linalg.sqrtm")
def sqrtm(A):
    """Principal square root ``X`` of a square matrix (``X @ X = A``).

    Args:
        A: (..., n, n) array_like.
    Returns:
        An Array shaped like ``A``; real when SciPy's result is real, complex when
        ``A`` has negative real eigenvalues.

    Gradient: ``solve_sylvester(X^H, X^H, g)`` (``A`` without eigenvalues on the
    closed negative real axis, where the root is differentiable).

    See also scipy.linalg.sqrtm.
    """
    A = _square(A, "A")
    return _sqrtm(A)


@named("linalg.expm")
def expm(A):
    """Matrix exponential (Pade approximation with scaling and squaring).

    Args:
        A: (..., n, n) array_like.
    Returns:
        An Array shaped like ``A``.

    Gradient: the adjoint Frechet derivative ``L(A^H, g)``, the top-right block
    of ``expm([[A^H, g], [0, A^H]])``.

    See also scipy.linalg.expm.
    """
    A = _square(A, "A")
    return _expm(A)


@named("linalg.solve_sylvester")
def solve_sylvester(a, b, q):
    """Solve the Sylvester equation ``a x + x b = q``.

    Args:
        a: (..., m, m) array_like.
        b: (..., n, n) array_like.
        q: (..., m, n) array_like; batch axes broadcast.
    Returns:
        The Array ``x`` of shape (..., m, n).

    Gradient: with ``y = solve_sylvester(a^H, b^H, g)``: ``y`` w.r.t. ``q``,
    ``-y x^H`` w.r.t. ``a``, ``-x^H y`` w.r.t. ``b``.

    See also scipy.linalg.solve_sylvester.
    """
    a = _square(a, "a")
    b = _square(b, "b")
    q = mnp.asarray(as_operand(q))
    if q.ndim < 2 or q.shape[-2:] != (a.shape[-1], b.shape[-1]):
        raise ValueError(f"q must have shape (..., {a.shape[-1]}, {b.shape[-1]}) for a of "
                         f"shape {a.shape} and b of shape {b.shape}; got {q.shape}")
    return _solve_sylvester(a, b, q)


def _sqrtm_vjp(ans, a):
    return lambda g: _solve_sylvester(hermitian(ans), hermitian(ans), g)


def _expm_vjp(ans, a):
    def vjp(g):
        n = a.shape[-1]
        ah = hermitian(a)
        if g.dtype != ah.dtype:
            dt = numpy.result_type(g.dtype, ah.dtype)
            ah, g = ah.astype(dt), g.astype(dt)
        g = mnp.broadcast_to(g, ah.shape)
        top = mnp.concatenate([ah, g], axis=-1)
        bottom = mnp.concatenate([mnp.zeros_like(ah), ah], axis=-1)
        return _expm(mnp.concatenate([top, bottom], axis=-2))[..., :n, n:]
    return vjp


def _sylvester_maker(which):
    def maker(ans, a, b, q):
        def vjp(g):
            y = _solve_sylvester(hermitian(a), hermitian(b), g)
            if which == 2:
                return unbroadcast_to_operand(y, q)
            if which == 0:
                return unbroadcast_to_operand(-_mm(y, hermitian(ans)), a)
            return unbroadcast_to_operand(-_mm(hermitian(ans), y), b)
        return vjp
    return maker


defvjp(_sqrtm._prim, _sqrtm_vjp)
defvjp(_expm._prim, _expm_vjp)
defvjp(_solve_sylvester._prim, _sylvester_maker(0), _sylvester_maker(1), _sylvester_maker(2))


from ._banded import solve_banded   # noqa: E402,F401  (its own file: linalg.py is full)
