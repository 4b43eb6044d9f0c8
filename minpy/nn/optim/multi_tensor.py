"""``minpy.nn.optim.multi_tensor``: the fused kernels of :mod:`minpy.kernels.optim` on many
tensors, and the global norm of many gradients.

:func:`run_plan` updates all the C-contiguous float32/float64 host buffers that
share a hyper vector with one numba call (a :class:`~minpy.kernels.optim.NumbaPlan`
over their buffers, cached by the caller); :func:`run_one` updates one other buffer
with a CuPy kernel (GPU arrays) or NumPy/CuPy ufuncs with ``out=`` into scratch
buffers.
"""
import numpy

from ...dispatch.backend import backend_of
from ...dispatch.transfer import context_of
from ...kernels import optim as fused

__all__ = ["numba_on", "numba_fits", "run_plan", "run_one", "norm_scale"]

_NUMBA_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def numba_on(backend):
    """Whether an optimizer with ``backend`` (``'auto'``, ``'numba'``, ``'numpy'``)
    runs the numba kernel where a buffer fits it."""
    return backend != "numpy" and (backend == "numba" or fused.numba_available())


def numba_fits(w):
    """Whether buffer ``w`` can go to the numba kernel: a C-contiguous float32 or
    float64 numpy array."""
    return type(w) is numpy.ndarray and w.dtype in _NUMBA_DTYPES and w.flags.c_contiguous


def run_plan(plans, kind, dtype, names, weights, grads, states, h):
    """One numba call updating ``weights`` (buffers that :func:`numba_fits`, of one
    ``dtype``) in place with ``grads``, their ``states`` (a tuple each) and hyper
    vector ``h``. ``plans`` (dict ``(dtype, names) -> NumbaPlan``, kept by the caller)
    caches the plan; one whose buffers changed is rebuilt."""
    key = (dtype, tuple(names))
    plan = plans.get(key)
    if plan is None or not plan.matches(weights):
        if len(plans) > 8:          # parameter sets that changed: forget them
            plans.clear()
        plan = plans[key] = fused.NumbaPlan(weights, states)
    plan.run(kind, [numpy.ascontiguousarray(g) for g in grads], h)


def run_one(kind, w, g, states, h, backend, scratch):
    """Update buffer ``w`` in place: the CuPy kernel for a GPU array (unless
    ``backend == 'numpy'``), else ufuncs with ``out=`` into two scratch buffers
    from ``scratch`` (dict ``(context, dtype) -> buffers``, kept by the caller)."""
    s = list(states) + [None, None]
    b = backend_of(w)
    with b.device(context_of(w).device_id):
        if b.name == "cupy" and backend != "numpy":
            fused.step_cupy(kind, w, g, s[0], s[1], h)
        else:
            fused.step_numpy(b.xp, kind, w, g, s[0], s[1], h, _scratch_for(scratch, b, w))


def _scratch_for(scratch, b, w):
    key = (context_of(w), w.dtype.str)
    bufs = scratch.get(key)
    if bufs is None or bufs[0].size < w.size:
        bufs = scratch[key] = tuple(b.xp.empty(w.size, w.dtype) for _ in range(2))
    return tuple(b.xp.reshape(x[:w.size], w.shape) for x in bufs)


def norm_scale(grads, max_norm):
    """The factor that brings the global L2 norm of ``grads`` (backend arrays, summed
    in float64) down to ``max_norm``: ``max_norm / (norm + 1e-6)``, or 1.0 when the
    norm is within it."""
    total = 0.0
    for g in grads:
        b = backend_of(g)
        with b.device(context_of(g).device_id):
            sq = b.xp.sum(b.xp.square(g, dtype=numpy.float64))
        total += float(b.to_host(sq))
    norm = total ** 0.5
    return max_norm / (norm + 1e-6) if norm > max_norm else 1.0
