"""Write epochs of array buffers, for copy caches and the tape's safety check
(a backward pass run after its tape closed: ``minpy.core.saved.seal``).

Only buffers somebody *watches* are tracked: ``watch(data)`` returns the
buffer's current epoch, ``bump(data)`` (called on every in-place write through
minpy) increments it, and a watcher compares. Views share their root buffer,
so a write through a view invalidates copies of the base and vice versa.
"""
import weakref

_EPOCH = {}   # id(root buffer) -> int, only for watched buffers


def root(data):
    """The object owning ``data``'s memory (its ``base`` chain's end)."""
    base = getattr(data, "base", None)
    while base is not None and base is not data:    # (a dtype is its own base)
        data, base = base, getattr(base, "base", None)
    return data


_root = root


def bump(data):
    """Record an in-place write to ``data``'s buffer."""
    if _EPOCH:
        k = id(_root(data))
        v = _EPOCH.get(k)
        if v is not None:
            _EPOCH[k] = v + 1


def epoch(data):
    """Current epoch of ``data``'s buffer (0 when never watched)."""
    return _EPOCH.get(id(_root(data)), 0)


def watch(data):
    """Start tracking ``data``'s buffer; returns its current epoch."""
    root = _root(data)
    k = id(root)
    v = _EPOCH.get(k)
    if v is None:
        v = _EPOCH[k] = 0
        try:
            weakref.finalize(root, _EPOCH.pop, k, None)
        except TypeError:
            # buffer object without weakref support (e.g. bytes): the entry
            # stays; a watcher keeps its buffer alive, so ids cannot collide
            pass
    return v
