"""MXNet 1.9.1's own files on minpy: symbol JSON + .params load, run, fine-tune.

The fixtures in ``tests/fixtures/mxnet/`` were made by the real MXNet 1.9.1
(``make_fixtures.py`` there says how): Gluon exports of a narrow ResNet-18 v1,
an MLP with Dropout and an unrolled LSTM cell, a legacy (MXNet 0.8, pre-NNVM)
symbol file, each with MXNet's outputs on fixed inputs and, through a
``SoftmaxOutput`` head, its gradients of every argument on one batch; and the
big graphs (ResNet-50/152 v1, VGG-16, Inception-v3) as symbol JSON only.
"""
import json
import pathlib

import numpy as np
import pytest

import minpy
import minpy.symbol as sym
from minpy import nd

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "mxnet"
SMALL = ["resnet18_v1_narrow", "mlp", "lstm"]
BIG = {"resnet50_v1": (64, 3, 224, 224), "resnet152_v1": (64, 3, 224, 224),
       "vgg16": (64, 3, 224, 224), "inception_v3": (64, 3, 299, 299)}


def _fixture(name):
    prefix = str(FIXTURES / name)
    net, args, aux = minpy.model.load_checkpoint(prefix, 0)
    io = dict(np.load(prefix + "-io.npz"))
    return net, args, aux, io


def _close(got, want, what, rtol=1e-4):
    got = np.asarray(got)
    scale = max(float(np.abs(want).max()), 1e-3)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("name", SMALL + ["legacy_mlp"])
def test_predictions_match_mxnet(name):
    net, args, aux, io = _fixture(name)
    exe = net.simple_bind(minpy.cpu(), grad_req="null", data=io["data"].shape)
    exe.copy_params_from(args, aux)
    out = exe.forward(is_train=False, data=io["data"])[0].asnumpy()
    assert out.dtype == np.float32 and out.shape == io["infer_out"].shape
    _close(out, io["infer_out"], name)


@pytest.mark.parametrize("name", SMALL)
def test_function_predictions_match_mxnet(name):
    """The same model as a big operator (``minpy.symbol.function``) off the tape."""
    net, args, aux, io = _fixture(name)
    f = sym.function(net, {"data": io["data"].shape})
    f.set_aux_params(aux)
    out = f(data=minpy.array(io["data"]), is_train=False, **args)
    _close(out.asnumpy(), io["infer_out"], name)


@pytest.mark.parametrize("name", SMALL + ["legacy_mlp"])
def test_module_predict_matches_mxnet(name):
    """MXNet's inference recipe: ``Module.load`` → ``bind(for_training=False)`` →
    ``predict`` (and ``forward(DataBatch)`` → ``get_outputs``)."""
    io = dict(np.load(FIXTURES / f"{name}-io.npz"))
    mod = minpy.module.Module.load(str(FIXTURES / name), 0, data_names=["data"],
                                   label_names=None)
    mod.bind(data_shapes=[("data", io["data"].shape)], for_training=False)
    _close(mod.predict(io["data"]).asnumpy(), io["infer_out"], name)
    mod.forward(minpy.module.DataBatch([minpy.array(io["data"])]), is_train=False)
    _close(mod.get_outputs()[0].asnumpy(), io["infer_out"], name)


@pytest.mark.parametrize("name", SMALL)
def test_training_gradients_match_mxnet_backward(name):
    """One batch through ``SoftmaxOutput`` in training mode: outputs, every argument's
    gradient and the updated BatchNorm moving statistics equal MXNet's."""
    net, args, aux, io = _fixture(name)
    head = sym.SoftmaxOutput(net, name="softmax")
    exe = head.simple_bind(minpy.cpu(), data=io["data"].shape,
                           softmax_label=io["label"].shape)
    exe.copy_params_from(args, aux)
    out = exe.forward(is_train=True, data=io["data"], softmax_label=io["label"])[0]
    exe.backward()
    if name != "mlp":               # Dropout's mask is random: only its gradients' shapes
        _close(out.asnumpy(), io["train_out"], name)
    grads = {k[len("grad:"):]: v for k, v in io.items() if k.startswith("grad:")}
    assert set(grads) == set(head.list_arguments()) - {"softmax_label"}
    for k, want in grads.items():
        got = exe.grad_dict[k].asnumpy()
        assert got.shape == want.shape, k
        if name != "mlp":
            _close(got, want, f"{name}: gradient of {k}", rtol=2e-4)
    for k, a in exe.aux_dict.items():
        _close(a.asnumpy(), io["aux_after:" + k], f"{name}: aux {k} after one step")


def test_softmax_head_in_inference_matches_mxnet():
    """``SoftmaxOutput`` bound for training but run with ``is_train=False``: Dropout is
    the identity, the output is the softmax of MXNet's inference logits."""
    net, args, aux, io = _fixture("mlp")
    head = sym.SoftmaxOutput(net, name="softmax")
    exe = head.simple_bind(minpy.cpu(), data=io["data"].shape, softmax_label=io["label"].shape)
    exe.copy_params_from(args, aux)
    exe.forward(is_train=False, data=io["data"], softmax_label=io["label"])
    _close(exe.outputs[0].asnumpy(), _softmax(io["infer_out"]), "mlp softmax")


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_finetune_with_grad_and_loss_matches_mxnet_then_learns():
    """A loaded ResNet fine-tuned with ``grad_and_loss`` over ``function``: the first
    gradient is MXNet's backward of SoftmaxOutput; a few SGD steps lower the loss."""
    net, args, aux, io = _fixture("resnet18_v1_narrow")
    f = sym.function(net, {"data": io["data"].shape})
    f.set_aux_params(aux)
    x, y = minpy.array(io["data"]), io["label"].astype(np.int64)

    def loss(params):
        logits = f(data=x, **params)
        z = logits - minpy.max(logits, axis=1, keepdims=True)
        logp = z - minpy.log(minpy.sum(minpy.exp(z), axis=1, keepdims=True))
        return -minpy.sum(logp[np.arange(len(y)), y])

    params = {k: minpy.array(v.asnumpy()) for k, v in args.items()}
    step = minpy.grad_and_loss(loss)
    grads, first = step(params)
    for k, g in grads.items():
        _close(g.asnumpy(), io["grad:" + k], f"gradient of {k}", rtol=2e-4)
    losses = [float(first)]
    for _ in range(4):
        params = {k: v - 0.01 * grads[k] for k, v in params.items()}
        grads, value = step(params)
        losses.append(float(value))
    assert losses[-1] < 0.5 * losses[0], losses


def test_legacy_json_upgraded_as_mxnet_does():
    net = sym.load(str(FIXTURES / "legacy_mlp-symbol.json"))
    io = np.load(FIXTURES / "legacy_mlp-io.npz")
    assert net.list_arguments() == list(io["arguments"])
    assert net.list_auxiliary_states() == list(io["aux_states"])
    mx_attrs = json.loads(str(io["attr_dict"]))
    ours = net.attr_dict()
    # MXNet's attr_dict lists a hidden key twice (``__lr_mult__`` and ``lr_mult``) and,
    # for an op node, its parameters beside its attributes
    variables = set(net.list_arguments()) | set(net.list_auxiliary_states())
    for node in set(mx_attrs) | set(ours):
        want = {k: v for k, v in mx_attrs.get(node, {}).items()
                if f"__{k}__" not in mx_attrs[node] and (node in variables or k.startswith("__"))}
        assert ours.get(node, {}) == want, node
    assert ours["fc1_weight"] == {"__lr_mult__": "0.5", "__wd_mult__": "0.3"}
    assert "fc1" not in ours          # weight_wd_mult moved onto the weight


@pytest.mark.parametrize("name", list(BIG))
def test_big_graphs_load_and_infer(name):
    net = sym.load(str(FIXTURES / f"{name}-symbol.json"))
    assert net.list_outputs() == ["softmax_output"]
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=BIG[name])
    assert out_shapes == [(64, 1000)]
    # MXNet's bound arguments (weights + data + label) for the same graph, in bytes
    rec = json.loads((FIXTURES / "mxnet_memory.json").read_text())["networks"][name]
    assert 4 * sum(int(np.prod(s)) for s in arg_shapes) == rec["training_external_bytes"]["args"]
    assert 4 * sum(int(np.prod(s)) for s in aux_shapes) == rec["training_external_bytes"]["aux"]


def test_memory_at_or_under_mxnet_planner():
    """minpy's planned storage for the entries MXNet's planner counts (internal +
    outputs) is at most MXNet 1.9.1's ``Total N MB allocated``, training and
    inference, on all four networks (``benchmarks/bench_mxnet_memory.py`` prints
    the table)."""
    recorded = json.loads((FIXTURES / "mxnet_memory.json").read_text())["networks"]
    for name, rec in recorded.items():
        net = sym.load(str(FIXTURES / f"{name}-symbol.json"))
        for mode in ("training", "inference"):
            exe = net.simple_bind(minpy.cpu(), grad_req="write" if mode == "training" else "null",
                                  data=tuple(rec["data"]))
            r = exe.memory_report(categories=False)
            planned = (r["internal_planned"] + r["outputs"]) >> 20
            assert planned <= rec[mode], (name, mode, planned, rec[mode])
            assert r["arguments"] == rec[mode + "_external_bytes"]["args"], (name, mode)
            assert r["gradients"] == rec[mode + "_external_bytes"]["grads"], (name, mode)
            del exe


def test_nd_load_reads_gluon_params():
    params = nd.load(str(FIXTURES / "mlp-0000.params"))
    assert sorted(params) == sorted(f"arg:{k}" for k in
                                    ("mlp_dense0_weight", "mlp_dense0_bias", "mlp_dense1_weight",
                                     "mlp_dense1_bias", "mlp_dense2_weight", "mlp_dense2_bias"))
    assert params["arg:mlp_dense0_weight"].shape == (32, 20)
    assert params["arg:mlp_dense0_weight"].dtype == np.float32
