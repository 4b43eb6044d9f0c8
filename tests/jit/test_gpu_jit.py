"""``minpy.jit`` with a GPU present (the stand-in): a jitted training step whose
data live on a GPU replays the CPU's values (the maximum/minimum gradient step and
the index checks of softmax_loss/embedding on device buffers, without implicit
host conversions), and calls that ran on the host keep NumPy's planned, fused
replay while a GPU backend is installed (``Program.step_kinds``)."""
import numpy
import pytest

import minpy
import minpy as np
from minpy.nn import layers
from minpy.jit import fuse as jit_fuse

from _standin import installed


@pytest.fixture
def gpu():
    with installed() as backend:
        yield backend


def params(seed=0, d=20, h=16, c=5):
    r = numpy.random.default_rng(seed)
    return {"w1": (r.standard_normal((d, h)) * 0.1).astype("f4"), "b1": numpy.zeros(h, "f4"),
            "w2": (r.standard_normal((h, c)) * 0.1).astype("f4"), "b2": numpy.zeros(c, "f4")}


def data(n=8, d=20, c=5, seed=1):
    r = numpy.random.default_rng(seed)
    return r.standard_normal((n, d)).astype("f4"), r.integers(0, c, n)


def loss(p, x, y):
    h = np.maximum(x @ p["w1"] + p["b1"], 0)         # its gradient: the picked step
    s = h @ p["w2"] + p["b2"]
    return layers.softmax_loss(s, y) + 0.1 * np.sum(layers.embedding(y, p["w2"]))


def step(p, x, y):
    g, value = np.grad_and_loss(loss)(p, x, y)
    for k in p:
        p[k] -= 0.1 * g[k]
    return value


@minpy.policy("only_cpu")
def eager_run(n=3):
    """Losses of ``n`` eager steps on the CPU, and the parameters after them."""
    x, y = data()
    p = {k: np.array(v) for k, v in params().items()}
    return [step(p, np.array(x), np.array(y)).asnumpy() for _ in range(n)], p


@pytest.mark.parametrize("dev", [0, 1])
def test_jitted_training_step_on_a_gpu_equals_the_cpu(gpu, dev):
    want, pe = eager_run()
    ctx = minpy.gpu(dev)
    x, y = data()
    p = {k: np.array(v).copyto(ctx) for k, v in params().items()}
    jitted = minpy.jit(step)
    got = [jitted(p, np.array(x).copyto(ctx), np.array(y).copyto(ctx)) for _ in range(3)]
    for g, w in zip(got, want):
        assert g.context == ctx
        numpy.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5, atol=1e-6)
    for k in p:
        assert p[k].context == ctx
        numpy.testing.assert_allclose(p[k].asnumpy(), pe[k].asnumpy(), rtol=1e-5, atol=1e-6)
    assert jitted.cache_info()["traces"] == 1
    assert "raw" not in jitted.programs()[0].step_kinds        # device calls: not NumPy's


def test_maximum_gradient_with_a_host_operand_under_jit_on_a_gpu(gpu):
    c = numpy.array([0.5, -1.0, 2.0, 0.0])

    def f(x):
        return minpy.grad(lambda x: np.sum(np.maximum(x, c) * x))(x)
    xh = numpy.array([1.0, -1.0, 0.0, 0.0])
    want = minpy.grad(lambda x: np.sum(np.maximum(x, c) * x))(np.array(xh)).asnumpy()
    jitted = minpy.jit(f)
    for _ in range(2):
        got = jitted(np.array(xh).copyto(minpy.gpu(1)))
        assert got.context == minpy.gpu(1)
        numpy.testing.assert_allclose(got.asnumpy(), want)


def test_index_checks_under_jit_on_a_gpu_still_refuse_bad_labels(gpu):
    x = np.zeros((2, 3)).copyto(minpy.gpu(0))
    bad = np.array([0, 3]).copyto(minpy.gpu(0))
    with pytest.raises(ValueError, match=r"softmax_loss: label has values in \[0, 3\]"):
        minpy.jit(layers.softmax_loss)(x, bad)


def test_a_jitted_host_function_still_fuses_and_plans_with_a_gpu_installed(gpu, monkeypatch):
    monkeypatch.setattr(jit_fuse, "ALWAYS", True)
    monkeypatch.setattr(jit_fuse, "FUSE_MIN", 0)
    r = numpy.random.default_rng(0)
    a, b, c = (r.standard_normal((30, 40)).astype("f4") for _ in range(3))
    want = numpy.tanh(a * b + c) * 0.5 + a
    with minpy.policy("only_cpu"):
        f = minpy.jit(lambda a, b, c: np.tanh(a * b + c) * 0.5 + a)
        for _ in range(2):
            out = f(np.array(a), np.array(b), np.array(c))
            assert out.context == minpy.cpu()
            # the fused tanh (minpy.fusion.vmath, <= 0.51 ulp) and NumPy's (1.4 ulp) may
            # differ by an ulp of tanh's value: absolute 6e-8 here, around results near 0
            numpy.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6, atol=1e-7)
    prog = f.programs()[0]
    assert prog.fused == 1 and prog.step_kinds == ["fused"]


def test_a_jitted_host_mlp_step_replays_numpy_calls_with_a_gpu_installed(gpu):
    x, y = data()
    want, _ = eager_run(2)
    with minpy.policy("only_cpu"):
        p = {k: np.array(v) for k, v in params().items()}
        jitted = minpy.jit(step)
        got = [jitted(p, np.array(x), np.array(y)).asnumpy() for _ in range(2)]
    numpy.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    prog = jitted.programs()[0]
    assert "generic" not in prog.step_kinds and prog.planned_bytes > 0


def test_a_policy_or_device_change_traces_again_with_a_gpu_installed(gpu):
    f = minpy.jit(lambda a: np.tanh(a) + np.zeros(3))
    a = np.array([0.0, 1.0, 2.0])
    with minpy.policy("only_cpu"):
        assert f(a).context == minpy.cpu()
    eager = np.tanh(a) + np.zeros(3)                  # prefer_gpu: computed on gpu(0)
    assert f(a).context == eager.context == minpy.gpu(0)
    with minpy.gpu(1):
        eager = np.tanh(a) + np.zeros(3)
        assert f(a).context == eager.context == minpy.gpu(1)
    assert f.cache_info()["traces"] == 3
    numpy.testing.assert_allclose(f(a).asnumpy(), numpy.tanh([0.0, 1.0, 2.0]))
