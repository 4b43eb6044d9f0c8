"""Operator definitions (``OpDef``), parameter parsing, inference helpers.

Every symbolic operator is an :class:`OpDef` registered once in ``OPS``:

- ``params``: ``{name: Param(conv, default)}``; values given as Python
  objects or as MXNet-style strings (``"(3, 3)"``, ``"True"``) are parsed
  by ``conv`` into ints, floats, bools, strings or tuples;
- ``arguments(attrs)``, ``aux(attrs)``: names of the data inputs and of the
  auxiliary states (updated by the op in training, never differentiated);
- ``outputs(attrs)``: names of the visible outputs; ``hidden(attrs)``: how
  many hidden outputs follow them (kept for backward: Dropout's mask);
- ``infer_shape(attrs, in_shapes, out_shapes)`` and ``infer_type`` return
  completed ``(in, out)`` lists, None standing for unknown; they raise
  :class:`Mismatch` with a message saying what was expected;
- ``forward(rc, attrs, ins, outs)`` computes into the preallocated backend
  arrays ``outs`` from ``ins`` with ``rc.xp`` (numpy or cupy), ``rc.is_train``
  and ``rc.rng``; it must be correct when an output aliases an input named by
  ``inplace(attrs)`` (list of ``(input_pos, output_pos)``);
- ``gradient(node, ograds)`` returns one entry (or None: no gradient) per
  argument input, built from more graph nodes (:func:`make_node`);
  ``ograds`` holds an entry or None per output (hidden ones included);
- backward ops (``is_backward=True``) produce the gradients of every argument
  of ``node.fwd``; their shapes and dtypes are those arguments';
- ``ignored_params``: MXNet parameters the op accepts in any value and
  ignores because they cannot change its results (cuDNN and workspace
  hints); ``parse`` drops them, the JSON loader keeps them as attributes.
  Any other parameter the op does not list is an error.

``alias(name, target)`` makes ``OPS[name]`` the very OpDef of ``target``
(MXNet's ``_Plus`` for ``elemwise_add``); graphs keep the target's name.
"""
import ast
import contextlib
import threading

import numpy

from ..core.imperative import MXNetError   # mx.MXNetError: ShapeError, DTypeError are ones
from .format import mxnet_json
from .graph import Node

__all__ = ["OpDef", "Param", "OPS", "register", "alias", "make_node", "Mismatch", "ShapeError",
           "DTypeError", "REQUIRED", "Int", "Float", "Bool", "Str", "Shape", "OptInt",
           "Axis", "Choice", "auto_name", "matmul_into"]

OPS = {}
REQUIRED = object()


class ShapeError(ValueError, MXNetError):
    """Shape inference failed; the message names the node, its input shapes and
    what was expected (MXNet raises ``MXNetError`` here)."""


class DTypeError(TypeError, MXNetError):
    """Dtype inference failed; the message names the node and the dtypes (MXNet raises
    ``MXNetError`` here)."""


class Mismatch(Exception):
    """Raised by an op's inference rule; the graph pass adds the node's context."""


# ------------------------------------------------------------------ params
def _literal(v):
    if isinstance(v, str):
        s = v.strip()
        if s in ("None", ""):
            return None
        try:
            return ast.literal_eval(s)
        except (ValueError, SyntaxError):
            return s
    return v


def Int(v):
    """Parse an integer parameter."""
    v = _literal(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
        raise ValueError(f"expected an integer, got {v!r}")
    return int(v)


def OptInt(v):
    """Parse an optional integer parameter (None allowed)."""
    v = _literal(v)
    return None if v is None else Int(v)


def Float(v):
    """Parse a float parameter."""
    v = _literal(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"expected a number, got {v!r}")
    return float(v)


def Bool(v):
    """Parse a boolean parameter ('True', 'false', 1, 0 ...)."""
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "1"):
            return True
        if s in ("false", "0"):
            return False
        raise ValueError(f"expected a boolean, got {v!r}")
    if isinstance(v, (bool, int)) and v in (0, 1):
        return bool(v)
    raise ValueError(f"expected a boolean, got {v!r}")


def Str(v):
    """Parse a string parameter."""
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {v!r}")
    return v


def Shape(v):
    """Parse a tuple of ints ('(3, 3)', [3, 3], 3 -> (3,))."""
    v = _literal(v)
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return (v,)
    if isinstance(v, (tuple, list)) and all(isinstance(d, int) and not isinstance(d, bool)
                                            for d in v):
        return tuple(v)
    raise ValueError(f"expected a tuple of ints, got {v!r}")


def Axis(v):
    """Parse an axis parameter: None, an int or a tuple of ints."""
    v = _literal(v)
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return Shape(v)


def Choice(*options):
    """A string parameter restricted to ``options``."""
    def conv(v):
        if v not in options:
            raise ValueError(f"expected one of {list(options)}, got {v!r}")
        return v
    conv.__name__ = "Choice"
    return conv


class Param:
    """One operator parameter: converter, default (``REQUIRED`` if none), doc."""

    __slots__ = ("conv", "default", "doc")

    def __init__(self, conv, default=REQUIRED, doc=""):
        self.conv, self.default, self.doc = conv, default, doc


def _const(value):
    return lambda attrs: value


class OpDef:
    """Definition of one symbolic operator (see module doc)."""

    def __init__(self, name, *, forward, infer_shape, params=None, arguments=("data",),
                 aux=(), outputs=("output",), hidden=0, infer_type=None, gradient=None,
                 inplace=(), mutates_aux=False, uses_rng=False, is_backward=False,
                 variadic=None, ignored_params=(), doc=""):
        self.name = name
        self.params = dict(params or {})
        self.forward = forward
        self._infer_shape = infer_shape
        self._infer_type = infer_type
        self.gradient = gradient
        self.arguments = arguments if callable(arguments) else _const(list(arguments))
        self.aux = aux if callable(aux) else _const(list(aux))
        self.outputs = outputs if callable(outputs) else _const(list(outputs))
        self._hidden = hidden if callable(hidden) else _const(hidden)
        self.inplace = inplace if callable(inplace) else _const(list(inplace))
        self.mutates_aux = mutates_aux      # may write its aux inputs (when training)
        self.uses_rng = uses_rng
        self.is_backward = is_backward
        self.variadic = variadic            # name of the count param of a variadic op
        self.sparse_grads = False           # gradient() accepts None for visible outputs
        self.ignored_params = frozenset(ignored_params)
        self.doc = doc

    def __repr__(self):
        return f"<OpDef {self.name}>"

    def num_visible(self, attrs):
        return len(self.outputs(attrs))

    def num_outputs(self, attrs):
        return len(self.outputs(attrs)) + self._hidden(attrs)

    def num_inputs(self, attrs):
        return len(self.arguments(attrs)) + len(self.aux(attrs))

    def parse(self, kwargs, node_name=None):
        """Parsed and defaulted parameters from user ``kwargs`` (ValueError on bad ones)."""
        where = f"{self.name}" + (f" {node_name!r}" if node_name else "")
        kwargs = {k: v for k, v in kwargs.items() if k not in self.ignored_params}
        unknown = [k for k in kwargs if k not in self.params]
        if unknown:
            raise ValueError(f"{where}: unknown parameter(s) {unknown}; "
                             f"expected some of {sorted(self.params)}")
        attrs = {}
        for k, p in self.params.items():
            v = kwargs.get(k)
            if v is None:       # absent, or None meaning "the default"
                if p.default is REQUIRED:
                    raise ValueError(f"{where}: required parameter {k!r} is missing")
                attrs[k] = p.default
                continue
            try:
                attrs[k] = p.conv(v)
            except ValueError as e:
                raise ValueError(f"{where}: parameter {k}: {e}") from None
        return attrs

    def infer_shape(self, attrs, ins, outs):
        return self._infer_shape(attrs, list(ins), list(outs))

    def infer_type(self, attrs, ins, outs):
        if self._infer_type is not None:
            return self._infer_type(attrs, list(ins), list(outs))
        return same_type(attrs, list(ins), list(outs))


def register(op):
    """Register ``op`` in ``OPS`` (a name is registered once)."""
    if op.name in OPS:
        raise ValueError(f"operator {op.name!r} is already registered")
    OPS[op.name] = op
    return op


def alias(name, target):
    """Register ``name`` as another name of the registered op ``target``."""
    if name in OPS:
        raise ValueError(f"operator {name!r} is already registered")
    OPS[name] = OPS[target]
    return OPS[name]


def make_node(op_name, inputs, attrs=None, name=None, fwd=None):
    """A new node applying registered op ``op_name`` to entries ``inputs``.

    ``attrs`` are parsed and defaulted; returns the node.
    """
    op = OPS[op_name]
    node = Node(op, name or auto_name(op_name), inputs, op.parse(attrs or {}, name), fwd=fwd)
    return node


def entries(node):
    """All output entries of ``node``."""
    return [(node, i) for i in range(node.num_outputs)]


# --------------------------------------------------------------- inference
def assign(vals, i, v, what):
    """Set ``vals[i]`` to ``v`` or check they agree; raise Mismatch naming ``what``."""
    if v is None:
        return
    cur = vals[i]
    if cur is None:
        vals[i] = v
    elif cur != v:
        raise Mismatch(f"{what}: expected {_fmt(v)}, got {_fmt(cur)}")


def _fmt(v):
    return getattr(v, "name", None) or repr(v)


def same_shape(attrs, ins, outs):
    """Inference rule: every input and output has one shape."""
    known = next((s for s in ins + outs if s is not None), None)
    for i in range(len(ins)):
        assign(ins, i, known, f"input {i}")
    for i in range(len(outs)):
        assign(outs, i, known, f"output {i}")
    return ins, outs


def same_type(attrs, ins, outs):
    """Dtype rule: every input and output has one dtype."""
    return same_shape(attrs, ins, outs)


def grad_type(attrs, ins, outs):
    """Dtype rule of backward ops: inputs share the first known dtype."""
    known = next((t for t in ins if t is not None), None)
    for i in range(len(ins)):
        if ins[i] is None:
            ins[i] = known
    return ins, outs


# ------------------------------------------------------------------ naming
_names = {}
_names_lock = threading.Lock()


def auto_name(hint):
    """A fresh node name ``hint`` + counter (MXNet's NameManager: fullyconnected0)."""
    hint = hint.lower().lstrip("_")
    with _names_lock:
        k = _names.get(hint, 0)
        _names[hint] = k + 1
    return f"{hint}{k}"


@contextlib.contextmanager
def fresh_names():
    """Inside the block, automatic node names count from 0 again (MXNet's ``with
    NameManager():``, which ``BucketingModule`` wraps each ``sym_gen`` call in, so every
    bucket's symbol names its unnamed nodes and parameters alike); the outer counts
    are restored after."""
    global _names
    with _names_lock:
        saved, _names = _names, {}
    try:
        yield
    finally:
        with _names_lock:
            _names = saved


def bwd_shape(attrs, ins, outs):
    """Shape/dtype rule of backward ops: the graph pass sets their outputs to
    the forward node's argument shapes; inputs are left as they are."""
    return ins, outs


# --------------------------------------------------------------- kernels
class RunCtx:
    """What a forward function gets besides its arrays: the backend namespace
    ``xp``, whether this is a training pass, the random generator, and the
    ``backend`` and ``device_id`` it runs on (for :meth:`from_host`)."""

    __slots__ = ("xp", "is_train", "rng", "backend", "device_id")

    def __init__(self, xp, is_train=False, rng=None, backend=None, device_id=0):
        self.xp, self.is_train, self.rng = xp, is_train, rng
        self.backend, self.device_id = backend, device_id

    def from_host(self, host, dtype=None):
        """NumPy array ``host`` (cast to ``dtype``) on this run's device: itself on the
        host, else one explicit, counted host-to-device copy."""
        host = numpy.asarray(host, dtype=dtype)
        if self.xp is numpy or self.backend is None:
            return host
        return self.backend.from_host(numpy.ascontiguousarray(host), self.device_id)


def copy_into(xp, out, val):
    """Write ``val`` into ``out`` unless it already is ``out``'s storage
    (the in-place case: the planner only ever aliases whole blocks)."""
    if val is out:
        return
    if val.size == out.size and val.dtype == out.dtype and xp.may_share_memory(val, out):
        return
    out[...] = val.reshape(out.shape) if val.shape != out.shape and val.size == out.size else val


def host_copy(xp, a):
    """``a`` (an array of namespace ``xp``) as a host ``numpy.ndarray``: itself for
    NumPy, one explicit device-to-host copy otherwise (never an implicit conversion)."""
    return a if xp is numpy else xp.asnumpy(a)


def matmul_into(xp, a, b, out):
    """out = a @ b (2-d ``a``, ``b``) where ``out`` may have another (same-size) shape."""
    o = out.reshape(a.shape[0], b.shape[1])
    if xp.may_share_memory(o, out):
        xp.matmul(a, b, out=o)
    else:
        out[...] = (a @ b).reshape(out.shape)


def sum_to(xp, g, shape):
    """Sum broadcast gradient ``g`` down to ``shape`` (NumPy broadcasting rules)."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and g.shape[i + lead] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


def parse_attr_value(s, kind):
    """A ``__shape__`` (``kind='shape'``: a tuple, None while MXNet's 0 marks a dimension
    unknown) or ``__dtype__`` (an MXNet type code or a NumPy name) attribute's value."""
    if kind == "shape":
        return mxnet_json.shape_from_attr(s)
    return mxnet_json.dtype_from_attr(s)
