"""One engine Var per storage buffer, shared by every array that aliases it.

Dependencies must follow memory, not array objects: a write through a view
has to order against a queued read of its base (and the reverse).  The
buffer's *root* is the array that owns the memory, found by walking
``.base`` (NumPy points a view's ``base`` at the owner, so the walk is
usually one step); every view, and every view of a view, shares the root's
Var.

The map is keyed by ``id(root)`` and holds a weak reference to the root: an
entry dies with its root, and a lookup checks the reference still points at
the very object, so an id recycled by a new buffer never inherits an old
buffer's Var.  Buffers that cannot be weakly referenced get no entry.

Not covered: two arrays built independently over one foreign buffer (e.g.
``numpy.frombuffer`` twice on one ``bytearray``) have different roots.
"""
import threading
import weakref

import numpy

from .current import get_engine
from .var import Var

__all__ = ["root_of", "storage_var", "bind_storage", "adopt_storage", "wait_storage"]

_vars = {}                  # id(root) -> (weakref to root, Var)
_lock = threading.RLock()   # re-entrant: a weakref callback may fire inside it
_ndarray = numpy.ndarray


def root_of(buf):
    """The array owning ``buf``'s memory: ``buf`` itself or the last array (of
    NumPy's or ``buf``'s own type) up its ``.base`` chain."""
    root = buf
    kind = type(buf)
    b = getattr(buf, "base", None)
    # a non-array on the way (as_strided's DummyArray) may lead on to an array
    for _ in range(64):
        if b is None:
            break
        if isinstance(b, _ndarray) or type(b) is kind:
            root = b
        b = getattr(b, "base", None)
    return root


def storage_var(buf):
    """The Var of ``buf``'s storage, or None when none was bound."""
    if not _vars:
        return None
    root = buf if getattr(buf, "base", None) is None else root_of(buf)
    entry = _vars.get(id(root))
    if entry is not None and entry[0]() is root:
        return entry[1]
    return None


def _forget(ref, key, _vars=_vars, _lock=_lock):
    # defaults: callbacks may run while the interpreter clears module globals
    with _lock:
        entry = _vars.get(key)
        if entry is not None and entry[0] is ref:
            del _vars[key]


def bind_storage(buf, var=None):
    """The Var of ``buf``'s storage, binding ``var`` (default: a new Var) to it
    when it has none.

    Returns ``var`` unbound (or a new Var) when the root cannot be weakly
    referenced.
    """
    root = root_of(buf)
    key = id(root)
    with _lock:
        entry = _vars.get(key)
        if entry is not None and entry[0]() is root:
            return entry[1]
        if var is None:
            var = Var()
        try:
            ref = weakref.ref(root, lambda r, key=key, forget=_forget: forget(r, key))
        except TypeError:
            return var
        _vars[key] = (ref, var)
    return var


def wait_storage(buf, skip=None):
    """Wait for the pending work on ``buf``'s storage Var (unless it is ``skip``, or
    there is none); re-raise its error.

    Inside an op it returns at once: the op declared what it depends on, and
    the storage it is writing may be the one aliased (a wait there would
    deadlock).
    """
    v = storage_var(buf)
    if v is None or v is skip:
        return
    eng = get_engine()
    if not eng.in_op():
        eng.wait_for(v)


def adopt_storage(buf, var):
    """Bind ``var`` (an array's own Var) to ``buf``'s storage when ``buf`` owns
    its memory and the storage has no Var yet; views never bind their root to
    a Var of their own (several views of one arena may carry different Vars)."""
    if root_of(buf) is buf and storage_var(buf) is None:
        bind_storage(buf, var)
