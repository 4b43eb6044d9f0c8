"""Unit semantics of minpy.engine, for both the naive and the threaded engine.

Ordering tests make the op pushed first slow, so an engine that ignored the
dependency would let the later op run first and the assertion would fail.
"""
import faulthandler
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import minpy.engine as me
from minpy.engine import EngineError, NaiveEngine, ThreadedEngine, guarded_rng

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(me.__file__)))
SLOW = 0.05


@pytest.fixture(autouse=True)
def deadlock_watchdog():
    """A scheduling bug shows up as a hang: dump all threads and exit."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(params=["naive", "threaded"])
def eng(request):
    e = NaiveEngine() if request.param == "naive" else ThreadedEngine(num_cpu_workers=2)
    yield e
    e.shutdown()


@pytest.fixture
def teng():
    e = ThreadedEngine(num_cpu_workers=2)
    yield e
    e.shutdown()


def slow(fn, delay=SLOW):
    def op():
        time.sleep(delay)
        fn()
    return op


# -- ordering -----------------------------------------------------------------
def test_read_after_write(eng):
    v, box, seen = eng.new_var(), [0], []
    eng.push(slow(lambda: box.__setitem__(0, 1)), writes=[v])
    eng.push(lambda: seen.append(box[0]), reads=[v])
    eng.wait_for(v)
    assert seen == [1]
    assert v.version == 1          # reads do not bump the version


def test_write_after_read(eng):
    v, box, seen = eng.new_var(), [0], []
    eng.push(slow(lambda: seen.append(box[0])), reads=[v])
    eng.push(lambda: box.__setitem__(0, 1), writes=[v])
    eng.wait_for(v)
    assert seen == [0] and box == [1]


def test_wait_for_waits_for_readers(eng):
    v, seen = eng.new_var(), []
    eng.push(slow(lambda: seen.append("read")), reads=[v])
    eng.wait_for(v)
    assert seen == ["read"]


def test_writes_run_in_push_order(eng):
    v, out = eng.new_var(), []
    for i in range(8):
        eng.push(slow(lambda i=i: out.append(i), 0.003 * (8 - i)), writes=v)
    eng.wait_for(v)
    assert out == list(range(8))
    assert v.version == 8


def test_read_write_read_sees_each_version(eng):
    v, box, seen = eng.new_var(), [0], []
    eng.push(slow(lambda: seen.append(("r1", box[0]))), reads=v)
    eng.push(slow(lambda: box.__setitem__(0, 1), 0.02), writes=v)
    eng.push(lambda: seen.append(("r2", box[0])), reads=v)
    eng.waitall()
    assert sorted(seen) == [("r1", 0), ("r2", 1)]


def test_reads_run_concurrently(teng):
    """Both reads must be inside the barrier at once; serialized reads would
    break it (BrokenBarrierError stored and re-raised by waitall)."""
    v = teng.new_var()
    for first in (None, "write"):
        barrier, box, seen = threading.Barrier(2, timeout=10), [0], []
        if first:   # reads queued behind a write are granted together too
            teng.push(slow(lambda: box.__setitem__(0, 7)), writes=v)
        for _ in range(2):
            teng.push(lambda: (barrier.wait(), seen.append(box[0])), reads=v)
        teng.push(lambda: seen.append("w"), writes=v)   # waits for both
        teng.waitall()
        assert seen[:2] == [box[0]] * 2 and seen[2] == "w"


def test_read_plus_write_counts_as_write(teng):
    v, active, peak = teng.new_var(), [0], [0]

    def op():
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        time.sleep(SLOW)
        active[0] -= 1
    for _ in range(3):
        teng.push(op, reads=[v, v], writes=[v])
    teng.wait_for(v)
    assert peak[0] == 1 and v.version == 3


def test_pushes_from_many_threads(eng):
    v, box = eng.new_var(), [0]

    def incr():
        x = box[0]
        time.sleep(0)          # invite a race if writes overlapped
        box[0] = x + 1

    def pusher():
        for _ in range(300):
            eng.push(incr, writes=v)
    threads = [threading.Thread(target=pusher) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.waitall()
    assert box[0] == 1200 and v.version == 1200


def test_waitall_waits(eng):
    vs, done = [eng.new_var() for _ in range(4)], []
    for i, v in enumerate(vs):
        eng.push(slow(lambda i=i: done.append(i), 0.01), writes=v)
    eng.waitall()
    assert sorted(done) == [0, 1, 2, 3]


def test_device_pools(teng):
    v, names = teng.new_var(), []
    rec = lambda: names.append(threading.current_thread().name)  # noqa: E731
    teng.push(slow(rec), writes=v, device=("gpu", 0))
    teng.push(rec, reads=v, device=("cpu", 0))
    teng.push(rec, reads=v, device="cpu")
    teng.wait_for(v)
    assert names[0].startswith("minpy-engine-gpu-0-")
    assert all(n.startswith("minpy-engine-cpu-") for n in names[1:]) and len(names) == 3
    threads = teng.worker_threads()
    assert len(threads) == 3                    # 2 cpu + 1 gpu
    teng.shutdown()
    assert not any(t.is_alive() for t in threads) and teng.worker_threads() == []


def test_delete_var_ordering(eng):
    v, seen = eng.new_var(), []
    eng.push(slow(lambda: seen.append(v.deleted)), reads=v)
    eng.push(slow(lambda: seen.append(v.deleted)), writes=v)
    eng.delete_var(v)
    with pytest.raises(EngineError):
        eng.push(lambda: None, reads=v)
    eng.delete_var(v)              # second delete is a no-op
    eng.wait_for(v)
    assert seen == [False, False] and v.deleted


def test_push_validation(eng):
    with pytest.raises(TypeError):
        eng.push(42)
    with pytest.raises(TypeError):
        eng.push(lambda: None, reads=[object()])


# -- errors -------------------------------------------------------------------
class Boom(Exception):
    pass


def fail(exc):
    def op():
        raise exc
    return op


def test_error_propagates_skips_and_is_raised_by_every_wait(eng):
    v, w, x, other = (eng.new_var() for _ in range(4))
    exc, ran = Boom("bad"), []
    eng.push(slow(fail(exc)), writes=v, name="failing-op")
    eng.push(lambda: ran.append("dep"), reads=v, writes=w)
    eng.push(lambda: ran.append("dep2"), reads=w, writes=x)
    eng.push(lambda: ran.append("indep"), writes=other)
    with pytest.raises(Boom) as info:
        eng.wait_for(x)
    assert info.value is exc
    assert sum("failing-op" in n for n in exc.__notes__) == 1
    eng.waitall()                  # already raised: waitall reports it once
    for var in (v, w, x, x):       # a failed var raises on every wait
        with pytest.raises(Boom):
            eng.wait_for(var)
    assert ran == ["indep"]
    assert (v.version, w.version, x.version) == (0, 0, 0)
    eng.push(lambda: ran.append("after"), reads=v, writes=w)   # reads a failed var: skipped
    with pytest.raises(Boom):
        eng.wait_for(w)
    eng.push(lambda: ran.append("rewrite"), writes=v)          # a rewrite clears it
    eng.push(lambda: ran.append("after2"), reads=v, writes=w)
    eng.wait_for(w)
    assert ran == ["indep", "rewrite", "after2"] and (v.version, w.version) == (1, 1)
    assert v._error is None and w._error is None


def test_read_write_op_on_a_seen_failure_is_skipped(eng):
    """A var listed in reads and writes is read: a failed one is not 'rewritten'."""
    v, ran = eng.new_var(), []
    eng.push(fail(Boom()), writes=v)
    with pytest.raises(Boom):
        eng.wait_for(v)
    eng.push(lambda: ran.append("rmw"), reads=v, writes=v)
    with pytest.raises(Boom):
        eng.wait_for(v)
    assert ran == []


def test_dependants_pushed_before_the_raise_stay_skipped(eng):
    """D is pushed before wait_for(v) raises but (threaded) runs after it;
    it must still be skipped, so the outcome does not depend on timing."""
    v, w, gate, out = (eng.new_var() for _ in range(4))
    ran = []
    eng.push(slow(lambda: None, 0.2), writes=gate)
    eng.push(fail(Boom()), writes=[v, w])
    eng.push(lambda: ran.append("D"), reads=[w, gate], writes=out)
    with pytest.raises(Boom):
        eng.wait_for(v)
    eng.push(lambda: ran.append("after"), writes=w)     # a rewrite of w, pushed after
    with pytest.raises(Boom):
        eng.wait_for(out)          # D read w before the rewrite: skipped
    eng.waitall()                  # seen already: not again
    eng.wait_for(w)
    assert ran == ["after"]


def test_vars_outlive_an_engine():
    v, ran = me.new_var(), []
    with ThreadedEngine(num_cpu_workers=1) as e1:
        for _ in range(50):
            e1.push(lambda: None, writes=me.new_var())
        e1.push(fail(Boom()), writes=v)
        with pytest.raises(Boom):
            e1.wait_for(v)
    with ThreadedEngine(num_cpu_workers=1) as e2:
        with pytest.raises(Boom):   # the failure is the var's, whatever the engine
            e2.wait_for(v)
        e2.push(lambda: ran.append(1), writes=v)
        e2.push(lambda: ran.append(2), reads=v)
        e2.waitall()
    assert ran == [1, 2]


def test_write_only_dependant_is_skipped(eng):
    v, ran = eng.new_var(), []
    eng.push(fail(Boom()), writes=v)
    eng.push(lambda: ran.append(1), writes=v)
    with pytest.raises(Boom):
        eng.wait_for(v)
    assert ran == []
    eng.push(lambda: ran.append(2), writes=v)   # a later write succeeds
    eng.wait_for(v)
    assert ran == [2] and v.version == 1 and v._error is None


def test_waitall_raises_each_error_once(eng):
    a, b = eng.new_var(), eng.new_var()
    e1, e2 = Boom("one"), Boom("two")
    eng.push(fail(e1), writes=a)
    eng.push(fail(e2), writes=b)
    eng.push(fail(ValueError("no vars")))
    raised = []
    for _ in range(3):
        with pytest.raises(Exception) as info:
            eng.waitall()
        raised.append(info.value)
    eng.waitall()
    with pytest.raises(Boom, match="one"):
        eng.wait_for(a)            # waitall reports each error once; reads keep raising
    assert {id(e) for e in raised} == {id(e1), id(e2), id(raised[2])}
    assert sum(isinstance(e, ValueError) for e in raised) == 1


def test_concurrent_waiters_all_get_the_error(teng):
    v, exc = teng.new_var(), Boom()
    teng.push(slow(fail(exc), 0.1), writes=v)
    results = []

    def waiter():
        try:
            teng.wait_for(v)
            results.append(None)
        except Boom as e:
            results.append(e)
    ts = [threading.Thread(target=waiter) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert results == [exc, exc, exc]


def test_base_exception_in_worker_is_stored(teng):
    v = teng.new_var()
    teng.push(fail(SystemExit(3)), writes=v)
    with pytest.raises(SystemExit):
        teng.wait_for(v)
    teng.push(lambda: None, writes=v)
    teng.waitall()


def test_wait_inside_op_is_refused(teng):
    v = teng.new_var()
    teng.push(slow(lambda: None), writes=v)
    teng.push(lambda: teng.wait_for(v))
    with pytest.raises(EngineError, match="deadlock"):
        teng.waitall()


# -- random generators ----------------------------------------------------------
def draw_all(engine, n_draws=40):
    rng = guarded_rng(1234, engine=engine)
    outs = [engine.new_var() for _ in range(n_draws)]
    results = [None] * n_draws

    def draw(i):
        def op(g):
            time.sleep(0.0005 * (i % 3))    # uneven delays: races would reorder
            results[i] = g.standard_normal(i % 5 + 1)
        return op
    for i, o in enumerate(outs):
        rng.push(draw(i), writes=o)
    engine.waitall()
    return results


def test_rng_reproducible_across_thread_counts():
    ref = np.random.default_rng(1234)
    expected = [ref.standard_normal(i % 5 + 1) for i in range(40)]
    engines = [NaiveEngine()] + [ThreadedEngine(num_cpu_workers=n) for n in (1, 2, 4)]
    for e in engines:
        with e:
            got = draw_all(e)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)


# -- engine selection and process exit --------------------------------------------
def run_py(code, **env):
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("MINPY_ENGINE", "MINPY_CPU_WORKERS"):
        full.pop(k, None)
    full.update(env)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                       text=True, timeout=30)
    return p, time.monotonic() - t0


EXIT_SCRIPT = r"""
import atexit, threading, time
import minpy.engine as me
done = []
def report():   # atexit runs after the engine's exit hook joined the workers
    left = [t.name for t in threading.enumerate() if t.name.startswith("minpy-engine")]
    print("LEFT", left, "DONE", len(done), flush=True)
atexit.register(report)
eng = me.get_engine()
v = me.new_var()
for i in range(50):
    me.push(lambda i=i: (time.sleep(0.002), done.append(i)), writes=v)
me.push(lambda: done.append("gpu"), reads=v, device=("gpu", 0))
me.push(lambda: 1 / 0)
print(type(eng).__name__, "DAEMON", sorted({t.daemon for t in eng.worker_threads()}), flush=True)
"""


def test_no_threads_left_at_exit():
    p, elapsed = run_py(EXIT_SCRIPT)
    assert p.returncode == 0, p.stderr
    assert "ThreadedEngine DAEMON [False]" in p.stdout
    assert "LEFT [] DONE 51" in p.stdout
    assert "never re-raised; first: ZeroDivisionError" in p.stderr
    assert elapsed < 20


def test_env_selects_engine():
    code = ("import minpy.engine as me; e = me.get_engine(); "
            "print(type(e).__name__, getattr(e, 'num_cpu_workers', '-'))")
    assert run_py(code, MINPY_ENGINE="naive")[0].stdout.split() == ["NaiveEngine", "-"]
    assert run_py(code)[0].stdout.split() == ["ThreadedEngine", "1"]
    p = run_py(code, MINPY_CPU_WORKERS="3")[0]
    assert p.stdout.split() == ["ThreadedEngine", "3"]
    assert run_py(code, MINPY_ENGINE="bogus")[0].returncode != 0


def test_set_engine_drains_and_keeps_errors():
    original = me.get_engine()
    try:
        first = me.set_engine("threaded", num_cpu_workers=2)
        v, done = me.new_var(), []
        me.push(slow(lambda: done.append(1)), writes=v)
        me.push(fail(Boom("carried")))
        new = me.set_engine("naive")
        assert done == [1] and first.closed and me.get_engine() is new
        assert isinstance(new, NaiveEngine)
        with pytest.raises(Boom):
            me.waitall()
        me.push(lambda: done.append(2), reads=v)    # naive: inline
        assert done == [1, 2]
        first.push(lambda: done.append(3))          # closed engine: inline
        assert done == [1, 2, 3]
    finally:
        me.set_engine(type(original)())


REENTRANT_SCRIPT = r"""
import gc
import minpy.engine as me
eng = me.get_engine()
victims, calls = [], [0]
def on_gc(phase, info):     # runs inside whatever allocation triggered GC,
    if phase == "start" and victims:  # possibly inside the engine's lock
        calls[0] += 1
        v = victims.pop()
        eng.push(lambda: None, writes=v)
        eng.delete_var(v)
v = me.new_var()
victims.extend(me.new_var() for _ in range(300))
gc.callbacks.append(on_gc)
gc.set_threshold(1)
for i in range(300):
    eng.push(lambda: None, reads=v, writes=[me.new_var()])
    eng.push(lambda: None, writes=v)
gc.set_threshold(700)
gc.callbacks.remove(on_gc)
me.waitall()
print("OK", calls[0] > 0)
"""


def test_reentrant_push_from_gc_does_not_deadlock():
    """__del__ methods (run by GC at any allocation, even inside the engine
    lock) may call push/delete_var; a non-reentrant lock would deadlock."""
    p, _ = run_py(REENTRANT_SCRIPT)
    assert p.returncode == 0 and p.stdout.split() == ["OK", "True"], p.stderr


def test_ready_ops_run_highest_priority_first():
    """Ops ready at once in a pool run by priority, ties in push order."""
    with ThreadedEngine(num_cpu_workers=1) as e:
        gate, order = threading.Event(), []
        e.push(gate.wait)                           # holds the only worker
        for name, prio in (("low", -1), ("first zero", 0), ("high", 5), ("second zero", 0),
                           ("higher", 9)):
            e.push(lambda n=name: order.append(n), priority=prio)
        gate.set()
        e.waitall()
    assert order == ["higher", "high", "first zero", "second zero", "low"]
    naive_order = []
    n = NaiveEngine()
    n.push(lambda: naive_order.append(1), priority=3)     # runs at once: nothing to order
    assert naive_order == [1]


def test_num_pending_counts_queued_ops_not_waits():
    with ThreadedEngine(num_cpu_workers=1) as e:
        gate = threading.Event()
        v = e.new_var()
        assert e.num_pending() == 0
        e.push(gate.wait, writes=[v])
        e.push(lambda: None, reads=[v])
        assert e.num_pending() == 2
        waiter = threading.Thread(target=e.wait_for, args=(v,))
        waiter.start()                    # a wait queued on v is not an op
        time.sleep(0.05)
        assert e.num_pending() == 2
        gate.set()
        waiter.join(10)
        e.waitall()
        assert e.num_pending() == 0
    assert NaiveEngine().num_pending() == 0
