"""The elementwise fusion pass: groups of elementwise nodes become one kernel node.

``fuse_graph(heads)`` copies the graph reachable from the head entries
(variable nodes stay the very same objects), finds maximal convex groups of
elementwise nodes -- ``elemwise_*``, ``broadcast_*``, the ``_*_scalar`` ops,
unary math, ``ElementWiseSum``, ``_copy``/``BlockGrad``, ``Activation``,
``LeakyReLU``, their backward ops, the ``_greater_scalar`` masks -- and
replaces each group of two or more by one ``_FusedElemwise`` node computing a
:class:`~minpy.fusion.cpu.Program`.  A member whose value is used outside
its group (or is a head) becomes one of the fused node's outputs.  Forward
nodes that a backward node refers to (``node.fwd``) are never fused, and a
group never mixes forward and backward nodes (``num_forward``), so the
executor's forward/backward split is unchanged.

At run time the fused node compiles its Program for the bound dtypes and
shapes (``fusion.compile_program``) and uses the fused kernel where it was
measured to win (``Kernel.wins``), else ``fusion.evaluate`` with ``out=``.
Env ``MINPY_FUSION_KERNEL``: ``auto`` (default), ``always`` (use the fused
kernel whatever the measurement says) or ``never``.

GraphPlan calls the pass after building the gradient when fusion is on:
env ``MINPY_FUSION`` (``0``/``false``/``off`` disable it) or its ``fusion=``
argument.  One DEBUG line on logger ``minpy.symbol.passes.fuse`` per call reports
the groups, the node counts and the bytes of intermediates no longer stored.
"""
import logging
import math
import os

import numpy

from ...fusion import cpu as fusion
from ..graph import IndexedGraph, Node, topo_sort
from .infer import infer_shapes, infer_types
from ..registry import (DTypeError, Mismatch, OpDef, ShapeError, auto_name, parse_attr_value,
                       register, same_type)

__all__ = ["fuse_graph", "fusion_enabled", "FUSIBLE"]

log = logging.getLogger("minpy.symbol.passes.fuse")

_SCALAR = {"_plus_scalar": ("add", False), "_minus_scalar": ("subtract", False),
           "_rminus_scalar": ("subtract", True), "_mul_scalar": ("multiply", False),
           "_div_scalar": ("divide", False), "_rdiv_scalar": ("divide", True),
           "_power_scalar": ("power", False), "_rpower_scalar": ("power", True)}
_BIN = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "power": "power"}
_UNARY = ("negative", "exp", "log", "sqrt", "square", "tanh", "sigmoid", "abs", "sign")

#: fusible op name -> True when all its inputs and its output share one shape
#: (False: NumPy broadcasting)
FUSIBLE = dict(
    [(f"elemwise_{k}", True) for k in ("add", "sub", "mul", "div")]
    + [(f"broadcast_{k}", False) for k in _BIN]
    + [(k, True) for k in list(_SCALAR) + list(_UNARY)]
    + [(k, True) for k in ("_greater_scalar", "ElementWiseSum", "_copy", "BlockGrad",
                           "Activation", "_backward_Activation", "LeakyReLU",
                           "_backward_LeakyReLU")])


def fusion_enabled(fusion_arg=None):
    """Whether GraphPlan fuses: ``fusion_arg`` when not None, else env
    ``MINPY_FUSION`` ("0", "false", "off", "no" disable; default on)."""
    if fusion_arg is not None:
        return bool(fusion_arg)
    return os.environ.get("MINPY_FUSION", "1").strip().lower() not in ("0", "false", "off",
                                                                      "no")


# ---------------------------------------------------------------- lowering
def _emit(op, attrs, a, add, dtype):
    """Append the instructions of one node; return its result operand.

    ``a``: the operands of its inputs; ``add(name, *operands[, dtype=])``
    appends an instruction; ``dtype``: the graph's dtype (masks are cast to it,
    as the node's ``out=`` does).  Each expansion mirrors the op's forward.
    """
    if op.startswith("elemwise_") or op.startswith("broadcast_"):
        return add(_BIN[op.split("_", 1)[1]], a[0], a[1])
    if op in _SCALAR:
        name, rev = _SCALAR[op]
        s = ("c", attrs["scalar"])
        return add(name, s, a[0]) if rev else add(name, a[0], s)
    if op == "_greater_scalar":
        return add(fusion.CAST, add("greater", a[0], ("c", attrs["scalar"])), dtype=dtype)
    if op in _UNARY:
        return add(op, a[0])
    if op == "ElementWiseSum":
        r = a[0]
        for x in a[1:]:
            r = add("add", r, x)
        return r
    if op in ("_copy", "BlockGrad"):
        return a[0]
    if op == "Activation":
        t = attrs["act_type"]
        if t == "softrelu":
            return add("logaddexp", a[0], ("c", 0))
        return add(t, a[0])                      # relu, sigmoid, tanh
    if op == "_backward_Activation":
        g, y, t = a[0], a[1], attrs["act_type"]
        if t == "relu":
            r = add("greater", y, ("c", 0))
        elif t == "tanh":
            r = add("subtract", ("c", 1), add("multiply", y, y))
        elif t == "softrelu":
            r = add("negative", add("expm1", add("negative", y)))
        else:
            r = add("multiply", y, add("subtract", ("c", 1), y))
        return add("multiply", g, r)
    if op == "LeakyReLU":
        x, s = a[0], ("c", attrs["slope"])
        neg = add("multiply", x, s) if attrs["act_type"] == "leaky" else \
            add("multiply", add("expm1", x), s)
        return add("where", add("greater", x, ("c", 0)), x, neg)
    if op == "_backward_LeakyReLU":
        g, y, s = a[0], a[1], ("c", attrs["slope"])
        mask = add("greater", y, ("c", 0))
        if attrs["act_type"] == "leaky":
            r = add(fusion.CAST, add("where", mask, ("c", 1), s), dtype=dtype)
        else:
            r = add("where", mask, ("c", 1), add("add", y, s))
        return add("multiply", g, r)
    raise AssertionError(op)


def _build_program(attrs, dtype):
    instrs, val = [], []

    def add(name, *ops, dtype=None):
        instrs.append((name, ops) if dtype is None else (name, ops, dtype))
        return ("t", len(instrs) - 1)
    for op, at, refs, _ in attrs["descs"]:
        a = [r if r[0] == "in" else val[r[1]] for r in refs]
        val.append(_emit(op, at, a, add, dtype))
    return fusion.Program(attrs["num_inputs"], instrs, [val[d] for d in attrs["outputs"]])


def program_of(node, dtype):
    """The :class:`~minpy.fusion.cpu.Program` a ``_FusedElemwise`` node runs for
    graph dtype ``dtype`` (built once per dtype)."""
    progs = node.attrs["state"]["programs"]
    dtype = numpy.dtype(dtype)
    p = progs.get(dtype)
    if p is None:
        p = progs[dtype] = _build_program(node.attrs, dtype)
    return p


# ----------------------------------------------------------- the fused op
def _fused_shape(attrs, ins, outs):
    descs, outd = attrs["descs"], attrs["outputs"]
    vals = [None] * len(descs)
    for _ in range(len(descs) + 2):
        changed = False

        def setv(ref, v, where):
            nonlocal changed
            box, i = (ins, ref[1]) if ref[0] == "in" else (vals, ref[1])
            if box[i] is None:
                box[i] = v
                changed = True
            elif box[i] != v:
                raise Mismatch(f"{where}: shapes {box[i]} and {v} must be equal")
        for k, d in enumerate(outd):
            if outs[k] is not None:
                setv(("n", d), tuple(outs[k]), f"output {k}")
        for i, (op, _, refs, strict) in enumerate(descs):
            shp = [ins[r[1]] if r[0] == "in" else vals[r[1]] for r in refs]
            if strict:
                known = next((s for s in shp + [vals[i]] if s is not None), None)
                if known is not None:
                    for r in list(refs) + [("n", i)]:
                        setv(r, known, f"fused {op} (member {i})")
            elif all(s is not None for s in shp) and vals[i] is None:
                try:
                    setv(("n", i), tuple(numpy.broadcast_shapes(*shp)), op)
                except ValueError:
                    raise Mismatch(f"fused {op} (member {i}): shapes {shp} cannot be "
                                   "broadcast together") from None
        if not changed:
            break
    return ins, [vals[d] for d in outd]


def _kernel_mode():
    return os.environ.get("MINPY_FUSION_KERNEL", "auto").strip().lower()


def _fused_forward(rc, attrs, ins, outs):
    xp, dtype = rc.xp, outs[0].dtype
    state = attrs["state"]
    prog = state["programs"].get(dtype)
    if prog is None:
        prog = state["programs"][dtype] = _build_program(attrs, dtype)
    shape = outs[0].shape
    mode = _kernel_mode()
    # kernels are compiled for NumPy (numba) and CuPy; another namespace evaluates
    target = "numpy" if xp is numpy else "cupy" if getattr(xp, "__name__", "") == "cupy" \
        else None
    if mode != "never" and target is not None and all(o.shape == shape for o in outs):
        key = (xp.__name__, shape) + tuple((a.shape, a.dtype.str) for a in ins)
        k = state["kernels"].get(key, False)
        if k is False:
            k = None
            try:
                k = fusion.compile_program(prog, [a.dtype for a in ins], [a.shape for a in ins],
                                           shape, target)
                if [numpy.dtype(d) for d in k.out_dtypes] != [o.dtype for o in outs]:
                    k = None            # evaluate raises NumPy's casting error
            except (TypeError, ValueError):
                k = None                # evaluate raises NumPy's error, if any
            state["kernels"][key] = k
        if k is not None and (xp is not numpy or (k.fused and (mode == "always" or k.wins))):
            k(ins, outs)
            return
    fusion.evaluate(prog, ins, xp, outs)


_FUSED_OP = register(OpDef(
    "_FusedElemwise", forward=_fused_forward, infer_shape=_fused_shape, infer_type=same_type,
    arguments=lambda attrs: [f"arg{i}" for i in range(attrs["num_inputs"])],
    outputs=lambda attrs: [f"output{i}" for i in range(len(attrs["outputs"]))],
    inplace=lambda attrs: [(i, o) for o in range(len(attrs["outputs"]))
                           for i in range(attrs["num_inputs"])],
    doc="A group of elementwise nodes run as one runtime-compiled kernel (made by "
        "minpy.symbol.passes.fuse.fuse_graph; it has no gradient: fusion runs after autodiff)."))


# ----------------------------------------------------------------- grouping
def _fusible(node, referenced):
    op = node.op
    if op is None or op.name not in FUSIBLE or id(node) in referenced:
        return False
    if node.num_outputs != 1 or "force_mirroring" in node.user_attrs:
        return False
    if op.name == "LeakyReLU" or op.name == "_backward_LeakyReLU":
        return node.attrs.get("act_type") in ("leaky", "elu")
    if op.name == "Activation" or op.name == "_backward_Activation":
        return node.attrs.get("act_type") in ("relu", "sigmoid", "tanh", "softrelu")
    return True


def _groups(nodes, fwd_side, referenced):
    """Maximal convex groups (union-find over group ids), in topological order."""
    parent, group, anc, ext, members = {}, {}, {}, {}, {}

    def find(g):
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    def legal(n, roots):
        for p in [e[0] for e in n.inputs] + ([n.fwd] if n.fwd is not None else []):
            g = group.get(id(p))
            if g is not None and find(g) in roots:
                continue
            if any(find(x) in roots for x in anc[id(p)]):
                return False
        for r in roots:
            for x in ext[r]:
                g = group.get(id(x))
                if g is not None and find(g) in roots:
                    continue
                if any(find(y) in roots for y in anc[id(x)]):
                    return False
        return True
    for n in nodes:
        preds = [e[0] for e in n.inputs] + ([n.fwd] if n.fwd is not None else [])
        a = set()
        for p in preds:
            a |= anc[id(p)]
        if _fusible(n, referenced):
            side = id(n) in fwd_side
            cands = []
            for e in n.inputs:
                g = group.get(id(e[0]))
                if g is not None and (id(e[0]) in fwd_side) == side:
                    r = find(g)
                    if r not in cands:
                        cands.append(r)
            chosen = set()
            for r in cands:
                if legal(n, chosen | {r}):
                    chosen.add(r)
            gid = len(parent)
            parent[gid] = gid
            mem, ex = [n], list(preds)
            for r in chosen:
                parent[r] = gid
                mem = members.pop(r) + mem
                ex += ext.pop(r)
            members[gid] = mem
            ids = {id(m) for m in mem}
            ext[gid] = [x for x in {id(x): x for x in ex}.values() if id(x) not in ids]
            group[id(n)] = gid
            a.add(gid)
        anc[id(n)] = frozenset(a)
    order = {id(n): i for i, n in enumerate(nodes)}
    return [sorted(m, key=lambda x: order[id(x)]) for m in members.values() if len(m) > 1]


def fuse_graph(heads, num_forward=None, shapes=None, dtypes=None):
    """Fuse groups of elementwise nodes of the graph of ``heads`` (see module doc).

    Args:
        heads: head entries ``(node, index)``.
        num_forward: the first ``num_forward`` heads are the forward outputs,
            the rest gradients (a group never mixes the two sides); None: all.
        shapes, dtypes: ``{variable name: shape / dtype}``, used only for the
            bytes reported by the DEBUG line.
    Returns:
        new head entries (the same list when nothing is fused), over a copy of
        the graph whose variables are the original Node objects.
    """
    heads = list(heads)
    nodes = topo_sort(heads)
    nf = len(heads) if num_forward is None else int(num_forward)
    fwd_side = {id(n) for n in topo_sort(heads[:nf])}
    referenced = {id(n.fwd) for n in nodes if n.fwd is not None}
    groups = _groups(nodes, fwd_side, referenced)
    n_ops = sum(1 for n in nodes if n.op is not None)
    if not groups:
        _log(0, n_ops, n_ops, 0, None)
        return heads
    root_of = {id(m): gi for gi, mem in enumerate(groups) for m in mem}
    used_outside = {(id(h[0]), h[1]) for h in heads}
    for n in nodes:
        for e in n.inputs:
            if id(e[0]) in root_of and root_of.get(id(n)) != root_of[id(e[0])]:
                used_outside.add((id(e[0]), e[1]))
    fused, out_index, ext_inputs, removed = [], {}, [], []
    for gi, mem in enumerate(groups):
        pos = {id(m): i for i, m in enumerate(mem)}
        inputs, in_pos, descs, outputs = [], {}, [], []
        for m in mem:
            refs = []
            for e in m.inputs:
                if id(e[0]) in pos:
                    refs.append(("n", pos[id(e[0])]))
                else:
                    k = in_pos.setdefault((id(e[0]), e[1]), len(inputs))
                    if k == len(inputs):
                        inputs.append(e)
                    refs.append(("in", k))
            descs.append((m.op.name, m.attrs, tuple(refs), FUSIBLE[m.op.name]))
            if (id(m), 0) in used_outside:
                out_index[id(m)] = (gi, len(outputs))
                outputs.append(pos[id(m)])
            else:
                removed.append((m, 0))
        attrs = {"descs": descs, "outputs": outputs, "num_inputs": len(inputs),
                 "members": [m.name for m in mem],
                 "state": {"programs": {}, "kernels": {}}}
        fused.append(Node(fusion_op(), auto_name("_fused_elemwise"), [], attrs))
        ext_inputs.append(inputs)
    copies = {}

    def mapped(e):
        p, i = e
        if p.op is None:
            return e
        if id(p) in out_index:
            gi, k = out_index[id(p)]
            return (fused[gi], k)
        return (copies[id(p)], i)
    for n in nodes:
        if n.op is None or id(n) in root_of:
            continue
        c = Node(n.op, n.name, [], dict(n.attrs), dict(n.user_attrs),
                 fwd=None if n.fwd is None else copies[id(n.fwd)])
        copies[id(n)] = c
    for n in nodes:
        if id(n) in copies:
            copies[id(n)].inputs = [mapped(e) for e in n.inputs]
    for f, inputs in zip(fused, ext_inputs):
        f.inputs = [mapped(e) for e in inputs]
    new_heads = [mapped(h) for h in heads]
    after = n_ops - sum(len(m) for m in groups) + len(groups)
    saved = _saved_bytes(heads, removed, shapes, dtypes) if log.isEnabledFor(
        logging.DEBUG) else None
    _log(len(groups), n_ops, after, sum(len(m) for m in groups), saved)
    return new_heads


def fusion_op():
    """The registered ``_FusedElemwise`` OpDef."""
    return _FUSED_OP


def _log(n_groups, before, after, n_fused, saved):
    if log.isEnabledFor(logging.DEBUG):
        b = "unknown" if saved is None else (f"{saved[0]}" + (f" (+{saved[1]} entries of "
                                                               "unknown shape)"
                                                               if saved[1] else ""))
        log.debug("fuse: %d groups fused (%d nodes), op nodes %d -> %d, intermediate bytes "
                  "saved: %s", n_groups, n_fused, before, after, b)


def _saved_bytes(heads, removed, shapes, dtypes):
    """Bytes of the ``removed`` entries, from an inference over the original graph
    (variables' shapes from ``shapes`` or ``__shape__``); ``(bytes, unknown)``."""
    g = IndexedGraph(heads)
    sh, ty = [None] * g.num_entries, [None] * g.num_entries
    shapes, dtypes = shapes or {}, dtypes or {}
    for nid in g.variable_nodes():
        node, e = g.nodes[nid], g.entry_start[nid]
        s = shapes.get(node.name, node.user_attrs.get("__shape__"))
        if s is not None:
            sh[e] = parse_attr_value(s, "shape") if isinstance(s, str) else tuple(s)
        t = dtypes.get(node.name)
        ty[e] = numpy.dtype(t) if t is not None else parse_attr_value(
            node.user_attrs.get("__dtype__", "float32"), "dtype")
    try:
        infer_shapes(g, sh)
        infer_types(g, ty)
    except (ShapeError, DTypeError):
        return None
    total, unknown = 0, 0
    for e in removed:
        eid = g.entry_id(e)
        if sh[eid] is None or ty[eid] is None:
            unknown += 1
        else:
            total += math.prod(sh[eid]) * ty[eid].itemsize
    return total, unknown

