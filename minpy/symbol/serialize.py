"""Graphs (a Symbol's outputs) <-> JSON.

Format (version 1)::

    {"minpy_symbol": 1,
     "nodes": [{"op": "null" | op name, "name": str,
                "inputs": [[node_index, output_index], ...],
                "attrs": {param: value},        # op parameters (JSON values)
                "attr": {key: str},             # user attributes
                "fwd": node_index}, ...],       # backward nodes only
     "heads": [[node_index, output_index], ...]}

Nodes are listed in topological order (inputs first).  MXNet's own JSON
(``nodes`` with ``"op": "null"``, ``inputs`` as ``[nid, idx, version]``,
parameters as strings under ``attrs``/``param``) loads as well when every op
is one minpy has.  Malformed input raises ``ValueError`` saying what is
wrong and where.
"""
import json

from .graph import Node, topo_sort
from .registry import OPS

__all__ = ["to_json", "from_json", "VERSION"]

VERSION = 1


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def to_json(outputs):
    """Versioned JSON text of ``symbol``'s graph."""
    nodes = topo_sort(outputs)
    index = {id(n): i for i, n in enumerate(nodes)}
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


def _bad(msg):
    return ValueError(f"invalid symbol JSON: {msg}")


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


def from_json(text):
    """The outputs ``[(node, index)]`` of the graph described by JSON ``text`` (this
    module's format or MXNet's); ``minpy.symbol.load_json`` makes the Symbol."""
    try:
        doc = json.loads(text)
    except (TypeError, json.JSONDecodeError) as e:
        raise _bad(f"not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise _bad(f"top level must be an object, got {type(doc).__name__}")
    if "minpy_symbol" in doc:
        if doc["minpy_symbol"] != VERSION:
            raise _bad(f"unsupported version {doc['minpy_symbol']!r} (this minpy reads "
                       f"version {VERSION})")
    elif "nodes" not in doc:
        raise _bad("missing the 'minpy_symbol' version key")
    for key in ("nodes", "heads"):
        if not isinstance(doc.get(key), list):
            raise _bad(f"missing or non-list {key!r}")
    nodes = []
    for i, d in enumerate(doc["nodes"]):
        where = f"node {i}"
        if not isinstance(d, dict):
            raise _bad(f"{where}: expected an object, got {d!r}")
        for key in ("op", "name"):
            if not isinstance(d.get(key), str):
                raise _bad(f"{where}: missing or non-string {key!r}")
        where = f"node {i} ({d['name']!r})"
        attrs = d.get("attrs", d.get("param", {}))
        user = dict(d.get("attr", {}))
        if not isinstance(attrs, dict) or not isinstance(user, dict):
            raise _bad(f"{where}: 'attrs' and 'attr' must be objects")
        inputs = d.get("inputs", [])
        if not isinstance(inputs, list):
            raise _bad(f"{where}: 'inputs' must be a list")
        entries = [_entry(v, i, f"{where} input {k}", nodes) for k, v in enumerate(inputs)]
        if d["op"] == "null":
            if entries:
                raise _bad(f"{where}: a variable has no inputs")
            user.update({k: str(v) for k, v in attrs.items()})    # MXNet keeps them here
            nodes.append(Node(None, d["name"], user_attrs=user))
            continue
        op = OPS.get(d["op"])
        if op is None:
            raise _bad(f"{where}: unknown operator {d['op']!r}")
        params = {k: v for k, v in attrs.items() if k in op.params}
        user.update({k: str(v) for k, v in attrs.items() if k not in op.params})
        try:
            parsed = op.parse(params, d["name"])
        except ValueError as e:
            raise _bad(f"{where}: {e}") from None
        node = Node(op, d["name"], entries, parsed, user)
        want = op.num_inputs(parsed)
        if len(entries) != want:
            raise _bad(f"{where}: {op.name} takes {want} inputs "
                       f"{op.arguments(parsed) + op.aux(parsed)}, got {len(entries)}")
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
