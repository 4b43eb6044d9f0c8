"""The recorders of a thread (the gradient tape, the ``minpy.jit`` tracer): tracing state
is per thread, and opaque primitives are replayed by jit as one step."""
import itertools
import pathlib
import re
import threading

import numpy
import pytest

import minpy
import minpy as mp
from minpy.core import wrappers
from minpy.core.call import opaque_step
from minpy.core.trace import Tracer
from minpy.dispatch import state


def _count_front_door(monkeypatch):
    """Patch the wrappers' front door; returns {thread id: calls that took it}."""
    seen = {}
    real = wrappers.call

    def counting(prim, args, kwargs):
        k = threading.get_ident()
        seen[k] = seen.get(k, 0) + 1
        return real(prim, args, kwargs)
    monkeypatch.setattr(wrappers, "call", counting)
    return seen


@pytest.mark.cpu_only        # the NumPy shortcuts exist without a GPU only
def test_a_trace_in_one_thread_leaves_other_threads_off_the_front_door(monkeypatch):
    seen = _count_front_door(monkeypatch)
    inside, release = threading.Event(), threading.Event()
    # (what the traced body writes here must leave the dict as jit's guards saw it, or
    # the next call traces again instead of replaying)
    out, flags_in_trace = {}, {"one_tape": None}

    @mp.jit
    def f(x):
        y = mp.sin(x)
        flags_in_trace["one_tape"] = state.thread_flags().one_tape
        inside.set()
        release.wait(10)
        return mp.sum(y * 2.0 + mp.exp(x))      # after the other thread's calls

    def tracer_thread():
        out["first"] = f(mp.array([0.0, 1.0]))

    t = threading.Thread(target=tracer_thread)
    t.start()
    try:
        assert inside.wait(10)
        assert state.process.tracers == 1 and not state.process.fast
        # this thread traces nothing: its calls take the straight NumPy shortcuts
        assert state.thread_flags().one_tape is state.NO_TAPE
        x = mp.array([1.0, 2.0, 3.0])
        r = mp.exp(x) * 3 - mp.sum(x)
        numpy.testing.assert_allclose(r.asnumpy(), numpy.exp([1.0, 2, 3]) * 3 - 6)
        g = mp.grad(lambda v: mp.sum(mp.sin(v) * v))(x)
        xv = numpy.array([1.0, 2, 3])
        numpy.testing.assert_allclose(g.asnumpy(), numpy.cos(xv) * xv + numpy.sin(xv))
        assert seen.get(threading.get_ident(), 0) == 0
    finally:
        release.set()
        t.join(10)
    # the tracing thread's own calls took the front door (nothing escaped the trace)
    assert flags_in_trace["one_tape"] is None and seen.get(t.ident, 0) > 0
    want = lambda v: numpy.sum(numpy.sin(v) * 2 + numpy.exp(v))
    assert float(out["first"]) == pytest.approx(want(numpy.array([0.0, 1.0])))
    assert f.cache_info()["traces"] == 1
    # the replay holds every step of the trace: new values give the new answer
    assert float(f(mp.array([0.5, -1.0]))) == pytest.approx(want(numpy.array([0.5, -1.0])))
    assert f.cache_info()["hits"] == 1
    assert state.process.tracers == 0 and state.process.fast


def test_trace_transitions_leave_what_a_recomputation_gives():
    def flags():
        f = state.thread_flags()
        return state.process.fast, state.process.eager, state.process.tracers, f.one_tape

    def check():
        before = flags()
        state.recompute()
        assert flags() == before
        return before
    start = check()
    prev = state.enter_trace(Tracer("f"))
    try:
        fast, eager, tracers, one_tape = check()
        assert not fast and eager == start[1] and tracers == start[2] + 1 and one_tape is None
    finally:
        state.exit_trace(prev)
    assert check() == start


def _scaled_update(w, g, lr):
    """An in-place update computed on the buffers, outside minpy's primitives."""
    w._data[...] -= lr * g._data


def test_opaque_step_runs_once_and_is_replayed_by_jit():
    w = mp.array([1.0, 2.0])
    calls = itertools.count()       # (an object jit's guards compare by identity)

    def update(w, g):
        next(calls)
        _scaled_update(w, g, 0.5)

    opaque_step("update", update, (w, mp.array([2.0, 2.0])), writes=(w,))
    numpy.testing.assert_allclose(w.asnumpy(), [0.0, 1.0])

    @mp.jit
    def train(g):
        opaque_step("update", update, (w, g), writes=(w,))
        return mp.sum(w * 2.0)

    assert float(train(mp.array([2.0, 0.0]))) == pytest.approx(0.0)       # w: [-1, 1]
    assert float(train(mp.array([0.0, 4.0]))) == pytest.approx(-4.0)      # replayed: [-1, -1]
    assert train.cache_info()["hits"] == 1 and next(calls) == 3
    numpy.testing.assert_allclose(w.asnumpy(), [-1.0, -1.0])
    (program,) = train.programs()
    assert program.step_kinds.count("opaque") == 1


def test_opaque_step_under_a_tape_is_checked_as_a_write_in_place():
    w = mp.array([1.0, 2.0])
    g = mp.array([1.0, 1.0])

    def writes_traced(x):
        opaque_step("update", lambda a, b: _scaled_update(a, b, 1.0), (x, g), writes=(x,))
        return mp.sum(x)
    with pytest.raises(TypeError, match="update"):
        mp.grad(writes_traced)(w)

    def writes_saved(x):
        y = mp.sum(x * w)                       # the tape saves w for the backward pass
        opaque_step("update", lambda a, b: _scaled_update(a, b, 1.0), (w, g), writes=(w,))
        return y
    with pytest.raises(RuntimeError, match="update"):
        mp.grad(writes_saved)(mp.array([3.0, 4.0]))
    with pytest.raises(TypeError, match="opaque_step: update: .*minpy Arrays"):
        opaque_step("update", _scaled_update, (w._data, g, 1.0), writes=(w._data,))


# who may hold the jit tracer (the per-thread slot): everything else asks core.recorder
_HOLDERS = {"minpy/core/call.py", "minpy/core/execute.py", "minpy/core/recorder.py",
            "minpy/core/trace.py", "minpy/dispatch/state.py"}


def test_only_the_front_door_and_the_bottom_of_a_call_hold_the_tracer():
    root = pathlib.Path(minpy.__file__).resolve().parent.parent
    found = set()
    for path in (root / "minpy").rglob("*.py"):
        text = path.read_text()
        if re.search(r"\bflags\.tracer\b|\bcurrent_tracer\s*\(", text):
            found.add(path.relative_to(root).as_posix())
    assert found <= _HOLDERS, sorted(found - _HOLDERS)
