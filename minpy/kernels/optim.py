"""Fused optimizer kernels: one pass over (weight, gradient, state) per update, in place.

Every update rule of :mod:`minpy.nn.optim` is one of five *kinds* driven by
a vector of scalar hyper-parameters (:func:`hyper`), so a kernel serves
several rules: ``sgd``; ``momentum`` and ``nesterov`` (state ``s1`` = the
velocity); ``rms`` (RMSProp and AdaGrad: ``s1 = a * s1 + b * g**2``); ``adam``
(Adam and AdamW: ``s1`` = m, ``s2`` = v, and a decoupled decay factor). Each
kernel first forms the effective gradient as MXNet does,
``clip(rescale * g, clip) + wd * w``, then applies the rule with the same
operations in the same order as the functional rules of ``minpy.nn.optim``,
so the backends agree to float32 rounding (usually bit for bit).

Three implementations:

- :class:`NumbaPlan` (CPU, numba): one compiled ``prange`` kernel for *all*
  tensors of a dtype. It reads a table of buffer addresses and a table of
  chunks, so a step over many parameters is one call and parallelises across
  tensors as well as within them. Compiled once per dtype, cached on disk.
- :func:`step_numpy`: NumPy (or CuPy) ufuncs with ``out=`` into one scratch
  buffer: no temporaries beyond it.
- :func:`step_cupy`: one ``cupy.ElementwiseKernel`` per kind (GPU arrays).
"""
import os
import warnings

import numpy

from ..fusion.cuda import compile_errors

__all__ = ["KINDS", "hyper", "numba_available", "load_numba", "NumbaPlan", "step_numpy",
           "step_cupy", "cuda_kernel", "CHUNK", "PARALLEL_MIN"]

KINDS = ("sgd", "momentum", "nesterov", "rms", "adam")      # the kernel's kind codes 0..4
CHUNK = 1 << 15          # elements per parallel work item of the numba kernel
# Below this many elements a step runs with one numba thread: waking the pool costs more
# than the pass saves, and right after a BLAS call its spinning threads make the pool crawl
# (measured: an MLP step's update 0.04 ms alone, 3.8 ms with 2 threads after a matmul).
PARALLEL_MIN = 1 << 20
# layout of the hyper vector: lr, rescale, clip (inf: none), wd, then the kind's p0, p1 ...
_LR, _RESCALE, _CLIP, _WD, _P = 0, 1, 2, 3, 4
_NHYPER = 10


def hyper(kind, lr, rescale=1.0, clip=None, wd=0.0, params=(), dtype=numpy.float32):
    """The scalar vector a kernel of ``kind`` reads, in the parameters' ``dtype``.

    Args:
        kind: one of :data:`KINDS`.
        lr: the learning rate of this step.
        rescale: factor applied to the gradient first (global-norm clipping).
        clip: elementwise bound on the rescaled gradient, or None.
        wd: L2 weight decay added to the gradient (``wd * w``).
        params: the kind's own scalars: momentum (momentum, nesterov);
            ``a, b, epsilon`` (rms); ``beta1, 1 - beta1, beta2, 1 - beta2,
            1 - beta1**t, 1 - beta2**t`` then ``epsilon`` and the decoupled decay
            factor (adam: 8 values; the vector grows to hold them).

    Returns:
        A 1-d array of ``dtype`` (scalars computed in float64, rounded once).
    """
    if kind not in KINDS:
        raise ValueError(f"fused.hyper: kind must be one of {KINDS}, got {kind!r}")
    h = numpy.zeros(max(_NHYPER, _P + len(params)), dtype)
    h[_LR], h[_RESCALE], h[_WD] = lr, rescale, wd
    h[_CLIP] = numpy.inf if clip is None else clip
    h[_P:_P + len(params)] = params
    return h


# ------------------------------------------------------------------ numba
# The kernel bodies below are module-level functions, not closures, because
# numba's on-disk cache (cache=True) never hits for a closure. numba is an
# optional dependency, so the names they call start as placeholders that
# load_numba() binds before compiling them.
prange = range
_carray = _as_ptr = _grad_at = _fused_rows = _chunk = None
_NUMBA = {}


def _grad_py(g, w, i, rescale, clip, wd, use_wd):
    # max/min keep a NaN gradient NaN (as numpy.clip); clip is +inf when unset
    gi = min(max(g[i] * rescale, -clip), clip)
    if use_wd:
        gi = gi + wd * w[i]
    return gi


def _rows_py(kind, w, g, s1, s2, h, use_wd):
    """One chunk of one tensor updated in place: the loop of every kind."""
    lr, rescale, clip, wd = h[0], h[1], h[2], h[3]
    p0, p1, p2, p3, p4, p5 = h[4], h[5], h[6], h[7], h[8], h[9]
    if kind == 0:
        for i in range(w.shape[0]):
            w[i] = w[i] - lr * _grad_at(g, w, i, rescale, clip, wd, use_wd)
    elif kind == 1:
        for i in range(w.shape[0]):
            vi = s1[i] * p0 - _grad_at(g, w, i, rescale, clip, wd, use_wd) * lr
            s1[i] = vi
            w[i] = w[i] + vi
    elif kind == 2:
        for i in range(w.shape[0]):
            gi = _grad_at(g, w, i, rescale, clip, wd, use_wd)
            vi = s1[i] * p0 - gi * lr
            s1[i] = vi
            w[i] = (w[i] + p0 * vi) - lr * gi
    elif kind == 3:
        for i in range(w.shape[0]):
            gi = _grad_at(g, w, i, rescale, clip, wd, use_wd)
            ci = s1[i] * p0 + gi * gi * p1
            s1[i] = ci
            w[i] = w[i] - lr * gi / (numpy.sqrt(ci) + p2)
    else:
        eps, decay = h[10], h[11]
        for i in range(w.shape[0]):
            gi = _grad_at(g, w, i, rescale, clip, wd, use_wd)
            mi = p0 * s1[i] + p1 * gi
            vi = p2 * s2[i] + p3 * (gi * gi)
            s1[i] = mi
            s2[i] = vi
            wi = w[i] * decay
            w[i] = wi - lr * (mi / p4) / (numpy.sqrt(vi / p5) + eps)


def _chunk_py(kind, ptrs, table, h, k, use_wd):
    """Chunk ``k`` of ``table`` (tensor, start, stop, size); ``ptrs`` holds each tensor's
    (w, g, s1, s2) buffer addresses (0: unused)."""
    j, start, stop, n = table[k, 0], table[k, 1], table[k, 2], table[k, 3]
    w = _carray(_as_ptr(ptrs[j, 0], h), (n,))[start:stop]
    g = _carray(_as_ptr(ptrs[j, 1], h), (n,))[start:stop]
    s1 = w if ptrs[j, 2] == 0 else _carray(_as_ptr(ptrs[j, 2], h), (n,))[start:stop]
    s2 = w if ptrs[j, 3] == 0 else _carray(_as_ptr(ptrs[j, 3], h), (n,))[start:stop]
    # the literal flag, after inlining, lets LLVM drop the branch and vectorize
    if use_wd:
        _fused_rows(kind, w, g, s1, s2, h, True)
    else:
        _fused_rows(kind, w, g, s1, s2, h, False)


def _kernel_py(kind, ptrs, table, h):
    """Every chunk of ``table`` in parallel (see _chunk_py).

    A ``range`` loop compiled without ``parallel`` is not an alternative for
    one thread: LLVM then leaves the Adam rows scalar (7x slower, measured).
    """
    use_wd = h[3] != 0
    for k in prange(table.shape[0]):
        _chunk(kind, ptrs, table, h, k, use_wd)


def numba_available():
    """True when numba can be imported."""
    try:
        load_numba()
    except ImportError:
        return False
    return True


def load_numba():
    """The compiled multi-tensor kernel (numba imported and the kernel set up once).

    Raises:
        ImportError: numba is not installed (``pip install numba``).
    """
    kernel = _NUMBA.get("kernel")
    if kernel is not None:
        return kernel
    if "error" in _NUMBA:
        raise _NUMBA["error"]
    # numba's OpenMP workers spin after each kernel by default, taking the cores from the
    # BLAS calls of the next forward pass (an MLP step measured 2x slower); idle them
    # instead unless the user chose. Read by libgomp when numba first loads it.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import numba
        from numba import types
        from numba.extending import intrinsic
    except ImportError as e:
        _NUMBA["error"] = ImportError(
            'minpy.nn.optim: the numba backend needs numba: pip install numba '
            "(or pass backend='numpy')")
        raise _NUMBA["error"] from e

    @intrinsic
    def as_ptr(typingctx, addr, like):
        # an integer address as a pointer to like's dtype (numba has no cast for this)
        ptr = types.CPointer(like.dtype)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(ptr))
        return ptr(types.intp, like), codegen

    global prange, _carray, _as_ptr, _grad_at, _fused_rows, _chunk
    prange, _carray, _as_ptr = numba.prange, numba.carray, as_ptr
    _grad_at = numba.njit(inline="always", cache=True)(_grad_py)
    _fused_rows = numba.njit(inline="always", cache=True)(_rows_py)
    _chunk = numba.njit(inline="always", cache=True)(_chunk_py)
    _NUMBA["kernel"] = numba.njit(parallel=True, fastmath=False, cache=True,
                                  nogil=True)(_kernel_py)
    _NUMBA["set_threads"], _NUMBA["get_threads"] = numba.set_num_threads, numba.get_num_threads
    return _NUMBA["kernel"]


def _address(a):
    return a.__array_interface__["data"][0]


class NumbaPlan:
    """A multi-tensor update over fixed weight and state buffers (one dtype, CPU).

    Built once per parameter set: the address table of weights and states and
    the chunk table stay; each :meth:`run` only writes the gradients'
    addresses and calls the kernel once.

    Args:
        weights: C-contiguous numpy arrays, one dtype (float32 or float64).
        states: per weight, a tuple of 0-2 state arrays of the same size and dtype.
    """

    def __init__(self, weights, states):
        self.weights = list(weights)
        self._keep = [tuple(s) for s in states]          # the addresses stay valid
        self.dtype = self.weights[0].dtype
        self.kernel = load_numba()
        self.one_thread = sum(w.size for w in self.weights) < PARALLEL_MIN
        self.ptrs = numpy.zeros((len(self.weights), 4), numpy.intp)
        rows = []
        for j, (w, st) in enumerate(zip(self.weights, self._keep)):
            if w.dtype != self.dtype or not w.flags.c_contiguous:
                raise ValueError("NumbaPlan: weights must be C-contiguous and of one dtype")
            self.ptrs[j, 0] = _address(w)
            for k, s in enumerate(st):
                if s.shape != w.shape or s.dtype != w.dtype or not s.flags.c_contiguous:
                    raise ValueError("NumbaPlan: a state must match its weight's shape and dtype")
                self.ptrs[j, 2 + k] = _address(s)
            rows.extend((j, a, min(a + CHUNK, w.size), w.size) for a in range(0, w.size, CHUNK))
        self.table = numpy.array(rows, numpy.int64).reshape(-1, 4)

    def matches(self, weights):
        """True when ``weights`` are exactly (the same objects as) this plan's."""
        mine = self.weights
        return len(weights) == len(mine) and all(a is b for a, b in zip(weights, mine))

    def run(self, kind, grads, h):
        """Update every weight in place with ``grads`` (C-contiguous numpy arrays, one
        per weight, of its size and dtype) and hyper vector ``h`` (:func:`hyper`, of the
        weights' dtype).

        Raises:
            ValueError: a gradient or ``h`` does not fit (checked: the kernel reads
                raw addresses).
        """
        ptrs, dt = self.ptrs, self.dtype
        need = _P + 8 if kind == "adam" else _NHYPER
        if len(grads) != len(self.weights) or h.dtype != dt or h.size < need:
            raise ValueError("NumbaPlan.run: need one gradient per weight and a hyper "
                             "vector of the weights' dtype")
        for j, (g, w) in enumerate(zip(grads, self.weights)):
            if type(g) is not numpy.ndarray or g.dtype != dt or g.size != w.size or \
                    not g.flags.c_contiguous:
                raise ValueError(f"NumbaPlan.run: gradient {j} must be a C-contiguous "
                                 f"{dt} numpy array of {w.size} elements")
            ptrs[j, 1] = _address(g)
        if self.one_thread:      # the same kernel on this thread alone (PARALLEL_MIN)
            threads = _NUMBA["get_threads"]()
            _NUMBA["set_threads"](1)
            try:
                self.kernel(KINDS.index(kind), ptrs, self.table, h)
            finally:
                _NUMBA["set_threads"](threads)
        else:
            self.kernel(KINDS.index(kind), ptrs, self.table, h)
        ptrs[:, 1] = 0


# ------------------------------------------------------------------ numpy / cupy
def step_numpy(xp, kind, w, g, s1, s2, h, scratch):
    """One tensor updated in place with ``xp`` ufuncs (``out=``), no temporaries.

    Args:
        xp: ``numpy`` or ``cupy``.
        kind, h: as for the numba kernel (``h`` a host vector from :func:`hyper`).
        w, g, s1, s2: arrays of one shape (states None where the kind has none);
            ``g`` is not modified.
        scratch: two writable arrays of ``w``'s shape and dtype.
    """
    t, u = scratch
    dt = w.dtype.type
    lr, rescale, clip, wd = (dt(v) for v in h[:4])
    p = [dt(v) for v in h[_P:]]
    x = g                    # the effective gradient; read-only until the kind's last use
    if rescale != 1:
        x = xp.multiply(g, rescale, out=t)
    if clip < numpy.inf:
        x = xp.clip(x, -clip, clip, out=t)
    if wd != 0:
        xp.multiply(w, wd, out=u)
        x = xp.add(x, u, out=t)
    if kind == "sgd":
        xp.subtract(w, xp.multiply(x, lr, out=t), out=w)
    elif kind in ("momentum", "nesterov"):
        xp.multiply(s1, p[0], out=s1)
        xp.multiply(x, lr, out=u)
        xp.subtract(s1, u, out=s1)
        if kind == "momentum":
            xp.add(w, s1, out=w)
        else:
            xp.add(w, xp.multiply(s1, p[0], out=t), out=w)
            xp.subtract(w, u, out=w)
    elif kind == "rms":
        xp.multiply(s1, p[0], out=s1)
        xp.multiply(x, x, out=u)
        xp.multiply(u, p[1], out=u)
        xp.add(s1, u, out=s1)
        xp.multiply(x, lr, out=t)
        xp.sqrt(s1, out=u)
        xp.add(u, p[2], out=u)
        xp.divide(t, u, out=t)
        xp.subtract(w, t, out=w)
    else:
        xp.multiply(s1, p[0], out=s1)
        xp.multiply(x, p[1], out=u)
        xp.add(s1, u, out=s1)
        xp.multiply(x, x, out=t)
        xp.multiply(t, p[3], out=t)
        xp.multiply(s2, p[2], out=s2)
        xp.add(s2, t, out=s2)
        if p[7] != 1:
            xp.multiply(w, p[7], out=w)
        xp.divide(s1, p[4], out=t)
        xp.multiply(t, lr, out=t)
        xp.divide(s2, p[5], out=u)
        xp.sqrt(u, out=u)
        xp.add(u, p[6], out=u)
        xp.divide(t, u, out=t)
        xp.subtract(w, t, out=w)


_CUPY = {}
_CUPY_FAILED = {}            # (kind, dtype) -> the compiler's message (warned once)
_CUPY_DTYPES = ("float16", "float32", "float64")
_CUDA_GRAD = """
T gi = g * h_rescale;
gi = gi > h_clip ? h_clip : (gi < -h_clip ? (T)(-h_clip) : gi);
if (h_wd != 0) gi = gi + h_wd * w;
"""
_CUDA_BODY = {
    "sgd": ("w", "w = w - lr * gi;"),
    "momentum": ("w, T s1", "T vi = s1 * p0 - gi * lr; s1 = vi; w = w + vi;"),
    "nesterov": ("w, T s1", "T vi = s1 * p0 - gi * lr; s1 = vi; w = (w + p0 * vi) - lr * gi;"),
    "rms": ("w, T s1",
            "T ci = s1 * p0 + gi * gi * p1; s1 = ci; w = w - lr * gi / (sqrt(ci) + p2);"),
    "adam": ("w, T s1, T s2",
             "T mi = p0 * s1 + p1 * gi; T vi = p2 * s2 + p3 * (gi * gi); s1 = mi; s2 = vi;"
             " T wi = w * p7; w = wi - lr * (mi / p4) / (sqrt(vi / p5) + p6);"),
}


CUDA_OPTIONS = ("--fmad=false",)


def cuda_kernel(kind):
    """The ``cupy.ElementwiseKernel`` arguments of ``kind``'s fused update:
    ``(in_params, out_params, operation, name)``; ``T`` is the weights' dtype
    (float16, float32 or float64; float16 computes each statement in float)."""
    outs, body = _CUDA_BODY[kind]
    return ("T g, T lr, T h_rescale, T h_clip, T h_wd, T p0, T p1, T p2, T p3, T p4, T p5, "
            "T p6, T p7", "T " + outs, _CUDA_GRAD + body, "minpy_fused_" + kind)


def _cupy_kernel(cupy, kind):
    k = _CUPY.get(kind)
    if k is None:
        # no fused multiply-add: each statement rounds as NumPy's (and CuPy's separate
        # ufuncs) do, so the fused step equals the unfused one to the bit
        k = _CUPY[kind] = cupy.ElementwiseKernel(*cuda_kernel(kind), options=CUDA_OPTIONS)
    return k


def step_cupy(kind, w, g, s1, s2, h):
    """One GPU tensor updated in place by this kind's ``cupy.ElementwiseKernel``
    (built once; CuPy caches the compiled binary). ``h`` is a host hyper vector.

    Other dtypes than float16/32/64 run :func:`step_numpy` with CuPy; so does a
    kernel NVRTC rejects (CuPy compiles at the first launch), after one warning
    naming it.
    """
    import cupy          # optional: only reached with CuPy arrays
    key = (kind, w.dtype.name)
    if w.dtype.name in _CUPY_DTYPES and key not in _CUPY_FAILED:
        dt = w.dtype.type
        scalars = [dt(v) for v in h[:_P]] + [dt(v) for v in h[_P:_P + 8]]
        scalars += [dt(0)] * (12 - len(scalars))
        outs = [x for x in (w, s1, s2) if x is not None]
        try:
            _cupy_kernel(cupy, kind)(g, *scalars, *outs)
            return
        except compile_errors(cupy) as e:      # raised before the launch: nothing written
            _CUPY_FAILED[key] = str(e)
            warnings.warn(f"minpy.nn.optim: the CUDA kernel minpy_fused_{kind} did not "
                          f"compile for {w.dtype}, so the update runs unfused: "
                          f"{str(e).strip()[:500]}", RuntimeWarning, stacklevel=2)
    step_numpy(cupy, kind, w, g, s1, s2, h, (cupy.empty_like(w), cupy.empty_like(w)))
