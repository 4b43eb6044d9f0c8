"""The graph IR under ``Symbol``: nodes, entries, topological order, indexing.

A **node** is one operator application or one variable:

- ``node.op``: the :class:`~minpy.symbol.registry.OpDef`, or None for a
  variable (an argument, an auxiliary state or a head gradient);
- ``node.name``: a string, unique among the variables of a bound graph;
- ``node.inputs``: list of entries ``(node, output_index)``; the first
  ``len(op.arguments(attrs))`` are arguments, the rest auxiliary states
  (BatchNorm's moving mean/var), which the op may update in training;
- ``node.attrs``: the op's parameters, parsed (ints, floats, bools,
  strings, tuples of ints) -- JSON-serialisable once tuples become lists;
- ``node.user_attrs``: user attributes, strings (``__shape__``,
  ``__dtype__`` on variables; ``__mirror_stage__``, ``force_mirroring``,
  ``__lr_mult__`` ...), see ``Symbol.attr``/``Symbol._set_attr``;
- ``node.fwd``: for a backward node, the forward node it differentiates
  (backward ops produce the gradients of every argument input of ``fwd``,
  in order, so their output shapes/dtypes are ``fwd``'s argument shapes);
- ``node.num_outputs``: outputs including hidden ones (Dropout's mask,
  BatchNorm's saved mean/var); ``node.num_visible`` of them are listed by
  ``Symbol.list_outputs``.

An **entry** is one output of one node, ``(node, index)``.  Nodes compare
by identity, so entries are hashable tuples.

:class:`IndexedGraph` numbers the nodes reachable from a list of head
entries in topological order (inputs before users; computed iteratively,
no recursion limit) and numbers their entries densely, which is the form
the memory planner (``minpy.symbol.passes.plan_memory.plan_memory``) consumes.
"""

__all__ = ["Node", "IndexedGraph", "topo_sort"]


class Node:
    """One operator application or variable of a symbolic graph (see module doc)."""

    __slots__ = ("op", "name", "inputs", "attrs", "user_attrs", "fwd", "__weakref__")

    def __init__(self, op, name, inputs=(), attrs=None, user_attrs=None, fwd=None):
        self.op = op
        self.name = name
        self.inputs = list(inputs)
        self.attrs = {} if attrs is None else attrs
        self.user_attrs = {} if user_attrs is None else user_attrs
        self.fwd = fwd

    @property
    def is_variable(self):
        """True for a variable node (no op)."""
        return self.op is None

    @property
    def num_outputs(self):
        """Number of outputs, hidden ones included."""
        return 1 if self.op is None else self.op.num_outputs(self.attrs)

    @property
    def num_visible(self):
        """Number of outputs shown by ``list_outputs``."""
        return 1 if self.op is None else self.op.num_visible(self.attrs)

    @property
    def num_args(self):
        """Number of argument inputs (the rest of ``inputs`` are aux states)."""
        return 0 if self.op is None else len(self.op.arguments(self.attrs))

    def output_names(self):
        """Names of the visible outputs as ``list_outputs`` shows them."""
        if self.op is None:
            return [self.name]
        return [f"{self.name}_{o}" for o in self.op.outputs(self.attrs)]

    def __repr__(self):
        kind = "Variable" if self.op is None else self.op.name
        return f"<Node {kind} {self.name!r}>"


def topo_sort(heads):
    """Nodes reachable from ``heads`` (entries or nodes), inputs first.

    Depth-first post-order visiting inputs in order (MXNet's ``DFSVisit``),
    with an explicit stack.  Backward nodes also depend on their ``fwd``
    node (it is visited after their data inputs).
    """
    order, seen = [], set()
    for h in heads:
        root = h[0] if isinstance(h, tuple) else h
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, _preds(root), 0)]
        while stack:
            node, preds, i = stack[-1]
            if i < len(preds):
                stack[-1] = (node, preds, i + 1)
                p = preds[i]
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append((p, _preds(p), 0))
            else:
                stack.pop()
                order.append(node)
    return order


def _preds(node):
    ps = [e[0] for e in node.inputs]
    if node.fwd is not None:
        ps.append(node.fwd)
    return ps


class IndexedGraph:
    """Dense numbering of the nodes and entries reachable from ``heads``.

    Attributes:
        nodes: nodes in topological order; a node's id is its position.
        heads: the head entries as entry ids.
        num_entries: total number of entries.
        inputs: ``inputs[nid]`` list of input entry ids of node ``nid``.
    """

    def __init__(self, heads):
        heads = list(heads)
        self.nodes = topo_sort(heads)
        self._nid = {id(n): i for i, n in enumerate(self.nodes)}
        self.entry_start = []
        k = 0
        for n in self.nodes:
            self.entry_start.append(k)
            k += n.num_outputs
        self.num_entries = k
        self.inputs = [[self.entry_id(e) for e in n.inputs] for n in self.nodes]
        self.heads = [self.entry_id(h) for h in heads]

    def node_id(self, node):
        """The id of ``node`` (KeyError if it is not in this graph)."""
        return self._nid[id(node)]

    def __contains__(self, node):
        return id(node) in self._nid

    def entry_id(self, entry):
        """The id of entry ``(node, index)``."""
        node, idx = entry
        return self.entry_start[self._nid[id(node)]] + idx

    def entry(self, eid):
        """The ``(node, index)`` of entry id ``eid``."""
        import bisect
        nid = bisect.bisect_right(self.entry_start, eid) - 1
        return self.nodes[nid], eid - self.entry_start[nid]

    def outputs(self, nid):
        """Entry ids of node ``nid``'s outputs."""
        s = self.entry_start[nid]
        return list(range(s, s + self.nodes[nid].num_outputs))

    def op_nodes(self):
        """Ids of the operator (non-variable) nodes, in topological order."""
        return [i for i, n in enumerate(self.nodes) if n.op is not None]

    def variable_nodes(self):
        """Ids of the variable nodes, in topological order."""
        return [i for i, n in enumerate(self.nodes) if n.op is None]

    def planner_inputs(self, order, entry_bytes, external, inplace_of=None):
        """The arguments of ``plan_memory`` for executing ``order``.

        Args:
            order: node ids in execution order (operator nodes only).
            entry_bytes: ``{entry_id: bytes}`` for every entry.
            external: entry ids the planner must not place.
            inplace_of: ``{nid: [(input_pos, output_pos), ...]}``; default:
                each op's declared in-place pairs.
        Returns:
            dict with keys ``order``, ``inputs_of``, ``outputs_of``,
            ``entry_bytes``, ``inplace_of``, ``external``.
        """
        inputs_of = {n: list(self.inputs[n]) for n in order}
        outputs_of = {n: self.outputs(n) for n in order}
        if inplace_of is None:
            inplace_of = {n: list(self.nodes[n].op.inplace(self.nodes[n].attrs)) for n in order}
        return {"order": list(order), "inputs_of": inputs_of, "outputs_of": outputs_of,
                "entry_bytes": dict(entry_bytes), "inplace_of": inplace_of,
                "external": set(external)}
