"""Custom ops with arguments nested at any depth, and forwards that return NumPy values.

A custom op whose arrays sit two or more container levels deep (a tuple of
lists of (W, b) pairs, a dict, a namedtuple) must be recorded as one op and
differentiated by its own rule, whose gradient has the argument's structure;
never traced through its body, never a silent zero.
"""
import collections

import numpy
import pytest

import minpy as mp
from minpy.testing import check_grads
from _host import close, host  # noqa: F401

RNG = numpy.random.default_rng(1)


def rand(*shape):
    return mp.array(RNG.standard_normal(shape))


def mlp_reference(params, x):
    """The same network in plain minpy: differentiated by the tape."""
    h = x
    for group in params:
        for W, b in group:
            h = mp.tanh(mp.dot(h, W) + b)
    return mp.sum(h ** 2)


def make_mlp_op(calls):
    """The network as a custom op: a host NumPy forward and a hand-written backward."""
    @mp.customop
    def mlp(params, x):
        h = host(x)
        for group in params:
            for W, b in group:
                h = numpy.tanh(h @ host(W) + host(b))
        return float(numpy.sum(h ** 2))      # a Python float: must become an Array

    def mlp_grad(ans, params, x):
        calls.append("params")

        def vjp(g):
            hs = [x]
            for group in params:
                for W, b in group:
                    hs.append(mp.tanh(mp.dot(hs[-1], W) + b))
            d = 2 * hs[-1] * g
            grads = []
            k = len(hs) - 1
            for group in reversed(params):
                gg = []
                for W, b in reversed(group):
                    d = d * (1 - hs[k] ** 2)
                    gg.append((mp.dot(hs[k - 1].T, d), mp.sum(d, axis=0)))
                    d = mp.dot(d, W.T)
                    k -= 1
                grads.append(list(reversed(gg)))
            return tuple(reversed(grads))
        return vjp
    mlp.def_grad(mlp_grad, argnum=0)
    return mlp


def params_tree():
    return ([(rand(3, 4), rand(4)), (rand(4, 4), rand(4))], [(rand(4, 2), rand(2))])


def test_tuple_of_lists_of_pairs_uses_the_rule_and_matches_autodiff():
    calls = []
    op = make_mlp_op(calls)
    params, x = params_tree(), rand(5, 3)
    assert float(op(params, x)) == pytest.approx(float(mlp_reference(params, x)))
    g = mp.grad(op)(params, x)
    assert calls == ["params"]                # the custom rule ran (the body is NumPy)
    ref = mp.grad(mlp_reference)(params, x)
    assert isinstance(g, tuple) and isinstance(g[0], list) and isinstance(g[0][1], tuple)
    for gg, rg in zip(g, ref):
        for (gW, gb), (rW, rb) in zip(gg, rg):
            assert float(mp.sum(mp.abs(gW))) > 0          # not a silent zero
            close(gW, rW)
            close(gb, rb)


def test_nested_custom_op_against_finite_differences():
    op = make_mlp_op([])
    (p1, p2), (p3,) = params_tree()
    x = rand(5, 3)

    def flat(W1, b1, W2, b2, W3, b3):
        return op(([(W1, b1), (W2, b2)], [(W3, b3)]), x)
    args = (*p1, *p2, *p3)
    check_grads(flat, *args, order=2)        # the rule is written in minpy: grad of grad too


def test_dicts_namedtuples_keywords_and_none_gradients():
    Layer = collections.namedtuple("Layer", "W b")

    @mp.customop
    def affine(net, x, *, extra):
        out = mp.dot(x, net["layer"].W) + net["layer"].b + extra["shift"][0]
        return mp.sum(out ** 2) * net["scale"]

    def rule_net(ans, net, x, *, extra):
        def vjp(g):
            out = mp.dot(x, net["layer"].W) + net["layer"].b + extra["shift"][0]
            d = 2 * out * g * net["scale"]
            return {"layer": Layer(mp.dot(x.T, d), mp.sum(d, axis=0)),
                    "scale": mp.sum(out ** 2) * g}
        return vjp

    def rule_extra(ans, net, x, *, extra):
        def vjp(g):
            out = mp.dot(x, net["layer"].W) + net["layer"].b + extra["shift"][0]
            return {"shift": [mp.sum(2 * out * g * net["scale"], axis=0), None]}
        return vjp
    affine.def_grad(rule_net, argnum=0)
    affine.def_grad(rule_extra, argnum="extra")
    x = rand(4, 3)

    def f(W, b, s, shift):
        net = {"layer": Layer(W, b), "scale": s}
        return affine(net, x, extra={"shift": [shift, "unused"]})

    def ref(W, b, s, shift):
        return mp.sum((mp.dot(x, W) + b + shift) ** 2) * s
    args = (rand(3, 2), rand(2), 1.5, rand(2))
    for k in range(4):
        close(mp.grad(f, argnum=k)(*args), mp.grad(ref, argnum=k)(*args))
    check_grads(f, *args, order=2)
    # a None part of the gradient is a zero gradient
    g = mp.grad(lambda b: affine({"layer": Layer(args[0], b), "scale": 1.0}, x,
                                 extra={"shift": [mp.zeros(2), None]}))(args[1])
    assert g.shape == (2,)


def test_a_gradient_of_the_wrong_structure_or_no_rule_is_a_clear_error():
    @mp.customop
    def op(pairs):
        return mp.sum(pairs[0][0] * pairs[0][1])
    op.def_grad(lambda ans, pairs: lambda g: [g * pairs[0][1]])      # missing a level
    a, b = rand(3), rand(3)
    with pytest.raises(TypeError, match=r"customop.*op returned for argument 0\[0\]: expected "
                                        r"a sequence of 2"):
        mp.grad(lambda a: op([(a, b)]))(a)

    @mp.customop
    def op2(x, pairs):
        return mp.sum(x * pairs[0][0])
    op2.def_grad(lambda ans, x, pairs: lambda g: g * pairs[0][0], argnum=0)
    with pytest.raises(TypeError, match=r"has no gradient with respect to argument 1 \(define "
                                        r"one with .*def_grad\(maker, argnum=1\)\)"):
        mp.grad(lambda b: op2(a, [(b, 1.0)]))(b)
    close(mp.grad(lambda a: op2(a, [(b, 1.0)]))(a), b)       # argument 0 still fine

    @mp.customop
    def norule(pairs):
        return mp.sum(pairs[0][0])
    with pytest.raises(TypeError, match="has no gradient rule"):
        mp.grad(lambda a: norule([[a]]))(a)


def test_one_level_lists_keep_the_sequence_rule():
    @mp.customop
    def wsum(xs, ws):
        return sum(mp.sum(x * w) for x, w in zip(xs, ws))
    wsum.def_grad(lambda ans, xs, ws: lambda g: [g * w for w in ws], argnum=0)
    xs, ws = [rand(2), rand(3)], [rand(2), rand(3)]
    gs = mp.grad(lambda xs: wsum(xs, ws))(xs)
    close(gs[0], ws[0])
    close(gs[1], ws[1])
    check_grads(lambda a, b: wsum([a, b], ws), *xs, order=2)


def test_grad_of_grad_through_a_nested_custom_op():
    @mp.customop
    def cube_sum(tree):
        return mp.sum(tree["a"][0] ** 3)
    cube_sum.def_grad(lambda ans, tree: lambda g: {"a": [3 * g * tree["a"][0] ** 2]})
    x = rand(3)
    second = mp.grad(lambda x: mp.sum(mp.grad(lambda y: cube_sum({"a": [y]}))(x)))(x)
    close(second, 6 * host(x))


# ---------------------------------------------------------------- NumPy results
def test_forward_returning_numpy_values_is_accepted():
    @mp.customop
    def host_sin(x):
        return numpy.sin(host(x))             # an ndarray
    host_sin.def_grad(lambda ans, x: lambda g: g * mp.cos(x))

    @mp.customop
    def host_norm(x):
        return numpy.linalg.norm(host(x))     # a NumPy scalar
    host_norm.def_grad(lambda ans, x: lambda g: g * x / ans)

    @mp.customop
    def host_pair(x):
        return numpy.exp(host(x)), numpy.float64(2.0) * host(x)
    host_pair.def_grad(lambda ans, x: lambda g: g[0] * ans[0] + 2.0 * g[1])

    x = rand(2, 3)
    assert isinstance(host_sin(x), mp.Array) and isinstance(host_norm(x), mp.Array)
    assert all(isinstance(v, mp.Array) for v in host_pair(x))
    check_grads(host_sin, x, order=1)
    check_grads(host_norm, x, order=1)
    check_grads(lambda x: host_pair(x)[0] * host_pair(x)[1], x, order=1)
    close(mp.grad(lambda x: mp.sum(host_sin(x)))(x), numpy.cos(host(x)))


def test_minpy_compat_numpy_customop_with_nested_arguments():
    from minpy.compat import customop

    @customop("numpy")
    def dot_pairs(pairs):
        assert isinstance(pairs[0][0], numpy.ndarray)    # MinPy's host forward
        return sum(float(numpy.sum(a * b)) for a, b in pairs)

    def rule(ans, pairs):
        assert isinstance(pairs[0][0], numpy.ndarray)
        # (a tuple: minpy.compat's host-gradient conversion recurses into tuples only)
        return lambda g: tuple((g * b, g * a) for a, b in pairs)
    dot_pairs.def_grad(rule)
    a, b, c, d = rand(3), rand(3), rand(2), rand(2)
    ga, gd = mp.grad(lambda a, d: dot_pairs([(a, b), (c, d)]), argnum=(0, 1))(a, d)
    close(ga, b)
    close(gd, c)
    check_grads(lambda a, d: dot_pairs([(a, b), (c, d)]), a, d, order=1)


def test_nested_non_array_parameters_and_untraced_trees_take_the_plain_path():
    @mp.customop
    def padded_sum(x, pads, consts):
        return mp.sum(mp.pad(x, pads) * 2.0) + mp.sum(consts["c"][0])
    seen = []
    padded_sum.def_grad(lambda ans, x, pads, consts: (seen.append(type(pads)), lambda g: 2 * g
                                                       * mp.ones_like(x))[1])
    x = rand(2, 3)
    consts = {"c": [rand(2)]}
    g = mp.grad(lambda x: padded_sum(x, ((0, 0), (1, 1)), consts))(x)
    close(g, 2 * numpy.ones((2, 3)))
    assert seen == [tuple]
    check_grads(lambda x: padded_sum(x, ((1, 0), (0, 2)), consts), x, order=1)
