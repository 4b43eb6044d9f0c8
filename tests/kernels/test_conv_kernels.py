"""The raw conv / pool / BatchNorm kernels against direct references (with and without
the numba kernels), the symbol ops and the tape conv2d / pooling on them, and the
BatchNorm+ReLU graph rewrite against the unfused graph."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minpy
import minpy.symbol as sym
from minpy.nn.layers import conv as L
from minpy.nn.layers.conv import conv2d
from minpy.kernels import conv as ck
from minpy.symbol.passes.fuse_bn_relu import fuse_batchnorm_relu
from minpy.symbol.symbol import Symbol
from minpy.testing import check_grads


@contextlib.contextmanager
def numba_kernels_on(on):
    """Run the raw kernels with (True) or without (False) their numba versions."""
    saved = ck.numba_kernels
    if not on:
        ck.numba_kernels = lambda: None
    try:
        yield
    finally:
        ck.numba_kernels = saved


# ------------------------------------------------------------------ references
def ref_conv(x, w, s, p, d, g):
    """Direct sum over kernel offsets (float64), no shared code with the kernels."""
    n, c, h, wd = x.shape
    k, cg, kh, kw = w.shape
    oh = (h + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (wd + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    out = np.zeros((n, k, oh, ow))
    kg = k // g
    for gi in range(g):
        xs = xp[:, gi * cg:(gi + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                v = xs[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                       j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
                out[:, gi * kg:(gi + 1) * kg] += np.einsum(
                    "kc,nchw->nkhw", w[gi * kg:(gi + 1) * kg, :, i, j].astype(np.float64), v)
    return out


def ref_conv_grads(x, w, gout, s, p, d, g):
    """dx, dw of <gout, conv(x, w)> by linearity: the conv of unit impulses (slow, small)."""
    dx = np.zeros(x.shape)
    dw = np.zeros(w.shape)
    for idx in np.ndindex(*w.shape):
        e = np.zeros(w.shape)
        e[idx] = 1
        dw[idx] = np.sum(ref_conv(x, e, s, p, d, g) * gout)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = 1
        dx[idx] = np.sum(ref_conv(e, w, s, p, d, g) * gout)
    return dx, dw


TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2), cg=st.integers(1, 3), kg=st.integers(1, 3), g=st.integers(1, 2),
       hw=st.tuples(st.integers(3, 7), st.integers(3, 7)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       p=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       dtype=st.sampled_from([np.float32, np.float64]), numba=st.booleans())
def test_conv_kernels_match_direct_reference(n, cg, kg, g, hw, k, s, p, d, dtype, numba):
    span = [d[a] * (k[a] - 1) + 1 for a in range(2)]
    if any(hw[a] + 2 * p[a] < span[a] for a in range(2)):
        return
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, cg * g) + hw).astype(dtype)
    w = rng.standard_normal((kg * g, cg) + k).astype(dtype)
    with numba_kernels_on(numba):
        out = ck.conv2d_forward(np, x, w, s, p, d, g)
    want = ref_conv(x, w, s, p, d, g)
    assert out.dtype == dtype and out.shape == want.shape
    np.testing.assert_allclose(out, want, **TOL[dtype])
    gout = rng.standard_normal(out.shape).astype(dtype)
    with numba_kernels_on(numba):
        dx, dw = ck.conv2d_backward(np, gout, x, w, s, p, d, g)
    rdx, rdw = ref_conv_grads(x, w, gout, s, p, d, g)
    assert dx.dtype == dtype and dw.dtype == dtype
    np.testing.assert_allclose(dx, rdx, **TOL[dtype])
    np.testing.assert_allclose(dw, rdw, **TOL[dtype])


@pytest.mark.parametrize("shape,k,p", [((2, 16, 8, 8), 3, 1), ((2, 3, 6, 6), 3, 1),
                                       ((2, 8, 5, 5), 1, 1), ((2, 4, 12, 12), 5, 0)])
def test_conv_kernels_both_grid_schedules(shape, k, p):
    # C >= K (one GEMM + shifted sums) and C < K (stacked shifted slices), both directions
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    for kk in (shape[1] // 2 or 1, shape[1] * 2):
        w = rng.standard_normal((kk, shape[1], k, k))
        out = ck.conv2d_forward(np, x, w, (1, 1), (p, p), (1, 1))
        np.testing.assert_allclose(out, ref_conv(x, w, (1, 1), (p, p), (1, 1), 1), atol=1e-10)
        gout = rng.standard_normal(out.shape)
        dx, dw = ck.conv2d_backward(np, gout, x, w, (1, 1), (p, p), (1, 1))
        # adjoint identities: <gout, conv(x, w)> is bilinear
        assert np.isclose(np.sum(dx * x), np.sum(gout * out))
        assert np.isclose(np.sum(dw * w), np.sum(gout * out))


def test_conv_kernels_reject_bad_shapes():
    x = np.zeros((1, 4, 5, 5))
    with pytest.raises(ValueError, match="conv2d_forward.*groups=3"):
        ck.conv2d_forward(np, x, np.zeros((3, 2, 3, 3)), groups=3)
    with pytest.raises(ValueError, match="too small"):
        ck.conv2d_forward(np, x, np.zeros((2, 4, 7, 7)))
    with pytest.raises(ValueError, match="out_grad has shape"):
        ck.conv2d_backward(np, np.zeros((1, 2, 4, 4)), x, np.zeros((2, 4, 3, 3)))


# -------------------------------------------------------------------- pooling
def ref_pool(x, k, s, p, kind, out_hw):
    n, c, h, w = x.shape
    out = np.empty((n, c) + tuple(out_hw))
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
            win = x[:, :, max(r0, 0):min(r0 + k[0], h), max(c0, 0):min(c0 + k[1], w)]
            if win.size == 0:       # a 'full' window past the edge sees padding only
                out[:, :, i, j] = -np.inf if kind == "max" else 0
            elif kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                out[:, :, i, j] = win.sum(axis=(2, 3)) / (k[0] * k[1] if kind == "avg" else 1)
    return out


@settings(max_examples=25, deadline=None)
@given(k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       p=st.tuples(st.integers(0, 1), st.integers(0, 1)),
       kind=st.sampled_from(["max", "avg", "sum"]), full=st.booleans(),
       hw=st.tuples(st.integers(3, 7), st.integers(3, 7)),
       dtype=st.sampled_from([np.float32, np.float64]), numba=st.booleans())
def test_pool_kernels_match_reference(k, s, p, kind, full, hw, dtype, numba):
    p = tuple(min(a, b - 1) for a, b in zip(p, k))
    rng = np.random.default_rng(2)
    x = (rng.permutation(2 * 3 * hw[0] * hw[1]).reshape((2, 3) + hw) * 0.1).astype(dtype)
    oh = ck.pool_out_hw(hw, k, s, p, full)
    out = ck.pool2d_forward(np, x, k, s, p, kind, oh)
    want = ref_pool(x.astype(np.float64), k, s, p, kind, oh)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    assert out.dtype == dtype
    # the gradient is the adjoint of the (piecewise) linear pooling map
    gout = (rng.standard_normal(out.shape) * np.isfinite(want)).astype(dtype)
    with numba_kernels_on(numba):
        dx = ck.pool2d_backward(np, gout, x, k, s, p, kind, oh)
        if kind == "max":
            # the gather is the transpose of the routing: <gather(h), g> == <h, route(g)>
            h = rng.standard_normal(x.shape).astype(dtype)
            gh = ck.pool2d_gather(np, h, x, k, s, p, oh)
            assert gh.shape == out.shape and gh.dtype == dtype
            np.testing.assert_allclose(np.sum(gh * gout), np.sum(h * dx), rtol=1e-5, atol=1e-5)
    eps = 1e-3 if kind == "max" else 1.0      # max: distinct values, a small step keeps winners
    v = rng.standard_normal(x.shape)
    fin = np.isfinite(want)
    lin = np.where(fin, ref_pool(x + eps * v, k, s, p, kind, oh) - np.where(fin, want, 0), 0) / eps
    np.testing.assert_allclose(np.sum(dx * v), np.sum(gout * lin), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("numba", [True, False])
def test_max_pool_backward_first_maximum_on_ties_and_nan(numba):
    x = np.array([[[[1.0, 1.0, 2.0, 0.0, 1.0, 3.0], [0.0, 1.0, 2.0, 2.0, np.nan, np.nan]]]])
    g = np.array([[[[3.0, 5.0, 7.0]]]])
    with numba_kernels_on(numba):
        out = ck.pool2d_forward(np, x, (2, 2), (2, 2), (0, 0), "max")
        dx = ck.pool2d_backward(np, g, x, (2, 2), (2, 2), (0, 0), "max")
        gh = ck.pool2d_gather(np, np.arange(12.0).reshape(x.shape), x, (2, 2), (2, 2), (0, 0))
    np.testing.assert_array_equal(out, [[[[1.0, 2.0, np.nan]]]])    # NaN wins, as numpy.max
    np.testing.assert_array_equal(dx, [[[[3.0, 0.0, 5.0, 0.0, 0.0, 0.0],
                                         [0.0, 0.0, 0.0, 0.0, 7.0, 0.0]]]])
    np.testing.assert_array_equal(gh, [[[[0.0, 2.0, 10.0]]]])


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0))])
def test_tape_pooling_fast_path_grads_to_second_order(kind, k, s, p):
    rng = np.random.default_rng(6)
    # distinct values: no window has a tie, so max pooling is linear near x
    perm = rng.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6)
    x = minpy.array(perm * 0.5)
    layer = L.max_pool if kind == "max" else L.avg_pool
    check_grads(lambda v: layer(v, k, s, p) ** 2, x, order=2)
    # the fast path (custom ops) equals the composed formulation used for integers
    if kind == "max":
        ref = L.max_pool(minpy.array(perm), k, s, p)
        np.testing.assert_array_equal(layer(x, k, s, p).asnumpy() * 2, ref.asnumpy())


# ------------------------------------------------------------------ BatchNorm
@pytest.mark.parametrize("numba_on", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("relu", [False, True])
def test_bn_kernels_match_numpy(monkeypatch, numba_on, dtype, relu):
    if not numba_on:
        monkeypatch.setattr(ck, "numba_kernels", lambda: None)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 3, 5, 6)) * 2 + 1).astype(dtype)
    mean, var = ck.bn_train_stats(np, x)
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(var, x.astype(np.float64).var(axis=(0, 2, 3)), rtol=1e-5)
    gamma = rng.standard_normal(3).astype(dtype)
    invstd = 1 / np.sqrt(var + 1e-5)
    scale = invstd * gamma
    out = np.empty_like(x)
    ck.bn_apply(np, x, scale, -mean * scale, out, relu)
    b = (1, -1, 1, 1)
    want = (x - mean.reshape(b)) * scale.reshape(b)
    want = np.maximum(want, 0) if relu else want
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    g = rng.standard_normal(x.shape).astype(dtype)
    dx = np.empty_like(x)
    dgam, dbeta = ck.bn_backward(np, g, x, mean, invstd, gamma, dx, out if relu else None)
    # reference: the textbook formula in float64
    x64, g64 = x.astype(np.float64), g.astype(np.float64) * ((want > 0) if relu else 1)
    xhat = (x64 - mean.reshape(b)) * invstd.reshape(b)
    m = x.size // 3
    rdb = g64.sum(axis=(0, 2, 3))
    rdg = (g64 * xhat).sum(axis=(0, 2, 3))
    rdx = (gamma * invstd).reshape(b) / m * (m * g64 - rdb.reshape(b) - xhat * rdg.reshape(b))
    np.testing.assert_allclose(dbeta, rdb, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dgam, rdg, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, rdx, rtol=10 * tol, atol=10 * tol)


# -------------------------------------------------- the symbol ops and the tape
def test_symbol_convolution_uses_kernels_and_matches_reference():
    # the executor binds float32 by default
    x = sym.Variable("x")
    net = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), stride=(2, 2), num_filter=5,
                          num_group=1, name="c")
    rng = np.random.default_rng(4)
    xv, wv, bv = rng.standard_normal((2, 3, 7, 7)), rng.standard_normal((5, 3, 3, 3)), \
        rng.standard_normal(5)
    exe = net.simple_bind(None, x=xv.shape)
    exe.forward(is_train=True, x=xv, c_weight=wv, c_bias=bv)
    want = ref_conv(xv, wv, (2, 2), (1, 1), (1, 1), 1) + bv.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), want, rtol=1e-4, atol=1e-4)
    gout = rng.standard_normal(want.shape)
    exe.backward([minpy.array(gout)])
    rdx, rdw = ref_conv_grads(xv, wv, gout, (2, 2), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), rdx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(exe.grad_dict["c_weight"].asnumpy(), rdw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(exe.grad_dict["c_bias"].asnumpy(), gout.sum(axis=(0, 2, 3)),
                               rtol=1e-4, atol=1e-4)


def test_tape_conv2d_fast_path_second_order():
    rng = np.random.default_rng(5)
    x = minpy.array(rng.standard_normal((2, 2, 5, 5)))
    w = minpy.array(rng.standard_normal((3, 2, 3, 3)))
    # d/dx of sum(grad_w(sum(conv(x, w)^2))) against the composed minpy formulation
    def loss(xx, ww):
        return minpy.sum(conv2d(xx, ww, pad=1) ** 2)

    def loss_ref(xx, ww):
        xpad = minpy.pad(xx, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = 0
        for i in range(3):
            for j in range(3):
                out = out + minpy.tensordot(ww[:, :, i, j], xpad[:, :, i:i + 5, j:j + 5],
                                            axes=([1], [1]))
        return minpy.sum(out ** 2)
    gw = minpy.grad(lambda xx: minpy.sum(minpy.grad(loss, argnum=1)(xx, w) ** 2))(x)
    gw_ref = minpy.grad(lambda xx: minpy.sum(minpy.grad(loss_ref, argnum=1)(xx, w) ** 2))(x)
    np.testing.assert_allclose(gw.asnumpy(), gw_ref.asnumpy(), rtol=1e-9, atol=1e-9)


# ------------------------------------------------------- BatchNorm+ReLU rewrite
def _bn_relu_net():
    x = sym.Variable("data")
    c = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True, name="c1")
    b = sym.BatchNorm(c, fix_gamma=False, eps=1e-5, name="bn1")
    r = sym.Activation(b, act_type="relu", name="relu1")
    b2 = sym.BatchNorm(r, fix_gamma=True, name="bn2")
    r2 = sym.Activation(b2, act_type="relu", name="relu2")
    t = sym.Activation(b2, act_type="tanh", name="tanh2")       # bn2 has two consumers
    return r2 + t


def _run(symbol, xv, seed=0):
    exe = symbol.simple_bind(None, data=xv.shape)
    rng = np.random.default_rng(seed)
    for k in sorted(exe.arg_dict):
        if k != "data":
            exe.arg_dict[k][...] = minpy.array(rng.standard_normal(exe.arg_dict[k].shape))
    outs = []
    for _ in range(2):
        exe.forward(is_train=True, data=xv)
        exe.backward([minpy.array(np.cos(np.arange(xv.size * 4 // xv.shape[1]))
                                  .reshape(exe.outputs[0].shape))])
        outs.append(exe.outputs[0].asnumpy())
    grads = {k: v.asnumpy() for k, v in exe.grad_dict.items() if v is not None}
    aux = {k: v.asnumpy() for k, v in exe.aux_dict.items()}
    return outs, grads, aux


def test_fuse_batchnorm_relu_rewrites_only_single_consumer_pairs():
    net = _bn_relu_net()
    heads = fuse_batchnorm_relu(net._outputs)
    fused = Symbol(heads)
    ops = [n.op.name for n in fused._nodes() if n.op is not None]
    assert ops.count("_BatchNormReLU") == 1 and ops.count("BatchNorm") == 1
    assert fused.list_arguments() == net.list_arguments()
    assert fused.list_auxiliary_states() == net.list_auxiliary_states()
    assert fused.list_outputs() == net.list_outputs()
    old_vars = {id(n) for n in net._nodes() if n.op is None}
    assert {id(n) for n in fused._nodes() if n.op is None} == old_vars
    # the input graph is untouched
    assert [n.op.name for n in net._nodes() if n.op is not None].count("_BatchNormReLU") == 0


@pytest.mark.parametrize("numba_on", [True, False])
def test_fused_graph_matches_unfused(monkeypatch, numba_on):
    if not numba_on:
        monkeypatch.setattr(ck, "numba_kernels", lambda: None)
    net = _bn_relu_net()
    fused = Symbol(fuse_batchnorm_relu(net._outputs))
    xv = np.random.default_rng(6).standard_normal((3, 2, 5, 5))
    a, b = _run(net, xv), _run(fused, xv)
    for u, v in zip(a[0], b[0]):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        np.testing.assert_allclose(a[1][k], b[1][k], rtol=1e-9, atol=1e-11, err_msg=k)
    for k in a[2]:
        np.testing.assert_allclose(a[2][k], b[2][k], rtol=1e-12, err_msg=k)
