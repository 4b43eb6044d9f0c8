"""The package's import graph: arrows point down the layers, no circles, no hidden
imports, no module setting names in another.

Read from the source with ``ast`` (nothing is imported): every ``import``
and ``from ... import`` of a minpy module, at module level or inside a
function. Layers, bottom up (``LAYERS``)::

    engine, dispatch            the dependency engine; devices, backends, policies
    core                        Array, primitives, the front door, tape, autograd
    numpy, fusion, datasets     the NumPy namespace; the elementwise compiler; bundled data
    scipy, kernels              SciPy's functions (over numpy); compiled kernels
    symbol                      symbols, executors, symbol/ops, passes, format
    jit, kvstore                minpy.jit; MXNet's KVStore
    nn                          MinPy's training stack (layers, optim, io, solver ...)
    mxnet                       MXNet 1.x's training API (module, metric, callback ...)
    the top level               minpy/__init__.py, testing, misc, compat (MinPy's and
                                MXNet's module paths)

A module may import its own package, or a package of a lower layer: two
packages of one layer are siblings and import neither the other. The modules
of all layers together must form no circle (function-local imports count); a
function-local import of a minpy module is allowed only where an optional
dependency or import time demands it (``ALLOWED_LOCAL``); no ``importlib``/``__import__``
of minpy modules, except the modules named by the tables of ``LAZY_TABLES`` (imported
on first use by name): each of their names counts as an import by the module holding
the table, and follows the layers like any other. No module sets, deletes or
``setattr``s a name of another minpy module it imported (patching), except where
``ALLOWED_PATCHES`` says why.
"""
import ast
import collections
import functools
import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent.parent / "minpy"

# scipy sits above numpy (its functions are built on the NumPy namespace) and beside
# kernels; the packages of one layer are siblings
LAYERS = {"engine": 0, "dispatch": 0, "core": 1, "numpy": 2, "fusion": 2, "datasets": 2,
          "scipy": 3, "kernels": 3, "symbol": 4, "jit": 5, "kvstore": 5, "nn": 6, "mxnet": 7}
TOP = 10     # minpy/__init__.py and the top-level modules (testing, misc, compat)

# (importer, imported): why the import sits inside a function
ALLOWED_LOCAL = {
    ("minpy.dispatch", "minpy.dispatch.cupy_backend"):
        "CuPy is optional: cupy_backend imports cupy at its top",
    ("minpy", "minpy.datasets"): "lazy submodule: import time (issue 27)",
    ("minpy", "minpy.kvstore"): "lazy submodule: import time (issue 27)",
    ("minpy", "minpy.misc"): "lazy submodule: import time (issue 27)",
    ("minpy", "minpy.testing"): "lazy submodule: import time (issue 27)",
    ("minpy.compat.utils.gradient_checker", "minpy.testing"):
        "lazy submodule: import time (issue 27); minpy.testing loads numpy.testing, unittest",
    ("minpy", "minpy.symbol"): "lazy submodule: import time (issue 27)",
    ("minpy", "minpy.nn"): "lazy submodule: import time (issue 27)",
    ("minpy", "minpy.mxnet"): "lazy submodule: import time (issue 27)",
    ("minpy", "minpy.jit.api"):
        "minpy.jit on first use: import time (issue 27); minpy.jit loads minpy.symbol",
    ("minpy.numpy", "minpy.numpy.random"):
        "minpy.random on first use, as NumPy loads numpy.random: import time (issue 27)",
    ("minpy.compat.core", "minpy.compat.symbol_function"):
        "minpy.core.Function on first use: it needs minpy.symbol; import time (issue 27)",
}

# {module: the name of its table (a dict's values or a tuple) of minpy module names it
# imports by name on first use}: why
LAZY_TABLES = {
    ("minpy.compat", "ALIASES"):
        "MinPy's and MXNet's old module paths, each the module it names, imported when a "
        "program first imports the path (a sys.meta_path finder): import time (issue 27)",
    ("minpy.mxnet", "SUBMODULES"):
        "MXNet's module layout (mx.sym, mx.nd, mx.io, mx.kv ...), each the minpy module it "
        "names, imported on first use (module __getattr__): import time (issue 27)",
    ("minpy.numpy.gradients", "TABLES"):
        "the gradient rule tables, loaded the first time a rule is read: import time "
        "(issue 27)",
}

# (module, module whose names it sets): why
ALLOWED_PATCHES = {
    ("minpy.compat", "minpy.core"):
        "minpy.core is also MinPy's public module; its MinPy names (Function, grad with "
        "MinPy's semantics, converters) need minpy.symbol and minpy.numpy, above core "
        "(Function and function through a module __getattr__ set there: minpy.symbol "
        "loads on first use)",
}


def read_package(root=PACKAGE_DIR):
    """{module name: source} for every .py file of the package."""
    sources = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        sources[".".join(parts)] = (path.read_text(), path.name == "__init__.py")
    return sources


def _resolve(module, is_package, level, name):
    """The absolute module name a ``from ... import`` refers to (before its names)."""
    if not level:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _owner(name, modules):
    """The module a dotted name lives in: the longest prefix that is a module."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in modules else None


@functools.lru_cache(maxsize=None)
def _facts(text):
    """What one source says, read in one walk (cached: each case of the tests below
    changes one file): ``("from", level, module, aliases, line, local)``,
    ``("import", aliases, line, local)``, ``("dynamic", name, line, local)`` and
    ``("set", variable, line)`` for ``variable.x = ...``, ``del variable.x``,
    ``variable.x += ...`` and ``setattr``/``delattr(variable, ...)``."""
    facts = []
    todo = [(ast.parse(text), False)]
    while todo:
        node, local = todo.pop()
        inner = local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
        if isinstance(node, ast.ImportFrom):
            aliases = tuple((a.name, a.asname) for a in node.names)
            facts.append(("from", node.level, node.module, aliases, node.lineno, local))
        elif isinstance(node, ast.Import):
            aliases = tuple((a.name, a.asname) for a in node.names)
            facts.append(("import", aliases, node.lineno, local))
        elif isinstance(node, ast.Call) and _dynamic_import_name(node):
            facts.append(("dynamic", _dynamic_import_name(node), node.lineno, local))
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None)
              in ("setattr", "delattr") and node.args):
            targets = [ast.Attribute(value=node.args[0], attr="?")]
        else:
            continue
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    facts.append(("set", t.value.id, node.lineno))
    return facts


def lazy_table(text, table):
    """[(module name, line)]: the ``minpy...`` strings of the module-level assignment to
    ``table`` (a dict display's values, or a tuple/list display) in source ``text``."""
    for node in ast.parse(text).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(getattr(t, "id", None) == table for t in targets):
            value = node.value
            items = value.values if isinstance(value, ast.Dict) else getattr(value, "elts", [])
            return [(v.value, v.lineno) for v in items if isinstance(v, ast.Constant)
                    and isinstance(v.value, str) and v.value.split(".")[0] == "minpy"]
    return []


def imports_of(sources):
    """[(importer, imported, line, local, how)] for every import of a minpy module
    (``how``: "import", "dynamic", or "table" for a name of a ``LAZY_TABLES`` table)."""
    found = []
    for (module, table) in LAZY_TABLES:
        if module in sources:
            for name, line in lazy_table(sources[module][0], table):
                owner = _owner(name, sources)
                if owner is not None:
                    found.append((module, owner, line, False, "table"))
    for module, (text, is_package) in sources.items():
        for fact in _facts(text):
            if fact[0] == "from":
                _, level, name, aliases, line, local = fact
                base = _resolve(module, is_package, level, name)
                targets = [f"{base}.{a}" if f"{base}.{a}" in sources else base
                           for a, _ in aliases]
            elif fact[0] == "import":
                _, aliases, line, local = fact
                targets = [a for a, _ in aliases]
            elif fact[0] == "dynamic":
                _, name, line, local = fact
                targets = [name]
            else:
                continue
            for t in targets:
                owner = _owner(t, sources)
                if owner is not None and owner.split(".")[0] == "minpy":
                    how = "dynamic" if fact[0] == "dynamic" else "import"
                    found.append((module, owner, line, local, how))
    return found


def _dynamic_import_name(call):
    """The module name of ``importlib.import_module('x')`` / ``__import__('x')``, else None."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):          # f"{__name__}.{m}": some module of ours
        return "minpy"
    return None


def _module_names(module, is_package, facts, sources):
    """{local name: minpy module} for the names ``module``'s imports bind to modules."""
    bound = {}
    for fact in facts:
        if fact[0] == "from":
            base = _resolve(module, is_package, fact[1], fact[2])
            for name, asname in fact[3]:
                if f"{base}.{name}" in sources:
                    bound[asname or name] = f"{base}.{name}"
        elif fact[0] == "import":
            for name, asname in fact[1]:
                if name.split(".")[0] == "minpy" and name in sources:
                    bound[asname or name.split(".")[0]] = name if asname else "minpy"
    return bound


def patches_of(sources):
    """[(module, patched module, line)]: names set in another minpy module that
    ``module`` imported (see :func:`_facts`)."""
    found = []
    for module, (text, is_package) in sources.items():
        facts = _facts(text)
        bound = _module_names(module, is_package, facts, sources)
        found += [(module, bound[f[1]], f[2]) for f in facts
                  if f[0] == "set" and bound.get(f[1], module) != module]
    return found


def layer(module):
    parts = module.split(".")
    if len(parts) == 1 or parts[1] not in LAYERS:
        return TOP
    return LAYERS[parts[1]]


def problems(sources):
    """Every violation of the rules in the module docstring, as readable lines."""
    out = []
    edges = {}
    for importer, imported, line, local, how in imports_of(sources):
        where = f"{importer} (line {line})"
        if how == "dynamic":
            out.append(f"{where}: importlib/__import__ of a minpy module; import it plainly")
            continue
        if importer == imported:
            continue
        edges.setdefault(importer, set()).add(imported)
        a, b = layer(importer), layer(imported)
        if b > a:
            out.append(f"{where}: imports {imported}, a higher layer")
        elif a == b < TOP and importer.split(".")[1] != imported.split(".")[1]:
            out.append(f"{where}: imports {imported}; {importer.split('.')[1]} and "
                       f"{imported.split('.')[1]} are siblings")
        if local and (importer, imported) not in ALLOWED_LOCAL:
            out.append(f"{where}: function-local import of {imported}")
    for module, patched, line in patches_of(sources):
        if (module, patched) not in ALLOWED_PATCHES:
            out.append(f"{module} (line {line}): sets a name of {patched}; define or "
                       "import it in the module it belongs to")
    for circle in _cycles(edges):
        out.append("import circle: " + " -> ".join(circle + [circle[0]]))
    return out


def _cycles(edges):
    """One circle per strongly connected component (iterative Tarjan), as the modules
    along it from the component's first module."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    result.append(_circle_in(set(component), edges))
    return result


def _circle_in(component, edges):
    """A shortest circle through the first module of ``component`` (strongly connected)."""
    start = min(component)
    parent = {start: None}
    queue = collections.deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges.get(v, ())):
            if w == start:
                path = [v]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path[::-1]
            if w in component and w not in parent:
                parent[w] = v
                queue.append(w)
    raise AssertionError(f"no circle through {start} in {sorted(component)}")


def test_the_package_follows_the_layers():
    assert problems(read_package()) == []


def test_allowed_local_imports_still_exist():
    # an allow-list entry that no longer matches anything must go
    seen = {(a, b) for a, b, _, local, _ in imports_of(read_package()) if local}
    assert set(ALLOWED_LOCAL) <= seen


def test_lazy_tables_still_exist():
    sources = read_package()
    for module, table in LAZY_TABLES:
        assert lazy_table(sources[module][0], table), (module, table)


def test_the_lazy_tables_name_real_modules():
    # a typo in a table would be an import failing only when a program first uses it
    sources = read_package()
    for module, table in LAZY_TABLES:
        for name, _ in lazy_table(sources[module][0], table):
            assert name in sources, (module, table, name)


def test_allowed_patches_still_exist():
    seen = {(a, b) for a, b, _ in patches_of(read_package())}
    assert set(ALLOWED_PATCHES) <= seen


@pytest.mark.parametrize("module,line,expected", [
    ("minpy.core.tape", "from ..nn import solver",
     "minpy.core.tape (line 1): imports minpy.nn.solver, a higher layer"),
    ("minpy.core.array", "from ..numpy import sum as _sum",
     "minpy.core.array (line 1): imports minpy.numpy, a higher layer"),
    ("minpy.nn.solver", "from ..mxnet import metric",
     "minpy.nn.solver (line 1): imports minpy.mxnet.metric, a higher layer"),
    ("minpy.symbol.ops", "from ...jit import api",
     "minpy.symbol.ops (line 1): imports minpy.jit.api, a higher layer"),
    ("minpy.dispatch.state", "from ..engine import var",
     "minpy.dispatch.state (line 1): imports minpy.engine.var; dispatch and engine are "
     "siblings"),
    ("minpy.numpy.fronts", "from ..fusion import ir",
     "minpy.numpy.fronts (line 1): imports minpy.fusion.ir; numpy and fusion are siblings"),
    ("minpy.jit.api", "from ..kvstore import local",
     "minpy.jit.api (line 1): imports minpy.kvstore.local; jit and kvstore are siblings"),
    ("minpy.core.primitive", "from .tape import record",
     "minpy.core.primitive -> minpy.core.tape"),      # a circle through the new arrow
    ("minpy.engine.var", "from . import naive",
     "minpy.engine.var -> minpy.engine.naive"),
    ("minpy.core.tape", "def f():\n    from . import autograd\n",
     "minpy.core.tape (line 2): function-local import of minpy.core.autograd"),
    ("minpy.numpy", "import importlib\nimportlib.import_module(f'{__name__}.vjp_math')\n",
     "importlib/__import__ of a minpy module"),
    ("minpy", "core.grad = None",
     "minpy (line 1): sets a name of minpy.core"),
    ("minpy.nn.solver", "import minpy.numpy as np\nsetattr(np, 'set_policy', None)",
     "minpy.nn.solver (line 2): sets a name of minpy.numpy"),
    ("minpy.compat.core", "from .. import numpy as mnp\ndel mnp.record_op_stat",
     "minpy.compat.core (line 2): sets a name of minpy.numpy"),
    ("minpy.numpy.gradients", "TABLES = ('minpy.nn.solver',)",
     "minpy.numpy.gradients (line 1): imports minpy.nn.solver, a higher layer"),
])
def test_the_check_fails_on_a_forbidden_import(module, line, expected):
    sources = read_package()
    text, is_package = sources[module]
    sources[module] = (line + "\n" + text, is_package)
    found = problems(sources)
    assert any(expected in p for p in found), found
    if "->" in expected:          # a circle: reported as one, along its real arrows
        assert all(p.startswith("import circle: ") for p in found), found
