"""MkDocs hook (``hooks:`` in mkdocs.yml): tables the docs build writes from minpy itself.

mkdocstrings reads the docstrings statically, so it does not see what minpy builds at
import time. A page that holds a marker comment gets a table in its place:

- ``<!-- symbol-operators -->`` (docs/reference/symbol.md): every operator function of
  ``minpy.symbol`` (``minpy.symbol.OP_FUNCTIONS``, built from the operator registry),
  with its parameters and the first line of its docstring;
- ``<!-- names-table: dotted.module -->``: every name of the module's ``__all__`` with
  the first line of its docstring (for modules whose functions are built at import
  time, such as ``minpy.scipy.special``'s wrappers of SciPy's ufuncs).

minpy's docstrings cross-reference in reStructuredText (``:func:`grad```,
``:class:`~minpy.nn.callbacks.Callback```), which Markdown shows as ``:func:`` before
the code; the rendered pages drop the role (and a ``~`` keeps the last name only).

Needs ``minpy`` importable (the docs extra is installed with it: ``pip install -e ".[docs]"``).
"""
import re

_MARKER = "<!-- symbol-operators -->"
_NAMES = re.compile(r"<!-- names-table: ([\w.]+) -->")
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):(<code>)(~?)([\w.]+)(</code>)")


def _cell(text):
    return text.replace("|", "\\|").strip()


def symbol_operator_table():
    """A Markdown table: operator, signature, summary, for each public symbol operator."""
    import minpy.symbol as sym

    rows = ["| Operator | Parameters | What it computes |", "|---|---|---|"]
    for name in sorted(n for n in sym.OP_FUNCTIONS if not n.startswith("_")):
        doc = (sym.OP_FUNCTIONS[name].__doc__ or "").strip()
        summary = doc.split("\n\n")[0].replace("\n", " ")
        match = re.search(r"Symbol operator (\w+)\(([^)]*)\)", doc)
        params = match.group(2) if match else ""
        alias = match.group(1) if match and match.group(1) != name else ""
        if alias:
            summary = f"alias of `{alias}`. {summary}"
        rows.append(f"| `{name}` | `{_cell(params)}` | {_cell(summary)} |"
                    if params else f"| `{name}` | | {_cell(summary)} |")
    return "\n".join(rows) + "\n"


def names_table(module_name):
    """A Markdown table: name, summary, for each name of ``module_name.__all__``."""
    import importlib
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:       # minpy.scipy without SciPy: the docs extra alone
        return f"*(This table lists the names of `{module_name}` when it can be imported: {e})*\n"
    rows = ["| Name | What it computes |", "|---|---|"]
    for name in module.__all__:
        doc = (getattr(module, name).__doc__ or "").strip()
        summary = doc.split("\n\n")[0].replace("\n", " ")
        rows.append(f"| `{module_name}.{name}` | {_cell(summary)} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown, page, config, files):
    """Replace each marker in ``markdown`` with its table."""
    if _MARKER in markdown:
        markdown = markdown.replace(_MARKER, symbol_operator_table())
    return _NAMES.sub(lambda m: names_table(m.group(1)), markdown)


def _drop_role(match):
    name = match.group(3).rsplit(".", 1)[-1] if match.group(2) else match.group(3)
    return f"{match.group(1)}{name}{match.group(4)}"


def on_page_content(html, page, config, files):
    """Rendered docstrings: ``:func:<code>x</code>`` -> ``<code>x</code>``."""
    return _ROLE.sub(_drop_role, html)
