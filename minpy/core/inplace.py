"""In-place writes under a tape, recorded functionally.

When the target or the written value is traced, the write is replayed as an
out-of-place primitive (``index_update`` for ``x[key] = v``, the plain call
for ``out=``, a primitive's ``inplace_replay`` for ``put``, ``ufunc.at``
...) and the target Array is rebound to the result. Nodes that had saved the
target keep its old buffer (they are re-pointed to a clone), so their
gradients stay right. Views of the target (and the base of a written view)
cannot see the write, so the old buffer is marked superseded
(:data:`minpy.core.array.STALE_ROOTS`) until the tape closes: reading any
array sharing its memory is refused, never a value NumPy would not give. A
write with nothing traced runs as is, after a check that no tape saved the
buffer it writes. Both the check and the re-pointing look up what the tapes
saved in their index (:mod:`minpy.core.saved`): O(1) per write, not a walk
over the tape.
"""
from . import tape as _tape
from .. import engine
from .array import STALE_ROOTS, new
from .execute import run
from .primitive import PRIMITIVES
from .saved import check_write, saved_index
from .ops import ASTYPE, BROADCAST_TO, COPY, INDEX_UPDATE, WHERE, apply

__all__ = ["record_write", "def_inplace_replay", "replays"]


def def_inplace_replay(fn, replay):
    """Give the in-place primitive ``fn`` (a wrapper or Primitive) its functional replay
    ``replay(*args, **kwargs) -> (target Array, its new value)``, used under a tape."""
    prim = getattr(fn, "_prim", fn)
    prim.inplace_replay = replay


def replays():
    """{qualname: replay} of the primitives that have an in-place replay."""
    return {q: p.inplace_replay for q, p in PRIMITIVES.items() if p.inplace_replay is not None}


def record_write(prim, args, kwargs):
    """A call writing in place (``mutates`` or ``out=``) while this thread records."""
    if STALE_ROOTS:
        _tape.check_args_fresh(args, kwargs)
    tape = _tape.top_tape(args, kwargs)
    if tape is None:
        check_write(prim, args, kwargs)
        return run(prim, args, kwargs)
    return _replay(prim, args, kwargs, tape)


def _clone(a):
    c = new(a._data)
    c._node = a._node
    c._var = a._var
    return c


def _repoint(obj, target, clone):
    t = type(obj)
    if obj is target:
        return clone, True
    if t is tuple or t is list:
        changed = False
        items = []
        for e in obj:
            e2, c = _repoint(e, target, clone)
            changed |= c
            items.append(e2)
        return (t(items) if changed else obj), changed
    if t is dict:
        changed = False
        d = {}
        for k, v in obj.items():
            d[k], c = _repoint(v, target, clone)
            changed |= c
        return (d if changed else obj), changed
    return obj, False


def _detach_saved(target):
    """Re-point every saved reference to ``target`` at a clone holding its old buffer
    (only the nodes that hold ``target``, found in each active tape's index)."""
    clone = None
    for tp in _tape.active_tapes():
        index = saved_index(tp)
        nodes = index.holders(target)
        if not nodes:
            continue
        if clone is None:
            clone = _clone(target)
        for node in nodes:
            node.args, _ = _repoint(node.args, target, clone)
            if node.kwargs:
                node.kwargs, _ = _repoint(node.kwargs, target, clone)
            node.value, _ = _repoint(node.value, target, clone)
        index.moved(target, clone)


def _rebind(target, result, tape, writer):
    """Make ``target`` hold ``result`` (a value of its own, never a view of another
    array), marking ``target``'s old buffer superseded on ``tape``."""
    _detach_saved(target)
    root = engine.root_of(target._data)
    if getattr(result._data, "base", None) is not None or result._data is root:
        result = apply(COPY, result)
    STALE_ROOTS[id(root)] = (root, tape, writer)
    target._data = result._data
    target._node = result._node
    target._copies = None
    target._var = result._var
    return target


def _replay(prim, args, kwargs, tape):
    """Functional replay of an in-place primitive whose operands are traced."""
    if kwargs and kwargs.get("out") is not None:
        out = kwargs["out"]
        if isinstance(out, tuple):
            if len(out) != 1:
                raise TypeError(f"minpy.grad: {prim.qualname} with several out= arrays cannot be "
                                "differentiated; drop out=")
            out = out[0]
        kw = {k: v for k, v in kwargs.items() if k != "out"}
        if kw.get("where") is not None and kw.get("where") is not True:
            raise TypeError(f"minpy.grad: {prim.qualname} with out= and where= cannot be "
                            "differentiated; use minpy.where")
        res = _tape.record(prim, args, kw)
        if res.dtype != out.dtype:
            res = apply(ASTYPE, res, out.dtype)
        if res.shape != out.shape:
            res = apply(BROADCAST_TO, res, out.shape)
        return _rebind(out, res, tape, prim.qualname)
    name = prim.qualname
    if name == "ndarray.__setitem__":
        target, key, value = args
        _rebind(target, apply(INDEX_UPDATE, target, key, value), tape, "x[key] = value")
        return None
    if name == "copyto":
        dst, src = args[0], args[1]
        # copyto(dst, src, casting, where): where may come positionally
        where = args[3] if len(args) > 3 else (kwargs or {}).get("where")
        if where is not None and where is not True:
            res = apply(WHERE, where, src, dst)
        else:
            res = apply(BROADCAST_TO, src, dst.shape)
        if res.dtype != dst.dtype:
            res = apply(ASTYPE, res, dst.dtype)
        _rebind(dst, res, tape, name)
        return None
    replay = prim.inplace_replay
    if replay is not None:
        _rebind(*replay(*args, **(kwargs or {})), tape, name)
        return None
    raise TypeError(f"minpy.grad: in-place {name} on a traced array cannot be differentiated; "
                    "use an out-of-place form (e.g. x[idx] = v or minpy.where)")
