"""Neural-network layer operators: FullyConnected, Convolution, Pooling,
Activation, LeakyReLU, BatchNorm, Dropout, and their backward ops.

Convolution and pooling are 2-d, NCHW; their kernels (shifted flat GEMMs,
vectorised pooling, numba BatchNorm) live in ``minpy.symbol.conv_kernels``.
``_BatchNormReLU`` is BatchNorm followed by a ReLU in one op (two passes
forward, two backward); the graph rewrite ``fuse_bn_relu`` introduces it.
"""
import math

from . import conv_kernels as ck
from .registry import (same_shape, Bool, Choice, Float, Int, Mismatch, OpDef, Param, Shape, assign,
                       bwd_shape, copy_into, grad_type, make_node, register)

__all__ = []


def _bwd_entries(name, inputs, node, n):
    b = make_node(name, inputs, node.attrs, fwd=node)
    return [(b, i) for i in range(n)]


def _pair(v, default):
    v = tuple(v) if v else default
    return v if len(v) == 2 else (v[0],) * 2


def _matmul_into(xp, a, b, out):
    """out = a @ b where ``out`` may have another (same-size) shape."""
    o = out.reshape(a.shape[0], b.shape[1])
    if xp.may_share_memory(o, out):
        xp.matmul(a, b, out=o)
    else:
        out[...] = (a @ b).reshape(out.shape)


# -------------------------------------------------------------- FullyConnected
_FC_PARAMS = {"num_hidden": Param(Int), "no_bias": Param(Bool, False),
              "flatten": Param(Bool, True)}


def _fc_args(attrs):
    return ["data", "weight"] if attrs["no_bias"] else ["data", "weight", "bias"]


def _fc_shape(attrs, ins, outs):
    h, s = attrs["num_hidden"], ins[0]
    if s is not None:
        if len(s) < 1 + (not attrs["flatten"]):
            raise Mismatch(f"data: expected at least {1 + (not attrs['flatten'])} dims, got {s}")
        k = math.prod(s[1:]) if attrs["flatten"] else s[-1]
        assign(ins, 1, (h, k), "weight")
        assign(outs, 0, (s[0], h) if attrs["flatten"] else tuple(s[:-1]) + (h,), "output")
    if not attrs["no_bias"]:
        assign(ins, 2, (h,), "bias")
    return ins, outs


def _fc_fwd(rc, attrs, ins, outs):
    x, w, out = ins[0], ins[1], outs[0]
    if attrs["flatten"]:
        x = x.reshape(x.shape[0], -1)
    rc.xp.matmul(x, w.T, out=out)
    if not attrs["no_bias"]:
        out += ins[2]


def _fc_bwd_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    g, x, w = ins
    g2 = g.reshape(-1, g.shape[-1])
    x2 = x.reshape(g2.shape[0], -1)
    _matmul_into(xp, g2, w, outs[0])
    xp.matmul(g2.T, x2, out=outs[1])
    if not attrs["no_bias"]:
        xp.sum(g2, axis=0, out=outs[2])


register(OpDef("FullyConnected", params=_FC_PARAMS, arguments=_fc_args, forward=_fc_fwd,
               infer_shape=_fc_shape,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_FullyConnected", [og[0], node.inputs[0], node.inputs[1]], node,
                   len(node.inputs)),
               doc="out = data @ weight.T + bias; weight is (num_hidden, in)."))
register(OpDef("_backward_FullyConnected", params=_FC_PARAMS,
               arguments=("out_grad", "data", "weight"), outputs=_fc_args,
               forward=_fc_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               is_backward=True, doc="Gradients of FullyConnected."))


# ----------------------------------------------------------------- Convolution
_CONV_PARAMS = {"kernel": Param(Shape), "num_filter": Param(Int), "stride": Param(Shape, ()),
                "dilate": Param(Shape, ()), "pad": Param(Shape, ()), "num_group": Param(Int, 1),
                "no_bias": Param(Bool, False), "workspace": Param(Int, 1024)}


def _conv_geom(attrs):
    return (_pair(attrs["kernel"], None), _pair(attrs["stride"], (1, 1)),
            _pair(attrs["dilate"], (1, 1)), _pair(attrs["pad"], (0, 0)))


def _conv_shape(attrs, ins, outs):
    k, s, d, p = _conv_geom(attrs)
    f, g = attrs["num_filter"], attrs["num_group"]
    if len(attrs["kernel"]) != 2:
        raise Mismatch(f"only 2-d kernels are supported, got kernel={attrs['kernel']}")
    if f % g:
        raise Mismatch(f"num_filter={f} is not divisible by num_group={g}")
    x = ins[0]
    if x is not None:
        if len(x) != 4:
            raise Mismatch(f"data: expected 4-d NCHW, got {x}")
        if x[1] % g:
            raise Mismatch(f"data: channels {x[1]} not divisible by num_group={g}")
        assign(ins, 1, (f, x[1] // g) + k, "weight")
        oh = (x[2] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
        ow = (x[3] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
        if oh < 1 or ow < 1:
            raise Mismatch(f"data: spatial size {x[2:]} too small for kernel {k} "
                           f"(dilate {d}, pad {p})")
        assign(outs, 0, (x[0], f, oh, ow), "output")
    if not attrs["no_bias"]:
        assign(ins, 2, (f,), "bias")
    return ins, outs


def _conv_fwd(rc, attrs, ins, outs):
    k, s, d, p = _conv_geom(attrs)
    ck.conv2d_forward(rc.xp, ins[0], ins[1], s, p, d, attrs["num_group"], out=outs[0])
    if not attrs["no_bias"]:
        outs[0] += ins[2].reshape(1, -1, 1, 1)


def _conv_bwd_fwd(rc, attrs, ins, outs):
    k, s, d, p = _conv_geom(attrs)
    og, x, w = ins
    ck.conv2d_backward(rc.xp, og, x, w, s, p, d, attrs["num_group"], dx=outs[0], dw=outs[1])
    if not attrs["no_bias"]:
        rc.xp.sum(og, axis=(0, 2, 3), out=outs[2])


register(OpDef("Convolution", params=_CONV_PARAMS, arguments=_fc_args, forward=_conv_fwd,
               infer_shape=_conv_shape,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_Convolution", [og[0], node.inputs[0], node.inputs[1]], node,
                   len(node.inputs)),
               doc="2-d convolution (NCHW), weight (num_filter, C/num_group, kh, kw)."))
register(OpDef("_backward_Convolution", params=_CONV_PARAMS,
               arguments=("out_grad", "data", "weight"), outputs=_fc_args,
               forward=_conv_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               is_backward=True, doc="Gradients of Convolution."))


# --------------------------------------------------------------------- Pooling
_POOL_PARAMS = {"kernel": Param(Shape, ()), "pool_type": Param(Choice("max", "avg", "sum"), "max"),
                "stride": Param(Shape, ()), "pad": Param(Shape, ()),
                "global_pool": Param(Bool, False),
                "pooling_convention": Param(Choice("valid", "full"), "valid")}


def _pool_geom(attrs, hw):
    if attrs["global_pool"]:
        return tuple(hw), (1, 1), (0, 0)
    if len(attrs["kernel"]) != 2:
        raise Mismatch(f"expected a 2-d kernel, got kernel={attrs['kernel']}")
    return _pair(attrs["kernel"], None), _pair(attrs["stride"], (1, 1)), \
        _pair(attrs["pad"], (0, 0))


def _pool_out(attrs, hw):
    k, s, p = _pool_geom(attrs, hw)
    full = attrs["pooling_convention"] == "full"
    o = []
    for i in range(2):
        span = hw[i] + 2 * p[i] - k[i]
        if span < 0:
            raise Mismatch(f"data: spatial size {tuple(hw)} smaller than kernel {k} "
                           f"with pad {p}")
        o.append(1 + (-(-span // s[i]) if full else span // s[i]))
    return k, s, p, tuple(o)


def _pool_shape(attrs, ins, outs):
    x = ins[0]
    if x is not None:
        if len(x) != 4:
            raise Mismatch(f"data: expected 4-d NCHW, got {x}")
        assign(outs, 0, tuple(x[:2]) + _pool_out(attrs, x[2:])[3], "output")
    return ins, outs


def _pool_fwd(rc, attrs, ins, outs):
    k, s, p, o = _pool_out(attrs, ins[0].shape[2:])
    ck.pool2d_forward(rc.xp, ins[0], k, s, p, attrs["pool_type"], o, out=outs[0])


def _pool_bwd_fwd(rc, attrs, ins, outs):
    og, x = ins
    k, s, p, o = _pool_out(attrs, x.shape[2:])
    ck.pool2d_backward(rc.xp, og, x, k, s, p, attrs["pool_type"], o, dx=outs[0])


register(OpDef("Pooling", params=_POOL_PARAMS, forward=_pool_fwd, infer_shape=_pool_shape,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_Pooling", [og[0], node.inputs[0]], node, 1),
               doc="2-d max/avg/sum pooling (NCHW); global_pool pools the whole plane."))
register(OpDef("_backward_Pooling", params=_POOL_PARAMS, arguments=("out_grad", "data"),
               forward=_pool_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               is_backward=True, doc="Gradient of Pooling (max: to the first maximum)."))


# ------------------------------------------------------- Activation, LeakyReLU
def _same(attrs, ins, outs):
    return same_shape(attrs, ins, outs)


def _act_fwd(rc, attrs, ins, outs):
    xp, x, out, t = rc.xp, ins[0], outs[0], attrs["act_type"]
    if t == "relu":
        xp.maximum(x, 0, out=out)
    elif t == "tanh":
        xp.tanh(x, out=out)
    elif t == "softrelu":
        xp.logaddexp(x, 0, out=out)
    else:
        xp.negative(x, out=out)
        xp.exp(out, out=out)
        out += 1
        xp.reciprocal(out, out=out)


def _act_bwd_fwd(rc, attrs, ins, outs):
    xp, (g, y), t = rc.xp, ins, attrs["act_type"]
    if t == "relu":
        r = y > 0
    elif t == "tanh":
        r = 1 - y * y
    elif t == "softrelu":
        r = -xp.expm1(-y)
    else:
        r = y * (1 - y)
    xp.multiply(g, r, out=outs[0])


_ACT = {"act_type": Param(Choice("relu", "sigmoid", "tanh", "softrelu"))}
register(OpDef("Activation", params=_ACT, forward=_act_fwd, infer_shape=_same,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_Activation", [og[0], (node, 0)], node, 1),
               inplace=[(0, 0)], doc="relu, sigmoid, tanh or softrelu (log(1 + e^x))."))
register(OpDef("_backward_Activation", params=_ACT, arguments=("out_grad", "output"),
               forward=_act_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               inplace=[(0, 0), (1, 0)], is_backward=True,
               doc="Gradient of Activation, computed from its output."))


def _slope(v):
    v = Float(v)
    if v < 0:
        raise ValueError(f"slope must be >= 0, got {v}")
    return v


_LEAKY = {"act_type": Param(Choice("leaky", "elu"), "leaky"), "slope": Param(_slope, 0.25)}


def _leaky_fwd(rc, attrs, ins, outs):
    xp, x, a = rc.xp, ins[0], attrs["slope"]
    neg = x * a if attrs["act_type"] == "leaky" else xp.expm1(x) * a
    xp.copyto(outs[0], xp.where(x > 0, x, neg))


def _leaky_bwd_fwd(rc, attrs, ins, outs):
    xp, (g, y), a = rc.xp, ins, attrs["slope"]
    r = xp.where(y > 0, 1, a) if attrs["act_type"] == "leaky" else xp.where(y > 0, 1, y + a)
    xp.multiply(g, r.astype(g.dtype, copy=False), out=outs[0])


register(OpDef("LeakyReLU", params=_LEAKY, forward=_leaky_fwd, infer_shape=_same,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_LeakyReLU", [og[0], (node, 0)], node, 1),
               inplace=[(0, 0)],
               doc="leaky: x if x > 0 else slope * x; elu: slope * (e^x - 1) for x <= 0."))
register(OpDef("_backward_LeakyReLU", params=_LEAKY, arguments=("out_grad", "output"),
               forward=_leaky_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               inplace=[(0, 0), (1, 0)], is_backward=True, doc="Gradient of LeakyReLU."))


# ------------------------------------------------------------------- BatchNorm
_BN = {"eps": Param(Float, 1e-3), "momentum": Param(Float, 0.9),
       "fix_gamma": Param(Bool, True), "use_global_stats": Param(Bool, False),
       "output_mean_var": Param(Bool, False), "axis": Param(Int, 1)}


def _bn_shape(attrs, ins, outs):
    x = ins[0]
    if x is not None:
        if not -len(x) <= attrs["axis"] < len(x):
            raise Mismatch(f"axis={attrs['axis']} out of range for data {x}")
        c = (x[attrs["axis"] % len(x)],)
        for i, nm in enumerate(("gamma", "beta", "moving_mean", "moving_var")):
            assign(ins, i + 1, c, nm)
        assign(outs, 0, tuple(x), "output")
        assign(outs, 1, c, "mean")
        assign(outs, 2, c, "var")
    return ins, outs


def _bn_axes(attrs, nd):
    ax = attrs["axis"] % nd
    return ax, tuple(i for i in range(nd) if i != ax)


def _bshape(c, ax, nd):
    return tuple(c if i == ax else 1 for i in range(nd))


def _bn_fwd_impl(rc, attrs, ins, outs, relu):
    xp = rc.xp
    x, gamma, beta, mm, mv = ins
    out, mean, var = outs
    ax = attrs["axis"] % x.ndim
    if ax != 1:
        # channels not on axis 1: move them there (a copy), compute, move back
        moved = [xp.moveaxis(a, ax, 1) for a in (x, out)]
        tmp = xp.empty(moved[0].shape, dtype=out.dtype)
        _bn_fwd_impl(rc, dict(attrs, axis=1), [xp.ascontiguousarray(moved[0]), gamma, beta,
                                                mm, mv], [tmp, mean, var], relu)
        moved[1][...] = tmp
        return
    if rc.is_train and not attrs["use_global_stats"]:
        bmean, bvar = ck.bn_train_stats(xp, x)
        mean[...] = bmean
        var[...] = bvar
        m = attrs["momentum"]
        mm *= m
        mm += (1 - m) * mean
        mv *= m
        mv += (1 - m) * var
    else:
        mean[...] = mm
        var[...] = mv
    scale = 1 / xp.sqrt(var + attrs["eps"])
    if not attrs["fix_gamma"]:
        scale *= gamma
    ck.bn_apply(xp, x, scale, beta - mean * scale, out, relu)


def _bn_bwd_impl(rc, attrs, ins, outs, relu):
    xp = rc.xp
    g, x, gamma, mean, var = ins[:5]
    y = ins[5] if relu else None
    dx, dgamma, dbeta = outs
    ax = attrs["axis"] % x.ndim
    if ax != 1:
        mv = [xp.ascontiguousarray(xp.moveaxis(a, ax, 1)) for a in [g, x] + ([y] if relu else [])]
        tmp = xp.empty(mv[1].shape, dtype=dx.dtype)
        _bn_bwd_impl(rc, dict(attrs, axis=1), mv[:2] + [gamma, mean, var] + mv[2:],
                     [tmp, dgamma, dbeta], relu)
        xp.moveaxis(dx, ax, 1)[...] = tmp
        return
    invstd = 1 / xp.sqrt(var + attrs["eps"])
    gscale = xp.ones_like(invstd) if attrs["fix_gamma"] else gamma
    dg, db = ck.bn_backward(xp, g, x, mean, invstd, gscale, dx, y,
                            global_stats=attrs["use_global_stats"])
    dbeta[...] = db
    if attrs["fix_gamma"]:
        dgamma.fill(0)
    else:
        dgamma[...] = dg


def _bn_fwd(rc, attrs, ins, outs):
    _bn_fwd_impl(rc, attrs, ins, outs, False)


def _bn_bwd_fwd(rc, attrs, ins, outs):
    _bn_bwd_impl(rc, attrs, ins, outs, False)


def _bn_relu_fwd(rc, attrs, ins, outs):
    _bn_fwd_impl(rc, attrs, ins, outs, True)


def _bn_relu_bwd_fwd(rc, attrs, ins, outs):
    _bn_bwd_impl(rc, attrs, ins, outs, True)


def _bn_outputs(a):
    return ["output", "mean", "var"] if a["output_mean_var"] else ["output"]


def _bn_hidden(a):
    return 0 if a["output_mean_var"] else 2


register(OpDef("BatchNorm", params=_BN, arguments=("data", "gamma", "beta"),
               aux=("moving_mean", "moving_var"), outputs=_bn_outputs, hidden=_bn_hidden,
               forward=_bn_fwd, infer_shape=_bn_shape, mutates_aux=True,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_BatchNorm", [og[0], node.inputs[0], node.inputs[1], (node, 1),
                                           (node, 2)], node, 3),
               doc="Batch normalization over all axes but ``axis``; training updates the "
                   "aux states moving_mean/moving_var with ``momentum``."))
register(OpDef("_backward_BatchNorm", params=_BN,
               arguments=("out_grad", "data", "gamma", "mean", "var"),
               outputs=("data", "gamma", "beta"), forward=_bn_bwd_fwd, infer_shape=bwd_shape,
               infer_type=grad_type, is_backward=True, doc="Gradients of BatchNorm."))
register(OpDef("_BatchNormReLU", params=_BN, arguments=("data", "gamma", "beta"),
               aux=("moving_mean", "moving_var"), outputs=_bn_outputs, hidden=_bn_hidden,
               forward=_bn_relu_fwd, infer_shape=_bn_shape, mutates_aux=True,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_BatchNormReLU", [og[0], node.inputs[0], node.inputs[1], (node, 1),
                                               (node, 2), (node, 0)], node, 3),
               doc="relu(BatchNorm(data)) in one op (made by fuse_batchnorm_relu); the aux "
                   "states, outputs and parameters are BatchNorm's."))
register(OpDef("_backward_BatchNormReLU", params=_BN,
               arguments=("out_grad", "data", "gamma", "mean", "var", "output"),
               outputs=("data", "gamma", "beta"), forward=_bn_relu_bwd_fwd,
               infer_shape=bwd_shape, infer_type=grad_type, is_backward=True,
               doc="Gradients of _BatchNormReLU (the ReLU mask read from its output)."))


# --------------------------------------------------------------------- Dropout
_DROP = {"p": Param(Float, 0.5), "mode": Param(Choice("training", "always"), "training")}


def _drop_shape(attrs, ins, outs):
    if not 0 <= attrs["p"] < 1:
        raise Mismatch(f"p must be in [0, 1), got {attrs['p']}")
    return _same(attrs, ins, outs)


def _drop_fwd(rc, attrs, ins, outs):
    xp, x, (out, mask), p = rc.xp, ins[0], outs, attrs["p"]
    if (rc.is_train or attrs["mode"] == "always") and p > 0:
        u = rc.rng.random(x.shape)
        xp.greater_equal(u, p, out=mask, casting="unsafe")
        mask *= 1.0 / (1.0 - p)
        xp.multiply(x, mask, out=out)
    else:
        mask.fill(1)
        copy_into(xp, out, x)


register(OpDef("Dropout", params=_DROP, outputs=("output",), hidden=1, forward=_drop_fwd,
               infer_shape=_drop_shape, uses_rng=True, inplace=[(0, 0)],
               gradient=lambda node, og: [(make_node("elemwise_mul", [og[0], (node, 1)]), 0)],
               doc="Zero each element with probability p in training (scaling the rest by "
                   "1/(1-p)); identity at inference. The mask is a hidden output."))
