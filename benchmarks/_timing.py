"""Shared timing helpers for the benchmark scripts."""
import timeit


def per_call(fn, min_time=0.2, repeat=7):
    """Best-of-``repeat`` seconds per call of ``fn`` (auto-ranged loop count)."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(1, int(number * min_time / 0.2))
    return min(timer.repeat(repeat=repeat, number=number)) / number


def per_call_interleaved(fns, min_time=0.2, rounds=7):
    """Best-of-``rounds`` seconds per call for each of ``fns`` (a dict), measured round
    robin: every round times each function once, so a burst of load on a noisy
    machine hits all contenders alike instead of one."""
    timers, numbers = {}, {}
    for name, fn in fns.items():
        timers[name] = timeit.Timer(fn)
        number, _ = timers[name].autorange()
        numbers[name] = max(1, int(number * min_time / 0.2))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name in fns:
            t = timers[name].timeit(numbers[name]) / numbers[name]
            best[name] = min(best[name], t)
    return best


def fmt_time(seconds):
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
