"""What the GPU backend cannot run as NumPy wrote it, and how minpy runs it anyway.

CuPy is not NumPy: it lacks some functions, keywords, ufunc methods and dtypes
(its API table, :mod:`minpy.dispatch.cupy_api`, says which), returns plain
tuples where NumPy returns namedtuples, and ``x[i]`` is a 0-d *view*. This
module answers, for one call headed for the GPU:

- :func:`refusal`: why the GPU backend cannot run it (the call then takes the
  counted, warned CPU fallback), or None;
- :func:`equivalent`: a GPU body for a NumPy-only keyword that has one
  (``reshape(shape=, copy=)``, ``std/var(correction=)``, ``sum/prod/mean(where=,
  initial=)``), so those stay on the device;
- :func:`as_numpy_result`: the result in NumPy's form (namedtuples, 0-d copies).
"""
import functools
import warnings

import numpy
from numpy.lib import _arraysetops_impl as _sets
from numpy.linalg import _linalg

from .array import Array

__all__ = ["refusal", "dtype_only", "equivalent", "substitute", "as_numpy_result",
           "legacy_operands", "check_bounds"]

_ndarray = numpy.ndarray
_NO_VALUE = numpy._NoValue

# minpy's own forward bodies (not a backend function of that name): only dtypes matter
_OWN_FORWARDS = frozenset({"scatter_add", "index_update"})

# index tricks whose key CuPy may refuse (slices, string directives)
_INDEX_TRICKS = frozenset({"r_", "c_"})

# NumPy's namedtuple results (CuPy returns plain tuples)
_NAMED = {
    "linalg.eig": _linalg.EigResult, "linalg.eigh": _linalg.EighResult,
    "linalg.qr": _linalg.QRResult, "linalg.svd": _linalg.SVDResult,
    "linalg.slogdet": _linalg.SlogdetResult, "unique_all": _sets.UniqueAllResult,
    "unique_counts": _sets.UniqueCountsResult, "unique_inverse": _sets.UniqueInverseResult,
}


def refusal(gpu, prim, args, kwargs, leaves):
    """Why ``gpu`` cannot run ``prim(*args, **kwargs)`` (``leaves``: the arguments'
    tree leaves), or None. A keyword with a GPU :func:`equivalent` is no refusal."""
    dtypes = [a._data.dtype if type(a) is Array else a.dtype for a in leaves
              if type(a) is Array or type(a) is _ndarray]
    q = prim.qualname
    for dt in dtypes:
        if not gpu.holds(dt):
            return f"{gpu.name} cannot hold dtype {dt}"
    if q in _OWN_FORWARDS:
        return None
    check = _VALUE_CHECKS.get(q)
    if check is not None:
        r = check(gpu, args, kwargs)
        if r is not None:
            return r
    if kwargs and ("dtype" in kwargs or "casting" in kwargs) and isinstance(
            getattr(numpy, q.partition(".")[0], None), numpy.ufunc):
        r = _casting(gpu, q, kwargs, dtypes)
        if r is not None:
            return r
    if q.endswith(".outer") and len(dtypes) == 2:
        # CuPy's outer does not check its ufunc's loops as a call does
        r = gpu.refuses(q[:-len(".outer")], 2, {}, dtypes)
        if r is not None:
            return r
    if q in _INDEX_TRICKS:
        r = gpu.refuses_key(q, args[0])
        if r is not None:
            return r
    if q in _SUBSTITUTES and substitute(prim, kwargs, dtypes) is not None:
        return None
    reason = gpu.refuses(q, len(args), kwargs, dtypes)
    if reason is not None and kwargs:
        eq = _EQUIVALENTS.get(q)
        if eq is not None and gpu.refuses(q, len(args), _without(kwargs, eq[0]), dtypes) is None:
            return None
    return reason


def dtype_only(qualname):
    """True if :func:`refusal` of a ``qualname`` call without keywords depends only on
    the number of arguments and the dtypes of its array operands (so it may be kept):
    not for a call with a value check or an index trick's key."""
    return qualname not in _VALUE_CHECKS and qualname not in _INDEX_TRICKS


def _negative_somewhere(gpu, x, at_least=None):
    """True if operand ``x`` (a Python or NumPy scalar, an ndarray, an Array on any
    device) holds a negative value (with ``at_least``: a value ``>= at_least``); reads
    one bool back from the device."""
    if type(x) is Array:
        x = x._data
    host = type(x) is _ndarray or isinstance(x, (int, numpy.generic))
    if host or not hasattr(x, "dtype"):
        x = numpy.asarray(x)
        return bool(numpy.any(x < 0 if at_least is None else x >= at_least))
    xp = gpu.xp
    if at_least is not None and x.dtype.itemsize < 8:
        return False
    with gpu.device(gpu.device_id(x)):
        hit = xp.less(x, 0) if at_least is None else xp.greater_equal(
            x, x.dtype.type(at_least))
        return bool(gpu.to_host(xp.any(hit)))


def _kind(x):
    if type(x) is Array:
        return x._data.dtype.kind
    if type(x) is bool:
        return "b"
    if type(x) is int:
        return "i"
    dt = getattr(x, "dtype", None)
    return dt.kind if isinstance(dt, numpy.dtype) else None


def _int_power(gpu, args, kwargs):
    """NumPy raises ValueError on an integer ``power`` with a negative exponent;
    CuPy answers 0 there (a silent wrong answer): such a call runs on the host."""
    if len(args) < 2:
        return None
    x, y = args[0], args[1]
    if _kind(x) not in ("b", "i", "u") or _kind(y) != "i":
        return None
    try:
        loop = numpy.result_type(*(a._data.dtype if type(a) is Array else a for a in (x, y)))
    except (TypeError, ValueError, OverflowError):
        return None
    if loop.kind in "iu" and _negative_somewhere(gpu, y):
        return "integer power with a negative exponent (NumPy raises ValueError)"
    return None


def _arg(args, kwargs, pos, name, default=None):
    if len(args) > pos:
        return args[pos]
    return kwargs.get(name, default) if kwargs else default


def _axes(axis, ndim):
    """``axis`` (None, an int, a tuple of ints) as a tuple of axes in ``range(ndim)``, or
    None where NumPy would raise (out of range, repeated, not an int)."""
    if axis is None:
        return tuple(range(ndim))
    one = not isinstance(axis, tuple)
    out = []
    for ax in ((axis,) if one else axis):
        if not isinstance(ax, (int, numpy.integer)) or isinstance(ax, bool) \
                or not -ndim <= ax < max(ndim, 1):
            return None
        out.append(int(ax) % max(ndim, 1))
    return tuple(out) if len(set(out)) == len(out) else None


def _shift(gpu, args, kwargs):
    """NumPy shifts all bits out for a negative shift amount or one of the bit width or
    more; CUDA shifts by the amount's low 32 bits clamped to the width, which is wrong
    for a 64-bit amount below 0 or of 2**32 or more (a silent wrong answer): such a
    call runs on the host."""
    if len(args) < 2 or _kind(args[0]) not in ("b", "i", "u") or _kind(args[1]) not in (
            "b", "i", "u"):
        return None
    x, y = args[0], args[1]
    try:
        loop = numpy.result_type(*(a._data.dtype if type(a) is Array else a for a in (x, y)))
    except (TypeError, ValueError, OverflowError):
        return None
    if loop.kind not in "iu":
        return None
    if loop.itemsize == 8 and (_negative_somewhere(gpu, y) or _negative_somewhere(
            gpu, y, 2 ** 32)):
        return "a 64-bit shift amount below 0 or of 2**32 or more"
    return None


def _casting(gpu, q, kwargs, dtypes):
    """CuPy's ufuncs cast to ``dtype=`` whatever ``casting=`` says (NumPy raises
    UFuncTypeError where its casting rule forbids it), and take ``casting='no'``,
    ``'equiv'`` and ``'safe'`` as ``'same_kind'``: such calls run on the host."""
    casting = kwargs.get("casting", "same_kind")
    if casting not in ("same_kind", "unsafe"):
        return f"{q}(casting={casting!r}) (CuPy does not apply it)"
    dt = kwargs.get("dtype")
    if dt is None or casting == "unsafe":
        return None
    try:
        dt = numpy.dtype(dt)
    except TypeError:
        return None
    for d in dtypes:
        if not numpy.can_cast(d, dt, casting):
            return f"{q}: {d} to dtype={dt} breaks casting={casting!r} (NumPy raises)"
    return None


# NumPy reductions whose arguments CuPy checks otherwise (IndexError for AxisError, a
# tuple axis taken by argmax, no error on an empty min/max) or where its answer differs
# on some shapes and dtypes: name -> (position of axis, of keepdims, kind)
_REDUCTIONS = {
    **{q: (1, 5, "moment") for q in ("std", "var")},
    **{q: (1, 5, "nanmoment") for q in ("nanstd", "nanvar")},
    **{q: (1, 3, "extreme") for q in ("amin", "amax", "min", "max", "nanmin", "nanmax",
                                      "ptp")},
    **{q: (1, None, "argextreme") for q in ("argmax", "argmin", "nanargmax", "nanargmin")},
    **{q: (1, 4, "median") for q in ("median", "nanmedian")},
    **{q: (2, 6, "quantile") for q in ("percentile", "quantile", "nanpercentile",
                                       "nanquantile")},
}


def _reduction(name, gpu, args, kwargs):
    """Why CuPy's reduction would answer or fail otherwise than NumPy on these
    arguments (the host run then gives NumPy's answer or error), or None."""
    a = args[0] if args else None
    shape = a._data.shape if type(a) is Array else getattr(a, "shape", None)
    if shape is None or type(a) not in (Array, _ndarray):
        return None
    dt = a._data.dtype if type(a) is Array else a.dtype
    apos, kpos, kind = _REDUCTIONS[name]
    axis = _arg(args, kwargs, apos, "axis")
    if kind == "argextreme" and isinstance(axis, tuple):
        return "a tuple axis (NumPy raises TypeError)"
    axes = _axes(axis, len(shape))
    if axes is None:
        return f"axis {axis!r} invalid for {len(shape)}-d (NumPy raises AxisError)"
    n = 1
    for ax in axes:
        n *= shape[ax] if shape else 1
    if kind in ("extreme", "argextreme") and n == 0 and "initial" not in (kwargs or {}):
        return "an empty reduction with no identity (NumPy raises ValueError)"
    if kind == "nanmoment" and n <= _arg(args, kwargs, 4, "ddof", 0):
        return "no more values than ddof (CuPy answers 0, NumPy NaN)"
    if kind in ("median", "quantile"):
        if not shape and kpos is not None and _arg(args, kwargs, kpos, "keepdims", False):
            return "keepdims of a 0-d array (CuPy keeps one dimension)"
        if dt.kind == "c" and (kind == "quantile" or name == "nanmedian"):
            return f"complex operands ({name} of CuPy fails or differs)"
        if dt.kind == "b" and kind == "quantile":
            return "bool operands (NumPy raises TypeError)"
    return None


def _fft(name, gpu, args, kwargs):
    """Why CuPy's FFT ``name`` would fail otherwise than NumPy (cuFFT's CuFFTError, a
    RuntimeError, for an empty output; an answer where NumPy rejects the axes), or None."""
    a = args[0] if args else None
    if type(a) is not Array:
        return None
    shape = a._data.shape
    nd = len(shape)
    inverse_real = name in ("irfft", "hfft", "irfft2", "irfftn")
    if name[-1] not in "2n":
        n, axis = _arg(args, kwargs, 1, "n"), _arg(args, kwargs, 2, "axis", -1)
        sizes, axes = (None if n is None else (n,)), (axis,)
    else:
        sizes, axes = _arg(args, kwargs, 1, "s"), _arg(args, kwargs, 2, "axes")
        if axes is None:
            axes = (-2, -1) if name.endswith("2") else tuple(
                range(nd - (nd if sizes is None else len(sizes)), nd))
    try:
        axes = tuple(axes)
        sizes = None if sizes is None else tuple(sizes)
    except TypeError:
        return f"fft.{name}: axes or sizes not a sequence"
    if not axes or not all(isinstance(ax, (int, numpy.integer)) and -nd <= ax < nd
                           for ax in axes):
        return f"fft.{name}: axes {axes!r} invalid for {nd}-d (NumPy raises)"
    if sizes is not None:
        if len(sizes) != len(axes) or not all(
                isinstance(m, (int, numpy.integer)) and m >= 1 for m in sizes):
            return f"fft.{name}: invalid sizes {sizes!r} (NumPy raises ValueError)"
    elif inverse_real and 2 * (shape[axes[-1]] - 1) < 1:
        return f"fft.{name}: no output points (cuFFT raises CuFFTError, NumPy ValueError)"
    return None


_FFTS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
         "fftn", "ifftn", "rfftn", "irfftn")

def _cov(gpu, args, kwargs):
    if _arg(args, kwargs, 5, "fweights") is not None or \
            _arg(args, kwargs, 6, "aweights") is not None:
        # cupy/_statistics/correlation.py: X -= X.mean(axis=1)[:, None], not the weighted avg
        return "CuPy's cov centres weighted data on the unweighted mean"
    return None


def _intersect1d(gpu, args, kwargs):
    if _arg(args, kwargs, 2, "assume_unique", False):
        # CuPy binary-searches the unsorted second array and keeps the first one's order
        return "CuPy's intersect1d(assume_unique=True) neither sorts nor finds every match"
    return None


def _extremum_at(gpu, args, kwargs):
    a = args[0] if args else None
    dt = a._data.dtype if type(a) is Array else getattr(a, "dtype", None)
    if dt is not None and dt.kind in "fc":
        # CuPy's atomicMax/atomicMin on double call fmaxf/fminf: float32 rounding, NaN lost
        return "CuPy's maximum.at/minimum.at round floats to float32 and drop NaN"
    return None


def _reduceat(gpu, args, kwargs):
    dt = _arg(args, kwargs, 2, "dtype")
    a = args[0] if args else None
    have = a._data.dtype if type(a) is Array else getattr(a, "dtype", None)
    if dt is not None and (have is None or numpy.dtype(dt) != have):
        return "CuPy's reduceat(dtype=) mixes its input dtype into the result"
    if have is not None and have.kind in "fc":
        return "CuPy's add.reduceat of floats answers NaN where NumPy's sum is infinite"
    return None


def _operand_dtypes(args):
    for x in args:
        if type(x) in (list, tuple):
            yield from _operand_dtypes(x)
        elif type(x) is Array:
            yield x._data, x._data.dtype
        elif hasattr(x, "dtype") and hasattr(x, "shape"):
            yield x, x.dtype


def _integer_reciprocal(gpu, args, kwargs):
    if any(dt.kind in "iu" for _, dt in _operand_dtypes(args[:1])):
        # NumPy's is 1.0 / x converted back (the platform's conversion of inf at 0)
        return "integer reciprocal (NumPy converts 1.0 / x: INT_MIN at 0 on x86)"
    return None


def _half_nextafter(gpu, args, kwargs):
    if any(dt == numpy.float16 for _, dt in _operand_dtypes(args[:2])):
        return "float16 nextafter (CuPy answers NaN at infinities)"
    return None


def _complex_nonfinite(gpu, args, kwargs):
    """Complex products on a device (cuBLAS, parallel scans and trees) meet infinities in
    another order than NumPy's loops: NaN where NumPy answers an infinity. A complex
    operand holding an infinity or NaN runs on the host (reads one bool back each)."""
    ops = list(_operand_dtypes(args))
    if not any(dt.kind == "c" for _, dt in ops):
        return None
    for x, dt in ops:
        if dt.kind not in "fc" or not x.size:
            continue
        if type(x) is _ndarray or isinstance(x, numpy.generic):
            finite = bool(numpy.isfinite(x).all())
        else:
            with gpu.device(gpu.device_id(x)):
                finite = bool(gpu.to_host(gpu.xp.isfinite(x).all()))
        if not finite:
            return "a complex product over infinities or NaN (NumPy's order of operations)"
    return None


def _numpy_refuses_2d_cross():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # NumPy 2.0 - 2.4
        try:
            numpy.cross(numpy.zeros(2), numpy.zeros(2))
        except ValueError:
            return True
    return False


_CROSS_RAISES_2D = _numpy_refuses_2d_cross()      # NumPy >= 2.5


def _cross(gpu, args, kwargs):
    """NumPy 2.5 refuses 2-element vectors in ``cross`` (CuPy computes them): the host
    answers with NumPy's own error."""
    if not _CROSS_RAISES_2D or len(args) < 2:
        return None
    axis = (kwargs or {}).get("axis")
    axes = ((kwargs or {}).get("axisa", -1), (kwargs or {}).get("axisb", -1)) \
        if axis is None else (axis, axis)
    for x, ax in zip(args[:2], axes):
        shape = numpy.shape(x._data if type(x) is Array else x) if hasattr(x, "shape") else ()
        if shape and isinstance(ax, (int, numpy.integer)) and -len(shape) <= ax < len(shape) \
                and shape[ax] == 2:
            return "cross of 2-element vectors (NumPy raises ValueError since 2.5)"
    return None


# calls CuPy answers differently from NumPy for some operand values: qualname ->
# check(gpu, args, kwargs) -> reason or None (may read a reduction of the operands back)
_COMPLEX_PRODUCTS = ("matmul", "dot", "vdot", "inner", "tensordot", "einsum", "kron",
                     "linalg.matmul", "linalg.tensordot", "linalg.multi_dot", "prod",
                     "nanprod", "cumprod", "nancumprod", "cumulative_prod")

_VALUE_CHECKS = {"power": _int_power, "power.outer": _int_power,
                 "reciprocal": _integer_reciprocal, "nextafter": _half_nextafter,
                 **{q: _complex_nonfinite for q in _COMPLEX_PRODUCTS},
                 "right_shift": _shift, "left_shift": _shift,
                 "cov": _cov, "intersect1d": _intersect1d, "add.reduceat": _reduceat,
                 "cross": _cross, "linalg.cross": _cross,
                 **{f"{u}.at": _extremum_at for u in ("maximum", "minimum", "fmax", "fmin")},
                 **{q: functools.partial(_reduction, q) for q in _REDUCTIONS},
                 **{f"fft.{q}": functools.partial(_fft, q) for q in _FFTS}}


def _without(kwargs, names):
    return {k: v for k, v in kwargs.items() if k not in names}


def equivalent(prim, kwargs):
    """A ``body(xp, *args, **kwargs)`` for ``prim`` on the GPU when ``kwargs`` holds a
    NumPy-only keyword with a GPU equivalent, else None."""
    eq = _EQUIVALENTS.get(prim.qualname)
    if eq is None or not any(k in eq[0] for k in kwargs):
        return None
    return eq[1]


def substitute(prim, kwargs, dtypes=()):
    """A ``body(xp, *args, **kwargs)`` composed of CuPy functions for a NumPy function
    CuPy lacks (``unstack``, ``matvec``, ``vecmat``), when it handles ``kwargs`` (and
    operands of ``dtypes``); else None."""
    sub = _SUBSTITUTES.get(prim.qualname)
    if sub is None or (kwargs and not kwargs.keys() <= sub[0]):
        return None
    if prim.qualname in _REAL_ONLY and any(d.kind == "c" for d in dtypes):
        return None
    return sub[1]


def scalar_key(key):
    """True if ``x[key]`` of a 0-d result is a NumPy scalar (no Ellipsis: ``x[..., 0]``
    is a 0-d view in NumPy too)."""
    return key is not Ellipsis and not (type(key) is tuple and any(k is Ellipsis for k in key))


def as_numpy_result(prim, res, args):
    """``res`` of a GPU call in NumPy's form: NumPy's namedtuple types; a 0-d
    ``x[i]`` copied (CuPy returns a view, so a later write to ``x`` would show); the
    real ``linalg.cond`` of a complex matrix."""
    q = prim.qualname
    if isinstance(res, tuple):
        named = _NAMED.get(q)
        if named is not None and type(res) is not named and len(res) == len(named._fields):
            return named(*res)
        return res
    if q == "ndarray.__getitem__" and getattr(res, "ndim", None) == 0 and scalar_key(args[1]):
        return res.copy()
    if q == "linalg.cond" and res.dtype.kind == "c":
        # CuPy's cond of a complex matrix by the 1, inf or Frobenius norm is complex (a
        # product of two real norms): NumPy's is real
        return res.real.copy()
    return res


def legacy_operands(backend, args, nin, device_id):
    """The first ``nin`` ufunc operands with NumPy scalars made 0-d device arrays, for a
    backend that promotes scalars by value (CuPy 13: ``f32 * numpy.float64(2)`` would be
    float32; NumPy 2 says float64, as for any array)."""
    if not any(isinstance(a, numpy.generic) for a in args[:nin]):
        return args
    return [backend.asarray(a, device_id) if i < nin and isinstance(a, numpy.generic) else a
            for i, a in enumerate(args)]


# ------------------------------------------------------------ index bounds
def _key_axes(ndim, key):
    """(item, axis) of each item of an indexing ``key`` that is an integer array or list."""
    items = key if type(key) is tuple else (key,)

    def width(i):
        if i is None or i is Ellipsis:
            return 0
        dt = getattr(i, "dtype", None)
        return i.ndim if dt is not None and dt == bool else 1
    used = sum(map(width, items))
    axis, out = 0, []
    for i in items:
        if i is Ellipsis:
            axis += ndim - used
            continue
        w = width(i)
        if w == 1 and (type(i) is list or getattr(getattr(i, "dtype", None), "kind", "") in "iu"
                       and getattr(i, "ndim", 0) > 0):
            out.append((i, axis))
        axis += w
    return out


def _host_ints(seq):
    return all(type(e) is int or (type(e) is list and _host_ints(e)) for e in seq)


def _out_of_bounds(backend, idx, n):
    if type(idx) is list and not _host_ints(idx):
        if not all(type(e) is int or (backend.owns(e) and e.ndim == 0 and e.dtype.kind in "iu")
                   for e in idx):
            return False        # bools, slices, nested lists: CuPy's own checks
        xp = backend.xp         # device integer scalars (argmax results ...): on the device
        idx = xp.stack([xp.asarray(e) if backend.owns(e) else xp.asarray(e, dtype=numpy.intp)
                        for e in idx])
    if type(idx) is list or type(idx) is _ndarray:
        h = numpy.asarray(idx)
        return h.size and h.dtype.kind in "iu" and bool(((h < -n) | (h >= n)).any())
    xp = backend.xp
    return bool(backend.to_host(xp.any(xp.logical_or(idx < -n, idx >= n))))


def check_bounds(backend, prim, args, kwargs):
    """Raise NumPy's IndexError for an out-of-range integer-array index on the GPU:
    CuPy's fancy indexing and ``take`` wrap such indices around silently. (One
    device -> host sync per integer-array index.)"""
    q = prim.qualname
    if q == "take":
        mode = args[4] if len(args) > 4 else (kwargs.get("mode", "raise") if kwargs else "raise")
        if len(args) < 2 or mode != "raise":
            return
        a, idx = args[0], args[1]
        axis = args[2] if len(args) > 2 else (kwargs.get("axis") if kwargs else None)
        checks = [(idx, None if axis is None else axis)]
    else:
        a = args[0]
        checks = _key_axes(a.ndim, args[1])
    for idx, axis in checks:
        n = a.size if axis is None else a.shape[axis]
        if _out_of_bounds(backend, idx, n):
            where = "" if axis is None else f" for axis {axis}"
            raise IndexError(f"{q}: index out of bounds{where} with size {n}")


# ------------------------------------------------------------ GPU equivalents
def _root(a):
    return a if a.base is None else a.base


def _reshape(xp, a, /, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        if newshape is None:
            raise TypeError("reshape() missing required argument 'shape' (pos 2)")
        shape = newshape
    r = xp.reshape(a, shape, order=order)
    if copy:
        return r.copy()
    if copy is False and r.size and _root(r) is not _root(a):
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    return r


def _cholesky(xp, a, /, *, upper=False):
    if not upper:
        return xp.linalg.cholesky(a)
    # NumPy's upper form reads a's upper triangle: the lower one of a^H
    return xp.conj(xp.swapaxes(xp.linalg.cholesky(xp.conj(xp.swapaxes(a, -1, -2))), -1, -2))


def _hermitian_from_lower(xp, a):
    """The Hermitian matrix NumPy's ``hermitian=True`` routes see (eigh: the lower
    triangle, the diagonal's real part)."""
    low = xp.tril(a, -1)
    d = xp.real(xp.diagonal(a, 0, -2, -1))
    eye = xp.eye(a.shape[-1], dtype=d.dtype)
    return low + xp.conj(xp.swapaxes(low, -1, -2)) + eye * d[..., None, :]


def _hermitian(name):
    def body(xp, a, *args, hermitian=False, **kwargs):
        if hermitian:
            a = _hermitian_from_lower(xp, a)
        return getattr(xp.linalg, name)(a, *args, **kwargs)
    return body


def _moment(name):
    def body(xp, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
             correction=_NO_VALUE, **kw):
        if correction is not _NO_VALUE:
            if ddof != 0:
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        return getattr(xp, name)(a, axis=axis, dtype=dtype, out=out, ddof=ddof,
                                 keepdims=keepdims, **kw)
    return body


def _masked(xp, a, where, fill):
    if where is _NO_VALUE or where is True:
        return a
    if not hasattr(where, "dtype"):         # a Python list or bool: CuPy takes arrays only
        where = xp.asarray(where)
    return xp.where(where, a, xp.full((), fill, dtype=a.dtype))


def _reduce(name, fill, combine):
    def body(xp, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
             where=_NO_VALUE):
        r = getattr(xp, name)(_masked(xp, a, where, fill), axis=axis, dtype=dtype,
                              keepdims=keepdims)
        if initial is not _NO_VALUE:
            r = combine(r, xp.asarray(initial, dtype=r.dtype)).astype(r.dtype, copy=False)
        if out is not None:
            out[...] = r
            return out
        return r
    return body


def _mean(xp, a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NO_VALUE):
    if where is _NO_VALUE or where is True:
        r = xp.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    else:
        if dtype is not None:
            acc = numpy.dtype(dtype)
        elif a.dtype.kind in "biu":
            acc = numpy.dtype(numpy.float64)
        elif a.dtype == numpy.float16:
            acc = numpy.dtype(numpy.float32)
        else:
            acc = a.dtype
        s = xp.sum(_masked(xp, a, where, 0), axis=axis, dtype=acc, keepdims=keepdims)
        n = xp.sum(xp.broadcast_to(xp.asarray(where), a.shape), axis=axis, keepdims=keepdims)
        r = s / n.astype(s.dtype)
        if dtype is None and a.dtype == numpy.float16:
            r = r.astype(numpy.float16)
    if out is not None:
        out[...] = r
        return out
    return r


def _take(xp, a, indices, axis=None, out=None, mode="raise"):
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"take: mode must be one of 'raise', 'wrap' or 'clip', got {mode!r}")
    n = a.size if axis is None else a.shape[axis]
    if mode != "raise" and n:
        idx = xp.asarray(indices)
        indices = idx % n if mode == "wrap" else xp.clip(idx, 0, n - 1)
    return xp.take(a, indices, axis=axis, out=out)


# qualname -> (the NumPy-only keywords it handles, body(xp, *args, **kwargs))
_EQUIVALENTS = {
    "reshape": (frozenset({"shape", "copy"}), _reshape),
    "std": (frozenset({"correction"}), _moment("std")),
    "var": (frozenset({"correction"}), _moment("var")),
    "sum": (frozenset({"where", "initial"}), _reduce("sum", 0, lambda r, i: r + i)),
    "prod": (frozenset({"where", "initial"}), _reduce("prod", 1, lambda r, i: r * i)),
    "mean": (frozenset({"where"}), _mean),
    "take": (frozenset({"mode"}), _take),
    "linalg.cholesky": (frozenset({"upper"}), _cholesky),
    "linalg.pinv": (frozenset({"hermitian"}), _hermitian("pinv")),
    "linalg.matrix_rank": (frozenset({"hermitian"}), _hermitian("matrix_rank")),
}


def _unstack(xp, x, /, *, axis=0):
    m = xp.moveaxis(x, axis, 0)
    return tuple(m[i] for i in range(m.shape[0]))


def _matvec(xp, x1, x2, /):
    if x1.ndim < 2 or x2.ndim < 1 or x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"matvec: mismatch in its core dimension: shapes {x1.shape} and "
                         f"{x2.shape} (expected (..., n, k) and (..., k))")
    return xp.matmul(x1, x2[..., None])[..., 0]


def _vecmat(xp, x1, x2, /):
    if x1.ndim < 1 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-2]:
        raise ValueError(f"vecmat: mismatch in its core dimension: shapes {x1.shape} and "
                         f"{x2.shape} (expected (..., k) and (..., k, n))")
    c1 = xp.conj(x1) if x1.dtype.kind == "c" else x1      # (CuPy's conj of bool is int8)
    return xp.matmul(c1[..., None, :], x2)[..., 0, :]


def _vecdot(xp, x1, x2, /, *, axis=-1):
    # (NumPy's axis names the core dimension in each operand's own axes)
    a, b = xp.moveaxis(x1, axis, -1), xp.moveaxis(x2, axis, -1)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"vecdot: mismatch in its core dimension: shapes {x1.shape} and "
                         f"{x2.shape} along axis {axis}")
    prod = (xp.conj(a) if a.dtype.kind == "c" else a) * b
    if prod.dtype == bool:
        return xp.any(prod, axis=-1)
    return xp.sum(prod, axis=-1, dtype=prod.dtype)


def _outer(xp, x1, x2, /):
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are {x1.ndim=} "
                         f"and {x2.ndim=}.")
    return xp.outer(x1, x2)


def _vector_norm(xp, x, /, *, axis=None, keepdims=False, ord=2):
    axes = tuple(range(x.ndim)) if axis is None else \
        tuple(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    rest = [a for a in range(x.ndim) if a not in axes]
    y = xp.transpose(x, rest + list(axes)).reshape(
        tuple(x.shape[a] for a in rest) + (-1 if x.size else 0,))
    r = xp.linalg.norm(y, ord=ord, axis=-1)
    if keepdims:
        r = r.reshape(tuple(1 if a in axes else n for a, n in enumerate(x.shape)))
    return r


def _multi_dot(xp, arrays, *, out=None):
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    r = arrays[0]
    for a in arrays[1:]:
        r = xp.matmul(r, a)
    if out is not None:
        out[...] = r
        return out
    return r


# substitutes whose complex answers differ from NumPy's at infinities (its gufunc loops
# accumulate otherwise): complex operands take the CPU fallback
_REAL_ONLY = frozenset({"vecdot", "linalg.vecdot", "matvec", "vecmat"})

# NumPy functions CuPy lacks -> (the keywords handled, a body of CuPy calls)
_SUBSTITUTES = {
    "unstack": (frozenset({"axis"}), _unstack),
    "matvec": (frozenset(), _matvec),
    "vecmat": (frozenset(), _vecmat),
    "vecdot": (frozenset({"axis"}), _vecdot),
    "linalg.vecdot": (frozenset({"axis"}), _vecdot),
    "linalg.outer": (frozenset(), _outer),
    "linalg.diagonal": (frozenset({"offset"}),
                        lambda xp, x, /, *, offset=0: xp.diagonal(x, offset, -2, -1)),
    "linalg.trace": (frozenset({"offset", "dtype"}), lambda xp, x, /, *, offset=0, dtype=None:
                     xp.trace(x, offset, -2, -1, dtype)),
    "linalg.tensordot": (frozenset({"axes"}),
                         lambda xp, x1, x2, /, *, axes=2: xp.tensordot(x1, x2, axes)),
    "linalg.svdvals": (frozenset(), lambda xp, x, /: xp.linalg.svd(x, compute_uv=False)),
    "linalg.matrix_norm": (frozenset({"keepdims", "ord"}),
                           lambda xp, x, /, *, keepdims=False, ord="fro": xp.linalg.norm(
                               x, ord=ord, axis=(-2, -1), keepdims=keepdims)),
    "linalg.vector_norm": (frozenset({"axis", "keepdims", "ord"}), _vector_norm),
    "linalg.multi_dot": (frozenset({"out"}), _multi_dot),
}
