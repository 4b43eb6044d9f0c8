"""minpy: ``import minpy as np`` — NumPy on CPU or GPU, with autograd and big operators.

See README.md. The NumPy namespace comes from :mod:`minpy.numpy`; devices
and policies from :mod:`minpy.dispatch`.
"""
from .numpy import *                      # noqa: F401,F403
from .numpy import linalg, fft, random, from_dlpack   # noqa: F401
from .core.array import Array
from .dispatch import (Context, cpu, gpu, current_context, num_gpus, set_policy,   # noqa: F401
                       get_policy, policy)
from . import dispatch
from .dispatch import hostpool as _hostpool   # noqa: F401  (MINPY_HOST_POOL=0 disables)
from .core import (grad, grad_and_loss, value_and_grad, jacobian, hessian_vector_product,  # noqa: F401
                   stop_gradient, customop)
from .core.async_work import set_async, async_mode, is_async, waitall   # noqa: F401
from .numpy import gradients as _gradients   # noqa: F401  (the VJP rule tables)
from . import symbol as sym, symbol   # noqa: F401  (MXNet-style symbols, executors)
from . import core

# MinPy's name minpy.core.Function; core itself never imports symbol/
core.function, core.Function = symbol.function, symbol.Function

__version__ = "0.1.0"

dispatch.detect_cupy()
