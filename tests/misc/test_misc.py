"""minpy.misc: flatten (nested parameters <-> one vector) and the optimizers sgd,
rmsprop and adam, used the way autograd programs use autograd.misc."""
import collections

import numpy
import pytest

import minpy as mp
from minpy.misc import flatten
from minpy.misc.flatten import Flattener
from minpy.misc.optimizers import adam, rmsprop, sgd
from minpy.testing import check_grads
from _host import close, host  # noqa: F401
from _standin import standin_gpu  # noqa: F401  (fixture)

RNG = numpy.random.default_rng(2)


def rand(*shape):
    return mp.array(RNG.standard_normal(shape))


# ---------------------------------------------------------------- flatten
def test_flatten_order_round_trip_and_dtypes():
    Pair = collections.namedtuple("Pair", "W b")
    value = {"z": [rand(2, 2), 3.0], "a": (Pair(rand(3), rand(1, 2)), None),
             "m": numpy.arange(3, dtype=numpy.float32), "k": 7}
    vec, unflatten = flatten(value)
    # dict values in sorted-key order (a, k, m, z), leaves raveled in order
    expected = numpy.concatenate([host(value["a"][0].W), host(value["a"][0].b).ravel(), [7.0],
                                  value["m"], host(value["z"][0]).ravel(), [3.0]])
    assert vec.ndim == 1 and vec.dtype == numpy.float64
    close(vec, expected)
    back = unflatten(vec)
    assert list(back) == list(value)                   # the caller's key order
    assert type(back["a"][0]) is Pair and back["a"][1] is None
    close(back["a"][0].b, value["a"][0].b)
    assert back["a"][0].b.shape == (1, 2)
    assert back["m"].dtype == numpy.float32 and isinstance(back["m"], mp.Array)
    assert back["k"] == 7 and type(back["k"]) is int
    assert back["z"][1] == 3.0 and type(back["z"][1]) is float
    twice = unflatten(vec * 2)
    close(twice["z"][0], 2 * host(value["z"][0]))
    assert unflatten(host(vec))["z"][1] == 3.0          # a NumPy vector is fine too
    # one array: ravel; empty structures: an empty vector
    v1, un1 = flatten(rand(2, 3))
    assert v1.shape == (6,) and un1(v1).shape == (2, 3)
    v0, un0 = flatten({"a": [], "b": ()})
    assert v0.shape == (0,) and un0(v0) == {"a": [], "b": ()}


def test_flatten_and_unflatten_are_differentiable():
    params = {"W": rand(3, 2), "b": rand(2), "scale": 0.7}
    x = rand(4, 3)

    def loss(p):
        return mp.sum(mp.tanh(mp.dot(x, p["W"]) + p["b"]) ** 2) * p["scale"]
    vec, unflatten = flatten(params)
    # the gradient w.r.t. the vector is the flattened gradient w.r.t. the structure
    gv = mp.grad(lambda v: loss(unflatten(v)))(vec)
    close(gv, flatten(mp.grad(loss)(params))[0])
    check_grads(lambda v: loss(unflatten(v)), vec, order=2)
    # and through flatten itself
    g = mp.grad(lambda p: mp.sum(flatten(p)[0] ** 3))(params)
    close(g["W"], 3 * host(params["W"]) ** 2)
    assert g["scale"] == pytest.approx(3 * 0.7 ** 2)
    check_grads(lambda W, b: flatten({"W": W, "b": [b, b * 2]})[0] ** 2, params["W"],
                params["b"], order=2)


def test_flatten_errors_are_clear():
    _, unflatten = flatten({"a": mp.ones(3), "b": 1.0})
    with pytest.raises(ValueError, match=r"unflatten expects a vector of 4 elements \(the "
                                         r"flattened structure\), got shape \(5,\)"):
        unflatten(mp.ones(5))
    with pytest.raises(ValueError, match=r"got shape \(2, 2\)"):
        unflatten(mp.ones((2, 2)))
    with pytest.raises(TypeError, match=r"cannot flatten a str at \['b'\]\[1\]"):
        flatten({"b": [1.0, "x"]})
    with pytest.raises(TypeError, match="keys that cannot be sorted"):
        flatten({1: mp.ones(2), "a": mp.ones(2)})
    layout = Flattener({"a": mp.ones(3)})
    with pytest.raises(ValueError, match=r"expected a dict with keys \['a'\] at the value"):
        layout.flat({"b": mp.ones(3)})
    with pytest.raises(ValueError, match=r"a leaf has shape \(2,\) where the layout has \(3,\)"):
        layout.flat({"a": mp.ones(2)})


# ---------------------------------------------------------------- optimizers
def _data(n=200, d=3, seed=0):
    rng = numpy.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    true_w = numpy.array([2.0, -3.0, 1.0])[:d]
    y = (X @ true_w + 0.5 > 0).astype(numpy.float64)
    return mp.array(X), mp.array(y)


def sigmoid(z):
    return 0.5 * (mp.tanh(z / 2.0) + 1.0)


def test_logistic_regression_with_adam_on_a_flat_vector():
    X, y = _data()
    init = {"w": mp.zeros(3), "b": 0.0}
    flat_params, unflatten = flatten(init)
    batch = 50

    def objective(flat, i):
        p = unflatten(flat)
        k = (i % 4) * batch
        xb, yb = X[k:k + batch], y[k:k + batch]
        prob = sigmoid(mp.dot(xb, p["w"]) + p["b"])
        return -mp.sum(mp.log(prob * yb + (1 - prob) * (1 - yb) + 1e-12)) / batch

    seen = []

    def callback(x, i, g):
        assert x.shape == (4,) and g.shape == (4,)
        seen.append((i, float(objective(x, i))))
    out = adam(mp.grad(objective), flat_params, callback=callback, num_iters=300,
               step_size=0.1)
    assert [i for i, _ in seen] == list(range(300))
    assert seen[-1][1] < 0.5 * seen[0][1]
    p = unflatten(out)
    pred = host(sigmoid(mp.dot(X, p["w"]) + p["b"])) > 0.5
    assert (pred == host(y).astype(bool)).mean() > 0.95
    assert isinstance(p["b"], float)


def test_optimizers_take_and_return_nested_parameters():
    X, y = _data(n=120)

    def objective(params, i):
        prob = sigmoid(mp.dot(X, params["w"]) + params["bias"][0])
        return -mp.mean(mp.log(prob * y + (1 - prob) * (1 - y)))
    init = {"w": mp.zeros(3), "bias": [mp.zeros(())]}
    for opt, kw in ((adam, dict(step_size=0.1)), (sgd, dict(step_size=0.5)),
                    (rmsprop, dict(step_size=0.05))):
        calls = []
        out = opt(mp.grad(objective), init, num_iters=150,
                  callback=lambda x, i, g: calls.append((type(x), type(g), i)), **kw)
        assert set(out) == {"w", "bias"} and out["w"].shape == (3,)
        assert out["bias"][0].shape == ()
        assert calls[0] == (dict, dict, 0) and len(calls) == 150
        assert float(objective(out, 0)) < 0.5 * float(objective(init, 0)), opt.__name__
    assert float(init["w"][0]) == 0.0                    # x0 is not written


def _reference(name, g_fn, x, n, **kw):
    """The update rules written out in NumPy (autograd's definitions)."""
    x = numpy.array(x, dtype=float)
    a = numpy.zeros_like(x)
    b = numpy.ones_like(x) if name == "rmsprop" else numpy.zeros_like(x)
    for i in range(n):
        g = g_fn(x)
        if name == "sgd":
            a = kw["mass"] * a - (1 - kw["mass"]) * g
            x = x + kw["step_size"] * a
        elif name == "rmsprop":
            b = kw["gamma"] * b + (1 - kw["gamma"]) * g ** 2
            x = x - kw["step_size"] * g / (numpy.sqrt(b) + 1e-8)
        else:
            a = kw["b1"] * a + (1 - kw["b1"]) * g
            b = kw["b2"] * b + (1 - kw["b2"]) * g ** 2
            x = x - kw["step_size"] * (a / (1 - kw["b1"] ** (i + 1))) / (
                numpy.sqrt(b / (1 - kw["b2"] ** (i + 1))) + 1e-8)
    return x


@pytest.mark.parametrize("opt,kw", [
    (sgd, dict(step_size=0.05, mass=0.8)),
    (rmsprop, dict(step_size=0.02, gamma=0.7)),
    (adam, dict(step_size=0.03, b1=0.8, b2=0.99)),
])
def test_update_rules_match_their_definitions(opt, kw):
    A = numpy.array([[3.0, 0.5], [0.5, 1.0]])
    c = numpy.array([1.0, -2.0])
    g_host = lambda x: A @ x - c + numpy.sin(x)
    out = opt(lambda x, i: mp.dot(mp.array(A), x) - mp.array(c) + mp.sin(x), mp.zeros(2),
              num_iters=25, **kw)
    close(out, _reference(opt.__name__, g_host, [0.0, 0.0], 25, **kw), rtol=1e-10)


def test_optimizer_errors_are_clear():
    with pytest.raises(ValueError, match=r"adam: grad returned a value that is not shaped like "
                                         r"x0"):
        adam(lambda x, i: mp.ones(3), mp.zeros(2), num_iters=1)
    with pytest.raises(ValueError, match=r"sgd: grad returned a value that is not shaped like x0"):
        sgd(lambda x, i: {"b": x["a"]}, {"a": mp.zeros(2)}, num_iters=1)
    with pytest.raises(TypeError, match="rmsprop: grad must be a function"):
        rmsprop(mp.zeros(2), mp.zeros(2))
    with pytest.raises(TypeError, match="must be floating point"):
        adam(lambda x, i: x, numpy.arange(3), num_iters=1)


def test_flatten_and_adam_on_the_gpu_backend(standin_gpu):
    with mp.gpu(0):
        X, y = _data(n=80)
        init = {"w": mp.zeros(3), "b": [mp.zeros(()), 0.5]}
        vec, unflatten = flatten(init)
        assert vec.context == mp.gpu(0)

        def objective(p, i):
            prob = sigmoid(mp.dot(X, p["w"]) + p["b"][0] * p["b"][1])
            return -mp.mean(mp.log(prob * y + (1 - prob) * (1 - y)))
        out = adam(mp.grad(objective), init, num_iters=50, step_size=0.1)
        assert out["w"].context == mp.gpu(0)
        assert float(objective(out, 0)) < float(objective(init, 0))
        check_grads(lambda v: objective(unflatten(v), 0), vec, order=1)
    assert not mp.dispatch.stats()["fallbacks"]
