"""``flatten(value) -> (vector, unflatten)`` for nested parameters.

A structure of nested tuples, lists (namedtuples too) and dicts whose leaves
are arrays (minpy or NumPy), numbers or None becomes one 1-d Array: leaves
in order, dict values in sorted-key order (as autograd), each raveled; None
is an empty part. Both directions are recorded on the tape, so
``grad(lambda v: loss(unflatten(v)))(vector)`` and ``grad(lambda p:
f(flatten(p)[0]))(params)`` work (and nest).
"""
import math
import numbers

import numpy

from .. import numpy as mnp
from ..core.array import Array

__all__ = ["flatten", "Flattener"]


def _path(where):
    return "".join(f"[{k!r}]" for k in where) or "the value"


class Flattener:
    """The layout of one nested structure: :meth:`flat` and :meth:`unflat` for it.

    Args:
        value: the structure (see the module docstring).
        who: the name used in error messages.
    """

    def __init__(self, value, who="minpy.misc.flatten"):
        self.who = who
        self.leaves = []        # (shape, dtype, kind): kind "array", "number" (its type), "none"
        self.spec = self._spec(value, ())
        sizes = [math.prod(shape) for shape, _, _ in self.leaves]
        self.offsets = numpy.cumsum([0] + sizes).tolist()
        self.size = self.offsets[-1]
        dts = [dt for _, dt, kind in self.leaves if kind != "none"]
        self.dtype = numpy.result_type(*dts) if dts else numpy.dtype(numpy.float64)

    def _spec(self, x, where):
        if isinstance(x, dict):
            try:
                keys = sorted(x)
            except TypeError:
                raise TypeError(f"{self.who}: the dict at {_path(where)} has keys that cannot be "
                                f"sorted ({sorted(map(repr, x))}); flatten orders dict values by "
                                "sorted key") from None
            return ("d", type(x), tuple(x), tuple(keys),
                    tuple(self._spec(x[k], where + (k,)) for k in keys))
        if isinstance(x, (list, tuple)):
            return ("s", type(x), len(x), None,
                    tuple(self._spec(e, where + (i,)) for i, e in enumerate(x)))
        if x is None:
            self.leaves.append(((0,), None, "none"))
        elif type(x) is Array or isinstance(x, numpy.ndarray):
            self.leaves.append((tuple(x.shape), x.dtype, "array"))
        elif isinstance(x, (numbers.Number, numpy.generic)):
            kind = type(x) if isinstance(x, (bool, int, float, complex)) else "array"
            self.leaves.append(((), numpy.asarray(x).dtype, kind))
        else:
            raise TypeError(f"{self.who}: cannot flatten a {type(x).__name__} at {_path(where)}; "
                            "leaves must be arrays, numbers or None inside tuples, lists and "
                            "dicts")
        return None

    # -------------------------------------------------------------- value -> vector
    def flat(self, value):
        """``value`` (this layout) as one 1-d Array in the layout's dtype (recorded
        when traced)."""
        parts = []
        self._collect(value, self.spec, parts, ())
        pieces = []
        for p, (shape, dt, kind) in zip(parts, self.leaves):
            if kind == "none":
                continue
            a = p if type(p) is Array else mnp.asarray(p)
            if tuple(a.shape) != shape:
                raise ValueError(f"{self.who}: a leaf has shape {tuple(a.shape)} where the "
                                 f"layout has {shape}")
            pieces.append(a if a.ndim == 1 else mnp.reshape(a, (-1,)))
        if not pieces:
            return mnp.zeros(0, dtype=self.dtype)
        if len(pieces) == 1:
            v = pieces[0]
            return v if v.dtype == self.dtype else v.astype(self.dtype)
        v = mnp.concatenate(pieces)
        return v if v.dtype == self.dtype else v.astype(self.dtype)

    def _collect(self, x, spec, parts, where):
        if spec is None:
            parts.append(x)
            return
        kind, t, keys, order, subs = spec
        if kind == "d":
            if not isinstance(x, dict) or set(x) != set(keys):
                raise ValueError(f"{self.who}: expected a dict with keys {sorted(keys)} at "
                                 f"{_path(where)}, got {type(x).__name__}"
                                 + (f" with keys {sorted(x)}" if isinstance(x, dict) else ""))
            for k, s in zip(order, subs):
                self._collect(x[k], s, parts, where + (k,))
            return
        if not isinstance(x, (list, tuple)) or len(x) != keys:
            raise ValueError(f"{self.who}: expected a sequence of {keys} at {_path(where)}, got "
                             f"{type(x).__name__}"
                             + (f" of {len(x)}" if isinstance(x, (list, tuple)) else ""))
        for i, (e, s) in enumerate(zip(x, subs)):
            self._collect(e, s, parts, where + (i,))

    # -------------------------------------------------------------- vector -> value
    def unflat(self, vector):
        """The structure back from a vector of :attr:`size` elements (recorded when traced).

        Array leaves come back as minpy Arrays of their shape and dtype; number
        leaves as Python numbers of their type, or as 0-d Arrays when the
        vector is traced (so that they carry the gradient); None as None.
        """
        v = vector if type(vector) is Array else mnp.asarray(vector)
        if v.ndim != 1 or v.shape[0] != self.size:
            raise ValueError(f"{self.who}: unflatten expects a vector of {self.size} elements "
                             f"(the flattened structure), got shape {tuple(v.shape)}")
        n = len(self.leaves)
        if n == 1:
            pieces = [v]
        elif n:
            pieces = mnp.split(v, self.offsets[1:-1])
        else:
            pieces = []
        traced = v._node is not None
        out = []
        for p, (shape, dt, kind) in zip(pieces, self.leaves):
            if kind == "none":
                out.append(None)
                continue
            if p.dtype != dt:
                p = p.astype(dt)
            if kind == "array":
                out.append(p if tuple(p.shape) == shape else mnp.reshape(p, shape))
            else:
                p = mnp.reshape(p, ())
                out.append(p if traced else kind(p.item()))
        return self._build(self.spec, iter(out))

    def _build(self, spec, it):
        if spec is None:
            return next(it)
        kind, t, keys, order, subs = spec
        if kind == "d":
            got = {k: self._build(s, it) for k, s in zip(order, subs)}
            d = {k: got[k] for k in keys}          # the caller's key order
            return d if t is dict else t(d)
        parts = [self._build(s, it) for s in subs]
        if t is list or t is tuple:
            return t(parts)
        return t(*parts) if hasattr(t, "_fields") else t(parts)


def flatten(value):
    """Flatten nested parameters into one vector.

    Args:
        value: nested tuples/lists/dicts (namedtuples too) of arrays, numbers
            and None. Dict values are taken in sorted-key order.
    Returns:
        ``(vector, unflatten)``: ``vector`` a 1-d minpy Array (all leaves,
        raveled, in the promoted dtype); ``unflatten(v)`` rebuilds the
        structure from any vector of that size (leaves in their own shape and
        dtype). Both are differentiable. See also autograd.misc.flatten.
    """
    layout = Flattener(value)
    return layout.flat(value), layout.unflat
