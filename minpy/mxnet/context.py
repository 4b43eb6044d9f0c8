"""``mx.context``: minpy's devices under MXNet's names (``Context``, ``cpu``, ``gpu``,
``current_context``, ``num_gpus``) -- the objects of :mod:`minpy.dispatch.context`.

``with mx.gpu(0):`` makes the GPU current, as MXNet's ``with`` does. See also
mxnet.context.
"""
from ..dispatch.context import Context, cpu, current_context, gpu, num_gpus

__all__ = ["Context", "cpu", "gpu", "current_context", "num_gpus", "cpu_pinned"]


def cpu_pinned(device_id=0):
    """MXNet's pinned host memory: minpy's host context (its transfers pin as needed).

    See also mxnet.context.cpu_pinned.
    """
    return cpu(device_id)
