"""MinPy's top-level policy names: ``minpy.set_global_policy``,
``minpy.get_global_policy`` and ``minpy.wrap_policy``, over :mod:`minpy.dispatch`'s
``set_policy``, ``get_policy`` and ``policy``."""
from .. import dispatch

__all__ = ["set_global_policy", "get_global_policy", "wrap_policy"]


def set_global_policy(plc):
    """Set the process-wide device policy (MinPy's ``minpy.set_global_policy``).

    ``plc``: a policy name — MinPy's ``'prefer_mxnet'``, ``'only_numpy'``,
    ``'only_mxnet'`` or minpy's ``'prefer_gpu'``, ``'only_cpu'``, ``'only_gpu'``
    — or a policy object (``minpy.dispatch.policy.OnlyNumPyPolicy()``).
    Unknown names raise ValueError listing the valid ones. See also minpy.set_policy.
    """
    dispatch.set_policy(plc)


def get_global_policy():
    """The current policy name (MinPy's ``minpy.get_global_policy``). See also minpy.get_policy."""
    return dispatch.get_policy()


def wrap_policy(plc):
    """Decorator running a function under policy ``plc`` (MinPy's ``minpy.wrap_policy``).

    See also minpy.policy, set_global_policy.
    """
    return dispatch.policy(plc)
