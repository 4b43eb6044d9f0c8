"""Compile CUDA C++ as CuPy would, without a GPU: the helper of ``test_cuda_kernels``.

The compiler: NVRTC (``libnvrtc.so*`` through ctypes, from ``$CUDA_PATH`` /
``$CUDA_HOME``, ``/usr/local/cuda*/lib64`` or the ``nvidia-cuda-nvrtc(-cu12)``
wheel), else the toolkit's ``nvcc -ptx``. Neither needs a device or a driver:
both stop at PTX for :data:`ARCH`.

The source: :func:`elementwise_source` expands ``cupy.ElementwiseKernel(in_params,
out_params, operation, name, preamble)`` for given argument dtypes into the
translation unit CuPy hands NVRTC (``_get_elementwise_kernel_code`` in
``cupy/_core/_kernel.pyx``, CuPy 14): CuPy's headers first (``cupy/complex.cuh``,
``cupy/carray.cuh``, ``cupy/atomics.cuh``, ``cupy/math_constants.h``), the
``#include "cupy/float16.cuh"`` a float16 argument brings, the ``typedef`` of each
type placeholder, the ``CArray``/``CIndexer`` parameters (``const`` for inputs),
the per-element references ``const T &x = _raw_x[_ind.get()];`` and the
``CUPY_FOR`` loop; compiled with CuPy's options ``--std=c++17 -ftz=true``.

CuPy's headers: CuPy's own ``cupy/_core/include`` when CuPy is installed (found
without importing it) and the compiler is NVRTC, else the stand-ins of :data:`STANDIN_HEADERS`: the same
names with the interface the kernels use -- ``float16`` with CuPy's conversions
(implicit from ``float``, explicit from the other scalars, implicit to
``float``), ``complex`` = ``thrust::complex`` from the toolkit's CCCL (CuPy
ships its own copy of thrust's complex, with ``log1p``, ``expm1``, ``log2``,
``min`` and ``max`` added), and minimal ``CArray``, ``CIndexer`` and
``CUPY_FOR``.

The numbers: :func:`run_on_host` runs operation bodies on the CPU (nvcc and g++,
with the stand-ins, whose ``float16`` is host code too), for comparison with NumPy.
"""
import concurrent.futures
import ctypes
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy

__all__ = ["ARCH", "CompileError", "Compiler", "find_compiler", "elementwise_source",
           "full_source", "compile_all", "typename", "host_compiler", "run_on_host",
           "STANDIN_HEADERS"]

ARCH = "compute_80"
OPTIONS = ("--std=c++17", "-ftz=true")      # CuPy's, besides its include dirs and -arch
_CUPY_HEADERS = ("cupy/complex.cuh", "cupy/carray.cuh", "cupy/atomics.cuh",
                 "cupy/math_constants.h")

# CuPy's ``_scalar._typenames_base``: the C type of each dtype
_TYPENAMES = {"float64": "double", "float32": "float", "float16": "float16",
              "complex128": "thrust::complex<double>", "complex64": "thrust::complex<float>",
              "int64": "long long", "int32": "int", "int16": "short", "int8": "signed char",
              "uint64": "unsigned long long", "uint32": "unsigned int",
              "uint16": "unsigned short", "uint8": "unsigned char", "bool": "bool"}
_FLOAT16_DECL = '#include "cupy/float16.cuh"'


class CompileError(Exception):
    """A source that does not compile; ``log`` is the compiler's."""

    def __init__(self, log, source=""):
        super().__init__(log)
        self.log, self.source = log, source


# ------------------------------------------------------------------ the compilers
def _cuda_roots():
    roots = [os.environ.get(v) for v in ("CUDA_PATH", "CUDA_HOME")]
    roots += ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    out = []
    for r in roots:
        if r and os.path.isdir(r) and os.path.realpath(r) not in map(os.path.realpath, out):
            out.append(r)
    return out


def _wheel_dirs(*parts):
    """``site-packages/nvidia/<parts>`` folders on ``sys.path`` (NVIDIA's pip wheels)."""
    return [d for d in (os.path.join(p, "nvidia", *parts) for p in sys.path if p)
            if os.path.isdir(d)]


def _toolkit_includes(root):
    inc = os.path.join(root, "include")
    return [d for d in (os.path.join(inc, "cccl"), inc) if os.path.isdir(d)] \
        if os.path.isfile(os.path.join(inc, "cuda_fp16.h")) else []


def _nvrtc_libraries():
    """(library path, include dirs) for every libnvrtc found, toolkits first."""
    out = []
    for root in _cuda_roots():
        for sub in ("lib64", "lib"):
            for lib in sorted(glob.glob(os.path.join(root, sub, "libnvrtc.so*"))):
                out.append((lib, _toolkit_includes(root)))
    for d in _wheel_dirs("cuda_nvrtc", "lib"):
        for lib in sorted(glob.glob(os.path.join(d, "libnvrtc.so*"))):
            inc = _wheel_dirs("cuda_runtime", "include") + _wheel_dirs("cuda_cccl", "include")
            if not inc:          # as CuPy (cuda.pathfinder): a toolkit's headers
                inc = next((i for i in map(_toolkit_includes, _cuda_roots()) if i), [])
            out.append((lib, inc))
    return [(lib, inc) for lib, inc in out if "builtins" not in lib and ".alt." not in lib]


def _nvcc():
    for root in _cuda_roots():
        path = os.path.join(root, "bin", "nvcc")
        if os.access(path, os.X_OK):
            return path, _toolkit_includes(root)
    path = shutil.which("nvcc")
    if path:
        return path, _toolkit_includes(os.path.dirname(os.path.dirname(path)))
    return None, []


def _cupy_include():
    """CuPy's header folder when CuPy is installed (located, not imported: importing
    CuPy needs a CUDA runtime)."""
    try:
        spec = importlib.util.find_spec("cupy")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    inc = os.path.join(list(spec.submodule_search_locations)[0], "_core", "include")
    return inc if os.path.isfile(os.path.join(inc, "cupy", "carray.cuh")) else None


class Compiler:
    """One device compiler: ``kind`` is ``"nvrtc"`` or ``"nvcc"``; :meth:`compile`."""

    def __init__(self, kind, path, includes):
        self.kind, self.path, self.includes = kind, path, list(includes)
        # CuPy's headers are written for NVRTC (nvcc would also see its bundled CCCL
        # next to the toolkit's): nvcc gets the stand-ins
        self.cupy_include = _cupy_include() if kind == "nvrtc" else None
        if kind == "nvrtc":
            self._lib = ctypes.CDLL(path)
            for fn in ("nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                       "nvrtcGetProgramLog", "nvrtcDestroyProgram", "nvrtcVersion"):
                getattr(self._lib, fn).restype = ctypes.c_int
            self._lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            major, minor = ctypes.c_int(), ctypes.c_int()
            self._check(self._lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
            self.version = f"{major.value}.{minor.value}"
        else:
            out = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 check=True).stdout
            m = re.search(r"release ([0-9.]+)", out)
            self.version = m.group(1) if m else "?"

    def __repr__(self):
        headers = self.cupy_include or "stand-in CuPy headers"
        return f"<{self.kind} {self.version} ({self.path}); {headers}>"

    def _check(self, rc):
        if rc != 0:
            raise RuntimeError(f"NVRTC: {self._lib.nvrtcGetErrorString(rc).decode()}")

    def options(self, headers_dir=None):
        """The option list: CuPy's include dirs (CuPy's own headers or the stand-ins in
        ``headers_dir``), the toolkit's, :data:`OPTIONS` and the architecture."""
        opts = []
        if self.cupy_include:
            cccl = os.path.join(self.cupy_include, "cupy", "_cccl")
            opts += [f"-I{os.path.join(cccl, d)}" for d in ("cub", "thrust", "libcudacxx")
                     if os.path.isdir(os.path.join(cccl, d))]
            opts.append(f"-I{self.cupy_include}")
        elif headers_dir:
            opts.append(f"-I{headers_dir}")
        opts += [f"-I{d}" for d in self.includes] + list(OPTIONS)
        if self.kind == "nvrtc":
            return opts + [f"--gpu-architecture={ARCH}", "--device-as-default-execution-space"]
        return opts + [f"-arch={ARCH}"]

    def compile(self, source, name="kern.cu"):
        """PTX of ``source``, compiled with :meth:`options` (with CuPy's headers or
        the stand-ins).

        Raises:
            CompileError: with the compiler's log.
        """
        with tempfile.TemporaryDirectory(prefix="minpy-nvrtc-") as tmp:
            hdir = None
            if not self.cupy_include:
                hdir = os.path.join(tmp, "include")
                for rel, text in STANDIN_HEADERS.items():
                    os.makedirs(os.path.dirname(os.path.join(hdir, rel)), exist_ok=True)
                    with open(os.path.join(hdir, rel), "w") as f:
                        f.write(text)
            opts = self.options(hdir)
            if self.kind == "nvrtc":
                return self._nvrtc(source, name, opts)
            cu = os.path.join(tmp, name)
            with open(cu, "w") as f:
                f.write(source)
            out = os.path.join(tmp, "kern.ptx")
            r = subprocess.run([self.path, "-ptx", *opts, cu, "-o", out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise CompileError((r.stdout + r.stderr).replace(cu, name), source)
            with open(out) as f:
                return f.read()

    def _nvrtc(self, source, name, opts):
        lib, prog = self._lib, ctypes.c_void_p()
        self._check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(),
                                           0, None, None))
        try:
            arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
            rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
            size = ctypes.c_size_t()
            self._check(lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)))
            buf = ctypes.create_string_buffer(size.value)
            self._check(lib.nvrtcGetProgramLog(prog, buf))
            log = buf.value.decode(errors="replace")
            if rc != 0:
                raise CompileError(log, source)
            return log
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


_FOUND = {}


_SMOKE = 'extern "C" __global__ void minpy_smoke(float* x) { x[threadIdx.x] += 1.0f; }\n'


def _works(kind, path, inc, why):
    """A :class:`Compiler` that compiled a trivial kernel, else None (``why`` gets
    the reason)."""
    try:
        c = Compiler(kind, path, inc)
        c.compile(_SMOKE)
        return c
    except (OSError, AttributeError, RuntimeError, subprocess.CalledProcessError) as e:
        why.append(f"{path}: {e}")
    except CompileError as e:
        why.append(f"{path} cannot compile a trivial kernel: {e.log.strip()[:300]}")
    return None


def find_compiler():
    """``(compiler, why)``: the first working :class:`Compiler` (NVRTC preferred, then
    nvcc) or None, and why the others were not used.
    ``MINPY_TEST_CUDA_COMPILER=nvcc`` or ``nvrtc`` picks one kind."""
    if "c" in _FOUND:
        return _FOUND["c"]
    want = os.environ.get("MINPY_TEST_CUDA_COMPILER", "")
    found, why = None, []
    if want in ("", "nvrtc"):
        libs = _nvrtc_libraries()
        if not libs:
            why.append("no libnvrtc.so* (CUDA_PATH, CUDA_HOME, /usr/local/cuda*/lib64, "
                       "the nvidia-cuda-nvrtc wheels)")
        for lib, inc in libs:
            found = _works("nvrtc", lib, inc, why)
            if found:
                break
    if found is None and want in ("", "nvcc"):
        path, inc = _nvcc()
        if path:
            found = _works("nvcc", path, inc, why)
        else:
            why.append("no nvcc (CUDA_PATH, CUDA_HOME, /usr/local/cuda*/bin, PATH)")
    _FOUND["c"] = found, "; ".join(why)
    return _FOUND["c"]


# ------------------------------------------------- CuPy's ElementwiseKernel source
def typename(dtype):
    """CuPy's C type name of ``dtype`` (``cupy._core._scalar.get_typename``)."""
    return _TYPENAMES[numpy.dtype(dtype).name]


def _params(s, is_const):
    out = []
    for p in (x for x in s.split(",") if x.strip()):
        words = p.split()
        if len(words) < 2 or any(w != "raw" for w in words[:-2]):
            raise ValueError(f"elementwise_source: bad parameter {p!r}")
        t, name = words[-2:]
        out.append((name, t, "raw" in words[:-2], is_const))
    return out


def elementwise_source(in_params, out_params, operation, name, arg_dtypes, preamble="",
                       scalars=(), ndim=1):
    """The CUDA source CuPy compiles for ``ElementwiseKernel(in_params, out_params,
    operation, name, preamble=preamble)`` called with arrays (``ndim``-d, C-contiguous,
    32-bit indexing) of ``arg_dtypes`` (``{param name: dtype}``), the parameters
    named in ``scalars`` passed as scalars.

    Returns:
        ``(type_decls, body)``: the ``#include`` lines the dtypes bring, and the rest
        (typedefs, preamble and kernel); the full source is CuPy's headers, then
        ``type_decls``, then ``body`` (see :func:`full_source`).
    Raises:
        TypeError: as CuPy's ``_decide_params_type``: a placeholder bound to two dtypes.
    """
    params = _params(in_params, True) + _params(out_params, False)
    typemap, decls = {}, set()
    for pname, t, _, _ in params:
        dt = numpy.dtype(arg_dtypes[pname])
        if len(t) == 1:
            if typemap.setdefault(t, dt) != dt:
                raise TypeError(f"elementwise_source: {t} is {typemap[t]} and {dt}")
        elif numpy.dtype(t) != dt:
            raise TypeError(f"elementwise_source: {pname} is {t}, got {dt}")
    c_args, refs = [], []
    for pname, t, raw, is_const in params:
        dt = numpy.dtype(arg_dtypes[pname])
        if dt == numpy.float16:
            decls.add(_FLOAT16_DECL)
        ctype = t if len(t) == 1 else typename(t)
        const = "const " if is_const else ""
        if pname in scalars:
            c_args.append(f"{const}{typename(dt)} {pname}")
        else:
            c_args.append(f"{const}CArray<{typename(dt)}, {ndim}, 1, 1> "
                          f"{pname if raw else '_raw_' + pname}")
            if not raw:
                refs.append(f"{const}{ctype} &{pname} = _raw_{pname}[_ind.get()];")
    c_args.append(f"CIndexer<{ndim}, 1> _ind")
    typedefs = "".join(f"typedef {typename(d)} {t};\n" for t, d in sorted(typemap.items()))
    op = "\n".join(refs + [operation])
    # CuPy's string.Template, whitespace included (the sources compare equal)
    body = (f"{typedefs}\n    {preamble}\n"
            f'    extern "C" __global__ void {name}({", ".join(c_args)}) {{\n'
            f"      ;\n      #pragma unroll 1\n      CUPY_FOR(i, _ind.size()) {{\n"
            f"        _ind.set(i);\n        {op};\n      }}\n      ;\n    }}\n    ")
    return "\n".join(sorted(decls)) + ("\n\n" if decls else ""), body


def full_source(type_decls, body):
    """One kernel's translation unit as CuPy compiles it."""
    return "".join(f"#include <{h}>\n" for h in _CUPY_HEADERS) + "\n    " + type_decls + body


def _batch(part):
    decls = sorted({d for _, (td, _) in part for d in td.splitlines() if d.strip()})
    src = "".join(f"#include <{h}>\n" for h in _CUPY_HEADERS) + "\n".join(decls) + "\n"
    for k, (_, (_, body)) in enumerate(part):
        # C linkage names are global: one name per kernel
        body = re.sub(r'(extern "C" __global__ void )(\w+)\(', rf"\g<1>\g<2>_k{k}(", body)
        src += f"namespace minpy_k{k} {{\n{body}}}\n"
    return src


def _compile_part(compiler, part, failed):
    """Compile ``part`` as one unit; when it fails, halve it until each failing kernel
    is compiled alone (its own log)."""
    try:
        if len(part) == 1:
            compiler.compile(full_source(*part[0][1]))
        else:
            compiler.compile(_batch(part))
    except CompileError as e:
        if len(part) == 1:
            failed[part[0][0]] = e.log
        else:
            _compile_part(compiler, part[:len(part) // 2], failed)
            _compile_part(compiler, part[len(part) // 2:], failed)


def compile_all(compiler, kernels, chunk=250, workers=2):
    """Compile many :func:`elementwise_source` kernels: batched, each kernel in a
    namespace of its own (its typedefs stay local), ``chunk`` per translation unit,
    ``workers`` units at a time.

    Args:
        kernels: ``{label: (type_decls, body)}``.
    Returns:
        ``{label: compiler log}`` for the kernels that do not compile (a failing batch
        is halved until each failing kernel is compiled alone: every log is the
        kernel's own).
    """
    failed, items = {}, list(kernels.items())
    parts = [items[s:s + chunk] for s in range(0, len(items), chunk)]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(_compile_part, compiler, p, failed) for p in parts]:
            f.result()
    return failed


# ------------------------------------------------------------ bodies on the host
def host_compiler():
    """The ``nvcc`` that :func:`run_on_host` builds with (it needs the host C++
    compiler too), or None."""
    path, inc = _nvcc()
    return (path, inc) if path and shutil.which("g++") else None


def _align(n):
    return (n + 15) // 16 * 16


def run_on_host(cases):
    """Run elementwise operation bodies on the CPU: each case's ``operation`` in a
    loop over its arrays, as the kernel's loop, compiled by nvcc for the host with
    the stand-in headers (``float16`` and ``thrust::complex`` are host code too).

    Args:
        cases: list of ``(operation, inputs, outputs)``: ``inputs`` ``{name: 1-d
            array}`` (a 1-element array for a scalar parameter: read as a value),
            ``outputs`` ``{name: dtype}``; every array of a case has one length
            (scalars excepted).
    Returns:
        per case, ``{name: array}`` of the outputs.
    Raises:
        CompileError: the harness does not compile.
    """
    found = host_compiler()
    if found is None:
        raise RuntimeError("run_on_host: needs nvcc and g++")
    nvcc, inc = found
    blob, layout, src = bytearray(), [], []
    for k, (op, ins, outs) in enumerate(cases):
        n = max(a.size for a in ins.values())
        decl, refs, places = [], [], {}
        for name, a in list(ins.items()) + [(o, None) for o in outs]:
            dt = numpy.dtype(outs[name]) if a is None else a.dtype
            size = n if a is None else a.size
            off = _align(len(blob))
            blob.extend(b"\0" * (off - len(blob)))
            blob.extend(numpy.ascontiguousarray(a).tobytes() if a is not None
                        else b"\0" * (size * dt.itemsize))
            places[name] = (off, dt, size)
            ct = typename(dt)
            const = "const " if a is not None else ""
            decl.append(f"{const}{ct}* _p_{name} = ({const}{ct}*)(blob + {off});")
            if a is not None and a.size == 1 and n > 1:
                decl.append(f"const {ct} {name} = _p_{name}[0];")
            else:
                refs.append(f"{const}{ct} &{name} = _p_{name}[i];")
        layout.append((n, places, list(outs)))
        src.append(f"void case{k}(char* blob) {{\n  " + "\n  ".join(decl) +
                   f"\n  for (long i = 0; i < {n}; i++) {{\n    " + "\n    ".join(refs) +
                   f"\n    {op};\n  }}\n}}\n")
    calls = "".join(f"  case{k}(blob);\n" for k in range(len(cases)))
    main = ("int main(int argc, char** argv) {\n"
            f"  static char blob[{len(blob) + 16}];\n"
            "  FILE* f = fopen(argv[1], \"rb\"); size_t got = fread(blob, 1, sizeof blob, f);\n"
            "  fclose(f);\n" + calls +
            "  f = fopen(argv[1], \"wb\"); fwrite(blob, 1, got, f); fclose(f);\n"
            "  return 0;\n}\n")
    head = ('#include <cstdio>\n#include <cmath>\n#include "cupy/complex.cuh"\n'
            '#include "cupy/float16.cuh"\n')
    with tempfile.TemporaryDirectory(prefix="minpy-host-") as tmp:
        hdir = os.path.join(tmp, "include")
        for rel, text in STANDIN_HEADERS.items():
            os.makedirs(os.path.dirname(os.path.join(hdir, rel)), exist_ok=True)
            with open(os.path.join(hdir, rel), "w") as f:
                f.write(text)
        cu, exe, data = (os.path.join(tmp, x) for x in ("host.cu", "host", "blob.bin"))
        with open(cu, "w") as f:
            f.write(head + "".join(src) + main)
        r = subprocess.run([nvcc, "-std=c++17", f"-I{hdir}", *[f"-I{d}" for d in inc],
                            cu, "-o", exe], capture_output=True, text=True)
        if r.returncode != 0:
            raise CompileError(r.stdout + r.stderr, head + "".join(src) + main)
        with open(data, "wb") as f:
            f.write(bytes(blob))
        subprocess.run([exe, data], check=True)
        with open(data, "rb") as f:
            out = f.read()
    res = []
    for n, places, outs in layout:
        res.append({o: numpy.frombuffer(out, places[o][1], places[o][2], places[o][0]).copy()
                    for o in outs})
    return res


# -------------------------------------------------------------- stand-in headers
_CARRAY = r"""#pragma once
#include <cuda_fp16.h>
#include <cstddef>
class float16;
#define CUPY_FOR(i, n) \
    for (ptrdiff_t i = static_cast<ptrdiff_t>(blockIdx.x) * blockDim.x + threadIdx.x; \
         i < (n); i += static_cast<ptrdiff_t>(blockDim.x) * gridDim.x)

template <typename T, int _ndim, bool _c_contiguous = false, bool _use_32bit = false>
class CArray {
 private:
  T* data_;
  ptrdiff_t size_, shape_[_ndim], strides_[_ndim];
 public:
  static const int ndim = _ndim;
  __device__ T& operator[](const ptrdiff_t (&idx)[_ndim]) const {
    char* p = reinterpret_cast<char*>(data_);
    for (int d = 0; d < _ndim; d++) p += strides_[d] * idx[d];
    return *reinterpret_cast<T*>(p);
  }
  __device__ T& operator[](ptrdiff_t i) const { return data_[i]; }
  __device__ ptrdiff_t size() const { return size_; }
};

template <int _ndim, bool _use_32bit = false>
class CIndexer {
 private:
  ptrdiff_t size_, shape_[_ndim], index_[_ndim];
 public:
  static const int ndim = _ndim;
  __device__ ptrdiff_t size() const { return size_; }
  __device__ const ptrdiff_t (&get() const)[_ndim] { return index_; }
  __device__ void set(ptrdiff_t i) {
    for (int d = _ndim - 1; d >= 0; d--) { index_[d] = i % shape_[d]; i /= shape_[d]; }
  }
};
"""

_FLOAT16 = r"""#pragma once
#include "cupy/carray.cuh"
#include <cuda_fp16.h>
// the interface of CuPy's float16: implicit from float, explicit from the other
// scalars, implicit to float (so arithmetic happens in float); host and device (CuPy's
// is device only) so that run_on_host can run the kernels' bodies
#define MINPY_HD __host__ __device__
class float16 {
 private:
  __half data_;
 public:
  MINPY_HD float16() {}
  MINPY_HD float16(float v) : data_(__float2half_rn(v)) {}
  explicit MINPY_HD float16(bool v) : data_(__float2half_rn(float(v))) {}
  explicit MINPY_HD float16(double v) : data_(__double2half(v)) {}
  explicit MINPY_HD float16(int v) : data_(__float2half_rn(float(v))) {}
  explicit MINPY_HD float16(unsigned int v) : data_(__float2half_rn(float(v))) {}
  explicit MINPY_HD float16(long long v) : data_(__float2half_rn(float(v))) {}
  explicit MINPY_HD float16(unsigned long long v) : data_(__float2half_rn(float(v))) {}
  explicit MINPY_HD float16(const __half& v) : data_(v) {}
  MINPY_HD operator float() const { return __half2float(data_); }
  float16& operator=(const float16&) = default;
  template <typename T>
  MINPY_HD float16& operator=(const T& rhs) { *this = static_cast<float16>(rhs); return *this; }
  template <typename T>
  MINPY_HD float16& operator+=(const T& rhs) { *this = *this + rhs; return *this; }
  template <typename T>
  MINPY_HD float16& operator-=(const T& rhs) { *this = *this - rhs; return *this; }
  template <typename T>
  MINPY_HD float16& operator*=(const T& rhs) { *this = *this * rhs; return *this; }
  template <typename T>
  MINPY_HD float16& operator/=(const T& rhs) { *this = *this / rhs; return *this; }
  MINPY_HD int isnan() const { return float(*this) != float(*this); }
};
MINPY_HD float16 min(float16 x, float16 y) { return float16(fminf(float(x), float(y))); }
MINPY_HD float16 max(float16 x, float16 y) { return float16(fmaxf(float(x), float(y))); }
MINPY_HD int isnan(float16 x) { return x.isnan(); }
"""

_COMPLEX = r"""#pragma once
#include <thrust/complex.h>
using thrust::complex;
using thrust::conj;
using thrust::arg;
using thrust::exp;
using thrust::log;
using thrust::log10;
using thrust::sin;
using thrust::cos;
using thrust::tan;
using thrust::sinh;
using thrust::cosh;
using thrust::tanh;
using thrust::asinh;
using thrust::acosh;
using thrust::atanh;
using thrust::asin;
using thrust::acos;
using thrust::atan;
"""

#: the stand-ins for CuPy's headers (used when CuPy is not installed)
STANDIN_HEADERS = {
    "cupy/carray.cuh": _CARRAY,
    "cupy/float16.cuh": _FLOAT16,
    "cupy/complex.cuh": _COMPLEX,
    "cupy/atomics.cuh": '#pragma once\n#include "cupy/carray.cuh"\n',
    "cupy/math_constants.h": "#pragma once\n",
}
