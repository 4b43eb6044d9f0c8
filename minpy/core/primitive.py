"""Primitives: one registration record per public function.

A primitive names a backend function (``qualname`` such as ``'sum'`` or
``'linalg.inv'``) whose body is resolved on the backend namespace ``xp`` of
the device chosen for the call, so one body serves NumPy and CuPy. The
gradient tables fill in ``vjp``/``nondiff``; :mod:`minpy.core.wrappers`
makes the public callables; :mod:`minpy.core.call` runs them.

The gradient tables are loaded the first time any primitive's rule is read
(:func:`defer_rules`; issue 27: ``import minpy`` does not pay for them): a program
that never differentiates never loads them.
"""
import functools
import sys
import threading

import numpy

from ..dispatch.backend import NUMPY

__all__ = ["Primitive", "PRIMITIVES", "register", "COMPUTE", "CREATE", "SELF", "RULE_ATTRIBUTES",
           "defer_rules", "load_rules", "rules_loaded", "table_begins", "table_ends"]



class _Registry(dict):
    """{qualname: Primitive}. Reading it whole (iterating, ``len``) loads the deferred
    gradient tables first (:func:`load_rules`): they register primitives of their own
    (``scatter_add``, the ufunc methods), so a loop over it reading rules would otherwise
    change it as it runs, or miss them. Lookups by name are a dict's."""

    __slots__ = ()

    def __iter__(self):
        load_rules()
        return super().__iter__()

    def __len__(self):
        load_rules()
        return super().__len__()

    def keys(self):
        load_rules()
        return super().keys()

    def values(self):
        load_rules()
        return super().values()

    def items(self):
        load_rules()
        return super().items()


PRIMITIVES = _Registry()     # qualname -> Primitive

# placements
COMPUTE = "compute"    # policy decides (prefer_gpu / only_cpu / only_gpu)
CREATE = "create"      # the current context in ``with ctx:``, else where its first array input lives
SELF = "self"          # runs where its first array argument (or out=) lives


class Primitive:
    """Registration record of one public function.

    Args:
        qualname: name in the backend namespace ('sum', 'linalg.inv', 'add.reduce').
        impl: the NumPy implementation (also used to find it on other backends
            by ``qualname`` unless ``forward`` is given).
        forward: optional ``forward(xp, *args, **kwargs)`` written against the
            backend namespace, for functions that are not a plain backend call.
        placement: COMPUTE, CREATE or SELF (see module doc).
        mutates: index of a positional argument the function writes in place.
        elementwise_inputs: for ufuncs, number of inputs that are array-likes
            (lists are converted to device arrays on non-CPU backends).
        host_only_impl: with ``forward``, True when ``impl`` is what ``forward`` does on
            NumPy, so the CPU-only path calls ``impl`` directly (``forward`` exists for
            the devices' sake).
    """

    __slots__ = ("qualname", "impl", "forward", "placement", "mutates", "elementwise_inputs",
                 "vjp", "nondiff", "custom", "host_fn", "inplace_replay", "__weakref__")

    def __init__(self, qualname, impl, forward=None, placement=COMPUTE, mutates=None,
                 elementwise_inputs=0, host_only_impl=False):
        self.qualname = qualname
        self.impl = impl
        self.forward = forward
        self.placement = placement
        self.mutates = mutates
        self.elementwise_inputs = elementwise_inputs
        self.vjp = None          # set by the autograd tables
        self.nondiff = False     # True: outputs carry no gradient
        self.custom = None       # customop: a Python function of Arrays, run as is
        self.inplace_replay = None   # under a tape: args -> (target, new value); see core.inplace
        # the NumPy callable of the CPU-only path; None where that path must not be
        # taken (a function writing in place goes through the general path)
        self.host_fn = None if mutates is not None else (
            impl if forward is None or host_only_impl else functools.partial(forward, numpy))

    def __repr__(self):
        return f"<minpy primitive {self.qualname}>"

    def backend_impl(self, backend):
        """The function to call on ``backend``, or None if it lacks it."""
        if self.forward is not None:
            f = self.forward
            xp = backend.xp
            return lambda *a, **k: f(xp, *a, **k)
        if backend is NUMPY:
            return self.impl
        return backend.lookup(self.qualname)


def register(prim):
    """Add ``prim`` to :data:`PRIMITIVES` (by qualname) and return it."""
    PRIMITIVES[prim.qualname] = prim
    return prim


# ---------------------------------------------------------------- rules on first read
# The attributes the gradient tables set. While the tables are deferred (defer_rules),
# each is a property that loads them before the first read; once loaded, each is again
# the slot's own member descriptor, so a read costs what it cost before (no check).
RULE_ATTRIBUTES = ("vjp", "nondiff", "inplace_replay")
_MEMBERS = {name: Primitive.__dict__[name] for name in RULE_ATTRIBUTES}
_LOCK = threading.Lock()            # one thread loads the tables; the others wait for it


class _Rules:
    load = None        # load(until): imports the tables in order, up to the one named ``until``
    loaded = True      # nothing deferred


class _Importing(threading.local):
    """This thread's table modules being imported (their names) and loads running: while
    either is non-empty, a rule read here loads nothing (the rules are being set)."""

    def __init__(self):
        self.tables = []
        self.loads = 0


_IMPORTING = _Importing()


def _deferred(name):
    member = _MEMBERS[name]

    def get(self):
        load_rules()
        return member.__get__(self, type(self))

    def set(self, value):
        member.__set__(self, value)
    return property(get, set, doc=f"The primitive's {name} (loads the gradient tables first).")


def defer_rules(load):
    """Load the gradient tables with ``load(None)`` the first time any primitive's rule
    (:data:`RULE_ATTRIBUTES`) is read, rather than now.

    Args:
        load: ``load(until)`` imports the table modules in their order, stopping before
            the one named ``until`` (a module name) when given, or importing all of them.
    """
    with _LOCK:
        _Rules.load, _Rules.loaded = load, False
        for name in RULE_ATTRIBUTES:
            setattr(Primitive, name, _deferred(name))


def rules_loaded():
    """True once the gradient tables are loaded (or were never deferred)."""
    return _Rules.loaded


def _finish():
    for name, member in _MEMBERS.items():
        setattr(Primitive, name, member)
    _Rules.loaded = True


def load_rules():
    """Load the deferred gradient tables now (nothing if they are loaded). Does nothing
    while this thread imports a table module (its rules are not all set yet; the tables
    after it load at the next rule read)."""
    if _Rules.loaded:
        return
    mine = _IMPORTING
    if mine.tables:
        # a table whose import failed is out of sys.modules, and ended nothing
        mine.tables[:] = [name for name in mine.tables if name in sys.modules]
    if mine.tables or mine.loads:
        return
    with _LOCK:
        if _Rules.loaded:
            return
        mine.loads += 1
        try:
            _Rules.load(None)
        finally:
            mine.loads -= 1
        _finish()


def table_begins(name):
    """The first statement of a gradient table module (``name``: its ``__name__``).

    The tables before it are loaded first, and no rule read in this thread loads a table
    until :func:`table_ends`: imported alone (``from minpy.numpy.vjp_indexing import
    ...``), a table still registers its rules after those before it, and the tables
    after it load at the next rule read.
    """
    _IMPORTING.tables.append(name)
    if not _Rules.loaded:
        _Rules.load(name)


def table_ends(name):
    """The last statement of a gradient table module: see :func:`table_begins`."""
    tables = _IMPORTING.tables
    if name in tables:
        del tables[len(tables) - 1 - tables[::-1].index(name)]
