"""Runtime-compiled elementwise fusion: the IR, NumPy reference, numba and CuPy kernels.

A :class:`Program` is a DAG of elementwise instructions over ``n_inputs``
arrays (NumPy broadcasting) and scalar constants.  ``evaluate`` runs it one
ufunc per instruction with exactly NumPy's semantics (the reference);
``compile_program`` turns it, for given input dtypes and shapes, into a
:class:`Kernel` that computes every output in one pass over memory:

- CPU (numba): the instructions are grouped into *levels*.  Arithmetic,
  comparisons, ``where`` and casts are compiled into one numba loop per level
  (generated Python source, written under the cache directory so that numba's
  on-disk cache works across processes); transcendentals (``exp``, ``tanh``,
  ``log`` ...) stay NumPy ufunc calls, because NumPy's SIMD versions beat
  numba's scalar libm calls here (measured: ``tanh`` over 10M float32, NumPy
  1.8 ms, numba 52 ms; ``exp`` 3.3 ms vs 8.6 ms; see
  ``benchmarks/bench_fusion.py``).  With more than one level the work runs in
  chunks of :data:`CHUNK` elements whose intermediates stay in cache.  Large
  problems are split over a small thread pool (the compiled loops release the
  GIL, as NumPy's ufuncs do); small ones run on the calling thread.
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

__all__ = ["UNARY", "BINARY", "TERNARY", "CAST", "Program", "result_dtypes", "evaluate",
           "compile_program", "Kernel", "cuda_source", "numba_available", "cache_dir",
           "NUMPY_SIDE", "CHUNK", "PARALLEL_MIN"]

#: unary op names (NumPy ufunc names, plus ``sigmoid`` = 1 / (1 + exp(-x)) and
#: ``relu`` = maximum(x, 0), computed the way the symbol ops compute them)
UNARY = frozenset(["negative", "positive", "exp", "exp2", "log", "log2", "log10", "tanh",
                   "sqrt", "square", "abs", "sigmoid", "relu", "reciprocal", "sign", "log1p",
                   "expm1", "sin", "cos", "floor", "ceil"])
BINARY = frozenset(["add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
                    "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
                    "logaddexp"])
TERNARY = frozenset(["where"])
CAST = "astype"
_MACROS = {"sigmoid", "relu"}
#: ops always run as NumPy ufuncs inside a CPU kernel (NumPy's SIMD versions win)
NUMPY_SIDE = frozenset(["exp", "exp2", "log", "log2", "log10", "tanh", "log1p", "expm1", "sin",
                        "cos", "logaddexp"])
CHUNK = 1 << 16              # elements per chunk of a multi-level kernel (measured: 1 << 14
#                              is 2x slower at 10M: per-chunk Python overhead; L2-resident)
PARALLEL_MIN = 1 << 20       # below this many elements a kernel runs on the calling thread
_CMP = {"greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=",
        "equal": "==", "not_equal": "!="}
_ARITH = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}


# ---------------------------------------------------------------------- the IR
def _const_tag(v):
    if isinstance(v, (bool, numpy.bool_)):
        return "bool"
    if isinstance(v, numpy.generic):
        return v.dtype.str
    if isinstance(v, (int, float, complex)):
        return type(v).__name__
    raise TypeError(f"fusion.Program: a constant must be a Python or NumPy scalar, "
                    f"got {type(v).__name__}")


class Program:
    """A DAG of elementwise instructions.

    Args:
        n_inputs: number of array inputs.
        instrs: list of ``(op_name, operands)`` (``op_name`` in :data:`UNARY`,
            :data:`BINARY`, :data:`TERNARY`) or ``("astype", (operand,), dtype)``;
            an operand is ``("in", k)``, ``("t", j)`` (the result of instruction
            ``j`` before this one) or ``("c", scalar)`` (Python or NumPy scalar;
            Python scalars are weak, NEP 50).
        outputs: list of operands (usually ``("t", j)``).

    Attributes:
        key: hashable, equal for equal programs (for caching).
        skey: the key without constant values (programs differing only in
            constants share compiled kernels).
        consts: the constant values in order of appearance.
    Raises:
        ValueError / TypeError naming the bad instruction.
    """

    __slots__ = ("n_inputs", "instrs", "outputs", "key", "skey", "consts", "_low")

    def __init__(self, n_inputs, instrs, outputs):
        self.n_inputs = int(n_inputs)
        self.instrs, consts, key, skey = [], [], [], []

        def norm(op, j, where):
            if not (isinstance(op, tuple) and len(op) == 2):
                raise ValueError(f"fusion.Program: {where}: operand {op!r} is not "
                                 "('in', k), ('t', j) or ('c', scalar)")
            kind, v = op
            if kind == "in" and isinstance(v, int) and 0 <= v < self.n_inputs:
                return op, op, op
            if kind == "t" and isinstance(v, int) and 0 <= v < j:
                return op, op, op
            if kind == "c":
                tag = _const_tag(v)
                consts.append(v)
                return op, ("c", tag, v), ("c", tag)
            raise ValueError(f"fusion.Program: {where}: bad operand {op!r} (inputs 0.."
                             f"{self.n_inputs - 1}, temporaries before {j})")
        for j, ins in enumerate(instrs):
            name, ops = ins[0], tuple(ins[1])
            arity = (1 if name in UNARY or name == CAST else 2 if name in BINARY
                     else 3 if name in TERNARY else None)
            if arity is None:
                raise ValueError(f"fusion.Program: instruction {j}: unknown op {name!r}")
            if len(ops) != arity or len(ins) != (3 if name == CAST else 2):
                raise ValueError(f"fusion.Program: instruction {j} ({name}) takes {arity} "
                                 f"operand(s){' and a dtype' if name == CAST else ''}, got "
                                 f"{ins!r}")
            triples = [norm(o, j, f"instruction {j} ({name})") for o in ops]
            extra = (numpy.dtype(ins[2]),) if name == CAST else ()
            self.instrs.append((name, tuple(t[0] for t in triples)) + extra)
            key.append((name, tuple(t[1] for t in triples)) + tuple(str(e) for e in extra))
            skey.append((name, tuple(t[2] for t in triples)) + tuple(str(e) for e in extra))
        if not outputs:
            raise ValueError("fusion.Program: at least one output is needed")
        outs = [norm(o, len(self.instrs), "outputs") for o in outputs]
        self.outputs = [t[0] for t in outs]
        self.consts = tuple(consts)
        self.key = (self.n_inputs, tuple(key), tuple(t[1] for t in outs))
        self.skey = (self.n_inputs, tuple(skey), tuple(t[2] for t in outs))
        self._low = None

    def __repr__(self):
        return f"<fusion.Program {len(self.instrs)} instrs, {self.n_inputs} inputs>"


# ----------------------------------------------------------- lowering and types
def _lower(program):
    """Macros expanded, dead instructions dropped.

    Returns ``(instrs, outputs)``: instrs ``(op, operands[, dtype])`` where an
    operand is ``("in", k)``, ``("t", j)`` (lowered index), ``("c", i)`` (index
    into ``program.consts``) or ``("k", literal)`` (a literal of a macro).
    """
    low, where_of, ci = [], [], 0

    def opnd(o):
        nonlocal ci
        if o[0] == "t":
            return where_of[o[1]]
        if o[0] == "c":
            ci += 1
            return ("c", ci - 1)
        return o
    for ins in program.instrs:
        name, ops = ins[0], [opnd(o) for o in ins[1]]
        if name == "sigmoid":    # as the symbol op: negative, exp, +1, reciprocal
            low.append(("negative", (ops[0],)))
            low.append(("exp", (("t", len(low) - 1),)))
            low.append(("add", (("t", len(low) - 1), ("k", 1))))
            low.append(("reciprocal", (("t", len(low) - 1),)))
        elif name == "relu":
            low.append(("maximum", (ops[0], ("k", 0))))
        else:
            low.append((name, tuple(ops)) + tuple(ins[2:]))
        where_of.append(("t", len(low) - 1))
    outs = [opnd(o) for o in program.outputs]
    live, stack = set(), [o[1] for o in outs if o[0] == "t"]
    while stack:
        j = stack.pop()
        if j not in live:
            live.add(j)
            stack.extend(o[1] for o in low[j][1] if o[0] == "t")
    renum, kept = {}, []
    for j, ins in enumerate(low):
        if j in live:
            renum[j] = len(kept)
            ops = tuple(("t", renum[o[1]]) if o[0] == "t" else o for o in ins[1])
            kept.append((ins[0], ops) + tuple(ins[2:]))
    outs = [("t", renum[o[1]]) if o[0] == "t" else o for o in outs]
    return kept, outs


def _lowered(program):
    if program._low is None:
        program._low = _lower(program)
    return program._low


_typed_cache = {}


def _typed(program, in_dtypes):
    key = (program.skey, tuple(numpy.dtype(d).str for d in in_dtypes))
    t = _typed_cache.get(key)
    if t is None:
        t = _typed_cache[key] = _types(_lowered(program)[0], in_dtypes, program.consts)
    return t


def _operand_type(o, dts, consts):
    kind, v = o
    if kind in ("in", "t"):
        return dts[kind][v]
    val = consts[v] if kind == "c" else v
    if isinstance(val, (bool, numpy.bool_)):
        return numpy.dtype(bool)
    if isinstance(val, numpy.generic):
        return val.dtype
    return type(val)          # int / float / complex: weak (NEP 50)


def _example(t):
    return t(0) if isinstance(t, type) else numpy.zeros((), t)


def _types(low, in_dtypes, consts):
    """Per lowered instruction: (loop input types, result dtype)."""
    dts = {"in": [numpy.dtype(d) for d in in_dtypes], "t": []}
    out = []
    for j, ins in enumerate(low):
        name, ops = ins[0], ins[1]
        ts = [_operand_type(o, dts, consts) for o in ops]
        try:
            if name == CAST:
                loop = (ts[0], ins[2])
            elif name == "where":
                r = numpy.result_type(*[_example(t) for t in ts[1:]])
                loop = (numpy.dtype(bool), r, r, r)
            else:
                loop = getattr(numpy, name).resolve_dtypes(tuple(ts) + (None,))
        except (TypeError, ValueError) as e:
            raise TypeError(f"fusion: instruction {j} ({name}) has no NumPy loop for operand "
                            f"types {[getattr(t, '__name__', str(t)) for t in ts]}: {e}") \
                from None
        out.append((tuple(loop[:-1]), numpy.dtype(loop[-1])))
        dts["t"].append(numpy.dtype(loop[-1]))
    return out


def result_dtypes(program, in_dtypes):
    """NumPy's result dtype of each output of ``program`` for inputs of ``in_dtypes``.

    Python scalar constants are weak (NEP 50); an output that is a constant
    has the constant's NumPy dtype.

    Returns:
        list of numpy.dtype, one per output.
    Raises:
        ValueError: wrong number of dtypes; TypeError: an instruction has no
        NumPy loop for its operand types.
    See also numpy.result_type.
    """
    if len(in_dtypes) != program.n_inputs:
        raise ValueError(f"fusion.result_dtypes: {len(in_dtypes)} dtypes for a program of "
                         f"{program.n_inputs} inputs")
    low, outs = _lowered(program)
    types = _typed(program, in_dtypes)
    res = []
    for o in outs:
        if o[0] == "t":
            res.append(types[o[1]][1])
        elif o[0] == "in":
            res.append(numpy.dtype(in_dtypes[o[1]]))
        else:
            res.append(numpy.asarray(program.consts[o[1]]).dtype)
    return res


# ------------------------------------------------------------------- reference
def _apply(xp, ins, vals, out=None):
    name = ins[0]
    if name == CAST:
        v = xp.asarray(vals[0]).astype(ins[2])
        if out is not None:
            out[...] = v
            return out
        return v
    if name == "where":
        v = xp.where(*vals)
        if out is not None:
            xp.copyto(out, v)
            return out
        return v
    f = getattr(xp, name)
    return f(*vals) if out is None else f(*vals, out=out)


def evaluate(program, inputs, xp=numpy, outs=None):
    """Run ``program`` unfused: one ``xp`` ufunc per instruction (the reference).

    Args:
        program: a :class:`Program`.
        inputs: ``n_inputs`` arrays (numpy or cupy) that broadcast together.
        xp: ``numpy`` or ``cupy``.
        outs: optional arrays to write the outputs into (``same_kind`` casting);
            an out may be the very array of an input (results as NumPy's).
    Returns:
        list of output arrays (``outs`` when given).
    See also numpy.ufunc.
    """
    if len(inputs) != program.n_inputs:
        raise ValueError(f"fusion.evaluate: {len(inputs)} inputs for a program of "
                         f"{program.n_inputs}")
    low, oouts = _lowered(program)
    consts = program.consts
    direct = {}
    if outs is not None:
        if len(outs) != len(oouts):
            raise ValueError(f"fusion.evaluate: {len(outs)} outs for {len(oouts)} outputs")
        # an output written as soon as computed must not be an input read later
        free = [not any(xp.may_share_memory(o, a) for a in inputs) for o in outs]
        types = _typed(program, [a.dtype for a in inputs])
        for k, o in enumerate(oouts):
            if o[0] == "t" and free[k] and o[1] not in direct and \
                    outs[k].dtype == types[o[1]][1]:
                direct[o[1]] = k
    vals = []
    for j, ins in enumerate(low):
        args = [inputs[o[1]] if o[0] == "in" else vals[o[1]] if o[0] == "t"
                else consts[o[1]] if o[0] == "c" else o[1] for o in ins[1]]
        k = direct.get(j)
        if k is not None:
            shp = numpy.broadcast_shapes(*[numpy.shape(a) for a in args])
            if tuple(outs[k].shape) == shp:
                vals.append(_apply(xp, ins, args, outs[k]))
                continue
            del direct[j]
        vals.append(_apply(xp, ins, args))
    res = [inputs[o[1]] if o[0] == "in" else vals[o[1]] if o[0] == "t" else consts[o[1]]
           for o in oouts]
    if outs is None:
        return [xp.asarray(r) for r in res]
    # inputs handed through as outputs are read before any out is written
    res = [xp.array(r, copy=True) if o[0] == "in" and any(xp.may_share_memory(r, x)
                                                        for x in outs) else r
           for r, o in zip(res, oouts)]
    for k, (r, o) in enumerate(zip(res, oouts)):
        if not (o[0] == "t" and direct.get(o[1]) == k):
            xp.copyto(outs[k], r, casting="same_kind")
    return list(outs)


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


# ---------------------------------------------------------------- broadcasting
def _pattern(in_shapes, out_shape, where="compile_program"):
    """Collapse ``out_shape`` and the inputs' broadcasting into the fewest dims.

    Returns ``(dims, full)``: the collapsed extents, and per input a tuple of
    bools (True: the input spans that collapsed dim).
    """
    out_shape = tuple(int(d) for d in out_shape)
    r = len(out_shape)
    masks = []
    for k, s in enumerate(in_shapes):
        s = tuple(s)
        if len(s) > r or any(a != 1 and a != b for a, b in zip(s[::-1], out_shape[::-1])):
            raise ValueError(f"fusion.{where}: input {k} of shape {s} does not broadcast to "
                             f"the output shape {out_shape}")
        s = (1,) * (r - len(s)) + s
        masks.append([a != 1 for a in s])
    keep = [d for d in range(r) if out_shape[d] != 1]
    dims, full = [], [[] for _ in in_shapes]
    prev = None
    for d in keep:
        col = tuple(m[d] for m in masks)
        if col == prev:
            dims[-1] *= out_shape[d]
        else:
            dims.append(out_shape[d])
            for k, f in enumerate(full):
                f.append(col[k])
            prev = col
    if not dims:
        dims = [1]
        full = [[True] for _ in in_shapes]
    return tuple(dims), tuple(tuple(f) for f in full)


# ------------------------------------------------------------- numba codegen
_NP_NAMES = {numpy.dtype(t): "np." + numpy.dtype(t).name for t in (
    numpy.float32, numpy.float64, numpy.int8, numpy.int16, numpy.int32, numpy.int64,
    numpy.uint8, numpy.uint16, numpy.uint32, numpy.uint64)}


def _nb_supported(name, loop_in, out_t):
    """Can this instruction be compiled into the numba loop with NumPy's semantics?"""
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
        if self.numba_ok and any(lv.numba for lv in self.order):
            self._codegen(program)

    def _codegen(self, program):
        m = self.m
        idx = ", ".join(f"i{d}" for d in range(m))
        src = ["import numpy as np", "from numba import njit", ""]
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
        ins = [(rng.random(s) + 0.5).astype(d) if d.kind in "fc" else
               numpy.ones(s, d) for s, d in zip(self.in_shapes, self.in_dtypes)]
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
        if self.size >= PARALLEL_MIN and nt > 1 and n0 >= nt:
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


# ------------------------------------------------------------------------ CuPy
_C_TYPES = {"float32": "float", "float64": "double", "int8": "signed char",
            "int16": "short", "int32": "int", "int64": "long long", "uint8": "unsigned char",
            "uint16": "unsigned short", "uint32": "unsigned int",
            "uint64": "unsigned long long", "bool": "bool"}
_CUDA_FN = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
            "tanh": "tanh", "sqrt": "sqrt", "log1p": "log1p", "expm1": "expm1", "sin": "sin",
            "cos": "cos", "floor": "floor", "ceil": "ceil"}


def _cuda_fn(name, t):
    return _CUDA_FN[name] + ("f" if t == numpy.dtype(numpy.float32) else "")


def _c_cast(expr, frm, to):
    if frm == to:
        return expr
    return f"(({_C_TYPES[to.name]})({expr}))"


def cuda_source(program, in_dtypes):
    """The ``cupy.ElementwiseKernel`` pieces of ``program`` for ``in_dtypes``.

    Returns:
        ``(in_params, out_params, body, name)``: typed parameters (inputs
        ``x0..``, then constants ``c0..``), outputs ``y0..``, the CUDA C body
        (each instruction in NumPy's loop dtype), and a name unique to the
        program structure and dtypes.
    """
    low, louts = _lowered(program)
    types = _typed(program, in_dtypes)
    in_dtypes = [numpy.dtype(d) for d in in_dtypes]
    consts = program.consts
    ctype = [numpy.asarray(v).dtype if not isinstance(v, numpy.generic) else v.dtype
             for v in consts]
    params = [f"{d.name} x{k}" for k, d in enumerate(in_dtypes)] + \
        [f"{t.name} c{i}" for i, t in enumerate(ctype)]
    outs_t = result_dtypes(program, in_dtypes)
    out_params = ", ".join(f"{t.name} y{k}" for k, t in enumerate(outs_t))

    def val(o, to):
        kind, v = o
        if kind == "in":
            return _c_cast(f"x{v}", in_dtypes[v], to)
        if kind == "t":
            return _c_cast(f"t{v}", types[v][1], to)
        if kind == "c":
            return _c_cast(f"c{v}", ctype[v], to)
        return _c_cast(repr(v), None, to)
    body = []
    for j, ins in enumerate(low):
        name, (loop_in, out_t) = ins[0], types[j]
        if name == "where":
            a = [val(ins[1][0], numpy.dtype(bool))] + [val(o, t) for o, t in
                                                       zip(ins[1][1:], loop_in[1:])]
        elif name == CAST:
            a = [val(ins[1][0], ins[2])]
        else:
            a = [val(o, t) for o, t in zip(ins[1], loop_in)]
        ct = _C_TYPES[out_t.name]
        if name in _ARITH:
            e = f"{a[0]} {_ARITH[name]} {a[1]}"
        elif name in _CMP:
            e = f"{a[0]} {_CMP[name]} {a[1]}"
        elif name == "maximum":
            e = f"({a[0]} >= {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]}"
        elif name == "minimum":
            e = f"({a[0]} <= {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]}"
        elif name == "power":
            fn = "powf" if out_t == numpy.dtype(numpy.float32) else "pow"
            e = f"{fn}({a[0]}, {a[1]})"
        elif name == "logaddexp":
            e = (f"{a[0]} == {a[1]} ? {a[0]} + ({ct})0.6931471805599453 : "
                 f"(({a[0]} > {a[1]}) ? {a[0]} + {_cuda_fn('log1p', out_t)}"
                 f"({_cuda_fn('exp', out_t)}({a[1]} - {a[0]})) : {a[1]} + "
                 f"{_cuda_fn('log1p', out_t)}({_cuda_fn('exp', out_t)}({a[0]} - {a[1]})))")
        elif name == "where":
            e = f"{a[0]} ? {a[1]} : {a[2]}"
        elif name in ("negative",):
            e = f"-{a[0]}"
        elif name in ("positive", CAST):
            e = a[0]
        elif name == "square":
            e = f"{a[0]} * {a[0]}"
        elif name == "abs":
            e = f"{a[0]} < 0 ? -{a[0]} : {a[0]}"
        elif name == "reciprocal":
            e = f"({ct})1 / {a[0]}"
        elif name == "sign":
            e = (f"{a[0]} > 0 ? ({ct})1 : ({a[0]} < 0 ? ({ct})-1 : "
                 f"({a[0]} == 0 ? ({ct})0 : {a[0]}))")
        else:
            e = f"{_cuda_fn(name, out_t)}({a[0]})"
        body.append(f"{ct} t{j} = ({ct})({e});")
    for k, o in enumerate(louts):
        body.append(f"y{k} = {val(o, outs_t[k])};")
    key = hashlib.sha1(repr((program.skey, [d.str for d in in_dtypes])).encode()).hexdigest()
    return ", ".join(params), out_params, "\n".join(body), f"minpy_fused_{key[:12]}"


_cupy_kernels = {}


class CupyKernel:
    """A Program as one ``cupy.ElementwiseKernel`` (CuPy broadcasts; NVRTC compiles
    once per program structure and dtypes, CuPy caches the binary).
    ``wins`` is True: one launch replaces one per instruction."""

    wins = True
    fused = True

    def __init__(self, program, in_dtypes, in_shapes, out_shape):
        self.program = program
        self.in_dtypes = [numpy.dtype(d) for d in in_dtypes]
        self.in_shapes = [tuple(s) for s in in_shapes]
        self.out_shape = tuple(out_shape)
        _pattern(self.in_shapes, self.out_shape)
        self.out_dtypes = result_dtypes(program, self.in_dtypes)
        key = (program.skey, tuple(d.str for d in self.in_dtypes))
        self.source = cuda_source(program, self.in_dtypes)
        self._key = key

    def _kernel(self):
        k = _cupy_kernels.get(self._key)
        if k is None:
            import cupy      # optional: only reached with CuPy arrays
            k = _cupy_kernels[self._key] = cupy.ElementwiseKernel(*self.source)
        return k

    def __call__(self, inputs, outs):
        self._kernel()(*inputs, *self.program.consts, *outs)

    run = __call__


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
        an instruction without a NumPy loop for its operand dtypes.
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
