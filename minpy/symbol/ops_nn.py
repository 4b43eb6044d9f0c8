"""Neural-network layer operators: FullyConnected, Convolution, Pooling,
Activation, LeakyReLU, BatchNorm, Dropout, and their backward ops.

Convolution and pooling are 2-d, NCHW.  Convolution is im2col + GEMM: the
window columns (C*kh*kw, N*OH*OW) are built with one strided copy per kernel
position, the forward and both gradients are single matrix products, and the
input gradient goes back with one strided add per kernel position (col2im).
Pooling runs one elementwise pass per kernel position over strided slices.
"""
import math

from .registry import (same_shape, Bool, Choice, Float, Int, Mismatch, OpDef, Param, Shape, assign,
                       bwd_shape, copy_into, grad_type, make_node, register)

__all__ = []


def _bwd_entries(name, inputs, node, n):
    b = make_node(name, inputs, node.attrs, fwd=node)
    return [(b, i) for i in range(n)]


def _pair(v, default):
    v = tuple(v) if v else default
    return v if len(v) == 2 else (v[0],) * 2


def _pad(xp, x, p, extra=(0, 0), value=0):
    if not any(p) and not any(extra):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (p[0], p[0] + extra[0]), (p[1], p[1] + extra[1])),
                  constant_values=value)


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


def _window_slices(a, b, k_d, s, oh, ow):
    """The (oh, ow) strided slice of a padded plane that kernel position (a, b) reads."""
    return (slice(a * k_d[0], a * k_d[0] + s[0] * (oh - 1) + 1, s[0]),
            slice(b * k_d[1], b * k_d[1] + s[1] * (ow - 1) + 1, s[1]))


def _im2col(xp, xpad, k, s, d, oh, ow):
    """Window columns (C*kh*kw, N*OH*OW), C-contiguous: one strided copy per kernel
    position (a tensordot on a 6-d window view copies it several times slower)."""
    n, c = xpad.shape[:2]
    cols = xp.empty((c, k[0], k[1], n, oh, ow), dtype=xpad.dtype)
    for a in range(k[0]):
        for b in range(k[1]):
            sa, sb = _window_slices(a, b, d, s, oh, ow)
            cols[:, a, b] = xpad[:, :, sa, sb].transpose(1, 0, 2, 3)
    return cols.reshape(c * k[0] * k[1], n * oh * ow)


def _conv_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    k, s, d, p = _conv_geom(attrs)
    x, w, out = ins[0], ins[1], outs[0]
    g = attrs["num_group"]
    n, oh, ow = x.shape[0], out.shape[2], out.shape[3]
    xpad = _pad(xp, x, p)
    cg, fg = x.shape[1] // g, w.shape[0] // g
    for i in range(g):
        cols = _im2col(xp, xpad[:, i * cg:(i + 1) * cg], k, s, d, oh, ow)
        r = w[i * fg:(i + 1) * fg].reshape(fg, -1) @ cols        # (F/g, N*OH*OW)
        out[:, i * fg:(i + 1) * fg] = r.reshape(fg, n, oh, ow).transpose(1, 0, 2, 3)
    if not attrs["no_bias"]:
        out += ins[2].reshape(1, -1, 1, 1)


def _conv_bwd_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    k, s, d, p = _conv_geom(attrs)
    og, x, w = ins
    dx, dw = outs[0], outs[1]
    g = attrs["num_group"]
    n, (oh, ow) = x.shape[0], og.shape[2:]
    xpad = _pad(xp, x, p)
    cg, fg = x.shape[1] // g, w.shape[0] // g
    dxpad = xp.zeros(xpad.shape, dtype=dx.dtype)
    for i in range(g):
        cs = slice(i * cg, (i + 1) * cg)
        cols = _im2col(xp, xpad[:, cs], k, s, d, oh, ow)
        ogi = og[:, i * fg:(i + 1) * fg].transpose(1, 0, 2, 3).reshape(fg, -1)
        wi = w[i * fg:(i + 1) * fg].reshape(fg, -1)
        dw[i * fg:(i + 1) * fg] = (ogi @ cols.T).reshape(dw[i * fg:(i + 1) * fg].shape)
        # col2im: the window columns' gradient, added back one kernel position at a time
        dcols = (wi.T @ ogi).reshape(cg, k[0], k[1], n, oh, ow)
        for a in range(k[0]):
            for b in range(k[1]):
                sa, sb = _window_slices(a, b, d, s, oh, ow)
                dxpad[:, cs, sa, sb] += dcols[:, a, b].transpose(1, 0, 2, 3)
    dx[...] = dxpad[:, :, p[0]:p[0] + x.shape[2], p[1]:p[1] + x.shape[3]]
    if not attrs["no_bias"]:
        xp.sum(og, axis=(0, 2, 3), out=outs[2])


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


def _pool_padded(xp, attrs, x):
    k, s, p, (oh, ow) = _pool_out(attrs, x.shape[2:])
    extra = tuple(max(0, (o - 1) * s[i] + k[i] - (x.shape[2 + i] + 2 * p[i]))
                  for i, o in enumerate((oh, ow)))
    fill = -xp.inf if attrs["pool_type"] == "max" else 0
    return _pad(xp, x, p, extra, fill), k, s, p, oh, ow


def _slices(a, b, s, oh, ow):
    """The index of the (oh, ow) strided slice pooling position (a, b) reads."""
    return (slice(None), slice(None)) + _window_slices(a, b, (1, 1), s, oh, ow)


def _pool_into(xp, xpad, k, s, oh, ow, kind, out):
    """Pool by kernel position: k[0] * k[1] elementwise passes over strided slices
    (a reduction over the small window axes of a 6-d strided view is far slower)."""
    out[...] = xpad[_slices(0, 0, s, oh, ow)]
    combine = xp.maximum if kind == "max" else xp.add
    for a in range(k[0]):
        for b in range(k[1]):
            if a or b:
                combine(out, xpad[_slices(a, b, s, oh, ow)], out=out)
    if kind == "avg":
        out *= 1.0 / (k[0] * k[1])


def _pool_fwd(rc, attrs, ins, outs):
    xpad, k, s, p, oh, ow = _pool_padded(rc.xp, attrs, ins[0])
    _pool_into(rc.xp, xpad, k, s, oh, ow, attrs["pool_type"], outs[0])


def _pool_bwd_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    og, x = ins
    xpad, k, s, p, oh, ow = _pool_padded(xp, attrs, x)
    dxpad = xp.zeros(xpad.shape, dtype=outs[0].dtype)
    kind = attrs["pool_type"]
    if kind == "max":
        # the gradient goes to the first maximum of each window (row-major order)
        best = xp.empty(og.shape, dtype=xpad.dtype)
        _pool_into(xp, xpad, k, s, oh, ow, "max", best)
        free = xp.ones(og.shape, dtype=bool)
        for a in range(k[0]):
            for b in range(k[1]):
                hit = xpad[_slices(a, b, s, oh, ow)] == best
                hit &= free
                free &= ~hit
                dxpad[_slices(a, b, s, oh, ow)] += og * hit
    else:
        c = og * (1.0 / (k[0] * k[1])) if kind == "avg" else og
        for a in range(k[0]):
            for b in range(k[1]):
                dxpad[_slices(a, b, s, oh, ow)] += c
    outs[0][...] = dxpad[:, :, p[0]:p[0] + x.shape[2], p[1]:p[1] + x.shape[3]]


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


def _acc(xp, x):
    """The accumulator dtype of BatchNorm's reductions: float64 below float64 (NumPy
    sums non-contiguous axes element by element, losing ~3 digits in float32)."""
    return xp.float64 if x.dtype.itemsize < 8 else x.dtype


def _bn_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    x, gamma, beta, mm, mv = ins
    out, mean, var = outs
    ax, red = _bn_axes(attrs, x.ndim)
    if rc.is_train and not attrs["use_global_stats"]:
        acc = _acc(xp, x)
        mean[...] = xp.mean(x, axis=red, dtype=acc)
        var[...] = xp.var(x, axis=red, dtype=acc)
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
    shift = beta - mean * scale
    bs = _bshape(x.shape[ax], ax, x.ndim)
    xp.multiply(x, scale.reshape(bs), out=out)
    out += shift.reshape(bs)


def _bn_bwd_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    g, x, gamma, mean, var = ins
    dx, dgamma, dbeta = outs
    ax, red = _bn_axes(attrs, x.ndim)
    bs = _bshape(x.shape[ax], ax, x.ndim)
    invstd = 1 / xp.sqrt(var + attrs["eps"])
    xhat = (x - mean.reshape(bs)) * invstd.reshape(bs)
    acc = _acc(xp, g)
    dbeta[...] = xp.sum(g, axis=red, dtype=acc)
    dg = (g * xhat).sum(axis=red, dtype=acc).astype(dbeta.dtype)
    scale = invstd if attrs["fix_gamma"] else invstd * gamma
    if attrs["use_global_stats"]:
        xp.multiply(g, scale.reshape(bs), out=dx)
    else:
        m = x.size // x.shape[ax]
        t = g * m - dbeta.reshape(bs) - xhat * dg.reshape(bs)
        xp.multiply(t, (scale / m).reshape(bs), out=dx)
    if attrs["fix_gamma"]:
        dgamma.fill(0)
    else:
        dgamma[...] = dg


register(OpDef("BatchNorm", params=_BN, arguments=("data", "gamma", "beta"),
               aux=("moving_mean", "moving_var"),
               outputs=lambda a: ["output", "mean", "var"] if a["output_mean_var"] else
               ["output"], hidden=lambda a: 0 if a["output_mean_var"] else 2,
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
