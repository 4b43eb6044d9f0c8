"""The symbolic operators, registered in :data:`minpy.symbol.registry.OPS` on import:
elementwise, neural-network layers, shape and reductions, outputs (losses), and the
rest of what MXNet 1.9.1 symbol files use (``mxnet*``)."""

# MXNet's Custom (a layer written in Python, mx.operator): registered with the others
from . import custom   # noqa: F401,E402
