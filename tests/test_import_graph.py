"""The package's import graph: arrows point down the layers, no circles, no hidden imports.

Read from the source with ``ast`` (nothing is imported): every ``import``
and ``from ... import`` of a minpy module, at module level or inside a
function. Layers, bottom up: ``engine`` and ``dispatch`` (neither imports the
other), ``core``, ``numpy``, ``symbol``, then the package's top-level
modules. A module may import its own layer or lower ones; the modules of
all layers together must form no circle (function-local imports count); a
function-local import of a minpy module is allowed only where an optional
dependency demands it (``ALLOWED_LOCAL``); no ``importlib``/``__import__``
of minpy modules.
"""
import ast
import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent.parent / "minpy"

LAYERS = {"engine": 0, "dispatch": 0, "core": 1, "numpy": 2, "scipy": 2, "fusion": 2,
          "kernels": 3, "symbol": 4, "jit": 5, "kvstore": 5, "nn": 6, "mxnet": 7}
TOP = 10     # minpy/__init__.py and the top-level modules (testing, compat aliases)

# (importer, imported): why the import sits inside a function
ALLOWED_LOCAL = {
    ("minpy.dispatch", "minpy.dispatch.cupy_backend"):
        "CuPy is optional: cupy_backend imports cupy at its top",
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


def _resolve(module, is_package, node):
    """The absolute module name a ``from ... import`` refers to (before its names)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _owner(name, modules):
    """The module a dotted name lives in: the longest prefix that is a module."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in modules else None


def imports_of(sources):
    """[(importer, imported, line, local, how)] for every import of a minpy module."""
    found = []
    for module, (text, is_package) in sources.items():
        tree = ast.parse(text)
        local_nodes = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                local_nodes.update(id(n) for n in ast.walk(fn) if n is not fn)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = _resolve(module, is_package, node)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in sources else base)
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.Call) and _dynamic_import_name(node):
                targets = [_dynamic_import_name(node)]
            else:
                continue
            for t in targets:
                owner = _owner(t, sources)
                if owner is not None and owner.split(".")[0] == "minpy":
                    how = "dynamic" if isinstance(node, ast.Call) else "import"
                    found.append((module, owner, node.lineno, id(node) in local_nodes, how))
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
        elif a == b == 0 and importer.split(".")[1] != imported.split(".")[1]:
            out.append(f"{where}: imports {imported}; engine and dispatch are siblings")
        if local and (importer, imported) not in ALLOWED_LOCAL:
            out.append(f"{where}: function-local import of {imported}")
    for cycle in _cycles(edges):
        out.append("import circle: " + " -> ".join(cycle + [cycle[0]]))
    return out


def _cycles(edges):
    """One representative circle per strongly connected component (iterative Tarjan)."""
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
                    result.append(sorted(component))
    return result


def test_the_package_follows_the_layers():
    assert problems(read_package()) == []


def test_allowed_local_imports_still_exist():
    # an allow-list entry that no longer matches anything must go
    seen = {(a, b) for a, b, _, local, _ in imports_of(read_package()) if local}
    assert set(ALLOWED_LOCAL) <= seen


@pytest.mark.parametrize("module,line,expected", [
    ("minpy.core.array", "from ..numpy import sum as _sum",
     "minpy.core.array (line 1): imports minpy.numpy, a higher layer"),
    ("minpy.dispatch.state", "from ..engine import var",
     "engine and dispatch are siblings"),
    ("minpy.engine.var", "from . import naive",
     "minpy.engine.naive -> minpy.engine.var"),
    ("minpy.core.tape", "def f():\n    from . import autograd\n",
     "minpy.core.tape (line 2): function-local import of minpy.core.autograd"),
    ("minpy.numpy", "import importlib\nimportlib.import_module(f'{__name__}.vjp_math')\n",
     "importlib/__import__ of a minpy module"),
])
def test_the_check_fails_on_a_forbidden_import(module, line, expected):
    sources = read_package()
    text, is_package = sources[module]
    sources[module] = (line + "\n" + text, is_package)
    found = problems(sources)
    assert any(expected in p for p in found), found
