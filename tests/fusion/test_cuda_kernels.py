"""The CUDA kernels minpy generates compile and compute NumPy's numbers, checked without a GPU.

Compiled (``tests/_nvrtc.py``): every source minpy hands ``cupy.ElementwiseKernel``
-- the fused elementwise Programs of ``minpy.fusion.cuda`` (every op of the
IR's tables ``UNARY``, ``BINARY``, ``TERNARY`` and ``astype``, so a new op is
covered at once, for every dtype NumPy has a loop for: bool, int8..int64,
uint8..uint64, float16, float32, float64, complex64, complex128; with array
operands and with weak Python int and float constants on either side) and the
fused optimizer kernels of ``minpy.kernels.optim`` (every kind x float16, float32,
float64) -- expanded as CuPy 14 expands them (CuPy's kernel text byte for byte, as
compared once with CuPy 14.2's own ``_get_elementwise_kernel_code`` for all these
kernels; with its options ``--std=c++17 -ftz=true``) and compiled to PTX for ``compute_80``: by NVRTC where
a libnvrtc is found (with CuPy's own headers when CuPy is installed), else by the
toolkit's ``nvcc -ptx`` (CI: this image's CUDA 13 toolkit has nvcc but no
libnvrtc) with stand-ins for CuPy's headers.

Computed (:func:`test_operation_bodies_match_numpy`): each program's generated body
runs on the CPU (nvcc and g++, the stand-in ``float16`` and CCCL's
``thrust::complex`` as host code) over special values of each dtype -- integer
extremes, signed zeros, infinities, NaN -- and must equal NumPy's ``evaluate``:
bit for bit for arithmetic, comparisons, casts, min/max, abs, sign, floor/ceil,
sqrt and integer power (wrap-around included), to a few ulps for transcendentals.

Not checked here: with nvcc, host overloads of ``<cmath>`` are visible that NVRTC
does not have (``pow(int, int)`` compiles with nvcc, is ambiguous for NVRTC), and
the stand-ins give CuPy's interface, not its code; the device's libm and its
float-to-integer saturation (the host check skips casts out of an integer's range,
undefined in NumPy too); complex ``*`` and ``/`` with infinities or NaN (CCCL's and
CuPy's thrust::complex differ there); launching (a device: ``test_gpu_cupy.py``,
``test_fusion.py::test_cupy_kernel_runs_on_gpu``). Compile failures falling back
(with a warning) to the unfused path are tested with a fake CuPy.

Skipped, with the reason, only when neither NVRTC nor nvcc is found (the host check:
when nvcc or g++ is missing); under ``MINPY_TEST_DEVICE`` the compiled checks,
which do not depend on the device, are not repeated.
"""
import os
import sys
import types
import warnings

import numpy
import pytest

import _nvrtc
from minpy.kernels import optim as fused
from minpy.fusion import cpu as fusion, cuda as fusion_cuda
from minpy.fusion.ir import BINARY, CAST, TERNARY, UNARY

DTYPES = [numpy.dtype(c) for c in "?bhilBHILefdFD"]
# the compiled checks do not depend on the device minpy runs on: once per CI run is enough
_AGAIN = pytest.mark.skipif(bool(os.environ.get("MINPY_TEST_DEVICE")),
                            reason="device-independent; checked in the plain run")


@pytest.fixture(scope="module")
def compiler():
    """NVRTC or nvcc (found on first use, not at collection: it compiles a test kernel)."""
    found, why = _nvrtc.find_compiler()
    if found is None:
        pytest.skip(f"no CUDA compiler: {why}")
    return found


# ------------------------------------------------------------------ the programs
def _programs():
    """``{label: Program}``: each op of the IR with array operands, and the binary
    ops with a weak Python int and float constant on either side."""
    progs = {}
    for name in sorted(UNARY):
        progs[name] = fusion.Program(1, [(name, (("in", 0),))], [("t", 0)])
    for name in sorted(BINARY):
        progs[name] = fusion.Program(2, [(name, (("in", 0), ("in", 1)))], [("t", 0)])
        for c in (3, 2.5):
            progs[f"{name}(x,{c!r})"] = fusion.Program(1, [(name, (("in", 0), ("c", c)))],
                                                       [("t", 0)])
            progs[f"{name}({c!r},x)"] = fusion.Program(1, [(name, (("c", c), ("in", 0)))],
                                                       [("t", 0)])
    for name in sorted(TERNARY):
        progs[name] = fusion.Program(3, [(name, (("in", 0), ("in", 1), ("in", 2)))],
                                     [("t", 0)])
    for d in DTYPES:
        progs[f"astype({d.name})"] = fusion.Program(1, [(CAST, (("in", 0),), d)], [("t", 0)])
    # a chain with an input handed through and a constant output
    progs["chain"] = fusion.Program(2, [("multiply", (("in", 0), ("in", 1))),
                                        ("sigmoid", (("t", 0),)), ("relu", (("t", 1),))],
                                    [("t", 2), ("in", 0), ("t", 0), ("c", 1.5)])
    return progs


def _in_dtypes(name, prog, d):
    if name == "where":
        return [numpy.dtype(bool), d, d]
    return [d] * prog.n_inputs


def fusion_kernels():
    """``{(label, dtype name): (type_decls, body)}`` for every program and dtype with
    a NumPy loop (the others never reach the CUDA path: ``result_dtypes`` raises)."""
    out = {}
    for label, prog in _programs().items():
        for d in DTYPES:
            ins = _in_dtypes(label, prog, d)
            try:
                outs = fusion.result_dtypes(prog, ins)
            except TypeError:
                continue
            in_params, out_params, body, name = fusion.cuda_source(prog, ins)
            args = {f"x{k}": t for k, t in enumerate(ins)}
            args.update((p.split()[1], p.split()[0]) for p in in_params.split(", ")
                        if p.split()[1].startswith("c"))
            args.update((f"y{k}", t) for k, t in enumerate(outs))
            scalars = {a for a in args if a.startswith("c")}
            out[(label, d.name)] = _nvrtc.elementwise_source(
                in_params, out_params, body, name, args, scalars=scalars)
    return out


def optimizer_kernels():
    """``{(kind, dtype name): (type_decls, body)}`` of every fused optimizer kernel."""
    out = {}
    for kind in fused.KINDS:
        in_params, out_params, operation, name = fused.cuda_kernel(kind)
        for d in ("float16", "float32", "float64"):
            names = [p.split()[-1] for p in (in_params + ", " + out_params).split(",")]
            out[(kind, d)] = _nvrtc.elementwise_source(
                in_params, out_params, operation, name, dict.fromkeys(names, d),
                scalars=set(names) - {"g", "w", "s1", "s2"})
    return out


@pytest.fixture(scope="module")
def compiled(compiler):
    """Compile every kernel once: ``(kernels, {key: compiler log} of those that fail,
    the compiler)``."""
    kernels = {("fusion",) + k: v for k, v in fusion_kernels().items()}
    kernels.update((("optim",) + k, v) for k, v in optimizer_kernels().items())
    return kernels, _nvrtc.compile_all(compiler, kernels), compiler


def _failures(compiled, which, dtype):
    kernels, failed, _ = compiled
    mine = [k for k in kernels if k[0] == which and k[2] == dtype]
    return mine, {k[1]: failed[k].strip()[:2000] for k in mine if k in failed}


@_AGAIN
@pytest.mark.parametrize("dtype", [d.name for d in DTYPES])
def test_fusion_kernels_compile(compiled, dtype):
    mine, bad = _failures(compiled, "fusion", dtype)
    assert mine, f"no fused kernel for {dtype}"
    assert not bad, f"{compiled[2]}: {len(bad)} of {len(mine)} kernels fail:\n" + \
        "\n\n".join(f"--- {k}\n{v}" for k, v in bad.items())


@_AGAIN
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_optimizer_kernels_compile(compiled, dtype):
    mine, bad = _failures(compiled, "optim", dtype)
    assert len(mine) == len(fused.KINDS)
    assert not bad, f"{compiled[2]}:\n" + "\n\n".join(f"--- {k}\n{v}" for k, v in bad.items())


@_AGAIN
def test_a_bad_kernel_is_reported(compiler):
    """The checker itself: a kernel that cannot compile is named with its log."""
    bad = _nvrtc.elementwise_source("T x", "T y", "y = no_such_function(x);", "k",
                                    {"x": "float32", "y": "float32"})
    good = _nvrtc.elementwise_source("T x", "T y", "y = x;", "k", {"x": "float32",
                                                                    "y": "float32"})
    failed = _nvrtc.compile_all(compiler, {"bad": bad, "good": good})
    assert list(failed) == ["bad"] and "no_such_function" in failed["bad"]


# ------------------------------------------------- what the generator refuses
def test_constants_out_of_range_and_unknown_dtypes_are_unsupported():
    """A Python int constant that does not fit the loop dtype (NumPy raises) and a
    dtype without a CUDA type raise Unsupported, a TypeError: the callers then run
    the Program unfused (``fuse._fused_forward`` catches TypeError)."""
    p = fusion.Program(1, [("add", (("in", 0), ("c", 300)))], [("t", 0)])
    with pytest.raises(fusion_cuda.Unsupported, match="300 is out of bounds for int8"):
        fusion.cuda_source(p, ["int8"])
    assert fusion.cuda_source(p, ["int16"])
    with pytest.raises(TypeError, match="no CUDA type for dtype float128"):
        fusion.compile_program(fusion.Program(1, [("exp", (("in", 0),))], [("t", 0)]),
                               ["longdouble"], [(3,)], (3,), "cupy")


# ------------------------------------------------------ compile errors fall back
class _CompileException(Exception):
    """Stands for ``cupy.cuda.compiler.CompileException``."""


class _Made(list):
    """The ElementwiseKernel arguments made, and (``.options``) their options."""


def _fake_cupy(monkeypatch, error=None):
    """A ``cupy`` module of NumPy's functions whose ElementwiseKernel raises ``error``
    (default: a compile error) at its first launch, as NVRTC's rejection surfaces."""
    mod = types.ModuleType("cupy")
    mod.__getattr__ = lambda name: getattr(numpy, name)
    mod.cuda = types.SimpleNamespace(
        compiler=types.SimpleNamespace(CompileException=_CompileException))
    made, options = _Made(), []

    class ElementwiseKernel:
        def __init__(self, *args, **kwargs):
            made.append(args)
            options.append(kwargs.get("options", ()))

        def __call__(self, *args):
            raise error or _CompileException('kern.cu(3): error: identifier "x" is undefined')
    mod.ElementwiseKernel = ElementwiseKernel
    monkeypatch.setitem(sys.modules, "cupy", mod)
    monkeypatch.setattr(fusion_cuda, "_cupy_kernels", {})
    monkeypatch.setattr(fusion_cuda, "_failed", {})
    monkeypatch.setattr(fused, "_CUPY", {})
    monkeypatch.setattr(fused, "_CUPY_FAILED", {})
    made.options = options
    return made


def _chain():
    return fusion.Program(3, [("multiply", (("in", 0), ("in", 1))), ("add", (("t", 0), ("in", 2))),
                              ("tanh", (("t", 1),))], [("t", 2), ("t", 0)])


def test_fused_program_that_does_not_compile_runs_unfused(monkeypatch):
    made = _fake_cupy(monkeypatch)
    rng = numpy.random.default_rng(0)
    ins = [rng.standard_normal((3, 4)).astype(numpy.float32) for _ in range(2)] + \
        [rng.standard_normal(4).astype(numpy.float32)]
    want = fusion.evaluate(_chain(), ins)
    k = fusion.compile_program(_chain(), ["float32"] * 3, [(3, 4), (3, 4), (4,)], (3, 4), "cupy")
    outs = [numpy.empty((3, 4), numpy.float32) for _ in range(2)]
    with pytest.warns(RuntimeWarning, match=f"CUDA kernel {k.source[3]} did not compile.*"
                                            "identifier"):
        k(ins, outs)
    for o, w in zip(outs, want):
        numpy.testing.assert_array_equal(o, w)
    outs = [numpy.zeros((3, 4), numpy.float32) for _ in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # warned once; no second try
        k(ins, outs)
    numpy.testing.assert_array_equal(outs[0], want[0])
    assert len(made) == 1


def test_other_kernel_errors_propagate(monkeypatch):
    _fake_cupy(monkeypatch, error=RuntimeError("cudaErrorIllegalAddress"))
    k = fusion.compile_program(_chain(), ["float32"] * 3, [(4,)] * 3, (4,), "cupy")
    x = numpy.ones(4, numpy.float32)
    with pytest.raises(RuntimeError, match="IllegalAddress"):
        k([x, x, x], [numpy.empty(4, numpy.float32), numpy.empty(4, numpy.float32)])


def test_overlapping_inputs_are_copied(monkeypatch):
    """The kernel reads inputs through references while writing outputs: an input
    that an output overlaps (other than itself in place) is copied first."""
    _fake_cupy(monkeypatch)
    prog = fusion.Program(2, [("add", (("in", 0), ("in", 1)))], [("t", 0), ("in", 0)])
    k = fusion.compile_program(prog, ["float32"] * 2, [(4,), (4,)], (4,), "cupy")
    a, b, o = (numpy.arange(4, dtype=numpy.float32) for _ in range(3))
    safe = k._safe_inputs(numpy, [a, b], [b, o])
    assert safe[0] is a and safe[1] is b      # b is written in place by output 0
    view = b[:]
    assert k._safe_inputs(numpy, [a, view], [b, o])[1] is view   # the same elements: in place
    safe = k._safe_inputs(numpy, [a, b], [a, o])
    assert safe[0] is not a and safe[1] is b  # a is output 0 and handed through to output 1
    numpy.testing.assert_array_equal(safe[0], a)
    x, y = a[:3], b[1:]
    safe = k._safe_inputs(numpy, [x, y], [a[1:], o[:3]])
    assert safe[0] is not x and safe[1] is y  # x overlaps output 0, shifted


_STATES = {"sgd": 0, "momentum": 1, "nesterov": 1, "rms": 1, "adam": 2}


@pytest.mark.parametrize("kind", fused.KINDS)
def test_optimizer_kernel_that_does_not_compile_runs_unfused(monkeypatch, kind):
    made = _fake_cupy(monkeypatch)
    rng = numpy.random.default_rng(1)
    w, g = (rng.standard_normal(10).astype(numpy.float32) for _ in range(2))
    states = [abs(rng.standard_normal(10)).astype(numpy.float32) for _ in range(_STATES[kind])]
    states += [None] * (2 - len(states))
    params = (0.9, 0.1, 0.999, 0.001, 0.5, 0.25, 1e-8, 1.0) if kind == "adam" else \
        (0.9, 0.1, 1e-8)
    h = fused.hyper(kind, 0.1, 0.5, 1.0, 0.01, params)
    want = [None if x is None else x.copy() for x in [w] + states]
    fused.step_numpy(numpy, kind, want[0], g, want[1], want[2], h,
                     (numpy.empty(10, numpy.float32), numpy.empty(10, numpy.float32)))
    with pytest.warns(RuntimeWarning, match=f"minpy_fused_{kind} did not compile for float32"):
        fused.step_cupy(kind, w, g, states[0], states[1], h)
    for got, exp in zip([w] + states, want):
        if exp is not None:
            numpy.testing.assert_array_equal(got, exp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # warned once; no second try
        fused.step_cupy(kind, w, g, states[0], states[1], h)
    assert len(made) == 1
    # compiled without fused multiply-add, so the fused step rounds as the unfused one
    assert "--fmad=false" in made.options[0]


# ------------------------------------------------------ the bodies' numbers, on the host
_EXACT = frozenset(["add", "subtract", "multiply", "divide", "maximum", "minimum", "where",
                    "negative", "positive", "square", "abs", "reciprocal", "sign", "floor",
                    "ceil", "sqrt", "relu", "astype"]) | frozenset(fusion_cuda._CMP)
# complex ops given NaN and infinities (the others get finite operands and no zero divisor:
# the stand-in's thrust::complex (CCCL) and CuPy's copy of it differ from NumPy and from each
# other in their inf/NaN recovery and rounding of * and /); exact: those besides abs and sign
_COMPLEX_SPECIAL = frozenset(["add", "subtract", "maximum", "minimum", "relu", "where",
                              "negative", "positive", "abs", "sign", "astype"]) | \
    frozenset(fusion_cuda._CMP)
_COMPLEX_EXACT = _COMPLEX_SPECIAL - {"abs", "sign"}


def _values(d, special):
    if d.kind == "b":
        return numpy.array([False, True])
    if d.kind in "iu":
        info = numpy.iinfo(d)
        v = [0, 1, -1, 2, -2, 3, -3, 5, 7, -7, 100, info.min, info.max, info.min + 1,
             info.max - 1]
        return numpy.array(sorted({x for x in v if info.min <= x <= info.max}), d)
    real = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 2.5, 3.0, -3.5, 10.0, 1e-3]
    if d.kind == "f":
        return numpy.array(real + ([numpy.inf, -numpy.inf, numpy.nan] if special else []), d)
    parts = [0.0, 1.0, -2.5, 0.5]
    v = [complex(a, b) for a in parts for b in parts]
    if special:
        inf, nan = numpy.inf, numpy.nan
        v += [complex(nan, 0), complex(0, nan), complex(inf, 0), complex(inf, inf),
              complex(-inf, 1), complex(0, -inf), complex(1, inf)]
    return numpy.array(v, d)


def _host_case(label, prog, d):
    """(inputs, a reason to leave out some values) for one program and dtype."""
    op = label.split("(")[0]
    special = d.kind != "c" or op in _COMPLEX_SPECIAL
    v = _values(d, special)
    n_arr = prog.n_inputs
    if label == "where":
        a, b = numpy.meshgrid(v, v)
        c = (numpy.arange(a.size) % 3 == 0)
        return [c, a.ravel(), b.ravel()]
    if n_arr == 2:
        a, b = numpy.meshgrid(v, v)
        ins = [a.ravel(), b.ravel()]
        if op == "power" and d.kind in "iub":   # NumPy raises for a negative exponent
            ins = [x[ins[1] >= 0] for x in ins]
        if op in ("divide", "power") and d.kind == "c":
            ins = [x[ins[1] != 0] for x in ins]
        return ins
    x = v
    if op == "reciprocal" and d.kind in "iub":  # NumPy's 1 / 0 cast to an integer: undefined
        x = x[x != 0]
    if op == "power" and "x)" in label and d.kind in "iub":
        x = x[x >= 0]
    if op in ("divide", "reciprocal", "power") and d.kind == "c" and "(x" not in label:
        x = x[x != 0]
    if op == "astype":
        to = numpy.dtype(label[7:-1])
        if to.kind in "iu" and d.kind in "fc":  # a float out of the integer's range: undefined
            info, r = numpy.iinfo(to), (x.real if d.kind == "c" else x).astype(numpy.float64)
            with numpy.errstate(invalid="ignore"):
                x = x[numpy.isfinite(r) & (r >= info.min) & (r <= info.max)]
    return [x]


def _close(got, want, exact, d):
    if got.dtype.kind == "c":
        _close(got.real, want.real, exact, d)
        _close(got.imag, want.imag, exact, d)
        return
    if exact or got.dtype.kind in "biu":
        numpy.testing.assert_array_equal(got, want)
        if got.dtype.kind == "f":
            ok = ~numpy.isnan(want)
            numpy.testing.assert_array_equal(numpy.signbit(got[ok]), numpy.signbit(want[ok]))
        return
    tol = {2: 2e-3, 4: 4e-6, 8: 1e-13}[got.dtype.itemsize]
    numpy.testing.assert_allclose(got.astype(numpy.float64), want.astype(numpy.float64),
                                  rtol=tol, atol=tol * 1e-3, equal_nan=True)


@_AGAIN
@pytest.mark.skipif(_nvrtc.host_compiler() is None, reason="no nvcc and g++ for the host")
def test_operation_bodies_match_numpy():
    """Every program's body (one op each, and a chain), run on the CPU over special values of every
    dtype, equals NumPy's ``evaluate`` (bit for bit for arithmetic, comparisons,
    casts, min/max, sign, abs: NaN, signed zeros and integer wrap-around included;
    to a few ulps for transcendentals, whose host libm is not CUDA's)."""
    cases, checks = [], []
    for label, prog in _programs().items():
        for d in DTYPES:
            ins_t = _in_dtypes(label, prog, d)
            try:
                outs_t = fusion.result_dtypes(prog, ins_t)
            except TypeError:
                continue
            in_params, _, body, _ = fusion.cuda_source(prog, ins_t)
            ins = [numpy.asarray(a, t) for a, t in zip(_host_case(label, prog, d), ins_t)]
            args = {f"x{k}": a for k, a in enumerate(ins)}
            for k, c in enumerate(prog.consts):
                t = in_params.split(", ")[len(ins) + k].split()[0]
                args[f"c{k}"] = numpy.array([c], t)
            cases.append((body, args, {f"y{k}": t for k, t in enumerate(outs_t)}))
            with numpy.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", numpy.exceptions.ComplexWarning)
                want = fusion.evaluate(prog, ins)
            op = label.split("(")[0]
            checks.append((label, d, want, op in _EXACT and (d.kind != "c" or
                                                              op in _COMPLEX_EXACT)))
    got = _nvrtc.run_on_host(cases)
    bad = []
    for (label, d, want, exact), out in zip(checks, got):
        try:
            for k, w in enumerate(want):
                _close(out[f"y{k}"], numpy.asarray(w), exact, d)
        except AssertionError as e:
            bad.append(f"--- {label} {d}:\n{str(e).strip()[:600]}")
    assert not bad, f"{len(bad)} of {len(checks)} differ from NumPy:\n" + "\n".join(bad)
