"""minpy.linalg and minpy.fft against numpy.linalg and numpy.fft.

Each body takes ``xp`` and runs with NumPy and with minpy (fast and general
dispatch paths, see ``_strategies.run_both``); results must agree in values,
dtypes, shapes and result types (namedtuples included), or raise the same
exception type. Decompositions that are unique only up to signs/phases are
compared through quantities that are unique (reconstructions, singular values).
"""
import numpy
import pytest
from hypothesis import given, strategies as st

import minpy as mp
from _strategies import assert_matches, gpu_tolerance, on_real_gpu, run_both
from _standin import installed
from _host import assert_result_type, host

REAL = (numpy.float32, numpy.float64)
ALL = REAL + (numpy.complex64, numpy.complex128)


def tol(dtype):
    """(rtol, atol) for linear algebra results of ``dtype``."""
    single = numpy.dtype(dtype) in (numpy.float32, numpy.complex64)
    return dict(rtol=2e-4, atol=2e-4) if single else dict(rtol=1e-9, atol=1e-9)


@st.composite
def matrices(draw, kind="general", dtypes=ALL, batch=True, square=True):
    """Well-conditioned random matrices (host arrays), optionally batched.

    kind: 'general' (diagonally dominant), 'hermitian', 'spd' (Hermitian
    positive definite) or 'rect' (any m x n).
    """
    dtype = draw(st.sampled_from(dtypes))
    n = draw(st.integers(1, 4))
    m = n if square else draw(st.integers(1, 4))
    bshape = draw(st.sampled_from([(), (2,), (2, 3)])) if batch else ()
    rng = numpy.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.standard_normal(bshape + (n, m))
    if numpy.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(bshape + (n, m))
    eye = numpy.eye(n)
    if kind == "general":
        a = a + 3 * n * eye
    elif kind == "hermitian":
        a = a + a.conj().swapaxes(-1, -2) + 4 * n * eye
    elif kind == "spd":
        a = a @ a.conj().swapaxes(-1, -2) + n * eye
    return a.astype(dtype)


def hermitian_transpose(xp, a):
    return xp.conj(xp.swapaxes(a, -1, -2))


# ------------------------------------------------------------------ square matrices
SQUARE = {
    "det": lambda xp, a: xp.linalg.det(a),
    "inv": lambda xp, a: xp.linalg.inv(a),
    "pinv": lambda xp, a: xp.linalg.pinv(a),
    "slogdet": lambda xp, a: xp.linalg.slogdet(a),
    "matrix_rank": lambda xp, a: xp.linalg.matrix_rank(a),
    "cond": lambda xp, a: xp.linalg.cond(a),
    "cond_fro": lambda xp, a: xp.linalg.cond(a, "fro"),
    "cond_1": lambda xp, a: xp.linalg.cond(a, 1),
    "cond_-inf": lambda xp, a: xp.linalg.cond(a, -numpy.inf),
    "matrix_power_3": lambda xp, a: xp.linalg.matrix_power(a, 3),
    "matrix_power_0": lambda xp, a: xp.linalg.matrix_power(a, 0),
    "matrix_power_-2": lambda xp, a: xp.linalg.matrix_power(a, -2),
    "svdvals": lambda xp, a: xp.linalg.svdvals(a),
    "svd_values_only": lambda xp, a: xp.linalg.svd(a, compute_uv=False),
    "svd_reconstruct": lambda xp, a: _svd_check(xp, a),
    "eigvals_sorted": lambda xp, a: xp.sort(xp.linalg.eigvals(a), axis=-1),
    "eig_residual": lambda xp, a: _eig_check(xp, a),
    "qr_reconstruct": lambda xp, a: _qr_check(xp, a, "reduced"),
    "qr_complete": lambda xp, a: _qr_check(xp, a, "complete"),
    "qr_r_abs_diag": lambda xp, a: xp.abs(xp.diagonal(xp.linalg.qr(a, mode="r"), 0, -2, -1)),
    "matrix_transpose": lambda xp, a: xp.linalg.matrix_transpose(a),
    "trace": lambda xp, a: xp.linalg.trace(a),
    "trace_offset": lambda xp, a: xp.linalg.trace(a, offset=1),
    "diagonal": lambda xp, a: xp.linalg.diagonal(a, offset=-1),
    "matmul": lambda xp, a: xp.linalg.matmul(a, a),
    "solve_matrix": lambda xp, a: xp.linalg.solve(a, a[..., :1] + 1),
    "tensordot": lambda xp, a: xp.linalg.tensordot(a, a, axes=a.ndim),
    "tensordot_pairs": lambda xp, a: xp.linalg.tensordot(a, a, axes=([-1], [-2])),
}


def _svd_check(xp, a):
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return s, (u * s[..., None, :]) @ vh


def _eig_check(xp, a):
    w, v = xp.linalg.eig(a)
    residual = xp.abs(a @ v - v * w[..., None, :]).max() if a.size else xp.zeros(())
    return residual < 1e-2, xp.linalg.norm(v, axis=-2)


def _qr_check(xp, a, mode):
    q, r = xp.linalg.qr(a, mode=mode)
    return q @ r, xp.abs(xp.diagonal(r, 0, -2, -1)), q.shape, r.dtype


@pytest.mark.parametrize("case", sorted(SQUARE))
@given(a=matrices())
def test_square_matrix_functions(case, a):
    run_both(lambda a, xp: SQUARE[case](xp, xp.asarray(a)), a, **tol(a.dtype))


HERMITIAN = {
    "eigvalsh": lambda xp, a: xp.linalg.eigvalsh(a),
    "eigvalsh_U": lambda xp, a: xp.linalg.eigvalsh(a, UPLO="U"),
    "eigh": lambda xp, a: _eigh_check(xp, a, "L"),
    "eigh_U": lambda xp, a: _eigh_check(xp, a, "U"),
    "cholesky": lambda xp, a: xp.linalg.cholesky(a),
    "cholesky_upper": lambda xp, a: xp.linalg.cholesky(a, upper=True),
    "svd_hermitian": lambda xp, a: xp.linalg.svd(a, compute_uv=False, hermitian=True),
    "pinv_hermitian": lambda xp, a: xp.linalg.pinv(a, hermitian=True),
    "matrix_rank_hermitian": lambda xp, a: xp.linalg.matrix_rank(a, hermitian=True),
}


def _eigh_check(xp, a, uplo):
    w, v = xp.linalg.eigh(a, UPLO=uplo)
    return w, (v * w[..., None, :].astype(v.dtype)) @ hermitian_transpose(xp, v)


@pytest.mark.parametrize("case", sorted(HERMITIAN))
@given(a=matrices(kind="spd"))
def test_hermitian_matrix_functions(case, a):
    run_both(lambda a, xp: HERMITIAN[case](xp, xp.asarray(a)), a, **tol(a.dtype))


NORMS = [
    dict(), dict(ord="fro"), dict(ord="nuc"), dict(ord=1), dict(ord=-1), dict(ord=2),
    dict(ord=-2), dict(ord=numpy.inf), dict(ord=-numpy.inf), dict(axis=-1),
    dict(axis=0, ord=3), dict(axis=-1, ord=0), dict(axis=(-2, -1), keepdims=True),
    dict(axis=-2, ord=-numpy.inf, keepdims=True),
]


@pytest.mark.parametrize("kw", NORMS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
@given(a=matrices(kind="rect", square=False, batch=False))
def test_norm(kw, a):
    run_both(lambda a, xp: xp.linalg.norm(xp.asarray(a), **kw), a, **tol(a.dtype))


@pytest.mark.parametrize("ord_", ["fro", "nuc", 1, -1, 2, -2, numpy.inf, -numpy.inf])
@given(a=matrices(kind="rect", square=False))
def test_matrix_norm(ord_, a):
    run_both(lambda a, xp: xp.linalg.matrix_norm(xp.asarray(a), ord=ord_), a, **tol(a.dtype))
    run_both(lambda a, xp: xp.linalg.matrix_norm(xp.asarray(a), keepdims=True), a,
             **tol(a.dtype))


@pytest.mark.parametrize("kw", [dict(), dict(ord=1), dict(ord=0), dict(ord=numpy.inf),
                                dict(ord=-numpy.inf), dict(ord=3, axis=-1),
                                dict(axis=(0, -1), keepdims=True), dict(ord=-2, axis=0)])
@given(a=matrices(kind="rect", square=False))
def test_vector_norm(kw, a):
    run_both(lambda a, xp: xp.linalg.vector_norm(xp.asarray(a), **kw), a, **tol(a.dtype))


@given(a=matrices(kind="rect", square=False, batch=False),
       k=st.integers(1, 3), rcond=st.sampled_from([None, 1e-3]))
def test_lstsq(a, k, rcond):
    def body(a, xp):
        b = xp.asarray(a)[:, :1] * 2 + xp.ones((a.shape[0], k), dtype=a.dtype)
        x, res, rank, sv = xp.linalg.lstsq(xp.asarray(a), b, rcond=rcond)
        return xp.asarray(a) @ x, res, rank, sv
    run_both(body, a, **tol(a.dtype))


@given(a=matrices(), vector=st.booleans())
def test_solve(a, vector):
    def body(a, xp):
        a = xp.asarray(a)
        b = xp.arange(a.shape[-1], dtype=a.dtype) + 1
        if vector and a.ndim == 2:           # NumPy 2: b is a vector only when 1-D
            return xp.linalg.solve(a, b)
        k = 1 if vector else 2
        return xp.linalg.solve(a, xp.broadcast_to(b[:, None], a.shape[:-1] + (k,)))
    run_both(body, a, **tol(a.dtype))


@given(dtype=st.sampled_from(ALL), seed=st.integers(0, 2**16))
def test_vector_products(dtype, seed):
    rng = numpy.random.default_rng(seed)
    u, v = (rng.standard_normal((2, 3)).astype(dtype) for _ in range(2))
    w = rng.standard_normal((4,)).astype(dtype)
    t = tol(dtype)
    run_both(lambda u, v, xp: xp.linalg.cross(xp.asarray(u), xp.asarray(v)), u, v, **t)
    run_both(lambda u, v, xp: xp.linalg.cross(xp.asarray(u), xp.asarray(v[0]), axis=-1),
             u, v, **t)
    run_both(lambda u, w, xp: xp.linalg.outer(xp.asarray(u[0]), xp.asarray(w)), u, w, **t)
    run_both(lambda u, v, xp: xp.linalg.vecdot(xp.asarray(u), xp.asarray(v)), u, v, **t)
    run_both(lambda u, v, xp: xp.linalg.vecdot(xp.asarray(u), xp.asarray(v), axis=0), u, v, **t)
    run_both(lambda u, v, xp: xp.linalg.multi_dot([xp.asarray(u), xp.asarray(v.T),
                                                   xp.asarray(u)]), u, v, **t)
    run_both(lambda u, w, xp: xp.linalg.multi_dot([xp.asarray(w), xp.asarray(w)]), u, w, **t)


@given(a=matrices(batch=False, dtypes=(numpy.float64, numpy.complex128)))
def test_tensorinv_tensorsolve(a):
    n = a.shape[0]
    big = numpy.kron(a, numpy.eye(2)) + numpy.eye(2 * n)      # (2n, 2n), well conditioned
    t = big.reshape(2 * n, n, 2)                               # ind=1: prod(shape[:1]) == 2n
    b = numpy.arange(2 * n, dtype=a.dtype)
    run_both(lambda t, xp: xp.linalg.tensorinv(xp.asarray(t), ind=1), t, **tol(a.dtype))
    run_both(lambda t, b, xp: xp.linalg.tensorsolve(xp.asarray(t), xp.asarray(b)), t, b,
             **tol(a.dtype))
    run_both(lambda t, b, xp: xp.linalg.tensorsolve(xp.asarray(t.reshape(2 * n, 2, n)),
                                                    xp.asarray(b), axes=(1,)), t, b,
             **tol(a.dtype))


# namedtuple fields unique only up to the sign of each vector
_SIGN_FREE = frozenset({"eigenvectors", "U", "Vh", "Q", "R"})


def test_namedtuple_results_keep_type_and_fields():
    an = numpy.array([[4.0, 1.0], [1.0, 3.0]])
    a = mp.array(an)
    for name, kw in [("eig", {}), ("eigh", {}), ("svd", {}), ("qr", {}), ("slogdet", {}),
                     ("svd", dict(full_matrices=False))]:
        exp = getattr(numpy.linalg, name)(an, **kw)
        got = getattr(mp.linalg, name)(a, **kw)
        assert type(got) is type(exp), name
        assert got._fields == exp._fields, name
        for field in exp._fields:
            value = getattr(got, field)
            assert_result_type(value, getattr(exp, field))
            want, have, rtol, atol = getattr(exp, field), host(value), 1e-12, 0
            if on_real_gpu():
                # cuSOLVER's vectors and factors are LAPACK's up to the sign of each
                # vector (both are right), and its values within a few ulps
                rtol, atol = gpu_tolerance(numpy.asarray(want, dtype=float), rtol, atol)
                if field in _SIGN_FREE:
                    want, have = numpy.abs(want), numpy.abs(have)
            numpy.testing.assert_allclose(have, want, rtol=rtol, atol=atol)
    lst = mp.linalg.lstsq(a, a[:, 0])
    assert type(lst) is tuple and len(lst) == 4
    assert isinstance(lst[0], mp.Array)
    assert_result_type(lst[2], numpy.linalg.lstsq(an, an[:, 0])[2])     # NumPy's int32


def test_linalg_errors():
    assert mp.linalg.LinAlgError is numpy.linalg.LinAlgError
    singular = numpy.array([[1.0, 2.0], [2.0, 4.0]])
    for f in (lambda xp, s: xp.linalg.inv(s), lambda xp, s: xp.linalg.solve(s, xp.ones(2)),
              lambda xp, s: xp.linalg.cholesky(-xp.eye(2)),
              lambda xp, s: xp.linalg.matrix_power(s, -1),
              lambda xp, s: xp.linalg.tensorinv(s, ind=1),
              lambda xp, s: xp.linalg.inv(xp.stack([xp.eye(2), s]))):
        with pytest.raises(numpy.linalg.LinAlgError):
            f(numpy, singular)
        with pytest.raises(mp.linalg.LinAlgError):
            f(mp, mp.array(singular))
    assert float(mp.linalg.det(mp.array(singular))) == 0.0
    for f in (lambda xp: xp.linalg.inv(xp.ones((2, 3))), lambda xp: xp.linalg.det(xp.ones(3)),
              lambda xp: xp.linalg.cross(xp.ones(4), xp.ones(4)),
              lambda xp: xp.linalg.matmul(xp.ones((2, 3)), xp.ones((2, 3)))):
        run_both(f)


# ------------------------------------------------------------------ fft
@st.composite
def signals(draw, real=False, min_dims=1):
    """Host signals of 1-3 dims (real or complex, single or double precision)."""
    dtypes = REAL if real else ALL
    dtype = draw(st.sampled_from(dtypes))
    ndim = draw(st.integers(min_dims, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    rng = numpy.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape)
    if numpy.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


NORM = st.sampled_from([None, "backward", "ortho", "forward"])
FFT_1D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]


@pytest.mark.parametrize("name", FFT_1D)
@given(data=st.data())
def test_fft_1d(name, data):
    x = data.draw(signals(real=name in ("rfft", "ihfft")))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.sampled_from([None, 1, 2, 5, 8]))
    norm = data.draw(NORM)
    f = lambda x, xp: getattr(xp.fft, name)(xp.asarray(x), n=n, axis=axis, norm=norm)  # noqa: E731
    run_both(f, x, **tol(x.dtype))


FFT_ND = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]


@pytest.mark.parametrize("name", FFT_ND)
@given(data=st.data())
def test_fft_nd(name, data):
    x = data.draw(signals(real=name.startswith("rfft"), min_dims=2))
    axes = data.draw(st.sampled_from([None, (0, 1), (-1, 0), (-2, -1)]))
    if name.endswith("n") and data.draw(st.booleans()):
        axes = tuple(range(x.ndim))[::-1]
    k = 2 if axes is None and name.endswith("2") else (len(axes) if axes else x.ndim)
    s = data.draw(st.sampled_from([None, "some"]))
    if s is not None:
        s = tuple(data.draw(st.lists(st.integers(1, 6), min_size=k, max_size=k)))
        if axes is None and name.endswith("n"):
            axes = tuple(range(x.ndim))[-k:]
    norm = data.draw(NORM)
    kw = dict(norm=norm)
    if s is not None:
        kw["s"] = s
    if axes is not None:
        kw["axes"] = axes
    run_both(lambda x, xp: getattr(xp.fft, name)(xp.asarray(x), **kw), x, **tol(x.dtype))


@given(n=st.integers(1, 9), d=st.sampled_from([1.0, 0.1, 2]))
def test_fftfreq_rfftfreq(n, d):
    run_both(lambda xp: xp.fft.fftfreq(n, d))
    run_both(lambda xp: xp.fft.rfftfreq(n, d=d))
    run_both(lambda xp: xp.fft.fftfreq(n))
    assert isinstance(mp.fft.fftfreq(n), mp.Array)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@given(x=signals(), axes=st.sampled_from([None, 0, -1, (0, -1)]))
def test_shifts(name, x, axes):
    if isinstance(axes, tuple) and x.ndim == 1:
        axes = 0
    run_both(lambda x, xp: getattr(xp.fft, name)(xp.asarray(x), axes=axes), x)


def test_fft_errors():
    for f in (lambda xp: xp.fft.fft(xp.ones(4), n=0), lambda xp: xp.fft.fft(xp.ones(4), axis=2),
              lambda xp: xp.fft.fft(xp.ones(4), norm="bad"),
              lambda xp: xp.fft.irfft(xp.ones(1)),
              lambda xp: xp.fft.fft2(xp.ones(4))):
        run_both(f)


def _cupy_lacks(gpu):
    """What the CuPy table (or the stand-in) lacks among the calls these tests make: the
    names it has not, and the keywords it refuses (``upper=``, ``hermitian=``)."""
    refused = {q for q, kw in (("linalg.cholesky", "upper"), ("linalg.svd", "hermitian"),
                               ("linalg.pinv", "hermitian"), ("linalg.matrix_rank", "hermitian"))
               if gpu.refuses(q, 1, {kw: True}, []) is not None}
    return gpu.api.never | gpu.missing | refused


def _on_device(fn, *args, lives=mp.gpu(0), **tol_kw):
    """``fn(*args, xp=minpy)`` on the strict stand-in GPU equals NumPy's result, and its
    Array results live on ``lives`` -- or on the host, after a counted CPU fallback for
    what CuPy lacks."""
    exp = fn(*args, xp=numpy)
    with installed() as gpu, mp.gpu(0):
        got = fn(*args, xp=mp)
        fell = set(mp.dispatch.stats()["fallbacks"])
        assert fell <= _cupy_lacks(gpu), fell
        where = {lives, mp.cpu(0)} if fell else {lives}
        leaves = got if isinstance(got, tuple) else (got,)
        for g in leaves:
            if isinstance(g, mp.Array):
                assert g.context in where
        assert_matches(got, exp, **tol_kw)


def test_linalg_on_device():
    rng = numpy.random.default_rng(0)
    for dtype in (numpy.float32, numpy.complex128):
        a = (rng.standard_normal((2, 3, 3)) + 9 * numpy.eye(3)).astype(dtype)
        spd = (a @ a.conj().swapaxes(-1, -2)).astype(dtype)
        for case, f in SQUARE.items():
            _on_device(lambda a, xp: f(xp, xp.asarray(a)), a, **tol(dtype))
        for case, f in HERMITIAN.items():
            _on_device(lambda a, xp: f(xp, xp.asarray(a)), spd, **tol(dtype))
        _on_device(lambda a, xp: xp.linalg.norm(xp.asarray(a), axis=-1, ord=3), a, **tol(dtype))
        with pytest.warns(RuntimeWarning, match="lstsq"):   # stand-in lacks it: CPU fallback
            _on_device(lambda a, xp: xp.linalg.lstsq(xp.asarray(a[0]), xp.asarray(a[1]))[0], a,
                       lives=mp.cpu(0), **tol(dtype))
        with installed(), mp.gpu(0):
            with pytest.raises(mp.linalg.LinAlgError):
                mp.linalg.inv(mp.zeros((2, 2)))


def test_fft_on_device():
    x = numpy.random.default_rng(1).standard_normal((4, 6)).astype(numpy.float32)
    for name in FFT_1D + FFT_ND + ["fftshift", "ifftshift"]:
        _on_device(lambda x, xp: getattr(xp.fft, name)(xp.asarray(x)), x, **tol(x.dtype))
    _on_device(lambda xp: xp.fft.fftfreq(8, 0.5))
    _on_device(lambda xp: xp.fft.rfftfreq(7))


def test_every_public_function_is_covered():
    linalg = {n for n in dir(numpy.linalg) if not n.startswith("_") and n != "test"}
    assert linalg <= set(mp.linalg.__all__)
    fft = {n for n in dir(numpy.fft) if not n.startswith("_") and n != "test"}
    assert fft <= set(mp.fft.__all__)
    tested = {"det", "inv", "pinv", "slogdet", "matrix_rank", "cond", "matrix_power", "svdvals",
              "svd", "eigvals", "eig", "qr", "matrix_transpose", "trace", "diagonal", "matmul",
              "solve", "tensordot", "eigvalsh", "eigh", "cholesky", "norm", "matrix_norm",
              "vector_norm", "lstsq", "cross", "outer", "vecdot", "multi_dot", "tensorinv",
              "tensorsolve", "LinAlgError"}
    assert linalg == tested
    assert fft == set(FFT_1D + FFT_ND + ["fftfreq", "rfftfreq", "fftshift", "ifftshift"])
