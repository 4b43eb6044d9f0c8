"""The gradient rule tables, one module per chapter of NumPy's docs (each op's VJP
beside its family), in the order they load (:data:`TABLES`: a table may read or
extend the rules of those before it).

They load the first time any primitive's rule is read (a tape recording, ``defvjp``,
``minpy.customop``: :func:`minpy.core.primitive.defer_rules`, called here; ``minpy``
imports this module), not at ``import minpy`` (issue 27: import time). Each table module
begins with :func:`minpy.core.primitive.table_begins` and ends with
:func:`~minpy.core.primitive.table_ends`, so importing one alone still registers every
rule in this order.
"""
import importlib

from ..core.primitive import defer_rules

__all__ = ["TABLES", "load"]

# (tests/test_import_graph.py reads this table as imports of this module, on first use)
TABLES = (
    "minpy.numpy.vjp_nondiff",
    "minpy.numpy.vjp_reductions",
    "minpy.numpy.vjp_math",
    "minpy.numpy.vjp_indexing",
    "minpy.numpy.vjp_manipulation",
    "minpy.numpy.vjp_composite",
    "minpy.numpy.vjp_products",
    "minpy.numpy.vjp_linalg",
    "minpy.numpy.vjp_norms",
    "minpy.numpy.vjp_fft",
    "minpy.numpy.vjp_poly",
    "minpy.numpy.vjp_creation",
    "minpy.numpy.vjp_ufunc_methods",
)


def load(until=None):
    """Import the tables of :data:`TABLES` in order; with ``until`` (a table's module
    name), only those before it."""
    for name in TABLES:
        if name == until:
            return
        importlib.import_module(name)


defer_rules(load)
