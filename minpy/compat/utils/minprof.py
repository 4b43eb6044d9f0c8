"""MinPy's ``minpy.utils.minprof``: the ``minprof`` profiler.

``@minprof`` times a function, ``with minprof():`` or ``with minprof('label'):``
a block; ``minprof.print_stats()`` prints calls, time, dispatch calls and bytes copied.
"""
import functools
import sys
import time

from ... import dispatch

__all__ = ["Profiler", "minprof"]


def _dispatch_totals():
    s = dispatch.stats()
    return (sum(n for per in s["calls"].values() for n in per.values()),
            sum(s["bytes"].values()))


class _Region:
    """One timed region of a :class:`Profiler` (a ``with`` block or a call)."""

    __slots__ = ("prof", "label", "start")

    def __init__(self, prof, label):
        self.prof, self.label, self.start = prof, label, None

    def __enter__(self):
        if self.label is None:
            f = sys._getframe(1)
            self.label = f"{f.f_code.co_filename}:{f.f_lineno}"
        self.start = (time.perf_counter(), *_dispatch_totals())
        return self

    def __exit__(self, *exc):
        t0, calls0, bytes0 = self.start
        calls1, bytes1 = _dispatch_totals()
        rec = self.prof.records.setdefault(self.label, [0, 0.0, 0, 0])
        rec[0] += 1
        rec[1] += time.perf_counter() - t0
        rec[2] += calls1 - calls0
        rec[3] += bytes1 - bytes0
        return False


class Profiler:
    """MinPy's ``minprof``: time functions (``@minprof``) and blocks (``with minprof():``,
    ``with minprof('label'):``), with the dispatch calls and bytes copied inside them.

    ``records`` maps a label to ``[calls, seconds, dispatch calls, bytes copied]``
    (nested regions count in each enclosing one). See also minpy.dispatch.stats.
    """

    def __init__(self):
        self.records = {}

    def __call__(self, func=None):
        if func is None or isinstance(func, str):
            return _Region(self, func)
        if not callable(func):
            raise TypeError(f"minprof: expected a function, a label or nothing, got "
                            f"{type(func).__name__}")
        code = getattr(func, "__code__", None)
        label = getattr(func, "__qualname__", repr(func)) + (
            f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else "")

        @functools.wraps(func)
        def timed(*args, **kwargs):
            with _Region(self, label):
                return func(*args, **kwargs)
        return timed

    def get_stats(self):
        """A copy of :attr:`records`."""
        return {k: list(v) for k, v in self.records.items()}

    def reset(self):
        """Forget every record."""
        self.records.clear()

    def print_stats(self, stream=None):
        """Print one line per label: calls, total and per-call ms, dispatch calls, bytes."""
        stream = sys.stdout if stream is None else stream
        stream.write(f"{'ncalls':>8} {'total ms':>10} {'per call':>10} {'dispatch':>9} "
                     f"{'copied B':>10}  region\n")
        for label, (n, secs, calls, nbytes) in sorted(self.records.items(),
                                                      key=lambda kv: -kv[1][1]):
            stream.write(f"{n:>8} {secs * 1e3:>10.3f} {secs * 1e3 / n:>10.4f} {calls:>9} "
                         f"{nbytes:>10}  {label}\n")


minprof = Profiler()
