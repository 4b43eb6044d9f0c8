"""``minpy.nn.optim``: first-order optimizers, one :class:`Optimizer` base, one file
per algorithm (:mod:`.sgd`, :mod:`.momentum`, :mod:`.rmsprop`, :mod:`.adagrad`,
:mod:`.adam`), each in two forms:

1. In place (:func:`create`, :class:`SGD` ... :class:`AdamW`, ``RULES``): ``step``
   updates parameter Arrays in their own buffers with the fused kernels of
   :mod:`minpy.kernels.optim`: one multi-tensor kernel call per ``step`` on the CPU
   (numba), one ``cupy.ElementwiseKernel`` per parameter on the GPU, NumPy ``out=``
   ufuncs otherwise.

2. MinPy's functions ``rule(w, dw, config=None) -> (next_w, config)``: :func:`sgd`,
   :func:`sgd_momentum`, :func:`nesterov`, :func:`rmsprop`, :func:`adagrad`,
   :func:`adam`, :func:`adamw`. The class's rule in minpy's own operations (CPU or
   GPU, differentiable), out of place; the state (``velocity``, ``cache``, ``m``,
   ``v``, ``t``) lives in ``config`` as in MinPy, next to the hyper-parameters
   (MinPy's keys and defaults), plus ``weight_decay`` (L2 added to the gradient) and
   ``clip_gradient`` (elementwise bound on the gradient).

Both compute the same values, the same operations in the same order. MXNet's
``mx.optimizer`` (:mod:`minpy.mxnet.optimizer`) and autograd's optimizers
(:mod:`minpy.misc.optimizers`) are faces of the same classes. The learning-rate
schedules of :mod:`minpy.nn.optim.schedule` are re-exported too.
"""
from .adagrad import AdaGrad, adagrad
from .adam import Adam, AdamW, adam, adamw
from .momentum import SGDMomentum, nesterov, sgd_momentum
from .optimizer import Optimizer
from .rmsprop import RMSProp, rmsprop
from .rules import RULES, create
from .schedule import Schedule, StepSchedule, CosineSchedule, WarmupSchedule
from .sgd import SGD, sgd

__all__ = ["sgd", "sgd_momentum", "nesterov", "rmsprop", "adagrad", "adam", "adamw",
           "create", "Optimizer", "SGD", "SGDMomentum", "RMSProp", "AdaGrad", "Adam", "AdamW",
           "Schedule", "StepSchedule", "CosineSchedule", "WarmupSchedule", "RULES"]
