"""MXNet 1.9.1's NDArray creation functions over minpy Arrays: float32 unless a
``dtype`` is given, placed on ``ctx`` (a minpy Context; default the current one)."""
import numpy

from ...core.array import Array, new, wait
from ...dispatch.context import current_context
from ...dispatch.transfer import move_raw

__all__ = ["array", "zeros", "ones", "empty", "full", "arange", "zeros_like", "ones_like",
           "full_like", "eye", "linspace"]


def _place(host, ctx):
    """Host ndarray ``host`` as an Array on ``ctx`` (default: the current context)."""
    ctx = current_context() if ctx is None else ctx
    if ctx.device_type == "cpu":
        return new(host)
    return new(move_raw(host, ctx))


def _dtype(dtype, default=numpy.float32):
    return numpy.dtype(default if dtype is None else dtype)


def _shape(shape):
    return (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(shape)


def array(source_array, ctx=None, dtype=None):
    """An NDArray copied from ``source_array``: an NDArray keeps its dtype, anything else
    (lists, NumPy arrays of any dtype) becomes float32 unless ``dtype`` is given, as in
    MXNet. See also mxnet.ndarray.array."""
    if isinstance(source_array, Array):
        wait(source_array)
        host = source_array.asnumpy()
        dt = source_array.dtype if dtype is None else numpy.dtype(dtype)
        if ctx is None:
            ctx = source_array.context
    else:
        host = numpy.asarray(source_array)
        dt = _dtype(dtype)
    return _place(numpy.array(host, dtype=dt, copy=True), ctx)


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """An NDArray of zeros (float32 by default). See also mxnet.ndarray.zeros."""
    _no_stype(kwargs, "zeros")
    return _place(numpy.zeros(_shape(shape), _dtype(dtype)), ctx)


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An NDArray of ones (float32 by default). See also mxnet.ndarray.ones."""
    _no_stype(kwargs, "ones")
    return _place(numpy.ones(_shape(shape), _dtype(dtype)), ctx)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An uninitialized NDArray (float32 by default). See also mxnet.ndarray.empty."""
    _no_stype({"stype": stype}, "empty")
    return _place(numpy.empty(_shape(shape), _dtype(dtype)), ctx)


def full(shape, val, ctx=None, dtype=numpy.float32, out=None):
    """An NDArray filled with ``val`` (float32 by default); ``out``: fill that NDArray
    instead. See also mxnet.ndarray.full."""
    if out is not None:
        out[...] = val
        return out
    return _place(numpy.full(_shape(shape), val, _dtype(dtype)), ctx)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None,
           dtype=numpy.float32):
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times (float32 by
    default). See also mxnet.ndarray.arange."""
    if infer_range is not None:
        raise ValueError("mx.nd.arange: infer_range is deprecated in MXNet 1.9.1 and has "
                         "no effect on imperative calls; leave it None")
    if int(repeat) < 1:
        raise ValueError(f"mx.nd.arange: repeat must be >= 1, got {repeat}")
    vals = numpy.arange(start, stop, step, dtype=numpy.float64)
    vals = numpy.repeat(vals, int(repeat))
    return _place(vals.astype(_dtype(dtype)), ctx)


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """A 2-d NDArray with ones on diagonal ``k`` (``M=0``: square; float32 by default).
    See also mxnet.ndarray.eye."""
    _no_stype(kwargs, "eye")
    return _place(numpy.eye(int(N), int(M) or None, int(k), dtype=_dtype(dtype)), ctx)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=numpy.float32):
    """``num`` evenly spaced values from ``start`` to ``stop`` (float32 by default).
    See also mxnet.ndarray.linspace."""
    return _place(numpy.linspace(start, stop, int(num), endpoint=endpoint)
                  .astype(_dtype(dtype)), ctx)


def zeros_like(data, **kwargs):
    """Zeros of ``data``'s shape, dtype and context. See also mxnet.ndarray.zeros_like."""
    _no_kwargs(kwargs, "zeros_like")
    return _place(numpy.zeros(data.shape, data.dtype), data.context)


def ones_like(data, **kwargs):
    """Ones of ``data``'s shape, dtype and context. See also mxnet.ndarray.ones_like."""
    _no_kwargs(kwargs, "ones_like")
    return _place(numpy.ones(data.shape, data.dtype), data.context)


def full_like(data, fill_value, dtype=None, ctx=None):
    """``fill_value`` in ``data``'s shape (its dtype and context unless given); MXNet
    1.9.1's ``mx.np.full_like`` under the ``nd`` name. See also numpy.full_like."""
    return _place(numpy.full(data.shape, fill_value, data.dtype if dtype is None else dtype),
                  data.context if ctx is None else ctx)


def _no_stype(kwargs, func):
    stype = kwargs.pop("stype", None)
    if stype not in (None, "default"):
        raise ValueError(f"mx.nd.{func}: stype={stype!r}: minpy has dense NDArrays only")
    _no_kwargs(kwargs, func)


def _no_kwargs(kwargs, func):
    kwargs.pop("out", None) if kwargs.get("out") is None else None
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"mx.nd.{func}: unexpected keyword argument(s) {sorted(kwargs)}")
