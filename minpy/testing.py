"""Testing helpers for minpy and for users who test their own differentiable code.

- :func:`check_grads` compares minpy's reverse-mode gradients with central
  finite differences along random directions, to first and higher order.
- :func:`assert_allclose` compares a minpy (or NumPy) result with NumPy's.
- hypothesis strategies: :func:`shapes`, :func:`arrays`, :func:`broadcastable_shapes`.
"""
import numpy

from . import numpy as mnp
from .core.array import Array
from .core import autograd

__all__ = ["check_grads", "assert_allclose", "shapes", "arrays", "broadcastable_shapes",
           "float_dtypes"]


def _host(x):
    if isinstance(x, Array):
        return x.asnumpy()
    return numpy.asarray(x)


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
        AssertionError naming the argument and both values on mismatch.
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


def assert_allclose(actual, desired, rtol=None, atol=None, check_dtype=True):
    """Assert a minpy result equals NumPy's: values (tolerance by dtype), shape, dtype."""
    a, d = _host(actual), numpy.asarray(desired)
    if check_dtype:
        assert a.dtype == d.dtype, f"dtype {a.dtype} != {d.dtype}"
    assert a.shape == d.shape, f"shape {a.shape} != {d.shape}"
    if rtol is None:
        rtol = {numpy.dtype(numpy.float16): 1e-2, numpy.dtype(numpy.float32): 1e-5,
                numpy.dtype(numpy.complex64): 1e-5}.get(d.dtype, 1e-7 if d.dtype.kind in "fc" else 0)
    numpy.testing.assert_allclose(a, d, rtol=rtol, atol=atol or 0, equal_nan=True)


# ------------------------------------------------------------ hypothesis strategies
float_dtypes = (numpy.float32, numpy.float64)


def shapes(min_dims=0, max_dims=4, min_side=1, max_side=5):
    """Hypothesis strategy of array shapes."""
    from hypothesis.extra import numpy as hnp
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtype=numpy.float64, shape=None, elements=None, minpy=True):
    """Hypothesis strategy of arrays (minpy Arrays unless ``minpy=False``)."""
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
    if shape is None:
        shape = shapes()
    if elements is None and numpy.dtype(dtype).kind == "f":
        elements = st.floats(-10, 10, allow_nan=False, width=numpy.dtype(dtype).itemsize * 8)
    strat = hnp.arrays(dtype, shape, elements=elements)
    return strat.map(mnp.array) if minpy else strat


def broadcastable_shapes(num_shapes=2, max_dims=4, max_side=5):
    """Hypothesis strategy of tuples of mutually broadcastable shapes."""
    from hypothesis.extra import numpy as hnp
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, max_dims=max_dims,
                                             max_side=max_side).map(lambda r: r.input_shapes)
