"""Async mode gives the eager answer or raises: never a silently wrong value.

Aliasing buffers order against each other, the engine bounds what is in
flight, Ctrl-C and exit do not drain a backlog, NumPy's error state follows
pushed ops, and a failed value keeps raising on every read.
"""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy
import pytest

import minpy as mp
import minpy.engine as minpy_engine
from minpy.core import async_work
from minpy.engine import EngineCancelled, ThreadedEngine

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 1 << 17                     # elements: large enough to be pushed
TRIALS = 30


def busy_worker(seconds=0.01):
    """Queue an op that occupies a CPU worker, so the next pushed op waits in the queue."""
    async_work.push(lambda: time.sleep(seconds), writes=[mp.zeros(1)], name="sleeper")


def run_script(code, env=None, timeout=120):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------ 1. storage aliasing
def test_view_write_waits_for_queued_read_of_base():
    wrong = 0
    for _ in range(TRIALS):
        with mp.async_mode():
            x = mp.array(numpy.ones(N))
            v = x[::2]                  # the view exists before the read is queued
            busy_worker()
            z = x + 1.0                 # queued behind the sleeper
            v += 5.0                    # eager write through the view
            wrong += float(z[0]) != 2.0
            assert float(x[0]) == 6.0
    assert wrong == 0


def test_base_write_waits_for_queued_read_through_view():
    wrong = 0
    for _ in range(TRIALS):
        with mp.async_mode():
            x = mp.array(numpy.ones(N))
            v = x[::2]
            busy_worker()
            z = v + 1.0                 # queued read through the view
            x += 5.0                    # eager write of the base
            wrong += float(z[0]) != 2.0
    assert wrong == 0


def test_view_of_view_and_queued_write_of_base():
    wrong = 0
    for _ in range(TRIALS):
        with mp.async_mode():
            x = mp.array(numpy.ones(2 * N))
            w = x[1:][::2]              # a view of a view: both alias x's buffer
            busy_worker()
            y = x * 3.0                 # queued read of x
            w[...] = 7.0                # eager write through the view of the view
            wrong += float(y[1]) != 3.0
            # the other direction: a queued read of the view, an eager write to the base
            busy_worker()
            u = w + 0.0
            x[...] = -1.0
            wrong += float(u[0]) != 7.0
    assert wrong == 0


def test_views_share_the_var_of_their_root():
    with mp.async_mode():
        x = mp.array(numpy.ones(N))
        v = x[::2]
        vv = v[1:]
        var = async_work.var_of(vv)
        assert async_work.var_of(x) is var and async_work.var_of(v) is var
        assert minpy_engine.storage_var(x[3:]._data) is var
    buf = numpy.ones(10)
    strided = numpy.lib.stride_tricks.as_strided(buf, (5,), (16,))   # base: a DummyArray
    for alias in (buf[::2][1:], buf.reshape(2, 5).T, strided):
        assert minpy_engine.root_of(alias) is buf


def test_a_recycled_buffer_id_does_not_inherit_a_var():
    with mp.async_mode():
        for _ in range(20):
            x = mp.array(numpy.ones(N))
            async_work.var_of(x)
            key = id(x._data)
            x.wait_to_read()
            del x
            y = numpy.empty(N)          # often lands on the freed id
            if id(y) == key:
                assert minpy_engine.storage_var(y) is None
            assert minpy_engine.storage_var(y) is None


# ------------------------------------------------------------ 2. backpressure
LOOP = """
    import resource
    import minpy as mp
    x = mp.ones(1 << 19)            # 4 MiB of float64
    x.asnumpy()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with mp.async_mode():
        y = x
        for _ in range(600):
            y = y + 1.0
        y.wait_to_read()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert float(y[0]) == 601.0, float(y[0])
    print((peak - base) * 1024)
"""


def test_pushed_loop_keeps_memory_bounded():
    out = run_script(LOOP)
    assert out.returncode == 0, out.stderr
    growth = int(out.stdout.split()[-1])
    array = 4 << 20
    assert growth < 10 * array + (16 << 20), f"peak RSS grew by {growth / 2**20:.0f} MiB"


def test_pusher_blocks_at_the_op_limit():
    with ThreadedEngine(num_cpu_workers=1, max_inflight=3) as eng:
        seen = []
        for _ in range(12):
            eng.push(lambda: time.sleep(0.002), writes=eng.new_var())
            seen.append(eng.num_pending())
        eng.waitall()
    assert max(seen) <= 3


def test_pusher_blocks_at_the_byte_limit():
    with ThreadedEngine(num_cpu_workers=1, max_inflight_bytes=1000) as eng:
        seen = []
        for _ in range(12):
            eng.push(lambda: time.sleep(0.002), writes=eng.new_var(), nbytes=300)
            seen.append(eng.inflight_bytes())
        # one op larger than the whole budget still goes (alone)
        eng.push(lambda: None, writes=eng.new_var(), nbytes=5000)
        eng.waitall()
    assert max(seen) <= 900


def test_byte_limit_lets_one_op_per_worker_go():
    # two ops over the byte budget still run at once on two workers (each waits for
    # the other: held back, the second push would come after the first timed out)
    meet = threading.Barrier(2, timeout=10)
    with ThreadedEngine(num_cpu_workers=2, max_inflight_bytes=1000) as eng:
        for _ in range(2):
            eng.push(meet.wait, writes=eng.new_var(), nbytes=5000)
        eng.waitall()
    assert not meet.broken


def test_ops_pushed_from_inside_an_op_are_not_throttled():
    with ThreadedEngine(num_cpu_workers=1, max_inflight=2) as eng:
        done = []

        def parent():
            for i in range(10):         # would deadlock if the worker blocked itself
                eng.push(lambda i=i: done.append(i), writes=eng.new_var())
        eng.push(parent, writes=eng.new_var())
        eng.waitall()
    assert sorted(done) == list(range(10))


def test_inflight_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("MINPY_ENGINE_MAX_INFLIGHT", "7")
    monkeypatch.setenv("MINPY_ENGINE_MAX_INFLIGHT_BYTES", "12345")
    with ThreadedEngine() as eng:
        assert (eng.max_inflight, eng.max_inflight_bytes) == (7, 12345)
    monkeypatch.setenv("MINPY_ENGINE_MAX_INFLIGHT", "many")
    with pytest.raises(ValueError, match="MINPY_ENGINE_MAX_INFLIGHT"):
        ThreadedEngine()


# ------------------------------------------------------------ 3. interrupt and exit
CHAIN = textwrap.dedent("""
    import sys, time
    import minpy as mp
    from minpy.core import async_work
    x = mp.zeros(4)
    for i in range(60):                 # a 12 s chain
        async_work.push(lambda: time.sleep(0.2), writes=[x], name=f"step{i}")
    print("ready", flush=True)
""")


def _interrupt_and_time(code, env=None):
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                            env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)                 # let the child reach its wait
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        return time.monotonic() - t0, proc.returncode, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigint_during_waitall_exits_promptly():
    dt, rc, _, err = _interrupt_and_time(CHAIN + "mp.waitall()\n")
    assert "KeyboardInterrupt" in err
    assert rc != 0
    assert dt < 2.0, f"exit took {dt:.1f} s after SIGINT"


def test_sigint_while_throttled_exits_promptly():
    code = CHAIN.replace('print("ready", flush=True)\n', "") + textwrap.dedent("""
        print("ready", flush=True)
        for i in range(200):            # blocks at the in-flight limit
            async_work.push(lambda: time.sleep(0.2), writes=[x])
    """)
    dt, rc, _, err = _interrupt_and_time(code, {"MINPY_ENGINE_MAX_INFLIGHT": "70"})
    assert "KeyboardInterrupt" in err and rc != 0
    assert dt < 2.0, f"exit took {dt:.1f} s after SIGINT"


def test_interrupted_values_raise_when_read():
    code = CHAIN + textwrap.dedent("""
        try:
            mp.waitall()
        except KeyboardInterrupt:
            pass
        for _ in range(2):
            try:
                x.asnumpy()
            except Exception as e:
                print(type(e).__name__, e)
            else:
                print("read a value")
        y = mp.zeros(4)                 # the engine still works
        async_work.push(lambda: y._data.fill(3.0), writes=[y])
        print("after", y.asnumpy()[0])
    """)
    dt, rc, out, err = _interrupt_and_time(code)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 3 and lines[2] == "after 3.0", out
    for line in lines[:2]:
        assert line.startswith("EngineCancelled") and "cancelled" in line, out
    assert dt < 2.0


# The kernel may hand a process's SIGINT to any thread that does not block it. Python
# then runs the handler in the main thread only when that thread next runs bytecode; a
# main thread blocked in a lock wait is not woken (no EINTR reaches it). On the GPU
# machine, with CuPy (and CUDA's threads) loaded, Ctrl-C during waitall took the whole
# chain (12.0 s), and a throttled push until the engine's low-water wake-up (7.1 s).
# Here the main thread blocks SIGINT so that a helper thread takes it.
ELSEWHERE = textwrap.dedent("""
    import signal, threading, time
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
""")


@pytest.mark.parametrize("wait", ["waitall", "read", "throttled"])
def test_sigint_taken_by_another_thread_still_interrupts_the_wait(wait):
    env = {"MINPY_ENGINE_MAX_INFLIGHT": "70"} if wait == "throttled" else None
    code = ELSEWHERE + CHAIN + {
        "waitall": "mp.waitall()\n",
        "read": "x.asnumpy()\n",
        "throttled": "for i in range(200):\n"
                     "    async_work.push(lambda: time.sleep(0.2), writes=[x])\n"}[wait]
    dt, rc, _, err = _interrupt_and_time(code, env)
    assert "KeyboardInterrupt" in err and rc != 0, err
    assert dt < 2.0, f"exit took {dt:.1f} s after SIGINT"


def test_uncaught_error_at_exit_does_not_drain_the_backlog():
    code = CHAIN + "raise SystemError('script failed')\n"
    t0 = time.monotonic()
    out = run_script(code)
    assert "script failed" in out.stderr
    assert time.monotonic() - t0 < 10.0        # the chain alone is 12 s


def test_normal_exit_still_finishes_pushed_work():
    code = textwrap.dedent("""
        import time
        import minpy as mp
        from minpy.core import async_work
        x = mp.zeros(4)
        for i in range(3):
            async_work.push(lambda i=i: (time.sleep(0.05), print("ran", i, flush=True)),
                            writes=[x])
    """)
    out = run_script(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ran", "0", "ran", "1", "ran", "2"]


def test_cancel_pending_in_process():
    eng = minpy_engine.get_engine()
    x = mp.zeros(4)
    y = mp.zeros(4)
    gate = threading.Event()
    async_work.push(gate.wait, writes=[mp.zeros(1)], name="gate")     # holds the worker
    async_work.push(lambda: x._data.fill(1.0), writes=[x], name="fill_x")
    async_work.push(lambda: y._data.fill(2.0), reads=[x], writes=[y], name="copy_y")
    eng.cancel_pending()
    gate.set()
    for arr in (x, y):                  # y's op reads x: it inherits x's cancellation
        for _ in range(2):
            with pytest.raises(EngineCancelled, match="'fill_x' was cancelled"):
                arr.wait_to_read()
    mp.waitall()                        # a cancellation is no error of the program
    async_work.push(lambda: x._data.fill(5.0), writes=[x])             # a full rewrite
    assert x.asnumpy()[0] == 5.0


# ------------------------------------------------------------ 4. numpy error state
@pytest.mark.cpu_only        # async mode pushes CPU ufunc calls only
def test_errstate_raise_reaches_pushed_ops():
    x = mp.array(numpy.ones(N))
    with mp.async_mode():
        with numpy.errstate(all="raise"):
            z = x / 0.0
        assert z._var is not None       # pushed, not run inline
        with pytest.raises(FloatingPointError, match="divide by zero"):
            z.wait_to_read()
        with pytest.raises(FloatingPointError):
            z.asnumpy()
        with numpy.errstate(all="ignore"):
            w = x / 0.0                 # ignore: inf, as eager
        assert float(w[0]) == numpy.inf


@pytest.mark.cpu_only        # async mode pushes CPU ufunc calls only
def test_errstate_raise_surfaces_at_waitall():
    x = mp.array(numpy.ones(N))
    with mp.async_mode():
        with numpy.errstate(invalid="raise"):
            z = x * numpy.inf - numpy.inf
        with pytest.raises(FloatingPointError, match="invalid"):
            mp.waitall()
        with pytest.raises(FloatingPointError):
            float(z[0])


# ------------------------------------------------------------ 5. failed values stay failed
@pytest.mark.cpu_only        # async mode pushes CPU ufunc calls only
def test_failed_output_raises_on_every_read():
    x = mp.array(numpy.ones(N))
    with mp.async_mode():
        with numpy.errstate(divide="raise"):
            z = x / 0.0
        for _ in range(2):
            with pytest.raises(FloatingPointError):
                z.asnumpy()
        with pytest.raises(FloatingPointError):
            repr(z)
        with pytest.raises(FloatingPointError):
            mp.sum(z)                   # an eager op reading it
        y = z + x                       # pushed: skipped, inherits the error
        with pytest.raises(FloatingPointError):
            y.wait_to_read()
        mp.waitall()                    # each error reaches waitall once: already seen


def test_failed_output_raises_through_views_made_before():
    x = mp.zeros(N)
    v = x[::2]

    def boom():
        raise ValueError("kaput")
    async_work.push(boom, writes=[x], name="boom")
    for _ in range(2):
        with pytest.raises(ValueError, match="kaput"):
            v.asnumpy()
        with pytest.raises(ValueError, match="kaput"):
            x.wait_to_read()


def test_a_successful_rewrite_clears_the_error():
    x = mp.zeros(8)

    def boom():
        raise ValueError("kaput")
    async_work.push(boom, writes=[x])
    with pytest.raises(ValueError):
        x.wait_to_read()
    async_work.push(lambda: x._data.fill(4.0), writes=[x])
    x.wait_to_read()
    assert float(mp.sum(x)) == 32.0


def test_repeated_raises_do_not_grow_the_traceback():
    x = mp.zeros(8)

    def boom():
        raise ValueError("kaput")
    async_work.push(boom, writes=[x])
    depths = []
    for _ in range(3):
        try:
            x.wait_to_read()
        except ValueError as e:
            tb, n = e.__traceback__, 0
            while tb is not None:
                tb, n = tb.tb_next, n + 1
            depths.append(n)
    assert len(depths) == 3 and depths[0] == depths[1] == depths[2]
