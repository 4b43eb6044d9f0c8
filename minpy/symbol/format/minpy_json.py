"""Graphs (a Symbol's outputs) <-> JSON.

Format (version 1)::

    {"minpy_symbol": 1,
     "nodes": [{"op": "null" | op name, "name": str,
                "inputs": [[node_index, output_index], ...],
                "attrs": {param: value},        # op parameters (JSON values)
                "attr": {key: str},             # user attributes
                "fwd": node_index}, ...],       # backward nodes only
     "heads": [[node_index, output_index], ...]}

Nodes are listed in topological order (inputs first).  ``to_json`` writes
MXNet 1.9.1's format instead whenever MXNet could read the graph (see
``mxnet_json``), so ``mx.sym.load`` reads what minpy saves; ``from_json``
reads both, MXNet's of any 1.x version (the legacy pre-NNVM files upgraded as
``mx.sym.load`` upgrades them).  An MXNet parameter an operator does not
know is an error, never silently dropped (unless the op lists it in
``ignored_params``: cuDNN and workspace hints).  Malformed input raises
:class:`SymbolFileError` (a ``ValueError``) naming the node and what is wrong,
or the byte offset of bytes that are not UTF-8 text and the character where
the JSON nests too deeply to parse (and the file, from :func:`load_file`).
"""
import json
import os
import re

from . import mxnet_json
from ..graph import Node, topo_sort
from ..registry import OPS

__all__ = ["to_json", "from_json", "load_file", "SymbolFileError", "VERSION"]

VERSION = 1
MAX_NESTING = 100       # deeper JSON is refused before parsing; symbol files nest 5 levels
_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')     # strings skipped whole


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def to_json(outputs, fmt="auto"):
    """JSON text of the graph of ``outputs``: MXNet 1.9.1's format when MXNet can read
    the graph (``fmt='auto'``, or ``'mxnet'``, which raises otherwise), else (backward
    nodes, minpy-only ops, or ``fmt='minpy'``) this module's versioned format."""
    nodes = topo_sort(outputs)
    index = {id(n): i for i, n in enumerate(nodes)}
    if fmt not in ("auto", "mxnet", "minpy"):
        raise ValueError(f"to_json: fmt must be 'auto', 'mxnet' or 'minpy', got {fmt!r}")
    if fmt != "minpy" and mxnet_json.writable(nodes):
        return json.dumps(mxnet_json.to_mxnet_json(nodes, index, outputs), indent=2)
    if fmt == "mxnet":
        raise ValueError("to_json: the graph has backward nodes or minpy-only operators, "
                         "which MXNet cannot read; save it in minpy's format")
    out = []
    for n in nodes:
        d = {"op": "null" if n.op is None else n.op.name, "name": n.name,
             "inputs": [[index[id(e[0])], e[1]] for e in n.inputs]}
        if n.attrs:
            d["attrs"] = {k: _jsonable(v) for k, v in n.attrs.items()}
        if n.user_attrs:
            d["attr"] = dict(n.user_attrs)
        if n.fwd is not None:
            d["fwd"] = index[id(n.fwd)]
        out.append(d)
    heads = [[index[id(e[0])], e[1]] for e in outputs]
    return json.dumps({"minpy_symbol": VERSION, "nodes": out, "heads": heads}, indent=1)


class SymbolFileError(ValueError):
    """Text or bytes that are not a valid symbol file; the message says where and why."""


def _bad(msg):
    return SymbolFileError(f"invalid symbol JSON: {msg}")


def _entry(v, limit, where, nodes):
    if not isinstance(v, list) or len(v) not in (2, 3) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise _bad(f"{where}: expected [node_index, output_index], got {v!r}")
    nid, idx = v[0], v[1]
    if not 0 <= nid < limit:
        raise _bad(f"{where}: node index {nid} out of range (must refer to an earlier node, "
                   f"0..{limit - 1})")
    if not 0 <= idx < nodes[nid].num_outputs:
        raise _bad(f"{where}: node {nodes[nid].name!r} has no output {idx}")
    return (nodes[nid], idx)


def _decode(data):
    """``data`` (bytes) as text, in the UTF-8/16/32 encoding ``json.loads`` detects;
    SymbolFileError naming the byte offset of an undecodable byte."""
    encoding = json.detect_encoding(data)
    try:
        return data.decode(encoding, "strict")
    except UnicodeDecodeError as e:
        raise _bad(f"at byte {e.start}: not {encoding.upper()} text ({e.reason}: "
                   f"{bytes(data[e.start:e.start + 4])!r})") from None


def _nesting_at(text, limit):
    """The character offset where ``text``'s JSON nests more than ``limit`` levels
    of arrays/objects (brackets inside strings do not count), or None."""
    depth = 0
    for m in _BRACKETS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                return m.start()
        elif c in "]}":
            depth -= 1
    return None


def _parse_json(text):
    """json.loads of ``text`` (str or bytes) with every failure as SymbolFileError."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = _decode(bytes(text))
    if not isinstance(text, str):
        raise _bad(f"expected str or bytes, got {type(text).__name__}")
    # checked before json.loads, so the error does not depend on the depth at which
    # this Python's json runs out of stack (3.12's C recursion limit is not 3.11's)
    at = _nesting_at(text, MAX_NESTING)
    if at is not None:
        raise _bad(f"at character {at}: arrays/objects nested more than {MAX_NESTING} "
                   "levels deep (a symbol file nests 5)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _bad(f"not JSON ({e})") from None
    except RecursionError:
        raise _bad("arrays/objects nested too deeply for Python's stack") from None


def from_json(text, source=None):
    """The outputs ``[(node, index)]`` of the graph described by JSON ``text`` (str,
    or bytes in UTF-8/16/32; this module's format, or MXNet's of any 1.x version,
    legacy pre-NNVM files upgraded as ``mx.sym.load`` does);
    ``minpy.symbol.load_json`` makes the Symbol.

    Raises:
        SymbolFileError (a ValueError) saying where and what is wrong, after
        ``source`` (the file's name) when given.
    """
    try:
        return _from_doc(_parse_json(text))
    except SymbolFileError as e:
        if source is None:
            raise
        raise SymbolFileError(f"{os.fspath(source)}: {e}") from None


def load_file(fname):
    """The outputs of the graph in the JSON file ``fname`` (see :func:`from_json`);
    errors name the file."""
    with open(fname, "rb") as f:
        data = f.read()
    return from_json(data, source=fname)


def _from_doc(doc):
    if not isinstance(doc, dict):
        raise _bad(f"top level must be an object, got {type(doc).__name__}")
    mxnet = "minpy_symbol" not in doc
    if not mxnet and doc["minpy_symbol"] != VERSION:
        raise _bad(f"unsupported version {doc['minpy_symbol']!r} (this minpy reads "
                   f"version {VERSION})")
    if mxnet and "nodes" not in doc:
        raise _bad("neither minpy's format (no 'minpy_symbol' version key) nor MXNet's "
                   "(no 'nodes')")
    for key in ("nodes", "heads"):
        if not isinstance(doc.get(key), list):
            raise _bad(f"missing or non-list {key!r}")
    version = mxnet_json.graph_version(doc) if mxnet else None
    nodes = []
    for i, d in enumerate(doc["nodes"]):
        where = f"node {i}"
        if not isinstance(d, dict):
            raise _bad(f"{where}: expected an object, got {d!r}")
        for key in ("op", "name"):
            if not isinstance(d.get(key), str):
                raise _bad(f"{where}: missing or non-string {key!r}")
        where = f"node {i} ({d['name']!r})"
        inputs = d.get("inputs", [])
        if not isinstance(inputs, list):
            raise _bad(f"{where}: 'inputs' must be a list")
        entries = [_entry(v, i, f"{where} input {k}", nodes) for k, v in enumerate(inputs)]
        if d["op"] == "null" and entries:
            raise _bad(f"{where}: a variable has no inputs")
        node = (_mxnet_node if mxnet else _minpy_node)(d, entries, where, version)
        if "fwd" in d:
            f = d["fwd"]
            if not isinstance(f, int) or not 0 <= f < i:
                raise _bad(f"{where}: 'fwd' must be the index of an earlier node")
            node.fwd = nodes[f]
        nodes.append(node)
    if not doc["heads"]:
        raise _bad("'heads' is empty")
    heads = [_entry(v, len(nodes), f"head {k}", nodes) for k, v in enumerate(doc["heads"])]
    return heads


def _op_of(d, where):
    op = OPS.get(d["op"])
    if op is None:
        raise _bad(f"{where}: unknown operator {d['op']!r} (minpy.symbol.OPS lists the "
                   "operators minpy has)")
    return op


def _parse(op, params, where):
    try:
        return op.parse(params, None)
    except ValueError as e:
        raise _bad(f"{where}: {e}") from None


def _check_arity(op, parsed, entries, where):
    want = op.num_inputs(parsed)
    if len(entries) != want:
        raise _bad(f"{where}: {op.name} takes {want} inputs "
                   f"{op.arguments(parsed) + op.aux(parsed)}, got {len(entries)}")


def _minpy_node(d, entries, where, _version):
    attrs = d.get("attrs", {})
    user = dict(d.get("attr", {}))
    if not isinstance(attrs, dict) or not isinstance(user, dict):
        raise _bad(f"{where}: 'attrs' and 'attr' must be objects")
    if d["op"] == "null":
        return Node(None, d["name"], user_attrs={k: str(v) for k, v in user.items()})
    op = _op_of(d, where)
    parsed = _parse(op, {k: v for k, v in attrs.items() if k in op.params}, where)
    user.update({k: str(v) for k, v in attrs.items() if k not in op.params})
    _check_arity(op, parsed, entries, where)
    return Node(op, d["name"], entries, parsed, user)


def _input_variable(names, entries, name):
    """The variable node feeding input ``name`` (of the op's input ``names``), or None
    when no such input is given or a computed entry feeds it."""
    k = names.index(name) if name in names else -1
    if 0 <= k < len(entries) and entries[k][0].op is None:
        return entries[k][0]
    return None


def _mxnet_node(d, entries, where, version):
    try:
        attrs, user = mxnet_json.node_fields(d), {}
    except ValueError as e:
        raise _bad(f"{where}: {e}") from None
    if version < mxnet_json.CURRENT_VERSION:   # as MXNet, upgrade only older files
        attrs, own, per_input = mxnet_json.split_hidden(attrs)
    else:
        own, per_input = {}, {}
    if d["op"] == "null":
        user.update(attrs)
        user.update(own)
        for hidden in per_input.values():       # a variable keeps such keys as they are
            user.update({key: v for key, _, v in hidden})
        return Node(None, d["name"], user_attrs=user)
    op = _op_of(d, where)
    if version < 905 and op.name in ("argmax", "argmin") and attrs.get("axis") == "-1":
        del attrs["axis"]       # MXNet < 0.9.5 spelled "over all axes" -1
    params = {}
    for k, v in attrs.items():
        if k in op.params:
            params[k] = v
        elif (k.startswith("__") and k.endswith("__")) or k in op.ignored_params or \
                mxnet_json.is_hidden_key(k):
            user[k] = v
        else:
            raise _bad(f"{where}: {op.name} has no parameter {k!r} (value {v!r}); minpy "
                       f"knows {sorted(op.params)}")
    user.update(own)
    parsed = _parse(op, params, where)
    names = op.arguments(parsed) + op.aux(parsed)
    if version < 900:       # MXNet < 0.9 left the auxiliary states out of the file
        for arg in names[len(entries):]:
            var = Node(None, f"{d['name']}_{arg}", user_attrs=dict(attrs))
            entries.append((var, 0))
    if version < 904:       # MXNet 0.9.4 began marking how aux states start
        for arg, init in mxnet_json.AUX_INIT.get(op.name, {}).items():
            var = _input_variable(names, entries, arg)
            if var is not None:
                var.user_attrs.setdefault("__init__", init)
    for name, hidden in per_input.items():
        var = _input_variable(names, entries, name)
        for key, dunder, v in hidden:
            if var is not None:
                var.user_attrs[dunder] = v
            else:
                user[key] = v
    _check_arity(op, parsed, entries, where)
    return Node(op, d["name"], entries, parsed, user)
