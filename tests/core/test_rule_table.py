"""autograd's ``primitive_vjps`` introspection over minpy's rule tables."""
import numpy
import pytest

import minpy as mp
from minpy.core import primitive_vjps
from minpy.core.autograd_extra import VJPRules, primitive_vjps as from_extra
from minpy.core.primitive import PRIMITIVES
from minpy.testing import check_grads
from _host import host


def test_exported_where_autograd_users_import_it():
    assert primitive_vjps is from_extra
    assert "primitive_vjps" in mp.core.autograd_extra.__all__


def test_a_namespace_function_has_autograds_vjp_argnums():
    assert mp.sin in primitive_vjps and "sin" in primitive_vjps
    rules = primitive_vjps[mp.sin]
    assert isinstance(rules, VJPRules) and 0 in rules and list(rules) == [0]
    x = mp.array([0.1, 0.7, 2.0])
    ans = mp.sin(x)
    g = mp.array([1.0, 2.0, 3.0])
    (gx,) = rules((0,), ans, (x,), {})(g)
    numpy.testing.assert_allclose(host(gx), numpy.cos(host(x)) * host(g))
    # the maker of one argument, as autograd 1.1's {argnum: maker}
    numpy.testing.assert_allclose(host(rules[0](ans, x)(g)), host(gx))
    # two arguments at once, in the order asked
    a, b = mp.array([2.0]), mp.array([5.0])
    ga, gb = primitive_vjps[mp.multiply]((1, 0), a * b, (a, b), {})(mp.array([1.0]))
    assert host(ga).tolist() == [2.0] and host(gb).tolist() == [5.0]
    with pytest.raises(NotImplementedError, match="sin wrt argnum 3"):
        rules((3,), ans, (x,), {})


def test_functions_without_gradients_are_not_in_it():
    assert mp.argmax not in primitive_vjps and mp.floor not in primitive_vjps
    assert primitive_vjps.get(mp.argmax) is None and primitive_vjps.get(len) is None
    with pytest.raises(KeyError):
        primitive_vjps[lambda x: x]
    with pytest.raises(TypeError, match="not a minpy primitive"):
        primitive_vjps[lambda x: x] = lambda *a: None


def test_iteration_lists_the_registered_rules():
    listed = list(primitive_vjps)
    assert len(primitive_vjps) == len(listed) > 200
    assert PRIMITIVES["sin"] in listed and PRIMITIVES["argmax"] not in listed
    assert all(p in primitive_vjps for p in listed)


def test_a_user_primitive_defined_with_defvjp_shows_up_and_can_be_popped():
    @mp.customop
    def cube(x):
        return x ** 3

    assert cube not in primitive_vjps
    mp.defvjp(cube, lambda ans, x: lambda g: g * 3 * x ** 2)
    assert cube in primitive_vjps and list(primitive_vjps[cube]) == [0]
    # listed once the table has met it (custom ops are not registered by name)
    assert cube._prim in list(primitive_vjps)
    x = mp.array([1.0, 2.0])
    f = lambda x: mp.sum(cube(x))        # noqa: E731
    assert host(mp.grad(f)(x)).tolist() == [3.0, 12.0]
    # autograd's own tests pop a rule and put it back
    saved = primitive_vjps.pop(cube)
    assert cube not in primitive_vjps
    with pytest.raises(TypeError, match="cube has no gradient rule"):
        mp.grad(f)(x)
    primitive_vjps[cube] = saved
    assert host(mp.grad(f)(x)).tolist() == [3.0, 12.0]
    check_grads(f, x)


def test_setting_an_autograd_style_vjp_argnums():
    @mp.customop
    def scaled(x, y):
        return x * y

    def vjp_argnums(argnums, ans, args, kwargs):
        x, y = args
        return lambda g: tuple(g * y if i == 0 else g * x for i in argnums)

    primitive_vjps[scaled] = vjp_argnums
    x, y = mp.array([2.0, 3.0]), mp.array([5.0, 7.0])
    gx, gy = mp.grad(lambda x, y: mp.sum(scaled(x, y)), argnum=(0, 1))(x, y)
    assert host(gx).tolist() == [5.0, 7.0] and host(gy).tolist() == [2.0, 3.0]
    assert scaled in primitive_vjps


def test_popping_a_builtin_rule_and_restoring_it():
    x = mp.array([0.5])
    f = lambda x: mp.sum(mp.tanh(x))     # noqa: E731
    want = host(mp.grad(f)(x))
    saved = primitive_vjps.pop(mp.tanh)
    try:
        with pytest.raises(TypeError, match="tanh has no gradient rule"):
            mp.grad(f)(x)
    finally:
        primitive_vjps[mp.tanh] = saved
    numpy.testing.assert_array_equal(host(mp.grad(f)(x)), want)
