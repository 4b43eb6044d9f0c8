"""Runtime-compiled elementwise fusion: the IR, NumPy reference, numba and CuPy kernels.

A :class:`Program` is a DAG of elementwise instructions over ``n_inputs``
arrays (NumPy broadcasting) and scalar constants.  ``evaluate`` runs it one
ufunc per instruction with exactly NumPy's semantics (the reference);
``compile_program`` turns it, for given input dtypes and shapes, into a
:class:`Kernel` that computes every output in one pass over memory:

- CPU (numba): the instructions are grouped into *levels*.  Arithmetic,
  comparisons, ``where`` and casts are compiled into one numba loop per level
  (generated Python source, written under the cache directory so that numba's
  on-disk cache works across processes).  ``exp``, ``log`` and ``tanh`` (so
  also ``sigmoid``) of float32/float64 are compiled in too, as the branch-free
  vectorisable functions of :mod:`minpy.fusion.vmath` (float32: within 0.51
  ulp of the true value, so up to 2-3 ulp from NumPy's own float32 ufuncs;
  float64: within 1-2 ulp of NumPy's); numba's ``np.tanh`` would be a scalar
  libm call, ~30x slower than NumPy's SIMD ufunc.  The other transcendentals (``exp2``,
  ``log1p``, ``sin`` ...: :data:`NUMPY_SIDE`) stay NumPy ufunc calls between
  numba levels.  With more than one level the work runs in
  chunks of :data:`CHUNK` elements whose intermediates stay in cache.  Large
  problems are split over a small thread pool (the compiled loops release the
  GIL, as NumPy's ufuncs do); small ones run on the calling thread (the
  threshold is a quarter of :data:`PARALLEL_MIN` for kernels calling vmath).
- GPU (CuPy): one ``cupy.ElementwiseKernel`` whose CUDA body is generated from
  the same Program (:func:`cuda_source`); CuPy does the broadcasting.

Every kernel computes each instruction in NumPy's loop dtype for it
(``ufunc.resolve_dtypes``, NEP 50: Python scalars are weak), so results
equal ``evaluate``'s to float rounding.  Whether the fused kernel is faster
than ``evaluate`` is measured once per (program structure, dtypes, broadcast
pattern, size bucket): :attr:`Kernel.wins`.  Without numba a Kernel runs
``evaluate`` (and never wins).  Constants are kernel arguments, so programs
that differ only in constant values share one compiled kernel.
"""
import contextlib
import hashlib
import importlib.util
import math
import os
import sys
import threading
import time

import numpy

from .cuda import CupyKernel, cuda_source   # noqa: F401 (re-exported)
from .ir import (BINARY, CAST, CHUNK, NUMPY_SIDE,  # noqa: F401 (the IR, re-exported)
                        PARALLEL_MIN, TERNARY, UNARY, Program,
                        _ARITH, _CMP, _apply, _lowered, _pattern, _typed, evaluate,
                        result_dtypes)


# -------------------------------------------------------------------- settings
def cache_dir():
    """Directory of generated kernel sources and numba's cache: env
    ``MINPY_CACHE_DIR``, else ``~/.cache/minpy``; the ``fusion`` folder in it."""
    base = os.environ.get("MINPY_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "minpy")
    return os.path.join(base, "fusion")


_NB = {}


def numba_available():
    """True when numba can be imported (the ``jit`` extra)."""
    if "ok" not in _NB:
        try:
            import numba     # optional dependency, loaded on first use
            _NB["ok"], _NB["numba"] = True, numba
        except ImportError:
            _NB["ok"] = False
    return _NB["ok"]


def _threads():
    env = os.environ.get("MINPY_FUSION_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


_pool = {}
_pool_lock = threading.Lock()


def _executor(n):
    with _pool_lock:
        p = _pool.get(n)
        if p is None:
            from concurrent.futures import ThreadPoolExecutor   # stdlib; only when parallel
            p = _pool[n] = ThreadPoolExecutor(n, thread_name_prefix="minpy-fusion")
        return p


# ------------------------------------------------------------- numba codegen
_NP_NAMES = {numpy.dtype(t): "np." + numpy.dtype(t).name for t in (
    numpy.float32, numpy.float64, numpy.int8, numpy.int16, numpy.int32, numpy.int64,
    numpy.uint8, numpy.uint16, numpy.uint32, numpy.uint64)}


#: transcendentals compiled into numba loops as minpy.fusion.vmath calls
VMATH = frozenset(["exp", "log", "tanh"])
_VM_SUFFIX = {numpy.dtype(numpy.float32): "f32", numpy.dtype(numpy.float64): "f64"}


def _vmath_tag():
    """A hash of vmath.py, written into generated sources: numba's disk cache of a
    kernel does not notice a change in the functions it inlined, a new source does."""
    if "vm" not in _NB:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vmath.py")
        with open(path, "rb") as f:
            _NB["vm"] = hashlib.sha1(f.read()).hexdigest()[:12]
    return _NB["vm"]


def _nb_supported(name, loop_in, out_t):
    """Can this instruction be compiled into the numba loop with NumPy's semantics?"""
    if name in VMATH:
        return out_t in _VM_SUFFIX and loop_in[0] == out_t
    if name in NUMPY_SIDE:
        return False
    ok = [isinstance(t, numpy.dtype) and (t in _NP_NAMES or t == numpy.dtype(bool))
          for t in list(loop_in) + [out_t]]
    if not all(ok):
        return False
    if name in _CMP or name in ("where", CAST):
        return True
    if any(t == numpy.dtype(bool) for t in loop_in):
        return False     # bool arithmetic is logical in NumPy
    if name in ("divide", "power", "reciprocal", "sign", "sqrt", "floor", "ceil"):
        return out_t.kind == "f"
    return True


def _cast(expr, frm, to):
    """numba expression of ``expr`` (of dtype ``frm``) converted to dtype ``to``."""
    if frm == to:
        return expr
    if to == numpy.dtype(bool):
        return f"({expr} != 0)"
    return f"{_NP_NAMES[to]}({expr})"


def _nb_expr(name, args, loop_in, out_t):
    a = args
    if name in _ARITH:
        return _cast(f"({a[0]} {_ARITH[name]} {a[1]})", None, out_t)
    if name in _CMP:
        return f"({a[0]} {_CMP[name]} {a[1]})"
    if name == "maximum":        # NaN propagates, as numpy.maximum
        return f"({a[0]} if ({a[0]} >= {a[1]} or {a[0]} != {a[0]}) else {a[1]})"
    if name == "minimum":
        return f"({a[0]} if ({a[0]} <= {a[1]} or {a[0]} != {a[0]}) else {a[1]})"
    if name == "power":
        return _cast(f"({a[0]} ** {a[1]})", None, out_t)
    if name == "where":
        return f"({a[1]} if {a[0]} else {a[2]})"
    if name == "negative":
        return _cast(f"(-{a[0]})", None, out_t)
    if name == "positive" or name == CAST:
        return a[0]
    if name == "square":
        return _cast(f"({a[0]} * {a[0]})", None, out_t)
    if name == "abs":
        return _cast(f"abs({a[0]})", None, out_t)
    if name in VMATH:
        return f"_vm.{name}_{_VM_SUFFIX[out_t]}({a[0]})"
    if name in ("sqrt", "floor", "ceil"):
        return _cast(f"np.{name}({a[0]})", None, out_t)
    if name == "reciprocal":
        return f"({_NP_NAMES[out_t]}(1) / {a[0]})"
    if name == "sign":
        t = _NP_NAMES[out_t]
        return (f"({t}(1) if {a[0]} > 0 else ({t}(-1) if {a[0]} < 0 else "
                f"({a[0]} if {a[0]} != {a[0]} else {t}(0))))")
    raise AssertionError(name)


class _Level:
    __slots__ = ("index", "numba", "instrs", "fn_name", "args", "fn")

    def __init__(self, index, numba):
        self.index, self.numba, self.instrs = index, numba, []
        self.fn_name, self.args, self.fn = None, None, None


class _Compiled:
    """What is shared by every Kernel of one (structure, dtypes, pattern): the
    levels, the storage of each temporary, and the compiled numba loops."""

    def __init__(self, program, in_dtypes, dims, full):
        self.low, self.louts = _lowered(program)
        self.types = _typed(program, in_dtypes)
        self.in_dtypes = [numpy.dtype(d) for d in in_dtypes]
        self.dims, self.full = dims, full
        self.m = len(dims)
        nb = [_nb_supported(i[0], *t) for i, t in zip(self.low, self.types)]
        level = []
        for j, ins in enumerate(self.low):
            need = 0 if nb[j] else 1
            for o in ins[1]:
                if o[0] == "t":
                    p = level[o[1]]
                    if nb[j]:
                        need = max(need, p if nb[o[1]] else p + 1)
                    else:
                        need = max(need, p + 1 if nb[o[1]] else p)
            level.append(need)
        self.level = level
        self.levels = {}
        for j, lv in enumerate(level):
            self.levels.setdefault(lv, _Level(lv, nb[j])).instrs.append(j)
        self.order = [self.levels[k] for k in sorted(self.levels)]
        # storage: a temporary read at another level, or computed by NumPy, lives in an
        # array: the first output it is, else a chunk buffer
        out_of = {}
        for k, o in enumerate(self.louts):
            if o[0] == "t" and o[1] not in out_of:
                out_of[o[1]] = k
        readers = {}
        for j, ins in enumerate(self.low):
            for o in ins[1]:
                if o[0] == "t":
                    readers.setdefault(o[1], set()).add(level[j])
        self.store, self.nbuf = {}, 0
        for j in range(len(self.low)):
            if j in out_of:
                self.store[j] = ("out", out_of[j])
            elif not nb[j] or readers.get(j, set()) - {level[j]}:
                self.store[j] = ("buf", self.nbuf)
                self.nbuf += 1
        self.buf_dtypes = [None] * self.nbuf
        for j, s in self.store.items():
            if s[0] == "buf":
                self.buf_dtypes[s[1]] = self.types[j][1]
        self.numba_ok = numba_available() and all(
            t in _NP_NAMES or t == numpy.dtype(bool) for t in self.in_dtypes) and all(
            self.types[j][1] in _NP_NAMES or self.types[j][1] == numpy.dtype(bool)
            for j in self.store)
        # vmath calls cost ~1 ns an element: worth threads from a quarter of PARALLEL_MIN
        self.heavy = any(self.low[j][0] in VMATH for lv in self.order if lv.numba
                         for j in lv.instrs)
        self.parallel_min = PARALLEL_MIN // 4 if self.heavy else PARALLEL_MIN
        if self.numba_ok and any(lv.numba for lv in self.order):
            self._codegen(program)

    def _codegen(self, program):
        m = self.m
        idx = ", ".join(f"i{d}" for d in range(m))
        src = ["import numpy as np", "from numba import njit", ""]
        if self.heavy:
            src[2:2] = [f"from minpy.fusion import vmath as _vm   # vmath {_vmath_tag()}"]
        for lv in self.order:
            if not lv.numba:
                continue
            lv.fn_name = f"level{lv.index}"
            body, pre, args, loads, stores, seen = [], [], [], {}, [], set()
            mine = set(lv.instrs)

            def load(o, loop_t, lv=lv):
                kind, v = o
                if kind == "in":
                    name = f"x{v}"
                    if name not in seen:
                        seen.add(name)
                        args.append(("in", v, name))
                        f = self.full[v]
                        if not any(f):
                            pre.append(f"v{name} = {name}[0]")
                        else:
                            sub = ", ".join(f"i{d}" for d in range(m) if f[d])
                            loads[name] = f"v{name} = {name}[{sub}]"
                    t = self.in_dtypes[v]
                    return _cast("v" + name, t, loop_t)
                if kind == "c":
                    name = f"c{v}"
                    if name not in seen:
                        seen.add(name)
                        args.append(("c", v, name))
                    return _cast(name, numpy.asarray(program.consts[v]).dtype, loop_t)
                if kind == "k":
                    return _cast(repr(v), None, loop_t) if loop_t != numpy.dtype(bool) \
                        else repr(bool(v))
                t = self.types[v][1]
                if v in mine:
                    return _cast(f"t{v}", t, loop_t)
                s = self.store[v]
                name = f"o{s[1]}" if s[0] == "out" else f"b{s[1]}"
                if name not in seen:
                    seen.add(name)
                    args.append((s[0], s[1], name))
                loads[name] = f"v{name} = {name}[{idx}]"
                return _cast("v" + name, t, loop_t)
            for j in lv.instrs:
                ins = self.low[j]
                loop_in, out_t = self.types[j]
                if ins[0] == "where":
                    ops = [load(ins[1][0], numpy.dtype(bool))] + \
                        [load(o, t) for o, t in zip(ins[1][1:], loop_in[1:])]
                elif ins[0] == CAST:
                    ops = [_cast(load(ins[1][0], loop_in[0]), loop_in[0], ins[2])]
                else:
                    ops = [load(o, t) for o, t in zip(ins[1], loop_in)]
                body.append(f"t{j} = {_nb_expr(ins[0], ops, loop_in, out_t)}")
                s = self.store.get(j)
                if s is not None:
                    name = f"o{s[1]}" if s[0] == "out" else f"b{s[1]}"
                    if name not in seen:
                        seen.add(name)
                        args.append((s[0], s[1], name))
                    stores.append(f"{name}[{idx}] = t{j}")
            lv.args = args
            sig = ", ".join(["n%d" % d for d in range(m)] + [a[2] for a in args])
            src.append('@njit(nogil=True, cache=True, error_model="numpy")')
            src.append(f"def {lv.fn_name}({sig}):")
            src.extend("    " + p for p in pre)
            ind = "    "
            for d in range(m):
                src.append(f"{ind}for i{d} in range(n{d}):")
                ind += "    "
            src.extend(ind + line for line in list(loads.values()) + body + stores)
            src.append("")
        self.source = "\n".join(src) + "\n"
        mod = _load_source(self.source)
        for lv in self.order:
            if lv.numba:
                lv.fn = getattr(mod, lv.fn_name)


_modules = {}
_mod_lock = threading.Lock()


def _load_source(src):
    """Import generated source from a file in :func:`cache_dir` (numba's disk cache
    needs a real file); where that cannot be written, exec it without disk caching."""
    h = hashlib.sha1(src.encode()).hexdigest()[:20]
    with _mod_lock:
        mod = _modules.get(h)
        if mod is not None:
            return mod
        name = f"minpy_fusion_{h}"
        d = cache_dir()
        path = os.path.join(d, name + ".py")
        try:
            os.makedirs(d, exist_ok=True)
            if not os.path.exists(path):
                tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(src)
                os.replace(tmp, path)
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
        except OSError:
            mod = type(sys)(name)
            exec(compile(src.replace("cache=True", "cache=False"), name, "exec"),
                 mod.__dict__)
        _modules[h] = mod
        return mod


_compiled = {}
_wins = {}


def _bucket(n):
    return max(0, int(n).bit_length() - 1) // 2


class Kernel:
    """A Program compiled for fixed input dtypes and shapes (see module doc).

    ``kernel(inputs, outs)`` writes every output; ``kernel.run(inputs, outs)``
    does the same with the fused loops where :attr:`wins`, else with
    :func:`evaluate`.  Attributes: ``program``, ``in_dtypes``, ``in_shapes``,
    ``out_shape``, ``out_dtypes``, ``fused`` (False: numba missing or the
    dtypes unsupported; calls run ``evaluate``), ``source`` (generated code).
    """

    def __init__(self, program, in_dtypes, in_shapes, out_shape):
        self.program = program
        self.in_dtypes = [numpy.dtype(d) for d in in_dtypes]
        self.in_shapes = [tuple(s) for s in in_shapes]
        self.out_shape = tuple(out_shape)
        self.out_dtypes = result_dtypes(program, self.in_dtypes)
        self.size = math.prod(self.out_shape)
        dims, full = _pattern(self.in_shapes, self.out_shape)
        ckey = (program.skey, tuple(d.str for d in self.in_dtypes), len(dims), full)
        c = _compiled.get(ckey)
        if c is None:
            c = _compiled[ckey] = _Compiled(program, self.in_dtypes, dims, full)
        self._c, self._ckey = c, ckey
        self.dims = dims
        self.fused = c.numba_ok
        self.source = getattr(c, "source", "")
        self._wkey = ckey + (_bucket(self.size),)
        outs = c.louts
        self._multi = len(c.order) > 1 or any(o[0] != "t" for o in outs) or \
            len({o for o in outs}) != len(outs)

    # -------------------------------------------------------------- decision
    @property
    def wins(self):
        """True when the fused kernel beat :func:`evaluate` (measured once per
        structure, dtypes, broadcast pattern and size bucket, on synthetic data)."""
        w = _wins.get(self._wkey)
        if w is None:
            w = _wins[self._wkey] = self.fused and self._measure()
        return w

    def _measure(self):
        rng = numpy.random.default_rng(0)
        # random signs: a kernel whose branches (relu, maximum, where) predict
        # perfectly on one-signed data would measure faster than it runs
        ins = [((rng.random(s) + 0.5) * rng.choice([-1.0, 1.0], s)).astype(d)
               if d.kind in "fc" else numpy.ones(s, d)
               for s, d in zip(self.in_shapes, self.in_dtypes)]
        outs = [numpy.empty(self.out_shape, d) for d in self.out_dtypes]
        with numpy.errstate(all="ignore"):
            self(ins, outs)           # compiles (numba) and warms up
            evaluate(self.program, ins, numpy, outs)
            t_fused = _best(lambda: self(ins, outs))
            t_ref = _best(lambda: evaluate(self.program, ins, numpy, outs))
        self.timings = (t_fused, t_ref)
        return t_fused < t_ref

    def run(self, inputs, outs):
        """Write the outputs with the fused kernel where it wins, else with evaluate."""
        if self.wins:
            self(inputs, outs)
        else:
            evaluate(self.program, inputs, numpy, outs)

    # ------------------------------------------------------------- execution
    def __call__(self, inputs, outs):
        if len(inputs) != len(self.in_shapes) or len(outs) != len(self.out_dtypes):
            raise ValueError(f"fusion.Kernel: {len(inputs)} inputs and {len(outs)} outs "
                             f"for a kernel of {len(self.in_shapes)} and "
                             f"{len(self.out_dtypes)}")
        for k, a in enumerate(inputs):
            if tuple(a.shape) != self.in_shapes[k] or a.dtype != self.in_dtypes[k]:
                raise ValueError(f"fusion.Kernel: input {k} is {tuple(a.shape)} {a.dtype}, "
                                 f"compiled for {self.in_shapes[k]} {self.in_dtypes[k]}")
        for k, o in enumerate(outs):
            if tuple(o.shape) != self.out_shape or o.dtype != self.out_dtypes[k]:
                raise ValueError(f"fusion.Kernel: out {k} is {tuple(o.shape)} {o.dtype}, "
                                 f"expected {self.out_shape} {self.out_dtypes[k]}")
        if not self.fused or self.size == 0:
            if self.size:
                evaluate(self.program, inputs, numpy, outs)
            return
        if not all(o.flags.c_contiguous for o in outs):
            tmp = [numpy.empty(self.out_shape, d) for d in self.out_dtypes]
            self(inputs, tmp)
            for o, t in zip(outs, tmp):
                o[...] = t
            return
        c, dims = self._c, self.dims
        flat, bview = [], []
        for a, f in zip(inputs, c.full):
            a = numpy.ascontiguousarray(a)
            flat.append(a.reshape([d for d, ff in zip(dims, f) if ff] or [1]))
            bview.append(a.reshape([d if ff else 1 for d, ff in zip(dims, f)]))
        ov = [o.reshape(dims) for o in outs]
        safe = self._multi and any(numpy.may_share_memory(o, a) for o in outs for a in inputs)
        n0, nt = dims[0], _threads()
        if self.size >= c.parallel_min and nt > 1 and n0 >= nt:
            cuts = [n0 * i // nt for i in range(nt + 1)]
            pool = _executor(nt - 1)
            futs = [pool.submit(self._part, flat, bview, ov, cuts[i], cuts[i + 1], safe)
                    for i in range(1, nt)]
            self._part(flat, bview, ov, cuts[0], cuts[1], safe)
            for f in futs:
                f.result()
        else:
            self._part(flat, bview, ov, 0, n0, safe)

    def _part(self, flat, bview, ov, lo, hi, safe):
        c = self._c
        inner = self.size // self.dims[0]
        single = len(c.order) == 1 and not safe
        rows = hi - lo if single else max(1, CHUNK // max(inner, 1))
        shape = (min(rows, hi - lo),) + self.dims[1:]
        bufs = [numpy.empty(shape, d) for d in c.buf_dtypes]
        obufs = [numpy.empty(shape, o.dtype) for o in ov] if safe else None
        consts = self.program.consts
        # numba loops follow error_model="numpy" (no warnings); only NumPy levels need this
        quiet = numpy.errstate(all="ignore") if any(not lv.numba for lv in c.order) else \
            contextlib.nullcontext()
        with quiet:
            for r0 in range(lo, hi, rows):
                r1 = min(hi, r0 + rows)
                nr = r1 - r0
                fl = [x[r0:r1] if f[0] else x for x, f in zip(flat, c.full)]
                bv = [x[r0:r1] if f[0] else x for x, f in zip(bview, c.full)]
                bs = [b[:nr] for b in bufs] if nr != shape[0] else bufs
                if safe:
                    os_ = [b[:nr] for b in obufs] if nr != shape[0] else obufs
                else:
                    os_ = [o[r0:r1] for o in ov]
                ext = (nr,) + self.dims[1:]
                for lv in c.order:
                    if lv.numba:
                        args = []
                        for kind, v, _ in lv.args:
                            args.append(fl[v] if kind == "in" else consts[v] if kind == "c"
                                        else os_[v] if kind == "out" else bs[v])
                        lv.fn(*ext, *args)
                    else:
                        for j in lv.instrs:
                            ins = c.low[j]
                            vals = [bv[o[1]] if o[0] == "in" else consts[o[1]] if o[0] == "c"
                                    else o[1] if o[0] == "k" else
                                    (os_ if c.store[o[1]][0] == "out" else bs)[
                                        c.store[o[1]][1]] for o in ins[1]]
                            s = c.store[j]
                            _apply(numpy, ins, vals, (os_ if s[0] == "out" else bs)[s[1]])
                self._finish(c, bv, os_, ov, r0, r1, safe)

    def _finish(self, c, bv, os_, ov, r0, r1, safe):
        """Outputs that are inputs, constants or repeats of another; in safe mode
        (an out aliases an input) every output is written only now."""
        consts = self.program.consts
        vals = []
        for k, o in enumerate(c.louts):
            if o[0] == "t":
                s = c.store[o[1]]
                vals.append(os_[s[1]] if s[1] != k else None)
            elif o[0] == "in":
                vals.append(bv[o[1]].copy() if safe else bv[o[1]])
            else:
                vals.append(consts[o[1]])
        for k, v in enumerate(vals):
            dst = ov[k][r0:r1]
            if v is None:
                if safe:
                    dst[...] = os_[k]
            else:
                numpy.copyto(dst, v, casting="unsafe")


def _best(fn, budget=0.05):
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    reps = max(1, min(50, int(budget / one)))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def compile_program(program, in_dtypes, in_shapes, out_shape, backend_name="numpy"):
    """A :class:`Kernel` computing ``program`` for these input dtypes and shapes.

    Args:
        program: a :class:`Program`.
        in_dtypes, in_shapes: one per input; every shape broadcasts to ``out_shape``.
        out_shape: the shape of every output.
        backend_name: ``"numpy"`` (numba loops; ``evaluate`` without numba) or
            ``"cupy"`` (a ``cupy.ElementwiseKernel``).
    Returns:
        a Kernel (``kernel(inputs, outs)``; ``kernel.wins``; ``kernel.run``).
        Compiled code is cached per program structure, dtypes and broadcast
        pattern (numba's on-disk cache under :func:`cache_dir`).
    Raises:
        ValueError: shapes that do not broadcast to ``out_shape``; TypeError:
        an instruction without a NumPy loop for its operand dtypes, or (backend
        ``"cupy"``) ``fusion_cuda.Unsupported``: a dtype, instruction or constant
        the CUDA kernel cannot compute as NumPy does (run ``evaluate`` instead).
        A CUDA kernel NVRTC rejects warns once and runs ``evaluate`` itself.
    """
    if len(in_dtypes) != program.n_inputs or len(in_shapes) != program.n_inputs:
        raise ValueError(f"fusion.compile_program: the program has {program.n_inputs} "
                         f"inputs, got {len(in_dtypes)} dtypes and {len(in_shapes)} shapes")
    if backend_name == "cupy":
        return CupyKernel(program, in_dtypes, in_shapes, out_shape)
    if backend_name != "numpy":
        raise ValueError(f"fusion.compile_program: backend_name must be 'numpy' or 'cupy', "
                         f"got {backend_name!r}")
    return Kernel(program, in_dtypes, in_shapes, out_shape)
