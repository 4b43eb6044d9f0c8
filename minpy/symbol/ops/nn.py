"""Neural-network layer operators: FullyConnected, Convolution, Pooling,
Activation, LeakyReLU, BatchNorm, Dropout, and their backward ops, with
MXNet 1.9.1's parameters and semantics (``ignored_params``: the cuDNN and
workspace hints, accepted and ignored).

Convolution and pooling are 1-d (NCW, run as a 1-row 2-d plane) or 2-d
(NCHW); another ``layout`` is an error. Their kernels (shifted flat GEMMs,
vectorised pooling, numba BatchNorm) live in ``minpy.kernels.conv``.
``_BatchNormReLU`` is BatchNorm followed by a ReLU in one op (two passes
forward, two backward); the graph rewrite ``fuse_bn_relu`` introduces it.
"""
import math

import numpy

from ...kernels import conv as ck
from .mxnet_base import OptChoice, check_kernel_groups, erf
from ..registry import (matmul_into, same_shape, Bool, Choice, Float, Int, Mismatch, OpDef, OptInt, Param,
                       Shape, assign, bwd_shape, copy_into, grad_type, make_node, register)

__all__ = []


def _bwd_entries(name, inputs, node, n):
    b = make_node(name, inputs, node.attrs, fwd=node)
    return [(b, i) for i in range(n)]


def _pair(v, default):
    v = tuple(v) if v else default
    return v if len(v) == 2 else (v[0],) * 2




# -------------------------------------------------------------- FullyConnected
_FC_PARAMS = {"num_hidden": Param(Int), "no_bias": Param(Bool, False),
              "flatten": Param(Bool, True)}


def _fc_args(attrs):
    return ["data", "weight"] if attrs["no_bias"] else ["data", "weight", "bias"]


def _fc_shape(attrs, ins, outs):
    h, s, w, o = attrs["num_hidden"], ins[0], ins[1], outs[0]
    if s is None and w is not None and o is not None:
        # MXNet takes the batch size from the output (how Gluon's begin states,
        # _zeros(shape=(0, n)), get theirs); minpy has no partial shapes, so with
        # flatten the data is taken to be 2-d
        s = ins[0] = (o[0], w[1]) if attrs["flatten"] else tuple(o[:-1]) + (w[1],)
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
    matmul_into(xp, g2, w, outs[0])
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
_CUDNN = ("cudnn_tune", "cudnn_off", "workspace")     # hints that cannot change results
_CONV_PARAMS = {"kernel": Param(Shape), "num_filter": Param(Int), "stride": Param(Shape, ()),
                "dilate": Param(Shape, ()), "pad": Param(Shape, ()), "num_group": Param(Int, 1),
                "no_bias": Param(Bool, False),
                "layout": Param(OptChoice("NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"), None)}


def _check_layout(attrs, nd):
    """Only channel-first layouts exist here; others are a clear error."""
    want = {3: "NCW", 4: "NCHW", 5: "NCDHW"}.get(nd)
    if attrs["layout"] is not None and attrs["layout"] != want:
        raise Mismatch(f"layout={attrs['layout']} is not supported for {nd}-d data "
                       f"(minpy computes {want} only)")


def _conv_geom(attrs):
    """(kernel, stride, dilate, pad) as 2-d pairs: a 1-d op runs as (1, w) on (N, C, 1, W)."""
    if len(attrs["kernel"]) == 1:
        one = lambda v, d: (d,) + (tuple(v) if v else (d,))     # noqa: E731
        return (one(attrs["kernel"], 1), one(attrs["stride"], 1), one(attrs["dilate"], 1),
                one(attrs["pad"], 0))
    return (_pair(attrs["kernel"], None), _pair(attrs["stride"], (1, 1)),
            _pair(attrs["dilate"], (1, 1)), _pair(attrs["pad"], (0, 0)))


def _as2d(a, one_d):
    """An (N, C, W) array as (N, C, 1, W) (a view), for the 1-d ops."""
    return a.reshape(a.shape[:2] + (1,) + a.shape[2:]) if one_d else a


def _conv_shape(attrs, ins, outs):
    k, s, d, p = _conv_geom(attrs)
    nk = check_kernel_groups(attrs)
    f, g = attrs["num_filter"], attrs["num_group"]
    x, w, o = ins[0], ins[1], outs[0]
    if x is None and w is not None and o is not None and len(o) == nk + 2 \
            and all(v == 1 for v in s):
        # backward, as FullyConnected's: the data from the output and the weight (unique
        # at stride 1) -- how a convolutional RNN cell's h2h gets its begin state's shape,
        # _zeros(shape=(0, C, H, W)), which minpy's whole-shape inference cannot read
        x = ins[0] = (o[0], w[1] * g) + tuple(o[2 + i] - 2 * p[2 - nk + i]
                                              + d[2 - nk + i] * (k[2 - nk + i] - 1)
                                              for i in range(nk))
    if x is not None:
        if len(x) != nk + 2:
            raise Mismatch(f"data: expected {nk + 2}-d {'NCW' if nk == 1 else 'NCHW'} data "
                           f"for kernel={attrs['kernel']}, got {x}")
        _check_layout(attrs, len(x))
        if x[1] % g:
            raise Mismatch(f"data: channels {x[1]} not divisible by num_group={g}")
        assign(ins, 1, (f, x[1] // g) + tuple(attrs["kernel"]), "weight")
        hw = (1,) + tuple(x[2:]) if nk == 1 else tuple(x[2:])
        oh = (hw[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
        ow = (hw[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
        if oh < 1 or ow < 1:
            raise Mismatch(f"data: spatial size {tuple(x[2:])} too small for kernel "
                           f"{attrs['kernel']} (dilate {d[-nk:]}, pad {p[-nk:]})")
        assign(outs, 0, (x[0], f) + ((ow,) if nk == 1 else (oh, ow)), "output")
    if not attrs["no_bias"]:
        assign(ins, 2, (f,), "bias")
    return ins, outs


def _conv_fwd(rc, attrs, ins, outs):
    k, s, d, p = _conv_geom(attrs)
    one = len(attrs["kernel"]) == 1
    out = _as2d(outs[0], one)
    ck.conv2d_forward(rc.xp, _as2d(ins[0], one), _as2d(ins[1], one), s, p, d,
                      attrs["num_group"], out=out)
    if not attrs["no_bias"]:
        out += ins[2].reshape(1, -1, 1, 1)


def _conv_bwd_fwd(rc, attrs, ins, outs):
    k, s, d, p = _conv_geom(attrs)
    one = len(attrs["kernel"]) == 1
    og, x, w = (_as2d(a, one) for a in ins)
    ck.conv2d_backward(rc.xp, og, x, w, s, p, d, attrs["num_group"], dx=_as2d(outs[0], one),
                       dw=_as2d(outs[1], one))
    if not attrs["no_bias"]:
        rc.xp.sum(og, axis=(0, 2, 3), out=outs[2])


register(OpDef("Convolution", params=_CONV_PARAMS, arguments=_fc_args, forward=_conv_fwd,
               infer_shape=_conv_shape, ignored_params=_CUDNN,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_Convolution", [og[0], node.inputs[0], node.inputs[1]], node,
                   len(node.inputs)),
               doc="1-d (NCW) or 2-d (NCHW) convolution, weight (num_filter, C/num_group, "
                   "*kernel); cudnn_tune, cudnn_off and workspace are accepted and ignored."))
register(OpDef("_backward_Convolution", params=_CONV_PARAMS,
               arguments=("out_grad", "data", "weight"), outputs=_fc_args,
               forward=_conv_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               is_backward=True, doc="Gradients of Convolution."))


# --------------------------------------------------------------------- Pooling
def _opt_bool(v):
    return None if v is None or v == "None" else Bool(v)


def _p_value(v):
    v = OptInt(v)
    if v is not None and v < 1:
        raise ValueError(f"p_value must be a positive integer, got {v}")
    return v


_POOL_PARAMS = {"kernel": Param(Shape, ()),
                "pool_type": Param(Choice("max", "avg", "sum", "lp"), "max"),
                "stride": Param(Shape, ()), "pad": Param(Shape, ()),
                "global_pool": Param(Bool, False),
                "pooling_convention": Param(Choice("valid", "full", "same"), "valid"),
                "p_value": Param(_p_value, None), "count_include_pad": Param(_opt_bool, None),
                "layout": Param(OptChoice("NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"), None)}


def _pool_geom(attrs, hw):
    """(kernel, stride, pad) as 2-d pairs for the 2-d plane ``hw``."""
    if attrs["global_pool"]:
        return tuple(hw), (1, 1), (0, 0)
    nk = len(attrs["kernel"])
    if nk == 1:
        return ((1,) + tuple(attrs["kernel"]), (1,) + (tuple(attrs["stride"]) or (1,)),
                (0,) + (tuple(attrs["pad"]) or (0,)))
    return _pair(attrs["kernel"], None), _pair(attrs["stride"], (1, 1)), \
        _pair(attrs["pad"], (0, 0))


def _pool_out(attrs, hw):
    k, s, p = _pool_geom(attrs, hw)
    full = attrs["pooling_convention"] == "full"
    o = []
    for i in range(2):
        span = hw[i] + 2 * p[i] - k[i]
        if span < 0:
            raise Mismatch(f"data: kernel {tuple(attrs['kernel']) or k} exceeds the input "
                           f"plane {tuple(hw)} padded by {tuple(attrs['pad']) or p}")
        o.append(1 + (-(-span // s[i]) if full else span // s[i]))
    return k, s, p, tuple(o)


def _pool_check(attrs, x):
    nd, nk = len(x), len(attrs["kernel"])
    if attrs["pooling_convention"] == "same":
        raise Mismatch("pooling_convention='same' is not supported (MXNet 1.9.1 cannot run it "
                       "either: its pad check fails)")
    if nd not in (3, 4):
        raise Mismatch(f"data: expected 3-d NCW or 4-d NCHW data, got {x}")
    _check_layout(attrs, nd)
    if not attrs["global_pool"] and nk != nd - 2:
        raise Mismatch(f"kernel={attrs['kernel']} does not fit {nd}-d data {x}")
    if attrs["pool_type"] == "lp" and attrs["p_value"] is None:
        raise Mismatch("pool_type='lp' needs p_value")


def _plane(shape):
    return (1,) + tuple(shape[2:]) if len(shape) == 3 else tuple(shape[2:])


def _pool_shape(attrs, ins, outs):
    x = ins[0]
    if x is not None:
        _pool_check(attrs, x)
        o = _pool_out(attrs, _plane(x))[3]
        assign(outs, 0, tuple(x[:2]) + (o[1:] if len(x) == 3 else o), "output")
    return ins, outs


def _pool_counts(attrs, hw, k, s, p, o):
    """MXNet's avg divisor per output position, (OH, OW): the window clipped to
    the padded input, or to the input itself when count_include_pad is False."""
    inside = attrs["count_include_pad"] is False
    axes = []
    for i in range(2):
        start = numpy.arange(o[i]) * s[i] - p[i]
        end = numpy.minimum(start + k[i], hw[i] + p[i])
        if inside:
            start, end = numpy.maximum(start, 0), numpy.minimum(end, hw[i])
        axes.append(end - start)
    # a 'full' window wholly past the input sums nothing: MXNet leaves its 0 undivided
    return numpy.maximum(numpy.outer(axes[0], axes[1]), 1)


def _pool_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    one = ins[0].ndim == 3
    x, out = _as2d(ins[0], one), _as2d(outs[0], one)
    k, s, p, o = _pool_out(attrs, x.shape[2:])
    kind = attrs["pool_type"]
    if kind == "max":
        ck.pool2d_forward(xp, x, k, s, p, "max", o, out=out)
    elif kind == "lp":
        q = attrs["p_value"]
        ck.pool2d_forward(xp, x if q == 1 else x ** q, k, s, p, "sum", o, out=out)
        if q == 2:
            xp.sqrt(out, out=out)
        elif q == 3:
            xp.cbrt(out, out=out)
        elif q > 3:
            xp.power(out, out.dtype.type(1.0 / q), out=out)
    else:
        ck.pool2d_forward(xp, x, k, s, p, "sum", o, out=out)
        if kind == "avg":
            out /= rc.from_host(_pool_counts(attrs, x.shape[2:], k, s, p, o), out.dtype)


def _pool_bwd_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    one = ins[1].ndim == 3
    og, x, y = (_as2d(a, one) for a in ins)
    dx = _as2d(outs[0], one)
    k, s, p, o = _pool_out(attrs, x.shape[2:])
    kind = attrs["pool_type"]
    if kind == "max":
        ck.pool2d_backward(xp, og, x, k, s, p, "max", o, dx=dx)
    elif kind == "lp" and attrs["p_value"] > 1:
        # d/dx (sum x^q)^(1/q) = (x / out)^(q-1); MXNet gives 0 where out is 0
        q = attrs["p_value"]
        safe = xp.where(y == 0, 1, y)
        gy = xp.where(y == 0, 0, og / safe ** (q - 1))
        ck.pool2d_backward(xp, gy, x, k, s, p, "sum", o, dx=dx)
        dx *= x ** (q - 1)
    else:
        if kind == "avg":
            og = og / rc.from_host(_pool_counts(attrs, x.shape[2:], k, s, p, o), og.dtype)
        ck.pool2d_backward(xp, og, x, k, s, p, "sum", o, dx=dx)


register(OpDef("Pooling", params=_POOL_PARAMS, forward=_pool_fwd, infer_shape=_pool_shape,
               ignored_params=("cudnn_off",),
               gradient=lambda node, og: _bwd_entries(
                   "_backward_Pooling", [og[0], node.inputs[0], (node, 0)], node, 1),
               doc="1-d (NCW) / 2-d (NCHW) max, avg, sum or lp (p_value) pooling, valid or "
                   "full convention; global_pool pools the whole plane; avg divides by the "
                   "window clipped to the padded input (to the input without "
                   "count_include_pad), as MXNet."))
register(OpDef("_backward_Pooling", params=_POOL_PARAMS,
               arguments=("out_grad", "data", "output"), forward=_pool_bwd_fwd,
               infer_shape=bwd_shape, infer_type=grad_type, is_backward=True,
               doc="Gradient of Pooling (max: to the first maximum)."))


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
    elif t == "softsign":
        copy_into(xp, out, x / (1 + xp.abs(x)))
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
    elif t == "softsign":       # 1 / (1 + |x|)^2 from y = x / (1 + |x|)
        r = xp.square(1 - xp.abs(y))
    else:
        r = y * (1 - y)
    xp.multiply(g, r, out=outs[0])


def _act_grad(node, og):
    if node.attrs["act_type"] == "softsign":
        # softsign's own backward op: the elementwise fusion knows the other four only
        return [(make_node("_backward_softsign", [og[0], node.inputs[0], (node, 0)],
                           fwd=node), 0)]
    return _bwd_entries("_backward_Activation", [og[0], (node, 0)], node, 1)


_ACT = {"act_type": Param(Choice("relu", "sigmoid", "tanh", "softrelu", "softsign"))}
register(OpDef("Activation", params=_ACT, forward=_act_fwd, infer_shape=_same,
               gradient=_act_grad,
               inplace=[(0, 0)],
               doc="relu, sigmoid, tanh, softrelu (log(1 + e^x)) or softsign (x / (1 + |x|))."))
register(OpDef("_backward_Activation", params=_ACT, arguments=("out_grad", "output"),
               forward=_act_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               inplace=[(0, 0), (1, 0)], is_backward=True,
               doc="Gradient of Activation, computed from its output."))


def _slope(v):
    v = Float(v)
    if v < 0:
        raise ValueError(f"slope must be >= 0, got {v}")
    return v


_SELU_ALPHA, _SELU_LAMBDA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_LEAKY = {"act_type": Param(Choice("leaky", "elu", "prelu", "selu", "gelu", "rrelu"), "leaky"),
          "slope": Param(_slope, 0.25), "lower_bound": Param(Float, 0.125),
          "upper_bound": Param(Float, 0.334)}


def _leaky_args(attrs):
    return ["data", "gamma"] if attrs["act_type"] == "prelu" else ["data"]


def _leaky_outputs(attrs):
    return ["output", "mask"] if attrs["act_type"] == "rrelu" else ["output"]


def _leaky_shape(attrs, ins, outs):
    x = ins[0] if ins[0] is not None else outs[0]
    if x is not None:
        assign(ins, 0, tuple(x), "data")
        for i in range(len(outs)):
            assign(outs, i, tuple(x), "output" if i == 0 else "mask")
        if attrs["act_type"] == "prelu":
            g = ins[1]
            if g is None:
                assign(ins, 1, (x[1] if len(x) > 1 else 1,), "gamma")
            elif len(g) != 1 or g[0] not in (1, x[1] if len(x) > 1 else 1):
                raise Mismatch(f"gamma: expected ({x[1] if len(x) > 1 else 1},) or (1,) for "
                               f"data {tuple(x)}, got {tuple(g)}")
    return ins, outs


def _gamma_b(gamma, nd):
    """PReLU's gamma (C,) or (1,) laid along data axis 1 (MXNet's expand_shape)."""
    return gamma.reshape((1, -1) + (1,) * (nd - 2)) if nd > 1 else gamma


def _leaky_fwd(rc, attrs, ins, outs):
    xp, x, t, a = rc.xp, ins[0], attrs["act_type"], attrs["slope"]
    if t == "leaky":
        neg = x * x.dtype.type(a)
    elif t == "elu":
        neg = xp.expm1(x) * x.dtype.type(a)
    elif t == "prelu":
        neg = x * _gamma_b(ins[1], x.ndim)
    elif t == "selu":
        neg = xp.expm1(x) * x.dtype.type(_SELU_ALPHA)
    elif t == "gelu":
        copy_into(xp, outs[0], 0.5 * x * (1 + erf(xp, x / x.dtype.type(math.sqrt(2)))))
        return
    else:       # rrelu at inference: the mean slope (MXNet leaves its mask unset there)
        if rc.is_train:
            raise NotImplementedError("LeakyReLU act_type='rrelu' runs in inference only "
                                      "(its random training slopes are not implemented)")
        outs[1].fill((attrs["lower_bound"] + attrs["upper_bound"]) / 2)
        neg = x * outs[1]
    y = xp.where(x > 0, x, neg)
    if t == "selu":
        y = y * x.dtype.type(_SELU_LAMBDA)
    copy_into(xp, outs[0], y.astype(outs[0].dtype, copy=False))


def _leaky_bwd_args(attrs):
    t = attrs["act_type"]
    extra = {"prelu": ["data", "gamma"], "gelu": ["data"], "rrelu": ["mask"]}.get(t, [])
    return ["out_grad", "output"] + extra


def _leaky_bwd_fwd(rc, attrs, ins, outs):
    xp, g, y, t, a = rc.xp, ins[0], ins[1], attrs["act_type"], attrs["slope"]
    if t == "leaky":
        r = xp.where(y > 0, 1, a)
    elif t == "elu":
        r = xp.where(y > 0, 1, y + a)
    elif t == "selu":
        # MXNet 1.9.1's selu_grad, from the output: lambda * (alpha + y) below 0 (the exact
        # derivative is y + lambda * alpha; MXNet's is off by (lambda - 1) * y, kept)
        r = xp.where(y > 0, _SELU_LAMBDA, _SELU_LAMBDA * (_SELU_ALPHA + y))
    elif t == "gelu":
        x = ins[2]
        u = x / x.dtype.type(math.sqrt(2))
        r = 0.5 * (1 + erf(xp, u) + x * (2 / math.sqrt(math.pi)) * xp.exp(-u * u)
                   / math.sqrt(2))
    elif t == "rrelu":
        r = xp.where(y > 0, 1, ins[2])
    else:       # prelu
        x, gamma = ins[2], ins[3]
        gb = _gamma_b(gamma, x.ndim)
        r = xp.where(x > 0, 1, gb)
        dgam = xp.where(x > 0, 0, x) * g
        axes = tuple(i for i in range(x.ndim) if gamma.size == 1 or i != 1)
        copy_into(xp, outs[1], dgam.sum(axis=axes).reshape(outs[1].shape))
    xp.multiply(g, r, out=outs[0], casting="unsafe")


register(OpDef("LeakyReLU", params=_LEAKY, arguments=_leaky_args, outputs=_leaky_outputs,
               forward=_leaky_fwd, infer_shape=_leaky_shape,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_LeakyReLU", [og[0], (node, 0)] + (
                       {"prelu": list(node.inputs[:2]), "gelu": node.inputs[:1],
                        "rrelu": [(node, 1)]}.get(node.attrs["act_type"], [])),
                   node, len(node.inputs)),
               inplace=lambda a: [(0, 0)] if a["act_type"] in ("leaky", "elu", "selu") else [],
               doc="leaky: x if x > 0 else slope * x; elu: slope * (e^x - 1) below 0; prelu: "
                   "a learnt slope gamma per channel; selu; gelu (erf form); rrelu (inference "
                   "only): the mean of lower_bound and upper_bound, also its second output "
                   "``mask``."))
register(OpDef("_backward_LeakyReLU", params=_LEAKY, arguments=_leaky_bwd_args,
               outputs=_leaky_args, forward=_leaky_bwd_fwd, infer_shape=bwd_shape,
               infer_type=grad_type,
               inplace=lambda a: [(0, 0), (1, 0)] if a["act_type"] in ("leaky", "elu") else [],
               is_backward=True, doc="Gradient of LeakyReLU (MXNet's formulas)."))


# ------------------------------------------------------------------- BatchNorm
_BN = {"eps": Param(Float, 1e-3), "momentum": Param(Float, 0.9),
       "fix_gamma": Param(Bool, True), "use_global_stats": Param(Bool, False),
       "output_mean_var": Param(Bool, False), "axis": Param(Int, 1)}
# cuDNN's switch, and the calibration ranges only quantized graphs read
_BN_IGNORED = ("cudnn_off", "min_calib_range", "max_calib_range")


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
        m = attrs["momentum"]
        mm *= m
        mm += (1 - m) * mean
        mv *= m
        mv += ((1 - m) * bvar).astype(mv.dtype)
    else:
        mean[...] = mm
        bvar = mv
    # MXNet's third output holds 1 / sqrt(var + eps), not the variance
    var[...] = 1 / xp.sqrt(bvar + attrs["eps"])
    scale = var.copy()
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
    invstd = var                # the forward's third output is already 1 / sqrt(var + eps)
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
               ignored_params=_BN_IGNORED,
               gradient=lambda node, og: _bwd_entries(
                   "_backward_BatchNorm", [og[0], node.inputs[0], node.inputs[1], (node, 1),
                                           (node, 2)], node, 3),
               doc="Batch normalization over all axes but ``axis``; training updates the "
                   "aux states moving_mean/moving_var with ``momentum``.  With "
                   "output_mean_var the outputs are (out, mean, 1 / sqrt(var + eps)), as "
                   "MXNet's."))
register(OpDef("_backward_BatchNorm", params=_BN,
               arguments=("out_grad", "data", "gamma", "mean", "var"),
               outputs=("data", "gamma", "beta"), forward=_bn_bwd_fwd, infer_shape=bwd_shape,
               infer_type=grad_type, is_backward=True, doc="Gradients of BatchNorm."))
register(OpDef("_BatchNormReLU", params=_BN, arguments=("data", "gamma", "beta"),
               aux=("moving_mean", "moving_var"), outputs=_bn_outputs, hidden=_bn_hidden,
               forward=_bn_relu_fwd, infer_shape=_bn_shape, mutates_aux=True,
               ignored_params=_BN_IGNORED,
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
_DROP = {"p": Param(Float, 0.5), "mode": Param(Choice("training", "always"), "training"),
         "axes": Param(Shape, ())}


def _drop_shape(attrs, ins, outs):
    if not 0 <= attrs["p"] < 1:
        raise Mismatch(f"p must be in [0, 1), got {attrs['p']}")
    ins, outs = _same(attrs, ins, outs)
    if ins[0] is not None:
        for a in attrs["axes"]:
            if not -len(ins[0]) <= a < len(ins[0]):
                raise Mismatch(f"axes={attrs['axes']} out of range for data {ins[0]}")
    return ins, outs


def _drop_fwd(rc, attrs, ins, outs):
    xp, x, (out, mask), p = rc.xp, ins[0], outs, attrs["p"]
    if (rc.is_train or attrs["mode"] == "always") and p > 0:
        # ``axes``: one draw shared along those axes (variational dropout)
        shared = {a % x.ndim for a in attrs["axes"]}
        u = rc.rng.random(tuple(1 if i in shared else d for i, d in enumerate(x.shape)))
        mask[...] = xp.asarray(u >= p, dtype=mask.dtype) * mask.dtype.type(1.0 / (1.0 - p))
        xp.multiply(x, mask, out=out)
    else:
        mask.fill(1)
        copy_into(xp, out, x)


register(OpDef("Dropout", params=_DROP, outputs=("output",), hidden=1, forward=_drop_fwd,
               infer_shape=_drop_shape, uses_rng=True, inplace=[(0, 0)],
               ignored_params=("cudnn_off",),
               gradient=lambda node, og: [(make_node("elemwise_mul", [og[0], (node, 1)]), 0)],
               doc="Zero each element with probability p in training (scaling the rest by "
                   "1/(1-p)); ``axes``: the same draw along those axes; identity at "
                   "inference. The mask is a hidden output."))
