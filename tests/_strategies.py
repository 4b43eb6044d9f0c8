"""Shared hypothesis strategies and NumPy-comparison helpers for minpy tests.

Strategies: :func:`shapes`, :func:`dtypes`, :func:`arrays`,
:func:`broadcastable_shapes`, :func:`array_pairs`, :func:`axes`.

Comparison: :func:`compare_numpy` is a CuPy-style decorator: the test body
takes an ``xp`` argument, runs once with ``xp=numpy`` and once per minpy mode
(the fast path, and the general dispatch path via :func:`general_path`), and
the results (values, dtypes, shapes, result types) or raised exception types
must agree. Draw every hypothesis value outside the body (the body runs
once per module and mode, so ``data.draw`` inside it would differ per run).
Inputs drawn by hypothesis are host ``numpy.ndarray``; the body turns them
into ``xp`` arrays itself (``xp.asarray(a)`` shares memory with ``a`` on the
CPU, so use ``xp.array(a)`` in a body that writes in place). A body that
cannot bind its arguments is an error, not a matching exception.
"""
import contextlib
import functools
import inspect
import warnings

import numpy
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minpy
from minpy.dispatch import state

__all__ = [
    "BOOL", "INTS", "UINTS", "FLOATS", "COMPLEX", "NUMERIC", "ALL_DTYPES", "shapes",
    "dtypes", "arrays", "broadcastable_shapes", "array_pairs", "axes", "with_axis", "tolerance",
    "general_path", "compare_numpy", "assert_matches", "run_both", "MODES", "random_array",
]

BOOL = (numpy.dtype(bool),)
INTS = tuple(numpy.dtype(t) for t in (numpy.int8, numpy.int32, numpy.int64))
UINTS = (numpy.dtype(numpy.uint8),)
FLOATS = tuple(numpy.dtype(t) for t in (numpy.float16, numpy.float32, numpy.float64))
COMPLEX = tuple(numpy.dtype(t) for t in (numpy.complex64, numpy.complex128))
NUMERIC = INTS + UINTS + FLOATS + COMPLEX
ALL_DTYPES = BOOL + NUMERIC

# minpy call modes compared against NumPy: the straight fast path, and the
# general path (choose_context / run) that GPU and tape calls take.
MODES = ("fast", "general")


# ------------------------------------------------------------------ strategies
def random_array(shape, seed=0, dtype=numpy.float64):
    """Standard-normal values (distinct, so sorting has no ties; complex dtypes get a
    random imaginary part) as a minpy Array: the input of gradient checks."""
    r = numpy.random.default_rng(seed)
    v = r.standard_normal(shape)
    if numpy.dtype(dtype).kind == "c":
        v = v + 1j * r.standard_normal(shape)
    return minpy.array(v.astype(dtype))


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Array shapes (tuples of ints)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def dtypes(choices=ALL_DTYPES):
    """One of ``choices`` (numpy dtypes)."""
    return st.sampled_from(tuple(numpy.dtype(d) for d in choices))


def _elements(dtype, finite, max_magnitude):
    dtype = numpy.dtype(dtype)
    if dtype.kind in "fc":
        kw = dict(allow_subnormal=False)
        if finite or max_magnitude is not None:
            kw.update(allow_nan=False, allow_infinity=False)
        if max_magnitude is not None:
            if dtype.kind == "f":
                kw.update(min_value=-max_magnitude, max_value=max_magnitude)
            else:
                kw.update(max_magnitude=max_magnitude)
        return hnp.from_dtype(dtype, **kw)
    if dtype.kind in "iu" and max_magnitude is not None:
        info = numpy.iinfo(dtype)
        return st.integers(max(info.min, -int(max_magnitude)), min(info.max, int(max_magnitude)))
    return hnp.from_dtype(dtype)


def arrays(dtype=ALL_DTYPES, shape=None, *, finite=False, max_magnitude=None, **shape_kw):
    """Host arrays. ``dtype``: a dtype, or a sequence/strategy of dtypes to draw from;
    ``shape``: a shape, or a strategy (default :func:`shapes` with ``shape_kw``).
    ``finite`` drops nan/inf; ``max_magnitude`` bounds values (and implies finite).
    """
    if isinstance(dtype, (list, tuple)):
        dtype = dtypes(dtype)
    if shape is None:
        shape = shapes(**shape_kw)

    @st.composite
    def draw(draw_):
        dt = draw_(dtype) if isinstance(dtype, st.SearchStrategy) else numpy.dtype(dtype)
        shp = draw_(shape) if isinstance(shape, st.SearchStrategy) else shape
        return draw_(hnp.arrays(dt, shp, elements=_elements(dt, finite, max_magnitude)))
    return draw()


def broadcastable_shapes(num_shapes=2, *, signature=None, min_dims=0, max_dims=3,
                         max_side=4):
    """A tuple of ``num_shapes`` mutually broadcastable shapes (optionally for a
    gufunc ``signature``)."""
    kw = dict(num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, max_side=max_side)
    if signature is not None:
        kw["signature"] = signature
        kw.pop("num_shapes")
    return hnp.mutually_broadcastable_shapes(**kw).map(lambda bs: bs.input_shapes)


def array_pairs(dtype1=ALL_DTYPES, dtype2=None, *, same_dtype=False, **kw):
    """Two host arrays with broadcastable shapes (``dtype2`` defaults to ``dtype1``'s
    choices; ``same_dtype`` draws one dtype for both)."""
    dtype2 = dtype1 if dtype2 is None else dtype2
    finite = kw.pop("finite", False)
    mag = kw.pop("max_magnitude", None)

    @st.composite
    def draw(draw_):
        s1, s2 = draw_(broadcastable_shapes(2, **kw))
        d1 = draw_(dtypes(dtype1))
        d2 = d1 if same_dtype else draw_(dtypes(dtype2))
        return (draw_(arrays(d1, s1, finite=finite, max_magnitude=mag)),
                draw_(arrays(d2, s2, finite=finite, max_magnitude=mag)))
    return draw()


def axes(ndim, *, allow_none=True, allow_tuple=True):
    """An ``axis`` argument valid for ``ndim`` dims: None, an int (possibly negative)
    or a tuple of distinct ints."""
    opts = []
    if allow_none:
        opts.append(st.none())
    if ndim > 0:
        opts.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            opts.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(
                lambda ax: tuple(a - ndim if i % 2 else a for i, a in enumerate(ax))))
    return st.one_of(*opts) if opts else st.none()


def with_axis(array_strategy, *, allow_none=True, allow_tuple=True):
    """(array, axis) pairs: an array from ``array_strategy`` and a valid axis for it."""
    return array_strategy.flatmap(lambda a: st.tuples(
        st.just(a), axes(a.ndim, allow_none=allow_none, allow_tuple=allow_tuple)))


# ------------------------------------------------------------------ comparison
def tolerance(dtype):
    """(rtol, atol) for comparing results of ``dtype`` across backends."""
    dtype = numpy.dtype(dtype)
    if dtype.kind not in "fc":
        return 0, 0
    return {2: (1e-3, 1e-3), 4: (1e-5, 1e-6)}.get(dtype.itemsize // (2 if dtype.kind == "c"
                                                                     else 1), (1e-12, 1e-14))


GPU_ULPS = 4     # ulps of a result's magnitude a real GPU may differ by (see gpu_tolerance)


def on_real_gpu():
    """True when the installed GPU backend is CuPy on a real device (not the stand-in)."""
    b = minpy.dispatch.gpu_backend()
    return b is not None and getattr(b, "name", None) == "cupy"


def gpu_tolerance(exp, rtol, atol):
    """(rtol, atol) for comparing a float result computed on a real GPU with NumPy's
    ``exp``: CuPy's reductions and matrix products sum in another order, and CUDA's
    math library is not NumPy's, so results may differ by a few ulps of the result's
    magnitude (``GPU_ULPS`` ulps of ``max |exp|``, and of each element). Exactness
    is kept on the CPU and on the stand-in device, which runs NumPy's own kernels."""
    eps = numpy.finfo(exp.dtype).eps
    finite = numpy.abs(exp[numpy.isfinite(exp)])
    scale = float(finite.max()) if finite.size else 0.0
    return max(rtol, GPU_ULPS * eps), max(atol, GPU_ULPS * eps * scale)


@contextlib.contextmanager
def general_path():
    """Route minpy calls through the general dispatch path (``call`` -> ``run``)."""
    old = state.force_front_door(True)
    try:
        yield
    finally:
        state.force_front_door(old)


def _snapshot(res):
    """Copy host arrays in ``res`` so later runs cannot change them."""
    t = type(res)
    if t is numpy.ndarray:
        return res.copy()
    if t is minpy.Array:
        out = object.__new__(_Snap)
        out.data = res.asnumpy().copy()
        out.device = res.context.device_type != "cpu"
        return out
    if isinstance(res, (tuple, list)):
        items = [_snapshot(r) for r in res]
        return t._make(items) if hasattr(t, "_make") else t(items)
    return res


class _Snap:
    """A minpy Array result, held as a host copy (``device``: it lived on a GPU)."""
    __slots__ = ("data", "device")


def _run(fn, xp, mode, args, kwargs):
    # a body that cannot take these arguments would "raise the same" everywhere
    inspect.signature(fn).bind(*args, xp=xp, **kwargs)
    ctx = general_path() if mode == "general" else contextlib.nullcontext()
    with ctx, numpy.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", numpy.exceptions.ComplexWarning)
        try:
            return _snapshot(fn(*args, xp=xp, **kwargs)), None
        except Exception as e:   # noqa: BLE001 - the exception type itself is compared
            return None, e


def _values_equal(got, exp, rtol, atol, where, device=False):
    assert got.dtype == exp.dtype, f"{where}: dtype {got.dtype} != numpy's {exp.dtype}"
    assert got.shape == exp.shape, f"{where}: shape {got.shape} != numpy's {exp.shape}"
    if exp.dtype.kind in "fc":
        r, a = tolerance(exp.dtype)
        r = r if rtol is None else rtol
        a = a if atol is None else atol
        if device and on_real_gpu():
            r, a = gpu_tolerance(exp, r, a)
        numpy.testing.assert_allclose(got, exp, rtol=r, atol=a, equal_nan=True, err_msg=where)
    else:
        numpy.testing.assert_array_equal(got, exp, err_msg=where)


def assert_matches(got, exp, *, rtol=None, atol=None, where="result"):
    """``got`` (minpy result, possibly snapshotted) matches NumPy's ``exp``.

    NumPy arrays must come back as minpy Arrays with equal dtype, shape and values;
    NumPy scalars as the same NumPy scalars (a host result) or as 0-d minpy Arrays
    living on a GPU (a device result); tuples/lists recurse; anything else (Python
    scalars, dtypes, shapes, None) must be equal and of the same type.
    """
    if isinstance(got, minpy.Array):
        got = _snapshot(got)
    if isinstance(exp, numpy.generic) and not (type(got) is _Snap and got.device):
        assert type(got) is type(exp), \
            f"{where}: expected NumPy's scalar {type(exp)}, got {type(got)}"
        _values_equal(numpy.asarray(got), numpy.asarray(exp), rtol, atol, where)
        return
    if isinstance(exp, (numpy.ndarray, numpy.generic)):
        assert type(got) is _Snap, f"{where}: expected a minpy.Array, got {type(got)}"
        exp = numpy.asarray(exp)
        _values_equal(got.data, exp, rtol, atol, where, device=got.device)
        return
    assert type(got) is not _Snap, f"{where}: got a minpy.Array where NumPy gave {type(exp)}"
    assert type(got) is type(exp), f"{where}: type {type(got)} != numpy's {type(exp)}"
    if isinstance(exp, (tuple, list)):
        assert len(got) == len(exp), f"{where}: length {len(got)} != {len(exp)}"
        for i, (g, e) in enumerate(zip(got, exp)):
            assert_matches(g, e, rtol=rtol, atol=atol, where=f"{where}[{i}]")
    elif isinstance(exp, (float, complex)) and exp != exp:
        assert got != got, f"{where}: {got!r} != numpy's nan"
    else:
        assert got == exp, f"{where}: {got!r} != numpy's {exp!r}"


def run_both(fn, /, *args, rtol=None, atol=None, modes=MODES, **kwargs):
    """Call ``fn(*args, xp=..., **kwargs)`` with NumPy and with minpy (each mode in
    ``modes``) and assert the outcomes agree: equal results, or the same
    exception type. Returns NumPy's result."""
    return _compare(fn, args, kwargs, rtol, atol, modes)


def _compare(fn, args, kwargs, rtol, atol, modes):
    exp, exp_err = _run(fn, numpy, None, args, kwargs)
    for mode in modes:
        got, got_err = _run(fn, minpy, mode, args, kwargs)
        if exp_err is not None:
            if got_err is None:
                raise AssertionError(f"minpy ({mode}) returned {got!r} where NumPy raised "
                                     f"{type(exp_err).__name__}: {exp_err}")
            if type(got_err) is not type(exp_err):
                raise AssertionError(f"minpy ({mode}) raised {type(got_err).__name__} where "
                                     f"NumPy raised {type(exp_err).__name__}: {exp_err}"
                                     ) from got_err
            continue
        if got_err is not None:
            raise got_err
        assert_matches(got, exp, rtol=rtol, atol=atol, where=f"minpy ({mode})")
    return exp


def compare_numpy(fn=None, *, rtol=None, atol=None, modes=MODES):
    """Decorator: run the test body (which takes ``xp``) against NumPy and minpy
    and compare with :func:`run_both`. The ``xp`` parameter is hidden from
    pytest and hypothesis."""
    def deco(f):
        sig = inspect.signature(f)

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            _compare(f, args, kwargs, rtol, atol, modes)
        wrapper.__signature__ = sig.replace(
            parameters=[p for p in sig.parameters.values() if p.name != "xp"])
        return wrapper
    return deco(fn) if fn is not None else deco
