"""What a tape saved for its backward pass: an index from buffers and Arrays to nodes.

A write in place while a tape records must not change a buffer that a node
saved (its arguments or its value), or the gradient would be computed from
the new contents. Rather than scanning the tape at each write (O(N) for N
nodes), each tape keeps a :class:`SavedIndex`: buffer root -> the nodes
that saved it, and Array -> the nodes holding that very Array object. It is
built lazily, at the first write while the tape records, and brought up to
date at each later one by indexing only the nodes recorded since: every node
is indexed once, so a write costs O(1) amortized (plus the k nodes that hold
its target, for a traced write that re-points them). A tape that sees no
write pays nothing.

A tape whose backward pass runs after it stopped recording (``make_vjp``'s
``vjp``) cannot refuse the writes made in between as they happen: :func:`seal`
notes the write version of each buffer it saved (the per-buffer counters of
:mod:`minpy.dispatch.versions`, which every write through minpy bumps and
which the device-copy cache reads too), and :func:`check_sealed` refuses the
backward pass when one of them changed.

Buffers are keyed by their root (:func:`minpy.dispatch.versions.root`, the
object owning the memory, as the device-copy cache keys its versions), so a
view and its base, or two views of one array, are one buffer. The index keeps
the roots it holds alive, so an ``id`` cannot be reused while it is in use.
"""
from ..dispatch.versions import epoch, root as _root, watch
from .array import Array
from .tape import active_tapes

__all__ = ["SavedIndex", "saved_index", "check_write", "check_saved", "seal", "check_sealed"]


class SavedIndex:
    """The buffers and Arrays one tape's nodes saved, each with the nodes that saved it
    (in recording order)."""

    __slots__ = ("done", "by_root", "by_array", "sealed")

    def __init__(self):
        self.done = 0           # the tape's nodes[:done] are indexed
        self.by_root = {}       # id(root buffer) -> (root, [node, ...])
        self.by_array = {}      # id(Array) -> (Array, [node, ...])
        self.sealed = None      # [(root, its write version, first saver)] (see seal)

    def update(self, nodes):
        """Index the nodes of ``nodes`` (a tape's node list) recorded since the last call."""
        start = self.done
        if start == len(nodes):
            return
        for node in nodes[start:]:
            self._note(node.args, node)
            if node.kwargs:
                self._note(node.kwargs, node)
            self._note(node.value, node)
        self.done = len(nodes)

    def _note(self, obj, node):
        t = type(obj)
        if t is Array:
            _add(self.by_root, _root(obj._data), node)
            _add(self.by_array, obj, node)
        elif isinstance(obj, (tuple, list)):
            for v in obj:
                self._note(v, node)
        elif isinstance(obj, dict):
            for v in obj.values():
                self._note(v, node)

    def first_saver(self, data):
        """The first node (in recording order) that saved backend array ``data``'s
        buffer, or None."""
        e = self.by_root.get(id(_root(data)))
        return None if e is None else e[1][0]

    def holders(self, arr):
        """The nodes whose arguments or value hold Array ``arr`` itself."""
        e = self.by_array.get(id(arr))
        return () if e is None else e[1]

    def moved(self, arr, clone):
        """The nodes holding ``arr`` now hold ``clone`` instead (same buffer)."""
        e = self.by_array.pop(id(arr), None)
        if e is not None:
            self.by_array[id(clone)] = (clone, e[1])


def _add(index, obj, node):
    k = id(obj)
    e = index.get(k)
    if e is None:
        index[k] = (obj, [node])
    elif e[1][-1] is not node:       # x * x: the node once
        e[1].append(node)


# ---------------------------------------------------------------- the write check
def saved_index(tape):
    """The :class:`SavedIndex` of active ``tape`` (made at the first call), up to date."""
    index = tape.saved
    if index is None:
        index = tape.saved = SavedIndex()
    index.update(tape.nodes)
    return index


def check_write(prim, args, kwargs):
    """Refuse the in-place write of primitive ``prim`` (into ``out=``, else into its
    ``mutates`` argument) when an active tape saved the buffer for backward."""
    out = kwargs.get("out") if kwargs else None
    check_saved(out if out is not None else args[prim.mutates], prim.qualname)


def check_saved(target, writer):
    """Refuse writing in place into ``target`` (an Array, or a list/tuple/dict of them)
    when an active tape of this thread saved its buffer (any array sharing its root
    buffer) for the backward pass.

    Args:
        target: what is about to be written.
        writer: the write's name in the error (``'ndarray.__setitem__'``).
    Raises:
        RuntimeError: naming ``writer`` and the operation that saved the buffer.
    """
    tapes = active_tapes()
    if not tapes:
        return
    buffers = _buffers(target, [])
    for tape in tapes:
        index = saved_index(tape)
        savers = [n for n in map(index.first_saver, buffers) if n is not None]
        if savers:
            # several written buffers: the saver recorded first, as a walk would meet it
            node = savers[0] if len(savers) == 1 else min(savers, key=tape.nodes.index)
            raise RuntimeError(
                f"minpy.grad: in-place write by {writer} into an array that the "
                f"tape saved for the backward pass of {node.prim.qualname}; the gradient "
                "would be wrong. Write into a copy instead.")


def _buffers(target, out):
    if type(target) is Array:
        out.append(target._data)
    elif isinstance(target, (tuple, list)):
        for v in target:
            _buffers(v, out)
    elif isinstance(target, dict):
        for v in target.values():
            _buffers(v, out)
    return out


# ---------------------------------------------------------------- after recording
def seal(tape):
    """Note the write version of every buffer that closed ``tape`` saved, for a backward
    pass that runs later (``make_vjp``'s ``vjp``): see :func:`check_sealed`."""
    index = SavedIndex()
    index.update(tape.nodes)
    index.sealed = [(r, watch(r), nodes[0]) for r, nodes in index.by_root.values()]
    index.by_root = index.by_array = None
    tape.saved = index


def check_sealed(tape, who):
    """Refuse the backward pass of sealed ``tape`` when a buffer it saved was written in
    place since :func:`seal` (the gradient would use the new contents).

    Args:
        tape: a tape that :func:`seal` sealed (any other passes).
        who: the caller's name in the error (``'minpy.make_vjp(f)'``).
    Raises:
        RuntimeError: naming the operation that saved the written buffer.
    """
    index = tape.saved
    if index is None or index.sealed is None:
        return
    for r, version, node in index.sealed:
        if epoch(r) != version:
            raise RuntimeError(
                f"{who}: an array that the tape saved for the backward pass of "
                f"{node.prim.qualname} was written in place after it was recorded; the "
                "gradient would be wrong. Write into a copy instead, or record again.")
