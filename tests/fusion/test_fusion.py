"""Elementwise fusion: the Program IR, its kernels, and the symbol graph pass."""
import contextlib
import logging
import os

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import minpy
import minpy.symbol as sym
from minpy.fusion import cpu as fusion
from minpy.symbol.passes.fuse import fuse_graph, fusion_enabled
from minpy.symbol.graph_plan import GraphPlan


# each module compiles into a cache folder of its own (tests/fusion/conftest.py)
pytestmark = pytest.mark.usefixtures("module_cache_dir")


@contextlib.contextmanager
def env(**kw):
    old = {k: os.environ.get(k) for k in kw}
    os.environ.update(kw)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ------------------------------------------------------------ an independent reference
def numpy_reference(program, inputs):
    """The program computed straight from its instruction list with NumPy."""
    vals = []

    def get(o):
        return inputs[o[1]] if o[0] == "in" else vals[o[1]] if o[0] == "t" else o[1]
    for ins in program.instrs:
        name, args = ins[0], [get(o) for o in ins[1]]
        if name == "sigmoid":
            v = numpy.reciprocal(numpy.exp(numpy.negative(args[0])) + 1)
        elif name == "relu":
            v = numpy.maximum(args[0], 0)
        elif name == "astype":
            v = numpy.asarray(args[0]).astype(ins[2])
        elif name == "where":
            v = numpy.where(*args)
        else:
            v = getattr(numpy, name)(*args)
        vals.append(numpy.asarray(v))
    return [numpy.asarray(get(o)) for o in program.outputs]


SAFE_UNARY = ["negative", "exp", "tanh", "sqrt", "square", "abs", "sigmoid", "relu",
              "sign", "log1p", "sin", "reciprocal"]
SAFE_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "greater", "less_equal",
               "divide"]
CONSTS = [0.5, 2.0, 3, numpy.float32(1.5), -1.25]


@st.composite
def programs(draw):
    """(program, inputs): a random DAG over 1-3 broadcastable inputs."""
    ndim = draw(st.integers(0, 3))
    base = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=ndim,
                               max_size=ndim)))
    n_in = draw(st.integers(1, 3))
    shapes = []
    for k in range(n_in):
        cut = draw(st.integers(0, ndim))
        s = tuple(d if draw(st.booleans()) or k == 0 else 1 for d in base[cut:])
        shapes.append(base if k == 0 else s)
    dtypes = [draw(st.sampled_from(["float32", "float32", "float64", "int32"]))
              for _ in range(n_in)]
    rng = numpy.random.default_rng(draw(st.integers(0, 1000)))
    inputs = [numpy.asarray((rng.random(s) * 1.5 + 0.25).astype(d) if d != "int32" else
                            rng.integers(1, 4, s).astype(d)) for s, d in zip(shapes, dtypes)]
    operands = [("in", k) for k in range(n_in)]
    instrs = []
    for j in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["u", "b", "b", "bc", "w"]))
        pick = st.sampled_from(operands)
        if kind == "u":
            instrs.append((draw(st.sampled_from(SAFE_UNARY)), (draw(pick),)))
        elif kind == "b":
            instrs.append((draw(st.sampled_from(SAFE_BINARY)), (draw(pick), draw(pick))))
        elif kind == "bc":
            c = ("c", draw(st.sampled_from(CONSTS)))
            a = draw(pick)
            instrs.append((draw(st.sampled_from(["add", "multiply", "subtract"])),
                           (c, a) if draw(st.booleans()) else (a, c)))
        else:
            m = ("t", len(instrs) - 1) if instrs else operands[0]
            instrs.append(("greater", (m, ("c", 1.0))))
            instrs.append(("where", (("t", len(instrs) - 1), draw(pick), draw(pick))))
        operands.append(("t", len(instrs) - 1))
    outs = [("t", len(instrs) - 1)]
    if draw(st.booleans()) and len(instrs) > 1:
        outs.append(draw(st.sampled_from(operands[n_in:-1])))
    return fusion.Program(n_in, instrs, outs), inputs


def _check_close(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        tol = 2e-6 if got.dtype == numpy.float32 else 1e-12
        numpy.testing.assert_allclose(got, want, rtol=tol * 4, atol=tol, equal_nan=True)
    else:
        numpy.testing.assert_array_equal(got, want)


@settings(max_examples=15)
@given(programs())
def test_kernel_equals_evaluate_equals_numpy(case):
    program, inputs = case
    with numpy.errstate(all="ignore"):
        want = numpy_reference(program, inputs)
        dts = fusion.result_dtypes(program, [a.dtype for a in inputs])
        assert dts == [w.dtype for w in want]
        ev = fusion.evaluate(program, inputs)
        out_shape = numpy.broadcast_shapes(*[a.shape for a in inputs])
        for e, w in zip(ev, want):
            _check_close(numpy.broadcast_to(e, out_shape), numpy.broadcast_to(w, out_shape))
        k = fusion.compile_program(program, [a.dtype for a in inputs],
                                   [a.shape for a in inputs], out_shape)
        assert k.fused == fusion.numba_available()
        outs = [numpy.full(out_shape, 7, d) for d in dts]
        k(inputs, outs)
        for o, w in zip(outs, want):
            _check_close(o, numpy.broadcast_to(w, out_shape))
        # in place: the first output written over an input of its shape and dtype
        for i, a in enumerate(inputs):
            if a.shape == out_shape and a.dtype == dts[0]:
                ins = [x.copy() for x in inputs]
                outs = [ins[i]] + [numpy.empty(out_shape, d) for d in dts[1:]]
                k(ins, outs)
                for o, w in zip(outs, want):
                    _check_close(o, numpy.broadcast_to(w, out_shape))
                break


def _chain(n_in=3):
    # (a*b+c)*0.5+a
    return fusion.Program(3, [("multiply", (("in", 0), ("in", 1))),
                              ("add", (("t", 0), ("in", 2))),
                              ("multiply", (("t", 1), ("c", 0.5))),
                              ("add", (("t", 2), ("in", 0)))], [("t", 3)])


@pytest.mark.parametrize("op, levels", [("tanh", 1), ("sin", 3)])
def test_large_chunked_parallel_with_transcendental_and_in_place(op, levels):
    # tanh is fused (vmath): one loop; sin stays a NumPy call: three levels, chunked
    p = fusion.Program(3, [("multiply", (("in", 0), ("in", 1))), ("add", (("t", 0), ("in", 2))),
                           (op, (("t", 1),)), ("multiply", (("t", 2), ("c", 0.5))),
                           ("add", (("t", 3), ("in", 0)))], [("t", 4), ("t", 1)])
    n = fusion.PARALLEL_MIN + 12345          # several chunks, two threads
    rng = numpy.random.default_rng(1)
    a, b, c = (rng.random(n, dtype=numpy.float32) for _ in range(3))
    k = fusion.compile_program(p, ["float32"] * 3, [(n,)] * 3, (n,))
    assert len(k._c.order) == levels if fusion.numba_available() else True
    want = [getattr(numpy, op)(a * b + c) * 0.5 + a, a * b + c]
    outs = [numpy.empty(n, numpy.float32) for _ in range(2)]
    with env(MINPY_FUSION_THREADS="2"):
        k([a, b, c], outs)
        for o, w in zip(outs, want):
            numpy.testing.assert_allclose(o, w, rtol=1e-6)
        aa, cc = a.copy(), c.copy()
        k([aa, b, cc], [aa, cc])             # both outputs over inputs read later
    for o, w in zip((aa, cc), want):
        numpy.testing.assert_allclose(o, w, rtol=1e-6)


def test_constants_are_arguments_and_kernels_shared():
    p1, p2 = _chain(), fusion.Program(3, [("multiply", (("in", 0), ("in", 1))),
                                          ("add", (("t", 0), ("in", 2))),
                                          ("multiply", (("t", 1), ("c", 0.25))),
                                          ("add", (("t", 2), ("in", 0)))], [("t", 3)])
    assert p1.key != p2.key and p1.skey == p2.skey and p2.consts == (0.25,)
    x = [numpy.arange(6, dtype=numpy.float64).reshape(2, 3) + 1] * 3
    k1 = fusion.compile_program(p1, ["float64"] * 3, [(2, 3)] * 3, (2, 3))
    k2 = fusion.compile_program(p2, ["float64"] * 3, [(2, 3)] * 3, (2, 3))
    assert k1._c is k2._c
    o = numpy.empty((2, 3))
    k2(x, [o])
    numpy.testing.assert_array_equal(o, (x[0] * x[0] + x[0]) * 0.25 + x[0])


@pytest.mark.skipif(not fusion.numba_available(), reason="numba not installed")
def test_generated_source_is_cached_on_disk():
    p = fusion.Program(2, [("subtract", (("in", 0), ("in", 1))), ("square", (("t", 0),)),
                           ("minimum", (("t", 1), ("c", 9.0)))], [("t", 2)])
    k = fusion.compile_program(p, ["float32", "float32"], [(4, 1), (3,)], (4, 3))
    assert k.dims == (4, 3) and "for i1 in range(n1)" in k.source
    files = os.listdir(fusion.cache_dir())
    assert any(f.endswith(".py") and f.startswith("minpy_fusion_") for f in files)
    x, y = numpy.arange(4, dtype=numpy.float32)[:, None], numpy.ones(3, numpy.float32)
    o = numpy.empty((4, 3), numpy.float32)
    k([x, y], [o])
    numpy.testing.assert_array_equal(o, numpy.minimum((x - y) ** 2, 9.0))


def test_without_numba_falls_back_to_evaluate(monkeypatch):
    monkeypatch.setattr(fusion, "_NB", {"ok": False})
    monkeypatch.setattr(fusion, "_compiled", {})
    monkeypatch.setattr(fusion, "_wins", {})
    k = fusion.compile_program(_chain(), ["float32"] * 3, [(5,)] * 3, (5,))
    assert not k.fused and not k.wins
    a = numpy.linspace(0, 1, 5, dtype=numpy.float32)
    o = numpy.empty(5, numpy.float32)
    k.run([a, a, a], [o])
    numpy.testing.assert_array_equal(o, (a * a + a) * 0.5 + a)


def test_wins_is_measured_once_per_bucket():
    k = fusion.compile_program(_chain(), ["float32"] * 3, [(1 << 16,)] * 3, (1 << 16,))
    w = k.wins
    assert isinstance(w, bool) and (w is False or fusion.numba_available())
    assert fusion._wins[k._wkey] is w
    if fusion.numba_available():
        t_fused, t_ref = k.timings
        assert w == (t_fused < t_ref)


def test_bad_programs_and_shapes_are_named():
    with pytest.raises(ValueError, match="unknown op 'frobnicate'"):
        fusion.Program(1, [("frobnicate", (("in", 0),))], [("t", 0)])
    with pytest.raises(ValueError, match="instruction 0 \\(add\\) takes 2"):
        fusion.Program(1, [("add", (("in", 0),))], [("t", 0)])
    with pytest.raises(ValueError, match="bad operand"):
        fusion.Program(1, [("exp", (("t", 0),))], [("t", 0)])
    with pytest.raises(ValueError, match=r"input 1 of shape \(4,\) does not broadcast"):
        fusion.compile_program(_chain(), ["float32"] * 3, [(3,), (4,), (3,)], (3,))
    with pytest.raises(TypeError, match="instruction 0 \\(negative\\)"):
        fusion.result_dtypes(fusion.Program(1, [("negative", (("in", 0),))], [("t", 0)]),
                             ["bool"])


def test_cuda_source_structure():
    p = fusion.Program(2, [("multiply", (("in", 0), ("in", 1))), ("tanh", (("t", 0),)),
                           ("greater", (("t", 1), ("c", 0))),
                           ("astype", (("t", 2),), "float32"),
                           ("multiply", (("t", 3), ("c", 0.5)))], [("t", 4), ("in", 0)])
    ins, outs, body, name = fusion.cuda_source(p, ["float32", "float32"])
    assert ins == "float32 x0, float32 x1, int64 c0, float64 c1"
    assert outs == "float32 y0, float32 y1"
    lines = body.splitlines()
    assert lines[0] == "float t0 = (float)(x0 * x1);"
    assert "tanhf(t0)" in lines[1]
    assert lines[2].startswith("bool t2") and "((float)(c0))" in lines[2]
    assert "((float)(c1))" in lines[4]
    assert lines[-2:] == ["y0 = t4;", "y1 = x0;"] and name.startswith("minpy_fused_")
    d = fusion.cuda_source(p, ["float64", "float64"])[2]
    assert "tanh(t0)" in d and "tanhf" not in d


def test_cupy_kernel_runs_on_gpu():
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
    p = _chain()
    a = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    c = cupy.ones(4, cupy.float32)
    k = fusion.compile_program(p, ["float32"] * 3, [(3, 4), (3, 4), (4,)], (3, 4), "cupy")
    o = cupy.empty((3, 4), cupy.float32)
    k([a, a, c], [o])
    numpy.testing.assert_allclose(cupy.asnumpy(o), cupy.asnumpy((a * a + c) * 0.5 + a))


# ------------------------------------------------------------------ the symbol pass
def _bind_run(net, shapes, fusion_on, grad=True, seed=0):
    with env(MINPY_FUSION="1" if fusion_on else "0", MINPY_FUSION_KERNEL="always"):
        exe = net.simple_bind(minpy.cpu(), grad_req="write" if grad else "null", **shapes)
    rng = numpy.random.default_rng(seed)
    vals = {k: (rng.random(s) + 0.25).astype(numpy.float32) for k, s in shapes.items()}
    with env(MINPY_FUSION_KERNEL="always"):
        outs = [o.asnumpy() for o in exe.forward(is_train=True, **vals)]
        if grad:
            exe.backward()
    grads = {k: v.asnumpy() for k, v in exe.grad_dict.items()} if grad else {}
    ops = [exe.plan.graph.nodes[i].op.name for i in exe.plan.order]
    return outs, grads, ops


@st.composite
def symbols(draw):
    vs = [sym.Variable(n) for n in ("x", "y", "z")]
    pool = list(vs)
    for _ in range(draw(st.integers(2, 6))):
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        k = draw(st.integers(0, 9))
        s = draw(st.sampled_from([0.5, 2.0, -1.5]))
        e = [lambda: a * b, lambda: a + s, lambda: s - a, lambda: a * s,
             lambda: sym.tanh(a), lambda: sym.square(a), lambda: sym.sigmoid(a),
             lambda: sym.exp(a * 0.25), lambda: sym.Activation(a, act_type="relu") + b,
             lambda: sym.LeakyReLU(a, act_type="leaky", slope=0.2) * b][k]()
        pool.append(e)
    return sym.Group([pool[-1], pool[-2]]) if draw(st.booleans()) else pool[-1]


@settings(max_examples=8)
@given(symbols())
def test_fused_symbol_equals_unfused(net):
    names = net.list_arguments()
    shapes = {n: (3, 4) for n in names}
    o0, g0, ops0 = _bind_run(net, shapes, False)
    o1, g1, ops1 = _bind_run(net, shapes, True)
    assert "_FusedElemwise" not in ops0
    assert len(ops1) <= len(ops0)
    for a, b in zip(o0, o1):
        numpy.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert g0.keys() == g1.keys()
    for k in g0:
        numpy.testing.assert_allclose(g1[k], g0[k], rtol=1e-5, atol=1e-6)


def _forward_chain():
    a, b, c = sym.Variable("a"), sym.Variable("b"), sym.Variable("c")
    return sym.Activation((a * b + c) * 0.5 + a, act_type="tanh")


def test_forward_chain_fuses_into_one_node_with_fewer_internal_bytes():
    net, shapes = _forward_chain(), {k: (8, 16) for k in "abc"}
    plans = {f: GraphPlan(net, shapes, {}, "null", fusion=f) for f in (False, True)}
    ops = {f: [p.graph.nodes[i].op.name for i in p.order] for f, p in plans.items()}
    assert ops[True] == ["_FusedElemwise"] and len(ops[False]) == 5
    rep = {f: p.memory_report(False)["internal_planned"] for f, p in plans.items()}
    assert rep[False] > 0 and rep[True] < rep[False]
    o0, _, _ = _bind_run(net, shapes, False, grad=False)
    o1, _, _ = _bind_run(net, shapes, True, grad=False)
    numpy.testing.assert_allclose(o1[0], o0[0], rtol=1e-6)


def test_switch_turns_fusion_off(monkeypatch):
    net, shapes = _forward_chain(), {k: (2, 3) for k in "abc"}
    monkeypatch.setenv("MINPY_FUSION", "0")
    assert not fusion_enabled()
    p = GraphPlan(net, shapes, {}, "null")
    assert all(p.graph.nodes[i].op.name != "_FusedElemwise" for i in p.order)
    assert fusion_enabled(True)
    monkeypatch.setenv("MINPY_FUSION", "1")
    p = GraphPlan(net, shapes, {}, "null")
    assert [p.graph.nodes[i].op.name for i in p.order] == ["_FusedElemwise"]


def test_debug_line_reports_groups_nodes_and_bytes(caplog):
    net = _forward_chain()
    with caplog.at_level(logging.DEBUG, logger="minpy.symbol.passes.fuse"):
        GraphPlan(net, {k: (4, 5) for k in "abc"}, {}, "null", fusion=True)
    lines = [r.getMessage() for r in caplog.records if r.name == "minpy.symbol.passes.fuse"]
    # 5 nodes -> 1; the 4 entries before the head are no longer stored: 4 * 80 bytes
    assert lines == ["fuse: 1 groups fused (5 nodes), op nodes 5 -> 1, intermediate bytes "
                     "saved: 320"]


def test_pass_copies_graph_keeps_variables_and_fwd_nodes():
    x, y = sym.Variable("x"), sym.Variable("y")
    act = sym.Activation(x * 2.0 + 1.0, act_type="relu")
    net = sym.exp(act) * 3.0 - y
    heads = list(net._outputs)
    before = [(n, list(n.inputs)) for n in __import__("minpy.symbol.graph", fromlist=["x"])
              .topo_sort(heads)]
    new = fuse_graph(heads)
    assert new[0][0].op.name == "_FusedElemwise"
    for n, ins in before:                       # the symbol's graph is untouched
        assert n.inputs == ins
    plan = GraphPlan(net, {"x": (3,), "y": (3,)}, {}, "write", fusion=True)
    names = [plan.graph.nodes[i].op.name for i in plan.order]
    assert "Activation" in names              # referenced by _backward_Activation
    assert {plan.graph.entry(plan.arg_entry[k])[0] for k in "xy"} == \
        {n for n, _ in before if n.op is None}
