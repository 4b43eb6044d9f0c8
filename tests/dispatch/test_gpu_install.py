"""Installing and finding the GPU half: the ``gpu`` extras, ``detect_cupy``'s probes of the
CUDA libraries, ``MINPY_DEVICE``, and the install commands the errors name.

CuPy is faked: a module run from FAKE_CUPY (in-process through ``sys.modules``, or as a
``cupy`` package on PYTHONPATH for ``import minpy`` in a subprocess) that computes with
NumPy and fails the libraries named in ``FAIL`` as CuPy does when one is not installed.
"""
import importlib.machinery
import os
import pathlib
import re
import subprocess
import sys
import tomllib
import types
import warnings

import pytest

import minpy
from minpy.dispatch import detect

ROOT = pathlib.Path(__file__).resolve().parent.parents[1]

FAKE_CUPY = '''
import os
import numpy

__version__ = "14.2.0"
FAIL = set(filter(None, os.environ.get("FAKE_CUPY_FAIL", "").split(",")))
DEVICES = int(os.environ.get("FAKE_CUPY_DEVICES", "1"))
DRIVER = int(os.environ.get("FAKE_CUPY_DRIVER", "13000"))
RUNTIME = 13020
ndarray = numpy.ndarray


def _lib(name, soname):
    if name in FAIL:
        raise RuntimeError(f"CuPy failed to load {soname}: OSError: {soname}: "
                           "cannot open shared object file: No such file or directory")


class _Runtime:
    class CUDARuntimeError(RuntimeError):
        def __init__(self, status):
            super().__init__(f"cudaError {status}")
            self.status = status

    def driverGetVersion(self):
        return DRIVER

    def runtimeGetVersion(self):
        return RUNTIME

    def getDeviceCount(self):
        if "driver" in FAIL:
            raise self.CUDARuntimeError(35)
        if DEVICES == 0:
            raise self.CUDARuntimeError(100)
        return DEVICES


class _Cuda:
    runtime = _Runtime()


cuda = _Cuda()


def asarray(x):
    return numpy.asarray(x)


def asnumpy(x):
    return numpy.asarray(x)


def ElementwiseKernel(in_params, out_params, operation, name):
    _lib("NVRTC", "libnvrtc.so.13")
    expr = operation.split("=", 1)[1].rstrip(";")
    return lambda x: eval(expr, {"x": numpy.asarray(x)})


def matmul(a, b):
    _lib("cuBLAS", "libcublas.so.13")
    if "wrong" in FAIL:
        return numpy.matmul(a, b) + 1
    return numpy.matmul(a, b)


class random:
    class RandomState:
        def __init__(self, seed):
            _lib("cuRAND", "libcurand.so.10")
            self._r = numpy.random.RandomState(seed)

        def random_sample(self, n):
            return self._r.random_sample(n)


class linalg:
    @staticmethod
    def solve(a, b):
        _lib("cuSOLVER", "libcusolver.so.12")
        return numpy.linalg.solve(a, b)


class fft:
    @staticmethod
    def fft(x):
        _lib("cuFFT", "libcufft.so.12")
        return numpy.fft.fft(x)
'''


def fake_cupy(*fail, devices=1, driver=13000):
    """A fake ``cupy`` module failing the libraries ``fail``."""
    mod = types.ModuleType("cupy")
    mod.__spec__ = importlib.machinery.ModuleSpec("cupy", None)
    exec(compile(FAKE_CUPY, "<fake cupy>", "exec"), mod.__dict__)
    mod.FAIL, mod.DEVICES, mod.DRIVER = set(fail), devices, driver
    return mod


@pytest.fixture
def fresh(monkeypatch):
    """detect_cupy with no warning given yet and MINPY_DEVICE unset; returns a function
    installing a fake cupy."""
    monkeypatch.setattr(detect, "_warned", set())
    monkeypatch.setattr(detect, "_last", {"problem": None})
    monkeypatch.delenv("MINPY_DEVICE", raising=False)

    def install(*fail, **kw):
        monkeypatch.setitem(sys.modules, "cupy", fake_cupy(*fail, **kw))
    return install


def detect_warnings():
    """detect_cupy()'s result and the GPUWarnings it gave."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        result = minpy.dispatch.detect_cupy()
    return result, [str(x.message) for x in w if issubclass(x.category, detect.GPUWarning)]


LIBS = {"NVRTC": "elementwise kernel", "cuBLAS": "matmul", "cuRAND": "minpy.random",
        "cuSOLVER": "minpy.linalg", "cuFFT": "minpy.fft"}


@pytest.mark.parametrize("lib", list(LIBS))
def test_a_missing_library_is_named_with_the_command(fresh, lib):
    fresh(lib)
    before = minpy.dispatch.gpu_backend()
    result, warned = detect_warnings()
    assert result is None and minpy.dispatch.gpu_backend() is before
    [message] = warned
    assert f"{lib} (" in message and LIBS[lib] in message
    assert "cannot open shared object file" in message      # CuPy's own error, kept
    assert 'pip install "cupy-cuda13x[ctk]"' in message       # the fake is a CUDA 13 CuPy
    assert '(in a minpy checkout: pip install -e ".[gpu-cuda13]")' in message
    assert "MINPY_DEVICE=cpu" in message
    others = set(LIBS) - {lib}
    assert not any(f"{o} (" in message for o in others)
    assert detect.gpu_problem() in message


def test_only_the_missing_libraries_are_named(fresh):
    fresh("cuRAND", "cuFFT")
    _, [message] = detect_warnings()
    assert "cuRAND (" in message and "cuFFT (" in message
    assert "cuBLAS" not in message and "NVRTC" not in message


def test_a_wrong_answer_fails_the_probe(fresh):
    fresh("wrong")
    result, [message] = detect_warnings()
    assert result is None and "cuBLAS (" in message and "matmul returned" in message


def test_the_warning_is_given_once(fresh):
    fresh("cuBLAS")
    assert len(detect_warnings()[1]) == 1
    assert detect_warnings()[1] == []


def test_cuda_12_cupy_names_the_cuda_12_wheel(fresh):
    fresh("cuBLAS")
    sys.modules["cupy"].RUNTIME = 12080
    _, [message] = detect_warnings()
    assert ('pip install "cupy-cuda12x[ctk]" '
            '(in a minpy checkout: pip install -e ".[gpu]")') in message


@pytest.mark.parametrize("kw", [dict(devices=0), dict(driver=0)], ids=["no device", "no driver"])
def test_no_device_or_no_driver_is_quiet(fresh, kw):
    fresh(**kw)
    assert detect_warnings() == (None, [])
    assert "CuPy 14.2.0" in detect.gpu_problem()


def test_a_driver_error_warns_with_both_commands(fresh):
    fresh("driver")
    _, [message] = detect_warnings()
    assert "CUDA fails" in message and "update the NVIDIA driver" in message
    assert 'pip install "cupy-cuda12x[ctk]"' in message
    assert 'pip install "cupy-cuda13x[ctk]"' in message


def test_device_gpu_raises_the_reason(fresh, monkeypatch):
    fresh("cuSOLVER")
    monkeypatch.setenv("MINPY_DEVICE", "gpu")
    with pytest.raises(RuntimeError, match=r"MINPY_DEVICE=gpu .*cuSOLVER .*cupy-cuda13x\[ctk\]"):
        minpy.dispatch.detect_cupy()


def test_device_cpu_does_not_look(fresh, monkeypatch):
    fresh("cuBLAS")
    monkeypatch.setenv("MINPY_DEVICE", "CPU")
    monkeypatch.setattr(detect, "probe", None)        # calling it would fail the test
    assert detect_warnings() == (None, [])
    assert detect.gpu_problem() == "MINPY_DEVICE=cpu"


def test_device_unknown_value_is_refused(fresh, monkeypatch):
    monkeypatch.setenv("MINPY_DEVICE", "cuda")
    with pytest.raises(ValueError, match="MINPY_DEVICE='cuda' is not one of auto, cpu, gpu"):
        minpy.dispatch.detect_cupy()


def test_without_cupy_the_problem_names_the_extras(fresh, monkeypatch):
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: None)
    assert detect_warnings() == (None, [])
    assert detect.gpu_problem() == ('CuPy is not installed: pip install "cupy-cuda12x[ctk]" '
                                    '(CUDA 12) or pip install "cupy-cuda13x[ctk]" (CUDA 13)')


def _clean_env(**extra):
    """os.environ without MINPY_* and FAKE_CUPY_* variables, plus ``extra``, with this
    checkout on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINPY_", "FAKE_CUPY"))}
    env.update(extra, PYTHONPATH=str(ROOT))
    return env


def _import_minpy(tmp_path, env, code):
    """Run ``code`` after ``import minpy`` with the fake cupy package on the path."""
    (tmp_path / "cupy").mkdir(exist_ok=True)
    (tmp_path / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    full = _clean_env(**env)
    full["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    return subprocess.run([sys.executable, "-W", "always::RuntimeWarning", "-c",
                           "import sys, minpy\n" + code], env=full, capture_output=True,
                          text=True, timeout=120)


def test_import_minpy_installs_a_working_cupy(tmp_path):
    r = _import_minpy(tmp_path, {}, "print(minpy.dispatch.gpu_backend().name)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["cupy"] and "GPUWarning" not in r.stderr


def test_import_minpy_with_device_cpu_never_imports_cupy(tmp_path):
    r = _import_minpy(tmp_path, {"MINPY_DEVICE": "cpu"},
                      "print(minpy.dispatch.gpu_backend(), 'cupy' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["None", "False"]


def test_import_minpy_with_a_missing_library_warns_and_stays_on_the_cpu(tmp_path):
    r = _import_minpy(tmp_path, {"FAKE_CUPY_FAIL": "cuBLAS"},
                      "print(minpy.dispatch.gpu_backend(), minpy.ones(2).device)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "None"
    assert r.stderr.count("GPUWarning") == 1 and 'pip install "cupy-cuda13x[ctk]"' in r.stderr


def test_gpu_extras_are_binary_wheels_with_the_cuda_libraries():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert extras["gpu"] == ["cupy-cuda12x[ctk]>=14"]
    assert extras["gpu-cuda13"] == ["cupy-cuda13x[ctk]>=14"]
    assert not any(r.split("[")[0].split(">")[0].strip() == "cupy"
                   for reqs in extras.values() for r in reqs)     # the source package


@pytest.fixture
def no_gpu():
    """No GPU backend installed (the previous one restored after)."""
    previous = minpy.dispatch.set_gpu_backend(None)
    yield
    minpy.dispatch.set_gpu_backend(previous)


def test_gpu_context_without_gpu_says_what_to_run(no_gpu):
    with pytest.raises(RuntimeError, match=r'pip install "cupy-cuda12x\[ctk\]"; '
                                           r"minpy.dispatch.gpu_problem\(\) says why"):
        minpy.zeros(2, device="gpu")


# one word of a pip command: a quoted requirement, an option, or a bare package name
_PIP_WORD = r'(?:"[^"]+"|-e|[A-Za-z][A-Za-z0-9_.-]*(?:\[[a-z0-9,-]+\])?)'


def pip_commands(text):
    """The argument lists of the ``pip install`` commands in ``text``."""
    return [re.findall(_PIP_WORD, m.group(1)) for m in
            re.finditer(rf"pip install((?: {_PIP_WORD})+)", text)]


def test_pip_commands_are_parsed_as_a_shell_would_split_them():
    assert pip_commands('needs it: pip install mpi4py mpich (or pip install -e ".[dist]")') == \
        [["mpi4py", "mpich"], ["-e", '".[dist]"']]
    assert pip_commands("the ``pip install`` that brings it") == []


def test_optional_dependency_errors_say_what_to_run():
    """Every ``pip install`` in the package installs something that works: a package
    that one of minpy's extras requires, or an extra of the checkout (``-e ".[x]"``).
    PyPI's ``minpy`` is the unrelated original (0.3.4), so ``pip install "minpy[x]"``
    would install or downgrade to it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    packages = {re.split(r"[\[<>=!~ ]", r, maxsplit=1)[0].lower()
                for reqs in extras.values() for r in reqs}
    commands = [(path.name, args) for path in (ROOT / "minpy").rglob("*.py")
                for args in pip_commands(path.read_text())]
    assert len(commands) >= 12
    for name, args in commands:
        assert "minpy" not in " ".join(args), (name, args)
        if args[0] == "-e":
            extra = re.fullmatch(r'"\.\[([a-z0-9-]+|\{[^}]+\})\]"', args[1])
            assert extra and (extra[1] in extras or extra[1].startswith("{")), (name, args)
            continue
        for arg in args:
            requirement = arg.strip('"')
            assert arg == requirement or "[" in requirement, (name, arg)  # quote only extras
            name_only = requirement.split("[")[0].lower()
            assert name_only in packages or name_only == "{wheel}", (name, arg)  # f-string


def test_bench_gpu_quick_without_a_gpu_says_so():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--quick"],
                       env=_clean_env(MINPY_DEVICE="cpu"), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "minpy-gpu: absent (MINPY_DEVICE=cpu)" in r.stdout


def test_bench_gpu_quick_on_the_standin_times_every_case():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--quick",
                        "--standin"], env=_clean_env(MINPY_DEVICE="cpu"), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line for line in r.stdout.splitlines() if "minpy-gpu (stand-in)  " in line]
    assert [row.split("  ")[0].split(",")[0].split(" ")[0] for row in rows] == \
        ["matmul", "exp(x)*y+sin(x)", "x", "per-op", "MLP", "LeNet"]
    assert "error" not in r.stdout and "absent" not in "".join(rows)


def test_ci_gpu_script_parses():
    r = subprocess.run(["bash", "-n", str(ROOT / ".ci" / "gpu")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
