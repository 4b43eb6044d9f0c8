"""Mirror in the executor: nodes recomputed in backward instead of kept.

Results with mirror must be the results without (float64, compared exactly):
outputs, gradients and BatchNorm's moving statistics over several steps; the
mirrored plan must need less memory where the search recomputes something;
attributes (force_mirroring, __mirror_stage__), Dropout's exclusion, the
``mirror=`` argument and the MINPY_BACKWARD_DO_MIRROR switch.
"""
import numpy as np
import pytest

import minpy
import minpy.symbol as sym
from minpy.symbol import zoo

F64 = np.float64


def mlp(force=()):
    """data -> (FC -> relu) x 2 -> FC -> softmax; ``force`` names relus to force."""
    net = sym.Variable("data")
    for i, h in enumerate((12, 8)):
        net = sym.FullyConnected(net, num_hidden=h, name=f"fc{i}")
        attr = {"force_mirroring": "True"} if f"relu{i}" in force else None
        net = sym.Activation(net, act_type="relu", name=f"relu{i}", attr=attr)
    return sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=4, name="out"), name="softmax")


def lenet_forced():
    """LeNet with its tanh and pooling nodes marked force_mirroring='True'."""
    f = {"force_mirroring": "True"}
    net = sym.Variable("data")
    for i, nf in enumerate((3, 4)):
        net = sym.Convolution(net, kernel=(3, 3), num_filter=nf, name=f"conv{i}")
        net = sym.Activation(net, act_type="tanh", name=f"tanh{i}", attr=f)
        net = sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}",
                          attr=f)
    net = sym.FullyConnected(sym.Flatten(net), num_hidden=8, name="fc1")
    net = sym.Activation(net, act_type="tanh", name="tanh2", attr=f)
    return sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=3, name="fc2"), name="softmax")


def tiny_resnet():
    return zoo.resnet(14, 5, (3, 8, 8), filter_list=[2, 3, 4, 4])


SHAPES = {"mlp": (6, 10), "lenet": (3, 1, 14, 14), "resnet": (3, 3, 8, 8)}


def run(net, shape, mirror, steps=3, seed=0, train=True):
    """Bind in float64, fill the arguments, run ``steps`` forward/backward;
    return the executor and every output, gradient and aux state seen."""
    exe = net.simple_bind(minpy.cpu(), mirror=mirror, type_dict={"data": F64}, data=shape)
    rng = np.random.default_rng(seed)
    for k, a in exe.arg_dict.items():
        a[:] = rng.standard_normal(a.shape) * 0.5
    n_cls = exe.outputs[0].shape[-1]
    exe.arg_dict["softmax_label"][:] = rng.integers(0, n_cls, shape[0])
    seen = []
    for _ in range(steps):
        sym.seed(7)
        seen += [o.asnumpy().copy() for o in exe.forward(is_train=train)]
        exe.backward()
        seen += [g.asnumpy().copy() for g in exe.grad_arrays if g is not None]
        seen += [a.asnumpy().copy() for a in exe.aux_arrays]
    return exe, seen


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def names(exe):
    return {exe.plan.graph.nodes[n].name for n in exe.plan.recompute}


@pytest.mark.parametrize("case", ["mlp", "lenet", "resnet", "resnet-all"])
def test_mirror_gives_the_same_results(case):
    if case == "mlp":
        net, mirror = mlp(force=("relu0", "relu1")), None
    elif case == "lenet":
        net, mirror = lenet_forced(), None
    else:
        net, mirror = tiny_resnet(), (True if case == "resnet" else "all")
    shape = SHAPES[case.split("-")[0]]
    plain, a = run(net, shape, False)
    mirrored, b = run(net, shape, mirror)
    assert not plain.plan.recompute and mirrored.plan.recompute
    assert len(mirrored.plan.order) > len(plain.plan.order)       # duplicates run
    assert_same(a, b)
    if case == "mlp":
        assert names(mirrored) == {"relu0", "relu1"}
    if case == "lenet":
        assert names(mirrored) == {"tanh0", "pool0", "tanh1", "pool1", "tanh2"}
    if case.startswith("resnet"):
        r0, r1 = plain.memory_report(False), mirrored.memory_report(False)
        assert r1["internal_planned"] < r0["internal_planned"]
        kinds = {mirrored.plan.graph.nodes[n].op.name for n in mirrored.plan.recompute}
        assert "BatchNorm" in kinds
        assert ("Convolution" in kinds) == (case == "resnet-all")


def test_batchnorm_replay_after_inference_forward():
    """backward after forward(is_train=False): recomputed BatchNorms replay the
    inference mode too (moving statistics), as the kept outputs would be."""
    net = tiny_resnet()
    _, a = run(net, SHAPES["resnet"], False, steps=2, train=False)
    _, b = run(net, SHAPES["resnet"], "all", steps=2, train=False)
    assert_same(a, b)


def test_dropout_is_never_recomputed():
    x = sym.Variable("data")
    h = sym.Activation(sym.FullyConnected(x, num_hidden=16, name="fc0"), act_type="relu",
                       name="relu0", attr={"force_mirroring": "True"})
    h = sym.Dropout(h, p=0.5, name="drop", attr={"force_mirroring": "True"})
    h = sym.Activation(sym.FullyConnected(h, num_hidden=12, name="fc1"), act_type="sigmoid",
                       name="sig", attr={"force_mirroring": "True"})
    net = sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")
    plain, a = run(net, (5, 6), False)
    mirrored, b = run(net, (5, 6), "all")
    assert "drop" not in names(mirrored) and {"relu0", "sig"} <= names(mirrored)
    assert_same(a, b)
    sym.seed(8)                                     # dropout is live: another mask differs
    other = plain.forward(is_train=True)[0].asnumpy().copy()
    sym.seed(7)
    assert not np.array_equal(other, plain.forward(is_train=True)[0].asnumpy())


def test_force_keep_and_mirror_stage():
    base = tiny_resnet()
    plain = base.simple_bind(data=SHAPES["resnet"], mirror="all")
    rc = names(plain)
    assert "stage1_unit1_conv1" in rc
    # force_mirroring='False' keeps a node the search would recompute
    net = tiny_resnet()
    net.get_internals()["stage1_unit1_conv1_output"]._set_attr(force_mirroring="False")
    kept = net.simple_bind(data=SHAPES["resnet"], mirror="all")
    assert "stage1_unit1_conv1" not in names(kept)
    # nodes sharing a __mirror_stage__ label are decided together (early in the
    # forward pass, and late, where the search's tail trim must keep it whole)
    for stage in (["stage2_unit1_1_bn", "stage2_unit1_1_relu", "stage2_unit1_conv1"],
                  ["stage3_unit2_1_relu", "stage3_unit2_conv1", "stage3_unit2_2_bn",
                   "stage3_unit2_2_relu", "stage3_unit2_conv2", "final_bn"]):
        net = tiny_resnet()
        internals = net.get_internals()
        for n in stage:
            internals[f"{n}_output"]._set_attr(__mirror_stage__="s")
        staged = net.simple_bind(data=SHAPES["resnet"], mirror="all")
        assert names(staged) & set(stage) in (set(), set(stage))
    _, a = run(net, SHAPES["resnet"], False, steps=1)
    _, b = run(net, SHAPES["resnet"], "all", steps=1)
    assert_same(a, b)


def test_env_switch_and_argument(monkeypatch):
    net, shape = tiny_resnet(), SHAPES["resnet"]
    monkeypatch.delenv("MINPY_BACKWARD_DO_MIRROR", raising=False)
    assert not net.simple_bind(data=shape).plan.recompute        # default: off
    monkeypatch.setenv("MINPY_BACKWARD_DO_MIRROR", "1")
    on = net.simple_bind(data=shape)
    assert on.plan.mirror == "cheap" and on.plan.recompute
    assert names(on) == names(net.simple_bind(data=shape, mirror=True))
    assert not net.simple_bind(data=shape, mirror=False).plan.recompute
    # the switch also reaches bind() and reshape()
    exe = net.bind(minpy.cpu(), on.arg_arrays, args_grad=on.grad_arrays,
                   aux_states=on.aux_arrays)
    assert exe.plan.recompute
    assert on.reshape(partial_shaping=True, data=(2, 3, 8, 8)).plan.recompute
    monkeypatch.setenv("MINPY_BACKWARD_DO_MIRROR", "0")
    assert not net.simple_bind(data=shape).plan.recompute
    # forced nodes are recomputed without the switch (MXNet's force_mirroring)
    assert names(mlp(force=("relu1",)).simple_bind(data=(6, 10))) == {"relu1"}
    assert not mlp(force=("relu1",)).simple_bind(data=(6, 10), mirror=False).plan.recompute
    with pytest.raises(ValueError, match="mirror"):
        net.simple_bind(data=shape, mirror="sometimes")


def test_inference_bind_ignores_mirror():
    exe = tiny_resnet().simple_bind(data=SHAPES["resnet"], grad_req="null", mirror="all")
    assert exe.plan.mirror is None and not exe.plan.recompute


def test_mirrored_deep_resnet_plan_is_much_smaller():
    """Shapes only: a 6n+2 CIFAR ResNet (n=9) at batch 16, recomputing
    everything the search picks, needs several times less internal memory."""
    net = zoo.resnet(56, 10, (3, 32, 32))
    plain = net.memory_plan(data=(16, 3, 32, 32))
    allm = net.memory_plan(data=(16, 3, 32, 32), mirror="all")
    cheap = net.memory_plan(data=(16, 3, 32, 32), mirror=True)
    p, a, c = (x.plan.total_bytes for x in (plain, allm, cheap))
    assert a < c < p and p >= 2.5 * a, (p, c, a)
    assert len(allm.order) > len(plain.order)


def test_tail_trim_keeps_stages_whole():
    """The search's last step (keep the end of the forward pass) never splits
    a __mirror_stage__ that straddles a cut point, nor drops a forced node."""
    from minpy.symbol.passes.mirror_choice import _trim_tail
    fwd = list(range(20))
    stage_of = {12: "s", 13: "s", 14: "s", 15: "s"}
    seen = []

    def evaluate(recompute):
        seen.append(set(recompute))
        return 100 - len(fwd) + len(recompute)       # fewer recomputed: fewer bytes
    best = _trim_tail(fwd, set(fwd), {18}, stage_of, dict.fromkeys(fwd, 1), evaluate, 100)
    assert seen and all(18 in r for r in seen)
    assert all(len(r & set(stage_of)) in (0, len(stage_of)) for r in seen)
    assert best == min(seen, key=len) and 18 in best
