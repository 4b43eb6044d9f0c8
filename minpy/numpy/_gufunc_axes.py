"""VJP rules of the linear-algebra gufuncs (matmul, vecdot, matvec, vecmat) for
``axes=``, ``axis=`` and ``keepdims=True``, from the rule for the default layout
(every core dimension in the last axes): the operands' core axes are moved last,
the rule is applied and its result moved back (see vjp_math.py)."""
import numbers

import minpy.numpy as mnp
from .rule_helpers import unbroadcast

__all__ = ["on_core_axes"]


def _core_dims(name, args):
    """Core dimensions (gufunc signature) of each input, and of the output."""
    if name == "matmul":
        ca, cb = min(mnp.ndim(args[0]), 2), min(mnp.ndim(args[1]), 2)
        return (ca, cb), ca + cb - 2
    return {"vecdot": ((1, 1), 0), "matvec": ((2, 1), 1), "vecmat": ((1, 2), 1)}[name]


def _last(n):
    return tuple(range(-n, 0))


def core_axes(name, args, kw, out_ndim):
    """Where ``axes=``/``axis=``/``keepdims=`` put the core dimensions: (per-input
    axes, output axes, the kept output axis or None), non-negative, in core order.
    The forward call has validated them (NumPy raises on bad combinations)."""
    cin, cout = _core_dims(name, args)
    axes, axis, keep = kw.get("axes"), kw.get("axis"), bool(kw.get("keepdims"))
    if axes is None:
        ins = [_last(c) for c in cin] if axis is None else [(axis,)] * len(cin)
        outs, kept = _last(cout), (-1 if axis is None else axis)
    else:
        e = [(t,) if isinstance(t, numbers.Integral) else tuple(t) for t in axes]
        ins, outs = e[:len(cin)], (e[len(cin)] if len(e) > len(cin) else ())
        kept = outs[0] if outs else -1
    if keep:
        outs = ()
    ins = [tuple(int(a) % mnp.ndim(x) for a in ax) for ax, x in zip(ins, args)]
    outs = tuple(int(a) % out_ndim for a in outs)
    return ins, outs, (int(kept) % out_ndim if keep else None)


def on_core_axes(name, i, d):
    """VJP maker of argument ``i`` of gufunc ``name`` from ``d(ans, *args)``, the
    rule with every core dimension in the last axes (called as is for that layout)."""
    def maker(ans, *args, **kw):
        if kw.get("axes") is None and kw.get("axis") is None and not kw.get("keepdims"):
            return d(ans, *args)
        ins, outs, kept = core_axes(name, args, kw, mnp.ndim(ans))
        moved = [mnp.moveaxis(a, ax, _last(len(ax))) for a, ax in zip(args, ins)]

        def core_last(v):
            if kept is not None:
                v = mnp.squeeze(v, kept)
            return mnp.moveaxis(v, outs, _last(len(outs))) if outs else v
        vjp = d(core_last(ans), *moved)

        def apply(g):
            r = vjp(core_last(g))
            if r is None:
                return None
            return mnp.moveaxis(unbroadcast(r, moved[i]), _last(len(ins[i])), ins[i])
        return apply
    return maker
