"""``check_grads``: minpy's reverse-mode gradients against central finite differences."""
import numpy

from .. import numpy as mnp
from ..core.array import Array
from ..core import autograd
from ._asserts import _host


def _vdot_real(a, b):
    return mnp.sum(mnp.real(a * mnp.conj(b))) if numpy.iscomplexobj(_host(a)) \
        else mnp.sum(a * b)


def _random_like(x, rng):
    h = _host(x)
    v = rng.standard_normal(h.shape)
    if numpy.iscomplexobj(h):
        v = v + 1j * rng.standard_normal(h.shape)
    return v.astype(h.dtype) if numpy.issubdtype(h.dtype, numpy.inexact) else v


def _check_one(f, args, argnum, eps, rtol, atol, rng, name):
    x = args[argnum]
    xh = _host(x).astype(numpy.result_type(_host(x).dtype, numpy.float64))
    v = _random_like(xh, rng)
    scalar_input = not isinstance(x, (Array, numpy.ndarray))

    def f_at(xv):
        a = list(args)
        a[argnum] = float(xv) if scalar_input else mnp.array(xv)
        return f(*a)

    out = f_at(xh)
    u = mnp.array(_random_like(out, rng))

    def scalarized(*a):
        return _vdot_real(f(*a), u)

    def scal_host(xv):
        return float(_host(_vdot_real(f_at(xv), u)))

    fd = (scal_host(xh + eps * v) - scal_host(xh - eps * v)) / (2 * eps)
    a = list(args)
    a[argnum] = float(xh) if scalar_input else mnp.array(xh)
    g = autograd.grad(scalarized, argnum)(*a)
    analytic = float(numpy.real(numpy.sum(_host(g) * numpy.conj(v))))
    if not numpy.isclose(analytic, fd, rtol=rtol, atol=atol):
        raise AssertionError(f"check_grads({name}): argument {argnum}: VJP gives "
                             f"{analytic!r}, finite differences give {fd!r}")
    return scalarized, u


def check_grads(f, *args, order=2, argnums=None, eps=1e-6, rtol=1e-4, atol=1e-6, seed=0):
    """Check the gradients of ``f`` at ``args`` against finite differences.

    For each argument in ``argnums`` (default: all array/float arguments), a
    random direction ``v`` and output cotangent ``u`` are drawn; the VJP
    ``<grad <u, f(x)>, v>`` must match the central difference of
    ``<u, f(x + eps v)>``. With ``order=2`` the same check is applied to the
    gradient itself (``x -> <grad <u, f>(x), w>``), which exercises grad of grad.

    Args:
        f: function of minpy arrays (any output shape).
        *args: the point; use float64 arrays for tight tolerances.
        order: highest derivative order to check (1, 2, ...).
        argnums: which positional arguments to differentiate.
        eps, rtol, atol: finite-difference step and tolerances.
        seed: seed of the random directions.

    Raises:
        AssertionError: on a mismatch, naming the argument and both values.
    """
    rng = numpy.random.default_rng(seed)
    name = getattr(f, "__name__", repr(f))
    if argnums is None:
        argnums = [i for i, a in enumerate(args)
                   if isinstance(a, (Array, numpy.ndarray, float))
                   and numpy.issubdtype(_host(a).dtype, numpy.inexact)]
    for argnum in argnums:
        scalarized, _ = _check_one(f, args, argnum, eps, rtol, atol, rng, name)
        if order > 1:
            w = mnp.array(_random_like(args[argnum], rng))
            g = autograd.grad(scalarized, argnum)

            def grad_dot_w(*a, _g=g, _w=w):
                return _vdot_real(_g(*a), _w)
            grad_dot_w.__name__ = f"grad({name})"
            check_grads(grad_dot_w, *args, order=order - 1, argnums=[argnum], eps=eps,
                        rtol=rtol, atol=atol, seed=seed + 1)
