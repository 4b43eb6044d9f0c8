"""Arrays on the dependency engine: async mode, waits, errors."""
import time

import numpy
import pytest

import minpy as mp
import minpy.engine as minpy_engine
from minpy.core import async_work as engine_bridge
from minpy.dispatch import state


def abcd(n):
    A = mp.ones((n, n)) * 2
    C = A + 2
    B = A + 1
    return A, B, C, B * C


@pytest.mark.cpu_only            # async mode pushes CPU ufunc calls only
def test_async_program_equals_eager():
    expected = [x.asnumpy().copy() for x in abcd(300)]
    with mp.async_mode():
        assert mp.is_async() and not state.process.fast
        got = abcd(300)
        assert got[3]._var is not None          # pushed, not run inline
        results = [x.asnumpy() for x in got]
    assert not mp.is_async() and state.process.fast
    for e, g in zip(expected, results):
        numpy.testing.assert_array_equal(e, g)


def test_eager_ops_see_pending_writes():
    with mp.async_mode():
        x = mp.ones((400, 400)) * 3.0           # pushed
        y = x + 1.0                             # pushed, reads x
        x += 1.0                                # eager in-place: waits for both
        assert float(y[0, 0]) == 4.0
        assert float(x[0, 0]) == 4.0
        assert float(mp.sum(y)) == 4.0 * 400 * 400


def test_error_in_pushed_work_surfaces_at_every_wait_until_rewritten():
    x = mp.zeros(4)

    def boom():
        raise ValueError("kaput")
    with mp.async_mode():
        engine_bridge.push(boom, writes=[x], name="boom")
        with pytest.raises(ValueError, match="kaput"):
            x + 1                              # the next eager op touching x
        with pytest.raises(ValueError, match="kaput"):
            x + 1                              # and the one after: x holds no value
        with pytest.raises(ValueError, match="kaput"):
            x[...] = 2.0                       # an eager write may be partial: refused too
        engine_bridge.push(lambda: x._data.fill(2.0), writes=[x])     # a pushed rewrite
        assert float(mp.sum(x)) == 8.0         # engine still usable


def test_wait_to_read_and_waitall_raise():
    x = mp.zeros(3)

    def boom():
        raise RuntimeError("late failure")
    engine_bridge.push(boom, writes=[x])
    for _ in range(2):                         # every read, not once
        with pytest.raises(RuntimeError, match="late failure"):
            x.wait_to_read()
    mp.waitall()                               # seen: waitall reports each error once
    y = mp.zeros(2)
    engine_bridge.push(boom, writes=[y])
    with pytest.raises(RuntimeError, match="late failure"):
        mp.waitall()
    mp.waitall()
    with pytest.raises(RuntimeError, match="late failure"):
        y.wait_to_read()


def test_pushed_write_is_visible_after_wait():
    x = mp.zeros(1000)
    src = mp.arange(1000.0)

    def fill():
        x._data[...] = src._data * 2
    engine_bridge.push(fill, reads=[src], writes=[x])
    numpy.testing.assert_array_equal(x.asnumpy(), numpy.arange(1000.0) * 2)


def test_small_calls_stay_eager_in_async_mode():
    with mp.async_mode():
        z = mp.ones(10) + 1
        assert z._var is None


@pytest.mark.parametrize("as_dict", [False, True])
def test_grad_in_async_mode_waits_for_pending_writes_to_its_arguments(as_dict):
    with mp.async_mode():
        x = mp.zeros(3)

        def slow():
            time.sleep(0.1)
            x._data[...] = 1.0
        minpy_engine.push(slow, writes=[engine_bridge.var_of(x)])
        if as_dict:
            g, loss = mp.grad_and_loss(lambda p: mp.sum(p["x"] * p["x"]))({"x": x})
            g = g["x"]
        else:
            g, loss = mp.grad_and_loss(lambda p: mp.sum(p * p))(x)
        assert float(loss) == 3.0
        numpy.testing.assert_array_equal(g.asnumpy(), [2.0, 2.0, 2.0])
