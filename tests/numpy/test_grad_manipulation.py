"""Gradients of array manipulation (minpy/numpy/vjp_manipulation.py), checked to
second order against finite differences, plus exact values where the rule is
easy to state, casts, and the cases without a gradient."""
import warnings

import numpy
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import minpy
import minpy.numpy as mnp
from minpy.testing import check_grads

from _strategies import random_array

fast = settings(max_examples=10)


rnd = random_array


def cg(f, *shapes, **kw):
    """check_grads(f) at order 2 on random float64 inputs of the given shapes."""
    check_grads(f, *[rnd(s, seed=i) for i, s in enumerate(shapes)], order=2, **kw)


def mul(outs):
    """A scalar mixing several outputs with distinct weights (multi-output functions)."""
    return sum(mnp.sum(o * (k + 1.0) * o) for k, o in enumerate(outs))


# one entry per rule/variant: (id, f, input shapes)
CASES = [
    ("reshape", lambda x: mnp.reshape(x, (3, 4)), [(2, 6)]),
    ("reshape-1", lambda x: mnp.reshape(x, -1), [(2, 3, 2)]),
    ("reshape_F", lambda x: mnp.reshape(x, (4, 3), order="F"), [(2, 6)]),
    ("reshape_A_T", lambda x: mnp.reshape(x.T, (3, 4), order="A"), [(2, 6)]),
    ("reshape_method", lambda x: x.reshape(3, -1), [(6, 2)]),
    ("ravel", lambda x: mnp.ravel(x), [(2, 3, 2)]),
    ("ravel_F", lambda x: mnp.ravel(x, order="F"), [(2, 3, 2)]),
    ("ravel_K_T", lambda x: mnp.ravel(x.T, order="K"), [(3, 4)]),
    ("ravel_K_strided",
     lambda x: mnp.ravel(mnp.transpose(x, (1, 0, 2))[:, ::-1], order="K"), [(2, 3, 4)]),
    ("flatten", lambda x: x.flatten(), [(3, 2)]),
    ("transpose", lambda x: mnp.transpose(x), [(2, 3, 4)]),
    ("transpose_axes", lambda x: mnp.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    ("transpose_neg", lambda x: mnp.transpose(x, (-1, 0, -2)), [(2, 3, 4)]),
    ("transpose_method", lambda x: x.transpose(1, 2, 0), [(2, 3, 4)]),
    ("permute_dims", lambda x: mnp.permute_dims(x, (1, 0, 2)), [(2, 3, 4)]),
    ("T", lambda x: x.T, [(2, 3)]),
    ("mT", lambda x: x.mT, [(2, 3, 4)]),
    ("matrix_transpose", lambda x: mnp.matrix_transpose(x), [(2, 3, 4)]),
    ("moveaxis", lambda x: mnp.moveaxis(x, 0, -1), [(2, 3, 4)]),
    ("moveaxis_lists", lambda x: mnp.moveaxis(x, [0, 1], [2, 0]), [(2, 3, 4)]),
    ("swapaxes", lambda x: mnp.swapaxes(x, 0, 2), [(2, 3, 4)]),
    ("swapaxes_method", lambda x: x.swapaxes(-1, 1), [(2, 3, 4)]),
    ("rollaxis", lambda x: mnp.rollaxis(x, 2), [(2, 3, 4)]),
    ("rollaxis_start", lambda x: mnp.rollaxis(x, 0, 3), [(2, 3, 4)]),
    ("rollaxis_neg", lambda x: mnp.rollaxis(x, -1, 1), [(2, 3, 4)]),
    ("rollaxis_same", lambda x: mnp.rollaxis(x, 1, 2), [(2, 3, 4)]),
    ("squeeze", lambda x: mnp.squeeze(x), [(1, 3, 1)]),
    ("squeeze_axis", lambda x: mnp.squeeze(x, axis=2), [(1, 3, 1)]),
    ("squeeze_method", lambda x: x.squeeze(0), [(1, 3, 1)]),
    ("expand_dims", lambda x: mnp.expand_dims(x, 1), [(2, 3)]),
    ("expand_dims_tuple", lambda x: mnp.expand_dims(x, (0, -1)), [(2, 3)]),
    ("atleast_1d", lambda x: mnp.atleast_1d(x), [()]),
    ("atleast_2d", lambda x: mnp.atleast_2d(x), [(3,)]),
    ("atleast_3d_0d", lambda x: mnp.atleast_3d(x), [()]),
    ("atleast_3d_1d", lambda x: mnp.atleast_3d(x), [(3,)]),
    ("atleast_3d_2d", lambda x: mnp.atleast_3d(x), [(2, 3)]),
    ("atleast_2d_many", lambda x, y: mul(mnp.atleast_2d(x, y)), [(3,), (2, 2)]),
    ("broadcast_to", lambda x: mnp.broadcast_to(x, (2, 3, 4)), [(3, 1)]),
    ("broadcast_to_0d", lambda x: mnp.broadcast_to(x, (2, 3)), [()]),
    ("broadcast_arrays", lambda x, y: mul(mnp.broadcast_arrays(x, y)), [(3, 1), (4,)]),
    ("concatenate", lambda x, y, z: mnp.concatenate([x, y, z]), [(2, 3), (1, 3), (4, 3)]),
    ("concatenate_axis1", lambda x, y: mnp.concatenate((x, y), axis=1), [(2, 3), (2, 1)]),
    ("concatenate_neg", lambda x, y: mnp.concatenate([x, y], -1), [(2, 2, 3), (2, 2, 1)]),
    ("concatenate_None", lambda x, y: mnp.concatenate([x, y], axis=None), [(2, 3), (4,)]),
    ("concatenate_array", lambda x: mnp.concatenate(x, axis=1), [(3, 2, 2)]),
    ("concatenate_one", lambda x: mnp.concatenate([x]), [(3, 2)]),
    ("concat", lambda x, y: mnp.concat([x, y], axis=0), [(2, 3), (1, 3)]),
    ("stack", lambda x, y: mnp.stack([x, y]), [(2, 3), (2, 3)]),
    ("stack_axis", lambda x, y, z: mnp.stack((x, y, z), axis=-1), [(2, 3)] * 3),
    ("stack_array", lambda x: mnp.stack(x, axis=1), [(3, 2, 2)]),
    ("vstack", lambda x, y: mnp.vstack([x, y]), [(3,), (2, 3)]),
    ("vstack_0d", lambda x, y: mnp.vstack([x, y]), [(), ()]),
    ("hstack_1d", lambda x, y: mnp.hstack([x, y]), [(3,), (2,)]),
    ("hstack_2d", lambda x, y: mnp.hstack([x, y]), [(2, 3), (2, 1)]),
    ("dstack", lambda x, y, z: mnp.dstack([x, y, z]), [(3,), (1, 3), (1, 3, 2)]),
    ("column_stack", lambda x, y: mnp.column_stack([x, y]), [(3,), (3, 2)]),
    ("block_flat", lambda x, y: mnp.block([x, y]), [(2, 3), (2, 1)]),
    ("block_nested", lambda a, b, c: mnp.block([[a, b], [c]]), [(2, 3), (2, 1), (1, 4)]),
    ("block_single", lambda x: mnp.block(x), [(2, 3)]),
    ("split", lambda x: mul(mnp.split(x, 3)), [(6, 2)]),
    ("split_indices", lambda x: mul(mnp.split(x, [1, 3], axis=1)), [(2, 5)]),
    ("split_partial", lambda x: mnp.split(x, 3)[1] ** 2, [(6,)]),
    ("array_split", lambda x: mul(mnp.array_split(x, 3, axis=-1)), [(2, 7)]),
    ("hsplit_1d", lambda x: mul(mnp.hsplit(x, 2)), [(4,)]),
    ("hsplit_2d", lambda x: mul(mnp.hsplit(x, [1])), [(2, 3)]),
    ("vsplit", lambda x: mul(mnp.vsplit(x, 2)), [(4, 3)]),
    ("dsplit", lambda x: mul(mnp.dsplit(x, [1, 2])), [(2, 2, 3)]),
    ("unstack", lambda x: mul(mnp.unstack(x, axis=1)), [(2, 3, 2)]),
    ("unstack_partial", lambda x: mnp.unstack(x)[0] * 3.0, [(2, 3)]),
    ("tile_int", lambda x: mnp.tile(x, 3), [(2, 3)]),
    ("tile_longer", lambda x: mnp.tile(x, (2, 1, 2)), [(2, 3)]),
    ("tile_shorter", lambda x: mnp.tile(x, (2,)), [(2, 1, 3)]),
    ("tile_zero", lambda x: mnp.tile(x, (0, 2)), [(2, 3)]),
    ("repeat", lambda x: mnp.repeat(x, 2), [(2, 3)]),
    ("repeat_axis", lambda x: mnp.repeat(x, 3, axis=0), [(2, 3)]),
    ("repeat_each", lambda x: mnp.repeat(x, [2, 0, 1], axis=1), [(2, 3)]),
    ("repeat_each_None", lambda x: mnp.repeat(x, [1, 2, 0, 3]), [(2, 2)]),
    ("repeat_method", lambda x: x.repeat(2, axis=-1), [(2, 3)]),
    ("repeat_0d", lambda x: mnp.repeat(x, 4), [()]),
    ("resize_bigger", lambda x: mnp.resize(x, (3, 5)), [(2, 3)]),
    ("resize_smaller", lambda x: mnp.resize(x, 4), [(2, 3)]),
    ("pad_constant", lambda x: mnp.pad(x, 2), [(2, 3)]),
    ("pad_pairs", lambda x: mnp.pad(x, ((1, 0), (2, 3)), constant_values=1.5), [(2, 3)]),
    ("pad_edge", lambda x: mnp.pad(x, (1, 2), mode="edge"), [(2, 3)]),
    ("pad_reflect", lambda x: mnp.pad(x, ((2, 1), (1, 2)), mode="reflect"), [(3, 4)]),
    ("pad_symmetric", lambda x: mnp.pad(x, 2, mode="symmetric"), [(3,)]),
    ("pad_wrap", lambda x: mnp.pad(x, ((0, 3), (1, 1)), mode="wrap"), [(2, 3)]),
    ("flip", lambda x: mnp.flip(x), [(2, 3)]),
    ("flip_axis", lambda x: mnp.flip(x, 1), [(2, 3, 2)]),
    ("flip_tuple", lambda x: mnp.flip(x, (0, 2)), [(2, 3, 2)]),
    ("fliplr", lambda x: mnp.fliplr(x), [(2, 3)]),
    ("flipud", lambda x: mnp.flipud(x), [(2, 3)]),
    ("rot90", lambda x: mnp.rot90(x), [(2, 3)]),
    ("rot90_k", lambda x: mnp.rot90(x, 3, axes=(1, 2)), [(2, 3, 4)]),
    ("rot90_neg", lambda x: mnp.rot90(x, -2), [(2, 3)]),
    ("roll", lambda x: mnp.roll(x, 2), [(2, 3)]),
    ("roll_axis", lambda x: mnp.roll(x, -1, axis=1), [(2, 3)]),
    ("roll_tuple", lambda x: mnp.roll(x, (1, 2), axis=(0, 1)), [(2, 3)]),
    ("sort", lambda x: mnp.sort(x), [(3, 4)]),
    ("sort_axis0", lambda x: mnp.sort(x, axis=0), [(3, 4)]),
    ("sort_None", lambda x: mnp.sort(x, axis=None), [(3, 4)]),
    ("sort_kind", lambda x: mnp.sort(x, kind="mergesort"), [(5,)]),
    ("sort_method", lambda x: _sorted_copy(x), [(2, 4)]),
    ("partition", lambda x: mnp.partition(x, 2), [(3, 5)]),
    ("partition_list", lambda x: mnp.partition(x, [0, 3], axis=0), [(5, 2)]),
    ("partition_None", lambda x: mnp.partition(x, 4, axis=None), [(2, 4)]),
    ("diagonal", lambda x: mnp.diagonal(x), [(3, 4)]),
    ("diagonal_offset", lambda x: mnp.diagonal(x, 1), [(3, 4)]),
    ("diagonal_neg", lambda x: mnp.diagonal(x, -2), [(4, 3)]),
    ("diagonal_axes", lambda x: mnp.diagonal(x, 0, 1, 2), [(2, 3, 3)]),
    ("diagonal_rev", lambda x: mnp.diagonal(x, 1, axis1=2, axis2=0), [(3, 2, 4)]),
    ("diagonal_method", lambda x: x.diagonal(offset=-1), [(3, 3)]),
    ("diag_1d", lambda x: mnp.diag(x), [(3,)]),
    ("diag_1d_k", lambda x: mnp.diag(x, 2), [(3,)]),
    ("diag_1d_negk", lambda x: mnp.diag(x, k=-1), [(3,)]),
    ("diag_2d", lambda x: mnp.diag(x), [(3, 3)]),
    ("diag_2d_rect", lambda x: mnp.diag(x, 1), [(3, 5)]),
    ("diagflat", lambda x: mnp.diagflat(x), [(2, 2)]),
    ("diagflat_k", lambda x: mnp.diagflat(x, -1), [(3,)]),
    ("trace", lambda x: mnp.trace(x), [(3, 4)]),
    ("trace_offset", lambda x: mnp.trace(x, offset=-1), [(3, 4)]),
    ("trace_3d", lambda x: mnp.trace(x, 1, 0, 2), [(3, 2, 4)]),
    ("trace_method", lambda x: x.trace(), [(3, 3)]),
    ("triu", lambda x: mnp.triu(x), [(3, 4)]),
    ("triu_k", lambda x: mnp.triu(x, -1), [(2, 3, 3)]),
    ("triu_1d", lambda x: mnp.triu(x, 1), [(3,)]),
    ("tril", lambda x: mnp.tril(x), [(4, 3)]),
    ("tril_k", lambda x: mnp.tril(x, k=1), [(2, 3, 3)]),
    ("diff", lambda x: mnp.diff(x), [(5,)]),
    ("diff_n2", lambda x: mnp.diff(x, n=2), [(3, 5)]),
    ("diff_axis0", lambda x: mnp.diff(x, axis=0), [(4, 3)]),
    ("diff_n0", lambda x: mnp.diff(x, 0), [(4,)]),
    ("diff_n3_axis", lambda x: mnp.diff(x, 3, 0), [(5, 2)]),
    ("diff_prepend", lambda x, p: mnp.diff(x, prepend=p), [(2, 4), (2, 2)]),
    ("diff_append", lambda x, a: mnp.diff(x, n=2, axis=0, append=a), [(3, 2), (1, 2)]),
    ("diff_both", lambda x, p, a: mnp.diff(x, 1, 0, p, a), [(3,), (2,), (1,)]),
    ("ediff1d", lambda x: mnp.ediff1d(x), [(2, 3)]),
    ("ediff1d_ends", lambda x, b, e: mnp.ediff1d(x, to_end=e, to_begin=b), [(4,), (2,), (1, 2)]),
    ("ediff1d_one", lambda x: mnp.ediff1d(x, to_begin=[1.0]), [(1,)]),
    ("gradient_1d", lambda x: mnp.gradient(x), [(5,)]),
    ("gradient_2d", lambda x: mul(mnp.gradient(x, 0.5, 2.0)), [(4, 5)]),
    ("gradient_axis", lambda x: mnp.gradient(x, axis=1, edge_order=2), [(3, 4)]),
    ("gradient_coords", lambda x: mnp.gradient(x, numpy.array([0.0, 0.5, 2.0, 2.5])), [(4,)]),
    ("trim_zeros", lambda x: mnp.trim_zeros(x * mnp.array([0.0, 1, 0, 1, 0, 0])), [(6,)]),
    ("trim_zeros_b", lambda x: mnp.trim_zeros(x * mnp.array([0.0, 1, 1, 0]), "b"), [(4,)]),
    ("append", lambda x, v: mnp.append(x, v), [(2, 3), (4,)]),
    ("append_axis", lambda x, v: mnp.append(x, v, axis=0), [(2, 3), (1, 3)]),
    ("insert", lambda x, v: mnp.insert(x, 1, v), [(4,), ()]),
    ("insert_list", lambda x, v: mnp.insert(x, [0, 2, 2], v), [(4,), (3,)]),
    ("insert_axis", lambda x, v: mnp.insert(x, 1, v, axis=1), [(2, 3), (2,)]),
    ("insert_2d_values", lambda x, v: mnp.insert(x, 2, v, axis=1), [(2, 3), (2, 1)]),
    ("insert_flat", lambda x, v: mnp.insert(x, 3, v), [(2, 3), (2,)]),
    ("delete", lambda x: mnp.delete(x, 1), [(4,)]),
    ("delete_list", lambda x: mnp.delete(x, [0, 2], axis=1), [(2, 4)]),
    ("delete_slice", lambda x: mnp.delete(x, slice(None, None, 2)), [(2, 3)]),
    ("copy", lambda x: mnp.copy(x), [(2, 3)]),
    ("copy_method", lambda x: x.copy(), [(2, 3)]),
    ("array", lambda x: mnp.array(x), [(2, 3)]),
    ("array_ndmin", lambda x: mnp.array(x, ndmin=3), [(3,)]),
    ("array_list", lambda x, y: mnp.array([x, y]), [(3,), (3,)]),
    ("array_scalars", lambda x, y: mnp.array([x[0], y[1], x[2]]), [(3,), (3,)]),
    ("asarray", lambda x: mnp.asarray(x), [(2, 3)]),
    ("asanyarray", lambda x: mnp.asanyarray(x), [(2, 3)]),
    ("ascontiguousarray", lambda x: mnp.ascontiguousarray(x.T), [(2, 3)]),
    ("ascontiguousarray_0d", lambda x: mnp.ascontiguousarray(x), [()]),
    ("asfortranarray", lambda x: mnp.asfortranarray(x), [(2, 3)]),
    ("require", lambda x: mnp.require(x, requirements="F"), [(2, 3)]),
    ("asarray_chkfinite", lambda x: mnp.asarray_chkfinite(x), [(2, 3)]),
    ("astype_same", lambda x: x.astype(numpy.float64), [(2, 3)]),
    ("astype_complex", lambda x: x.astype(numpy.complex128), [(2, 3)]),
    ("astype_fn", lambda x: mnp.astype(x, numpy.float64), [(2, 3)]),
    ("view", lambda x: x.view(), [(2, 3)]),
    ("view_same_dtype", lambda x: x.view(numpy.float64), [(2, 3)]),
]


def _sorted_copy(x):
    y = x * 1.0
    y.sort()
    return y


@pytest.mark.parametrize("name,f,shapes", CASES, ids=[c[0] for c in CASES])
def test_check_grads(name, f, shapes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cg(f, *shapes)


@pytest.mark.skipif(not hasattr(numpy, "row_stack"), reason="NumPy >= 2.5 removed row_stack")
def test_row_stack():
    assert hasattr(mnp, "row_stack")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cg(lambda x, y: mnp.row_stack([x, y]), (3,), (2, 3))


@pytest.mark.parametrize("dtype", [numpy.complex128])
@pytest.mark.parametrize("f", [lambda z: mnp.reshape(z, (3, 2)), lambda z: mnp.sort_complex(z),
                               lambda z: mnp.concatenate([z, z[:1]]), lambda z: mnp.flip(z),
                               lambda z: mnp.pad(z, 1, mode="edge")],
                         ids=["reshape", "sort_complex", "concatenate", "flip", "pad_edge"])
def test_complex(f, dtype):
    check_grads(f, rnd((6,), dtype=dtype), order=2)


def test_sort_complex_real_input():
    x = rnd((5,))
    g = minpy.grad(lambda x: mnp.sum(mnp.real(mnp.sort_complex(x)) * mnp.arange(5.0)))(x)
    expected = numpy.empty(5)
    expected[numpy.argsort(x.asnumpy())] = numpy.arange(5.0)
    numpy.testing.assert_allclose(g.asnumpy(), expected)
    assert g.dtype == numpy.float64


# ------------------------------------------------------------ exact gradients
def test_sort_gradient_is_the_permutation():
    x = mnp.array([3.0, 1.0, 2.0])
    g = minpy.grad(lambda x: mnp.sum(mnp.sort(x) * mnp.array([1.0, 10.0, 100.0])))(x)
    numpy.testing.assert_array_equal(g.asnumpy(), [100.0, 1.0, 10.0])


def test_tile_and_repeat_accumulate():
    x = mnp.array([1.0, 2.0])
    numpy.testing.assert_array_equal(minpy.grad(lambda x: mnp.sum(mnp.tile(x, 3)))(x).asnumpy(),
                                     [3.0, 3.0])
    g = minpy.grad(lambda x: mnp.sum(mnp.repeat(x, [4, 1]) ** 2))(x)
    numpy.testing.assert_array_equal(g.asnumpy(), [8.0, 4.0])


def test_broadcast_to_sums():
    x = mnp.array([[1.0], [2.0]])
    g = minpy.grad(lambda x: mnp.sum(mnp.broadcast_to(x, (3, 2, 4))))(x)
    numpy.testing.assert_array_equal(g.asnumpy(), [[12.0], [12.0]])


def test_pad_reflect_accumulates():
    x = mnp.array([1.0, 2.0, 3.0])
    g = minpy.grad(lambda x: mnp.sum(mnp.pad(x, 2, mode="reflect")))(x)
    # reflect: [3 2 | 1 2 3 | 2 1]
    numpy.testing.assert_array_equal(g.asnumpy(), [2.0, 3.0, 2.0])


def test_dtype_cast_gradient_back_to_input_dtype():
    x = rnd((3,))
    w = numpy.array([1.0, 2.0, 3.0], dtype=numpy.float32)
    for f in (lambda x: mnp.sum(x.astype(numpy.float32) * w),
              lambda x: mnp.sum(mnp.array(x, dtype=numpy.float32) * w),
              lambda x: mnp.sum(mnp.asarray(x, numpy.float32) * w),
              lambda x: mnp.sum(mnp.astype(x, numpy.float32) * w)):
        g = minpy.grad(f)(x)
        assert g.dtype == numpy.float64
        numpy.testing.assert_allclose(g.asnumpy(), w)


def test_cast_to_integer_has_no_gradient():
    x = mnp.array([1.5, 2.5])
    g = minpy.grad(lambda x: mnp.sum(x * x.astype(numpy.int64)))(x)
    numpy.testing.assert_array_equal(g.asnumpy(), [1.0, 2.0])


def test_view_other_dtype_raises():
    x = mnp.array([1.0, 2.0])
    with pytest.raises(TypeError, match="view"):
        minpy.grad(lambda x: mnp.sum(x.view(numpy.int64) * 1.0))(x)


def test_pad_callable_mode_raises():
    # every string mode is differentiable (test_grad_gaps.py); a callable is not
    x = mnp.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="pad"):
        minpy.grad(lambda x: mnp.sum(mnp.pad(x, 1, mode=lambda v, w, i, k: None)))(x)


def test_unique_values_are_differentiated():
    # each unique value's gradient is shared by the elements equal to it (as max's ties)
    x = mnp.array([2.0, 1.0, 2.0])
    g = minpy.grad(lambda x: mnp.sum(mnp.unique(x) * mnp.array([3.0, 5.0])))(x)
    numpy.testing.assert_allclose(g.asnumpy(), [2.5, 3.0, 2.5])


def test_nested_block_values_and_grads():
    a, b, c, d = (rnd((2, 2), seed=i) for i in range(4))
    got = minpy.grad(lambda a, b, c, d: mnp.sum(mnp.block([[a, b], [c, d]]) * mnp.arange(16.0)
                                                  .reshape(4, 4)), argnum=(0, 1, 2, 3))(a, b, c, d)
    w = numpy.arange(16.0).reshape(4, 4)
    for g, sl in zip(got, [w[:2, :2], w[:2, 2:], w[2:, :2], w[2:, 2:]]):
        numpy.testing.assert_array_equal(g.asnumpy(), sl)
    got = minpy.grad(lambda a: mnp.sum(numpy.block([[a, b], [c, d]]) * 2.0))(a)
    numpy.testing.assert_array_equal(got.asnumpy(), numpy.full((2, 2), 2.0))
    assert minpy.block is mnp.block
    numpy.testing.assert_array_equal(mnp.block([[a, b], [c, d]]).asnumpy(),
                                     numpy.block([[a.asnumpy(), b.asnumpy()],
                                                  [c.asnumpy(), d.asnumpy()]]))


def test_values_under_grad_equal_numpy():
    x = rnd((2, 3, 4))
    fs = [lambda m, a: m.tile(m.moveaxis(a, 0, -1), (1, 2, 1)),
          lambda m, a: m.pad(a, ((0, 1), (2, 0), (1, 1)), mode="symmetric"),
          lambda m, a: m.insert(a, [1, 1], 7.0, axis=2),
          lambda m, a: m.diff(a, 2, axis=1, prepend=0.5),
          lambda m, a: m.sort(m.partition(a, 1, axis=1), axis=None)]
    for f in fs:
        captured = []

        def run(a, f=f):
            captured.append(f(mnp, a))
            return mnp.sum(captured[-1])
        minpy.grad(run)(x)
        numpy.testing.assert_allclose(captured[-1].asnumpy(), f(numpy, x.asnumpy()))


# ------------------------------------------------------------ hypothesis sweeps
@fast
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data())
def test_transpose_reshape_any_shape(shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    cg(lambda x: mnp.reshape(mnp.transpose(x, perm), (-1,)), shape)


@fast
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=3))
def test_broadcast_to_any_shape(shapes):
    cg(lambda x: mnp.broadcast_to(x, shapes.result_shape), shapes.input_shapes[0])


@fast
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data())
def test_concatenate_split_any_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    extra = data.draw(st.integers(1, 3))
    other = list(shape)
    other[axis] = extra
    cg(lambda x, y: mnp.concatenate([x, y], axis=axis), shape, tuple(other))
    cg(lambda x: mul(mnp.array_split(x, 2, axis=axis)), shape)


@fast
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data())
def test_sort_tile_repeat_pad_any_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    reps = data.draw(st.lists(st.integers(0, 2), min_size=shape[axis], max_size=shape[axis]))
    mode = data.draw(st.sampled_from(["constant", "edge", "symmetric", "wrap"]))
    cg(lambda x: mnp.sort(x, axis=axis), shape)
    cg(lambda x: mnp.repeat(x, reps, axis=axis), shape)
    cg(lambda x: mnp.tile(x, (2,) * len(shape)), shape)
    cg(lambda x: mnp.pad(x, 1, mode=mode), shape)
    cg(lambda x: mnp.flip(mnp.roll(x, 1, axis=axis), axis), shape)


@fast
@given(n=st.integers(0, 3), shape=hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5))
def test_diff_any_order(n, shape):
    cg(lambda x: mnp.diff(x, n=n, axis=0), shape)


# ------------------------------------------------------------ registry
CHAPTER = (
    "reshape ravel transpose permute_dims matrix_transpose moveaxis swapaxes rollaxis squeeze "
    "expand_dims atleast_1d atleast_2d atleast_3d broadcast_to broadcast_arrays concatenate "
    "concat stack vstack row_stack hstack dstack column_stack block split array_split hsplit "
    "vsplit dsplit unstack tile repeat pad flip fliplr flipud rot90 roll sort partition "
    "sort_complex diagonal diag diagflat trace triu tril diff ediff1d gradient trim_zeros copy "
    "array asarray asanyarray ascontiguousarray asfortranarray require asarray_chkfinite astype "
    "resize append insert delete"
).split()


@pytest.mark.parametrize("name", CHAPTER)
def test_every_function_has_a_rule(name):
    if not hasattr(numpy, name):
        assert not hasattr(mnp, name)       # minpy follows the installed NumPy
        pytest.skip(f"NumPy {numpy.__version__} has no {name}")
    p = getattr(mnp, name)._prim
    assert p.vjp is not None and not p.nondiff
