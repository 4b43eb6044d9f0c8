"""``GraphPlan``: a symbol bound to shapes -- the forward + backward graph, the
execution order and the storage plan, computed once and without allocating.

The executor builds one and allocates what it says; ``Symbol.memory_plan``
builds one alone, which is how memory tables of large networks are made.

How the plan is made (``storage.plan_storage``): every entry (one output of one
node) of the joint graph is *external* -- arguments, their gradients, aux
states, head gradients and the graph heads, each with its own array -- or
*internal*.  Internal entries are placed in storage blocks by
``minpy.symbol.passes.plan_memory.plan_memory`` when that module exists and planning is
on (default; ``plan_memory=False`` or env ``MINPY_PLAN_MEMORY=0`` turn it
off), else by a trivial plan with one block per entry.  By default the blocks
are packed at offsets of one arena (``layout="arena"``; env
``MINPY_MEMORY_LAYOUT=blocks`` or ``memory_options={"layout": "blocks"}``
give one buffer per block, MXNet's co-share).

Mirror (``mirror=``, env ``MINPY_BACKWARD_DO_MIRROR=1``): some forward nodes
are recomputed in backward instead of kept (``minpy.symbol.passes.mirror``); the
planned program then holds duplicate nodes (``origin`` maps each to the node
whose op it runs) and the memory plan covers it.  See
``minpy.symbol.passes.mirror_choice.choose_mirror``.
"""
import math

import numpy

from .passes.fuse import fuse_graph, fusion_enabled
from .passes.fuse_bn_relu import fuse_batchnorm_relu
from .passes.gradient import build_gradient
from .graph import IndexedGraph
from .passes.infer import infer_shapes, infer_types
from .passes.mirror import apply_mirror
from .passes.mirror_choice import CHEAP_OPS, choose_mirror, mirror_mode
from .registry import ShapeError, make_node, parse_attr_value
from .passes.storage import categories as strategy_bytes, plan_storage, trivial_plan

__all__ = ["GraphPlan", "plan_storage", "trivial_plan", "choose_mirror", "mirror_mode",
           "CHEAP_OPS"]

GRAD_REQS = ("write", "add", "null")


def _normalize_req(grad_req, names):
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ValueError(f"grad_req: {len(grad_req)} values for {len(names)} arguments")
        reqs = dict(zip(names, grad_req))
    elif isinstance(grad_req, dict):
        unknown = set(grad_req) - set(names)
        if unknown:
            raise ValueError(f"grad_req: {sorted(unknown)} are not arguments")
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        raise TypeError(f"grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    for n, r in reqs.items():
        if r not in GRAD_REQS:
            raise ValueError(f"grad_req for {n!r} must be one of {GRAD_REQS}, got {r!r}")
    return reqs


class GraphPlan:
    """Forward + backward graph, shapes, dtypes, order and storage plan.

    Attributes:
        graph: the IndexedGraph of heads + gradient entries.
        fwd_order, bwd_order: operator node ids to run in forward / backward.
        shapes, dtypes: per entry id.
        arg_names, aux_names: ``list_arguments`` / ``list_auxiliary_states``.
        arg_entry, aux_entry: name -> entry id of the variable.
        grad_entry: name -> entry id holding the gradient (absent: no
            gradient reaches it, or grad_req 'null').
        grad_req: name -> 'write' | 'add' | 'null'.
        head_grad_entry: head position -> entry id of its head-gradient
            variable, for heads whose gradient is read.
        external: set of entry ids with their own arrays.
        plan: the planner's result (``storage_of``, ``block_bytes`` ...).
        order, inputs_of, outputs_of, n_forward: the program run (mirrored
            when ``recompute`` is not empty); ``origin``: duplicate node id ->
            the node whose op it runs; ``num_entries``: entries including
            the duplicates'.
        mirror: the resolved mode (None, 'forced', 'cheap', 'all');
            ``recompute``: the forward node ids recomputed in backward.
        base: the planner inputs of the graph without mirror.
    """

    def __init__(self, symbol, shapes, dtypes, grad_req="write", plan_memory=None,
                 memory_options=None, mirror=False, fusion=None):
        self.symbol = symbol
        self.fusion_arg = fusion
        self.memory_options = dict(memory_options or {})
        self.plan_enabled, self.mirror_arg = plan_memory, mirror
        args, aux = symbol._var_split()
        names = [n.name for n in args + aux]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"bind: several variables are named {dup}; give shared "
                             "parameters the same Variable object")
        self.arg_names = [n.name for n in args]
        self.aux_names = [n.name for n in aux]
        self.grad_req = _normalize_req(grad_req, self.arg_names)
        heads = list(symbol._outputs)
        if fusion_enabled(fusion):      # BatchNorm + ReLU as one op, before the gradient
            heads = fuse_batchnorm_relu(heads)
        wrt = [n for n in args if self.grad_req[n.name] != "null"]
        grads, head_vars = build_gradient(heads, wrt) if wrt else ([], [])
        fwd_nodes = {id(n) for n in IndexedGraph(heads).nodes}
        claimed, grad_heads, grad_names = set(), [], []
        for v, g in zip(wrt, grads):
            if g is None:
                continue
            if self.grad_req[v.name] == "add":
                g = (make_node("_grad_accumulate", [g], name=f"{v.name}_grad_acc"), 0)
            elif g[0].op is None or id(g[0]) in fwd_nodes or (id(g[0]), g[1]) in claimed:
                g = (make_node("_copy", [g], name=f"{v.name}_grad_copy"), 0)
            claimed.add((id(g[0]), g[1]))
            grad_heads.append(g)
            grad_names.append(v.name)
        if fusion_enabled(fusion):      # minpy.symbol.passes.fuse; env MINPY_FUSION=0 disables
            fused = fuse_graph(heads + grad_heads, len(heads), shapes, dtypes)
            heads, grad_heads = fused[:len(heads)], fused[len(heads):]
        self.graph = g = IndexedGraph(heads + grad_heads)
        nh = len(heads)
        self.heads = g.heads[:nh]
        self.grad_entry = dict(zip(grad_names, g.heads[nh:]))
        self.arg_entry = {n.name: g.entry_id((n, 0)) for n in args}
        self.aux_entry = {n.name: g.entry_id((n, 0)) for n in aux}
        self.head_grad_entry = {i: g.entry_id((hv, 0)) for i, hv in enumerate(head_vars)
                                if hv in g}
        n_fwd = len(IndexedGraph(heads).nodes)
        ops = g.op_nodes()
        self.fwd_order = [i for i in ops if i < n_fwd]
        self.bwd_order = [i for i in ops if i >= n_fwd]
        self._infer(shapes, dtypes)
        self.external = (set(self.arg_entry.values()) | set(self.aux_entry.values())
                         | set(self.grad_entry.values()) | set(self.head_grad_entry.values())
                         | set(self.heads))
        self.entry_bytes = {e: math.prod(self.shapes[e]) * self.dtypes[e].itemsize
                            for e in range(g.num_entries)}
        kw = g.planner_inputs(self.fwd_order + self.bwd_order, self.entry_bytes, self.external,
                              self._inplace_pairs())
        self.base = kw
        self.num_entries, self.origin = g.num_entries, {}
        self.mirror = mirror_mode(mirror) if self.bwd_order else None
        self.recompute, plan = set(), None
        if self.mirror:
            self.recompute, kw, m, plan, label = self.plan_mirror(self.mirror)
            if m is not None:
                self._adopt(m)
            if plan is not None:
                self.planner = label
        # the program the executor runs: node ids in order, their entries
        self.order, self.n_forward = kw["order"], len(self.fwd_order)
        self.inputs_of, self.outputs_of = kw["inputs_of"], kw["outputs_of"]
        self.inplace_of = kw["inplace_of"]
        if plan is None:
            plan, self.planner = plan_storage(kw, plan_memory, memory_options)
        self.plan = plan
        self._check_plan(kw)

    @classmethod
    def from_shapes(cls, symbol, grad_req="write", type_dict=None, plan_memory=None,
                    memory_options=None, mirror=False, **shapes):
        """Plan ``symbol`` for input shapes ``shapes`` (and dtypes ``type_dict``)."""
        return cls(symbol, shapes, type_dict or {}, grad_req, plan_memory, memory_options,
                   mirror)

    # --------------------------------------------------------------- mirror
    def node_of(self, nid):
        """The graph node whose op program node ``nid`` runs (duplicates included)."""
        return self.graph.nodes[self.origin.get(nid, nid)]

    def node_cost(self, nid):
        """Rough multiply-adds of forward node ``nid`` (for the mirror's tie-breaks)."""
        node = self.graph.nodes[nid]
        outs = self.graph.outputs(nid)
        n = sum(math.prod(self.shapes[e]) for e in outs)
        ins = self.graph.inputs[nid]
        if node.op.name == "Convolution":
            return n * math.prod(node.attrs["kernel"]) * \
                self.shapes[ins[0]][1] // node.attrs["num_group"]
        if node.op.name in ("FullyConnected", "dot"):
            return n * self.shapes[ins[1]][-1]
        return n

    def plan_mirror(self, mode):
        """Choose and plan the recomputation for ``mode`` ('forced', 'cheap',
        'all'; see :func:`choose_mirror`) with this plan's memory options.

        A searched choice is kept only if it plans fewer bytes than the
        forced-only one.  Returns ``(recompute, planner_inputs,
        MirroredGraph or None, plan or None, planner_label)``; the plan is
        None when nothing is recomputed.
        """
        kw = self.base
        recompute = choose_mirror(self, kw, mode)
        if not recompute:
            return set(), kw, None, None, None
        mkw, m = self._mirrored(recompute)
        plan, label = plan_storage(mkw, self.plan_enabled, self.memory_options)
        if mode != "forced":
            forced = choose_mirror(self, kw, "forced")
            if forced != recompute:
                fkw, fm = self._mirrored(forced) if forced else (kw, None)
                fplan, flabel = plan_storage(fkw, self.plan_enabled, self.memory_options)
                if fplan.total_bytes <= plan.total_bytes:
                    return forced, fkw, fm, fplan, flabel
        return recompute, mkw, m, plan, label

    def _mirrored(self, recompute):
        """Planner inputs of the graph with ``recompute`` duplicated into backward,
        and the MirroredGraph (``mirror.apply_mirror``)."""
        kw = self.base
        m = apply_mirror(kw["order"], kw["inputs_of"], kw["outputs_of"], recompute,
                         len(self.fwd_order), kw["external"])
        first = self.graph.num_entries
        if sorted(m.entry_origin) != list(range(first, first + len(m.entry_origin))):
            raise RuntimeError("mirror: duplicate entry ids collide with the graph's")
        return ({"order": m.order, "inputs_of": m.inputs_of, "outputs_of": m.outputs_of,
                 "entry_bytes": m.bytes_of(kw["entry_bytes"]),
                 "inplace_of": m.inplace_from(kw["inplace_of"]), "external": kw["external"]},
                m)

    def _adopt(self, m):
        new = sorted(m.entry_origin)
        self.origin = dict(m.origin)
        self.num_entries = self.graph.num_entries + len(new)
        self.shapes = list(self.shapes) + [self.shapes[m.entry_origin[e]] for e in new]
        self.dtypes = list(self.dtypes) + [self.dtypes[m.entry_origin[e]] for e in new]
        self.entry_bytes = m.bytes_of(self.entry_bytes)

    # ------------------------------------------------------------ inference
    def _infer(self, shapes, dtypes):
        g = self.graph
        inputs = dict(self.arg_entry, **self.aux_entry)
        for k in list(shapes) + list(dtypes):
            if k not in inputs:
                raise ValueError(f"bind: {k!r} is not an input of the symbol; inputs are "
                                 f"{list(inputs)}")
        sh, ty = [None] * g.num_entries, [None] * g.num_entries
        for name, e in inputs.items():
            node = g.entry(e)[0]
            s = shapes.get(name)
            if s is None and "__shape__" in node.user_attrs:
                s = parse_attr_value(node.user_attrs["__shape__"], "shape")
            sh[e] = None if s is None else tuple(s)
            t = dtypes.get(name)
            if t is None and "__dtype__" in node.user_attrs:
                t = parse_attr_value(node.user_attrs["__dtype__"], "dtype")
            ty[e] = None if t is None else numpy.dtype(t)
        var_entries = [g.entry_start[i] for i in g.variable_nodes()]
        for _ in range(4):
            before = (list(sh), list(ty))
            infer_shapes(g, sh)
            infer_types(g, ty)
            for i, e in self.head_grad_entry.items():   # head gradients: like their heads
                if sh[e] is None:
                    sh[e] = sh[self.heads[i]]
                if ty[e] is None:
                    ty[e] = ty[self.heads[i]]
            for e in var_entries:
                if ty[e] is None:
                    ty[e] = numpy.dtype(numpy.float32)    # MXNet's default dtype
            if (sh, ty) == before:
                break
        missing = [g.entry(e)[0].name for e in range(g.num_entries)
                   if sh[e] is None and g.entry(e)[0].op is None]
        if missing:
            raise ShapeError(f"cannot infer the shapes of {missing}; pass them as keyword "
                             "shapes (simple_bind(data=(32, 100), ...))")
        unknown = [f"{g.entry(e)[0].name}[{g.entry(e)[1]}]" for e in range(g.num_entries)
                   if sh[e] is None or ty[e] is None]
        if unknown:
            raise ShapeError(f"cannot infer the shapes/dtypes of entries {unknown}")
        self.shapes, self.dtypes = sh, ty

    def _inplace_pairs(self):
        g, out = self.graph, {}
        for n in self.fwd_order + self.bwd_order:
            node = g.nodes[n]
            ins, outs = g.inputs[n], g.outputs(n)
            out[n] = [(i, o) for i, o in node.op.inplace(node.attrs)
                      if i < len(ins) and o < len(outs)
                      and self.shapes[ins[i]] is not None
                      and math.prod(self.shapes[ins[i]]) == math.prod(self.shapes[outs[o]])
                      and self.dtypes[ins[i]] == self.dtypes[outs[o]]]
        return out

    def _check_plan(self, kw):
        p = self.plan
        for n in kw["order"]:
            for e in kw["outputs_of"][n]:
                if e in self.external:
                    continue
                b = p.storage_of.get(e)
                if b is None or p.block_bytes[b] < self.entry_bytes[e]:
                    raise RuntimeError(f"memory plan ({self.planner}) gives entry {e} "
                                       f"({self.entry_bytes[e]} bytes) no block large enough")

    # ---------------------------------------------------------------- report
    def memory_report(self, categories=True):
        """Bytes of the bound graph.

        Returns dict: ``planner``; ``internal_planned`` (bytes of the blocks
        or arena actually planned), ``internal_naive`` (one block per entry),
        ``internal_lower_bound`` (``MemoryPlan.lower_bound``); ``arguments``,
        ``gradients``, ``aux_states``, ``outputs``, ``head_grads`` (external
        arrays); ``total`` (planned + external); ``num_blocks``,
        ``num_internal_entries``, ``num_nodes``, ``num_recomputed``; and,
        with ``categories``, the keys of ``minpy.symbol.plan_report``
        ('naive', 'inplace', 'coshare', 'both', 'mirror', 'lower_bound',
        'args', 'grads' ...) for this graph.
        """
        b = self.entry_bytes
        heads = set(self.heads) - set(self.arg_entry.values())
        p = self.plan
        r = {"planner": self.planner,
             "internal_planned": int(p.total_bytes), "internal_naive": int(p.naive_bytes),
             "internal_lower_bound": int(p.lower_bound),
             "arguments": sum(b[e] for e in self.arg_entry.values()),
             "gradients": sum(b[e] for e in self.grad_entry.values()),
             "aux_states": sum(b[e] for e in self.aux_entry.values()),
             "outputs": sum(b[e] for e in heads),
             "head_grads": sum(b[e] for e in self.head_grad_entry.values()),
             "num_blocks": len(p.block_bytes), "num_internal_entries": len(p.storage_of),
             "num_nodes": len(self.fwd_order) + len(self.bwd_order),
             "num_recomputed": len(self.recompute)}
        r["total"] = r["internal_planned"] + sum(r[k] for k in (
            "arguments", "gradients", "aux_states", "outputs", "head_grads"))
        if categories:
            r.update(strategy_bytes(self))
        return r
