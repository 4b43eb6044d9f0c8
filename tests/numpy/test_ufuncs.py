"""Every NumPy ufunc, its methods and keywords, and the Array operators, compared
between NumPy and minpy."""
import operator

import numpy
import pytest
from hypothesis import assume, given, settings, strategies as st

import minpy
from _host import assert_result_type
from _strategies import (ALL_DTYPES, array_pairs, arrays, broadcastable_shapes, compare_numpy,
                         dtypes, on_real_gpu, run_both, shapes, with_axis)

UFUNC_NAMES = sorted(n for n in dir(numpy) if isinstance(getattr(numpy, n), numpy.ufunc))

# loop type characters exercised (object and long double loops are host-only)
_CHARS = {c: numpy.dtype(c) for c in "?bBhHiIlLqQefdFD"}
_CHARS.update(M=numpy.dtype("M8[s]"), m=numpy.dtype("m8[s]"))


def loops(uf):
    """Input dtype tuples of ``uf``'s loops whose types are all exercised here."""
    out = []
    for t in uf.types:
        ins = t.split("->")[0]
        if all(c in _CHARS for c in ins):
            out.append(tuple(_CHARS[c] for c in ins))
    return out


def input_shapes(uf):
    """Strategy of input shapes for ``uf``: broadcastable, or its gufunc signature."""
    return broadcastable_shapes(uf.nin, signature=uf.signature, max_side=3)


def _values(dtype, shape):
    """Deterministic inputs with signs, zero, and (for floats) nan and inf."""
    n = int(numpy.prod(shape))
    base = numpy.array([0, 1, -1, 2, 3, -5, 7, 1, -2, 4, 6, -3], dtype=numpy.int64)
    vals = numpy.resize(base, n)
    if dtype.kind in "fc":
        vals = vals * 0.75
        special = [numpy.nan, numpy.inf, -numpy.inf][: max(0, n - 6)]
        vals[n - len(special):] = special if special else vals[n:]
        if dtype.kind == "c":
            vals = vals + 0.5j * numpy.resize(base[::-1], n)
    elif dtype.kind in "Mm":
        return numpy.resize(base, n).astype(dtype).reshape(shape)
    return vals.astype(dtype).reshape(shape)


def _call(name, *arrays_, xp, **kw):
    return getattr(xp, name)(*[xp.asarray(a) for a in arrays_], **kw)


def _sweep_shapes(uf):
    if uf.signature is None:
        return [(3, 4), (4,)][: uf.nin] if uf.nin == 2 else [(3, 4)]
    return {"matmul": [(2, 3, 4), (4, 2)], "matvec": [(2, 3, 4), (4,)],
            "vecdot": [(3, 4), (4,)], "vecmat": [(4,), (2, 4, 3)]}[uf.__name__]


@pytest.mark.parametrize("name", UFUNC_NAMES)
def test_ufunc_every_dtype_and_loop(name):
    """Each exercised dtype for all inputs, then each loop's exact input dtypes: same
    values, dtypes and shapes as NumPy, or the same exception type."""
    uf = getattr(numpy, name)
    shp = _sweep_shapes(uf)
    cases = [(dt,) * uf.nin for dt in ALL_DTYPES] + loops(uf)
    for dts in cases:
        ins = [_values(dt, s) for dt, s in zip(dts, shp)]
        run_both(_call, name, *ins)


@pytest.mark.parametrize("name", UFUNC_NAMES)
@settings(max_examples=12)     # the sweep above covers every dtype and loop already
@given(data=st.data())
def test_ufunc_hypothesis(name, data):
    """Random loops (or one dtype for all inputs), broadcast shapes and values."""
    uf = getattr(numpy, name)
    choices = loops(uf)
    dts = data.draw(st.one_of(st.sampled_from(choices) if choices else st.nothing(),
                              st.sampled_from(ALL_DTYPES).map(lambda d: (d,) * uf.nin)))
    shps = data.draw(input_shapes(uf))
    ins = [data.draw(arrays(dt, s)) for dt, s in zip(dts, shps)]
    if on_real_gpu():
        assume(not _angle_without_digits(name, ins))
    run_both(_call, name, *ins)


def _angle_without_digits(name, ins):
    """A complex power whose ``exponent * log(base)`` has an imaginary part past 2**52:
    the signs of its (infinite) result are the signs of the cosine and sine of an angle
    that a 1-ulp difference in ``log`` (the GPU's ``atan2``) moves by radians."""
    if name not in ("power", "float_power") or not any(a.dtype.kind == "c" for a in ins):
        return False
    with numpy.errstate(all="ignore"):
        z = ins[1].astype(numpy.complex128) * numpy.log(ins[0].astype(numpy.complex128))
    return bool((numpy.abs(z.imag) > 2.0 ** 52).any())


def test_minpy_ufunc_attributes_are_numpys():
    for name in UFUNC_NAMES:
        mine, theirs = getattr(minpy, name), getattr(numpy, name)
        for attr in ("nin", "nout", "nargs", "ntypes", "types", "identity", "signature"):
            assert getattr(mine, attr) == getattr(theirs, attr), (name, attr)
        assert "See also numpy." in mine.__doc__


# ----------------------------------------------------------------- methods
REDUCIBLE = ["add", "multiply", "maximum", "minimum", "subtract", "logical_and",
             "logical_or", "bitwise_xor", "fmax", "hypot"]


@pytest.mark.parametrize("name", REDUCIBLE)
@given(a_ax=with_axis(arrays(ALL_DTYPES, max_dims=3, max_side=3)), keep=st.booleans())
@compare_numpy
def test_reduce(name, a_ax, keep, xp):
    a, ax = a_ax
    return getattr(xp, name).reduce(xp.asarray(a), axis=ax, keepdims=keep)


@pytest.mark.parametrize("name", REDUCIBLE)
@given(a_ax=with_axis(arrays(ALL_DTYPES, min_dims=1, max_dims=3, max_side=3),
                      allow_none=False, allow_tuple=False))
@compare_numpy
def test_accumulate(name, a_ax, xp):
    a, ax = a_ax
    return getattr(xp, name).accumulate(xp.asarray(a), axis=ax)


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "greater", "power",
                                  "arctan2", "logical_xor"])
@given(a=arrays(ALL_DTYPES, max_dims=2, max_side=3), b=arrays(ALL_DTYPES, max_dims=2))
@compare_numpy
def test_outer(name, a, b, xp):
    return getattr(xp, name).outer(xp.asarray(a), xp.asarray(b))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "bitwise_or"])
@given(a=arrays(ALL_DTYPES, min_dims=1, max_dims=2, min_side=1, max_side=5),
       idx=st.lists(st.integers(0, 100), min_size=1, max_size=4))
@compare_numpy
def test_reduceat(name, a, idx, xp):
    idx = [i % a.shape[-1] for i in idx]
    return getattr(xp, name).reduceat(xp.asarray(a), idx, axis=-1)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "subtract"])
@given(a=arrays(ALL_DTYPES, shape=(6,)),
       idx=st.lists(st.integers(-6, 5), min_size=1, max_size=8))
@compare_numpy
def test_at_writes_in_place(name, a, idx, xp):
    x = xp.array(a)
    res = getattr(xp, name).at(x, idx, 2)
    assert res is None
    return x


@compare_numpy
def test_at_unary(xp):
    x = xp.array(numpy.arange(-3.0, 3.0))
    xp.negative.at(x, [0, 2, 2])
    return x


def test_reduce_axis_error_type():
    with pytest.raises(numpy.exceptions.AxisError):
        minpy.add.reduce(minpy.ones((2, 3)), axis=2)


# ----------------------------------------------------------------- keywords
@given(pair=st.tuples(arrays(("float32", "float64", "int32"), (2, 3)),
                      arrays(("float32", "float64", "int32"), (3,))))
@compare_numpy
def test_out_returns_and_writes_the_same_array(pair, xp):
    a, b = pair
    out = xp.zeros((2, 3), dtype=numpy.float64)
    res = xp.add(xp.asarray(a), xp.asarray(b), out=out)
    assert res is out
    res1 = xp.multiply(xp.asarray(a), xp.asarray(b), out=(out,))
    assert res1 is out, type(res1)
    return out


@compare_numpy
def test_out_shape_error(xp):
    xp.add(xp.ones((2, 3)), 1, out=xp.zeros((3, 2)))


def test_out_casting_error_type_matches():
    run_both(lambda xp: xp.add(xp.ones(3), 1, out=xp.zeros(3, dtype=numpy.int64)))


@compare_numpy
def test_two_outputs_out_tuple(xp):
    a = xp.asarray(numpy.linspace(-3, 3, 7))
    q, r = xp.zeros(7), xp.zeros(7)
    res = xp.divmod(a, 2.0, out=(q, r))
    assert type(res) is tuple and res[0] is q and res[1] is r
    m1, m2 = xp.modf(a, out=(None, r))
    assert m2 is r
    return q, r, m1


@compare_numpy
def test_unary_out(xp):
    x = xp.asarray(numpy.linspace(0, 2, 5))
    out = xp.empty(5)
    assert xp.sqrt(x, out=out) is out
    return out


@given(a=arrays(("float64", "int32"), (3, 4)), m=arrays(bool, (4,)))
@compare_numpy
def test_where_with_out(a, m, xp):
    out = xp.full((3, 4), -7.0)
    r = xp.add(xp.asarray(a), 1, out=out, where=xp.asarray(m))
    assert r is out
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64", "int16", "bool"])
@compare_numpy
def test_dtype_keyword(dtype, xp):
    a = xp.asarray(numpy.arange(6).reshape(2, 3))
    return (xp.add(a, a, dtype=dtype), xp.multiply.reduce(a, axis=0, dtype=dtype),
            xp.sqrt(a, dtype="float32"))


@compare_numpy
def test_casting_keyword(xp):
    a = xp.asarray(numpy.arange(3, dtype=numpy.int64))
    return xp.add(a, a, dtype=numpy.int8, casting="unsafe"), xp.add(a, 1.5, casting="no")


@compare_numpy
def test_numpy_ufunc_on_minpy_array_stays_minpy(xp):
    a = xp.asarray(numpy.arange(4.0))
    res = numpy.exp(a), numpy.add(a, 1), numpy.add.reduce(a), numpy.maximum.accumulate(a)
    if xp is minpy:     # arrays stay minpy Arrays; the reduction is NumPy's scalar
        assert all(type(r) is minpy.Array for r in res[:2] + res[3:])
        assert_result_type(res[2], numpy.float64(0))
    return res


def test_ndarray_out_stays_ndarray():
    host = numpy.zeros(3)
    res = minpy.add(minpy.arange(3.0), 1, out=host)
    assert res is host
    numpy.testing.assert_array_equal(host, [1, 2, 3])


# ----------------------------------------------------------------- operators
BINARY_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
              operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
              operator.lshift, operator.rshift, operator.lt, operator.le, operator.gt,
              operator.ge, operator.eq, operator.ne, divmod]
INPLACE_OPS = [operator.iadd, operator.isub, operator.imul, operator.itruediv,
               operator.ifloordiv, operator.imod, operator.ipow, operator.iand, operator.ior,
               operator.ixor, operator.ilshift, operator.irshift]
UNARY_OPS = [operator.neg, operator.pos, abs, operator.invert]
SCALARS = [True, 3, -2, 2.5, 1 - 2j, numpy.float32(1.5), numpy.int8(-3), numpy.uint8(200)]
OP_DTYPES = ("bool", "int8", "int64", "uint8", "float32", "float64", "complex128")


def _name(op):
    return op.__name__


@pytest.mark.parametrize("op", BINARY_OPS, ids=_name)
@given(pair=array_pairs(OP_DTYPES, max_side=3))
@compare_numpy
def test_binary_operator(op, pair, xp):
    a, b = pair
    return op(xp.asarray(a), xp.asarray(b))


@pytest.mark.parametrize("op", BINARY_OPS, ids=_name)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@compare_numpy
def test_scalar_operator_both_sides(op, scalar, xp):
    """array op scalar and scalar op array (the reflected method), every dtype;
    an error is compared by its type name."""
    outcomes = []
    for dt in OP_DTYPES:
        a = xp.asarray(_values(numpy.dtype(dt), (2, 3)))
        for x, y in ((a, scalar), (scalar, a)):
            try:
                outcomes.append(op(x, y))
            except (TypeError, ValueError, ZeroDivisionError) as e:
                outcomes.append(type(e).__name__)
    return outcomes


@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.pow, operator.lt,
                                operator.and_, operator.matmul, divmod], ids=_name)
@given(a=arrays(("int32", "float64"), (3, 3)), b=arrays(("int64", "float32"), (3, 3)))
@compare_numpy
def test_numpy_array_op_minpy_array_is_minpy(op, a, b, xp):
    """ndarray (left) op xp array (right): minpy's result must be a minpy Array."""
    return op(a, xp.asarray(b))


@pytest.mark.parametrize("op", UNARY_OPS, ids=_name)
@given(a=arrays(OP_DTYPES, max_side=3))
@compare_numpy
def test_unary_operator(op, a, xp):
    return op(xp.asarray(a))


@given(shps=broadcastable_shapes(signature=numpy.matmul.signature, max_side=3),
       dts=st.tuples(dtypes(("int32", "float64", "complex64", "bool")),
                     dtypes(("int8", "float32", "complex128"))), data=st.data())
def test_matmul_operator(shps, dts, data):
    a, b = (data.draw(arrays(d, s)) for d, s in zip(dts, shps))
    run_both(lambda xp: (xp.asarray(a) @ xp.asarray(b), a @ xp.asarray(b), xp.asarray(a) @ b))


@compare_numpy
def test_matmul_mismatch_and_scalar_errors(xp):
    res = []
    for x, y in [(xp.ones((2, 3)), xp.ones((2, 3))), (xp.ones(3), 2.0)]:
        try:
            res.append(x @ y)
        except (TypeError, ValueError) as e:
            res.append(type(e).__name__)
    return res


@st.composite
def inplace_pairs(draw):
    """(a, b) where b mostly broadcasts to a's shape (sometimes not: ValueError)."""
    shp = draw(shapes(max_side=3))
    k = draw(st.integers(0, len(shp)))
    bshp = tuple(draw(st.sampled_from([s, 1])) for s in shp[k:])
    if draw(st.integers(0, 5)) == 0:
        bshp = (2,) + shp
    adt = draw(dtypes(OP_DTYPES))
    bdt = draw(st.one_of(st.just(adt), dtypes(OP_DTYPES)))    # often castable in place
    return draw(arrays(adt, shp)), draw(arrays(bdt, bshp))


@pytest.mark.parametrize("op", INPLACE_OPS, ids=_name)
@given(pair=inplace_pairs())
@compare_numpy
def test_inplace_operator(op, pair, xp):
    """Same object back, values updated; casting/broadcast errors as NumPy's."""
    a, b = pair
    x = xp.array(a)
    res = op(x, xp.asarray(b))
    assert res is x
    return x


@pytest.mark.parametrize("op", [operator.iadd, operator.imul, operator.itruediv,
                                operator.ipow, operator.ior], ids=_name)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("dt", OP_DTYPES)
@compare_numpy
def test_inplace_operator_with_scalar(op, scalar, dt, xp):
    x = xp.array(_values(numpy.dtype(dt), (2, 3)))
    res = op(x, scalar)
    assert res is x
    return x


@compare_numpy
def test_inplace_matmul(xp):
    x = xp.array(numpy.arange(9.0).reshape(3, 3))
    res = operator.imatmul(x, xp.asarray(numpy.eye(3) * 2))
    assert res is x
    return x


def test_ndarray_inplace_op_with_minpy_operand_keeps_ndarray():
    host = numpy.arange(4.0)
    host += minpy.arange(4.0)
    assert type(host) is numpy.ndarray
    numpy.testing.assert_array_equal(host, [0, 2, 4, 6])


def test_inplace_int_plus_float_error_matches_numpy():
    run_both(lambda xp: operator.iadd(xp.arange(3), 1.5))
    x = minpy.arange(3)
    with pytest.raises(numpy._core._exceptions._UFuncOutputCastingError):
        x += 1.5
    numpy.testing.assert_array_equal(x.asnumpy(), [0, 1, 2])


@given(pair=array_pairs(("int8", "int64", "float64"), max_side=3))
@compare_numpy
def test_divmod_builtin_and_function(pair, xp):
    a, b = pair
    x, y = xp.asarray(a), xp.asarray(b)
    return divmod(x, y), xp.divmod(x, y), divmod(7, x)


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8"])
def test_small_integer_lcm_past_the_dtype_wraps_as_numpy(dtype):
    """NumPy's C promotes 8- and 16-bit operands to int: the product wraps after the
    absolute value is taken (lcm(13, 11) is -113 in int8)."""
    run_both(_call, "lcm", numpy.array([13, 11, 0, -81], dtype) if dtype != "uint8" else
             numpy.array([13, 200, 0, 81], dtype), numpy.array([11, -7, 5, 13], dtype)
             if dtype != "uint8" else numpy.array([11, 7, 5, 13], dtype))


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
@compare_numpy
def test_extremum_at_keeps_float64_digits_and_nan(name, xp):
    """CuPy's float atomics round to float32 and drop NaN operands (minpy: the host)."""
    x = xp.array([0.1, 0.2, numpy.nan, -0.3, 5.0]) * 1.0     # computed: on the device
    getattr(xp, name).at(x, [0, 1, 1, 3, 4], xp.array([0.3, numpy.nan, 0.7, -1 / 3, 1e-9]))
    return x
