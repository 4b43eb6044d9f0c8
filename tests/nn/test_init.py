"""minpy.nn.init: MinPy's rule(shape, config) initializers — statistics on large draws,
seeding, fans, dtypes, placement and errors."""
import math

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
from minpy.nn import init

from _standin import standin_gpu  # noqa: F401

RANDOM_RULES = ("gaussian", "uniform", "xavier", "kaiming")


def _stats(a):
    h = a.asnumpy().astype(numpy.float64)
    return h.mean(), h.std()


def test_gaussian_uses_minpy_keys_and_defaults():
    m, s = _stats(init.gaussian((400, 500), {"seed": 0}))
    assert abs(m) < 1e-5 and s == pytest.approx(0.001, rel=0.01)     # MinPy's stdvar default
    m, s = _stats(init.gaussian((400, 500), {"mu": 2.0, "stdvar": 0.5, "seed": 1}))
    assert m == pytest.approx(2.0, abs=0.005) and s == pytest.approx(0.5, rel=0.01)


def test_uniform_bounds_and_moments():
    a = init.uniform((200, 1000), {"low": -1.0, "high": 3.0, "seed": 2}).asnumpy()
    assert a.min() >= -1.0 and a.max() < 3.0
    assert a.mean() == pytest.approx(1.0, abs=0.01)
    assert a.std() == pytest.approx(4 / math.sqrt(12), rel=0.01)
    d = init.uniform((100000,), {"seed": 3}).asnumpy()
    assert -0.07 <= d.min() and d.max() < 0.07


@pytest.mark.parametrize("shape, fan_in, fan_out", [
    ((300,), 300, 300), ((784, 128), 784, 128), ((16, 3, 5, 5), 75, 400),
    ((8, 4, 3), 12, 24), ((2, 3, 4, 5, 6), 360, 240)])
def test_fans(shape, fan_in, fan_out):
    assert init.fans(shape) == (fan_in, fan_out)


@pytest.mark.parametrize("shape", [(784, 512), (64, 32, 3, 3)])
def test_xavier_and_kaiming_variances(shape):
    fi, fo = init.fans(shape)
    a = init.xavier(shape, {"seed": 4}).asnumpy()
    bound = math.sqrt(6 / (fi + fo))
    assert abs(a).max() <= bound and a.std() == pytest.approx(math.sqrt(2 / (fi + fo)), rel=0.02)
    n = init.xavier(shape, {"seed": 5, "distribution": "normal", "gain": 2.0}).asnumpy()
    assert n.std() == pytest.approx(2 * math.sqrt(2 / (fi + fo)), rel=0.02)
    k = init.kaiming(shape, {"seed": 6}).asnumpy()
    assert abs(k.mean()) < 0.03 * k.std()
    assert k.std() == pytest.approx(math.sqrt(2 / fi), rel=0.02)
    k = init.kaiming(shape, {"seed": 6, "mode": "fan_out", "gain": 1.0}).asnumpy()
    assert k.std() == pytest.approx(math.sqrt(1 / fo), rel=0.02)
    k = init.kaiming(shape, {"seed": 6, "fan_in": 9, "fan_out": 1}).asnumpy()
    assert k.std() == pytest.approx(math.sqrt(2 / 9), rel=0.02)


@given(rule=st.sampled_from(RANDOM_RULES),
       shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple),
       dtype=st.sampled_from(["float16", "float32", "float64"]), seed=st.integers(0, 2 ** 20))
def test_seeding_is_reproducible_and_dtype_and_shape_hold(rule, shape, dtype, seed):
    fn = getattr(init, rule)
    a = fn(shape, {"seed": seed, "dtype": dtype})
    assert isinstance(a, minpy.Array) and a.shape == shape and a.dtype == numpy.dtype(dtype)
    again = fn(shape, {"seed": seed, "dtype": dtype})
    numpy.testing.assert_array_equal(a.asnumpy(), again.asnumpy())
    r1 = fn(shape, {"rng": numpy.random.default_rng(seed), "dtype": dtype})
    numpy.testing.assert_array_equal(a.asnumpy(), r1.asnumpy())       # seed == its Generator
    minpy.random.seed(seed)
    g1 = fn(shape, {"dtype": dtype}).asnumpy()
    minpy.random.seed(seed)
    numpy.testing.assert_array_equal(g1, fn(shape, {"dtype": dtype}).asnumpy())


def test_default_dtype_is_float32_and_config_is_optional():
    for rule in RANDOM_RULES:
        a = getattr(init, rule)((3, 4), None)
        assert a.dtype == numpy.float32 and a.shape == (3, 4)
    assert init.xavier(5).shape == (5,)                      # an int shape, MinPy's '_' config


def test_constant_and_custom():
    c = init.constant((2, 3), {"value": 1.5})
    assert c.dtype == numpy.float32
    numpy.testing.assert_array_equal(c.asnumpy(), numpy.full((2, 3), 1.5))
    z = init.constant((4,), {"dtype": "int32"})
    assert z.dtype == numpy.int32 and not z.asnumpy().any()
    f = init.custom((2, 2), {"function": lambda s: numpy.arange(4.0).reshape(s)})
    assert isinstance(f, minpy.Array) and f.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    g = init.custom((3,), {"function": minpy.ones, "dtype": "float16"})
    assert g.dtype == numpy.float16 and g.tolist() == [1.0, 1.0, 1.0]


def test_results_are_placed_on_the_current_context(standin_gpu):
    with minpy.gpu(1):
        for rule in RANDOM_RULES + ("constant",):
            a = getattr(init, rule)((3, 2), {"seed": 0})
            assert a.context == minpy.gpu(1)
    host = init.gaussian((3, 2), {"seed": 0})
    assert host.context == minpy.cpu(0)


def test_errors():
    with pytest.raises(ValueError, match=r"init.gaussian: shape must be a tuple of non-negative"):
        init.gaussian((2, -1))
    with pytest.raises(ValueError, match="shape must be"):
        init.uniform("abc")
    with pytest.raises(KeyError, match=r"init.custom: config\['function'\] is required"):
        init.custom((2,), {})
    with pytest.raises(TypeError, match="must be callable"):
        init.custom((2,), {"function": 3})
    with pytest.raises(ValueError, match=r"returned shape \(3,\) for requested shape \(2,\)"):
        init.custom((2,), {"function": lambda s: numpy.zeros(3)})
    with pytest.raises(ValueError, match="0-d shape has no fans"):
        init.xavier(())
    with pytest.raises(TypeError, match="dtype must be a floating dtype"):
        init.gaussian((2,), {"dtype": "int32"})
    with pytest.raises(ValueError, match=r"config\['rng'\] or config\['seed'\], not both"):
        init.uniform((2,), {"rng": numpy.random.default_rng(), "seed": 1})
    with pytest.raises(TypeError, match="must be a numpy.random.Generator"):
        init.uniform((2,), {"rng": 42})
    with pytest.raises(ValueError, match=r"config\['low'\] \(1.0\) must be <= config\['high'\]"):
        init.uniform((2,), {"low": 1.0, "high": 0.0})
    with pytest.raises(ValueError, match=r"config\['mode'\] must be 'fan_in' or 'fan_out'"):
        init.kaiming((2, 2), {"mode": "avg"})
    with pytest.raises(ValueError, match=r"config\['distribution'\] must be 'uniform' or 'normal'"):
        init.xavier((2, 2), {"distribution": "cauchy"})
    with pytest.raises(ValueError, match=r"config\['stdvar'\] must be >= 0"):
        init.gaussian((2,), {"stdvar": -1})
    with pytest.raises(TypeError, match=r"config\['gain'\] must be a real number"):
        init.kaiming((2, 2), {"gain": "big"})
    with pytest.raises(TypeError, match="config must be a dict or None"):
        init.constant((2,), [1])
    with pytest.raises(TypeError, match="does not fit dtype"):
        init.constant((2,), {"value": "x"})
