"""Helpers shared by the MXNet-compatibility operators (``ops_mxnet*.py``):
backward ops computed directly from arrays, parameter parsers for MXNet's
optional tuples and dtypes, axis checks, and ``erf``.

Most operators added for MXNet's JSON files differentiate through one
``_backward_*`` node computed from arrays (as MXNet does) rather than
through a composition of graph nodes: ``backward_op`` registers it and
``grad_by`` builds the ``gradient`` function that creates it.
"""
import math

import numpy

from ..registry import (Mismatch, OpDef, Shape, _literal, bwd_shape, grad_type, make_node,
                       register)

__all__ = ["backward_op", "grad_by", "op_with_backward", "OptShape", "ShapeOrNone", "DType",
           "OptDType", "OptChoice", "norm_axis", "erf", "zero_grad", "check_kernel_groups"]


def check_kernel_groups(attrs):
    """A convolution-like op's kernel rank (1 or 2) and ``num_filter % num_group``;
    returns the rank. Raises Mismatch."""
    nk, f, g = len(attrs["kernel"]), attrs["num_filter"], attrs["num_group"]
    if nk not in (1, 2):
        raise Mismatch(f"only 1-d and 2-d kernels are supported, got kernel={attrs['kernel']}")
    if f % g:
        raise Mismatch(f"num_filter={f} is not divisible by num_group={g}")
    return nk


def backward_op(name, params, arguments, outputs, forward, doc):
    """Register backward op ``name`` (``params``: its forward op's, which it gets):
    its inputs are ``arguments`` (head gradient first), its outputs the gradients
    of the forward node's arguments ``outputs``."""
    return register(OpDef(name, params=params, arguments=arguments, outputs=outputs,
                          forward=forward, infer_shape=bwd_shape, infer_type=grad_type,
                          is_backward=True, doc=doc))


def grad_by(name, inputs, skip=()):
    """A ``gradient`` function making one node of backward op ``name``.

    ``inputs`` lists what it reads after the head gradient: ``("in", k)`` the
    forward node's input ``k``, ``("out", k)`` its output ``k``; ``skip``:
    argument positions that get no gradient (integer indices, lengths).
    """
    def gradient(node, og):
        ins = [og[0]] + [node.inputs[k] if kind == "in" else (node, k) for kind, k in inputs]
        b = make_node(name, ins, node.attrs, fwd=node)
        return [None if i in skip else (b, i) for i in range(node.num_args)]
    return gradient


def op_with_backward(name, params, shape, forward, bwd_forward, bwd_inputs, doc,
                     arguments=("data",), skip=(), infer_type=None, inplace=()):
    """Register op ``name`` and its ``_backward_<name>``, which reads the head
    gradient and ``bwd_inputs`` (see ``grad_by``) and gets ``params`` too."""
    bname = f"_backward_{name}"
    backward_op(bname, params, ["out_grad"] + [f"{k}{i}" for k, i in bwd_inputs], arguments,
                bwd_forward, doc=f"Gradient of {name}.")
    return register(OpDef(name, params=params, arguments=arguments, forward=forward,
                          infer_shape=shape, infer_type=infer_type,
                          gradient=grad_by(bname, bwd_inputs, skip), inplace=inplace, doc=doc))


def zero_grad(node, og):
    """The gradient of a piecewise-constant op: none (zero) for every argument."""
    return [None] * node.num_args


# ------------------------------------------------------------------ params
def OptShape(v):
    """Parse a tuple of optional ints: ``'(None, 1)'``, ``[0, None]``, ``2``."""
    v = _literal(v)
    if v is None:
        return ()
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,)
    if isinstance(v, (tuple, list)) and all(d is None or (isinstance(d, int) and
                                                          not isinstance(d, bool)) for d in v):
        return tuple(v)
    raise ValueError(f"expected a tuple of ints or None, got {v!r}")


def ShapeOrNone(v):
    """Parse MXNet's ``Shape or None``: None (or ``'None'``) or a tuple of ints."""
    v = _literal(v)
    return None if v is None else Shape(v)


_DTYPES = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool")


def DType(v):
    """Parse an MXNet dtype name (``'float32'``, a NumPy dtype too) into its name;
    ``numpy.dtype(name)`` is the dtype (names keep parameters JSON-writable)."""
    if isinstance(v, numpy.dtype) or isinstance(v, type):
        v = numpy.dtype(v).name
    if v == "bfloat16":
        raise ValueError("dtype bfloat16 is not supported (NumPy has no bfloat16)")
    if v not in _DTYPES:
        raise ValueError(f"expected one of {list(_DTYPES)}, got {v!r}")
    return v


def OptDType(v):
    """Parse an optional dtype name (None: the input's dtype)."""
    v = _literal(v) if isinstance(v, str) and v.strip() == "None" else v
    return None if v is None else DType(v)


def norm_axis(axis, nd, what="axis"):
    """``axis`` in ``[-nd, nd)`` as a non-negative int; Mismatch otherwise."""
    if not -nd <= axis < nd:
        raise Mismatch(f"{what}={axis} out of range for {nd} dimensions")
    return axis % nd


# -------------------------------------------------------------------- erf
_erf_scalar = numpy.frompyfunc(math.erf, 1, 1)


def erf(xp, x):
    """The error function elementwise, in ``x``'s dtype (SciPy / CuPy's when present)."""
    if xp is numpy:
        try:
            from scipy.special import erf as sp_erf
        except ImportError:     # SciPy is optional: exact but slower
            return _erf_scalar(x).astype(x.dtype)
        return sp_erf(x)
    from cupyx.scipy.special import erf as cp_erf     # pragma: no cover - GPU only
    return cp_erf(x)                                   # pragma: no cover


def OptChoice(*options):
    """An optional string parameter restricted to ``options`` (None / 'None': unset)."""
    def conv(v):
        if v is None or v == "None":
            return None
        if v not in options:
            raise ValueError(f"expected one of {list(options)} or None, got {v!r}")
        return v
    conv.__name__ = "OptChoice"
    return conv
