"""``minpy.scipy.signal``: differentiable n-d convolution and correlation.

- :func:`convolve` has SciPy's signature and values (``scipy.signal.convolve``:
  any number of dimensions, modes ``'full'``/``'valid'``/``'same'``, methods
  ``'auto'``/``'direct'``/``'fft'``), and also accepts the extended form of
  HIPS autograd's ``autograd.scipy.signal.convolve``: ``convolve(A, B, axes=...,
  dot_axes=..., mode=...)`` convolves over the ``axes`` pairs, contracts the
  ``dot_axes`` pairs (a tensordot) and takes the outer product over the other
  axes.
- :func:`correlate` is ``convolve(in1, conj(flip(in2)))`` (SciPy's definition),
  in either form.

Both are differentiable with respect to both inputs to any order: the VJP of a
convolution is a convolution of the output gradient with the reflected (and
conjugated) other operand, so it is recorded again under an outer tape.

Devices: the SciPy form runs ``scipy.signal.convolve`` on host arrays and
``cupyx.scipy.signal.convolve`` on CuPy arrays (a GPU backend without it
falls back to the host, counted as any missing function is); the extended
form is written against the backend namespace (slices, ``stack``,
``tensordot``) and runs on either.

Complex convention (that of :func:`minpy.testing.check_grads`): the gradient
``g_x`` of a real loss satisfies ``dL = Re(sum(conj(g_x) * dx))``. Integer
operands get no gradient.
"""
import inspect
import math
import numbers

import numpy
import scipy.signal as _scipy_signal

from ..core.array import Array
from ..core.autograd import defvjp
from ..core.primitive import register
from ..core.wrappers import make_function
from .. import numpy as mnp
from ..numpy.rule_helpers import cast_like, conj_if_complex
from ._util import ScipyPrimitive, backend_namespace

__all__ = ["convolve", "correlate"]

_MODES = ("full", "valid", "same")
_METHODS = ("auto", "direct", "fft")
# elements of the window stack built at once by the extended form (larger: in chunks)
_WINDOW_CHUNK = 1 << 22


# ---------------------------------------------------------------- the SciPy form
# scipy.signal on the host, cupyx.scipy.signal on CuPy (see ._util: a GPU backend
# whose namespace lacks it falls back to the host, counted)


def _convolve_forward(xp, in1, in2, mode, method):
    mod = _scipy_signal if xp is numpy else backend_namespace(xp, "signal")
    return mod.convolve(in1, in2, mode=mode, method=method)


_convolve_nd = make_function(
    "scipy.signal.convolve", None, name="convolve_nd", positional_out=(None, ()),
    prim=register(ScipyPrimitive("scipy.signal.convolve", _convolve_forward, "signal",
                                 ("convolve",))),
    doc="``scipy.signal.convolve(in1, in2, mode, method)`` as one minpy primitive "
        "(arguments already checked). See also scipy.signal.convolve.")


# ---------------------------------------------------------------- the extended form
def _shape(x):
    """The shape of an Array, a backend array or an array-like (no conversion)."""
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else numpy.shape(x)


def _others(ndim, *used):
    taken = set()
    for u in used:
        taken.update(u)
    return tuple(k for k in range(ndim) if k not in taken)


def _general_forward(xp, a, b, axes, dot_axes, mode):
    """The extended convolution of ``a`` and ``b`` on backend ``xp``.

    Output axes: ``a``'s other axes, ``b``'s other axes (each in order), then the
    convolved axes in the order of the ``axes`` pairs. The operand with the
    smaller convolved volume is the kernel; the other is padded for 'full' and
    'same'; the kernel's windows over it are stacked and contracted with the
    flipped kernel in one ``tensordot`` (in chunks of offsets when large).
    """
    (ca, cb), (da, db) = axes, dot_axes
    ia, ib = _others(a.ndim, ca, da), _others(b.ndim, cb, db)
    at = xp.transpose(a, ia + da + ca)
    bt = xp.transpose(b, ib + db + cb)
    na = tuple(a.shape[k] for k in ca)
    nb = tuple(b.shape[k] for k in cb)
    nd, nc = len(da), len(ca)
    if mode == "valid":
        swap = not all(m <= n for n, m in zip(na, nb))
    else:
        swap = math.prod(nb) > math.prod(na)
    x, k, nix, nik = (bt, at, len(ib), len(ia)) if swap else (at, bt, len(ia), len(ib))
    kshape = k.shape[k.ndim - nc:]
    if mode != "valid" and nc:
        width = [(0, 0)] * (x.ndim - nc) + [(s - 1, s - 1) for s in kshape]
        x = xp.pad(x, width)
    xs = x.shape[x.ndim - nc:]
    outs = tuple(s - w + 1 for s, w in zip(xs, kshape))
    lead = (slice(None),) * (x.ndim - nc)
    offsets = list(numpy.ndindex(*kshape))
    # the flipped kernel, its convolved axes flattened in the offsets' order
    kf = k[(slice(None),) * (k.ndim - nc) + (slice(None, None, -1),) * nc]
    kmat = xp.reshape(kf, k.shape[:k.ndim - nc] + (len(offsets),))
    per_offset = max(1, math.prod(x.shape[:x.ndim - nc]) * math.prod(outs))
    step = max(1, _WINDOW_CHUNK // per_offset)
    x_axes = list(range(nix, nix + nd)) + [x.ndim]
    k_axes = list(range(nik, nik + nd)) + [kmat.ndim - 1]
    res = None
    for start in range(0, len(offsets), step):
        chunk = offsets[start:start + step]
        windows = xp.stack([x[lead + tuple(slice(o, o + t) for o, t in zip(off, outs))]
                            for off in chunk], axis=-1)
        part = xp.tensordot(windows, kmat[..., start:start + len(chunk)], axes=(x_axes, k_axes))
        res = part if res is None else res + part
    # tensordot gives (x others, conv, k others): move the kernel's others before conv
    order = (tuple(range(nix)) + tuple(range(nix + nc, nix + nc + nik))
             + tuple(range(nix, nix + nc)))
    if swap:        # (b others, a others, conv) -> (a others, b others, conv)
        order = order[nix:nix + nik] + order[:nix] + order[nix + nik:]
    res = xp.transpose(res, order)
    if mode == "same":
        lead = (slice(None),) * (len(ia) + len(ib))
        res = res[lead + tuple(slice((m - 1) // 2, (m - 1) // 2 + n) for n, m in zip(na, nb))]
    return res


_convolve_general = make_function(
    "scipy.signal.convolve_general", None, forward=_general_forward,
    name="convolve_general", positional_out=(None, ()),
    doc="The extended convolution ``(a, b, axes, dot_axes, mode)`` with normalized "
        "arguments, as one primitive. See also minpy.scipy.signal.convolve.")


# ---------------------------------------------------------------- gradients
def _cotangent(g, na, nb, nx, ny, mode, conv_start):
    """(cotangent, mode) whose convolution with the other operand, reflected, is the
    gradient of the operand of sizes ``nx`` (the other: ``ny``) on the convolved axes.

    'full' outputs correlate 'valid'; a 'valid' output correlates 'full' when this
    operand is the larger one, else 'valid'; a 'same' output is zero-padded to the
    'full' one first (``conv_start``: the first convolved axis of ``g``)."""
    if mode == "full":
        return g, "valid"
    if mode == "valid":
        return g, "full" if all(x >= y for x, y in zip(nx, ny)) else "valid"
    width = [(0, 0)] * conv_start + [((m - 1) // 2, m - 1 - (m - 1) // 2) for m in nb]
    return mnp.pad(g, width), "valid"


def _differentiable(x):
    dt = x.dtype if hasattr(x, "dtype") else numpy.result_type(x)
    return numpy.issubdtype(dt, numpy.inexact)


def _nd_vjp(which):
    def maker(ans, a, b, mode, method):
        x, y = (a, b) if which == 0 else (b, a)
        if not _differentiable(x):
            return lambda g: None
        na, nb = _shape(a), _shape(b)
        nx, ny = (na, nb) if which == 0 else (nb, na)
        y_reflected = conj_if_complex(mnp.flip(y))

        def vjp(g):
            gc, m = _cotangent(g, na, nb, nx, ny, mode, 0)
            return cast_like(_convolve_nd(gc, y_reflected, m, method), x)
        return vjp
    return maker


def _general_vjp(which):
    def maker(ans, a, b, axes, dot_axes, mode):
        x, y = (a, b) if which == 0 else (b, a)
        if not _differentiable(x):
            return lambda g: None
        (ca, cb), (da, db) = axes, dot_axes
        ia, ib = _others(len(_shape(a)), ca, da), _others(len(_shape(b)), cb, db)
        na = tuple(_shape(a)[k] for k in ca)
        nb = tuple(_shape(b)[k] for k in cb)
        n_out_others = len(ia) + len(ib)
        if which == 0:
            cx, cy, dx, dy, ix, iy, nx, ny = ca, cb, da, db, ia, ib, na, nb
            out_iy = tuple(range(len(ia), n_out_others))
        else:
            cx, cy, dx, dy, ix, iy, nx, ny = cb, ca, db, da, ib, ia, nb, na
            out_iy = tuple(range(len(ia)))
        out_conv = tuple(range(n_out_others, n_out_others + len(ca)))
        y_reflected = conj_if_complex(mnp.flip(y, axis=cy) if cy else y)
        # the result's axes: x's others, x's dot axes (in the order of y's), x's conv axes
        placed = ix + tuple(dx[dy.index(k)] for k in sorted(dy)) + cx
        back = tuple(int(k) for k in numpy.argsort(placed))

        def vjp(g):
            gc, m = _cotangent(g, na, nb, nx, ny, mode, n_out_others)
            r = _convolve_general(gc, y_reflected, (out_conv, cy), (out_iy, iy), m)
            if back != tuple(range(len(back))):
                r = mnp.transpose(r, back)
            return cast_like(r, x)
        return vjp
    return maker


defvjp(_convolve_nd, _nd_vjp(0), _nd_vjp(1))
defvjp(_convolve_general, _general_vjp(0), _general_vjp(1))


# ---------------------------------------------------------------- public functions
def _as_operand(x, fname, which):
    if type(x) is Array or isinstance(x, numpy.ndarray):
        return x
    if isinstance(x, (numbers.Number, list, tuple)):
        return numpy.asarray(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):     # a backend array (CuPy)
        return x
    raise TypeError(f"{fname}: {which} must be an array, got {type(x).__name__}")


def _check_mode(fname, mode, method=None):
    if mode not in _MODES:
        raise ValueError(f"{fname}: mode must be one of 'full', 'valid', 'same', got {mode!r}")
    if method is not None and method not in _METHODS:
        raise ValueError(f"{fname}: method must be one of 'auto', 'direct', 'fft', "
                         f"got {method!r}")


def _valid_sizes_ok(fname, sa, sb, na, nb, what="every dimension"):
    if not (all(n >= m for n, m in zip(na, nb)) or all(n <= m for n, m in zip(na, nb))):
        raise ValueError(f"{fname}: for mode='valid' one input must be at least as large as "
                         f"the other in {what}; got shapes {sa} and {sb}")


def _axis_list(fname, name, seq, ndim, shape):
    try:
        seq = [int(k) for k in seq]
    except TypeError:
        raise TypeError(f"{fname}: {name} must be a sequence of ints, got {seq!r}") from None
    out = []
    for k in seq:
        if not -ndim <= k < ndim:
            raise ValueError(f"{fname}: {name} has axis {k}, out of range for an operand "
                             f"of shape {shape}")
        out.append(k % ndim)
    return tuple(out)


def _pair(fname, name, value, sa, sb):
    try:
        first, second = value
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: {name} must be a pair (axes of in1, axes of in2), "
                        f"got {value!r}") from None
    first = _axis_list(fname, f"{name}[0]", first, len(sa), sa)
    second = _axis_list(fname, f"{name}[1]", second, len(sb), sb)
    if len(first) != len(second):
        raise ValueError(f"{fname}: {name} pairs {len(first)} axes of in1 with "
                         f"{len(second)} axes of in2; they must pair one to one")
    return first, second


def _normalize_extended(fname, sa, sb, axes, dot_axes, mode):
    """Checked ``(axes, dot_axes)`` as tuples of non-negative ints."""
    if axes is None:
        axes = (range(len(sa)), range(len(sa)))
    if dot_axes is None:
        dot_axes = ((), ())
    ca, cb = _pair(fname, "axes", axes, sa, sb)
    da, db = _pair(fname, "dot_axes", dot_axes, sa, sb)
    for used, shape, label in (((ca, da), sa, "in1"), ((cb, db), sb, "in2")):
        flat = used[0] + used[1]
        if len(set(flat)) != len(flat):
            raise ValueError(f"{fname}: an axis of {label} (shape {shape}) is named twice "
                             f"in axes/dot_axes {used[0]} / {used[1]}")
    for p, q in zip(da, db):
        if sa[p] != sb[q]:
            raise ValueError(f"{fname}: dot_axes pair in1 axis {p} (size {sa[p]}) with in2 "
                             f"axis {q} (size {sb[q]}); shapes {sa} and {sb}")
    na, nb = tuple(sa[k] for k in ca), tuple(sb[k] for k in cb)
    if mode == "valid":
        _valid_sizes_ok(fname, sa, sb, na, nb, "every convolved axis")
    if any(s == 0 for s in sa + sb):
        raise ValueError(f"{fname}: inputs must not be empty; got shapes {sa} and {sb}")
    return (ca, cb), (da, db)


def _is_plain(sa, sb, axes, dot_axes):
    """True when the extended arguments describe SciPy's all-axes convolution."""
    (ca, cb), (da, db) = axes, dot_axes
    every = tuple(range(len(sa)))
    return len(sa) == len(sb) and not da and not db and ca == every and cb == every


_KEYWORDS = ("mode", "method", "axes", "dot_axes")


def _parse(fname, args, kwargs):
    """``(mode, method, axes, dot_axes)`` from SciPy's positional form ``(mode, method)``
    or autograd's ``(axes, dot_axes, mode)`` (the third argument a string: SciPy's),
    plus keywords."""
    unknown = set(kwargs) - set(_KEYWORDS)
    if unknown:
        raise TypeError(f"{fname}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    names = ("mode", "method") if not args or isinstance(args[0], str) else \
        ("axes", "dot_axes", "mode")
    if len(args) > len(names):
        raise TypeError(f"{fname}() takes at most {2 + len(names)} positional arguments "
                        f"({2 + len(args)} given)")
    values = dict(kwargs)
    for name, value in zip(names, args):
        if name in values:
            raise TypeError(f"{fname}() got multiple values for argument {name!r}")
        values[name] = value
    return (values.get("mode", "full"), values.get("method"), values.get("axes"),
            values.get("dot_axes"))


def _convolve(fname, in1, in2, mode, method, axes, dot_axes):
    in1 = _as_operand(in1, fname, "in1")
    in2 = _as_operand(in2, fname, "in2")
    sa, sb = _shape(in1), _shape(in2)
    _check_mode(fname, mode, "auto" if method is None else method)
    if axes is None and dot_axes is None:
        if len(sa) != len(sb):
            raise ValueError(f"{fname}: in1 and in2 should have the same dimensionality; "
                             f"got shapes {sa} and {sb}")
        if not sa:                          # 0-d: SciPy returns in1 * in2
            return mnp.multiply(in1, in2)
        if 0 in sa or 0 in sb:
            raise ValueError(f"{fname}: inputs must not be empty; got shapes {sa} and {sb}")
        if mode == "valid":
            _valid_sizes_ok(fname, sa, sb, sa, sb)
        return _convolve_nd(in1, in2, mode, method or "auto")
    if method not in (None, "auto"):
        raise ValueError(f"{fname}: method={method!r} applies to the plain form only; the "
                         "form with axes/dot_axes computes directly")
    axes, dot_axes = _normalize_extended(fname, sa, sb, axes, dot_axes, mode)
    if _is_plain(sa, sb, axes, dot_axes):
        if not sa:
            return mnp.multiply(in1, in2)
        return _convolve_nd(in1, in2, mode, "auto")
    return _convolve_general(in1, in2, axes, dot_axes, mode)


def convolve(in1, in2, *args, **kwargs):
    """Convolve two n-dimensional arrays, differentiably.

    SciPy's form ``convolve(in1, in2, mode='full', method='auto')``: the discrete
    linear convolution of ``in1`` and ``in2`` (same number of dimensions), with
    SciPy's values and dtypes. HIPS autograd's extended form ``convolve(A, B,
    axes=None, dot_axes=[(), ()], mode='full')`` (also positionally:
    ``convolve(A, B, axes, dot_axes)``): convolve axis ``axes[0][i]`` of ``A``
    with axis ``axes[1][i]`` of ``B``, sum the products over the ``dot_axes``
    pairs (as ``tensordot``), and take the outer product over every other axis.

    Args:
        in1, in2: arrays (minpy Arrays, NumPy arrays or nested lists).
        mode: ``'full'`` (sizes ``n + m - 1`` along each convolved axis),
            ``'valid'`` (``|n - m| + 1``; one input must be at least as large as
            the other along every convolved axis) or ``'same'`` (the size of
            ``in1``, centred in the 'full' output).
        method: ``'auto'``, ``'direct'`` or ``'fft'`` (SciPy's form only), as
            ``scipy.signal.convolve``.
        axes: extended form: a pair (axes of ``in1``, axes of ``in2``) to
            convolve; ``None`` convolves every axis of ``in1`` with the same axis
            of ``in2``.
        dot_axes: extended form: a pair (axes of ``in1``, axes of ``in2``) of
            equal sizes to contract.

    Returns:
        A minpy Array. SciPy's form: SciPy's result. Extended form: axes ordered
        as ``in1``'s other axes, ``in2``'s other axes, then the convolved axes in
        the order of the ``axes`` pairs.

    Raises:
        ValueError: (naming the function and the shapes) a bad mode or method,
            different numbers of dimensions (SciPy's form), inputs where 'valid' has
            no output, empty inputs, axes out of range, named twice, or dot axes of
            different sizes.
        TypeError: malformed ``axes``/``dot_axes``.

    Differentiable with respect to both inputs, to any order (its gradient is
    a convolution too). On CuPy arrays SciPy's form runs
    ``cupyx.scipy.signal.convolve``; the extended form runs on any backend.

    See also scipy.signal.convolve, autograd.scipy.signal.convolve.
    """
    fname = "minpy.scipy.signal.convolve"
    mode, method, axes, dot_axes = _parse(fname, args, kwargs)
    return _convolve(fname, in1, in2, mode, method, axes, dot_axes)


def _reflect(x, axes):
    """``x`` reversed along ``axes`` (every axis for None) and conjugated."""
    if type(x) is not Array:
        x = numpy.asarray(x)
    if axes is None:
        r = mnp.flip(x)
    elif axes:
        r = mnp.flip(x, axis=tuple(axes))
    else:
        r = x
    return conj_if_complex(r)


def correlate(in1, in2, *args, **kwargs):
    """Cross-correlate two n-dimensional arrays, differentiably.

    ``correlate(in1, in2, mode='full', method='auto')`` is SciPy's
    ``scipy.signal.correlate``: ``z[k] = sum_l in1[l] * conj(in2[l - k])``, that
    is :func:`convolve` of ``in1`` with ``in2`` reversed along every axis and
    conjugated. The extended form (``axes``, ``dot_axes``, as in :func:`convolve`)
    reverses ``in2`` along its ``axes[1]`` only.

    Args:
        in1, in2: arrays.
        mode: ``'full'``, ``'valid'`` or ``'same'`` (output sizes as in
            :func:`convolve`).
        method: ``'auto'``, ``'direct'`` or ``'fft'`` (SciPy's form only).
        axes, dot_axes: the extended form, as in :func:`convolve`.

    Returns:
        A minpy Array with SciPy's values (to rounding: computed as a convolution).

    Raises:
        ValueError / TypeError as :func:`convolve`, naming ``correlate``.

    Differentiable with respect to both inputs, to any order.

    See also scipy.signal.correlate.
    """
    fname = "minpy.scipy.signal.correlate"
    mode, method, axes, dot_axes = _parse(fname, args, kwargs)
    in1 = _as_operand(in1, fname, "in1")
    in2 = _as_operand(in2, fname, "in2")
    if axes is None and dot_axes is None:
        flip_axes = None
    else:
        sa, sb = _shape(in1), _shape(in2)
        _check_mode(fname, mode)
        axes, dot_axes = _normalize_extended(fname, sa, sb, axes, dot_axes, mode)
        flip_axes = axes[1]
    if not _shape(in2):
        flip_axes = ()
    return _convolve(fname, in1, _reflect(in2, flip_axes), mode, method, axes, dot_axes)


def _signature():
    """``inspect.signature`` of the public functions: SciPy's parameters first, then
    the extended form's keywords (positionally, autograd's ``axes, dot_axes, mode``
    is also accepted)."""
    P = inspect.Parameter
    return inspect.Signature([
        P("in1", P.POSITIONAL_OR_KEYWORD), P("in2", P.POSITIONAL_OR_KEYWORD),
        P("mode", P.POSITIONAL_OR_KEYWORD, default="full"),
        P("method", P.POSITIONAL_OR_KEYWORD, default="auto"),
        P("axes", P.KEYWORD_ONLY, default=None), P("dot_axes", P.KEYWORD_ONLY, default=None)])


convolve.__signature__ = correlate.__signature__ = _signature()
