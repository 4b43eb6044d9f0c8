"""MinPy's ``minpy.utils.minprof``: the ``minprof`` profiler (see :class:`minpy.compat.Profiler`).

``@minprof`` times a function, ``with minprof():`` or ``with minprof('label'):``
a block; ``minprof.print_stats()`` prints calls, time, dispatch calls and bytes copied.
"""
from ..compat import Profiler, minprof   # noqa: F401

__all__ = ["Profiler", "minprof"]
