"""MXNet's symbol JSON conventions: type codes, partial shapes, hidden keys, legacy
files, writing MXNet's format, and clear errors on bad files."""
import json
import pathlib

import numpy as np
import pytest

import minpy
import minpy.symbol as sym
from minpy.symbol.format import mxnet_json

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "mxnet"


def _fc_doc(version=10901, weight_attrs=None, fc_attrs=None):
    fc = {"num_hidden": "3"}
    fc.update(fc_attrs or {})
    return {"nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "null", "name": "fc_weight", "attrs": weight_attrs or {}, "inputs": []},
        {"op": "null", "name": "fc_bias", "inputs": []},
        {"op": "FullyConnected", "name": "fc", "attrs": fc,
         "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}],
        "arg_nodes": [0, 1, 2], "heads": [[3, 0, 0]],
        "attrs": {"mxnet_version": ["int", version]}}


@pytest.mark.parametrize("code,dtype", sorted(
    (str(k), v) for k, v in mxnet_json.DTYPE_CODES.items() if v != "bfloat16"))
def test_dtype_type_codes(code, dtype):
    net = sym.load_json(json.dumps(_fc_doc(weight_attrs={"__dtype__": code})))
    arg_types, _, _ = net.infer_type()
    assert arg_types[1] == np.dtype(dtype)


@pytest.mark.parametrize("code,message", [("12", "bfloat16"), ("99", "not an MXNet type code")])
def test_unusable_dtype_codes_raise(code, message):
    net = sym.load_json(json.dumps(_fc_doc(weight_attrs={"__dtype__": code})))
    with pytest.raises(ValueError, match=message):
        net.infer_type()


def test_shape_hint_with_unknown_dims_is_inferred():
    net = sym.load_json(json.dumps(_fc_doc(weight_attrs={"__shape__": "(3, 0)"})))
    arg_shapes, out_shapes, _ = net.infer_shape(data=(2, 7))
    assert arg_shapes[1] == (3, 7) and out_shapes == [(2, 3)]
    known = sym.load_json(json.dumps(_fc_doc(weight_attrs={"__shape__": "(3, 7)"})))
    assert known.infer_shape(data=(2, 7))[0][1] == (3, 7)
    with pytest.raises(sym.ShapeError, match="fc"):
        known.infer_shape(data=(2, 5))


def test_written_json_is_mxnets_format():
    w = sym.Variable("fc_weight", dtype="float16", shape=(3, 7), lr_mult=2)
    net = sym.FullyConnected(sym.Variable("data"), weight=w, num_hidden=3, name="fc")
    doc = json.loads(net.tojson())
    assert set(doc) == {"nodes", "arg_nodes", "heads", "attrs"}
    assert doc["attrs"] == {"mxnet_version": ["int", 10901]}
    weight = doc["nodes"][1]
    assert weight["attrs"] == {"__dtype__": "2", "__shape__": "(3, 7)", "__lr_mult__": "2"}
    fc = doc["nodes"][-1]
    assert fc["attrs"]["num_hidden"] == "3" and fc["attrs"]["no_bias"] == "False"
    assert fc["inputs"] == [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    assert doc["arg_nodes"] == [0, 1, 2] and doc["heads"] == [[3, 0, 0]]
    back = sym.load_json(net.tojson())
    assert back.tojson() == net.tojson()
    assert back.infer_type(data=np.float16)[0][1] == np.float16


def test_tojson_format_choice():
    net = sym.Activation(sym.Variable("x"), act_type="relu")
    assert "minpy_symbol" in json.loads(net.tojson("minpy"))
    assert "minpy_symbol" not in json.loads(net.tojson("mxnet"))
    with pytest.raises(ValueError, match="fmt must be"):
        net.tojson("onnx")


def test_hidden_keys_in_current_files_stay_attributes():
    doc = _fc_doc(fc_attrs={"ctx_group": "dev1", "__mirror_stage__": "2"})
    net = sym.load_json(json.dumps(doc))
    assert net.attr_dict()["fc"] == {"ctx_group": "dev1", "__mirror_stage__": "2"}


def test_old_files_move_hidden_keys_onto_their_inputs():
    doc = _fc_doc(version=10000, fc_attrs={"weight_lr_mult": "0.1", "wd_mult": "0"})
    net = sym.load_json(json.dumps(doc))
    assert net.attr_dict() == {"fc_weight": {"__lr_mult__": "0.1"}, "fc": {"__wd_mult__": "0"}}


def test_pre_nnvm_files_get_their_aux_states():
    doc = {"nodes": [
        {"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "bn_gamma", "inputs": [], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "bn_beta", "inputs": [], "backward_source_id": -1},
        {"op": "BatchNorm", "param": {"fix_gamma": "False"}, "name": "bn",
         "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1}],
        "arg_nodes": [0, 1, 2], "heads": [[3, 0]]}
    net = sym.load_json(json.dumps(doc))
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert net.attr_dict()["bn_moving_var"]["__init__"] == '["one", {}]'
    current = dict(doc, attrs={"mxnet_version": ["int", 10901]})
    with pytest.raises(ValueError, match=r"node 3 \('bn'\): BatchNorm takes 5 inputs"):
        sym.load_json(json.dumps(current))


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["nodes"][3].update(op="NoSuchOp"),
     r"node 3 \('fc'\): unknown operator 'NoSuchOp'"),
    (lambda d: d["nodes"][3]["attrs"].update(bogus="1"),
     r"node 3 \('fc'\): FullyConnected has no parameter 'bogus'"),
    (lambda d: d["nodes"][3]["attrs"].update(num_hidden="lots"),
     r"node 3 \('fc'\).*num_hidden"),
    (lambda d: d["nodes"][3].update(inputs=[[0, 0, 0], [1, 0, 0]]),
     r"node 3 \('fc'\): FullyConnected takes 3 inputs"),
    (lambda d: d["nodes"][3].update(inputs=[[0, 0, 0], [1, 0, 0], [7, 0, 0]]),
     r"node 3 \('fc'\) input 2: node index 7 out of range"),
    (lambda d: d.update(heads=[[9, 0, 0]]), "head 0: node index 9"),
    (lambda d: d["nodes"][1].update(attrs=[1]), r"node 1 \('fc_weight'\): 'attrs' must be"),
    (lambda d: d.pop("nodes"), "neither minpy's format"),
])
def test_bad_files_name_the_node(mutate, message):
    doc = _fc_doc()
    mutate(doc)
    with pytest.raises(ValueError, match=message):
        sym.load_json(json.dumps(doc))


def test_shape_that_does_not_infer_names_the_node():
    net = sym.load(str(FIXTURES / "resnet18_v1_narrow-symbol.json"))
    with pytest.raises(sym.ShapeError, match=r"Convolution node 'resnetv10_conv0_fwd'"):
        net.simple_bind(minpy.cpu(), data=(4, 3, 32))
    with pytest.raises(sym.ShapeError, match="cannot infer the shapes of"):
        net.simple_bind(minpy.cpu())
