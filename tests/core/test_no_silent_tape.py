"""The tape never gives a wrong number silently: each case computes the right gradient
or raises a clear error naming the function (issue 24's reproducers, as a user writes
them)."""
import collections
import warnings

import numpy
import pytest

import minpy
from minpy.testing import check_grads

from _standin import standin_gpu  # noqa: F401  (fixture)

Params = collections.namedtuple("Params", "w b")


# ------------------------------------------------------------------ Python containers
def test_nested_lists_of_python_floats_are_traced_leaves():
    g = minpy.grad(lambda a: minpy.sum(minpy.concatenate([a, a]) ** 2))([[1., 2.], [3., 4.]])
    assert g == [[4.0, 8.0], [12.0, 16.0]]
    assert all(type(v) is float for row in g for v in row)


@pytest.mark.parametrize("b,want", [(2, [[4.0, 8.0], [12.0, 16.0]]),
                                    (3, [[6.0, 24.0], [54.0, 96.0]]),
                                    (1, [[2.0, 2.0], [2.0, 2.0]])])
def test_power_gradient_is_exact_for_small_integer_exponents(standin_gpu, monkeypatch, b, want):
    """A device's pow may be an ulp off even for exponents 1 and 2 (CuPy on an H200 gave
    11.999999999999998 for 2 * 3 ** 1 * 2); the gradient of x ** b is exact for b = 1, 2,
    3, as NumPy's. The stand-in's power is made one ulp high to show it."""
    exact = numpy.power
    monkeypatch.setattr(numpy, "power",
                        lambda *a, **k: numpy.nextafter(exact(*a, **k), numpy.inf))
    with minpy.gpu(0):
        a = minpy.numpy.array([[1.0, 2.0], [3.0, 4.0]])
        g = minpy.grad(lambda a: minpy.sum(minpy.concatenate([a, a]) ** b))(a)
        assert standin_gpu.owns(g._data)
        assert g.asnumpy().tolist() == want


def test_flat_list_of_python_floats():
    g = minpy.grad(lambda x: minpy.sum(minpy.square(x)))([1.0, 2.0, 3.0])
    assert g == [2.0, 4.0, 6.0]


def test_python_ints_in_a_list_count_as_floats():
    assert minpy.grad(lambda x: minpy.sum(minpy.array(x) ** 3))([1, 2]) == [3.0, 12.0]


def test_a_list_mixing_arrays_and_floats_through_array_like_arguments():
    x = minpy.array([1.0, 2.0])

    def f(p):
        # p[0] an array, p[1] a float: a list of them is one array-like (2 x 2)
        return minpy.sum(minpy.tanh([p[0], p[0] * p[1]]))
    g = minpy.grad(f)([x, 0.5])
    t1, t2 = numpy.tanh([1.0, 2.0]), numpy.tanh(numpy.array([1.0, 2.0]) * 0.5)
    numpy.testing.assert_allclose(g[0].asnumpy(), (1 - t1 ** 2) + 0.5 * (1 - t2 ** 2))
    assert g[1] == pytest.approx(float(numpy.sum((1 - t2 ** 2) * numpy.array([1.0, 2.0]))))


def test_nested_list_items_of_a_sequence_argument():
    x = minpy.array(0.5)
    g = minpy.grad(lambda x: minpy.sum(minpy.stack([[x, 2 * x], [x * x, 1.0]]) ** 2))(x)
    assert float(g) == pytest.approx(2 * 0.5 + 8 * 0.5 + 4 * 0.5 ** 3)


def test_namedtuple_ordereddict_and_defaultdict_arguments():
    p = Params(minpy.array([1.0, 2.0]), 0.5)
    g = minpy.grad(lambda p: minpy.sum(p.w * p.b) + p.b ** 2)(p)
    assert type(g) is Params
    numpy.testing.assert_allclose(g.w.asnumpy(), [0.5, 0.5])
    assert g.b == pytest.approx(3.0 + 1.0)
    d = collections.OrderedDict(a=minpy.array([1.0]), b=minpy.array([3.0]))
    g = minpy.grad(lambda d: minpy.sum(d["a"] * d["b"]))(d)
    assert type(g) is collections.OrderedDict and list(g) == ["a", "b"]
    assert float(g["a"][0]) == 3.0 and float(g["b"][0]) == 1.0
    dd = collections.defaultdict(float, {"x": minpy.array(2.0)})
    g = minpy.grad(lambda d: d["x"] ** 3)(dd)
    assert type(g) is collections.defaultdict and float(g["x"]) == 12.0


def test_none_parts_stay_none():
    g = minpy.grad(lambda p: minpy.sum(p[0] ** 2))([minpy.array([1.0, 2.0]), None])
    assert g[1] is None
    numpy.testing.assert_allclose(g[0].asnumpy(), [2.0, 4.0])


# ------------------------------------------------------------------ values leaving the tape
@pytest.mark.parametrize("conv", [float, int, complex, lambda x: x.item(),
                                  lambda x: x.tolist()],
                         ids=["float", "int", "complex", "item", "tolist"])
def test_python_numbers_of_traced_values_are_refused(conv):
    with pytest.raises(TypeError, match="minpy.grad: .* would drop it from the gradient"):
        minpy.grad(lambda x: conv(x) * x)(minpy.array(2.5))


def test_constant_values_by_stop_gradient_or_asnumpy_still_work():
    g = minpy.grad(lambda x: float(minpy.stop_gradient(x)) * x)(minpy.array(2.5))
    assert float(g) == 2.5
    g = minpy.grad(lambda x: x.asnumpy().item() * x)(minpy.array(2.5))
    assert float(g) == 2.5
    # control flow on a traced value is fine
    g = minpy.grad(lambda x: x * x if x > 0 else -x)(minpy.array(3.0))
    assert float(g) == 6.0


def test_python_numbers_of_values_after_grad_are_fine():
    g, loss = minpy.grad_and_loss(lambda x: minpy.sum(x ** 2))(minpy.array([1.0, 2.0]))
    assert float(loss) == 5.0 and loss.item() == 5.0 and g.tolist() == [2.0, 4.0]


# ------------------------------------------------------------------ outputs
def test_complex_output_is_refused_pointing_to_holomorphic_grad():
    with pytest.raises(TypeError, match="complex.*holomorphic_grad"):
        minpy.grad(lambda x: x * (1 + 0.2j))(1.0)
    with pytest.raises(TypeError, match="complex"):
        minpy.grad(lambda x: minpy.sum(x * 1j))(minpy.array([1.0, 2.0]))
    # the real part is fine, and holomorphic_grad gives the complex derivative
    assert minpy.grad(lambda x: minpy.real(x * (1 + 0.2j)))(1.0) == pytest.approx(1.0)
    assert complex(minpy.holomorphic_grad(lambda z: z * z)(minpy.array(1 + 1j))) == \
        pytest.approx(2 + 2j)


def test_bool_output_is_refused():
    with pytest.raises(TypeError, match="returned a bool"):
        minpy.grad(lambda x: minpy.allclose(x, x))(minpy.array([1.0]))
    with pytest.raises(TypeError, match="returned a bool"):
        minpy.grad(lambda x: minpy.all(x > 0))(minpy.array([1.0]))


def test_untraced_real_output_gives_zeros():
    g = minpy.grad(lambda x: 3.0)(minpy.array([1.0, 2.0]))
    numpy.testing.assert_array_equal(g.asnumpy(), [0.0, 0.0])


def test_bool_and_integer_arguments_are_refused():
    with pytest.raises(TypeError, match="dtype bool; gradients need float"):
        minpy.grad(lambda x: minpy.sum(minpy.abs(x)))(minpy.array([True, False]))
    with pytest.raises(TypeError, match="dtype int64"):
        minpy.grad(lambda x: minpy.sum(x * 2.0))(minpy.array([1, 2]))
    with pytest.raises(TypeError, match="a bool"):
        minpy.grad(lambda x: x * 2.0)(True)


# ------------------------------------------------------------------ views and traced writes
def _view_then_write(x):
    y = x * 1.0
    v = y[1:]
    y[1] = 50.0 * x[0]
    return minpy.sum(v) + minpy.sum(y)


def test_a_view_taken_before_a_traced_write_is_refused_not_stale():
    x = minpy.array([1.0, 2.0, 3.0])
    assert float(_view_then_write(x)) == 107.0       # NumPy's semantics without a tape
    with pytest.raises(ValueError, match="written in place by x\\[key\\] = value"):
        minpy.grad_and_loss(_view_then_write)(x)


def test_writing_into_a_view_refuses_reading_its_base():
    def f(x):
        y = x * 1.0
        v = y[1:]
        v[0] = 5.0 * x[0]
        return minpy.sum(y)
    assert float(f(minpy.array([1.0, 2.0, 3.0]))) == 9.0
    with pytest.raises(ValueError, match="write does not reach this array"):
        minpy.grad(f)(minpy.array([1.0, 2.0, 3.0]))


def test_a_write_into_an_untraced_array_with_a_traced_value():
    def f(x):
        y = minpy.zeros(3)
        v = y[1:]
        y[1] = x[0]
        return minpy.sum(v * v)
    assert float(f(minpy.array([2.0]))) == 4.0
    with pytest.raises(ValueError, match="shares memory"):
        minpy.grad(f)(minpy.array([2.0]))


def test_views_taken_after_the_write_and_plain_writes_are_differentiated():
    def f(x):
        y = x * 1.0
        y[1] = 50.0 * x[0]
        y += 1.0
        v = y[1:]
        return minpy.sum(v) + minpy.sum(y)
    x = minpy.array([1.0, 2.0, 3.0])
    g, loss = minpy.grad_and_loss(f)(x)
    assert float(loss) == float(f(x))
    numpy.testing.assert_allclose(g.asnumpy(), [101.0, 0.0, 2.0])
    check_grads(f, x, order=2)


def test_stale_marks_end_with_the_tape():
    kept = {}

    def f(x):
        y = x * 1.0
        kept["v"] = y[1:]
        y[0] = 2.0 * x[0]
        return minpy.sum(y)
    minpy.grad(f)(minpy.array([1.0, 2.0]))
    # outside the gradient the old view is a plain array again
    assert float(minpy.sum(kept["v"])) == 2.0


def test_nested_grad_with_traced_writes():
    def inner(x):
        y = x * 1.0
        y[0] = x[0] ** 3
        return minpy.sum(y)
    g2 = minpy.grad(lambda x: minpy.sum(minpy.grad(inner)(x) * x))(minpy.array([2.0, 1.0]))
    # d/dx0 (3 x0^2 * x0 + x1) = 9 x0^2 ; d/dx1 = 1
    numpy.testing.assert_allclose(g2.asnumpy(), [36.0, 1.0])


def test_no_warning_noise_for_the_list_path():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minpy.grad(lambda x: minpy.sum(minpy.square(x)))([1.0, 2.0])


def test_reading_a_stale_view_on_the_host_is_refused_too():
    def f(x):
        y = x * 1.0
        v = y[1:]
        y[1] = 3.0 * x[0]
        print(v.asnumpy())
        return minpy.sum(y)
    with pytest.raises(ValueError, match="shares memory"):
        minpy.grad(f)(minpy.array([1.0, 2.0]))


def test_reshape_without_a_shape_is_numpys_error():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'shape'"):
        minpy.reshape(minpy.ones(3))


def test_unique_values_nans_each_get_their_own_output_gradient():
    # unique_values keeps every NaN (equal_nan=False): each NaN input is one output,
    # matched in order (all NaNs matched to the first NaN output lost a weight)
    w = minpy.array([1.0, 10.0, 100.0])
    g = minpy.grad(lambda x: minpy.sum(minpy.unique_values(x) * w))(
        minpy.array([float("nan"), float("nan"), 1.0]))
    numpy.testing.assert_allclose(g.asnumpy(), [10.0, 100.0, 1.0])


def test_copyto_with_a_positional_where_under_a_tape():
    def f(x):
        y = minpy.array([1.0, 2.0, 3.0])
        minpy.copyto(y, x, "same_kind", minpy.array([False, True, False]))
        return minpy.sum(y * minpy.array([1.0, 2.0, 3.0]))
    x = minpy.array([5.0, 6.0, 7.0])
    g, loss = minpy.grad_and_loss(f)(x)
    assert float(loss) == float(f(x)) == 1.0 + 12.0 + 9.0
    numpy.testing.assert_allclose(g.asnumpy(), [0.0, 2.0, 0.0])


def test_make_vjp_of_an_output_with_a_none_part():
    vjp, ans = minpy.make_vjp(lambda x: (2.0 * x, None))(minpy.array([1.0, 2.0]))
    assert ans[1] is None
    g = vjp((minpy.array([1.0, 1.0]), None))
    numpy.testing.assert_allclose(g.asnumpy(), [2.0, 2.0])
