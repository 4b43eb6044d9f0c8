"""Storage plans of a bound graph: the planner call, the trivial plan (one block
per internal entry), and the bytes of each planning strategy (for
:func:`minpy.symbol.plan_report`).

Below :mod:`minpy.symbol.graph_plan`: the functions here take a ``GraphPlan``
as an argument and use only its attributes and methods.
"""
import os

from .plan_memory import live_peak, plan_memory, planning_enabled

__all__ = ["plan_storage", "trivial_plan", "TrivialPlan", "peak_live_bytes", "categories"]


class TrivialPlan:
    """One block per internal entry (what ``plan_memory`` returns, unplanned)."""

    def __init__(self, order, inputs_of, outputs_of, entry_bytes, external):
        internal = [e for n in order for e in outputs_of[n] if e not in external]
        self.storage_of = {e: i for i, e in enumerate(internal)}
        self.block_bytes = {i: entry_bytes[e] for i, e in enumerate(internal)}
        self.total_bytes = self.naive_bytes = sum(self.block_bytes.values())
        self.lower_bound = peak_live_bytes(order, inputs_of, outputs_of, entry_bytes, external)


def trivial_plan(order, inputs_of, outputs_of, entry_bytes, inplace_of, external, **options):
    """Same call as ``plan_memory``; one block per internal entry."""
    return TrivialPlan(order, inputs_of, outputs_of, entry_bytes, set(external))


def peak_live_bytes(order, inputs_of, outputs_of, entry_bytes, external):
    """Peak of the bytes of internal entries alive at once when running ``order``
    (an entry lives from its node until its last reader)."""
    last = {}
    for step, n in enumerate(order):
        for e in inputs_of[n]:
            last[e] = step
    live = peak = 0
    dying = {}
    for step, n in enumerate(order):
        for e in outputs_of[n]:
            if e not in external:
                live += entry_bytes[e]
                dying.setdefault(last.get(e, step), []).append(e)
        peak = max(peak, live)
        for e in dying.pop(step, ()):
            live -= entry_bytes[e]
    return peak


def plan_storage(kwargs, enabled=None, options=None):
    """Run the planner on ``kwargs`` (the dict from ``IndexedGraph.planner_inputs``).

    Calls ``plan_memory(order, inputs_of, outputs_of, entry_bytes, inplace_of,
    external, **options)`` from ``minpy.symbol.passes.plan_memory`` when ``enabled``
    (default: :func:`minpy.symbol.passes.plan_memory.planning_enabled`), else
    :func:`trivial_plan`.  Returns ``(plan, planner_name)``.
    """
    enabled = planning_enabled() if enabled is None else enabled
    fn, label = trivial_plan, "trivial"
    options = dict(options or {})
    if "layout" not in options and not options.get("colouring"):
        options["layout"] = os.environ.get("MINPY_MEMORY_LAYOUT", "arena").strip().lower()
    if enabled:
        fn, label = plan_memory, "plan_memory"
    k = kwargs
    plan = fn(k["order"], k["inputs_of"], k["outputs_of"], k["entry_bytes"], k["inplace_of"],
              k["external"], **options)
    return plan, label



def _total(gp, kw, **options):
    plan, _ = plan_storage(kw, gp.plan_enabled, dict(gp.memory_options, **options))
    return int(plan.total_bytes)


def categories(gp):
    """The strategy bytes of :func:`plan_report` for a ``GraphPlan`` ``gp``
    (its graph without mirror; 'mirror' is ``gp``'s own plan when it was
    bound with ``mirror=True``, else the automatic search is run)."""
    kw = gp.base
    eb, ext = kw["entry_bytes"], kw["external"]
    internal = {e for n in kw["order"] for e in kw["outputs_of"][n] if e not in ext}
    both = _total(gp, kw)
    if gp.mirror == "cheap":
        mirror, recomputed = int(gp.plan.total_bytes), len(gp.recompute)
    elif gp.bwd_order:
        recompute, _, _, plan, _ = gp.plan_mirror("cheap")
        mirror = both if plan is None else int(plan.total_bytes)
        recomputed = len(recompute)
    else:
        mirror, recomputed = both, 0
    heads = set(gp.heads) - set(gp.arg_entry.values())
    b = gp.entry_bytes
    return {
        "naive": sum(eb[e] for e in internal),
        "inplace": _total(gp, kw, coshare=False),
        "coshare": _total(gp, kw, inplace=False),
        "both": both,
        "both_blocks": _total(gp, kw, layout="blocks", colouring=False),
        "mirror": mirror, "recomputed": recomputed,
        "lower_bound": live_peak(kw["order"], kw["inputs_of"], kw["outputs_of"], eb,
                                 kw["inplace_of"], ext),
        "args": sum(b[e] for e in gp.arg_entry.values()),
        "grads": sum(b[e] for e in gp.grad_entry.values()),
        "aux": sum(b[e] for e in gp.aux_entry.values()),
        "outputs": sum(b[e] for e in heads),
        "head_grads": sum(b[e] for e in gp.head_grad_entry.values()),
    }
