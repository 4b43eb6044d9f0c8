"""Which forward nodes the executor recomputes in backward (mirror).

``mirror_mode`` resolves the ``mirror=`` argument of bind (and env
``MINPY_BACKWARD_DO_MIRROR``); ``choose_mirror`` reads the user attributes
(``force_mirroring``, ``__mirror_stage__``), picks the candidates
(:data:`CHEAP_OPS`, or every op) and runs ``minpy.symbol.passes.mirror``'s search,
scoring each choice with the real memory planner.  ``GraphPlan`` applies the
result (``mirror.apply_mirror``) and plans the mirrored graph.
"""
import os

from .mirror import planned_peak, search_mirror
from ..registry import Bool
from .storage import plan_storage

__all__ = ["CHEAP_OPS", "mirror_mode", "choose_mirror"]

#: ops recomputed by the automatic mirror (``mirror=True``): elementwise work,
#: activations, pooling, reshapes, and BatchNorm (replayed without touching its
#: moving statistics).  Convolution, FullyConnected, dot, Embedding, Concat and
#: the loss ops are kept unless ``mirror="all"`` or ``force_mirroring='True'``;
#: ops drawing random numbers (Dropout) are never recomputed (their mask could
#: not be replayed), whatever the attributes say.
CHEAP_OPS = frozenset(
    ["Activation", "LeakyReLU", "BatchNorm", "_BatchNormReLU", "_FusedElemwise", "Pooling",
     "Flatten", "Reshape",
     "ElementWiseSum", "BlockGrad", "_copy", "SoftmaxActivation", "SliceChannel", "transpose",
     "zeros_like", "ones_like", "sum", "mean", "abs", "exp", "log", "negative", "sigmoid",
     "sign", "sqrt", "square", "tanh", "broadcast_power"]
    + [f"{p}_{k}" for p in ("elemwise", "broadcast") for k in ("add", "sub", "mul", "div")]
    + [f"_{k}_scalar" for k in ("plus", "minus", "rminus", "mul", "div", "rdiv", "power",
                                "rpower", "greater")])


def mirror_mode(mirror):
    """Resolve the ``mirror`` argument of bind: False -> None (off); True ->
    'cheap'; 'all' -> 'all'; None -> 'cheap' when env
    ``MINPY_BACKWARD_DO_MIRROR`` is 1, else 'forced' (only nodes marked
    ``force_mirroring='True'`` are recomputed, as in MXNet)."""
    if mirror is None:
        env = os.environ.get("MINPY_BACKWARD_DO_MIRROR", "").strip().lower()
        return "cheap" if env in ("1", "true", "yes", "on") else "forced"
    if mirror is False:
        return None
    if mirror is True or mirror == "cheap":
        return "cheap"
    if mirror == "all":
        return "all"
    raise ValueError(f"mirror must be None, True, False or 'all', not {mirror!r}")


def choose_mirror(plan, kw, mode):
    """Forward nodes of GraphPlan ``plan`` to recompute in backward.

    ``kw``: the planner inputs of the plain graph; ``mode``: 'forced' (only
    ``force_mirroring='True'`` nodes), 'cheap' (search over
    :data:`CHEAP_OPS` nodes), 'all' (search over every forward node).  User
    attributes: ``force_mirroring`` (or ``__force_mirroring__``) 'True'
    always recomputes a node, 'False' always keeps it; ``__mirror_stage__``
    labels consecutive nodes decided together.  The search
    (``mirror.search_mirror``) scores each candidate set by planning the
    mirrored graph as ``plan`` plans (its memory options) and keeps the
    smallest, ties going to the cheaper recomputation; then the end of the
    forward pass is kept where that costs no memory.  Returns a set of node
    ids.
    """
    g, fwd = plan.graph, plan.fwd_order
    if not plan.bwd_order or mode is None:
        return set()
    force_mirror, force_keep, stage_of = set(), set(), {}
    for n in fwd:
        node = g.nodes[n]
        ua = node.user_attrs
        flag = ua.get("force_mirroring", ua.get("__force_mirroring__"))
        if node.op.uses_rng:
            force_keep.add(n)
        elif flag is not None:
            (force_mirror if Bool(flag) else force_keep).add(n)
        if "__mirror_stage__" in ua:
            stage_of[n] = ua["__mirror_stage__"]
    if mode == "forced":
        return force_mirror
    ext = kw["external"]
    if mode == "all":
        candidates = {n for n in fwd if not g.nodes[n].op.uses_rng}
    else:
        candidates = {n for n in fwd if g.nodes[n].op.name in CHEAP_OPS}
    out_bytes = {n: sum(kw["entry_bytes"][e] for e in kw["outputs_of"][n] if e not in ext)
                 for n in fwd}
    cost = {n: plan.node_cost(n) for n in fwd}
    evaluate = planned_peak(kw["order"], kw["inputs_of"], kw["outputs_of"], kw["entry_bytes"],
                            kw["inplace_of"], ext, len(fwd), plan=_planner(plan))
    best = search_mirror(fwd, out_bytes, cost, candidates, force_keep=force_keep,
                         force_mirror=force_mirror, stage_of=stage_of, evaluate=evaluate)
    return _trim_tail(fwd, set(best.recompute), force_mirror, stage_of, cost, evaluate,
                      best.est_peak_bytes)


def _trim_tail(fwd, recompute, forced, stage_of, cost, evaluate, score, ntrial=16):
    """Stop recomputing the end of the forward pass where that costs no memory.

    The segment greedy recomputes the last segment too, although backward
    starts right after it; keeping every node past a cut point is tried for
    ``ntrial`` cut points and the plan with the fewest bytes (then the least
    recomputation) wins.  A stage (``__mirror_stage__``) reaching past the
    cut is kept whole.
    """
    best = (score, sum(cost[n] for n in recompute), recompute)
    n = len(fwd)
    for k in range(1, ntrial):
        cut = n - n * k // ntrial
        labels = {stage_of[x] for x in fwd[cut:] if x in stage_of}
        tail = (set(fwd[cut:]) | {x for x, lab in stage_of.items() if lab in labels}) - forced
        trial = recompute - tail
        if trial == recompute or trial == best[2]:
            continue
        cand = (evaluate(trial), sum(cost[x] for x in trial), trial)
        if cand[:2] < best[:2]:
            best = cand
    return best[2]


def _planner(gp):
    """A ``plan_memory``-like function planning as GraphPlan ``gp`` does."""
    def plan(order, inputs_of, outputs_of, entry_bytes, inplace_of, external):
        kw = {"order": order, "inputs_of": inputs_of, "outputs_of": outputs_of,
              "entry_bytes": entry_bytes, "inplace_of": inplace_of, "external": external}
        return plan_storage(kw, gp.plan_enabled, gp.memory_options)[0]
    return plan
