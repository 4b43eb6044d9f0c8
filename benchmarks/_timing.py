"""Shared helpers for the benchmark scripts: timing, quick mode, optional peers, tables.

Quick mode (every script's ``--quick``, run by ``.ci/bench_quick``) checks that a
benchmark still runs and still measures what it says, on tiny sizes: after
:func:`set_quick`, :func:`per_call` and :func:`per_call_interleaved` time each
function once after one warm-up call, whatever loop counts the script asks for.
"""
import importlib
import timeit

_QUICK = False
_ABSENT_SAID = set()


def set_quick(on=True):
    """Switch quick mode on (or off): each timing is one warm-up call and one timed call."""
    global _QUICK
    _QUICK = bool(on)


def is_quick():
    """Whether :func:`set_quick` switched quick mode on."""
    return _QUICK


def optional(module):
    """The optional peer ``module`` imported (``"torch"``, ``"jax.numpy"``), or None after
    printing ``<module>: absent (not installed)`` once per script run."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        if top not in _ABSENT_SAID:
            _ABSENT_SAID.add(top)
            print(f"{top}: absent (not installed)", flush=True)
        return None


def _number(timer, min_time):
    """Calls per timed sample: ~``min_time`` seconds of them (one in quick mode)."""
    if _QUICK:
        timer.timeit(1)                 # the warm-up call
        return 1
    number, _ = timer.autorange()
    return max(1, int(number * min_time / 0.2))


def per_call(fn, min_time=0.2, repeat=7):
    """Best-of-``repeat`` seconds per call of ``fn`` (auto-ranged loop count)."""
    timer = timeit.Timer(fn)
    number = _number(timer, min_time)
    return min(timer.repeat(repeat=1 if _QUICK else repeat, number=number)) / number


def per_call_interleaved(fns, min_time=0.2, rounds=7):
    """Best-of-``rounds`` seconds per call for each of ``fns`` (a dict), measured round
    robin: every round times each function once, so a burst of load on a noisy
    machine hits all contenders alike instead of one."""
    timers, numbers = {}, {}
    for name, fn in fns.items():
        timers[name] = timeit.Timer(fn)
        numbers[name] = _number(timers[name], min_time)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(1 if _QUICK else rounds):
        for name in fns:
            t = timers[name].timeit(numbers[name]) / numbers[name]
            best[name] = min(best[name], t)
    return best


def fmt_time(seconds):
    """``seconds`` as a fixed-width string in us, ms or s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:9.2f} ms"
    return f"{seconds:9.2f} s "


def print_table(title, header, rows):
    """Print rows (lists of str) under ``header`` with aligned columns."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    print(f"\n{title}")
    line = "  ".join(str(h).ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
