"""``mx.nd.random``: MXNet 1.9.1's samplers over minpy Arrays.

Every draw comes from NumPy's legacy global random state (on the host, then placed on
``ctx``), which ``minpy.random.seed`` (and ``mx.random.seed``) seeds: one seed, one
sequence of samples. The numbers differ from MXNet's own generators'; the
distributions, shapes, dtypes (float32 unless given) and argument conventions are
MXNet's. In async mode (``minpy.set_async(True)``) a draw with number parameters on
the CPU is queued on the engine as MXNet's was, writing its output and the random
state's Var (``minpy.engine.GLOBAL_STATE``, MXNet's random resource): the draws run
one at a time, in program order, so a seed gives the same numbers as without async
mode; the other draws wait for the queued ones first.
"""
import numbers

import numpy

from ... import engine
from ...core import async_work
from ...core.array import Array, new
from ...dispatch import state as _state
from ...dispatch.context import current_context
from .creation import _place

_process = _state.process

__all__ = ["uniform", "normal", "randn", "randint", "exponential", "gamma", "poisson",
           "shuffle", "multinomial"]


def _shape(shape):
    if shape is None:
        return ()
    return (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(shape)


def _param(v):
    return v.asnumpy().astype(numpy.float64) if isinstance(v, Array) else v


def _state_ready():
    """In async mode, wait for the draws queued on the engine (``engine.GLOBAL_STATE``)
    before drawing here, so that numbers follow program order."""
    if _process.async_on:
        engine.wait_for(engine.GLOBAL_STATE, reraise=False)


def _sample(func, draw, params, shape, dtype, ctx, out):
    """Draw with ``draw(*params, size)``. Scalar parameters: ``shape`` (default (1,), as
    MXNet); NDArray parameters (all of one shape): ``params.shape + shape``."""
    for p in params:
        if not isinstance(p, (Array, numbers.Real)) or isinstance(p, bool):
            raise TypeError(f"mx.nd.random.{func}: distribution parameters must be numbers or "
                            f"NDArrays, got {p!r} (MXNet's order puts shape after them)")
    arrays = [p for p in params if isinstance(p, Array)]
    shape = _shape(shape)
    if arrays:
        if len(arrays) != len(params) or len({tuple(a.shape) for a in arrays}) != 1:
            raise ValueError(f"mx.nd.random.{func}: parameters must be all numbers or all "
                             "NDArrays of one shape")
        pshape = tuple(arrays[0].shape)
        vals = [_param(p).reshape(pshape + (1,) * len(shape)) for p in params]
        size = pshape + shape
        ctx = arrays[0].context if ctx is None else ctx
        dtype = arrays[0].dtype if dtype is None else dtype
    else:
        vals, size = params, shape or (1,)
    if out is not None:
        size = tuple(out.shape)
    dtype = numpy.dtype(dtype or numpy.float32)
    if out is None and not arrays and _process.async_on and \
            (ctx or current_context()).device_type == "cpu":
        # MXNet's engine: the draw is queued, writing its output and the random state
        # (the random resource), so draws run one at a time in program order
        buf = numpy.empty(size, dtype)
        res = new(buf)

        def run():
            buf[...] = draw(*vals, size=size)
        async_work.push(run, writes=[res], name=f"mx.nd.random.{func}",
                        resources=(engine.GLOBAL_STATE,), nbytes=buf.nbytes)
        return res
    _state_ready()
    host = numpy.asarray(draw(*vals, size=size)).astype(dtype)
    if out is not None:
        out[...] = host
        return out
    return _place(host, ctx)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples of U[low, high) (float32 by default). See also mxnet.ndarray.random.uniform."""
    _no_kwargs(kwargs, "uniform")
    return _sample("uniform", numpy.random.uniform, (low, high), shape, dtype, ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples of N(loc, scale**2) (float32 by default). See also
    mxnet.ndarray.random.normal."""
    _no_kwargs(kwargs, "normal")
    return _sample("normal", numpy.random.normal, (loc, scale), shape, dtype, ctx, out)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, out=None, **kwargs):
    """Normal samples of the shape given positionally. See also
    mxnet.ndarray.random.randn."""
    _no_kwargs(kwargs, "randn")
    return normal(loc, scale, shape or None, dtype, ctx, out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers drawn uniformly from [low, high) (int32 by default). See also
    mxnet.ndarray.random.randint."""
    _no_kwargs(kwargs, "randint")
    if isinstance(low, Array) or isinstance(high, Array):
        raise TypeError("mx.nd.random.randint: low and high must be integers")
    dtype = numpy.dtype(dtype or numpy.int32)
    if dtype.kind not in "iu":
        raise ValueError(f"mx.nd.random.randint: dtype must be an integer type, got {dtype}")
    return _sample("randint", numpy.random.randint, (int(low), int(high)), shape, dtype, ctx,
                   out)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples of the exponential distribution of mean ``scale``. See also
    mxnet.ndarray.random.exponential."""
    _no_kwargs(kwargs, "exponential")
    return _sample("exponential", numpy.random.exponential, (scale,), shape, dtype, ctx, out)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples of Gamma(shape ``alpha``, scale ``beta``). See also
    mxnet.ndarray.random.gamma."""
    _no_kwargs(kwargs, "gamma")
    return _sample("gamma", numpy.random.gamma, (alpha, beta), shape, dtype, ctx, out)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Poisson samples (float32 by default, as MXNet's). See also
    mxnet.ndarray.random.poisson."""
    _no_kwargs(kwargs, "poisson")
    return _sample("poisson", numpy.random.poisson, (lam,), shape, dtype, ctx, out)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its rows (first axis) in random order. See also
    mxnet.ndarray.random.shuffle."""
    out = kwargs.pop("out", None)
    _no_kwargs(kwargs, "shuffle")
    host = data.asnumpy()
    _state_ready()
    numpy.random.shuffle(host)
    if out is not None:
        out[...] = host
        return out
    return _place(host, data.context)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category indices drawn from the probabilities in the last axis of ``data``: shape
    ``data.shape[:-1] + shape``; ``get_prob``: also the log-probabilities of the draws
    (a list [samples, log_probs]). See also mxnet.ndarray.random.multinomial."""
    _no_kwargs(kwargs, "multinomial")
    p = data.asnumpy().astype(numpy.float64)
    shape = _shape(shape)
    lead = p.shape[:-1]
    flat = p.reshape(-1, p.shape[-1])
    n = int(numpy.prod(shape)) if shape else 1
    cdf = numpy.cumsum(flat, axis=1)
    _state_ready()
    u = numpy.random.random_sample((flat.shape[0], n)) * cdf[:, -1:]
    idx = numpy.stack([numpy.searchsorted(cdf[i], u[i], side="right")
                       for i in range(flat.shape[0])])
    idx = numpy.minimum(idx, p.shape[-1] - 1).reshape(lead + shape or (1,))
    samples = _place(idx.astype(numpy.dtype(dtype)), data.context)
    if out is not None:
        out[...] = samples
        samples = out
    if not get_prob:
        return samples
    logp = numpy.log(numpy.take_along_axis(flat, idx.reshape(flat.shape[0], n), axis=1))
    return [samples, _place(logp.reshape(lead + shape or (1,)).astype(data.dtype), data.context)]


def _no_kwargs(kwargs, func):
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"mx.nd.random.{func}: unexpected keyword argument(s) {sorted(kwargs)}")
