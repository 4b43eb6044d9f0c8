"""The imperative tape: recording primitive calls on traced Arrays.

A traced Array's ``_node`` is a :class:`Node` of one tape; its ``_data`` is
the same buffer as ``node.value``, the Array one tracing level down (itself
traced by an outer tape, or plain). Recording a call unboxes the arguments
traced by the innermost tape, runs the primitive on them (so outer tapes
record it too — that is what makes ``grad(grad(f))`` right) and boxes the
result. Tapes are per thread and nest.
"""
import threading

from ..dispatch import state
import numpy

from .primitive import L, run, mutated, wrap, unwrap_cpu

_ndarray = numpy.ndarray
_generic = numpy.generic
_asarray = numpy.asarray

__all__ = ["Tape", "Node", "record", "active_tapes", "new_tape", "close_tape"]

_S = state.S
_local = threading.local()


def active_tapes():
    """This thread's stack of recording tapes (innermost last)."""
    s = getattr(_local, "tapes", None)
    if s is None:
        s = _local.tapes = []
    return s


class Tape:
    """One level of recording (one ``grad`` call)."""

    __slots__ = ("level", "active", "nodes")

    def __init__(self, level):
        self.level = level
        self.active = True
        self.nodes = []     # every op node, for the in-place write check


_ONE = [None]       # the tape, while exactly one is active in the process
_count_lock = threading.Lock()


def new_tape():
    stack = getattr(_local, "tapes", None)
    if stack is None:
        stack = active_tapes()
    t = Tape(len(stack) + 1)
    stack.append(t)
    with _count_lock:
        n = _S.tapes = _S.tapes + 1
        _ONE[0] = t if n == 1 else None
        # state.refresh() inline (half a microsecond of every grad call);
        # tests/test_tape_paths.py checks the two agree
        _S.fast = False
        _S.rec1 = n == 1 and _S.cpu_only and _S.pending == 0
    return t


def close_tape(t):
    stack = active_tapes()
    if t.active:
        t.active = False
        stack.remove(t)
        with _count_lock:
            _S.tapes -= 1
            _ONE[0] = _find_single() if _S.tapes == 1 else None
            state.refresh()


def _find_single():
    # the one tape still active after a close: in this thread's stack, or unknown
    stack = active_tapes()
    return stack[0] if len(stack) == 1 else None


class Node:
    """A recorded call (or a leaf, ``prim is None``) on one tape.

    ``value`` is the unboxed result (an Array, or a tuple for several
    outputs); ``args``/``kwargs`` the unboxed arguments the VJP rules see;
    ``parents`` a tuple of (address, parent_ref) where address is a
    positional index, ``(index, item)`` inside a sequence argument, or a
    keyword name.
    """

    __slots__ = ("tape", "prim", "args", "kwargs", "value", "parents", "nout")

    def __init__(self, tape, prim, args, kwargs, value, parents, nout):
        self.tape = tape
        self.prim = prim
        self.args = args
        self.kwargs = kwargs
        self.value = value
        self.parents = parents
        self.nout = nout


class OutRef:
    """The k-th output of a multi-output node (what such an output's ``_node`` is)."""

    __slots__ = ("node", "index", "tape")

    def __init__(self, node, index):
        self.node = node
        self.index = index
        self.tape = node.tape


def box(value, tape, node_or_ref):
    """A traced Array sharing ``value``'s buffer, recorded as ``node_or_ref``."""
    a = L.new(value._data)
    a._node = node_or_ref
    a._var = value._var
    return a


def leaf(value, tape):
    """Start tracing Array ``value`` on ``tape``."""
    n = Node(tape, None, (), None, value, (), 1)
    return box(value, tape, n)


def _top_tape(args, kwargs):
    """The innermost active tape tracing any argument, or None."""
    A = L.Array
    top = None
    for a in args:
        t = type(a)
        if t is A:
            n = a._node
            if n is not None and n.tape.active and (top is None or n.tape.level > top.level):
                top = n.tape
        elif t is list or t is tuple:
            for e in a:
                if type(e) is A:
                    n = e._node
                    if n is not None and n.tape.active and (top is None or n.tape.level > top.level):
                        top = n.tape
    if kwargs:
        for e in kwargs.values():
            if type(e) is list or type(e) is tuple:     # multi_dot(arrays=[...]) and co
                t = _top_tape(e, None)
                if t is not None and (top is None or t.level > top.level):
                    top = t
            elif type(e) is A:
                n = e._node
                if n is not None and n.tape.active and (top is None or n.tape.level > top.level):
                    top = n.tape
    return top


def _unbox(a, tape, parents, address):
    n = a._node
    if n is not None and n.tape is tape:
        parents.append((address, n))
        return n.node.value[n.index] if type(n) is OutRef else n.value
    return a


def _unbox_args(args, kwargs, tape):
    A = L.Array
    parents = []
    new_args = []
    for i, a in enumerate(args):
        t = type(a)
        if t is A:
            a = _unbox(a, tape, parents, i)
        elif t is list or t is tuple:
            if any(type(e) is A and e._node is not None for e in a):
                a = t(_unbox(e, tape, parents, (i, j)) if type(e) is A else e
                      for j, e in enumerate(a))
        new_args.append(a)
    if kwargs:
        kw = {}
        for k, v in kwargs.items():
            t = type(v)
            if t is A:
                v = _unbox(v, tape, parents, k)
            elif (t is list or t is tuple) and any(type(e) is A for e in v):
                v = t(_unbox(e, tape, parents, (k, j)) if type(e) is A else e
                      for j, e in enumerate(v))
            kw[k] = v
        kwargs = kw
    return tuple(new_args), kwargs, parents


def record(prim, args, kwargs):
    """Run ``prim`` under the active tapes, boxing its result if it is traced."""
    tape = _top_tape(args, kwargs)
    inplace = prim.mutates is not None or (kwargs and kwargs.get("out") is not None)
    if tape is None:
        if inplace:
            check_write(prim, args, kwargs)
        return run(prim, args, kwargs)
    if inplace:
        return _record_inplace(prim, args, kwargs, tape)
    inner_args, inner_kwargs, parents = _unbox_args(args, kwargs, tape)
    # outer tapes record the same call one level down (grad of grad)
    value = run(prim, inner_args, inner_kwargs) if tape.level == 1 else \
        record(prim, inner_args, inner_kwargs)
    return _finish(prim, tape, inner_args, inner_kwargs, parents, value)


def record_np(prim, fn, args, kwargs):
    """:func:`record` when ``S.rec1`` holds: ``fn`` (NumPy) runs on the arguments' buffers.

    Positional Arrays only (a list/tuple argument or an Array keyword takes
    the general path); ``kwargs`` is passed through to ``fn`` as is.
    """
    tape = _ONE[0]
    if tape is None or prim.mutates is not None:
        return record(prim, args, kwargs)
    A = L.Array
    if kwargs:
        for v in kwargs.values():
            t = type(v)
            if t is A or ((t is list or t is tuple) and any(type(e) is A for e in v)):
                return record(prim, args, kwargs)
    if len(args) == 1:
        a = args[0]
        t = type(a)
        if t is A:
            n = a._node
            r = fn(a._data, **kwargs) if kwargs else fn(a._data)
            if n is None or n.tape is not tape:
                return L.new(r) if type(r) is _ndarray else wrap(r)
            return _finish1(prim, tape, (n.value if type(n) is Node else n.node.value[n.index],),
                            kwargs, [(0, n)], r)
        if t is list or t is tuple:
            return record(prim, args, kwargs)
        r = fn(a, **kwargs) if kwargs else fn(a)
        return L.new(r) if type(r) is _ndarray else wrap(r)
    parents = None
    data = []
    inner = args
    for i, a in enumerate(args):
        t = type(a)
        if t is A:
            n = a._node
            if n is not None and n.tape is tape:
                if parents is None:
                    parents = []
                    inner = list(args)
                parents.append((i, n))
                inner[i] = n.value if type(n) is Node else n.node.value[n.index]
            data.append(a._data)
        elif t is list or t is tuple:
            return record(prim, args, kwargs)
        else:
            data.append(a)
    r = fn(*data, **kwargs) if kwargs else fn(*data)
    if parents is None:
        return L.new(r) if type(r) is _ndarray else wrap(r)
    return _finish1(prim, tape, tuple(inner), kwargs, parents, r)


def record_binary(prim, uf, x1, x2):
    """:func:`record_np` for a binary ufunc without keywords (the Array operators)."""
    tape = _ONE[0]
    if tape is None:
        return record(prim, (x1, x2), {})
    A = L.Array
    parents = None
    v1, v2 = x1, x2         # the values one level down (the node's arguments)
    t = type(x1)
    if t is A:
        d1 = x1._data
        n = x1._node
        if n is not None and n.tape is tape:
            parents = [(0, n)]
            v1 = n.value if type(n) is Node else n.node.value[n.index]
    elif t is list or t is tuple:
        return record(prim, (x1, x2), {})
    else:
        d1 = x1
    t = type(x2)
    if t is A:
        d2 = x2._data
        n = x2._node
        if n is not None and n.tape is tape:
            if parents is None:
                parents = [(1, n)]
            else:
                parents.append((1, n))
            v2 = n.value if type(n) is Node else n.node.value[n.index]
    elif t is list or t is tuple:
        return record(prim, (x1, x2), {})
    else:
        d2 = x2
    r = uf(d1, d2)
    if parents is None:
        return L.new(r) if type(r) is _ndarray else wrap(r)
    if type(r) is not _ndarray or prim.nondiff or prim.vjp is None:
        return _finish1(prim, tape, (v1, v2), None, parents, r)
    # _finish1's common case inline: every traced Array operator goes through here
    new = L.new
    node = Node(tape, prim, (v1, v2), None, new(r), parents, 1)
    tape.nodes.append(node)
    a = new(r)
    a._node = node
    return a


def record_getitem(prim, x, key):
    """``x[key]`` when ``S.rec1`` holds and ``x`` is traced by the tape (keys untraced)."""
    tape = _ONE[0]
    A = L.Array
    n = x._node
    if tape is None or n is None or n.tape is not tape:
        return record(prim, (x, key), {})
    tk = type(key)
    if tk is A:
        if key._node is not None and key._node.tape is tape:
            return record(prim, (x, key), {})
        k = key._data
    elif tk is tuple or tk is list:
        for e in key:
            if type(e) is A and e._node is not None and e._node.tape is tape:
                return record(prim, (x, key), {})
        k = unwrap_cpu(key)
    else:
        k = key
    r = x._data[k]
    return _finish1(prim, tape, (n.value if type(n) is Node else n.node.value[n.index], key),
                    None, [(0, n)], r)


def _finish1(prim, tape, inner_args, inner_kwargs, parents, r):
    """:func:`_finish` for a host result ``r`` of a traced call (one tape)."""
    if type(r) is not _ndarray:
        if not isinstance(r, _generic):
            return _finish(prim, tape, inner_args, inner_kwargs, parents, wrap(r))
        r = _asarray(r)        # a NumPy scalar: a 0-d Array
    if prim.nondiff:
        return L.new(r)
    if prim.vjp is None:
        return _finish(prim, tape, inner_args, inner_kwargs, parents, L.new(r))
    new = L.new
    node = Node(tape, prim, inner_args, inner_kwargs, new(r), parents, 1)
    tape.nodes.append(node)
    a = new(r)
    a._node = node
    return a


def _finish(prim, tape, inner_args, inner_kwargs, parents, value):
    """Record the node of a traced call and box its result."""
    if prim.nondiff:
        return value
    if prim.vjp is None:
        raise TypeError(f"minpy.grad: {prim.qualname} has no gradient rule; its result depends "
                        "on a traced array (wrap the input in minpy.stop_gradient if no gradient "
                        "is needed)")
    A = L.Array
    t = type(value)
    if t is A:
        node = Node(tape, prim, inner_args, inner_kwargs, value, parents, 1)
        tape.nodes.append(node)
        a = L.new(value._data)
        a._node = node
        a._var = value._var
        return a
    if t is tuple or t is list or isinstance(value, tuple):
        node = Node(tape, prim, inner_args, inner_kwargs, value, parents, len(value))
        tape.nodes.append(node)
        outs = [box(v, tape, OutRef(node, k)) if type(v) is A else v
                for k, v in enumerate(value)]
        return type(value)._make(outs) if hasattr(type(value), "_make") else t(outs)
    if value is None:
        return value
    # a result the tape cannot carry (a numpy.poly1d, a Python number ...): refuse now
    # rather than hand back a constant whose gradient would silently be zero
    raise TypeError(f"minpy.grad: {prim.qualname} returned a {type(value).__name__} from a "
                    "traced array; only Arrays carry gradients (pass arrays, not e.g. "
                    "numpy.poly1d, or wrap the input in minpy.stop_gradient)")


L.record = record
L.record_np = record_np
L.record_binary = record_binary
L.record_getitem = record_getitem


# ---------------------------------------------------------------- writes
def _roots(value):
    A = L.Array
    if type(value) is A:
        d = value._data
        b = getattr(d, "base", None)
        yield id(d if b is None else b)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _roots(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _roots(v)


def check_write(prim, args, kwargs):
    """Refuse an in-place write into a buffer an active tape saved for backward."""
    target = kwargs.get("out") if kwargs and kwargs.get("out") is not None else args[prim.mutates]
    targets = set(_roots(target))
    if not targets:
        return
    for tape in active_tapes():
        for node in tape.nodes:
            if targets.intersection(_roots(node.args)) or \
                    targets.intersection(_roots(node.kwargs)) or \
                    targets.intersection(_roots(node.value)):
                raise RuntimeError(
                    f"minpy.grad: in-place write by {prim.qualname} into an array that the "
                    f"tape saved for the backward pass of {node.prim.qualname}; the gradient "
                    "would be wrong. Write into a copy instead.")


def _record_inplace(prim, args, kwargs, tape):
    """A write into/with traced arrays, recorded functionally: the target is rebound."""
    from . import functional
    return functional.record_inplace(prim, args, kwargs, tape)
