"""Output (loss) operators and softmax.

A loss operator's forward is the prediction (softmax probabilities, the
identity, the sigmoid) and its gradient is the loss gradient with respect to
its input -- softmax - onehot(label) for SoftmaxOutput -- whatever gradient
reaches its output (MXNet's convention: these ops end a network).
"""
import math

import numpy

from ..registry import (Bool, Choice, Float, Mismatch, OpDef, Param, assign, bwd_shape,
                       copy_into, grad_type, host_copy, make_node, register, same_shape,
                       same_type)

__all__ = []


def _bwd_entries(name, inputs, node, n):
    b = make_node(name, inputs, node.attrs, fwd=node)
    return [(b, i) for i in range(n)]


def softmax_into(xp, x, out, axis):
    """out = softmax(x) along ``axis`` (stable; ``out`` may alias ``x``)."""
    m = x.max(axis=axis, keepdims=True)
    xp.subtract(x, m, out=out)
    xp.exp(out, out=out)
    out /= out.sum(axis=axis, keepdims=True)


def _softmax_nd(xp, x, out, axis, flatten):
    """Softmax of ``x`` into ``out``; ``flatten``: over all axes but the first."""
    if not flatten or x.ndim <= 2:
        softmax_into(xp, x, out, axis)
        return
    r = xp.empty((x.shape[0], math.prod(x.shape[1:])), dtype=out.dtype)
    softmax_into(xp, x.reshape(r.shape), r, 1)
    copy_into(xp, out, r)


# ----------------------------------------------------------------- SoftmaxOutput
_SM = {"grad_scale": Param(Float, 1.0), "ignore_label": Param(Float, -1.0),
       "use_ignore": Param(Bool, False), "multi_output": Param(Bool, False),
       "normalization": Param(Choice("null", "batch", "valid"), "null"),
       "preserve_shape": Param(Bool, False), "out_grad": Param(Bool, False),
       "smooth_alpha": Param(Float, 0.0)}


def _sm_label_shapes(attrs, s):
    """The label shapes MXNet accepts for data shape ``s``, the inferred one first
    (a label of data's own shape is always accepted: probabilities)."""
    if attrs["multi_output"]:
        n, k = s[0], s[1]
        return [(n, math.prod(s) // n // k), (n,) + tuple(s[2:]), (n, 1) + tuple(s[2:])]
    return [tuple(s[:-1])]


def _sm_shape(attrs, ins, outs):
    s = ins[0]
    if s is not None:
        if len(s) < 2:
            raise Mismatch(f"data: expected at least 2 dims (batch, classes), got {s}")
        ok = _sm_label_shapes(attrs, s)
        lab = ins[1]
        if lab is None:
            ins[1] = ok[0]
        elif tuple(lab) != tuple(s) and tuple(lab) not in ok:
            raise Mismatch(f"label: expected {' or '.join(map(str, ok))} (or {tuple(s)}: "
                           f"probabilities), got {tuple(lab)}")
        assign(outs, 0, tuple(s), "output")
    return ins, outs


def _label_type(attrs, ins, outs):
    d, o = same_type(attrs, [ins[0]], outs)
    return [d[0], ins[1] if ins[1] is not None else d[0]], o


def _sm_fwd(rc, attrs, ins, outs):
    x = ins[0]
    if attrs["multi_output"]:
        softmax_into(rc.xp, x, outs[0], 1)
    elif attrs["preserve_shape"]:
        softmax_into(rc.xp, x, outs[0], -1)
    else:
        _softmax_nd(rc.xp, x, outs[0], 1, True)


def _check_labels(xp, attrs, lab, label_shape, nclass, func="SoftmaxOutput"):
    """Raise ValueError unless every label in ``lab`` (a view of the label array of
    ``label_shape``, in its order) is an integer in [0, nclass), or ``ignore_label``
    under use_ignore. MXNet casts labels to int unchecked: 7 or -1 with 4 classes
    would give softmax itself as the gradient, 1.5 would train class 1."""
    ok = (lab == xp.floor(lab)) & (lab >= 0) & (lab < nclass)      # NaN fails each test
    ignore = attrs["ignore_label"] if attrs["use_ignore"] else None
    if ignore is not None:
        ok |= lab == ignore
    if bool(host_copy(xp, ok.all())):
        return
    ok, lab = host_copy(xp, ok).reshape(-1), host_copy(xp, lab).reshape(-1)
    first = int(numpy.argmin(ok))                                  # the first False
    value = float(lab[first])
    where = tuple(int(i) for i in numpy.unravel_index(first, tuple(label_shape)))
    shown = f"{value:g}" if value == value else "nan"
    allowed = f"an integer class index in [0, {nclass})"
    if ignore is not None:
        allowed += f" or ignore_label {ignore:g}"
    raise ValueError(f"{func}: label {shown} at position {where} of the label "
                     f"array {tuple(label_shape)} is not {allowed} ({nclass} classes); "
                     f"{int((~ok).sum())} label(s) are out of range or not integers")


def _sm_bwd_fwd(rc, attrs, ins, outs):
    xp, p, label = rc.xp, ins[0], ins[1]
    dx, dl = outs
    scale = attrs["grad_scale"]
    if tuple(label.shape) == tuple(p.shape):        # probabilities as the label
        copy_into(xp, dx, (p - label) * p.dtype.type(scale) * (p if attrs["out_grad"] else 1))
        dl.fill(0)
        return
    multi = attrs["multi_output"]
    if multi:            # classes on axis 1 of (n, k, rest): move them last
        n, k = p.shape[0], p.shape[1]
        pm = xp.moveaxis(p.reshape(n, k, -1), 1, -1)
        lab = label.reshape(n, -1)
    else:
        rows = math.prod(p.shape[:-1]) if attrs["preserve_shape"] else p.shape[0]
        pm = p.reshape(rows, -1)
        lab = label.reshape(-1)[:rows]      # MXNet reads the first ``rows`` labels
    nclass = pm.shape[-1]
    _check_labels(xp, attrs, lab, label.shape, nclass)
    cls = lab.astype(numpy.int64)
    hit = xp.arange(nclass) == cls[..., None]
    alpha = 0.0 if multi else attrs["smooth_alpha"]
    if alpha:
        g = pm - xp.where(hit, 1 - alpha, alpha / (nclass - 1)).astype(pm.dtype)
    else:
        g = pm - hit
    ignored = cls == int(attrs["ignore_label"])
    if attrs["use_ignore"]:
        g = g * xp.logical_not(ignored)[..., None]
    norm = attrs["normalization"]
    count = {"batch": lab.shape[0] if multi else lab.size,
             "valid": max(int(lab.size - int(host_copy(xp, ignored.sum()))), 1)}.get(norm, 1)
    if multi and norm != "valid":
        count *= pm.shape[1]                # MXNet divides by the spatial size too
    g = g * p.dtype.type(scale / count)
    if multi:
        g = xp.moveaxis(g, -1, 1)
    g = g.reshape(p.shape)
    if attrs["out_grad"]:
        # MXNet 1.9.1 wires the output in where the head gradient belongs (its
        # _backward_SoftmaxOutput has no head-gradient input): scale by the output
        g = g * p
    copy_into(xp, dx, g)
    dl.fill(0)


register(OpDef("SoftmaxOutput", params=_SM, arguments=("data", "label"), forward=_sm_fwd,
               infer_shape=_sm_shape, infer_type=_label_type, inplace=[(0, 0)],
               gradient=lambda node, og: _bwd_entries(
                   "_backward_SoftmaxOutput", [(node, 0), node.inputs[1]], node, 2),
               doc="Softmax over classes (axis 1 with multi_output, the last axis with "
                   "preserve_shape, else data flattened to (N, -1)); its gradient is "
                   "(softmax - onehot(label)) * grad_scale / normalization (smooth_alpha "
                   "spreads alpha over the other classes; a label of data's shape is "
                   "probabilities), ignoring the head gradient; out_grad multiplies it by "
                   "the output, as MXNet 1.9.1 does."))
register(OpDef("_backward_SoftmaxOutput", params=_SM, arguments=("output", "label"),
               outputs=("data", "label"), forward=_sm_bwd_fwd, infer_shape=bwd_shape,
               infer_type=grad_type, inplace=[(0, 0)], is_backward=True,
               doc="softmax - onehot(label), scaled."))


# ------------------------------------------------------------- SoftmaxActivation
_SA = {"mode": Param(Choice("instance", "channel"), "instance")}


def _sa_axis(attrs):
    return -1 if attrs["mode"] == "instance" else 1


def _sa_fwd(rc, attrs, ins, outs):
    softmax_into(rc.xp, ins[0], outs[0], _sa_axis(attrs))


def _sa_bwd_fwd(rc, attrs, ins, outs):
    # MXNet 1.9.1 sums over axis 1 of an (n, c, rest) view in both modes: the exact
    # gradient in channel mode and for 2-d data, not for instance mode on N-d data
    xp, (g, y), dx = rc.xp, ins, outs[0]
    g3, y3 = g.reshape(g.shape[0], g.shape[1], -1), y.reshape(y.shape[0], y.shape[1], -1)
    copy_into(xp, dx, (y3 * (g3 - (g3 * y3).sum(axis=1, keepdims=True))).reshape(dx.shape))


register(OpDef("SoftmaxActivation", params=_SA, forward=_sa_fwd, infer_shape=same_shape,
               inplace=[(0, 0)],
               gradient=lambda node, og: _bwd_entries(
                   "_backward_SoftmaxActivation", [og[0], (node, 0)], node, 1),
               doc="Softmax over the last axis (instance, as MXNet's flat-to-2-d view) or "
                   "over axis 1 (channel); the gradient is MXNet's (see the backward op)."))
register(OpDef("_backward_SoftmaxActivation", params=_SA, arguments=("out_grad", "output"),
               forward=_sa_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               inplace=[(0, 0)], is_backward=True, doc="Gradient of SoftmaxActivation."))


# ------------------------------------------------------------ regression outputs
_REG = {"grad_scale": Param(Float, 1.0)}


def _reg_shape(attrs, ins, outs):
    s, lab = ins
    if s is not None:
        if lab is None or math.prod(lab) != math.prod(s) or len(s) < 1:
            assign(ins, 1, tuple(s), "label")
        assign(outs, 0, tuple(s), "output")
    return ins, outs


def _reg_fwd(kind):
    def forward(rc, attrs, ins, outs):
        xp, x, out = rc.xp, ins[0], outs[0]
        if kind == "logistic":
            xp.negative(x, out=out)
            xp.exp(out, out=out)
            out += 1
            xp.reciprocal(out, out=out)
        else:
            copy_into(xp, out, x)
    return forward


def _reg_bwd_fwd(kind):
    def forward(rc, attrs, ins, outs):
        xp, (y, label), (dx, dl) = rc.xp, ins, outs
        num_output = y.size // y.shape[0] if y.ndim else 1
        d = y - label.reshape(y.shape)
        if kind == "mae":
            d = xp.sign(d)
        xp.multiply(d, attrs["grad_scale"] / num_output, out=dx)
        dl.fill(0)
    return forward


for _n, _k, _doc in (("LinearRegressionOutput", "linear", "identity; L2 loss gradient"),
                     ("LogisticRegressionOutput", "logistic", "sigmoid; log-loss gradient"),
                     ("MAERegressionOutput", "mae", "identity; L1 loss gradient")):
    register(OpDef(_n, params=_REG, arguments=("data", "label"), forward=_reg_fwd(_k),
                   infer_shape=_reg_shape, infer_type=_label_type, inplace=[(0, 0)],
                   gradient=(lambda bname: lambda node, og: _bwd_entries(
                       bname, [(node, 0), node.inputs[1]], node, 2))(f"_backward_{_n}"),
                   doc=f"Regression output: forward {_doc} (out - label) * grad_scale / "
                       f"num_output per sample."))
    register(OpDef(f"_backward_{_n}", params=_REG, arguments=("output", "label"),
                   outputs=("data", "label"), forward=_reg_bwd_fwd(_k),
                   infer_shape=bwd_shape, infer_type=grad_type, inplace=[(0, 0)],
                   is_backward=True, doc=f"Gradient of {_n}."))


# --------------------------------------------------------------------- SVMOutput
_SVM = {"margin": Param(Float, 1.0), "regularization_coefficient": Param(Float, 1.0),
        "use_linear": Param(Bool, False)}


def _svm_shape(attrs, ins, outs):
    s = ins[0]
    if s is not None:
        if len(s) < 1:
            raise Mismatch(f"data: expected at least 1 dim (classes last), got {s}")
        assign(ins, 1, tuple(s[:-1]), "label")
        assign(outs, 0, tuple(s), "output")
    return ins, outs


def _svm_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], ins[0])


def _svm_bwd_fwd(rc, attrs, ins, outs):
    # MXNet's L1_SVM / L2_SVM (src/operator/svm_output.cc): data seen as (rows, classes),
    # one label per row; the head gradient is not read (this op ends a network)
    xp, (y, label), (dx, dl) = rc.xp, ins, outs
    src = y.reshape(-1, y.shape[-1]) if y.ndim else y.reshape(1, 1)
    lab = label.reshape(-1)
    _check_labels(xp, {"use_ignore": False, "ignore_label": -1.0}, lab, label.shape,
                  src.shape[1], "SVMOutput")
    hit = xp.arange(src.shape[1]) == lab.astype(numpy.int64)[:, None]
    margin, coef = float(attrs["margin"]), float(attrs["regularization_coefficient"])
    # the label's column is pushed above margin, the others below -margin (Python
    # scalars after the array: they keep its dtype)
    if attrs["use_linear"]:
        g = xp.where(hit, -(src < margin).astype(src.dtype), (src > -margin).astype(src.dtype))
    else:
        g = xp.where(hit, xp.minimum(src - margin, 0) * 2, xp.maximum(src + margin, 0) * 2)
    copy_into(xp, dx, (g * coef).reshape(dx.shape).astype(dx.dtype, copy=False))
    dl.fill(0)


register(OpDef("SVMOutput", params=_SVM, arguments=("data", "label"), forward=_svm_fwd,
               infer_shape=_svm_shape, infer_type=_label_type, inplace=[(0, 0)],
               gradient=lambda node, og: _bwd_entries(
                   "_backward_SVMOutput", [(node, 0), node.inputs[1]], node, 2),
               doc="Support vector machine output: forward is the identity; the gradient "
                   "is that of the L2-SVM hinge loss (use_linear: L1-SVM) with the label's "
                   "class above ``margin`` and the others below -``margin``, times "
                   "regularization_coefficient, ignoring the head gradient, as MXNet's. "
                   "Data (..., classes), label data.shape[:-1] of class indices."))
register(OpDef("_backward_SVMOutput", params=_SVM, arguments=("output", "label"),
               outputs=("data", "label"), forward=_svm_bwd_fwd, infer_shape=bwd_shape,
               infer_type=grad_type, inplace=[(0, 0)], is_backward=True,
               doc="Gradient of SVMOutput (MXNet's L1_SVM / L2_SVM)."))
