"""``grad``, ``grad_and_loss``, ``value_and_grad``, ``jacobian``, ``hessian_vector_product``,
``defvjp``/``defvjp_argnums`` (the rest of autograd's API is in
:mod:`minpy.core.differentials`; custom ops in :mod:`minpy.core.custom_ops`).

Forward: the arguments named by ``argnum`` are boxed as leaves of a new tape
and the function runs, recording every primitive call on traced arrays.
Backward: nodes reachable from the output are visited in reverse recording
order (an iterative walk, no recursion), each VJP rule is called with the
node's unboxed ``(ans, *args, **kwargs)`` and returns a function of the
output gradient; each node's gradient is dropped as soon as it is consumed.
"""
import collections.abc
import functools
import numbers

import numpy

from ..dispatch import state
from ..dispatch.context import current_context
from ..dispatch.transfer import context_of, move_raw
from .array import Array, kept, new
from .execute import run
from .ops import BROADCAST_TO, ONES_LIKE, REAL, RESHAPE, STACK, SUM, ZEROS_LIKE, apply
from .primitive import PRIMITIVES, Primitive
from .recorder import tracing
from .tape import Node, OutRef, leaf, new_tape, close_tape
from . import tree
from .wrappers import make_ufunc

__all__ = ["grad", "grad_and_loss", "value_and_grad", "jacobian", "hessian_vector_product",
           "stop_gradient", "defvjp", "defvjp_argnums", "def_nondiff", "backward"]


# ---------------------------------------------------------------- rules
def _prim_of(fn):
    if isinstance(fn, Primitive):
        return fn
    p = getattr(fn, "_prim", None)
    if p is None and isinstance(fn, str):
        p = PRIMITIVES[fn]
    if p is None:
        raise TypeError(f"defvjp: {fn!r} is not a minpy primitive")
    return p


def defvjp(fn, *makers, argnums=None, **kw_makers):
    """Define the VJP rules of primitive ``fn``, one per positional argument.

    Each maker is ``maker(ans, *args, **kwargs) -> (lambda g: grad_wrt_arg)``,
    written against minpy's namespace; ``None`` marks an argument without a
    gradient. Keyword-argument rules are given by name. For an argument that
    is a sequence of arrays (``concatenate``), the maker returns a sequence.

    Args:
        fn: a minpy primitive: a ``minpy.customop``, a namespace function, a
            :class:`Primitive` or its registered name.
        *makers: the rules of positional arguments 0, 1, ... (or of the
            positions in ``argnums``).
        argnums: as autograd's ``defvjp(f, vjp0, vjp2, argnums=[0, 2])``: the
            positions the makers are for.
        **kw_makers: rules of keyword arguments, by name.
    Returns:
        ``fn``. See also autograd.extend.defvjp.
    """
    p = _prim_of(fn)
    if argnums is None:
        positions = range(len(makers))
    else:
        positions = list(argnums)
        if len(positions) != len(makers) or not all(
                isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in positions):
            raise TypeError(f"defvjp({p.qualname}): argnums must be one int per maker; got "
                            f"{len(makers)} makers and argnums={argnums!r}")
    rules = _copy_rules(p.vjp)
    for i, m in zip(positions, makers):
        if m is not None:
            rules[int(i)] = m
    rules.update(kw_makers)
    p.vjp = rules
    p.nondiff = False
    return fn


class _ArgnumsRules(dict):
    """A rule table with a rule for every positional argument, made from one
    autograd-style ``maker(argnums, ans, args, kwargs) -> (g -> tuple of grads)``.

    ``backward`` asks for one argument's rule at a time, so the maker is
    called with a one-element ``argnums`` for each differentiated argument.
    """

    def __init__(self, maker, qualname):
        super().__init__()
        self.maker = maker
        self.qualname = qualname

    def _rule(self, i):
        r = dict.get(self, i)
        if r is None:
            maker, name = self.maker, self.qualname

            def r(ans, *args, **kwargs):
                vjp = maker((i,), ans, args, kwargs)

                def one(g):
                    out = vjp(g)
                    if not isinstance(out, (tuple, list)) or len(out) != 1:
                        raise TypeError(f"minpy.grad: the defvjp_argnums rule of {name} must "
                                        "return a tuple with one gradient per argnum; for "
                                        f"argnums=({i},) it returned {type(out).__name__}"
                                        + (f" of length {len(out)}" if isinstance(
                                            out, (tuple, list)) else ""))
                    return out[0]
                return one
            dict.__setitem__(self, i, r)
        return r

    def get(self, key, default=None):
        if type(key) is int:
            return self._rule(key)
        return dict.get(self, key, default)

    def __contains__(self, key):
        return type(key) is int or dict.__contains__(self, key)

    def __getitem__(self, key):
        if type(key) is int:
            return self._rule(key)
        return dict.__getitem__(self, key)


def _copy_rules(vjp):
    """A copy of a rule table (an ``_ArgnumsRules`` stays one)."""
    if type(vjp) is _ArgnumsRules:
        out = _ArgnumsRules(vjp.maker, vjp.qualname)
        dict.update(out, vjp)
        return out
    return dict(vjp or {})


def defvjp_argnums(fn, vjp_argnums):
    """Define all positional-argument VJP rules of primitive ``fn`` with one maker.

    Args:
        fn: a ``minpy.customop`` (or another minpy primitive).
        vjp_argnums: ``vjp_argnums(argnums, ans, args, kwargs) -> (lambda g:
            tuple of gradients)``, one gradient per entry of ``argnums`` in that
            order. minpy calls it once per differentiated argument, with a
            one-element ``argnums``.
    Returns:
        ``fn``. Replaces any rule defined earlier for ``fn``'s positional
        arguments. See also autograd.extend.defvjp_argnums.
    """
    p = _prim_of(fn)
    if not callable(vjp_argnums):
        raise TypeError(f"defvjp_argnums({p.qualname}): the maker must be callable, got "
                        f"{type(vjp_argnums).__name__}")
    rules = _ArgnumsRules(vjp_argnums, p.qualname)
    for k, m in (p.vjp or {}).items():
        if type(k) is not int:          # keyword rules stay
            dict.__setitem__(rules, k, m)
    p.vjp = rules
    p.nondiff = False
    return fn


def def_nondiff(*fns):
    """Mark primitives whose outputs carry no gradient (argmax, floor, comparisons ...)."""
    for fn in fns:
        _prim_of(fn).nondiff = True


# ---------------------------------------------------------------- backward
def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b            # Arrays (backward keeps scalar results Arrays)


def _zeros_like(v):
    return apply(ZEROS_LIKE, v)


def backward(tape, out_ref, g):
    """Propagate ``g`` from the output node ``out_ref`` of ``tape`` back to its leaves.

    ``out_ref`` may also be a list of output refs with ``g`` the list of their
    gradients (seeded together, one walk). Walks the tape's nodes newest first
    (recording order is a topological order), skipping nodes no gradient
    reached. Returns {leaf Node: gradient}.
    """
    flags = _per_thread.flags
    flags.keep_scalars += 1         # the rules compute on Arrays, scalar ones included
    try:
        return _walk(tape, out_ref, g)
    finally:
        flags.keep_scalars -= 1


def _walk(tape, out_ref, g):
    grads = {}
    if type(out_ref) is list:       # several outputs (make_vjp of a tuple): one seed each
        for r, gr in zip(out_ref, g):
            _accumulate(grads, r, gr)
    else:
        _accumulate(grads, out_ref, g)
    pop = grads.pop
    for node in reversed(tape.nodes):
        gn = pop(node, None)
        if gn is None:
            continue
        if type(gn) is list:
            if node.outdef is not None:        # nested outputs: gradients in their tree
                gn = tree.unflatten(node.outdef, [
                    _zeros_like(v) if gi is None else gi
                    for gi, v in zip(gn, tree.leaves(node.value))])
            else:
                gn = tuple(_zeros_like(v) if gi is None else gi
                           for gi, v in zip(gn, node.value))
        rules = node.prim.vjp
        kwargs = node.kwargs
        seq_cache = None
        for address, parent in node.parents:
            if type(address) is tuple:
                pos, item = address
                if seq_cache is None:
                    seq_cache = {}
                seq = seq_cache.get(pos)
                if seq is None:
                    if pos not in rules:
                        raise TypeError(f"minpy.grad: {node.prim.qualname} has no gradient with "
                                        f"respect to argument {pos!r}")
                    seq = seq_cache[pos] = rules[pos](node.value, *node.args,
                                                      **(kwargs or _EMPTY))(gn)
                pg = seq[item]
            else:
                rule = rules.get(address)
                if rule is None:
                    raise TypeError(f"minpy.grad: {node.prim.qualname} has no gradient with "
                                    f"respect to argument {address!r}")
                if node.prim.custom is not None and _process.tracers and tracing():
                    pg = _traced_custom_vjp(node, rule, gn)
                else:
                    pg = rule(node.value, *node.args, **kwargs)(gn) if kwargs else \
                        rule(node.value, *node.args)(gn)
            if pg is not None:
                if type(pg) is not Array:      # a NumPy scalar the rule computed
                    pg = kept(pg)
                if type(parent) is Node:
                    old = grads.get(parent)
                    grads[parent] = pg if old is None else _add(old, pg)
                else:
                    _accumulate(grads, parent, pg)
    return grads      # what is left: the leaves


_EMPTY = {}
_process = state.process
_per_thread = state.per_thread


def _traced_custom_vjp(node, rule, g):
    """A custom op's gradient while ``minpy.jit`` traces: run as a custom primitive
    (``execute.run`` records it through the calls it makes, or as one opaque step
    when the rule computes on buffers)."""
    kwargs = node.kwargs or _EMPTY

    def vjp(ans, g, *args):
        return rule(ans, *args, **kwargs)(g)
    prim = Primitive(f"{node.prim.qualname}.vjp", vjp)
    prim.custom, prim.host_fn = vjp, None
    return run(prim, (node.value, g) + tuple(node.args), _EMPTY)


def _accumulate(grads, ref, g):
    if type(ref) is OutRef:
        slot = grads.get(ref.node)
        if slot is None:
            slot = grads[ref.node] = [None] * ref.node.nout
        slot[ref.index] = _add(slot[ref.index], g)
    else:
        grads[ref] = _add(grads.get(ref), g)


# ---------------------------------------------------------------- boxing inputs
def _on_current_context(host):
    """Host ndarray ``host`` as an Array on the current context (as ``minpy.asarray``)."""
    return new(move_raw(host, current_context()))


def _as_array(x, who):
    """Leaf ``x`` as an Array, and whether it was a Python/NumPy scalar (its gradient is
    then given back as a Python number). Bool and integer arrays are refused (as JAX
    and autograd): a gradient needs a real or complex input; Python ints count as
    floats (their value is exact)."""
    if isinstance(x, numpy.ndarray) and type(x) is not numpy.ndarray:
        raise TypeError(f"{who}: cannot differentiate with respect to a {type(x).__name__}: "
                        "an ndarray subclass (of numpy.ndarray or minpy.ndarray) is host NumPy "
                        "data, a constant to the tape; pass minpy.asarray(x)")
    if type(x) is Array or isinstance(x, numpy.ndarray):
        kind = (x._data if type(x) is Array else x).dtype.kind
        if kind != "f" and kind != "c":
            raise TypeError(f"{who}: cannot differentiate with respect to an array of dtype "
                            f"{x.dtype}; gradients need float or complex inputs (pass "
                            "x.astype(float))")
        return (x if type(x) is Array else _on_current_context(x)), False
    if isinstance(x, (bool, numpy.bool_)):
        raise TypeError(f"{who}: cannot differentiate with respect to a bool")
    if isinstance(x, numbers.Number):
        return _on_current_context(numpy.asarray(x if isinstance(x, (complex, numpy.inexact))
                                                 else float(x))), True
    raise TypeError(f"{who}: cannot differentiate with respect to a {type(x).__name__}; "
                    "expected an Array, a float, or a list/tuple/dict/namedtuple of them")


def _box_tree(x, tape, leaves, who="minpy.grad"):
    """``x`` (a tree: lists, tuples, dicts, namedtuples ... of arrays and Python numbers;
    ``None`` parts stay ``None``) with every leaf boxed on ``tape``; ``leaves`` collects
    (node, was_scalar, like). Returns (boxed tree, structure)."""
    lv, td = tree.flatten(x)
    boxed = []
    for v in lv:
        arr, scalar = _as_array(v, who)
        b = leaf(arr, tape)
        leaves.append((b._node, scalar, arr))
        boxed.append(b)
    return tree.unflatten(td, boxed), td


def _finish_grad(g, scalar, like):
    """The leaf gradient in the leaf's shape and dtype (zeros when unreached)."""
    if g is None:
        g = apply(ZEROS_LIKE, like)
    if g.shape != like.shape:
        g = apply(BROADCAST_TO, g, like.shape)
    if g.dtype != like.dtype and like.dtype.kind in "fc":
        if g.dtype.kind == "c" and like.dtype.kind != "c":
            g = apply(REAL, g)
        if g.dtype != like.dtype:
            g = g.astype(like.dtype)
    if scalar and g._node is None:
        return g.item()
    return g


def _unboxed(x, tape):
    """The value of ``x`` one level below ``tape`` (a traced output of ``tape``)."""
    n = getattr(x, "_node", None)
    if type(x) is Array and n is not None and n.tape is tape:
        return n.value
    return x


def _check_output(out, fun, allow_complex=False):
    """An untraced output is fine when it is a real number or array (zero gradient); a
    bool or complex output is refused, as autograd does."""
    if type(out) is Array or isinstance(out, (numbers.Number, numpy.ndarray, numpy.generic)):
        _check_output_dtype(out, fun, allow_complex)
        return
    raise TypeError(f"minpy.grad({_name(fun)}): the function returned a "
                    f"{type(out).__name__}; grad needs a scalar Array or number "
                    "(differentiate a sum of several outputs, or use minpy.jacobian)")


def _check_output_dtype(out, fun, allow_complex=False):
    """Refuse a bool or complex output: its gradient is not the real derivative of a
    real loss (autograd raises TypeError for both)."""
    kind = out.dtype.kind if hasattr(out, "dtype") else (
        "b" if isinstance(out, bool) else "c" if isinstance(out, complex) else "f")
    if kind == "b":
        raise TypeError(f"minpy.grad({_name(fun)}): the function returned a bool; a "
                        "comparison has no gradient (return the real-valued quantity)")
    if kind == "c" and not allow_complex:
        raise TypeError(f"minpy.grad({_name(fun)}): the function returned a complex value; "
                        "grad only applies to real scalar-output functions (use "
                        "minpy.holomorphic_grad for a holomorphic function, or differentiate "
                        "minpy.real(f) or minpy.abs(f))")


def _name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


def _norm_argnum(argnum, who="minpy.grad"):
    """``argnum`` as an int, or as a tuple for any sequence of ints (a range, a list)."""
    if isinstance(argnum, numbers.Integral) and not isinstance(argnum, bool):
        return int(argnum)
    if isinstance(argnum, collections.abc.Sequence) and not isinstance(argnum, (str, bytes)):
        nums = tuple(argnum)
        if nums and all(isinstance(a, numbers.Integral) and not isinstance(a, bool)
                        for a in nums):
            nums = tuple(int(a) for a in nums)
            if len(set(nums)) != len(nums):
                raise ValueError(f"{who}: argnum {argnum!r} names an argument twice")
            return nums
    raise TypeError(f"{who}: argnum must be an int or a non-empty sequence of ints "
                    f"(a tuple, list or range), got {argnum!r}")


def _one_array(argnum, args):
    return type(argnum) is int and 0 <= argnum < len(args) and type(args[argnum]) is Array


def _check_positions(fun, argnums, nargs, who):
    """Refuse an argnum out of range, or two naming one argument (after wrapping
    negatives; ``_norm_argnum`` already refused plain repeats)."""
    for a in argnums:
        if a >= nargs or a < 0:
            if not -nargs <= a < nargs:
                raise IndexError(f"{who}({_name(fun)}): argnum {a} out of range for {nargs} "
                                 f"positional argument{'s' if nargs != 1 else ''}")
            if len({b % nargs for b in argnums}) != len(argnums):
                raise ValueError(f"{who}({_name(fun)}): argnum {argnums} names an argument "
                                 "twice")


def _trace(fun, argnum, args, kwargs, who="minpy.grad"):
    """Run ``fun`` with the ``argnum`` arguments boxed as leaves of a new tape.

    Returns (tape, leaves, structs, out): the tape (closed, its nodes kept),
    [(leaf node, was_scalar, value)] in boxing order, {argnum: the argument's tree
    structure} and what ``fun`` returned.
    """
    argnums = (argnum,) if type(argnum) is int else argnum
    _check_positions(fun, argnums, len(args), who)
    tape = new_tape()
    leaves = []
    try:
        args = list(args)
        structs = {}
        for a in argnums:
            args[a], structs[a] = _box_tree(args[a], tape, leaves, f"{who}({_name(fun)})")
        out = fun(*args, **kwargs)
    finally:
        close_tape(tape)
    return tape, leaves, structs, out


def _grads_of(found, leaves, structs, argnum):
    """The leaves' gradients in the arguments' structure (one, or a tuple for a tuple)."""
    it = iter([_finish_grad(found.get(node), scalar, like) for node, scalar, like in leaves])
    if type(argnum) is int:
        return _restructure(structs[argnum], it)
    return tuple(_restructure(structs[a], it) for a in argnum)


def _forward_backward(fun, argnum, args, kwargs, allow_complex=False):
    tape, leaves, structs, out = _trace(fun, argnum, args, kwargs)
    loss = _unboxed(out, tape)
    ref = out._node if type(out) is Array else None
    if ref is None or ref.tape is not tape:
        tape.nodes = None
        _check_output(out, fun, allow_complex)
        found = {}
    else:
        if out.size != 1:
            tape.nodes = None
            raise TypeError(f"minpy.grad({_name(fun)}): the function returned an array of "
                            f"shape {out.shape}; grad needs a scalar output (use "
                            "minpy.jacobian, or reduce it)")
        if loss.dtype.kind == "c" and not allow_complex:
            tape.nodes = None
            _check_output_dtype(loss, fun)
        d = loss._data
        found = backward(tape, ref, _host_one(d.shape, d.dtype) if type(d) is numpy.ndarray
                         else apply(ONES_LIKE, loss))
    tape.nodes = None       # free the saved values now
    return _grads_of(found, leaves, structs, argnum), loss


def _forward_backward_one(fun, argnum, args, kwargs):
    """:func:`_forward_backward` for the common case: one float Array argument, a real
    scalar output."""
    x = args[argnum]
    if x._data.dtype.kind != "f":
        return _forward_backward(fun, argnum, args, kwargs)
    tape = new_tape()
    try:
        bx = leaf(x, tape)
        leaf_node = bx._node        # before fun: a write into bx rebinds bx._node
        if argnum == 0:
            args = (bx,) + args[1:]
        else:
            args = args[:argnum] + (bx,) + args[argnum + 1:]
        out = fun(*args, **kwargs) if kwargs else fun(*args)
    finally:
        close_tape(tape)
    ref = out._node if type(out) is Array else None
    if ref is None or ref.tape is not tape:
        tape.nodes = None
        _check_output(out, fun)
        return _finish_grad(None, False, x), out
    loss = ref.value
    d = loss._data
    if d.size != 1:
        tape.nodes = None
        raise TypeError(f"minpy.grad({_name(fun)}): the function returned an array of shape "
                        f"{d.shape}; grad needs a scalar output (use minpy.jacobian, or "
                        "reduce it)")
    if d.dtype.kind == "c":
        tape.nodes = None
        _check_output_dtype(d, fun)
    if type(d) is numpy.ndarray:        # _host_one's cache, looked up inline
        one = _ONES.get((d.shape, d.dtype))
        g0 = new(one) if one is not None else _host_one(d.shape, d.dtype)
    else:
        g0 = apply(ONES_LIKE, loss)
    found = backward(tape, ref, g0)
    tape.nodes = None
    g = found.get(leaf_node)
    if g is not None:
        gd = g._data
        xd = x._data
        if gd.shape == xd.shape and gd.dtype == xd.dtype:
            return g, loss
    return _finish_grad(g, False, x), loss


_ONES = {}
_conjugate = make_ufunc(numpy.conjugate)


def _host_one(shape, dtype):
    """A read-only host array of ones (the seed gradient), cached per shape and dtype."""
    key = (shape, dtype)
    one = _ONES.get(key)
    if one is None:
        one = numpy.ones(shape, dtype)
        one.flags.writeable = False
        if len(_ONES) < 64:
            _ONES[key] = one
    return new(one)


def _restructure(td, it):
    """The tree of structure ``td`` holding the next leaves of iterator ``it``."""
    if td is None:
        return next(it)
    n = td.num_leaves
    if td.flat and td.kind is list:       # a flat list: no walk
        return [next(it) for _ in range(n)]
    return tree.unflatten(td, [next(it) for _ in range(n)])


# ---------------------------------------------------------------- public API
def grad_and_loss(fun, argnum=0):
    """``f -> (lambda *args: (grads, loss))`` — MinPy's order.

    Args:
        fun: a Python function of minpy arrays returning a scalar.
        argnum: an int, or a sequence of ints (tuple, list, range): which
            positional arguments to differentiate. An argument may be a nested
            list/tuple/dict of arrays; its gradient has the same structure.
            Python floats are differentiable.
    Returns:
        A function returning ``(grads, loss)``; ``grads`` is one gradient for
        an int ``argnum``, a tuple for a sequence. See also autograd.grad.
    """
    argnum = _norm_argnum(argnum, "minpy.grad_and_loss")
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return (_forward_backward_one if _one_array(argnum, args) else
                _forward_backward)(fun, argnum, args, kwargs)
    return wrapped


def value_and_grad(fun, argnum=0):
    """Like :func:`grad_and_loss` but returns ``(loss, grads)`` (JAX/autograd order).

    See also autograd.value_and_grad.
    """
    argnum = _norm_argnum(argnum, "minpy.value_and_grad")
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        g, loss = (_forward_backward_one if _one_array(argnum, args) else
                   _forward_backward)(fun, argnum, args, kwargs)
        return loss, g
    return wrapped


def grad(fun, argnum=0):
    """The gradient of scalar function ``fun`` w.r.t. argument(s) ``argnum``.

    Args:
        fun: a Python function of minpy arrays returning a scalar.
        argnum: an int, or a sequence of ints (tuple, list, range); arguments
            may be nested lists/tuples/dicts of arrays and Python floats.
    Returns:
        ``(*args, **kwargs) -> gradient`` (a tuple of gradients for a
        sequence ``argnum``), each in its argument's structure, shape and
        dtype. ``fun`` must return a real scalar: a complex or bool output
        raises ``TypeError`` (as autograd; see ``holomorphic_grad``). For a
        complex argument and a real output, the gradient is ``df/dRe +
        i df/dIm`` (a descent direction); arguments of bool or integer
        dtype are refused.

    Nests: ``grad(grad(f))`` is the second derivative. See also autograd.grad.
    """
    argnum = _norm_argnum(argnum, "minpy.grad")
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return (_forward_backward_one if _one_array(argnum, args) else
                _forward_backward)(fun, argnum, args, kwargs)[0]
    return wrapped


def jacobian(fun, argnum=0):
    """The Jacobian of ``fun`` w.r.t. argument ``argnum``: shape ``out.shape + x.shape``.

    Args:
        fun: a function of minpy arrays returning an array (any shape) or a number.
        argnum: an int, or a sequence of ints (then a tuple of Jacobians); an
            argument may be a nested list/tuple/dict of arrays (its Jacobian
            has that structure, each leaf ``out.shape + leaf.shape``).
    Returns:
        ``(*args, **kwargs) -> Jacobian``. One forward pass, one backward
        pass per output element. See also autograd.jacobian.
    """
    argnum = _norm_argnum(argnum, "minpy.jacobian")
    name = _name(fun)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        tape, leaves, structs, out = _trace(fun, argnum, args, kwargs, "minpy.jacobian")
        try:
            value = _unboxed(out, tape)
            if not (type(value) is Array or
                    isinstance(value, (numbers.Number, numpy.ndarray, numpy.generic))):
                raise TypeError(f"minpy.jacobian({name}): the function returned a "
                                f"{type(out).__name__}; jacobian needs an array or number "
                                "output")
            ref = out._node if type(out) is Array else None
            traced = ref is not None and ref.tape is tape
            oshape = tuple(numpy.shape(value))
            size = int(numpy.prod(oshape, dtype=numpy.int64))
            where = context_of(value._data) if type(value) is Array else current_context()
            rows = [[] for _ in leaves]
            if traced:
                vdt = value.dtype
                for k in range(size):
                    basis = numpy.zeros(size, dtype=vdt)
                    basis[k] = 1
                    found = backward(tape, ref, new(move_raw(basis.reshape(oshape), where)))
                    for r, (node, _, like) in zip(rows, leaves):
                        r.append(_finish_grad(found.get(node), False, like))
        finally:
            tape.nodes = None
        jacs = []
        for r, (node, _, like) in zip(rows, leaves):
            shape = oshape + tuple(like.shape)
            if not r:       # an output that does not depend on x, or an empty one
                jacs.append(new(move_raw(numpy.zeros(shape, like.dtype), where)))
            else:
                jacs.append(apply(RESHAPE, apply(STACK, r), shape))
        it = iter(jacs)
        if type(argnum) is int:
            return _restructure(structs[argnum], it)
        return tuple(_restructure(structs[a], it) for a in argnum)
    return wrapped


_MISSING = object()


def _check_like(who, what, v, x, where, target="the argument"):
    """Refuse ``v`` unless it has the structure and leaf shapes of ``x`` (``target``).

    Containers are compared by kind (a list and a tuple of one length match, as do
    dicts of one key set), so a cotangent may be written with other container types.
    """
    if tree.is_node(x) and x is not None:
        if isinstance(x, dict):
            ok = isinstance(v, dict) and set(v) == set(x)
            keys = list(x)
        else:
            ok = isinstance(v, (list, tuple)) and len(v) == len(x)
            keys = range(len(x))
        if not ok:
            raise ValueError(f"{who}: {what}{where} must have the structure of {target}: "
                             f"{_describe(x)}, got {_describe(v)}")
        for k in keys:
            _check_like(who, what, v[k], x[k], f"{where}[{k!r}]", target)
        return
    vs, xs = numpy.shape(v), numpy.shape(x)
    if vs != xs:
        raise ValueError(f"{who}: {what}{where} has shape {vs}, {target}{where} has shape "
                         f"{xs}; they must match")


def _describe(x):
    if isinstance(x, dict):
        return f"a dict with keys {sorted(map(repr, x))}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)}"
    return f"a {type(x).__name__}"


def _paired_leaves(a, b):
    """(leaf of a, leaf of b) pairs of two like trees (checked by :func:`_check_like`),
    in ``a``'s order (dict values by ``a``'s keys)."""
    la, ta = tree.flatten(a)
    if ta is None:
        return [(a, b)]
    return list(zip(la, _leaves_like(b, ta)))


def _leaves_like(b, td):
    """The leaves of ``b`` read in the order of structure ``td`` (dicts by ``td``'s keys,
    any sequence by position)."""
    if td is None:
        return [b]
    if td.kind is type(None):           # an absent part: no leaves
        return []
    out = []
    keys = tree.dict_keys(td)
    items = [b[k] for k in keys] if keys is not None else list(b)
    for item, sub in zip(items, td.children):
        out.extend(_leaves_like(item, sub))
    return out


def _vdot_real(a, b):
    """``Re <a, b>`` = ``sum(Re(a * conj(b)))`` summed over the leaves of two like trees."""
    total = None
    for x, v in _paired_leaves(a, b):
        if type(v) is not Array:
            v = _on_current_context(numpy.asarray(v))
        if type(x) is not Array:
            x = _on_current_context(numpy.asarray(x))
        if v.dtype.kind == "c" or x.dtype.kind == "c":
            t = apply(SUM, apply(REAL, x * _conjugate(v)))
        else:
            t = apply(SUM, x * v)
        total = t if total is None else total + t
    return total


def hessian_vector_product(fun, argnum=0):
    """``H(x) @ v`` for scalar ``fun``, by differentiating ``<grad(fun)(x), v>``.

    Args:
        fun: a scalar function of minpy arrays.
        argnum: which argument is ``x`` (an int; a sequence gives the product
            with the block Hessian, ``vector`` then a tuple with one part each).
    Returns:
        ``hvp(*args, vector)``: as autograd, the vector is the last positional
        argument; ``hvp(*args, vector=v)`` works too. ``v`` has ``x``'s shape
        (or structure); the result too. For complex ``x`` it is ``H v`` with
        the real inner product, so a holomorphic ``fun`` gets ``conj(f'') v``.
        See also autograd.hessian_vector_product.
    """
    argnum = _norm_argnum(argnum, "minpy.hessian_vector_product")
    g = grad(fun, argnum)
    who = f"minpy.hessian_vector_product({_name(fun)})"

    def hvp(*args, vector=_MISSING, **kwargs):
        if vector is _MISSING:
            if not args:
                raise TypeError(f"{who}: missing the vector; call hvp(*args, vector) or "
                                "hvp(*args, vector=v)")
            args, vector = args[:-1], args[-1]
        argnums = (argnum,) if type(argnum) is int else argnum
        _check_positions(fun, argnums, len(args), "minpy.hessian_vector_product")
        if type(argnum) is int:
            x = args[argnum]
            if not isinstance(x, (list, tuple, dict)):
                xs, vs = numpy.shape(x), numpy.shape(vector)
                if xs != vs:
                    raise ValueError(f"{who}: vector has shape {vs}, argument {argnum} has "
                                     f"shape {xs}; they must match")
            _check_like(who, "the vector", vector, x, "")
        else:
            _check_like(who, "the vector", vector, tuple(args[a] for a in argnum), "")

        def inner(*a):
            return _vdot_real(g(*a, **kwargs), vector)
        return grad(inner, argnum)(*args)
    return hvp


def stop_gradient(x):
    """``x`` with no gradient flowing through it (all tape levels). See also jax.lax.stop_gradient."""
    if type(x) is Array and x._node is not None:
        v = new(x._data)
        v._var = x._var
        return v
    return x
