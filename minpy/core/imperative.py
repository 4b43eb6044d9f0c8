"""MXNet 1.x's imperative autograd over minpy's tape: ``record``/``pause`` scopes,
variables marked with ``attach_grad``/``mark_variables``, ``backward`` writing into
their ``.grad``, ``grad``, the training flag and ``Function`` (the faces are in
:mod:`minpy.mxnet.autograd`).

Design. A recording is one tape of this thread (:class:`RecordTape`, a
:class:`minpy.core.tape.Tape` that also knows its variables), opened by the
outermost ``record()`` and closed when that scope ends. Marked variables are
kept by weak reference in a registry (an Array has no room for a gradient);
when a recording opens, each one becomes a leaf of its tape *in place*: the
same Array object is rebound to a leaf node whose value is a plain Array on the
same buffer (``attach_grad`` inside a recording does this at once). When the
recording ends, each variable's ``_node`` is reset to ``None``, so no variable
points at a closed tape.
Arrays made inside keep their nodes on the closed tape, which is what lets
``y.backward()`` run after the ``with`` block, as MXNet allows.
``pause()`` takes the tape off this thread's stack (calls run untraced, on the
fast path when nothing else records) and puts it back when the scope ends.
``backward`` walks the tape with :func:`minpy.core.autograd.backward` and writes
(``'write'``) or adds (``'add'``) each reached variable's gradient into its
``.grad`` Array in place (the same object across iterations); a variable the
heads do not depend on keeps its ``.grad``, as in MXNet. Without
``retain_graph`` the tape's nodes are freed; a second backward raises. A
backward inside the ``with`` block restarts the recording on a fresh tape.
Nothing here is on the per-call path: recording itself is the tape's.
"""
import numbers
import threading
import weakref

import numpy

from ..dispatch import state
from .array import Array, new
from .autograd import backward as _walk_backward
from .ops import BROADCAST_TO, ONES_LIKE, ZEROS_LIKE, apply
from .primitive import Primitive
from .tape import Node, OutRef, Tape, active_tapes, close_tape, record as _record
from . import tree

__all__ = ["RecordTape", "set_recording", "set_training", "is_recording", "is_training",
           "RecordingStateScope", "mark_variables", "attach_grad", "grad_of", "fresh_grad",
           "set_fresh_grad", "backward", "grad", "detach", "Function", "MXNetError", "AutogradError"]

GRAD_REQS = ("null", "write", "add")


class MXNetError(RuntimeError):
    """MXNet's error class, raised where MXNet 1.x's imperative autograd raises it
    (``minpy.mxnet.autograd.MXNetError``). See also mxnet.base.MXNetError."""


AutogradError = MXNetError


class RecordTape(Tape):
    """The tape of one ``record()`` scope: ``leaves`` maps each leaf node to its
    variable's :class:`_Var`; ``written`` holds the variables written in place while
    recorded (their gradient is refused)."""

    __slots__ = ("leaves", "written")

    def __init__(self, level):
        super().__init__(level)
        self.leaves = {}
        self.written = set()


class _Var:
    """A marked variable: its gradient buffer, request and current leaf."""

    __slots__ = ("ref", "grad", "req", "fresh", "node", "__weakref__")

    def __init__(self, ref, grad, req):
        self.ref = ref
        self.grad = grad
        self.req = req
        self.fresh = False
        self.node = None        # its leaf on the open recording


_VARS = {}          # id(Array) -> _Var (dropped when the Array dies)
_VARS_LOCK = threading.RLock()   # the weakref callback may run in a GC under it


class _State(threading.local):
    def __init__(self):
        self.recording = False
        self.training = False
        self.tape = None        # this thread's open recording (active or paused)
        self.owner = None       # the scope that opened it (None: set_recording(True))


_st = _State()


# ---------------------------------------------------------------- flags
def is_recording():
    """True inside ``record()`` (and not inside a ``pause()`` within it).

    See also mxnet.autograd.is_recording."""
    return _st.recording


def is_training():
    """True in training mode (``record()``, ``train_mode()``): Dropout drops and
    BatchNorm uses batch statistics. False by default. See also mxnet.autograd.is_training."""
    return _st.training


def set_training(train_mode):
    """Set training (True) or predicting (False) mode; returns the previous mode.

    See also mxnet.autograd.set_training."""
    prev = _st.training
    _st.training = bool(train_mode)
    return prev


def set_recording(is_recording):     # noqa: A002  (MXNet's name)
    """Start (True) or stop (False) recording for gradients; returns the previous state.

    True opens a recording (or resumes a paused one); False pauses it, or closes it
    when no ``record()`` scope opened it. See also mxnet.autograd.set_recording."""
    return _set_recording(is_recording, False)


def _set_recording(is_recording, from_scope):
    prev = _st.recording
    flag = bool(is_recording)
    if flag == prev:
        return prev
    t = _st.tape
    if flag:
        if t is None:
            _open(owner=None)
        else:
            _resume(t)
    elif t is not None:
        if _st.owner is None and not from_scope:
            _close(t)
        else:
            _suspend(t)
    _st.recording = flag
    return prev


class RecordingStateScope:
    """The scope of ``record``/``pause``/``train_mode``/``predict_mode``
    (MXNet's ``_RecordingStateScope``)."""

    def __init__(self, is_record, train_mode):
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None
        self._opened = False

    def __enter__(self):
        if self._enter_is_record is not None:
            if self._enter_is_record and _st.tape is None:
                _open(owner=self)
                self._opened = True
                self._prev_is_record = _st.recording
                _st.recording = True
            else:
                self._prev_is_record = _set_recording(self._enter_is_record, True)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)
        return self

    def __exit__(self, ptype, value, trace):
        if self._enter_train_mode is not None and \
                self._prev_train_mode != self._enter_train_mode:
            set_training(self._prev_train_mode)
        if self._enter_is_record is None:
            return
        if self._opened:
            self._opened = False
            t = _st.tape
            if t is not None:
                _close(t)
            _st.recording = self._prev_is_record
        elif self._prev_is_record != self._enter_is_record:
            _set_recording(self._prev_is_record, True)


# ---------------------------------------------------------------- the recording tape
def _open(owner):
    stack = active_tapes()
    if stack:
        # its results would be traced on this recording, not on the tape around it: a
        # minpy.grad would read them as constants (zero gradients)
        raise AutogradError("autograd.record inside minpy.grad (or another gradient tape) is "
                            "not supported; differentiate with one of them (a minpy.grad "
                            "inside autograd.record is fine)")
    t = RecordTape(len(stack) + 1)
    stack.append(t)
    state.enter_tape(stack)
    _st.tape = t
    _st.owner = owner
    with _VARS_LOCK:
        marked = list(_VARS.values())
    try:
        for v in marked:
            x = v.ref()
            if x is not None:
                _make_leaf(t, x, v)
    except BaseException:
        _close(t)
        raise
    return t


def _suspend(t):
    close_tape(t)       # off this thread's stack (idempotent); _resume puts it back


def _resume(t):
    if not t.active:
        stack = active_tapes()
        if stack and stack[-1].level >= t.level:
            raise AutogradError("autograd.record: cannot resume a paused recording while a "
                                "tape opened after it (minpy.grad) is still recording")
        t.active = True
        stack.append(t)
        state.enter_tape(stack)


def _close(t):
    """End recording ``t``: close the tape, restore its variables' nodes."""
    close_tape(t)
    _release_leaves(t)
    if _st.tape is t:
        _st.tape = None
        _st.owner = None


def _release_leaves(t):
    for node, v in t.leaves.items():
        x = v.ref()
        if x is None or v.node is not node:
            continue
        if x._node is not node:         # rebound by a write in place while recorded
            t.written.add(v)
        x._node = None
        v.node = None


def _make_leaf(t, x, v):
    """Make Array ``x`` (variable ``v``) a leaf of recording ``t``, in place."""
    n = x._node
    if n is not None and n.tape.active and n.tape is not t:
        raise AutogradError("autograd: a variable is traced by another recording (another "
                            "thread's autograd.record, or a minpy.grad inside this one); a "
                            "variable can be a leaf of one recording at a time")
    if v.node is not None and v.node.tape is t:
        del t.leaves[v.node]            # marked again: the new leaf replaces it
    inner = new(x._data)
    inner._var = x._var
    inner._scalar = x._scalar
    node = Node(t, None, (), None, inner, (), 1)
    t.leaves[node] = v
    v.node = node
    x._node = node


# ---------------------------------------------------------------- variables
def _forget(key):
    def drop(_ref):
        with _VARS_LOCK:
            v = _VARS.get(key)
            if v is not None and v.ref() is None:
                del _VARS[key]
    return drop


def _check_req(req, who):
    if req not in GRAD_REQS:
        raise ValueError(f"{who}: grad_req must be one of {GRAD_REQS}, got {req!r}")


def _mark(x, g, req, who):
    if type(x) is not Array:
        raise TypeError(f"{who}: variables must be minpy Arrays (NDArrays), got "
                        f"{type(x).__name__}")
    _check_req(req, who)
    if x._data.dtype.kind not in "fc":
        raise TypeError(f"{who}: cannot compute gradients for an array of dtype {x.dtype}; "
                        "use a float array (x.astype('float32'))")
    if g is not None:
        if type(g) is not Array:
            raise TypeError(f"{who}: gradients must be minpy Arrays, got {type(g).__name__}")
        if g.shape != x.shape:
            raise ValueError(f"{who}: the gradient buffer has shape {g.shape}, the variable "
                             f"{x.shape}; they must match")
    key = id(x)
    with _VARS_LOCK:
        v = _VARS.get(key)
        if v is None or v.ref() is not x:
            v = _Var(weakref.ref(x, _forget(key)), g, req)
            _VARS[key] = v
        else:
            v.grad, v.req = g, req
        v.fresh = False
    t = _st.tape
    if t is not None and t.active:
        _make_leaf(t, x, v)


def attach_grad(x, grad_req="write", stype=None):
    """``x.attach_grad()``: allocate ``x.grad`` (zeros of ``x``'s shape, dtype and
    device) and mark ``x`` as a variable of the current or next recording.

    See also mxnet.ndarray.NDArray.attach_grad."""
    if stype not in (None, "default"):
        raise NotImplementedError(f"attach_grad: stype={stype!r}; minpy arrays are dense "
                                  "(only 'default')")
    _check_req(grad_req, "attach_grad")
    g = apply(ZEROS_LIKE, detach(x))
    if g._scalar:
        g._scalar = False
    _mark(x, g, grad_req, "attach_grad")


def mark_variables(variables, gradients, grad_reqs="write"):
    """Mark arrays as variables whose gradients ``backward`` writes into ``gradients``.

    See also mxnet.autograd.mark_variables."""
    if type(variables) is Array:
        if type(gradients) is not Array:
            raise TypeError("mark_variables: with one variable, gradients must be one Array")
        variables, gradients = [variables], [gradients]
    variables, gradients = list(variables), list(gradients)
    if len(variables) != len(gradients):
        raise ValueError(f"mark_variables: {len(variables)} variables but {len(gradients)} "
                         "gradients")
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(variables):
        raise ValueError(f"mark_variables: {len(variables)} variables but {len(reqs)} grad_reqs")
    for x, g, r in zip(variables, gradients, reqs):
        _mark(x, g, r, "mark_variables")


def _var_of(x):
    v = _VARS.get(id(x))
    return v if v is not None and v.ref() is x else None


def grad_of(x):
    """``x.grad``: the gradient buffer of a marked variable, else None."""
    v = _var_of(x)
    return None if v is None else v.grad


def fresh_grad(x):
    """MXNet's ``x._fresh_grad``: True once a backward wrote ``x.grad``."""
    v = _var_of(x)
    return False if v is None else v.fresh


def set_fresh_grad(x, value):
    v = _var_of(x)
    if v is None:
        raise AutogradError("_fresh_grad: the array is not a marked variable (attach_grad)")
    v.fresh = bool(value)


def detach(x):
    """``x.detach()``: the same data, outside every recorded graph.

    See also mxnet.ndarray.NDArray.detach."""
    v = new(x._data)
    v._var = x._var
    v._scalar = x._scalar
    return v


# ---------------------------------------------------------------- backward
_NOT_IN_GRAPH = ("Cannot differentiate node because it is not in a computational graph. You "
                 "need to set is_recording to true or use autograd.record() to save "
                 "computational graphs for backward. If you want to differentiate the same "
                 "graph twice, you need to pass retain_graph=True to backward.")


_WRITTEN = ("Assigning to NDArrays that are already in a computational graph will cause "
            "undefined behavior when evaluating gradients (a marked variable was written in "
            "place inside autograd.record); write it outside record() or inside pause()")


def _parse_heads(heads, head_grads, who):
    if type(heads) is not list and type(heads) is not tuple:
        heads = [heads]
    heads = list(heads)
    if type(head_grads) is Array:
        head_grads = [head_grads]
    if head_grads is None:
        head_grads = [None] * len(heads)
    head_grads = list(head_grads)
    if len(head_grads) != len(heads):
        raise ValueError(f"{who}: heads and head_grads must be lists of the same length")
    tape = None
    refs, seeds = [], []
    for h, hg in zip(heads, head_grads):
        if type(h) is not Array:
            if isinstance(h, (numbers.Number, numpy.generic)):      # computed unrecorded
                raise AutogradError(f"{who}: {_NOT_IN_GRAPH}")
            raise TypeError(f"{who}: heads must be minpy Arrays, got {type(h).__name__}")
        n = h._node
        if n is None or type(n.tape) is not RecordTape or n.tape.nodes is None:
            raise AutogradError(f"{who}: {_NOT_IN_GRAPH}")
        if tape is None:
            tape = n.tape
        elif n.tape is not tape:
            raise AutogradError(f"{who}: the heads were recorded in different autograd.record "
                                "scopes; differentiate each recording separately")
        value = n.value
        if hg is None:
            g = apply(ONES_LIKE, value)
        else:
            if type(hg) is not Array:
                raise TypeError(f"{who}: head_grads must be minpy Arrays or None, got "
                                f"{type(hg).__name__}")
            if hg.shape != value.shape:
                raise ValueError(f"{who}: a head gradient has shape {hg.shape}, its head "
                                 f"{value.shape}; they must match")
            g = detach(hg)
        refs.append(n)
        seeds.append(g)
    written = bool(tape.written)
    for node, v in tape.leaves.items():
        x = v.ref()
        written = written or x is not None and v.node is node and x._node is not node
    if written:
        raise AutogradError(f"{who}: {_WRITTEN}")
    return tape, refs, seeds


def _run(tape, refs, seeds, train_mode):
    prev = set_training(train_mode)
    try:
        if len(refs) == 1 and type(refs[0]) is Node:
            return _walk_backward(tape, refs[0], seeds[0])
        return _walk_backward(tape, refs, seeds)    # several heads: one seed each
    finally:
        set_training(prev)


def _as_grad(g, like):
    if g.shape != like.shape:
        g = apply(BROADCAST_TO, g, like.shape)
    return g


def _free(tape):
    tape.nodes = None
    if _st.tape is tape:
        # a backward inside the with block: go on recording on a fresh tape
        paused = not tape.active
        owner = _st.owner
        _close(tape)
        t = _open(owner)
        if paused:
            _suspend(t)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute the gradients of ``heads`` with respect to the marked variables, writing
    (or adding, for ``grad_req='add'``) them into each variable's ``.grad``.

    See also mxnet.autograd.backward."""
    tape, refs, seeds = _parse_heads(heads, head_grads, "autograd.backward")
    found = _run(tape, refs, seeds, train_mode)
    for node, v in tape.leaves.items():
        g = found.get(node)
        if g is None or v.req == "null" or v.grad is None:
            continue
        buf = v.grad
        g = _as_grad(g, buf)
        if v.req == "add":
            buf += g
        else:
            buf[...] = g
        v.fresh = True
    if not retain_graph:
        _free(tape)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """The gradients of ``heads`` with respect to ``variables`` (marked ones), as a list
    of new Arrays (also for one variable, as MXNet 1.9.1); the ``.grad`` buffers are left
    alone. ``create_graph=True`` replays the recording under a new one, so the
    gradients can be differentiated again (``dx.backward()``); the recording is then
    kept (``retain_graph`` defaults to ``create_graph``).

    See also mxnet.autograd.grad."""
    if type(variables) is Array:
        variables = [variables]
    variables = list(variables)
    if not variables:
        raise ValueError("autograd.grad: variables cannot be an empty list")
    retain_graph = create_graph if retain_graph is None else retain_graph
    tape, refs, seeds = _parse_heads(heads, head_grads, "autograd.grad")
    nodes = {}
    for node, v in tape.leaves.items():
        nodes[id(v)] = node
    wanted = []
    for x in variables:
        v = _var_of(x) if type(x) is Array else None
        node = nodes.get(id(v)) if v is not None else None
        if node is None:
            raise AutogradError("autograd.grad: a variable was not marked (attach_grad or "
                                "mark_variables) before the heads were recorded")
        wanted.append((node, x))
    if create_graph:
        out = _grad_recorded(tape, refs, seeds, wanted, train_mode)
    else:
        found = _run(tape, refs, seeds, train_mode)
        out = []
        for node, x in wanted:
            g = found.get(node)
            out.append(apply(ZEROS_LIKE, node.value) if g is None else _as_grad(g, x))
    if not retain_graph:
        _free(tape)
    return out      # a list even for one Array variable, as MXNet 1.9.1 returns


def _grad_recorded(tape, refs, seeds, wanted, train_mode):
    """``grad(create_graph=True)``: replay ``tape``'s calls under two new tapes (an outer
    recording whose leaves are the variables, and an inner one), differentiate the inner
    one: the gradients are recorded on the outer one, so they can be differentiated
    again (``dx.backward()``)."""
    stack = active_tapes()
    outer = RecordTape(len(stack) + 1)
    stack.append(outer)
    state.enter_tape(stack)
    inner = Tape(len(stack) + 1)
    stack.append(inner)
    state.enter_tape(stack)
    try:
        m = {}
        for node, v in tape.leaves.items():
            lo = Node(outer, None, (), None, node.value, (), 1)
            outer.leaves[lo] = v
            bo = new(node.value._data)
            bo._node = lo
            li = Node(inner, None, (), None, bo, (), 1)
            bi = new(node.value._data)
            bi._node = li
            m[node] = bi
        for node in tape.nodes:
            m[node] = _replay(node, m)
        heads = [_replayed(r, m) for r in refs]
    except BaseException:
        close_tape(outer)
        raise
    finally:
        close_tape(inner)
    try:
        hrefs = [h._node if type(h) is Array and h._node is not None and h._node.tape is inner
                 else None for h in heads]
        live = [(r, g) for r, g in zip(hrefs, seeds) if r is not None]
        if live:
            found = _run(inner, [r for r, _ in live], [g for _, g in live], train_mode)
        else:
            found = {}
        out = []
        for node, x in wanted:
            g = found.get(m[node]._node)
            out.append(apply(ZEROS_LIKE, node.value) if g is None else _as_grad(g, x))
    finally:
        close_tape(outer)
    inner.nodes = None
    return out


def _replayed(ref, m):
    if type(ref) is OutRef:
        value = m[ref.node]
        if ref.node.outdef is not None:
            return tree.leaves(value)[ref.index]
        return value[ref.index]
    got = m.get(ref)
    if got is None:             # a leaf of a variable marked again since: a constant
        return ref.value
    return got


def _replay(node, m):
    if node.prim.impl is None or node.prim.custom is not None and \
            node.prim.qualname.startswith("function."):
        raise NotImplementedError(f"autograd.grad(create_graph=True): {node.prim.qualname} "
                                  "cannot be recorded again for a higher-order gradient "
                                  "(an autograd.Function or an mx.nd layer operator); write "
                                  "the computation with minpy's NumPy functions")
    args = list(node.args)
    kwargs = dict(node.kwargs) if node.kwargs else {}
    for address, parent in node.parents:
        value = _replayed(parent, m)
        if type(address) is tuple:
            pos, item = address
            holder = args if type(pos) is int else kwargs
            seq = list(holder[pos])
            seq[item] = value
            holder[pos] = type(node.args[pos] if type(pos) is int else node.kwargs[pos])(seq)
        elif type(address) is int:
            args[address] = value
        else:
            kwargs[address] = value
    return _record(node.prim, tuple(args), kwargs)


# ---------------------------------------------------------------- Function
class Function:
    """A differentiable function with a hand-written gradient: subclass and define
    ``forward(*inputs)`` and ``backward(*output_grads)`` (one gradient per input);
    ``save_for_backward``/``saved_tensors`` keep what backward needs. Each instance
    is called once.

    See also mxnet.autograd.Function."""

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        if self._used:
            raise AutogradError("Each Function instance can only be called once. Please "
                                "create another instance.")
        self._used = True
        prev = _set_recording(False, True)
        try:
            outputs = self.forward(*inputs)
        finally:
            _set_recording(prev, True)
        if not prev:
            return outputs
        t = _st.tape
        single = type(outputs) is Array
        outs = (outputs,) if single else tuple(outputs)
        for o in outs:
            if type(o) is not Array:
                raise TypeError(f"{type(self).__name__}.forward must return Arrays, got "
                                f"{type(o).__name__}")
        parents, args = [], []
        for i, a in enumerate(inputs):
            n = a._node if type(a) is Array else None
            if n is not None and n.tape is t:
                parents.append((i, n))
                args.append(n.value)
            else:
                args.append(a)
        if not parents:
            return outputs
        prim = Primitive(f"{type(self).__name__}.backward", None)
        prim.vjp = {i: self._rule(i, len(inputs), single) for i, _ in parents}
        value = tuple(detach(o) for o in outs)
        node = Node(t, prim, tuple(args), None, value[0] if single else value, tuple(parents),
                    1 if single else len(value))
        t.nodes.append(node)
        boxed = []
        for k, o in enumerate(value):
            b = new(o._data)
            b._var = o._var
            b._node = node if single else OutRef(node, k)
            boxed.append(b)
        return boxed[0] if single else (type(outputs)(boxed) if isinstance(outputs, list)
                                        else tuple(boxed))

    def _rule(self, i, n_in, single):
        memo = []

        def make(ans, *args):
            def vjp(g):
                if not memo or memo[0] is not g:
                    grads = self.backward(g) if single else self.backward(*g)
                    if type(grads) is Array:
                        grads = (grads,)
                    grads = tuple(grads)
                    if len(grads) != n_in:
                        raise ValueError(f"{type(self).__name__}.backward must return exactly "
                                         f"as many arrays as forward's inputs: expected {n_in}, "
                                         f"got {len(grads)}")
                    memo[:] = [g, grads]
                return memo[1][i]
            return vjp
        return make


# ---------------------------------------------------------------- NDArray methods
def _backward_method(self, out_grad=None, retain_graph=False, train_mode=True):
    """``y.backward()``: :func:`backward` of this one head.

    See also mxnet.ndarray.NDArray.backward."""
    backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)


def _install():
    """Give :class:`Array` MXNet's autograd methods (as :mod:`minpy.core.methods` gives
    it its operators): ``attach_grad``, ``grad``, ``backward``, ``detach``,
    ``_fresh_grad``."""
    Array.attach_grad = attach_grad
    Array.grad = property(grad_of, doc="The gradient buffer of a variable marked with "
                                       "attach_grad, else None (mxnet NDArray.grad).")
    Array.backward = _backward_method
    Array.detach = detach
    Array._fresh_grad = property(fresh_grad, set_fresh_grad)


_install()
