"""``numpy.testing``'s assertions on minpy Arrays, and minpy's stricter ``assert_allclose``.

Each wrapper moves minpy Arrays (host or device, also inside tuples, lists and
dicts) to host ``numpy.ndarray`` and calls NumPy's function, so the checks and
the messages are NumPy's.
"""
import functools

import numpy
import numpy.testing as _nt

from ..core.array import Array


def _host(x):
    """``x`` as a host ``numpy.ndarray`` (a minpy Array is copied off its device)."""
    if isinstance(x, Array):
        return x.asnumpy()
    return numpy.asarray(x)


def _host_tree(x):
    """``x`` with every minpy Array in it (through tuples, lists, dicts) moved to the
    host; everything else, containers' types included, unchanged."""
    if isinstance(x, Array):
        return x.asnumpy()
    if isinstance(x, tuple):
        items = [_host_tree(v) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, list):
        return [_host_tree(v) for v in x]
    if isinstance(x, dict):
        return type(x)((k, _host_tree(v)) for k, v in x.items())
    return x


def _on_host(np_func):
    """``np_func`` (a ``numpy.testing`` function) taking minpy Arrays too."""
    name = np_func.__name__

    @functools.wraps(np_func)
    def wrapper(*args, **kwargs):
        return np_func(*[_host_tree(a) for a in args],
                       **{k: _host_tree(v) for k, v in kwargs.items()})
    wrapper.__module__ = "minpy.testing"
    wrapper.__doc__ = (f"``numpy.testing.{name}`` accepting minpy Arrays (host or device):\n"
                       "they are moved to the host, then NumPy's function checks them and "
                       "writes the message.\n\n"
                       f"See also numpy.testing.{name}, whose documentation follows.\n\n"
                       + (np_func.__doc__ or ""))
    return wrapper


assert_ = _on_host(_nt.assert_)
assert_equal = _on_host(_nt.assert_equal)
assert_almost_equal = _on_host(_nt.assert_almost_equal)
assert_approx_equal = _on_host(_nt.assert_approx_equal)
assert_array_equal = _on_host(_nt.assert_array_equal)
assert_array_almost_equal = _on_host(_nt.assert_array_almost_equal)
assert_array_almost_equal_nulp = _on_host(_nt.assert_array_almost_equal_nulp)
assert_array_max_ulp = _on_host(_nt.assert_array_max_ulp)
assert_array_less = _on_host(_nt.assert_array_less)
assert_array_compare = _on_host(_nt.assert_array_compare)
assert_string_equal = _on_host(_nt.assert_string_equal)
print_assert_equal = _on_host(_nt.print_assert_equal)
build_err_msg = _on_host(_nt.build_err_msg)

# rtol by the expected dtype when none is given (strict mode)
_RTOL = {numpy.dtype(numpy.float16): 1e-2, numpy.dtype(numpy.float32): 1e-5,
         numpy.dtype(numpy.complex64): 1e-5}


def _message(what, err_msg):
    return f"{what}: {err_msg}" if err_msg else what


def assert_allclose(actual, desired, rtol=1e-7, atol=0, equal_nan=True, err_msg="",
                    verbose=True, *, strict=False):
    """NumPy's ``assert_allclose`` on minpy Arrays (host or device: compared on the host).

    Same signature, defaults and messages as NumPy's (``strict=True``: shapes and
    dtypes must match too). For minpy's own dtype-aware check see :func:`assert_close`.

    See also numpy.testing.assert_allclose.
    """
    _nt.assert_allclose(_host_tree(actual), _host_tree(desired), rtol=rtol, atol=atol,
                        equal_nan=equal_nan, err_msg=err_msg, verbose=verbose, strict=strict)


def assert_close(actual, desired, rtol=None, atol=None, equal_nan=True, err_msg="",
                 verbose=True, *, check_dtype=True):
    """Assert ``actual`` (minpy or NumPy) equals ``desired`` in shape and dtype and is close
    in value, with a tolerance chosen by dtype: what minpy's own tests use.

    Stricter than ``numpy.testing.assert_allclose``: shapes must match exactly (no
    broadcasting) and dtypes too, and ``rtol`` defaults by dtype (float16 1e-2,
    float32/complex64 1e-5, other floats 1e-7, integers and bools 0).

    Args:
        actual, desired: arrays (minpy Arrays host or device, NumPy, nested sequences).
        rtol, atol: tolerances; ``None`` means the defaults above (``atol`` 0).
        equal_nan, err_msg, verbose: as NumPy's.
        check_dtype: ``False`` skips the dtype check only.

    Raises:
        AssertionError: with NumPy's message (or naming the shapes/dtypes).

    See also numpy.testing.assert_allclose.
    """
    a, d = _host(actual), numpy.asarray(_host_tree(desired))
    if check_dtype:
        assert a.dtype == d.dtype, _message(f"dtype {a.dtype} != {d.dtype}", err_msg)
    assert a.shape == d.shape, _message(f"shape {a.shape} != {d.shape}", err_msg)
    if rtol is None:
        rtol = _RTOL.get(d.dtype, 1e-7 if d.dtype.kind in "fc" else 0)
    _nt.assert_allclose(a, d, rtol=rtol, atol=atol or 0, equal_nan=equal_nan,
                        err_msg=err_msg, verbose=verbose)
