"""minpy: ``import minpy as np`` — NumPy on CPU or GPU, with autograd and big operators.

See README.md. The NumPy namespace comes from :mod:`minpy.numpy`; devices
and policies from :mod:`minpy.dispatch`; autograd from :mod:`minpy.core`. This
module only imports: it sets no names in other modules. MinPy's and MXNet's
module paths (``minpy.context``, ``minpy.array``, ``minpy.metric`` ...) are the
real modules, listed in :mod:`minpy.compat`.

``import minpy`` loads the NumPy namespace and autograd; the rest (``minpy.jit``,
``minpy.symbol``, ``nn``, ``mxnet``, ``kvstore``, ``random``, NumPy's ``ma`` ...)
is imported on first use (issue 27: every script pays for what ``import minpy``
loads): see :func:`__getattr__`.
"""
import sys as _sys
import types as _types

from .numpy import *                      # noqa: F401,F403
from .numpy import linalg, fft, from_dlpack   # noqa: F401
from .numpy import __array_namespace_info__, __array_api_version__   # noqa: F401
from .core.array import Array
from .dispatch import (Context, cpu, gpu, current_context, num_gpus, set_policy,   # noqa: F401
                       get_policy, policy)
from . import dispatch
from .dispatch import hostpool as _hostpool   # noqa: F401  (MINPY_HOST_POOL=0 disables)
from .core.autograd import (grad, grad_and_loss, value_and_grad, jacobian,   # noqa: F401
                            hessian_vector_product, stop_gradient, defvjp, defvjp_argnums)
from .core.custom_ops import customop   # noqa: F401
from .core.differentials import (elementwise_grad, make_vjp, make_jvp, hessian,   # noqa: F401
                                 grad_named, holomorphic_grad)
from .core.autograd_extra import (vspace, deriv, make_hvp, make_ggnvp,   # noqa: F401
                                  tensor_jacobian_product, vector_jacobian_product, grad_and_aux)
from .core.async_work import set_async, async_mode, is_async, waitall   # noqa: F401
from .core.trace import JitTraceError   # noqa: F401  (minpy.jit: on first use, below)
from .numpy import gradients as _gradients   # noqa: F401  (the VJP rule tables: on first use)
from . import core   # noqa: F401
# MinPy's: minpy.array (a module that is also NumPy's array function, bound after
# ``from .numpy import *``), minpy.context ..., and its policy names
from . import compat
from .compat import array, array_variants, context, primitive, utils   # noqa: F401
from .compat import set_global_policy, get_global_policy, wrap_policy   # noqa: F401

__version__ = "0.4.0"   # pyproject.toml reads it (one source of truth)

dispatch.detect_cupy()

# Imported on first attribute access (PEP 562), not by ``import minpy``: the subpackages
# below, and MXNet's and NumPy's module paths (minpy.compat.ALIASES: mx.module,
# mx.metric, mx.callback, mx.initializer / mx.init, mx.model (checkpoints), mx.nd.load/
# save (.params files); minpy.random, minpy.ma, minpy.lib ...). ``import minpy.kvstore``
# and ``import minpy.metric`` keep working: the import system finds the module.
_LAZY_SUBPACKAGES = ("datasets", "kvstore", "misc", "testing", "symbol", "nn", "mxnet")
_LAZY_ALIASES = tuple(path.split(".", 1)[1] for path in compat.ALIASES
                      if path.count(".") == 1 and path.split(".", 1)[1] not in globals())


def __getattr__(name):
    """``minpy.<name>`` for a name imported on first use: ``jit`` (the function), a
    subpackage (``symbol``/``sym``, ``nn``, ``mxnet``, ``kvstore``, ``misc``, ``datasets``,
    ``testing``) or an old module path of :data:`minpy.compat.ALIASES` (``metric``,
    ``module``, ``init`` ..., ``random``, ``ma``, ``lib`` ...); importing it binds the
    attribute, so this runs once per name.

    Raises AttributeError (as any module does) for any other missing name.
    """
    # ``import minpy.X`` rather than ``from . import X``: the latter asks hasattr(minpy, X)
    # first, which would call this function again.
    if name == "kvstore":
        import minpy.kvstore
    elif name == "misc":
        import minpy.misc
    elif name == "datasets":
        import minpy.datasets
    elif name == "testing":        # as numpy.testing: loaded on first use
        import minpy.testing
    elif name == "jit":
        from minpy.jit.api import jit
        globals()["jit"] = jit
    elif name in ("symbol", "sym"):
        import minpy.symbol
        globals()["sym"] = minpy.symbol
    elif name == "nn":
        import minpy.nn
    elif name == "mxnet":
        import minpy.mxnet
    elif name == "init":           # mx.init: mx.initializer
        globals()["init"] = compat.import_alias("minpy.initializer")
    elif name in _LAZY_ALIASES:
        compat.import_alias("minpy." + name)
    else:
        raise AttributeError(f"module 'minpy' has no attribute {name!r}")
    return globals()[name]


def __dir__():
    """minpy's names, including the modules imported on first use."""
    return sorted(set(globals()) | set(_LAZY_SUBPACKAGES) | set(_LAZY_ALIASES)
                  | {"sym", "init", "jit"})


class _Minpy(_types.ModuleType):
    """The type of the ``minpy`` module: ``minpy.jit`` stays the function ``minpy.jit.jit``.

    The import system binds a subpackage on its parent when it first loads it; the
    package ``minpy.jit`` is loaded on first use (by ``minpy.jit`` itself, or by
    ``minpy.nn`` ... importing it), so that binding is turned into its function here.
    """

    def __setattr__(self, name, value):
        if name == "jit" and isinstance(value, _types.ModuleType) and hasattr(value, "jit"):
            value = value.jit
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Minpy
