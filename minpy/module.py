"""``minpy.module``: MXNet's ``mx.mod`` / ``mx.module`` — :class:`Module` and :class:`BaseModule`.

A thin re-export of :mod:`minpy.mxnet.module` (and ``DataBatch``/``DataDesc``
for ``mod.forward(DataBatch([x]))``). It is not named ``minpy/mod.py``:
``minpy.mod`` is NumPy's ``mod`` (remainder), which importing a submodule of
that name would replace.
"""
from .mxnet.base_module import BaseModule
from .mxnet.module import DataBatch, DataDesc, Module

__all__ = ["Module", "BaseModule", "DataBatch", "DataDesc"]
