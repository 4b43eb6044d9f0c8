"""Testing: ``numpy.testing`` for minpy Arrays, and tools to test your own code.

- Everything in ``numpy.testing``: the assertions (``assert_array_equal``,
  ``assert_equal``, ``assert_raises`` ...) accept minpy Arrays, host or device
  (compared on the host, with NumPy's messages); other names are NumPy's own.
- :func:`assert_close`: minpy's stricter check (shape and dtype must match,
  ``rtol`` by dtype); ``assert_allclose`` is NumPy's.
- :func:`numpy_minpy_allclose`, :func:`numpy_minpy_array_equal`: decorators
  running a test body with ``xp=numpy`` and ``xp=minpy`` on every device and
  comparing results and errors (CuPy's ``numpy_cupy_allclose``).
- :func:`check_grads`: minpy's gradients against finite differences, to any order.
- hypothesis strategies: :func:`shapes`, :func:`arrays`, :func:`broadcastable_shapes`
  (and ``hypothesis.extra.array_api.make_strategies_namespace(minpy)``).

See docs/tutorials/testing.md.
"""
import numpy.testing as _nt
from numpy.testing import (   # noqa: F401  (NumPy's own: no arrays to move)
    HAS_LAPACK64, HAS_REFCOUNT, IS_MUSL, IS_PYPY, IS_PYSTON, IS_WASM, IgnoreException,
    KnownFailureException, SkipTest, assert_no_gc_cycles, assert_no_warnings, assert_raises,
    assert_raises_regex, assert_warns, break_cycles, clear_and_catch_warnings,
    decorate_methods, jiffies, measure, memusage, rundocs, runstring, suppress_warnings,
    tempdir, temppath, verbose)

from ._asserts import (   # noqa: F401
    assert_, assert_allclose, assert_almost_equal, assert_close, assert_approx_equal, assert_array_almost_equal,
    assert_array_almost_equal_nulp, assert_array_compare, assert_array_equal, assert_array_less,
    assert_array_max_ulp, assert_equal, assert_string_equal, build_err_msg, print_assert_equal)
from ._grads import check_grads
from ._strategies import arrays, broadcastable_shapes, float_dtypes, shapes
from ._xp import devices, numpy_minpy_allclose, numpy_minpy_array_equal

__all__ = ["check_grads", "assert_allclose", "assert_close", "numpy_minpy_allclose", "numpy_minpy_array_equal",
           "devices", "shapes", "arrays", "broadcastable_shapes", "float_dtypes",
           "assert_", "assert_equal", "assert_almost_equal", "assert_approx_equal",
           "assert_array_equal", "assert_array_almost_equal", "assert_array_almost_equal_nulp",
           "assert_array_max_ulp", "assert_array_less", "assert_array_compare",
           "assert_string_equal", "print_assert_equal", "build_err_msg",
           "assert_raises", "assert_raises_regex", "assert_warns", "assert_no_warnings",
           "assert_no_gc_cycles", "suppress_warnings", "clear_and_catch_warnings"]


def __getattr__(name):
    """The rest of ``numpy.testing`` (names that vary across NumPy versions:
    ``IS_64BIT``, ``NUMPY_ROOT``, ``run_threaded`` ...) as NumPy's own."""
    if not name.startswith("_") and hasattr(_nt, name):
        return getattr(_nt, name)
    raise AttributeError(f"module 'minpy.testing' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {n for n in dir(_nt) if not n.startswith("_")})
