"""A trace turned into a program: constants folded, dead steps dropped, memory
planned, elementwise chains fused, and compiled to one straight-line Python
function.

Passes, in order (:func:`build_program`):

1. **constants**: a slot computed only from Python constants (not from inputs,
   captures or random draws) and never written keeps its trace-time value; the
   steps that made it are dropped (``arange`` of an index, the seed gradient,
   ``zeros`` that are only read ...);
2. **dead steps**: a step is kept when it makes an output, writes an input or a
   captured array, feeds a kept step, or draws random numbers;
3. **broadcasts**: a ``broadcast_to`` read only by elementwise ufunc steps that
   broadcast it to the same shape themselves is dropped (its source is read
   instead: the same stride-0 operand, so the same results); a reduction with
   ``keepdims=True`` read only by a reshape dropping those axes (a gradient's
   unbroadcast sum) reduces with ``keepdims=False`` instead;
4. **fusion** (``minpy.jit.fuse``): chains of elementwise NumPy ufunc steps
   become one compiled kernel where that measures faster;
5. **memory**: every result of a NumPy ufunc (``matmul`` included) that is not
   returned is written with ``out=`` into a buffer planned by
   ``minpy.symbol.passes.plan_memory.plan_memory`` (in place when the op allows it and the
   input dies there, storage shared by lifetimes, one arena); a donated input's
   buffer is reused in place by the elementwise step where it dies;
6. **code**: one Python function whose locals are the slots, each step a
   call, compiled once (no per-step dispatch, no dictionary lookups).

A planned buffer is reused by every call: the program is not reentrant, so a
lock serialises calls of one program.
"""
import logging
import threading

import numpy

from ..core import tree
from ..core.array import new
from ..core.ops import broadcast_host, reshape_host
from ..core.execute import mutated, run_untraced
from ..numpy.vjp_math import JIT_HOST_FORMS
from ..symbol.passes.plan_memory import plan_memory
from ..core.trace import Ref, Step

__all__ = ["Program", "build_program"]

log = logging.getLogger("minpy.jit.api")

_ufunc = numpy.ufunc
_ARENA_ALIGN = 64


def _as0d(r):
    return numpy.asarray(r) if isinstance(r, numpy.generic) else r


class Program:
    """A compiled trace (see module doc).

    Attributes: ``code`` (the generated source), ``out_meta`` (each output's
    shape and dtype), ``num_steps`` (kept steps; ``traced_steps`` recorded),
    ``planned_bytes`` (the arena), ``unplanned_bytes`` (bytes of step results
    allocated at each call), ``folded`` (constants), ``fused`` (kernels made),
    ``step_kinds`` (each kept step's kind: 'raw' NumPy calls, 'fused' kernels,
    'generic' calls through the front door -- those that ran on a GPU -- and
    'opaque' ones), ``step_names`` (their names), ``host_forms`` (opaque steps
    replayed as their lean host form, ``minpy.numpy.vjp_math.JIT_HOST_FORMS``),
    ``captures`` (the captured Arrays and their signature).
    """

    def __init__(self, fn, code, captures, written_inputs, written_captures, out_slots,
                 stats):
        self._fn, self.code = fn, code
        self.captures = captures
        self._written_inputs, self._written_captures = written_inputs, written_captures
        self.out_slots = out_slots
        self.__dict__.update(stats)
        self._lock = threading.Lock()
        self.var = None            # the engine Var of its buffers, made on first async run

    def captures_match(self):
        """True while every captured Array still has its trace-time shape and dtype."""
        for a, shape, dtype in self.captures:
            d = a._data
            if d.shape != shape or d.dtype != dtype:
                return False
        return True

    def written_arrays(self, inputs):
        """The Arrays a run writes in place: written inputs, then written captures."""
        return [inputs[i] for i in self._written_inputs] + list(self._written_captures)

    def run(self, inputs):
        """Run on the inputs' Arrays (unique input slots in order); returns the
        outputs' backend arrays."""
        with self._lock:
            outs = self._fn(*[a._data for a in inputs])
        for i in self._written_inputs:
            mutated(inputs[i])
        for a in self._written_captures:
            mutated(a)
        return outs


def build_program(tracer, input_slots, out_slots, donate=(), fuse=None, plan=True,
                  name="f"):
    """Compile the steps of ``tracer`` into a :class:`Program`.

    Args:
        tracer: the finished ``minpy.core.trace.Tracer``.
        input_slots: slot of each unique input, in the order ``Program.run`` gets them.
        out_slots: slot of each output (the function's flattened Array results).
        donate: input positions (in ``input_slots``) whose buffers may be reused.
        fuse: a function ``(steps, slots, keep) -> steps`` (the fusion pass) or None.
        plan: plan memory (``out=`` buffers); False allocates every result.
        name: the traced function's name (for the code and the log).
    """
    slots, steps = tracer.slots, tracer.steps
    outs = set(out_slots)
    out_roots = {slots[k].root for k in out_slots}
    folded = _fold_constants(slots, steps, outs | out_roots)
    live_steps = _live(slots, steps, outs, folded)
    live_steps = _fold_broadcasts(slots, live_steps, outs | out_roots)
    live_steps = _fold_keepdims(slots, live_steps, outs | out_roots)
    if fuse is not None:
        live_steps = fuse(live_steps, slots, outs | out_roots)
    planned, arena, plan_stats = ({}, None, {"planned_bytes": 0, "naive_bytes": 0}) if not plan \
        else _plan(slots, live_steps, outs | out_roots, {input_slots[i] for i in donate})
    src, env = _generate(slots, live_steps, input_slots, out_slots, folded, planned, name)
    code = compile(src, f"<minpy.jit {name}>", "exec")
    exec(code, env)
    fn = env["_replay"]
    captures = [(slots[k].array, slots[k].shape, slots[k].dtype)
                for k in range(len(slots)) if slots[k].kind == "capture"
                and _used(k, live_steps)]
    written = set()
    for st in live_steps:
        for w in st.writes:
            written.add(w)
            written.add(slots[w].root)
    pos = {k: i for i, k in enumerate(input_slots)}
    written_inputs = sorted(pos[k] for k in written if k in pos)
    written_captures = [slots[k].array for k in sorted(written)
                        if slots[k].kind == "capture"]
    made = {k for st in live_steps for _, k in st.outs
            if slots[k].kind == "op" and slots[k].root == k and k not in planned}
    unplanned = sum(slots[k].nbytes for k in made)
    stats = dict(plan_stats, arena=arena, unplanned_bytes=unplanned, folded=len(folded),
                 num_steps=len(live_steps), traced_steps=len(steps),
                 fused=sum(1 for st in live_steps if st.kind == "fused"),
                 step_kinds=[st.kind for st in live_steps],
                 step_names=[st.name for st in live_steps],
                 host_forms=sum(1 for st in live_steps if _host_form(st, slots) is not None))
    stats["out_meta"] = [(slots[k].shape, slots[k].dtype) for k in out_slots]
    stats["name"] = name
    prog = Program(fn, src, captures, written_inputs, written_captures, list(out_slots), stats)
    log.debug("jit %s: %d traced steps -> %d (%d constants folded, %d fused kernels); "
              "planned %d bytes (naive %d), %d bytes allocated per call", name, len(steps),
              len(live_steps), len(folded), prog.fused, prog.planned_bytes,
              prog.naive_bytes, unplanned)
    return prog


def _used(k, steps):
    return any(k in st.reads for st in steps)


# ------------------------------------------------------------------ passes
def _fold_constants(slots, steps, keep):
    """Slots whose trace-time value is a constant (see module doc)."""
    folded = set()
    for st in steps:
        if st.side_effect or st.writes or st.kind == "opaque":
            continue
        if any(slots[k].kind == "capture" and slots[k].dynamic for k in st.reads):
            continue
        ks = [k for _, k in st.outs]
        if ks and all(not slots[k].dynamic and not slots[k].written
                      and not slots[slots[k].root].written and k not in keep for k in ks):
            folded.update(ks)
    return folded


def _live(slots, steps, outs, folded):
    """The steps that must run, in order (see module doc)."""
    live = set(outs)
    for s in slots:
        if s.kind in ("input", "capture") and s.written:
            live.add(s.index)
    kept = []
    for st in reversed(steps):
        made = [k for _, k in st.outs]
        if all(k in folded for k in made) and made and not st.writes and not st.side_effect:
            continue
        needed = st.side_effect or any(k in live or slots[k].root in live for k in made) or \
            any(w in live or slots[w].root in live for w in st.writes)
        if not needed:
            continue
        kept.append(st)
        for k in st.reads + st.writes:
            live.add(k)
            live.add(slots[k].root)
    kept.reverse()
    return kept


_BROADCASTS = (broadcast_host, numpy.broadcast_to)


def _fold_broadcasts(slots, steps, keep):
    """``steps`` without the broadcasts their readers do themselves (see module doc)."""
    readers = {}
    for i, st in enumerate(steps):
        for k in st.reads + st.writes:
            readers.setdefault(k, []).append(i)
    swap, drop = {}, set()
    for i, st in enumerate(steps):
        if st.kind != "raw" or st.fn not in _BROADCASTS or st.seq or len(st.outs) != 1 or \
                st.writes or st.kwargs or not st.args or type(st.args[0]) is not Ref:
            continue
        k, src = st.outs[0][1], st.args[0].slot
        # (a view of src; its readers, all ufuncs, make no view of it)
        if k in keep or slots[k].written or slots[src].dtype != slots[k].dtype:
            continue
        users = readers.get(k, [])
        if users and all(_broadcasts_itself(steps[j], k, src, slots) for j in users):
            drop.add(i)
            for j in users:
                swap.setdefault(j, {})[k] = src
    if not drop:
        return steps
    out = []
    for i, st in enumerate(steps):
        if i in drop:
            continue
        if i in swap:
            st = _with_reads(st, swap[i])
        out.append(st)
    return out


def _fold_keepdims(slots, steps, keep):
    """``steps`` with ``reduce(keepdims=True)`` + reshape dropping the kept axes made
    one ``reduce(keepdims=False)`` (see module doc)."""
    readers = {}                # (a view of k is made by a step reading k itself)
    for i, st in enumerate(steps):
        for k in st.reads + st.writes:
            readers.setdefault(k, set()).add(i)
    drop, swap = set(), {}
    for i, st in enumerate(steps):
        if st.kind != "raw" or st.seq or len(st.outs) != 1 or st.writes or \
                getattr(st.fn, "__wrapped__", st.fn) not in _REDUCE or \
                st.kwargs.get("keepdims") is not True or not set(st.kwargs) <= _REDUCE_KWARGS \
                or len(st.args) != 1 or type(st.args[0]) is not Ref:
            continue
        k = st.outs[0][1]
        users = readers.get(k, set())
        if k in keep or slots[k].written or slots[k].root != k or len(users) != 1:
            continue
        j = next(iter(users))
        r = steps[j]
        if j <= i or r.kind != "raw" or r.fn not in (reshape_host, numpy.reshape) or r.seq or \
                r.kwargs or r.writes or len(r.outs) != 1 or r.reads != [k] or \
                len(r.args) != 2 or type(r.args[0]) is not Ref:
            continue
        axis = st.kwargs.get("axis")
        nd = len(slots[st.args[0].slot].shape)
        axes = (axis,) if type(axis) is int else axis
        if type(axes) is not tuple or not all(type(a) is int and -nd <= a < nd for a in axes):
            continue
        axes = {a % nd for a in axes}
        kr = r.outs[0][1]
        squeezed = tuple(n for d, n in enumerate(slots[k].shape) if d not in axes)
        if slots[kr].shape != squeezed or slots[kr].written:
            continue
        folded = Step(st.kind, st.prim, st.fn, st.args, dict(st.kwargs, keepdims=False),
                      list(st.reads), st.name)
        folded.outs = [(st.outs[0][0], kr)]
        folded.as0d = {kr} if squeezed == () else set()     # (a 0-d array, not a scalar)
        swap[i], drop = folded, drop | {j}
    if not drop:
        return steps
    return [swap.get(i, st) for i, st in enumerate(steps) if i not in drop]


def _broadcasts_itself(st, k, src, slots):
    """True when elementwise ufunc step ``st`` gives the same result reading ``src``
    for its operand ``k`` (a broadcast of ``src``)."""
    fn = st.fn
    if st.kind != "raw" or not isinstance(fn, _ufunc) or fn is numpy.matmul or \
            fn.nout != 1 or st.seq or st.kwargs or fn.nin != len(st.args) or \
            k in st.writes or len(st.outs) != 1:
        return False
    shapes = []
    for a in st.args:
        if type(a) is Ref:
            shapes.append(slots[src].shape if a.slot == k else slots[a.slot].shape)
        elif isinstance(a, (int, float, bool)):
            shapes.append(())
        else:
            return False
    try:
        return numpy.broadcast_shapes(*shapes) == slots[st.outs[0][1]].shape
    except ValueError:
        return False


def _with_reads(st, swap):
    """A copy of ``st`` reading ``swap[k]`` wherever it read slot ``k``."""
    new_st = Step(st.kind, st.prim, st.fn,
                  tuple(Ref(swap[a.slot]) if type(a) is Ref and a.slot in swap else a
                        for a in st.args),
                  st.kwargs, [swap.get(k, k) for k in st.reads], st.name)
    new_st.outs, new_st.writes, new_st.as0d = list(st.outs), list(st.writes), set(st.as0d)
    new_st.side_effect, new_st.seq = st.side_effect, st.seq
    return new_st


def _plannable(st, slots, keep):
    """The slots of ``st``'s results that may be written into planned buffers."""
    if st.kind == "fused":
        return [k for _, k in st.outs if _own_result(slots[k], keep)]
    if st.kind != "raw" or st.seq or len(st.outs) != 1 or "out" in st.kwargs:
        return []
    if not isinstance(st.fn, _ufunc) or st.fn.nout != 1:
        return []
    k = st.outs[0][1]
    return [k] if _own_result(slots[k], keep) else []


def _own_result(s, keep):
    return (s.index not in keep and s.root == s.index and s.kind == "op" and s.dynamic
            and isinstance(s.value, (numpy.ndarray, numpy.generic)))


def _elementwise(st):
    return st.kind == "fused" or (st.kind == "raw" and st.fn is not numpy.matmul)


def _plan(slots, steps, keep, donated):
    """Planned buffers ``{slot: backend array}`` and the arena (see module doc)."""
    order, inputs_of, outputs_of, inplace_of = [], {}, {}, {}
    plannable = {i: ks for i, st in enumerate(steps) if (ks := _plannable(st, slots, keep))}
    internal = {k for ks in plannable.values() for k in ks}
    external = set()
    entry_bytes = {}
    for i, st in enumerate(steps):
        ins = []
        for k in st.reads + st.writes:
            r = slots[k].root
            if r not in ins:
                ins.append(r)
        outs_i = plannable.get(i, [])
        for r in ins + [k for _, k in st.outs]:
            entry_bytes[r] = max(1, slots[r].nbytes)
            if r not in internal:
                external.add(r)
        extra = [k for _, k in st.outs if k not in outs_i and k not in ins]
        order.append(i)
        inputs_of[i] = ins
        outputs_of[i] = outs_i + extra
        pairs = []
        if outs_i and _elementwise(st):
            for q, ko in enumerate(outs_i):
                o = slots[ko]
                for p, r in enumerate(ins):
                    s = slots[r]
                    if r in internal and r in st.reads and s.shape == o.shape and \
                            s.dtype == o.dtype:
                        pairs.append((p, q))
        inplace_of[i] = pairs
    if not internal:
        planned = {}
        _donate(slots, steps, planned, donated)
        return planned, None, {"planned_bytes": 0, "naive_bytes": 0}
    mp = plan_memory(order, inputs_of, outputs_of, entry_bytes, inplace_of, external,
                     layout="arena")
    raw = numpy.empty(mp.arena_bytes + _ARENA_ALIGN, numpy.uint8)
    start = (-raw.ctypes.data) % _ARENA_ALIGN
    arena = raw[start:start + mp.arena_bytes]
    planned = {}
    for k, b in mp.storage_of.items():
        s = slots[k]
        off = mp.offset_of[b]
        planned[k] = arena[off:off + s.nbytes].view(s.dtype).reshape(s.shape)
    _donate(slots, steps, planned, donated)
    return planned, raw, {"planned_bytes": int(mp.arena_bytes),
                          "naive_bytes": int(mp.naive_bytes)}


def _donate(slots, steps, planned, donated):
    """Write an elementwise result into a donated input's buffer at the input's
    last use (the result then lives in the caller's storage; an output so written
    is returned in it, as JAX does)."""
    if not donated:
        return
    last = {}
    for i, st in enumerate(steps):
        for k in st.reads + st.writes:
            last[slots[k].root] = i
    taken = set()
    for i, st in enumerate(steps):
        if st.kind != "raw" or not isinstance(st.fn, _ufunc) or st.fn is numpy.matmul or \
                st.seq or len(st.outs) != 1 or "out" in st.kwargs:
            continue
        k = st.outs[0][1]
        o = slots[k]
        if o.root != k or o.kind != "op":
            continue
        for r in st.reads:
            s = slots[r]
            if r in donated and r not in taken and last.get(r) == i and s.root == r and \
                    s.shape == o.shape and s.dtype == o.dtype:
                planned[k] = _DonatedBuffer(r)
                taken.add(r)
                break


class _DonatedBuffer:
    """Marks a result written into the buffer of donated input slot ``slot``."""

    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot


# ------------------------------------------------------------------ code
_OUT_BY_KEYWORD = (numpy.maximum, numpy.minimum)
# numpy.sum & co. are Python wrappers around the ufunc's reduce (~1 us of a 2 us call on
# small arrays); the replay calls the reduce itself (axis given: reduce's default is 0)
_REDUCE = {numpy.sum: numpy.add.reduce, numpy.prod: numpy.multiply.reduce,
           numpy.max: numpy.maximum.reduce, numpy.amax: numpy.maximum.reduce,
           numpy.min: numpy.minimum.reduce, numpy.amin: numpy.minimum.reduce}
_REDUCE_KWARGS = frozenset(("axis", "dtype", "keepdims"))


def _float_mean(a, axis=None, keepdims=False):
    """numpy.mean of a float32/float64 array without its wrapper's bookkeeping."""
    total = numpy.add.reduce(a, axis, None, None, keepdims)
    return total / (a.size // max(numpy.size(total), 1))


def _direct_call(st, slots, has_out):
    """``(fn, kwargs)`` a raw step's call may use instead of ``st.fn``, ``st.kwargs``;
    ``has_out``: the call will be given a planned output (the lean mean takes none)."""
    fn, kw = st.fn, st.kwargs
    if len(st.args) != 1 or type(st.args[0]) is not Ref or not set(kw) <= _REDUCE_KWARGS:
        return fn, kw
    fn = getattr(fn, "__wrapped__", fn)     # minpy's host wrappers name the NumPy function
    if fn in _REDUCE:
        return _REDUCE[fn], dict(kw, axis=kw.get("axis"))
    if fn is numpy.mean and not has_out and "dtype" not in kw and \
            slots[st.args[0].slot].dtype in (numpy.float32, numpy.float64):
        return _float_mean, kw
    return st.fn, kw


def _host_form(st, slots):
    """The lean host form of opaque step ``st`` when it has one and every array it
    reads and makes was a host NumPy array, else None."""
    host = JIT_HOST_FORMS.get(st.name) if st.kind == "opaque" else None
    if host is None or not all(isinstance(slots[k].value, (numpy.ndarray, numpy.generic))
                               for k in st.reads + [k for _, k in st.outs]):
        return None
    return host


def _generate(slots, steps, input_slots, out_slots, folded, planned, name):
    env = {"_as0d": _as0d, "_new": new, "_run": run_untraced,
           "_empty": numpy.empty, "_unflatten": tree.unflatten}
    consts = {}

    def const(obj):
        t = type(obj)
        if obj is None or t is bool or (t is int and abs(obj) < 1 << 62):
            return repr(obj)
        key = id(obj)
        if key not in consts:
            consts[key] = f"k{len(consts)}"
            env[consts[key]] = obj
        return consts[key]

    def slot_expr(k):
        if k in folded:
            n = f"c{k}"
            env[n] = slots[k].value
            return n
        return f"v{k}"

    def expr(obj, wrap=False):
        t = type(obj)
        if t is Ref:
            e = slot_expr(obj.slot)
            return f"_new({e})" if wrap else e
        if t is tuple:
            inner = ", ".join(expr(e, wrap) for e in obj)
            return f"({inner},)" if obj else "()"
        if t is list:
            return "[" + ", ".join(expr(e, wrap) for e in obj) + "]"
        if t is dict:
            return "{" + ", ".join(f"{k!r}: {expr(v, wrap)}" for k, v in obj.items()) + "}"
        if obj is not None and tree.is_node(obj):        # a namedtuple, OrderedDict ...
            leaves, td = tree.flatten(obj)
            if any(type(v) is Ref for v in leaves):
                inner = ", ".join(expr(v, wrap) for v in leaves)
                return f"_unflatten({const(td)}, [{inner}])"
        return const(obj)

    params = ", ".join(f"v{k}" for k in input_slots)
    lines = [f"def _replay({params}):"]
    captured = sorted({k for st in steps for k in st.reads
                       if slots[k].kind == "capture" and k not in folded})
    for k in captured:
        env[f"cap{k}"] = slots[k].array
        lines.append(f"    v{k} = cap{k}._data")
    for i, st in enumerate(steps):
        f = f"f{i}"
        env[f] = st.fn
        kwargs = st.kwargs
        if st.kind == "opaque":
            # a custom op's lean host form on host buffers (no Array wrapping, no
            # dispatch; ~40 us of a 240 us MLP step for ReLU's backward)
            host = _host_form(st, slots)
            if host is not None:
                env[f] = host
        if st.kind == "raw":
            has_out = not st.seq and bool(st.outs) and planned.get(st.outs[0][1]) is not None
            env[f], kwargs = _direct_call(st, slots, has_out)
        if st.kind == "generic":
            call = f"_run({f}, {expr(st.args, True)}, {expr(st.kwargs, True)})"
            lines.append(f"    _r = {call}")
            if st.seq:
                for pos, k in st.outs:
                    lines.append(f"    v{k} = _r[{pos}]._data")
            elif st.outs:
                lines.append(f"    v{st.outs[0][1]} = _r._data")
            continue
        args = [expr(a) for a in st.args]
        kw = [f"{k}={expr(v)}" for k, v in kwargs.items()]
        if st.kind == "fused":
            names = []
            for _, k in st.outs:
                buf = planned.get(k)
                if isinstance(buf, _DonatedBuffer):
                    lines.append(f"    v{k} = {slot_expr(buf.slot)}")
                elif buf is not None:
                    env[f"b{k}"] = buf
                    lines.append(f"    v{k} = b{k}")
                else:
                    env[f"s{k}"], env[f"d{k}"] = slots[k].shape, slots[k].dtype
                    lines.append(f"    v{k} = _empty(s{k}, d{k})")
                names.append(f"v{k}")
            lines.append(f"    {f}(({', '.join(args)},), ({', '.join(names)},))")
            continue
        if st.kind == "raw" and not st.seq and st.outs:
            k = st.outs[0][1]
            buf = planned.get(k)
            target = None
            if isinstance(buf, _DonatedBuffer):
                target = slot_expr(buf.slot)
            elif buf is not None:
                env[f"b{k}"] = buf
                target = f"b{k}"
            if target is not None:
                # a ufunc takes its output positionally (~60 ns less than out=); NumPy
                # deprecates that for maximum and minimum
                positional = type(st.fn) is numpy.ufunc and not kw and \
                    len(args) == st.fn.nin and st.fn not in _OUT_BY_KEYWORD
                (args if positional else kw).append(target if positional else f"out={target}")
        call = f"{f}({', '.join(args + kw)})"
        if not st.outs:
            lines.append(f"    {call}")
        elif st.seq:
            lines.append(f"    _r = {call}")
            for pos, k in st.outs:
                v = f"_r[{pos}]"
                lines.append(f"    v{k} = _as0d({v})" if k in st.as0d else f"    v{k} = {v}")
        else:
            k = st.outs[0][1]
            lines.append(f"    v{k} = _as0d({call})" if k in st.as0d else f"    v{k} = {call}")
    rets = ", ".join(slot_expr(k) for k in out_slots)
    lines.append(f"    return ({rets}{',' if out_slots else ''})")
    return "\n".join(lines) + "\n", env

