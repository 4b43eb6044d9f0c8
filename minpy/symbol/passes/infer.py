"""Shape and dtype inference over an :class:`~minpy.symbol.graph.IndexedGraph`.

Each operator's rule completes what it can from what is known (forward
and, where the op knows how, backward: FullyConnected infers its weight from
its data); the pass sweeps the graph, alternately in topological and in
reverse order (as MXNet does), until nothing changes, so partially known
inputs give partially known results (None stands for unknown).  An inconsistency raises :class:`ShapeError` (or
:class:`DTypeError`) naming the node, its op, its input shapes and what was
expected.
"""
import numpy

from ..registry import DTypeError, Mismatch, ShapeError

__all__ = ["infer_shapes", "infer_types", "input_names"]


def input_names(node):
    """Names of ``node``'s inputs: its op's argument names then aux names."""
    return list(node.op.arguments(node.attrs)) + list(node.op.aux(node.attrs))


def _fmt(v):
    if v is None:
        return "?"
    if isinstance(v, numpy.dtype):
        return v.name
    return str(tuple(v))


def _context(kind, node, ins):
    names = input_names(node)
    parts = ", ".join(f"{n}={_fmt(v)}" for n, v in zip(names, ins))
    return f"{kind} inference failed at {node.op.name} node {node.name!r} (inputs: {parts})"


def _run(graph, values, kind, err, rule_name, max_sweeps=16):
    nodes = graph.nodes
    forward = list(enumerate(nodes))
    for sweep in range(max_sweeps):
        changed = False
        # alternate directions (as MXNet does), so facts known only downstream
        # (an output shape) travel up a chain in one sweep
        for nid, node in (forward if sweep % 2 == 0 else reversed(forward)):
            if node.op is None:
                continue
            in_ids, out_ids = graph.inputs[nid], graph.outputs(nid)
            ins = [values[e] for e in in_ids]
            outs = [values[e] for e in out_ids]
            try:
                if node.op.is_backward:
                    fid = graph.node_id(node.fwd)
                    fwd_args = graph.inputs[fid][:node.fwd.num_args]
                    for i, e in enumerate(fwd_args[:len(outs)]):
                        if outs[i] is None:
                            outs[i] = values[e]
                new_ins, new_outs = getattr(node.op, rule_name)(node.attrs, ins, outs)
            except Mismatch as m:
                raise err(f"{_context(kind, node, ins)}: {m}") from None
            for e, v, i in zip(in_ids, new_ins, range(len(in_ids))):
                if v is not None and values[e] is None:
                    values[e] = v
                    changed = True
                elif v is not None and values[e] != v:
                    raise err(f"{_context(kind, node, ins)}: {input_names(node)[i]}: "
                              f"expected {_fmt(v)}, got {_fmt(values[e])}")
            for k, (e, v) in enumerate(zip(out_ids, new_outs)):
                if v is not None and values[e] is None:
                    values[e] = v
                    changed = True
                elif v is not None and values[e] != v:
                    raise err(f"{_context(kind, node, ins)}: output {k}: expected "
                              f"{_fmt(v)}, got {_fmt(values[e])}")
        if not changed:
            break
    return values


def infer_shapes(graph, known):
    """Complete entry shapes; ``known`` is a list (one per entry id) of tuples/None.

    Returns the list, filled in place.  Raises ShapeError.
    """
    for i, v in enumerate(known):
        if v is not None:
            known[i] = tuple(int(d) for d in v)
    return _run(graph, known, "shape", ShapeError, "infer_shape")


def infer_types(graph, known):
    """Complete entry dtypes; ``known`` is a list of numpy dtypes/None.

    Returns the list, filled in place.  Raises DTypeError.
    """
    for i, v in enumerate(known):
        if v is not None:
            known[i] = numpy.dtype(v)
    return _run(graph, known, "dtype", DTypeError, "infer_type")
