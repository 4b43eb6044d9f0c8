"""The gradient audit's table for ``minpy``'s own namespace (NumPy's functions): name ->
one outcome or a list of variants (see ``test_grad_audit.py``)."""
import io

import numpy

import minpy
import minpy.numpy as mnp

from _grad_audit_checks import (COMPARISON, CREATION, HIST_A, IDX, INDEX, INTEGER, IO_WRITE, P3,
                                ROUNDING, SHAPE, SORTED, STRINGS, K, R, X, _binary, _consts,
                                _cplx, _int, _nan, _unary, _written)


MINPY = {}
# ---- elementwise: smooth
MINPY.update(_unary("n", ["negative", "positive", "square", "exp", "exp2", "expm1", "sin", "cos",
                          "arctan", "atan", "sinh", "cosh", "tanh", "arcsinh", "asinh",
                          "deg2rad", "degrees", "rad2deg", "radians", "sinc", "i0",
                          "real_if_close", "conj", "conjugate"], "2x3"))
MINPY.update(_unary("p", ["sqrt", "log", "log2", "log10"]))
MINPY.update(_unary("u", ["log1p", "arcsin", "asin", "arccos", "acos", "arctanh", "atanh", "tan"]))
MINPY.update(_unary("g", ["arccosh", "acosh"]))
MINPY.update(_unary("m", ["absolute", "abs", "fabs", "cbrt", "reciprocal"]))
MINPY.update(_binary("n", "n", ["add", "subtract", "multiply", "logaddexp", "logaddexp2",
                                "maximum", "minimum", "fmax", "fmin", "nextafter"]))
MINPY.update(_binary("n", "m", ["divide", "true_divide"]))
MINPY.update(_binary("p", "n", ["power", "pow", "float_power"]))
MINPY.update(_binary("m", "m", ["arctan2", "atan2", "hypot", "copysign"]))
MINPY.update(_binary("f", "d", ["fmod", "remainder", "mod", "divmod"]))
MINPY.update({
    "sign": [R("m3", zero=True), R("m3", "m3", call=_cplx(lambda f, z: f(z)))],
    "real": [R("n3"), R("n3", "n3", call=_cplx(lambda f, z: f(z)))],
    "imag": [R("n3", zero=True), R("n3", "n3", call=_cplx(lambda f, z: f(z)))],
    "angle": [R("m3", zero=True), R("n3", "n3", call=_cplx(lambda f, z: f(z, deg=True)))],
    "unwrap": R("n6", call=lambda f, x: f(4.0 * x)),
    "nan_to_num": [R("n2x3"), R("n2x3", call=lambda f, x: f(_nan(x))),
                   X("n", call=lambda f, v: f(numpy.array([numpy.nan, 1.0]), nan=v))],
    "heaviside": [R("n4", zero=True, call=lambda f, x: f(x, 0.5)),
                  R("n3", call=lambda f, h: f(numpy.array([0.0, 1.5, -2.0]), h))],
    "ldexp": R("n3", call=lambda f, x: f(x, numpy.array([1, -2, 3]))),
    "frexp": R("f3"),
    "modf": R("h3"),
    "clip": [R("n2x3", call=lambda f, x: f(x, -0.5, 0.5)),
             R("n2x3", "n3", call=lambda f, x, lo: f(x, lo - 1.0, 1.2))],
    "where": [R("n2x3", "n3", call=lambda f, x, y: f(x > 0, x, y)),
              K(INDEX, "n2x3", call=lambda f, x: f(x), flag=False)],
})
# ---- elementwise: no gradient
MINPY.update(_consts(ROUNDING, ["floor", "ceil", "trunc", "rint", "fix", "spacing", "signbit"],
                     "h2x3"))
MINPY.update(_consts(ROUNDING, ["around", "round"], "h2x3", call=lambda f, x: f(x, 1)))
MINPY["floor_divide"] = K(ROUNDING, "f3", "d3")
MINPY.update(_consts(COMPARISON, ["equal", "not_equal", "less", "less_equal", "greater",
                                  "greater_equal", "logical_and", "logical_or", "logical_xor",
                                  "isclose", "allclose", "array_equal", "array_equiv"],
                     "n2x3", "n3"))
MINPY.update(_consts(COMPARISON, ["logical_not", "isnan", "isinf", "isfinite", "iscomplex",
                                  "isreal", "isneginf", "isposinf", "iscomplexobj", "isrealobj",
                                  "isscalar", "isfortran", "iterable"], "n2x3"))
MINPY["isin"] = K(COMPARISON, "n4", call=lambda f, x: f(x, SORTED))
MINPY.update(_consts(INTEGER, ["bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm",
                               "left_shift", "bitwise_left_shift", "right_shift",
                               "bitwise_right_shift"], "p3", "p3",
                     call=lambda f, x, y: f(_int(x), _int(y))))
MINPY.update(_consts(INTEGER, ["bitwise_count", "invert", "bitwise_invert", "bitwise_not"],
                     "p3", call=lambda f, x: f(_int(x))))
MINPY.update(_consts(INTEGER, ["packbits"], "n8", call=lambda f, x: f(x > 0)))
MINPY.update(_consts(INTEGER, ["unpackbits"], "p3",
                     call=lambda f, x: f(_int(x).astype(numpy.uint8))))
# ---- reductions, scans, statistics
MINPY.update({n: [R("n3x4"), R("n3x4", call=lambda f, x: f(x, axis=1, keepdims=True))]
              for n in ["sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin",
                        "ptp", "median"]})
MINPY.update({n: R("n3x4", call=lambda f, x: f(x, axis=0))
              for n in ["cumsum", "cumprod", "cumulative_sum", "cumulative_prod"]})
MINPY.update({n: R("n3x4", call=lambda f, x: f(_nan(x), axis=0))
              for n in ["nansum", "nanprod", "nanmean", "nanstd", "nanvar", "nanmax", "nanmin",
                        "nanmedian", "nancumsum", "nancumprod"]})
MINPY.update({
    "percentile": [R("n3x4", call=lambda f, x: f(x, [30.0, 75.0], axis=1)),
                   X("p", call=lambda f, q: f(HIST_A, 40.0 * q))],
    "quantile": [R("n3x4", call=lambda f, x: f(x, 0.3, axis=0, method="linear")),
                 X("q", call=lambda f, q: f(HIST_A, q))],
    "nanpercentile": R("n3x4", call=lambda f, x: f(_nan(x), 40.0, axis=0)),
    "nanquantile": R("n3x4", call=lambda f, x: f(_nan(x), [0.2, 0.6])),
    "average": [R("n3x4", "p4", call=lambda f, x, w: f(x, axis=1, weights=w)),
                R("n3x4", "p4", call=lambda f, x, w: f(x, axis=1, weights=w, returned=True))],
    "trace": R("n3x4"),
    "diff": [R("n4x5", call=lambda f, x: f(x, n=2, axis=0)),
             R("n4", "n2", call=lambda f, x, p: f(x, prepend=p, append=x[0]))],
    "ediff1d": R("n5", "n2", call=lambda f, x, b: f(x, to_begin=b, to_end=3.0)),
    "gradient": [R("n5"), R("n3x4", call=lambda f, x: f(x, 0.5, edge_order=2)),
                 X("p", call=lambda f, h: f(HIST_A, h))],
    "trapezoid": [R("n5", "o5", call=lambda f, y, x: f(y, x=x)),
                  R("n5", "p", call=lambda f, y, h: f(y, dx=h))],
    "corrcoef": R("n3x6"),
    "cov": [R("n3x6", "n6", call=lambda f, x, y: f(x, y, ddof=0)),
            X("p6", call=lambda f, w: f(HIST_A, aweights=w))],
    "bincount": [R("n5", call=lambda f, w: f(IDX, weights=w, minlength=4)),
                 K(INDEX, "p5", call=lambda f, x: f(_int(x)), flag=False)],
    "interp": [R("p4", "n5", call=lambda f, x, fp: f(x, SORTED + 1.5, fp)),
               R("n", "n", call=lambda f, lo, hi: f([-5.0, 0.3, 5.0], SORTED, HIST_A[:5],
                                                    left=lo, right=hi)),
               X("o5", call=lambda f, xp: f(SORTED, xp, HIST_A[:5]))],
    "convolve": [R("n5", "n3"), R("n5", "n3", call=lambda f, x, y: f(x, y, mode="same"))],
    "correlate": [R("n5", "n3"), R("n5", "n3", call=lambda f, x, y: f(x, y, mode="full"))],
})
MINPY.update(_consts(INDEX, ["argmax", "argmin", "nanargmax", "nanargmin", "argsort",
                             "argwhere", "nonzero", "flatnonzero", "count_nonzero", "all",
                             "any"], "n3x4"))
MINPY.update({
    "argpartition": K(INDEX, "n5", call=lambda f, x: f(x, 2)),
    "lexsort": K(INDEX, "n5", "n5", call=lambda f, x, y: f((x, y))),
    "searchsorted": [K(INDEX, "n4", call=lambda f, v: f(SORTED, v)),
                     K(INDEX, "o5", call=lambda f, a: f(a, HIST_A))],
    "digitize": [K(INDEX, "n4", call=lambda f, x: f(x, SORTED)),
                 K(INDEX, "o5", call=lambda f, b: f(HIST_A, b))],
    "ravel_multi_index": K(INDEX, "p3", call=lambda f, x: f((_int(x), _int(x)), (9, 9))),
    "unravel_index": K(INDEX, "p3", call=lambda f, x: f(_int(x), (3, 4))),
    "ix_": K(INDEX, "p3", call=lambda f, x: f(_int(x), _int(x))),
    "tril_indices_from": K(INDEX, "n3x3"),
    "triu_indices_from": K(INDEX, "n3x3"),
    "diag_indices_from": K(INDEX, "n3x3"),
    # histograms: counts are piecewise constant in the data, linear in the weights; the
    # edges (from the data's min and max unless given) and densities are smooth
    "histogram": [R("n6", call=lambda f, w: f(HIST_A, bins=3, weights=w)),
                  R("n6", call=lambda f, w: f(HIST_A, bins=[0.0, 0.4, 0.5, 1.0], weights=w,
                                              density=True)),
                  R("n6", call=lambda f, a: f(a, bins=4)),
                  R("n6", call=lambda f, a: f(a, bins="auto", density=True)),
                  R("n6", call=lambda f, a: f(a, bins=3, range=(-3.0, 3.0)), zero=True),
                  R("o5", call=lambda f, b: f(HIST_A, bins=b + 0.5, density=True)),
                  R("n", "p", call=lambda f, lo, w: f(HIST_A, bins=3, range=(lo - 3.0, w + 1.0),
                                                       density=True))],
    "histogram_bin_edges": [R("n6", call=lambda f, a: f(a, bins=4)),
                            R("n6", call=lambda f, a: f(a, bins=3, range=(-3, 3)), zero=True)],
    "histogram2d": [R("n6", call=lambda f, w: f(HIST_A, HIST_A[::-1], bins=2, weights=w)),
                    R("n6", "n6", call=lambda f, x, y: f(x, y, bins=(2, 3), density=True))],
    "histogramdd": [R("n6", call=lambda f, w: f(numpy.stack([HIST_A, HIST_A[::-1]], 1),
                                                 bins=2, weights=w)[0]),
                    R("n6x2", call=lambda f, s: f(s, bins=3, density=True)[0]),
                    R("n6", "n6", call=lambda f, x, y: f([x, y], bins=(2, 2), density=True)[0]),
                    # the edges sit in a list inside the result tuple: traced leaves too
                    R("n6x2", call=lambda f, s: f(s, bins=3)[1]),
                    R("n6x2", call=lambda f, s: f(s, bins=(2, 3))[1][1]),
                    R("n6", call=lambda f, w: f(numpy.stack([HIST_A, HIST_A[::-1]], 1),
                                                 bins=(2, 3), weights=w)[0])],
})
# ---- shapes, joins, splits, reordering
MINPY.update({
    "reshape": R("n2x3", call=lambda f, x: f(x, (3, 2))),
    "ravel": R("n2x3"),
    "transpose": R("n2x3x4", call=lambda f, x: f(x, (1, 2, 0))),
    "permute_dims": R("n2x3x4", call=lambda f, x: f(x, (2, 0, 1))),
    "matrix_transpose": R("n2x3x4"),
    "moveaxis": R("n2x3x4", call=lambda f, x: f(x, 0, -1)),
    "rollaxis": R("n2x3x4", call=lambda f, x: f(x, 2)),
    "swapaxes": R("n2x3x4", call=lambda f, x: f(x, 0, 2)),
    "expand_dims": R("n2x3", call=lambda f, x: f(x, (0, 2))),
    "squeeze": R("n3x1", call=lambda f, x: f(x, axis=1)),
    "flip": R("n2x3", call=lambda f, x: f(x, 1)),
    "fliplr": R("n2x3"), "flipud": R("n2x3"),
    "roll": R("n2x3", call=lambda f, x: f(x, 2, axis=1)),
    "rot90": R("n2x3"),
    "tile": R("n2x3", call=lambda f, x: f(x, (2, 1))),
    "repeat": R("n2x3", call=lambda f, x: f(x, [1, 2], axis=0)),
    "resize": R("n2x3", call=lambda f, x: f(x, (4, 2))),
    "atleast_1d": R("n", "n2", call=lambda f, x, y: f(x, y)),
    "atleast_2d": R("n3"), "atleast_3d": R("n2x3"),
    "broadcast_to": R("n3", call=lambda f, x: f(x, (2, 3))),
    "broadcast_arrays": R("n3x1", "n4"),
    "concatenate": R("n2x3", "n1x3", call=lambda f, x, y: f([x, y])),
    "concat": R("n2x3", "n2x1", call=lambda f, x, y: f((x, y), axis=1)),
    "stack": R("n2x3", "n2x3", call=lambda f, x, y: f([x, y], axis=1)),
    "vstack": R("n3", "n2x3", call=lambda f, x, y: f([x, y])),
    "row_stack": R("n3", "n2x3", call=lambda f, x, y: f([x, y])),
    "hstack": R("n2x3", "n2x1", call=lambda f, x, y: f([x, y])),
    "dstack": R("n2x3", "n2x3", call=lambda f, x, y: f([x, y])),
    "column_stack": R("n3", "n3x2", call=lambda f, x, y: f([x, y])),
    "block": R("n2x2", "n2x1", "n1x3", call=lambda f, x, y, z: f([[x, y], [z]])),
    "append": R("n2x3", "n1x3", call=lambda f, x, y: f(x, y, axis=0)),
    "insert": R("n5", "n2", call=lambda f, x, v: f(x, [1, 3], v)),
    "delete": R("n5", call=lambda f, x: f(x, [0, 2])),
    "split": R("n4x3", call=lambda f, x: f(x, 2)),
    "array_split": R("n5x2", call=lambda f, x: f(x, 3)),
    "hsplit": R("n2x4", call=lambda f, x: f(x, 2)),
    "vsplit": R("n4x2", call=lambda f, x: f(x, [1])),
    "dsplit": R("n2x2x4", call=lambda f, x: f(x, 2)),
    "unstack": R("n2x3", call=lambda f, x: f(x, axis=1)),
    "pad": [R("n2x3", call=lambda f, x: f(x, 1, mode="reflect")),
            R("n2x3", "n", call=lambda f, x, c: f(x, ((1, 0), (0, 2)), constant_values=c))],
    "diag": [R("n3x3"), R("n3", call=lambda f, x: f(x, k=1))],
    "diagflat": R("n2x2"),
    "diagonal": R("n3x4", call=lambda f, x: f(x, 1)),
    "tril": R("n3x4"), "triu": R("n3x4", call=lambda f, x: f(x, -1)),
    "sort": R("n3x4", call=lambda f, x: f(x, axis=0)),
    "sort_complex": R("n5"),
    "partition": R("n6", call=lambda f, x: f(x, 2)),
    "trim_zeros": R("n4", call=lambda f, x: f(mnp.concatenate([numpy.zeros(2), x,
                                                                numpy.zeros(1)]))),
    "take": R("n5", call=lambda f, x: f(x, IDX)),
    "take_along_axis": R("n3x4", call=lambda f, x: f(x, numpy.array([[0], [3], [1]]), axis=1)),
    "choose": R("n5", "n5", call=lambda f, x, y: f(IDX % 2, [x, y])),
    "compress": R("n3x4", call=lambda f, x: f([True, False, True], x, axis=0)),
    "extract": R("n2x3", call=lambda f, x: f(x > 0, x)),
    "select": R("n4", "n4", "n4", call=lambda f, x, y, d: f([x > 0.5, x < -0.5], [x, y], d)),
    "piecewise": R("n5", call=lambda f, x: f(x, [x < 0], [lambda v: v ** 2, lambda v: 3 * v])),
    "apply_along_axis": R("n3x4", call=lambda f, x: f(lambda v: v * v.sum(), 1, x)),
    "apply_over_axes": R("n2x3x4", call=lambda f, x: f(mnp.sum, x, [0, 2])),
    "fromfunction": R("n3", call=lambda f, x: f(lambda i, j: x[i] * j, (3, 2), dtype=int)),
    "copy": R("n2x3"), "asarray": R("n2x3"), "asanyarray": R("n2x3"),
    "asarray_chkfinite": R("n2x3"), "ascontiguousarray": R("n2x3"),
    "asfortranarray": R("n2x3"),
    "require": R("n2x3", call=lambda f, x: f(x, numpy.float64, ["F"])),
    "astype": R("n2x3", call=lambda f, x: f(x, numpy.complex128)),
    "array": [R("n2x3"), R("n", "n", call=lambda f, x, y: f([[x, y], [y, 2.0]]))],
    "meshgrid": R("n3", "n2", call=lambda f, x, y: f(x, y, indexing="ij")),
    "vander": R("n4", call=lambda f, x: f(x, 3)),
    # in-place writers, replayed out of place under a tape
    "copyto": R("n2x3", "n3", call=_written(lambda f, y, v: f(y, v, where=numpy.array(
        [True, False, True])))),
    "put": R("n5", "n2", call=_written(lambda f, y, v: f(y, [0, 3], v))),
    "place": R("n5", "n2", call=_written(lambda f, y, v: f(y, IDX == 2, v))),
    "putmask": R("n5", "n5", call=_written(lambda f, y, v: f(y, IDX == 0, v))),
    "put_along_axis": R("n2x3", "n2x1", call=_written(
        lambda f, y, v: f(y, numpy.array([[2], [0]]), v, axis=1))),
    "fill_diagonal": R("n3x3", "n", call=_written(lambda f, y, v: f(y, v))),
})
# ---- unique values and sets: every output value is an input value
MINPY.update({
    "unique": [R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
               R("n4", call=lambda f, x: f(mnp.concatenate([x[1:], x]), return_index=True,
                                           return_inverse=True, return_counts=True)),
               R("n3x2", call=lambda f, x: f(mnp.concatenate([x, x[:1]]), axis=0))],
    "unique_values": R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
    "unique_counts": R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
    "unique_inverse": R("n4", call=lambda f, x: f(mnp.concatenate([x, x[:2]]))),
    "unique_all": R("n2x2", call=lambda f, x: f(mnp.concatenate([x, x[:1]]))),
    "union1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[:1]]))),
    "intersect1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[1:3]]))),
    "setdiff1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[:1]]))),
    "setxor1d": R("n4", "n3", call=lambda f, x, y: f(x, mnp.concatenate([y, x[:1]]))),
})
# ---- products, polynomials
MINPY.update({
    "dot": R("n2x3", "n3x4"), "vdot": R("n2x3", "n2x3"), "inner": R("n2x3", "n4x3"),
    "outer": R("n3", "n2"), "matmul": R("n2x3x4", "n4x2"), "kron": R("n2x2", "n3x1"),
    "tensordot": R("n2x3x4", "n3x4x2", call=lambda f, x, y: f(x, y, axes=2)),
    "einsum": R("n2x3", "n3x4", call=lambda f, x, y: f("ij,jk->ki", x, y)),
    "vecdot": R("n2x3", "n3"), "matvec": R("n2x3", "n3"), "vecmat": R("n3", "n3x2"),
    "cross": R("n2x3", "n3"),
    "poly": R("n3"), "polyadd": R("n3", "n2"), "polysub": R("n3", "n2"),
    "polymul": R("n3", "n2"), "polyder": R("n4"), "polyint": R("n3"),
    "polydiv": R("n4", "m2"), "polyval": R("n3", "n4"),
    "polyfit": [R("n6", "p6", call=lambda f, y, w: f(HIST_A, y, 2, w=w)),
                R("o6", call=lambda f, x: f(x, HIST_A, 2))],
    "roots": R("n4", call=lambda f, x: f(P3 + 0.01 * x)),
})
# ---- creation
MINPY.update({
    "arange": [R("n", call=lambda f, x: f(x, x + 4.5)),
               R("p", call=lambda f, s: f(0.25, 3.1, s))],
    "linspace": R("n", "n2", call=lambda f, x, y: f(x, y, 5, axis=-1)),
    "logspace": [R("n", "n", call=lambda f, x, y: f(x, y, 4)),
                 R("g", call=lambda f, b: f(0.0, 1.5, 4, base=b))],
    "geomspace": R("p", "p2", call=lambda f, x, y: f(x, y, 4)),
    "full": R("n", call=lambda f, c: f((2, 3), c)),
    "full_like": R("n2x3", "n", call=lambda f, a, c: f(a, c)),
    "kaiser": R("p", call=lambda f, b: f(6, b)),
    # (a 1-D grid: NumPy's own arithmetic on the traced bounds is recorded)
    "mgrid": R("n", call=lambda f, x: f[x:x + 2.0:5j]),
    "ogrid": R("n", call=lambda f, x: f[x:2.0:4j]),
    "r_": R("n3", "n2", call=lambda f, x, y: f[x, 0.5, y]),
    "c_": R("n3", "n3x2", call=lambda f, x, y: f[x, y]),
})
MINPY.update({n: K(CREATION, call=lambda f: f(3)) for n in [
    "zeros", "ones", "eye", "identity", "tri", "diag_indices", "tril_indices",
    "triu_indices", "bartlett", "blackman", "hamming", "hanning"]})
MINPY.update({
    "empty": K(CREATION, call=lambda f: f(3), values=False),
    "indices": K(CREATION, call=lambda f: f((2, 3))),
    "mask_indices": K(CREATION, call=lambda f: f(3, mnp.triu)),
    "broadcast_shapes": K(SHAPE, call=lambda f: f((2, 1), (3,))),
    "zeros_like": K(CREATION, "n2x3"), "ones_like": K(CREATION, "n2x3"),
    "empty_like": K(CREATION, "n2x3", values=False),
    "shape": K(SHAPE, "n2x3"), "ndim": K(SHAPE, "n2x3"), "size": K(SHAPE, "n2x3"),
    "result_type": K(SHAPE, "n2x3", "n3"), "min_scalar_type": K(SHAPE, "n2x3"),
    "common_type": K(SHAPE, "n2x3", "n3"),
    "can_cast": K(SHAPE, "n2x3", call=lambda f, x: f(x, numpy.float32)),
    "may_share_memory": K(COMPARISON, "n2x3", "n3"),
    "shares_memory": K(COMPARISON, "n2x3", "n3"),
    "array2string": K(STRINGS, "n2x3"), "array_repr": K(STRINGS, "n2x3"),
    "array_str": K(STRINGS, "n2x3"),
    "save": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "savez": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "savez_compressed": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "savetxt": K(IO_WRITE, "n2x3", call=lambda f, x: f(io.BytesIO(), x)),
    "einsum_path": K("the contraction plan (a list and a report)", "n2x3", "n3x4",
                     call=lambda f, x, y: f("ij,jk->ik", x, y)),
    "stop_gradient": K("by design: its argument as a constant", "n3", flag=False,
                       values=False),
    # readers of arrays: their result is new host data without a path back
    "frombuffer": X("n3"),
    "fromiter": X("n3", call=lambda f, x: f(x, float)),
    "nested_iters": X("n2x3", call=lambda f, x: f([x], [[0], [1]])),
    "from_dlpack": X("n3"),
})

# names the installed NumPy removed (row_stack, trapz, in1d in NumPy 2.5): minpy follows it
for _name in [n for n in MINPY if not hasattr(numpy, n) and not hasattr(minpy, n)]:
    del MINPY[_name]
