"""``minpy.customop``: a Python function of arrays made a primitive with your own gradient.

The tape looks one list/tuple level into arguments; a custom op whose arrays
sit deeper (or in a dict or namedtuple) is recorded as a derived primitive
taking each such argument as the flat list of its leaves, whose rules rebuild
the structure for the user's rule and flatten its gradient. A forward may
return NumPy arrays or scalars (as autograd's ``primitive`` and MinPy's
``customop('numpy')``); they become Arrays.
"""
import functools
import numbers

import numpy

from ..dispatch import state
from .array import Array, kept, new, wrap
from .autograd import _copy_rules, _describe
from .call import call
from .primitive import Primitive
from . import tree
from .tape import record

__all__ = ["customop"]

def _host_result(r):
    """A custom op's result with NumPy arrays and scalars (and Python floats) as Arrays."""
    t = type(r)
    if t is Array:
        return r
    if t is tuple or t is list:
        return t(_host_result(e) for e in r)
    if isinstance(r, tuple) and hasattr(t, "_make"):
        return t._make(_host_result(e) for e in r)
    if t is float or t is complex:
        return new(numpy.asarray(r))
    return kept(wrap(r))    # ndarray, NumPy scalar, a GPU backend's array; else as is


def _accepting_host(fn):
    """``fn`` whose NumPy results come back as Arrays (as autograd's primitive allows)."""
    @functools.wraps(fn)
    def forward(*args, **kwargs):
        r = fn(*args, **kwargs)
        return r if type(r) is Array else _host_result(r)
    return forward


def _is_tree(x):
    return x is not None and tree.is_node(x)


def _traced_inside(x):
    """True when container ``x`` holds (at any depth) an Array that a tape traces."""
    for e in tree.leaves(x):
        if type(e) is Array and e._node is not None:
            return True
    return False


def _needs_flat(args):
    """True when an argument holds a traced Array deeper than the tape looks (one level
    of plain list/tuple): inside a dict, a namedtuple, or a container in a list/tuple."""
    for a in args:
        t = type(a)
        if t is Array:
            continue
        if t is list or t is tuple:
            for e in a:
                if type(e) is not Array and _is_tree(e) and _traced_inside(e):
                    return True
        elif _is_tree(a) and _traced_inside(a):
            return True
    return False


def _grad_leaf(g):
    if g is None or type(g) is Array:
        return g
    if isinstance(g, numbers.Number) and not isinstance(g, bool):
        return new(numpy.asarray(g))
    r = wrap(g)
    if type(r) is not Array:
        raise TypeError(f"a gradient must be an array or a number, got {type(g).__name__}")
    return r


def _grad_leaves(g, spec, out, where, who):
    """Append the per-leaf gradients of ``g`` (structured as ``spec``; None is a zero
    gradient for a whole sub-structure) to ``out``."""
    if spec is None:
        try:
            out.append(_grad_leaf(g))
        except TypeError as e:
            raise TypeError(f"{who}{where}: {e}") from None
        return
    subs = spec.children
    if g is None:
        for s in subs:
            _grad_leaves(None, s, out, where, who)
        return
    if spec.kind is type(None):
        return
    keys = tree.dict_keys(spec)
    if keys is not None:
        if not isinstance(g, dict) or set(g) != set(keys):
            raise TypeError(f"{who}{where}: expected a dict with keys {list(keys)} (the "
                            f"argument's structure), got {_describe(g)}")
        for k, s in zip(keys, subs):
            _grad_leaves(g[k], s, out, f"{where}[{k!r}]", who)
        return
    if not isinstance(g, (list, tuple)) or len(g) != len(subs):
        raise TypeError(f"{who}{where}: expected a sequence of {len(subs)} (the argument's "
                        f"structure), got {_describe(g)}")
    for j, (e, s) in enumerate(zip(g, subs)):
        _grad_leaves(e, s, out, f"{where}[{j}]", who)


class customop:
    """A Python function of minpy arrays made a primitive with your own gradient.

    ::

        @minpy.customop
        def softmax(x):
            e = minpy.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

        @softmax.def_grad
        def softmax_grad(ans, x):
            return lambda g: ans * (g - (g * ans).sum(axis=1, keepdims=True))

    The forward body is not recorded; the gradient comes from ``def_grad``
    (``argnum`` selects the argument; call it once per argument), or from
    ``minpy.defvjp`` / ``defvjp_argnums`` on the op. The forward may return
    NumPy arrays or scalars: they become Arrays. Arguments may be nested
    lists/tuples/dicts of arrays at any depth (a tuple of lists of ``(W, b)``
    pairs): the gradient rule of such an argument returns the same structure
    (``None`` anywhere in it: a zero gradient for that part). See also
    autograd.extend.primitive.
    """

    def __init__(self, fn=None, name=None):
        if isinstance(fn, str) and name is None:      # MinPy style: @customop('numpy')
            fn = None
        self._fn = None
        self._prim = None
        self._flat = {}
        if fn is not None:
            self._set(fn, name)

    def _set(self, fn, name=None):
        self._fn = fn
        self._flat = {}
        functools.update_wrapper(self, fn)
        qual = name or f"customop.{getattr(fn, '__qualname__', 'op')}"
        self._prim = Primitive(qual, fn)
        self._prim.custom = _accepting_host(fn)
        self._prim.host_fn = None

    def __call__(self, *args, **kwargs):
        if self._fn is None:
            self._set(args[0])
            return self
        if state.thread_flags().depth:
            if _needs_flat(args) or (kwargs and _needs_flat(kwargs.values())):
                return self._call_flat(args, kwargs)
            return record(self._prim, args, kwargs)
        # the front door: run as is, or recorded by minpy.jit (see Tracer.checked)
        return call(self._prim, args, kwargs)

    # -- arguments nested deeper than the tape looks: each such argument is passed as
    # the flat list of its leaves to a derived primitive (the tape traces one level
    # of lists), which rebuilds the structure for the forward and the rules
    def _call_flat(self, args, kwargs):
        flat_args, specs = [], []
        for a in args:
            if _is_tree(a):
                leaves, td = tree.flatten(a)
                specs.append(td)
                flat_args.append(leaves)
            else:
                specs.append(None)
                flat_args.append(a)
        flat_kw, kwspecs = {}, []
        for k, v in (kwargs or {}).items():
            if _is_tree(v):
                leaves, td = tree.flatten(v)
                kwspecs.append((k, td))
                flat_kw[k] = leaves
            else:
                kwspecs.append((k, None))
                flat_kw[k] = v
        key = (tuple(specs), tuple(kwspecs))
        hit = self._flat.get(key)
        if hit is None:
            hit = self._derived(key[0], dict(kwspecs))
            if len(self._flat) < 64:
                self._flat[key] = hit
        prim, rules = hit
        base = self._prim
        prim.vjp = None if base.vjp is None else rules
        prim.nondiff = base.nondiff
        return record(prim, tuple(flat_args), flat_kw)

    def _derived(self, specs, kwspecs):
        base = self._prim
        forward = base.custom
        name = base.qualname

        def rebuild(flat, flat_kw):
            args = [a if s is None else tree.unflatten(s, a) for a, s in zip(flat, specs)]
            kw = {k: v if kwspecs.get(k) is None else tree.unflatten(kwspecs[k], v)
                  for k, v in flat_kw.items()}
            return args, kw

        def nested_forward(*flat, **flat_kw):
            args, kw = rebuild(flat, flat_kw)
            return forward(*args, **kw)

        def rule_for(address, spec):
            def rule(ans, *flat, **flat_kw):
                user = base.vjp.get(address) if base.vjp is not None else None
                if user is None:
                    raise TypeError(f"minpy.grad: {name} has no gradient with respect to "
                                    f"argument {address!r} (define one with "
                                    f"{name.split('.', 1)[-1]}.def_grad(maker, "
                                    f"argnum={address!r}))")
                args, kw = rebuild(flat, flat_kw)
                vjp = user(ans, *args, **kw)
                if spec is None:
                    return vjp
                who = f"minpy.grad: the gradient {name} returned for argument {address!r}"

                def leaves_vjp(g):
                    out = []
                    _grad_leaves(vjp(g), spec, out, "", who)
                    return out
                return leaves_vjp
            return rule

        prim = Primitive(name, nested_forward)
        prim.custom = nested_forward
        prim.host_fn = None
        rules = {i: rule_for(i, s) for i, s in enumerate(specs)}
        rules.update((k, rule_for(k, s)) for k, s in kwspecs.items())
        return prim, rules

    def def_grad(self, maker, argnum=0):
        """Register ``maker(ans, *args) -> (lambda g: grad)`` for argument ``argnum``.

        ``argnum`` is a position (or a keyword name). For an argument that is
        a nested list/tuple/dict of arrays, ``grad`` has the same structure.
        Returns ``maker`` (so it works as a decorator).
        """
        rules = _copy_rules(self._prim.vjp)
        rules[argnum] = maker
        self._prim.vjp = rules
        self._prim.nondiff = False
        return maker
