"""The elementwise fusion IR: :class:`Program`, NumPy's result dtypes, the
reference :func:`evaluate` and broadcasting patterns -- shared by the numba
kernels (``minpy.fusion.cpu``) and the CuPy ones (``fusion_cuda``)."""
import numpy

__all__ = ["UNARY", "BINARY", "TERNARY", "CAST", "Program", "result_dtypes", "evaluate",
           "NUMPY_SIDE"]

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
