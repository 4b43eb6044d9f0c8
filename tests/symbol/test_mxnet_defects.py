"""Symbol/executor behaviours of MXNet 1.9.1 (issue 28's defects), written as MXNet's own
``tests/python/unittest/test_symbol.py`` / ``test_executor.py`` write them. The expected
values were checked against the real MXNet 1.9.1 (``pip install mxnet==1.9.1
numpy==1.23.5`` in a side virtualenv) on the same code."""
import json
import warnings

import numpy as np
import pytest

import minpy
import minpy.symbol as mx_sym


class mx:        # the names MXNet's tests use, over minpy's symbol layer
    sym = symbol = mx_sym

    @staticmethod
    def cpu():
        return minpy.cpu()


# ------------------------------------------------------------ Executor.reshape
def test_reshape():
    """MXNet 1.9.1's ``test_executor.test_reshape``, verbatim but for ``mx.nd.ones``."""
    x = mx.sym.Variable('x')
    y = mx.sym.FullyConnected(x, num_hidden=4)

    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req='null')
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = np.ones((4, 4), np.float32)
    exe.arg_arrays[2][:] = 0

    new_exe = exe.reshape(x=(3, 4))
    new_exe.forward(is_train=False)
    # test sub exec forward
    assert np.all(new_exe.outputs[0].asnumpy() == 4)
    # test shared memory
    assert np.all(exe.outputs[0].asnumpy()[:3] == 4)
    # test base exec forward
    exe.forward(is_train=False)
    assert np.all(exe.outputs[0].asnumpy() == 4)

    # test sharing ndarray depending on new_shape
    new_exe = exe.reshape(allow_up_sizing=True, x=(6, 4))
    # data ndarray is not shared between exe and new_exe
    new_exe.arg_arrays[0][:] = 0
    assert np.all(exe.arg_arrays[0].asnumpy() == 1)
    # weight ndarray is shared between exe and new_exe
    assert np.all(new_exe.arg_arrays[1].asnumpy() == 1)


def test_reshape_smaller_views_the_original_storage():
    x = mx.sym.Variable('x')
    y = mx.sym.FullyConnected(x, num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4))
    exe.arg_arrays[0][:] = np.arange(20, dtype=np.float32).reshape(5, 4)
    exe.arg_arrays[1][:] = 1
    exe.arg_arrays[2][:] = 0
    new = exe.reshape(x=(3, 4))
    # the first rows of the old array (MXNet: the first elements of its storage)
    np.testing.assert_array_equal(new.arg_arrays[0].asnumpy(),
                                  np.arange(12, dtype=np.float32).reshape(3, 4))
    new.arg_arrays[0][:] = 7                      # writes through either are seen by both
    old = exe.arg_arrays[0].asnumpy()
    assert np.all(old[:3] == 7) and np.all(old[3:] == np.arange(12, 20).reshape(2, 4))
    new.forward(is_train=True)
    new.backward(np.ones((3, 4), np.float32))
    g = exe.grad_arrays[0].asnumpy()               # gradients share storage too
    assert np.all(g[:3] == 4) and np.all(g[3:] == 0)
    np.testing.assert_array_equal(exe.grad_arrays[1].asnumpy(), np.full((4, 4), 21.0))
    # a reshape to another shape of fewer elements is a view of the flat prefix
    z = mx.sym.Variable('x') * 2
    e2 = z.simple_bind(mx.cpu(), x=(4, 3))
    e2.arg_arrays[0][:] = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(e2.reshape(x=(2, 5)).arg_arrays[0].asnumpy(),
                                  np.arange(10, dtype=np.float32).reshape(2, 5))


def test_reshape_refuses_up_sizing_and_unspecified_changes():
    x = mx.sym.Variable('x')
    exe = mx.sym.FullyConnected(x, num_hidden=4).simple_bind(mx.cpu(), x=(5, 4))
    with pytest.raises(ValueError, match="New shape of arg: x is larger than original"):
        exe.reshape(x=(6, 4))
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    e3 = mx.sym.elemwise_add(a, b).simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    with pytest.raises(ValueError, match="Shape of unspecified arg: b changed"):
        e3.reshape(a=(1, 3))
    e3.arg_dict['b'][:] = np.arange(6, dtype=np.float32).reshape(2, 3)
    n3 = e3.reshape(partial_shaping=True, a=(1, 3))
    np.testing.assert_array_equal(n3.arg_dict['b'].asnumpy(), [[0, 1, 2]])


def test_reshape_aux_states_keep_their_storage():
    d = mx.sym.Variable('data')
    bn = mx.sym.BatchNorm(mx.sym.FullyConnected(d, num_hidden=3, name='fc'), name='bn')
    exe = bn.simple_bind(mx.cpu(), data=(4, 2))
    new = exe.reshape(data=(2, 2))
    assert [a.shape for a in new.aux_arrays] == [(3,), (3,)]
    new.aux_arrays[0][:] = 5
    assert np.all(exe.aux_arrays[0].asnumpy() == 5)


# ----------------------------------------------------- operator parameters
def test_positional_operator_parameters():
    """MXNet's generated functions take the op's parameters positionally after its inputs
    (MobileNetV2's ``mx.sym.clip(data, 0, 6)``)."""
    c = mx.sym.clip(mx.sym.Variable('z'), 0, 6)
    assert c.list_arguments() == ['z']
    attrs = json.loads(c.tojson())['nodes'][1]['attrs']   # MXNet: {'a_max': '6', 'a_min': '0'}
    assert sorted(attrs) == ['a_max', 'a_min']
    assert float(attrs['a_min']) == 0 and float(attrs['a_max']) == 6
    out = c.eval(ctx=mx.cpu(), z=minpy.array(np.array([-1.0, 3.0, 9.0], np.float32)))
    np.testing.assert_array_equal(out[0].asnumpy(), [0, 3, 6])
    # inputs first, then parameters: FullyConnected(data, weight, bias, num_hidden, ...)
    fc = mx.sym.FullyConnected(mx.sym.Variable('data'), None, None, 5, name='fcp')
    assert fc.list_arguments() == ['data', 'fcp_weight', 'fcp_bias']
    assert fc.infer_shape(data=(2, 3))[1] == [(2, 5)]
    with pytest.raises(TypeError, match="a_min"):
        mx.sym.clip(mx.sym.Variable('z'), 0, 6, a_min=1)
    with pytest.raises(TypeError, match="clip"):
        mx.sym.clip(mx.sym.Variable('z'), 0, 6, 7, 8, 9, 10)


def test_dunder_keywords_are_attributes():
    data = mx.sym.Variable('data')
    s = mx.sym.Activation(data=data, act_type='relu', __layout__='TNC', name='act')
    assert s.attr('__layout__') == 'TNC'
    assert s.list_attr()['__layout__'] == 'TNC'
    node = json.loads(s.tojson())['nodes'][-1]
    assert node['attrs'] == {'__layout__': 'TNC', 'act_type': 'relu'}
    assert mx.sym.load_json(s.tojson()).attr('__layout__') == 'TNC'
    # MXNet's bare hidden keys become __key__ attributes; ``weight_lr_mult`` is refused
    s2 = mx.sym.Activation(data=data, act_type='relu', lr_mult=2, ctx_group='dev1')
    assert s2.attr('__lr_mult__') == '2' and s2.attr('__ctx_group__') == 'dev1'
    assert s2.attr('lr_mult') == '2' and s2.list_attr()['ctx_group'] == 'dev1'
    assert json.loads(s2.tojson())['nodes'][-1]['attrs'] == {
        '__ctx_group__': 'dev1', '__lr_mult__': '2', 'act_type': 'relu'}
    with pytest.raises(ValueError, match="weight_lr_mult is deprecated"):
        mx.sym.FullyConnected(data=data, num_hidden=3, weight_lr_mult=2)
    for bad in ('foo', '__foo'):                 # anything else is still refused
        with pytest.raises(ValueError, match="unknown parameter"):
            mx.sym.Activation(data=data, act_type='relu', **{bad: 'x'})


# -------------------------------------------------------------- composition
def test_symbol_compose():
    """MXNet 1.9.1's ``test_symbol.test_symbol_compose``."""
    data = mx.symbol.Variable('data')
    net1 = mx.symbol.FullyConnected(data=data, name='fc1', num_hidden=10)
    net1 = mx.symbol.FullyConnected(data=net1, name='fc2', num_hidden=100)
    assert net1.list_arguments() == ['data', 'fc1_weight', 'fc1_bias',
                                     'fc2_weight', 'fc2_bias']

    net2 = mx.symbol.FullyConnected(name='fc3', num_hidden=10)
    net2 = mx.symbol.Activation(data=net2, act_type='relu')
    net2 = mx.symbol.FullyConnected(data=net2, name='fc4', num_hidden=20)

    composed = net2(fc3_data=net1, name='composed')
    multi_out = mx.symbol.Group([composed, net1])
    assert len(multi_out.list_outputs()) == 2
    assert len(multi_out) == 2


def test_compose_name_renames_the_head_only():
    data = mx.sym.Variable('data')
    net1 = mx.sym.FullyConnected(data=data, name='fc1', num_hidden=10)
    net2 = mx.sym.FullyConnected(name='fc3', num_hidden=10)
    composed = net2(fc3_data=net1, name='composed')
    assert composed.name == 'composed' and net2.name == 'fc3'
    assert composed.list_arguments() == ['data', 'fc1_weight', 'fc1_bias',
                                         'fc3_weight', 'fc3_bias']
    assert composed.list_outputs() == ['composed_output']
    g = mx.sym.Group([net1, net2])(fc3_data=net1, name='gname')
    assert g.list_outputs() == ['gname_output', 'fc3_output']
    assert net1.name == 'fc1'
    assert mx.sym.Variable('x')(name='y').name == 'y'
    net2._compose(fc3_data=net1, name='composed')             # in place, as MXNet's
    assert net2.name == 'composed' and 'fc1_weight' in net2.list_arguments()
    with pytest.raises(TypeError, match="either as positional or keyword"):
        net2(net1, fc3_weight=data)
    with pytest.raises(TypeError, match="Symbol"):
        net2(fc3_data=3)


# --------------------------------------------------------------- inference
def test_symbol_infer_shape():
    """MXNet 1.9.1's ``test_symbol.test_symbol_infer_shape`` (its first part: minpy has
    no partially known dimensions; an unknown shape is None where MXNet shows ``()``)."""
    num_hidden = 128
    num_dim = 64
    num_sample = 10

    data = mx.symbol.Variable('data')
    prev = mx.symbol.Variable('prevstate')
    x2h = mx.symbol.FullyConnected(data=data, name='x2h', num_hidden=num_hidden)
    h2h = mx.symbol.FullyConnected(data=prev, name='h2h', num_hidden=num_hidden)

    out = mx.symbol.Activation(data=mx.sym.elemwise_add(x2h, h2h), name='out', act_type='relu')

    # shape inference will fail because information is not available for h2h
    with pytest.warns(UserWarning, match="Cannot decide shape for the following arguments"
                      r"(.|\n)*prevstate(.|\n)*h2h_weight"):
        ret = out.infer_shape(data=(num_sample, num_dim))
    assert ret == (None, None, None)

    arg, out_shapes, aux_shapes = out.infer_shape_partial(data=(num_sample, num_dim))
    arg_shapes = dict(zip(out.list_arguments(), arg))
    assert arg_shapes['data'] == (num_sample, num_dim)
    assert arg_shapes['x2h_weight'] == (num_hidden, num_dim)
    assert arg_shapes['h2h_weight'] is None

    # now we can do full shape inference
    state_shape = out_shapes[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arg, out_shapes, aux_shapes = out.infer_shape(data=(num_sample, num_dim),
                                                      prevstate=state_shape)
    arg_shapes = dict(zip(out.list_arguments(), arg))
    assert arg_shapes['data'] == (num_sample, num_dim)
    assert arg_shapes['x2h_weight'] == (num_hidden, num_dim)
    assert arg_shapes['h2h_weight'] == (num_hidden, num_hidden)


# -------------------------------------------------------------------- eval
def test_symbol_eval():
    x = mx.sym.Variable('x')
    y = mx.sym.Variable('y')
    out = (2 * x + y).eval(ctx=mx.cpu(), x=minpy.array(np.ones((2, 3), np.float32)),
                           y=minpy.array(np.ones((2, 3), np.float32)))
    assert isinstance(out, list) and len(out) == 1
    np.testing.assert_array_equal(out[0].asnumpy(), np.full((2, 3), 3.0))
    with pytest.raises(ValueError, match="'y'"):
        (2 * x + y).eval(x=minpy.array(np.ones((2, 3), np.float32)))
