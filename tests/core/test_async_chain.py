"""Async mode runs the third and later links of a dependent chain inline (issue 29):
same results and errors as eager, and independent work is still pushed."""
import numpy
import pytest

import minpy as mp
import minpy.engine as minpy_engine
from minpy.core import async_work

pytestmark = pytest.mark.cpu_only       # async mode pushes CPU ufunc calls only

N = 300                                  # 90000 elements: above ASYNC_MIN_SIZE


@pytest.fixture
def pushes(monkeypatch):
    """The names of the ops async mode pushes to the engine."""
    seen = []
    push = minpy_engine.push

    def counting(fn, *args, **kwargs):
        seen.append(kwargs.get("name"))
        return push(fn, *args, **kwargs)
    monkeypatch.setattr(minpy_engine, "push", counting)
    monkeypatch.setattr(async_work, "_last", None)
    monkeypatch.setattr(async_work, "_links", 0)
    return seen


def chain(x, steps):
    for _ in range(steps):
        x = x * 1.5 - 0.25
    return x


def test_a_dependent_chain_pushes_two_links_and_runs_the_rest_inline(pushes):
    x = mp.ones((N, N), dtype=mp.float32)
    want = chain(x, 4).asnumpy()
    with mp.async_mode():
        got = chain(x, 4)
        assert len(pushes) == 2                 # of 8 links
        assert got._var is None                 # the last one ran inline
        numpy.testing.assert_array_equal(got.asnumpy(), want)


def test_interleaved_chains_and_the_abcd_program_are_all_pushed(pushes):
    x = mp.ones((N, N), dtype=mp.float32)
    with mp.async_mode():
        a, b = x, x * 2                         # 1 push
        for _ in range(3):
            a = a + 1.0
            b = b + 1.0
        A = mp.ones((N, N)) * 2                 # 1 push
        C = A + 2
        B = A + 1
        D = B * C
        assert len(pushes) == 1 + 6 + 1 + 3
        assert D._var is not None
        numpy.testing.assert_array_equal(a.asnumpy(), x.asnumpy() + 3)
        numpy.testing.assert_array_equal(b.asnumpy(), x.asnumpy() * 2 + 3)
        numpy.testing.assert_array_equal(D.asnumpy(), numpy.full((N, N), 12.0))


def test_an_inline_link_raises_what_eager_raises(pushes):
    x = mp.ones((N, N))
    with pytest.raises(ValueError) as eager:
        numpy.ones((N, N)) + numpy.ones((3, 3))  # what async mode's eager call raises
    with mp.async_mode():
        with pytest.raises(ValueError) as inline:
            (x * 2 + 1) + mp.ones((3, 3))        # third link: inline
        assert str(inline.value) == str(eager.value)
        with numpy.errstate(divide="raise"):
            with pytest.raises(FloatingPointError):
                (x * 2 + 1) / 0.0
        y = (x * 2 + 1) * 2                      # still usable
        assert float(y[0, 0]) == 6.0


def test_an_inline_link_reraises_the_error_of_a_pushed_one(pushes):
    x = mp.ones((N, N))

    def boom():
        raise RuntimeError("kaput")
    with mp.async_mode():
        y = x * 2
        async_work.push(boom, writes=[y], name="boom")
        z = y + 1                                # second link: pushed, skipped
        with pytest.raises(RuntimeError, match="kaput"):
            z * 3                                # third link: inline, waits for z
        with pytest.raises(RuntimeError, match="kaput"):
            z.wait_to_read()
