"""Shape manipulation, joining, splitting, sorting, searching and products, compared
between NumPy and minpy (values, dtypes, shapes, result types and error types)."""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
from _strategies import (ALL_DTYPES, NUMERIC, array_pairs, arrays, compare_numpy, run_both,
                         shapes, with_axis)

small = dict(max_dims=3, max_side=3)
A = arrays(ALL_DTYPES, **small)
A1 = arrays(ALL_DTYPES, min_dims=1, **small)


def _host(shape, dtype=numpy.float64):
    return numpy.arange(int(numpy.prod(shape)), dtype=dtype).reshape(shape)


# ------------------------------------------------------------------ reshape / axes
@given(a=A, order=st.sampled_from(["C", "F", "A"]), data=st.data())
def test_reshape(a, order, data):
    shape = list(data.draw(st.permutations(a.shape)))
    if shape and data.draw(st.booleans()):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    run_both(lambda xp: (xp.reshape(xp.asarray(a), shape, order=order),
                         xp.asarray(a).reshape(shape, order=order),
                         xp.asarray(a).reshape(*shape) if shape else xp.asarray(a).reshape(())))


@pytest.mark.parametrize("shape", [(5,), (4, -1, 2), (-1, -1), (7, 2)])
@compare_numpy
def test_bad_reshape_raises_value_error(shape, xp):
    xp.reshape(xp.asarray(_host((3, 4))), shape)


@given(a=A, data=st.data())
def test_transpose(a, data):
    perm = tuple(data.draw(st.permutations(range(a.ndim))))
    run_both(lambda xp: (xp.transpose(xp.asarray(a)), xp.transpose(xp.asarray(a), perm),
                         xp.asarray(a).transpose(perm), xp.asarray(a).T,
                         xp.permute_dims(xp.asarray(a), perm)))


@compare_numpy
def test_transpose_bad_axes(xp):
    xp.transpose(xp.ones((2, 3)), (0, 0))


@given(a=A1, data=st.data())
def test_moveaxis_swapaxes(a, data):
    n = a.ndim
    src, dst = data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))
    run_both(lambda xp: (xp.moveaxis(xp.asarray(a), src, dst),
                         xp.swapaxes(xp.asarray(a), src, dst), xp.asarray(a).swapaxes(src, dst),
                         xp.rollaxis(xp.asarray(a), src)))


@given(a=arrays(ALL_DTYPES, shape=shapes(max_dims=4, min_side=1, max_side=2)), data=st.data())
def test_squeeze_expand_dims(a, data):
    ones = [i for i, s in enumerate(a.shape) if s == 1]
    ax = tuple(data.draw(st.lists(st.sampled_from(ones), unique=True))) if ones else None
    new = data.draw(st.integers(-a.ndim - 1, a.ndim))
    run_both(lambda xp: (xp.squeeze(xp.asarray(a)), xp.squeeze(xp.asarray(a), axis=ax),
                         xp.asarray(a).squeeze(), xp.expand_dims(xp.asarray(a), new)))


@compare_numpy
def test_squeeze_non_unit_axis_error(xp):
    xp.squeeze(xp.ones((2, 1)), axis=0)


@given(a=A, order=st.sampled_from(["C", "F", "K"]))
@compare_numpy
def test_ravel_flatten(a, order, xp):
    x = xp.asarray(a)
    return xp.ravel(x, order=order), x.ravel(order), x.flatten(order)


# ------------------------------------------------------------------ joining / splitting
@given(a=arrays(ALL_DTYPES, shape=(2, 3)), b=arrays(ALL_DTYPES, shape=(2, 3)),
       axis=st.integers(-2, 1))
@compare_numpy
def test_joins(a, b, axis, xp):
    x, y = xp.asarray(a), xp.asarray(b)
    return (xp.concatenate([x, y], axis=axis), xp.concatenate((x, y), axis=None),
            xp.stack([x, y], axis=axis), xp.vstack([x, y]), xp.hstack((x, y)),
            xp.dstack([x, y]), xp.column_stack([x, y]), xp.concat([x, y], axis=axis),
            xp.block([[x, y], [y, x]]))


@compare_numpy
def test_joins_of_1d_and_mixed_inputs(xp):
    a, b = xp.asarray(numpy.arange(3)), xp.asarray(numpy.arange(3.0))
    return (xp.hstack([a, b]), xp.vstack([a, b]), xp.column_stack([a, b]), xp.dstack([a, b]),
            xp.concatenate([a, numpy.arange(2)]), xp.stack([a, [7, 8, 9]]),
            xp.concatenate([a, b], dtype=numpy.float32))


@pytest.mark.parametrize("fn", ["concatenate", "stack", "vstack", "hstack"])
@compare_numpy
def test_bad_join_shapes_raise_value_error(fn, xp):
    getattr(xp, fn)([xp.ones((2, 3)), xp.ones((3, 2))])


@compare_numpy
def test_concatenate_out(xp):
    out = xp.zeros((4, 3))
    res = xp.concatenate([xp.ones((2, 3)), xp.ones((2, 3)) * 2], out=out)
    assert res is out
    return out


@given(a=arrays(ALL_DTYPES, shape=(6, 4)), sections=st.sampled_from([1, 2, 3, 6]),
       idx=st.lists(st.integers(0, 6), max_size=3).map(sorted))
@compare_numpy
def test_splits(a, sections, idx, xp):
    x = xp.asarray(a)
    return (xp.split(x, sections), xp.split(x, idx), xp.array_split(x, 4, axis=1),
            xp.array_split(x, idx), xp.hsplit(x, 2), xp.vsplit(x, sections),
            xp.dsplit(xp.asarray(a.reshape(2, 3, 4)), 2), xp.unstack(x))


@compare_numpy
def test_uneven_split_raises(xp):
    xp.split(xp.ones(5), 2)


# ------------------------------------------------------------------ tiling / reordering
@given(a=A, reps=st.one_of(st.integers(0, 3), st.lists(st.integers(0, 2), max_size=3)))
@compare_numpy
def test_tile(a, reps, xp):
    return xp.tile(xp.asarray(a), reps)


@given(a_ax=with_axis(A, allow_tuple=False), r=st.integers(0, 3))
@compare_numpy
def test_repeat(a_ax, r, xp):
    a, ax = a_ax
    x = xp.asarray(a)
    n = a.size if ax is None else a.shape[ax]
    return xp.repeat(x, r, axis=ax), x.repeat(list(range(n)), axis=ax)


@given(a_ax=with_axis(A1), k=st.integers(-5, 5))
@compare_numpy
def test_flips_and_rolls(a_ax, k, xp):
    a, ax = a_ax
    x = xp.asarray(a)
    res = [xp.flip(x, axis=ax), xp.flip(x), xp.flipud(x), xp.roll(x, k),
           xp.roll(x, k, axis=ax if ax is not None else 0)]
    if a.ndim >= 2:
        res += [xp.fliplr(x), xp.rot90(x, k), xp.rot90(x, k, axes=(a.ndim - 1, 0))]
    return res


@compare_numpy
def test_fliplr_of_1d_raises(xp):
    xp.fliplr(xp.ones(3))


@pytest.mark.parametrize("mode", ["constant", "edge", "linear_ramp", "maximum", "mean",
                                  "median", "minimum", "reflect", "symmetric", "wrap", "empty"])
@given(a=arrays(NUMERIC, min_dims=1, max_dims=2, min_side=1, max_side=3),
       width=st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2))))
@compare_numpy
def test_pad(mode, a, width, xp):
    res = xp.pad(xp.asarray(a), width, mode=mode)
    return res.shape if mode == "empty" else res


@compare_numpy
def test_pad_constant_values(xp):
    return xp.pad(xp.asarray(_host((2, 2))), ((1, 0), (2, 1)), constant_values=(-1, 9))


@given(a=A, data=st.data())
def test_broadcast_to_and_arrays(a, data):
    target = data.draw(st.lists(st.integers(1, 2), max_size=1)).copy() + [
        s if s != 1 else data.draw(st.integers(1, 3)) for s in a.shape]
    run_both(lambda xp: (xp.broadcast_to(xp.asarray(a), tuple(target)),
                         xp.broadcast_arrays(xp.asarray(a), xp.ones(tuple(target)))))


@compare_numpy
def test_broadcast_to_incompatible(xp):
    xp.broadcast_to(xp.ones((2, 3)), (3, 3))


@given(a=A)
@compare_numpy
def test_atleast(a, xp):
    x = xp.asarray(a)
    return (xp.atleast_1d(x), xp.atleast_2d(x), xp.atleast_3d(x), xp.atleast_1d(x, x),
            xp.atleast_2d(3.0))


# ------------------------------------------------------------------ selection
@given(pair=array_pairs(ALL_DTYPES, max_side=3), c=arrays(bool, shape=shapes(max_side=3)))
@compare_numpy
def test_where(pair, c, xp):
    a, b = pair
    try:
        full = xp.where(xp.asarray(c), xp.asarray(a), xp.asarray(b))
    except ValueError as e:
        full = type(e).__name__
    return full, xp.where(xp.asarray(c)) if c.ndim else None


@given(a=arrays(("int32", "float32", "float64", "uint8"), **small),
       lo=st.integers(-3, 3), hi=st.integers(-3, 3))
@compare_numpy
def test_clip(a, lo, hi, xp):
    x = xp.asarray(a)
    return xp.clip(x, lo, hi), x.clip(lo, None), xp.clip(x, xp.asarray(a), hi)


@pytest.mark.parametrize("kind", [None, "stable", "quicksort", "heapsort"])
@given(a_ax=with_axis(arrays(("bool", "int8", "int64", "uint8", "float16", "float64",
                              "complex64"), min_dims=1, **small), allow_tuple=False))
@compare_numpy
def test_sort_argsort(kind, a_ax, xp):
    a, ax = a_ax
    x = xp.asarray(a)
    y = xp.array(a)
    if ax is not None:
        y.sort(axis=ax)
    arg = xp.argsort(x, axis=ax, kind="stable") if kind in (None, "stable") else None
    return xp.sort(x, axis=ax, kind=kind), arg, y, xp.sort_complex(xp.ravel(x))


@given(a=arrays(ALL_DTYPES, **small))
@compare_numpy
def test_unique(a, xp):
    x = xp.asarray(a)
    if a.dtype.kind in "fc":          # nan ordering is NumPy's; keep it out of the keys
        x = xp.where(xp.isnan(x), 0, x)
    return (xp.unique(x), xp.unique(x, return_index=True, return_inverse=True,
                                    return_counts=True),
            xp.unique_values(x), xp.unique_counts(x), xp.unique_inverse(x), xp.unique_all(x))


@given(a=arrays(ALL_DTYPES, min_dims=1, **small), data=st.data())
def test_take_and_take_along_axis(a, data):
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[ax]
    idx = data.draw(st.lists(st.integers(-n, n - 1), max_size=4)) if n else []
    run_both(lambda xp: (xp.take(xp.asarray(a), idx, axis=ax), xp.asarray(a).take(idx, axis=ax),
                         xp.take(xp.asarray(a), idx) if a.size else None,
                         xp.take_along_axis(xp.asarray(a), xp.argsort(xp.asarray(a), axis=ax),
                                            axis=ax)))


@compare_numpy
def test_take_out_of_bounds(xp):
    xp.take(xp.ones(3), [5])


@given(a_ax=with_axis(A1, allow_none=False, allow_tuple=False), n=st.integers(0, 3))
@compare_numpy
def test_diff(a_ax, n, xp):
    a, ax = a_ax
    if a.dtype == bool and n:
        a = a.astype(numpy.int8)
    return xp.diff(xp.asarray(a), n=n, axis=ax)


@given(a=arrays(ALL_DTYPES, min_dims=1, max_dims=3, max_side=4), k=st.integers(-3, 3))
@compare_numpy
def test_triangles_and_diagonals(a, k, xp):
    x = xp.asarray(a)
    res = [xp.triu(x, k), xp.tril(x, k)]
    if a.ndim == 1:
        res.append(xp.diag(x, k))
        res.append(xp.diagflat(x, k))
    else:
        res += [xp.diagonal(x, k), x.diagonal(k), xp.trace(x, k), x.trace(k)]
        if a.ndim == 2:
            res.append(xp.diag(x, k))
    return res


@given(a=arrays(("int32", "float64"), shape=shapes(min_dims=1, max_dims=1, max_side=6)),
       v=arrays(("int32", "float64"), **small), side=st.sampled_from(["left", "right"]))
@compare_numpy
def test_searchsorted(a, v, side, xp):
    s = xp.sort(xp.asarray(a))
    return xp.searchsorted(s, xp.asarray(v), side=side), s.searchsorted(3, side=side)


@given(a=A)
@compare_numpy
def test_nonzero_argwhere_flatnonzero(a, xp):
    x = xp.asarray(a)
    res = [xp.argwhere(x), xp.flatnonzero(x), xp.count_nonzero(x)]
    if a.ndim:
        res += [xp.nonzero(x), x.nonzero()]
    return res


@compare_numpy
def test_nonzero_of_0d_raises(xp):
    xp.nonzero(xp.asarray(numpy.float64(1.0)))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@compare_numpy
def test_meshgrid(indexing, sparse, xp):
    a, b = xp.asarray(numpy.arange(3)), xp.asarray(numpy.linspace(0, 1, 4))
    return xp.meshgrid(a, b, indexing=indexing, sparse=sparse), xp.meshgrid(a)


# ------------------------------------------------------------------ products
@pytest.mark.parametrize("spec,shapes_", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("i,i", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]), ("...j,j->...", [(2, 3, 4), (4,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("ij->ji", [(2, 3)]), ("ij,ij->", [(2, 3)] * 2),
])
@pytest.mark.parametrize("dtype", ["int32", "float32", "complex128"])
@compare_numpy
def test_einsum(spec, shapes_, dtype, xp):
    ops = [xp.asarray(_host(s, dtype)) for s in shapes_]
    return xp.einsum(spec, *ops), xp.einsum(spec, *ops, optimize=True)


@compare_numpy
def test_einsum_mismatch_raises(xp):
    xp.einsum("ij,jk->ik", xp.ones((2, 3)), xp.ones((2, 3)))


@given(pair=array_pairs(("int32", "float64", "complex64", "bool"), same_dtype=False,
                        min_dims=1, max_side=3))
@compare_numpy
def test_products(pair, xp):
    a, b = pair
    x, y = xp.asarray(a), xp.asarray(b)
    return (xp.outer(x, y), xp.kron(x, y), xp.tensordot(x, y, axes=0),
            xp.inner(x, y) if a.shape[-1] == b.shape[-1] else None)


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                                   ((2, 2, 3), (3, 2)), ((), (3,)), ((2, 3), (2, 3))])
@pytest.mark.parametrize("dtype", ["int64", "float32", "complex64"])
@compare_numpy
def test_dot_inner_tensordot_vdot(sa, sb, dtype, xp):
    x, y = xp.asarray(_host(sa, dtype) + 1), xp.asarray(_host(sb, dtype) - 2)
    res = [xp.dot(x, y), x.dot(y) if sa else None, xp.vdot(x, x)]
    if sa and sa[-1:] == sb[-1:]:
        res.append(xp.inner(x, y))
    if sa and sb and sa[-1] == sb[0]:
        res.append(xp.tensordot(x, y, axes=1))
    if sa and sa[-2:] == sb[-2:] and len(sb) == 2:
        res.append(xp.tensordot(x, y, axes=([-2, -1], [0, 1])))
    return res


@compare_numpy
def test_dot_shape_mismatch(xp):
    xp.dot(xp.ones((2, 3)), xp.ones((2, 3)))


@given(a=arrays(("int32", "float64"), shape=shapes(min_dims=1, max_dims=2, min_side=2,
                                                   max_side=3).map(lambda s: s[:-1] + (3,))),
       b=arrays(("int32", "float64"), shape=st.sampled_from([(3,), (2, 3), (1, 3)])))
@compare_numpy
def test_cross(a, b, xp):
    return xp.cross(xp.asarray(a), xp.asarray(b))


def test_results_are_minpy_arrays():
    x = minpy.arange(6.0).reshape(2, 3)
    for r in (minpy.split(x, 3, axis=1), minpy.meshgrid(x[0], x[1]), minpy.nonzero(x),
              minpy.unique(x, return_counts=True), minpy.broadcast_arrays(x, x[0])):
        assert all(type(e) is minpy.Array for e in r)


# ------------------------------------------------------------------ Array methods
def _mutated(method, *args, **kwargs):
    """A body that calls an in-place method on a copy and returns the copy."""
    def body(data, xp):
        y = xp.array(data)
        assert getattr(y, method)(*args, **kwargs) is None
        return y
    return body


_M = numpy.arange(12.0).reshape(3, 4) - 5
METHOD_CASES = {
    "transpose_star": lambda d, xp: xp.asarray(d.reshape(2, 3, 2)).transpose(2, 0, 1),
    "transpose_none": lambda d, xp: xp.asarray(d).transpose(),
    "reshape_int": lambda d, xp: xp.asarray(d).reshape(numpy.int64(12)),
    "reshape_list": lambda d, xp: xp.asarray(d).reshape([2, -1]),
    "reshape_F": lambda d, xp: xp.asarray(d).reshape(4, 3, order="F"),
    "flatten_F": lambda d, xp: xp.asarray(d).flatten("F"),
    "flat": lambda d, xp: list(xp.asarray(d).flat),
    "sort": _mutated("sort"),
    "sort_axis0": _mutated("sort", axis=0, kind="stable"),
    "partition": _mutated("partition", 1),
    "fill": _mutated("fill", 7),
    "put": _mutated("put", [0, 5], [9, 8]),
    "argsort": lambda d, xp: xp.asarray(d).argsort(axis=0),
    "argpartition": lambda d, xp: xp.asarray(d).argpartition(1),
    "astype": lambda d, xp: xp.asarray(d).astype(numpy.int8),
    "astype_nocopy": lambda d, xp: xp.asarray(d).astype("f8", copy=False),
    "T_0d": lambda d, xp: xp.asarray(d[0, 0]).T,
    "mT": lambda d, xp: xp.asarray(d.reshape(2, 3, 2)).mT,
    "real_setter": lambda d, xp: (lambda y: (setattr(y, "real", 5), y)[1])(xp.array(d + 1j)),
    "squeeze": lambda d, xp: xp.asarray(d.reshape(1, 12, 1)).squeeze(0),
    "swapaxes": lambda d, xp: xp.asarray(d).swapaxes(0, 1),
    "repeat": lambda d, xp: xp.asarray(d).repeat(2, axis=1),
    "clip": lambda d, xp: xp.asarray(d).clip(-1, 3),
    "round": lambda d, xp: (xp.asarray(d) / 3).round(1),
    "conj": lambda d, xp: (xp.asarray(d) * 1j).conj(),
    "choose": lambda d, xp: xp.asarray(numpy.array([0, 1, 0])).choose([[1, 2, 3], [4, 5, 6]]),
    "compress": lambda d, xp: xp.asarray(d).compress([True, False, True], axis=0),
    "item": lambda d, xp: (xp.asarray(d).item(4), xp.asarray(d).item((1, 2))),
    "tolist": lambda d, xp: xp.asarray(d).tolist(),
    "view": lambda d, xp: xp.asarray(d).view(numpy.int64),
    "nonzero": lambda d, xp: xp.asarray(d).nonzero(),
    "diagonal": lambda d, xp: xp.asarray(d).diagonal(offset=1),
    "searchsorted": lambda d, xp: xp.asarray(d).ravel().searchsorted([3, 4.5]),
    "dot": lambda d, xp: xp.asarray(d).dot(xp.asarray(d).T),
    "trace": lambda d, xp: xp.asarray(d).trace(1),
    "iter": lambda d, xp: [r for r in xp.asarray(d)],
    "len_contains": lambda d, xp: (len(xp.asarray(d)), 3 in xp.asarray(d), 99 in xp.asarray(d)),
    "shape_setter": lambda d, xp: (lambda y: (setattr(y, "shape", (4, 3)), y)[1])(xp.array(d)),
    "scalars": lambda d, xp: (int(xp.asarray(d)[1, 1]), float(xp.asarray(d)[0, 0]),
                              [1, 2, 3][xp.asarray(numpy.array(2))]),
    "resize_fn": lambda d, xp: xp.resize(xp.asarray(d), (2, 7)),
}


@pytest.mark.parametrize("case", sorted(METHOD_CASES))
def test_array_methods(case):
    run_both(METHOD_CASES[case], _M)


@pytest.mark.parametrize("case", [
    pytest.param(_mutated("sort", axis=None), id="sort_axis_none"),
    pytest.param(lambda d, xp: (lambda y: (setattr(y, "imag", 5), y)[1])(xp.array(d + 1j)),
                 id="imag_setter"),
    pytest.param(lambda d, xp: (lambda y: (setattr(y, "imag", xp.asarray(d) * 2.0), y)[1])(
        xp.array(d + 1j, dtype=numpy.complex64)), id="imag_setter_array_complex64"),
    pytest.param(lambda d, xp: (lambda y: (setattr(y, "imag", 5), y)[1])(xp.array(d * 1.0)),
                 id="imag_setter_real_raises"),
])
def test_array_method_setters_and_errors(case):
    run_both(case, _M)


@pytest.mark.parametrize("assume_unique", [False, True])
@compare_numpy
def test_intersect1d_of_unsorted_unique_arrays(assume_unique, xp):
    """Sorted and every match found, also with assume_unique=True (CuPy binary-searches
    the unsorted second array there)."""
    return xp.intersect1d(xp.array([5, 1, 3, 8]), xp.array([3, 9, 1, 5, 8]), assume_unique)
