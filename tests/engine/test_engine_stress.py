"""Random programs: the threaded engine must agree with the naive engine and
with a plain sequential interpretation, values *and* errors.

A program is a list of ops on ``n`` vars.  Var ``i`` holds a Python list (even
i) or a small int64 numpy array (odd i).  An op folds the values it reads into
a number ``s`` and applies a non-commutative update with ``s`` to each var it
writes, so any reordering of conflicting ops changes the result.  Ops yield
the GIL between reading and writing (and midway through array updates) to
invite races.  Some ops raise; ``wait`` ops call ``wait_for`` mid-program.
"""
import faulthandler
import random
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from minpy.engine import NaiveEngine, ThreadedEngine

P = (1 << 61) - 1


@pytest.fixture(autouse=True)
def deadlock_watchdog():
    """A scheduling bug shows up as a hang: dump all threads and exit."""
    faulthandler.dump_traceback_later(300, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


class OpFailed(Exception):
    def __init__(self, index):
        super().__init__(index)
        self.index = index


def initial_state(n):
    return [[i + 1] if i % 2 == 0 else np.full(3, i, dtype=np.int64) for i in range(n)]


def digest(x):
    if isinstance(x, list):
        return (x[-1] * 31 + len(x)) % P
    return int(x.sum()) % P


def apply_op(state, op):
    index, reads, writes, salt, fails = op[:5]
    s = salt
    for k, r in enumerate(reads):
        s = (s * 1000003 + digest(state[r]) + k) % P
    if salt % 4 == 0:
        time.sleep(0)
    if fails:
        raise OpFailed(index)
    for k, w in enumerate(writes):
        x = state[w]
        if isinstance(x, list):
            x.append((x[-1] * 7 + s + k) % P)
        else:
            x *= 3
            if salt % 3 == 0:
                time.sleep(0)
            x += (s + k) % 1000


def normalize(reads, writes):
    writes = tuple(dict.fromkeys(writes))
    return tuple(r for r in dict.fromkeys(reads) if r not in writes), writes


def make_op(index, reads, writes, salt, fails, device=None):
    reads, writes = normalize(reads, writes)
    return (index, reads, writes, salt, fails, device)


def reference(n, program, state=None):
    """Sequential interpretation, including the engine's error rules: a failed var
    poisons every op reading it, and an op writing it while its error is unseen;
    every wait on it raises; a successful write clears it."""
    state = initial_state(n) if state is None else state
    err, seen, failed, waits = [None] * n, set(), [], []
    for op in program:
        if op[0] == "wait":
            rec = err[op[1]]
            waits.append(rec)
            seen.add(rec)
            continue
        index, reads, writes = op[:3]
        rec = next((err[v] for v in reads if err[v] is not None), None)
        if rec is None:
            rec = next((err[v] for v in writes
                        if err[v] is not None and err[v] not in seen), None)
        if rec is None:
            try:
                apply_op(state, op)
            except OpFailed:
                rec = index
                failed.append(index)
        for w in writes:
            err[w] = rec
    return state, err, seen, failed, waits


def run_engine(engine, n, program, vs, state, waits):
    for op in program:
        if op[0] == "wait":
            waits.append(wait_index(engine, vs[op[1]]))
            continue
        engine.push(lambda op=op: apply_op(state, op), [vs[r] for r in op[1]],
                    [vs[w] for w in op[2]], name=f"op{op[0]}", device=op[5])


def wait_index(engine, var):
    try:
        engine.wait_for(var)
    except OpFailed as e:
        return e.index
    return None


def finish(engine, vs):
    """Per-var errors (in var order), then the leftover errors of waitall."""
    per_var = [wait_index(engine, v) for v in vs]
    rest = set()
    while True:
        try:
            engine.waitall()
            return per_var, rest
        except OpFailed as e:
            rest.add(e.index)


def expected_finish(err, seen, failed):
    per_var = []
    for rec in err:
        per_var.append(rec)
        seen.add(rec)
    return per_var, set(failed) - seen


def assert_same_state(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            assert x == y
        else:
            np.testing.assert_array_equal(x, y)


def execute(engine, n, program):
    vs = [engine.new_var(f"v{i}") for i in range(n)]
    state, waits = initial_state(n), []
    with engine:
        run_engine(engine, n, program, vs, state, waits)
        per_var, rest = finish(engine, vs)
    return state, waits, per_var, rest


def check_program(n, program, workers):
    ref_state, err, seen, failed, ref_waits = reference(n, program)
    expected = (ref_waits,) + expected_finish(err, seen, failed)
    for engine in (NaiveEngine(), ThreadedEngine(num_cpu_workers=workers)):
        state, waits, per_var, rest = execute(engine, n, program)
        assert_same_state(state, ref_state)
        assert (waits, per_var, rest) == expected


def random_program(rng, n, n_ops, p_fail, max_rw, p_wait, devices):
    program = []
    for i in range(n_ops):
        if rng.random() < p_wait:
            program.append(("wait", rng.randrange(n)))
            continue
        reads = rng.sample(range(n), rng.randint(0, min(max_rw, n)))
        writes = rng.sample(range(n), rng.randint(0, min(max_rw, n)))
        program.append(make_op(i, reads, writes, rng.randrange(1 << 30),
                               rng.random() < p_fail, rng.choice(devices)))
    return program


# ~ thousands of ops per example, generated from a hypothesis-drawn seed.
@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 2**32 - 1),
       n_ops=st.integers(500, 3000), p_fail=st.sampled_from([0.0, 0.005, 0.03]),
       max_rw=st.integers(1, 5), workers=st.sampled_from([2, 4, 1]),
       gpu=st.booleans())
def test_random_programs(n, seed, n_ops, p_fail, max_rw, workers, gpu):
    rng = random.Random(seed)
    p_wait = 0.01 if p_fail == 0 else 0.0   # mid-run waits race with errors
    devices = [None, ("gpu", 0)] if gpu else [None]
    program = random_program(rng, n, n_ops, p_fail, max_rw, p_wait, devices)
    check_program(n, program, workers)


# Small programs drawn op by op, so failures shrink to a readable case.
@st.composite
def small_programs(draw):
    n = draw(st.integers(1, 6))
    var = st.integers(0, n - 1)
    raw = draw(st.lists(st.tuples(st.lists(var, max_size=3), st.lists(var, max_size=3),
                                  st.integers(0, 1 << 20), st.booleans(),
                                  st.integers(0, 9)), max_size=40))
    program = []
    for i, (r, w, salt, fails, kind) in enumerate(raw):
        if kind == 0:
            program.append(("wait", r[0] if r else 0))
        else:
            program.append(make_op(i, r, w, salt, fails and kind == 1))
    if any(op[0] != "wait" and op[4] for op in program):
        program = [op for op in program if op[0] != "wait"]
    return n, program


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(small_programs(), st.sampled_from([2, 3, 1]))
def test_small_programs(case, workers):
    n, program = case
    check_program(n, program, workers)


@settings(max_examples=8, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**32 - 1), n_threads=st.integers(2, 4),
       n_ops=st.integers(100, 800), p_fail=st.sampled_from([0.0, 0.01]))
def test_concurrent_pushers(seed, n_threads, n_ops, p_fail):
    """Each thread owns disjoint vars; all read a shared read-only set."""
    rng = random.Random(seed)
    n_shared, n_own = 4, 6
    n = n_shared + n_threads * n_own
    programs = []
    for t in range(n_threads):
        own = list(range(n_shared + t * n_own, n_shared + (t + 1) * n_own))
        prog = []
        for i in range(n_ops):
            reads = rng.sample(own, rng.randint(0, 3)) + rng.sample(range(n_shared), rng.randint(0, 2))
            writes = rng.sample(own, rng.randint(0, 3))
            prog.append(make_op(t * n_ops + i, reads, writes, rng.randrange(1 << 30),
                                rng.random() < p_fail))
        programs.append(prog)
    # Threads touch disjoint writable vars, so the sequential reference can
    # simply run the programs one after another.
    ref_state, err, seen, failed, _ = reference(n, [op for p in programs for op in p])
    expected = expected_finish(err, seen, failed)

    engine = ThreadedEngine(num_cpu_workers=2)
    vs = [engine.new_var() for _ in range(n)]
    state = initial_state(n)
    barrier = threading.Barrier(n_threads)

    def pusher(prog):
        barrier.wait()
        run_engine(engine, n, prog, vs, state, [])
    threads = [threading.Thread(target=pusher, args=(p,)) for p in programs]
    with engine:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = finish(engine, vs)
    assert_same_state(state, ref_state)
    assert got == expected
