"""MXNet's layer operators beyond ``ops_nn``: ``LRN``, ``L2Normalization``,
``InstanceNorm``, ``LayerNorm``, ``UpSampling`` (nearest) and
``Deconvolution`` (1-d / 2-d, channel-first), with MXNet 1.9.1's parameters,
output lists and gradients.
"""
from ...kernels import conv as ck
from .mxnet_base import OptChoice, check_kernel_groups, backward_op, grad_by, norm_axis
from ..registry import (Bool, Choice, Float, Int, Mismatch, OpDef, Param, Shape, assign,
                       copy_into, register)

__all__ = []


def _as2d(a):
    """An (N, C, W) array as (N, C, 1, W) (a view); 4-d arrays as they are."""
    return a.reshape(a.shape[:2] + (1,) + a.shape[2:]) if a.ndim == 3 else a


# ------------------------------------------------------------------------- LRN
_LRN = {"alpha": Param(Float, 1e-4), "beta": Param(Float, 0.75), "knorm": Param(Float, 2.0),
        "nsize": Param(Int)}


def _channel_window_sum(xp, a, n):
    """Sum of ``a`` over channels c - n//2 .. c + n//2 (clipped), for every c (axis 1)."""
    h = n // 2
    c = xp.cumsum(xp.pad(a, ((0, 0), (h + 1, h)) + ((0, 0),) * (a.ndim - 2)), axis=1)
    return c[:, n:] - c[:, :-n]


def _lrn_shape(attrs, ins, outs):
    if attrs["nsize"] < 1 or attrs["nsize"] % 2 == 0:
        raise Mismatch(f"nsize must be a positive odd number, got {attrs['nsize']}")
    s = ins[0] if ins[0] is not None else outs[0]
    if s is not None:
        if len(s) != 4:
            raise Mismatch(f"data: expected 4-d NCHW data, got {s}")
        for box, i, what in ((ins, 0, "data"), (outs, 0, "output"), (outs, 1, "norm")):
            assign(box, i, tuple(s), what)
    return ins, outs


def _lrn_fwd(rc, attrs, ins, outs):
    xp, x, (out, norm) = rc.xp, ins[0], outs
    n = attrs["nsize"]
    s = _channel_window_sum(xp, x * x, n)
    norm[...] = attrs["knorm"] + (attrs["alpha"] / n) * s
    copy_into(xp, out, x * norm ** -attrs["beta"])


def _lrn_bwd(rc, attrs, ins, outs):
    xp, (g, x, norm) = rc.xp, ins
    n, b = attrs["nsize"], attrs["beta"]
    t = _channel_window_sum(xp, g * x * norm ** (-b - 1), n)
    copy_into(xp, outs[0], g * norm ** -b - (2 * attrs["alpha"] * b / n) * x * t)


backward_op("_backward_LRN", _LRN, ("out_grad", "data", "norm"), ("data",), _lrn_bwd,
            doc="Gradient of LRN.")
register(OpDef("LRN", params=_LRN, outputs=("output",), hidden=1, forward=_lrn_fwd,
               infer_shape=_lrn_shape,
               gradient=grad_by("_backward_LRN", [("in", 0), ("out", 1)]),
               doc="Local response normalization across channels: data / (knorm + alpha / "
                   "nsize * sum of squares over nsize neighbouring channels) ** beta."))


# ------------------------------------------------------------- L2Normalization
_L2N = {"eps": Param(Float, 1e-10), "mode": Param(Choice("instance", "channel", "spatial"),
                                                   "instance")}


def _l2n_axes(attrs, nd):
    mode = attrs["mode"]
    if mode == "instance":
        return tuple(range(1, nd))
    if nd < 3 and mode == "spatial":
        raise Mismatch(f"mode='spatial' needs data with spatial axes, got {nd}-d data")
    return (1,) if mode == "channel" else tuple(range(2, nd))


def _l2n_shape(attrs, ins, outs):
    s = ins[0] if ins[0] is not None else outs[0]
    if s is not None:
        if len(s) < 2:
            raise Mismatch(f"data: expected at least 2 dimensions, got {s}")
        _l2n_axes(attrs, len(s))
        assign(ins, 0, tuple(s), "data")
        assign(outs, 0, tuple(s), "output")
    return ins, outs


def _l2n_norm(xp, attrs, x):
    return xp.sqrt((x * x).sum(axis=_l2n_axes(attrs, x.ndim), keepdims=True) + attrs["eps"])


def _l2n_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], ins[0] / _l2n_norm(rc.xp, attrs, ins[0]))


def _l2n_bwd(rc, attrs, ins, outs):
    xp, (g, x, y) = rc.xp, ins
    ax = _l2n_axes(attrs, x.ndim)
    copy_into(xp, outs[0], (g - y * (g * y).sum(axis=ax, keepdims=True))
              / _l2n_norm(xp, attrs, x))


backward_op("_backward_L2Normalization", _L2N, ("out_grad", "data", "output"), ("data",),
            _l2n_bwd, doc="Gradient of L2Normalization.")
register(OpDef("L2Normalization", params=_L2N, forward=_l2n_fwd, infer_shape=_l2n_shape,
               gradient=grad_by("_backward_L2Normalization", [("in", 0), ("out", 0)]),
               doc="data / sqrt(sum(data^2) + eps) over all axes but the first (instance), "
                   "over axis 1 (channel) or over the spatial axes (spatial)."))


# ------------------------------------------------------- InstanceNorm, LayerNorm
def _norm_stats(xp, x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    return mean, xp.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)


def _norm_grads(xp, g, x, gamma_b, axes, eps, other):
    """(dx, dgamma, dbeta) of ``gamma * (x - mean) / std + beta`` over ``axes``;
    ``other``: the axes gamma is constant along."""
    mean, std = _norm_stats(xp, x, axes, eps)
    xhat = (x - mean) / std
    gh = g * gamma_b
    dx = (gh - gh.mean(axis=axes, keepdims=True)
          - xhat * (gh * xhat).mean(axis=axes, keepdims=True)) / std
    return dx, (g * xhat).sum(axis=other), g.sum(axis=other)


_IN = {"eps": Param(Float, 1e-3)}


def _in_shape(attrs, ins, outs):
    s = ins[0] if ins[0] is not None else outs[0]
    if s is not None:
        if len(s) < 3:
            raise Mismatch(f"data: expected (N, C, spatial...) data, got {s}")
        assign(ins, 0, tuple(s), "data")
        assign(outs, 0, tuple(s), "output")
        assign(ins, 1, (s[1],), "gamma")
        assign(ins, 2, (s[1],), "beta")
    return ins, outs


def _chan(a, nd):
    return a.reshape((1, -1) + (1,) * (nd - 2))


def _in_fwd(rc, attrs, ins, outs):
    xp, (x, gamma, beta) = rc.xp, ins
    mean, std = _norm_stats(xp, x, tuple(range(2, x.ndim)), attrs["eps"])
    copy_into(xp, outs[0], (x - mean) / std * _chan(gamma, x.ndim) + _chan(beta, x.ndim))


def _in_bwd(rc, attrs, ins, outs):
    xp, (g, x, gamma) = rc.xp, ins
    axes = tuple(range(2, x.ndim))
    dx, dg, db = _norm_grads(xp, g, x, _chan(gamma, x.ndim), axes, attrs["eps"],
                             (0,) + axes)
    for o, v in zip(outs, (dx, dg, db)):
        copy_into(xp, o, v)


backward_op("_backward_InstanceNorm", _IN, ("out_grad", "data", "gamma"),
            ("data", "gamma", "beta"), _in_bwd, doc="Gradients of InstanceNorm.")
register(OpDef("InstanceNorm", params=_IN, arguments=("data", "gamma", "beta"),
               forward=_in_fwd, infer_shape=_in_shape,
               gradient=grad_by("_backward_InstanceNorm", [("in", 0), ("in", 1)]),
               doc="Normalize each (sample, channel) over its spatial axes, then scale by "
                   "gamma and shift by beta (per channel)."))

_LN = {"axis": Param(Int, -1), "eps": Param(Float, 1e-5), "output_mean_var": Param(Bool, False)}


def _ln_outputs(attrs):
    return ["output", "mean", "std"] if attrs["output_mean_var"] else ["output"]


def _ln_shape(attrs, ins, outs):
    s = ins[0] if ins[0] is not None else outs[0]
    if s is not None:
        ax = norm_axis(attrs["axis"], len(s))
        assign(ins, 0, tuple(s), "data")
        assign(outs, 0, tuple(s), "output")
        assign(ins, 1, (s[ax],), "gamma")
        assign(ins, 2, (s[ax],), "beta")
        red = tuple(1 if i == ax else d for i, d in enumerate(s))
        assign(outs, 1, red, "mean")
        assign(outs, 2, red, "std")
    return ins, outs


def _along(a, ax, nd):
    return a.reshape(tuple(-1 if i == ax else 1 for i in range(nd)))


def _ln_fwd(rc, attrs, ins, outs):
    xp, (x, gamma, beta) = rc.xp, ins
    ax = attrs["axis"] % x.ndim
    mean, std = _norm_stats(xp, x, (ax,), attrs["eps"])
    copy_into(xp, outs[0], (x - mean) / std * _along(gamma, ax, x.ndim)
              + _along(beta, ax, x.ndim))
    copy_into(xp, outs[1], mean)
    copy_into(xp, outs[2], std)


def _ln_bwd(rc, attrs, ins, outs):
    xp, (g, x, gamma) = rc.xp, ins
    ax = attrs["axis"] % x.ndim
    other = tuple(i for i in range(x.ndim) if i != ax)
    dx, dg, db = _norm_grads(xp, g, x, _along(gamma, ax, x.ndim), (ax,), attrs["eps"], other)
    for o, v in zip(outs, (dx, dg, db)):
        copy_into(xp, o, v)


backward_op("_backward_LayerNorm", _LN, ("out_grad", "data", "gamma"),
            ("data", "gamma", "beta"), _ln_bwd,
            doc="Gradients of LayerNorm (the mean and std outputs pass none back, as MXNet).")
register(OpDef("LayerNorm", params=_LN, arguments=("data", "gamma", "beta"),
               outputs=_ln_outputs, hidden=lambda a: 0 if a["output_mean_var"] else 2,
               forward=_ln_fwd, infer_shape=_ln_shape,
               gradient=grad_by("_backward_LayerNorm", [("in", 0), ("in", 1)]),
               doc="Normalize along ``axis``, then scale by gamma and shift by beta; "
                   "output_mean_var also returns the mean and the std (sqrt(var + eps))."))


# ------------------------------------------------------------------ UpSampling
_UP = {"scale": Param(Int), "num_filter": Param(Int, 0),
       "sample_type": Param(Choice("nearest", "bilinear")),
       "multi_input_mode": Param(Choice("concat", "sum"), "concat"), "num_args": Param(Int)}


def _up_args(attrs):
    return [f"arg{i}" for i in range(attrs["num_args"])]


def _up_shape(attrs, ins, outs):
    if attrs["sample_type"] != "nearest":
        raise Mismatch("sample_type='bilinear' is not supported (only 'nearest')")
    if any(s is None for s in ins):
        return ins, outs
    first, k = ins[0], attrs["scale"]
    oh, ow = first[2] * k, first[3] * k
    chans = 0
    for i, s in enumerate(ins):
        if len(s) != 4:
            raise Mismatch(f"arg{i}: expected 4-d NCHW data, got {s}")
        if oh % s[2] or ow % s[3] or oh // s[2] != ow // s[3]:
            raise Mismatch(f"arg{i}: {s} does not divide the output size {(oh, ow)} evenly")
        if attrs["multi_input_mode"] == "sum":
            if chans and chans != s[1]:
                raise Mismatch(f"arg{i}: {s[1]} channels; multi_input_mode='sum' needs "
                               f"{chans}")
            chans = s[1]
        else:
            chans += s[1]
    assign(outs, 0, (first[0], chans, oh, ow), "output")
    return ins, outs


def _up_fwd(rc, attrs, ins, outs):
    xp, out = rc.xp, outs[0]
    c = 0
    for i, x in enumerate(ins):
        k = out.shape[2] // x.shape[2]
        up = xp.repeat(xp.repeat(x, k, axis=2), k, axis=3)
        if attrs["multi_input_mode"] == "sum" and len(ins) > 1:
            if i == 0:
                out[...] = up
            else:
                out += up
        else:
            out[:, c:c + x.shape[1]] = up
            c += x.shape[1]


def _up_bwd(rc, attrs, ins, outs):
    g, c = ins[0], 0
    for o in outs:
        k = g.shape[2] // o.shape[2]
        part = g if attrs["multi_input_mode"] == "sum" and len(outs) > 1 else \
            g[:, c:c + o.shape[1]]
        c += o.shape[1]
        n, ch, h, w = o.shape
        copy_into(rc.xp, o, part.reshape(n, ch, h, k, w, k).sum(axis=(3, 5)))


backward_op("_backward_UpSampling", _UP, ("out_grad",), _up_args, _up_bwd,
            doc="Gradient of UpSampling: each block of the head gradient summed.")
register(OpDef("UpSampling", params=_UP, arguments=_up_args, forward=_up_fwd,
               infer_shape=_up_shape, variadic="num_args", ignored_params=("workspace",),
               gradient=grad_by("_backward_UpSampling", []),
               doc="Nearest-neighbour upsampling by ``scale``; several inputs are each "
                   "upsampled to the first's output size, then concatenated along the "
                   "channels or summed (multi_input_mode)."))


# --------------------------------------------------------------- Deconvolution
_DECONV = {"kernel": Param(Shape), "num_filter": Param(Int), "stride": Param(Shape, ()),
           "dilate": Param(Shape, ()), "pad": Param(Shape, ()), "adj": Param(Shape, ()),
           "target_shape": Param(Shape, ()), "num_group": Param(Int, 1),
           "no_bias": Param(Bool, True),
           "layout": Param(OptChoice("NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"), None)}


def _deconv_args(attrs):
    return ["data", "weight"] if attrs["no_bias"] else ["data", "weight", "bias"]


def _geom2(attrs, key, default):
    v = tuple(attrs[key]) or (default,) * len(attrs["kernel"])
    if len(v) != len(attrs["kernel"]):
        raise Mismatch(f"{key}={attrs[key]} does not match kernel={attrs['kernel']}")
    return ((1 if key in ("kernel", "stride", "dilate") else 0),) + v if len(v) == 1 else v


def _deconv_geom(attrs, in_hw):
    """(kernel, stride, dilate, pad, adj, out_hw) as 2-d pairs; ``target_shape``
    chooses pad and adj as MXNet does."""
    k, s, d = _geom2(attrs, "kernel", 1), _geom2(attrs, "stride", 1), _geom2(attrs, "dilate", 1)
    p, a = _geom2(attrs, "pad", 0), _geom2(attrs, "adj", 0)
    if attrs["target_shape"]:
        t = tuple(attrs["target_shape"])
        t = (1,) + t if len(t) == 1 else t
        tot = [s[i] * (in_hw[i] - 1) + d[i] * (k[i] - 1) + 1 - t[i] for i in range(2)]
        if min(tot) < 0:
            raise Mismatch(f"target_shape={attrs['target_shape']} is larger than the "
                           "deconvolution can reach")
        p, a = tuple((v + 1) // 2 for v in tot), tuple(v % 2 for v in tot)
    if any(a[i] >= s[i] and a[i] for i in range(2)):
        raise Mismatch(f"adj={attrs['adj']} must be smaller than stride={attrs['stride']}")
    o = tuple(s[i] * (in_hw[i] - 1) + d[i] * (k[i] - 1) + 1 - 2 * p[i] + a[i] for i in range(2))
    return k, s, d, p, a, o


def _deconv_shape(attrs, ins, outs):
    nk = check_kernel_groups(attrs)
    f, g = attrs["num_filter"], attrs["num_group"]
    x = ins[0]
    if x is not None:
        want = {1: "NCW", 2: "NCHW"}[nk]
        if len(x) != nk + 2:
            raise Mismatch(f"data: expected {want} data for kernel={attrs['kernel']}, got {x}")
        if attrs["layout"] not in (None, want):
            raise Mismatch(f"layout={attrs['layout']} is not supported (only {want})")
        if x[1] % g:
            raise Mismatch(f"data: channels {x[1]} not divisible by num_group={g}")
        assign(ins, 1, (x[1], f // g) + tuple(attrs["kernel"]), "weight")
        hw = (1,) + tuple(x[2:]) if nk == 1 else tuple(x[2:])
        o = _deconv_geom(attrs, hw)[5]
        if min(o) < 1:
            raise Mismatch(f"data {x}: the output would be empty ({o})")
        assign(outs, 0, (x[0], f) + (o[1:] if nk == 1 else o), "output")
    if not attrs["no_bias"]:
        assign(ins, 2, (f,), "bias")
    return ins, outs


def _deconv_fwd(rc, attrs, ins, outs):
    xp = rc.xp
    x, w, out = _as2d(ins[0]), _as2d(ins[1]), _as2d(outs[0])
    k, s, d, p, a, o = _deconv_geom(attrs, x.shape[2:])
    # a deconvolution is the data gradient of the convolution it inverts
    shape_only = xp.broadcast_to(xp.zeros((), dtype=x.dtype), out.shape)
    ck.conv2d_backward(xp, x, shape_only, w, s, p, d, attrs["num_group"], dx=out,
                       need_dw=False)
    if not attrs["no_bias"]:
        out += ins[2].reshape(1, -1, 1, 1)


def _deconv_bwd(rc, attrs, ins, outs):
    xp = rc.xp
    g, x, w = (_as2d(v) for v in ins)
    k, s, d, p, a, o = _deconv_geom(attrs, x.shape[2:])
    ck.conv2d_forward(xp, g, w, s, p, d, attrs["num_group"], out=_as2d(outs[0]))
    ck.conv2d_backward(xp, x, g, w, s, p, d, attrs["num_group"], dw=_as2d(outs[1]),
                       need_dx=False)
    if not attrs["no_bias"]:
        xp.sum(g, axis=(0, 2, 3), out=outs[2])


backward_op("_backward_Deconvolution", _DECONV, ("out_grad", "data", "weight"), _deconv_args,
            _deconv_bwd, doc="Gradients of Deconvolution.")
register(OpDef("Deconvolution", params=_DECONV, arguments=_deconv_args, forward=_deconv_fwd,
               infer_shape=_deconv_shape, ignored_params=("cudnn_tune", "cudnn_off",
                                                          "workspace"),
               gradient=grad_by("_backward_Deconvolution", [("in", 0), ("in", 1)]),
               doc="1-d / 2-d transposed convolution (NCW / NCHW), weight (C, num_filter / "
                   "num_group, *kernel); ``adj`` adds output rows, ``target_shape`` picks "
                   "pad and adj; no bias by default (MXNet's)."))
