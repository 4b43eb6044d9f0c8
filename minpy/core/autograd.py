"""``grad``, ``grad_and_loss``, ``value_and_grad``, ``jacobian``, ``hessian_vector_product``.

Forward: the arguments named by ``argnum`` are boxed as leaves of a new tape
and the function runs, recording every primitive call on traced arrays.
Backward: nodes reachable from the output are visited in reverse recording
order (an iterative walk, no recursion), each VJP rule is called with the
node's unboxed ``(ans, *args, **kwargs)`` and returns a function of the
output gradient; each node's gradient is dropped as soon as it is consumed.
"""
import functools
import numbers

import numpy

from ..dispatch import state
from ..dispatch.context import current_context
from ..dispatch.transfer import context_of, move_raw
from .array import Array, new
from .ops import BROADCAST_TO, ONES_LIKE, REAL, RESHAPE, STACK, SUM, ZEROS_LIKE, apply
from .primitive import PRIMITIVES, Primitive
from .tape import Node, OutRef, leaf, new_tape, close_tape, record
from .wrappers import make_ufunc

__all__ = ["grad", "grad_and_loss", "value_and_grad", "jacobian", "hessian_vector_product",
           "stop_gradient", "defvjp", "def_nondiff", "backward", "customop"]


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


def defvjp(fn, *makers, **kw_makers):
    """Define the VJP rules of primitive ``fn``, one per positional argument.

    Each maker is ``maker(ans, *args, **kwargs) -> (lambda g: grad_wrt_arg)``,
    written against minpy's namespace; ``None`` marks an argument without a
    gradient. Keyword-argument rules are given by name. For an argument that
    is a sequence of arrays (``concatenate``), the maker returns a sequence.
    """
    p = _prim_of(fn)
    rules = dict(p.vjp or {})
    for i, m in enumerate(makers):
        if m is not None:
            rules[i] = m
    rules.update(kw_makers)
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
    return a + b


def _zeros_like(v):
    return apply(ZEROS_LIKE, v)


def backward(tape, out_ref, g):
    """Propagate ``g`` from the output node ``out_ref`` of ``tape`` back to its leaves.

    Walks the tape's nodes newest first (recording order is a topological
    order), skipping nodes no gradient reached. Returns {leaf Node: gradient}.
    """
    grads = {}
    _accumulate(grads, out_ref, g)
    pop = grads.pop
    for node in reversed(tape.nodes):
        gn = pop(node, None)
        if gn is None:
            continue
        if type(gn) is list:
            gn = tuple(_zeros_like(v) if gi is None else gi for gi, v in zip(gn, node.value))
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
                if node.prim.custom is not None and _process.tracers and \
                        state.thread_flags().tracer is not None:
                    pg = _traced_custom_vjp(node, rule, gn)
                else:
                    pg = rule(node.value, *node.args, **kwargs)(gn) if kwargs else \
                        rule(node.value, *node.args)(gn)
            if pg is not None:
                if type(parent) is Node:
                    old = grads.get(parent)
                    grads[parent] = pg if old is None else old + pg
                else:
                    _accumulate(grads, parent, pg)
    return grads      # what is left: the leaves


_EMPTY = {}
_process = state.process


def _traced_custom_vjp(node, rule, g):
    """A custom op's gradient while ``minpy.jit`` traces: through Tracer.checked, so
    a rule computing on buffers is replayed as one step."""
    kwargs = node.kwargs or _EMPTY

    def vjp(ans, g, *args):
        return rule(ans, *args, **kwargs)(g)
    return state.thread_flags().tracer.checked(f"{node.prim.qualname}.vjp", vjp,
                                               (node.value, g) + tuple(node.args))


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


def _as_array(x):
    if type(x) is Array:
        return x, False
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        return _on_current_context(numpy.asarray(float(x) if not isinstance(x, complex)
                                                 else x)), True
    if isinstance(x, numpy.ndarray):
        return _on_current_context(x), False
    raise TypeError(f"minpy.grad: cannot differentiate with respect to a {type(x).__name__}; "
                    "expected an Array, a float, or a list/tuple/dict of them")


def _box_tree(x, tape, leaves):
    """Box every array in nested lists/tuples (named too)/dicts; ``leaves`` collects
    (node, was_scalar, like)."""
    if isinstance(x, (list, tuple)):
        boxed = [_box_tree(e, tape, leaves) for e in x]
        return type(x)(*boxed) if hasattr(x, "_fields") else type(x)(boxed)   # namedtuples
    if isinstance(x, dict):
        return {k: _box_tree(v, tape, leaves) for k, v in x.items()}
    arr, scalar = _as_array(x)
    b = leaf(arr, tape)
    leaves.append((b._node, scalar, arr))
    return b


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


def _check_output(out):
    """An untraced output is fine when it is a number or an array (zero gradient)."""
    if type(out) is Array or isinstance(out, (numbers.Number, numpy.ndarray, numpy.generic)):
        return
    raise TypeError(f"minpy.grad: the function returned a {type(out).__name__}; grad needs a "
                    "scalar Array or number (differentiate a sum of several outputs, or use "
                    "minpy.jacobian)")


def _check_argnum(argnum):
    ok = (isinstance(argnum, int) and not isinstance(argnum, bool)) or (
        isinstance(argnum, (tuple, list)) and argnum and
        all(isinstance(a, int) and not isinstance(a, bool) for a in argnum))
    if not ok:
        raise TypeError(f"minpy.grad: argnum must be an int or a non-empty tuple of ints, "
                        f"got {argnum!r}")


def _one_array(argnum, args):
    return type(argnum) is int and 0 <= argnum < len(args) and type(args[argnum]) is Array


def _forward_backward(fun, argnum, args, kwargs):
    argnums = (argnum,) if isinstance(argnum, int) else tuple(argnum)
    for a in argnums:
        if not -len(args) <= a < len(args):
            raise IndexError(f"minpy.grad: argnum {a} out of range for {len(args)} arguments")
    tape = new_tape()
    leaves = []
    try:
        args = list(args)
        boxed = {}
        for a in argnums:
            boxed[a] = args[a] = _box_tree(args[a], tape, leaves)
        out = fun(*args, **kwargs)
    finally:
        close_tape(tape)
    loss = _unboxed(out, tape)
    ref = out._node if type(out) is Array else None
    if ref is None or ref.tape is not tape:
        _check_output(out)
        found = {}
    else:
        if out.size != 1:
            raise TypeError(f"minpy.grad: the function returned an array of shape {out.shape}; "
                            "grad needs a scalar output (use minpy.jacobian, or reduce it)")
        d = loss._data
        found = backward(tape, ref, _host_one(d.shape, d.dtype) if type(d) is numpy.ndarray
                         else apply(ONES_LIKE, loss))
    tape.nodes = None       # free the saved values now
    grads = [_finish_grad(found.get(node), scalar, like) for node, scalar, like in leaves]
    it = iter(grads)
    structured = tuple(_restructure(boxed[a], it) for a in argnums)
    result = structured[0] if isinstance(argnum, int) else structured
    return result, loss


def _forward_backward_one(fun, argnum, args, kwargs):
    """:func:`_forward_backward` for the common case: one Array argument, scalar output."""
    tape = new_tape()
    x = args[argnum]
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
        _check_output(out)
        return _finish_grad(None, False, x), out
    loss = ref.value
    d = loss._data
    if d.size != 1:
        tape.nodes = None
        raise TypeError(f"minpy.grad: the function returned an array of shape {d.shape}; "
                        "grad needs a scalar output (use minpy.jacobian, or reduce it)")
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


def _restructure(boxed, it):
    if isinstance(boxed, (list, tuple)):
        parts = [_restructure(e, it) for e in boxed]
        return type(boxed)(*parts) if hasattr(boxed, "_fields") else type(boxed)(parts)
    if isinstance(boxed, dict):
        return {k: _restructure(v, it) for k, v in boxed.items()}
    return next(it)


# ---------------------------------------------------------------- public API
def grad_and_loss(fun, argnum=0):
    """``f -> (lambda *args: (grads, loss))`` — MinPy's order.

    Args:
        fun: a Python function of minpy arrays returning a scalar.
        argnum: int or tuple of ints: which arguments to differentiate. An
            argument may be a nested list/tuple/dict of arrays; its gradient
            has the same structure. Python floats are differentiable.
    Returns:
        A function returning ``(grads, loss)``; ``grads`` is one gradient for
        an int ``argnum``, a tuple for a tuple. See also autograd.grad.
    """
    _check_argnum(argnum)
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return (_forward_backward_one if _one_array(argnum, args) else
                _forward_backward)(fun, argnum, args, kwargs)
    return wrapped


def value_and_grad(fun, argnum=0):
    """Like :func:`grad_and_loss` but returns ``(loss, grads)`` (JAX/autograd order)."""
    _check_argnum(argnum)
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        g, loss = (_forward_backward_one if _one_array(argnum, args) else
                   _forward_backward)(fun, argnum, args, kwargs)
        return loss, g
    return wrapped


def grad(fun, argnum=0):
    """The gradient of scalar function ``fun`` w.r.t. argument(s) ``argnum``.

    Nests: ``grad(grad(f))`` is the second derivative. See also autograd.grad.
    """
    _check_argnum(argnum)
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return (_forward_backward_one if _one_array(argnum, args) else
                _forward_backward)(fun, argnum, args, kwargs)[0]
    return wrapped


def jacobian(fun, argnum=0):
    """The Jacobian of ``fun`` w.r.t. argument ``argnum``: shape ``out.shape + x.shape``.

    One forward pass, one backward pass per output element. See also autograd.jacobian.
    """
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        tape = new_tape()
        args = list(args)
        try:
            x = args[argnum] = leaf(_as_array(args[argnum])[0], tape)
            leaf_node, shape, dtype = x._node, x.shape, x.dtype     # fun may rebind x
            out = fun(*args, **kwargs)
        finally:
            close_tape(tape)
        value = _unboxed(out, tape)
        ref = out._node if type(out) is Array else None
        where = context_of(value._data) if type(value) is Array else current_context()
        if ref is None or ref.tape is not tape:
            return new(move_raw(numpy.zeros(tuple(numpy.shape(value)) + tuple(shape), dtype),
                                where))
        rows = []
        for k in range(int(numpy.prod(value.shape))):
            basis = numpy.zeros(value.size, dtype=value.dtype)
            basis[k] = 1
            found = backward(tape, ref, new(move_raw(basis.reshape(value.shape), where)))
            g = found.get(leaf_node)
            rows.append(new(move_raw(numpy.zeros(shape, dtype), where)) if g is None else g)
        tape.nodes = None
        return apply(RESHAPE, apply(STACK, rows), tuple(value.shape) + tuple(shape))
    return wrapped


def hessian_vector_product(fun, argnum=0):
    """``(x, v) -> H(x) @ v`` for scalar ``fun``, by differentiating ``grad(fun) . v``."""
    g = grad(fun, argnum)

    def hvp(*args, vector, **kwargs):
        if isinstance(argnum, int) and -len(args) <= argnum < len(args):
            xs, vs = numpy.shape(args[argnum]), numpy.shape(vector)
            if xs != vs:
                raise ValueError(f"minpy.hessian_vector_product: vector has shape {vs}, "
                                 f"argument {argnum} has shape {xs}; they must match")
        cplx = numpy.iscomplexobj(vector)

        def inner(*a):
            if cplx:      # the real inner product Re<g, v>, so complex x gets H v (not conj)
                return apply(SUM, apply(REAL, g(*a, **kwargs) * _conjugate(vector)))
            return apply(SUM, g(*a, **kwargs) * vector)
        return grad(inner, argnum)(*args)
    return hvp


def stop_gradient(x):
    """``x`` with no gradient flowing through it (all tape levels). See also jax.lax.stop_gradient."""
    if type(x) is Array and x._node is not None:
        v = new(x._data)
        v._var = x._var
        return v
    return x


# ---------------------------------------------------------------- custom ops
class customop:
    """A Python function of minpy arrays made a primitive with your own gradient.

    ::

        @minpy.customop
        def softmax(x):
            e = minpy.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

        @softmax.def_grad
        def softmax_grad(ans, x):
            return lambda g: ans * (g - (g * ans).sum(axis=1, keepdims=True))

    The forward body is not recorded; the gradient comes from ``def_grad``
    (``argnum`` selects the argument; call it once per argument).
    """

    def __init__(self, fn=None, name=None):
        if isinstance(fn, str) and name is None:      # MinPy style: @customop('numpy')
            fn = None
        self._fn = None
        self._prim = None
        if fn is not None:
            self._set(fn, name)

    def _set(self, fn, name=None):
        self._fn = fn
        functools.update_wrapper(self, fn)
        qual = name or f"customop.{getattr(fn, '__qualname__', 'op')}"
        self._prim = Primitive(qual, fn)
        self._prim.custom = fn
        self._prim.host_fn = None

    def __call__(self, *args, **kwargs):
        if self._fn is None:
            self._set(args[0])
            return self
        flags = state.thread_flags()
        if flags.depth:
            return record(self._prim, args, kwargs)
        if flags.tracer is not None:       # minpy.jit: see Tracer.checked
            return flags.tracer.checked(self._prim.qualname, self._fn, args, kwargs)
        return self._fn(*args, **kwargs)

    def def_grad(self, maker, argnum=0):
        """Register ``maker(ans, *args) -> (lambda g: grad)`` for argument ``argnum``."""
        rules = dict(self._prim.vjp or {})
        rules[argnum] = maker
        self._prim.vjp = rules
        return maker
