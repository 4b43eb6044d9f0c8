"""minpy.scipy.signal: convolve / correlate against scipy.signal, their gradients
(to second order) and HIPS autograd's extended ``axes``/``dot_axes`` form."""
import types
import warnings

import numpy
import pytest
import scipy.signal
from hypothesis import given, strategies as st

import minpy
import minpy.scipy.signal as msig
from minpy.scipy import _util
from minpy.testing import check_grads

from _standin import _Fn, installed  # noqa: F401
from _host import host as _host

MODES = ("full", "valid", "same")


def _valid_ok(s1, s2):
    return all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))


def _rand(rng, shape, dtype=numpy.float64):
    dtype = numpy.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


# ---------------------------------------------------------------- SciPy's form: values
@given(data=st.data(), ndim=st.integers(1, 3),
       dtype=st.sampled_from([numpy.float32, numpy.float64, numpy.complex128, numpy.int64]),
       mode=st.sampled_from(MODES), method=st.sampled_from(["auto", "direct", "fft"]))
def test_values_match_scipy(data, ndim, dtype, mode, method):
    s1 = data.draw(st.tuples(*[st.integers(1, 5)] * ndim), label="s1")
    s2 = data.draw(st.tuples(*[st.integers(1, 5)] * ndim), label="s2")
    rng = numpy.random.default_rng(abs(hash((s1, s2))) % 2**32)
    a, b = _rand(rng, s1, dtype), _rand(rng, s2, dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == numpy.float32 else dict(rtol=1e-9, atol=1e-9)
    for ours, ref in ((msig.convolve, scipy.signal.convolve),
                      (msig.correlate, scipy.signal.correlate)):
        if mode == "valid" and not _valid_ok(s1, s2):
            with pytest.raises(ValueError, match=ours.__name__):
                ours(minpy.array(a), minpy.array(b), mode, method)
            continue
        want = ref(a, b, mode, method)
        got = ours(minpy.array(a), minpy.array(b), mode, method)
        assert isinstance(got, minpy.Array)
        assert got.shape == want.shape and got.dtype == want.dtype
        numpy.testing.assert_allclose(_host(got), want, **tol)


def test_accepts_lists_numpy_and_zero_d():
    assert msig.convolve([1.0, 2.0], [0.5, 1.0, 2.0]).tolist() == \
        scipy.signal.convolve([1.0, 2.0], [0.5, 1.0, 2.0]).tolist()
    # (the result is a minpy Array, on the GPU under a GPU policy: copied back explicitly)
    numpy.testing.assert_allclose(_host(msig.correlate(numpy.arange(4.0), numpy.ones(2), "same")),
                                  scipy.signal.correlate(numpy.arange(4.0), numpy.ones(2), "same"))
    assert float(msig.convolve(minpy.array(2.0), minpy.array(3.0))) == 6.0
    assert minpy.grad(lambda x: msig.convolve(x, minpy.array(3.0)))(2.0) == 3.0


# ---------------------------------------------------------------- SciPy's form: gradients
GRAD_SHAPES = [((5,), (3,)), ((3,), (5,)), ((4, 3), (2, 2)), ((2, 3), (3, 2)),
               ((3, 2, 3), (2, 2, 1)), ((1,), (1,))]


@pytest.mark.parametrize("s1,s2,mode", [(s1, s2, m) for s1, s2 in GRAD_SHAPES for m in MODES
                                         if m != "valid" or _valid_ok(s1, s2)])
def test_gradients_second_order(s1, s2, mode):
    rng = numpy.random.default_rng(len(s1) * 10 + s1[0])
    a, b = minpy.array(_rand(rng, s1)), minpy.array(_rand(rng, s2))
    check_grads(lambda x, y: msig.convolve(x, y, mode), a, b, order=2)
    check_grads(lambda x, y: msig.correlate(x, y, mode), a, b, order=2)


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_gradients_complex_and_methods(method):
    rng = numpy.random.default_rng(3)
    a, b = minpy.array(_rand(rng, (4, 3), complex)), minpy.array(_rand(rng, (2, 3), complex))
    for mode in MODES:
        check_grads(lambda x, y: msig.convolve(x, y, mode, method), a, b, order=2)
        check_grads(lambda x, y: msig.correlate(x, y, mode, method), a, b, order=2)
    # a real operand with a complex one: the real one's gradient is real
    r = minpy.array(_rand(rng, (2, 3)))
    check_grads(lambda x, y: msig.correlate(x, y, "same", method), a, r, order=2)
    g = minpy.grad(lambda y: minpy.sum(minpy.abs(msig.convolve(a, y, "full", method))))(r)
    assert g.dtype == numpy.float64


def test_gradient_dtypes_and_integer_operands():
    rng = numpy.random.default_rng(4)
    a32 = minpy.array(_rand(rng, (5,), numpy.float32))
    b64 = minpy.array(_rand(rng, (3,)))
    ga, gb = minpy.grad(lambda x, y: minpy.sum(msig.convolve(x, y) ** 2), argnum=(0, 1))(a32, b64)
    assert ga.dtype == numpy.float32 and gb.dtype == numpy.float64
    ints = minpy.array(numpy.array([1, 2, 3]))
    g = minpy.grad(lambda y: minpy.sum(msig.convolve(ints, y, "full")))(b64)
    numpy.testing.assert_allclose(_host(g), numpy.full(3, 6.0))     # every tap sees 1+2+3


def test_gradient_matches_explicit_sum():
    """d/dy sum(u * convolve(x, y, 'valid')) written out by hand."""
    x, y = numpy.arange(6.0), numpy.array([1.0, -2.0, 0.5])
    u = numpy.array([1.0, 2.0, -1.0, 0.5])
    g = minpy.grad(lambda y: minpy.sum(msig.convolve(minpy.array(x), y, "valid") * u))(
        minpy.array(y))
    want = [sum(u[k] * x[k + 2 - j] for k in range(4)) for j in range(3)]
    numpy.testing.assert_allclose(_host(g), want)


# ---------------------------------------------------------------- the extended form
def _extended_reference(a, b, axes, dot_axes, mode):
    """HIPS autograd's extended convolution, with scipy.signal.convolve as the oracle."""
    (ca, cb), (da, db) = axes, dot_axes
    ia = [k for k in range(a.ndim) if k not in ca and k not in da]
    ib = [k for k in range(b.ndim) if k not in cb and k not in db]
    at = a.transpose(ia + list(da) + list(ca))
    bt = b.transpose(ib + list(db) + list(cb))
    sia, sib = at.shape[:len(ia)], bt.shape[:len(ib)]
    sd = at.shape[len(ia):len(ia) + len(da)]
    out = None
    for i in numpy.ndindex(*sia):
        for j in numpy.ndindex(*sib):
            acc = sum(scipy.signal.convolve(at[i + d], bt[j + d], mode, method="direct")
                      for d in numpy.ndindex(*sd))
            acc = numpy.asarray(acc)
            if out is None:
                out = numpy.zeros(sia + sib + acc.shape, dtype=acc.dtype)
            out[i + j] = acc
    return out


@st.composite
def extended_cases(draw):
    nc, nd = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nia, nib = draw(st.integers(0, 4 - nc - nd)), draw(st.integers(0, 4 - nc - nd))
    mode = draw(st.sampled_from(MODES))
    side = st.integers(1, 4)
    conv_a = [draw(side) for _ in range(nc)]
    if mode == "valid":
        conv_b = [draw(st.integers(1, n)) for n in conv_a]
        if draw(st.booleans()):
            conv_a, conv_b = conv_b, conv_a
    else:
        conv_b = [draw(side) for _ in range(nc)]
    dots = [draw(st.integers(1, 3)) for _ in range(nd)]
    perm_a = draw(st.permutations(range(nia + nd + nc)))
    perm_b = draw(st.permutations(range(nib + nd + nc)))
    # axis role r of the canonical layout (others, dot, conv) sits at position perm[r]
    sa, sb = [0] * len(perm_a), [0] * len(perm_b)
    for r, n in enumerate([draw(st.integers(1, 3)) for _ in range(nia)] + dots + conv_a):
        sa[perm_a[r]] = n
    for r, n in enumerate([draw(st.integers(1, 3)) for _ in range(nib)] + dots + conv_b):
        sb[perm_b[r]] = n
    axes = ([perm_a[nia + nd + k] for k in range(nc)], [perm_b[nib + nd + k] for k in range(nc)])
    dot_axes = ([perm_a[nia + k] for k in range(nd)], [perm_b[nib + k] for k in range(nd)])
    return tuple(sa), tuple(sb), axes, dot_axes, mode


@given(case=extended_cases(), dtype=st.sampled_from([numpy.float64, numpy.complex128]))
def test_extended_form_values(case, dtype):
    sa, sb, axes, dot_axes, mode = case
    rng = numpy.random.default_rng(abs(hash(repr(case))) % 2**32)
    a, b = _rand(rng, sa, dtype), _rand(rng, sb, dtype)
    want = _extended_reference(a, b, axes, dot_axes, mode)
    got = msig.convolve(minpy.array(a), minpy.array(b), axes=axes, dot_axes=dot_axes, mode=mode)
    assert got.shape == want.shape
    numpy.testing.assert_allclose(_host(got), want, rtol=1e-10, atol=1e-10)
    # correlate: convolve with the second operand reversed along its convolved axes
    flipped = numpy.conj(numpy.flip(b, axis=tuple(axes[1]))) if axes[1] else numpy.conj(b)
    got = msig.correlate(minpy.array(a), minpy.array(b), axes=axes, dot_axes=dot_axes,
                         mode=mode)
    numpy.testing.assert_allclose(_host(got),
                                  _extended_reference(a, flipped, axes, dot_axes, mode),
                                  rtol=1e-10, atol=1e-10)


EXTENDED_GRAD_CASES = [
    # the convnet example's layer: (data, color_in, y, x) * (color_in, color_out, y, x)
    ((2, 3, 5, 4), (3, 2, 2, 3), ([2, 3], [2, 3]), ([1], [0]), "valid"),
    ((2, 3, 5, 4), (3, 2, 2, 3), ([2, 3], [2, 3]), ([1], [0]), "full"),
    ((2, 3, 5, 4), (3, 2, 2, 3), ([2, 3], [2, 3]), ([1], [0]), "same"),
    # the kernel larger than the image ('valid' swaps), conv pairs in reverse order
    ((3, 2), (4, 2, 5), ([0], [2]), ([1], [1]), "valid"),
    ((4, 3, 2), (2, 2, 3), ([2, 0], [0, 1]), ([1], [2]), "full"),
    # two dot axes paired out of order, outer products only, a pure tensordot
    ((2, 3, 4), (4, 3, 2), ([0], [2]), ([1, 2], [1, 0]), "same"),
    ((2, 3), (4,), ([], []), ([], []), "full"),
    ((2, 3), (3, 2), ([], []), ([1], [0]), "valid"),
]


@pytest.mark.parametrize("sa,sb,axes,dot_axes,mode", EXTENDED_GRAD_CASES)
def test_extended_form_gradients_second_order(sa, sb, axes, dot_axes, mode):
    rng = numpy.random.default_rng(len(sa) + 7 * len(sb))
    a, b = minpy.array(_rand(rng, sa)), minpy.array(_rand(rng, sb))
    numpy.testing.assert_allclose(
        _host(msig.convolve(a, b, axes=axes, dot_axes=dot_axes, mode=mode)),
        _extended_reference(_host(a), _host(b), axes, dot_axes, mode), rtol=1e-10)
    check_grads(lambda x, y: msig.convolve(x, y, axes=axes, dot_axes=dot_axes, mode=mode),
                a, b, order=2)


def test_extended_form_complex_gradients():
    rng = numpy.random.default_rng(9)
    a = minpy.array(_rand(rng, (2, 4, 3), complex))
    b = minpy.array(_rand(rng, (3, 2, 2), complex))
    for mode in MODES:
        check_grads(lambda x, y: msig.convolve(x, y, axes=([1], [2]), dot_axes=([2], [0]),
                                               mode=mode), a, b, order=2)
        check_grads(lambda x, y: msig.correlate(x, y, axes=([1], [2]), dot_axes=([2], [0]),
                                                mode=mode), a, b, order=2)


def test_autograd_positional_form_and_plain_extended():
    rng = numpy.random.default_rng(5)
    a, b = _rand(rng, (2, 3, 6, 6)), _rand(rng, (3, 4, 3, 3))
    by_keyword = msig.convolve(a, b, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode="valid")
    positional = msig.convolve(a, b, ([2, 3], [2, 3]), ([1], [0]), mode="valid")
    numpy.testing.assert_array_equal(_host(by_keyword), _host(positional))
    assert by_keyword.shape == (2, 4, 4, 4)
    x, y = _rand(rng, (4, 5)), _rand(rng, (2, 3))
    for mode in MODES:       # axes=None, no dot axes: SciPy's convolution
        numpy.testing.assert_allclose(_host(msig.convolve(x, y, axes=None, mode=mode)),
                                      scipy.signal.convolve(x, y, mode))
        numpy.testing.assert_allclose(
            _host(msig.convolve(x, y, axes=([0, 1], [0, 1]), mode=mode)),
            scipy.signal.convolve(x, y, mode))


def test_extended_form_in_chunks(monkeypatch):
    """Many kernel offsets: the window stack is built in chunks; same values."""
    rng = numpy.random.default_rng(6)
    a, b = _rand(rng, (2, 9, 8)), _rand(rng, (2, 4, 5))
    want = msig.convolve(a, b, axes=([1, 2], [1, 2]), dot_axes=([0], [0]))
    monkeypatch.setattr(msig, "_WINDOW_CHUNK", 50)
    got = msig.convolve(a, b, axes=([1, 2], [1, 2]), dot_axes=([0], [0]))
    numpy.testing.assert_allclose(_host(got), _host(want), rtol=1e-12)
    numpy.testing.assert_allclose(_host(got),
                                  _extended_reference(a, b, ([1, 2], [1, 2]), ([0], [0]), "full"),
                                  rtol=1e-10)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("call,match", [
    (lambda: msig.convolve(numpy.ones(3), numpy.ones(2), "middle"), "mode must be"),
    (lambda: msig.convolve(numpy.ones(3), numpy.ones(2), "full", "fast"), "method must be"),
    (lambda: msig.convolve(numpy.ones((3, 2)), numpy.ones(2)), r"same dimensionality.*\(3, 2\)"),
    (lambda: msig.convolve(numpy.ones((3, 2)), numpy.ones((2, 3)), "valid"),
     r"at least as large.*\(3, 2\) and \(2, 3\)"),
    (lambda: msig.correlate(numpy.ones((3, 2)), numpy.ones((2, 3)), "valid"), "correlate"),
    (lambda: msig.convolve(numpy.ones(0), numpy.ones(2)), "empty"),
    (lambda: msig.convolve(numpy.ones((2, 3)), numpy.ones((4, 5)), axes=([0], [0]),
                           dot_axes=([1], [1])), r"size 3.*size 5"),
    (lambda: msig.convolve(numpy.ones(3), numpy.ones(2), ([0], [0]), mode="full", axes=None),
     "multiple values"),
    (lambda: msig.convolve(numpy.ones(3), numpy.ones(2), "full", "auto", "x"),
     "positional arguments"),
    (lambda: msig.convolve(numpy.ones(3), numpy.ones(2), boundary="fill"), "unexpected keyword"),
    (lambda: msig.convolve(numpy.ones((2, 3)), numpy.ones((4, 3)), axes=([2], [0])),
     r"out of range.*\(2, 3\)"),
    (lambda: msig.convolve(numpy.ones((2, 3)), numpy.ones((4, 3)), axes=([0], [0]),
                           dot_axes=([0], [1])), "named twice"),
    (lambda: msig.convolve(numpy.ones((2, 3)), numpy.ones((4, 3)), axes=([0, 1], [0])),
     "pair one to one"),
    (lambda: msig.convolve(numpy.ones((2, 3)), numpy.ones((4, 3)), axes=[0]), "must be a pair"),
    (lambda: msig.convolve(numpy.ones((2, 3)), numpy.ones((4, 3)), axes=([0], [0]),
                           method="fft"), "plain form"),
    (lambda: msig.convolve(numpy.ones((5, 3)), numpy.ones((4, 4)), axes=([0, 1], [0, 1]),
                           mode="valid"), "every convolved axis"),
    (lambda: msig.convolve("abc", numpy.ones(2)), "in1 must be an array"),
])
def test_errors_name_the_function_and_shapes(call, match):
    with pytest.raises((ValueError, TypeError), match=match) as info:
        call()
    assert "minpy.scipy.signal." in str(info.value)


def test_docstrings():
    for f in (msig.convolve, msig.correlate):
        assert "See also scipy.signal" in f.__doc__ and "Returns" in f.__doc__


# ---------------------------------------------------------------- devices (stand-in GPU)
@pytest.fixture
def standin_signal(monkeypatch):
    """The stand-in GPU with a device ``signal`` namespace (as cupyx.scipy.signal)."""
    with installed() as backend:
        ns = types.SimpleNamespace(convolve=_Fn("signal.convolve", scipy.signal.convolve,
                                                backend))
        monkeypatch.setitem(_util.GPU_NAMESPACES, "standin", {"signal": ns})
        yield backend


def test_runs_on_the_device_namespace(standin_signal):
    rng = numpy.random.default_rng(7)
    a, b = _rand(rng, (5, 4)), _rand(rng, (2, 3))
    with minpy.gpu(0):
        ga, gb = minpy.array(a), minpy.array(b)
    for mode in MODES:
        out = msig.convolve(ga, gb, mode)
        assert out.context == minpy.gpu(0)
        numpy.testing.assert_allclose(_host(out), scipy.signal.convolve(a, b, mode))
    assert standin_signal.calls["signal.convolve"] == 3
    with minpy.gpu(0):
        check_grads(lambda x, y: msig.convolve(x, y, "same"), ga, gb, order=2)
        ext = msig.convolve(minpy.array(_rand(rng, (2, 3, 5))), minpy.array(_rand(rng, (3, 2))),
                            axes=([2], [1]), dot_axes=([1], [0]), mode="valid")
    assert ext.context == minpy.gpu(0) and ext.shape == (2, 4)


def test_falls_back_to_the_host_without_a_device_signal_module(standin_gpu_no_signal):
    rng = numpy.random.default_rng(8)
    a, b = _rand(rng, (6,)), _rand(rng, (3,))
    with minpy.gpu(0):
        ga, gb = minpy.array(a), minpy.array(b)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = msig.convolve(ga, gb)
    numpy.testing.assert_allclose(_host(out), scipy.signal.convolve(a, b))
    assert any("scipy.signal.convolve" in str(w.message) for w in caught)
    assert minpy.dispatch.stats()["fallbacks"].get("scipy.signal.convolve") == 1


@pytest.fixture
def standin_gpu_no_signal(monkeypatch):
    with installed() as backend:
        monkeypatch.setitem(_util.GPU_NAMESPACES, "standin", {})
        yield backend
