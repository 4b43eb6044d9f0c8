"""Random small programs over traced values held in nested containers (lists, tuples,
dicts, namedtuples, Python floats among arrays): ``minpy.grad`` equals central finite
differences, leaf by leaf, in the argument's own structure."""
import collections

import numpy
from hypothesis import example, given, settings, strategies as st

import minpy
from minpy.core import tree

Pair = collections.namedtuple("Pair", "p q")
N = 3


def _leaf_values(draw):
    if draw(st.booleans()):
        return draw(st.floats(-1.5, 1.5, allow_nan=False))
    return minpy.array(numpy.array(draw(st.lists(st.floats(-1.5, 1.5, allow_nan=False),
                                                 min_size=N, max_size=N)), dtype=numpy.float64))


@st.composite
def containers(draw, depth=0):
    kind = draw(st.sampled_from(["list", "tuple", "dict", "pair", "odict"] if depth < 2
                                else ["leaf"]))
    if kind == "leaf" or (depth > 0 and draw(st.booleans())):
        return _leaf_values(draw)
    if kind == "pair":
        return Pair(draw(containers(depth=depth + 1)), draw(containers(depth=depth + 1)))
    items = [draw(containers(depth=depth + 1)) for _ in range(draw(st.integers(1, 3)))]
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    keys = [f"k{i}" for i in range(len(items))]
    return (dict if kind == "dict" else collections.OrderedDict)(zip(keys, items))


def _is_vec(v):
    return type(v) is minpy.Array and v.ndim == 1


def _step(op, u, v):
    """One operation of a program on values ``u`` and ``v`` (vectors of N or scalars)."""
    if op == "add":
        return u + v
    if op == "mul":
        return u * v
    if op == "sub_sin":
        return minpy.sin(u) - v
    if op == "tanh":
        return minpy.tanh(u * 0.5 + v)
    if op == "ratio":
        return u / (1.0 + v * v)
    if op == "list":
        # a list of traced values where NumPy takes one array-like
        if _is_vec(u) == _is_vec(v):
            return minpy.sum(minpy.square([u, v]), axis=0)
        vec, other = (u, v) if _is_vec(u) else (v, u)
        return minpy.sum(minpy.tanh([vec, vec * 0.5]), axis=0) * other
    if op == "seq":
        # a sequence-of-arrays argument whose items are nested lists of scalars
        if _is_vec(u) and _is_vec(v):
            return minpy.concatenate([u, v])[1:1 + N]
        if not _is_vec(u) and not _is_vec(v):
            return minpy.sum(minpy.stack([[u * 1.0, 2.0], [1.0, v * 1.0]]) ** 2, axis=0)[0]
        return u * v
    raise AssertionError(op)


@st.composite
def programs(draw):
    x = draw(containers())
    n_leaves = len(tree.leaves(x))
    steps = draw(st.lists(st.tuples(
        st.sampled_from(["add", "mul", "sub_sin", "tanh", "ratio", "list", "seq"]),
        st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=6))
    return x, n_leaves, steps


def _run(steps, x):
    values = tree.leaves(x)
    for op, i, j in steps:
        values.append(_step(op, values[i % len(values)], values[j % len(values)]))
    total = 0.0
    for v in values[-2:]:
        total = total + minpy.sum(v)
    return total


def _value(steps, x):
    return float(minpy.stop_gradient(_run(steps, x)))


def _fd(steps, x, eps=1e-6):
    """Central differences of the program w.r.t. every leaf element, as host arrays."""
    leaves, td = tree.flatten(x)
    host = [numpy.array(float(v)) if not isinstance(v, minpy.Array) else v.asnumpy().copy()
            for v in leaves]
    out = []
    for k, h in enumerate(host):
        g = numpy.zeros_like(h)
        for idx in numpy.ndindex(h.shape):
            vals = []
            for sgn in (1, -1):
                hh = h.copy()
                hh[idx] += sgn * eps
                moved = list(leaves)
                moved[k] = float(hh) if not isinstance(leaves[k], minpy.Array) else minpy.array(hh)
                vals.append(_value(steps, tree.unflatten(td, moved)))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        out.append(g)
    return out


@settings(max_examples=40)
@given(programs())
# a list holding one list of one array: found locally (a "flat list" shortcut that
# took the one child for a leaf)
@example(([[minpy.array([0.5, -1.0, 2.0])]], 1, [("add", 0, 0)]))
def test_grad_of_programs_over_containers_matches_finite_differences(prog):
    x, n_leaves, steps = prog
    g = minpy.grad(lambda x: _run(steps, x))(x)
    # the gradient has the argument's structure, Python floats for Python floats
    assert tree.structure(g) == tree.structure(x)
    got = tree.leaves(g)
    assert len(got) == n_leaves
    for leaf, gl in zip(tree.leaves(x), got):
        assert type(gl) is (float if not isinstance(leaf, minpy.Array) else minpy.Array)
    for gl, fd in zip(got, _fd(steps, x)):
        numpy.testing.assert_allclose(numpy.asarray(gl.asnumpy() if isinstance(gl, minpy.Array)
                                                    else gl), fd, rtol=1e-5, atol=1e-6)


def test_a_list_of_device_arrays_and_floats_is_one_device_operand():
    """A ufunc operand listing device arrays and Python numbers is stacked on the device
    (CuPy's asarray takes only lists of device arrays of one shape), value and grad."""
    from _standin import installed
    with installed():
        u = minpy.array([0.5, -1.0, 2.0]).copyto(minpy.gpu(0))
        got = minpy.square([u, [1.0, 2.0, 3.0], u * 2])
        assert got.context == minpy.gpu(0)
        numpy.testing.assert_array_equal(got.asnumpy(), numpy.square(
            [[0.5, -1.0, 2.0], [1.0, 2.0, 3.0], [1.0, -2.0, 4.0]]))
        s = minpy.add([u[0], 1.5], 1)
        assert s.context == minpy.gpu(0) and s.dtype == numpy.float64
        numpy.testing.assert_array_equal(s.asnumpy(), [1.5, 2.5])
        g = minpy.grad(lambda v: minpy.sum(minpy.square([v[0], 1.5])))(u)
        numpy.testing.assert_allclose(g.asnumpy(), [1.0, 0.0, 0.0])
