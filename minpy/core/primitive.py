"""Primitives: one registration record per public function.

A primitive names a backend function (``qualname`` such as ``'sum'`` or
``'linalg.inv'``) whose body is resolved on the backend namespace ``xp`` of
the device chosen for the call, so one body serves NumPy and CuPy. The
gradient tables fill in ``vjp``/``nondiff``; :mod:`minpy.core.wrappers`
makes the public callables; :mod:`minpy.core.call` runs them.
"""
import functools

import numpy

from ..dispatch.backend import NUMPY

__all__ = ["Primitive", "PRIMITIVES", "register", "COMPUTE", "CREATE", "SELF"]

PRIMITIVES = {}     # qualname -> Primitive

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
    """

    __slots__ = ("qualname", "impl", "forward", "placement", "mutates", "elementwise_inputs",
                 "vjp", "nondiff", "custom", "host_fn", "inplace_replay", "__weakref__")

    def __init__(self, qualname, impl, forward=None, placement=COMPUTE, mutates=None,
                 elementwise_inputs=0):
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
            impl if forward is None else functools.partial(forward, numpy))

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
