"""Static memory planning for a symbolic graph given as pure data.

The graph is a list of node ids in execution order (forward then backward);
``inputs_of[n]`` / ``outputs_of[n]`` list the *entries* a node reads and
writes (an entry is one output of one node). Entries in ``external``
(arguments, their gradients, aux states, graph heads) are owned by the caller
and never planned. Every other entry is given a storage *block*; entries
whose lifetimes do not overlap may share one:

1. lifetimes: reference counts — an entry lives from the node that writes it
   to the last node that reads it;
2. events: walk the order; at each node first try in-place (an output takes
   the block of an input when the op allows that (input, output) position,
   this node is the input's last reader and the output fits), then allocate
   the remaining outputs, then release the inputs (and dead outputs) whose
   count dropped to 0;
3. allocation: released blocks go to a size-sorted free list ("co-share");
   a request takes the smallest free block >= its size, else grows the
   largest smaller one, within a size ratio of ``MATCH_RANGE`` (MXNet's
   GraphAllocator), else a new block is made.

With ``colouring=True`` a block is only reused by a node that every earlier
writer/reader of the block is an ancestor of, so sharing storage never adds a
dependency between branches that could run in parallel (the lecture's
concurrency-aware planning, done exactly with ancestor bitsets).

With ``layout="arena"`` the same in-place groups are packed at byte offsets
of one arena instead (:func:`plan_arena`, greedy by size): a later entry may
use part of a freed region or span two neighbouring ones, which blocks cannot,
and the plan gets within a few percent of :func:`live_peak` on the zoo's nets.

``MINPY_PLAN_MEMORY=0`` turns planning off (every entry gets its own block);
each plan logs its ``summary()`` at DEBUG level on ``minpy.symbol.passes.plan_memory``.
Pure Python, no dependencies: a plan can be computed from shapes alone.
"""
from __future__ import annotations

import bisect
import logging
import math
import os
from dataclasses import dataclass, field
from itertools import chain

__all__ = ["MemoryPlan", "ArenaPlan", "plan_memory", "plan_arena", "plan_report_from",
           "planning_enabled", "live_peak", "MATCH_RANGE", "ARENA_ALIGN"]

log = logging.getLogger(__name__)

#: a free block is reused for a request of ``size`` only if it lies in
#: ``[size / MATCH_RANGE, size * MATCH_RANGE]`` (NNVM_EXEC_MATCH_RANGE)
MATCH_RANGE = 16

#: offsets and sizes of an arena plan are multiples of this many bytes
ARENA_ALIGN = 16


def planning_enabled():
    """False when the environment variable ``MINPY_PLAN_MEMORY`` is 0/false/off."""
    flag = os.environ.get("MINPY_PLAN_MEMORY", "1").strip().lower()
    return flag not in ("0", "false", "off", "no")


def _fmt(nbytes):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


@dataclass
class MemoryPlan:
    """Result of :func:`plan_memory`.

    ``storage_of`` maps every non-external entry to a block id,
    ``block_bytes`` gives each block's size, ``inplace`` maps an output entry
    to the input entry whose block it took in place.
    """

    storage_of: dict
    block_bytes: dict
    naive_bytes: int
    lower_bound: int
    inplace: dict = field(default_factory=dict)

    @property
    def total_bytes(self):
        """Bytes of all blocks together (the planned internal memory)."""
        return sum(self.block_bytes.values())

    def summary(self):
        """One debug line: planned vs naive bytes, ratio and lower bound."""
        total, naive = self.total_bytes, self.naive_bytes
        ratio = f"{naive / total:.1f}x" if total else "n/a"
        return (f"planned {_fmt(total)} for {_fmt(naive)} naive ({ratio}), "
                f"lower bound {_fmt(self.lower_bound)}")


@dataclass
class ArenaPlan(MemoryPlan):
    """Result of :func:`plan_arena` (``plan_memory(..., layout="arena")``).

    Blocks are in-place groups (entries chained by in-place writes), each at
    ``offset_of[block]`` in one arena of ``arena_bytes`` (the
    ``total_bytes``); blocks whose lifetimes are disjoint may share bytes
    (:meth:`overlaps`).  ``align``: offsets and extents are multiples of it.
    """

    offset_of: dict = field(default_factory=dict)
    arena_bytes: int = 0
    align: int = ARENA_ALIGN

    @property
    def total_bytes(self):
        """Bytes of the arena (the planned internal memory)."""
        return self.arena_bytes

    def overlaps(self):
        """Block -> blocks sharing some of its bytes: a write to a block must
        wait for every access to those (computed once, by a sweep)."""
        cached = self.__dict__.get("_overlaps")
        if cached is not None:
            return cached
        a = self.align
        ext = {b: -(-max(nb, 1) // a) * a for b, nb in self.block_bytes.items()}
        out = {b: [] for b in self.block_bytes}
        active = []                                     # (end, block) still open
        for b in sorted(self.offset_of, key=self.offset_of.get):
            o = self.offset_of[b]
            active = [(e, x) for e, x in active if e > o]
            for _, x in active:
                out[x].append(b)
                out[b].append(x)
            active.append((o + ext[b], b))
        self.__dict__["_overlaps"] = out
        return out


def _lifetimes(order, inputs_of, outputs_of, external):
    """Writer position of every entry, last-reader position and read count
    of every internal entry; raises ValueError on a malformed order."""
    writer, last, refs = {}, {}, {}
    for i, n in enumerate(order):
        for e in inputs_of[n]:
            if e in external:
                continue
            if e not in writer:
                raise ValueError(f"node {n!r} reads entry {e!r} before any node writes it")
            refs[e] += 1
            last[e] = i
        for e in outputs_of[n]:
            if e in writer:
                raise ValueError(f"entry {e!r} is written twice")
            writer[e] = i
            if e not in external:
                refs[e], last[e] = 0, i
    return writer, last, refs


def _lower_bound(writer, last, entry_bytes):
    """Peak bytes of entries live at once, an entry living on [write, last read)
    (an input dying at a node may hand its block to an output in place)."""
    delta = {}
    for e, end in last.items():
        w = writer[e]
        delta[w] = delta.get(w, 0) + entry_bytes[e]
        end = max(end, w + 1)
        delta[end] = delta.get(end, 0) - entry_bytes[e]
    peak = live = 0
    for pos in sorted(delta):
        live += delta[pos]
        peak = max(peak, live)
    return peak


def _ancestors(order, inputs_of, writer):
    """Bitset (int) of the positions of every node's ancestors."""
    anc = []
    for n in order:
        a = 0
        for e in inputs_of[n]:
            w = writer.get(e)
            if w is not None:
                a |= anc[w] | (1 << w)
        anc.append(a)
    return anc


def _inplace_candidate(ei, eo, ins, storage, refs, moved, left, sizes, entry_bytes):
    """Whether output entry ``eo`` may take input ``ei``'s storage in place: ``ei`` is
    planned and dies at this node (all its remaining uses are this node's), ``eo`` is
    planned and not yet placed, and it fits in ``ei``'s block."""
    return (ei in storage and eo in refs and eo not in storage and ei not in moved
            and left[ei] == ins.count(ei) and entry_bytes[eo] <= sizes[storage[ei]])


def _plan(order, inputs_of, outputs_of, entry_bytes, inplace_of, external,
          inplace, coshare, colouring, match_range):
    external, inplace_of = frozenset(external), inplace_of or {}
    writer, last, refs = _lifetimes(order, inputs_of, outputs_of, external)
    anc = _ancestors(order, inputs_of, writer) if colouring else None
    users = {}                                # entry -> bitset of writer+readers
    if colouring:
        for i, n in enumerate(order):
            for e in chain(inputs_of[n], outputs_of[n]):
                if e in refs:
                    users[e] = users.get(e, 0) | (1 << i)
    storage, sizes, block_users, free, taken = {}, [], [], [], {}

    def fits(b, i):                           # reuse of b by node i adds no edge
        return anc is None or not block_users[b] & ~(anc[i] | (1 << i))

    def assign(e, b):
        storage[e] = b
        sizes[b] = max(sizes[b], entry_bytes[e])
        if anc is not None:
            block_users[b] |= users[e]

    def request(e, i):
        nbytes = entry_bytes[e]
        if coshare:
            lo = bisect.bisect_left(free, (nbytes / match_range,))
            mid = bisect.bisect_left(free, (nbytes,))
            hi = bisect.bisect_right(free, (nbytes * match_range, math.inf))
            for k in chain(range(mid, hi), range(mid - 1, lo - 1, -1)):
                if fits(free[k][1], i):
                    return free.pop(k)[1]
        sizes.append(0)
        block_users.append(0)
        return len(sizes) - 1

    def release(e):
        if coshare:
            b = storage[e]
            bisect.insort(free, (sizes[b], b))

    left = dict(refs)
    for i, n in enumerate(order):
        ins, outs = inputs_of[n], outputs_of[n]
        moved = set()
        if inplace:
            for ip, op in inplace_of.get(n, ()):
                ei, eo = ins[ip], outs[op]
                if (_inplace_candidate(ei, eo, ins, storage, refs, moved, left, sizes,
                                       entry_bytes) and fits(storage[ei], i)):
                    moved.add(ei)
                    assign(eo, storage[ei])
                    taken[eo] = ei
        for e in outs:
            if e in refs and e not in storage:
                assign(e, request(e, i))
        for e in ins:
            if e in left:
                left[e] -= 1
                if left[e] == 0 and e not in moved:
                    release(e)
        for e in outs:
            if left.get(e) == 0:
                release(e)
    return MemoryPlan(storage, dict(enumerate(sizes)),
                      sum(entry_bytes[e] for e in refs),
                      _lower_bound(writer, last, entry_bytes), taken)


def live_peak(order, inputs_of, outputs_of, entry_bytes, inplace_of, external):
    """Peak bytes of internal entries live at once while running ``order``.

    An entry is live from the node that writes it through its last reader
    (inclusive: a node's inputs and outputs coexist while it runs), except
    that an input dying at a node that may write an output over it in place
    (``inplace_of``) shares that output's bytes.  No plan in this order can
    use less, so this is the lower bound plans are measured against
    (``MemoryPlan.lower_bound`` is the looser bound that lets every dying
    input share).
    """
    external = frozenset(external)
    writer, last, _ = _lifetimes(order, inputs_of, outputs_of, external)
    delta = {}
    for e, w in writer.items():
        if e in last:
            delta[w] = delta.get(w, 0) + entry_bytes[e]
            delta[last[e] + 1] = delta.get(last[e] + 1, 0) - entry_bytes[e]
    live = peak = 0
    inplace_of = inplace_of or {}
    for i, n in enumerate(order):
        live += delta.get(i, 0)
        save, gave, took = 0, set(), set()
        ins, outs = inputs_of[n], outputs_of[n]
        for ip, op in inplace_of.get(n, ()):
            ei, eo = ins[ip], outs[op]
            if (ei in last and eo in last and last[ei] == i and ei not in gave
                    and eo not in took):
                gave.add(ei)
                took.add(eo)
                save += min(entry_bytes[ei], entry_bytes[eo])
        peak = max(peak, live - save)
    return peak


def _arena_online(order, inputs_of, outputs_of, entry_bytes, inplace_of, refs, inplace,
                  coshare, align):
    """Walk ``order`` like :func:`_plan`, placing blocks in one address range:
    best fit in a free list of coalesced (start, end) ranges, else at the top
    (extending a free range that reaches it).  Returns (storage, block bytes,
    offsets, arena bytes, in-place map)."""
    free, top = [], 0
    storage, sizes, offsets, taken = {}, [], [], {}

    def alloc(nb):
        nonlocal top
        best = None
        if coshare:
            for k, (s, e) in enumerate(free):
                if e - s >= nb and (best is None or e - s < free[best][1] - free[best][0]):
                    best = k
        if best is not None:
            s, e = free[best]
            if e - s == nb:
                free.pop(best)
            else:
                free[best] = (s + nb, e)
            return s
        if coshare and free and free[-1][1] == top:
            s = free.pop()[0]
        else:
            s = top
        top = s + nb
        return s

    def release(b):
        if not coshare:
            return
        s = offsets[b]
        e = s + -(-max(sizes[b], 1) // align) * align
        k = bisect.bisect_left(free, (s, e))
        if k > 0 and free[k - 1][1] == s:
            s = free.pop(k - 1)[0]
            k -= 1
        if k < len(free) and free[k][0] == e:
            e = free.pop(k)[1]
        free.insert(k, (s, e))

    left = dict(refs)
    for n in order:
        ins, outs = inputs_of[n], outputs_of[n]
        moved = set()
        if inplace:
            for ip, op in inplace_of.get(n, ()):
                ei, eo = ins[ip], outs[op]
                if _inplace_candidate(ei, eo, ins, storage, refs, moved, left, sizes,
                                      entry_bytes):
                    moved.add(ei)
                    storage[eo] = storage[ei]
                    taken[eo] = ei
        for e in outs:
            if e in refs and e not in storage:
                storage[e] = len(sizes)
                sizes.append(entry_bytes[e])
                offsets.append(alloc(-(-max(entry_bytes[e], 1) // align) * align))
        for e in ins:
            if e in left:
                left[e] -= 1
                if left[e] == 0 and e not in moved:
                    release(storage[e])
        for e in outs:
            if left.get(e) == 0:
                release(storage[e])
    return storage, sizes, offsets, top, taken


def _pack(spans, align):
    """Greedy by size (offline): each span (start, end, nbytes), largest
    first, goes to the smallest gap between the spans already placed that
    overlap it in time, else above them.  Returns (offsets, arena bytes)."""
    import numpy                          # only this fallback needs it
    order = sorted(range(len(spans)), key=lambda k: (-spans[k][2], spans[k][0]))
    off, cap = [0] * len(spans), max(len(spans), 1)
    po, pe, ps, pt = (numpy.zeros(cap, numpy.int64) for _ in range(4))
    count = top = 0
    for k in order:
        s, t, nb = spans[k]
        mask = (pt[:count] >= s) & (ps[:count] <= t)
        o, e = po[:count][mask], pe[:count][mask]
        best = 0
        if len(o):
            prev = numpy.zeros(len(o), numpy.int64)
            numpy.maximum.accumulate(e[:-1], out=prev[1:])
            gaps = o - prev
            fit = numpy.flatnonzero(gaps >= nb)
            best = int(prev[fit[numpy.argmin(gaps[fit])]]) if len(fit) else \
                int(max(prev[-1], e[-1]))
        off[k] = best
        top = max(top, best + nb)
        j = int(numpy.searchsorted(po[:count], best, side="right"))
        for arr, v in ((po, best), (pe, best + nb), (ps, s), (pt, t)):
            arr[j + 1:count + 1] = arr[j:count].copy()
            arr[j] = v
        count += 1
    return off, top


def plan_arena(order, inputs_of, outputs_of, entry_bytes, inplace_of, external, *,
               inplace=True, coshare=True, align=ARENA_ALIGN):
    """Plan internal entries at byte offsets of one arena (see module doc).

    Same graph arguments as :func:`plan_memory`.  In-place groups are formed
    as ``plan_memory`` forms them; each lives from its first write to its
    last read.  With ``coshare`` groups whose lifetimes are disjoint may
    share bytes: an online pass (best fit in coalesced free ranges) runs
    first; unless it reaches :func:`live_peak`, an offline pass (greedy by
    size) is tried too and the smaller arena kept.  Without ``coshare``
    groups are laid out one after another.  Returns an :class:`ArenaPlan`.
    """
    external, inplace_of = frozenset(external), inplace_of or {}
    writer, last, refs = _lifetimes(order, inputs_of, outputs_of, external)
    storage, sizes, offsets, top, taken = _arena_online(
        order, inputs_of, outputs_of, entry_bytes, inplace_of, refs, inplace, coshare, align)
    if coshare and top > 1.01 * live_peak(order, inputs_of, outputs_of, entry_bytes,
                                          inplace_of, external):
        spans = {}
        for e, b in storage.items():
            s, t = spans.get(b, (writer[e], last[e]))
            spans[b] = (min(s, writer[e]), max(t, last[e]))
        off2, top2 = _pack([spans[b] + (-(-max(nb, 1) // align) * align,)
                            for b, nb in enumerate(sizes)], align)
        if top2 < top:
            offsets, top = off2, top2
    return ArenaPlan(storage, dict(enumerate(sizes)), sum(entry_bytes[e] for e in refs),
                     _lower_bound(writer, last, entry_bytes), taken,
                     dict(enumerate(offsets)), top, align)


def plan_memory(order, inputs_of, outputs_of, entry_bytes, inplace_of, external, *,
                inplace=True, coshare=True, colouring=False, match_range=MATCH_RANGE,
                layout="blocks", align=ARENA_ALIGN):
    """Plan storage blocks for the non-external entries of a graph.

    order: node ids in execution order; inputs_of / outputs_of: node -> list
    of entry ids; entry_bytes: entry -> size; inplace_of: mapping node ->
    list of (input_position, output_position) pairs the op may share;
    external: entries not planned. ``inplace``/``coshare`` switch the two
    strategies (both off = one block per entry), ``colouring`` forbids
    sharing between nodes that could run in parallel. ``layout="arena"``
    packs the blocks at offsets of one arena (:func:`plan_arena`; no
    ``colouring``). ``MINPY_PLAN_MEMORY=0`` forces the naive plan. Returns a
    :class:`MemoryPlan` (an :class:`ArenaPlan` for the arena layout).
    """
    if layout not in ("blocks", "arena"):
        raise ValueError(f"layout must be 'blocks' or 'arena', not {layout!r}")
    if not planning_enabled():
        inplace = coshare = colouring = False
        layout = "blocks"
    if layout == "arena":
        if colouring:
            raise ValueError("the arena layout does not support colouring")
        plan = plan_arena(order, inputs_of, outputs_of, entry_bytes, inplace_of, external,
                          inplace=inplace, coshare=coshare, align=align)
        log.debug("%s", plan.summary())
        return plan
    plan = _plan(order, inputs_of, outputs_of, entry_bytes, inplace_of, external,
                 inplace, coshare, colouring, match_range)
    log.debug("%s", plan.summary())
    return plan


def plan_report_from(order, inputs_of, outputs_of, entry_bytes, inplace_of, external):
    """Internal bytes of the graph under each strategy:
    {'naive', 'inplace', 'coshare', 'both', 'lower_bound'}."""
    def total(ip, cs):
        return _plan(order, inputs_of, outputs_of, entry_bytes, inplace_of, external,
                     ip, cs, False, MATCH_RANGE)
    both = total(True, True)
    return {"naive": both.naive_bytes, "inplace": total(True, False).total_bytes,
            "coshare": total(False, True).total_bytes, "both": both.total_bytes,
            "lower_bound": both.lower_bound}
