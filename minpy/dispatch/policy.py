"""Device policies: where a call runs when a GPU backend is present.

- ``prefer_gpu`` (default): on the GPU when the backend implements the
  function, else on the CPU (a counted fallback, warned once per function);
- ``only_cpu`` (alias ``only_numpy``): always on the CPU;
- ``only_gpu``: always on the GPU; a function the GPU lacks raises.

The policy is process-wide. ``set_policy(name)`` sets it; ``policy(name)``
scopes it, as a ``with`` block or as a decorator. MinPy's names are aliases
(``prefer_mxnet``, ``only_numpy``, ``only_mxnet``) and its policy classes
(``OnlyNumPyPolicy()`` ...) are ``policy`` objects, also reachable as
attributes of ``policy``: ``import minpy.dispatch.policy as p`` binds the class.
"""
import functools

from . import state

__all__ = ["set_policy", "get_policy", "policy", "POLICIES", "PreferMXNetPolicy",
           "OnlyNumPyPolicy", "OnlyMXNetPolicy"]

POLICIES = ("prefer_gpu", "only_cpu", "only_gpu")
_ALIASES = {"only_numpy": "only_cpu", "only_cupy": "only_gpu",
            "prefer_mxnet": "prefer_gpu", "only_mxnet": "only_gpu"}   # MinPy's names


def _canonical(name):
    if isinstance(name, policy):
        return name.name
    name = _ALIASES.get(name, name)
    if name not in POLICIES:
        raise ValueError(f"set_policy: unknown policy {name!r}; expected one of "
                         f"{POLICIES + tuple(_ALIASES)}")
    return name


def set_policy(name):
    """Set the process-wide device policy; returns the previous one."""
    return state.set_policy_name(_canonical(name))


def get_policy():
    """The current policy name."""
    return state.process.policy


class policy:
    """Scope a policy: ``with minpy.policy('only_cpu'): ...`` or ``@minpy.policy('only_cpu')``."""

    def __init__(self, name):
        self.name = _canonical(name)
        self._saved = []

    def __enter__(self):
        self._saved.append(set_policy(self.name))
        return self

    def __exit__(self, *exc):
        set_policy(self._saved.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def scoped(*args, **kwargs):
            with policy(self.name):
                return fn(*args, **kwargs)
        return scoped


class _MinPyPolicy(policy):
    """A MinPy policy class: ``policy(NAME)``, constructed without arguments."""
    NAME = "prefer_gpu"

    def __init__(self):
        super().__init__(self.NAME)


class PreferMXNetPolicy(_MinPyPolicy):
    """MinPy's name for ``policy('prefer_gpu')``."""
    NAME = "prefer_gpu"


class OnlyNumPyPolicy(_MinPyPolicy):
    """MinPy's name for ``policy('only_cpu')``."""
    NAME = "only_cpu"


class OnlyMXNetPolicy(_MinPyPolicy):
    """MinPy's name for ``policy('only_gpu')``."""
    NAME = "only_gpu"


policy.PreferMXNetPolicy = PreferMXNetPolicy
policy.OnlyNumPyPolicy = OnlyNumPyPolicy
policy.OnlyMXNetPolicy = OnlyMXNetPolicy
