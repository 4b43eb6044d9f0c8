"""Graph rewrite: BatchNorm followed by Activation(relu) becomes one ``_BatchNormReLU``.

The fused op (``minpy.symbol.ops.nn``) normalizes, scales, shifts and clamps
in one pass after the statistics pass, and its gradient reads the ReLU mask
from its own output, so the BatchNorm output and the two elementwise passes
of the separate Activation and its gradient disappear from the plan.
"""
from ..graph import Node, topo_sort
from ..registry import OPS

__all__ = ["fuse_batchnorm_relu"]


_MIRROR_ATTRS = ("__mirror_stage__", "force_mirroring")


def _is_relu(node):
    return node.op is not None and node.op.name == "Activation" and \
        node.attrs.get("act_type") == "relu"


def fuse_batchnorm_relu(heads):
    """A copy of the graph under ``heads`` with every BatchNorm -> relu pair fused.

    A pair is fused when the BatchNorm's output 0 feeds exactly one consumer,
    that consumer is ``Activation(act_type='relu')``, and no head is the
    BatchNorm's output (its hidden mean/var must have no consumer either).
    The fused node takes the Activation's name (so output names stay) and the
    BatchNorm's inputs, parameters and aux states; user attributes of both are
    kept (the Activation's win on a clash).

    Args:
        heads: head entries ``(node, index)`` of a forward graph (before the
            gradient is built).
    Returns:
        The new head entries.  Operator nodes are copies (the input graph is
        left untouched); variable nodes are the very same Node objects.

    See also minpy.symbol.graph.topo_sort.
    """
    heads = list(heads)
    nodes = topo_sort(heads)
    uses = {}
    for n in nodes:
        for e in n.inputs:
            key = (id(e[0]), e[1])
            uses.setdefault(key, []).append(n)
    head_keys = {(id(h[0]), h[1]) for h in heads}
    fused_op = OPS["_BatchNormReLU"]

    def fusable(bn):
        if bn.op is None or bn.op.name != "BatchNorm" or bn.fwd is not None:
            return None
        users = uses.get((id(bn), 0), [])
        if len(users) != 1 or (id(bn), 0) in head_keys:
            return None
        act = users[0]
        if not _is_relu(act) or [e for e in act.inputs] != [(bn, 0)]:
            return None
        for i in range(1, bn.num_outputs):
            if uses.get((id(bn), i)) or (id(bn), i) in head_keys:
                return None
        # the user's mirror decisions name these nodes: keep them apart
        if any(k in n.user_attrs for n in (bn, act) for k in _MIRROR_ATTRS):
            return None
        return act

    # act node id -> the fused node replacing it; bn node id -> same fused node
    new = {}
    absorbed = set()
    for n in nodes:
        if n.op is None:
            continue
        act = fusable(n)
        if act is not None:
            absorbed.add(id(n))
            new[id(act)] = ("fuse", n)

    def remap(e):
        src = new[id(e[0])] if id(e[0]) in new else e[0]
        return (src, e[1])

    for n in nodes:
        if n.op is None:
            new[id(n)] = n
            continue
        if id(n) in absorbed:
            continue
        tag = new.get(id(n))
        if isinstance(tag, tuple):
            bn = tag[1]
            attrs = dict(bn.attrs)
            fused = Node(fused_op, n.name, [remap(e) for e in bn.inputs], attrs,
                         dict(bn.user_attrs, **n.user_attrs))
            new[id(n)] = fused
            continue
        fwd = new.get(id(n.fwd)) if n.fwd is not None else None
        new[id(n)] = Node(n.op, n.name, [remap(e) for e in n.inputs], dict(n.attrs),
                          dict(n.user_attrs), fwd=fwd)
    return [remap(h) for h in heads]
