"""Shape-changing and reducing operators: Flatten, Reshape, Concat,
SliceChannel, sum, mean, dot, Embedding (and their backward ops)."""
import math

import numpy

from ..registry import (OPS, matmul_into, Axis, Bool, Int, Mismatch, OpDef, Param, Shape, assign,
                       bwd_shape, copy_into, grad_type, make_node, register, same_type)
from .elemwise import E
from .mxnet_base import DType, OptChoice

__all__ = ["reshape_shape"]


def _bwd(name, inputs, node, **attrs):
    return make_node(name, inputs, attrs, fwd=node)


# ------------------------------------------------------------ Flatten, Reshape
def _reshape_like_fwd(rc, attrs, ins, outs):
    copy_into(rc.xp, outs[0], ins[0].reshape(outs[0].shape))


def _reshape_grad(node, og):
    return [(_bwd("_backward_reshape", [og[0]], node), 0)]


register(OpDef("_backward_reshape", arguments=("out_grad",), forward=_reshape_like_fwd,
               infer_shape=bwd_shape, infer_type=grad_type, inplace=[(0, 0)], is_backward=True,
               doc="Reshape the gradient back to the forward input's shape."))


def _flatten_shape(attrs, ins, outs):
    if ins[0] is not None:
        s = ins[0]
        if len(s) < 1:
            raise Mismatch(f"data: expected at least 1 dimension, got {s}")
        assign(outs, 0, (s[0], math.prod(s[1:])), "output")
    return ins, outs


register(OpDef("Flatten", forward=_reshape_like_fwd, infer_shape=_flatten_shape,
               gradient=_reshape_grad, inplace=[(0, 0)],
               doc="Collapse all axes but the first: (N, d1, d2, ...) -> (N, d1*d2*...)."))


def reshape_shape(src, spec, reverse=False):
    """Target shape of MXNet ``Reshape(shape=spec, reverse=reverse)`` on input shape ``src``.

    Special values: 0 copies the input dim, -1 is inferred, -2 copies the
    remaining dims, -3 merges two input dims, -4 splits one into the next two
    values (one may be -1); ``reverse`` matches the codes from the right.
    Raises Mismatch when it does not fit (MXNet 1.9.1 skips the final size
    check and reads past the data; minpy refuses).
    """
    src0, spec0 = tuple(src), tuple(spec)
    if reverse:
        src, spec = src[::-1], spec[::-1]
    src, out, si, inf, i = list(src), [], 0, -1, 0
    bad = Mismatch(f"cannot reshape {src0} with shape={spec0}"
                   + (" (reverse=True)" if reverse else ""))
    try:
        while i < len(spec):
            p = spec[i]
            if p == 0:
                out.append(src[si])
                si += 1
            elif p == -1:
                if inf >= 0:
                    raise Mismatch(f"shape={spec0}: only one dimension can be -1")
                # MXNet puts the inferred size at the code's position in ``shape``,
                # which is not its output position after a -2/-3/-4 (kept as MXNet has it)
                inf = i
                out.append(1)
                si += 1
            elif p == -2:
                out.extend(src[si:])
                si = len(src)
            elif p == -3:
                out.append(src[si] * src[si + 1])
                si += 2
            elif p == -4:
                d, d0, d1 = src[si], spec[i + 1], spec[i + 2]
                if d0 == -1 and d1 == -1:
                    raise Mismatch(f"shape={spec0}: -4 cannot split into two -1")
                d0 = d // d1 if d0 == -1 else d0
                d1 = d // d0 if d1 == -1 else d1
                if d0 * d1 != d:
                    raise Mismatch(f"shape={spec0}: -4 split {d0}, {d1} does not multiply "
                                   f"to input dimension {d} of {src0}")
                out += [d0, d1]
                si += 1
                i += 2
            elif p > 0:
                out.append(p)
                si += 1
            else:
                raise Mismatch(f"shape={spec0}: invalid code {p} (the special codes are "
                               "0, -1, -2, -3, -4)")
            i += 1
    except IndexError:
        raise bad from None
    size = math.prod(src)
    if 0 <= inf < len(out):     # (past the end, MXNet's write is lost: the 1 stays)
        rest = math.prod(out)
        if rest == 0 or size % rest:
            raise bad
        out[inf] = size // rest
    if math.prod(out) != size:
        raise bad
    return tuple(out[::-1]) if reverse else tuple(out)


def _legacy_target(src, target, keep_highest):
    """MXNet's deprecated ``target_shape`` (one 0 is inferred) and ``keep_highest``."""
    out = list(target)
    if keep_highest:
        out[0] = src[0]
    zeros = [i for i in range(1 if keep_highest else 0, len(out)) if out[i] == 0]
    if len(zeros) == 1:
        out[zeros[0]] = 1
        out[zeros[0]] = math.prod(src) // math.prod(out)
    if math.prod(out) != math.prod(src):
        raise Mismatch(f"cannot reshape {tuple(src)} to target_shape={tuple(target)}")
    return tuple(out)


def _reshape_shape(attrs, ins, outs):
    if ins[0] is not None:
        if attrs["shape"]:
            o = reshape_shape(ins[0], attrs["shape"], attrs["reverse"])
        elif attrs["target_shape"]:
            o = _legacy_target(ins[0], attrs["target_shape"], attrs["keep_highest"])
        else:
            raise Mismatch("Reshape needs shape (or the deprecated target_shape)")
        assign(outs, 0, o, "output")
    return ins, outs


_RESHAPE = {"shape": Param(Shape, ()), "reverse": Param(Bool, False),
            "target_shape": Param(Shape, ()), "keep_highest": Param(Bool, False)}
register(OpDef("Reshape", params=_RESHAPE, forward=_reshape_like_fwd,
               infer_shape=_reshape_shape, gradient=_reshape_grad, inplace=[(0, 0)],
               doc="Reshape with MXNet's special values 0, -1, -2, -3, -4 (``reverse``: "
                   "matched from the right)."))


# ---------------------------------------------------------------------- Concat
def _args_names(attrs):
    return [f"arg{i}" for i in range(attrs["num_args"])]


def _concat_shape(attrs, ins, outs):
    known = [s for s in ins if s is not None]
    if not known:
        return ins, outs
    nd = len(known[0])
    dim = attrs["dim"] % nd if -nd <= attrs["dim"] < nd else None
    if dim is None:
        raise Mismatch(f"dim={attrs['dim']} out of range for {nd}-d inputs")
    for i, s in enumerate(ins):
        if s is not None and (len(s) != nd or any(a != b for k, (a, b) in
                                                  enumerate(zip(s, known[0])) if k != dim)):
            raise Mismatch(f"input {i}: expected {known[0]} except along dim {dim}, got {s}")
    if len(known) == len(ins):
        o = list(known[0])
        o[dim] = sum(s[dim] for s in ins)
        assign(outs, 0, tuple(o), "output")
    return ins, outs


def _concat_fwd(rc, attrs, ins, outs):
    rc.xp.concatenate(ins, axis=attrs["dim"], out=outs[0])


def _concat_bwd_fwd(rc, attrs, ins, outs):
    g, dim, k = ins[0], attrs["dim"] % ins[0].ndim, 0
    for o in outs:
        n = o.shape[dim]
        idx = (slice(None),) * dim + (slice(k, k + n),)
        o[...] = g[idx]
        k += n


register(OpDef("Concat", params={"num_args": Param(Int), "dim": Param(Int, 1)},
               arguments=_args_names, forward=_concat_fwd, infer_shape=_concat_shape,
               gradient=lambda node, og: [(b, i) for b in [_bwd(
                   "_backward_Concat", [og[0]], node, **node.attrs)] for i in range(len(
                       node.inputs))], variadic="num_args",
               doc="Concatenate ``num_args`` arrays along ``dim``."))
register(OpDef("_backward_Concat", params={"num_args": Param(Int), "dim": Param(Int, 1)},
               arguments=("out_grad",), outputs=_args_names, forward=_concat_bwd_fwd,
               infer_shape=bwd_shape, infer_type=grad_type, is_backward=True,
               doc="Split the gradient of Concat."))


# ---------------------------------------------------------------- SliceChannel
_SLICE_PARAMS = {"num_outputs": Param(Int), "axis": Param(Int, 1),
                 "squeeze_axis": Param(Bool, False)}


def _slice_outputs(attrs):
    return [f"output{i}" for i in range(attrs["num_outputs"])]


def _slice_shape(attrs, ins, outs):
    s, n = ins[0], attrs["num_outputs"]
    if s is not None:
        if not -len(s) <= attrs["axis"] < len(s):
            raise Mismatch(f"axis={attrs['axis']} out of range for data {s}")
        ax = attrs["axis"] % len(s)
        if n < 1 or s[ax] % n:
            raise Mismatch(f"data: axis {ax} of {s} is not divisible by num_outputs={n}")
        if attrs["squeeze_axis"] and s[ax] != n:
            raise Mismatch(f"squeeze_axis needs data axis {ax} == num_outputs={n}, got {s}")
        o = list(s)
        if attrs["squeeze_axis"]:
            del o[ax]
        else:
            o[ax] = s[ax] // n
        for i in range(n):
            assign(outs, i, tuple(o), f"output {i}")
    elif n >= 1 and any(o is not None for o in outs):
        # backward, as MXNet's: the data from an output (an RNN cell's h2h, whose data
        # is a begin state of unknown batch size, learns its shape from its slices)
        o = list(next(o for o in outs if o is not None))
        ndim = len(o) + bool(attrs["squeeze_axis"])
        if -ndim <= attrs["axis"] < ndim:
            ax = attrs["axis"] % ndim
            if attrs["squeeze_axis"]:
                o.insert(ax, n)
            else:
                o[ax] *= n
            assign(ins, 0, tuple(o), "data")
    return ins, outs


def _slice_fwd(rc, attrs, ins, outs):
    x = ins[0]
    ax, n = attrs["axis"] % x.ndim, attrs["num_outputs"]
    step = x.shape[ax] // n
    for i, o in enumerate(outs):
        o[...] = x[(slice(None),) * ax + (slice(i * step, (i + 1) * step),)].reshape(o.shape)


def _slice_grad(node, og):
    present = tuple(i for i, g in enumerate(og) if g is not None)
    b = _bwd("_backward_SliceChannel", [og[i] for i in present], node,
             present=present, **node.attrs)
    return [(b, 0)]


def _slice_bwd_fwd(rc, attrs, ins, outs):
    out = outs[0]
    ax, n = attrs["axis"] % out.ndim, attrs["num_outputs"]
    step = out.shape[ax] // n
    if len(attrs["present"]) < n:
        out.fill(0)
    for g, i in zip(ins, attrs["present"]):
        idx = (slice(None),) * ax + (slice(i * step, (i + 1) * step),)
        out[idx] = g.reshape(out[idx].shape)


register(OpDef("SliceChannel", params=_SLICE_PARAMS, outputs=_slice_outputs,
               forward=_slice_fwd, infer_shape=_slice_shape, gradient=_slice_grad,
               doc="Split data into ``num_outputs`` equal parts along ``axis``."))
OPS["SliceChannel"].sparse_grads = True
register(OpDef("_backward_SliceChannel", params=dict(_SLICE_PARAMS, present=Param(Shape)),
               arguments=lambda a: [f"out_grad{i}" for i in a["present"]],
               forward=_slice_bwd_fwd, infer_shape=bwd_shape, infer_type=grad_type,
               is_backward=True, doc="Gradient of SliceChannel (zeros for unused outputs)."))


# ------------------------------------------------------------------- sum, mean
RED_PARAMS = {"axis": Param(Axis, None), "keepdims": Param(Bool, False),
              "exclude": Param(Bool, False)}


def _axes(axis, nd):
    if axis is None or axis == ():
        return tuple(range(nd))
    axis = (axis,) if isinstance(axis, int) else axis
    if any(not -nd <= a < nd for a in axis):
        raise Mismatch(f"axis={axis} out of range for {nd} dimensions")
    return tuple(sorted(a % nd for a in axis))


def reduce_axes(attrs, nd):
    """The axes an MXNet reduction with ``axis``/``exclude`` reduces over (sorted);
    None or () means all of them."""
    ax = _axes(attrs["axis"], nd)
    if attrs.get("exclude") and attrs["axis"] not in (None, ()):
        ax = tuple(i for i in range(nd) if i not in ax)
    return ax


def reduced_shape(shape, ax, keepdims):
    """The output shape of a reduction over ``ax``: MXNet 1.x gives (1,), never (),
    for a full reduction without keepdims."""
    if keepdims:
        return tuple(1 if i in ax else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in ax) or (1,)


def _reduce_shape(attrs, ins, outs):
    s = ins[0]
    if s is not None:
        assign(outs, 0, reduced_shape(s, reduce_axes(attrs, len(s)), attrs["keepdims"]),
               "output")
    return ins, outs


def _reduce_fwd(fname):
    def forward(rc, attrs, ins, outs):
        ax = reduce_axes(attrs, ins[0].ndim)
        r = getattr(rc.xp, fname)(ins[0], axis=ax, keepdims=attrs["keepdims"])
        copy_into(rc.xp, outs[0], r.reshape(outs[0].shape))
    return forward


def _reduce_grad(mean):
    def gradient(node, og):
        return [(_bwd("_backward_sum", [og[0]], node, mean=mean, **node.attrs), 0)]
    return gradient


def _reduce_bwd_fwd(rc, attrs, ins, outs):
    out, g = outs[0], ins[0]
    ax = reduce_axes(attrs, out.ndim)
    g = g.reshape(tuple(1 if i in ax else d for i, d in enumerate(out.shape)))
    if attrs["mean"]:
        rc.xp.divide(g, math.prod(out.shape[i] for i in ax), out=out)
    else:
        out[...] = g


for _n, _f in (("sum", "sum"), ("mean", "mean")):
    register(OpDef(_n, params=RED_PARAMS, forward=_reduce_fwd(_f), infer_shape=_reduce_shape,
                   gradient=_reduce_grad(_n == "mean"),
                   doc=f"{_n.capitalize()} over ``axis`` (None or (): all; ``exclude``: all "
                       f"but ``axis``), like numpy.{_f}; a full reduction gives shape (1,)."))
register(OpDef("_backward_sum", params=dict(RED_PARAMS, mean=Param(Bool, False)),
               arguments=("out_grad",), forward=_reduce_bwd_fwd, infer_shape=bwd_shape,
               infer_type=grad_type, is_backward=True,
               doc="Broadcast the gradient of sum/mean back to the input shape."))


# ------------------------------------------------------------------------ dot
_DOT_PARAMS = {"transpose_a": Param(Bool, False), "transpose_b": Param(Bool, False),
               "forward_stype": Param(OptChoice("default"), None)}


def _dot_split(shape, transposed, lhs):
    """(contracted dim, the other dims) of a dot operand: MXNet contracts lhs's
    last axis (first when transposed) and rhs's first axis (last when transposed)."""
    first = lhs == transposed
    return (shape[0], tuple(shape[1:])) if first else (shape[-1], tuple(shape[:-1]))


def _dot_shape(attrs, ins, outs):
    a, b = ins
    if a is not None and b is not None:
        ka, ra = _dot_split(a, attrs["transpose_a"], True)
        kb, rb = _dot_split(b, attrs["transpose_b"], False)
        if ka != kb:
            raise Mismatch(f"inner dimensions differ: lhs {a} and rhs {b} "
                           f"(transpose_a={attrs['transpose_a']}, "
                           f"transpose_b={attrs['transpose_b']})")
        assign(outs, 0, (ra + rb) or (1,), "output")
    return ins, outs


def _dot_mats(attrs, a, b):
    """The two matrices whose product is dot's output, as views of ``a`` and ``b``."""
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    A = a.reshape(a.shape[0], -1).T if ta else a.reshape(-1, a.shape[-1])
    B = b.reshape(-1, b.shape[-1]).T if tb else b.reshape(b.shape[0], -1)
    return A, B


def _dot_fwd(rc, attrs, ins, outs):
    A, B = _dot_mats(attrs, ins[0], ins[1])
    matmul_into(rc.xp, A, B, outs[0])




def _dot_bwd_fwd(rc, attrs, ins, outs):
    xp, (g, a, b) = rc.xp, ins
    A, B = _dot_mats(attrs, a, b)
    G = g.reshape(A.shape[0], B.shape[1])
    dA, dB = G @ B.T, A.T @ G
    copy_into(xp, outs[0], (dA.T if attrs["transpose_a"] else dA).reshape(a.shape))
    copy_into(xp, outs[1], (dB.T if attrs["transpose_b"] else dB).reshape(b.shape))


register(OpDef("dot", params=_DOT_PARAMS, arguments=("lhs", "rhs"), forward=_dot_fwd,
               infer_shape=_dot_shape,
               gradient=lambda node, og: [(b, i) for b in [_bwd(
                   "_backward_dot", [og[0], node.inputs[0], node.inputs[1]], node,
                   **node.attrs)] for i in range(2)],
               doc="MXNet's dot: lhs's last axis (first if transpose_a) contracted with "
                   "rhs's first axis (last if transpose_b); N-d operands flatten around "
                   "it; two vectors give shape (1,)."))
register(OpDef("_backward_dot", params=_DOT_PARAMS, arguments=("out_grad", "lhs", "rhs"),
               outputs=("lhs", "rhs"), forward=_dot_bwd_fwd, infer_shape=bwd_shape,
               infer_type=grad_type, is_backward=True, doc="Gradients of dot."))


# ------------------------------------------------------------------ Embedding
_EMB_PARAMS = {"input_dim": Param(Int), "output_dim": Param(Int),
               "dtype": Param(DType, "float32"),
               "sparse_grad": Param(Bool, False)}


def _emb_shape(attrs, ins, outs):
    assign(ins, 1, (attrs["input_dim"], attrs["output_dim"]), "weight")
    if ins[0] is not None:
        assign(outs, 0, tuple(ins[0]) + (attrs["output_dim"],), "output")
    return ins, outs


def _emb_type(attrs, ins, outs):
    # ``dtype`` (MXNet's) is the weight's and output's dtype unless they are given
    # otherwise (a float64 binding keeps float64)
    w = [ins[1]]
    if w[0] is None and outs[0] is None:
        w[0] = numpy.dtype(attrs["dtype"])
    w, o = same_type(attrs, w, outs)
    ins[1] = w[0]
    if ins[0] is None:
        ins[0] = ins[1]
    return ins, o


def _emb_fwd(rc, attrs, ins, outs):
    xp, w = rc.xp, ins[1]
    idx = xp.clip(ins[0].astype(xp.intp, copy=False), 0, w.shape[0] - 1)    # MXNet clips
    xp.take(w, idx, axis=0, out=outs[0])


def scatter_add(xp, dst, idx, src):
    """dst[idx] += src with repeated indices accumulated (``add.at``: NumPy's, CuPy's)."""
    xp.add.at(dst, idx, src)


def _emb_bwd_fwd(rc, attrs, ins, outs):
    g, data = ins
    d_data, d_w = outs
    d_data.fill(0)
    d_w.fill(0)
    idx = rc.xp.clip(data.astype(rc.xp.intp), 0, d_w.shape[0] - 1)
    scatter_add(rc.xp, d_w, idx.reshape(-1), g.reshape(-1, d_w.shape[1]))


register(OpDef("Embedding", params=_EMB_PARAMS, arguments=("data", "weight"),
               forward=_emb_fwd, infer_shape=_emb_shape, infer_type=_emb_type,
               gradient=lambda node, og: [(b, i) for b in [_bwd(
                   "_backward_Embedding", [og[0], node.inputs[0]], node, **node.attrs)]
                   for i in range(2)],
               doc="Look up rows of weight (input_dim, output_dim) by integer-valued data "
                   "(clipped into range); ``sparse_grad`` gives the same dense gradient."))
register(OpDef("_backward_Embedding", params=_EMB_PARAMS, arguments=("out_grad", "data"),
               outputs=("data", "weight"), forward=_emb_bwd_fwd, infer_shape=bwd_shape,
               infer_type=lambda a, i, o: (i, o), is_backward=True,
               doc="Gradient of Embedding: rows of out_grad added at the indices."))


# ------------------------------------------------------------------ transpose
def _transpose_axes(attrs, nd):
    axes = attrs["axes"] or tuple(reversed(range(nd)))
    if sorted(a % nd for a in axes) != list(range(nd)) or len(axes) != nd:
        raise Mismatch(f"axes={attrs['axes']} is not a permutation of {nd} axes")
    return tuple(a % nd for a in axes)


def _transpose_shape(attrs, ins, outs):
    if ins[0] is not None:
        ax = _transpose_axes(attrs, len(ins[0]))
        assign(outs, 0, tuple(ins[0][a] for a in ax), "output")
    return ins, outs


def _transpose_fwd(rc, attrs, ins, outs):
    outs[0][...] = ins[0].transpose(_transpose_axes(attrs, ins[0].ndim))


def _transpose_grad(node, og):
    nd_axes = node.attrs["axes"]
    if not nd_axes:
        return [E("transpose", [og[0]])]
    inv = tuple(int(i) for i in numpy.argsort([a % len(nd_axes) for a in nd_axes]))
    return [E("transpose", [og[0]], axes=inv)]


register(OpDef("transpose", params={"axes": Param(Shape, ())}, forward=_transpose_fwd,
               infer_shape=_transpose_shape, gradient=_transpose_grad,
               doc="Permute the axes (default: reverse them), like numpy.transpose."))
