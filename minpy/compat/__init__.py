"""MinPy's and MXNet's names over minpy's API, in one place.

Programs written for MinPy (dmlc/minpy, 2017) and MXNet 1.x import modules
that minpy keeps under other paths. Each of those paths names the real module
object (``minpy.fft is minpy.numpy.fft``, ``minpy.metric is minpy.mxnet.metric``):
:data:`ALIASES` lists them, and a finder on ``sys.meta_path``
(:mod:`minpy.numpy.lazy_modules`) imports the module a path names when a program
first imports the path, then registers it under that path as well (issue 27:
``import minpy`` does not load ``minpy.mxnet``, ``minpy.nn`` or ``minpy.symbol``
for programs that never use them). ``minpy``'s attributes of the same names
(``minpy.metric``, ``minpy.ma``) are the same objects, bound on first use
(``minpy/__init__.py``'s ``__getattr__``). ``import minpy.X`` always runs
``minpy/__init__.py`` (and so this module) first, so every path works whatever a
program imports first.

MinPy's modules, defined in this package, each a thin layer over minpy's API:

- ``minpy.core``'s MinPy names (:mod:`.core`): ``grad``/``grad_and_loss`` with
  MinPy's semantics (arrays traced in place; ``minpy.grad`` stays strict),
  ``Function``/``function`` (a symbol as a big operator, :mod:`.symbol_function`)
  and the converters;
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
import collections.abc
import functools
import importlib

from .. import core as _core_package
from ..numpy.lazy_modules import install as _install_finder
from ..numpy.op_stat import record_op_stat, show_op_stat
from ..numpy.submodules import NAMES as _NUMPY_SUBMODULES
from . import array, array_variants, context, core, primitive, utils
from .array import Number, Value, wrap
from .array_variants import ArrayType
from .context import Context, cpu, gpu, current_context, set_context
from .core import (grad_and_loss, grad, numpy_to_minpy, minpy_to_numpy, convert_args,
                   return_numpy)
from .policy import set_global_policy, get_global_policy, wrap_policy
from .primitive import customop
from .utils.gradient_checker import quick_grad_check
from .utils.minprof import Profiler, minprof

__all__ = ["grad_and_loss", "grad", "numpy_to_minpy", "minpy_to_numpy", "convert_args",
           "return_numpy", "wrap", "Number", "Value", "ArrayType", "customop", "Context", "cpu",
           "gpu", "current_context", "set_context", "set_global_policy", "get_global_policy",
           "wrap_policy", "record_op_stat", "show_op_stat", "Profiler", "minprof",
           "quick_grad_check", "Function", "ALIASES", "MODULES", "import_alias"]

# Each old import path: the name of the module it is (tests/test_import_graph.py reads
# this table as imports of this module, on first use).
ALIASES = {
    # MinPy's modules (this package)
    "minpy.array": "minpy.compat.array",
    "minpy.array_variants": "minpy.compat.array_variants",
    "minpy.context": "minpy.compat.context",
    "minpy.primitive": "minpy.compat.primitive",
    "minpy.utils": "minpy.compat.utils",
    "minpy.utils.gradient_checker": "minpy.compat.utils.gradient_checker",
    "minpy.utils.minprof": "minpy.compat.utils.minprof",
    # NumPy's submodules
    "minpy.fft": "minpy.numpy.fft",
    "minpy.linalg": "minpy.numpy.linalg",
    "minpy.random": "minpy.numpy.random",
    # MXNet's: mx.mod / mx.module (minpy.mod stays NumPy's mod), mx.metric, mx.callback,
    # mx.initializer, mx.model (checkpoints), mx.nd (NDArray API, load/save of .params)
    "minpy.module": "minpy.mxnet.module",
    "minpy.metric": "minpy.mxnet.metric",
    "minpy.callback": "minpy.mxnet.callback",
    "minpy.initializer": "minpy.mxnet.initializer",
    "minpy.model": "minpy.mxnet.model",
    "minpy.nd": "minpy.mxnet.ndarray",
}
# the rest of NumPy's (minpy.ma, minpy.lib, minpy.lib.stride_tricks, minpy.polynomial ...),
# modules made by minpy.numpy.submodules on first use
ALIASES.update({f"minpy.{name}": f"minpy.numpy.{name}" for name in _NUMPY_SUBMODULES})

_install_finder(__name__, {path: functools.partial(importlib.import_module, target)
                           for path, target in ALIASES.items()})


def import_alias(path):
    """The module an old path of :data:`ALIASES` names (``"minpy.metric"``), imported now
    through that path (so it is registered in ``sys.modules`` and bound on ``minpy``).

    Raises KeyError for a path not in :data:`ALIASES`.
    """
    if path not in ALIASES:
        raise KeyError(path)
    return importlib.import_module(path)


class _Modules(collections.abc.Mapping):
    """{old path: its module} for every path of :data:`ALIASES`; reading one imports it
    (:func:`import_alias`)."""

    def __getitem__(self, path):
        return import_alias(path)

    def __iter__(self):
        return iter(ALIASES)

    def __len__(self):
        return len(ALIASES)


# Each old import path: the module object it names (imported when read).
MODULES = _Modules()


def __getattr__(name):
    """``Function`` (MinPy's ``minpy.core.Function``), imported on first use (it needs
    minpy.symbol). Raises AttributeError for any other missing name."""
    if name == "Function":
        return core.Function
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The one place where a module sets names in another. ``minpy.core`` is both
# minpy's core layer and MinPy's public module ``minpy.core``, whose names need
# layers above core: ``Function`` wraps a ``minpy.symbol`` graph, and ``grad``,
# ``grad_and_loss`` and the converters create arrays through ``minpy.numpy``. Core
# imports nothing above it (tests/test_import_graph.py), so they are bound onto the
# package here, once, while ``import minpy`` runs, before any program can read
# ``minpy.core``. Core's own source binds none of these names: nothing is replaced.
# ``Function`` and ``function`` need minpy.symbol, which ``import minpy`` does not load:
# they are read through a module ``__getattr__`` of minpy.core (PEP 562), which
# imports them on first use and binds them there.
_ON_FIRST_USE = ("Function", "function")


def _core_getattr(name):
    """minpy.core's ``__getattr__``: its MinPy names that need minpy.symbol."""
    if name in _ON_FIRST_USE:
        value = getattr(core, name)
        setattr(_core_package, name, value)
        return value
    raise AttributeError(f"module 'minpy.core' has no attribute {name!r}")


for _name in core.__all__:
    if _name not in _ON_FIRST_USE:
        setattr(_core_package, _name, getattr(core, _name))
if getattr(vars(_core_package).get("__getattr__"), "__module__", __name__) != __name__:
    raise ImportError("minpy.compat: minpy.core has a __getattr__ of its own; bind "
                      "Function and function through it")
_core_package.__getattr__ = _core_getattr
