"""``minpy.initializer`` (also ``minpy.init``): MXNet's ``mx.initializer`` / ``mx.init`` —
a thin re-export of :mod:`minpy.mxnet.initializer` (Uniform, Normal, Xavier, MSRAPrelu,
Constant, Zero, One), for ``Module.init_params`` and ``Module.fit``."""
from .mxnet.initializer import *               # noqa: F401,F403
from .mxnet.initializer import __all__         # noqa: F401
