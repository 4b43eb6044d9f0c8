"""``mx.rnn``'s cells: MXNet 1.9.1's tests/python/unittest/test_rnn.py as MXNet writes them
(``mx.gluon``'s LSTMCell case with ``mx.rnn.LSTMCell``: Gluon is out of scope), and each
cell's unroll against real MXNet 1.9.1's outputs for fixed parameters
(tests/fixtures/mxnet/make_rnn_fixtures.py, ``rnn/cells.*``)."""
import json
import os

import numpy as np
import pytest
from numpy.testing import assert_allclose

import minpy.mxnet as mx
from minpy.symbol.registry import fresh_names

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet", "rnn")
CELLS = np.load(os.path.join(HERE, "cells.npz"))
with open(os.path.join(HERE, "cells.json"), encoding="utf-8") as _f:
    META = json.load(_f)
N, T, C, H = 3, 4, 5, 4
CONV_IN = (N, 2, 5, 4)


# ------------------------------------------------------------ MXNet's test_rnn.py
def test_deprecated():
    class RNNCell(mx.rnn.BaseRNNCell):
        def __init__(self, num_hidden, activation='tanh', prefix='rnn_', params=None):
            super(RNNCell, self).__init__(prefix=prefix, params=params)
            self._num_hidden = num_hidden
            self._activation = activation
            self._iW = self.params.get('i2h_weight')
            self._iB = self.params.get('i2h_bias')
            self._hW = self.params.get('h2h_weight')
            self._hB = self.params.get('h2h_bias')

        @property
        def state_info(self):
            return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

        @property
        def _gate_names(self):
            return ('',)

        def __call__(self, inputs, states):
            self._counter += 1
            name = '%st%d_' % (self._prefix, self._counter)
            i2h = mx.symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                           num_hidden=self._num_hidden, name='%si2h' % name)
            h2h = mx.symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                           num_hidden=self._num_hidden, name='%sh2h' % name)
            output = self._get_activation(mx.sym.elemwise_add(i2h, h2h), self._activation,
                                          name='%sout' % name)
            return output, [output]

    cell = RNNCell(100, prefix='rnn_')
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    outputs = mx.sym.Group(outputs)
    assert sorted(cell.params._params.keys()) == ['rnn_h2h_bias', 'rnn_h2h_weight',
                                                  'rnn_i2h_bias', 'rnn_i2h_weight']
    assert outputs.list_outputs() == ['rnn_t0_out_output', 'rnn_t1_out_output',
                                      'rnn_t2_out_output']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50),
                                           rnn_t2_data=(10, 50))
    assert outs == [(10, 100), (10, 100), (10, 100)]


@pytest.mark.parametrize("make", [lambda: mx.rnn.RNNCell(100, prefix='rnn_'),
                                  lambda: mx.rnn.LSTMCell(100, prefix='rnn_'),
                                  lambda: mx.rnn.GRUCell(100, prefix='rnn_')],
                         ids=["rnn", "lstm", "gru"])
def test_rnn_lstm_gru(make):
    cell = make()
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    outputs = mx.sym.Group(outputs)
    assert sorted(cell.params._params.keys()) == ['rnn_h2h_bias', 'rnn_h2h_weight',
                                                  'rnn_i2h_bias', 'rnn_i2h_weight']
    assert outputs.list_outputs() == ['rnn_t0_out_output', 'rnn_t1_out_output',
                                      'rnn_t2_out_output']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50),
                                           rnn_t2_data=(10, 50))
    assert outs == [(10, 100), (10, 100), (10, 100)]


def test_lstm_forget_bias():
    forget_bias = 2.0
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(100, forget_bias=forget_bias, prefix='l0_'))
    stack.add(mx.rnn.LSTMCell(100, forget_bias=forget_bias, prefix='l1_'))

    dshape = (32, 1, 200)
    data = mx.sym.Variable('data')

    sym, _ = stack.unroll(1, data, merge_outputs=True)
    mod = mx.mod.Module(sym, label_names=None, context=mx.cpu(0))
    mod.bind(data_shapes=[('data', dshape)], label_shapes=None)

    mod.init_params()

    bias_argument = next(x for x in sym.list_arguments() if x.endswith('i2h_bias'))
    expected_bias = np.hstack([np.zeros((100,)),
                               forget_bias * np.ones(100, ), np.zeros((2 * 100,))])
    assert_allclose(mod.get_params()[0][bias_argument].asnumpy(), expected_bias)


def test_residual():
    cell = mx.rnn.ResidualCell(mx.rnn.GRUCell(50, prefix='rnn_'))
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(2)]
    outputs, _ = cell.unroll(2, inputs)
    outputs = mx.sym.Group(outputs)
    assert sorted(cell.params._params.keys()) == \
        ['rnn_h2h_bias', 'rnn_h2h_weight', 'rnn_i2h_bias', 'rnn_i2h_weight']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50))
    assert outs == [(10, 50), (10, 50)]
    outputs = outputs.eval(rnn_t0_data=mx.nd.ones((10, 50)),
                           rnn_t1_data=mx.nd.ones((10, 50)),
                           rnn_i2h_weight=mx.nd.zeros((150, 50)),
                           rnn_i2h_bias=mx.nd.zeros((150,)),
                           rnn_h2h_weight=mx.nd.zeros((150, 50)),
                           rnn_h2h_bias=mx.nd.zeros((150,)))
    expected_outputs = np.ones((10, 50))
    assert np.array_equal(outputs[0].asnumpy(), expected_outputs)
    assert np.array_equal(outputs[1].asnumpy(), expected_outputs)


def test_residual_bidirectional():
    cell = mx.rnn.ResidualCell(
        mx.rnn.BidirectionalCell(
            mx.rnn.GRUCell(25, prefix='rnn_l_'),
            mx.rnn.GRUCell(25, prefix='rnn_r_')))

    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(2)]
    outputs, _ = cell.unroll(2, inputs, merge_outputs=False)
    outputs = mx.sym.Group(outputs)
    assert sorted(cell.params._params.keys()) == \
        ['rnn_l_h2h_bias', 'rnn_l_h2h_weight', 'rnn_l_i2h_bias', 'rnn_l_i2h_weight',
         'rnn_r_h2h_bias', 'rnn_r_h2h_weight', 'rnn_r_i2h_bias', 'rnn_r_i2h_weight']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50))
    assert outs == [(10, 50), (10, 50)]
    outputs = outputs.eval(rnn_t0_data=mx.nd.ones((10, 50)) + 5,
                           rnn_t1_data=mx.nd.ones((10, 50)) + 5,
                           rnn_l_i2h_weight=mx.nd.zeros((75, 50)),
                           rnn_l_i2h_bias=mx.nd.zeros((75,)),
                           rnn_l_h2h_weight=mx.nd.zeros((75, 25)),
                           rnn_l_h2h_bias=mx.nd.zeros((75,)),
                           rnn_r_i2h_weight=mx.nd.zeros((75, 50)),
                           rnn_r_i2h_bias=mx.nd.zeros((75,)),
                           rnn_r_h2h_weight=mx.nd.zeros((75, 25)),
                           rnn_r_h2h_bias=mx.nd.zeros((75,)))
    expected_outputs = np.ones((10, 50)) + 5
    assert np.array_equal(outputs[0].asnumpy(), expected_outputs)
    assert np.array_equal(outputs[1].asnumpy(), expected_outputs)


def test_stack():
    cell = mx.rnn.SequentialRNNCell()
    for i in range(5):
        if i == 1:
            cell.add(mx.rnn.ResidualCell(mx.rnn.LSTMCell(100, prefix='rnn_stack%d_' % i)))
        else:
            cell.add(mx.rnn.LSTMCell(100, prefix='rnn_stack%d_' % i))
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    outputs = mx.sym.Group(outputs)
    keys = sorted(cell.params._params.keys())
    for i in range(5):
        assert 'rnn_stack%d_h2h_weight' % i in keys
        assert 'rnn_stack%d_h2h_bias' % i in keys
        assert 'rnn_stack%d_i2h_weight' % i in keys
        assert 'rnn_stack%d_i2h_bias' % i in keys
    assert outputs.list_outputs() == ['rnn_stack4_t0_out_output', 'rnn_stack4_t1_out_output',
                                      'rnn_stack4_t2_out_output']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50),
                                           rnn_t2_data=(10, 50))
    assert outs == [(10, 100), (10, 100), (10, 100)]


def test_bidirectional():
    cell = mx.rnn.BidirectionalCell(
        mx.rnn.LSTMCell(100, prefix='rnn_l0_'),
        mx.rnn.LSTMCell(100, prefix='rnn_r0_'),
        output_prefix='rnn_bi_')
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    outputs = mx.sym.Group(outputs)
    assert outputs.list_outputs() == ['rnn_bi_t0_output', 'rnn_bi_t1_output',
                                      'rnn_bi_t2_output']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50),
                                           rnn_t2_data=(10, 50))
    assert outs == [(10, 200), (10, 200), (10, 200)]


def test_zoneout():
    cell = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(100, prefix='rnn_'), zoneout_outputs=0.5,
                              zoneout_states=0.5)
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    outputs = mx.sym.Group(outputs)
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50),
                                           rnn_t2_data=(10, 50))
    assert outs == [(10, 100), (10, 100), (10, 100)]


def test_unfuse():
    cell = mx.rnn.FusedRNNCell(100, num_layers=3, mode='lstm',
                               prefix='test_', bidirectional=True,
                               dropout=0.5)
    cell = cell.unfuse()
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    outputs = mx.sym.Group(outputs)
    assert outputs.list_outputs() == ['test_bi_l2_t0_output', 'test_bi_l2_t1_output',
                                      'test_bi_l2_t2_output']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(10, 50), rnn_t1_data=(10, 50),
                                           rnn_t2_data=(10, 50))
    assert outs == [(10, 200), (10, 200), (10, 200)]


@pytest.mark.parametrize("cls,out_channels", [("ConvRNNCell", 10), ("ConvLSTMCell", 10),
                                              ("ConvGRUCell", 10)])
def test_conv_cells(cls, out_channels):
    # MXNet's test_convrnn, test_convlstm, test_convgru
    cell = getattr(mx.rnn, cls)(input_shape=(1, 3, 16, 10), num_hidden=10,
                                h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                                i2h_kernel=(3, 3), i2h_stride=(1, 1),
                                i2h_pad=(1, 1), i2h_dilate=(1, 1),
                                prefix='rnn_')
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    outputs = mx.sym.Group(outputs)
    assert sorted(cell.params._params.keys()) == ['rnn_h2h_bias', 'rnn_h2h_weight',
                                                  'rnn_i2h_bias', 'rnn_i2h_weight']
    assert outputs.list_outputs() == ['rnn_t0_out_output', 'rnn_t1_out_output',
                                      'rnn_t2_out_output']
    args, outs, auxs = outputs.infer_shape(rnn_t0_data=(1, 3, 16, 10),
                                           rnn_t1_data=(1, 3, 16, 10),
                                           rnn_t2_data=(1, 3, 16, 10))
    assert outs == [(1, out_channels, 16, 10)] * 3


def test_encode_sentences():
    sentences = [['a', 'b', 'c'], ['b', 'c', 'd']]
    dict = {'a': 1, 'b': 2, 'c': 3}
    result, vocab = mx.rnn.io.encode_sentences(sentences, vocab=dict, invalid_label=-1,
                                               invalid_key='\n', start_label=0,
                                               unknown_token='UNK')
    assert vocab == {'a': 1, 'b': 2, 'c': 3, 'UNK': 0}
    assert result == [[1, 2, 3], [2, 3, 0]]


def test_encode_sentences_new_vocab_and_unknown():
    result, vocab = mx.rnn.encode_sentences([['x', 'y'], ['y', 'z']], invalid_label=0,
                                            start_label=0)
    assert vocab == {'\n': 0, 'x': 1, 'y': 2, 'z': 3}      # 0 is skipped: invalid_label
    assert result == [[1, 2], [2, 3]]
    with pytest.raises(KeyError, match="unknown token 'w'"):
        mx.rnn.encode_sentences([['w']], vocab={'x': 1})


# ------------------------------------------------------------ values against MXNet 1.9.1
def _case(name):
    """The cell of make_rnn_fixtures.cell_cases()[name], built here."""
    def stack():
        s = mx.rnn.SequentialRNNCell()
        s.add(mx.rnn.LSTMCell(H, prefix="l0_"))
        s.add(mx.rnn.GRUCell(H, prefix="l1_"))
        return s
    return {
        "rnn_tanh": lambda: mx.rnn.RNNCell(H, prefix="rnn_"),
        "rnn_relu": lambda: mx.rnn.RNNCell(H, activation="relu", prefix="rnnr_"),
        "lstm": lambda: mx.rnn.LSTMCell(H, prefix="lstm_"),
        "lstm_tnc": lambda: mx.rnn.LSTMCell(H, prefix="lstm_"),
        "gru": lambda: mx.rnn.GRUCell(H, prefix="gru_"),
        "stack": stack,
        "bi_merged": lambda: mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(H, prefix="bl_"),
                                                      mx.rnn.GRUCell(H, prefix="br_"),
                                                      output_prefix="bi_"),
        "bi_list": lambda: mx.rnn.BidirectionalCell(mx.rnn.GRUCell(H, prefix="bl_"),
                                                    mx.rnn.RNNCell(H, prefix="br_"),
                                                    output_prefix="bi_"),
        "residual": lambda: mx.rnn.ResidualCell(mx.rnn.GRUCell(C, prefix="res_")),
        "zoneout_infer": lambda: mx.rnn.ZoneoutCell(mx.rnn.LSTMCell(H, prefix="zo_"),
                                                    zoneout_outputs=0.3, zoneout_states=0.3),
        "conv_lstm": lambda: mx.rnn.ConvLSTMCell(CONV_IN, num_hidden=3, prefix="clstm_"),
        "conv_gru": lambda: mx.rnn.ConvGRUCell(CONV_IN, num_hidden=3, prefix="cgru_",
                                               activation="tanh"),
    }[name]()


def _unrolled(name):
    meta = META[name]
    cell = _case(name)
    with fresh_names():     # as the fixture's mx.name.NameManager()
        outputs, states = cell.unroll(T, mx.sym.Variable("data"), layout=meta["layout"],
                                      merge_outputs=meta["merge_outputs"])
    outputs = outputs if isinstance(outputs, list) else [outputs]
    flat = []
    for s in states:
        flat.extend(s if isinstance(s, list) else [s])
    return cell, mx.sym.Group(outputs + flat)


CASES = sorted(k for k in META if k != "fused")


@pytest.mark.parametrize("name", CASES)
def test_cell_names_match_mxnet(name):
    cell, group = _unrolled(name)
    meta = META[name]
    assert group.list_outputs() == meta["list_outputs"]
    assert group.list_arguments() == meta["list_arguments"]
    assert sorted(cell.params._params) == meta["params"]


@pytest.mark.parametrize("name", CASES)
def test_cell_values_match_mxnet(name):
    _, group = _unrolled(name)
    prefix = f"{name}/param/"
    args = {"data": mx.nd.array(CELLS[f"{name}/data"])}
    args.update({k[len(prefix):]: mx.nd.array(CELLS[k]) for k in CELLS.files
                 if k.startswith(prefix)})
    exe = group.bind(mx.cpu(), args)
    outs = exe.forward(is_train=False)
    assert len(outs) == len(META[name]["list_outputs"])
    for i, out in enumerate(outs):
        assert_allclose(out.asnumpy(), CELLS[f"{name}/out{i}"], rtol=1e-5, atol=1e-6)


def test_cell_gradients_flow_to_shared_weights():
    # every step uses the same weights: one argument each, its gradient summed over steps
    cell = mx.rnn.LSTMCell(H, prefix="lstm_")
    out, _ = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    loss = mx.sym.MakeLoss(mx.sym.sum(out)) if hasattr(mx.sym, "MakeLoss") else mx.sym.sum(out)
    exe = loss.simple_bind(mx.cpu(), data=(N, T, C))
    rng = np.random.RandomState(3)
    for k, a in exe.arg_dict.items():
        a[:] = rng.uniform(-0.5, 0.5, a.shape).astype("float32")
    exe.forward(is_train=True)
    exe.backward()
    g = exe.grad_dict["lstm_h2h_weight"].asnumpy()
    w = exe.arg_dict["lstm_h2h_weight"]
    base = float(exe.forward(is_train=False)[0].asnumpy().sum())
    eps = 1e-3
    i, j = 5, 2
    old = float(w.asnumpy()[i, j])
    w[i, j] = old + eps
    up = float(exe.forward(is_train=False)[0].asnumpy().sum())
    assert_allclose((up - base) / eps, g[i, j], rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("make,shape", [
    (lambda: mx.rnn.RNNCell(H, prefix="a_"), (N, 1, C)),
    (lambda: mx.rnn.LSTMCell(H, prefix="a_"), (N, 1, C)),
    (lambda: mx.rnn.GRUCell(H, prefix="a_"), (N, 1, C)),
    (lambda: mx.rnn.ConvLSTMCell(CONV_IN, num_hidden=3, prefix="a_"), (N, 1) + CONV_IN[1:]),
], ids=["rnn", "lstm", "gru", "conv_lstm"])
def test_one_step_unroll_infers_every_shape(make, shape):
    # the h2h weight's shape cannot come from the begin state (batch size 0), as it comes
    # from the previous step's output in a longer unroll
    out, states = make().unroll(1, mx.sym.Variable("data"), merge_outputs=True)
    args, outs, _ = mx.sym.Group([out] + states).infer_shape(data=shape)
    assert args is not None
    assert dict(zip(out.list_arguments(), args))["a_h2h_weight"][1] in (H, 3)


# ------------------------------------------------------------ FusedRNNCell
def _fused():
    return mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", bidirectional=True,
                               prefix="lstm_")


def test_fused_unpack_weights_matches_mxnet():
    unpacked = _fused().unpack_weights(
        {"lstm_parameters": mx.nd.array(CELLS["fused/parameters"])})
    assert sorted(unpacked) == META["fused"]["unpacked"]
    for k, v in unpacked.items():
        assert_allclose(v.asnumpy(), CELLS[f"fused/unpacked/{k}"], rtol=0, atol=0)
    packed = _fused().pack_weights(unpacked)
    assert list(packed) == ["lstm_parameters"]
    assert_allclose(packed["lstm_parameters"].asnumpy(), CELLS["fused/parameters"])


def test_fused_unfuse_matches_mxnet_fused_rnn_op():
    # the unfused stack, with the fused vector unpacked then packed per cell, computes
    # what MXNet's fused RNN operator computed
    fused = _fused()
    stack = fused.unfuse()
    data = mx.sym.Variable("data")
    outs, _ = stack.unroll(T, data, layout="TNC", merge_outputs=False)
    assert mx.sym.Group(outs).list_outputs() == META["fused"]["unfused_outputs"]
    stack = fused.unfuse()
    out, _ = stack.unroll(T, data, layout="TNC", merge_outputs=True)
    params = stack.pack_weights(fused.unpack_weights(
        {"lstm_parameters": mx.nd.array(CELLS["fused/parameters"])}))
    args = dict(params, data=mx.nd.array(CELLS["fused/data"]))
    y = out.bind(mx.cpu(), args).forward()[0].asnumpy()
    assert_allclose(y, CELLS["fused/out"], rtol=1e-5, atol=1e-6)


def test_fused_unroll_raises_saying_unfuse():
    with pytest.raises(NotImplementedError, match="unfuse"):
        _fused().unroll(T, mx.sym.Variable("data"), layout="TNC")
    with pytest.raises(NotImplementedError, match="unroll"):
        _fused()(mx.sym.Variable("x"), [])


def test_fused_unpack_rejects_wrong_size():
    with pytest.raises(ValueError, match="fits no input size"):
        _fused().unpack_weights({"lstm_parameters": mx.nd.zeros((7,))})


# ------------------------------------------------------------ errors and checkpoints
def test_modified_cell_cannot_be_called_directly():
    base = mx.rnn.LSTMCell(H, prefix="m_")
    cell = mx.rnn.ZoneoutCell(base, zoneout_outputs=0.5)
    with pytest.raises(RuntimeError, match="modifier"):
        base.begin_state()
    assert len(cell.begin_state()) == 2


def test_zoneout_refuses_bidirectional_and_fused():
    with pytest.raises(TypeError, match="BidirectionalCell"):
        mx.rnn.ZoneoutCell(mx.rnn.BidirectionalCell(mx.rnn.GRUCell(H, prefix="a_"),
                                                    mx.rnn.GRUCell(H, prefix="b_")))
    with pytest.raises(TypeError, match="unfuse"):
        mx.rnn.ZoneoutCell(_fused())


def test_zoneout_training_keeps_previous_or_new_values():
    # training: every output element is the new step's or the previous output's
    cell = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(H, prefix="z_"), zoneout_outputs=0.5)
    outputs, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=False)
    group = mx.sym.Group(outputs)
    exe = group.simple_bind(mx.cpu(), data=(20, 2, C), grad_req="null")
    rng = np.random.RandomState(0)
    for k, a in exe.arg_dict.items():
        a[:] = rng.uniform(-1, 1, a.shape).astype("float32")
    o0, o1 = [o.asnumpy() for o in exe.forward(is_train=True)]
    assert np.any(o0 == 0) and np.any(o0 != 0)       # step 0 keeps zeros or takes new
    assert np.any(o1 == o0)


def test_sequential_params_either_container_or_children():
    params = mx.rnn.RNNParams("shared_")
    stack = mx.rnn.SequentialRNNCell(params=params)
    child = mx.rnn.LSTMCell(H, prefix="c_")
    _ = child.params         # the child hands its params out: not its own any more
    with pytest.raises(ValueError, match="not both"):
        stack.add(child)


def test_rnn_checkpoint_round_trip(tmp_path):
    cell = mx.rnn.LSTMCell(H, prefix="lstm_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    rng = np.random.RandomState(0)
    arg_shapes, _, _ = out.infer_shape(data=(N, 2, C))
    args = {n: mx.nd.array(rng.uniform(-1, 1, s).astype("float32"))
            for n, s in zip(out.list_arguments(), arg_shapes) if n != "data"}
    prefix = str(tmp_path / "lm")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, out, args, {})
    saved = mx.nd.load(prefix + "-0003.params")
    assert "arg:lstm_i2h_f_weight" in saved and "arg:lstm_i2h_weight" not in saved
    assert_allclose(saved["arg:lstm_h2h_o_bias"].asnumpy(),
                    args["lstm_h2h_bias"].asnumpy()[3 * H:])
    sym, arg, aux = mx.rnn.load_rnn_checkpoint([cell], prefix, 3)
    assert sorted(arg) == sorted(args) and aux == {}
    for k in args:
        assert_allclose(arg[k].asnumpy(), args[k].asnumpy())
    assert sym.list_arguments() == out.list_arguments()
    callback = mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)
    callback(0, out, args, {})
    assert not os.path.exists(prefix + "-0001.params")
    callback(1, out, args, {})
    assert os.path.exists(prefix + "-0002.params")
