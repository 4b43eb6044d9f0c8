"""Static memory planning (minpy/symbol/passes/plan_memory.py) on pure-data graphs.

The module is loaded by file path: it depends on nothing else in minpy, and
this keeps the tests independent of the rest of the symbol package.
"""
import logging
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st


from _plan_checks import dags as plan_dags, lifetimes
from minpy.symbol.passes import plan_memory as memory
plan_memory = memory.plan_memory


# ---------------------------------------------------------------- checkers



def ancestors(order, ins, outs):
    """node position -> set of ancestor positions (plain sets, small graphs)."""
    writer = {e: i for i, n in enumerate(order) for e in outs[n]}
    anc = []
    for n in order:
        a = set()
        for e in ins[n]:
            if e in writer:
                a |= anc[writer[e]] | {writer[e]}
        anc.append(a)
    return anc


def check_plan(graph, plan):
    """Every invariant a plan must satisfy, checked independently."""
    order, ins, outs, eb, inp, ext = graph
    writer, last = lifetimes(order, ins, outs, ext)
    assert set(plan.storage_of) == set(writer)
    blocks = {}
    for e, b in plan.storage_of.items():
        blocks.setdefault(b, []).append(e)
        assert plan.block_bytes[b] >= eb[e]
    assert set(blocks) == set(plan.block_bytes)
    # no two simultaneously-live entries share a block; touching only in place
    for entries in blocks.values():
        entries.sort(key=writer.get)
        for e1, e2 in zip(entries, entries[1:]):
            assert last[e1] < writer[e2] or (
                last[e1] == writer[e2] and plan.inplace.get(e2) == e1), (e1, e2)
    # in-place only where the op allows it and the input dies there
    for eo, ei in plan.inplace.items():
        n = order[writer[eo]]
        assert any(ins[n][ip] == ei and outs[n][op] == eo for ip, op in inp.get(n, ()))
        assert last[ei] == writer[eo] and ei not in ext
        assert plan.storage_of[eo] == plan.storage_of[ei]
    # replay the order on the planned storage: every read sees its own entry
    held = {}
    for n in order:
        for e in ins[n]:
            if e not in ext:
                assert held[plan.storage_of[e]] == e
        for e in outs[n]:
            if e not in ext:
                held[plan.storage_of[e]] = e
    # totals and bounds
    live = [0] * (len(order) + 1)
    for e, w in writer.items():
        for i in range(w, max(last[e], w + 1)):
            live[i] += eb[e]
    assert plan.lower_bound == max(live)
    assert plan.naive_bytes == sum(eb[e] for e in writer)
    assert plan.total_bytes == sum(plan.block_bytes.values())
    assert plan.lower_bound <= plan.total_bytes <= plan.naive_bytes


def check_colouring(graph, plan):
    """Sharing never adds a dependency: all users of an earlier entry in a
    block are ancestors of (or equal to) the writer of a later one."""
    order, ins, outs, _, _, ext = graph
    writer, _ = lifetimes(order, ins, outs, ext)
    anc = ancestors(order, ins, outs)
    users = {e: {writer[e]} for e in writer}
    for i, n in enumerate(order):
        for e in ins[n]:
            if e in users:
                users[e].add(i)
    for e1, b1 in plan.storage_of.items():
        for e2, b2 in plan.storage_of.items():
            if b1 == b2 and writer[e1] < writer[e2]:
                assert users[e1] <= anc[writer[e2]] | {writer[e2]}, (e1, e2)
                assert writer[e1] in anc[writer[e2]]   # producers never concurrent


def plan_of(graph, **kw):
    return plan_memory(*graph, **kw)


# ---------------------------------------------------------- hand-made graphs

def lecture_graph():
    """B=sigmoid(A); C=relu(B) (in-place allowed but B still read);
    F=tanh(B); E=C+F; G=exp(E) in place; out=sum(G). A and out external."""
    order = ["b", "c", "f", "e", "g", "out"]
    ins = {"b": ["A"], "c": ["B"], "f": ["B"], "e": ["C", "F"], "g": ["E"], "out": ["G"]}
    outs = {"b": ["B"], "c": ["C"], "f": ["F"], "e": ["E"], "g": ["G"], "out": ["OUT"]}
    eb = dict.fromkeys(["A", "B", "C", "F", "E", "G", "OUT"], 4)
    inp = {"c": [(0, 0)], "g": [(0, 0)]}
    return order, ins, outs, eb, inp, {"A", "OUT"}


@pytest.mark.parametrize("flags, expected, total", [
    ({"inplace": False, "coshare": False}, dict(B=0, C=1, F=2, E=3, G=4), 20),
    ({"inplace": True, "coshare": False}, dict(B=0, C=1, F=2, E=3, G=3), 16),
    ({"inplace": False, "coshare": True}, dict(B=0, C=1, F=2, E=0, G=1), 12),
    ({"inplace": True, "coshare": True}, dict(B=0, C=1, F=2, E=0, G=0), 12),
])
def test_lecture_graph_exact(flags, expected, total):
    graph = lecture_graph()
    plan = plan_of(graph, **flags)
    assert plan.storage_of == expected
    assert plan.total_bytes == total and plan.naive_bytes == 20 and plan.lower_bound == 8
    assert plan.inplace == ({"G": "E"} if flags["inplace"] else {})
    check_plan(graph, plan)


def test_plan_report_from_lecture_graph():
    assert memory.plan_report_from(*lecture_graph()) == {
        "naive": 20, "inplace": 16, "coshare": 12, "both": 12, "lower_bound": 8}


def chain_graph(n, nbytes=8, inplace=True):
    """x0 -> e1 -> ... -> e{n}; x0 and the head e{n} are external."""
    order = list(range(n))
    ins = {i: ["x0" if i == 0 else f"e{i}"] for i in order}
    outs = {i: [f"e{i + 1}"] for i in order}
    eb = {f"e{i}": nbytes for i in range(1, n + 1)} | {"x0": nbytes}
    inp = {i: [(0, 0)] for i in order} if inplace else {}
    return order, ins, outs, eb, inp, {"x0", f"e{n}"}


@pytest.mark.parametrize("flags, blocks", [
    ({}, [0] * 8), ({"coshare": False}, [0] * 8),
    ({"inplace": False}, [0, 1] * 4), ({"inplace": False, "coshare": False}, list(range(8))),
    # a chain has no parallelism: colouring must not cost anything (transitive ancestry)
    ({"colouring": True}, [0] * 8), ({"inplace": False, "colouring": True}, [0, 1] * 4),
])
def test_chain(flags, blocks):
    graph = chain_graph(9)
    plan = plan_of(graph, **flags)
    assert [plan.storage_of[f"e{i}"] for i in range(1, 9)] == blocks
    assert plan.total_bytes == 8 * len(set(blocks))
    assert plan.lower_bound == 8
    check_plan(graph, plan)


def parallel_graph():
    """x -> p1 -> p2 and x -> q1 -> q2 (two branches), out = p2 + q2."""
    order = ["p1", "p2", "q1", "q2", "join"]
    ins = {"p1": ["x"], "p2": ["P1"], "q1": ["x"], "q2": ["Q1"], "join": ["P2", "Q2"]}
    outs = {n: [n.upper()] for n in order}
    eb = dict.fromkeys(["x", "P1", "P2", "Q1", "Q2", "JOIN"], 4)
    return order, ins, outs, eb, {}, {"x", "JOIN"}


def test_parallel_branches_colouring_keeps_branches_apart():
    graph = parallel_graph()
    plain = plan_of(graph)
    assert plain.storage_of == {"P1": 0, "P2": 1, "Q1": 0, "Q2": 2}   # q1 waits for p2
    coloured = plan_of(graph, colouring=True)
    assert coloured.storage_of == {"P1": 0, "P2": 1, "Q1": 2, "Q2": 3}
    check_plan(graph, coloured)
    check_colouring(graph, coloured)
    with pytest.raises(AssertionError):
        check_colouring(graph, plain)                # the checker does catch it


def test_diamond_inplace_with_concurrent_reader():
    """a = src(x); c = g(a); b = f(a) in place allowed (last reader); d = b + c.
    b and c are concurrent, so colouring refuses b's in-place write over a."""
    order = ["a", "c", "b", "d"]
    ins = {"a": ["x"], "c": ["A"], "b": ["A"], "d": ["B", "C"]}
    outs = {n: [n.upper()] for n in order}
    eb = dict.fromkeys(["x", "A", "B", "C", "D"], 4)
    graph = order, ins, outs, eb, {"b": [(0, 0)], "c": [(0, 0)]}, {"x", "D"}
    plain = plan_of(graph)
    assert plain.inplace == {"B": "A"} and plain.storage_of["B"] == plain.storage_of["A"]
    coloured = plan_of(graph, colouring=True)
    assert coloured.inplace == {} and len(set(coloured.storage_of.values())) == 3
    for plan in (plain, coloured):
        check_plan(graph, plan)
    check_colouring(graph, coloured)


def test_inplace_rules():
    # the same entry read twice by the in-place node (x * x) is still its last read
    order = ["a", "sq", "out"]
    ins = {"a": ["x"], "sq": ["A", "A"], "out": ["S"]}
    outs = {"a": ["A"], "sq": ["S"], "out": ["O"]}
    graph = order, ins, outs, {"x": 4, "A": 4, "S": 4, "O": 4}, {"sq": [(1, 0)]}, {"x", "O"}
    assert plan_of(graph).inplace == {"S": "A"}
    # a bigger output does not fit in place; an external input or output is never taken
    graph[3]["S"] = 8
    assert plan_of(graph).inplace == {}
    graph[3]["S"] = 4
    assert plan_of(graph[:5] + ({"x", "O", "A"},)).inplace == {}
    assert plan_of(graph[:5] + ({"x", "O", "S"},)).inplace == {}
    # one input feeds at most one in-place output
    order = ["a", "two", "out"]
    ins = {"a": ["x"], "two": ["A"], "out": ["P", "Q"]}
    outs = {"a": ["A"], "two": ["P", "Q"], "out": ["O"]}
    graph = order, ins, outs, dict.fromkeys("xAPQO", 4), {"two": [(0, 0), (0, 1)]}, {"x", "O"}
    plan = plan_of(graph)
    assert plan.inplace == {"P": "A"} and plan.storage_of["Q"] != plan.storage_of["A"]
    check_plan(graph, plan)


def test_coshare_best_fit_grow_and_match_range():
    """Free blocks of 10, 100 and 1000 bytes: 50 takes the 100 one, 2000 grows
    the 1000 one; 20000 is beyond the 16x match range and gets a new block."""
    def graph(big):
        order = ["a", "b", "c", "s", "d", "e", "out"]
        ins = {"a": ["x"], "b": ["x"], "c": ["x"], "s": ["A", "B", "C"], "d": ["x"],
               "e": ["x"], "out": ["S", "D", "E"]}
        outs = {n: [n.upper()] for n in order}
        eb = {"x": 4, "A": 10, "B": 100, "C": 1000, "S": 4, "D": 50, "E": big, "OUT": 4}
        return order, ins, outs, eb, {}, {"x", "OUT"}
    g = graph(2000)
    plan = plan_of(g)
    assert plan.storage_of == {"A": 0, "B": 1, "C": 2, "S": 3, "D": 1, "E": 2}
    assert plan.block_bytes == {0: 10, 1: 100, 2: 2000, 3: 4}
    check_plan(g, plan)
    g = graph(20000)
    plan = plan_of(g)
    assert plan.storage_of["E"] == 4 and plan.block_bytes[2] == 1000
    check_plan(g, plan)
    assert plan_of(g, match_range=32).storage_of["E"] == 2


def test_dead_outputs_are_planned_and_released():
    order = ["two", "next", "out"]
    ins = {"two": ["x"], "next": ["P"], "out": ["N"]}
    outs = {"two": ["P", "DEAD"], "next": ["N"], "out": ["O"]}
    graph = order, ins, outs, dict.fromkeys(["x", "P", "DEAD", "N", "O"], 4), {}, {"x", "O"}
    plan = plan_of(graph)
    assert plan.storage_of == {"P": 0, "DEAD": 1, "N": 1}
    check_plan(graph, plan)


def test_malformed_graphs_raise():
    order, ins, outs, eb, inp, ext = chain_graph(3)
    with pytest.raises(ValueError, match="before"):
        plan_memory(order[1:], ins, outs, eb, inp, ext)
    outs = outs | {2: ["e2"]}
    with pytest.raises(ValueError, match="twice"):
        plan_memory(order, ins, outs, eb, inp, ext)


def test_env_switch_and_naive(monkeypatch):
    graph = lecture_graph()
    assert memory.planning_enabled()
    monkeypatch.setenv("MINPY_PLAN_MEMORY", "0")
    assert not memory.planning_enabled()
    plan = plan_of(graph)
    assert plan.total_bytes == plan.naive_bytes == 20
    assert len(set(plan.storage_of.values())) == 5 and plan.inplace == {}
    monkeypatch.setenv("MINPY_PLAN_MEMORY", "1")
    assert plan_of(graph).total_bytes == 12


def test_summary_and_debug_line(caplog):
    plan = memory.MemoryPlan({}, {0: 12_300_000}, 45_600_000, 11_900_000)
    assert plan.summary() == "planned 12.3 MB for 45.6 MB naive (3.7x), lower bound 11.9 MB"
    assert memory.MemoryPlan({}, {}, 0, 0).summary() == \
        "planned 0 B for 0 B naive (n/a), lower bound 0 B"
    with caplog.at_level(logging.DEBUG, logger=memory.log.name):
        plan_of(lecture_graph())
    assert "planned 12 B for 20 B naive (1.7x), lower bound 8 B" in caplog.text


def test_big_graph_is_linear_ish():
    """A 20k-node forward+backward chain (every activation kept for backward)
    plans in well under the time a quadratic scan would take."""
    n = 10_000
    order = list(range(2 * n))
    ins = {i: ["x0" if i == 0 else f"e{i}"] for i in range(n)}
    outs = {i: [f"e{i + 1}"] for i in range(n)}
    for k in range(n):                                  # backward of node n-1-k
        j = n - 1 - k
        ins[n + k] = ([f"g{j + 1}"] if k else []) + (["x0"] if j == 0 else [f"e{j}"])
        outs[n + k] = [f"g{j}"]
    eb = {e: 8 for n_ in order for e in outs[n_]} | {"x0": 8}
    inp = {i: [(0, 0)] for i in range(n + 1, 2 * n)}
    graph = order, ins, outs, eb, inp, {"x0", "g0"}
    start = time.perf_counter()
    plan = plan_of(graph)
    elapsed = time.perf_counter() - start
    assert plan.lower_bound == plan.total_bytes == 8 * n
    assert elapsed < 5.0, elapsed


# ------------------------------------------------------------- random DAGs

def dags():
    return plan_dags(ext_bytes=8, sizes=[0, 4, 8, 16, 40, 200])


@given(dags(), st.booleans(), st.booleans(), st.booleans())
def test_random_dag_invariants(graph, inplace, coshare, colouring):
    plan = plan_of(graph, inplace=inplace, coshare=coshare, colouring=colouring)
    check_plan(graph, plan)
    if colouring:
        check_colouring(graph, plan)
    if not inplace:
        assert plan.inplace == {}
    if not (inplace or coshare):
        assert plan.total_bytes == plan.naive_bytes
        assert len(set(plan.storage_of.values())) == len(plan.storage_of)


@given(dags())
def test_random_dag_report_is_consistent(graph):
    report = memory.plan_report_from(*graph)
    assert report["naive"] >= max(report["inplace"], report["coshare"], report["both"])
    assert min(report["inplace"], report["coshare"], report["both"]) >= report["lower_bound"]
    assert report["both"] == plan_of(graph).total_bytes
