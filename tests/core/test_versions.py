"""In-place writes against what a tape saved, and the per-buffer write versions.

A write while a tape records is checked against the buffers the tape saved
for the backward pass: through a per-tape index (buffer root -> the nodes
that saved it), so that a write costs O(1), not a walk over the tape, and a
traced write re-points only the nodes that saved its target. Device copies
are valid for one write version of their buffer (:mod:`minpy.dispatch.versions`).
The cost tests count visits of the tape's node list (no timings).
"""
import numpy
import pytest

import minpy as mp
from minpy.core import saved, tape as tape_mod
from minpy.dispatch import versions
from minpy.nn import optim

from _standin import standin_gpu  # noqa: F401
from _dispatch_checks import GPU0, Copies


class CountingList(list):
    """A tape's node list that counts the nodes read out of it (iteration, indexing)."""

    visits = 0

    def __iter__(self):
        for node in list.__iter__(self):
            CountingList.visits += 1
            yield node

    def __getitem__(self, k):
        r = list.__getitem__(self, k)
        CountingList.visits += len(r) if isinstance(k, slice) else 1
        return r


def _count_nodes():
    """Make the innermost tape's node list count visits; returns the list."""
    tp = tape_mod.active_tapes()[-1]
    tp.nodes = CountingList(tp.nodes)
    CountingList.visits = 0
    return tp.nodes


# ------------------------------------------------------------ refused writes
@pytest.mark.parametrize("write", [
    lambda c: c.__setitem__(0, 100.0),
    lambda c: c.__iadd__(1.0),
    lambda c: mp.multiply(c, 2.0, out=c),
    lambda c: c.fill(0.0),
    lambda c: mp.add.at(c, [1], 1.0),
    lambda c: mp.copyto(c, 7.0),
    lambda c: c[1:].__setitem__(0, 5.0),          # a view of the saved array
], ids=["setitem", "iadd", "out", "fill", "ufunc_at", "copyto", "view"])
def test_write_into_a_saved_buffer_is_refused(write):
    c = mp.array([3.0, 4.0])

    def f(x):
        y = x * c                   # multiply saved c for its backward pass
        write(c)
        return mp.sum(y)
    with pytest.raises(RuntimeError, match="into an array that the tape saved for the "
                                           "backward pass of multiply"):
        mp.grad(f)(mp.array([1.0, 2.0]))
    assert c.asnumpy().tolist() == [3.0, 4.0]      # refused before writing


def test_views_and_bases_share_the_saved_buffer():
    base = mp.array([1.0, 2.0, 3.0, 4.0])
    early = base[2:]                # a view taken before the tape saved the buffer

    def saves_a_view(x):
        y = x * base[:2]            # the tape saves a view: the whole buffer is kept
        base[3] = 0.0
        return mp.sum(y)

    def writes_an_early_view(x):
        y = x * base[:2]
        early[0] = 9.0
        return mp.sum(y)
    for f in (saves_a_view, writes_an_early_view):
        with pytest.raises(RuntimeError, match="saved for the backward pass"):
            mp.grad(f)(mp.array([1.0, 2.0]))
    assert base.asnumpy().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_unsaved_buffers_are_written_and_the_gradient_is_right():
    buf = mp.zeros(3)

    def f(x):
        y = x * x
        buf[1] = 5.0                # nothing saved buf: written as NumPy would
        buf[...] += 1.0
        return mp.sum(y)
    g = mp.grad(f)(mp.array([1.0, 2.0, 3.0]))
    assert g.asnumpy().tolist() == [2.0, 4.0, 6.0]
    assert buf.asnumpy().tolist() == [1.0, 6.0, 1.0]


def test_nested_tapes_refuse_a_write_saved_by_the_outer_tape():
    c = mp.array([3.0, 4.0])

    def inner(x):
        return mp.sum(x * x)

    def outer(x):
        y = mp.sum(x * c)           # the outer tape saved c
        mp.grad(inner)(x)           # an inner tape records and closes
        c[0] = 1.0
        return y
    with pytest.raises(RuntimeError, match="saved for the backward pass of multiply"):
        mp.grad(outer)(mp.array([1.0, 2.0]))


def test_optimizer_step_checks_the_saved_buffers():
    w = mp.array(numpy.ones(3))
    opt = optim.SGD()

    def f(x):
        y = mp.sum(x * w)
        opt.update("w", w, numpy.ones(3))
        return y
    with pytest.raises(RuntimeError, match="parameter 'w'.*an optimizer's in-place step.*"
                                           "saved for the backward pass of multiply"):
        mp.grad(f)(mp.array(numpy.ones(3)))
    numpy.testing.assert_array_equal(w.asnumpy(), numpy.ones(3))


# ------------------------------------------------------------ the cost of a write
N = 300
W = 100


def test_untraced_writes_do_not_walk_the_tape():
    buf = mp.zeros(W)

    def f(x):
        y = x
        for _ in range(N):
            y = y * 1.0
        nodes = _count_nodes()
        for i in range(W):
            buf[i] = 1.0
        assert len(nodes) == N
        # each node is indexed once: O(N + W) for the W writes, not O(N * W)
        assert CountingList.visits <= 2 * N, CountingList.visits
        return mp.sum(y)
    assert mp.grad(f)(mp.array([2.0])).asnumpy().tolist() == [1.0]
    assert buf.asnumpy().sum() == W


def test_traced_writes_repoint_only_the_nodes_that_saved_the_target():
    c = mp.array(numpy.arange(4.0))

    def f(x):
        z = x
        for _ in range(N):          # N nodes that never saw c
            z = z * 1.0
        y = x * c                   # the one node that saved c
        nodes = _count_nodes()
        for i in range(W):          # a traced write into c, W times: it re-points y's
            c[i % 4] = x[i % 4] * 0.0   # node (and those of the earlier writes) only
        assert CountingList.visits <= 2 * N + 10 * W, CountingList.visits
        assert len(nodes) > N
        return mp.sum(y) + mp.sum(z) + mp.sum(c)
    x = mp.array([1.0, 1.0, 1.0, 1.0])
    g = mp.grad(f)(x)
    # y saw c's old values (0, 1, 2, 3); z adds 1; c ends as x * 0 (adds 0)
    assert g.asnumpy().tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_traced_write_keeps_the_saved_values_of_every_node():
    def f(x):
        y = x * 1.0
        a = y * y                   # saves y (twice)
        y[0] = 10.0                 # rebinds y; a's node keeps the old buffer
        b = y * x                   # saves the new y
        y[1] = 20.0
        return mp.sum(a) + mp.sum(b)
    x = mp.array([1.0, 2.0, 3.0])
    xn = numpy.array([1.0, 2.0, 3.0])
    y1 = numpy.array([10.0, 2.0, 3.0])
    expected = 2 * xn + y1 + xn * numpy.array([0.0, 1.0, 1.0])     # [12, 8, 12]
    numpy.testing.assert_allclose(mp.grad(f)(x).asnumpy(), expected)


# ------------------------------------------------------------ versions and device copies
def test_a_write_bumps_the_version_of_a_watched_buffer():
    x = mp.array([1.0, 2.0, 3.0])
    v = x[1:]
    e0 = versions.watch(x._data)
    v[0] = 7.0                      # through a view: the same root buffer
    assert versions.epoch(x._data) == e0 + 1
    x += 1.0
    assert versions.epoch(v._data) == e0 + 2


def _under_a_tape(write):
    def f(y):
        write()                     # an untraced write while a tape records
        return mp.sum(y * y)
    mp.grad(f)(mp.array([1.0]))


WRITE_PATHS = {
    "setitem": lambda x: x.__setitem__(0, 9.0),
    "iadd": lambda x: x.__iadd__(1.0),
    "out": lambda x: mp.add(x, 1.0, out=x),
    "fill": lambda x: x.fill(2.0),
    "ufunc_at": lambda x: mp.add.at(x, [0, 0], 1.0),
    "put": lambda x: mp.put(x, [1], 5.0),
    "copyto": lambda x: mp.copyto(x, 3.0),
    "sort": lambda x: x.sort(),
    "view": lambda x: x[1:].__setitem__(0, 4.0),
    "optimizer": lambda x: optim.SGD(learning_rate=1.0).step({"w": x}, {"w": mp.ones(3)}),
    "under_a_tape": lambda x: _under_a_tape(lambda: x.__setitem__(2, 1.0)),
}


@pytest.mark.parametrize("write", list(WRITE_PATHS.values()), ids=list(WRITE_PATHS))
def test_every_write_path_bumps_the_version(write):
    x = mp.array([3.0, 1.0, 2.0])
    e0 = versions.watch(x._data)
    write(x)
    assert versions.epoch(x._data) > e0


def test_device_copy_is_invalidated_by_a_version_bump(standin_gpu):
    x = mp.array([1.0, 2.0, 3.0], ctx=GPU0)
    c = Copies(standin_gpu)
    with mp.policy("only_cpu"):
        assert (x * 1.0).asnumpy().tolist() == [1.0, 2.0, 3.0]
        c.expect(d2h=1)
        x * 1.0                     # the cached host copy serves
        c.expect()
        versions.bump(x._data)      # any write recorded on the buffer ...
        x * 1.0
        c.expect(d2h=1)             # ... makes the copy stale
        optim.SGD(learning_rate=1.0).step({"w": x}, {"w": mp.array([1.0, 1.0, 1.0],
                                                                   ctx=GPU0)})
        assert (x * 1.0).asnumpy().tolist() == [0.0, 1.0, 2.0]   # the step bumped it

    def f(y):
        x[0] = 5.0                  # an untraced write while a tape records
        return mp.sum(y * y)
    mp.grad(f)(mp.array([1.0]))
    with mp.policy("only_cpu"):
        assert (x * 1.0).asnumpy().tolist() == [5.0, 1.0, 2.0]


@pytest.mark.parametrize("write", [lambda c: c.__setitem__(0, 100.0),
                                   lambda c: c[1:].__iadd__(1.0)], ids=["setitem", "view"])
def test_a_sealed_tape_refuses_its_backward_pass_after_a_write(write):
    c = mp.array([3.0, 4.0])
    tp = tape_mod.new_tape()        # a tape whose backward pass runs after it closed
    try:
        x = tape_mod.leaf(mp.array([1.0, 2.0]), tp)
        x * c
    finally:
        tape_mod.close_tape(tp)
    saved.seal(tp)
    saved.check_sealed(tp, "vjp")   # nothing written since: passes
    write(c)
    with pytest.raises(RuntimeError, match="vjp: an array that the tape saved for the "
                                           "backward pass of multiply was written in place"):
        saved.check_sealed(tp, "vjp")


def test_write_between_make_vjp_and_vjp_is_refused():
    x, c = mp.array([1.0, 2.0]), mp.array([3.0, 4.0])
    vjp, _ = mp.make_vjp(lambda x: x * c)(x)
    c[0] = 100.0
    with pytest.raises(RuntimeError, match="saved for the backward pass"):
        vjp(mp.ones(2))
