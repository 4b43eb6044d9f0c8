"""Run a test body with ``xp=numpy`` and with ``xp=minpy`` on every device; compare.

The decorators are CuPy's ``numpy_cupy_allclose`` / ``numpy_cupy_array_equal``
for minpy. The decorated function keeps its signature minus ``xp``, so pytest's
fixtures and ``parametrize`` (and hypothesis' ``given``) see the other arguments.
"""
import functools
import inspect

import numpy

from .. import numpy as mnp
from ..dispatch import cpu, gpu, num_gpus
from ._asserts import _host

__all__ = ["numpy_minpy_allclose", "numpy_minpy_array_equal", "devices"]


def devices():
    """The devices a minpy body runs on: ``cpu(0)``, then ``gpu(i)`` for each GPU
    minpy's GPU backend sees. Returns a list of ``minpy.Context``."""
    return [cpu(0)] + [gpu(i) for i in range(num_gpus())]


def _signature_without(func, name):
    sig = inspect.signature(func)
    if name not in sig.parameters:
        raise TypeError(f"numpy_minpy decorator: {func.__qualname__} must take a "
                        f"{name!r} argument (the array module: numpy or minpy)")
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name != name])


def _arguments(full, bound, name, xp):
    """(args, kwargs) calling the body (signature ``full``) with ``bound`` (the
    arguments given to the decorated test) and ``xp`` as the argument ``name``."""
    args, kwargs = [], {}
    for p in full.parameters.values():
        value = xp if p.name == name else bound.arguments[p.name]
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            args.append(value)
        elif p.kind == p.VAR_POSITIONAL:
            args.extend(value)
        elif p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            kwargs.update(value)
    return args, kwargs


def _call(func, args, kwargs, ctx=None):
    """(result, None) or (None, exception) of one run of the body."""
    try:
        if ctx is None:
            return func(*args, **kwargs), None
        with ctx:
            return func(*args, **kwargs), None
    except Exception as e:     # compared with the other run's below
        return None, e


def _describe(err):
    return f"{type(err).__module__}.{type(err).__qualname__}: {err}"


def _check_errors(np_err, mp_err, accept_error, where):
    """Both runs raised, or one did: fail unless both raised compatible, accepted errors.

    minpy's error must be an instance of NumPy's error's type: code that catches
    NumPy's exception then catches minpy's too."""
    if mp_err is None:
        raise AssertionError(f"{where}: only numpy raised ({_describe(np_err)}); "
                             "minpy returned normally") from np_err
    if np_err is None:
        raise AssertionError(f"{where}: only minpy raised ({_describe(mp_err)}); "
                             "numpy returned normally") from mp_err
    if not isinstance(mp_err, type(np_err)):
        raise AssertionError(f"{where}: different errors: numpy raised {_describe(np_err)}; "
                             f"minpy raised {_describe(mp_err)}") from mp_err
    if accept_error is True or (accept_error and isinstance(np_err, accept_error)):
        return
    raise np_err     # both raised the same kind of error and the test did not accept it


def _tol(tol, dtype):
    """A tolerance given as a number or as {dtype: value, 'default': value}."""
    if not isinstance(tol, dict):
        return tol
    for key, value in tol.items():
        if key != "default" and numpy.dtype(key) == dtype:
            return value
    return tol.get("default", 0)


def _compare(expected, actual, compare_leaf, type_check, path):
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            raise AssertionError(f"{path}: numpy returned a {type(expected).__name__} of "
                                 f"{len(expected)}, minpy {_kind(actual)}")
        if type_check and type(actual) is not type(expected):
            raise AssertionError(f"{path}: numpy returned a {type(expected).__name__}, "
                                 f"minpy a {type(actual).__name__}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            _compare(e, a, compare_leaf, type_check, f"{path}[{i}]")
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise AssertionError(f"{path}: numpy returned a dict with keys "
                                 f"{sorted(expected, key=repr)}, minpy {_kind(actual)}")
        for k in expected:
            _compare(expected[k], actual[k], compare_leaf, type_check, f"{path}[{k!r}]")
    elif expected is None or actual is None:
        if expected is not actual:
            raise AssertionError(f"{path}: numpy returned {expected!r}, minpy {_kind(actual)}")
    else:
        e, a = numpy.asarray(expected), _host(actual)
        if type_check and e.dtype != a.dtype:
            raise AssertionError(f"{path}: dtypes differ: numpy {e.dtype}, minpy {a.dtype}")
        if e.shape != a.shape:
            raise AssertionError(f"{path}: shapes differ: numpy {e.shape}, minpy {a.shape}")
        compare_leaf(e, a, path)


def _kind(x):
    if isinstance(x, (tuple, list, dict)):
        return f"a {type(x).__name__} of {len(x)}"
    return f"{type(x).__name__} {x!r}"


def _decorator(compare_leaf, type_check, accept_error, name):
    def decorator(func):
        full = inspect.signature(func)
        sig = _signature_without(func, name)

        @functools.wraps(func)
        def test(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            expected, np_err = _call(func, *_arguments(full, bound, name, numpy))
            for ctx in devices():
                where = f"{func.__qualname__} with {name}=minpy on {ctx}"
                actual, mp_err = _call(func, *_arguments(full, bound, name, mnp), ctx)
                if np_err is not None or mp_err is not None:
                    _check_errors(np_err, mp_err, accept_error, where)
                    continue
                _compare(expected, actual, compare_leaf, type_check, where)
        test.__signature__ = sig
        return test
    return decorator


def numpy_minpy_allclose(rtol=1e-7, atol=0, err_msg="", verbose=True, name="xp",
                         type_check=True, accept_error=False, equal_nan=True):
    """Decorator: run the test body with ``xp=numpy`` and ``xp=minpy`` (on ``cpu(0)``
    and inside ``with minpy.gpu(i):`` for each GPU), and compare what they return.

    The body takes an argument named ``name`` and returns an array, a scalar, or
    nested tuples/lists/dicts of them. Each minpy result must match NumPy's in
    shape, dtype (``type_check``), container type and values (``numpy.testing.
    assert_allclose`` with ``rtol``/``atol``). If either run raises, both must raise
    and minpy's error must be an instance of NumPy's error's type; the test then
    passes only if ``accept_error`` is ``True`` or an exception type (or tuple)
    NumPy's error is an instance of, else NumPy's error is re-raised.

    Args:
        rtol, atol: tolerances, numbers or ``{dtype: tol, 'default': tol}``.
        err_msg, verbose, equal_nan: passed to ``numpy.testing.assert_allclose``.
        name: the array-module argument's name (``'xp'``). ``xp`` is ``numpy`` or
            ``minpy.numpy``, the namespace ``import minpy as np`` re-exports.
        type_check: compare dtypes and container types too.
        accept_error: ``False``, ``True`` or exception type(s), as above.

    Returns:
        The decorator; the decorated test returns None and keeps its signature
        minus ``name`` (pytest fixtures and ``parametrize`` still apply).

    See also cupy.testing.numpy_cupy_allclose.
    """
    def leaf(e, a, where):
        numpy.testing.assert_allclose(a, e, rtol=_tol(rtol, e.dtype), atol=_tol(atol, e.dtype),
                                      equal_nan=equal_nan, verbose=verbose,
                                      err_msg=f"{where} {err_msg}".rstrip())
    return _decorator(leaf, type_check, accept_error, name)


def numpy_minpy_array_equal(err_msg="", verbose=True, name="xp", type_check=True,
                            accept_error=False):
    """Decorator as :func:`numpy_minpy_allclose`, but values must be equal
    (``numpy.testing.assert_array_equal``; NaNs in the same places are equal).

    Args:
        err_msg, verbose: passed to ``numpy.testing.assert_array_equal``.
        name, type_check, accept_error: as in :func:`numpy_minpy_allclose`.

    Returns:
        The decorator.

    See also cupy.testing.numpy_cupy_array_equal.
    """
    def leaf(e, a, where):
        numpy.testing.assert_array_equal(a, e, verbose=verbose,
                                         err_msg=f"{where} {err_msg}".rstrip())
    return _decorator(leaf, type_check, accept_error, name)
