"""The benchmark scripts compute what their names say: the hand-written and the
tape-floor MLP gradients equal minpy's, and the timing helper times each
contender it is given."""
import os
import sys

import numpy
import pytest

import minpy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import bench_autograd as bench          # noqa: E402
from _timing import per_call_interleaved   # noqa: E402


@pytest.mark.parametrize("sizes", [(4, 20, 8, 3), (7, 5, 6, 4), (32, 784, 128, 10)])
def test_hand_and_tape_floor_gradients_match_minpy(sizes):
    params, x, y = bench.make_mlp(*sizes, seed=sum(sizes))
    g_hand, loss_hand = bench.numpy_mlp_grad(params, x, y)
    g_floor, loss_floor = bench.numpy_tape_floor(params, x, y)
    g_mp, loss_mp = minpy.grad_and_loss(lambda p, x, y: bench.mlp_loss(minpy, p, x, y))(
        [minpy.array(p) for p in params], minpy.array(x), minpy.array(y))
    numpy.testing.assert_allclose(loss_floor, loss_hand, rtol=1e-5)
    numpy.testing.assert_allclose(float(loss_mp), loss_hand, rtol=1e-5)
    for h, f, m, p in zip(g_hand, g_floor, g_mp, params):
        assert h.shape == f.shape == m.shape == p.shape
        numpy.testing.assert_allclose(f, h, rtol=1e-4, atol=1e-6)
        numpy.testing.assert_allclose(m.asnumpy(), h, rtol=1e-4, atol=1e-6)


def test_tape_floor_takes_the_relu_tie_branch():
    params, x, y = bench.make_mlp(4, 6, 5, 3, seed=1)
    params[0][:, 0] = 0.0                # hidden unit 0 is exactly 0: a tie at the relu
    g_hand, _ = bench.numpy_mlp_grad(params, x, y)
    g_floor, _ = bench.numpy_tape_floor(params, x, y)
    g_mp, _ = minpy.grad_and_loss(lambda p, x, y: bench.mlp_loss(minpy, p, x, y))(
        [minpy.array(p) for p in params], minpy.array(x), minpy.array(y))
    for f, m in zip(g_floor, g_mp):      # the floor is what the tape computes, ties included
        numpy.testing.assert_allclose(m.asnumpy(), f, rtol=1e-4, atol=1e-7)
    # the hand gradient gives the tie nothing, the tape half: they differ only at unit 0
    assert g_hand[1][0] == 0 and abs(g_floor[1][0]) > 1e-6
    numpy.testing.assert_allclose(g_floor[1][1:], g_hand[1][1:], rtol=1e-4, atol=1e-7)
    numpy.testing.assert_allclose(g_floor[0][:, 1:], g_hand[0][:, 1:], rtol=1e-4, atol=1e-7)


def test_interleaved_timer_times_every_contender():
    calls = {"a": 0, "b": 0}

    def a():
        calls["a"] += 1

    def b():
        calls["b"] += 1
        sum(range(200))
    t = per_call_interleaved({"a": a, "b": b}, min_time=0.01, rounds=3)
    assert set(t) == {"a", "b"} and calls["a"] > 3 and calls["b"] > 3
    assert 0 < t["a"] < t["b"]
