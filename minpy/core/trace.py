"""Recording what a function computes, for ``minpy.jit``.

While a :class:`Tracer` is installed in a thread (``dispatch.state.enter_trace``),
every primitive call of that thread that runs (``core.execute.run``, reached from
the front door or from the tape) runs as usual and is then appended by
:meth:`Tracer.record` to the trace as a *step* reading and writing *slots*
(see :mod:`minpy.core.recorder`: the tracer and the tape are the thread's two
recorders; this module records, ``core.execute`` runs).  A slot is one backend
array the function saw: an input, an array captured from outside (read by
reference at each replay, so parameters updated in place are seen), or a step's
result.  Calls made by the tape's backward pass come through the same door, so
a function that calls ``minpy.grad`` inside is traced with its gradient: the
backward steps extend the forward ones in one trace.

Big operators (``symbol.function``) and fused optimizer steps do not run
primitives; they are :class:`~minpy.core.recorder.OpaquePrimitive` calls, each
recorded as one *opaque* step (:meth:`Tracer.opaque`): a Python callable of
backend arrays replayed as is.

A slot is *dynamic* when its value depends on the inputs, on captured arrays or
on a random draw.  Reading a dynamic value into Python (``bool``, ``float``,
``.item()``, ``asnumpy`` ...) cannot be traced: :meth:`Tracer.check_read` raises
:class:`JitTraceError` naming the function and the line, or, for
``jit(..., fallback=True)``, lets the read through and marks the trace unusable
(the function then runs eagerly).  Static slots (computed from Python constants
only) may be read; their trace-time values become constants of the program.
"""
import os
import sys

import numpy

from . import tree
from .array import Array, new
from .recorder import current_tracer, tracing
from ..dispatch import state
from ..dispatch.backend import NUMPY

__all__ = ["Tracer", "Slot", "Step", "Ref", "JitTraceError", "current_tracer", "tracing",
           "rewrap"]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# functions whose Python result depends on shapes and dtypes only
_SHAPE_ONLY = frozenset(("shape", "ndim", "size", "result_type", "can_cast", "iscomplexobj",
                         "isrealobj", "isscalar", "min_scalar_type", "promote_types",
                         "ndarray.__len__", "broadcast_shapes"))


class JitTraceError(RuntimeError):
    """A function traced by ``minpy.jit`` reads the value of an array that depends on
    its inputs into Python (control flow on array values cannot be traced)."""


class Ref:
    """A slot reference inside an argument template."""

    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot

    def __repr__(self):
        return f"Ref({self.slot})"


class Slot:
    """One backend array of the trace (see module doc).

    ``kind``: 'input', 'capture' or 'op'; ``array``: for a capture, the Array
    read at each replay; ``value``: the backend array at trace time; ``root``:
    the slot whose buffer this one views (itself if it owns its buffer);
    ``written``: some step writes it in place; ``producer``: the step index.
    """

    __slots__ = ("index", "kind", "shape", "dtype", "dynamic", "value", "array", "root",
                 "written", "producer")

    def __init__(self, index, kind, value, dynamic, producer=None, array=None):
        self.index, self.kind, self.value, self.dynamic = index, kind, value, dynamic
        self.shape = tuple(getattr(value, "shape", ()))
        self.dtype = getattr(value, "dtype", None)
        self.array, self.root, self.written, self.producer = array, index, False, producer

    @property
    def nbytes(self):
        return int(getattr(self.value, "nbytes", 0))


class Step:
    """One recorded call.

    ``kind``: 'raw' (``fn``, the NumPy function, called on host arrays: a call that
    ran on the host, GPU or not), 'generic' (the primitive run through the front
    door on Arrays: a call that ran on a GPU) or 'opaque'
    (``fn(*backend arrays) -> tuple of backend arrays``);
    ``args``/``kwargs``: templates with :class:`Ref` for slots; ``outs``:
    ``[(position or None, slot)]``; ``writes``: slots written in place;
    ``as0d``: slots whose value is a NumPy scalar to turn into a 0-d array.
    """

    __slots__ = ("kind", "prim", "fn", "args", "kwargs", "reads", "outs", "writes",
                 "side_effect", "name", "as0d", "seq")

    def __init__(self, kind, prim, fn, args, kwargs, reads, name):
        self.kind, self.prim, self.fn, self.args, self.kwargs = kind, prim, fn, args, kwargs
        self.reads, self.name = reads, name
        self.outs, self.writes, self.as0d = [], [], set()
        self.side_effect = False
        self.seq = False            # the call returns a sequence (outs are positions in it)


class Tracer:
    """Records the steps of one traced call (see module doc)."""

    def __init__(self, fun_name, fallback=False, external=None):
        self.fun_name = fun_name
        self.fallback = fallback
        # {id(backend array): Array} read from outside (closures, globals): captured
        # by reference even when read-only or a bare NumPy array
        self.external = external or {}
        self.untraceable = None         # the message of the first value read (fallback)
        self.slots = []
        self.slot_of = {}               # id(backend array) -> slot index
        self.steps = []
        self._keep = []                 # every backend array seen: ids stay unique

    # ---------------------------------------------------------------- slots
    def _new_slot(self, kind, value, dynamic, producer=None, array=None):
        s = Slot(len(self.slots), kind, value, dynamic, producer, array)
        self.slots.append(s)
        self.slot_of[id(value)] = s.index
        self._keep.append(value)
        return s

    def add_input(self, arr):
        """Slot of input Array ``arr`` (the same slot for the same buffer)."""
        k = self.slot_of.get(id(arr._data))
        if k is not None:
            return k
        return self._new_slot("input", arr._data, True).index

    def slot_for(self, arr):
        """Slot of an Array met in a call: known, else a capture."""
        d = arr._data
        k = self.slot_of.get(id(d))
        if k is not None:
            return k
        # a read-only array (a cached seed gradient, a broadcast constant) is a constant,
        # unless read from outside: a read-only view may see its base written
        # CuPy's flags have no ``writeable``: a CuPy array is always writeable
        flags = getattr(d, "flags", None)
        dynamic = (flags is None or bool(getattr(flags, "writeable", True))
                   or id(d) in self.external)
        return self._new_slot("capture", d, dynamic, array=arr).index

    def _external_of(self, obj):
        """The Array standing for bare NumPy array ``obj`` read from outside, or None."""
        a = self.external.get(id(obj))
        return a if a is not None and a._data is obj else None

    def is_dynamic(self, arr):
        """True when Array ``arr`` holds a value of this trace that depends on its inputs."""
        k = self.slot_of.get(id(arr._data))
        return k is not None and self.slots[k].dynamic

    def check_read(self, arr):
        """Refuse reading a dynamic value into Python (see module doc)."""
        if self.is_dynamic(arr):
            self._untraceable("converts an array that depends on the function's inputs to a "
                              "Python value (bool/int/float/item/asnumpy/numpy.asarray)")

    def _untraceable(self, what):
        where = _user_frame()
        msg = (f"minpy.jit: {self.fun_name} {what} at {where}; control flow on array values "
               "cannot be traced. Use minpy.where / array arithmetic instead, pass the value "
               "as a static argument (static_argnums), or use jit(..., fallback=True) to run "
               "such a function eagerly")
        self.refuse(msg)

    def refuse(self, msg):
        """Raise :class:`JitTraceError` with ``msg``; with ``fallback``, mark the trace
        unusable instead (the function then runs eagerly)."""
        if not self.fallback:
            raise JitTraceError(msg)
        if self.untraceable is None:
            self.untraceable = msg

    # ------------------------------------------------------------ templates
    def _template(self, obj, reads):
        t = type(obj)
        if t is numpy.ndarray:
            a = self._external_of(obj)
            if a is not None:
                obj, t = a, Array
        if t is Array:
            k = self.slot_for(obj)
            reads.append(k)
            return Ref(k)
        if obj is None or not tree.is_node(obj):
            return obj
        leaves, td = tree.flatten(obj)
        if not any(type(v) is Array or (type(v) is numpy.ndarray and
                                        self._external_of(v) is not None) for v in leaves):
            return obj
        return tree.unflatten(td, [self._template(v, reads) for v in leaves])

    # ------------------------------------------------------------ recording
    def record(self, prim, args, kwargs, res):
        """Append the step of a call of ``prim`` that returned ``res``."""
        reads = []
        targs = self._template(tuple(args), reads)
        tkw = self._template(dict(kwargs), reads) if kwargs else {}
        host_fn = prim.host_fn if prim.host_fn is not None else prim.backend_impl(NUMPY)
        if host_fn is not None and self._ran_on_host(reads, args, kwargs, res):
            fn, kind = host_fn, "raw"
        else:
            fn, kind = prim, "generic"
        step = Step(kind, prim, fn, targs, tkw, reads, prim.qualname)
        random = prim.qualname.startswith("random.")
        dynamic = random or any(self.slots[k].dynamic for k in reads)
        step.side_effect = random
        writes = []
        if prim.mutates is not None:
            target = args[prim.mutates] if len(args) > prim.mutates else next(
                (kwargs[k] for k in ("dst", "a", "arr", "x") if kwargs and k in kwargs), None)
            if type(target) is numpy.ndarray:
                target = self._external_of(target)
            if type(target) is Array:
                writes.append(self.slot_for(target))
        out = kwargs.get("out") if kwargs else None
        if out is not None:
            for o in (out if isinstance(out, tuple) else (out,)):
                if type(o) is numpy.ndarray:
                    o = self._external_of(o)
                if type(o) is Array:
                    writes.append(self.slot_for(o))
        for w in writes:
            s = self.slots[w]
            s.written = True
            self.slots[s.root].written = True
            if dynamic:
                s.dynamic = self.slots[s.root].dynamic = True
        step.writes = writes
        index = len(self.steps)
        if type(res) is Array:
            self._output(step, None, res, reads, dynamic, index)
        elif isinstance(res, (tuple, list)):
            step.seq = True
            for i, r in enumerate(res):
                if type(r) is Array:
                    self._output(step, i, r, reads, dynamic, index)
        elif res is not None and dynamic and prim.qualname not in _SHAPE_ONLY:
            self._untraceable(f"calls {prim.qualname}, which returns a Python "
                              f"{type(res).__name__} computed from traced arrays,")
        self.steps.append(step)

    def _ran_on_host(self, reads, args, kwargs, res):
        """True when a call read and made host (NumPy) buffers only: its replay calls
        NumPy directly (planned, fused), as on a machine without a GPU, while calls
        that ran on a GPU replay through the front door (dispatch on their devices)."""
        if state.process.cpu_only:
            return True
        slots = self.slots
        if any(type(slots[k].value) is not numpy.ndarray for k in reads):
            return False
        gpu = state.process.gpu
        for v in tree.leaves((args, kwargs, res)):
            t = type(v)
            if t is Array:
                if type(v._data) is not numpy.ndarray:
                    return False
            elif t is not numpy.ndarray and gpu is not None and gpu.owns(v):
                return False
        return True

    def _output(self, step, pos, arr, reads, dynamic, index):
        raw = arr._data
        k = self.slot_of.get(id(raw))
        if k is None:
            s = self._new_slot("op", raw, dynamic, producer=index)
            if getattr(raw, "base", None) is not None:
                for r in reads:
                    rv = self.slots[r].value
                    if _may_share(raw, rv):
                        s.root = self.slots[r].root
                        break
            if s.shape == () and isinstance(raw, numpy.ndarray):
                step.as0d.add(s.index)
            k = s.index
        step.outs.append((pos, k))

    def record_opaque(self, prim, args, kwargs, res, mark):
        """Record a call of :class:`~minpy.core.recorder.OpaquePrimitive` ``prim`` that
        returned ``res`` as one opaque step (its ``replay``), in place of the steps its
        body recorded since ``mark`` (``len(self.steps)`` before it ran): the replay
        runs the whole body again."""
        del self.steps[mark:]
        fn, inputs, outputs, writes = prim.replay(args, kwargs, res)
        self.opaque(prim.qualname, fn, inputs, outputs, side_effect=prim.side_effect,
                    writes=writes)

    def checked(self, name, fn, args, kwargs=None):
        """Run ``fn(*args, **kwargs)`` (a custom op's body or gradient) and keep what it
        recorded if every Array it returns came from recorded steps; if it computed
        some outside minpy's primitives (on backend buffers), replace its steps by
        one opaque step that calls ``fn`` again at each replay."""
        mark = len(self.steps)
        res = fn(*args, **(kwargs or {}))
        outs = _arrays_in(res)
        if all(id(o._data) in self.slot_of for o in outs):
            return res
        side = any(st.side_effect or st.writes for st in self.steps[mark:])
        del self.steps[mark:]
        kw = dict(kwargs or {})
        n = len(args)

        def replay(*raws):
            vals = [rewrap(r) for r in raws]
            r = fn(*vals[:n], **dict(zip(kw, vals[n:])))
            return tuple(a._data for a in _arrays_in(r))
        self.opaque(name, replay, list(args) + list(kw.values()), outs, side_effect=side)
        return res

    def opaque(self, name, fn, inputs, outputs, side_effect=False, writes=()):
        """Record an opaque step: ``fn(*inputs at replay)`` returns a tuple with one
        value per item of ``outputs`` (what the step gave at trace time).

        Arrays among ``inputs`` are passed as backend arrays; other objects that an
        earlier opaque step returned (a big operator's call state) are passed as
        themselves. ``outputs`` are Arrays or such objects; ``writes``: Arrays among
        ``inputs`` that ``fn`` writes in place.
        """
        reads, targs = [], []
        for x in inputs:
            if type(x) is numpy.ndarray and self._external_of(x) is not None:
                x = self._external_of(x)
            if type(x) is Array or (x is not None and tree.is_node(x)):
                targs.append(self._template(x, reads))
            elif id(x) in self.slot_of:
                k = self.slot_of[id(x)]
                reads.append(k)
                targs.append(Ref(k))
            else:
                targs.append(x)
        step = Step("opaque", None, fn, tuple(targs), {}, reads, name)
        step.side_effect = side_effect
        for w in writes:
            k = self.slot_for(w)
            step.writes.append(k)
            self.slots[k].written = self.slots[self.slots[k].root].written = True
        step.seq = True
        index = len(self.steps)
        for i, o in enumerate(outputs):
            if type(o) is Array:
                self._output(step, i, o, reads, True, index)
            else:
                step.outs.append((i, self._new_slot("op", o, True, producer=index).index))
        self.steps.append(step)


def _arrays_in(obj):
    """The Arrays among the leaves of ``obj``."""
    return [v for v in tree.leaves(obj) if type(v) is Array]


def _rewrap_leaf(v):
    if type(v) is numpy.ndarray or (state.process.gpu is not None and state.process.gpu.owns(v)):
        return new(v)
    return v


def rewrap(obj):
    """Backend arrays inside ``obj`` (as a replay passes slots) as Arrays again."""
    return tree.map_tree(_rewrap_leaf, obj)


def _may_share(a, b):
    if isinstance(a, numpy.ndarray) and isinstance(b, numpy.ndarray):
        return numpy.may_share_memory(a, b)
    return getattr(a, "base", None) is not None


def _user_frame():
    """'file:line' of the innermost frame outside minpy (the user's line)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno} (in {f.f_code.co_name})"
