"""Stateful resources guarded by a Var, e.g. random number generators.

A ``numpy.random.Generator`` is mutable state: two ops drawing from it
concurrently race, and the numbers each gets depend on timing.  Guarding it
with a Var that every draw *writes* makes draws run one at a time in push
order, so the same seed gives the same numbers with any number of workers.
"""
import numpy

from .current import get_engine
from .var import Var

__all__ = ["Guarded", "guarded_rng", "GLOBAL_STATE"]

# NumPy's legacy global random state (``numpy.random.seed``/``rand`` ...) as a
# resource: work pushed to the engine that draws from it writes this Var (MXNet's
# kRandom resource), and code drawing or seeding eagerly waits for it first, so every
# draw happens in program order whatever the threads do.
GLOBAL_STATE = Var("numpy.random global state")


class Guarded:
    """A mutable object whose every use is ordered by one Var.

    Args:
        obj: the object (e.g. a ``numpy.random.Generator``).
        name: label for the var.
        engine: engine to push to; default: the current engine at push time.
    """

    def __init__(self, obj, name=None, engine=None):
        self.obj = obj
        self.var = Var(name)
        self.engine = engine

    def push(self, fn, reads=(), writes=(), name=None, device=None):
        """Queue ``fn(obj)``, adding the guard var to ``writes``.

        Args:
            fn: one-argument callable receiving the guarded object.
            reads, writes, name, device: as for ``minpy.engine.push``.
        Returns:
            None.
        """
        eng = self.engine if self.engine is not None else get_engine()
        obj = self.obj
        writes = (writes,) if isinstance(writes, Var) else tuple(writes)
        eng.push(lambda: fn(obj), reads, writes + (self.var,), name, device)


def guarded_rng(seed=None, name="rng", engine=None):
    """Return a ``Guarded`` ``numpy.random.default_rng(seed)``.

    Example::

        rng = guarded_rng(0)
        out = [None]
        rng.push(lambda g: out.__setitem__(0, g.standard_normal(3)))
    """
    return Guarded(numpy.random.default_rng(seed), name, engine)
