"""MXNet's ``Custom`` operator: a layer written in Python, run inside graphs.

``mx.operator.register('sqr')`` (:mod:`minpy.mxnet.operator`) puts a property class
(MXNet's ``CustomOpProp``) in :data:`PROPS` under its ``op_type``; this module only
calls its methods (``list_arguments``, ``list_outputs``, ``list_auxiliary_states``,
``infer_shape``, ``infer_type``, ``infer_storage_type``, ``declare_backward_dependency``,
``create_operator``), so the symbol layer never imports the MXNet layer above it.

As in MXNet 1.9.1 (``src/operator/custom/custom.cc``):

- every parameter but ``op_type`` reaches the property's ``__init__`` as a string
  (``str(value)``); the property is made once per node, when the node is made (an
  unknown ``op_type`` fails there, naming the registered ones);
- the node's inputs are ``list_arguments()`` then ``list_auxiliary_states()``, its
  outputs ``list_outputs()``; ``infer_shape``/``infer_type`` get the argument shapes
  (lists, ``[]`` for unknown) or dtypes (NumPy types, None for unknown) and return
  2 or 3 lists (arguments, outputs[, aux]);
- ``create_operator(ctx, shapes, dtypes)`` (shapes of arguments and aux states as
  lists, dtypes as MXNet's type codes) makes the ``CustomOp`` of one node in one
  executor (one per run context: training and inference passes have their own) for
  one set of input shapes, on its first forward; the executor's ``backward`` runs on
  that same object, so state it keeps between the two is there; an imperative
  ``mx.nd.Custom`` call makes its own;
- ``forward(is_train, req, in_data, out_data, aux)`` and ``backward(req, out_grad,
  in_data, out_data, in_grad, aux)`` get minpy Arrays (``mx.nd`` NDArrays) viewing the
  executor's buffers: writing ``out_data``/``in_grad`` (``assign``, ``out[:] = v``)
  writes the result; MXNet's recording is paused and its training flag set to
  ``is_train`` while they run;
- the gradient node reads only what ``declare_backward_dependency`` names (by
  default the output gradients when ``need_top_grad``, the inputs and the outputs);
  the others are passed as None (MXNet passes empty arrays); the aux states always.

Differences: in async mode (``minpy.async_mode()``) the CustomOp's own minpy calls
on large arrays are queued on the engine it runs inside, and reading their results
there fails (an MXNetError saying so): compute with NumPy there, or leave async mode
off. ``req`` is ``'write'`` for every output and input gradient: a gradient
requested with ``grad_req='add'`` is accumulated by the executor after ``backward``
(the same sum); input gradients are zeroed before ``backward``, so one it does not
write reads zero. Dense storage only: a property whose ``infer_storage_type`` asks
for another storage type is refused.

The node's state (property, dependency list, operators) rides on its ``op_type``
value, a ``str`` subclass (:class:`_OpType`), so that graph passes copying a node's
parameters (``dict(node.attrs)``) keep it, and its backward node finds the same
operator; JSON sees a plain string.
"""
import threading
import warnings

import numpy

from ...core.array import new
from ...core.imperative import MXNetError, RecordingStateScope
from ...dispatch import state
from ...dispatch.transfer import context_of
from ...engine import EngineError
from ..format.mxnet_json import dtype_code, is_hidden_key
from ..graph import Node
from ..registry import (Mismatch, OpDef, Param, Str, assign, bwd_shape, grad_type,
                        make_node, register)

__all__ = ["PROPS", "register_prop", "registered"]

#: op_type -> property class (filled by ``minpy.mxnet.operator.register``)
PROPS = {}
_lock = threading.Lock()


def register_prop(op_type, prop_cls):
    """Make ``prop_cls`` the property class of Custom ``op_type`` (MXNet warns and
    replaces an earlier registration; so does this). Returns ``prop_cls``."""
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"mx.operator.register: the name must be a non-empty string, "
                        f"got {op_type!r}")
    with _lock:
        if op_type in PROPS and PROPS[op_type] is not prop_cls:
            warnings.warn(f"mx.operator.register: new registration is overriding existing "
                          f"custom operator {op_type!r}", stacklevel=3)
        PROPS[op_type] = prop_cls
    return prop_cls


def registered():
    """The registered Custom op_types, sorted."""
    with _lock:
        return sorted(PROPS)


class _OpenParams(dict):
    """Custom's parameters: ``op_type``, plus any other keyword (the property's
    ``__init__`` takes them), except attributes (``__key__``, MXNet's hidden keys)."""

    def __contains__(self, key):
        if dict.__contains__(self, key):
            return True
        return isinstance(key, str) and not (key.startswith("__") and key.endswith("__")) \
            and not is_hidden_key(key)


class _OpType(str):
    """A Custom node's ``op_type`` value, carrying the node's :class:`_NodeState`."""

    state = None


def _names(prop, method, where):
    names = getattr(prop, method)()
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{where}: {type(prop).__name__}.{method}() must return a list of "
                        f"strings, got {names!r}")
    return list(names)


class _NodeState:
    """One Custom node: its property, names, backward dependencies and operators."""

    def __init__(self, op_type, kwargs, where):
        with _lock:
            cls = PROPS.get(op_type)
            known = sorted(PROPS)
        if cls is None:
            raise ValueError(f"{where}: no custom operator {op_type!r} is registered "
                             f"(mx.operator.register); registered: {known}")
        self.op_type, self.where = op_type, f"Custom op_type={op_type!r}"
        self.prop = prop = cls(**kwargs)
        self.arguments = _names(prop, "list_arguments", self.where)
        self.outputs = _names(prop, "list_outputs", self.where)
        self.aux = _names(prop, "list_auxiliary_states", self.where)
        if not self.outputs:
            raise ValueError(f"{self.where}: list_outputs() is empty")
        self._check_storage()
        n_out, n_arg = len(self.outputs), len(self.arguments)
        ids = list(range(2 * n_out + n_arg))
        deps = prop.declare_backward_dependency(ids[:n_out], ids[n_out:n_out + n_arg],
                                                ids[n_out + n_arg:])
        deps = [int(d) for d in deps]
        bad = [d for d in deps if not 0 <= d < len(ids)]
        if bad:
            raise ValueError(f"{self.where}: declare_backward_dependency returned ids {bad} "
                             f"outside [0, {len(ids)}) (out_grad, in_data, out_data ids)")
        self.deps = deps
        self._operators = {}
        self._op_lock = threading.Lock()

    def _check_storage(self):
        f = getattr(self.prop, "infer_storage_type", None)
        if f is None:
            return
        ret = f(["default"] * len(self.arguments))
        stypes = [s for lst in ret for s in lst]
        if any(s != "default" for s in stypes):
            raise NotImplementedError(
                f"{self.where}: infer_storage_type returned {[list(x) for x in ret]}; minpy "
                "has dense ('default') storage only")

    def operator(self, rc, ctx, datas):
        """The CustomOp of this node for the executor whose run context is ``rc``, on
        ``ctx``, for argument + aux arrays ``datas`` (made by ``create_operator`` on
        first use; an executor's backward finds its forward's)."""
        shapes = tuple(tuple(int(d) for d in a.shape) for a in datas)
        dtypes = tuple(numpy.dtype(a.dtype) for a in datas)
        key = (id(rc), ctx, shapes, dtypes)
        entry = self._operators.get(key)
        if entry is None or entry[0] is not rc:
            with self._op_lock:
                entry = self._operators.get(key)
                if entry is None or entry[0] is not rc:
                    op = self.prop.create_operator(ctx, [list(s) for s in shapes],
                                                   [int(dtype_code(t)) for t in dtypes])
                    # (rc kept alive with it: its id is never another executor's)
                    entry = self._operators[key] = (rc, op)
        return entry[1]


def _state(attrs):
    t = attrs["op_type"]
    st = getattr(t, "state", None)
    if st is None:      # parameters rebuilt from plain strings: a fresh node state
        t = attrs["op_type"] = _new_op_type(t, {k: v for k, v in attrs.items()
                                                if k != "op_type"}, "Custom")
        st = t.state
    return st


def _new_op_type(op_type, kwargs, where):
    t = _OpType(op_type)
    t.state = _NodeState(str(op_type), kwargs, where)
    return t


class _CustomOpDef(OpDef):
    """``Custom``: parameters are ``op_type`` and any others, kept as strings."""

    def parse(self, kwargs, node_name=None):
        where = "Custom" + (f" {node_name!r}" if node_name else "")
        kwargs = dict(kwargs)
        op_type = kwargs.pop("op_type", None)
        if op_type is None:
            raise ValueError(f"{where}: required parameter 'op_type' is missing")
        if not isinstance(op_type, str):
            raise ValueError(f"{where}: parameter op_type: expected a string, got {op_type!r}")
        bad = [k for k in kwargs if k not in self.params]
        if bad:
            raise ValueError(f"{where}: {bad} are attributes, not parameters")
        params = {k: str(v) for k, v in kwargs.items()}
        attrs = {"op_type": _new_op_type(op_type, params, where)}
        attrs.update(params)
        return attrs


# ---------------------------------------------------------------- inference
def _infer(attrs, ins, outs, kind):
    """Shape (``kind='shape'``) or dtype rule: the property's infer_shape/infer_type."""
    st = _state(attrs)
    n_arg, n_out, n_aux = len(st.arguments), len(st.outputs), len(st.aux)
    args = ins[:n_arg]
    if args and all(v is None for v in args):
        return ins, outs
    complete = all(v is not None for v in args)
    if kind == "shape":
        given = [[] if s is None else list(s) for s in args]
    else:
        given = [None if t is None else t.type for t in args]
    method = f"{type(st.prop).__name__}.infer_{kind}"
    try:
        ret = getattr(st.prop, f"infer_{kind}")(given)
    except Exception as e:      # the user's code: MXNet reports any error as its own
        if not complete:        # (partial knowledge: let a later sweep ask again)
            return ins, outs
        raise Mismatch(f"{st.where}: {method}({given}) raised {type(e).__name__}: {e}") \
            from e
    if not isinstance(ret, (list, tuple)) or len(ret) not in (2, 3):
        raise Mismatch(f"{st.where}: {method} must return 2 or 3 lists (arguments, "
                       f"outputs[, aux states]), got {ret!r}")
    r_in, r_out = list(ret[0]), list(ret[1])
    r_aux = list(ret[2]) if len(ret) == 3 else []
    for what, got, names in (("argument", r_in, st.arguments), ("output", r_out, st.outputs),
                             ("aux state", r_aux, st.aux)):
        if len(got) != len(names):
            raise Mismatch(f"{st.where}: {method} returned {len(got)} {what} {kind}s, "
                           f"expected {len(names)} (for {names})")
    conv = _shape if kind == "shape" else _dtype
    for i, v in enumerate(r_in):
        assign(ins, i, conv(v, method), f"argument {st.arguments[i]!r}")
    for i, v in enumerate(r_aux):
        assign(ins, n_arg + i, conv(v, method), f"aux state {st.aux[i]!r}")
    for i, v in enumerate(r_out[:n_out]):
        assign(outs, i, conv(v, method), f"output {st.outputs[i]!r}")
    return ins, outs


def _shape(v, method):
    """A returned shape as a tuple; None where MXNet 1.x reads "unknown" (empty, or a 0)."""
    try:
        s = tuple(int(d) for d in v)
    except (TypeError, ValueError):
        raise Mismatch(f"{method} returned {v!r} where a shape (list of ints) belongs") \
            from None
    return None if not s or 0 in s else s


def _dtype(v, method):
    if v is None:
        return None
    if isinstance(v, (int, numpy.integer)) and not isinstance(v, bool):
        raise Mismatch(f"{method} returned {v!r}: give NumPy dtypes (numpy.float32)")
    try:
        return numpy.dtype(v)
    except TypeError:
        raise Mismatch(f"{method} returned {v!r} where a dtype belongs") from None


# ---------------------------------------------------------------- running
class _UserScope:
    """The user's CustomOp code runs on ``ctx`` with MXNet's recording paused and its
    training flag ``is_train`` (MXNet's custom-op thread does the same)."""

    def __init__(self, ctx, is_train):
        self.ctx, self.rec = ctx, RecordingStateScope(False, bool(is_train))

    def __enter__(self):
        self.ctx.__enter__()
        self.rec.__enter__()

    def __exit__(self, *exc):
        self.rec.__exit__(*exc)
        self.ctx.__exit__(*exc)


def _user_error(op, method, st, e):
    msg = f"Error in {type(op).__name__}.{method} of {st.where}: {type(e).__name__}: {e}"
    if isinstance(e, EngineError) and state.process.async_on:
        msg += ("; the CustomOp runs inside a minpy.engine op, where minpy calls that "
                "async mode queues cannot be waited for: leave minpy.async_mode() off "
                "while Custom ops run, or compute on NumPy arrays (asnumpy()) in the "
                "CustomOp")
    return MXNetError(msg)


def _forward(rc, attrs, ins, outs):
    st = _state(attrs)
    n_arg = len(st.arguments)
    ctx = context_of(ins[0] if ins else outs[0])
    op = st.operator(rc, ctx, ins)
    in_data = [new(d) for d in ins[:n_arg]]
    aux = [new(d) for d in ins[n_arg:]]
    out_data = [new(d) for d in outs]
    try:
        with _UserScope(ctx, rc.is_train):
            op.forward(is_train=bool(rc.is_train), req=["write"] * len(outs),
                       in_data=in_data, out_data=out_data, aux=aux)
    except Exception as e:      # the user's code: MXNet reports any error as its own
        raise _user_error(op, "forward", st, e) from e
    _write_back(out_data, outs)


def _write_back(arrays, datas):
    # an Array the user rebound rather than wrote (a recording in this thread can
    # rebind instead of writing in place) still lands in the buffer
    for a, d in zip(arrays, datas):
        if a._data is not d:
            d[...] = a._data


def _backward(rc, attrs, ins, outs):
    st = _state(attrs)
    n_arg, n_out = len(st.arguments), len(st.outputs)
    slots = [None] * (2 * n_out + n_arg)
    for k, i in enumerate(st.deps):
        slots[i] = new(ins[k])
    aux_d = ins[len(st.deps):]
    ctx = context_of(outs[0] if outs else ins[0])
    op = st.operator(rc, ctx, list(outs) + list(aux_d))
    for d in outs:
        d[...] = 0
    in_grad = [new(d) for d in outs]
    try:
        with _UserScope(ctx, True):
            op.backward(req=["write"] * n_arg, out_grad=slots[:n_out],
                        in_data=slots[n_out:n_out + n_arg], out_data=slots[n_out + n_arg:],
                        in_grad=in_grad, aux=[new(d) for d in aux_d])
    except Exception as e:      # the user's code: MXNet reports any error as its own
        raise _user_error(op, "backward", st, e) from e
    _write_back(in_grad, outs)


def _gradient(node, ograds):
    st = _state(node.attrs)
    n_arg, n_out = len(st.arguments), len(st.outputs)
    inputs = []
    for i in st.deps:
        if i < n_out:
            g = ograds[i]
            inputs.append(g if g is not None else (make_node("zeros_like", [(node, i)]), 0))
        elif i < n_out + n_arg:
            inputs.append(node.inputs[i - n_out])
        else:
            inputs.append((node, i - n_out - n_arg))
    inputs += node.inputs[n_arg:]
    # the very parameters (not a parsed copy): the backward node finds the forward's
    # operator through them
    b = Node(_BACKWARD, f"{node.name}_backward", inputs, node.attrs, fwd=node)
    return [(b, i) for i in range(n_arg)]


def _bwd_inputs(attrs):
    st = _state(attrs)
    n_arg, n_out = len(st.arguments), len(st.outputs)
    names = []
    for i in st.deps:
        if i < n_out:
            names.append(f"{st.outputs[i]}_grad")
        elif i < n_out + n_arg:
            names.append(st.arguments[i - n_out])
        else:
            names.append(st.outputs[i - n_out - n_arg])
    return names + st.aux


_PARAMS = _OpenParams(op_type=Param(Str, doc="the name given to mx.operator.register"))

_CUSTOM = _CustomOpDef(
    "Custom", params=_PARAMS, forward=_forward,
    infer_shape=lambda attrs, ins, outs: _infer(attrs, ins, outs, "shape"),
    infer_type=lambda attrs, ins, outs: _infer(attrs, ins, outs, "type"),
    arguments=lambda attrs: list(_state(attrs).arguments),
    aux=lambda attrs: list(_state(attrs).aux),
    outputs=lambda attrs: list(_state(attrs).outputs),
    gradient=_gradient, mutates_aux=True,
    doc="A custom operator written in Python (mx.operator.CustomOp), registered under "
        "op_type with mx.operator.register; the other parameters reach its "
        "CustomOpProp as strings.")
_CUSTOM.sparse_grads = True        # _gradient makes zeros only for what it reads
_CUSTOM.params = _PARAMS           # (OpDef copies params into a plain dict)
register(_CUSTOM)

_BACKWARD = _CustomOpDef(
    "_backward_Custom", params=_PARAMS, forward=_backward, infer_shape=bwd_shape,
    infer_type=grad_type, arguments=_bwd_inputs,
    outputs=lambda attrs: list(_state(attrs).arguments), is_backward=True,
    doc="Gradient of Custom: the CustomOp's backward.")
_BACKWARD.params = _PARAMS
register(_BACKWARD)
