"""Symbol API: composition, naming, listing, inference (full, partial, errors),
attributes, JSON round trips and malformed JSON, plotting, pickling."""
import copy
import json
import pickle

import numpy as np
import pytest

import minpy
import minpy.symbol as sym
from minpy.symbol import ShapeError, DTypeError, zoo

R = np.random.default_rng(7)


def mlp():
    data = sym.Variable("data")
    fc1 = sym.FullyConnected(data=data, num_hidden=8, name="fc1")
    act = sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = sym.FullyConnected(act, num_hidden=3, name="fc2")
    return sym.SoftmaxOutput(fc2, name="softmax")


def convnet():
    x = sym.Variable("data")
    c = sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    b = sym.BatchNorm(c, fix_gamma=False, name="bn")
    p = sym.Pooling(sym.Activation(b, act_type="relu"), kernel=(2, 2), stride=(2, 2),
                    pool_type="max", name="pool")
    d = sym.Dropout(p, p=0.3, name="drop")
    return sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(d), num_hidden=5, name="fc"),
                             name="softmax")


def test_auto_created_variables_and_lists():
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                    "softmax_label"]
    assert net.list_outputs() == ["softmax_output"]
    assert net.list_auxiliary_states() == []
    assert net.name == "softmax"
    bn = sym.BatchNorm(sym.Variable("x"), name="bn")
    assert bn.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    nb = sym.FullyConnected(sym.Variable("x"), num_hidden=2, no_bias=True, name="f")
    assert nb.list_arguments() == ["x", "f_weight"]


def test_auto_names_are_unique():
    a = sym.FullyConnected(sym.Variable("x"), num_hidden=2)
    b = sym.FullyConnected(sym.Variable("x"), num_hidden=2)
    assert a.name.startswith("fullyconnected") and a.name != b.name
    assert (sym.Variable("x") + 1).name.startswith("plus_scalar")


def test_operator_argument_errors():
    x = sym.Variable("x")
    with pytest.raises(ValueError, match="required parameter 'num_hidden'"):
        sym.FullyConnected(x)
    with pytest.raises(ValueError, match="unknown parameter"):
        sym.FullyConnected(x, num_hidden=3, num_hiden=3)
    with pytest.raises(ValueError, match="parameter kernel"):
        sym.Convolution(x, kernel="abc", num_filter=2)
    with pytest.raises(ValueError, match="act_type"):
        sym.Activation(x, act_type="swish")
    with pytest.raises(ValueError, match="unknown input 'label'"):
        sym.FullyConnected(x, num_hidden=3, label=x)
    with pytest.raises(TypeError, match="given twice"):
        sym.FullyConnected(x, num_hidden=3, data=x)
    with pytest.raises(ValueError, match="has 2 outputs"):
        sym.Activation(sym.SliceChannel(x, num_outputs=2), act_type="relu")
    with pytest.raises(TypeError, match="must be a Symbol"):
        sym.Activation(np.ones(3), act_type="relu")
    with pytest.raises(ValueError, match="slope"):
        sym.LeakyReLU(x, slope=-1)


def test_string_parameters_parse_like_mxnet():
    c = sym.Convolution(sym.Variable("x"), kernel="(3, 3)", num_filter="4", no_bias="True",
                        name="c")
    node = c._outputs[0][0]
    assert node.attrs["kernel"] == (3, 3) and node.attrs["num_filter"] == 4
    assert node.attrs["no_bias"] is True
    assert c.infer_shape(x=(1, 2, 5, 5))[1] == [(1, 4, 3, 3)]


def test_infer_shape_full():
    arg, out, aux = convnet().infer_shape(data=(2, 3, 6, 6))
    names = convnet().list_arguments()
    d = dict(zip(names, arg))
    assert d["conv_weight"] == (4, 3, 3, 3) and d["conv_bias"] == (4,)
    assert d["fc_weight"] == (5, 36) and d["softmax_label"] == (2,)
    assert out == [(2, 5)] and aux == [(4,), (4,)]
    assert mlp().infer_shape((4, 10))[0][1] == (8, 10)        # positional


def test_infer_shape_partial():
    a = sym.FullyConnected(sym.Variable("a"), num_hidden=3, name="fa")
    b = sym.FullyConnected(sym.Variable("b"), num_hidden=4, name="fb")
    g = sym.Group([a, b])
    arg, out, aux = g.infer_shape_partial(a=(2, 5))
    assert dict(zip(g.list_arguments(), arg)) == {
        "a": (2, 5), "fa_weight": (3, 5), "fa_bias": (3,), "b": None, "fb_weight": None,
        "fb_bias": (4,)}
    assert out == [(2, 3), None] and aux == []
    with pytest.warns(UserWarning, match="b: \\(\\)\n\tfb_weight"):     # as MXNet
        assert g.infer_shape(a=(2, 5)) == (None, None, None)


def test_infer_shape_travels_backward_through_a_chain():
    y = sym.Variable("x")
    for _ in range(30):
        y = sym.Activation(y, act_type="relu") * 2.0
    z = sym.elemwise_add(y, sym.Variable("b", shape=(3, 4)))
    assert z.infer_shape()[0] == [(3, 4), (3, 4)]


def test_infer_shape_from_variable_shape_hint():
    x = sym.Variable("x", shape=(3, 4))
    assert sym.FullyConnected(x, num_hidden=2).infer_shape()[1] == [(3, 2)]


def test_infer_shape_errors_name_node_and_expectation():
    net = mlp()
    with pytest.raises(ShapeError) as ei:
        net.infer_shape(data=(4, 10), fc1_weight=(8, 12))
    msg = str(ei.value)
    assert "FullyConnected node 'fc1'" in msg and "data=(4, 10)" in msg
    assert "weight: expected (8, 10), got (8, 12)" in msg
    assert isinstance(ei.value, ValueError)
    with pytest.raises(ShapeError, match="Concat node 'cat'.*except along dim 1"):
        sym.Concat(sym.Variable("a"), sym.Variable("b"), name="cat").infer_shape(
            a=(2, 3), b=(3, 3))
    with pytest.raises(ShapeError, match="cannot be broadcast"):
        (sym.Variable("a") + sym.Variable("b")).infer_shape(a=(2, 3), b=(4,))
    with pytest.raises(ShapeError, match="Convolution.*expected 4-d"):
        sym.Convolution(sym.Variable("a"), kernel=(3, 3), num_filter=2).infer_shape(a=(2, 3))
    with pytest.raises(ValueError, match="not an input"):
        net.infer_shape(dta=(4, 10))


def test_infer_type():
    net = mlp()
    arg, out, _ = net.infer_type(data=np.float64)
    assert all(t == np.float64 for t in arg) and out == [np.float64]
    e = sym.Embedding(sym.Variable("i"), input_dim=4, output_dim=2, name="e")
    arg, out, _ = e.infer_type(i=np.int32, e_weight=np.float32)
    assert arg == [np.int32, np.float32] and out == [np.float32]
    with pytest.raises(DTypeError, match="elemwise_add node"):
        sym.elemwise_add(sym.Variable("a"), sym.Variable("b")).infer_type(
            a=np.float32, b=np.float64)


def test_internals_getitem_group_iteration():
    net = mlp()
    internals = net.get_internals()
    outs = internals.list_outputs()
    assert "fc1_output" in outs and "relu1_output" in outs and "data" in outs
    fc1 = internals["fc1_output"]
    assert fc1.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert net[0].list_outputs() == net.list_outputs()
    with pytest.raises(ValueError, match="no output named"):
        internals["nope"]
    parts = sym.SliceChannel(sym.Variable("x"), num_outputs=3, name="sl")
    assert len(parts) == 3 and [p.list_outputs()[0] for p in parts] == [
        "sl_output0", "sl_output1", "sl_output2"]
    g = sym.Group([fc1, net])
    assert g.list_outputs() == ["fc1_output", "softmax_output"]
    assert net.get_children().list_outputs() == ["fc2_output", "softmax_label"]
    assert sym.Variable("v").get_children() is None
    exe = g.simple_bind(data=(2, 4))
    a, p = exe.forward(data=np.ones((2, 4)))
    assert a.shape == (2, 8) and p.shape == (2, 3)


def test_compose_by_substitution():
    inner = sym.Activation(sym.Variable("data"), act_type="relu", name="r")
    outer = sym.FullyConnected(sym.Variable("data"), num_hidden=2, name="f")
    net = outer(data=inner)
    assert net.list_arguments() == ["data", "f_weight", "f_bias"]
    exe = net.simple_bind(data=(1, 3))
    exe.arg_dict["f_weight"][:] = 1.0
    out = exe.forward(data=np.array([[1.0, -2.0, 3.0]]))[0].asnumpy()
    np.testing.assert_allclose(out, [[4.0, 4.0]])
    with pytest.raises(ValueError, match="not inputs"):
        outer(nodata=inner)


def test_arithmetic_builds_expected_ops():
    x, y = sym.Variable("x"), sym.Variable("y")
    cases = {x + y: "broadcast_add", x - 1: "_minus_scalar", 1 - x: "_rminus_scalar",
             2 * x: "_mul_scalar", x / y: "broadcast_div", 1 / x: "_rdiv_scalar",
             x ** 2: "_power_scalar", 2 ** x: "_rpower_scalar", -x: "negative",
             sym.pow(x, y): "broadcast_power"}
    for s, op in cases.items():
        assert s._outputs[0][0].op.name == op
    exe = (1 - x * 2 + x ** 2 / 4).simple_bind(x=(3,), type_dict={"x": np.float64})
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(exe.forward(x=v)[0].asnumpy(), 1 - v * 2 + v ** 2 / 4)


def test_misc_elementwise_ops_forward():
    x = sym.Variable("x")
    v = np.array([[-1.5, 0.0, 2.0]])
    g = sym.Group([sym.zeros_like(x), sym.ones_like(x), sym.sign(x),
                   sym._greater_scalar(x, scalar=0.5)])
    outs = [o.asnumpy() for o in g.simple_bind(x=v.shape).forward(x=v)]
    np.testing.assert_array_equal(outs[0], np.zeros_like(v))
    np.testing.assert_array_equal(outs[1], np.ones_like(v))
    np.testing.assert_array_equal(outs[2], np.sign(v))
    np.testing.assert_array_equal(outs[3], (v > 0.5).astype(float))


def test_attributes():
    w = sym.Variable("w", attr={"__lr_mult__": "0.1"}, lr_mult=0.5, wd_mult=0, dtype="float64",
                     __init__="zeros")
    assert w.attr("__lr_mult__") == "0.5" and w.attr("__wd_mult__") == "0"
    assert w.attr("__dtype__") == "1" and w.attr("nothing") is None     # MXNet's type code
    fc = sym.FullyConnected(sym.Variable("x"), weight=w, num_hidden=2, name="fc",
                            attr={"ctx_group": "dev1"})
    fc._set_attr(__mirror_stage__=2, force_mirroring="True")
    assert fc.list_attr() == {"ctx_group": "dev1", "__mirror_stage__": "2",
                              "mirror_stage": "2",      # MXNet lists a hidden key bare too
                              "force_mirroring": "True"}
    rec = fc.list_attr(recursive=True)
    assert rec["w$__lr_mult__"] == "0.5" and rec["fc$force_mirroring"] == "True"
    assert fc.attr_dict()["fc"]["__mirror_stage__"] == "2"
    assert fc.infer_type(x=np.float64)[0][1] == np.float64
    back = sym.load_json(fc.tojson())
    assert back.attr_dict() == fc.attr_dict()
    with pytest.raises(ValueError, match="unknown argument"):
        sym.Variable("v", foo=1)


def _forward(net, params, shapes, aux=None):
    exe = net.simple_bind(minpy.cpu(), grad_req="null", **shapes)
    exe.copy_params_from(params, aux)
    return [o.asnumpy().copy() for o in exe.forward(is_train=False)]


@pytest.mark.parametrize("make,shapes", [(mlp, {"data": (3, 5)}),
                                         (convnet, {"data": (2, 3, 6, 6)}),
                                         (lambda: zoo.lstm_lm(3, 6, 4, 5, 2),
                                          zoo.lstm_lm_shapes(2, 3, 5, 2))])
def test_json_round_trip_forward_equal(make, shapes, tmp_path):
    net = make()
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    params = {k: R.standard_normal(s).astype(np.float32) for k, s in
              zip(net.list_arguments(), arg_shapes)}
    if "data" in params and len(shapes["data"]) == 2 and "embed_weight" in params:
        params["data"] = R.integers(0, 6, shapes["data"]).astype(np.float32)
    aux = {k: R.uniform(0.5, 1.5, s).astype(np.float32)
           for k, s in zip(net.list_auxiliary_states(), aux_shapes)}
    text = net.tojson()
    doc = json.loads(text)
    assert doc["attrs"] == {"mxnet_version": ["int", 10901]} and doc["heads"]   # MXNet's format
    own = net.tojson("minpy")
    assert json.loads(own)["minpy_symbol"] == 1
    back = sym.load_json(text)
    assert back.list_arguments() == net.list_arguments()
    assert back.list_outputs() == net.list_outputs()
    assert back.tojson() == text and sym.load_json(own).tojson("minpy") == own
    net.save(tmp_path / "net.json")
    loaded = sym.load(tmp_path / "net.json")
    a = _forward(net, params, shapes, aux)
    for other in (back, loaded, copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        for x, y in zip(a, _forward(other, params, shapes, aux)):
            np.testing.assert_array_equal(x, y)


def _doc():
    return json.loads(mlp().tojson("minpy"))


@pytest.mark.parametrize("mutate,message", [
    (lambda d: "{not json", "not JSON"),
    (lambda d: [1, 2], "top level must be an object"),
    (lambda d: {k: v for k, v in d.items() if k != "minpy_symbol" and k != "nodes"},
     "no 'minpy_symbol' version key"),
    (lambda d: dict(d, minpy_symbol=99), "unsupported version 99"),
    (lambda d: dict(d, heads=[]), "'heads' is empty"),
    (lambda d: dict(d, heads=[[99, 0]]), "head 0: node index 99 out of range"),
    (lambda d: _set(d, 2, "op", "NoSuchOp"), "unknown operator 'NoSuchOp'"),
    (lambda d: _set(d, 3, "inputs", [[5, 0], [1, 0], [2, 0]]), "must refer to an earlier node"),
    (lambda d: _set(d, 3, "inputs", [[0, 0]]), "FullyConnected takes 3 inputs"),
    (lambda d: _set(d, 3, "inputs", [[0, 3], [1, 0], [2, 0]]), "has no output 3"),
    (lambda d: _set(d, 3, "attrs", {"num_hidden": "many"}), "parameter num_hidden"),
    (lambda d: _set(d, 0, "name", 5), "missing or non-string 'name'"),
    (lambda d: dict(d, nodes="x"), "non-list 'nodes'"),
])
def test_malformed_json_raises_clear_value_error(mutate, message):
    text = mutate(_doc())
    text = text if isinstance(text, str) else json.dumps(text)
    with pytest.raises(ValueError, match=message):
        sym.load_json(text)


def _set(d, i, key, value):
    d["nodes"][i][key] = value
    return d


def test_load_mxnet_style_json():
    doc = {"nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "null", "name": "fc_weight", "attrs": {"__lr_mult__": "2"}, "inputs": []},
        {"op": "null", "name": "fc_bias", "inputs": []},
        {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "10", "no_bias": "False"},
         "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
        {"op": "Activation", "name": "relu", "attrs": {"act_type": "relu"},
         "inputs": [[3, 0, 0]]}],
        "arg_nodes": [0, 1, 2], "heads": [[4, 0, 0]]}
    s = sym.load_json(json.dumps(doc))
    assert s.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert s.infer_shape(data=(2, 7))[1] == [(2, 10)]
    assert s.get_internals()["fc_weight"].attr("__lr_mult__") == "2"


def test_plot_network():
    dot = sym.plot_network(convnet(), shape={"data": (2, 3, 6, 6)})
    assert dot.startswith('digraph "plot" {') and dot.rstrip().endswith("}")
    assert "Convolution\\nconv" in dot and "num_filter=4" in dot
    assert "conv_weight" not in dot                       # weights hidden
    assert 'label="4x6x6"' in dot                         # shape on the conv -> bn edge
    full = sym.plot_network(mlp(), hide_weights=False, title="m")
    assert "fc1_weight" in full and full.count("->") == 9


def test_big_zoo_shapes():
    v = zoo.vgg16()
    arg, out, _ = v.infer_shape(data=(2, 3, 224, 224))
    nparams = sum(int(np.prod(s)) for n, s in zip(v.list_arguments(), arg)
                  if n not in ("data", "softmax_label"))
    assert nparams == 138357544 and out == [(2, 1000)]      # the published VGG-16 count
    for depth in (18, 50, 152):
        assert zoo.resnet(depth).infer_shape(data=(1, 3, 224, 224))[1] == [(1, 1000)]
    assert zoo.resnet(110, 10, (3, 32, 32)).infer_shape(data=(1, 3, 32, 32))[1] == [(1, 10)]
    assert zoo.inception_bn().infer_shape(data=(1, 3, 224, 224))[1] == [(1, 1000)]
    with pytest.raises(ValueError, match="6n\\+2"):
        zoo.resnet(21, 10, (3, 32, 32))
    with pytest.raises(ValueError, match="not one of"):
        zoo.resnet(42)
