"""``mx.test_utils`` basics: ``almost_equal``, ``assert_almost_equal`` (MXNet's default
tolerances by dtype), ``default_context``/``set_default_context``, ``rand_ndarray``,
``rand_shape_nd`` -- over minpy Arrays, NumPy arrays and numbers.

See also mxnet.test_utils.
"""
import numbers

import numpy

from ..core.array import Array
from ..dispatch.context import current_context
from ..numpy import array as _array

__all__ = ["default_context", "set_default_context", "default_dtype", "almost_equal",
           "assert_almost_equal", "rand_ndarray", "rand_shape_nd", "default_rtols",
           "default_atols"]

_RTOLS = {numpy.dtype(numpy.float16): 1e-2, numpy.dtype(numpy.float32): 1e-4,
          numpy.dtype(numpy.float64): 1e-5}
_ATOLS = {numpy.dtype(numpy.float16): 1e-1, numpy.dtype(numpy.float32): 1e-3,
          numpy.dtype(numpy.float64): 1e-20}
_set_default = []      # the context set_default_context entered (this module's only)


def default_rtols():
    """MXNet's relative tolerance per dtype (0 for integers and bool)."""
    return dict(_RTOLS)


def default_atols():
    """MXNet's absolute tolerance per dtype (0 for integers and bool)."""
    return dict(_ATOLS)


def default_context():
    """The context tests run on: the current one (see :func:`set_default_context`)."""
    return current_context()


def set_default_context(ctx):
    """Make ``ctx`` this thread's current context outside any ``with`` block (the one
    set before by this function is left first; ``None``, minpy's addition, only leaves it).

    Raises:
        RuntimeError: a ``with ctx:`` block was entered after the last call and is
            still open (leave it first).
    """
    if _set_default:
        if current_context() is not _set_default[-1]:
            raise RuntimeError("set_default_context: a 'with ctx:' block opened after the "
                               "last set_default_context is still open; leave it first")
        _set_default.pop().__exit__(None, None, None)
    if ctx is not None:
        _set_default.append(ctx.__enter__())


def default_dtype():
    """float32, MXNet's default dtype."""
    return numpy.float32


def _host(x):
    if isinstance(x, Array):
        return x.asnumpy()
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return numpy.asarray(x)


def _tol(x, tol, table):
    if isinstance(tol, numbers.Number):
        return tol
    return (tol or {}).get(x.dtype, table.get(x.dtype, 0))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """``numpy.allclose`` of the two (on the host) with MXNet's defaults here: rtol 1e-5,
    atol 1e-20 whatever the dtypes.

    Raises:
        AssertionError: ``use_broadcast=False`` and the shapes differ.
    """
    a, b = _host(a), _host(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"shapes differ: {a.shape} vs {b.shape}")
    return bool(numpy.allclose(a, b, rtol=1e-5 if rtol is None else rtol,
                               atol=1e-20 if atol is None else atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Assert that ``a`` and ``b`` (minpy Arrays, NumPy arrays, numbers) are close, with
    MXNet's default tolerances for their dtypes (the larger of the two): float16
    1e-2/1e-1, float32 1e-4/1e-3, float64 1e-5/1e-20 (rtol/atol); a number or a
    ``{dtype: tol}`` dict overrides them.

    Raises:
        AssertionError: naming the largest error's location and values.
    """
    a, b = _host(a), _host(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"shapes differ: {names[0]} {a.shape} vs {names[1]} {b.shape}")
    rtol = max(_tol(a, rtol, _RTOLS), _tol(b, rtol, _RTOLS))
    atol = max(_tol(a, atol, _ATOLS), _tol(b, atol, _ATOLS))
    if numpy.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64, b64 = numpy.broadcast_arrays(a.astype(numpy.float64), b.astype(numpy.float64))
    err = numpy.abs(a64 - b64) / (atol + rtol * numpy.abs(b64))
    err = numpy.where(numpy.isnan(err), numpy.inf, err)
    where = numpy.unravel_index(numpy.argmax(err), err.shape) if err.ndim else ()
    raise AssertionError(f"Items are not equal:\nError {float(err[where]):f} exceeds "
                         f"tolerance rtol={rtol:e}, atol={atol:e}.  Location of maximum "
                         f"error: {where}, {names[0]}={float(a64[where]):.8f}, "
                         f"{names[1]}={float(b64[where]):.8f}")


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` dimensions, each in [1, dim] ([0, dim] if allowed)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(n) for n in numpy.random.randint(low, dim + 1, size=num_dim))


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A dense minpy Array of uniform [0, 1) values (float32 unless ``dtype``) on ``ctx``
    (default: the current context); ``modifier_func`` is applied to the host values.

    Raises:
        NotImplementedError: a sparse ``stype`` (minpy has no sparse arrays).
    """
    if stype != "default":
        raise NotImplementedError(f"rand_ndarray: stype={stype!r}: minpy has no sparse "
                                  f"arrays (row_sparse/csr); use stype='default'")
    host = numpy.random.uniform(0.0, 1.0, shape).astype(dtype or numpy.float32)
    if modifier_func is not None:
        host = numpy.asarray(modifier_func(host)).astype(host.dtype)
    with ctx or current_context():
        return _array(host)
