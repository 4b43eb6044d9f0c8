"""``minpy.module``: MXNet's ``mx.mod`` / ``mx.module`` — :class:`Module` and :class:`BaseModule`.

A thin re-export of :mod:`minpy.nn.module` (and ``DataBatch``/``DataDesc``
for ``mod.forward(DataBatch([x]))``). It is not named ``minpy/mod.py``:
``minpy.mod`` is NumPy's ``mod`` (remainder), which importing a submodule of
that name would replace.
"""
from .nn.base_module import BaseModule
from .nn.module import DataBatch, DataDesc, Module

__all__ = ["Module", "BaseModule", "DataBatch", "DataDesc"]
