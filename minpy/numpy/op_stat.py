"""MinPy's op statistics of ``minpy.numpy``: :func:`record_op_stat` and
:func:`show_op_stat`, over :func:`minpy.dispatch.stats` (calls per function and
backend, copies between devices)."""
import sys

from .. import dispatch

__all__ = ["record_op_stat", "show_op_stat"]


def record_op_stat():
    """Start counting calls per backend (MinPy's ``minpy.numpy.record_op_stat``).

    Zeroes :func:`minpy.dispatch.stats`, which counts the calls that take the
    dispatch's device path; without a GPU every call is a plain NumPy call and
    is not counted. See also show_op_stat.
    """
    dispatch.reset_stats()


def show_op_stat(file=None):
    """Print the calls per function and backend since :func:`record_op_stat`.

    A table of function, backend and calls, the share of each backend, and
    the copies between devices. See also minpy.dispatch.stats.
    """
    file = sys.stdout if file is None else file
    s = dispatch.stats()
    rows = sorted((fn, be, n) for fn, per in s["calls"].items() for be, n in per.items())
    totals = {}
    for _, be, n in rows:
        totals[be] = totals.get(be, 0) + n
    print("-------- op dispatch statistics --------", file=file)
    if not rows:
        why = "" if dispatch.gpu_backend() is not None else \
            " (no GPU backend: every call ran as a plain NumPy call, which is not counted)"
        print("no calls counted" + why, file=file)
    else:
        width = max(len("function"), *(len(fn) for fn, _, _ in rows))
        print(f"{'function':<{width}}  {'backend':<8} {'calls':>8}", file=file)
        for fn, be, n in rows:
            print(f"{fn:<{width}}  {be:<8} {n:>8}", file=file)
        total = sum(totals.values())
        print("total: " + ", ".join(f"{n} on {be} ({n / total:.1%})"
                                    for be, n in sorted(totals.items())), file=file)
    for direction, n in sorted(s["copies"].items()):
        print(f"copies {direction}: {n} ({s['bytes'].get(direction, 0)} bytes)", file=file)
