"""``primitive_vjps``: autograd's table of VJP rules, as a view of minpy's.

autograd keeps ``autograd.core.primitive_vjps = {primitive: vjp_argnums}``, where
``vjp_argnums(argnums, ans, args, kwargs)`` returns ``g -> tuple of gradients``
(one per entry of ``argnums``), and code inspects or edits it: ``fun in
primitive_vjps``, ``primitive_vjps.pop(fun)`` to take a rule away (autograd's own
tests do, then put it back), ``primitive_vjps[fun] = vjp_argnums`` to define one.
minpy keeps each primitive's rules on its :class:`~minpy.core.primitive.Primitive`
(``vjp``: ``{argnum or keyword: maker(ans, *args, **kwargs) -> (g -> gradient)}``);
:data:`primitive_vjps` is a mutable mapping over those tables, keyed by the public
function (``minpy.sin``), a ``minpy.customop``, a :class:`Primitive` or its
registered name. Its values (:class:`VJPRules`) are autograd's ``vjp_argnums``
callables and, read-only, the ``{argnum: maker}`` tables themselves.
Primitives without a gradient (``argmax``, comparisons: ``def_nondiff``) are not
in it, as autograd's non-differentiable functions are not in its table.
"""
import collections.abc
import weakref

from .autograd import _copy_rules, defvjp_argnums
from .primitive import PRIMITIVES, Primitive

__all__ = ["primitive_vjps", "VJPRules", "PrimitiveVJPs"]


class VJPRules(collections.abc.Mapping):
    """One primitive's rules: ``rules(argnums, ans, args, kwargs) -> (g -> tuple)`` as
    autograd's ``vjp_argnums``; ``rules[argnum]`` the maker of one argument (a
    keyword argument's by name), ``maker(ans, *args, **kwargs) -> (g -> gradient)``.

    A snapshot: setting it back into :data:`primitive_vjps` restores exactly these
    rules (autograd's ``pop`` then re-insert)."""

    __slots__ = ("primitive", "_rules", "_nondiff")

    def __init__(self, primitive, rules, nondiff=False):
        self.primitive = primitive
        self._rules = rules
        self._nondiff = nondiff

    def __getitem__(self, argnum):
        return self._rules[argnum]

    def __iter__(self):
        return iter(dict.keys(self._rules))

    def __len__(self):
        return dict.__len__(self._rules)

    def __contains__(self, argnum):
        return argnum in self._rules

    def __call__(self, argnums, ans, args, kwargs):
        vjps = []
        for i in argnums:
            maker = self._rules.get(i)
            if maker is None:
                raise NotImplementedError(f"VJP of {self.primitive.qualname} wrt argnum {i} "
                                          "not defined")
            vjps.append(maker(ans, *args, **kwargs))
        return lambda g: tuple(v(g) for v in vjps)

    def __repr__(self):
        return f"<VJP rules of {self.primitive.qualname}: argnums {sorted(map(str, self))}>"


class PrimitiveVJPs(collections.abc.MutableMapping):
    """autograd's ``primitive_vjps`` over minpy's rule tables (see the module's docstring).

    ``table[fun]`` -> :class:`VJPRules` (KeyError: no gradient rule, or not a minpy
    primitive); ``table[fun] = vjp_argnums`` is ``minpy.defvjp_argnums(fun,
    vjp_argnums)`` (a :class:`VJPRules` taken from the table restores its rules);
    ``del table[fun]`` / ``table.pop(fun)`` takes ``fun``'s rules away: ``minpy.grad``
    through it then raises, naming it. Iteration gives the :class:`Primitive` records
    of the registered primitives with rules, and of every other primitive (a custom op)
    this table has seen. See also autograd.core.primitive_vjps.
    """

    def __init__(self):
        self._seen = weakref.WeakSet()       # custom ops met through this table

    @staticmethod
    def _primitive(fun):
        if isinstance(fun, Primitive):
            return fun
        if isinstance(fun, str):
            return PRIMITIVES.get(fun)
        p = getattr(fun, "_prim", None)
        return p if isinstance(p, Primitive) else None

    def __getitem__(self, fun):
        p = self._primitive(fun)
        if p is None or p.vjp is None or p.nondiff:
            raise KeyError(fun)
        self._note(p)
        return VJPRules(p, p.vjp, p.nondiff)

    def __contains__(self, fun):
        p = self._primitive(fun)
        return p is not None and p.vjp is not None and not p.nondiff

    def __setitem__(self, fun, vjp_argnums):
        p = self._primitive(fun)
        if p is None:
            raise TypeError(f"primitive_vjps: {fun!r} is not a minpy primitive (make one with "
                            "minpy.customop)")
        self._note(p)
        if isinstance(vjp_argnums, VJPRules):
            p.vjp = _copy_rules(vjp_argnums._rules)
            p.nondiff = vjp_argnums._nondiff
            return
        defvjp_argnums(p, vjp_argnums)

    def __delitem__(self, fun):
        p = self._primitive(fun)
        if p is None or p.vjp is None or p.nondiff:
            raise KeyError(fun)
        p.vjp = None

    def _note(self, p):
        if PRIMITIVES.get(p.qualname) is not p:
            self._seen.add(p)

    def _primitives(self):
        seen = list(self._seen)
        return [p for p in (*PRIMITIVES.values(), *seen) if p.vjp is not None and not p.nondiff]

    def __iter__(self):
        return iter(self._primitives())

    def __len__(self):
        return len(self._primitives())

    def __repr__(self):
        return f"<minpy primitive_vjps: {len(self)} primitives with VJP rules>"


primitive_vjps = PrimitiveVJPs()
