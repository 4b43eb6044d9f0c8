"""Fused elementwise Programs as ``cupy.ElementwiseKernel`` (NVRTC): the CUDA C
body generated from the same IR as the numba kernels (``minpy.symbol.fusion``)."""
import hashlib

import numpy

from .fusion_ir import CAST, _ARITH, _CMP, _lowered, _pattern, _typed, result_dtypes

__all__ = ["cuda_source", "CupyKernel"]


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
