"""Finding a usable GPU at ``import minpy``: CuPy, a CUDA device, and the CUDA libraries.

:func:`minpy.dispatch.detect_cupy` installs the CuPy backend only when :func:`check`
finds every CUDA library minpy calls working: a tiny elementwise kernel (NVRTC
compiles every CuPy ufunc), a matmul (cuBLAS), random numbers (cuRAND), a linear solve
(cuSOLVER) and an FFT (cuFFT), each checked against NumPy. CuPy 14's wheels
ship without these libraries, so a machine with only the NVIDIA driver
imports CuPy, counts its devices, and then fails on the first matmul; here it
stays on the CPU instead and warns once, naming what is missing and the
``pip install`` that brings it.

A half-working GPU is not installed with the missing families routed to the
CPU: every ufunc needs NVRTC and every product cuBLAS, and a GPU whose
``random``/``linalg``/``fft`` silently ran on the host would move data across
the bus on each call. One command fixes it; the warning gives it.

``MINPY_DEVICE`` (read by :func:`check`, so at ``import minpy``):
unset, empty or ``auto``: use a GPU when one works; ``cpu``: stay on the CPU
without looking (CuPy is not even imported); ``gpu``: a GPU is required, and
``import minpy`` raises the reason when none works.
"""
import importlib.util
import os
import warnings

import numpy

__all__ = ["check", "gpu_problem", "GPUWarning", "ENV", "install_command", "probe"]

ENV = "MINPY_DEVICE"
MODES = ("auto", "cpu", "gpu")
NO_DEVICE = 100          # cudaErrorNoDevice: a driver but no CUDA device, not worth a warning
# minpy's extra for each CUDA major version of the CuPy wheels
EXTRAS = {12: "gpu", 13: "gpu-cuda13"}


class GPUWarning(RuntimeWarning):
    """CuPy is installed and a CUDA driver is there, but minpy cannot use the GPU."""


_last = {"problem": None}
_warned = set()


def gpu_problem():
    """Why the last :func:`check` found no usable GPU (a message), or None when it found one."""
    return _last["problem"]


def _mode():
    value = os.environ.get(ENV, "").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(f"minpy: {ENV}={os.environ[ENV]!r} is not one of "
                         f"{', '.join(MODES)} (cpu keeps minpy off the GPU)")
    return value


def _wheel(name):
    # importlib.metadata (email, csv, zipfile ...) costs ~10 ms that ``import minpy``
    # need not pay: only the GPU-problem message asks for a wheel's version (issue 27).
    import importlib.metadata
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cuda_major(cupy):
    """The CUDA major version this CuPy was built for (12 when it cannot tell)."""
    try:
        return int(cupy.cuda.runtime.runtimeGetVersion()) // 1000
    except Exception:        # noqa: BLE001  (any failure: fall back to the default wheel)
        return 12


def install_command(cuda_major=12):
    """The exact command that installs CuPy with its CUDA libraries for ``cuda_major``."""
    wheel = f"cupy-cuda{cuda_major}x"
    cmd = f'pip install "{wheel}[ctk]"'
    if cuda_major in EXTRAS:
        cmd += f' (in a minpy checkout: pip install -e ".[{EXTRAS[cuda_major]}]")'
    if _wheel("cupy") is not None:
        # the source package and a wheel both own the cupy module: replace, not add
        cmd = f"pip uninstall cupy && {cmd}"
    return cmd


def _same(what, got, want, rtol=1e-4):
    got = numpy.asarray(got)
    if got.shape != numpy.shape(want) or not numpy.allclose(got, want, rtol=rtol, atol=1e-5):
        raise ValueError(f"{what} returned {got!r}, expected {numpy.asarray(want)!r}")


def _kernel(cp):
    x = numpy.arange(4, dtype=numpy.float32)
    k = cp.ElementwiseKernel("float32 x", "float32 y", "y = 2 * x + 1", "minpy_probe_kernel")
    _same("an elementwise kernel", cp.asnumpy(k(cp.asarray(x))), 2 * x + 1)


def _matmul(cp):
    a = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    b = numpy.arange(6, dtype=numpy.float32).reshape(3, 2)
    _same("matmul", cp.asnumpy(cp.matmul(cp.asarray(a), cp.asarray(b))), a @ b)


def _random(cp):
    r = numpy.asarray(cp.asnumpy(cp.random.RandomState(0).random_sample(8)))
    if r.shape != (8,) or not ((r >= 0) & (r < 1)).all() or numpy.unique(r).size < 2:
        raise ValueError(f"random_sample returned {r!r}")


def _solve(cp):
    a = numpy.array([[3.0, 1.0], [1.0, 2.0]])
    b = numpy.array([9.0, 8.0])
    _same("linalg.solve", cp.asnumpy(cp.linalg.solve(cp.asarray(a), cp.asarray(b))),
          numpy.linalg.solve(a, b))


def _fft(cp):
    x = numpy.arange(8, dtype=numpy.float64)
    _same("fft.fft", cp.asnumpy(cp.fft.fft(cp.asarray(x))), numpy.fft.fft(x))


# (library, what minpy uses it for, probe): each probe raises when the library fails
PROBES = (
    ("NVRTC", "every elementwise kernel: +, exp, where", _kernel),
    ("cuBLAS", "matmul, dot, einsum", _matmul),
    ("cuRAND", "minpy.random", _random),
    ("cuSOLVER", "minpy.linalg: solve, inv, eigh", _solve),
    ("cuFFT", "minpy.fft", _fft),
)


def _first_line(exc):
    text = str(exc).strip().splitlines()
    text = text[0] if text else ""
    return f"{type(exc).__name__}: {text[:300]}"


def probe(cupy):
    """Run the probes on CuPy's current device; ``[(library, use, error text)]`` that failed."""
    failed = []
    for lib, use, check in PROBES:
        try:
            check(cupy)
        except Exception as e:      # noqa: BLE001  (a probe: any failure means unusable)
            failed.append((lib, use, _first_line(e)))
    return failed


def _devices(cupy):
    """``(count, problem, loud)``: the CUDA devices CuPy sees; with none, why, and whether
    that deserves a warning (not for a machine without a driver or a device)."""
    rt = cupy.cuda.runtime
    try:
        if int(rt.driverGetVersion()) == 0:
            return 0, "finds no NVIDIA driver", False
        count = int(rt.getDeviceCount())
    except rt.CUDARuntimeError as e:
        if getattr(e, "status", None) == NO_DEVICE:
            return 0, "sees no CUDA device", False
        return 0, f"CUDA fails: {_first_line(e)}", True
    return count, (None if count else "sees no CUDA device"), False


def _version(cupy):
    return getattr(cupy, "__version__", "?")


def _diagnose():
    """``(message, loud)``: why CuPy cannot run minpy (None when it can), and whether
    that is worth a warning."""
    if importlib.util.find_spec("cupy") is None:
        return ('CuPy is not installed: pip install "cupy-cuda12x[ctk]" (CUDA 12) or '
                'pip install "cupy-cuda13x[ctk]" (CUDA 13)'), False
    try:
        import cupy        # optional dependency, imported only when installed
    except Exception as e:      # noqa: BLE001  (a broken install: report it, stay on the CPU)
        return (f"CuPy is installed but does not import ({_first_line(e)}); "
                f"reinstall it: {install_command(12)}"), True
    count, trouble, loud = _devices(cupy)
    if loud:
        return (f"CuPy {_version(cupy)} is installed but {trouble}; update the NVIDIA "
                f"driver or install the CuPy for its CUDA version: {install_command(12)} "
                f"for CUDA 12, {install_command(13)} for CUDA 13"), True
    if trouble is not None:
        return f"CuPy {_version(cupy)} {trouble}", False
    failed = probe(cupy)
    if failed:
        major = _cuda_major(cupy)
        names = ", ".join(f"{lib} ({use})" for lib, use, _ in failed)
        errors = "; ".join(f"{lib}: {err}" for lib, _, err in failed)
        return (f"CuPy {_version(cupy)} sees {count} CUDA device(s) but cannot use "
                f"{names} [{errors}]. CuPy 14's wheels ship without the CUDA "
                f"libraries; install them with: {install_command(major)}"), True
    return None, False


def check():
    """True when CuPy can run minpy here: it imports, sees a CUDA device, and every CUDA
    library minpy uses works (:data:`PROBES`). :func:`minpy.dispatch.detect_cupy`
    installs the backend on True.

    ``MINPY_DEVICE=cpu``: False without looking (CuPy is not imported). When CuPy is
    installed but unusable (missing CUDA libraries, a driver too old) it warns once
    (:class:`GPUWarning`) with what is missing and the command that installs it;
    :func:`gpu_problem` keeps the reason whenever the answer is False.

    Raises:
        ValueError: ``MINPY_DEVICE`` is not auto, cpu or gpu.
        RuntimeError: ``MINPY_DEVICE=gpu`` and no GPU can be used (the reason).
    """
    mode = _mode()
    if mode == "cpu":
        _last["problem"] = f"{ENV}=cpu"
        return False
    problem, loud = _diagnose()
    _last["problem"] = problem
    if problem is None:
        return True
    if mode == "gpu":
        raise RuntimeError(f"{ENV}=gpu but minpy cannot use a GPU: {problem}")
    message = f"minpy runs on the CPU: {problem}"
    if loud and message not in _warned:
        _warned.add(message)
        warnings.warn(f"{message} (set {ENV}=cpu to silence this)", GPUWarning, stacklevel=3)
    return False
