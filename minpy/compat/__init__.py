"""MinPy's and MXNet's names over minpy's API, in one place.

Programs written for MinPy (dmlc/minpy, 2017) and MXNet 1.x import modules
that minpy keeps under other paths. Each of those paths is the real module
object, registered in ``sys.modules`` by :data:`MODULES` below (so
``minpy.fft is minpy.numpy.fft``, ``minpy.metric is minpy.mxnet.metric``), and
bound as an attribute of ``minpy`` by ``minpy/__init__.py``. ``import minpy.X``
always runs ``minpy/__init__.py`` (and so this module) first, so every path
works whatever a program imports first.

MinPy's modules, defined in this package, each a thin layer over minpy's API:

- ``minpy.core``'s MinPy names (:mod:`.core`): ``grad``/``grad_and_loss`` with
  MinPy's semantics (arrays traced in place; ``minpy.grad`` stays strict),
  ``Function``/``function`` (a symbol as a big operator) and the converters;
- ``minpy.context`` (:mod:`.context`: ``set_context``), ``minpy.array`` (:mod:`.array`,
  also NumPy's ``array`` function), ``minpy.array_variants``, ``minpy.primitive``
  (MinPy's ``customop``), ``minpy.utils.gradient_checker`` and
  ``minpy.utils.minprof`` (:mod:`.utils`);
- ``minpy.set_global_policy``, ``get_global_policy``, ``wrap_policy`` (:mod:`.policy`).

MinPy's names of ``minpy.numpy`` (``set_policy``, ``record_op_stat``,
``show_op_stat``) are defined there (:mod:`minpy.numpy.op_stat`): they need
nothing above it. MXNet's paths (``minpy.module``, ``metric``, ``callback``,
``initializer``, ``model``, ``nd``) are modules of :mod:`minpy.mxnet`,
:mod:`minpy.nn` and :mod:`minpy.symbol`.
"""
import sys

from .. import core as _core_package
from ..mxnet import callback, initializer, metric, module
from ..nn import checkpoint
from ..numpy import fft, linalg, random
from ..numpy.op_stat import record_op_stat, show_op_stat
from ..numpy.submodules import SUBMODULES
from ..symbol.format import params
from . import array, array_variants, context, core, primitive, utils
from .array import Number, Value, wrap
from .array_variants import ArrayType
from .context import Context, cpu, gpu, current_context, set_context
from .core import (grad_and_loss, grad, numpy_to_minpy, minpy_to_numpy, convert_args,
                   return_numpy, Function)
from .policy import set_global_policy, get_global_policy, wrap_policy
from .primitive import customop
from .utils.gradient_checker import quick_grad_check
from .utils.minprof import Profiler, minprof

__all__ = ["grad_and_loss", "grad", "numpy_to_minpy", "minpy_to_numpy", "convert_args",
           "return_numpy", "wrap", "Number", "Value", "ArrayType", "customop", "Context", "cpu",
           "gpu", "current_context", "set_context", "set_global_policy", "get_global_policy",
           "wrap_policy", "record_op_stat", "show_op_stat", "Profiler", "minprof",
           "quick_grad_check", "Function", "MODULES"]

# Each old import path: the module object it names.
MODULES = {
    # MinPy's modules (this package)
    "minpy.array": array,
    "minpy.array_variants": array_variants,
    "minpy.context": context,
    "minpy.primitive": primitive,
    "minpy.utils": utils,
    "minpy.utils.gradient_checker": utils.gradient_checker,
    "minpy.utils.minprof": utils.minprof,
    # NumPy's submodules
    "minpy.fft": fft,
    "minpy.linalg": linalg,
    "minpy.random": random,
    # the rest of NumPy's (minpy.ma, minpy.lib, minpy.lib.stride_tricks, minpy.polynomial ...)
    **{f"minpy.{name}": m for name, m in SUBMODULES.items()},
    # MXNet's: mx.mod / mx.module (minpy.mod stays NumPy's mod), mx.metric, mx.callback,
    # mx.initializer, mx.model (checkpoints), mx.nd.load/save (.params files)
    "minpy.module": module,
    "minpy.metric": metric,
    "minpy.callback": callback,
    "minpy.initializer": initializer,
    "minpy.model": checkpoint,
    "minpy.nd": params,
}
sys.modules.update(MODULES)

# The one place where a module sets names in another. ``minpy.core`` is both
# minpy's core layer and MinPy's public module ``minpy.core``, whose names need
# layers above core: ``Function`` wraps a ``minpy.symbol`` graph, and ``grad``,
# ``grad_and_loss`` and the converters create arrays through ``minpy.numpy``. Core
# imports nothing above it (tests/test_import_graph.py), so they are bound onto the
# package here, once, while ``import minpy`` runs, before any program can read
# ``minpy.core``. Core's own source binds none of these names: nothing is replaced.
for _name in core.__all__:
    setattr(_core_package, _name, getattr(core, _name))
