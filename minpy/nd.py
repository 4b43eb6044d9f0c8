"""MXNet's ``mx.nd`` file functions under their MXNet spelling: ``minpy.nd.load``,
``minpy.nd.save`` (and ``loads``/``dumps`` for bytes) read and write MXNet 1.x
NDArray files (``.params``). See :mod:`minpy.symbol.format.params`."""
from .symbol.format.params import load, save, loads, dumps, NDArrayFileError

__all__ = ["load", "save", "loads", "dumps", "NDArrayFileError"]
