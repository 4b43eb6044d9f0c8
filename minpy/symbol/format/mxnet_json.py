"""MXNet 1.x symbol JSON: its conventions, its legacy upgrades, and writing it.

MXNet (NNVM) writes ``{"nodes": [...], "arg_nodes": [...], "node_row_ptr":
[...], "heads": [[nid, idx, version]], "attrs": {"mxnet_version": ["int",
10901]}}``; every node has ``op`` (``"null"`` for a variable), ``name``,
``inputs`` and one string dict ``attrs`` holding the op's parameters and the
user's attributes together.  Files from before NNVM (MXNet < 0.9) keep
parameters under ``param`` and attributes under ``attr``, spell hidden keys
bare (``lr_mult``, or ``weight_lr_mult`` on the op for its weight input) and
leave the auxiliary states out; :func:`legacy_fixes` describes what
``mx.sym.load`` does about each, and ``serialize.from_json`` applies them.

Variables carry ``__dtype__`` as MXNet's type code (``'0'`` float32 ...) and
``__shape__`` with ``0`` for a dimension not known yet.
"""
import ast

import numpy

__all__ = ["DTYPE_CODES", "HIDDEN_KEYS", "CURRENT_VERSION", "dtype_from_attr", "dtype_code",
           "shape_from_attr", "graph_version", "node_fields", "split_hidden", "is_hidden_key", "attr_string",
           "writable", "to_mxnet_json", "MINPY_ONLY_OPS", "AUX_INIT"]

CURRENT_VERSION = 10901         # MXNet 1.9.1, the version minpy writes
DTYPE_CODES = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
               6: "int64", 7: "bool", 8: "int16", 9: "uint16", 10: "uint32", 11: "uint64",
               12: "bfloat16"}      # mshadow's TypeFlag
_CODE_OF = {numpy.dtype(v): k for k, v in DTYPE_CODES.items() if v != "bfloat16"}
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
               "profiler_scope")


def dtype_from_attr(value):
    """The numpy dtype of a ``__dtype__`` attribute: an MXNet type code (``'0'``) or a
    NumPy name (``'float32'``, what minpy wrote before it wrote codes)."""
    s = str(value).strip()
    if s.lstrip("-").isdigit():
        name = DTYPE_CODES.get(int(s))
        if name is None:
            raise ValueError(f"__dtype__ {s!r} is not an MXNet type code "
                             f"(known: {DTYPE_CODES})")
        if name == "bfloat16":
            raise ValueError("__dtype__ 12 (bfloat16) has no NumPy dtype")
        return numpy.dtype(name)
    return numpy.dtype(s)


def dtype_code(dtype):
    """MXNet's type code (a string) for ``dtype``, or its NumPy name if MXNet has none."""
    dt = numpy.dtype(dtype)
    code = _CODE_OF.get(dt)
    return dt.name if code is None else str(code)


def shape_from_attr(value):
    """A ``__shape__`` attribute as a tuple, or None when a dimension is 0 (unknown in
    MXNet 1.x's shape semantics) or the value is empty."""
    v = ast.literal_eval(value) if isinstance(value, str) else value
    shape = tuple(int(d) for d in (v if isinstance(v, (tuple, list)) else (v,)))
    if not shape or any(d <= 0 for d in shape):
        return None
    return shape


def graph_version(doc):
    """The MXNet version that wrote ``doc`` (``10901`` for 1.9.1); 800 (0.8.0) when
    the file says nothing, as MXNet assumes."""
    attrs = doc.get("attrs")
    if isinstance(attrs, dict):
        v = attrs.get("mxnet_version")
        if isinstance(v, list) and len(v) == 2 and isinstance(v[1], int):
            return v[1]
    return 800


def node_fields(d):
    """The one string dict of an MXNet node: NNVM's ``attrs`` (parameters and attributes
    together), or the legacy ``param`` (parameters) and ``attr`` (attributes) merged."""
    merged = {}
    for key in ("param", "attr", "attrs"):
        v = d.get(key, {})
        if not isinstance(v, dict):
            raise ValueError(f"{key!r} must be an object, got {v!r}")
        merged.update({k: str(x) for k, x in v.items()})
    return merged


def _hidden(key):
    """``(dunder_key, input_name)`` when ``key`` is one of MXNet's bare hidden keys:
    ``('__lr_mult__', None)`` for ``lr_mult``, ``('__lr_mult__', 'weight')`` for
    ``weight_lr_mult``; None for any other key."""
    for k in HIDDEN_KEYS:
        if key == k:
            return f"__{k}__", None
        if key.endswith("_" + k) and len(key) > len(k) + 1 and not key.startswith("__"):
            return f"__{k}__", key[:-len(k) - 1]
    return None


def split_hidden(attrs):
    """Split MXNet's bare hidden keys out of a node's attribute dict, as ``mx.sym.load``
    does: ``lr_mult`` becomes the node's ``__lr_mult__``; ``weight_lr_mult`` the
    ``__lr_mult__`` of the node's input named ``weight``.

    Returns ``(rest, own, per_input)``: the other keys, ``{'__key__': v}`` for the
    node, and ``{input_name: [(key, '__key__', v)]}`` (the key as written kept, for
    where MXNet leaves it on the node).
    """
    rest, own, per_input = {}, {}, {}
    for k, v in attrs.items():
        hidden = _hidden(k)
        if hidden is None:
            rest[k] = v
        elif hidden[1] is None:
            own[hidden[0]] = v
        else:
            per_input.setdefault(hidden[1], []).append((k, hidden[0], v))
    return rest, own, per_input


def is_hidden_key(key):
    """Whether ``key`` is one of MXNet's bare hidden keys (``lr_mult``) or one aimed at
    an input (``weight_lr_mult``): an attribute, never an op parameter."""
    return _hidden(key) is not None


def attr_string(value):
    """An op parameter as MXNet writes it: ``True``, ``(3, 3)``, ``None``, ``0.5``."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (tuple, list)):
        inner = ", ".join(attr_string(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, numpy.dtype):
        return value.name
    return str(value)


# the initializers MXNet >= 0.9.4 records on an op's aux-state variables
AUX_INIT = {"BatchNorm": {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'}}

# minpy's own operators (made by its graph passes), which MXNet does not have
MINPY_ONLY_OPS = frozenset({"_FusedElemwise", "_BatchNormReLU", "_grad_accumulate",
                            "_broadcast_backward"})


def writable(nodes):
    """Whether MXNet can read these nodes: no backward nodes, no minpy-only ops."""
    return all(n.op is None or not (n.op.is_backward or n.op.name in MINPY_ONLY_OPS)
               for n in nodes)


def to_mxnet_json(nodes, index, heads):
    """MXNet 1.9.1's JSON document (a dict) for topologically sorted ``nodes``;
    ``index`` maps ``id(node)`` to its position, ``heads`` are ``(node, idx)``."""
    out, arg_nodes = [], []
    for i, n in enumerate(nodes):
        d = {"op": "null" if n.op is None else n.op.name, "name": n.name}
        attrs = {} if n.op is None else {k: attr_string(v) for k, v in n.attrs.items()}
        attrs.update(n.user_attrs)
        if attrs:
            d["attrs"] = attrs
        d["inputs"] = [[index[id(e[0])], e[1], 0] for e in n.inputs]
        if n.op is None:
            arg_nodes.append(i)
        out.append(d)
    # no node_row_ptr: it is optional, and MXNet counts hidden outputs its own way
    return {"nodes": out, "arg_nodes": arg_nodes,
            "heads": [[index[id(e[0])], e[1], 0] for e in heads],
            "attrs": {"mxnet_version": ["int", CURRENT_VERSION]}}
