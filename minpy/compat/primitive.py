"""MinPy's ``minpy.primitive``: ``@customop('numpy')`` / ``@customop('mxnet')`` with
``.def_grad`` (see :func:`customop`)."""
import functools

from .. import numpy as mnp
from ..core.array import Array
from ..core.custom_ops import customop as _core_customop
from .core import minpy_to_numpy

__all__ = ["customop"]


class _HostCustomOp(_core_customop):
    """A customop whose forward and gradient functions see host NumPy arrays."""

    def def_grad(self, maker, argnum=0):
        """Register ``maker(ans, *args) -> (lambda g: grad)``, all NumPy arrays."""
        @functools.wraps(maker)
        def on_host(ans, *args, **kwargs):
            g_fn = maker(minpy_to_numpy(ans), *minpy_to_numpy(args), **minpy_to_numpy(kwargs))
            return lambda g: _result_to_minpy(g_fn(minpy_to_numpy(g)))
        super().def_grad(on_host, argnum)
        return maker


def _result_to_minpy(r):
    if isinstance(r, tuple):
        return tuple(_result_to_minpy(e) for e in r)
    return r if r is None or type(r) is Array else mnp.asarray(r)


def customop(op_type):
    """MinPy's ``@customop('numpy')`` / ``@customop('mxnet')``; also ``@customop`` bare.

    ``'numpy'``: the function and its gradient (``.def_grad(maker, argnum=0)``)
    receive host NumPy arrays and may return NumPy arrays or scalars (they run
    on the CPU). ``'mxnet'``: they receive minpy Arrays on the array's device
    (MinPy's MXNet arrays are minpy's GPU arrays). See also minpy.customop.
    """
    if callable(op_type):
        return _core_customop(op_type)
    if op_type == "mxnet":
        return _core_customop
    if op_type != "numpy":
        raise ValueError(f"customop: op_type must be 'numpy' or 'mxnet', got {op_type!r}")

    def decorate(fn):
        @functools.wraps(fn)
        def on_host(*args, **kwargs):
            return _result_to_minpy(fn(*minpy_to_numpy(args), **minpy_to_numpy(kwargs)))
        return _HostCustomOp(on_host)
    return decorate
