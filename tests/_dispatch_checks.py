"""Backend-agnostic dispatch checks, shared by test_dispatch.py (stand-in GPU)
and test_gpu_cupy.py (real CuPy).

Each ``check_*`` in ``PORTABLE`` takes the GPU backend (a StandinBackend, whose
own copy counters are then checked too, or None) and uses only minpy's public
API and ``minpy.dispatch.stats()``.
"""
import numbers
import pickle
import warnings

import numpy
import pytest

import minpy
from minpy.dispatch import backend_of, gpu_backend, stats, reset_stats

from _standin import StandinBackend

CPU, GPU0, GPU1 = minpy.cpu(0), minpy.gpu(0), minpy.gpu(1)

# ====================================================================== helpers
class Copies:
    """Copies since the last check, per ``stats()`` and (stand-in) the backend's counters.

    A d2d copy goes through the host on the stand-in, so its own counters see
    one d2h and one h2d for it.
    """

    def __init__(self, backend=None):
        self.backend = backend if isinstance(backend, StandinBackend) else None
        self._mark()

    def _stats(self):
        c = stats()["copies"]
        return {k: c.get(k, 0) for k in ("h2d", "d2h", "d2d")}

    def _mark(self):
        self._s = self._stats()
        self._b = None if self.backend is None else (self.backend.h2d, self.backend.d2h)

    def expect(self, h2d=0, d2h=0, d2d=0):
        now = self._stats()
        got = {k: now[k] - self._s[k] for k in now}
        assert got == {"h2d": h2d, "d2h": d2h, "d2d": d2d}
        if self.backend is not None:
            b = (self.backend.h2d - self._b[0], self.backend.d2h - self._b[1])
            assert b == (h2d + d2d, d2h + d2d), "stand-in counters disagree with stats()"
        self._mark()


def host(values, dtype=numpy.float64):
    return numpy.asarray(values, dtype=dtype)


def cpu_array(values, dtype=numpy.float64):
    """A minpy array on the CPU (a copy of ``values``)."""
    x = minpy.array(host(values, dtype))
    assert x.context == CPU
    return x


def gpu_array(values, dtype=numpy.float64, device=0):
    """A minpy array created on gpu(``device``) (one counted h2d copy)."""
    x = minpy.array(host(values, dtype), ctx=minpy.gpu(device))
    assert x.context == minpy.gpu(device)
    return x


def on_gpu(x, device=0):
    return x.context == minpy.gpu(device) and backend_of(x._data) is gpu_backend()


def need_gpus(n):
    if minpy.num_gpus() < n:
        pytest.skip(f"needs {n} GPUs")


# ====================================================================== portable checks
def check_first_use_copies_once_then_hits(b):
    x = cpu_array(numpy.arange(12.0).reshape(3, 4))
    c = Copies(b)
    y = x * 2
    c.expect(h2d=1)
    assert on_gpu(y)
    hits = stats()["cache_hits"].get("h2d", 0)
    z = minpy.exp(x) + x
    c.expect()
    assert stats()["cache_hits"]["h2d"] == hits + 2
    numpy.testing.assert_allclose(z.asnumpy(), numpy.exp(x.asnumpy()) + x.asnumpy())
    numpy.testing.assert_array_equal(y.asnumpy(), numpy.arange(12.0).reshape(3, 4) * 2)


def _mut_setitem(x):
    x[0] = 100.0


def _mut_inplace(x):
    x += 100.0


def _mut_out(x):
    minpy.add(x, 100.0, out=x)


def _mut_view_setitem(x):
    v = x[1:]
    v[0] = 100.0


def _mut_reshape_view(x):
    x.reshape(2, 2)[0, 0] = 100.0


def _mut_copyto(x):
    minpy.copyto(x, minpy.array([100.0, 1, 2, 3]))


def _mut_numpy_copyto(x):
    numpy.copyto(x, numpy.array([100.0, 1, 2, 3]))


def _mut_ufunc_at(x):
    minpy.add.at(x, [0], 100.0)


def _mut_fill(x):
    x.fill(100.0)


MUTATIONS = {"setitem": _mut_setitem, "inplace": _mut_inplace, "out": _mut_out,
             "view_setitem": _mut_view_setitem, "reshape_view": _mut_reshape_view,
             "copyto": _mut_copyto, "numpy_copyto": _mut_numpy_copyto,
             "ufunc_at": _mut_ufunc_at, "fill": _mut_fill}


def check_mutation_recopies(b, how):
    x = cpu_array([0.0, 1, 2, 3])
    c = Copies(b)
    assert (x + 0).asnumpy().tolist() == [0, 1, 2, 3]
    c.expect(h2d=1, d2h=1)
    x + 0                                 # cached
    c.expect()
    MUTATIONS[how](x)                     # a write on the CPU: no copy
    c.expect()
    expected = x.asnumpy().copy()
    assert expected.max() >= 100
    r = x + 0
    c.expect(h2d=1)
    assert on_gpu(r)
    numpy.testing.assert_array_equal(r.asnumpy(), expected)


def check_gpu_write_invalidates_host_copy(b):
    g = gpu_array([1.0, 2, 3, 4])
    c = Copies(b)
    with minpy.policy("only_cpu"):
        assert float(minpy.sum(g)) == 10
        c.expect(d2h=1)
        assert float(minpy.sum(g)) == 10
        c.expect()
    g[1:][0] = 20.0                       # a write through a view, on the GPU
    c.expect()
    with minpy.policy("only_cpu"):
        assert float(minpy.sum(g)) == 28
    c.expect(d2h=1)


def check_asnumpy_is_a_counted_fresh_copy(b):
    g = gpu_array([1.0, 2, 3])
    c = Copies(b)
    h = g.asnumpy()
    c.expect(d2h=1)
    assert type(h) is numpy.ndarray and h.tolist() == [1, 2, 3]
    h[0] = -1                            # the caller's copy: must not leak back
    assert g.asnumpy()[0] == 1
    c.expect(d2h=1)
    x = cpu_array([1.0, 2])
    assert numpy.shares_memory(numpy.asarray(x), numpy.asarray(x))
    c.expect()


def check_results_live_on_the_device(b):
    g = gpu_array(numpy.arange(6.0).reshape(2, 3))
    c = Copies(b)
    for r in (minpy.exp(g), g @ g.T, minpy.sum(g, axis=0), g.astype(numpy.float32), g.copy()):
        assert isinstance(r, minpy.Array) and on_gpu(r)
    s = minpy.sum(g)                      # 0-d result stays an Array on the device
    assert on_gpu(s) and s.shape == () and s.dtype == numpy.float64
    c.expect()
    assert float(s) == 15.0
    c.expect(d2h=1)


def check_fallback_copies_warns_once_and_counts(b):
    # nanquantile/nanpercentile: NumPy functions CuPy 13 and 14 both lack (the API
    # tables), so this means the same on real CuPy and on the stand-in
    g = gpu_array([[3.0, 1.0], [3.0, 2.0], [1.0, 5.0]])
    c = Copies(b)
    with pytest.warns(RuntimeWarning, match="nanquantile") as rec:
        r = minpy.nanquantile(g, 0.5, axis=0)
    assert [w.filename for w in rec] == [__file__]     # points at the caller
    c.expect(d2h=1)
    assert stats()["fallbacks"] == {"nanquantile": 1}
    assert r.context == CPU
    ref = numpy.nanquantile(numpy.array([[3.0, 1.0], [3.0, 2.0], [1.0, 5.0]]), 0.5, axis=0)
    numpy.testing.assert_array_equal(r.asnumpy(), ref)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minpy.nanquantile(g, 0.5, axis=0)   # warned once per function; host copy cached
    c.expect()
    assert stats()["fallbacks"] == {"nanquantile": 2}
    minpy.dispatch.set_fallback_warning(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            p = minpy.nanpercentile(g, 50, axis=0)
    finally:
        minpy.dispatch.set_fallback_warning(True)
    numpy.testing.assert_array_equal(p.asnumpy(), ref)
    assert stats()["fallbacks"]["nanpercentile"] == 1


def check_policy_only_cpu(b):
    x, g = cpu_array([1.0, 2]), gpu_array([3.0, 4])
    c = Copies(b)
    with minpy.policy("only_cpu"):
        r = minpy.exp(x) + x
        c.expect()
        assert r.context == CPU
        r2 = g * 2
        c.expect(d2h=1)
        assert r2.context == CPU and r2.asnumpy().tolist() == [6, 8]
        assert minpy.zeros(2).context == CPU


def check_policy_only_gpu(b):
    g = gpu_array([3, 1, 3], dtype=numpy.int64)
    x = cpu_array([1.0, 2])
    with minpy.policy("only_gpu"):
        with pytest.raises(RuntimeError, match="nanquantile"):     # CuPy lacks it
            minpy.nanquantile(g, 0.5)
        assert on_gpu(x + 1) and on_gpu(minpy.add(1.0, 2.0))
    assert stats()["fallbacks"] == {}


def check_policy_scoping(b):
    assert minpy.get_policy() == "prefer_gpu"
    with pytest.raises(KeyError):
        with minpy.policy("only_cpu"):
            assert minpy.get_policy() == "only_cpu"
            with minpy.policy("only_gpu"):
                assert minpy.get_policy() == "only_gpu"
            assert minpy.get_policy() == "only_cpu"
            raise KeyError("boom")
    assert minpy.get_policy() == "prefer_gpu"

    @minpy.policy("only_numpy")
    def f(fail):
        assert minpy.get_policy() == "only_cpu"
        if fail:
            raise ValueError("inside")
        return (cpu_array([1.0]) + 1).context

    assert f(False) == CPU and f.__name__ == "f"
    with pytest.raises(ValueError, match="inside"):
        f(True)
    assert minpy.get_policy() == "prefer_gpu"
    assert minpy.set_policy("only_numpy") == "prefer_gpu"
    assert minpy.get_policy() == "only_cpu"
    assert minpy.set_policy("only_cupy") == "only_cpu" and minpy.get_policy() == "only_gpu"
    minpy.set_policy("prefer_gpu")
    for bad in ("gpu", "", None):
        with pytest.raises(ValueError):
            minpy.set_policy(bad)
        with pytest.raises(ValueError):
            minpy.policy(bad)
    assert minpy.get_policy() == "prefer_gpu"


def check_creation_contexts(b):
    last = minpy.num_gpus() - 1
    c = Copies(b)
    with minpy.gpu(last):
        z = minpy.zeros(3)
        a = minpy.arange(4)
        e = minpy.eye(2, dtype=numpy.float32)
        inner = minpy.current_context()
    assert inner == minpy.gpu(last) and minpy.current_context() == CPU
    for r in (z, a, e):
        assert on_gpu(r, last)
    assert e.dtype == numpy.float32 and a.asnumpy().tolist() == [0, 1, 2, 3]
    c.expect(d2h=1)
    assert on_gpu(minpy.ones((2, 2), ctx=GPU0)) and minpy.ones(2).context == CPU
    assert minpy.full(2, 7.0, ctx=minpy.cpu()).context == CPU
    c.expect()
    g = gpu_array([1.0, 2])
    c = Copies(b)
    assert on_gpu(minpy.asarray(g)) and on_gpu(minpy.array(g))   # stays where it lives
    c.expect()
    h = minpy.array(g, ctx=minpy.cpu())
    c.expect(d2h=1)
    assert h.context == CPU


def check_copyto_and_as_in_context(b):
    x = cpu_array([1.0, 2, 3])
    c = Copies(b)
    y = x.copyto(GPU0)
    c.expect(h2d=1)
    assert on_gpu(y) and y.as_in_context(GPU0) is y and x.as_in_context(CPU) is x
    y[0] = 100.0                          # the copy is the caller's: no aliasing
    assert x.asnumpy()[0] == 1 and (x + 0).asnumpy()[0] == 1
    z = y.copyto(GPU0)                    # same device: a distinct array, no transfer
    assert on_gpu(z) and z is not y
    z[1] = -5.0
    assert y.asnumpy().tolist() == [100, 2, 3]
    w = y.as_in_context(CPU)
    assert w.context == CPU and w.asnumpy().tolist() == [100, 2, 3]
    w[0] = 0.0
    assert y.asnumpy()[0] == 100
    dst = minpy.zeros(3)
    assert y.copyto(dst) is dst and dst.asnumpy().tolist() == [100, 2, 3]


def check_copy_between_gpus(b):
    need_gpus(2)
    g0 = gpu_array([1.0, 2, 3])
    c = Copies(b)
    g1 = g0.copyto(GPU1)
    c.expect(d2d=1)
    assert on_gpu(g1, 1) and g1.asnumpy().tolist() == [1, 2, 3]
    r = minpy.add(g1, g0)                 # first GPU input decides; g0 moves (cached)
    assert on_gpu(r, 1)
    minpy.multiply(g1, g0)
    c.expect(d2d=1, d2h=1)
    x = cpu_array([1.0, 1, 1])
    s = minpy.stack([g0, g1, x])
    c.expect(d2d=1, h2d=1)
    assert on_gpu(s, 0) and s.asnumpy().tolist() == [[1, 2, 3], [1, 2, 3], [1, 1, 1]]


def check_gpu_indexing_stays_on_device(b):
    g = gpu_array(numpy.arange(6.0))
    c = Copies(b)
    v = g[1:4]
    s = g[g > 2.0]
    f = g[[0, 5]]
    g[0] = 10.0
    g[g > 4.0] = -1.0
    g += 1.0
    g[1:3] *= 2.0
    e = g[2]
    for r in (v, s, f, e, g):
        assert on_gpu(r)
    c.expect()
    assert g.asnumpy().tolist() == [0, 4, 6, 4, 5, 0]
    assert v.asnumpy().tolist() == [4, 6, 4]          # a view sees the writes
    assert s.asnumpy().tolist() == [3, 4, 5] and f.asnumpy().tolist() == [0, 5]
    assert e.shape == () and float(e) == 6


def check_random_on_gpu(b):
    with minpy.gpu(0):
        rs = [minpy.random.rand(3), minpy.random.normal(0.0, 1.0, size=(2, 2)),
              minpy.random.randint(0, 5, size=4)]
    for r in rs:
        assert on_gpu(r)
    assert rs[1].shape == (2, 2) and rs[2].dtype.kind == "i"
    assert minpy.random.rand(2).context == CPU


def check_num_gpus(b):
    assert minpy.num_gpus() == gpu_backend().device_count() >= 1


def check_numpy_asarray_and_protocols(b):
    g = gpu_array([1.0, 2, 3])
    c = Copies(b)
    with pytest.raises(TypeError, match="x.asnumpy"):
        numpy.asarray(g)                  # never a silent device-to-host copy
    c.expect()
    h = g.asnumpy()
    c.expect(d2h=1)
    assert type(h) is numpy.ndarray and h.tolist() == [1, 2, 3]
    r = numpy.exp(g)                      # __array_ufunc__ stays in minpy, on the device
    m = numpy.mean(g)                     # __array_function__ too (off the host)
    assert on_gpu(r) and on_gpu(m)
    c.expect()
    assert "gpu(0)" in repr(g) and repr(g).startswith("array([1., 2., 3.]")
    assert len(g) == 3 and g.tolist() == [1, 2, 3] and bool(g[0])


def check_scalar_results_stay_on_the_device(b):
    g = gpu_array([1.0, 2, 3])
    c = Copies(b)
    s = minpy.sum(g)                      # NumPy returns a scalar here
    kept = s
    s += 1                                # immutable: rebinds, as numpy.float64 does
    assert s is not kept and on_gpu(s) and on_gpu(kept)
    assert isinstance(s, numbers.Real) and not isinstance(g, numbers.Real)
    e = g[1]
    assert on_gpu(e) and isinstance(e, numbers.Real)
    with pytest.raises(TypeError, match="does not support item assignment"):
        e[...] = 0
    r = minpy.reshape(g, (3, 1))[0].reshape(())     # a 0-d view is an array, as in NumPy
    assert not isinstance(r, numbers.Real)
    c.expect()                            # nothing crossed to the host
    assert float(s) == 7.0 and float(kept) == 6.0
    c.expect(d2h=2)


def check_pickle_round_trip(b):
    g = gpu_array([[1.0, 2], [3, 4]])
    r = pickle.loads(pickle.dumps(g))
    assert on_gpu(r) and r.dtype == g.dtype and r.asnumpy().tolist() == [[1, 2], [3, 4]]
    r[0, 0] = 9.0
    assert g.asnumpy()[0, 0] == 1


def check_reset_stats(b):
    cpu_array([1.0]) + 1
    s = stats()
    assert s["calls"] and s["copies"]
    reset_stats()
    assert stats() == {"calls": {}, "copies": {}, "bytes": {}, "cache_hits": {}, "fallbacks": {}}


def check_stats_calls_and_bytes(b):
    x = cpu_array(numpy.zeros(10))
    x + 1
    s = stats()
    assert s["calls"]["add"] == {gpu_backend().name: 1} and s["bytes"]["h2d"] == 80


def check_out_on_another_device(b):
    g, x = gpu_array([1.0, 2]), cpu_array([0.0, 0])
    c = Copies(b)
    assert minpy.add(g, g, out=x) is x        # runs where out lives: g comes to the host
    c.expect(d2h=1)
    assert x.context == CPU and x.asnumpy().tolist() == [2, 4]
    go = gpu_array([0.0, 0])
    c = Copies(b)
    r = minpy.multiply(x, 3.0, out=(go,))
    c.expect(h2d=1)
    assert r is go and go.asnumpy().tolist() == [6, 12]
    h = numpy.zeros(2)
    assert minpy.add(g, 1.0, out=h) is h and h.tolist() == [2, 3]   # a raw host out


def check_raw_numpy_and_list_inputs(b):
    g = gpu_array([1.0, 2, 3])
    c = Copies(b)
    for _ in range(2):                    # a raw ndarray cannot be cached: copied each time
        r = minpy.add(g, numpy.ones(3))
        assert on_gpu(r) and r.asnumpy().tolist() == [2, 3, 4]
        c.expect(h2d=1, d2h=1)
    c = Copies(b)
    r = minpy.add(g, [10, 20, 30])
    assert on_gpu(r) and r.asnumpy().tolist() == [11, 22, 33]
    r = minpy.maximum((0, 5, 0), g)
    assert on_gpu(r) and r.asnumpy().tolist() == [1, 5, 3]
    assert minpy.add([1, 2], 1).context == CPU        # no minpy array: current context
    with minpy.gpu(0):
        assert on_gpu(minpy.add([1, 2], 1))


def check_kwargs_arrays(b):
    g, w = gpu_array([1.0, 2, 3]), cpu_array([1.0, 0, 1])
    c = Copies(b)
    r = minpy.average(g, weights=w)
    c.expect(h2d=1)
    assert on_gpu(r) and float(r) == 2.0
    z = minpy.zeros_like(a=g)
    assert on_gpu(z) and z.shape == (3,)
    s = minpy.sum(a=w)
    assert on_gpu(s) and float(s) == 2.0


def check_views_keep_numpy_semantics(b):
    x = cpu_array(numpy.arange(6.0))
    c = Copies(b)
    r, t = x.reshape(2, 3), x.reshape(3, 2).T
    assert r.context == CPU and t.context == CPU
    r[0, 0] = 100.0
    t[1, 1] = 50.0
    c.expect()
    assert x.asnumpy().tolist() == [100, 1, 2, 50, 4, 5]
    g = gpu_array(numpy.arange(4.0))
    gr = minpy.reshape(g, (2, 2))
    gr[1, 1] = -1.0
    assert on_gpu(gr) and g.asnumpy().tolist() == [0, 1, 2, -1]


def check_results_never_alias_a_cached_copy(b):
    x = cpu_array([1.0, 2, 3])
    with minpy.gpu(0):
        a = minpy.asarray(x)              # may return the cached device copy itself
    assert on_gpu(a)
    a[0] = 100.0
    assert x.asnumpy()[0] == 1
    assert (x + 0).asnumpy().tolist() == [1, 2, 3]     # x's device copy is not a's buffer
    g = gpu_array([5.0, 6])
    with minpy.policy("only_cpu"):
        h = minpy.asarray(g, dtype=numpy.float64) + 0
        v = minpy.ravel(minpy.asarray(g, dtype=numpy.float64))
    assert h.asnumpy().tolist() == [5, 6]
    with minpy.cpu():
        k = minpy.asarray(g)
    k[0] = 0.0
    assert g.asnumpy().tolist() == [5, 6] and v.asnumpy().tolist() == [5, 6]
    with minpy.policy("only_cpu"):
        assert float(minpy.sum(g)) == 11


PORTABLE = {name[6:]: f for name, f in dict(globals()).items()
            if name.startswith("check_") and name != "check_mutation_recopies"}
for _how in MUTATIONS:
    PORTABLE[f"mutation_recopies[{_how}]"] = (
        lambda b, _h=_how: check_mutation_recopies(b, _h))
