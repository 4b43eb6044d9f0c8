"""More of the autograd API, built on the tape: ``elementwise_grad``, ``make_vjp``,
``make_jvp``, ``hessian``, ``grad_named``, ``holomorphic_grad``.

``make_vjp`` runs the function once and keeps its tape, so the returned
``vjp(g)`` can be called for many cotangents (one backward pass each).
``make_jvp`` is forward mode by the double-VJP trick: ``u -> vjp(u)`` is
linear in ``u``, so the gradient of ``u -> <vjp(u), v>`` is ``J v``; the
backward pass is recorded on a second tape and differentiated (about three
times the cost of one backward pass).

Complex numbers follow :func:`minpy.grad`'s convention, the gradient of the
real loss ``Re <f, g>``: a holomorphic ``f`` has ``vjp(g) = g * conj(f')``.
:func:`holomorphic_grad` returns autograd's answer, the complex derivative
``f'``.
"""
import functools
import inspect
import numbers
import warnings

import numpy

from .array import Array
from . import tree
from .autograd import (_check_like, _check_positions, _conjugate, _forward_backward, _grads_of,
                       _name, _norm_argnum, _on_current_context, _paired_leaves, _trace,
                       _vdot_real, backward, grad, jacobian)
from .ops import ONES_LIKE, ZEROS_LIKE, apply
from .saved import check_sealed, seal

__all__ = ["elementwise_grad", "make_vjp", "make_jvp", "hessian", "grad_named",
           "holomorphic_grad"]


# ---------------------------------------------------------------- outputs as trees
def _out_tree(out, tape, refs, values, who):
    """The function's output with each traced leaf unboxed; ``refs`` gets each leaf's
    tape ref (None: not traced by ``tape``), ``values`` the unboxed leaf."""
    lv, td = tree.flatten(out)
    return tree.unflatten(td, [_out_leaf(v, tape, refs, values, who) for v in lv])


def _out_leaf(out, tape, refs, values, who):
    if type(out) is Array:
        n = out._node
        if n is not None and n.tape is tape:
            refs.append(n)
            values.append(n.value)
            return n.value
        refs.append(None)
        values.append(out)
        return out
    if isinstance(out, (numbers.Number, numpy.ndarray, numpy.generic)) and \
            not isinstance(out, bool):
        refs.append(None)
        values.append(out)
        return out
    raise TypeError(f"{who}: the function returned a {type(out).__name__}; expected an array, "
                    "a number, or a list/tuple/dict of them")


def _as_seed(g, like, where, who):
    """Cotangent ``g`` for output leaf ``like`` as an Array of its shape."""
    gs, ls = numpy.shape(g), numpy.shape(like)
    if gs != ls:
        raise ValueError(f"{who}: the cotangent{where} has shape {gs}, the function's output "
                         f"has shape {ls}; they must match")
    if type(g) is Array:
        return g
    return _on_current_context(numpy.asarray(g))


def _seeds(g, ans, refs, values, who):
    """[(ref, seed)] for the traced output leaves, after checking g is shaped like ans."""
    _check_like(who, "the cotangent", g, ans, "", "the function's output")
    out_refs, seeds = [], []
    for (_, gl), ref, v in zip(_paired_leaves(ans, g), refs, values):
        if ref is not None:
            out_refs.append(ref)
            seeds.append(_as_seed(gl, v, "", who))
    return out_refs, seeds


def _vjp_pass(tape, leaves, structs, argnum, out_refs, seeds):
    found = backward(tape, out_refs, seeds) if out_refs else {}
    return _grads_of(found, leaves, structs, argnum)


# ---------------------------------------------------------------- public API
def make_vjp(fun, argnum=0):
    """The vector-Jacobian product of ``fun`` at a point, reusable for many cotangents.

    Args:
        fun: a function of minpy arrays; its output may be an array of any
            shape, a number, or a nested list/tuple/dict of them.
        argnum: an int, or a sequence of ints (then ``vjp`` returns a tuple);
            an argument may be a nested list/tuple/dict of arrays.
    Returns:
        ``(*args, **kwargs) -> (vjp, ans)``: ``ans`` is ``fun``'s value,
        ``vjp(g)`` the gradient of ``Re <ans, g>`` w.r.t. the argument(s), in
        their structure, shape and dtype; ``g`` has ``ans``'s structure and
        shapes. The recorded tape lives as long as ``vjp``. ``vjp`` is
        differentiable in ``g`` and in the point (grad of grad).
        See also autograd.make_vjp.
    """
    argnum = _norm_argnum(argnum, "minpy.make_vjp")
    who = f"minpy.make_vjp({_name(fun)})"

    @functools.wraps(fun)
    def vjp_maker(*args, **kwargs):
        tape, leaves, structs, out = _trace(fun, argnum, args, kwargs, "minpy.make_vjp")
        refs, values = [], []
        try:
            ans = _out_tree(out, tape, refs, values, who)
        except TypeError:
            tape.nodes = None
            raise
        seal(tape)        # vjp(g) runs later: refuse it if a saved buffer is written meanwhile

        def vjp(g):
            check_sealed(tape, who)
            out_refs, seeds = _seeds(g, ans, refs, values, who)
            return _vjp_pass(tape, leaves, structs, argnum, out_refs, seeds)
        return vjp, ans
    return vjp_maker


def elementwise_grad(fun, argnum=0):
    """The sum of ``fun``'s Jacobian rows: the VJP with a cotangent of ones.

    For a function applied elementwise (``x -> sin(x) * x``) this is the
    elementwise derivative, in the argument's shape.

    Args:
        fun: a function of minpy arrays (any output shape, or a nested
            list/tuple/dict of outputs: each gets ones).
        argnum: an int, or a sequence of ints (then a tuple of gradients).
    Returns:
        ``(*args, **kwargs) -> gradient``, shaped (and structured) as the
        argument. Complex: minpy's convention (``conj(f')`` for holomorphic
        ``f``). See also autograd.elementwise_grad.
    """
    argnum = _norm_argnum(argnum, "minpy.elementwise_grad")
    who = f"minpy.elementwise_grad({_name(fun)})"

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        tape, leaves, structs, out = _trace(fun, argnum, args, kwargs, "minpy.elementwise_grad")
        try:
            refs, values = [], []
            _out_tree(out, tape, refs, values, who)
            out_refs = [r for r in refs if r is not None]
            seeds = [apply(ONES_LIKE, v) for r, v in zip(refs, values) if r is not None]
            return _vjp_pass(tape, leaves, structs, argnum, out_refs, seeds)
        finally:
            tape.nodes = None
    return wrapped


def make_jvp(fun, argnum=0):
    """The Jacobian-vector product (forward mode) of ``fun`` at a point.

    Computed by the double-VJP trick (see the module docstring): no forward
    rules are needed, every differentiable function works, at about three
    backward passes per tangent.

    Args:
        fun: a function of minpy arrays; its output may be an array of any
            shape, a number, or a nested list/tuple/dict of them.
        argnum: an int, or a sequence of ints (then ``v`` is a tuple with one
            tangent per argument).
    Returns:
        ``(*args, **kwargs) -> jvp`` with ``jvp(v) -> (ans, J v)``: ``v`` has
        the argument's shape (or structure), ``J v`` the output's: the
        directional derivative ``d/dt fun(x + t v)`` at ``t = 0`` (complex
        too). See also autograd.make_jvp.
    """
    argnum = _norm_argnum(argnum, "minpy.make_jvp")
    vjp_maker = make_vjp(fun, argnum)
    who = f"minpy.make_jvp({_name(fun)})"

    @functools.wraps(fun)
    def jvp_maker(*args, **kwargs):
        argnums = (argnum,) if type(argnum) is int else argnum
        _check_positions(fun, argnums, len(args), "minpy.make_jvp")
        x = args[argnum] if type(argnum) is int else tuple(args[a] for a in argnum)
        vjp, ans = vjp_maker(*args, **kwargs)
        u0 = _zeros_tree(ans)

        def jvp(v):
            _check_like(who, "the tangent", v, x, "")
            return ans, grad(lambda u: _vdot_real(vjp(u), v))(u0)
        return jvp
    return jvp_maker


def _zeros_tree(ans):
    return tree.map_tree(_zeros_leaf, ans)


def _zeros_leaf(ans):
    if type(ans) is Array:
        return apply(ZEROS_LIKE, ans)
    if isinstance(ans, (numpy.ndarray, numpy.generic)):
        return _on_current_context(numpy.zeros_like(ans))
    return 0.0 if not isinstance(ans, complex) else 0j


def hessian(fun, argnum=0):
    """The Hessian of ``fun`` w.r.t. argument ``argnum``: shape ``x.shape + x.shape``.

    ``jacobian(jacobian(fun))``: for a non-scalar ``fun`` the shape is
    ``out.shape + x.shape + x.shape``. One backward pass per element of
    ``x`` (times the output's size). For large ``x`` prefer
    :func:`minpy.hessian_vector_product`.

    Args:
        fun: a function of minpy arrays.
        argnum: an int: the array (or float) argument.
    Returns:
        ``(*args, **kwargs) -> Hessian`` (an Array). See also autograd.hessian.
    """
    argnum = _norm_argnum(argnum, "minpy.hessian")
    if type(argnum) is not int:
        raise TypeError(f"minpy.hessian: argnum must be an int, got {argnum!r} (take the "
                        "Hessian of each argument, or flatten them into one vector with "
                        "minpy.misc.flatten)")
    return jacobian(jacobian(fun, argnum), argnum)


def grad_named(fun, argname):
    """The gradient of scalar ``fun`` w.r.t. its argument named ``argname``.

    The argument may be passed positionally or by keyword (or left to its
    default).

    Args:
        fun: a scalar function of minpy arrays with a named parameter ``argname``.
        argname: the parameter's name (not ``*args``/``**kwargs``).
    Returns:
        ``(*args, **kwargs) -> gradient`` in that argument's structure.
        See also autograd.grad_named.
    """
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError) as e:
        raise TypeError(f"minpy.grad_named: cannot read the signature of {_name(fun)}: {e}") \
            from None
    p = sig.parameters.get(argname)
    if p is None or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
        names = ", ".join(n for n, q in sig.parameters.items()
                          if q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD))
        raise ValueError(f"minpy.grad_named: {_name(fun)} has no argument named {argname!r} "
                         f"(its arguments: {names or 'none'})")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"minpy.grad_named({_name(fun)}): {e}") from None
        bound.apply_defaults()
        value = bound.arguments[argname]

        def at(v):
            bound.arguments[argname] = v
            return fun(*bound.args, **bound.kwargs)
        at.__name__ = _name(fun)
        return grad(at)(value)
    return wrapped


def holomorphic_grad(fun, argnum=0):
    """The complex derivative ``f'(z)`` of a holomorphic scalar function.

    autograd's convention: for holomorphic ``f``, ``holomorphic_grad(f)(z)``
    is ``df/dz`` (e.g. ``2 z`` for ``z ** 2``). minpy's :func:`grad` of a
    complex function is the gradient of its real part, ``conj(f')``; this is
    its conjugate. It nests (``holomorphic_grad(holomorphic_grad(f))`` is
    ``f''``). A non-complex argument gets a warning, as in autograd.

    Args:
        fun: a holomorphic function of complex minpy arrays returning a scalar.
        argnum: an int, or a sequence of ints (then a tuple).
    Returns:
        ``(*args, **kwargs) -> f'`` in the argument's structure.
        See also autograd.holomorphic_grad.
    """
    argnum = _norm_argnum(argnum, "minpy.holomorphic_grad")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        argnums = (argnum,) if type(argnum) is int else argnum
        _check_positions(fun, argnums, len(args), "minpy.holomorphic_grad")
        for a in argnums:
            if not all((v.dtype.kind == "c") if type(v) is Array else numpy.iscomplexobj(v)
                       for v in tree.leaves(args[a])):
                warnings.warn(f"minpy.holomorphic_grad({_name(fun)}): argument {a} is not "
                              "complex", stacklevel=2)
        g, _ = _forward_backward(fun, argnum, args, kwargs, allow_complex=True)
        return tree.map_tree(_conj_leaf, g)
    return wrapped


def _conj_leaf(x):
    if type(x) is Array:
        return _conjugate(x) if x.dtype.kind == "c" else x
    return x.conjugate() if isinstance(x, (complex, numpy.ndarray, numpy.generic)) else x
