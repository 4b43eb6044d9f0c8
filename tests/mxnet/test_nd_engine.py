"""mx.nd's operators on the dependency engine (async mode), as MXNet pushed them.

Each test holds the engine with a gate op that writes an input, so that what
runs when is decided by the test, not by thread timing.
"""
import threading

import numpy
import pytest

import minpy
import minpy.mxnet as mx
from minpy import engine
from minpy.core import async_work


class _Gate:
    """An engine op writing ``arr`` that blocks until :meth:`open` (optionally failing)."""

    def __init__(self, arr, value=None, error=None):
        self.event = threading.Event()
        self.arr, self.value, self.error = arr, value, error
        async_work.push(self._run, writes=[arr], name="gate")

    def _run(self):
        assert self.event.wait(10)
        if self.error is not None:
            raise self.error
        if self.value is not None:
            self.arr._data[...] = self.value

    def open(self):
        self.event.set()


@pytest.fixture
def async_on():
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        pytest.skip("needs the threaded engine")
    with minpy.async_mode(), minpy.cpu():      # host work is what the engine queues
        yield


def _fc_inputs():
    rs = numpy.random.RandomState(0)
    return (mx.nd.array(rs.rand(4, 3)), mx.nd.array(rs.rand(5, 3)),
            mx.nd.array(rs.rand(5)))


def test_op_is_pushed_behind_the_write_of_its_input(async_on):
    x, w, b = _fc_inputs()
    gate = _Gate(x, value=2.0)
    y = mx.nd.FullyConnected(x, w, b, num_hidden=5)      # returns at once: queued
    assert engine.num_pending() >= 2
    gate.open()
    want = numpy.full((4, 3), 2.0, numpy.float32) @ w.asnumpy().T + b.asnumpy()
    numpy.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)


def test_eager_write_waits_for_the_pushed_read(async_on):
    x, w, b = _fc_inputs()
    before = x.asnumpy().copy()
    gate = _Gate(w)                                       # holds the op that reads x
    y = mx.nd.FullyConnected(x, w, b, num_hidden=5)
    threading.Timer(0.05, gate.open).start()
    x += 100                          # must not run before the FC has read x
    want = before @ w.asnumpy().T + b.asnumpy()
    numpy.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    numpy.testing.assert_allclose(x.asnumpy(), before + 100, rtol=1e-6)


def test_error_in_pushed_work_surfaces_at_the_next_wait(async_on):
    x, w, b = _fc_inputs()
    gate = _Gate(x, error=ValueError("gate failed"))
    y = mx.nd.FullyConnected(x, w, b, num_hidden=5)
    z = mx.nd.relu(y)
    gate.open()
    with pytest.raises(ValueError, match="gate failed"):
        mx.nd.waitall()                       # the first wait raises it ...
    with pytest.raises(ValueError, match="gate failed"):
        z.asnumpy()                           # ... and every read of what it poisoned
    with pytest.raises(ValueError, match="gate failed"):
        y.wait_to_read()


def test_shape_errors_are_raised_at_the_call(async_on):
    x, w, b = _fc_inputs()
    with pytest.raises(mx.MXNetError, match="FullyConnected"):
        mx.nd.FullyConnected(mx.nd.ones((2, 7)), w, b, num_hidden=5)


def _dropouts(n):
    mx.random.seed(3)
    with mx.autograd.train_mode():
        outs = [mx.nd.Dropout(mx.nd.ones((64,)), p=0.5) for _ in range(n)]
    extra = minpy.random.rand(3)
    return [o.asnumpy() for o in outs], numpy.asarray(extra)


def test_draws_keep_program_order_on_the_engine():
    with minpy.cpu():
        _check_draws_keep_program_order()


def _check_draws_keep_program_order():
    want_masks, want_extra = _dropouts(4)                 # inline
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        pytest.skip("needs the threaded engine")
    with minpy.async_mode():
        x = mx.nd.ones((64,))
        gate = _Gate(x)
        mx.random.seed(3)
        with mx.autograd.train_mode():
            outs = [mx.nd.Dropout(x, p=0.5) for _ in range(4)]
        threading.Timer(0.05, gate.open).start()
        extra = minpy.random.rand(3)      # waits for the pushed draws before drawing
        got = [o.asnumpy() for o in outs]
    for g, w in zip(got, want_masks):
        numpy.testing.assert_array_equal(g, w)
    numpy.testing.assert_array_equal(numpy.asarray(extra), want_extra)


def test_a_failed_draw_does_not_poison_later_draws(async_on):
    x = mx.nd.ones((8,))
    gate = _Gate(x, error=RuntimeError("upstream failed"))
    with mx.autograd.train_mode():
        y = mx.nd.Dropout(x, p=0.5)
    gate.open()
    with pytest.raises(RuntimeError, match="upstream failed"):
        y.asnumpy()
    assert minpy.random.rand(2).shape == (2,)             # the state itself is fine
    minpy.random.seed(0)


def test_same_values_pushed_or_inline():
    x, w, b = _fc_inputs()
    want = mx.nd.Activation(mx.nd.FullyConnected(x, w, b, num_hidden=5),
                            act_type="tanh").asnumpy()
    with minpy.async_mode():
        got = mx.nd.Activation(mx.nd.FullyConnected(x, w, b, num_hidden=5),
                               act_type="tanh").asnumpy()
    numpy.testing.assert_array_equal(got, want)


def test_batchnorm_moving_stats_written_by_the_pushed_op(async_on):
    rs = numpy.random.RandomState(1)
    data = mx.nd.array(rs.rand(6, 3))
    gamma, beta = mx.nd.ones(3), mx.nd.zeros(3)
    mean, var = mx.nd.zeros(3), mx.nd.ones(3)
    with mx.autograd.train_mode():
        mx.nd.BatchNorm(data, gamma, beta, mean, var, momentum=0.5, fix_gamma=False)
    want = 0.5 * data.asnumpy().mean(axis=0)
    numpy.testing.assert_allclose(mean.asnumpy(), want, rtol=1e-5)


def test_random_draws_are_queued_on_the_random_resource():
    with minpy.cpu():
        _check_random_draws_are_queued()


def _check_random_draws_are_queued():
    # the talk's "RNG as a resource": A and B both write the random state, so they are
    # drawn one after the other, in program order, while the caller goes on
    shape = (3, 4)
    mx.random.seed(11)
    want_a = mx.nd.uniform(shape, 10, -10).asnumpy()
    want_b = mx.nd.uniform(shape, 10, -10).asnumpy()
    want_n = mx.nd.random.normal(0, 1, shape=(5,)).asnumpy()
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        pytest.skip("needs the threaded engine")
    with minpy.async_mode():
        mx.random.seed(11)
        gate = threading.Event()
        engine.push(lambda: gate.wait(10), writes=[engine.GLOBAL_STATE], name="hold rng")
        A = mx.nd.uniform(shape, 10, -10)
        B = mx.nd.uniform(shape, 10, -10)
        assert engine.num_pending() >= 3          # queued behind the held random state
        gate.set()
        n = mx.nd.random.normal(0, 1, shape=(5,))
        got = A.asnumpy(), B.asnumpy(), n.asnumpy()
    numpy.testing.assert_array_equal(got[0], want_a)
    numpy.testing.assert_array_equal(got[1], want_b)
    numpy.testing.assert_array_equal(got[2], want_n)
    assert got[0].min() >= -10 and got[0].max() < 10
