"""Mirror / sqrt(n) checkpointing (minpy/symbol/passes/mirror.py) on pure-data graphs.

Loaded by file path, like tests/symbol/test_memory_plan.py. Graphs are built here as
forward specs plus a gradient made by graph extension (one backward node per
forward node, a sum node where gradients fan in).
"""
import math
import zlib
from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st


from minpy.symbol.passes import plan_memory as memory, mirror


# ------------------------------------------------------------ graph builders

def training_graph(fwd, data, params, nbytes):
    """fwd: [(node, inputs, output, needs, elementwise)] in topological order,
    the last node being the loss (its output is the head). ``needs`` says what
    the node's backward reads besides the output gradient: 'in' and/or 'out'.
    Returns (order, inputs_of, outputs_of, entry_bytes, inplace_of, external,
    backward_start)."""
    order, ins, outs, inplace = [], {}, {}, {}
    for n, i, o, _, _ in fwd:
        order.append(n)
        ins[n], outs[n] = list(i), [o]
    head = fwd[-1][2]
    external, eb, partial = set(data) | set(params) | {head}, dict(nbytes), defaultdict(list)
    start = len(order)
    for n, i, o, needs, elementwise in reversed(fwd):
        targets = [x for x in dict.fromkeys(i) if x not in data]
        if not targets or (o != head and not partial[o]):
            continue
        reads = []
        if o != head:
            gy = partial[o][0]
            if len(partial[o]) > 1:
                s, gy = ("sum", o), ("gsum", o)
                order.append(s)
                ins[s], outs[s], eb[gy], inplace[s] = list(partial[o]), [gy], eb[o], [(0, 0)]
            reads.append(gy)
        reads += (list(i) if "in" in needs else []) + ([o] if "out" in needs else [])
        grads = []
        for x in targets:
            g = ("grad", n, x)
            grads.append(g)
            eb[g] = eb[x]
            (external.add(g) if x in params else partial[x].append(g))
        b = ("back", n)
        order.append(b)
        ins[b], outs[b] = reads, grads
        if elementwise and o != head and grads[0] not in external:
            inplace[b] = [(0, 0)]
    return order, ins, outs, eb, inplace, external, start


def chain(n, size=1000):
    """n elementwise nodes (backward reads the input) and a loss."""
    fwd = [(i, [f"x{i}"], f"x{i + 1}", {"in"}, True) for i in range(n)]
    fwd.append(("loss", [f"x{n}"], "L", {"in"}, False))
    nbytes = {f"x{i}": size for i in range(n + 1)} | {"L": 4}
    return fwd, training_graph(fwd, {"x0"}, set(), nbytes)


def resnet(blocks, size=1000):
    """conv-bn-relu-conv-bn-add(skip)-relu blocks with weights, and a loss."""
    fwd, params, nbytes, kinds = [], set(), {"x": size}, {}
    cur = "x"

    def node(kind, inputs, needs, elementwise, weight=False):
        name = f"{kind}{len(fwd)}"
        out = "o_" + name
        nbytes[out], kinds[name] = size, kind
        inputs = list(inputs)
        if weight:
            params.add("w_" + name)
            nbytes["w_" + name] = 10
            inputs.append("w_" + name)
        fwd.append((name, inputs, out, needs, elementwise))
        return out

    for _ in range(blocks):
        a = node("conv", [cur], {"in"}, False, True)
        a = node("bn", [a], {"in"}, False, True)
        a = node("relu", [a], {"out"}, True)
        a = node("conv", [a], {"in"}, False, True)
        a = node("bn", [a], {"in"}, False, True)
        a = node("add", [a, cur], set(), True)
        cur = node("relu", [a], {"out"}, True)
    fwd.append(("loss", [cur], "L", {"in"}, False))
    nbytes["L"] = 4
    return fwd, kinds, training_graph(fwd, {"x"}, params, nbytes)


def forward_data(fwd, graph):
    """(forward order without the loss, node -> output bytes)."""
    eb = graph[3]
    return [f[0] for f in fwd[:-1]], {f[0]: eb[f[2]] for f in fwd}


def planned(graph, recompute=()):
    order, ins, outs, eb, inp, ext, start = graph
    return mirror.planned_peak(order, ins, outs, eb, inp, ext, start,
                               plan=memory.plan_memory)(set(recompute))


def execute(order, ins, outs, origin=None):
    """Run a graph where node n's j-th output is a hash of (op, j, inputs)."""
    origin, vals = origin or {}, {}
    written = {e for n in order for e in outs[n]}
    for n in order:
        for e in ins[n]:
            if e not in written:
                vals.setdefault(e, zlib.crc32(repr(e).encode()))
        args = tuple(vals[e] for e in ins[n])         # KeyError: read before write
        for j, e in enumerate(outs[n]):
            vals[e] = zlib.crc32(repr((origin.get(n, n), j, args)).encode())
    return vals


def check_mirrored(graph, recompute):
    """The mirrored graph computes the same values, backward never reads a
    dropped entry, and its memory plan is valid when replayed."""
    order, ins, outs, eb, inp, ext, start = graph
    g = mirror.apply_mirror(order, ins, outs, recompute, start, ext)
    assert g.order[:start] == order[:start]
    assert [n for n in g.order if n not in g.origin] == order
    assert all(g.order.index(d) >= start for d in g.origin)
    want, got = execute(order, ins, outs), execute(g.order, g.inputs_of, g.outputs_of, g.origin)
    for n in order:
        for e in outs[n]:
            assert got[e] == want[e]
    for e, o in g.entry_origin.items():
        assert got[e] == want[o]
    dropped = {e for n in recompute if n in order[:start] for e in outs[n] if e not in ext}
    readers = {e for n in g.order[start:] for e in g.inputs_of[n]}
    assert not dropped & readers
    assert all(any(e in readers for e in g.outputs_of[d]) for d in g.origin)  # no idle copy
    eb2 = g.bytes_of(eb)
    plan = memory.plan_memory(g.order, g.inputs_of, g.outputs_of, eb2, g.inplace_from(inp), ext)
    held = {}
    for n in g.order:
        for e in g.inputs_of[n]:
            if e not in ext:
                assert held[plan.storage_of[e]] == e
        for e in g.outputs_of[n]:
            if e not in ext:
                assert plan.block_bytes[plan.storage_of[e]] >= eb2[e]
                held[plan.storage_of[e]] = e
    return g, plan


# ------------------------------------------------------ greedy, exact cases

def unit_chain(n):
    order = list(range(n))
    return order, dict.fromkeys(order, 1)


def test_segment_greedy_exact():
    order, size = unit_chain(9)
    plan = mirror.mirror_segments(order, size, {n: n for n in order}, set(order), budget=3)
    assert plan.kept == {3, 7} and plan.recompute == set(order) - {3, 7}
    assert plan.est_peak_bytes == 5 and plan.est_extra_cost == 26


def test_peak_mode_shrinks_later_segments():
    order, size = unit_chain(12)
    plan = mirror.mirror_segments(order, size, {}, set(order), budget=5, mode="peak")
    assert plan.kept == {5, 10} and plan.est_peak_bytes == 6
    assert plan.est_extra_cost == 10                       # missing cost weight = 1


def test_budget_extremes_and_bad_mode():
    order, size = unit_chain(6)
    keep_all = mirror.mirror_segments(order, size, {}, set(order), budget=0)
    assert keep_all.kept == set(order) and keep_all.recompute == set()
    assert keep_all.est_extra_cost == 0 and keep_all.est_peak_bytes == 6
    drop_all = mirror.mirror_segments(order, size, {}, set(order), budget=math.inf)
    assert drop_all.recompute == set(order)
    with pytest.raises(ValueError):
        mirror.mirror_segments(order, size, {}, set(order), mode="bogus")


def test_unmirrorable_force_keep_and_force_mirror():
    order, size = unit_chain(5)
    # node 2 (a convolution, say) is kept and restarts the segment
    plan = mirror.mirror_segments(order, size, {}, {0, 1, 3, 4}, budget=2)
    assert plan.kept == {2} and plan.recompute == {0, 1, 3, 4}
    plan = mirror.mirror_segments(order, size, {}, set(order), budget=2, force_keep={1})
    assert plan.kept == {1, 4}
    plan = mirror.mirror_segments(order, size, {}, {0, 1, 3, 4}, budget=0, force_mirror={2})
    assert plan.recompute == {2} and plan.kept == {0, 1, 3, 4}
    plan = mirror.mirror_segments(order, size, {}, set(order), budget=math.inf,
                                  force_keep={2}, force_mirror={2})
    assert 2 in plan.kept


def test_stages_are_decided_together():
    order, size = unit_chain(6)
    stage = {0: "s", 1: "s", 2: "s", 3: "t", 4: "t", 5: "t"}
    plan = mirror.mirror_segments(order, size, {}, set(order), budget=4, stage_of=stage)
    assert plan.recompute == {0, 1, 2} and plan.kept == {3, 4, 5}
    plan = mirror.mirror_segments(order, size, {}, set(order), budget=2, stage_of=stage)
    assert plan.kept == set(order)


def test_default_budget_is_sqrt_segments():
    order, size = unit_chain(100)
    plan = mirror.mirror_segments(order, size, {}, set(order))
    assert plan.kept == set(range(10, 100, 11))           # segments of 11: 10 kept + 1
    model = mirror.search_mirror(order, size, {}, set(order))
    assert model.est_peak_bytes <= plan.est_peak_bytes
    assert 5 <= len(model.kept) <= 30


# ------------------------------------------------------------- apply_mirror

def test_apply_mirror_exact_small_chain():
    order = [0, 1, 2, 3, 4, 5, 6]
    ins = {0: ["x0"], 1: ["x1"], 2: ["x2"], 3: ["x3"], 4: ["x3"], 5: ["g3", "x2"],
           6: ["g2", "x1"]}
    outs = {0: ["x1"], 1: ["x2"], 2: ["x3"], 3: ["L"], 4: ["g3"], 5: ["g2"], 6: ["g1"]}
    g = mirror.apply_mirror(order, ins, outs, {0, 1}, 4, external={"x0", "L"})
    m1, m2 = ("mirror", "x1"), ("mirror", "x2")
    assert g.order == [0, 1, 2, 3, 4, 7, 8, 5, 6] and g.origin == {7: 0, 8: 1}
    assert g.inputs_of[7] == ["x0"] and g.outputs_of[7] == [m1]
    assert g.inputs_of[8] == [m1] and g.outputs_of[8] == [m2]
    assert g.inputs_of[5] == ["g3", m2] and g.inputs_of[6] == ["g2", m1]
    assert g.entry_origin == {m1: "x1", m2: "x2"}
    assert g.bytes_of({"x1": 3, "x2": 5}) == {"x1": 3, "x2": 5, m1: 3, m2: 5}
    assert g.inplace_from({1: [(0, 0)], 5: [(0, 0)]}) == {1: [(0, 0)], 5: [(0, 0)],
                                                          8: [(0, 0)]}
    assert ins[5] == ["g3", "x2"]                          # the input is not mutated
    # nothing recomputed, or only entries that backward never reads: same graph
    same = mirror.apply_mirror(order, ins, outs, {2}, 4, external={"x3"})
    assert same.order == order and same.origin == {}


def test_chain_mirror_memory_drops_like_sqrt():
    peaks = {}
    for n in (100, 400):
        fwd, graph = chain(n)
        order, size = forward_data(fwd, graph)
        evaluate = mirror.planned_peak(*graph, plan=memory.plan_memory)
        plan = mirror.search_mirror(order, size, {}, set(order), evaluate=evaluate)
        base = planned(graph)
        assert plan.est_peak_bytes == planned(graph, plan.recompute) <= base
        assert math.sqrt(n) / 2 <= len(plan.kept) <= 3 * math.sqrt(n)
        assert plan.est_extra_cost <= n                   # at most one extra forward
        # optimum for a chain: segments shrinking by one, ~sqrt(2n) live (+ gradients)
        assert plan.est_peak_bytes <= (math.sqrt(2 * n) + 3) * 1000
        peaks[n] = (base, plan.est_peak_bytes)
        if n == 100:
            assert base >= 5 * plan.est_peak_bytes
            check_mirrored(graph, plan.recompute)
            paper = mirror.mirror_segments(order, size, {}, set(order))
            assert base >= 4.5 * planned(graph, paper.recompute)
    assert peaks[400][0] >= 3.9 * peaks[100][0]            # linear without mirror
    assert peaks[400][1] <= 2.5 * peaks[100][1]            # ~sqrt(n) with it


def test_resnet_like_mirror():
    fwd, kinds, graph = resnet(8)
    order, size = forward_data(fwd, graph)
    evaluate = mirror.planned_peak(*graph, plan=memory.plan_memory)
    base = planned(graph)
    cheap = {n for n in order if kinds[n] != "conv"}       # MXNet's default choice
    plan = mirror.search_mirror(order, size, {}, cheap, evaluate=evaluate)
    assert plan.recompute <= cheap and plan.est_peak_bytes < 0.75 * base
    check_mirrored(graph, plan.recompute)
    every = mirror.search_mirror(order, size, {}, set(order), evaluate=evaluate)
    assert every.est_peak_bytes < 0.45 * base
    check_mirrored(graph, every.recompute)


def test_planned_peak_default_planner():
    fwd, graph = chain(10)
    assert mirror.planned_peak(*graph)(set()) == planned(graph)


@st.composite
def forward_dags(draw):
    """Random single-output forward DAGs with skips, weights and fan-out."""
    fwd, entries, params = [], ["x"], set()
    for i in range(draw(st.integers(1, 10))):
        inputs = draw(st.lists(st.sampled_from(entries), min_size=1, max_size=2))
        if draw(st.booleans()):
            params.add(f"w{i}")
            inputs.append(f"w{i}")
        needs = draw(st.sets(st.sampled_from(["in", "out"])))
        fwd.append((i, inputs, f"y{i}", needs, draw(st.booleans())))
        entries.append(f"y{i}")
    fwd.append(("loss", draw(st.lists(st.sampled_from(entries[1:]), min_size=1, max_size=3,
                                      unique=True)), "L", {"in"}, False))
    sizes = [draw(st.sampled_from([4, 16, 64])) for _ in entries]
    nbytes = dict(zip(entries, sizes)) | dict.fromkeys(params, 4) | {"L": 4}
    return fwd, training_graph(fwd, {"x"}, params, nbytes)


@given(forward_dags(), st.data())
def test_random_mirror_preserves_values(case, data):
    fwd, graph = case
    order, size = forward_data(fwd, graph)
    recompute = data.draw(st.sets(st.sampled_from(order)))
    check_mirrored(graph, recompute)
    best = mirror.search_mirror(order, size, {}, set(order),
                                evaluate=mirror.planned_peak(*graph, plan=memory.plan_memory),
                                ntrial=4)
    assert best.est_peak_bytes <= planned(graph)            # never worse than no mirror
    assert best.recompute | best.kept == set(order) and not best.recompute & best.kept
