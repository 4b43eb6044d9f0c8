"""MinPy's module names (minpy.compat's modules, at MinPy's paths: minpy.core, minpy.context,
minpy.array ...), used as MinPy programs use them."""
import collections
import inspect
import io
import subprocess
import sys

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
import minpy.numpy as np
import minpy.numpy.random as random
from minpy import compat
from minpy.array import Array, Number, Value
from minpy.array_variants import ArrayType
from minpy.context import Context, cpu, gpu, current_context, set_context
from minpy.core import (grad, grad_and_loss, convert_args, return_numpy, minpy_to_numpy,
                        numpy_to_minpy, Function)
from minpy.dispatch.context import explicit_context
from minpy.primitive import customop
from minpy.testing import check_grads, arrays, shapes
from minpy.utils import gradient_checker
from minpy.utils.minprof import Profiler, minprof

from _standin import standin_gpu  # noqa: F401  (fixture)


# ---------------------------------------------------------------- minpy.core's autograd
class TwoLayer:
    """A MinPy-style model: the loss reads ``self.params``, not its arguments."""

    def __init__(self, rng):
        self.params = {"w1": np.array(rng.standard_normal((4, 5))),
                       "w2": np.array(rng.standard_normal((5, 3)))}

    def loss(self, x):
        h = np.tanh(np.dot(x, self.params["w1"]))
        return np.sum(np.dot(h, self.params["w2"]) ** 2)


def explicit_loss(w1, w2, x):
    return np.sum(np.dot(np.tanh(np.dot(x, w1)), w2) ** 2)


def test_params_traced_in_place_like_minpy_solver():
    rng = numpy.random.default_rng(0)
    model, x = TwoLayer(rng), np.array(rng.standard_normal((6, 4)))
    names = sorted(model.params)
    before = {k: model.params[k].asnumpy().copy() for k in names}

    def loss_func(*params):         # MinPy's Solver: ignores its arguments
        return model.loss(x)
    grads, loss = grad_and_loss(loss_func, range(len(names)))(*[model.params[k] for k in names])
    expected = minpy.grad(explicit_loss, argnum=(0, 1))(model.params["w1"], model.params["w2"], x)
    for g, e in zip(grads, expected):
        numpy.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-12)
    assert float(loss) == pytest.approx(float(explicit_loss(model.params["w1"],
                                                            model.params["w2"], x)))
    check_grads(explicit_loss, model.params["w1"], model.params["w2"], x, argnums=[0, 1])
    for k in names:                 # restored: untraced, same values
        assert model.params[k]._node is None
        numpy.testing.assert_array_equal(model.params[k].asnumpy(), before[k])
    assert loss._node is None


def test_strict_grad_does_not_see_global_reads():
    rng = numpy.random.default_rng(1)
    model, x = TwoLayer(rng), np.array(rng.standard_normal((6, 4)))
    g = minpy.grad(lambda w1: model.loss(x))(model.params["w1"])
    assert not numpy.any(g.asnumpy())          # autograd semantics: the argument is unused
    assert minpy.grad is not minpy.core.grad and minpy.core.grad is compat.grad
    with pytest.raises(TypeError, match="scalar"):
        minpy.grad(lambda v: v * 2)(np.ones(3))


@given(shape=shapes(min_dims=1, max_dims=3), dtype=st.sampled_from([numpy.float32,
                                                                     numpy.float64]),
       data=st.data())
def test_nonscalar_output_is_seeded_with_ones(shape, dtype, data):
    x = data.draw(arrays(dtype, shape))
    w = data.draw(arrays(dtype, shape))
    g, out = grad_and_loss(lambda a: np.tanh(a) * w)(x)
    expected = minpy.grad(lambda a: np.sum(np.tanh(a) * w))(x)
    numpy.testing.assert_allclose(g.asnumpy(), expected.asnumpy(), rtol=1e-6)
    assert g.dtype == dtype
    assert out.shape == shape and out._node is None       # the loss as returned, not summed
    numpy.testing.assert_allclose(out.asnumpy(), numpy.tanh(x.asnumpy()) * w.asnumpy(),
                                  rtol=1e-6)


def test_tuple_output_and_gradient_injection():
    inp = np.random.random((3, 2))
    g_inj = np.random.random((3, 2))
    numpy.testing.assert_array_equal(grad(lambda v: v)(inp).asnumpy(), numpy.ones((3, 2)))
    numpy.testing.assert_allclose(grad(lambda v: v * g_inj)(inp).asnumpy(), g_inj.asnumpy())
    g = grad(lambda v: (v * 2.0, np.sum(v ** 2)))(inp)
    numpy.testing.assert_allclose(g.asnumpy(), 2.0 + 2 * inp.asnumpy())


def test_argnum_forms_and_return_shapes():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])

    def f(a, b):
        return np.multiply(a, b)
    gx = grad(f)(x, y)
    numpy.testing.assert_array_equal(gx.asnumpy(), y.asnumpy())
    numpy.testing.assert_array_equal(grad(f, [1])(x, y).asnumpy(), x.asnumpy())  # unwrapped
    gx2, gy2 = grad(f, argnum=[0, 1])(x, y)
    numpy.testing.assert_array_equal(gy2.asnumpy(), x.asnumpy())
    gy3, gx3 = grad(f, range(1, -1, -1))(x, y)
    numpy.testing.assert_array_equal(gx3.asnumpy(), y.asnumpy())
    numpy.testing.assert_array_equal(grad(f, -1)(x, y).asnumpy(), x.asnumpy())
    for bad in ("0", 1.0, [], [0, "1"], True):
        with pytest.raises(TypeError, match="argnum"):
            grad(f, bad)
    with pytest.raises(IndexError, match="argnum 2 out of range"):
        grad(f, 2)(x, y)
    with pytest.raises(ValueError, match="same Array object"):
        grad(f, [0, 1])(x, x)


def test_numpy_and_scalar_arguments_like_minpy():
    xn = numpy.array([[1, 2], [3, 4], [5, 6]])
    assert numpy.all(grad(lambda v: np.sum(v, axis=0))(xn).asnumpy() == 1)
    assert grad(lambda v: 1)(0) == 0.0
    assert grad(lambda v: v ** 3)(2.0) == pytest.approx(12.0)
    g, loss = grad_and_loss(lambda v, c: v * c, 0)(3.0, 2.0)
    assert g == pytest.approx(2.0) and float(loss) == pytest.approx(6.0)


def test_nested_minpy_grad_is_second_derivative():
    x = np.array([0.5, -1.5, 2.0])
    g2 = grad(lambda v: grad(lambda u: u ** 3)(v))(x)
    numpy.testing.assert_allclose(g2.asnumpy(), 6 * x.asnumpy())
    assert x._node is None
    mixed = minpy.grad(lambda v: np.sum(grad(lambda u: np.sin(u))(v)))(x)
    numpy.testing.assert_allclose(mixed.asnumpy(), -numpy.sin(x.asnumpy()))


def test_nested_structures_and_restore_after_error():
    w = {"a": np.array([1.0, 2.0]), "b": [np.array([3.0])]}
    g = grad(lambda p: np.sum(p["a"] ** 2) + np.sum(p["b"][0]))(w)
    numpy.testing.assert_array_equal(g["a"].asnumpy(), [2.0, 4.0])
    numpy.testing.assert_array_equal(g["b"][0].asnumpy(), [1.0])

    def boom(v):
        raise KeyError("inside")
    with pytest.raises(KeyError):
        grad(boom)(w["a"])
    assert w["a"]._node is None


def test_write_inside_function_does_not_reach_argument():
    x = np.array([1.0, 2.0])

    def f(v):
        v[0] = 5.0
        return np.sum(v * v)
    g = grad(f)(x)
    numpy.testing.assert_array_equal(g.asnumpy(), [0.0, 4.0])
    numpy.testing.assert_array_equal(x.asnumpy(), [1.0, 2.0])
    assert x._node is None


def test_minpy_autograd_program_unchanged():
    """MinPy's tests/unittest/test_autograd.py: an RNN step, converters, ``range`` argnum."""
    @convert_args
    def step(x, prev_h, wx, wh, b):
        return np.tanh(x.dot(wx) + prev_h.dot(wh) + b)
    rng = numpy.random.default_rng(2)
    x, h, wx, wh, b = (rng.standard_normal(s) for s in [(4, 5), (4, 6), (5, 6), (6, 6), (6,)])
    dnext = rng.standard_normal((4, 6))
    loss = lambda x, h, wx, wh, b, d: step(x, h, wx, wh, b) * numpy_to_minpy(d)  # noqa: E731
    grads, out = return_numpy(grad_and_loss(loss, range(5)))(x, h, wx, wh, b, dnext)
    assert all(type(g) is numpy.ndarray for g in grads) and type(out) is numpy.ndarray
    nxt = numpy.tanh(h @ wh + x @ wx + b)
    dt = dnext * (1 - nxt ** 2)
    for got, want in zip(grads, [dt @ wx.T, dt @ wh.T, x.T @ dt, h.T @ dt, dt.sum(0)]):
        numpy.testing.assert_allclose(got, want, rtol=1e-10)


# ---------------------------------------------------------------- converters and types
def test_converters_keep_structure():
    P = collections.namedtuple("P", "w b")
    xn = numpy.arange(3.0)
    tree = {"a": xn, "b": [xn, (xn, 2.0)], "p": P(xn, None)}
    m = numpy_to_minpy(tree)
    assert type(m["a"]) is Array and type(m["b"][1][0]) is Array and m["b"][1][1] == 2.0
    assert type(m["p"]) is P and type(m["p"].w) is Array and m["p"].b is None
    back = minpy_to_numpy(m)
    assert type(back["b"]) is list and type(back["b"][1]) is tuple
    numpy.testing.assert_array_equal(back["p"].w, xn)
    assert type(numpy_to_minpy(xn)) is Array and type(minpy_to_numpy(m["a"])) is numpy.ndarray
    assert return_numpy(lambda: [np.ones(2)])()[0].tolist() == [1.0, 1.0]
    assert convert_args(lambda a, k=None: (type(a), type(k)))(xn, k=xn) == (Array, Array)


def test_minpy_array_module_is_also_the_array_function():
    assert type(minpy.array([1, 2])) is Array and minpy.array([1, 2]).tolist() == [1, 2]
    assert minpy.array([1, 2], dtype=numpy.float32).dtype == numpy.float32
    assert minpy.array.Array is Array and minpy.array.wrap is compat.wrap
    assert np.array is not minpy.array and type(np.array([1])) is Array
    assert minpy.array.__call__ is np.array is minpy.array.__wrapped__
    assert inspect.signature(minpy.array) == inspect.signature(np.array)


@pytest.mark.parametrize("program", [
    # the submodule first, then the function
    "import minpy.array\nfrom minpy.array import Array, Number\nimport minpy as np\n"
    "assert np.array([1, 2]).tolist() == [1, 2]\nassert minpy.array.Array is Array\n",
    # the function first, then the submodule, then the function again
    "import minpy as np\nassert np.array([1, 2]).sum() == 3\nf = np.array\n"
    "from minpy.array import Array\nimport minpy.array\nfrom minpy import array\n"
    "assert np.array is f is array and array([3]).tolist() == [3]\n"
    "assert isinstance(np.array([1]), minpy.array.Array)\n"
    "import minpy.numpy as mnp\nimport minpy.numpy.random as random\n"
    "assert mnp.array([1.0]).shape == (1,) and random.rand(2).shape == (2,)\n",
])
def test_minpy_array_import_orders(program):
    subprocess.run([sys.executable, "-c", program], check=True, timeout=120)


def test_number_and_value_types():
    assert isinstance(np.sum(np.ones(3)), Number) and isinstance(2.0, Number)
    assert isinstance(numpy.float32(1), Number) and isinstance(3, Number)
    assert not isinstance(True, Number) and not isinstance(np.ones(2), Number)
    assert not isinstance("1", Number)
    n = Number(3.0)
    assert type(n) is Array and n.ndim == 0 and float(n) == 3.0
    assert isinstance(np.ones(2), Value) and isinstance(n, Value) and not isinstance([1], Value)
    assert [t.name for t in ArrayType] == ["NUMPY", "MXNET"]
    assert issubclass(Function, minpy.symbol.Function) and Function is minpy.compat.Function


def test_minpy_function_takes_the_whole_param_dict():
    """MinPy's Function ignores keywords the symbol lacks; get_params gives MinPy's configs."""
    net = minpy.symbol.FullyConnected(minpy.symbol.Variable("X"), num_hidden=3, name="fc")
    f = Function(net, input_shapes={"X": (4, 5)}, name="fc")
    assert f.get_params() == {"fc_weight": {"shape": (3, 5)}, "fc_bias": {"shape": (3,)}}
    params = f.get_param_arrays(seed=0)
    x = np.ones((4, 5), dtype=numpy.float32)
    out = f(X=x, w_elsewhere=np.zeros(2), **params)
    expected = numpy.ones((4, 5)) @ numpy.asarray(params["fc_weight"]).T
    numpy.testing.assert_allclose(numpy.asarray(out), expected, rtol=1e-5)
    with pytest.raises(TypeError, match="unknown argument names"):
        minpy.symbol.function(net, {"X": (4, 5)})(X=x, w_elsewhere=1, **params)


# ---------------------------------------------------------------- customop
X = numpy.array([[0.25, 1.94, 2.34, 2.75, 1.67], [0.26, 1.61, 1.25, 2.92, 1.26],
                 [0.87, 1.45, 2.17, 0.50, 0.59], [0.66, 0.49, 1.54, 0.67, 2.24]])
LABEL = numpy.array([4, 0, 0, 1])
seen_types = []


@customop('numpy')
def softmax_loss(x, y):
    seen_types.append(type(x))
    y = y.astype(int)
    probs = numpy.exp(x - numpy.max(x, axis=1, keepdims=True))
    probs /= numpy.sum(probs, axis=1, keepdims=True)
    return -numpy.sum(numpy.log(probs[numpy.arange(x.shape[0]), y])) / x.shape[0]


def softmax_loss_grad(ans, x, label):
    def g_fn(g):
        seen_types.append(type(g))
        probs = numpy.exp(x - numpy.max(x, axis=1, keepdims=True))
        probs /= numpy.sum(probs, axis=1, keepdims=True)
        probs[numpy.arange(x.shape[0]), label.astype(int)] -= 1
        return g * probs / x.shape[0]
    return g_fn


softmax_loss.def_grad(softmax_loss_grad)


def test_customop_numpy_kind_sees_host_arrays():
    seen_types.clear()
    x, label = np.array(X), np.array(LABEL)
    p = numpy.exp(X - X.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    out = softmax_loss(x, label)
    assert type(out) is Array
    assert float(out) == pytest.approx(-numpy.log(p[numpy.arange(4), LABEL]).mean(), rel=1e-12)
    g = grad(softmax_loss)(x, label)
    assert type(g) is Array and set(seen_types) == {numpy.ndarray}
    check_grads(lambda v: softmax_loss(v, label), x, order=1)
    with pytest.raises(ValueError, match="'numpy' or 'mxnet'"):
        customop('cuda')


def test_customop_mxnet_kind_and_bare_form_see_minpy_arrays():
    kinds = []

    @customop('mxnet')
    def cube(v):
        kinds.append(type(v))
        return v ** 3
    cube.def_grad(lambda ans, v: lambda g: g * 3 * v ** 2)

    @customop
    def double(v):
        return v * 2
    double.def_grad(lambda ans, v: lambda g: g * 2)
    x = np.array([1.0, -2.0])
    check_grads(lambda v: cube(double(v)), x, order=1)
    assert set(kinds) == {Array}


# ---------------------------------------------------------------- contexts
@pytest.fixture
def fresh_context():
    set_context(None)
    yield
    set_context(None)


def test_set_context_is_per_thread_default(fresh_context):
    assert current_context() == cpu(0) and explicit_context() is None
    set_context(cpu(1))
    assert current_context() == Context("cpu", 1)
    set_context(cpu())          # replaces, does not stack
    set_context(cpu())
    assert current_context() == cpu(0)
    with cpu(2):
        assert current_context() == cpu(2)
        with pytest.raises(RuntimeError, match="inside a 'with cpu\\(2\\):' block"):
            set_context(cpu(0))
    assert current_context() == cpu(0)
    set_context(None)
    assert explicit_context() is None
    with pytest.raises(TypeError, match="expected a Context"):
        set_context("gpu")


def test_set_context_gpu_follows_with_gpu(fresh_context):
    if minpy.num_gpus():
        pytest.skip("a GPU is present: set_context(gpu(0)) succeeds")
    set_context(cpu(1))
    with pytest.raises(RuntimeError, match="gpu\\(0\\) requested but no GPU"):
        set_context(gpu(0))
    with pytest.raises(RuntimeError, match="gpu\\(0\\) requested but no GPU"):
        with gpu(0):
            pass
    assert current_context() == cpu(1)        # unchanged by the failed call


def test_set_context_gpu_places_new_arrays(standin_gpu, fresh_context):
    set_context(gpu(1))
    x = random.rand(3, 4) - 0.5
    assert x.context == gpu(1) and np.dot(x, x.T).context == gpu(1)


# ---------------------------------------------------------------- policies
@pytest.fixture
def restore_policy():
    prev = minpy.get_policy()
    yield
    minpy.set_policy(prev)


@pytest.mark.parametrize("name, canonical", [
    ("prefer_mxnet", "prefer_gpu"), ("only_numpy", "only_cpu"), ("only_mxnet", "only_gpu"),
    ("only_cpu", "only_cpu")])
def test_set_global_policy_names(restore_policy, name, canonical):
    minpy.set_global_policy(name)
    assert minpy.get_policy() == canonical == minpy.get_global_policy()


def test_policy_objects_and_errors(restore_policy):
    import minpy.dispatch.policy as ply            # MinPy's spelling: binds the policy class
    from minpy.dispatch.policy import OnlyMXNetPolicy
    np.set_policy(ply.OnlyNumPyPolicy())
    assert minpy.get_policy() == "only_cpu"
    minpy.set_global_policy(OnlyMXNetPolicy())
    assert minpy.get_policy() == "only_gpu"
    minpy.set_global_policy(ply.PreferMXNetPolicy())
    assert minpy.get_policy() == "prefer_gpu"
    with ply.OnlyNumPyPolicy():
        assert minpy.get_policy() == "only_cpu"
    with pytest.raises(ValueError, match="unknown policy 'numpy_only'.*'prefer_mxnet'"):
        minpy.set_global_policy("numpy_only")
    with pytest.raises(ValueError, match="unknown policy 3"):
        minpy.set_global_policy(3)
    assert minpy.get_policy() == "prefer_gpu"


def test_wrap_policy_scopes_a_function(restore_policy):
    @minpy.wrap_policy("only_numpy")
    def generate(n):
        assert minpy.get_policy() == "only_cpu"
        return np.random.normal(np.zeros(n), np.ones(n) * 0.1, (2, n))
    assert generate(3).shape == (2, 3)
    assert minpy.get_policy() == "prefer_gpu"


# ---------------------------------------------------------------- op statistics
def test_op_stat_without_gpu_says_why(capsys):
    if minpy.num_gpus():
        pytest.skip("a GPU is present")
    np.record_op_stat()
    np.tanh(np.ones(3)) * 2
    np.show_op_stat()
    assert "no calls counted (no GPU backend" in capsys.readouterr().out


def test_op_stat_counts_calls_per_backend(standin_gpu, capsys):
    with gpu(0):
        y = np.tanh(np.ones((4, 4)))             # before record_op_stat: not in the table
    np.record_op_stat()
    with gpu(0):
        y = np.tanh(np.ones((4, 4)))
    np.dot(y, y)
    with pytest.warns(RuntimeWarning, match="median is not available"):
        np.median(y)                             # missing on the stand-in: a CPU fallback
    np.show_op_stat()
    out = capsys.readouterr().out
    lines = {tuple(line.split()[:2]): line.split()[2] for line in out.splitlines()
             if len(line.split()) == 3 and line.split()[2].isdigit()}
    assert lines[("tanh", standin_gpu.name)] == "1" and lines[("dot", standin_gpu.name)] == "1"
    assert ("median", "numpy") in lines
    assert "total:" in out and "copies d2h:" in out


# ---------------------------------------------------------------- minprof
def test_minprof_functions_and_blocks():
    prof = Profiler()

    @prof
    def recur(i):
        return 0 if i == 0 else recur(i - 1)

    @prof
    def outer():
        return [inner() for _ in range(3)]

    @prof
    def inner():
        return np.sum(np.ones(4))
    recur(10)
    outer()
    with prof():
        with prof("labelled"):
            pass
    stats = prof.get_stats()
    by_name = {k.split(" ")[0]: v for k, v in stats.items()}
    assert by_name[recur.__qualname__][0] == 11 and by_name[inner.__qualname__][0] == 3
    assert by_name[outer.__qualname__][1] >= by_name[inner.__qualname__][1] >= 0
    assert stats["labelled"][0] == 1
    assert any(k.startswith(__file__ + ":") for k in stats)
    buf = io.StringIO()
    prof.print_stats(buf)
    assert "labelled" in buf.getvalue() and "ncalls" in buf.getvalue()
    with pytest.raises(TypeError, match="minprof"):
        prof(3)
    prof.reset()
    assert prof.get_stats() == {}
    assert isinstance(minprof, Profiler)


def test_minprof_counts_dispatch_calls(standin_gpu):
    prof = Profiler()
    x = np.ones(3)
    with gpu(0):
        with prof("on the device"):
            np.exp(np.asarray(x))
    calls, copied = prof.get_stats()["on the device"][2:]
    assert calls >= 1 and copied == x.nbytes


# ---------------------------------------------------------------- quick_grad_check
def test_quick_grad_check_like_minpy(capsys):
    rng = numpy.random.RandomState(42)
    inputs = rng.rand(8, 6) * 0.1
    targets = numpy.zeros((8, 3))
    targets[numpy.arange(8), rng.randint(0, 3, 8)] = 1

    def training_loss(weights):
        preds = 0.5 * (np.tanh(np.dot(inputs, weights) / 2) + 1)
        return -np.sum(np.log(preds * targets + (1 - preds) * (1 - targets)))
    assert gradient_checker.quick_grad_check(training_loss, rng.rand(6, 3) * 0.01, rs=rng)
    assert "Gradient projection OK" in capsys.readouterr().out
    assert gradient_checker.quick_grad_check(lambda w, a, k=1.0: np.tanh(w * a) * k,
                                             np.array([0.3, -0.2]), extra_args=(2.0,),
                                             kwargs={"k": 3.0}, verbose=False)


def test_quick_grad_check_reports_a_wrong_gradient(capsys):
    @customop('numpy')
    def square(v):
        return v * v
    square.def_grad(lambda ans, v: lambda g: g * v)     # wrong: should be 2 v g
    ok = gradient_checker.quick_grad_check(square, numpy.array([1.0, 2.0, 3.0]),
                                           rs=numpy.random.RandomState(0))
    assert ok is False
    assert "Check failed!" in capsys.readouterr().out
    assert not gradient_checker.quick_grad_check(square, numpy.array([1.0, 2.0]), verbose=False)
