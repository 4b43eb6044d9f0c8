"""Symbolic differentiation by graph extension.

:func:`build_gradient` walks the forward graph from its heads in reverse
topological order and asks each operator for the gradient of its inputs as
*new graph nodes* (``OpDef.gradient``); the result is one graph holding
forward and backward, which the executor plans and runs as a whole.

- Each head gets a head-gradient variable (``backward(out_grads)`` fills it;
  loss operators ignore it).
- Gradients of an entry used several times are summed by an explicit
  ``ElementWiseSum`` node named ``<node>_grad_add``.
- Only nodes that depend on a requested variable are differentiated;
  auxiliary inputs never get gradients; ``BlockGrad`` returns none.
- A requested variable that no gradient reaches gets None (its gradient is
  zero).
"""
from ..graph import Node, topo_sort
from ..registry import make_node

__all__ = ["build_gradient"]


def _key(e):
    return (id(e[0]), e[1])


def _sum(terms, label):
    if not terms:
        return None
    if len(terms) == 1:
        return terms[0]
    node = make_node("ElementWiseSum", terms, {"num_args": len(terms)},
                     name=f"{label}_grad_add")
    return (node, 0)


def build_gradient(heads, wrt):
    """Extend the graph of ``heads`` with the gradients of variables ``wrt``.

    Args:
        heads: list of entries ``(node, index)``: the outputs differentiated.
        wrt: list of variable nodes.
    Returns:
        ``(grads, head_grad_vars)``: one entry or None per ``wrt`` node, and
        one head-gradient variable node per head (those no gradient reads
        are simply not part of the backward graph).
    Raises:
        ValueError: an operator on the path has no gradient.
    """
    order = topo_sort(heads)
    wanted = {id(n) for n in wrt}
    needs = set()
    for n in order:
        if id(n) in wanted or (n.op is not None and any(
                id(e[0]) in needs for e in n.inputs[:n.num_args])):
            needs.add(id(n))
    head_vars = []
    grads = {}
    for i, h in enumerate(heads):
        hv = Node(None, f"_head_grad{i}")
        head_vars.append(hv)
        if id(h[0]) in needs:
            grads.setdefault(_key(h), []).append((hv, 0))
    for n in reversed(order):
        if n.op is None or id(n) not in needs:
            continue
        og = [_sum(grads.pop((id(n), i), None), f"{n.name}_out{i}")
              for i in range(n.num_outputs)]
        if all(g is None for g in og):
            continue
        if n.op.gradient is None:
            raise ValueError(f"operator {n.op.name} (node {n.name!r}) has no gradient")
        if not n.op.sparse_grads:
            for i in range(n.num_visible):
                if og[i] is None:
                    og[i] = (make_node("zeros_like", [(n, i)]), 0)
        ig = n.op.gradient(n, og)
        for e, g in zip(n.inputs[:n.num_args], ig):
            if g is not None and id(e[0]) in needs:
                grads.setdefault(_key(e), []).append(g)
    return [_sum(grads.get((id(v), 0)), v.name) for v in wrt], head_vars
