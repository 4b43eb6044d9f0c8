"""Fused elementwise Programs as ``cupy.ElementwiseKernel`` (NVRTC): the CUDA C
body generated from the same IR as the numba kernels (``minpy.fusion.cpu``).

Every instruction computes in NumPy's loop dtype with NumPy's semantics, and where
NumPy's result is undefined or an error (an integer to a negative power, the
integer reciprocal of 0, a float cast to an integer out of range) as CuPy's ufunc,
which is what the unfused GPU path runs:

- integers wrap (arithmetic in the unsigned type of at least 32 bits, so no signed
  overflow); ``floor``/``ceil`` of an integer are the identity; integer ``power``
  is exponentiation by squaring; ``abs`` of an unsigned integer is the identity;
- bool: ``add``/``maximum`` are *or*, ``multiply``/``minimum`` are *and*;
- float16 (CuPy's ``float16``): each instruction computes in float and rounds
  once to float16, as NumPy's half loops do;
- complex (``thrust::complex``): NumPy's lexicographic comparisons and
  ``maximum``/``minimum``, its ``sign``, ``exp2``, ``log2``, ``expm1`` and
  ``power`` special cases;
- floats: ``maximum``/``minimum`` propagate NaN, ``sign`` keeps NaN, ``abs``
  clears the sign bit, ``logaddexp`` as ``npy_logaddexp``.

An instruction or constant the kernel cannot express raises :class:`Unsupported`
(a TypeError: the callers then run the Program unfused). A kernel that fails to
compile (NVRTC, at its first launch) warns once and runs unfused
(:class:`CupyKernel`).
"""
import hashlib
import warnings

import numpy

from .ir import CAST, _ARITH, _CMP, _lowered, _pattern, _typed, evaluate, result_dtypes

__all__ = ["cuda_source", "CupyKernel", "Unsupported", "compile_errors"]


class Unsupported(TypeError):
    """A Program the CUDA kernel cannot compute with NumPy's semantics (its callers
    fall back to running it unfused)."""


# CuPy's C type of each dtype (cupy/_core/_scalar.pyx)
_C_TYPES = {"float16": "float16", "float32": "float", "float64": "double",
            "complex64": "thrust::complex<float>", "complex128": "thrust::complex<double>",
            "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
            "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
            "uint64": "unsigned long long", "bool": "bool"}
_F16, _F32, _F64 = numpy.dtype("float16"), numpy.dtype("float32"), numpy.dtype("float64")
_BOOL = numpy.dtype(bool)
_UNARY_MATH = ("exp", "exp2", "log", "log2", "log10", "tanh", "sqrt", "log1p", "expm1",
               "sin", "cos", "floor", "ceil")
_LN2, _LOG2E = "0.6931471805599453", "1.4426950408889634"
_NAN = 'nan("")'           # CUDA's nan(const char *): NVRTC has no NAN macro


def _ct(t):
    try:
        return _C_TYPES[numpy.dtype(t).name]
    except KeyError:
        raise Unsupported(f"fusion_cuda: no CUDA type for dtype {numpy.dtype(t)}") from None


def _real(t):
    """The component dtype of complex ``t``."""
    return numpy.dtype(f"f{t.itemsize // 2}")


def _fn(name, t):
    """The C math function ``name`` for float dtype ``t`` (float16 computes in float)."""
    return name + ("f" if t in (_F16, _F32) else "")


def _c_cast(expr, frm, to):
    """``expr`` (of dtype ``frm``; None: an int literal) as dtype ``to``, as NumPy's
    ``astype`` (complex to real keeps the real part)."""
    if frm is not None and frm == to:    # (dtype("float64") == None is True)
        return expr
    ct = _ct(to)
    if to.kind == "c":
        if frm is not None and frm.kind == "c":
            return f"(({ct})({expr}))"
        return f"{ct}({_c_cast(expr, frm, _real(to))})"
    if frm is not None and frm.kind == "c":
        if to == _BOOL:
            return f"(({expr}).real() != 0 || ({expr}).imag() != 0)"
        return _c_cast(f"({expr}).real()", _real(frm), to)
    if to == _F16 and frm is not None and frm.kind in "iu":
        expr = f"(float)({expr})"        # one float16 constructor for every integer type
    return f"(({ct})({expr}))"


def _f(expr, t):
    """``expr`` of dtype ``t`` ready for arithmetic: float16 as float."""
    return f"((float)({expr}))" if t == _F16 else expr


def _uint(t):
    return "unsigned int" if t.itemsize <= 4 else "unsigned long long"


def _ipow(a, b, t):
    """Integer power by squaring, wrapping as NumPy; a negative exponent gives
    CuPy's ``integral_power`` values (NumPy raises)."""
    u, ct = _uint(t), _ct(t)
    neg = (f"if (_e < 0) return ({ct})(_b == -1 ? ((_e & 1) ? -1 : 1) : (_b == 1 ? 1 : 0)); "
           if t.kind == "i" else "")
    return (f"[&]() -> {ct} {{ {ct} _b = {a}, _e = {b}; {neg}{u} _r = 1, _x = ({u})_b; "
            f"while (_e > 0) {{ if (_e & 1) _r *= _x; _x *= _x; _e >>= 1; }} "
            f"return ({ct})_r; }}()")


def _cpow(a, b, t):
    """NumPy's ``nc_pow``: a 0 exponent or base, small integer exponents by squaring."""
    ct, nan = _ct(t), _NAN
    return (f"[&]() -> {ct} {{ {ct} _a = {a}, _b = {b}; "
            f"if (_b.real() == 0 && _b.imag() == 0) return {ct}(1); "
            f"if (_a.real() == 0 && _a.imag() == 0) return _b.real() > 0 "
            f"? {ct}(0) : {ct}({nan}, {nan}); "
            f"if (_b.imag() == 0 && _b.real() > -100 && _b.real() < 100 && "
            f"_b.real() == (int)_b.real()) {{ int _n = (int)_b.real(); "
            f"if (_n == 1) return _a; if (_n == 2) return _a * _a; "
            f"if (_n == 3) return _a * (_a * _a); "
            f"{ct} _r(1), _x = _a; unsigned _m = _n < 0 ? -_n : _n; "
            f"while (_m) {{ if (_m & 1) _r = _r * _x; _x = _x * _x; _m >>= 1; }} "
            f"return _n < 0 ? {ct}(1) / _r : _r; }} return pow(_a, _b); }}()")


def _csign(a, t):
    """NumPy's complex sign: ``z / |z|``, 0 at 0, NaN for NaN, the unit of an infinite axis."""
    ct, rt, nan = _ct(t), _ct(_real(t)), _NAN
    return (f"[&]() -> {ct} {{ {ct} _z = {a}; {rt} _re = _z.real(), _im = _z.imag(), "
            f"_m = abs(_z); if (isnan(_m)) return {ct}({nan}, {nan}); "
            f"if (isinf(_m)) {{ if (isinf(_re)) return isinf(_im) ? {ct}({nan}, "
            f"{nan}) : {ct}(_re > 0 ? 1 : -1, 0); return {ct}(0, _im > 0 ? 1 : -1); }} "
            f"if (_m == 0) return {ct}(0); return {ct}(_re / _m, _im / _m); }}()")


def _ccmp_names(op, a, b):
    """NumPy's lexicographic complex comparison (``CGE`` ... in its loops) of two
    complex variables named ``a`` and ``b``."""
    if op in ("==", "!="):
        join = " && " if op == "==" else " || "
        return f"{a}.real() {op} {b}.real(){join}{a}.imag() {op} {b}.imag()"
    strict = op[0]                       # ">" or "<"
    return (f"({a}.real() {strict} {b}.real() && !isnan({a}.imag()) && !isnan({b}.imag())) "
            f"|| ({a}.real() == {b}.real() && {a}.imag() {op} {b}.imag())")


def _ccmp(op, a, b, t):
    ct = _ct(t)
    return (f"([&]() -> bool {{ {ct} _a = {a}, _b = {b}; return {_ccmp_names(op, '_a', '_b')};"
            f" }}())")


def _cmaxmin(name, a, b, t):
    """NumPy's complex maximum/minimum: lexicographic, the first NaN operand wins."""
    ct, op = _ct(t), ">=" if name == "maximum" else "<="
    return (f"[&]() -> {ct} {{ {ct} _a = {a}, _b = {b}; return ({_ccmp_names(op, '_a', '_b')} "
            f"|| isnan(_a.real()) || isnan(_a.imag())) ? _a : _b; }}()")


def _complex_unary(name, a, t):
    rt = _ct(_real(t))
    if name in ("exp", "log", "log10", "tanh", "sqrt", "sin", "cos"):
        return f"{name}({a})"
    if name == "exp2":
        return f"exp({a} * ({rt}){_LN2})"
    if name == "log2":
        return f"log({a}) * ({rt}){_LOG2E}"
    if name == "log1p":
        return f"log({a} + ({rt})1)"
    if name == "expm1":                  # NumPy's nc_expm1: accurate near 0
        ct = _ct(t)
        return (f"[&]() -> {ct} {{ {ct} _z = {a}; {rt} _s = sin(_z.imag() / 2); return "
                f"{ct}(expm1(_z.real()) * cos(_z.imag()) - 2 * _s * _s, "
                f"exp(_z.real()) * sin(_z.imag())); }}()")
    raise Unsupported(f"fusion_cuda: {name} of {t} has no CUDA form")


def _expr(name, a, loop_in, out_t):
    """The C expression of one instruction over operand expressions ``a`` (already of
    the loop dtypes ``loop_in``), of dtype ``out_t``."""
    t = loop_in[-1] if name == "where" else loop_in[0]
    k = t.kind
    if name in ("positive", CAST):
        return a[0]
    if name == "where":
        return f"{a[0]} ? {a[1]} : {a[2]}"
    if name in _CMP:
        op = _CMP[name]
        if k == "c":
            return _ccmp(op, a[0], a[1], t)
        return f"{_f(a[0], t)} {op} {_f(a[1], t)}"
    if k == "b":
        table = {"add": "||", "maximum": "||", "multiply": "&&", "minimum": "&&"}
        if name in table:
            return f"{a[0]} {table[name]} {a[1]}"
        if name in ("floor", "ceil", "abs"):
            return a[0]
        raise Unsupported(f"fusion_cuda: {name} of bool has no CUDA form")
    if k in "iu":
        return _int_expr(name, a, t)
    if k == "c":
        return _complex_expr(name, a, t)
    return _float_expr(name, [_f(x, t) for x in a], t)


def _int_expr(name, a, t):
    u = _uint(t)
    if name in _ARITH and name != "divide":
        return f"({u})({a[0]}) {_ARITH[name]} ({u})({a[1]})"
    if name == "square":
        return f"({u})({a[0]}) * ({u})({a[0]})"
    if name == "negative":
        return f"({u})0 - ({u})({a[0]})"
    if name in ("maximum", "minimum"):
        return f"{a[0]} {'>=' if name == 'maximum' else '<='} {a[1]} ? {a[0]} : {a[1]}"
    if name in ("floor", "ceil"):
        return a[0]
    if name == "abs":
        return a[0] if t.kind == "u" else f"{a[0]} < 0 ? ({u})0 - ({u})({a[0]}) : ({u})({a[0]})"
    if name == "sign":
        return f"{a[0]} > 0" if t.kind == "u" else f"({a[0]} > 0) - ({a[0]} < 0)"
    if name == "reciprocal":          # CuPy's: NumPy's 1.0 / 0 cast to an integer is undefined
        return f"{a[0]} == 0 ? 0 : 1 / {a[0]}"
    if name == "power":
        return _ipow(a[0], a[1], t)
    raise Unsupported(f"fusion_cuda: {name} of {t} has no CUDA form")


def _float_expr(name, a, t):
    """``a`` are float/double expressions (float16 operands already as float)."""
    lit = "" if t == _F64 else "f"
    if name in _ARITH:
        return f"{a[0]} {_ARITH[name]} {a[1]}"
    if name == "maximum":        # NaN propagates; a tie keeps float16's first, else the second
        op = ">=" if t == _F16 else ">"
        return f"({a[0]} {op} {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]}"
    if name == "minimum":
        op = "<=" if t == _F16 else "<"
        return f"({a[0]} {op} {a[1]} || {a[0]} != {a[0]}) ? {a[0]} : {a[1]}"
    if name == "power":
        return f"{_fn('pow', t)}({a[0]}, {a[1]})"
    if name == "logaddexp":      # npy_logaddexp; NaN reaches the last branch
        e, l1p = _fn("exp", t), _fn("log1p", t)
        return (f"{a[0]} == {a[1]} ? {a[0]} + {_LN2}{lit} : (({a[0]} > {a[1]}) ? {a[0]} + "
                f"{l1p}({e}({a[1]} - {a[0]})) : {a[1]} + {l1p}({e}({a[0]} - {a[1]})))")
    if name == "negative":
        return f"-{a[0]}"
    if name == "square":
        return f"{a[0]} * {a[0]}"
    if name == "abs":
        return f"{_fn('fabs', t)}({a[0]})"
    if name == "reciprocal":
        return f"1.0{lit} / {a[0]}"
    if name == "sign":
        return (f"{a[0]} > 0 ? 1.0{lit} : ({a[0]} < 0 ? -1.0{lit} : "
                f"({a[0]} == 0 ? 0.0{lit} : {a[0]}))")
    if name in _UNARY_MATH:
        return f"{_fn(name, t)}({a[0]})"
    raise Unsupported(f"fusion_cuda: {name} of {t} has no CUDA form")


def _complex_expr(name, a, t):
    ct = _ct(t)
    if name in _ARITH:
        return f"{a[0]} {_ARITH[name]} {a[1]}"
    if name in ("maximum", "minimum"):
        return _cmaxmin(name, a[0], a[1], t)
    if name == "power":
        return _cpow(a[0], a[1], t)
    if name == "negative":
        return f"-{a[0]}"
    if name == "square":
        return f"{a[0]} * {a[0]}"
    if name == "abs":
        return f"abs({a[0]})"
    if name == "reciprocal":
        return f"{ct}(1) / {a[0]}"
    if name == "sign":
        return _csign(a[0], t)
    return _complex_unary(name, a[0], t)


def _check_consts(program, low, types):
    """Python int constants must fit their integer loop dtype (NumPy raises
    OverflowError otherwise; a kernel would wrap)."""
    consts = program.consts
    for ins, (loop_in, _) in zip(low, types):
        for o, t in zip(ins[1], loop_in):
            if o[0] != "c":
                continue
            v = consts[o[1]]
            if isinstance(v, int) and not isinstance(v, (bool, numpy.bool_)) and \
                    t.kind in "iu":
                info = numpy.iinfo(t)
                if not info.min <= v <= info.max:
                    raise Unsupported(f"fusion_cuda: the constant {v} is out of bounds for "
                                      f"{t}")


def cuda_source(program, in_dtypes):
    """The ``cupy.ElementwiseKernel`` pieces of ``program`` for ``in_dtypes``.

    Returns:
        ``(in_params, out_params, body, name)``: typed parameters (inputs
        ``x0..``, then constants ``c0..``), outputs ``y0..``, the CUDA C body
        (each instruction in NumPy's loop dtype), and a name unique to the
        program structure and dtypes.
    Raises:
        Unsupported (a TypeError): a dtype, instruction or constant the kernel
        cannot compute as NumPy does; TypeError: no NumPy loop (``result_dtypes``).
    """
    low, louts = _lowered(program)
    types = _typed(program, in_dtypes)
    in_dtypes = [numpy.dtype(d) for d in in_dtypes]
    consts = program.consts
    ctype = [v.dtype if isinstance(v, numpy.generic) else numpy.asarray(v).dtype
             for v in consts]
    for t in in_dtypes + ctype:
        _ct(t)
    _check_consts(program, low, types)
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
        if not isinstance(v, int):
            raise Unsupported(f"fusion_cuda: literal {v!r} is not an integer")
        return _c_cast(repr(v), None, to)
    body = []
    for j, ins in enumerate(low):
        name, (loop_in, out_t) = ins[0], types[j]
        if name == CAST:
            a = [val(ins[1][0], ins[2])]
        else:
            a = [val(o, t) for o, t in zip(ins[1], loop_in)]
        ct = _ct(out_t)
        body.append(f"{ct} t{j} = ({ct})({_expr(name, a, loop_in, out_t)});")
    for k, o in enumerate(louts):
        body.append(f"y{k} = {val(o, outs_t[k])};")
    key = hashlib.sha1(repr((program.skey, [d.str for d in in_dtypes])).encode()).hexdigest()
    return ", ".join(params), out_params, "\n".join(body), f"minpy_fused_{key[:12]}"


_cupy_kernels = {}
_failed = {}          # kernel key -> the compiler's message (warned once)


def compile_errors(cupy):
    """The exceptions CuPy raises for a kernel NVRTC rejects: a tuple, empty when
    this CuPy has no such class."""
    compiler = getattr(getattr(cupy, "cuda", None), "compiler", None)
    error = getattr(compiler, "CompileException", None)
    return (error,) if isinstance(error, type) else ()


def _address(a):
    ptr = getattr(a.data, "ptr", None)          # a CuPy array's device pointer
    return a.__array_interface__["data"][0] if ptr is None else ptr


def _same_layout(a, b):
    """``a`` and ``b`` are the same elements in the same order (in place is safe)."""
    return a is b or (a.shape == b.shape and a.strides == b.strides and
                      a.dtype == b.dtype and _address(a) == _address(b))


class CupyKernel:
    """A Program as one ``cupy.ElementwiseKernel`` (CuPy broadcasts; NVRTC compiles
    once per program structure and dtypes, CuPy caches the binary).
    ``wins`` is True: one launch replaces one per instruction.

    A kernel NVRTC rejects (CuPy compiles at the first launch of each argument
    layout) warns once, naming the kernel, and the Program runs unfused
    (``fusion.evaluate`` with CuPy) from then on.

    Raises:
        Unsupported (a TypeError): ``program`` has no CUDA form (see :func:`cuda_source`).
    """

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
        louts = _lowered(program)[1]
        self._through = [o[1] for o in louts if o[0] == "in"]   # inputs handed through

    def _kernel(self, cupy):
        k = _cupy_kernels.get(self._key)
        if k is None:
            k = _cupy_kernels[self._key] = cupy.ElementwiseKernel(*self.source)
        return k

    def _safe_inputs(self, cupy, inputs, outs):
        """Inputs an output overlaps, copied: the kernel reads an input through a
        reference while writing outputs (the same array in place is safe, unless
        that input is also handed through to another output)."""
        res = list(inputs)
        for j, a in enumerate(inputs):
            for o in outs:
                if j not in self._through and _same_layout(a, o):
                    continue
                if cupy.may_share_memory(a, o):
                    res[j] = a.copy()
                    break
        return res

    def __call__(self, inputs, outs):
        import cupy      # optional: only reached with CuPy arrays
        if self._key in _failed:
            evaluate(self.program, inputs, cupy, outs)
            return
        inputs = self._safe_inputs(cupy, inputs, outs)
        try:
            self._kernel(cupy)(*inputs, *self.program.consts, *outs)
        except compile_errors(cupy) as e:
            _failed[self._key] = str(e)
            warnings.warn(f"minpy.fusion.cpu: the CUDA kernel {self.source[3]} did not "
                          f"compile, so this fused program runs unfused: "
                          f"{str(e).strip()[:500]}", RuntimeWarning, stacklevel=2)
            evaluate(self.program, inputs, cupy, outs)

    run = __call__
