"""``np.where`` with keyword arguments: NumPy 2's ``where(condition, x, y, /)`` is
positional-only, so minpy raises NumPy's exact TypeError — untraced, under
``minpy.grad`` (a traced operand) and inside ``minpy.jit``."""
import numpy
import pytest

import minpy as mp

CASES = [
    ((), {"condition": "c", "x": "a", "y": "b"}),
    (("c",), {"x": "a", "y": "b"}),
    (("c", "a"), {"y": "b"}),
    (("c",), {"x": "a"}),
    (("c", "a", "b"), {"out": None}),
    ((), {}),
]


def _numpy_error(args, kwargs):
    vals = {"c": numpy.array([True, False]), "a": numpy.array([1.0, 2.0]),
            "b": numpy.array([3.0, 4.0]), None: None}
    with pytest.raises(TypeError) as info:
        numpy.where(*[vals[a] for a in args], **{k: vals[v] for k, v in kwargs.items()})
    return str(info.value)


def _call(vals, args, kwargs):
    return mp.where(*[vals[a] for a in args], **{k: vals[v] for k, v in kwargs.items()})


def _minpy_vals(a):
    return {"c": mp.array([True, False]), "a": a, "b": mp.array([3.0, 4.0]), None: None}


@pytest.mark.parametrize("args, kwargs", CASES)
def test_untraced(args, kwargs):
    want = _numpy_error(args, kwargs)
    with pytest.raises(TypeError) as got:
        _call(_minpy_vals(mp.array([1.0, 2.0])), args, kwargs)
    assert str(got.value) == want


@pytest.mark.parametrize("args, kwargs", CASES)
def test_under_grad(args, kwargs):
    want = _numpy_error(args, kwargs)
    with pytest.raises(TypeError) as got:
        mp.grad(lambda a: mp.sum(_call(_minpy_vals(a), args, kwargs)))(mp.array([1.0, 2.0]))
    assert str(got.value) == want


@pytest.mark.parametrize("args, kwargs", CASES)
def test_inside_jit(args, kwargs):
    want = _numpy_error(args, kwargs)
    f = mp.jit(lambda a: _call(_minpy_vals(a), args, kwargs))
    with pytest.raises(TypeError) as got:
        f(mp.array([1.0, 2.0]))
    assert str(got.value) == want


def test_positional_where_still_differentiates():
    c = mp.array([True, False])
    g = mp.grad(lambda a: mp.sum(mp.where(c, a, 0.0) * 3.0))(mp.array([1.0, 2.0]))
    assert g.tolist() == [3.0, 0.0]
