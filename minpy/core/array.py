"""``minpy.Array``: a NumPy-compatible array on a device — the data side.

An Array holds one backend array (``numpy.ndarray`` or ``cupy.ndarray``) in
``_data``; ``_node`` is its tape node while a gradient is being recorded;
``_copies`` caches its copies on other devices; ``_var`` is its engine
variable once asynchronous work has touched it. All but ``_data`` are None
for a plain array, so creating one costs four stores.

This module holds what needs nothing above the dispatch layer: attributes,
host/device movement, conversions, protocols. Methods that run a primitive
are added by the layers that define them: the operators, indexing,
``astype``/``copy``/``view`` by :mod:`minpy.core.methods`; the methods equal
to a namespace function (``sum``, ``reshape``, ``T``, ``real`` ...) by
:mod:`minpy.numpy`.
"""
import numbers
import operator

import numpy

from .. import engine
from . import tree
from .recorder import check_read as _check_trace_read, traced_value as _traced_value, tracing
from ..dispatch import state
from ..dispatch.context import Context, context_named
from ..dispatch.transfer import ArrayHolder, context_of, data_on, move_raw
from .subclass import ArrayMeta   # user subclasses of minpy.ndarray (core/subclass.py)

__all__ = ["Array", "new", "new_scalar", "wrap", "kept", "unwrap_cpu", "wait", "host_operands",
           "arrays_in", "is_traced"]

_ndarray = numpy.ndarray
_generic = numpy.generic
_asarray = numpy.asarray
_CPU0 = Context("cpu", 0)


class Array(ArrayHolder, metaclass=ArrayMeta):
    """An n-dimensional array on a device, behaving like ``numpy.ndarray``.

    Create arrays with ``minpy.array``, ``minpy.zeros`` and the other creation
    functions; ``Array(obj)`` is ``minpy.array(obj)``. ``x.asnumpy()`` returns
    a new host ``numpy.ndarray`` (a copy); ``numpy.asarray(x)`` views a host array's
    buffer.

    See also numpy.ndarray.
    """

    __slots__ = ("_node", "_var", "_scalar", "__weakref__")
    __array_priority__ = 1000.0

    # ---------------------------------------------------------- scalars
    # Where NumPy returns a scalar (``x.sum()``, ``x[0, 1]``, ``np.prod(shape)``) minpy
    # returns an Array marked ``_scalar``: it still carries gradients on the tape, but
    # behaves as NumPy's immutable scalars do — ``+=`` rebinds instead of writing, item
    # assignment is refused, it hashes like its value, and ``isinstance`` sees a
    # ``numbers.Real`` / ``Integral`` / ``Complex`` (through ``__class__``, while
    # ``type()`` stays Array so every fast path treats it as the Array it is).
    @property
    def __class__(self):
        if self._scalar:
            return _SCALAR_CLASSES.get(self._data.dtype.kind, Array)
        return Array

    def __hash__(self):
        if self._scalar:
            return hash(self._host_scalar().item())
        raise TypeError("unhashable type: 'minpy.Array' (only scalar results hash; "
                        "use a tuple, or x.tobytes(), as a key)")

    # ---------------------------------------------------------- host / device
    def asnumpy(self):
        """A new host ``numpy.ndarray`` with this array's values, which the caller owns.

        A copy, as MXNet's ``asnumpy`` (the value as of now: a later write into this
        array -- an executor's next forward, an in-place optimizer step -- does not
        change it); from a GPU, one counted device-to-host copy. ``numpy.asarray(x)``
        is the zero-copy view of a host array's buffer. Inside a function being
        traced by ``minpy.jit``, reading the value of an array that depends on the
        function's inputs raises ``minpy.JitTraceError``.

        See also mxnet.ndarray.NDArray.asnumpy.
        """
        d = self._host()
        return d.copy() if d is self._data else d

    def _host(self):
        """This array's host buffer itself (no copy), or a new host copy of a device
        array; after the jit, staleness and engine checks every read makes."""
        if _process.tracers:
            _check_trace_read(self)
        if STALE_ROOTS:
            check_fresh(self)
        wait(self)
        d = self._data
        if type(d) is _ndarray:
            return d
        return move_raw(d, _CPU0)

    def asscalar(self):
        """The value of a size-1 array as a NumPy scalar of its dtype; ValueError for any
        other size, as MXNet's. See also mxnet.ndarray.NDArray.asscalar."""
        if self._data.size != 1:
            raise ValueError("The current array is not a scalar")
        return self._host().reshape(())[()]

    @property
    def context(self):
        """The Context (device) this array lives on."""
        return context_of(self._data)

    ctx = context

    @property
    def device(self):
        """The Context (device) this array lives on (the array API's ``device``)."""
        return self.context

    def to_device(self, device, /, *, stream=None):
        """This array on ``device`` (a Context, or 'cpu' / 'gpu' / 'gpu:N'): itself if it
        lives there already, else a copy. See also the array API's ``to_device``."""
        ctx = context_named(device)
        if ctx is None:
            if isinstance(device, str):
                raise ValueError(f"to_device: unknown device {device!r}; expected a Context, "
                                 "'cpu', 'gpu' or 'gpu:N'")
            raise TypeError(f"to_device: device must be a minpy Context, got {device!r}")
        if stream is not None:
            raise ValueError("to_device: minpy orders copies on its engine; stream must be None")
        return self.as_in_context(ctx)

    def copyto(self, ctx):
        """A copy of this array on ``ctx`` (a Context), or into Array ``ctx``."""
        if isinstance(ctx, Array):
            ctx[...] = self
            return ctx
        wait(self)
        if context_of(self._data) == ctx:
            return self.copy()
        # a fresh copy, never this array's cached one: the caller may write to it
        return new(move_raw(self._data, ctx))

    def as_in_context(self, ctx):
        """This array if it already lives on ``ctx``, else a copy there."""
        if context_of(self._data) == ctx:
            return self
        return self.copyto(ctx)

    def wait_to_read(self):
        """Block until pending writes to this array are done: its asynchronous work on
        the engine, then the work queued on its GPU device. See also
        mxnet.ndarray.NDArray.wait_to_read."""
        wait(self)
        d = self._data
        if type(d) is not _ndarray:
            g = _process.gpu
            if g is not None and g.owns(d):
                g.synchronize(g.device_id(d))
        return self

    # -------------------------------------------------------- attributes
    @property
    def shape(self):
        return self._data.shape

    @shape.setter
    def shape(self, value):
        self._data.shape = value

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def size(self):
        return self._data.size

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    @property
    def strides(self):
        return self._data.strides

    @property
    def flags(self):
        return self._data.flags

    @property
    def base(self):
        """The array whose memory this one views, or None when it owns its memory (as
        ``numpy.ndarray.base``): an Array over that buffer (a new Array object, so
        ``x[1:].base is x`` is False where NumPy's is True; its values and memory are x's),
        or NumPy's object for a non-array buffer (``frombuffer``'s bytes)."""
        b = self._data.base
        if b is None:
            return None
        return wrap(b)

    @property
    def ctypes(self):
        """NumPy's ctypes interface to this host array's buffer (``data``, ``shape``,
        ``strides``, ``data_as``). See also numpy.ndarray.ctypes.

        Raises:
            TypeError: the array lives on a device (its pointer is not host memory).
        """
        if type(self._data) is not _ndarray:
            raise TypeError(f"x.ctypes: this Array lives on {self.context}; ctypes needs host "
                            "memory — call x.asnumpy() (or x.as_in_context(minpy.cpu()))")
        return self._host().ctypes

    def __buffer__(self, flags):
        """The buffer protocol (``memoryview(x)`` on Python >= 3.12): the host buffer.

        NumPy (``numpy.asarray``) tries this protocol before ``__array__`` and falls
        back to ``__array__`` when it raises, so the refusals below keep NumPy's door
        the same on Python 3.11 and 3.12.

        Raises:
            TypeError: the array lives on a device, or is being differentiated (the
                buffer would drop its gradient).
        """
        if type(self._data) is not _ndarray:
            raise TypeError(f"memoryview: this Array lives on {self.context}; the buffer "
                            "protocol needs host memory — call x.asnumpy() (or "
                            "x.as_in_context(minpy.cpu()))")
        if is_traced(self):
            raise TypeError("memoryview: this Array is being differentiated and the buffer "
                            "would drop its gradient; use minpy's functions on it, or "
                            "x.asnumpy() / minpy.stop_gradient(x) for its value alone")
        return memoryview(self._host())

    # -------------------------------------------------------- conversions
    def __len__(self):
        return len(self._data)

    def __contains__(self, value):
        # as numpy.ndarray: (self == value).any(), not a walk over the rows
        return bool((self == value).any())

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d array")      # at iter(), as NumPy
        return (self[i] for i in range(len(self._data)))

    def __bool__(self):
        # control flow on a traced value is allowed (as JAX and autograd): a branch
        # taken carries no gradient of its own
        return bool(self._host_scalar())

    def __int__(self):
        if self._node is not None:
            _refuse_traced(self, "int()")
        return int(self._host_scalar())

    def __float__(self):
        if self._node is not None:
            _refuse_traced(self, "float()")
        return float(self._host_scalar())

    def __complex__(self):
        if self._node is not None:
            _refuse_traced(self, "complex()")
        return complex(self._host_scalar())

    def __index__(self):
        if self._node is not None:
            _refuse_traced(self, "operator.index()")
        return operator.index(self._host_scalar())

    def __round__(self, ndigits=None):
        # a scalar Array (a device result) rounds as NumPy's scalar: round(s) an int,
        # round(s, 1) a NumPy scalar; arrays as numpy.ndarray.__round__
        if self._node is not None:
            _refuse_traced(self, "round()")
        d = self._host_scalar()
        v = d[()] if d.ndim == 0 else d
        return round(v) if ndigits is None else round(v, ndigits)

    def _host_scalar(self):
        if _process.tracers:
            _check_trace_read(self)
        if STALE_ROOTS:
            check_fresh(self)
        wait(self)
        d = self._data
        if type(d) is not _ndarray:
            d = data_on(self, _CPU0)
        return d

    def item(self, *args):
        """The element as a Python scalar. See also numpy.ndarray.item.

        Refused on an Array being differentiated (the Python number would carry
        no gradient): use ``minpy.stop_gradient(x).item()`` for its value alone.
        """
        if self._node is not None:
            _refuse_traced(self, "x.item()")
        return self._host().item(*args)

    def tolist(self):
        """Nested Python lists. See also numpy.ndarray.tolist.

        Refused on an Array being differentiated, as :meth:`item`.
        """
        if self._node is not None:
            _refuse_traced(self, "x.tolist()")
        return self._host().tolist()

    def tobytes(self, order="C"):
        return self._host().tobytes(order)

    def __array__(self, dtype=None, copy=None):
        d = self._data
        if type(d) is not _ndarray:
            raise TypeError(f"numpy.asarray: this Array lives on {context_of(d)}; NumPy would "
                            "need a device-to-host copy, which minpy never makes unasked — "
                            "call x.asnumpy() (or x.as_in_context(minpy.cpu()))")
        if is_traced(self):
            raise TypeError("numpy.asarray: this Array is being differentiated and NumPy "
                            "would drop its gradient; use minpy's functions on it, or "
                            "x.asnumpy() / minpy.stop_gradient(x) for its value alone")
        d = self._host()
        if dtype is not None and d.dtype != dtype:
            if copy is False:
                raise ValueError("__array__: a cast to another dtype needs a copy")
            return d.astype(dtype)
        if copy:
            return d.copy()
        return d

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array's buffer (see the array API standard)."""
        wait(self)
        kw = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                ("dl_device", dl_device), ("copy", copy)) if v is not None}
        return self._data.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # -------------------------------------------------------- protocols
    # A host array prints exactly as NumPy's (its repr, str and format, under NumPy's
    # print options); a scalar result as NumPy's scalar (``np.float64(3.0)``). A device
    # array adds its device, spelt as the ``device=`` argument that recreates it:
    # ``array([0, 1, 4], device=gpu(0))``.
    def __repr__(self):
        if _process.tracers and _traced_value(self):
            return f"Array(<traced by minpy.jit>, shape={self.shape}, dtype={self.dtype})"
        text = repr(self._printable())
        d = self._data
        if type(d) is _ndarray:
            return text
        # NumPy's reprs end in ")"; only a scalar under legacy print options is bare
        ctx = context_of(d)
        return f"{text[:-1]}, device={ctx})" if text[-1:] == ")" else f"{text} (device={ctx})"

    def __str__(self):
        if _process.tracers and _traced_value(self):
            return repr(self)
        return str(self._printable())

    def __format__(self, spec):
        if not spec and _process.tracers and _traced_value(self):
            return repr(self)
        return format(self._printable(), spec)

    def _printable(self):
        """The host NumPy value that prints as this array: a NumPy scalar for a scalar."""
        d = self._host()
        return d[()] if self._scalar else d

    def __reduce__(self):
        return (_rebuild, (self._host(), self.context))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def fill(self, value):
        """Set every element to ``value`` in place. See also numpy.ndarray.fill."""
        self[...] = value

    def resize(self, *shape, refcheck=True):
        raise NotImplementedError("Array.resize: in-place resizing is not supported; "
                                  "use minpy.resize(x, shape)")

    def dump(self, file):
        self._host().dump(file)

    def dumps(self):
        return self._host().dumps()


_new = object.__new__
_process = state.process
_per_thread = state.per_thread


def new(data):
    """Wrap backend array ``data`` as an Array (no copy)."""
    a = _new(Array)
    a._data = data
    a._node = None
    a._copies = None
    a._var = None
    a._scalar = False
    return a


def new_scalar(data):
    """Wrap 0-d backend array ``data`` as a scalar result: an Array that behaves like
    NumPy's immutable scalars (see ``Array.__class__``)."""
    a = new(data)
    a._scalar = True
    return a


class RealScalar(Array):
    """What ``x.__class__`` says for a real (float) scalar result: a ``numbers.Real``.
    Never instantiated: ``type(x)`` is Array."""
    __slots__ = ()


class IntegralScalar(Array):
    """``x.__class__`` of an integer scalar result: a ``numbers.Integral``."""
    __slots__ = ()


class ComplexScalar(Array):
    """``x.__class__`` of a complex scalar result: a ``numbers.Complex``."""
    __slots__ = ()


class BoolScalar(Array):
    """``x.__class__`` of a boolean scalar result (NumPy's ``bool_`` is no Number)."""
    __slots__ = ()


numbers.Real.register(RealScalar)
numbers.Integral.register(IntegralScalar)
numbers.Complex.register(ComplexScalar)
_SCALAR_CLASSES = {"f": RealScalar, "i": IntegralScalar, "u": IntegralScalar,
                   "c": ComplexScalar, "b": BoolScalar}


def wrap(res):
    """Wrap backend arrays inside ``res`` (array, tuple, namedtuple, list) as Arrays.

    A NumPy scalar stays what it is: this is the result of a call that nothing
    differentiates or traces, on host data, where NumPy's own scalar (``numpy.float64``
    subclasses ``float``) is the right answer. Results a tape or ``minpy.jit`` must see
    go through :func:`kept` as well; while minpy's own code computes on scalar Arrays
    (a backward pass: ``thread_flags().keep_scalars``), they stay Arrays too."""
    t = type(res)
    if t is _ndarray:
        return new(res)
    if isinstance(res, _generic):
        return new_scalar(_asarray(res)) if _per_thread.flags.keep_scalars else res
    if t is tuple or t is list:
        return t(wrap(r) for r in res)
    if isinstance(res, tuple):           # namedtuple results (linalg.eig, ...)
        return t._make(wrap(r) for r in res)
    g = state.process.gpu
    if g is not None and g.owns(res):
        return new(res)
    return res


def kept(res):
    """``res`` (a call's wrapped result) with the NumPy scalars in it as scalar Arrays
    (immutable, printing as NumPy's scalars): the results a gradient tape or
    ``minpy.jit``'s tracer records, and those of calls on a device, must stay Arrays
    to be followed."""
    if isinstance(res, _generic):
        return new_scalar(_asarray(res))
    t = type(res)
    if t is tuple or t is list:
        return t(kept(r) for r in res)
    if t is not Array and isinstance(res, tuple):
        return t._make(kept(r) for r in res)
    return res


def arrays_in(args, kwargs):
    """The Arrays among ``args`` and ``kwargs``' values, at any depth of containers."""
    return [a for a in tree.leaves((args, kwargs)) if type(a) is Array]


# Buffers superseded by a write recorded on a tape: {id(root buffer): (buffer, tape,
# writer)}. Under a tape ``y[k] = v`` rebinds ``y`` to a new value (the old one is
# kept for the backward pass), so a view taken before the write, or the base of a
# written view, would show the old contents where NumPy shows the new ones: reading
# one is refused. Emptied for a tape when it closes; empty (one dict test per traced
# call) unless a traced write happened.
STALE_ROOTS = {}


def check_fresh(a):
    """Refuse reading Array ``a`` when its buffer was superseded by a write under a tape
    (see :data:`STALE_ROOTS`)."""
    hit = STALE_ROOTS.get(id(engine.root_of(a._data)))
    if hit is None:
        return
    if hit[0] is not a._data:
        raise ValueError(
            f"minpy.grad: this array shares memory with an array written in place by "
            f"{hit[2]} while a gradient was being recorded, after they were linked (a view "
            "taken before the write, or the base of a written view); under a gradient tape "
            "a write makes a new value, so this array would not show the write as NumPy "
            "does. Take the view after the write, or write through the array itself.")
    raise ValueError(
        f"minpy.grad: this array's contents were replaced by a write in place "
        f"({hit[2]}) while a gradient was being recorded, through another array sharing "
        "its memory (a view of it, or the differentiated copy of it); under a gradient "
        "tape the write does not reach this array, so its value would differ from "
        "NumPy's. Write into the array itself (x[key] = v), not into a view of it.")


def _refuse_traced(a, what):
    """Refuse turning Array ``a`` into a Python number while a tape differentiates it:
    the number would silently drop out of the gradient (autograd and JAX refuse too)."""
    if a._node.tape.active:
        raise TypeError(f"minpy.grad: {what} of an Array being differentiated would drop it "
                        "from the gradient (the Python number is a constant to the tape); "
                        "use minpy's functions on the Array, or minpy.stop_gradient(x) / "
                        "x.asnumpy() where its value is meant as a constant")


def is_traced(a):
    """True when Array ``a`` is being differentiated (a node of an active tape)."""
    n = a._node
    return n is not None and n.tape.active


def host_operands(args, kwargs):
    """``(args, kwargs)`` with their Arrays (in nested lists/tuples too) replaced by host
    buffers when every one of them lives on the host and is not being differentiated;
    else None (minpy must run the call). None as well when no Array is found, or while
    ``minpy.jit`` traces this thread."""
    if _process.tracers and tracing():
        return None
    found = False
    for a in arrays_in(args, kwargs):
        if type(a._data) is not _ndarray or is_traced(a):
            return None
        found = True
    if not found:
        return None

    def host(a):
        t = type(a)
        if t is Array:
            wait(a)
            return a._data
        if t is tuple or t is list:
            return t(host(e) for e in a)
        return a
    return tuple(host(a) for a in args), {k: host(v) for k, v in kwargs.items()}


def unwrap_cpu(a):
    """Host data of an Array argument (recursing into lists/tuples), for the fast path."""
    t = type(a)
    if t is Array:
        return a._data
    if t is tuple or t is list:
        for e in a:
            te = type(e)
            if te is Array or te is tuple or te is list:
                return t(unwrap_cpu(e) for e in a)
    return a


def wait(arr):
    """Block until pending engine work on Array ``arr``'s storage finishes; re-raise its
    error (the Var of its buffer carries work pushed through any view of the buffer).

    Inside an engine op (a CustomOp's code run by an executor) it returns at once, as
    ``engine.wait_storage`` does: the op declared what it reads and writes, and waiting
    on a Var it holds would deadlock."""
    v = arr._var
    if v is not None:
        if engine.get_engine().in_op():
            return
        engine.wait_for(v)
    engine.wait_storage(arr._data, v)


def _rebuild(host, ctx):
    try:
        return new(move_raw(host, ctx))
    except RuntimeError:          # pickled on a GPU, loaded without one
        return new(host)
