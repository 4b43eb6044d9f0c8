"""Fusion of elementwise steps in ``minpy.jit`` programs.

A run of consecutive steps that are NumPy ufunc calls from the fusion
vocabulary (``minpy.fusion.cpu``: arithmetic, comparisons, maximum/minimum,
exp/log/tanh ...), on float32/float64/bool operands and Python scalars, all
making results of one shape, becomes one ``fusion.Program``.  Its inputs are the
slots the run reads from outside, its outputs the results somebody reads after
the run (or the function returns); the other results are never materialised.
The run is replaced by one step calling the compiled kernel -- only where the
kernel measures faster than the separate NumPy calls: first in isolation
(``Kernel.wins``, once per structure, dtypes and size), then in the program
itself (:class:`InSitu`: the first replays alternate kernel and NumPy and keep
the faster -- a kernel that wins on cache-hot synthetic data can lose right
after a GEMM that evicted its operands).  Runs are consecutive, so moving the
work to the run's last position changes no dependency.  ``MINPY_FUSION=0`` (or
``jit(fusion=False)``) turns it off.
"""
import time

import numpy

from ..fusion.cpu import BINARY, UNARY, Program, compile_program, evaluate, numba_available
from ..core.trace import Ref, Step

__all__ = ["fuse_steps", "InSitu", "MIN_RUN", "FUSE_MIN"]

MIN_RUN = 2             # steps worth fusing
# below this many elements a run stays NumPy calls: on (32, 128) arrays kernels cost
# ~10 us more per call than the planned out= ufunc calls they replace, and on the
# 784-1024-10 MLP at batch 512 (512 x 1024 arrays, right after the GEMMs) the
# fused step made the whole replay ~3% slower than the planned calls, although
# both InSitu's and Kernel.wins's measurements (against allocating evaluate())
# said the kernel won; at 10^6 elements (bench_fusion) the kernel wins
FUSE_MIN = 1_000_000
ALWAYS = False          # tests: fuse every run whatever the measurement says
_NAMES = {"absolute": "abs", "true_divide": "divide"}
_DTYPES = frozenset(numpy.dtype(t) for t in ("float32", "float64", "bool"))
_SCALARS = (int, float, bool, numpy.floating, numpy.bool_)


def _op_name(fn):
    name = _NAMES.get(fn.__name__, fn.__name__)
    return name if (name in UNARY or name in BINARY) else None


def _candidate(st, slots, keep):
    """The fusion op name of ``st`` if it may join a run, else None."""
    if st.kind != "raw" or st.kwargs or st.seq or len(st.outs) != 1 or st.writes:
        return None
    fn = st.fn
    if not isinstance(fn, numpy.ufunc) or fn.nout != 1 or fn.nin != len(st.args):
        return None
    name = _op_name(fn)
    if name is None:
        return None
    k = st.outs[0][1]
    s = slots[k]
    if s.root != k or s.dtype not in _DTYPES or s.shape == () or k in st.as0d or \
            s.nbytes < FUSE_MIN * s.dtype.itemsize:
        return None
    for a in st.args:
        if type(a) is Ref:
            r = slots[a.slot]
            if r.dtype not in _DTYPES:
                return None
        elif not isinstance(a, _SCALARS):
            return None
    return name


def fuse_steps(steps, slots, keep):
    """``steps`` with runs of fusable elementwise steps replaced by fused steps."""
    if not numba_available():
        return steps
    readers = {}
    for i, st in enumerate(steps):
        for k in st.reads + st.writes:
            readers.setdefault(k, []).append(i)
    out, run = [], []
    shape = None
    for i, st in enumerate(steps):
        name = _candidate(st, slots, keep)
        if name is not None:
            s = slots[st.outs[0][1]]
            if run and s.shape != shape:
                out.extend(_close(run, slots, keep, readers))
                run = []
            shape = s.shape
            run.append((i, st, name))
            continue
        out.extend(_close(run, slots, keep, readers))
        run = []
        out.append(st)
    out.extend(_close(run, slots, keep, readers))
    return out


def _close(run, slots, keep, readers):
    """The steps of ``run``: one fused step when that pays, else the steps as they were."""
    if len(run) < MIN_RUN:
        return [st for _, st, _ in run]
    last = run[-1][0]
    made = {st.outs[0][1]: j for j, (_, st, _) in enumerate(run)}
    inputs, instrs = [], []

    def operand(a):
        if type(a) is not Ref:
            return ("c", a)
        if a.slot in made:
            return ("t", made[a.slot])
        if a.slot not in inputs:
            inputs.append(a.slot)
        return ("in", inputs.index(a.slot))
    for _, st, name in run:
        instrs.append((name, tuple(operand(a) for a in st.args)))
    outs = [k for k, j in made.items()
            if k in keep or any(r > last for r in readers.get(k, ()))]
    if not outs:
        return [st for _, st, _ in run]
    prog = Program(len(inputs), instrs, [("t", made[k]) for k in outs])
    shape = slots[outs[0]].shape
    kernel = compile_program(prog, [slots[k].dtype for k in inputs],
                             [slots[k].shape for k in inputs], shape)
    if not (ALWAYS or kernel.wins):
        return [st for _, st, _ in run]
    fn = kernel if ALWAYS else InSitu(kernel)
    fused = Step("fused", None, fn, tuple(Ref(k) for k in inputs), {}, list(inputs),
                 f"fused[{'+'.join(n for _, _, n in run)}]")
    fused.outs = [(j, k) for j, k in enumerate(outs)]
    return [fused]


class InSitu:
    """A fused kernel that times itself against NumPy (``fusion.evaluate``) on its
    first ``2 * TRIALS`` calls, alternating, and then keeps the faster.

    ``choice`` is None while measuring, then True (the kernel) or False (NumPy).
    """
    TRIALS = 3

    def __init__(self, kernel):
        self.kernel = kernel
        self.best = [float("inf"), float("inf")]
        self.calls = 0
        self.choice = None

    def _numpy(self, inputs, outs):
        evaluate(self.kernel.program, inputs, numpy, outs)

    def __call__(self, inputs, outs):
        if self.choice is not None:
            return (self.kernel if self.choice else self._numpy)(inputs, outs)
        which = self.calls % 2
        start = time.perf_counter()
        (self.kernel if which == 0 else self._numpy)(inputs, outs)
        self.best[which] = min(self.best[which], time.perf_counter() - start)
        self.calls += 1
        if self.calls >= 2 * self.TRIALS:
            self.choice = self.best[0] < self.best[1]
