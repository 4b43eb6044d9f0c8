"""Memory reports: internal bytes of a symbol under each planning strategy.

``plan_report(net, is_train=True, data=(64, 3, 224, 224))`` reproduces the
memory figure of the MXNet paper (internal memory under naive / inplace /
co-share / both) from shapes alone -- shape inference and planning, nothing
allocated.  *Internal* is every entry of the bound graph that is not an
argument, an argument gradient, an aux state, a head gradient or a graph head
(those have their own arrays, reported apart as 'args', 'grads' ...).

Keys (bytes):

- 'naive': one buffer per internal entry;
- 'inplace': an output may take a dying input's storage where the op allows
  it (each in-place group one buffer, no other sharing);
- 'coshare': entries whose lifetimes do not overlap share storage (no
  in-place);
- 'both': in-place and co-share, the plan the executor allocates (arena
  layout unless ``memory_options`` say otherwise);
- 'both_blocks': 'both' with MXNet's block layout (one buffer per block,
  best-fit free list), for comparison;
- 'mirror': 'both' after the automatic mirror search (cheap ops recomputed
  in backward, see ``minpy.symbol.passes.mirror_choice.choose_mirror``); equals 'both' for
  inference; 'recomputed': how many forward nodes that recomputes;
- 'lower_bound': peak bytes of internal entries live at once in the
  execution order (``memory.live_peak``), below which no plan can go;
- 'args', 'grads', 'aux', 'outputs', 'head_grads': external arrays.
"""
from ..graph_plan import GraphPlan
from .storage import categories

__all__ = ["plan_report", "categories", "format_bytes"]


def plan_report(sym, is_train=True, grad_req=None, type_dict=None, memory_options=None,
                **shapes):
    """Internal memory of ``sym`` bound to input ``shapes``, per strategy.

    Args:
        sym: a Symbol.
        is_train: plan forward + backward (gradients of every argument, or
            as ``grad_req`` says) or forward only.
        grad_req: as in ``simple_bind`` (default 'write' when training,
            'null' otherwise).
        type_dict: input dtypes (default float32).
        memory_options: planner options (``layout``, ``match_range`` ...).
        **shapes: input shapes, e.g. ``data=(64, 3, 224, 224)``.
    Returns:
        dict of bytes, keys described in the module doc.
    """
    req = grad_req if grad_req is not None else ("write" if is_train else "null")
    if not is_train:
        req = "null"
    gp = GraphPlan(sym, shapes, type_dict or {}, req, None, memory_options, mirror=False)
    return categories(gp)


def format_bytes(nbytes):
    """``nbytes`` as MB with one decimal (the paper's unit)."""
    return f"{nbytes / 1e6:.1f}"
