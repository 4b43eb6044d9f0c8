"""Core: the Array, primitive registration, the front door of a call, the tape and autograd.

Modules, bottom up: ``primitive`` (registry), ``array`` (the Array's data
side), ``execute`` (run a call on a device), ``tape`` (recording),
``ops`` (the primitives core itself calls; gradient shapes), ``inplace``
(writes under a tape), ``async_work`` (async mode on the engine), ``call``
(the front door), ``wrappers`` (public callables), ``methods`` (Array's
operators and primitive methods), ``autograd`` (grad and friends), ``custom_ops``,
``differentials`` (autograd's other operators: make_vjp, make_jvp, hessian ...).
"""
from .array import Array, new, wrap, unwrap_cpu
from .primitive import Primitive, PRIMITIVES, register
from .ops import unbroadcast, broadcast_grad
from .inplace import def_inplace_replay
from .wrappers import make_function, make_ufunc, ufunc
from . import methods      # noqa: F401  (installs Array's operators and primitive methods)
# MinPy's names of ``minpy.core`` (grad and grad_and_loss with MinPy's semantics, Function,
# function, the converters) need layers above core: minpy/compat/__init__.py binds them.
# Autograd's strict grad and grad_and_loss are minpy.core.autograd's (minpy.grad).
from .autograd import (value_and_grad, jacobian, hessian_vector_product,
                       stop_gradient, defvjp, defvjp_argnums, def_nondiff)
from .custom_ops import customop
from .differentials import (elementwise_grad, make_vjp, make_jvp, hessian, grad_named,
                            holomorphic_grad)
from .rule_table import primitive_vjps   # autograd.core.primitive_vjps
from . import imperative   # noqa: F401  (MXNet's autograd: installs attach_grad/grad/backward/detach)
