"""minpy: ``import minpy as np`` — NumPy on CPU or GPU, with autograd and big operators.

See README.md. The NumPy namespace comes from :mod:`minpy.numpy`; devices
and policies from :mod:`minpy.dispatch`; autograd from :mod:`minpy.core`. This
module only imports: it sets no names in other modules. MinPy's and MXNet's
module paths (``minpy.context``, ``minpy.array``, ``minpy.metric`` ...) are the
real modules, listed in :mod:`minpy.compat`.
"""
from .numpy import *                      # noqa: F401,F403
from .numpy import linalg, fft, random, from_dlpack   # noqa: F401
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
from .numpy import gradients as _gradients   # noqa: F401  (the VJP rule tables)
from . import symbol as sym, symbol   # noqa: F401  (MXNet-style symbols, executors)
from .jit.api import jit, JitTraceError   # noqa: F401
from . import core   # noqa: F401
# minpy.kvstore (MXNet's KVStore), minpy.misc (autograd's flatten, optimizers) and
# minpy.datasets (bundled data) are imported on first use: see __getattr__ below.
# MXNet's paths: mx.module (minpy.mod stays NumPy's mod), mx.metric, mx.callback,
# mx.initializer / mx.init, mx.model (checkpoints), mx.nd.load/save (.params files)
from .mxnet import module, metric, callback, initializer   # noqa: F401
from .mxnet import initializer as init   # noqa: F401
from .nn import checkpoint as model   # noqa: F401
from .symbol.format import params as nd   # noqa: F401
# MinPy's: minpy.array (a module that is also NumPy's array function, bound after
# ``from .numpy import *``), minpy.context ..., and its policy names
from . import compat
from .compat import array, array_variants, context, primitive, utils   # noqa: F401
from .compat import set_global_policy, get_global_policy, wrap_policy   # noqa: F401

__version__ = "0.4.0"   # pyproject.toml reads it (one source of truth)

dispatch.detect_cupy()

# Subpackages imported on first attribute access (PEP 562), not by ``import minpy``:
# every script pays for what ``import minpy`` loads (issue 27: import time).
# ``import minpy.kvstore`` keeps working: the import system finds the subpackage.
_LAZY_SUBPACKAGES = ("datasets", "kvstore", "misc", "testing")


def __getattr__(name):
    """``minpy.<name>`` for a subpackage imported on first use (``kvstore``, ``misc``,
    ``datasets``, ``testing``); importing it binds the attribute, so this runs once per name.

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
    else:
        raise AttributeError(f"module 'minpy' has no attribute {name!r}")
    return globals()[name]


def __dir__():
    """minpy's names, including the subpackages imported on first use."""
    return sorted(set(globals()) | set(_LAZY_SUBPACKAGES))
