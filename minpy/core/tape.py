"""The imperative tape: recording primitive calls on traced Arrays.

A traced Array's ``_node`` is a :class:`Node` of one tape; its ``_data`` is
the same buffer as ``node.value``, the Array one tracing level down (itself
traced by an outer tape, or plain). Recording a call unboxes the arguments
traced by the innermost tape, runs the primitive on them (so outer tapes
record it too — that is what makes ``grad(grad(f))`` right) and boxes the
result. Tapes are per thread and nest.
"""
import threading

import numpy

from ..dispatch import state
from .array import STALE_ROOTS, Array, check_fresh, kept, new, new_scalar, wrap, unwrap_cpu
from .execute import run
from .primitive import COMPUTE, Primitive, register
from . import tree

_ndarray = numpy.ndarray
_generic = numpy.generic
_asarray = numpy.asarray

__all__ = ["Tape", "Node", "OutRef", "record", "record_np", "record_binary", "record_getitem",
           "active_tapes", "recording", "new_tape", "close_tape", "top_tape"]

_local = threading.local()


def active_tapes():
    """This thread's stack of recording tapes (innermost last)."""
    s = getattr(_local, "tapes", None)
    if s is None:
        s = _local.tapes = []
    return s


class Tape:
    """One level of recording (one ``grad`` call)."""

    __slots__ = ("level", "active", "nodes", "saved")

    def __init__(self, level):
        self.level = level
        self.active = True
        self.nodes = []     # every op node, in recording order (the backward pass's)
        self.saved = None   # what the nodes saved (minpy.core.saved), made at the first write


def recording():
    """True while this thread records a gradient (inside ``grad`` and friends)."""
    return state.per_thread.flags.depth > 0


def new_tape():
    """Start a tape in this thread (nested inside the ones already recording)."""
    stack = active_tapes()
    t = Tape(len(stack) + 1)
    stack.append(t)
    state.enter_tape(stack)
    return t


def close_tape(t):
    """Stop recording on ``t`` (idempotent)."""
    if t.active:
        t.active = False
        stack = active_tapes()
        stack.remove(t)
        state.exit_tape(stack)
        t.saved = None      # writes are checked only while a tape records
        if STALE_ROOTS:
            for k in [k for k, v in STALE_ROOTS.items() if v[1] is t]:
                del STALE_ROOTS[k]


class Node:
    """A recorded call (or a leaf, ``prim is None``) on one tape.

    ``value`` is the unboxed result (an Array, or a tuple for several
    outputs); ``args``/``kwargs`` the unboxed arguments the VJP rules see;
    ``parents`` a tuple of (address, parent_ref) where address is a
    positional index, ``(index, item)`` inside a sequence argument, or a
    keyword name.
    """

    __slots__ = ("tape", "prim", "args", "kwargs", "value", "parents", "nout")
    outdef = None       # the outputs' tree structure when they nest (:class:`NestedNode`)

    def __init__(self, tape, prim, args, kwargs, value, parents, nout):
        self.tape = tape
        self.prim = prim
        self.args = args
        self.kwargs = kwargs
        self.value = value
        self.parents = parents
        self.nout = nout


class NestedNode(Node):
    """A :class:`Node` whose outputs nest (``histogramdd``'s (counts, [edges])): its
    outputs are the Arrays among the leaves of ``value``, numbered in leaf order."""

    __slots__ = ("outdef",)

    def __init__(self, tape, prim, args, kwargs, value, parents, nout, outdef):
        super().__init__(tape, prim, args, kwargs, value, parents, nout)
        self.outdef = outdef


class OutRef:
    """The k-th output of a multi-output node (what such an output's ``_node`` is).

    ``value`` is that output's unboxed value, as ``Node.value`` is a single
    output's: every reader of a traced Array's value one level down reads
    ``a._node.value`` whatever the node kind.
    """

    __slots__ = ("node", "index", "tape")

    def __init__(self, node, index):
        self.node = node
        self.index = index
        self.tape = node.tape

    @property
    def value(self):
        node = self.node
        if node.outdef is not None:       # nested outputs: index among the leaves
            return tree.leaves(node.value)[self.index]
        return node.value[self.index]


def box(value, tape, node_or_ref):
    """A traced Array sharing ``value``'s buffer, recorded as ``node_or_ref``."""
    a = new(value._data)
    a._node = node_or_ref
    a._var = value._var
    a._scalar = value._scalar
    return a


def leaf(value, tape):
    """Start tracing Array ``value`` on ``tape``."""
    n = Node(tape, None, (), None, value, (), 1)
    return box(value, tape, n)


def _deeper(a, top):
    """The tape tracing Array ``a`` if it is active and deeper than ``top``, else ``top``."""
    n = a._node
    if n is not None and n.tape.active and (top is None or n.tape.level > top.level):
        return n.tape
    return top


def top_tape(args, kwargs):
    """The innermost active tape tracing any argument, or None."""
    top = None
    for a in args:
        t = type(a)
        if t is Array:
            top = _deeper(a, top)
        elif t is list or t is tuple:
            for e in a:
                if type(e) is Array:
                    top = _deeper(e, top)
    if kwargs:
        for e in kwargs.values():
            if type(e) is list or type(e) is tuple:     # multi_dot(arrays=[...]) and co
                t = top_tape(e, None)
                if t is not None and (top is None or t.level > top.level):
                    top = t
            elif type(e) is Array:
                top = _deeper(e, top)
    return top


def _unbox(a, tape, parents, address):
    n = a._node
    if n is not None and n.tape is tape:
        parents.append((address, n))
        return n.value
    return a


def _unbox_args(args, kwargs, tape):
    parents = []
    new_args = []
    for i, a in enumerate(args):
        t = type(a)
        if t is Array:
            a = _unbox(a, tape, parents, i)
        elif t is list or t is tuple:
            if any(type(e) is Array and e._node is not None for e in a):
                a = t(_unbox(e, tape, parents, (i, j)) if type(e) is Array else e
                      for j, e in enumerate(a))
        new_args.append(a)
    if kwargs:
        kw = {}
        for k, v in kwargs.items():
            t = type(v)
            if t is Array:
                v = _unbox(v, tape, parents, k)
            elif (t is list or t is tuple) and any(type(e) is Array for e in v):
                v = t(_unbox(e, tape, parents, (k, j)) if type(e) is Array else e
                      for j, e in enumerate(v))
            kw[k] = v
        kwargs = kw
    return tuple(new_args), kwargs, parents


# ---------------------------------------------------------------- lists of traced values
STACK = register(Primitive("stack", numpy.stack, placement=COMPUTE))

# NumPy's parameters that take a sequence of arrays (each item its own array); any
# other list/tuple argument holding traced values is one array-like
SEQUENCE_ARGS = {
    "concatenate": (0, "arrays"), "concat": (0, "arrays"), "stack": (0, "arrays"),
    "vstack": (0, "tup"), "row_stack": (0, "tup"), "hstack": (0, "tup"),
    "dstack": (0, "tup"), "column_stack": (0, "tup"), "block_leaves": (0,), "choose": (1, "choices"), "select": (0, 1, "condlist", "choicelist"),
    "linalg.multi_dot": (0, "arrays"), "r_": (0,), "c_": (0,),
    "histogramdd": (0, "sample"),      # [x, y] is D coordinate arrays, not one array
}


def _holds_traced(x):
    """True when list/tuple ``x`` holds an Array of an active tape, at any depth."""
    for e in x:
        t = type(e)
        if t is Array:
            n = e._node
            if n is not None and n.tape.active:
                return True
        elif (t is list or t is tuple) and _holds_traced(e):
            return True
    return False


def _item_dtypes(x, out):
    if type(x) is list or type(x) is tuple:
        for e in x:
            _item_dtypes(e, out)
    else:
        out.append(x.dtype if type(x) is Array else numpy.asarray(x).dtype)
    return out


def _stack_items(x, dtype):
    if type(x) is list or type(x) is tuple:
        return record(STACK, ([_stack_items(e, dtype) for e in x],), {"dtype": dtype})
    if type(x) is Array:
        return x
    return new(numpy.asarray(x, dtype=dtype))


def stacked(x):
    """Nested lists/tuples holding traced Arrays as one traced Array, in the dtype
    ``numpy.array(x)`` would have (Python numbers count as float64/int64, as there)."""
    return _stack_items(x, numpy.result_type(*_item_dtypes(x, [])))


def _rule_takes_array(prim, where):
    """True when ``prim`` differentiates argument ``where`` as one array-like."""
    rule = prim.vjp.get(where) if prim.vjp is not None else None
    return rule is not None and not getattr(rule, "no_gradient", False)


def _lists_as_arrays(prim, args, kwargs):
    """``args``/``kwargs`` with every list/tuple that holds traced values (at any depth)
    turned into one traced Array (``stack``), or, for a parameter taking a sequence of
    arrays (``concatenate``), each of its nested items: what NumPy's array conversion
    does, recorded, so that the gradient reaches the list's items."""
    if prim.qualname == "block":     # nested lists are block's structure (its front
        return args, kwargs         # routes traced ones through block_leaves)
    seq = SEQUENCE_ARGS.get(prim.qualname, ())
    new_args = None
    for i, a in enumerate(args):
        t = type(a)
        if (t is list or t is tuple) and _holds_traced(a):
            v = _convert(prim, i, a, i in seq)
            if v is not a:
                if new_args is None:
                    new_args = list(args)
                new_args[i] = v
    if kwargs:
        for k, a in kwargs.items():
            t = type(a)
            if (t is list or t is tuple) and _holds_traced(a):
                v = _convert(prim, k, a, k in seq)
                if v is not a:
                    kwargs = dict(kwargs)
                    kwargs[k] = v
    return (tuple(new_args) if new_args is not None else args), kwargs


def _convert(prim, where, a, is_sequence):
    if is_sequence:
        if not any((type(e) is list or type(e) is tuple) and _holds_traced(e) for e in a):
            return a
        return type(a)(stacked(e) if (type(e) is list or type(e) is tuple) and
                       _holds_traced(e) else e for e in a)
    if not _rule_takes_array(prim, where):
        return a
    return stacked(a)


def check_args_fresh(args, kwargs):
    """Refuse reading an array whose memory a traced write superseded (see
    :func:`minpy.core.array.check_fresh`); called only while there is one."""
    for a in args:
        t = type(a)
        if t is Array:
            check_fresh(a)
        elif t is list or t is tuple:
            check_args_fresh(a, None)
    if kwargs:
        check_args_fresh(tuple(kwargs.values()), None)


def record(prim, args, kwargs):
    """Run ``prim`` (not writing in place) under the active tapes, boxing its result
    if it is traced."""
    if STALE_ROOTS:
        check_args_fresh(args, kwargs)
    for a in args:
        t = type(a)
        if t is list or t is tuple:
            if prim.custom is None and not prim.nondiff:
                args, kwargs = _lists_as_arrays(prim, args, kwargs)
            break
    else:
        if kwargs and prim.custom is None and not prim.nondiff:
            for a in kwargs.values():
                t = type(a)
                if t is list or t is tuple:
                    args, kwargs = _lists_as_arrays(prim, args, kwargs)
                    break
    tape = top_tape(args, kwargs)
    if tape is None:
        return run(prim, args, kwargs)
    inner_args, inner_kwargs, parents = _unbox_args(args, kwargs, tape)
    # outer tapes record the same call one level down (grad of grad)
    value = run(prim, inner_args, inner_kwargs) if tape.level == 1 else \
        record(prim, inner_args, inner_kwargs)
    return _finish(prim, tape, inner_args, inner_kwargs, parents, value)


# The one-tape shortcuts: taken by the wrappers while ``thread_flags().one_tape``
# is set (one tape in this thread, NumPy only, nothing async). Each handles its
# common case on the arguments' host buffers and hands anything else to
# :func:`record`. They are separate (not one function with options) because
# each sits on the path of every traced operator or function call.

def record_np(tape, prim, fn, args, kwargs):
    """:func:`record` on ``tape`` with ``fn`` (NumPy) run on the arguments' buffers.

    Positional Arrays only (a list/tuple argument or an Array keyword takes
    the general path); ``kwargs`` is passed through to ``fn`` as is.
    """
    if STALE_ROOTS:
        check_args_fresh(args, kwargs)
    if kwargs:
        for v in kwargs.values():
            t = type(v)
            if t is Array or ((t is list or t is tuple) and any(type(e) is Array for e in v)):
                return record(prim, args, kwargs)
    if len(args) == 1:      # one positional argument: no lists to build
        a = args[0]
        t = type(a)
        if t is Array:
            n = a._node
            r = fn(a._data, **kwargs) if kwargs else fn(a._data)
            if n is None or n.tape is not tape:
                return new(r) if type(r) is _ndarray else wrap(r)
            return _finish_host(prim, tape, (n.value,), kwargs, [(0, n)], r)
        if t is not list and t is not tuple:
            r = fn(a, **kwargs) if kwargs else fn(a)
            return new(r) if type(r) is _ndarray else wrap(r)
    parents = None
    data = []
    inner = args
    for i, a in enumerate(args):
        t = type(a)
        if t is Array:
            n = a._node
            if n is not None and n.tape is tape:
                if parents is None:
                    parents = []
                    inner = list(args)
                parents.append((i, n))
                inner[i] = n.value
            data.append(a._data)
        elif t is list or t is tuple:
            return record(prim, args, kwargs)
        else:
            data.append(a)
    r = fn(*data, **kwargs) if kwargs else fn(*data)
    if parents is None:
        return new(r) if type(r) is _ndarray else wrap(r)
    return _finish_host(prim, tape, tuple(inner), kwargs, parents, r)


def record_binary(tape, prim, uf, x1, x2):
    """:func:`record_np` for a binary ufunc without keywords (the Array operators)."""
    if STALE_ROOTS:
        check_args_fresh((x1, x2), None)
    parents = None
    v1, v2 = x1, x2         # the values one level down (the node's arguments)
    t = type(x1)
    if t is Array:
        d1 = x1._data
        n = x1._node
        if n is not None and n.tape is tape:
            parents = [(0, n)]
            v1 = n.value
    elif t is list or t is tuple:
        return record(prim, (x1, x2), {})
    else:
        d1 = x1
    t = type(x2)
    if t is Array:
        d2 = x2._data
        n = x2._node
        if n is not None and n.tape is tape:
            if parents is None:
                parents = [(1, n)]
            else:
                parents.append((1, n))
            v2 = n.value
    elif t is list or t is tuple:
        return record(prim, (x1, x2), {})
    else:
        d2 = x2
    r = uf(d1, d2)
    if parents is None:
        return new(r) if type(r) is _ndarray else wrap(r)
    if type(r) is not _ndarray or prim.nondiff or prim.vjp is None:
        return _finish_host(prim, tape, (v1, v2), None, parents, r)
    # _finish_host's common case inline: every traced Array operator comes here
    node = Node(tape, prim, (v1, v2), None, new(r), parents, 1)
    tape.nodes.append(node)
    a = new(r)
    a._node = node
    return a


def record_getitem(tape, prim, x, key):
    """``x[key]`` on ``tape`` with the key untraced (else the general path)."""
    if STALE_ROOTS:
        check_fresh(x)
    n = x._node
    if n is None or n.tape is not tape:
        return record(prim, (x, key), {})
    tk = type(key)
    if tk is Array:
        if key._node is not None and key._node.tape is tape:
            return record(prim, (x, key), {})
        k = key._data
    elif tk is tuple or tk is list:
        for e in key:
            if type(e) is Array and e._node is not None and e._node.tape is tape:
                return record(prim, (x, key), {})
        k = unwrap_cpu(key)
    else:
        k = key
    return _finish_host(prim, tape, (n.value, key), None, [(0, n)], x._data[k])


def _finish_host(prim, tape, inner_args, inner_kwargs, parents, r):
    """:func:`_finish` for a host result ``r`` of a traced call (one tape)."""
    scalar = False
    if type(r) is not _ndarray:
        if not isinstance(r, _generic):
            return _finish(prim, tape, inner_args, inner_kwargs, parents, wrap(r))
        r = _asarray(r)        # a NumPy scalar: a scalar result
        scalar = True
    if prim.nondiff:
        return new_scalar(r) if scalar else new(r)
    if prim.vjp is None:
        return _finish(prim, tape, inner_args, inner_kwargs, parents,
                       new_scalar(r) if scalar else new(r))
    node = Node(tape, prim, inner_args, inner_kwargs, new(r), parents, 1)
    tape.nodes.append(node)
    a = new(r)
    a._node = node
    a._scalar = scalar
    return a


def _finish_nested(prim, tape, inner_args, inner_kwargs, parents, value):
    """:func:`_finish` for outputs that nest (``histogramdd``'s (counts, [edges])): each
    Array among the leaves is an output of the node, numbered in leaf order."""
    flat, outdef = tree.flatten(value)
    node = NestedNode(tape, prim, inner_args, inner_kwargs, value, parents, len(flat), outdef)
    tape.nodes.append(node)
    return tree.unflatten(outdef, [box(v, tape, OutRef(node, k)) if type(v) is Array else v
                                   for k, v in enumerate(flat)])


def _finish(prim, tape, inner_args, inner_kwargs, parents, value):
    """Record the node of a traced call and box its result."""
    value = kept(value)          # a traced NumPy scalar result: a scalar Array to follow
    if prim.nondiff:
        return value
    if prim.vjp is None:
        raise TypeError(f"minpy.grad: {prim.qualname} has no gradient rule; its result depends "
                        "on a traced array (wrap the input in minpy.stop_gradient if no gradient "
                        "is needed)")
    t = type(value)
    if t is Array:
        node = Node(tape, prim, inner_args, inner_kwargs, value, parents, 1)
        tape.nodes.append(node)
        return box(value, tape, node)
    if t is tuple or t is list or isinstance(value, tuple):
        if any(type(v) is list or type(v) is tuple for v in value):
            return _finish_nested(prim, tape, inner_args, inner_kwargs, parents, value)
        node = Node(tape, prim, inner_args, inner_kwargs, value, parents, len(value))
        tape.nodes.append(node)
        outs = [box(v, tape, OutRef(node, k)) if type(v) is Array else v
                for k, v in enumerate(value)]
        return type(value)._make(outs) if hasattr(type(value), "_make") else t(outs)
    if value is None:
        return value
    # a result the tape cannot carry (a numpy.poly1d, a Python number ...): refuse now
    # rather than hand back a constant whose gradient would silently be zero
    raise TypeError(f"minpy.grad: {prim.qualname} returned a {type(value).__name__} from a "
                    "traced array; only Arrays carry gradients (pass arrays, not e.g. "
                    "numpy.poly1d, or wrap the input in minpy.stop_gradient)")
