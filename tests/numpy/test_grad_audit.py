"""The namespace-wide gradient audit: no silent wrong answers.

Every public callable of ``minpy``, ``minpy.linalg``, ``minpy.fft``, ``minpy.random``
and ``minpy.scipy``'s submodules, called on traced float64 inputs inside
``minpy.grad``, has exactly one of three outcomes, decided per name in the tables
below (``minpy``'s own namespace in ``_grad_audit_numpy.py``; the outcomes and their
checks in ``_grad_audit_checks.py``):

- ``R`` (a rule): its gradient matches central finite differences on a
  representative call, to first order and (``order=2``, the default) to second
  order, grad of grad. The check is directional (a random direction for every
  input, a random cotangent for every floating output, as
  :func:`minpy.testing.check_grads`) and must not be trivial: finite differences
  are non-zero unless the variant says ``zero=True`` (a rule that rightly gives 0,
  as ``sign`` of a real number).
- ``K`` (a constant): the result carries no gradient (integer, boolean or index
  results, comparisons, rounding, shape queries, draws that take no array), its
  outputs are untraced and do not change under a small perturbation of the input,
  and the library's ``nondiff`` flag agrees (``flag=False``: a form of a function
  whose other forms have rules, or a function that takes no array).
- ``X`` (a refusal): the call raises ``TypeError`` naming the function (or, for
  one argument without a rule — ``percentile``'s ``q``, ``interp``'s ``xp`` —
  the backward pass does, naming the function that has no rule).

A name may list several variants (keywords, broadcasting, other arguments): a
function with a rule may refuse for one argument, or have a constant form (the
one-argument ``where``). A public name without a decision fails
:func:`test_every_public_name_is_decided`; names that are not functions of
arrays (types, constants, submodules, settings, the autograd operators ...) are
listed in ``NOT_ARRAY_FUNCTIONS`` with the reason. A silent wrong answer not fixed
yet is a variant with ``known_gap=`` (a strict xfail: it fails once fixed, so the
table is updated).
"""
import types
import zlib

import numpy
import pytest

import minpy
import minpy.numpy as mnp
import minpy.scipy
import minpy.scipy.integrate
import minpy.scipy.linalg
import minpy.scipy.signal
import minpy.scipy.special
import minpy.scipy.stats

from _grad_audit_checks import (HIST_A, INDEX, RANDOM, ROUNDING, K, R, X, _cplx, _int, _unary,
                                check_constant, check_refusal, check_rule, make_inputs)
from _grad_audit_numpy import MINPY


# ------------------------------------------------------------------ linalg, fft
def _sym(a):
    return 0.5 * (a + mnp.swapaxes(a, -1, -2))


def _spd_of(b):
    return b @ mnp.swapaxes(b, -1, -2) / 3.0 + numpy.eye(b.shape[-1])


def _eig_parts(res):
    w, v = res
    return w, mnp.real(v * mnp.conj(v))       # eigenvector signs/phases do not matter


def _near_diag(a):
    return numpy.diag([1.0, 2.0, 3.5]) + 0.3 * a


LINALG = {
    "cholesky": R("n2x3x3", call=lambda f, b: f(_spd_of(b))),
    "cond": R("A3"), "cross": R("n2x3", "n3"), "det": R("A2x3x3"), "diagonal": R("n3x4"),
    # eigenvalues and phase-invariant functions of the eigenvectors, to first order
    # (a function that depends on the arbitrary phase is refused: tests/numpy/test_grad_linalg.py)
    "eig": [R("n3x3", call=lambda f, a: f(_near_diag(a))[0], order=1),
            R("n3x3", call=lambda f, a: _eig_parts(f(_near_diag(a))), order=1)],
    "eigh": R("n3x3", call=lambda f, a: _eig_parts(f(_sym(_near_diag(a))))),
    "eigvals": R("n3x3", call=lambda f, a: f(_near_diag(a)), order=1),
    "eigvalsh": R("n3x3", call=lambda f, a: f(_sym(a))),
    "inv": R("A3"), "pinv": R("n3x2"), "slogdet": R("A3"), "solve": R("A3", "n3x2"),
    "lstsq": R("n4x2", "n4"),
    "matrix_norm": [R("n3x4"), R("n3x4", call=lambda f, x: f(x, ord="nuc"))],
    "matrix_power": [R("n3x3", call=lambda f, a: f(a, 3)), R("A3", call=lambda f, a: f(a, -2))],
    "matrix_rank": K(INDEX, "n3x3"),
    "matrix_transpose": R("n2x3"), "matmul": R("n2x3", "n3x2"), "outer": R("n3", "n2"),
    "tensordot": R("n2x3", "n3x2", call=lambda f, x, y: f(x, y, axes=1)), "trace": R("n3x3"),
    "vecdot": R("n2x3", "n3"),
    "multi_dot": R("n2x3", "n3x4", "n4x2", call=lambda f, a, b, c: f([a, b, c])),
    "norm": [R("n3x4"), R("n3x4", call=lambda f, x: f(x, ord=2)),
             R("m5", call=lambda f, x: f(x, ord=1))],
    "vector_norm": [R("n3x4", call=lambda f, x: f(x, axis=1)),
                    R("m5", call=lambda f, x: f(x, ord=3))],
    "qr": R("n4x3"),
    "svd": R("n4x3", call=lambda f, a: (lambda u, s, vh: (s, u * u, vh * vh))(
        *f(a, full_matrices=False))),
    "svdvals": R("n4x3"),
    "tensorinv": R("A4", call=lambda f, a: f(mnp.reshape(a, (2, 2, 2, 2)), ind=2)),
    "tensorsolve": R("A4", "n2x2", call=lambda f, a, b: f(mnp.reshape(a, (2, 2, 2, 2)), b)),
}

_c = _cplx(lambda f, z: f(z))
FFT = {n: R("n4x4") for n in ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft",
                               "rfft2", "rfftn", "ihfft", "fftshift", "ifftshift"]}
FFT.update({n: R("n3x3", "n3x3", call=_c) for n in ["irfft", "irfft2", "irfftn", "hfft"]})
FFT.update({"fftfreq": R("p", call=lambda f, d: f(8, d)),
            "rfftfreq": R("p", call=lambda f, d: f(7, d=d))})


# ------------------------------------------------------------------ random
RANDOM_TABLE = {n: K(RANDOM, call=lambda f: f(3), flag=False) for n in [
    "bytes", "rand", "randn", "random", "random_sample", "ranf", "sample", "standard_cauchy",
    "standard_exponential", "standard_normal"]}
RANDOM_TABLE["random_integers"] = K(RANDOM, call=lambda f: f(1, 5, 3), flag=False)
# a traced parameter: no reparameterization gradient, refused at the call
RANDOM_TABLE.update({
    "normal": X("n3"), "gumbel": X("n3"), "laplace": X("n3"), "logistic": X("n3"),
    "lognormal": X("n3"), "exponential": X("p3"), "chisquare": X("p3"), "pareto": X("p3"),
    "poisson": X("p3"), "power": X("p3"), "rayleigh": X("p3"), "standard_gamma": X("p3"),
    "standard_t": X("p3"), "weibull": X("p3"), "gamma": X("p3"), "zipf": X("g3"),
    "geometric": X("q3"), "logseries": X("q3"), "beta": X("p3", "p3"), "f": X("p3", "p3"),
    "wald": X("p3", "p3"), "vonmises": X("n3", "p3"), "noncentral_chisquare": X("p3", "p3"),
    "noncentral_f": X("p3", "p3", "p3"), "uniform": X("n3", call=lambda f, x: f(x, x + 1.0)),
    "triangular": X("n3", call=lambda f, x: f(x - 1.0, x, x + 1.0)),
    "binomial": X("q3", call=lambda f, p: f(5, p)),
    "negative_binomial": X("q3", call=lambda f, p: f(5, p)),
    "multinomial": X("p3", call=lambda f, p: f(5, p / mnp.sum(p))),
    # integer parameters only (an integer array is never traced)
    "hypergeometric": K(RANDOM, "p3", call=lambda f, x: f(_int(x) + 5, 5, 3), flag=False,
                        values=False),
    "randint": K(RANDOM, "p3", call=lambda f, x: f(_int(x), 10), flag=False, values=False),
    "dirichlet": X("p3"), "choice": X("n3", call=lambda f, x: f(x, 2)),
    "permutation": X("n3"), "shuffle": X("n3"),
    "multivariate_normal": X("n3", call=lambda f, m: f(m, numpy.eye(3))),
})


# ------------------------------------------------------------------ scipy
SPECIAL = {}
SPECIAL.update(_unary("p", ["gammaln", "loggamma", "gamma", "rgamma", "digamma", "psi", "j0",
                            "j1", "y0", "y1", "k0", "k1", "k0e", "k1e", "entr"]))
SPECIAL.update(_unary("n", ["expit", "log_expit", "erf", "erfc", "erfcx", "ndtr", "log_ndtr",
                            "i0", "i1"]))
SPECIAL.update(_unary("m", ["i0e", "i1e"]))
SPECIAL.update({
    "logit": R("q3"), "erfinv": R("u3"), "ndtri": R("q3"),
    "erfcinv": R("u3", call=lambda f, x: f(1.0 + x)),
    "gammasgn": K(ROUNDING, "m3"),
    "polygamma": R("p3", call=lambda f, x: f(1, x)),
    "multigammaln": R("g3", call=lambda f, a: f(a + 1.0, 3)),
    "beta": R("p3", "p3"), "betaln": R("p3", "p"),
    "xlogy": R("n3", "p3"), "xlog1py": R("n3", "u3"),
    "jn": R("p3", call=lambda f, x: f(2, x)), "yn": R("p3", call=lambda f, x: f(2, x)),
    "logsumexp": [R("n3x4", call=lambda f, x: f(x, axis=1)),
                  R("n3x4", "p4", call=lambda f, x, b: f(x, axis=0, b=b, keepdims=True)),
                  R("n3x4", call=lambda f, x: f(x, b=-1.0, return_sign=True))],
    "softmax": R("n3x4", call=lambda f, x: f(x, axis=1)),
    "log_softmax": R("n3x4", call=lambda f, x: f(x, axis=0)),
})
# functions with an argument whose derivative has no closed form: refused for it
for _n, _x, _first in [("betainc", "q3", (2.0, 3.0)), ("gammainc", "p3", (2.0,)),
                       ("gammaincc", "p3", (2.0,)), ("stdtr", "n3", (4.0,)),
                       ("stdtrit", "q3", (4.0,))]:
    SPECIAL[_n] = [R(_x, call=lambda f, x, _a=_first: f(*_a, x)),
                   X("p", call=lambda f, a, _a=_first, _k=_x: f(a + 1.0, *_a[1:],
                                                                make_inputs([_k], 0)[0]))]
for _n in ["iv", "ive", "jv", "yv", "kv", "kve"]:
    SPECIAL[_n] = [R("p3", call=lambda f, z: f(1.5, z + 0.5)),
                   X("p", call=lambda f, v: f(v, numpy.array([1.0, 2.0])))]

_LOC_SCALE = ("n", "p")
STATS = {
    "norm": {**{n: R("n3", *_LOC_SCALE) for n in ["pdf", "logpdf", "cdf", "logcdf", "sf",
                                                   "logsf"]},
             "ppf": R("q3", *_LOC_SCALE), "isf": R("q3", *_LOC_SCALE),
             "entropy": R("p", call=lambda f, s: f(scale=s))},
    "t": {"pdf": R("n3", "g", *_LOC_SCALE), "logpdf": R("n3", "g", *_LOC_SCALE),
          **{n: [R("n3", *_LOC_SCALE, call=lambda f, x, m, s: f(x, 4.0, m, s)),
                 X("g", call=lambda f, df: f(HIST_A, df), name="stdtr")]
             for n in ["cdf", "logcdf", "sf", "logsf"]},
          "ppf": [R("q3", *_LOC_SCALE, call=lambda f, q, m, s: f(q, 4.0, m, s)),
                  X("g", call=lambda f, df: f(HIST_A, df), name="stdtrit")]},
    "beta": {"pdf": R("q3", "p", "p"), "logpdf": R("q3", "p", "p"),
             **{n: [R("q3", call=lambda f, x: f(x, 2.0, 3.0)),
                    X("p", call=lambda f, a: f(HIST_A, a, 3.0), name="betainc")]
                for n in ["cdf", "logcdf", "sf", "logsf"]}},
    "gamma": {"pdf": R("p3", "p", "n", "p", call=lambda f, x, a, m, s: f(x + 3.0, a, m, s)),
              "logpdf": R("p3", "p", "n", "p",
                          call=lambda f, x, a, m, s: f(x + 3.0, a, m, s)),
              **{n: [R("p3", call=lambda f, x: f(x, 2.0)),
                     X("p", call=lambda f, a: f(HIST_A, a), name="gammainc")]
                 for n in ["cdf", "logcdf", "sf", "logsf"]}},
    "poisson": {n: R("p", call=lambda f, mu: f(numpy.array([0, 1, 3]), mu + 0.5))
                for n in ["pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"]},
    "multivariate_normal": {
        "logpdf": R("n2x3", "n3", "n3x3", call=lambda f, x, m, b: f(x, m, _spd_of(b))),
        "pdf": R("n2x3", "n3", "n3x3", call=lambda f, x, m, b: f(x, m, _spd_of(b))),
        "entropy": R("n3x3", call=lambda f, b: f(cov=_spd_of(b)))},
    "dirichlet": {
        "logpdf": R("n3", "p3", call=lambda f, z, a: f(mnp.exp(z) / mnp.sum(mnp.exp(z)), a)),
        "pdf": R("n3", "p3", call=lambda f, z, a: f(mnp.exp(z) / mnp.sum(mnp.exp(z)), a)),
        "entropy": R("p3")},
    "chi2": {"pdf": R("p3", "p", "n", "p", call=lambda f, x, k, m, s: f(x + 3.0, k + 1.0, m, s)),
             "logpdf": R("p3", "p", "n", "p",
                         call=lambda f, x, k, m, s: f(x + 3.0, k + 1.0, m, s)),
             **{n: [R("p3", call=lambda f, x: f(x + 0.5, 3.0)),
                    X("p", call=lambda f, k: f(HIST_A, k + 1.0),
                      name="gammainc" if n in ("cdf", "logcdf") else "gammaincc")]
                for n in ["cdf", "logcdf", "sf", "logsf"]}},
}
# the samplers (SciPy's, as autograd re-exports them): draws are data, traced parameters
# refused
for _d in STATS:
    STATS[_d]["rvs"] = X("p3" if _d == "dirichlet" else "p",
                         call=lambda f, p: f(p + 1.0, size=3, random_state=0), name="rvs")


def _cho(b):
    return minpy.scipy.linalg.cho_factor(_spd_of(b))


SCIPY_LINALG = {
    "cholesky": R("n3x3", call=lambda f, b: f(_spd_of(b), lower=True)),
    "cho_factor": R("n3x3", call=lambda f, b: mnp.tril(f(_spd_of(b), lower=True)[0])),
    "cho_solve": R("n3x3", "n3x2", call=lambda f, b, y: f(_cho(b), y)),
    "solve_triangular": R("A3", "n3x2", call=lambda f, a, b: f(mnp.tril(a), b, lower=True)),
    "solve": R("A3", "n3"), "inv": R("A3"), "det": R("A3"),
    "eigh": [R("n3x3", call=lambda f, a: _eig_parts(f(_sym(_near_diag(a))))),
             R("n3x3", call=lambda f, a: f(_sym(a), eigvals_only=True))],
    "sqrtm": R("n3x3", call=lambda f, b: f(_spd_of(b))),
    "expm": R("n3x3", call=lambda f, a: f(0.5 * a)),
    "solve_sylvester": R("A3", "A2", "n3x2"),
    "solve_banded": R("n3x3", "n3x2", call=lambda f, ab, b: f(
        (1, 1), 0.3 * ab + numpy.array([[0.0], [4.0], [0.0]]), b)),
}
SIGNAL = {n: [R("n5", "n3"), R("n4x3", "n2x2", call=lambda f, x, y: f(x, y, mode="same"))]
          for n in ["convolve", "correlate"]}
INTEGRATE = {"odeint": R("n2", "p", order=1, call=lambda f, y0, k: f(
    lambda y, t, k: -k * y + mnp.sin(t), y0, numpy.array([0.0, 0.5, 1.0]), args=(k,),
    rtol=1e-12, atol=1e-12))}


# ------------------------------------------------------------------ not functions of arrays
_SCALAR_TYPES = (
    "bool", "bool_", "byte", "bytes_", "cdouble", "character", "clongdouble", "complex128",
    "complex256", "complex64", "complexfloating", "csingle", "datetime64", "double",
    "flexible", "float128", "float16", "float32", "float64", "floating", "generic", "half",
    "inexact", "int16", "int32", "int64", "int8", "int_", "intc", "integer", "intp", "long",
    "longdouble", "longlong", "number", "object_", "short", "signedinteger", "single", "str_",
    "timedelta64", "ubyte", "uint", "uint16", "uint32", "uint64", "uint8", "uintc", "uintp",
    "ulong", "ulonglong", "unsignedinteger", "ushort", "void", "record")
NOT_ARRAY_FUNCTIONS = {
    "minpy": {
        "NumPy's scalar types and dtypes (a traced array cast to one raises: the value "
        "would leave the tape)": _SCALAR_TYPES + ("dtype", "finfo", "iinfo"),
        "classes: NumPy's iterators, array subclasses and helpers (given a traced array "
        "they raise at numpy.asarray), minpy's Array, Context, policy, customop and ufunc "
        "types, the jit's error": (
            "Array", "Context", "JitTraceError", "broadcast", "busdaycalendar", "errstate",
            "flatiter", "matrix", "memmap", "ndarray", "ndenumerate", "ndindex", "nditer",
            "poly1d", "policy", "recarray", "ufunc", "vectorize", "customop"),
        "constants and tables": ("FRONTS", "sctypeDict", "typecodes", "False_", "True_",
                                 "little_endian", "ScalarType", "e", "euler_gamma", "inf",
                                 "nan", "pi", "newaxis"),
        "submodules (linalg, fft, random and scipy are audited as namespaces of their own; "
        "the rest are not NumPy functions)": (
            "array_methods", "callback", "compat", "core", "dispatch", "dtypes", "engine",
            "exceptions", "fft", "fronts", "generated", "init", "initializer", "interop",
            "kvstore", "linalg", "metric", "misc", "module", "namespace_info", "nd", "nn",
            "numpy", "random", "sym", "symbol", "testing", "scipy"),
        "index expressions (build tuples of slices, no arrays)": ("index_exp", "s_"),
        "the autograd operators and jit (they take functions)": (
            "grad", "grad_and_loss", "value_and_grad", "jacobian", "hessian",
            "hessian_vector_product", "elementwise_grad", "make_vjp", "make_jvp",
            "grad_named", "holomorphic_grad", "defvjp", "defvjp_argnums", "jit", "deriv",
            "grad_and_aux", "make_hvp", "make_ggnvp", "tensor_jacobian_product",
            "vector_jacobian_product", "vspace"),
        "NumPy's host-only functions (numpy.matrix results, object-dtype ufuncs of Python "
        "callables): given a traced array they raise a TypeError naming the function": (
            "asmatrix", "bmat", "frompyfunc"),
        "devices, policies, async settings and MinPy's op statistics": (
            "cpu", "gpu", "current_context", "num_gpus", "get_policy", "set_policy",
            "get_global_policy", "set_global_policy", "wrap_policy", "async_mode", "is_async",
            "set_async", "waitall", "record_op_stat", "show_op_stat"),
        "printing and floating-point error settings": (
            "get_printoptions", "set_printoptions", "printoptions", "getbufsize",
            "setbufsize", "geterr", "seterr", "geterrcall", "seterrcall"),
        "dtype and number utilities (scalars and dtypes in, no arrays)": (
            "isdtype", "issubdtype", "promote_types", "mintypecode", "typename", "base_repr",
            "binary_repr", "format_float_positional", "format_float_scientific"),
        "datetime and business-day functions (datetime64 data, never float)": (
            "busday_count", "busday_offset", "datetime_as_string", "is_busday",
            "datetime_data", "isnat"),
        "readers of files and strings (a traced array is not a file or a text)": (
            "load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "fromstring"),
        "introspection": ("info", "show_config", "show_runtime", "get_include"),
    },
    "linalg": {"an exception class": ("LinAlgError",)},
    "random": {
        "generator state, seeding and generator classes": (
            "seed", "get_state", "set_state", "get_bit_generator", "set_bit_generator",
            "default_rng", "BitGenerator", "Generator", "RandomState", "MT19937", "PCG64",
            "PCG64DXSM", "Philox", "SFC64", "SeedSequence", "bit_generator"),
        "array converters of the random module's plumbing": ("wrap", "unwrap_cpu"),
    },
    "scipy": {"submodules, audited as namespaces of their own":
              ("special", "stats", "linalg", "signal", "integrate", "scipy")},
    "scipy.stats": {"distributions, audited as namespaces of their own": (
        "norm", "t", "beta", "gamma", "poisson", "multivariate_normal", "dirichlet", "chi2")},
    "scipy.linalg": {"an exception class": ("LinAlgError",)},
}

_SUBMODULES_LISTED = {n for names in NOT_ARRAY_FUNCTIONS["minpy"].values() for n in names}

NAMESPACES = {
    "minpy": (minpy, MINPY), "linalg": (minpy.linalg, LINALG), "fft": (minpy.fft, FFT),
    "random": (minpy.random, RANDOM_TABLE), "scipy": (minpy.scipy, {}),
    "scipy.special": (minpy.scipy.special, SPECIAL),
    "scipy.stats": (minpy.scipy.stats, {}),
    "scipy.linalg": (minpy.scipy.linalg, SCIPY_LINALG),
    "scipy.signal": (minpy.scipy.signal, SIGNAL),
    "scipy.integrate": (minpy.scipy.integrate, INTEGRATE),
}
for _d, _table in STATS.items():
    NAMESPACES[f"scipy.stats.{_d}"] = (getattr(minpy.scipy.stats, _d), _table)


def public_names(module):
    """The public names of a namespace: ``__all__`` where it has one, else ``dir()``
    less the submodules that are not callable (``minpy.kvstore.launch`` appears there once
    anything imported it: not a NumPy function)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_") and not (
            isinstance(getattr(module, n), types.ModuleType) and not callable(
                getattr(module, n)) and n not in _SUBMODULES_LISTED)]
    return sorted(set(names))


def _variants(entry):
    return list(entry) if isinstance(entry, (list, tuple)) else [entry]


CASES = [pytest.param(f"{ns}:{name}", i, spec, id=f"{ns}:{name}#{i}", marks=[
    pytest.mark.xfail(strict=True, reason=spec.known_gap)] if getattr(spec, "known_gap", None)
    else []) for ns, (mod, table) in NAMESPACES.items()
    for name, entry in sorted(table.items()) for i, spec in enumerate(_variants(entry))]


def _resolve(ns, name):
    return getattr(NAMESPACES[ns][0], name)


# ------------------------------------------------------------------ the tests
def test_every_public_name_is_decided():
    """Each public name has a decision (a table entry or a not-a-function reason), and
    each table entry names a public callable (no stale entries)."""
    missing, stale, twice = [], [], []
    for ns, (mod, table) in NAMESPACES.items():
        not_fn = {n for names in NOT_ARRAY_FUNCTIONS.get(ns, {}).values() for n in names}
        public = public_names(mod)
        for n in public:
            if n not in table and n not in not_fn:
                missing.append(f"{ns}:{n}")
            if n in table and n in not_fn:
                twice.append(f"{ns}:{n}")
        stale += [f"{ns}:{n}" for n in table if n not in public or not (
            callable(getattr(mod, n)) or hasattr(getattr(mod, n), "__getitem__"))]
    assert missing == [], f"public names without a decision in the audit: {missing}"
    assert stale == [], f"audit entries that are not public callables: {stale}"
    assert twice == [], f"names both audited and listed as not functions of arrays: {twice}"


def test_not_array_functions_are_not_primitives():
    """Nothing listed as 'not a function of arrays' is a minpy primitive."""
    prims = []
    for ns, groups in NOT_ARRAY_FUNCTIONS.items():
        mod = NAMESPACES[ns][0]
        for names in groups.values():
            prims += [f"{ns}:{n}" for n in names if hasattr(getattr(mod, n, None), "_prim")
                      and n != "isnat" and not isinstance(getattr(mod, n), types.ModuleType)
                      and n not in ("load", "loadtxt", "genfromtxt", "fromfile", "fromregex",
                                    "fromstring")]
    assert prims == []


@pytest.mark.parametrize("case,variant,spec", CASES)
def test_audit(case, variant, spec):
    ns, _, name = case.rpartition(":")
    fn = _resolve(ns, name)
    seed = zlib.crc32(f"{case}#{variant}".encode())
    {"rule": check_rule, "constant": check_constant, "refusal": check_refusal}[spec.outcome](
        case, fn, spec, seed)


def test_one_outcome_per_function():
    """A function is either constant (every variant K) or not: a nondiff-flagged
    primitive has no rule variant, and one with a rule variant is not flagged."""
    wrong = []
    for ns, (mod, table) in NAMESPACES.items():
        for name, entry in table.items():
            kinds = {type(s).__name__ for s in _variants(entry)}
            prim = getattr(getattr(mod, name), "_prim", None)
            if prim is None:
                continue
            if prim.nondiff and kinds != {"K"}:
                wrong.append(f"{ns}:{name} is flagged nondiff but audited {sorted(kinds)}")
            if "R" in kinds and not prim.vjp and prim.mutates is None and \
                    getattr(mod, name).__module__ != "minpy.numpy.fronts":
                wrong.append(f"{ns}:{name} is audited with a rule but has none")
    assert wrong == []


def test_audit_counts():
    """The audit's tallies (printed with -s; a sanity floor on coverage)."""
    counts = {"rule": 0, "constant": 0, "refusal": 0}
    for ns, (mod, table) in NAMESPACES.items():
        for name, entry in table.items():
            kinds = [s.outcome for s in _variants(entry)]
            counts["rule" if "rule" in kinds else kinds[0]] += 1
    counts["not a function of arrays"] = sum(len(v) for g in NOT_ARRAY_FUNCTIONS.values()
                                             for v in g.values())
    print(counts)
    assert counts["rule"] > 300 and counts["constant"] > 100


# ------------------------------------------------------------------ the fixed defects, exactly
def test_unique_gradient_is_shared_by_equal_elements():
    x = mnp.array([2.0, 1.0, 2.0, 3.0, 2.0])
    w = numpy.array([10.0, 20.0, 30.0])               # unique values: 1, 2, 3
    g = minpy.grad(lambda x: mnp.sum(w * mnp.unique(x)))(x)
    numpy.testing.assert_allclose(g.asnumpy(), [20 / 3, 10.0, 20 / 3, 30.0, 20 / 3])
    assert float(minpy.grad(lambda x: mnp.sum(mnp.unique(x)))(mnp.array([1.0, 2.0])).sum()) \
        == 2.0
    rows = mnp.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]])
    g = minpy.grad(lambda r: mnp.sum(numpy.array([[1.0, 2.0], [3.0, 4.0]]) *
                                     mnp.unique(r, axis=0)))(rows)
    numpy.testing.assert_array_equal(g.asnumpy(), [[1.5, 2.0], [1.0, 2.0], [1.5, 2.0]])
    # the integer outputs are as NumPy's
    seen = []
    minpy.grad(lambda x: seen.append(mnp.unique_all(x)) or mnp.sum(seen[0].values))(x)
    want = numpy.unique_all(x.asnumpy())
    for got, ref in zip(seen[0], want):
        numpy.testing.assert_array_equal(got.asnumpy(), ref)


def test_histogram_weights_and_edges_exactly():
    a = numpy.array([0.1, 0.5, 0.9, 0.3, 0.2])
    w = mnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    g = minpy.grad(lambda w: mnp.sum(numpy.array([1.0, 10.0, 100.0]) *
                                     mnp.histogram(a, bins=3, weights=w)[0]))(w)
    numpy.testing.assert_array_equal(g.asnumpy(), [1.0, 10.0, 100.0, 1.0, 1.0])
    # edges = linspace(min, max, 4): d(sum of edges) = 2 at the min and at the max
    g = minpy.grad(lambda a: mnp.sum(mnp.histogram(a, bins=3)[1]))(mnp.array(a))
    numpy.testing.assert_allclose(g.asnumpy(), [2.0, 0.0, 2.0, 0.0, 0.0])
    # counts of unweighted data stay integers, as NumPy's
    seen = []
    minpy.grad(lambda a: seen.append(mnp.histogram(a, bins=3)) or mnp.sum(seen[0][1]))(
        mnp.array(a))
    numpy.testing.assert_array_equal(seen[0][0].asnumpy(), numpy.histogram(a, bins=3)[0])


def test_from_dlpack_of_a_traced_array_refuses():
    with pytest.raises(TypeError, match="from_dlpack"):
        minpy.grad(lambda x: mnp.sum(minpy.from_dlpack(x)))(mnp.array([1.0, 2.0]))
    numpy.testing.assert_array_equal(minpy.from_dlpack(mnp.array([1.0, 2.0])).asnumpy(),
                                     [1.0, 2.0])
