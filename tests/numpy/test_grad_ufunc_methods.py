"""Gradients of ufunc methods (minpy/numpy/vjp_ufunc_methods.py): reduce, accumulate,
reduceat, outer and at of every differentiable binary ufunc (and at of unary ones).

Each case compares the value (and dtype and shape) with NumPy's on the same input,
then checks the gradient against finite differences to second order (check_grads,
grad of grad included); exact expectations pin ties, NaNs, repeated indices and
the closed forms.
"""
import warnings

import numpy
import pytest
from hypothesis import event, given, strategies as st
from hypothesis.extra import numpy as hnp

import minpy
import minpy.numpy as mnp
from minpy.core import inplace as functional
from minpy.core.wrappers import UFUNCS
from minpy.numpy.vjp_ufunc_methods import fold_reduce, supported_methods
from minpy.testing import check_grads
from _host import host as _host

grad = minpy.grad
_NO = numpy._NoValue

# every differentiable binary ufunc (ldexp takes integer exponents: no float reduction)
BINARY = sorted(n for n, u in UFUNCS.items() if u.nin == 2 and u.nout == 1
                and u.signature is None and u._prim.vjp and n != "ldexp")
# NumPy 2.4 computes power/arctan2 .reduce over a contiguous axis, and .reduceat over
# segments of 3+ elements, as x0 op x_last (their accumulate is right): those are not
# tested against NumPy (see test_numpy_contiguous_power_reduce_is_the_fold)
CONTIGUOUS_BUG = ("power", "arctan2")
REORDERABLE = ("add", "multiply", "maximum", "minimum", "fmax", "fmin", "logaddexp",
               "logaddexp2", "hypot")
POSITIVE = ("power", "float_power")        # a negative base has no real power


def data(name, shape, seed=0):
    """Values in +-[0.5, 1.5] (positive for powers): no zeros, no ties."""
    r = numpy.random.default_rng(seed)
    v = r.uniform(0.5, 1.5, shape)
    return v if name in POSITIVE else v * r.choice([-1.0, 1.0], shape)


def same(actual, expected, rtol=1e-7):
    a = _host(actual)
    assert a.dtype == expected.dtype and a.shape == expected.shape
    numpy.testing.assert_allclose(a, expected, rtol=rtol, atol=1e-12)


def both(method, name, x, *args, **kw):
    """(minpy result, NumPy result) of ``name.method(x, *args, **kw)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = getattr(getattr(numpy, name), method)(x, *args, **kw)
    return getattr(getattr(mnp, name), method)(mnp.array(x), *args, **kw), ref


# ---------------------------------------------------------------- reduce
def _reduce_cases(name):
    w = numpy.array([[True, False, True, True], [False, True, True, False],
                     [True, True, False, True]])
    cases = [((3, 4), dict(axis=0)), ((3, 4), dict(axis=0, keepdims=True, initial=1.25)),
             ((3, 4), dict(axis=0, initial=0.75, where=w))]
    if name not in CONTIGUOUS_BUG:
        cases += [((2, 3, 4), dict(axis=-1)), ((4,), dict(axis=None)), ((3,), dict(initial=None)),
                  ((2, 3), dict(axis=1, keepdims=True)), ((), dict(axis=None))]
    if name in REORDERABLE:
        cases += [((2, 3, 4), dict(axis=(0, 2))), ((3, 4), dict(axis=None, where=w, initial=0.5)),
                  ((2, 3), dict(axis=()))]
    return cases


@pytest.mark.parametrize("name", BINARY)
def test_reduce(name):
    for shape, kw in _reduce_cases(name):
        x = data(name, shape)
        mine, ref = both("reduce", name, x, **kw)
        same(mine, ref)
        f = getattr(mnp, name).reduce
        check_grads(lambda a: f(a, **kw), mnp.array(x), order=2)
        if kw.get("initial") is not None:
            check_grads(lambda i: f(mnp.array(x), **{**kw, "initial": i}), kw["initial"], order=2)


@pytest.mark.parametrize("name", ["subtract", "divide", "logaddexp", "hypot", "copysign"])
def test_reduce_dtype_and_sequence(name):
    x = data(name, (3, 4))
    mine, ref = both("reduce", name, x, axis=0, dtype=numpy.float32)
    same(mine, ref, rtol=1e-5)
    f = getattr(mnp, name).reduce
    g32 = grad(lambda a: mnp.sum(f(a, axis=0, dtype=numpy.float32)))(mnp.array(x))
    g64 = grad(lambda a: mnp.sum(f(a, axis=0)))(mnp.array(x))
    assert g32.dtype == numpy.float64
    numpy.testing.assert_allclose(_host(g32), _host(g64), rtol=1e-4)
    check_grads(lambda a, b: f([a, b]), mnp.array(x[0]), mnp.array(x[1]), order=2)


def test_reduce_closed_forms_exact():
    x = mnp.array([3.0, 1.0, 2.0])
    numpy.testing.assert_array_equal(_host(grad(lambda a: mnp.subtract.reduce(a))(x)),
                                     [1.0, -1.0, -1.0])
    numpy.testing.assert_array_equal(
        _host(grad(lambda a: mnp.subtract.reduce(a, initial=5.0))(x)), [-1.0, -1.0, -1.0])
    soft = numpy.exp([3.0, 1.0, 2.0]) / numpy.exp([3.0, 1.0, 2.0]).sum()
    numpy.testing.assert_allclose(_host(grad(lambda a: mnp.logaddexp.reduce(a))(x)), soft)
    numpy.testing.assert_allclose(_host(grad(lambda a: mnp.hypot.reduce(a))(x)),
                                  [3.0, 1.0, 2.0] / numpy.sqrt(14.0))
    # hypot starts from its identity 0: a single element gives |x| (gradient sign(x))
    assert _host(grad(lambda a: mnp.hypot.reduce(a))(mnp.array([-2.0])))[0] == -1.0
    assert _host(grad(lambda a: mnp.hypot.reduce(a))(mnp.zeros(2))).tolist() == [0.0, 0.0]


@pytest.mark.xfail(strict=True, reason="NumPy 2.4 bug: power/arctan2 .reduce over a "
                   "contiguous axis give x0 op x_last; the gradient is the fold's")
def test_numpy_contiguous_power_reduce_is_the_fold():
    x = numpy.array([2.0, 3.0, 2.0])
    assert numpy.power.reduce(x) == fold_reduce(mnp.power)(mnp.array(x)).item() == 64.0


@given(name=st.sampled_from(["subtract", "divide", "logaddexp", "hypot", "maximum", "fmod"]),
       shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
       axis=st.one_of(st.none(), st.integers(-3, 2), st.tuples(st.integers(-3, 2))),
       keepdims=st.booleans(), initial=st.sampled_from([_NO, None, 1.25]),
       masked=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_reduce_drawn(name, shape, axis, keepdims, initial, masked, seed):
    x = data(name, shape, seed)
    kw = dict(axis=axis, keepdims=keepdims)
    if initial is not _NO:
        kw["initial"] = initial
    if masked:
        kw["where"] = numpy.random.default_rng(seed).random(shape) > 0.3
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = getattr(numpy, name).reduce(x, **kw)
    except (ValueError, TypeError, numpy.exceptions.AxisError) as e:
        event("NumPy rejects the case")
        with pytest.raises(type(e)):
            getattr(mnp, name).reduce(mnp.array(x), **kw)
        return
    same(getattr(mnp, name).reduce(mnp.array(x), **kw), ref)
    check_grads(lambda a: getattr(mnp, name).reduce(a, **kw), mnp.array(x), order=2)


# ---------------------------------------------------------------- accumulate
@pytest.mark.parametrize("name", BINARY)
def test_accumulate(name):
    for shape, axis in (((2, 3, 4), 0), ((2, 3, 4), -1), ((5,), 0), ((3, 1), 1)):
        x = data(name, shape, seed=1)
        mine, ref = both("accumulate", name, x, axis=axis)
        same(mine, ref)
        check_grads(lambda a: getattr(mnp, name).accumulate(a, axis=axis), mnp.array(x), order=2)


def test_accumulate_dtype():
    x = data("subtract", (3, 4))
    for name in ("subtract", "maximum", "logaddexp", "hypot", "divide"):
        mine, ref = both("accumulate", name, x, axis=1, dtype=numpy.float32)
        same(mine, ref, rtol=1e-5)
        g = grad(lambda a: mnp.sum(getattr(mnp, name).accumulate(a, 1, numpy.float32)))(
            mnp.array(x))
        g64 = grad(lambda a: mnp.sum(getattr(mnp, name).accumulate(a, 1)))(mnp.array(x))
        numpy.testing.assert_allclose(_host(g), _host(g64), rtol=1e-4)


def test_running_extremum_goes_to_the_setter():
    w = mnp.arange(1.0, 7.0)
    g = grad(lambda a: mnp.sum(mnp.maximum.accumulate(a) * w))(mnp.array([1., 3, 3, 2, 5, 5]))
    numpy.testing.assert_array_equal(_host(g), [1, 2 + 3 + 4, 0, 0, 5 + 6, 0])
    g = grad(lambda a: mnp.sum(mnp.minimum.accumulate(a, axis=1) * w.reshape(2, 3)))(
        mnp.array([[3., 1, 2], [0, 4, -1]]))
    numpy.testing.assert_array_equal(_host(g), [[1, 5, 0], [9, 0, 6]])
    nan = numpy.nan
    x = mnp.array([1.0, nan, 3.0, 2.0, 5.0])       # maximum propagates NaN: the NaN set
    numpy.testing.assert_array_equal(                # every result after it
        _host(grad(lambda a: mnp.sum(mnp.maximum.accumulate(a)))(x)), [1, 4, 0, 0, 0])
    numpy.testing.assert_array_equal(                # fmax skips it
        _host(grad(lambda a: mnp.sum(mnp.fmax.accumulate(a)))(x)), [2, 0, 2, 0, 1])
    numpy.testing.assert_array_equal(                # an all-NaN start: its first element
        _host(grad(lambda a: mnp.sum(mnp.fmin.accumulate(a)))(mnp.array([nan, nan, 3.0, 4.0]))),
        [2, 0, 2, 0])


def test_logaddexp_accumulate_no_overflow():
    x = mnp.array([800.0, 801.0, -800.0, 802.0])
    g = grad(lambda a: mnp.sum(mnp.logaddexp.accumulate(a)))(x)
    ref = grad(lambda a: mnp.sum(mnp.logaddexp.accumulate(a - 800.0)))(x)
    assert numpy.isfinite(_host(g)).all()
    numpy.testing.assert_allclose(_host(g), _host(ref), rtol=1e-12)


# ---------------------------------------------------------------- reduceat
# repeated, non-increasing and last-position indices (NumPy: a[i] alone when i >= next)
INDICES = ([0, 2, 1, 3, 3, 0], [3, 0, 3, 1], [0], [1, 1, 2, 2])


@pytest.mark.parametrize("name", BINARY)
def test_reduceat(name):
    x = data(name, (4, 5, 4), seed=2)
    axes = (0,) if name in CONTIGUOUS_BUG else (0, 2, -2)
    for idx in ([[1, 1, 2, 2], [0, 2]] if name in CONTIGUOUS_BUG else INDICES):
        for axis in axes:
            mine, ref = both("reduceat", name, x, idx, axis=axis)
            same(mine, ref)
            check_grads(lambda a: getattr(mnp, name).reduceat(a, idx, axis=axis), mnp.array(x),
                        order=2)


def test_reduceat_exact():
    x = mnp.array([1.0, 2.0, 2.0, 0.5])
    w = mnp.array([1.0, 10.0, 100.0, 1000.0])
    g = grad(lambda a: mnp.sum(mnp.add.reduceat(a, [0, 2, 1, 3]) * w))(x)
    # segments [0, 2), {2} (2 >= 1), [1, 3), [3, 4)
    numpy.testing.assert_array_equal(_host(g), [1, 1 + 100, 10 + 100, 1000])
    g = grad(lambda a: mnp.sum(mnp.maximum.reduceat(a, [0, 3])))(x)
    numpy.testing.assert_array_equal(_host(g), [0, 0.5, 0.5, 1])      # a tie splits
    z = mnp.array([[2.0, 0.0, 3.0, 0.0, 5.0]])      # zeros: the exact (fold) rule
    check_grads(lambda a: mnp.multiply.reduceat(a, [0, 3, 2], axis=1), z, order=2)
    g = grad(lambda a: mnp.sum(mnp.multiply.reduceat(a, [0, 3], axis=1)))(z)
    numpy.testing.assert_array_equal(_host(g), [[0, 6, 0, 5, 0]])


def test_reduceat_dtype_and_complex():
    x = data("add", (2, 5))
    for name in ("add", "maximum", "subtract", "multiply"):
        mine, ref = both("reduceat", name, x, [0, 3, 1], axis=1, dtype=numpy.float32)
        same(mine, ref, rtol=1e-5)
    z = mnp.array(x + 1j * data("add", (2, 5), seed=5))
    for name in ("add", "multiply", "subtract", "divide"):
        check_grads(lambda a: getattr(mnp, name).reduceat(a, [0, 3, 1], axis=1), z, order=2)


# ---------------------------------------------------------------- outer
@pytest.mark.parametrize("name", BINARY + ["divmod"])     # heaviside: x1 gets None (zero)
def test_outer(name):
    a, b = data(name, (2, 3), 3), data(name, (4,), 4)
    if name in ("divmod", "fmod", "remainder"):
        b = numpy.abs(b) + 1.0
    mine, ref = both("outer", name, a, b)
    if name == "divmod":
        for m, r in zip(mine, ref):
            same(m, r)
        check_grads(lambda u, v: mnp.divmod.outer(u, v)[1], mnp.array(a), mnp.array(b), order=2)
        return
    same(mine, ref)
    check_grads(getattr(mnp, name).outer, mnp.array(a), mnp.array(b), order=2)


# ---------------------------------------------------------------- at
def _at_case(name, x, key, b):
    """(y after name.at(y, key, b) on a traced copy, as a function) and NumPy's result."""
    ref = x.copy()
    getattr(numpy, name).at(ref, key, *(() if b is None else (b,)))

    def f(a, *v):
        y = a * 1.0
        getattr(mnp, name).at(y, key, *v)
        return y
    return f, ref


AT_KEYS = [([0, 2, 0, 0, 1], (5, 1)),                                # repeated, 1-D
           ((numpy.array([0, 2, 0]), numpy.array([1, 3, 1])), (3,)),  # a repeated pair
           ((slice(None), [0, 0]), (3, 1)),                         # slice + repeats, broadcast b
           ((1, slice(1, 3)), ())]                                  # basic index, scalar b


@pytest.mark.parametrize("name", BINARY)
def test_at_binary(name):
    x = data(name, (3, 4), 6)
    for key, bshape in AT_KEYS:
        b = data(name, bshape, 7)
        f, ref = _at_case(name, x, key, b)
        out = {}

        def traced(a):
            out["y"] = f(a, mnp.array(b))
            return mnp.sum(out["y"])
        grad(traced)(mnp.array(x))
        same(out["y"], ref, rtol=1e-12)
        check_grads(f, mnp.array(x), mnp.array(b), order=2)


@pytest.mark.parametrize("name", ["negative", "square", "sin", "exp", "reciprocal", "floor"])
def test_at_unary(name):
    x = data(name, (6,), 8)
    f, ref = _at_case(name, x, [0, 3, 0, 5, 0], None)      # x0 updated three times
    out = {}
    grad(lambda a: mnp.sum(out.setdefault("y", f(a))))(mnp.array(x))
    same(out["y"], ref, rtol=1e-12)
    check_grads(f, mnp.array(x), order=2)


def test_at_exact_and_targets():
    # add.at: a scatter-add into the target; only b traced, target untraced
    b = mnp.array([1.0, 2.0, 3.0])
    g = grad(lambda v: mnp.sum((lambda y: (mnp.add.at(y, [0, 0, 2], v * v), y)[1])(
        mnp.zeros(4)) * mnp.array([1., 10, 100, 1000])))(b)
    numpy.testing.assert_array_equal(_host(g), [2, 4, 600])
    # multiply.at(y, [0, 0], x) with y = x: y0 = x0 * x0 * x1
    x = mnp.array([2.0, 5.0])
    g = grad(lambda a: mnp.sum((lambda y: (mnp.multiply.at(y, [0, 0], a), y)[1])(a * 1.0)))(x)
    numpy.testing.assert_array_equal(_host(g), [2 * 2 * 5, 2 * 2 + 1])
    # float32 target, float64 values: the target keeps its dtype
    x32 = mnp.array([1.0, 2.0], dtype=numpy.float32)
    out = {}

    def f(a):
        y = a * 1
        mnp.add.at(y, [1, 1], mnp.asarray([1.0, 2.0]) * a[0])
        out["y"] = y
        return mnp.sum(y * y)
    g = grad(f)(x32)
    assert out["y"].dtype == numpy.float32 and g.dtype == numpy.float32
    numpy.testing.assert_allclose(_host(out["y"]), [1.0, 5.0])
    # a NumPy target cannot be rebound; without a tape at works in place
    with pytest.raises(TypeError, match=r"in-place add\.at into a ndarray"):
        grad(lambda a: (mnp.add.at(numpy.zeros(2), [0], a[0]), mnp.sum(a))[1])(x)
    y = mnp.array([1.0, 1.0])
    mnp.maximum.at(y, [0, 0, 1], mnp.array([3.0, 2.0, 0.0]))
    numpy.testing.assert_array_equal(_host(y), [3.0, 1.0])
    assert set(f"{n}.at" for n in BINARY) <= set(functional.replays())


# ---------------------------------------------------------------- not differentiable
def test_nondiff_ufunc_methods_return_untraced():
    x = mnp.array([1.5, -2.0, 3.25])

    def f(a):
        parts = [mnp.equal.outer(a, a), mnp.floor_divide.reduce(a),
                 mnp.floor_divide.reduceat(a, [0, 2]), mnp.floor_divide.accumulate(a)]
        assert all(p._node is None for p in parts)
        return mnp.sum(a * parts[1])
    g = grad(f)(x)
    numpy.testing.assert_array_equal(_host(g), numpy.full(3, numpy.floor_divide.reduce(
        _host(x))))


REJECTED = [("sin", "reduce"), ("exp", "outer"), ("divmod", "reduce"), ("divmod", "at"),
            ("modf", "accumulate"), ("matmul", "reduce"), ("vecdot", "outer")]


def _probe(xp, name, method, x):
    uf = getattr(xp, name)
    args = {"reduce": (x,), "accumulate": (x,), "reduceat": (x, [0]), "outer": (x, x),
            "at": (x * 1, [0]) + ((x[:1],) if uf.nin == 2 else ())}[method]
    return getattr(uf, method)(*args)


@pytest.mark.parametrize("name,method", REJECTED, ids=[".".join(r) for r in REJECTED])
def test_methods_numpy_rejects_raise_as_numpy(name, method):
    x = numpy.array([1.0, 2.0])
    with pytest.raises((ValueError, TypeError, RuntimeError)) as err:
        _probe(numpy, name, method, x)
    with pytest.raises(err.type):
        grad(lambda a: mnp.sum(_probe(mnp, name, method, a)))(mnp.array(x))
    assert getattr(mnp, name)._method(method)._prim.nondiff


def test_supported_methods_match_numpy():
    """supported_methods() is what NumPy accepts (probed on float64 where a loop exists)."""
    x = numpy.array([1.0, 2.0])
    for name, uf in sorted(UFUNCS.items()):
        loop = ("dd->" if uf.nin == 2 else "d->") + "d" * uf.nout
        for method in ("reduce", "accumulate", "reduceat", "outer", "at"):
            if method in supported_methods(uf):
                if loop in uf.types:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        _probe(numpy, name, method, x)
            else:
                with pytest.raises((ValueError, TypeError, RuntimeError)):
                    _probe(numpy, name, method, x)
