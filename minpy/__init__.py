"""minpy: ``import minpy as np`` — NumPy on CPU or GPU, with autograd and big operators.

See README.md. The NumPy namespace comes from :mod:`minpy.numpy`; devices
and policies from :mod:`minpy.dispatch`.
"""
from .numpy import *                      # noqa: F401,F403
from .numpy import linalg, fft, random, from_dlpack   # noqa: F401
from .numpy import __array_namespace_info__, __array_api_version__   # noqa: F401
from .core.array import Array
from .dispatch import (Context, cpu, gpu, current_context, num_gpus, set_policy,   # noqa: F401
                       get_policy, policy)
from . import dispatch
from .dispatch import hostpool as _hostpool   # noqa: F401  (MINPY_HOST_POOL=0 disables)
from .core import (grad, grad_and_loss, value_and_grad, jacobian, hessian_vector_product,  # noqa: F401
                   stop_gradient, customop, defvjp, defvjp_argnums, elementwise_grad, make_vjp,
                   make_jvp, hessian, grad_named, holomorphic_grad)
from .core.async_work import set_async, async_mode, is_async, waitall   # noqa: F401
from .numpy import gradients as _gradients   # noqa: F401  (the VJP rule tables)
from . import symbol as sym, symbol   # noqa: F401  (MXNet-style symbols, executors)
from .jit.api import jit, JitTraceError   # noqa: F401
from . import core
from . import kvstore   # noqa: F401  (MXNet's KVStore)
from . import nd   # noqa: F401  (MXNet's mx.nd.load/save of .params files)
# MXNet's training front: mx.module (minpy.mod stays NumPy's mod), mx.metric, mx.callback,
# mx.initializer / mx.init
from . import module, metric, callback, initializer   # noqa: F401
from . import initializer as init   # noqa: F401
from . import compat
from . import misc   # noqa: F401  (autograd's misc: flatten, optimizers)
from . import numpy as _namespace
from .compat import set_global_policy, get_global_policy, wrap_policy   # noqa: F401  (MinPy's)
from .array import Array as _  # noqa: F401,E402  makes ``minpy.array`` the callable module now

# MinPy's names on lower layers, set here because those layers never import
# upward: minpy.core.Function, MinPy's minpy.core.grad / grad_and_loss (arrays
# traced in place; minpy.grad stays strict) and converters, minpy.numpy's
# op statistics and its (deprecated in MinPy) set_policy
core.function, core.Function = symbol.function, compat.Function
core.grad, core.grad_and_loss = compat.grad, compat.grad_and_loss
core.convert_args, core.return_numpy = compat.convert_args, compat.return_numpy
core.minpy_to_numpy, core.numpy_to_minpy = compat.minpy_to_numpy, compat.numpy_to_minpy
_namespace.record_op_stat, _namespace.show_op_stat = compat.record_op_stat, compat.show_op_stat
_namespace.set_policy = set_policy

__version__ = "0.1.0"

dispatch.detect_cupy()
