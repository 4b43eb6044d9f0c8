"""Gradients of numpy.fft: complex transforms, real <-> half-spectrum transforms
(where the bins standing for conjugate pairs must be halved/doubled), Hermitian
transforms, shifts; every n/s, axis/axes and norm variant, to second order
against finite differences; closed forms (Parseval) and HIPS autograd."""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
import minpy.numpy as mnp
from _strategies import random_array
from minpy.testing import check_grads
from _standin import standin_gpu  # noqa: F401  (fixture)

F = mnp.fft
NORMS = [None, "backward", "ortho", "forward"]
RNG = numpy.random.default_rng(5)


def R(*shape):
    return mnp.array(RNG.standard_normal(shape))


def C(*shape):
    return mnp.array(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape))


def _arr(shape, cplx, seed):
    return random_array(shape, seed, numpy.complex128 if cplx else numpy.float64)


# ---------------------------------------------------------------- complex <-> complex
@given(st.sampled_from(["fft", "ifft"]), st.sampled_from(NORMS), st.sampled_from([None, 2, 4, 7]),
       st.sampled_from([0, 1, -1]), st.booleans())
def test_fft_ifft(name, norm, n, axis, cplx):
    x = _arr((4, 3), cplx, 1)
    check_grads(lambda x: getattr(F, name)(x, n=n, axis=axis, norm=norm), x)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn"])
@pytest.mark.parametrize("norm", NORMS)
def test_fft_nd(name, norm):
    f = getattr(F, name)
    check_grads(lambda x: f(x, norm=norm), C(2, 3, 4))
    check_grads(lambda x: f(x, s=(3, 6), axes=(0, 2), norm=norm), C(2, 3, 4))
    check_grads(lambda x: f(x, axes=(1, 0), norm=norm), R(2, 3, 4))


def test_fftn_single_axis_and_minus_one_size():
    check_grads(lambda x: F.fftn(x, axes=(1,)), C(2, 3))
    check_grads(lambda x: F.ifftn(x, s=(-1, 5), axes=(0, 1)), C(2, 3))


def test_fft_keyword_operand():
    check_grads(lambda x: F.fft(a=x, n=5), C(3))


# ---------------------------------------------------------------- real <-> half spectrum
@given(st.sampled_from(NORMS), st.sampled_from([None, 1, 2, 5, 6, 9]), st.sampled_from([0, -1]),
       st.sampled_from([(5, 2), (6, 3), (1, 4)]))
def test_rfft(norm, n, axis, shape):
    check_grads(lambda x: F.rfft(x, n=n, axis=axis, norm=norm), R(*shape))


@given(st.sampled_from(NORMS), st.sampled_from([None, 2, 5, 6, 9]), st.sampled_from([0, -1]),
       st.sampled_from([(4, 2), (3, 3), (2, 5)]))
def test_irfft(norm, n, axis, shape):
    check_grads(lambda x: F.irfft(x, n=n, axis=axis, norm=norm), C(*shape))


@given(st.sampled_from(NORMS), st.sampled_from([None, 2, 5, 6]), st.sampled_from([0, -1]))
def test_hfft_ihfft(norm, n, axis):
    check_grads(lambda x: F.hfft(x, n=n, axis=axis, norm=norm), C(4, 3))
    check_grads(lambda x: F.ihfft(x, n=n, axis=axis, norm=norm), R(5, 3))


def test_irfft_hfft_real_input():
    check_grads(F.irfft, R(2, 4))
    check_grads(F.hfft, R(4))


@pytest.mark.parametrize("norm", NORMS)
def test_rfftn_irfftn(norm):
    for f in (F.rfft2, F.rfftn):
        check_grads(lambda x: f(x, norm=norm), R(2, 3, 4))
        check_grads(lambda x: f(x, s=(4, 5), axes=(2, 0), norm=norm), R(2, 3, 4))
    for f in (F.irfft2, F.irfftn):
        check_grads(lambda x: f(x, norm=norm), C(2, 3, 4))
        check_grads(lambda x: f(x, s=(4, 5), axes=(2, 0), norm=norm), C(2, 3, 4))
    check_grads(lambda x: F.rfftn(x, axes=(1,), norm=norm), R(2, 5))
    check_grads(lambda x: F.irfftn(x, s=(3, 7), axes=(0, 1), norm=norm), C(3, 4))


def test_rfft_gradient_counts_conjugate_bins():
    # L = sum(|rfft(x)|^2) over the half spectrum: dL/dx = Re(F^H P^T 2Y)
    # = 2 n irfft(Y * w), w halving the bins irfft counts twice (all but DC and Nyquist).
    x = R(6)
    g = minpy.grad(lambda x: mnp.sum(mnp.abs(F.rfft(x)) ** 2))(x).asnumpy()
    xn = x.asnumpy()
    w = numpy.array([1, 0.5, 0.5, 1])        # n = 6: DC and Nyquist unpaired
    want = 2 * 6 * numpy.fft.irfft(numpy.fft.rfft(xn) * w, n=6)
    numpy.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- shifts, frequencies
def test_shifts():
    check_grads(F.fftshift, R(3, 4))
    check_grads(lambda x: F.fftshift(x, axes=1), R(3, 5))
    check_grads(F.ifftshift, R(3, 5))
    check_grads(lambda x: F.ifftshift(x, axes=(0,)), C(3, 5))


def test_fftfreq_is_differentiated_in_the_spacing():
    # k / (n d) * d does not depend on d; k / (n d) squared has derivative -2 (k/(n d))^2 / d
    def f(d):
        return mnp.sum(F.fftfreq(4, d)) * d + mnp.sum(F.rfftfreq(5, d)) * d
    numpy.testing.assert_allclose(minpy.grad(f)(0.5), 0.0, atol=1e-15)
    d = 0.5
    want = -2 * (numpy.sum(numpy.fft.fftfreq(4, d) ** 2) +
                 numpy.sum(numpy.fft.rfftfreq(5, d) ** 2)) / d
    numpy.testing.assert_allclose(minpy.grad(
        lambda d: mnp.sum(F.fftfreq(4, d) ** 2) + mnp.sum(F.rfftfreq(5, d=d) ** 2))(d), want)
    check_grads(lambda d: F.fftfreq(6, d), mnp.array(0.7))


# ---------------------------------------------------------------- closed forms, peers
def test_parseval_grad_and_hessian():
    # sum |fft(x)|^2 = n sum |x|^2: gradient 2 n x, Hessian-vector product 2 n v
    x, v = C(8), C(8)
    f = lambda x: mnp.sum(mnp.abs(F.fft(x)) ** 2)     # noqa: E731
    numpy.testing.assert_allclose(minpy.grad(f)(x).asnumpy(), 16 * x.asnumpy(), rtol=1e-10)
    got = minpy.hessian_vector_product(f)(x, vector=v)
    numpy.testing.assert_allclose(got.asnumpy(), 16 * v.asnumpy(), rtol=1e-10)


def test_third_order_through_real_transforms():
    check_grads(lambda x: F.irfft(F.rfft(x * x) * 1.5, n=5), R(5), order=3)


def test_matches_autograd_up_to_conjugation():
    # minpy's convention (dL = Re <g, dx>) is the conjugate of autograd's for complex x
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    x = C(6).asnumpy()
    w = numpy.linspace(-1, 2, 6)
    def f(xp):
        return lambda x: xp.sum(xp.abs(xp.fft.fft(x) * w + xp.fft.ifft(x)) ** 2)
    want = autograd.grad(f(anp))(x)
    got = minpy.grad(f(mnp))(mnp.array(x)).asnumpy()
    numpy.testing.assert_allclose(got, numpy.conj(want), rtol=1e-10)
    xr = RNG.standard_normal(8)          # autograd's real transforms need even lengths
    def h(xp):
        return lambda x: xp.sum(xp.fft.irfft(xp.fft.rfft(x) * w[:5], 8) ** 3)
    numpy.testing.assert_allclose(minpy.grad(h(mnp))(mnp.array(xr)).asnumpy(),
                                  autograd.grad(h(anp))(xr), rtol=1e-10)


def test_rules_run_on_the_gpu_backend(standin_gpu):
    """The FFT rules on arrays living on the (strict stand-in) GPU: no host conversion."""
    with minpy.gpu(0):
        check_grads(lambda x: F.fft(x, n=6, norm="ortho"), C(2, 4))
        check_grads(lambda x: F.ifftn(x, s=(3, 2), axes=(0, 1)), C(2, 3))
        check_grads(lambda x: F.rfft(x, n=7), R(2, 5))
        check_grads(lambda x: F.irfftn(x, s=(4, 5), axes=(0, 1)), C(3, 4))
        check_grads(lambda x: F.hfft(x, n=5), C(4))
        check_grads(F.ihfft, R(6))
        check_grads(F.fftshift, R(5))
    calls = minpy.dispatch.stats()["calls"]
    assert {"fft.irfft", "fft.rfft", "fft.fftn", "fft.ifftn"} <= set(calls)
    assert all(set(per_backend) == {"standin"} for per_backend in calls.values()), calls
    assert not minpy.dispatch.stats()["fallbacks"]
