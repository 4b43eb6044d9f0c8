"""minpy.random against numpy.random: same seeds give the same numbers, as minpy Arrays."""
import contextlib
import warnings

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy as mp
from _strategies import general_path
from _standin import installed


def same(got, exp):
    """minpy's draw ``got`` equals NumPy's ``exp``: exactly, with NumPy's dtype and shape;
    arrays (and NumPy scalars) come back as minpy Arrays, Python scalars as themselves."""
    if isinstance(exp, (numpy.ndarray, numpy.generic)):
        assert isinstance(got, mp.Array), type(got)
        exp = numpy.asarray(exp)
        assert got.dtype == exp.dtype and got.shape == exp.shape
        numpy.testing.assert_array_equal(got.asnumpy(), exp)
    else:
        assert type(got) is type(exp) and got == exp, (got, exp)


# name -> (args, kwargs): a valid call of each legacy function
LEGACY = {
    "beta": ((2.0, 3.0), dict(size=5)),
    "binomial": ((10, 0.3), dict(size=(2, 3))),
    "bytes": ((7,), {}),
    "chisquare": ((3.0,), dict(size=5)),
    "choice": ((5, 3), {}),
    "dirichlet": (([1.0, 2.0, 3.0],), dict(size=4)),
    "exponential": ((2.0,), dict(size=(2, 3))),
    "f": ((3.0, 4.0), dict(size=5)),
    "gamma": ((2.0, 1.5), dict(size=5)),
    "geometric": ((0.3,), dict(size=5)),
    "gumbel": ((0.0, 2.0), dict(size=5)),
    "hypergeometric": ((10, 5, 7), dict(size=5)),
    "laplace": ((1.0, 2.0), dict(size=5)),
    "logistic": ((0.0, 1.0), dict(size=5)),
    "lognormal": ((0.0, 0.5), dict(size=5)),
    "logseries": ((0.5,), dict(size=5)),
    "multinomial": ((10, [0.2, 0.3, 0.5]), dict(size=4)),
    "multivariate_normal": (([0.0, 1.0], [[1.0, 0.5], [0.5, 2.0]]), dict(size=3)),
    "negative_binomial": ((5, 0.5), dict(size=5)),
    "noncentral_chisquare": ((3.0, 2.0), dict(size=5)),
    "noncentral_f": ((3.0, 4.0, 2.0), dict(size=5)),
    "normal": ((1.0, 2.0), dict(size=(3, 2))),
    "pareto": ((3.0,), dict(size=5)),
    "permutation": ((6,), {}),
    "poisson": ((3.0,), dict(size=5)),
    "power": ((2.0,), dict(size=5)),
    "rand": ((2, 3), {}),
    "randint": ((0, 10, 5), {}),
    "randn": ((2, 3), {}),
    "random": ((), dict(size=4)),
    "random_integers": ((1, 6, 5), {}),
    "random_sample": (((2, 2),), {}),
    "ranf": ((3,), {}),
    "rayleigh": ((2.0,), dict(size=5)),
    "sample": ((3,), {}),
    "standard_cauchy": ((), dict(size=5)),
    "standard_exponential": ((), dict(size=5)),
    "standard_gamma": ((2.0,), dict(size=5)),
    "standard_normal": ((), dict(size=5)),
    "standard_t": ((3.0,), dict(size=5)),
    "triangular": ((0.0, 1.0, 2.0), dict(size=5)),
    "uniform": ((-1.0, 3.0), dict(size=5)),
    "vonmises": ((0.0, 1.0), dict(size=5)),
    "wald": ((1.0, 1.0), dict(size=5)),
    "weibull": ((2.0,), dict(size=5)),
    "zipf": ((2.0,), dict(size=5)),
}
# legacy names tested elsewhere in this file, and classes/modules
SPECIAL = {"seed", "shuffle", "get_state", "set_state", "get_bit_generator",
           "set_bit_generator", "default_rng"}


def legacy_names():
    return {n for n in dir(numpy.random) if not n.startswith("_") and n != "test"
            and callable(getattr(numpy.random, n)) and not isinstance(getattr(numpy.random, n),
                                                                       type)}


def test_every_legacy_function_is_in_the_table():
    assert legacy_names() == set(LEGACY) | SPECIAL
    for name in legacy_names():
        assert callable(getattr(mp.random, name)), name


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", sorted(LEGACY))
@pytest.mark.parametrize("mode,seed", [("fast", 0), ("fast", 12345), ("general", 7)])
def test_legacy_function_matches_numpy(name, mode, seed):
    args, kwargs = LEGACY[name]
    numpy.random.seed(seed)
    exp = getattr(numpy.random, name)(*args, **kwargs)
    with general_path() if mode == "general" else contextlib.nullcontext():
        mp.random.seed(seed)
        got = getattr(mp.random, name)(*args, **kwargs)
    same(got, exp)
    if "size" in kwargs:                      # a scalar draw: NumPy's Python float/int
        numpy.random.seed(seed)
        exp = getattr(numpy.random, name)(*args)
        with general_path() if mode == "general" else contextlib.nullcontext():
            mp.random.seed(seed)
            got = getattr(mp.random, name)(*args)
        same(got, exp)


def test_legacy_accepts_minpy_array_parameters():
    loc, scale = numpy.arange(3.0), numpy.array([1.0, 2.0, 3.0])
    numpy.random.seed(5)
    exp = numpy.random.normal(loc, scale)
    mp.random.seed(5)
    same(mp.random.normal(mp.array(loc), mp.array(scale)), exp)
    numpy.random.seed(5)
    exp = numpy.random.choice(loc, 5, p=[0.2, 0.3, 0.5])
    mp.random.seed(5)
    same(mp.random.choice(mp.array(loc), 5, p=mp.array([0.2, 0.3, 0.5])), exp)


def test_get_set_state_round_trip():
    mp.random.seed(3)
    state = mp.random.get_state()
    a = mp.random.rand(4)
    mp.random.set_state(state)
    same(mp.random.rand(4), a.asnumpy())
    rs = mp.random.RandomState(3)
    st_ = rs.get_state()
    assert type(st_[1]) is numpy.ndarray      # host state, as mp.random.get_state
    b = rs.normal(size=3)
    rs.set_state(st_)
    same(rs.normal(size=3), b.asnumpy())


# name -> (args, kwargs): a valid call of each Generator method
GENERATOR = {
    "integers": ((0, 10), dict(size=5)),
    "integers_endpoint": ((1, 6), dict(size=(2, 3), endpoint=True, dtype=numpy.int8)),
    "random": ((), dict(size=4, dtype=numpy.float32)),
    "choice": ((10, 4), dict(replace=False)),
    "choice_p": (([1.0, 2.0, 3.0], 6), dict(p=[0.5, 0.25, 0.25])),
    "bytes": ((5,), {}),
    "permutation": ((7,), {}),
    "permuted": ((numpy.arange(12).reshape(3, 4),), dict(axis=1)),
    "beta": ((2.0, 3.0), dict(size=5)),
    "binomial": ((10, 0.3), dict(size=5)),
    "chisquare": ((3.0,), dict(size=5)),
    "dirichlet": (([1.0, 2.0],), dict(size=3)),
    "exponential": ((2.0, 5), {}),
    "f": ((3.0, 4.0, 5), {}),
    "gamma": ((2.0, 1.0, 5), {}),
    "geometric": ((0.3, 5), {}),
    "gumbel": ((0.0, 1.0, 5), {}),
    "hypergeometric": ((10, 5, 7, 5), {}),
    "laplace": ((0.0, 1.0, 5), {}),
    "logistic": ((0.0, 1.0, 5), {}),
    "lognormal": ((0.0, 1.0, 5), {}),
    "logseries": ((0.5, 5), {}),
    "multinomial": ((10, [0.2, 0.8]), dict(size=3)),
    "multivariate_hypergeometric": (([3, 4, 5], 6), dict(size=2)),
    "multivariate_normal": (([0.0, 0.0], [[1.0, 0.0], [0.0, 1.0]]), dict(size=3)),
    "negative_binomial": ((5, 0.5, 5), {}),
    "noncentral_chisquare": ((3.0, 2.0, 5), {}),
    "noncentral_f": ((3.0, 4.0, 2.0, 5), {}),
    "normal": ((1.0, 2.0), dict(size=(2, 2))),
    "pareto": ((3.0, 5), {}),
    "poisson": ((3.0, 5), {}),
    "power": ((2.0, 5), {}),
    "rayleigh": ((1.0, 5), {}),
    "standard_cauchy": ((5,), {}),
    "standard_exponential": ((5,), dict(dtype=numpy.float32)),
    "standard_gamma": ((2.0, 5), {}),
    "standard_normal": ((5,), dict(dtype=numpy.float32)),
    "standard_t": ((3.0, 5), {}),
    "triangular": ((0.0, 1.0, 2.0, 5), {}),
    "uniform": ((0.0, 1.0, 5), {}),
    "vonmises": ((0.0, 1.0, 5), {}),
    "wald": ((1.0, 1.0, 5), {}),
    "weibull": ((2.0, 5), {}),
    "zipf": ((2.0, 5), {}),
}


def test_every_generator_method_is_in_the_table():
    methods = {n for n in dir(numpy.random.Generator) if not n.startswith("_")}
    tested = {n.split("_endpoint")[0].split("_p")[0] if n in ("integers_endpoint", "choice_p")
              else n for n in GENERATOR}
    assert methods == tested | {"shuffle", "spawn", "bit_generator"}


@pytest.mark.parametrize("case", sorted(GENERATOR))
@given(seed=st.integers(0, 2**63))
def test_generator_matches_numpy(case, seed):
    name = {"integers_endpoint": "integers", "choice_p": "choice"}.get(case, case)
    args, kwargs = GENERATOR[case]
    exp = getattr(numpy.random.default_rng(seed), name)(*args, **kwargs)
    margs = [mp.array(a) if isinstance(a, numpy.ndarray) else a for a in args]
    got = getattr(mp.random.default_rng(seed), name)(*margs, **kwargs)
    same(got, exp)


def test_generator_construction_and_spawn():
    g = mp.random.default_rng(42)
    assert isinstance(g, mp.random.Generator)
    assert mp.random.default_rng(g) is g
    assert isinstance(g.bit_generator, numpy.random.PCG64)
    direct = mp.random.Generator(mp.random.PCG64(42))
    same(direct.normal(size=3), numpy.random.Generator(numpy.random.PCG64(42)).normal(size=3))
    ss = numpy.random.SeedSequence(9)
    same(mp.random.default_rng(ss).random(2), numpy.random.default_rng(ss).random(2))
    kids, np_kids = g.spawn(3), numpy.random.default_rng(42).spawn(3)
    assert len(kids) == 3 and all(isinstance(k, mp.random.Generator) for k in kids)
    for k, nk in zip(kids, np_kids):
        same(k.integers(0, 1000, size=4), nk.integers(0, 1000, size=4))
    draws = {tuple(k.integers(0, 2**30, size=3).tolist()) for k in g.spawn(3)}
    assert len(draws) == 3                     # independent streams


def test_random_state_matches_numpy():
    rs, nrs = mp.random.RandomState(7), numpy.random.RandomState(7)
    same(rs.normal(size=(2, 3)), nrs.normal(size=(2, 3)))
    same(rs.randint(0, 5, size=4), nrs.randint(0, 5, size=4))
    same(rs.randint(5), nrs.randint(5))
    same(rs.rand(), nrs.rand())
    rs.seed(1)
    nrs.seed(1)
    same(rs.choice(4, 2, replace=False), nrs.choice(4, 2, replace=False))
    same(rs.permutation(mp.arange(5)), nrs.permutation(numpy.arange(5)))


# ------------------------------------------------------------------ moments
N = 200_000
# name -> (args, mean, variance)
MOMENTS = {
    "normal": ((2.0, 3.0), 2.0, 9.0),
    "uniform": ((-1.0, 3.0), 1.0, 16.0 / 12),
    "exponential": ((2.0,), 2.0, 4.0),
    "poisson": ((4.0,), 4.0, 4.0),
    "binomial": ((10, 0.3), 3.0, 2.1),
}


@pytest.mark.parametrize("api", ["legacy", "generator"])
@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_distribution_moments(name, api):
    args, mean, var = MOMENTS[name]
    if api == "legacy":
        mp.random.seed(2024)
        x = getattr(mp.random, name)(*args, size=N)
    else:
        x = getattr(mp.random.default_rng(2024), name)(*args, size=N)
    assert isinstance(x, mp.Array) and x.shape == (N,)
    m, v = float(x.mean()), float(x.var())
    assert abs(m - mean) < 6 * (var / N) ** 0.5, (m, mean)
    assert abs(v - var) < 0.03 * var, (v, var)


def test_integers_range_and_moments():
    x = mp.random.default_rng(1).integers(0, 10, size=N)
    assert x.dtype == numpy.int64
    counts = numpy.bincount(x.asnumpy(), minlength=10)
    assert counts.size == 10 and counts.min() > N / 10 * 0.95
    assert abs(float(x.mean()) - 4.5) < 6 * (8.25 / N) ** 0.5
    mp.random.seed(1)
    y = mp.random.randint(-3, 3, size=N)
    assert int(y.min()) == -3 and int(y.max()) == 2


# ------------------------------------------------------------------ in place, choice
@pytest.mark.parametrize("shape", [(10,), (5, 3)])
def test_shuffle_in_place(shape):
    xn = numpy.arange(numpy.prod(shape)).reshape(shape)
    for shuffle, np_shuffle in [
            (lambda x: (mp.random.seed(4), mp.random.shuffle(x)),
             lambda x: (numpy.random.seed(4), numpy.random.shuffle(x))),
            (lambda x: mp.random.default_rng(4).shuffle(x),
             lambda x: numpy.random.default_rng(4).shuffle(x)),
            (lambda x: mp.random.RandomState(4).shuffle(x),
             lambda x: numpy.random.RandomState(4).shuffle(x))]:
        x = mp.array(xn)
        data = x._data
        shuffle(x)
        exp = xn.copy()
        np_shuffle(exp)
        same(x, exp)
        assert x._data is data                   # mutated, not rebound
        assert sorted(x.asnumpy().ravel().tolist()) == sorted(xn.ravel().tolist())
        if len(shape) == 2:                      # rows move whole
            assert {tuple(r) for r in x.tolist()} == {tuple(r) for r in xn.tolist()}
    x = mp.array(xn)
    mp.random.default_rng(3).shuffle(x, axis=-1)
    exp = xn.copy()
    numpy.random.default_rng(3).shuffle(exp, axis=-1)
    same(x, exp)


def test_shuffle_host_sequences_in_place():
    for make_mp, make_np in [
            (lambda: (mp.random.seed(8), mp.random.shuffle)[1],
             lambda: (numpy.random.seed(8), numpy.random.shuffle)[1]),
            (lambda: mp.random.default_rng(8).shuffle, lambda: numpy.random.default_rng(8).shuffle),
            (lambda: mp.random.RandomState(8).shuffle,
             lambda: numpy.random.RandomState(8).shuffle)]:
        for seq in (list(range(10)), numpy.arange(10)):
            got, exp = (seq.copy() if isinstance(seq, numpy.ndarray) else list(seq)), \
                (seq.copy() if isinstance(seq, numpy.ndarray) else list(seq))
            make_mp()(got)
            make_np()(exp)
            assert list(got) == list(exp) and list(got) != list(range(10))


def test_permutation_copies():
    xn = numpy.arange(8)
    x = mp.array(xn)
    mp.random.seed(0)
    p = mp.random.permutation(x)
    numpy.random.seed(0)
    same(p, numpy.random.permutation(xn))
    same(x, xn)                                  # the input is untouched
    assert sorted(p.tolist()) == list(range(8))


def test_choice():
    g = mp.random.default_rng(0)
    x = g.choice(mp.arange(10), size=(2, 5), replace=False)
    assert isinstance(x, mp.Array) and x.shape == (2, 5)
    assert sorted(x.ravel().tolist()) == list(range(10))
    y = g.choice(4, size=N // 10, p=[0.1, 0.2, 0.3, 0.4])
    freq = numpy.bincount(y.asnumpy(), minlength=4) / y.size
    numpy.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.01)
    mp.random.seed(2)
    z = mp.random.choice(5, 100, replace=True)
    assert int(z.max()) <= 4 and len(set(z.tolist())) == 5


ERRORS = [
    ("normal", (0.0, -1.0), {}),
    ("exponential", (-2.0,), {}),
    ("uniform", (0.0, 1.0), dict(size=-1)),
    ("binomial", (10, 1.5), {}),
    ("poisson", (-1.0,), {}),
    ("randint", (5, 2), {}),
    ("choice", (5, 6), dict(replace=False)),
    ("choice", (3,), dict(p=[0.5, 0.6, 0.1])),
    ("choice", (3,), dict(p=[1.5, -0.5, 0.0])),
    ("dirichlet", ([-1.0, 1.0],), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ERRORS)
def test_errors_like_numpy(name, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(numpy.random, name)(*args, **kwargs)
        except (ValueError, TypeError) as e:
            expected = type(e)
        else:
            pytest.fail(f"numpy accepted {name}{args}")
        with pytest.raises(expected):
            getattr(mp.random, name)(*args, **kwargs)
        gname = "integers" if name == "randint" else name
        try:
            getattr(numpy.random.default_rng(0), gname)(*args, **kwargs)
        except (ValueError, TypeError) as e:
            with pytest.raises(type(e)):
                getattr(mp.random.default_rng(0), gname)(*args, **kwargs)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_draws_are_placed_on_the_current_device():
    with installed(), mp.gpu(0):
        for name, (args, kwargs) in LEGACY.items():
            got = getattr(mp.random, name)(*args, **kwargs)
            exp = getattr(numpy.random, name)(*args, **kwargs)
            if isinstance(exp, numpy.ndarray):
                assert isinstance(got, mp.Array) and got.context == mp.gpu(0), name
                assert got.shape == exp.shape and got.dtype == exp.dtype, name
        for case in ("normal", "integers", "permuted", "choice_p"):
            name = {"choice_p": "choice"}.get(case, case)
            args, kwargs = GENERATOR[case]
            exp = getattr(numpy.random.default_rng(3), name)(*args, **kwargs)
            margs = [mp.array(a) if isinstance(a, numpy.ndarray) else a for a in args]
            got = getattr(mp.random.default_rng(3), name)(*margs, **kwargs)
            assert got.context == mp.gpu(0), case
            same(got, exp)
        x = mp.arange(10)
        data = x._data
        mp.random.default_rng(5).shuffle(x)
        exp = numpy.arange(10)
        numpy.random.default_rng(5).shuffle(exp)
        same(x, exp)
        assert x._data is data and x.context == mp.gpu(0)
        mp.random.shuffle(x)
        assert sorted(x.tolist()) == list(range(10)) and x._data is data
