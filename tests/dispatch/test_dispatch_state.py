"""``minpy.dispatch.state``: named transitions, per-thread tape flags."""
import threading

import numpy
import pytest

import minpy as mp
from minpy.dispatch import state


def _flags():
    return (state.process.fast, state.process.eager, state.process.cpu_only, state.thread_flags().depth,
            state.thread_flags().one_tape is not None)


@pytest.mark.cpu_only        # asserts the no-GPU flag values
def test_transitions_leave_what_a_recomputation_gives():
    seen = []

    def check():
        before = _flags()
        state.recompute()
        seen.append(before == _flags())
    prev = mp.set_policy("only_cpu")
    try:
        mp.grad(lambda x: (check(), mp.sum(x * x))[1])(mp.ones(3))
    finally:
        mp.set_policy(prev)
    with mp.async_mode():
        check()
        mp.grad(lambda x: (check(), mp.sum(x * x))[1])(mp.ones(3))
    check()
    assert seen == [True] * 4
    assert _flags() == (True, True, True, 0, True)
    assert state.thread_flags().one_tape is state.NO_TAPE


@pytest.mark.cpu_only        # the NumPy shortcuts exist without a GPU only
def test_a_tape_in_one_thread_leaves_another_thread_its_shortcuts():
    inside, release = threading.Event(), threading.Event()
    results = {}

    def recorder():
        def f(x):
            inside.set()
            release.wait(10)
            return mp.sum(mp.sin(x))
        results["a"] = mp.grad(f)(mp.array([0.0, 1.0]))

    t = threading.Thread(target=recorder)
    t.start()
    try:
        assert inside.wait(10)
        # another thread's tape is open: no process-wide fast path, but this thread
        # records nothing and its own grad gets the one-tape shortcut
        assert not state.process.fast and state.thread_flags().depth == 0
        plain = mp.array([1.0, 2.0]) * 3
        assert plain._node is None
        shortcut = []

        def g(x):
            shortcut.append(state.thread_flags().one_tape is not None)
            return mp.sum(x ** 3)
        gb = mp.grad(g)(mp.array([1.0, 2.0]))
        assert shortcut == [True]
        numpy.testing.assert_allclose(gb.asnumpy(), [3.0, 12.0])
    finally:
        release.set()
        t.join(10)
    numpy.testing.assert_allclose(results["a"].asnumpy(), numpy.cos([0.0, 1.0]))
    assert state.process.fast and state.process.tapes == 0


def test_concurrent_grads_are_right():
    x = numpy.linspace(-1, 1, 7)
    out = [None] * 4

    def work(k):
        for _ in range(30):
            out[k] = mp.grad(lambda v: mp.sum(mp.tanh(v * (k + 1)) ** 2))(mp.array(x))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for k in range(4):
        a = k + 1
        want = 2 * numpy.tanh(a * x) * (1 - numpy.tanh(a * x) ** 2) * a
        numpy.testing.assert_allclose(out[k].asnumpy(), want, rtol=1e-12)
