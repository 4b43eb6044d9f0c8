"""minpy.jit never replays a stale trace: containers are pytrees (not objects keyed by
id), and what a trace read from closures, globals and attributes is guarded."""
import collections
import gc
import warnings

import numpy
import pytest

import minpy
import minpy as np
from minpy.core.array import new

from _host import host

# module-level state read by jitted functions below (rebound by the tests)
_LR = 0.1
_W = np.ones(3)
_W_HOST = numpy.ones(3)


def _act(x):
    return x * 2


def _uses_globals(x):
    return _act(x) * _LR + _W


def _close(a, b):
    numpy.testing.assert_allclose(host(a), host(b), rtol=1e-6, atol=1e-6)


def _traces(f):
    return f.cache_info()["traces"]


# ---------------------------------------------------------------- containers
def test_ordereddict_argument_is_a_tree_not_a_recycled_id():
    f = minpy.jit(lambda d: minpy.sum(d["w"] * 2))
    got = []
    for v in (1, 2, 3):
        got.append(float(f(collections.OrderedDict(w=minpy.full((3,), v)))))
        gc.collect()                    # the old dict is freed: its id may be reused
    assert got == [6.0, 12.0, 18.0]
    assert _traces(f) == 1              # same structure: one trace, then replays


def test_namedtuple_argument_is_a_tree_not_a_recycled_id():
    Params = collections.namedtuple("Params", "w b")
    f = minpy.jit(lambda p: minpy.sum(p.w * 2 + p.b))
    got = []
    for v in (1, 2, 3):
        got.append(float(f(Params(minpy.full((3,), v), minpy.zeros(3)))))
        gc.collect()
    assert got == [6.0, 12.0, 18.0]
    assert _traces(f) == 1


def test_defaultdict_argument_is_a_tree():
    f = minpy.jit(lambda d: d["w"] + d["b"])
    for v in (1.0, 2.0):
        d = collections.defaultdict(float)
        d["w"], d["b"] = np.full(2, v), np.ones(2)
        _close(f(d), numpy.full(2, v + 1))
        del d
        gc.collect()
    assert _traces(f) == 1


def test_container_structure_is_part_of_the_signature():
    Pair = collections.namedtuple("Pair", "a b")
    Other = collections.namedtuple("Other", "a b")
    f = minpy.jit(lambda t: t[0] - t[1])
    x, y = np.full(2, 5.0), np.ones(2)
    _close(f(Pair(x, y)), numpy.full(2, 4.0))
    _close(f(Other(x, y)), numpy.full(2, 4.0))
    _close(f((x, y)), numpy.full(2, 4.0))
    assert _traces(f) == 3
    g = minpy.jit(lambda d: d["a"] - list(d.values())[1])
    _close(g(collections.OrderedDict(a=x, b=y)), numpy.full(2, 4.0))
    _close(g(collections.OrderedDict(b=y, a=x)), numpy.zeros(2))     # key order differs
    assert _traces(g) == 2


def test_outputs_keep_ordereddict_and_namedtuple_structure():
    Out = collections.namedtuple("Out", "total scaled")
    f = minpy.jit(lambda x: collections.OrderedDict(
        out=Out(x.sum(), x * 2), tag="t", empty=None))
    for v in (1.0, 3.0):
        r = f(np.full(2, v))
        assert type(r) is collections.OrderedDict and list(r) == ["out", "tag", "empty"]
        assert type(r["out"]) is Out and r["tag"] == "t" and r["empty"] is None
        _close(r["out"].total, 2 * v)
        _close(r["out"].scaled, numpy.full(2, 2 * v))
    assert _traces(f) == 1


def test_unhashable_non_tree_argument_is_refused_naming_jit_and_argument():
    class Bag:
        __hash__ = None

        def __init__(self):
            self.scale = 2.0
    f = minpy.jit(lambda x, opts: x * 2)
    with pytest.raises(TypeError, match=r"minpy\.jit\(.*<lambda>\).*argument 1 \('opts'\).*set"):
        f(np.ones(2), {1, 2})
    with pytest.raises(TypeError, match=r"argument 1 \('opts'\).*Bag"):
        f(np.ones(2), Bag())
    with pytest.raises(TypeError, match=r"argument 'opts'.*bytearray"):
        f(np.ones(2), opts=[bytearray(b"x")])


def test_hashable_object_argument_is_held_and_its_attributes_guarded():
    class Config:
        def __init__(self, scale):
            self.scale = scale
    f = minpy.jit(lambda x, cfg: x * cfg.scale)
    x = np.ones(2)
    got = []
    for v in (2.0, 3.0, 4.0):           # fresh objects, the old freed: ids recycle
        got.append(float(f(x, Config(v)).sum()))
        gc.collect()
    assert got == [4.0, 6.0, 8.0]
    cfg = Config(5.0)
    _close(f(x, cfg), numpy.full(2, 5.0))
    cfg.scale = 7.0                      # attribute rebound: traced again
    _close(f(x, cfg), numpy.full(2, 7.0))
    n = _traces(f)
    _close(f(x, cfg), numpy.full(2, 7.0))
    assert _traces(f) == n


def test_signed_zero_static_values_are_distinct():
    f = minpy.jit(lambda x, s: 1.0 / (x * s))
    with numpy.errstate(divide="ignore"):
        assert numpy.isposinf(host(f(np.ones(1), 0.0))).all()
        assert numpy.isneginf(host(f(np.ones(1), -0.0))).all()
        assert numpy.isneginf(host(f(np.ones(1), numpy.float64(-0.0)))).all()


# ---------------------------------------------------------------- closures
def test_closed_over_scalar_rebound_is_seen():
    lr = 0.1
    step = minpy.jit(lambda p, g: p - lr * g)
    p, g = np.ones(3), np.ones(3)
    _close(step(p, g), numpy.full(3, 0.9))
    lr = 0.01
    _close(step(p, g), numpy.full(3, 0.99))
    assert _traces(step) == 2
    lr = 0.1                              # back to a value already traced: a replay
    _close(step(p, g), numpy.full(3, 0.9))
    assert _traces(step) == 2


def test_unchanged_guards_replay_without_tracing():
    lr, w = 0.5, np.full(3, 2.0)
    f = minpy.jit(lambda x: np.sum(x * w) * lr + _LR)
    for _ in range(5):
        _close(f(np.ones(3)), 3.0 + _LR)
    info = f.cache_info()
    assert (info["traces"], info["hits"], info["guard_misses"]) == (1, 4, 0)


def test_closed_over_array_rebound_is_seen():
    w = np.ones(3)
    f = minpy.jit(lambda x: x * w)
    _close(f(np.full(3, 2.0)), numpy.full(3, 2.0))
    w = np.full(3, 3.0)                   # same shape and dtype, a new array
    _close(f(np.full(3, 2.0)), numpy.full(3, 6.0))


def test_closed_over_arrays_written_in_place_are_read_at_each_replay():
    w = np.ones(3)
    big = numpy.ones(2048)                    # above SMALL_HOST_BYTES: read by reference
    f = minpy.jit(lambda x: x + np.sum(w) + np.sum(big))        # the sums read no input
    _close(f(np.zeros(2)), numpy.full(2, 2051.0))
    w[...] = 2.0
    big[:] = 3.0                                                # NumPy's own write
    _close(f(np.zeros(2)), numpy.full(2, 6150.0))
    w += 1.0
    _close(f(np.zeros(2)), numpy.full(2, 6153.0))
    assert _traces(f) == 1


def test_small_host_array_read_by_numpy_is_guarded_by_contents():
    mean = numpy.full(3, 2.0)
    f = minpy.jit(lambda x: x - float(numpy.mean(mean)))         # NumPy reads it: a constant
    _close(f(np.zeros(3)), numpy.full(3, -2.0))
    mean[:] = 5.0
    _close(f(np.zeros(3)), numpy.full(3, -5.0))
    _close(f(np.zeros(3)), numpy.full(3, -5.0))
    assert _traces(f) == 2


def test_closed_over_container_mutated_is_seen():
    params = {"w": np.ones(2)}
    f = minpy.jit(lambda x: x * params["w"])
    _close(f(np.full(2, 3.0)), numpy.full(2, 3.0))
    params["w"] = np.full(2, 2.0)         # the dict is the same object; its entry is new
    _close(f(np.full(2, 3.0)), numpy.full(2, 6.0))
    sizes = [2.0]
    g = minpy.jit(lambda x: x * sizes[0])
    _close(g(np.ones(2)), numpy.full(2, 2.0))
    sizes[0] = 5.0
    _close(g(np.ones(2)), numpy.full(2, 5.0))


def test_nested_function_closures_are_guarded():
    scale = 2.0

    def helper(x):
        return x * scale

    def outer(x):
        return helper(x) + 1.0
    f = minpy.jit(outer)
    _close(f(np.ones(2)), numpy.full(2, 3.0))
    scale = 10.0
    _close(f(np.ones(2)), numpy.full(2, 11.0))
    assert _traces(f) == 2


# ---------------------------------------------------------------- globals
def test_globals_scalar_array_and_function_rebound_are_seen():
    global _LR, _W, _act
    saved = _LR, _W, _act
    f = minpy.jit(_uses_globals)
    x = np.ones(3)
    try:
        _close(f(x), numpy.full(3, 1.2))
        _LR = 1.0
        _close(f(x), numpy.full(3, 3.0))
        _W = np.zeros(3)
        _close(f(x), numpy.full(3, 2.0))

        def _act(x):                                            # noqa: F811
            return x * 5
        _close(f(x), numpy.full(3, 5.0))
        n = _traces(f)
        _close(f(x), numpy.full(3, 5.0))
        assert _traces(f) == n == 4
    finally:
        _LR, _W, _act = saved


def test_global_host_array_written_in_place_is_read():
    f = minpy.jit(lambda x: x * np.sum(_W_HOST))
    saved = _W_HOST.copy()
    try:
        _close(f(np.ones(2)), numpy.full(2, 3.0))
        _W_HOST[:] = 2.0
        _close(f(np.ones(2)), numpy.full(2, 6.0))
    finally:
        _W_HOST[:] = saved


def test_global_shadowing_a_builtin_is_seen():
    f = minpy.jit(lambda x: x * abs(-2.0))
    _close(f(np.ones(2)), numpy.full(2, 2.0))
    globals()["abs"] = lambda v: 10.0
    try:
        _close(f(np.ones(2)), numpy.full(2, 10.0))
    finally:
        del globals()["abs"]
    _close(f(np.ones(2)), numpy.full(2, 2.0))


def test_method_attribute_rebound_is_seen():
    class Dense:
        def __init__(self):
            self.w = np.ones((2, 2))

        @minpy.jit
        def __call__(self, x):
            return x @ self.w
    layer = Dense()
    x = np.ones((1, 2))
    _close(layer(x), numpy.full((1, 2), 2.0))
    layer.w = layer.w * 3                 # a new array (not in place)
    _close(layer(x), numpy.full((1, 2), 6.0))


def test_global_object_attribute_read_through_its_method_is_guarded():
    class Model:
        def __init__(self):
            self.scale = 2.0

        def forward(self, x):
            return x * self.scale
    model = Model()
    f = minpy.jit(lambda x: model.forward(x))
    _close(f(np.ones(2)), numpy.full(2, 2.0))
    model.scale = 4.0
    _close(f(np.ones(2)), numpy.full(2, 4.0))


def test_rebinding_a_read_array_at_each_call_warns_and_stays_right():
    w = np.ones(2)
    f = minpy.jit(lambda x: x * w)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(12):
            w = np.full(2, float(i))
            _close(f(np.ones(2)), numpy.full(2, float(i)))
    msgs = [str(c.message) for c in caught if "traced again" in str(c.message)]
    assert len(msgs) == 1 and "<lambda>" in msgs[0] and "'w'" in msgs[0]
    assert f.cache_info()["size"] <= 8       # stale variants are dropped


_step = 0            # a script's loop variable, named like an attribute the function reads


def test_a_global_named_like_an_attribute_read_is_not_guarded():
    global _step
    class Opt:
        _step = 3.0
    f = minpy.jit(lambda x, o: x * o._step)
    opt = Opt()
    try:
        for i in range(4):
            _step = i                                   # rebinding the module's _step
            _close(f(np.ones(2), opt), numpy.full(2, 3.0))
    finally:
        _step = 0
    assert _traces(f) == 1


def test_class_and_module_attributes_and_nested_jit_and_callables_are_guarded():
    class Cfg:
        lr = 0.1
    by_class = minpy.jit(lambda x: x * Cfg.lr)
    _close(by_class(np.ones(2)), numpy.full(2, 0.1))
    Cfg.lr = 0.5
    _close(by_class(np.ones(2)), numpy.full(2, 0.5))

    k = 2.0
    inner = minpy.jit(lambda x: x * k)
    outer = minpy.jit(lambda x: inner(x) + 1.0)          # the inner one runs in the trace
    _close(outer(np.ones(2)), numpy.full(2, 3.0))
    k = 3.0
    _close(outer(np.ones(2)), numpy.full(2, 4.0))

    class Scale:
        def __init__(self):
            self.k = 2.0

        def __call__(self, x):
            return x * self.k
    scale = Scale()
    jitted_object = minpy.jit(scale)
    _close(jitted_object(np.ones(2)), numpy.full(2, 2.0))
    scale.k = 5.0
    _close(jitted_object(np.ones(2)), numpy.full(2, 5.0))


def test_assigning_into_an_argument_container_is_refused():
    def step(params, g):
        params["w"] = params["w"] - 0.1 * g      # rebinds the caller's entry: no replay can
        return params["w"]
    f = minpy.jit(step)
    with pytest.raises(minpy.JitTraceError, match=r"step assigns.*argument 0 \('params'\)"):
        f({"w": np.ones(2)}, np.ones(2))
    eager = minpy.jit(step, fallback=True)
    params = {"w": np.ones(2)}
    with pytest.warns(RuntimeWarning, match="eagerly"):
        eager(params, np.ones(2))
    eager(params, np.ones(2))
    _close(params["w"], numpy.full(2, 0.8))                # as without jit

    def in_place(params, g):
        params["w"] -= 0.1 * g                   # the same Array, written in place: fine
        return params["w"]
    h = minpy.jit(in_place)
    params = {"w": np.ones(2)}
    h(params, np.ones(2))
    h(params, np.ones(2))
    _close(params["w"], numpy.full(2, 0.8))


def test_a_huge_container_read_from_outside_is_guarded_by_identity_with_a_warning():
    from minpy.jit.guards import MAX_TREE_LEAVES
    table = [1.0] * (MAX_TREE_LEAVES + 1)
    f = minpy.jit(lambda x: x * table[0])
    with pytest.warns(RuntimeWarning, match=r"'table'.*only its identity is guarded"):
        _close(f(np.ones(2)), numpy.full(2, 1.0))
    table = [2.0] * 3                       # rebound: the identity guard sees it
    _close(f(np.ones(2)), numpy.full(2, 2.0))



def test_class_level_defaults_read_through_an_instance_are_guarded():
    class Opt:
        lr = 0.1                              # a class default, read as self.lr

        @property
        def scale(self):
            return self.factor * 2

        def __init__(self):
            self.factor = 1.0
    opt = Opt()
    f = minpy.jit(lambda x, o: x * o.lr * o.scale)
    _close(f(np.ones(2), opt), numpy.full(2, 0.2))
    opt.lr = 0.5                              # now set on the instance: shadows the class's
    _close(f(np.ones(2), opt), numpy.full(2, 1.0))
    Opt.lr = 0.3
    del opt.lr
    _close(f(np.ones(2), opt), numpy.full(2, 0.6))
    opt.factor = 2.0                          # read by the property
    _close(f(np.ones(2), opt), numpy.full(2, 1.2))


def test_namedtuple_argument_of_a_custom_op_is_not_frozen_into_the_trace():
    NT = collections.namedtuple("NT", "a k")

    @minpy.customop
    def host_double(t):
        return new(t.a._data * 2 * t.k)        # on the buffer, outside minpy's primitives

    h = minpy.jit(lambda t: host_double(t))
    a, b = minpy.full((2,), 3.0), minpy.full((2,), 4.0)
    numpy.testing.assert_array_equal(h(NT(a, 1)).asnumpy(), [6.0, 6.0])
    numpy.testing.assert_array_equal(h(NT(b, 1)).asnumpy(), [8.0, 8.0])


class _ByName:
    """Equal (and hashing alike) by name only: the value it carries differs."""

    def __init__(self, name, scale):
        self.name, self.scale = name, scale

    def __eq__(self, other):
        return isinstance(other, _ByName) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


def test_equal_argument_objects_carrying_other_values_are_not_confused():
    f = minpy.jit(lambda x, cfg: x * cfg.scale)
    x = minpy.ones(2)
    numpy.testing.assert_array_equal(f(x, _ByName("a", 2.0)).asnumpy(), [2.0, 2.0])
    numpy.testing.assert_array_equal(f(x, _ByName("a", 5.0)).asnumpy(), [5.0, 5.0])


def test_a_nan_static_value_replays_instead_of_tracing_each_call():
    f = minpy.jit(lambda x, c: x + c)
    x = minpy.ones(2)
    for _ in range(3):
        f(x, float("nan"))
    assert f.cache_info()["misses"] == 1
