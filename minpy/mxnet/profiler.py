"""``mx.profiler``: MXNet 1.x's profiler — timings of what minpy runs, as a Chrome trace
(``chrome://tracing``, Perfetto) and an aggregate table.

    mx.profiler.set_config(profile_symbolic=True, filename='profile.json',
                           aggregate_stats=True)
    mx.profiler.set_state('run')
    exe.forward(is_train=True); exe.backward()
    mx.profiler.set_state('stop')
    print(mx.profiler.dumps())        # per operator: count, total, min, max, avg (ms)
    mx.profiler.dump()                # writes profile.json

What is recorded, each time measured while the profiler runs (``set_state('run')``,
not ``pause()``d):

- category ``operator``: every operator an executor runs (``Symbol.bind`` /
  ``simple_bind``, ``mx.mod.Module``), timed on the engine thread that runs it,
  named by its operator type (``FullyConnected``; the node name in ``args``), as
  MXNet's symbolic profiling (an elementwise chain minpy fuses is one
  ``_FusedElemwise``: what ran); on a GPU, up to the end of its kernels (the device
  is synchronised after each operator while recording). Needs ``profile_symbolic``
  or ``profile_all``.
- the objects of this module: ``Task``, ``Frame``, ``Event`` durations,
  ``Counter`` values, ``Marker`` instants, in their ``Domain``'s category.

- category ``operator`` too: every ``mx.nd`` operator call (``mx.nd.FullyConnected``
  ...; ``profile_imperative`` or ``profile_all``), timed where it runs (inline, or on
  the engine in async mode). Arithmetic on NDArrays (``a + b``) is minpy's NumPy
  namespace, not an MXNet operator call, and is not recorded.

Not recorded (``set_config`` warns when asked for them): memory
(``profile_memory``; the ``Memory`` part of ``dumps`` stays empty), and C API calls (``profile_api``: minpy has no C
API). ``continuous_dump``/``dump_period`` are accepted; the file is written at
each ``dump``. The trace file is MXNet's: ``{"traceEvents": [...],
"displayTimeUnit": "ms"}`` with ``ts`` in microseconds since the epoch.
See also mxnet.profiler.
"""
import json
import os
import threading
import time
import warnings

from ..symbol import executor as _executor
from .ndarray import _invoke

__all__ = ["set_config", "set_state", "dump", "dumps", "pause", "resume", "Domain", "Task",
           "Frame", "Event", "Counter", "Marker", "profiler_set_config", "profiler_set_state",
           "dump_profile", "state"]

_BOOL_KEYS = ("profile_all", "profile_symbolic", "profile_imperative", "profile_memory",
              "profile_api", "continuous_dump", "aggregate_stats")
_DEFAULTS = dict.fromkeys(_BOOL_KEYS, False)
_DEFAULTS.update(filename="profile.json", dump_period=1.0, profile_process="worker")

_lock = threading.Lock()
_config = dict(_DEFAULTS)
_state = {"running": False, "paused": False}
_events = []            # Chrome trace events, in the order recorded
_stats = {}             # category -> name -> [count, total_us, min_us, max_us]
_pids = {}              # a trace "process" (device or category) -> its pid
# microseconds since the epoch, from a monotonic clock
_EPOCH_US = time.time_ns() // 1000 - time.perf_counter_ns() // 1000


def _now_us():
    return _EPOCH_US + time.perf_counter_ns() // 1000


def _recording():
    return _state["running"] and not _state["paused"]


def _pid(process):
    """The trace pid of ``process`` (a device like ``cpu/0`` or a category); its
    ``process_name`` metadata event the first time (lock held)."""
    pid = _pids.get(process)
    if pid is None:
        pid = _pids[process] = len(_pids)
        _events.append({"ph": "M", "args": {"name": process}, "pid": pid,
                        "name": "process_name"})
    return pid


def _duration(category, name, start, end, process=None, args=None, ph=("B", "E"),
              extra=None):
    """Record one measured duration: a begin/end pair of trace events, and the
    aggregate statistics when ``aggregate_stats`` is on."""
    tid = threading.get_ident()
    with _lock:
        pid = _pid(process or category)
        for p, ts in zip(ph, (start, end)):
            ev = {"name": name, "cat": category, "ph": p, "ts": ts, "pid": pid, "tid": tid}
            if extra:
                ev.update(extra)
            if args and p == ph[0]:
                ev["args"] = args
            _events.append(ev)
        if _config["aggregate_stats"]:
            rec = _stats.setdefault(category, {}).get(name)
            dt = end - start
            if rec is None:
                _stats[category][name] = [1, dt, dt, dt]
            else:
                rec[0] += 1
                rec[1] += dt
                rec[2] = min(rec[2], dt)
                rec[3] = max(rec[3], dt)


def _device_name(ctx):
    return f"{ctx.device_type}/{ctx.device_id}"


def _wrap_op(fn, name, ctx, sync):
    """The executor hook: ``fn`` timed while recording (see module doc)."""
    op, _, node = name.partition(":")
    device = _device_name(ctx)

    def timed():
        if not _recording():
            return fn()
        start = _now_us()
        result = fn()
        if sync is not None:
            sync()
        _duration("operator", op, start, _now_us(), process=device, args={"node": node})
        return result
    return timed


def _hook():
    """Install or remove the executor and ``mx.nd`` hooks to match the state and config."""
    run, every = _state["running"], _config["profile_all"]
    _executor.set_op_profiler(_wrap_op if run and (_config["profile_symbolic"] or every)
                              else None)
    _invoke.set_op_profiler(_wrap_op if run and (_config["profile_imperative"] or every)
                            else None)


def _check_process(method, profile_process):
    if profile_process != "worker":
        raise NotImplementedError(f"profiler.{method}: profile_process={profile_process!r}: "
                                  f"only the worker is profiled (no KVStore server process)")


# ------------------------------------------------------------------ control
def set_config(**kwargs):
    """Configure the profiler (keyword arguments only, MXNet's names).

    Args:
        filename: the trace file ``dump`` writes (default ``profile.json``).
        profile_all: everything minpy records (see module doc).
        profile_symbolic: executor operators.
        profile_imperative: ``mx.nd``'s operator calls.
        profile_memory, profile_api: not recorded by minpy (a warning says so).
        aggregate_stats: keep the statistics ``dumps`` prints.
        continuous_dump, dump_period: accepted (the file is written at each ``dump``).
        profile_process: ``'worker'`` only.
    Raises:
        ValueError: an unknown keyword or a value of the wrong kind.
        NotImplementedError: ``profile_process='server'``.
    """
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"profiler.set_config: unknown keyword(s) {unknown}; expected some "
                         f"of {sorted(_DEFAULTS)}")
    new = {}
    for k, v in kwargs.items():
        if k in _BOOL_KEYS:
            if isinstance(v, str) and v.lower() in ("true", "false", "1", "0"):
                v = v.lower() in ("true", "1")
            if not isinstance(v, (bool, int)):
                raise ValueError(f"profiler.set_config: {k} must be a bool, got {v!r}")
            v = bool(v)
        elif k == "dump_period":
            v = float(v)
        elif k == "filename":
            v = os.fspath(v)
        new[k] = v
    _check_process("set_config", new.get("profile_process", "worker"))
    missing = [k for k in ("profile_memory", "profile_api")
               if new.get(k) or new.get("profile_all")]
    if missing:
        warnings.warn(f"profiler.set_config: {missing} are not recorded by minpy: its "
                      f"profiler records executor operators (profile_symbolic), mx.nd's "
                      f"operator calls (profile_imperative) and the "
                      f"Domain/Task/Frame/Event/Counter/Marker objects", stacklevel=2)
    with _lock:
        _config.update(new)
    _hook()


def set_state(state="stop", profile_process="worker"):
    """Start (``'run'``) or stop (``'stop'``) recording.

    Raises:
        ValueError: another state.
    """
    if state not in ("run", "stop"):
        raise ValueError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    _check_process("set_state", profile_process)
    _state["running"] = state == "run"
    _hook()


def state():
    """``'run'`` or ``'stop'`` (minpy's addition, for tests and tools)."""
    return "run" if _state["running"] else "stop"


def pause(profile_process="worker"):
    """Stop recording until ``resume`` (the state stays ``'run'``)."""
    _check_process("pause", profile_process)
    _state["paused"] = True


def resume(profile_process="worker"):
    """Record again after ``pause``."""
    _check_process("resume", profile_process)
    _state["paused"] = False


def dump(finished=True, profile_process="worker"):
    """Write every event recorded so far to ``filename`` as a Chrome trace (MXNet's JSON).

    Args:
        finished: also stop recording and forget the events written (MXNet: the last
            dump); else later dumps rewrite the file with these events and newer ones.
    """
    _check_process("dump", profile_process)
    with _lock:
        doc = {"traceEvents": list(_events), "displayTimeUnit": "ms"}
        path = _config["filename"]
        if finished:
            _events.clear()
            _pids.clear()
    with open(path, "w") as f:
        json.dump(doc, f)
    if finished:
        set_state("stop")


def _ms(us):
    return us / 1000.0


_SORT_KEYS = {"total": 1, "avg": None, "min": 2, "max": 3, "count": 0}


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics (needs ``set_config(aggregate_stats=True)``; empty
    otherwise), as MXNet prints them.

    Args:
        reset: clear the statistics afterwards.
        format: ``'table'`` or ``'json'`` (``{"Time": {category: {name: {"Count",
            "Total", "Min", "Max", "Avg"}}}, "Memory": {}, "Unit": ...}``, in ms).
        sort_by: ``'total'``, ``'avg'``, ``'min'``, ``'max'`` or ``'count'`` (within a
            category).
        ascending: sort order.
    Raises:
        ValueError: another ``format``, ``sort_by`` or a non-bool ``reset``/``ascending``.
    """
    if format not in ("table", "json"):
        raise ValueError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in _SORT_KEYS:
        raise ValueError(f"profiler.dumps: sort_by must be one of {sorted(_SORT_KEYS)}, "
                         f"got {sort_by!r}")
    for what, v in (("reset", reset), ("ascending", ascending)):
        if not isinstance(v, bool):
            raise ValueError(f"profiler.dumps: {what} must be True or False, got {v!r}")
    with _lock:
        stats = {cat: {n: list(r) for n, r in items.items()} for cat, items in _stats.items()}
        if reset:
            _stats.clear()

    def key(item):
        rec = item[1]       # [count, total, min, max]
        return rec[1] / rec[0] if sort_by == "avg" else rec[_SORT_KEYS[sort_by]]

    ordered = {cat: sorted(stats[cat].items(), key=key, reverse=not ascending)
               for cat in sorted(stats)}
    if format == "json":
        time_part = {cat: {n: {"Count": c, "Total": _sig(_ms(t)), "Min": _sig(_ms(lo)),
                               "Max": _sig(_ms(hi)), "Avg": _sig(_ms(t / c))}
                           for n, (c, t, lo, hi) in rows}
                     for cat, rows in ordered.items()}
        return json.dumps({"Time": time_part, "Memory": {},
                           "Unit": {"Time": "ms", "Memory": "kB"}}, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for cat, rows in ordered.items():
        lines += [cat, "=================",
                  "Name".ljust(25) + "Total Count".rjust(16) + " " + "Time (ms)".rjust(16)
                  + " " + "Min Time (ms)".rjust(16) + " " + "Max Time (ms)".rjust(16) + " "
                  + "Avg Time (ms)".rjust(16),
                  "----".ljust(25) + "-----------".rjust(16) + " " + "---------".rjust(16)
                  + " " + " ".join(["-------------".rjust(16)] * 3)]
        for name, (c, t, lo, hi) in rows:
            lines.append(name.ljust(25) + str(c).rjust(16) + " "
                         + " ".join(f"{_ms(v):.4f}".rjust(16) for v in (t, lo, hi, t / c)))
        lines.append("")
    return "\n".join(lines) + "\n"


def _sig(v):
    """``v`` with 4 significant digits (MXNet's ``setprecision(4)``)."""
    return float(f"{v:.4g}")


# ------------------------------------------------------------------ deprecated names
def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated (MXNet's): ``set_config(profile_<mode>=True, filename=filename)``."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use "
                  "profiler.set_config() instead", DeprecationWarning, stacklevel=2)
    set_config(**{"profile_" + mode: True, "filename": filename})


def profiler_set_state(state="stop"):
    """Deprecated (MXNet's): ``set_state(state)``."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use "
                  "profiler.set_state() instead", DeprecationWarning, stacklevel=2)
    set_state(state)


def dump_profile():
    """Deprecated (MXNet's): ``dump(True)``."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() "
                  "instead", DeprecationWarning, stacklevel=2)
    dump(True)


# ------------------------------------------------------------------ objects
class Domain:
    """A category grouping tasks, frames, counters and markers (MXNet's ``Domain``).

    See also mxnet.profiler.Domain.
    """

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A Task of this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A Frame of this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A Counter of this domain (``value``: its initial value)."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A Marker of this domain."""
        return Marker(self, name)


class _Duration:
    """A named duration: ``start()``/``stop()`` (or ``with``), recorded at ``stop`` if the
    profiler recorded at ``start``."""

    _ph = ("B", "E")

    def __init__(self, category, name):
        self.category, self.name = category, str(name)
        self._start = False        # False: not started; None: started while not recording

    def _extra(self):
        return None

    def start(self):
        """Begin timing."""
        self._start = _now_us() if _recording() else None

    def stop(self):
        """End timing and record the duration (nothing if not started while recording).

        Raises:
            RuntimeError: called twice, or before ``start``.
        """
        if self._start is False:
            raise RuntimeError(f"profiler.{type(self).__name__}.stop: {self.name!r} was not "
                               f"started")
        start, self._start = self._start, False
        if start is not None:
            _duration(self.category, self.name, start, _now_us(), ph=self._ph,
                      extra=self._extra())

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Duration):
    """A timed unit of work of a domain; all its passes add up in one statistic
    (MXNet's ``Task``). See also mxnet.profiler.Task."""

    _ph = ("b", "e")

    def __init__(self, domain, name):
        super().__init__(domain.name, name)

    def _extra(self):
        return {"id": threading.get_ident()}


class Frame(_Duration):
    """A timed frame of a domain (MXNet's ``Frame``). See also mxnet.profiler.Frame."""

    _ph = ("(", ")")

    def __init__(self, domain, name):
        super().__init__(domain.name + ",frame", name)


class Event(_Duration):
    """A timed event, category ``event`` (MXNet's ``Event``). See also mxnet.profiler.Event."""

    def __init__(self, name):
        super().__init__("event", name)


class Counter:
    """A value tracked over time (MXNet's ``Counter``): each change is a trace event
    while the profiler records. See also mxnet.profiler.Counter."""

    def __init__(self, domain, name, value=None):
        self.domain, self.name = domain, str(name)
        self.value = 0
        if value is not None:
            self.set_value(value)

    def _emit(self):
        if not _recording():
            return
        with _lock:
            _events.append({"name": self.name, "cat": self.domain.name, "ph": "C",
                            "ts": _now_us(), "args": {self.name: self.value},
                            "pid": _pid(self.domain.name), "tid": threading.get_ident()})

    def set_value(self, value):
        """Set the value (an int)."""
        self.value = int(value)
        self._emit()

    def increment(self, delta=1):
        """Add ``delta``."""
        self.set_value(self.value + int(delta))

    def decrement(self, delta=1):
        """Subtract ``delta``."""
        self.set_value(self.value - int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Marker:
    """An instant in time (MXNet's ``Marker``). See also mxnet.profiler.Marker."""

    def __init__(self, domain, name):
        self.domain, self.name = domain, str(name)

    def mark(self, scope="process"):
        """Record the instant (``scope``: 'global', 'process', 'thread', 'task', 'marker').

        Raises:
            ValueError: another scope.
        """
        if scope not in _SCOPES:
            raise ValueError(f"profiler.Marker.mark: scope must be one of {sorted(_SCOPES)}, "
                             f"got {scope!r}")
        if not _recording():
            return
        cat = self.domain.name + ",instant_marker"
        with _lock:
            _events.append({"name": self.name, "cat": cat, "ph": "n", "ts": _now_us(),
                            "s": _SCOPES[scope], "pid": _pid(cat),
                            "tid": threading.get_ident()})
