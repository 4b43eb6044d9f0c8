"""minpy's symbol operators against real MXNet 1.9.1 (``tests/fixtures/mxnet/ops_cases.*``,
made by ``make_op_fixtures.py``): every case's MXNet JSON is loaded with
``minpy.symbol.load_json``, bound with ``simple_bind``, run forward (training
or inference as MXNet ran it) and backward with MXNet's head gradients, and
the outputs, gradients and aux states are compared with MXNet's.  Cases
MXNet refuses must be refused too.  Then: MXNet's ``Reshape`` shape table,
finite-difference gradient checks of the new differentiable ops, and the
error messages for bad parameters.
"""
import json
import pathlib

import numpy as np
import pytest

import minpy
import minpy.symbol as sym
from minpy.symbol import OPS, check_symbol_grad
from minpy.symbol.ops.shape import reshape_shape
from minpy.symbol.registry import Mismatch

FIX = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "mxnet"
DOC = json.loads((FIX / "ops_cases.json").read_text())
ARR = np.load(FIX / "ops_cases.npz")
CASES = {c["name"]: c for c in DOC["cases"]}

# outputs MXNet leaves uninitialised (rrelu's mask in inference)
UNDEFINED_OUTPUTS = {("LeakyReLU-rrelu", 1)}
# cases whose backward MXNet computes from bad input and minpy refuses (same forward)
REFUSED_BACKWARD = {"SoftmaxOutput-outofrange":
                    r"SoftmaxOutput: label -1 at position \(1,\) .* \(4 classes\)"}


def _bind(case):
    # through minpy's own writer and back, so every op's parameters round-trip too
    net = sym.load_json(sym.load_json(case["symbol"]).tojson())
    shapes = {i["name"]: tuple(i["shape"]) for i in case["inputs"]}
    types = {i["name"]: np.dtype(i["dtype"]) for i in case["inputs"]}
    req = {n: ("write" if n in case.get("grads", ()) else "null") for n in net.list_arguments()}
    return net, net.simple_bind(minpy.cpu(), grad_req=req, type_dict=types, **shapes)


def _close(got, want, case, what):
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, MXNet {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, MXNet {want.dtype}"
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=case["rtol"], atol=case["atol"], err_msg=what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    case = CASES[name]
    if "error" in case:
        with pytest.raises((ValueError, TypeError)):
            net, exe = _bind(case)
            exe.forward(**{i["name"]: ARR.get(f"{name}|in|{i['name']}") for i in case["inputs"]
                           if i["name"] in net.list_arguments()})
        return
    net, exe = _bind(case)
    args, aux = net.list_arguments(), net.list_auxiliary_states()
    assert sorted(aux) == sorted(case["aux"])
    exe.copy_params_from({k: ARR[f"{name}|in|{k}"] for k in args},
                         {k: ARR[f"{name}|in|{k}"] for k in aux})
    outs = exe.forward(is_train=case["is_train"])
    assert len(outs) == case["num_outputs"]
    for i, o in enumerate(outs):
        if (name, i) not in UNDEFINED_OUTPUTS:
            _close(o.asnumpy(), ARR[f"{name}|out|{i}"], case, f"output {i}")
    for k in aux:
        _close(exe.aux_dict[k].asnumpy(), ARR[f"{name}|aux|{k}"], case, f"aux {k} after forward")
    if not case["grads"]:
        return
    if name in REFUSED_BACKWARD:
        with pytest.raises(ValueError, match=REFUSED_BACKWARD[name]):
            exe.backward([ARR[f"{name}|head|{i}"] for i in range(len(outs))])
        return
    exe.backward([ARR[f"{name}|head|{i}"] for i in range(len(outs))])
    for k in case["grads"]:
        g = exe.grad_dict.get(k)
        want = ARR[f"{name}|grad|{k}"]
        _close(np.zeros_like(want) if g is None else g.asnumpy(), want, case, f"gradient {k}")


def _json_nodes(case):
    return [n for n in json.loads(case["symbol"])["nodes"] if n["op"] != "null"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_fixture_parameter_is_known(name):
    """Each parameter MXNet wrote is one the op parses or lists as ignored."""
    for node in _json_nodes(CASES[name]):
        op = OPS[node["op"]]
        for k in node.get("attrs", {}):
            if not (k.startswith("__") and k.endswith("__")):
                assert k in op.params or k in op.ignored_params, (node["op"], k)


# operators minpy's graph passes make, which MXNet does not have
MINPY_ONLY = {"_BatchNormReLU", "_FusedElemwise", "_grad_accumulate"}


def test_every_registered_operator_has_an_mxnet_case():
    """Every forward op name in ``OPS`` (aliases included) runs in some MXNet case."""
    covered = {n["op"] for c in CASES.values() for n in _json_nodes(c)}
    public = {k for k, op in OPS.items() if not op.is_backward} - MINPY_ONLY
    covered.add("Custom")    # needs registered Python ops: tests/mxnet/test_custom_op.py
    assert public - covered == set()


def test_aliases_are_the_same_operator():
    for alias, target in [("_Plus", "elemwise_add"), ("_power", "_power"),
                          ("identity", "_copy"), ("Softmax", "SoftmaxOutput"),
                          ("add_n", "ElementWiseSum"), ("split", "SliceChannel"),
                          ("broadcast_axes", "broadcast_axis"), ("_MulScalar", "_mul_scalar")]:
        assert OPS[alias] is OPS[target]
    assert sym.broadcast_axes is not None and sym.swapaxes is not None


# ---------------------------------------------------------------- Reshape
def test_reshape_table_matches_mxnet():
    """MXNet's inferred shape for ~2700 (shape, code, reverse) triples; where MXNet
    refuses (or silently accepts a target of another size) minpy raises."""
    for ds, spec, reverse, want in DOC["reshape_table"]:
        if want is None:
            with pytest.raises(Mismatch):
                reshape_shape(tuple(ds), tuple(spec), reverse)
        else:
            assert reshape_shape(tuple(ds), tuple(spec), reverse) == tuple(want), \
                (ds, spec, reverse)


# ------------------------------------------------------- numeric gradients
X, Y = sym.Variable("x"), sym.Variable("y")


def _rnd(*shape, lo=None):
    r = np.random.default_rng(sum(shape) + len(shape))
    a = r.normal(size=shape)
    return np.abs(a) + lo if lo is not None else a


GRAD_CASES = {
    "broadcast_maximum": (sym.broadcast_maximum(X, Y), {"x": _rnd(2, 3), "y": _rnd(1, 3)}),
    "_minimum": (sym._minimum(X, Y), {"x": _rnd(2, 3), "y": _rnd(2, 3) * 0.7 + 0.1}),
    "_power": (sym._power(X, Y), {"x": _rnd(2, 3, lo=0.5), "y": _rnd(2, 3)}),
    "broadcast_to": (sym.broadcast_to(X, shape=(2, 0, 4)), {"x": _rnd(1, 3, 1)}),
    "broadcast_axis": (sym.broadcast_axis(X, axis=(0,), size=(3,)), {"x": _rnd(1, 2)}),
    "broadcast_like": (sym.broadcast_like(X, Y), {"x": _rnd(3, 1), "y": _rnd(3, 2)}),
    "_hypot_scalar": (sym._hypot_scalar(X, scalar=1.5), {"x": _rnd(2, 3)}),
    "_rmod_scalar": (sym._rmod_scalar(X, scalar=5.0), {"x": _rnd(2, 3, lo=1.3)}),
    "softsign": (sym.softsign(X), {"x": _rnd(2, 3)}),
    "rsqrt": (sym.rsqrt(X), {"x": _rnd(2, 3, lo=0.5)}),
    "erf": (sym.erf(X), {"x": _rnd(2, 3)}),
    "Cast": (sym.Cast(X, dtype="float64") * 2, {"x": _rnd(2, 3)}),
    "softmax": (sym.softmax(X, axis=0, temperature=1.7), {"x": _rnd(3, 4)}),
    "log_softmax": (sym.log_softmax(X, axis=1), {"x": _rnd(3, 4)}),
    "slice": (sym.slice(X, begin=(None, 3), end=(None, 0), step=(1, -2)), {"x": _rnd(2, 4)}),
    "slice_axis": (sym.slice_axis(X, axis=1, begin=-3, end=None), {"x": _rnd(2, 4)}),
    "expand_dims": (sym.expand_dims(X, axis=-1) * sym.expand_dims(X, axis=1),
                    {"x": _rnd(2, 3)}),
    "SwapAxis": (sym.SwapAxis(X, dim1=0, dim2=2), {"x": _rnd(2, 3, 2)}),
    "repeat": (sym.repeat(X, repeats=2, axis=0), {"x": _rnd(2, 3)}),
    "tile": (sym.tile(X, reps=(2, 1, 2)), {"x": _rnd(2, 3)}),
    "Pad-reflect": (sym.Pad(X, mode="reflect", pad_width=(0, 0, 0, 0, 2, 1, 1, 2)),
                    {"x": _rnd(1, 1, 3, 4)}),
    "Pad-edge": (sym.Pad(X, mode="edge", pad_width=(0, 0, 0, 0, 1, 2, 2, 0)),
                 {"x": _rnd(1, 2, 2, 3)}),
    "stack": (sym.stack(X, Y, axis=1), {"x": _rnd(2, 3), "y": _rnd(2, 3)}),
    "take": (sym.take(X, Y, axis=1, mode="wrap"), {"x": _rnd(2, 3),
                                                    "y": np.array([[0, 4], [2, 2]], float)}),
    "prod": (sym.prod(X, axis=1, exclude=True), {"x": _rnd(2, 3, 2, lo=0.5)}),
    "norm": (sym.norm(X, axis=(0, 2)), {"x": _rnd(2, 3, 2)}),
    "max": (sym.max(X, axis=1, keepdims=True), {"x": _rnd(2, 3, 2)}),
    "batch_dot": (sym.batch_dot(X, Y, transpose_a=True), {"x": _rnd(2, 4, 3),
                                                          "y": _rnd(2, 4, 2)}),
    "dot-nd": (sym.dot(X, Y, transpose_a=True), {"x": _rnd(4, 2, 3), "y": _rnd(4, 2)}),
    "softmax-length": (sym.softmax(X, Y, axis=1, use_length=True),
                       {"x": _rnd(2, 4, 3), "y": np.array([[1, 4, 2], [3, 2, 4]], np.int32)}),
    "LRN": (sym.LRN(X, nsize=3, alpha=0.5, knorm=1.5), {"x": _rnd(1, 4, 2, 3)}),
    "L2Normalization-channel": (sym.L2Normalization(X, mode="channel"), {"x": _rnd(2, 3, 2)}),
    "L2Normalization-spatial": (sym.L2Normalization(X, mode="spatial"),
                                {"x": _rnd(2, 2, 3, 2)}),
    "InstanceNorm": (sym.InstanceNorm(X, name="in"), {"x": _rnd(2, 2, 5), "in_gamma": _rnd(2),
                                                      "in_beta": _rnd(2)}),
    "LayerNorm": (sym.LayerNorm(X, axis=1, name="ln"), {"x": _rnd(2, 4, 2),
                                                        "ln_gamma": _rnd(4),
                                                        "ln_beta": _rnd(4)}),
    "UpSampling": (sym.UpSampling(X, Y, scale=2, sample_type="nearest", num_args=2),
                   {"x": _rnd(1, 2, 2, 2), "y": _rnd(1, 1, 4, 4)}),
    "Deconvolution": (sym.Deconvolution(X, kernel=(3, 2), num_filter=2, stride=(2, 1),
                                        pad=(1, 0), adj=(1, 0), no_bias=False, name="d"),
                      {"x": _rnd(1, 3, 3, 2), "d_weight": _rnd(3, 2, 3, 2), "d_bias": _rnd(2)}),
    "Deconvolution-1d": (sym.Deconvolution(X, kernel=(3,), num_filter=4, num_group=2,
                                           name="d"), {"x": _rnd(2, 2, 4),
                                                       "d_weight": _rnd(2, 2, 3)}),
    "Convolution-1d": (sym.Convolution(X, kernel=(3,), num_filter=2, stride=(2,), pad=(1,),
                                       name="c"), {"x": _rnd(2, 3, 6), "c_weight": _rnd(2, 3, 3),
                                                   "c_bias": _rnd(2)}),
    "Pooling-avg-full": (sym.Pooling(X, kernel=(3, 2), stride=(2, 2), pad=(1, 1),
                                     pool_type="avg", pooling_convention="full",
                                     count_include_pad=False), {"x": _rnd(1, 2, 5, 4)}),
    "Pooling-lp2": (sym.Pooling(X, kernel=(2, 2), stride=(1, 2), pool_type="lp", p_value=2),
                    {"x": _rnd(1, 1, 3, 4)}),
    "Pooling-lp3": (sym.Pooling(X, kernel=(2, 2), pool_type="lp", p_value=3),
                    {"x": _rnd(1, 1, 3, 3, lo=0.2)}),
    "Pooling-1d": (sym.Pooling(X, kernel=(2,), stride=(2,), pool_type="max"),
                   {"x": _rnd(2, 2, 6)}),
    "LeakyReLU-prelu": (sym.LeakyReLU(X, act_type="prelu", name="p"),
                        {"x": _rnd(2, 3, 2), "p_gamma": _rnd(3, lo=0.1)}),
    "LeakyReLU-gelu": (sym.LeakyReLU(X, act_type="gelu"), {"x": _rnd(2, 3)}),
    "Activation-softsign": (sym.Activation(X, act_type="softsign") * 2, {"x": _rnd(2, 3)}),
    "SoftmaxActivation-channel": (sym.SoftmaxActivation(X, mode="channel"),
                                  {"x": _rnd(2, 3, 2)}),
    # second shapes
    "broadcast_minimum-2": (sym.broadcast_minimum(X, Y), {"x": _rnd(3, 1, 2),
                                                          "y": _rnd(4, 1) * 0.9}),
    "slice-2": (sym.slice(X, begin=(1, None, -1), end=(None, 1, None), step=(1, -1, -1)),
                {"x": _rnd(3, 4, 2)}),
    "tile-2": (sym.tile(X, reps=(3,)), {"x": _rnd(2, 1, 2)}),
    "Pad-constant": (sym.Pad(X, mode="constant", pad_width=(0, 0, 0, 0, 1, 0, 0, 2, 1, 1),
                             constant_value=2.0), {"x": _rnd(1, 1, 2, 2, 3)}),
    "Pooling-avg-2": (sym.Pooling(X, kernel=(2, 3), stride=(1, 2), pad=(1, 1), pool_type="avg"),
                      {"x": _rnd(2, 1, 4, 5)}),
    "LRN-2": (sym.LRN(X, nsize=5, beta=0.5), {"x": _rnd(1, 6, 2, 2)}),
    "LayerNorm-2": (sym.LayerNorm(X, name="ln"), {"x": _rnd(3, 5), "ln_gamma": _rnd(5),
                                                  "ln_beta": _rnd(5)}),
    "softmax-2": (sym.softmax(X, axis=-1), {"x": _rnd(2, 3, 5)}),
    "norm-ord1": (sym.norm(X, ord=1, axis=1, keepdims=True), {"x": _rnd(3, 4)}),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_numeric_gradient(name):
    net, loc = GRAD_CASES[name]
    nodes = [k for k in loc if not (name == "take" and k == "y") and loc[k].dtype.kind == "f"]
    check_symbol_grad(net, loc, grad_nodes=nodes, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------- beyond the fixtures
def test_zeros_with_unknown_dimension_takes_the_consumers_shape():
    z = sym._zeros(shape=(0, 4))
    net = sym.elemwise_add(X, z)
    assert net.infer_shape(x=(3, 4))[1] == [(3, 4)]
    with pytest.raises(ValueError, match="expected"):
        sym.elemwise_add(X, sym._zeros(shape=(2, 4))).infer_shape(x=(3, 4))


def test_dropout_axes_share_one_draw():
    net = sym.Dropout(X, p=0.5, axes=(1,))
    exe = net.simple_bind(minpy.cpu(), x=(4, 50, 3))
    out = exe.forward(is_train=True, x=np.ones((4, 50, 3), np.float32))[0].asnumpy()
    assert set(np.unique(out)) <= {0.0, 2.0}
    assert (out == out[:, :1, :]).all()           # one draw along axis 1
    assert 0 < (out == 0).mean() < 1


def test_rrelu_refuses_training():
    exe = sym.LeakyReLU(X, act_type="rrelu").simple_bind(minpy.cpu(), x=(2, 3))
    with pytest.raises(NotImplementedError, match="rrelu"):
        exe.forward(is_train=True, x=np.ones((2, 3), np.float32))


def test_full_reduction_has_shape_one():
    assert sym.sum(X).infer_shape(x=(2, 3))[1] == [(1,)]
    assert sym.argmax(X, keepdims=True).infer_shape(x=(2, 3))[1] == [(1, 1)]


def test_softsign_activation_in_a_fused_inference_graph():
    net = sym.Activation(X, act_type="softsign") * 2 + 1
    exe = net.simple_bind(minpy.cpu(), grad_req="null", x=(2, 3))
    x = _rnd(2, 3).astype(np.float32)
    np.testing.assert_allclose(exe.forward(x=x)[0].asnumpy(), x / (1 + abs(x)) * 2 + 1,
                               rtol=1e-6)


# ----------------------------------------------------------------- errors
def _shape_error(net, match, **shapes):
    with pytest.raises(ValueError, match=match) as e:
        net.infer_shape(**shapes)
    return str(e.value)


def test_error_pooling_kernel_larger_than_input():
    msg = _shape_error(sym.Pooling(X, kernel=(5, 5), name="pool1"), "kernel", x=(1, 2, 3, 3))
    assert "Pooling" in msg and "pool1" in msg and "(1, 2, 3, 3)" in msg


def test_error_unknown_layout():
    with pytest.raises(ValueError, match="layout"):
        sym.Convolution(X, kernel=(3, 3), num_filter=2, layout="NHWC", name="c1") \
            .infer_shape(x=(1, 4, 4, 3))


def test_error_bad_reshape_code():
    msg = _shape_error(sym.Reshape(X, shape=(2, -5), name="r1"), "-5", x=(2, 3))
    assert "Reshape" in msg and "r1" in msg


def test_error_unknown_parameter_names_op_and_parameter():
    with pytest.raises(ValueError, match="Pooling.*bogus"):
        sym.Pooling(X, kernel=(2, 2), bogus=1)


def test_ignored_parameters_are_accepted():
    net = sym.Convolution(X, kernel=(1, 1), num_filter=2, cudnn_tune="fastest",
                          cudnn_off=True, workspace=64, name="c")
    assert net.infer_shape(x=(1, 3, 2, 2))[1] == [(1, 2, 2, 2)]
