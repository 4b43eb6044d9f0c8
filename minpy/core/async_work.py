"""Arrays on the dependency engine: async mode, pushed calls, waits on inputs.

An Array gets an engine Var (``_var``) the first time asynchronous work
touches it: the Var of its storage buffer (``minpy.engine.storage``), so
that a view and its base -- and every other view of that buffer -- order
against each other. An Array that has no ``_var`` yet still finds its
buffer's Var when it waits. Eager code never reads an array under a pending
write: the slow path (taken while async mode is on) waits for the Vars of its
inputs, and ``asnumpy``/``repr``/``wait_to_read`` wait as well. Work pushed by
other layers (executors, KVStore) waits at its own API boundary.

A pushed call runs under the NumPy error state (``numpy.errstate``) of the
code that pushed it; an error it raises, like any error of pushed work, is
raised by every later read of its output until the output is rewritten.

Async mode (``minpy.set_async(True)`` or ``with minpy.async_mode():``) pushes
large elementwise ufunc calls and matrix products to the engine instead of
running them inline, so independent statements overlap on the worker
threads; everything else waits for its inputs and runs eagerly. So do the third
and later links of a dependent chain of such calls (``y = y * a + b`` in a loop),
where a thread hop per op would buy no overlap (see ``_chained``).
"""
import contextlib
import threading

import numpy

from .. import engine
from ..dispatch import state
from . import tree
from .array import Array, new, wait

__all__ = ["set_async", "async_mode", "is_async", "waitall", "wait_array", "wait_inputs",
           "try_push", "push", "var_of", "ASYNC_MIN_SIZE"]

ASYNC_MIN_SIZE = 1 << 16        # elements; smaller calls are not worth a thread hop
_lock = threading.Lock()
_ndarray = numpy.ndarray
# argument types holding no Array: a flat call of these needs no tree walk
_FLAT = frozenset((Array, _ndarray, float, int, bool, complex, str, slice, type(None),
                   type(Ellipsis)))


def var_of(arr):
    """The engine Var of Array ``arr``: its storage buffer's (shared with every view
    of the buffer), bound on first use."""
    v = arr._var
    if v is None:
        v = arr._var = engine.bind_storage(arr._data)
    else:
        engine.adopt_storage(arr._data, v)   # e.g. a buffer swapped in by a jit run
    return v


wait_array = wait


def wait_inputs(args, kwargs):
    """Wait for pending work on the storage of every Array among ``args`` and
    ``kwargs`` (in nested containers too); re-raise the error of a failed one."""
    vals = (*args, *kwargs.values()) if kwargs else args
    flat = _FLAT
    for a in vals if all(type(a) in flat for a in vals) else tree.leaves(vals):
        if type(a) is Array:
            wait(a)


def set_async(enabled):
    """Turn async mode on or off (waits for all pending work when turning off).

    Returns the previous setting.
    """
    with _lock:
        prev = state.process.async_on
        if enabled and not prev:
            state.set_async(True)
        elif not enabled and prev:
            try:
                engine.waitall()        # nothing may stay pending once the fast path is back
            finally:
                state.set_async(False)
    return prev


def is_async():
    """True while async mode is on."""
    return state.process.async_on


@contextlib.contextmanager
def async_mode(enabled=True):
    """Scope async mode: ``with minpy.async_mode(): ...`` (waits for all work on exit)."""
    prev = set_async(enabled)
    try:
        yield
    finally:
        set_async(prev)
        if enabled:
            waitall()


def waitall():
    """Block until all asynchronous work is done -- the engine's ops, then the work
    queued on every GPU device -- and re-raise the first error it raised. See also
    mxnet.nd.waitall."""
    engine.waitall()
    g = state.process.gpu
    if g is not None:
        g.synchronize()


# ------------------------------------------------------------ pushing eager ops
def _shape_dtype_ufunc(np_ufunc, datas):
    shape = numpy.broadcast_shapes(*(numpy.shape(d) for d in datas))
    dts = tuple(d.dtype if isinstance(d, _ndarray) else type(d) for d in datas)
    dtype = np_ufunc.resolve_dtypes(dts + (None,))[-1]
    return shape, dtype


def try_push(prim, args, kwargs):
    """Push ``prim(*args)`` to the engine if it is a large CPU ufunc or matmul call.

    Returns the (pending) result Array, or None when the call should run eagerly.
    The third and later links of a dependent chain run inline instead (see
    :func:`_chained`).
    """
    global _last
    if kwargs or state.thread_flags().depth or not state.process.cpu_only:
        return None
    if engine.get_engine().in_op():      # code run by an engine op (a CustomOp's) runs
        return None                      # inline: pushing and waiting there would deadlock
    impl = prim.impl
    if not isinstance(impl, numpy.ufunc) or impl.nout != 1 or len(args) != impl.nin:
        return None
    datas, big = [], False
    for a in args:
        t = type(a)
        if t is Array:
            d = a._data
            big = big or d.size >= ASYNC_MIN_SIZE
        elif t is _ndarray or isinstance(a, (int, float, complex, bool)):
            d = a
        else:
            return None
        datas.append(d)
    if not big:
        return None
    if _chained(args):
        return _run_inline(impl, args, datas)
    try:
        shape, dtype = _shape_dtype_ufunc(impl, datas)
    except (ValueError, TypeError):
        return None          # let the eager call raise NumPy's own error
    out = numpy.empty(shape, dtype)
    _last = id(out)
    result = new(out)
    reads = [var_of(a) for a in args if type(a) is Array]
    writes = [var_of(result)]

    def op():
        impl(*datas, out=out)
    # nbytes: the output is held until the op runs (the engine bounds bytes in flight)
    engine.push(_under_errstate(op), reads=reads, writes=writes, name=prim.qualname,
                nbytes=out.nbytes)
    return result


# A dependent chain (``y = y * a + b`` in a loop) has nothing to overlap: pushed, each
# op waits for the one before it, so the pusher only adds a thread hop per op and holds
# more outputs in flight (a bigger working set: a chain of 1M-element float32 ops ran
# 2-4x slower per op than eager). So a call whose input is the output of the previous
# call here, itself fed by the one before (the third link of a chain), runs inline --
# after waiting for its inputs, as an eager call would. Shorter links (the A, B, C, D
# program: C and B both read A) and chains interleaved by the pusher (``a = a * c;
# b = b * c``) are pushed and still overlap. Only speed depends on this choice: both
# paths compute the same result and raise the same errors, so ``_last`` (the id() of
# the previous call's output buffer) may go stale or be shared by threads harmlessly.
_last = None
_links = 0          # calls in a row fed by the previous one's output


def _chained(args):
    """True when the call on ``args`` continues a chain (see above); updates the count."""
    global _links
    last = _last
    for a in args:
        if type(a) is Array and id(a._data) == last:
            _links += 1
            return _links >= 2
    _links = 0
    return False


def _run_inline(impl, args, datas):
    """Wait for the Array inputs among ``args``, run ``impl(*datas)`` in this thread
    and return its result as a new Array (None if it raised: the eager call that
    follows raises the error as it would without async mode)."""
    global _last
    for a in args:
        if type(a) is Array:
            wait(a)
    try:
        out = impl(*datas)
    except Exception:       # the eager call that follows raises it in its own words
        return None
    _last = id(out)
    return new(out)


# A worker thread starts with NumPy's default error state; pushed work runs
# under the pusher's (numpy.geterr() is per thread / context).
_DEFAULT_ERR = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}


def _errstate():
    """The caller's NumPy error state as ``numpy.errstate`` keywords, or None when
    it is the default one."""
    err = numpy.geterr()
    if err == _DEFAULT_ERR:
        return None
    if "call" in err.values() or "log" in err.values():
        err["call"] = numpy.geterrcall()
    return err


def _under_errstate(fn):
    err = _errstate()
    if err is None:
        return fn

    def run():
        with numpy.errstate(**err):
            return fn()
    run.__qualname__ = getattr(fn, "__qualname__", "op")
    return run


def push(fn, reads=(), writes=(), name=None, resources=(), nbytes=0):
    """Push ``fn()`` to the engine, reading Arrays ``reads`` and writing Arrays ``writes``.

    For layers that compute into existing arrays (executors, KVStore pulls) or into
    new ones (``mx.nd``'s operators). Later waits on the written arrays
    (``wait_to_read``, ``asnumpy``, eager ops in async mode, ``waitall``) see ``fn``'s
    result or re-raise its error (every read, until an array is rewritten). An array
    that ``fn`` reads as well as writes belongs in ``writes``. ``resources``: engine
    Vars ``fn`` also writes (a random generator it draws from, so draws keep push
    order); ``nbytes``: the memory the op holds until it runs (the engine bounds
    bytes in flight). ``fn`` runs under the caller's NumPy error state.
    """
    engine.push(_under_errstate(fn), reads=[var_of(a) for a in reads],
                writes=[var_of(a) for a in writes] + list(resources), name=name,
                nbytes=nbytes)
