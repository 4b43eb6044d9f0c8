"""``minpy.scipy.linalg.solve_banded``: a banded solve, differentiable in ``ab`` and ``b``.

The forward pass is SciPy's on the CPU, ``cupyx.scipy.linalg``'s on the GPU
where CuPy has it (else the CPU, through minpy's counted fallback). The rule is written
with minpy functions and the primitive itself (grad of grad works):
``gb = A^-H g`` is a banded solve with the conjugate-transposed band
(``l`` and ``u`` swapped), and ``gab`` holds ``-gb x^H`` on the band only
(the unused corners of ``ab`` get zero).
"""
import numbers


from ..core.autograd import defvjp
import minpy.numpy as mnp
from ..numpy.rule_helpers import conj_if_complex
from ._util import as_operand, backend_namespace, named, scipy_function

__all__ = ["solve_banded"]


def _forward(xp, ab, b, l=0, u=0, check_finite=True):
    solve = backend_namespace(xp, "linalg").solve_banded
    return solve((l, u), ab, b, check_finite=check_finite)


_solve = scipy_function("linalg", "solve_banded", "solve_banded primitive (see solve_banded).",
                        forward=_forward, needs=("solve_banded",))


def _shift(y, s):
    """``z[j] = y[j + s]`` along the first axis, zero where ``j + s`` is outside."""
    m = y.shape[0]
    if s == 0:
        return y
    if abs(s) >= m:
        return mnp.zeros_like(y)
    pad = mnp.zeros_like(y[:abs(s)])
    return mnp.concatenate([y[s:], pad]) if s > 0 else mnp.concatenate([pad, y[:m + s]])


def _band_h(ab, l, u):
    """The band of ``A^H`` (``u`` sub-, ``l`` super-diagonals) from the band ``ab`` of ``A``:
    row ``r`` is row ``u + l - r`` of ``ab`` shifted by ``r - l``, conjugated."""
    rows = [_shift(ab[u + l - r], r - l) for r in range(l + u + 1)]
    return conj_if_complex(mnp.stack(rows))


def _grads(ans, ab, b, g, l, u, check_finite):
    vec = b.ndim == 1
    gb = _solve(_band_h(ab, l, u), g, l=u, u=l, check_finite=check_finite)
    gbm = mnp.expand_dims(gb, -1) if vec else gb
    xm = conj_if_complex(mnp.expand_dims(ans, -1) if vec else ans)
    # gab[r, j] = -sum_k gb[j + r - u, k] conj(x[j, k])
    gab = -mnp.stack([mnp.sum(_shift(gbm, r - u) * xm, axis=-1) for r in range(l + u + 1)])
    return gab, gb


def _maker(which):
    def maker(ans, ab, b, l=0, u=0, check_finite=True):
        return lambda g: _grads(ans, ab, b, g, l, u, check_finite)[which]
    return maker


defvjp(_solve._prim, _maker(0), _maker(1), ab=_maker(0), b=_maker(1))


def _count(v, what):
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 0:
        raise ValueError(f"{what} must be a non-negative int, got {v!r}")
    return int(v)


@named("linalg.solve_banded")
def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` for a banded ``a`` given in LAPACK's band storage.

    Args:
        l_and_u: ``(l, u)``, the numbers of non-zero lower and upper diagonals.
        ab: (l + u + 1, M) array_like: ``ab[u + i - j, j] == a[i, j]`` (the
            unused corners are not read).
        b: (M,) or (M, K) array_like right-hand side.
        overwrite_ab, overwrite_b: ignored (minpy never writes into its inputs).
        check_finite: raise ValueError on infs/NaNs.
    Returns:
        The Array ``x``, shaped like ``b``.

    Gradient: w.r.t. ``b`` ``a^-H g``; w.r.t. ``ab`` ``-a^-H g x^H`` on the band.

    See also scipy.linalg.solve_banded.
    """
    try:
        l, u = l_and_u
    except (TypeError, ValueError):
        raise ValueError(f"l_and_u must be a pair (l, u), got {l_and_u!r}") from None
    l, u = _count(l, "l"), _count(u, "u")
    ab, b = mnp.asarray(as_operand(ab)), mnp.asarray(as_operand(b))
    if ab.ndim != 2 or ab.shape[0] != l + u + 1:
        raise ValueError(f"ab must have shape ({l + u + 1}, M) for (l, u) = ({l}, {u}); got "
                         f"{ab.shape}")
    if b.ndim not in (1, 2) or b.shape[0] != ab.shape[1]:
        raise ValueError(f"b must have shape ({ab.shape[1]},) or ({ab.shape[1]}, K) to match "
                         f"ab of shape {ab.shape}; got {b.shape}")
    return _solve(ab, b, l=l, u=u, check_finite=bool(check_finite))
