"""Guards of a ``minpy.jit`` trace: the values it read from outside its arguments.

A trace keeps every Python value the function read as a constant of the
program, and every Array it read by reference (its *current* contents are
read at each replay). So a replay is right only while the names the function
reads still hold what the trace saw. Before tracing, :func:`scan` records
where the function can read from, and what it finds there:

- its closure cells and the globals its code reads or writes (the global
  names of its bytecode and of the code nested in it; a builtin it uses is
  guarded to stay unshadowed by a global);
- through those, recursively (a few levels): the closures and globals of
  Python functions it can call (user code only: minpy's, the standard
  library's and installed packages' functions are not entered), and, for an
  object, module or class, the attributes its code names (an instance's own
  ``__dict__``, and the methods of its class the code names, whose attribute
  names then count for that instance too).

Each place gets a *guard* on its value:

- an Array or NumPy array: identity (a new array bound to the name traces
  again; one written in place is read by reference by the replay; a host
  array of at most ``SMALL_HOST_BYTES`` is also compared by contents, since
  NumPy code of the function may have read its values into the trace);
- a number, string, bytes, None, NumPy scalar or dtype: value (``-0.0`` and
  ``0.0`` differ);
- a list, tuple, dict ... (a ``minpy.core.tree`` container): its structure and
  each leaf, compared again at every call (the container may be changed in
  place); one of more than ``MAX_TREE_LEAVES`` leaves is guarded by identity
  only, with a warning;
- a set: value; anything else (functions, classes, modules, objects):
  identity.

:class:`Guards` compiles the guards into one function run before a replay
(identity first, so an unchanged value costs one ``is``); a failed guard makes
``minpy.jit`` trace again, keeping the old trace for the old values.
"""
import builtins
import dis
import functools
import math
import operator
import os
import sysconfig
import types
import warnings

import numpy

from ..core import tree
from ..core.array import Array, new

__all__ = ["Guards", "scan", "code_names", "SMALL_HOST_BYTES", "MAX_TREE_LEAVES"]

SMALL_HOST_BYTES = 4096
MAX_TREE_LEAVES = 1000
_DEPTH = 4                       # hops through functions/objects/attributes followed

_MISSING = object()              # the value of an absent name
_SELF = object()                 # a guard's key: the value is its source itself
_is = operator.is_
_VALUE_TYPES = frozenset((int, float, complex, bool, str, bytes, type(None), range, slice,
                          type(Ellipsis), type(NotImplemented)))
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIB_DIRS = tuple(sorted({os.path.abspath(p) + os.sep for k in ("stdlib", "platstdlib",
                                                               "purelib", "platlib")
                          if (p := sysconfig.get_paths().get(k))}))


def _is_value(v):
    """True for immutable scalar values compared by value."""
    return type(v) in _VALUE_TYPES or isinstance(v, (numpy.generic, numpy.dtype))


def _same(a, b):
    """``a`` (not ``b`` itself) is a value equal to ``b``: same type, equal, same zero sign."""
    t = type(a)
    if t is not type(b) or not _is_value(a):
        return False
    try:
        if not bool(a == b):
            return False
    except (TypeError, ValueError):
        return False
    if isinstance(a, (float, numpy.floating)) and a == 0:
        return math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, (complex, numpy.complexfloating)):
        return all(math.copysign(1.0, x) == math.copysign(1.0, y)
                   for x, y in ((a.real, b.real), (a.imag, b.imag)))
    return True


def _tree_same(x, expected):
    """``x`` has the structure and leaves ``expected`` = ``(treedef, leaves)`` holds."""
    td, old = expected
    leaves, xtd = tree.flatten(x)
    if xtd != td:
        return False
    for a, b in zip(leaves, old):
        if a is not b and not _same(a, b):
            return False
    return True


def _flat_same(x, expected):
    """``x`` holds the items of ``expected`` = ``(type, keys, items, (treedef, leaves))``:
    the very objects (and keys), else equal values."""
    t, keys, kids, slow = expected
    if type(x) is t and len(x) == len(kids):
        if t is dict:
            if all(map(_is, x.values(), kids)) and all(map(_is, x, keys)):
                return True
        elif all(map(_is, x, kids)):
            return True
    return _tree_same(x, slow)


def _host_same(x, expected):
    """``x`` is the host array ``expected[0]`` and still holds the bytes ``expected[1]``."""
    return x is expected[0] and x.tobytes() == expected[1]


_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME",
                         "STORE_NAME", "DELETE_NAME"))
_ATTR_OPS = frozenset(("LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR",
                       "LOAD_SUPER_ATTR", "IMPORT_FROM"))


@functools.lru_cache(maxsize=4096)
def code_names(code):
    """``(globals, attributes)``: the names ``code`` and the code nested in it read as
    globals and as attributes (a global loop variable of a script that shares its name
    with an attribute the code reads is then not guarded)."""
    glob, attrs = set(), set()
    for ins in dis.get_instructions(code):
        if ins.opcode not in dis.hasname or ins.opname == "IMPORT_NAME":
            continue
        if ins.opname in _GLOBAL_OPS:
            glob.add(ins.argval)
        elif ins.opname in _ATTR_OPS:
            attrs.add(ins.argval)
        else:                           # an instruction this Python added: both, to be safe
            glob.add(ins.argval)
            attrs.add(ins.argval)
    for c in code.co_consts:
        if type(c) is types.CodeType:
            g, a = code_names(c)
            glob |= g
            attrs |= a
    return frozenset(glob), frozenset(attrs)


@functools.lru_cache(maxsize=1024)
def _user_file(filename):
    """False for minpy's own code, the standard library's and installed packages'."""
    if filename.startswith("<"):                # exec'd, the REPL: the user's
        return not filename.startswith("<minpy")
    path = os.path.abspath(filename)
    return not path.startswith(_PKG_DIR) and not path.startswith(_LIB_DIRS)


class Guards:
    """The compiled guards of one trace.

    ``check()`` returns -1 while every guarded value is unchanged, else the index
    of the first changed one (``labels[i]`` names it: "global 'lr'", ...).
    ``labels``: one per guard; ``externals``: ``{id(backend array): Array}`` of the
    arrays found (the trace reads them by reference, never as constants).
    """

    def __init__(self, guards, externals, owner):
        self.labels = [g[4] for g in guards]
        self.externals = externals
        self.check = _compile(guards, owner) if guards else None

    def __len__(self):
        return len(self.labels)

    def describe(self, index):
        """What guard ``index`` (a result of ``check``) is about."""
        if index == -2:
            return "a closure variable (deleted)"
        return self.labels[index]


def _compile(guards, owner):
    """One function checking ``guards`` (see :class:`Guards`)."""
    env = {"_same": _same, "_tree_same": _tree_same, "_flat_same": _flat_same,
           "_host_same": _host_same, "_M": _MISSING}
    lines = ["def check():", "    try:"]
    for i, (src, key, mode, expected, _) in enumerate(guards):
        env[f"s{i}"], env[f"e{i}"] = src, expected
        if key is _SELF:
            lines.append(f"        x = s{i}")
        elif key is None:
            lines.append(f"        x = s{i}.cell_contents")
        else:
            env[f"n{i}"] = key
            lines.append(f"        x = s{i}.get(n{i}, _M)")
        cond = {"id": f"x is not e{i}",
                "val": f"x is not e{i} and not _same(x, e{i})",
                "tree": f"not _tree_same(x, e{i})",
                "flat": f"not _flat_same(x, e{i})",
                "itree": f"x is not e{i}[0] and not _tree_same(x, e{i}[1])",
                "host": f"not _host_same(x, e{i})",
                "eq": f"type(x) is not type(e{i}) or x != e{i}"}[mode]
        lines.append(f"        if {cond}:\n            return {i}")
    lines += ["    except ValueError:", "        return -2", "    return -1"]
    code = compile("\n".join(lines) + "\n", f"<minpy.jit guards of {owner}>", "exec")
    exec(code, env)
    return env["check"]


def scan(fun, arg_objects, owner):
    """The :class:`Guards` of a trace of ``fun`` (taken before it runs).

    Args:
        fun: the traced callable.
        arg_objects: ``[(label, object)]``: the arguments' objects that are
            neither arrays, containers nor plain values (held by the cache key:
            their attributes the function names are guarded, not themselves).
        owner: the jitted function's name (for the warnings and the code).
    """
    s = _Scanner(owner)
    names = s.root(fun)
    for label, obj in arg_objects:
        s.inner(obj, label, names, _DEPTH)
    return Guards(s.guards, s.externals, owner)


class _Scanner:
    """Collects guards: ``(source, key, mode, expected, label)`` (see module doc)."""

    def __init__(self, owner):
        self.owner = owner
        self.guards = []
        self.externals = {}
        self._seen = set()

    def root(self, fun):
        """Scan the traced callable; returns the attribute names its code reads."""
        names = frozenset()
        target = fun
        while True:
            if type(target) is functools.partial:
                for a in target.args + tuple((target.keywords or {}).values()):
                    self.inner(a, "an argument bound by functools.partial", names, _DEPTH)
                target = target.func
            elif type(target) is types.MethodType:
                self.inner(target.__self__, "the bound object",
                           code_names(target.__func__.__code__)[1], _DEPTH)
                target = target.__func__
            else:
                break
        if type(target) is types.FunctionType:
            names = code_names(target.__code__)[1]
            self.function(target, _DEPTH, force=True)
        else:
            call = getattr(type(target), "__call__", None)
            if type(call) is types.FunctionType:
                names = code_names(call.__code__)[1]
                self.function(call, _DEPTH, force=True)
                self.inner(target, "the jitted object", names, _DEPTH)
        return names

    def _add(self, src, key, mode, expected, label):
        self.guards.append((src, key, mode, expected, label))

    def function(self, fn, depth, force=False):
        """Guard the closure cells and the globals a Python function reads."""
        if ("f", id(fn)) in self._seen:
            return
        self._seen.add(("f", id(fn)))
        code = fn.__code__
        if not force and not _user_file(code.co_filename):
            return
        glob, names = code_names(code)
        where = fn.__qualname__
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:          # not yet bound (a later def): nothing read
                continue
            self.guard(cell, None, v, f"closure variable {name!r} of {where}", names, depth)
        g = fn.__globals__
        b = g.get("__builtins__", builtins)
        b = b if type(b) is dict else vars(b)
        module = g.get("__name__", "?")
        for name in sorted(glob):
            if name in g:
                self.guard(g, name, g[name], f"global {name!r} of module {module}", names,
                           depth)
            elif name in b:
                self._add(g, name, "id", _MISSING,
                          f"global {name!r} of module {module} (shadowing the builtin)")

    def guard(self, src, key, value, label, names, depth):
        """Guard the value found at ``src[key]`` (a cell when key is None), then what
        it holds."""
        t = type(value)
        if t is Array:
            self._add(src, key, "id", value, label)
            self.externals[id(value._data)] = value
            return
        if t is numpy.ndarray:
            if value.nbytes <= SMALL_HOST_BYTES:
                self._add(src, key, "host", (value, value.tobytes()), label)
            else:
                self._add(src, key, "id", value, label)
            self._external_host(value)
            return
        if _is_value(value):
            self._add(src, key, "val", value, label)
            return
        if t is set or t is frozenset:
            self._add(src, key, "eq", t(value), label)
            return
        if tree.is_node(value):
            leaves, td = tree.flatten(value)
            if len(leaves) > MAX_TREE_LEAVES:
                warnings.warn(f"minpy.jit({self.owner}): {label} is a {t.__name__} of "
                              f"{len(leaves)} items: only its identity is guarded, so a "
                              "change of its contents is not seen by replays; pass it as "
                              "an argument", RuntimeWarning, stacklevel=5)
                self._add(src, key, "id", value, label)
            elif _immutable(td) and all(_is_value(v) for v in leaves):
                self._add(src, key, "itree", (value, (td, tuple(leaves))), label)
            else:
                self._container(src, key, value, label)
            for v in leaves:
                if type(v) is Array or type(v) is numpy.ndarray or (
                        depth > 0 and not _is_value(v)):
                    self.inner(v, f"an item of {label}", names, depth - 1)
            return
        self._add(src, key, "id", value, label)
        if depth > 0:
            self.inner(value, label, names, depth - 1)

    def _container(self, src, key, value, label):
        """Guard the contents of a (mutable) container: a dict, list or tuple by the
        identity of its items (and keys), each item that is a container by its own guard
        after it; another container by its whole tree."""
        t = type(value)
        slow = tree.flatten(value)[::-1]
        if t is not dict and t is not list and t is not tuple:
            self._add(src, key, "tree", slow, label)
            return
        kids = tuple(value.values()) if t is dict else tuple(value)
        keys = tuple(value) if t is dict else None
        self._add(src, key, "flat", (t, keys, kids, slow), label)
        for k, v in zip(keys or range(len(kids)), kids):
            if v is not None and tree.is_node(v):
                self._container(v, _SELF, v, f"{label}[{k!r}]")

    def _external_host(self, arr):
        if id(arr) not in self.externals:
            # a wrapper whose buffer is the host array itself: replays read it in place
            self.externals[id(arr)] = new(arr)

    def inner(self, v, label, names, depth):
        """Guard what ``v`` (itself guarded, or held by the cache key) holds that the
        code may read: a function's closure and globals, the attributes named."""
        t = type(v)
        if t is Array:
            self.externals[id(v._data)] = v
            return
        if t is numpy.ndarray:
            self._external_host(v)
            return
        if _is_value(v) or ("o", id(v), names) in self._seen:
            return
        self._seen.add(("o", id(v), names))
        if t is types.FunctionType:
            self.function(v, depth)
        elif t is types.MethodType:
            self.inner(v.__func__, label, names, depth)
            self.inner(v.__self__, label, code_names(v.__func__.__code__)[1], depth)
        elif t in (staticmethod, classmethod):
            self.inner(v.__func__, label, names, depth)
        elif t is functools.partial:
            for a in (v.func,) + v.args + tuple((v.keywords or {}).values()):
                self.inner(a, label, names, depth)
        elif t is property:
            self.inner(v.fget, label, names, depth)
        elif t is types.ModuleType:
            self._attributes(vars(v), lambda n: f"{v.__name__}.{n}", names, depth)
        elif isinstance(v, type):
            self._from_class(v, names, depth, label)
        else:
            wrapped = getattr(v, "__wrapped__", None)       # a decorated function, jit's own
            if type(wrapped) is types.FunctionType:
                self.function(wrapped, depth)
            d = getattr(v, "__dict__", None)
            d = d if type(d) is dict else None
            if d is not None:
                self._attributes(d, lambda n: f"attribute {n!r} of {label}", names, depth)
            self._from_class(t, names, depth, label, v, d)

    def _attributes(self, d, label, names, depth):
        """Guard the entries of namespace ``d`` named in ``names`` (``label(name)``)."""
        for name in sorted(names):
            if name in d:
                self.guard(d, name, d[name], label(name), names, depth)

    def _from_class(self, cls, names, depth, label, obj=None, d=None):
        """Guard the attributes named in ``names`` that instance ``obj`` (its dict ``d``)
        or class ``cls`` itself gets from ``cls``'s classes: unset on the instance, their
        value in the class holding them. The attribute names of a method (property,
        ``__call__``) of ``obj`` then count for ``obj`` too."""
        for name in sorted(names | {"__call__"} if obj is not None else names):
            if d is not None and name in d:
                continue
            owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
            if owner is None:
                continue
            if d is not None and not name.startswith("__"):
                self._add(d, name, "id", _MISSING, f"attribute {name!r} of {label} (unset)")
            attr = owner.__dict__[name]
            self.guard(owner.__dict__, name, attr, f"{owner.__qualname__}.{name}", names,
                       depth)
            f = attr.fget if type(attr) is property else attr
            f = f.__func__ if type(f) in (staticmethod, classmethod) else f
            if obj is not None and depth > 0 and type(f) is types.FunctionType and \
                    _user_file(f.__code__.co_filename):
                self.inner(obj, f"{cls.__name__} object (read by {f.__qualname__})",
                           code_names(f.__code__)[1], depth - 1)


def _immutable(td):
    """The structure is tuples (and namedtuples) all the way down."""
    if td is None:
        return True
    if not issubclass(td.kind, tuple):
        return False
    return all(_immutable(c) for c in td.children)
