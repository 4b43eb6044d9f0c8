"""What CuPy refuses where NumPy accepts the call: minpy reruns it on the host.

The stand-in (tests/_standin.py) raises what CuPy 14 raises for these calls (seen on
a real GPU). minpy's answer (minpy/core/execute.py): NumPy's value with one counted,
warned fallback naming CuPy's error; NumPy's own error where NumPy rejects the call
too (no fallback); CuPy's error under policy 'only_gpu'. Also: astype(casting=) stays
on the device (checked as NumPy does), and linalg runs under CuPy's
``errstate(linalg='raise')`` so a singular matrix raises LinAlgError.
"""
import importlib
import sys
import types
import warnings

import numpy
import pytest

import minpy
from minpy.dispatch import stats

import _standin
from _standin import standin_gpu  # noqa: F401
from _dispatch_checks import gpu_array, on_gpu


def _fallbacks():
    return stats()["fallbacks"]


def _one_fallback(call, name, match):
    """``call()`` warns once (naming ``name`` and CuPy's error ``match``) and counts one
    fallback of ``name``; returns its result."""
    with pytest.warns(RuntimeWarning, match=match) as rec:
        r = call()
    assert len([w for w in rec if name in str(w.message)]) == 1
    assert _fallbacks() == {name: 1}
    return r


def _value(x):
    return x.asnumpy() if isinstance(x, minpy.Array) else numpy.asarray(x)


# name, the call on minpy (built from gpu arrays), NumPy's call, CuPy's error (regex)
def _cases():
    a23 = numpy.arange(6.0).reshape(2, 3)
    v3 = numpy.array([1.0, 2.0, 3.0])
    return [
        ("ndarray.astype",
         lambda: gpu_array(v3).astype(numpy.float32, casting="same_value"),
         lambda: v3.astype(numpy.float32, casting="same_value"), "casting=.same_value."),
        ("choose", lambda: minpy.choose(gpu_array([0, 1, 0], numpy.int64),
                                        [gpu_array(v3), gpu_array(-v3)]),
         lambda: numpy.choose([0, 1, 0], [v3, -v3]), "has no attribute 'shape'"),
        ("pad", lambda: minpy.pad(gpu_array(v3), 1, constant_values=gpu_array(7.0)),
         lambda: numpy.pad(v3, 1, constant_values=7.0), "Implicit conversion"),
        ("pad", lambda: minpy.pad(gpu_array(v3), 1, mode="median"),
         lambda: numpy.pad(v3, 1, mode="median"), "mode 'median' is not supported"),
        ("linalg.cross", lambda: minpy.linalg.cross(gpu_array(a23), gpu_array(v3)),
         lambda: numpy.linalg.cross(a23, v3), "must have the same shape"),
        ("ediff1d", lambda: minpy.ediff1d(gpu_array(v3), to_end=[9.0, 8.0]),
         lambda: numpy.ediff1d(v3, to_end=[9.0, 8.0]), "`to_end` should be of type"),
        ("ediff1d", lambda: minpy.ediff1d(gpu_array(v3), to_begin=0.5),
         lambda: numpy.ediff1d(v3, to_begin=0.5), "`to_begin` should be of type"),
    ]


_CASES = _cases()


@pytest.mark.parametrize("case", range(len(_CASES)),
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_refused_call_reruns_on_host(standin_gpu, case):
    name, call, ref, match = _CASES[case]
    r = _one_fallback(call, name, f"standin raised \\w+: .*{match}")
    want = ref()
    if isinstance(want, (list, tuple)):
        assert len(r) == len(want)
        for g, w in zip(r, want):
            numpy.testing.assert_array_equal(_value(g), w)
    else:
        numpy.testing.assert_array_equal(_value(r), want)
        assert _value(r).dtype == want.dtype


def test_add_at_complex_reruns_on_host_and_writes_back(standin_gpu):
    a = gpu_array([1 + 1j, 2, 3], numpy.complex128)
    _one_fallback(lambda: minpy.add.at(a, gpu_array([0, 0, 2], numpy.int64), 1j),
                  "add.at", "cupy.add.at only supports")
    assert on_gpu(a)
    numpy.testing.assert_array_equal(a.asnumpy(), [1 + 3j, 2, 3 + 1j])
    b = gpu_array([1.0, 2, 3])                         # float64: CuPy runs it
    minpy.add.at(b, gpu_array([0, 0], numpy.int64), 1.0)
    numpy.testing.assert_array_equal(b.asnumpy(), [3.0, 2, 3])
    assert _fallbacks() == {"add.at": 1}


def test_refused_call_numpy_rejects_too_raises_numpys_error(standin_gpu):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="must be .arrays of. 3-dimensional vectors"):
            # CuPy: "x1 and x2 must have the same shape"; NumPy: not 3-vectors (4-vectors:
            # 2-vectors are refused before CuPy runs under NumPy 2.5, which rejects them)
            minpy.linalg.cross(gpu_array([[1.0, 2.0, 3.0, 4.0]]),
                               gpu_array([1.0, 2.0, 3.0, 4.0]))
    assert _fallbacks() == {}


def test_refused_call_under_only_gpu_raises_cupys_error(standin_gpu):
    g = gpu_array([1.0, 2.0, 3.0])
    with minpy.policy("only_gpu"):
        with pytest.raises(AttributeError, match="has no attribute 'shape'"):
            minpy.choose(gpu_array([0, 1, 0], numpy.int64), [g, -g])
        with pytest.raises(ValueError, match="mode 'median' is not supported"):
            minpy.pad(g, 1, mode="median")
    assert _fallbacks() == {}


def test_where_of_a_python_bool_and_meshgrid_of_2d_inputs_stay_on_the_device(standin_gpu):
    """CuPy refuses both (``'bool' object has no attribute 'astype'``, "input has to be
    1d"); minpy hands CuPy an array condition and flattened inputs, as NumPy reads them."""
    a23, v3 = numpy.arange(6.0).reshape(2, 3), numpy.array([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = minpy.where(True, gpu_array(v3), gpu_array(-v3))
        assert on_gpu(r)
        numpy.testing.assert_array_equal(r.asnumpy(), numpy.where(True, v3, -v3))
        for ind in ("xy", "ij"):
            got = minpy.meshgrid(gpu_array(a23), gpu_array(v3), indexing=ind)
            want = numpy.meshgrid(a23, v3, indexing=ind)
            assert len(got) == len(want) and all(map(on_gpu, got))
            for g, w in zip(got, want):
                numpy.testing.assert_array_equal(g.asnumpy(), w)
    assert _fallbacks() == {}


def test_minpys_own_attribute_error_is_not_hidden(standin_gpu, monkeypatch):
    """An AttributeError raised outside the backend's code is minpy's bug: raised."""
    from minpy.core import ops

    def broken(xp, x, key):
        return x.no_such_attribute
    monkeypatch.setattr(ops.GETITEM, "forward", broken)
    g = gpu_array([1.0, 2.0])
    with pytest.raises(AttributeError, match="no_such_attribute"):
        g[minpy.array([0], ctx=minpy.gpu(0))]
    assert _fallbacks() == {}


def test_runtime_and_memory_errors_are_not_caught(standin_gpu, monkeypatch):
    """CUDA runtime errors (RuntimeError) and out-of-memory (MemoryError) propagate."""
    for err in (RuntimeError("cudaErrorIllegalAddress"), MemoryError("out of memory")):
        def boom(*a, _err=err, **k):
            raise _err
        monkeypatch.setattr(standin_gpu, "lookup", lambda q, _f=boom: _f)
        with pytest.raises(type(err)):
            minpy.exp(gpu_array([1.0]))
        monkeypatch.undo()
    assert _fallbacks() == {}


# ------------------------------------------------------------ astype(casting=)
def test_astype_casting_stays_on_the_device(standin_gpu):
    g = gpu_array([1.5, -2.5, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for casting in ("unsafe", "same_kind", "safe"):
            r = g.astype(numpy.float64 if casting == "safe" else numpy.float32,
                         casting=casting)
            assert on_gpu(r)
        r = g.astype(numpy.int32)                        # the default: 'unsafe'
        assert on_gpu(r) and r.asnumpy().tolist() == [1, -2, 3]
    assert _fallbacks() == {}


@pytest.mark.parametrize("casting", ["safe", "same_kind", "no", "equiv"])
def test_astype_casting_refused_as_numpy(standin_gpu, casting):
    g = gpu_array([1.5, -2.5])
    with pytest.raises(TypeError) as got:
        g.astype(numpy.int32, casting=casting)
    with pytest.raises(TypeError) as want:
        numpy.array([1.5, -2.5]).astype(numpy.int32, casting=casting)
    assert str(got.value) == str(want.value)
    assert _fallbacks() == {}


def test_astype_bad_casting_name_is_numpys_error(standin_gpu):
    with pytest.raises(ValueError, match="casting must be one of"):
        gpu_array([1.0]).astype(numpy.int32, casting="sloppy")
    assert _fallbacks() == {}


def test_standin_astype_refuses_casting_and_subok_as_cupy(standin_gpu):
    x = standin_gpu.from_host(numpy.array([1.0, 2.0]), 0)
    with pytest.raises(TypeError, match="casting is not supported yet"):
        x.astype(numpy.float32, casting="unsafe")
    with pytest.raises(TypeError, match="subok is not supported yet"):
        x.astype(numpy.float32, subok=True)
    assert x.astype(numpy.float32, casting=None, subok=None).dtype == numpy.float32


# ------------------------------------------------------------ linalg errors
_SINGULAR = [[1.0, 2.0], [2.0, 4.0]]


def test_standin_linalg_is_silent_unless_errstate_raise(standin_gpu):
    xp = standin_gpu.xp
    s = standin_gpu.from_host(numpy.array(_SINGULAR), 0)
    r = standin_gpu.to_host(xp.linalg.inv(s))
    assert r.shape == (2, 2) and numpy.isnan(r).all()
    with _standin.errstate(linalg="raise"):
        with pytest.raises(numpy.linalg.LinAlgError):
            xp.linalg.inv(s)


@pytest.mark.parametrize("call", ["inv", "solve", "cholesky", "cholesky_upper"])
def test_singular_matrix_raises_numpys_linalgerror(standin_gpu, call):
    a = gpu_array(_SINGULAR)
    f = {"inv": lambda: minpy.linalg.inv(a),
         "solve": lambda: minpy.linalg.solve(a, gpu_array([1.0, 2.0])),
         "cholesky": lambda: minpy.linalg.cholesky(gpu_array([[1.0, 2.0], [2.0, 1.0]])),
         "cholesky_upper": lambda: minpy.linalg.cholesky(
             gpu_array([[1.0, 2.0], [2.0, 1.0]]), upper=True)}[call]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(numpy.linalg.LinAlgError) as got:
            f()
    assert "cuSOLVER" not in str(got.value)          # NumPy's own message
    assert _fallbacks() == {}
    ok = minpy.linalg.inv(gpu_array([[2.0, 0.0], [0.0, 4.0]]))
    assert on_gpu(ok) and ok.asnumpy().tolist() == [[0.5, 0.0], [0.0, 0.25]]


def test_cupy_backend_runs_linalg_under_errstate_raise(monkeypatch):
    """CupyBackend (with a fake ``cupy``/``cupyx``): its linalg functions run under
    ``cupyx.errstate(linalg='raise')``, other functions as they are."""
    seen = []

    class _ErrState:
        def __init__(self, **kw):
            self.kw = kw

        def __enter__(self):
            seen.append(("enter", self.kw))

        def __exit__(self, *exc):
            seen.append(("exit", self.kw))

    def inv(a):
        seen.append(("inv", a))
        return a

    def exp(a):
        seen.append(("exp", a))
        return a
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "14.2.0"
    cupy.ndarray = type("ndarray", (), {})
    cupy.linalg = types.SimpleNamespace(inv=inv)
    cupy.exp = exp
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(CUDARuntimeError=Exception))
    cupyx = types.ModuleType("cupyx")
    cupyx.errstate = _ErrState
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.delitem(sys.modules, "minpy.dispatch.cupy_backend", raising=False)
    # where the real CuPy backend was imported (MINPY_TEST_DEVICE=cupy), the package holds
    # it as an attribute, which ``from minpy.dispatch import cupy_backend`` would return
    # without importing: stand for it here too, so the test is the same on the CPU
    monkeypatch.setattr(minpy.dispatch, "cupy_backend", types.ModuleType("real_backend"),
                        raising=False)
    # import_module reads sys.modules only: the module is run anew over the fake cupy
    # (and bound to the package, which monkeypatch restores)
    cupy_backend = importlib.import_module("minpy.dispatch.cupy_backend")
    assert cupy_backend.cupy is cupy
    try:
        b = cupy_backend.CupyBackend()
        assert b.lookup("linalg.inv") is b.lookup("linalg.inv")       # cached
        assert b.lookup("linalg.inv")(1) == 1
        assert seen == [("enter", {"linalg": "raise"}), ("inv", 1), ("exit", {"linalg": "raise"})]
        seen.clear()
        assert b.lookup("exp")(2) == 2 and seen == [("exp", 2)]
        body = b.checked("linalg.cholesky", lambda a: seen.append(("body", a)))
        seen.clear()
        body(3)
        assert [s[0] for s in seen] == ["enter", "body", "exit"]
        assert b.checked("exp", exp) is exp
        assert b.own_modules == ("cupy", "cupyx", "cupy_backends")
    finally:
        sys.modules.pop("minpy.dispatch.cupy_backend", None)


def test_raised_inside_reads_the_last_frame(standin_gpu):
    try:
        standin_gpu.xp.where(True, standin_gpu.from_host(numpy.ones(1), 0), 0.0)
    except AttributeError as e:
        assert standin_gpu.raised_inside(e)
    try:
        None.astype
    except AttributeError as e:
        assert not standin_gpu.raised_inside(e)
    assert not standin_gpu.raised_inside(AttributeError("never raised"))


def test_refused_call_result_is_placed_on_the_gpu(standin_gpu):
    r = _one_fallback(lambda: minpy.ediff1d(gpu_array([1.0, 4.0]), to_end=[0.0]), "ediff1d",
                      "to_end")
    assert on_gpu(r)          # placed where the call was headed, as any fallback
