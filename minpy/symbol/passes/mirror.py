"""Mirror: trade computation for memory (sqrt(n) checkpointing).

"Training Deep Nets with Sublinear Memory Cost" (Chen et al. 2016): keep only
a few forward outputs (checkpoints) and recompute the others during backward
from the nearest checkpoint. Everything here is pure data, like
:mod:`minpy.symbol.passes.plan_memory`:

* :func:`mirror_segments` — the paper's greedy: walk the forward order
  summing output bytes; when the running sum exceeds the budget ``B`` the
  node becomes a checkpoint and the sum restarts, every other mirror-able
  node is recomputed. ``mode="segment"`` bounds each segment by ``B`` (the
  paper; ``B ~ total/sqrt(n)`` gives the sqrt(n) plan), ``mode="peak"``
  bounds checkpoints-so-far + segment by ``B`` (later segments get shorter,
  since backward recomputes them while more checkpoints are still live).
* :func:`search_mirror` — tries a grid of budgets in both modes and keeps
  the plan with the smallest planned peak (``evaluate``; use
  :func:`planned_peak` to measure with the real planner, as MXNet's memonger
  does).
* :func:`apply_mirror` — rewrites the forward+backward graph: a backward node
  that reads an entry of a recomputed node reads a duplicate instead, computed
  right before its first backward use (duplicates read kept entries or other
  duplicates). ``plan_memory`` over the result gives the mirrored memory.

Never recomputed: nodes not in ``mirrorable`` (convolutions, FC, ...) unless
in ``force_mirror`` (MXNet's ``force_mirroring``), and nodes in
``force_keep`` (user checkpoints). ``stage_of`` (MXNet's ``__mirror_stage__``)
groups consecutive nodes with the same label so they are decided together.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from .plan_memory import plan_memory

__all__ = ["MirrorPlan", "MirroredGraph", "mirror_segments", "search_mirror",
           "apply_mirror", "planned_peak"]


@dataclass
class MirrorPlan:
    """Which forward nodes are recomputed in backward and which are kept.

    ``est_peak_bytes`` is the cost model's (or ``evaluate``'s) peak;
    ``est_extra_cost`` the summed cost weight of the recomputed nodes.
    """

    recompute: set
    kept: set
    est_peak_bytes: int
    est_extra_cost: float
    budget: float = 0.0
    mode: str = "segment"


_KEEP, _DROP, _ALWAYS = 0, 1, 2


def _units(order, out_bytes, mirrorable, force_keep, force_mirror, stage_of):
    """Group the forward order into decision units (runs of one stage)."""
    units, stage_of = [], stage_of or {}
    for n in order:
        label = stage_of.get(n)
        if units and label is not None and stage_of.get(units[-1][-1]) == label:
            units[-1].append(n)
        else:
            units.append([n])
    kinds, sizes = [], []
    for u in units:
        if any(n in force_keep for n in u):
            kinds.append(_KEEP)
        elif all(n in force_mirror for n in u):
            kinds.append(_ALWAYS)
        elif all(n in mirrorable or n in force_mirror for n in u):
            kinds.append(_DROP)
        else:
            kinds.append(_KEEP)
        sizes.append(sum(out_bytes[n] for n in u))
    return units, kinds, sizes


def _greedy(units, kinds, sizes, cost, budget, mode):
    recompute, kept = set(), set()
    temp = kept_bytes = peak = 0
    for u, kind, nbytes in zip(units, kinds, sizes):
        over = (temp + nbytes if mode == "segment" else kept_bytes + temp + nbytes) > budget
        if kind == _KEEP or (kind == _DROP and over):
            kept.update(u)
            kept_bytes += nbytes
            peak = max(peak, kept_bytes + temp)   # backward of the closed segment
            temp = 0
        else:
            recompute.update(u)
            temp += nbytes
    peak = max(peak, kept_bytes + temp)
    return MirrorPlan(recompute, kept, peak, sum(cost.get(n, 1) for n in recompute),
                      budget, mode)


def mirror_segments(order, out_bytes, cost, mirrorable, *, budget=None, mode="segment",
                    force_keep=(), force_mirror=(), stage_of=None):
    """The paper's greedy split of the forward ``order`` with budget ``budget``.

    out_bytes: node -> bytes of its outputs; cost: node -> compute weight
    (missing = 1); mirrorable: nodes cheap enough to recompute. ``budget=None``
    picks ``B = mirror-able bytes / sqrt(#units)`` (segments of ~sqrt(n)).
    ``budget=0`` keeps everything, ``math.inf`` recomputes every mirror-able node.
    """
    if mode not in ("segment", "peak"):
        raise ValueError(f"mode must be 'segment' or 'peak', not {mode!r}")
    units, kinds, sizes = _units(order, out_bytes, set(mirrorable), set(force_keep),
                                 set(force_mirror), stage_of)
    if budget is None:
        droppable = sum(s for s, k in zip(sizes, kinds) if k != _KEEP)
        budget = droppable / math.sqrt(max(len(units), 1))
    return _greedy(units, kinds, sizes, cost, budget, mode)


def search_mirror(order, out_bytes, cost, mirrorable, *, force_keep=(), force_mirror=(),
                  stage_of=None, evaluate=None, ntrial=16):
    """Search the budget (both modes) for the plan with the smallest peak.

    ``evaluate(recompute_set) -> bytes`` scores a plan (default: the greedy's
    own estimate; :func:`planned_peak` runs the real planner). Ties go to the
    cheaper recomputation. The returned ``est_peak_bytes`` is the score.
    """
    units, kinds, sizes = _units(order, out_bytes, set(mirrorable), set(force_keep),
                                 set(force_mirror), stage_of)
    positive = [s for s in sizes if s > 0]
    lo, hi = min(positive, default=1), max(sum(sizes), 1)
    grid = [0.0] + [lo * (hi / lo) ** (k / max(ntrial - 1, 1)) for k in range(ntrial)]
    scored = {}

    def score(budget, mode):
        plan = _greedy(units, kinds, sizes, cost, budget, mode)
        key = frozenset(plan.recompute)
        if key not in scored:
            plan.est_peak_bytes = evaluate(plan.recompute) if evaluate else plan.est_peak_bytes
            scored[key] = plan
        return scored[key]

    for mode in ("segment", "peak"):
        peaks = [score(b, mode).est_peak_bytes for b in grid]
        k = peaks.index(min(peaks))
        left, right = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
        for j in range(1, ntrial):                     # refine between neighbours
            score(left + (right - left) * j / ntrial, mode)
    return min(scored.values(), key=lambda p: (p.est_peak_bytes, p.est_extra_cost))


@dataclass
class MirroredGraph:
    """A forward+backward graph with duplicated (recomputed) nodes.

    ``origin`` maps each duplicate node to the original node whose op it
    runs, ``entry_origin`` each duplicate entry to the original entry.
    """

    order: list
    inputs_of: dict
    outputs_of: dict
    origin: dict = field(default_factory=dict)
    entry_origin: dict = field(default_factory=dict)

    def bytes_of(self, entry_bytes):
        """``entry_bytes`` extended to the duplicate entries."""
        out = dict(entry_bytes)
        out.update((e, entry_bytes[o]) for e, o in self.entry_origin.items())
        return out

    def inplace_from(self, inplace_of):
        """``inplace_of`` extended to the duplicate nodes."""
        out = dict(inplace_of)
        out.update((n, inplace_of[o]) for n, o in self.origin.items() if o in inplace_of)
        return out


def _fresh(existing, tag):
    """New ids: consecutive ints past the largest if all ids are ints, else (tag, id)."""
    existing = list(existing)
    if all(type(x) is int for x in existing):
        counter = itertools.count(max(existing, default=-1) + 1)
        return lambda _orig: next(counter)
    return lambda orig: (tag, orig)


def apply_mirror(order, inputs_of, outputs_of, recompute, backward_start, external=()):
    """Rewrite the graph so backward reads recomputed copies of ``recompute``.

    order: forward+backward node ids; ``backward_start``: position in
    ``order`` of the first backward node. Entries in ``external`` are kept
    anyway and never duplicated. Returns a :class:`MirroredGraph`.
    """
    fwd, bwd = order[:backward_start], order[backward_start:]
    external = frozenset(external)
    producer = {e: n for n in set(recompute).intersection(fwd)
                for e in outputs_of[n] if e not in external}
    new_node = _fresh(order, "mirror")
    new_entry = _fresh(itertools.chain.from_iterable(outputs_of[n] for n in order), "mirror")
    g = MirroredGraph(list(fwd), {n: list(inputs_of[n]) for n in order},
                      {n: list(outputs_of[n]) for n in order})
    renamed, dup = {}, {}

    def rename(entries):
        return [renamed[e] if e in producer else e for e in entries]

    def emit(root):                                    # post-order, iterative
        stack = [(root, False)]
        while stack:
            n, ready = stack.pop()
            if n in dup:
                continue
            if not ready:
                stack.append((n, True))
                stack.extend((producer[e], False) for e in inputs_of[n]
                             if e in producer and producer[e] not in dup)
                continue
            dup[n] = nid = new_node(n)
            g.origin[nid] = n
            g.inputs_of[nid] = rename(inputs_of[n])
            g.outputs_of[nid] = []
            for e in outputs_of[n]:
                renamed[e] = ne = new_entry(e)
                g.entry_origin[ne] = e
                g.outputs_of[nid].append(ne)
            g.order.append(nid)

    for b in bwd:
        for e in inputs_of[b]:
            if e in producer and producer[e] not in dup:
                emit(producer[e])
        g.inputs_of[b] = rename(inputs_of[b])
        g.order.append(b)
    return g


def planned_peak(order, inputs_of, outputs_of, entry_bytes, inplace_of, external,
                 backward_start, plan=None, **plan_kw):
    """An ``evaluate`` for :func:`search_mirror`: recompute set -> planned bytes
    of the mirrored graph (``plan`` defaults to ``memory.plan_memory``)."""
    if plan is None:
        plan = plan_memory

    def evaluate(recompute):
        g = apply_mirror(order, inputs_of, outputs_of, recompute, backward_start, external)
        return plan(g.order, g.inputs_of, g.outputs_of, g.bytes_of(entry_bytes),
                    g.inplace_from(inplace_of), external, **plan_kw).total_bytes
    return evaluate
