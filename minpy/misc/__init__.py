"""autograd's ``misc`` for minpy: :func:`flatten` (nested parameters <-> one vector)
and the optimizers :func:`sgd`, :func:`rmsprop`, :func:`adam` (``minpy.misc.optimizers``).

``from minpy.misc import flatten`` and ``from minpy.misc.optimizers import adam``
work as their autograd counterparts. See also autograd.misc.
"""
from .flatten import flatten
from . import optimizers
from .optimizers import sgd, rmsprop, adam

__all__ = ["flatten", "optimizers", "sgd", "rmsprop", "adam"]
