"""The one-tape recording shortcuts (``record_np``, ``record_binary``,
``record_getitem``) against the general ``record`` path they stand in for.

Each function is differentiated twice: normally (a single tape on the host
takes the shortcuts) and with the shortcuts switched off inside the traced
call (``state.force_front_door(True)`` sends every call through the general path).
Both must record the same primitives and give the same gradient and value.
"""
import numpy
import pytest

import minpy as mp
from minpy.core import tape as tape_mod
from minpy.dispatch import state
from minpy.testing import check_grads

R = numpy.random.default_rng(7)
X = R.standard_normal((4, 3))
W = R.standard_normal((3, 5))
IDX = numpy.array([0, 2, 2, 3])

CASES = {
    "operators with scalars": lambda x: mp.sum(2.0 * x - 1 + x * x / 3.0 - (-x)),
    "reflected ops and pow": lambda x: mp.sum(1.0 / (2.0 + x * x) + 3 ** (0.1 * x)),
    "list operand": lambda x: mp.sum(x * [1.0, 2.0, 3.0] + [[0.5], [1], [2], [3]]),
    "broadcast row": lambda x: mp.sum((x + x[0]) * x[:, :1]),
    "keyword reductions": lambda x: mp.sum(mp.max(x, axis=1, keepdims=True) *
                                           mp.mean(x, axis=0)),
    "methods": lambda x: mp.sum(x.T @ x) + x.sum() * x.astype(numpy.float64).mean(),
    "unary chain": lambda x: mp.sum(mp.tanh(mp.exp(-x * x)) + mp.log1p(x * x)),
    "dot": lambda x: mp.sum(mp.dot(x, mp.array(W)) ** 2),
    "getitem int arrays": lambda x: mp.sum(x[mp.array(IDX), mp.array([0, 1, 2, 2])] ** 2),
    "getitem repeated rows": lambda x: mp.sum(x[IDX] * x[IDX]),
    "getitem mask and slices": lambda x: mp.sum(x[x > 0] ** 3) + mp.sum(x[1:, ::2]),
    "getitem traced-derived key": lambda x: mp.sum(x[mp.argmax(x, axis=0)] * x[0]),
    "comparison is constant": lambda x: mp.sum(x * (x > 0) + mp.floor(x)),
    "sequence argument": lambda x: mp.sum(mp.stack([x, x * 2]) ** 2) +
    mp.sum(mp.concatenate([x, x[:1]], axis=0)),
    "array keyword": lambda x: mp.sum(mp.clip(x, a_min=-0.5, a_max=mp.array(0.7))),
    "where": lambda x: mp.sum(mp.where(x > 0, x * x, -x)),
    "maximum with ties": lambda x: mp.sum(mp.maximum(x, 0.0) + mp.minimum(x, x)),
    "scalar results": lambda x: mp.sum(x) * mp.prod(x[0]) + mp.max(x),
}


def _general(f):
    def g(*args):
        prev = state.force_front_door(True)      # no shortcuts: the general path
        try:
            return f(*args)
        finally:
            state.force_front_door(prev)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_shortcuts_match_the_general_path(name):
    f = CASES[name]
    x = mp.array(X)
    g_fast, loss_fast = mp.grad_and_loss(f)(x)
    g_gen, loss_gen = mp.grad_and_loss(_general(f))(x)
    numpy.testing.assert_allclose(float(loss_fast), float(loss_gen), rtol=1e-12)
    numpy.testing.assert_allclose(g_fast.asnumpy(), g_gen.asnumpy(), rtol=1e-12, atol=1e-14)
    assert g_fast.dtype == g_gen.dtype and g_fast.shape == x.shape


@pytest.mark.parametrize("name", sorted(CASES))
def test_shortcut_gradients_are_right(name):
    check_grads(CASES[name], mp.array(X), order=1)


def test_shortcuts_record_one_node_per_call():
    x = mp.array(X)
    before = len(tape_mod.active_tapes())
    seen = []

    def f(x):
        y = mp.exp(x) * 2.0 + x[0]
        seen.append([n.prim.qualname for n in tape_mod.active_tapes()[-1].nodes])
        return mp.sum(y)
    mp.grad(f)(x)
    assert seen[0] == ["exp", "multiply", "ndarray.__getitem__", "add"]
    assert len(tape_mod.active_tapes()) == before


def test_untraced_operands_under_a_tape_stay_untraced():
    c = mp.array(W)
    out = {}

    def f(x):
        out["c"] = c * 2 + mp.exp(c)          # no traced input: nothing recorded
        out["cmp"] = x > 0                    # not differentiable: not recorded
        return mp.sum(x)
    mp.grad(f)(mp.array(X))
    assert out["c"]._node is None and out["cmp"]._node is None


def test_no_rule_is_refused_at_the_call_on_the_shortcut():
    from minpy.core.wrappers import make_function
    norule = make_function("test_tape_paths_norule", lambda x: x * 2)
    with pytest.raises(TypeError, match="test_tape_paths_norule has no gradient rule"):
        mp.grad(lambda x: mp.sum(norule(x)))(mp.array(X))
    with pytest.raises(TypeError, match="test_tape_paths_norule has no gradient rule"):
        mp.grad(lambda x: mp.sum(norule(x=x)))(mp.array(X))     # general path


@pytest.mark.parametrize("name", ["unary chain", "getitem repeated rows", "keyword reductions",
                                  "maximum with ties", "dot", "list operand"])
def test_grad_of_grad_through_the_same_functions(name):
    # two tapes: the outer one records what the inner one's shortcuts would take
    check_grads(CASES[name], mp.array(X), order=2)


# ---------------------------------------------------------------- broadcasting, any dtype
from hypothesis import given, strategies as st          # noqa: E402
from hypothesis.extra import numpy as hnp               # noqa: E402

BINARY = {"add": mp.add, "subtract": mp.subtract, "multiply": mp.multiply,
          "divide": mp.divide, "maximum": mp.maximum, "hypot": mp.hypot}


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       op=st.sampled_from(sorted(BINARY)),
       dtype=st.sampled_from([numpy.float32, numpy.float64]),
       operator_form=st.booleans(), seed=st.integers(0, 2**16))
def test_binary_shortcut_matches_general_path(shapes, op, dtype, operator_form, seed):
    rng = numpy.random.default_rng(seed)
    a = mp.array((rng.standard_normal(shapes.input_shapes[0]) + 3.0).astype(dtype))
    b = mp.array((rng.standard_normal(shapes.input_shapes[1]) + 3.0).astype(dtype))
    fn = BINARY[op]
    symbol = {"add": "__add__", "subtract": "__sub__", "multiply": "__mul__",
              "divide": "__truediv__"}.get(op)

    def f(x, y):
        z = getattr(x, symbol)(y) if operator_form and symbol else fn(x, y)
        return mp.sum(z * z)

    (ga, gb), loss = mp.grad_and_loss(f, argnum=(0, 1))(a, b)
    (ha, hb), loss2 = mp.grad_and_loss(_general(f), argnum=(0, 1))(a, b)
    for g, h, x in ((ga, ha, a), (gb, hb, b)):
        assert g.shape == x.shape and g.dtype == x.dtype == h.dtype
        numpy.testing.assert_array_equal(g.asnumpy(), h.asnumpy())
    assert float(loss) == float(loss2)


@pytest.mark.cpu_only            # the NumPy shortcuts exist without a GPU only
def test_new_tape_sets_the_flags_refresh_would():
    seen = []

    def flags():
        return (state.process.fast, state.thread_flags().one_tape is not None)

    def check():
        before = flags()
        state.recompute()
        seen.append((before, before == flags()))

    def f(x):
        check()
        return mp.sum(mp.grad(lambda y: (check(), mp.sum(y * x))[1])(x))   # nested tape
    mp.grad(f)(mp.array(X))
    with mp.async_mode():                                     # the engine bridge on too
        mp.grad(f)(mp.array(X) + mp.ones((4, 3)))
    assert [ok for _, ok in seen] == [True] * 4
    assert [flags for flags, _ in seen[:2]] == [(False, True), (False, False)]
