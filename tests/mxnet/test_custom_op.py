"""mx.operator: MXNet 1.9.1's custom operators (CustomOp, CustomOpProp, register) as
``mx.sym.Custom`` in executors and Module.fit, as ``mx.nd.Custom`` (under
``mx.autograd.record`` too) and inside ``minpy.grad`` through ``minpy.symbol.Function``;
written as MXNet's example/numpy-ops/custom_softmax.py and
tests/python/unittest/test_operator.py::test_custom_op are. Values of a Custom graph
are compared with real MXNet 1.9.1's (tests/fixtures/mxnet/make_custom_op_fixtures.py).
"""
import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minpy
import minpy.mxnet as mx
from minpy.mxnet.test_utils import assert_almost_equal
from minpy.symbol import check_symbol_grad
from minpy.symbol.ops.custom import PROPS

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "mxnet",
                       "custom_op_cases.npz")


def host(a):
    return a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)


# ------------------------------------------------ custom_softmax.py, word for word
class Softmax(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        l = in_data[1].asnumpy().ravel().astype(int)    # noqa: E741 (MXNet's example)
        y = out_data[0].asnumpy()
        y[np.arange(l.shape[0]), l] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))


@mx.operator.register("softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(SoftmaxProp, self).__init__(need_top_grad=False)

    def list_arguments(self):
        return ['data', 'label']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        output_shape = in_shape[0]
        return [data_shape, label_shape], [output_shape], []

    def infer_type(self, in_type):
        return in_type, [in_type[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


def mlp(custom):
    data = mx.symbol.Variable('data')
    fc1 = mx.symbol.FullyConnected(data=data, name='fc1', num_hidden=32)
    act1 = mx.symbol.Activation(data=fc1, name='relu1', act_type="relu")
    fc2 = mx.symbol.FullyConnected(data=act1, name='fc2', num_hidden=16)
    act2 = mx.symbol.Activation(data=fc2, name='relu2', act_type="relu")
    fc3 = mx.symbol.FullyConnected(data=act2, name='fc3', num_hidden=4)
    if custom:
        return mx.symbol.Custom(data=fc3, name='softmax', op_type='softmax')
    return mx.symbol.Softmax(data=fc3, name='softmax')


def blobs(n, seed=0):
    """Four separable Gaussian blobs in 10 dimensions."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    centers = rng.normal(0, 3, (4, 10))
    x = (centers[y] + rng.normal(0, 1, (n, 10))).astype(np.float32)
    return x, y.astype(np.float32)


def test_custom_softmax_trains_as_softmax_output():
    x, y = blobs(240)
    assert mlp(True).list_arguments() == mlp(False).list_arguments()
    init = mx.mod.Module(mlp(False), context=mx.cpu())
    init.bind(data_shapes=[('data', (20, 10))], label_shapes=[('softmax_label', (20,))])
    mx.random.seed(1)
    init.init_params(initializer=mx.init.Xavier())
    arg0, _ = init.get_params()
    results = {}
    for custom in (True, False):
        train = mx.io.NDArrayIter(x[:200], y[:200], batch_size=20, shuffle=False)
        val = mx.io.NDArrayIter(x[200:], y[200:], batch_size=20)
        mod = mx.mod.Module(mlp(custom), context=mx.cpu())
        accs, params = [], []

        def epoch_end(epoch, sym, arg, aux, mod=mod, val=val, accs=accs, params=params):
            accs.append(mod.score(val, 'acc')[0][1])
            params.append({k: host(v).copy() for k, v in arg.items()})
        mod.fit(train_data=train, optimizer='sgd',
                optimizer_params={'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.00001},
                arg_params={k: v.copy() for k, v in arg0.items()}, num_epoch=4,
                epoch_end_callback=epoch_end)
        results[custom] = accs, params
    (acc_c, par_c), (acc_s, par_s) = results[True], results[False]
    assert acc_c == acc_s
    assert acc_c[-1] >= 0.95
    for pc, ps in zip(par_c, par_s):        # 10 steps per epoch: the same trajectory
        for k in ps:
            np.testing.assert_allclose(pc[k], ps[k], rtol=1e-5, atol=1e-5, err_msg=k)
    assert not np.allclose(par_c[0]['fc1_weight'], host(arg0['fc1_weight']))


# ------------------------------------------- test_operator.py::test_custom_op
class Sqr(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = 1
        self.assign(out_data[0], req[0], in_data[0]*in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])
        assert (aux[0].asnumpy() == 1).all()


@mx.operator.register("sqr")
class SqrProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(SqrProp, self).__init__(need_top_grad=True)

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def list_auxiliary_states(self):
        return ['aux']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def infer_type(self, in_type):
        return in_type, [in_type[0]], [in_type[0]]

    def infer_storage_type(self, in_stype):
        if in_stype[0] == 'default':
            return ['default'], ['default'], ['default']
        return ['csr'], ['csr'], ['csr']

    def create_operator(self, ctx, shapes, dtypes):
        return Sqr()


class Mult(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0]*in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], in_data[1])
        self.assign(in_grad[1], req[1], in_data[0])


@mx.operator.register("mult")
class MultProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(MultProp, self).__init__(need_top_grad=True)

    def list_arguments(self):
        return ['lhs', 'rhs']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Mult()


@mx.operator.register("mult_no_grad")
class MultNoGradProp(MultProp):
    def __init__(self):
        super(MultProp, self).__init__(need_top_grad=False)


class NoInputOp(mx.operator.CustomOp):
    def __init__(self, length, depth):
        super(NoInputOp, self).__init__()
        self.output = np.ones(shape=(length, depth), dtype=np.float32)

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.output)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        pass


@mx.operator.register("no_input_op")
class NoInputOpProp(mx.operator.CustomOpProp):
    def __init__(self, length, depth):
        super(NoInputOpProp, self).__init__()
        self.length = int(length)
        self.depth = int(depth)

    def list_arguments(self):
        return []

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return [], [(self.length, self.depth)], []

    def infer_type(self, in_type):
        return [], [np.float32], []

    def create_operator(self, ctx, shapes, dtypes):
        return NoInputOp(length=self.length, depth=self.depth)


def test_custom_op_sqr_numeric_gradient():
    data = mx.symbol.Variable('data')
    aux = mx.symbol.Variable('aux')
    op = mx.symbol.Custom(data=data, aux=aux, name='sqr', op_type='sqr')
    assert op.list_arguments() == ['data'] and op.list_auxiliary_states() == ['aux']
    assert op.list_outputs() == ['sqr_output']
    assert op.infer_shape(data=(4, 10)) == ([(4, 10)], [(4, 10)], [(4, 10)])
    x = np.random.default_rng(0).uniform(-1, 1, size=(4, 10))
    aux_v = np.zeros_like(x)
    res = check_symbol_grad(op, [x], aux_states={'aux': aux_v}, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res['data'][1], res['data'][0], rtol=1e-6)

    data = mx.symbol.cast(data, dtype='float64')
    op = mx.symbol.Custom(data=data, aux=aux, name='sqr', op_type='sqr')
    op = mx.symbol.cast(op, dtype='float32')
    # (a float32 output: differences of step 1e-3, as MXNet's check_numeric_gradient)
    check_symbol_grad(op, [x], aux_states={'aux': aux_v}, eps=1e-3, rtol=1e-3, atol=1e-4)


@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_custom_op_sqr_forward_backward(shape, dtype):
    rng = np.random.default_rng(len(shape))
    x = rng.uniform(-1, 1, shape).astype(dtype)
    g = rng.normal(size=shape).astype(dtype)
    op = mx.symbol.Custom(data=mx.symbol.Variable('data'), name='sqr', op_type='sqr')
    exe = op.simple_bind(mx.cpu(), data=tuple(shape), type_dict={'data': dtype})
    out = exe.forward(is_train=True, data=mx.nd.array(x, dtype=dtype))[0]
    assert out.dtype == dtype and exe.aux_dict['sqr_aux'].dtype == dtype
    np.testing.assert_allclose(host(out), x * x, rtol=1e-6)
    assert (host(exe.aux_dict['sqr_aux']) == 1).all()
    exe.backward(mx.nd.array(g, dtype=dtype))
    np.testing.assert_allclose(host(exe.grad_dict['data']), 2 * x * g, rtol=1e-6)


def test_custom_op_grad_req_add_accumulates():
    x = np.random.default_rng(1).uniform(-1, 1, (3, 4)).astype(np.float32)
    lhs, rhs = mx.sym.Variable('lhs'), mx.sym.Variable('rhs')
    op = mx.sym.Custom(lhs, rhs, op_type='mult', name='m')
    exe = op.simple_bind(mx.cpu(), grad_req={'lhs': 'add', 'rhs': 'write'},
                         lhs=(3, 4), rhs=(3, 4))
    exe.grad_dict['lhs'][:] = 10
    for _ in range(2):
        exe.forward(is_train=True, lhs=x, rhs=2 * x)
        exe.backward(mx.nd.ones((3, 4)))
    np.testing.assert_allclose(host(exe.grad_dict['lhs']), 10 + 2 * (2 * x), rtol=1e-6)
    np.testing.assert_allclose(host(exe.grad_dict['rhs']), x, rtol=1e-6)


def test_an_unused_output_gets_a_zero_gradient():
    rng = np.random.default_rng(9)
    a, b, g = (rng.normal(size=(2, 3)).astype(np.float32) for _ in range(3))
    ps = mx.sym.Custom(mx.sym.Variable('lhs'), mx.sym.Variable('rhs'), op_type='prodsum',
                       name='ps')
    exe = ps[0].simple_bind(mx.cpu(), lhs=(2, 3), rhs=(2, 3))
    np.testing.assert_allclose(host(exe.forward(is_train=True, lhs=a, rhs=b)[0]), a * b,
                               rtol=1e-6)
    exe.backward(mx.nd.array(g))
    np.testing.assert_allclose(host(exe.grad_dict['lhs']), g * b, rtol=1e-6)
    np.testing.assert_allclose(host(exe.grad_dict['rhs']), g * a, rtol=1e-6)


@pytest.mark.parametrize("mirror", [True, "all"])
def test_recomputation_gives_the_same_gradients(mirror):
    x, y = blobs(8, seed=3)
    grads = []
    for m in (False, mirror):
        exe = mlp(True).simple_bind(mx.cpu(), mirror=m, data=(8, 10))
        for k, v in exe.arg_dict.items():
            if k.endswith('weight'):
                v[:] = np.random.default_rng(len(k)).normal(0, 0.3, v.shape)
        exe.forward(is_train=True, data=x, softmax_label=y)
        exe.backward()
        grads.append({k: host(v).copy() for k, v in exe.grad_dict.items()})
    for k in grads[0]:
        np.testing.assert_allclose(grads[1][k], grads[0][k], rtol=1e-6, err_msg=k)
    assert np.abs(grads[0]['fc1_weight']).sum() > 0


def test_nd_custom_under_autograd_record():
    rtol, atol = 1e-4, 1e-6
    x = mx.nd.array(np.random.default_rng(2).uniform(-1, 1, size=(4, 10)))
    aux = mx.nd.zeros_like(x)
    x.attach_grad()
    with mx.autograd.record():
        output = mx.nd.Custom(x, aux, name='sqr', op_type='sqr')
        output.backward()
    assert_almost_equal(output, host(x) ** 2, rtol=rtol, atol=atol)
    assert_almost_equal(x.grad, 2 * host(x), rtol=rtol, atol=atol)
    assert (host(aux) == 1).all()

    lhs = mx.nd.array(np.random.default_rng(3).uniform(-1, 1, size=(4, 10)))
    rhs = mx.nd.array(np.random.default_rng(4).uniform(-1, 1, size=(4, 10)))
    lhs.attach_grad()
    rhs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(lhs, rhs, name='mult', op_type='mult')
        y.backward()
    assert_almost_equal(rhs, lhs.grad, rtol=rtol, atol=atol)
    assert_almost_equal(lhs, rhs.grad, rtol=rtol, atol=atol)

    with mx.autograd.record():
        y2 = mx.nd.Custom(lhs, rhs, name="mult_no_grad", op_type="mult_no_grad")
        y2.backward()
    assert_almost_equal(rhs, lhs.grad, rtol=rtol, atol=atol)
    assert_almost_equal(lhs, rhs.grad, rtol=rtol, atol=atol)

    with mx.autograd.record():
        x = mx.nd.Custom(length=10, depth=10, op_type="no_input_op")
    assert_almost_equal(x, np.ones(shape=(10, 10), dtype=np.float32))
    assert x.shape == (10, 10) and x.dtype == np.float32


def test_nd_custom_untraced_and_head_gradient():
    x = np.random.default_rng(5).uniform(-1, 1, (2, 3)).astype(np.float32)
    y = mx.nd.Custom(mx.nd.array(x), mx.nd.zeros((2, 3)), op_type='sqr')
    np.testing.assert_allclose(host(y), x * x, rtol=1e-6)
    a = mx.nd.array(x)
    a.attach_grad()
    g = np.arange(6, dtype=np.float32).reshape(2, 3)
    with mx.autograd.record():
        z = mx.nd.Custom(a, mx.nd.zeros((2, 3)), op_type='sqr') * 3
    z.backward(mx.nd.array(g))
    np.testing.assert_allclose(host(a.grad), 6 * x * g, rtol=1e-6)


def test_custom_inside_minpy_grad_through_function():
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc')
    net = mx.sym.Custom(net, op_type='sqr', name='sq')
    f = minpy.symbol.Function(net, {'data': (4, 5)})
    params = f.get_params(seed=0)
    x = np.random.default_rng(6).normal(size=(4, 5)).astype(np.float32)

    def loss(w, b):
        return minpy.sum(f(data=x, fc_weight=w, fc_bias=b) * 0.5)
    gw, gb = minpy.grad(loss, argnum=[0, 1])(params['fc_weight'], params['fc_bias'])
    h = x @ host(params['fc_weight']).T + host(params['fc_bias'])
    np.testing.assert_allclose(host(gb), h.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(host(gw), h.T @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(loss(params['fc_weight'], params['fc_bias'])),
                               0.5 * (h * h).sum(), rtol=1e-5)


# ------------------------------------------------- the same graph in real MXNet
class ScaledPow(mx.operator.CustomOp):
    def __init__(self, power, scale):
        super(ScaledPow, self).__init__()
        self.power, self.scale = power, scale

    def forward(self, is_train, req, in_data, out_data, aux):
        if is_train:
            aux[0][:] += 1
        self.assign(out_data[0], req[0], self.scale * in_data[0] ** self.power)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        g = self.scale * self.power * in_data[0] ** (self.power - 1) * out_grad[0]
        self.assign(in_grad[0], req[0], g)


@mx.operator.register("scaledpow")
class ScaledPowProp(mx.operator.CustomOpProp):
    def __init__(self, power, scale="1"):
        super(ScaledPowProp, self).__init__(need_top_grad=True)
        assert isinstance(power, str) and isinstance(scale, str)
        self.power, self.scale = float(power), float(scale)

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def list_auxiliary_states(self):
        return ['calls']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        return ScaledPow(self.power, self.scale)


class ProdSum(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[1])
        self.assign(out_data[1], req[1], in_data[0] + in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * in_data[1] + out_grad[1])
        self.assign(in_grad[1], req[1], out_grad[0] * in_data[0] + out_grad[1])


@mx.operator.register("prodsum")
class ProdSumProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ['lhs', 'rhs']

    def list_outputs(self):
        return ['prod', 'sum']

    def infer_shape(self, in_shape):
        return [in_shape[0], in_shape[0]], [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return ProdSum()


def fixture_net():
    x = mx.sym.Variable('x')
    y = mx.sym.Variable('y')
    h = mx.sym.FullyConnected(x, num_hidden=4, name='fc1')
    h = mx.sym.Custom(h, op_type='scaledpow', power=3, scale=0.5, name='pow')
    ps = mx.sym.Custom(h, y, op_type='prodsum', name='ps')
    out = mx.sym.FullyConnected(ps[0], num_hidden=3, name='fc2')
    out = mx.sym.Custom(data=out, name='softmax', op_type='softmax')
    return mx.sym.Group([out, ps[1]])


@pytest.mark.parametrize("source", ["mxnet_json", "built", "copied"])
def test_custom_graph_matches_mxnet(source):
    ref = np.load(FIXTURE)
    if source == "mxnet_json":
        sym = mx.sym.load_json(str(ref['sym|json']))
    elif source == "built":
        sym = fixture_net()
    else:
        sym = mx.sym.load_json(fixture_net().tojson()).__copy__()
    assert sym.list_outputs() == ['softmax_output', 'ps_sum']
    assert sym.list_auxiliary_states() == ['pow_calls']
    names = [k[3:] for k in ref.files if k.startswith('in|')]
    assert sorted(sym.list_arguments()) == sorted(names)
    exe = sym.simple_bind(mx.cpu(), grad_req='write', x=(5, 6), y=(5, 4))
    for k in names:
        exe.arg_dict[k][:] = ref[f'in|{k}']
    exe.aux_dict['pow_calls'][:] = 2
    outs = exe.forward(is_train=True)
    exe.backward([mx.nd.ones((5, 3)), mx.nd.array(ref['head|1'])])
    for i, o in enumerate(outs):
        np.testing.assert_allclose(host(o), ref[f'out|{i}'], rtol=1e-5, atol=1e-6)
    for k, g in exe.grad_dict.items():
        np.testing.assert_allclose(host(g), ref[f'grad|{k}'], rtol=1e-4, atol=1e-5,
                                   err_msg=k)
    np.testing.assert_array_equal(host(exe.aux_dict['pow_calls']), ref['aux|pow_calls'])


def test_nd_custom_matches_mxnet():
    ref = np.load(FIXTURE)
    x = mx.nd.array(ref['nd|x'])
    calls = mx.nd.zeros((1,))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, calls, op_type='scaledpow', power=2.5, scale=-1.5)
    y.backward(mx.nd.array(ref['nd|head']))
    np.testing.assert_allclose(host(y), ref['nd|out'], rtol=1e-5)
    np.testing.assert_allclose(host(x.grad), ref['nd|grad'], rtol=1e-5)
    np.testing.assert_array_equal(host(calls), ref['nd|calls'])


# ------------------------------------------------------- MXNet's contract, edges
class Mult1(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])


def test_parameters_reach_the_prop_as_strings_and_survive_json():
    seen = []

    @mx.operator.register("_test_kwargs")
    class KwProp(mx.operator.CustomOpProp):
        def __init__(self, **kwargs):
            super(KwProp, self).__init__()
            seen.append(kwargs)

        def list_auxiliary_states(self):
            return []

        def create_operator(self, ctx, shapes, dtypes):
            return Mult1()
    s = mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_kwargs', k=(2, 3), flag=True,
                      rate=0.5, name='kw')
    assert seen[-1] == {'k': '(2, 3)', 'flag': 'True', 'rate': '0.5'}
    for fmt in ('mxnet', 'minpy'):
        back = mx.sym.load_json(s.tojson(fmt))
        assert seen[-1] == {'k': '(2, 3)', 'flag': 'True', 'rate': '0.5'}
        assert back.list_outputs() == ['kw_output']
    y = mx.nd.Custom(mx.nd.ones((2,)) * 3, op_type='_test_kwargs', n=3)
    assert seen[-1] == {'n': '3'}
    np.testing.assert_array_equal(host(y), [9, 9])


def test_backward_dependencies_are_honoured():
    got = {}

    class Op(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            got.update(og=out_grad[0], ind=in_data[0], outd=out_data[0], req=req)
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    @mx.operator.register("_test_deps")
    class Prop(mx.operator.CustomOpProp):
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return [out_grad[0]]

        def create_operator(self, ctx, shapes, dtypes):
            return Op()
    exe = mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_deps').simple_bind(
        mx.cpu(), d=(2, 2))
    exe.forward(is_train=True, d=np.ones((2, 2), np.float32))
    exe.backward(mx.nd.full((2, 2), 3.0))
    assert got['ind'] is None and got['outd'] is None and got['req'] == ['write']
    np.testing.assert_array_equal(host(got['og']), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(host(exe.grad_dict['d']), np.full((2, 2), 6.0))


def test_an_unwritten_input_gradient_reads_zero():
    exe = mlp(True).simple_bind(mx.cpu(), data=(4, 10))
    exe.arg_dict['softmax_label'][:] = np.array([0, 1, 2, 3], np.float32)
    exe.grad_dict['softmax_label'][:] = 7
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(host(exe.grad_dict['softmax_label']), np.zeros(4))


def test_stateful_operator_is_one_per_executor():
    made = []

    class Keep(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.saved = in_data[0].asnumpy().copy()
            self.assign(out_data[0], req[0], in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], mx.nd.array(self.saved) * out_grad[0])

    @mx.operator.register("_test_keep")
    class KeepProp(mx.operator.CustomOpProp):
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return [out_grad[0]]

        def create_operator(self, ctx, shapes, dtypes):
            made.append((shapes, dtypes))
            return Keep()
    sym = mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_keep')
    e1, e2 = (sym.simple_bind(mx.cpu(), d=(3,)) for _ in range(2))
    e1.forward(is_train=True, d=np.array([1, 2, 3], np.float32))
    e2.forward(is_train=True, d=np.array([4, 5, 6], np.float32))
    e1.backward(mx.nd.ones((3,)))
    e2.backward(mx.nd.ones((3,)))
    np.testing.assert_array_equal(host(e1.grad_dict['d']), [1, 2, 3])
    np.testing.assert_array_equal(host(e2.grad_dict['d']), [4, 5, 6])
    assert made == [([[3]], [0]), ([[3]], [0])]        # float32 is MXNet's type code 0


def test_unknown_op_type_names_the_registered_ones():
    with pytest.raises(ValueError, match=r"no custom operator 'nope' is registered.*'sqr'"):
        mx.sym.Custom(mx.sym.Variable('d'), op_type='nope')
    with pytest.raises(ValueError, match="no custom operator 'nope'"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type='nope')
    with pytest.raises(ValueError, match="required parameter 'op_type'"):
        mx.sym.Custom(mx.sym.Variable('d'))
    assert 'sqr' in mx.operator.get_registered_custom_operators()
    assert 'Custom' in mx.operator.get_all_registered_operators()


def test_infer_shape_of_wrong_arity_is_a_shape_error():
    @mx.operator.register("_test_arity")
    class Bad(mx.operator.CustomOpProp):
        def list_outputs(self):
            return ['a', 'b']

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]]
    s = mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_arity', name='bad')
    with pytest.raises(mx.MXNetError, match=r"returned 1 output shapes, expected 2 "
                                            r"\(for \['a', 'b'\]\)"):
        s.infer_shape(d=(2, 3))

    @mx.operator.register("_test_arity2")
    class Bad2(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return [in_shape]
    with pytest.raises(mx.sym.ShapeError, match="must return 2 or 3 lists"):
        mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_arity2').infer_shape(d=(2,))


def test_errors_in_user_code_are_mxnet_errors():
    class Boom(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            assert False, "boom"

    @mx.operator.register("_test_boom")
    class BoomProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Boom()
    with pytest.raises(mx.MXNetError, match="Boom.forward.*AssertionError: boom"):
        mx.nd.Custom(mx.nd.zeros((4, 1)), op_type='_test_boom').wait_to_read()
    exe = mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_boom').simple_bind(
        mx.cpu(), d=(2,))
    with pytest.raises(mx.MXNetError, match="boom"):
        exe.forward()


def test_sparse_storage_and_bad_req_are_refused():
    @mx.operator.register("_test_csr")
    class Csr(SqrProp):
        def infer_storage_type(self, in_stype):
            return ['csr'], ['csr'], ['csr']
    with pytest.raises(NotImplementedError, match="dense"):
        mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_csr')
    dst = mx.nd.zeros((2,))
    op = mx.operator.CustomOp()
    op.assign(dst, 'add', mx.nd.ones((2,)))
    op.assign(dst, 'add', mx.nd.ones((2,)))
    op.assign(dst, 'null', mx.nd.ones((2,)))
    np.testing.assert_array_equal(host(dst), [2, 2])
    op.assign(dst, 'inplace', mx.nd.ones((2,)) * 5)
    np.testing.assert_array_equal(host(dst), [5, 5])
    with pytest.raises(ValueError, match="CustomOp.assign: req must be one of"):
        op.assign(dst, 'addto', mx.nd.ones((2,)))
    with pytest.raises(AttributeError, match="NumpyOp.*CustomOp"):
        mx.operator.NumpyOp


def test_reregistering_warns_and_replaces():
    @mx.operator.register("_test_again")
    class A(mx.operator.CustomOpProp):
        pass
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @mx.operator.register("_test_again")
        class B(mx.operator.CustomOpProp):
            def list_outputs(self):
                return ['out_b']
    assert any("overriding" in str(x.message) for x in w)
    assert PROPS["_test_again"] is B
    assert mx.sym.Custom(mx.sym.Variable('d'), op_type='_test_again',
                         name='r').list_outputs() == ['r_out_b']


@pytest.mark.skipif(mx.num_gpus() == 0, reason="needs a GPU (or the stand-in)")
def test_custom_op_runs_on_the_gpu():
    ctx = mx.gpu(0)
    x = np.random.default_rng(7).uniform(-1, 1, (4, 10)).astype(np.float32)
    exe = mlp(True).simple_bind(ctx, data=(4, 10))
    for k, v in exe.arg_dict.items():
        if k.endswith('weight'):
            v[:] = mx.nd.array(np.random.default_rng(8).normal(0, 0.3, v.shape), ctx=ctx)
    probs = exe.forward(is_train=True, data=mx.nd.array(x, ctx=ctx),
                        softmax_label=mx.nd.array([0, 1, 2, 3], ctx=ctx))[0]
    assert probs.context == ctx
    np.testing.assert_allclose(host(probs).sum(axis=1), np.ones(4), rtol=1e-5)
    exe.backward()
    assert exe.grad_dict['fc1_weight'].context == ctx
    assert np.abs(host(exe.grad_dict['fc1_weight'])).sum() > 0
    a = mx.nd.array(x, ctx=ctx)
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(a, mx.nd.zeros((4, 10), ctx=ctx), op_type='sqr')
    y.backward()
    assert y.context == ctx and a.grad.context == ctx
    np.testing.assert_allclose(host(a.grad), 2 * x, rtol=1e-6)


def test_a_custom_op_that_does_not_override_forward_or_backward_says_so():
    # MXNet's base methods do nothing: the outputs (or gradients) would stay unwritten
    class Lazy(mx.operator.CustomOp):
        pass

    @mx.operator.register("lazy_op_for_test")
    class LazyProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Lazy()

    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match="Lazy.forward: a CustomOp must override"):
        mx.nd.Custom(x, op_type="lazy_op_for_test").asnumpy()

    class ForwardOnly(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

    @mx.operator.register("forward_only_for_test")
    class ForwardOnlyProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return ForwardOnly()

    exe = mx.sym.Custom(mx.sym.Variable("x"), op_type="forward_only_for_test").simple_bind(
        mx.cpu(), x=(2, 3))
    exe.forward(is_train=True, x=x)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full((2, 3), 2.0))
    with pytest.raises(mx.MXNetError, match="ForwardOnly.backward: a CustomOp must override"):
        exe.backward(mx.nd.ones((2, 3)))
        exe.grad_dict["x"].asnumpy()


def test_a_custom_op_computing_with_minpy_runs_in_async_mode():
    # its code runs inside an engine op: minpy calls there run inline (no push, no wait
    # on the Vars the op holds), which would otherwise deadlock or fail
    import minpy.numpy as mnp

    class Big(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], mnp.exp(in_data[0]) * 2 + in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * (mnp.exp(in_data[0]) * 2 + 1))

    @mx.operator.register("big_async_for_test")
    class BigProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Big()

    x = np.random.RandomState(0).rand(300, 300).astype(np.float32)   # > ASYNC_MIN_SIZE
    with minpy.cpu():
        exe = mx.sym.Custom(mx.sym.Variable("data"), op_type="big_async_for_test") \
            .simple_bind(mx.cpu(), data=x.shape)
        exe.arg_dict["data"][:] = x
        with minpy.async_mode():
            exe.forward(is_train=True)
            exe.backward(mx.nd.ones(x.shape))
            out, grad = exe.outputs[0].asnumpy(), exe.grad_dict["data"].asnumpy()
            y = mx.nd.Custom(mx.nd.array(x), op_type="big_async_for_test").asnumpy()
    np.testing.assert_allclose(out, np.exp(x) * 2 + x, rtol=1e-5)
    np.testing.assert_allclose(grad, np.exp(x) * 2 + 1, rtol=1e-5)
    np.testing.assert_allclose(y, np.exp(x) * 2 + x, rtol=1e-5)
