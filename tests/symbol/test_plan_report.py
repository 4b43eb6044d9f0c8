"""plan_report (minpy/symbol/passes/memory_report.py), the arena layout and live_peak
(minpy/symbol/passes/plan_memory.py), and Executor.memory_report's strategy categories.

Byte counts of a tiny net are worked out by hand; the zoo's ImageNet nets are
planned from shapes alone and held to the MXNet paper's memory figure (2x
training / 4x inference reduction vs naive) and to 1.15x of the lower bound.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minpy
import minpy.engine as engine
import minpy.symbol as sym
from minpy.symbol.passes import plan_memory as memory
from minpy.symbol import zoo
from minpy.symbol.passes.memory_report import plan_report
from _plan_checks import dags as plan_dags, lifetimes

KEYS = {"naive", "inplace", "coshare", "both", "both_blocks", "mirror", "lower_bound", "args",
        "grads", "aux", "outputs", "head_grads", "recomputed"}


def chain():
    """data(4, 10) -> fc1(16) -> relu -> fc2(3) -> SoftmaxOutput."""
    h = sym.Activation(sym.FullyConnected(sym.Variable("data"), num_hidden=16, name="fc1"),
                       act_type="relu", name="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def test_hand_computed_inference():
    r = plan_report(chain(), is_train=False, data=(4, 10))
    assert set(r) == KEYS
    # internal: fc1 out (4x16 float32 = 256 B), relu out (256), fc2 out (48); the
    # softmax output is the head.  relu may overwrite fc1's output in place.
    assert r["naive"] == 256 + 256 + 48
    assert r["inplace"] == 256 + 48             # fc1/relu one buffer, fc2 its own
    assert r["coshare"] == 256 + 256            # fc2 reuses fc1's bytes once relu ran
    assert r["both"] == r["lower_bound"] == 256 + 48
    assert r["mirror"] == r["both"] and r["recomputed"] == 0
    assert r["args"] == 4 * (4 * 10 + 16 * 10 + 16 + 3 * 16 + 3 + 4)
    assert r["grads"] == 0 and r["aux"] == 0 and r["outputs"] == 4 * 4 * 3


def test_hand_computed_training():
    r = plan_report(chain(), data=(4, 10))
    args = 4 * (4 * 10 + 16 * 10 + 16 + 3 * 16 + 3 + 4)
    assert r["args"] == args
    assert r["grads"] == args                    # grad_req 'write': every argument
    # backward adds: softmax grad (48), fc2 data grad (256), relu grad (256);
    # fc2's data grad dies into relu's backward, which may write it in place
    assert r["naive"] == 256 + 256 + 48 + 48 + 256 + 256
    assert r["lower_bound"] <= r["both"] <= min(r["inplace"], r["coshare"]) <= r["naive"]


@pytest.mark.parametrize("make,shape", [
    (zoo.mlp, (4, 784)),
    (lambda: zoo.lenet(num_filter=(4, 6), num_hidden=16), (4, 1, 28, 28)),
    (lambda: zoo.resnet(8, 10, (3, 16, 16), filter_list=[4, 4, 8, 8]), (4, 3, 16, 16))])
def test_invariants_small_nets(make, shape):
    net, shapes = make(), {"data": shape}
    train, infer = plan_report(net, **shapes), plan_report(net, is_train=False, **shapes)
    for r in (train, infer):
        assert set(r) == KEYS
        assert 0 < r["lower_bound"] <= r["both"] <= min(r["inplace"], r["coshare"])
        assert max(r["inplace"], r["coshare"]) <= r["naive"]
        assert r["both"] <= r["both_blocks"]
    assert train["mirror"] <= train["both"]
    assert infer["mirror"] == infer["both"] and infer["grads"] == 0
    assert train["args"] == infer["args"] and train["aux"] == infer["aux"]
    assert train["naive"] > infer["naive"] and train["grads"] > 0


@pytest.mark.parametrize("make", [zoo.vgg16, lambda: zoo.resnet(50), zoo.inception_bn])
def test_paper_targets_from_shapes(make):
    """The paper's figure: both strategies together give >= 2x (training) and
    >= 4x (inference) less internal memory than naive; within 1.15x of the
    peak of live bytes.  Shapes only (batch 2 keeps it quick)."""
    net = make()
    for is_train, factor in ((True, 2), (False, 4)):
        r = plan_report(net, is_train=is_train, data=(2, 3, 224, 224))
        assert r["naive"] >= factor * r["both"], r
        assert r["both"] <= 1.15 * r["lower_bound"], r
        assert r["mirror"] <= r["both"]


def test_grad_req_and_layout_options():
    net = chain()
    r = plan_report(net, grad_req={"fc1_weight": "write"}, data=(4, 10))
    assert r["grads"] == 4 * 16 * 10
    blocks = plan_report(net, memory_options={"layout": "blocks"}, data=(4, 10))
    assert blocks["both"] == blocks["both_blocks"] == plan_report(net, data=(4, 10))[
        "both_blocks"]
    with pytest.raises(ValueError, match="layout"):
        plan_report(net, memory_options={"layout": "heap"}, data=(4, 10))


def test_memory_report_matches_plan_report():
    net = zoo.resnet(8, 10, (3, 16, 16), filter_list=[4, 4, 8, 8])
    shapes = {"data": (4, 3, 16, 16)}
    rep = plan_report(net, **shapes)
    for mirror in (False, True):
        exe = net.simple_bind(minpy.cpu(), mirror=mirror, **shapes)
        m = exe.memory_report()
        for k in KEYS:
            assert m[k] == rep[k], (mirror, k)
        assert m["internal_planned"] == (rep["mirror"] if mirror else rep["both"])
        assert m["num_recomputed"] == (rep["recomputed"] if mirror else 0)
        assert m["arguments"] == rep["args"] and m["gradients"] == rep["grads"]
        # the arena is what was allocated
        assert exe._arena.nbytes == max(m["internal_planned"], 1)
    assert rep["mirror"] < rep["both"] and rep["recomputed"] > 0
    inf = net.simple_bind(minpy.cpu(), grad_req="null", **shapes).memory_report()
    assert inf["both"] == plan_report(net, is_train=False, **shapes)["both"]


def test_arena_executor_orders_writes_after_overlapping_blocks():
    exe = zoo.lenet(num_filter=(2, 3), num_hidden=8).simple_bind(data=(2, 1, 16, 16))
    p = exe.plan.plan
    assert isinstance(p, memory.ArenaPlan)
    overlaps = p.overlaps()
    assert any(overlaps.values())
    block_var = {b: v for b, (_, v) in exe._blocks.items()}
    steps = exe._fwd[True] + exe._bwd
    order = exe.plan.order
    for (fn, reads, writes, name), nid in zip(steps, order):
        for e in exe.plan.outputs_of[nid]:
            b = p.storage_of.get(e)
            if b is not None:
                assert {id(block_var[o]) for o in overlaps[b]} <= {id(w) for w in writes}, name
    # every view lies in the arena, at its block's offset
    base = exe._arena.__array_interface__["data"][0]
    for b, (view, _) in exe._blocks.items():
        assert view.__array_interface__["data"][0] - base == p.offset_of[b]


def test_blocks_layout_env(monkeypatch):
    monkeypatch.setenv("MINPY_MEMORY_LAYOUT", "blocks")
    exe = chain().simple_bind(data=(4, 10))
    assert exe._arena is None and not isinstance(exe.plan.plan, memory.ArenaPlan)
    monkeypatch.delenv("MINPY_MEMORY_LAYOUT")
    assert isinstance(chain().simple_bind(data=(4, 10)).plan.plan, memory.ArenaPlan)


def test_arena_and_blocks_give_same_results():
    net = zoo.resnet(8, 4, (3, 8, 8), filter_list=[2, 4, 4, 4])
    res = []
    for layout in ("arena", "blocks"):
        exe = net.simple_bind(minpy.cpu(), memory_options={"layout": layout},
                              type_dict={"data": np.float64}, data=(2, 3, 8, 8))
        rng = np.random.default_rng(3)
        for a in exe.arg_arrays:
            a[:] = rng.standard_normal(a.shape)
        exe.arg_dict["softmax_label"][:] = [1, 3]
        out = []
        for _ in range(2):
            out += [o.asnumpy().copy() for o in exe.forward(is_train=True)]
            exe.backward()
            out += [g.asnumpy().copy() for g in exe.grad_arrays]
        res.append(out)
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)
    engine.waitall()


# ------------------------------------------------------------ pure-data graphs

def lecture_graph():
    """The lecture's example (tests/symbol/test_memory_plan.py): B=sigmoid(A);
    C=relu(B); F=tanh(B); E=C+F; G=exp(E) in place; out=sum(G)."""
    order = ["b", "c", "f", "e", "g", "out"]
    ins = {"b": ["A"], "c": ["B"], "f": ["B"], "e": ["C", "F"], "g": ["E"], "out": ["G"]}
    outs = {"b": ["B"], "c": ["C"], "f": ["F"], "e": ["E"], "g": ["G"], "out": ["OUT"]}
    eb = dict.fromkeys(["A", "B", "C", "F", "E", "G", "OUT"], 16)
    return order, ins, outs, eb, {"c": [(0, 0)], "g": [(0, 0)]}, {"A", "OUT"}


def test_live_peak_and_arena_on_lecture_graph():
    g = lecture_graph()
    # at e: C and F are read while E is written (no in-place for +): 3 entries
    assert memory.live_peak(*g) == 48
    assert memory.plan_memory(*g).lower_bound == 32          # the looser bound
    p = memory.plan_memory(*g, layout="arena")
    check_arena(g, p)
    assert p.total_bytes == 48 and p.inplace == {"G": "E"}
    assert memory.plan_arena(*g, coshare=False).total_bytes == 16 * 4     # E, G one group
    assert memory.plan_arena(*g, inplace=False, coshare=False).total_bytes == 16 * 5
    with pytest.raises(ValueError, match="colouring"):
        memory.plan_memory(*g, layout="arena", colouring=True)




def check_arena(graph, plan):
    """No two entries sharing a byte are live at once, except an in-place
    output over the input that dies where it is written."""
    order, ins, outs, eb, inp, ext = graph
    writer, last = lifetimes(order, ins, outs, ext)
    assert set(plan.storage_of) == set(writer)
    span = {}
    for e, b in plan.storage_of.items():
        assert plan.block_bytes[b] >= eb[e]
        o = plan.offset_of[b]
        assert o % plan.align == 0 and o + eb[e] <= plan.total_bytes
        span[e] = (o, o + eb[e])
    for eo, ei in plan.inplace.items():
        n = order[writer[eo]]
        assert any(ins[n][ip] == ei and outs[n][op] == eo for ip, op in inp.get(n, ()))
        assert last[ei] == writer[eo] and plan.storage_of[eo] == plan.storage_of[ei]
    es = sorted(writer)
    for i, e1 in enumerate(es):
        for e2 in es[i + 1:]:
            (a1, b1), (a2, b2) = span[e1], span[e2]
            if a1 < b2 and a2 < b1:                            # share bytes
                first, second = sorted((e1, e2), key=writer.get)
                assert last[first] < writer[second] or (
                    last[first] == writer[second] and plan.inplace.get(second) == first), \
                    (e1, e2)
    assert memory.live_peak(*graph) <= plan.total_bytes
    assert plan.total_bytes <= sum(-(-max(eb[e], 1) // plan.align) * plan.align
                                   for e in writer)


def dags():
    return plan_dags(ext_bytes=16, sizes=[0, 4, 16, 40, 200])


@given(dags(), st.booleans(), st.booleans())
def test_random_dag_arena_invariants(graph, inplace, coshare):
    plan = memory.plan_arena(*graph, inplace=inplace, coshare=coshare)
    check_arena(graph, plan)
    if not inplace:
        assert plan.inplace == {}
    if not coshare:                     # one extent per in-place group, end to end
        assert plan.total_bytes == sum(-(-max(nb, 1) // 16) * 16
                                       for nb in plan.block_bytes.values())


@given(dags())
def test_random_dag_offline_pack_is_valid(graph):
    """The offline greedy (used when the online pass misses the bound) on its own."""
    order, ins, outs, eb, inp, ext = graph
    writer, last = lifetimes(order, ins, outs, ext)
    entries = sorted(writer)
    spans = [(writer[e], last[e], -(-max(eb[e], 1) // 16) * 16) for e in entries]
    offsets, top = memory._pack(spans, 16)
    for i, (s1, t1, n1) in enumerate(spans):
        assert offsets[i] % 16 == 0 and offsets[i] + n1 <= top
        for j in range(i + 1, len(spans)):
            s2, t2, n2 = spans[j]
            if s1 <= t2 and s2 <= t1:                            # live together
                assert offsets[i] + n1 <= offsets[j] or offsets[j] + n2 <= offsets[i]
