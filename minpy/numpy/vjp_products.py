"""Gradients of products: dot, vdot, inner, outer, tensordot, einsum, kron, cross
(and their ``numpy.linalg`` aliases: outer, tensordot, cross, vecdot, matmul,
matrix_transpose, trace, diagonal).

Convention (the one :func:`minpy.testing.check_grads` checks): the gradient
``gx`` of a real loss satisfies ``dL = Re(sum(conj(gx) * dx))``, so for an
operation holomorphic in ``x`` the rule is ``gx = conj(f'(x)) g``: products
conjugate the *other* operand. Every rule is written with minpy functions, so
gradients are themselves differentiable (grad of grad).
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import inspect
import numbers
import string

import numpy

from ..core.autograd import defvjp, def_nondiff
from ..core.array import Array
import minpy.numpy as mnp
from .rule_helpers import (conj_if_complex, defvjp_by_name, hermitian, is_complex,
                           unbroadcast, unbroadcast_to_operand)

__all__ = []

_LA = mnp.linalg


# ---------------------------------------------------------------- helpers
def _T(x):
    return mnp.swapaxes(x, -1, -2)


def _argsort(seq):
    return sorted(range(len(seq)), key=seq.__getitem__)


def _perm(t, order):
    """Transpose ``t`` so that axis ``order[i]`` of the target is axis i of ``t``."""
    perm = _argsort(order)
    return t if perm == list(range(len(perm))) else mnp.transpose(t, perm)


# ---------------------------------------------------------------- tensordot family
def _td_axes(axes, na, nb):
    if isinstance(axes, numbers.Integral):
        n = int(axes)
        return list(range(na - n, na)), list(range(n))
    a0, a1 = axes
    a0 = [a0] if isinstance(a0, numbers.Integral) else list(a0)
    a1 = [a1] if isinstance(a1, numbers.Integral) else list(a1)
    return [int(i) % na for i in a0], [int(j) % nb for j in a1]


def _td_grad(which, g, a, b, sa, sb):
    """Gradient of ``tensordot(a, b, (sa, sb))`` w.r.t. ``a`` (which=0) or ``b`` (1)."""
    na, nb = numpy.ndim(a), numpy.ndim(b)
    oa = [i for i in range(na) if i not in sa]
    ob = [j for j in range(nb) if j not in sb]
    if which == 0:
        t = mnp.tensordot(g, conj_if_complex(b), (list(range(len(oa), numpy.ndim(g))), ob))
        return unbroadcast_to_operand(_perm(t, oa + [sa[i] for i in _argsort(sb)]), a)
    t = mnp.tensordot(conj_if_complex(a), g, (oa, list(range(len(oa)))))
    return unbroadcast_to_operand(_perm(t, [sb[i] for i in _argsort(sa)] + ob), b)


def _tensordot_maker(which):
    def maker(ans, a, b, axes=2):
        sa, sb = _td_axes(axes, numpy.ndim(a), numpy.ndim(b))
        return lambda g: _td_grad(which, g, a, b, sa, sb)
    return maker


def _linalg_tensordot_maker(which):
    def maker(ans, x1, x2, /, *, axes=2):
        sa, sb = _td_axes(axes, numpy.ndim(x1), numpy.ndim(x2))
        return lambda g: _td_grad(which, g, x1, x2, sa, sb)
    return maker


def _scalar_product_grad(which, g, a, b):
    """Either operand 0-d: the product is elementwise."""
    return unbroadcast_to_operand(g * conj_if_complex(b), a) if which == 0 else unbroadcast_to_operand(g * conj_if_complex(a), b)


def _ndim(x):
    return x.ndim if hasattr(x, "ndim") else numpy.ndim(x)


def _dot_small(which, g, a, b, na, nb):
    """dot of 1-D/2-D operands: matmul on transposed views (no copies, BLAS flags)."""
    if which == 0:
        if nb == 1:
            return unbroadcast_to_operand(mnp.outer(g, conj_if_complex(b)) if na == 2 else g * conj_if_complex(b), a)
        return unbroadcast_to_operand(mnp.matmul(g, hermitian(b)) if na == 2 else mnp.matmul(conj_if_complex(b), g), a)
    if na == 1:
        return unbroadcast_to_operand(mnp.outer(conj_if_complex(a), g) if nb == 2 else conj_if_complex(a) * g, b)
    return unbroadcast_to_operand(mnp.matmul(hermitian(a), g), b)


def _dot_maker(which):
    def maker(ans, a, b, out=None):
        na, nb = _ndim(a), _ndim(b)
        if na == 2 and nb == 2:        # the common case: matmul with the other operand's .T
            if which == 0:
                bh = hermitian(b)
                return lambda g: unbroadcast_to_operand(mnp.matmul(g, bh), a)
            ah = hermitian(a)
            return lambda g: unbroadcast_to_operand(mnp.matmul(ah, g), b)
        if na == 0 or nb == 0:
            return lambda g: _scalar_product_grad(which, g, a, b)
        if na <= 2 and nb <= 2:
            return lambda g: _dot_small(which, g, a, b, na, nb)
        sa, sb = [na - 1], [max(nb - 2, 0)]
        return lambda g: _td_grad(which, g, a, b, sa, sb)
    return maker


def _inner_maker(which):
    def maker(ans, a, b):
        na, nb = numpy.ndim(a), numpy.ndim(b)
        if na == 0 or nb == 0:
            return lambda g: _scalar_product_grad(which, g, a, b)
        return lambda g: _td_grad(which, g, a, b, [na - 1], [nb - 1])
    return maker


def _vdot_maker(which):
    # vdot(a, b) = sum(conj(a.ravel()) * b.ravel()): antilinear in a.
    def maker(ans, a, b):
        if which == 0:
            return lambda g: unbroadcast_to_operand(mnp.reshape(b * mnp.conj(g) if is_complex(g) else b * g,
                                              numpy.shape(a)), a)
        return lambda g: unbroadcast_to_operand(mnp.reshape(a * g, numpy.shape(b)), b)
    return maker


def _outer_maker(which):
    def maker(ans, a, b, out=None):
        def vjp(g):
            if which == 0:
                r = mnp.dot(g, conj_if_complex(mnp.reshape(b, (-1,))))
                return unbroadcast_to_operand(mnp.reshape(r, numpy.shape(a)), a)
            r = mnp.dot(conj_if_complex(mnp.reshape(a, (-1,))), g)
            return unbroadcast_to_operand(mnp.reshape(r, numpy.shape(b)), b)
        return vjp
    return maker


def _kron_maker(which):
    def maker(ans, a, b):
        sa, sb = numpy.shape(a), numpy.shape(b)
        nd = max(len(sa), len(sb))
        sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
        la, lb = string.ascii_lowercase[:nd], string.ascii_uppercase[:nd]
        gspec = "".join(x + y for x, y in zip(la, lb))

        def vjp(g):
            gr = mnp.reshape(g, tuple(d for pair in zip(sa, sb) for d in pair))
            if which == 0:
                r = mnp.einsum(f"{gspec},{lb}->{la}", gr, conj_if_complex(mnp.reshape(b, sb)))
                return unbroadcast_to_operand(mnp.reshape(r, numpy.shape(a)), a)
            r = mnp.einsum(f"{gspec},{la}->{lb}", gr, conj_if_complex(mnp.reshape(a, sa)))
            return unbroadcast_to_operand(mnp.reshape(r, numpy.shape(b)), b)
        return vjp
    return maker


# ---------------------------------------------------------------- cross
def _pad3(x):
    if x.shape[-1] == 3:
        return x
    return mnp.concatenate([x, mnp.zeros_like(x, shape=x.shape[:-1] + (1,))], axis=-1)


def _cross_grad(which, g, a, b, axisa, axisb, axisc):
    am, bm = mnp.moveaxis(a, axisa, -1), mnp.moveaxis(b, axisb, -1)
    if am.shape[-1] == 2 and bm.shape[-1] == 2:       # result is the z component only
        z = mnp.zeros_like(g, shape=g.shape + (1,))
        g3 = mnp.concatenate([z, z, mnp.reshape(g, g.shape + (1,))], axis=-1)
    else:
        g3 = mnp.moveaxis(g, axisc, -1)
    x, axis = (am, axisa) if which == 0 else (bm, axisb)
    r = mnp.cross(conj_if_complex(_pad3(bm)), g3) if which == 0 else mnp.cross(g3, conj_if_complex(_pad3(am)))
    if x.shape[-1] == 2:
        r = r[..., :2]
    return mnp.moveaxis(unbroadcast_to_operand(r, x), -1, axis)


def _cross_maker(which):
    def maker(ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if axis is not None:
            axisa = axisb = axisc = axis
        return lambda g: _cross_grad(which, g, a, b, axisa, axisb, axisc)
    return maker


def _linalg_cross_maker(which):
    def maker(ans, x1, x2, /, *, axis=-1):
        return lambda g: _cross_grad(which, g, x1, x2, axis, axis, axis)
    return maker


# ---------------------------------------------------------------- einsum
_NP_LETTERS = string.ascii_uppercase + string.ascii_lowercase   # NumPy's sublist 0..51


def _parse_einsum(args):
    """-> (operand positions, term label lists, output label list) with '...' expanded."""
    if isinstance(args[0], str):
        subs = args[0].replace(" ", "")
        pos = list(range(1, len(args)))
        ins, out = subs.split("->") if "->" in subs else (subs, None)
        terms = ins.split(",")
    else:
        pos = list(range(0, len(args) - 1 if len(args) % 2 else len(args), 2))
        def conv(sub):
            return "".join("..." if s is Ellipsis else _NP_LETTERS[int(s)] for s in sub)
        terms = [conv(args[p + 1]) for p in pos]
        out = conv(args[-1]) if len(args) % 2 else None
    used = set("".join(terms) + (out or "")) - {"."}
    free = [c for c in string.ascii_letters if c not in used]
    explicit = [t.replace("...", "") for t in terms]
    ell_n = max([numpy.ndim(args[p]) - len(e) for p, e, t in zip(pos, explicit, terms)
                 if "..." in t] + [0])
    ell = free[:ell_n]
    labels = []
    for p, e, t in zip(pos, explicit, terms):
        if "..." in t:
            k = numpy.ndim(args[p]) - len(e)
            t = t.replace("...", "".join(ell[ell_n - k:]))
        labels.append(list(t))
    if out is None:
        once = [c for c in set("".join(explicit)) if "".join(explicit).count(c) == 1]
        out_labels = ell + sorted(once)
    else:
        out_labels = list(out.replace("...", "".join(ell)))
    return pos, labels, out_labels, free[ell_n:]


def _einsum_grad(k, g, args, optimize):
    pos, labels, out, spare = _parse_einsum(args)
    ops = [args[p] for p in pos]
    sizes = {}
    for lab, op in zip(labels, ops):
        for c, d in zip(lab, numpy.shape(op)):
            sizes[c] = max(sizes.get(c, 1), d)
    specs, arrays = ["".join(out)], [g]
    for j, (lab, op) in enumerate(zip(labels, ops)):
        if j == k:
            continue
        shp = numpy.shape(op)
        keep = [i for i, c in enumerate(lab) if not (shp[i] == 1 and sizes[c] != 1)]
        if len(keep) != len(lab):        # broadcast size-1 axes: drop (same value everywhere)
            op = mnp.reshape(op, tuple(shp[i] for i in keep))
            lab = [lab[i] for i in keep]
        specs.append("".join(lab))
        arrays.append(conj_if_complex(op))
    used = set("".join(specs))
    xk = ops[k]
    shk = numpy.shape(xk)
    rdt = numpy.empty(0, dtype=getattr(xk, "dtype", numpy.float64)).real.dtype
    if rdt.kind != "f":
        rdt = numpy.dtype(numpy.float64)
    target, seen = [], set()
    for i, c in enumerate(labels[k]):
        if shk[i] == 1 and sizes[c] != 1:
            continue                      # broadcast axis of x_k: summed, size 1 put back below
        if c in seen:                     # repeated label: the gradient lives on the diagonal
            f = spare.pop()
            specs.append(c + f)
            arrays.append(numpy.eye(sizes[c], dtype=rdt))
            target.append(f)
            continue
        seen.add(c)
        target.append(c)
        if c not in used and labels[k].count(c) == 1:   # summed inside x_k only
            specs.append(c)
            arrays.append(numpy.ones(sizes[c], dtype=rdt))
    r = mnp.einsum(",".join(specs) + "->" + "".join(target), *arrays, optimize=optimize)
    if r.shape != shk:
        r = mnp.reshape(r, shk)
    return unbroadcast_to_operand(r, xk)


def _einsum_maker(p):
    def maker(ans, *args, out=None, dtype=None, order="K", casting="safe", optimize=False):
        pos = _parse_einsum(args)[0]
        k = pos.index(p)
        return lambda g: _einsum_grad(k, g, args, optimize)
    return maker


# ---------------------------------------------------------------- linalg aliases
def _la_matmul_maker(which):
    def maker(ans, x1, x2, /):
        def vjp(g):
            a, b = x1, x2
            a2 = mnp.reshape(a, (1,) + numpy.shape(a)) if numpy.ndim(a) == 1 else a
            b2 = mnp.reshape(b, numpy.shape(b) + (1,)) if numpy.ndim(b) == 1 else b
            g2 = g
            if numpy.ndim(a) == 1:
                g2 = mnp.expand_dims(g2, -2 if numpy.ndim(b) > 1 else -1)
            if numpy.ndim(b) == 1:
                g2 = mnp.expand_dims(g2, -1)
            if which == 0:
                return unbroadcast_to_operand(mnp.reshape(unbroadcast_to_operand(mnp.matmul(g2, hermitian(b2)), a2), numpy.shape(a)), a)
            return unbroadcast_to_operand(mnp.reshape(unbroadcast_to_operand(mnp.matmul(hermitian(a2), g2), b2), numpy.shape(b)), b)
        return vjp
    return maker


def _vecdot_maker(which):
    # vecdot(x1, x2) = sum(conj(x1) * x2, axis): antilinear in x1.
    def maker(ans, x1, x2, /, *, axis=-1):
        def vjp(g):
            ge = mnp.expand_dims(g, axis)
            if which == 0:
                return unbroadcast_to_operand(x2 * conj_if_complex(ge), x1)
            return unbroadcast_to_operand(x1 * ge, x2)
        return vjp
    return maker


def _diag_embed(g, n, m, offset):
    """The adjoint of ``diagonal(x, offset)`` over the last two axes of an (n, m) matrix."""
    k = g.shape[-1]
    if offset >= 0:
        pad = n - k
        gp = g if pad == 0 else mnp.concatenate(
            [g, mnp.zeros_like(g, shape=g.shape[:-1] + (pad,))], axis=-1)
        return mnp.expand_dims(gp, -1) * numpy.eye(n, m, k=offset)
    pad = m - k
    gp = g if pad == 0 else mnp.concatenate(
        [g, mnp.zeros_like(g, shape=g.shape[:-1] + (pad,))], axis=-1)
    return mnp.expand_dims(gp, -2) * numpy.eye(n, m, k=offset)


def _la_trace_vjp(ans, x, /, *, offset=0, dtype=None):
    n, m = numpy.shape(x)[-2:]
    return lambda g: unbroadcast_to_operand(mnp.reshape(g, g.shape + (1, 1)) * numpy.eye(n, m, k=offset), x)


def _la_diagonal_vjp(ans, x, /, *, offset=0):
    n, m = numpy.shape(x)[-2:]
    return lambda g: unbroadcast_to_operand(_diag_embed(g, n, m, offset), x)


def _m(f):
    return [f(0), f(1)]


defvjp_by_name(mnp.dot, *_m(_dot_maker))
defvjp_by_name(mnp.inner, *_m(_inner_maker))
defvjp_by_name(mnp.vdot, *_m(_vdot_maker))
defvjp_by_name(mnp.outer, *_m(_outer_maker))
defvjp_by_name(mnp.tensordot, *_m(_tensordot_maker))
defvjp_by_name(mnp.kron, *_m(_kron_maker))
defvjp_by_name(mnp.cross, *_m(_cross_maker))
defvjp_by_name(mnp.einsum, *[_einsum_maker(p) for p in range(130)])
def_nondiff(mnp.einsum_path)     # returns the contraction plan (a list and a report string)

defvjp_by_name(_LA.outer, *_m(lambda w: lambda ans, x1, x2, /: _outer_maker(w)(ans, x1, x2)))
defvjp_by_name(_LA.tensordot, *_m(_linalg_tensordot_maker))
defvjp_by_name(_LA.cross, *_m(_linalg_cross_maker))
defvjp_by_name(_LA.matmul, *_m(_la_matmul_maker))
defvjp_by_name(_LA.vecdot, *_m(_vecdot_maker))
defvjp_by_name(_LA.matrix_transpose, lambda ans, x, /: lambda g: _T(g))
defvjp_by_name(_LA.trace, _la_trace_vjp)
defvjp_by_name(_LA.diagonal, _la_diagonal_vjp)

table_ends(__name__)
