"""The one pytree walker: flatten, unflatten and map over nested containers.

Containers (nodes): ``list``, ``tuple``, ``dict``, ``collections.OrderedDict``,
``collections.defaultdict``, namedtuples (tuple subclasses with ``_fields``),
``None`` (a node without children, so an absent part stays ``None``) and
types registered with :func:`register`. Everything else — Arrays, NumPy
arrays, Python numbers, strings — is a leaf. Dicts keep their insertion
order (as autograd, unlike JAX which sorts keys), so a structure rebuilt
from its leaves is the one the user passed.

A structure (:class:`TreeDef`) is hashable and compares by value, so it can
key a cache (``minpy.jit`` keys its traces by it): two dicts with the same
keys in the same order, or two instances of one namedtuple type, have equal
structures whatever their identity.
"""
import collections

__all__ = ["TreeDef", "flatten", "unflatten", "leaves", "structure", "map_tree", "register",
           "is_node", "dict_keys"]

_LEAF = None        # the structure of a leaf (TreeDef children entries)


class TreeDef:
    """The structure of a tree: node kind, auxiliary data and children structures.

    ``kind`` is the node's type, ``aux`` what rebuilding it needs besides its
    children (dict keys, a defaultdict's factory), ``children`` a tuple with one
    entry per child: a ``TreeDef`` or ``None`` for a leaf.
    """

    __slots__ = ("kind", "aux", "children", "num_leaves", "flat", "_hash")

    def __init__(self, kind, aux, children, num_leaves=None):
        self.kind = kind
        self.aux = aux
        self.children = children
        if num_leaves is None:
            self.flat = all(c is None for c in children)
            num_leaves = len(children) if self.flat else \
                sum(1 if c is None else c.num_leaves for c in children)
        else:
            self.flat = num_leaves == len(children)
        self.num_leaves = num_leaves      # flat: every child is a leaf
        self._hash = None

    def __eq__(self, other):
        return (type(other) is TreeDef and self.kind is other.kind and self.aux == other.aux
                and self.children == other.children)

    def __hash__(self):
        h = self._hash
        if h is None:
            h = self._hash = hash((self.kind, self.aux, self.children))
        return h

    def __repr__(self):
        inner = ", ".join("*" if c is None else repr(c) for c in self.children)
        name = getattr(self.kind, "__name__", str(self.kind))
        if self.kind is type(None):
            return "None"
        if self.aux is not None and self.kind is not defaultdict_type:
            return f"{name}[{self.aux!r}]({inner})"
        return f"{name}({inner})"


defaultdict_type = collections.defaultdict


# ------------------------------------------------------------------ node kinds
# kind -> (children(x) -> (aux, sequence of children), build(aux, children) -> x)
def _seq(x):
    return None, x


def _dict(x):
    keys = tuple(x)
    return keys, [x[k] for k in keys]


def _ddict(x):
    keys = tuple(x)
    return (x.default_factory, keys), [x[k] for k in keys]


def _build_ddict(aux, children):
    factory, keys = aux
    d = collections.defaultdict(factory)
    d.update(zip(keys, children))
    return d


_NODES = {
    list: (_seq, lambda aux, ch: list(ch)),
    tuple: (_seq, lambda aux, ch: tuple(ch)),
    dict: (_dict, lambda aux, ch: dict(zip(aux, ch))),
    collections.OrderedDict: (_dict, lambda aux, ch: collections.OrderedDict(zip(aux, ch))),
    collections.defaultdict: (_ddict, _build_ddict),
    type(None): (lambda x: (None, ()), lambda aux, ch: None),
}


_LEAF_TYPES = set()     # types seen to be leaves (not namedtuples, not registered)


def _namedtuple_kind(t):
    """``t`` registered on first sight when it is a namedtuple type (a tuple with _fields)."""
    if t in _LEAF_TYPES:
        return False
    if issubclass(t, tuple) and hasattr(t, "_fields") and hasattr(t, "_make"):
        _NODES[t] = (_seq, lambda aux, ch, t=t: t._make(ch))
        return True
    if len(_LEAF_TYPES) < 4096:
        _LEAF_TYPES.add(t)
    return False


def register(kind, children, build):
    """Make instances of type ``kind`` tree nodes.

    Args:
        kind: the type (exact type: subclasses are registered separately).
        children: ``children(x) -> (aux, iterable of children)``; ``aux`` must be
            hashable and comparable (it is part of the structure).
        build: ``build(aux, children) -> x``, the inverse.
    Returns:
        ``kind``. See also jax.tree_util.register_pytree_node.
    """
    if not isinstance(kind, type):
        raise TypeError(f"minpy.tree.register: kind must be a type, got {kind!r}")
    _NODES[kind] = (children, build)
    _LEAF_TYPES.discard(kind)
    return kind


def dict_keys(td):
    """The keys of a dict-like structure ``td`` in order, or None for another kind."""
    if not issubclass(td.kind, dict):
        return None
    return td.aux[1] if td.kind is collections.defaultdict else td.aux


def is_node(x):
    """True when ``x`` is a container the walker descends into."""
    t = type(x)
    return t in _NODES or _namedtuple_kind(t)


# ------------------------------------------------------------------ walking
def _flatten(x, out, is_leaf):
    t = type(x)
    entry = _NODES.get(t)
    if entry is None:
        if not _namedtuple_kind(t) or (is_leaf is not None and is_leaf(x)):
            out.append(x)
            return _LEAF
        entry = _NODES[t]
    elif is_leaf is not None and is_leaf(x):
        out.append(x)
        return _LEAF
    aux, kids = entry[0](x)
    return TreeDef(t, aux, tuple([_flatten(c, out, is_leaf) for c in kids]))


def flatten(x, is_leaf=None):
    """The leaves of ``x`` in order, and its structure.

    Args:
        x: a tree (a leaf alone is a tree with one leaf).
        is_leaf: optional predicate; a node for which it is true is kept whole as
            a leaf.
    Returns:
        ``(leaves, treedef)``; ``treedef`` is ``None`` when ``x`` itself is a
        leaf. See also jax.tree_util.tree_flatten.
    """
    t = type(x)
    if (t is list or t is tuple) and is_leaf is None:
        # the common argument, a flat list of arrays: no walk
        for e in x:
            if type(e) not in _LEAF_TYPES:
                break
        else:
            n = len(x)
            return list(x), TreeDef(t, None, (None,) * n, n)
    out = []
    return out, _flatten(x, out, is_leaf)


def _unflatten(td, it):
    if td is None:
        return next(it)
    return _NODES[td.kind][1](td.aux, [_unflatten(c, it) for c in td.children])


def unflatten(treedef, leaves):
    """The tree of structure ``treedef`` holding ``leaves`` (an iterable) in order."""
    it = iter(leaves)
    out = _unflatten(treedef, it)
    extra = next(it, _END)
    if extra is not _END:
        n = 1 if treedef is None else treedef.num_leaves
        raise ValueError(f"minpy.tree.unflatten: more leaves than the structure's {n}")
    return out


_END = object()


def _leaves_into(x, out):
    """Append the leaves of node ``x`` to ``out`` (no structure built: the hot path of
    :func:`leaves`, used on every call that looks for the Arrays among its arguments)."""
    t = type(x)
    if t is list or t is tuple:
        items = x
    elif t is dict:
        items = x.values()
    else:
        items = _NODES[t][0](x)[1]
    for e in items:
        te = type(e)
        if te in _LEAF_TYPES:
            out.append(e)
        elif te in _NODES or _namedtuple_kind(te):
            _leaves_into(e, out)
        else:
            out.append(e)


def leaves(x, is_leaf=None):
    """The leaves of ``x`` in order (see :func:`flatten`)."""
    out = []
    if is_leaf is not None:
        _flatten(x, out, is_leaf)
    elif type(x) in _NODES or _namedtuple_kind(type(x)):
        _leaves_into(x, out)
    else:
        out.append(x)
    return out


def structure(x, is_leaf=None):
    """The structure of ``x`` (see :func:`flatten`)."""
    return _flatten(x, [], is_leaf)


def map_tree(fn, x, *rest, is_leaf=None):
    """``x``'s structure with ``fn(leaf, *matching leaves of rest)`` at each leaf.

    Args:
        fn: a function of one leaf of ``x`` and the leaves at the same place in
            each of ``rest``.
        x: the tree whose structure the result has.
        *rest: trees with ``x``'s structure (checked).
    Returns:
        The mapped tree. See also jax.tree_util.tree_map.
    """
    lv, td = flatten(x, is_leaf)
    if not rest:
        return unflatten(td, [fn(v) for v in lv])
    others = []
    for r in rest:
        rl, rtd = flatten(r, is_leaf)
        if rtd != td:
            raise ValueError(f"minpy.tree.map_tree: trees of different structures: {td!r} "
                             f"and {rtd!r}")
        others.append(rl)
    return unflatten(td, [fn(*vs) for vs in zip(lv, *others)])
