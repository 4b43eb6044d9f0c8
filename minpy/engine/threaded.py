"""ThreadedEngine: ops run asynchronously on per-device worker pools.

Scheduling follows MXNet's ThreadedVar design.  Each Var keeps a FIFO of
ops waiting for it, the number of granted (running or dispatched) reads and
whether a write is granted.  A read is granted when no write is granted or
queued before it, so consecutive reads run together; a write is granted when
nothing before it is outstanding.  An op's ``wait`` counter is the number of
its vars that have not granted it yet; at zero it goes to its pool's queue.

All scheduling state is guarded by one engine lock.  Because ``push``
enqueues an op on all its vars atomically, the waits-for graph always
follows push order and therefore cannot contain a cycle.  ``fn`` itself runs
without the lock.  ``wait_for`` enqueues a *sync* control op that behaves
like a write (so it waits for every earlier reader and writer of the var)
and is completed in place, without a worker, as soon as it is granted;
``delete_var`` uses a *delete* control op the same way.

Backpressure: ``push`` blocks the pushing thread while the ops in flight
(pushed, not finished) reach ``max_inflight`` or their declared ``nbytes``
would pass ``max_inflight_bytes``, until half of each is free again (as many
ops as the CPU pool has workers always go, whatever their size: two workers
overlap two ops larger than the byte budget).  Without the bound a loop
of pushed ops runs ahead of the workers and holds every queued op's output.
Ops pushed from inside an op are never held back (that could deadlock).

Cancellation: ``cancel_pending`` marks every op pushed so far; when such an
op's turn comes it is skipped (as if it failed) unless it already started.
A ``KeyboardInterrupt`` that reaches ``wait_for``, ``waitall`` or a held-back
``push`` cancels, and so does the exit hook when the interpreter exits
because of an uncaught exception, so Ctrl-C does not wait for a backlog.
"""
import _thread
import atexit
import os
import sys
import threading
from collections import deque
import heapq
import itertools
from queue import SimpleQueue

from .base import Engine
from .var import EngineError, Var, normalize, poisoned, tick

__all__ = ["ThreadedEngine", "default_cpu_workers", "default_inflight_limits"]

DEFAULT_MAX_INFLIGHT = 1024
DEFAULT_MAX_INFLIGHT_BYTES = 16 << 20

_NORMAL, _SYNC, _DELETE = 0, 1, 2

# Non-daemon workers are stopped by a hook that runs before the interpreter
# joins non-daemon threads (the mechanism concurrent.futures uses).  Without
# it we fall back to daemon workers plus a plain atexit hook.
_register_atexit = getattr(threading, "_register_atexit", None)
_DAEMON = _register_atexit is None
_live = set()
_live_lock = threading.Lock()
_hook_installed = False
_tls = threading.local()

# The kernel may hand a process's SIGINT to any thread that does not block it (CUDA's
# threads, once CuPy is loaded, or a library's). Python then runs the handler in the main
# thread only when that thread next runs bytecode, and a main thread blocked in a lock
# wait gets no EINTR: Ctrl-C would wait for the whole backlog. So the main thread's waits
# wake every _SLICE seconds; other threads never get KeyboardInterrupt and wait unbounded.
_SLICE = 0.05
_MAIN = threading.main_thread().ident


def _wait(cond):
    """``cond.wait()`` (lock held), waking each _SLICE in the main thread; the caller
    loops on its predicate, as it must for any wake-up."""
    if _thread.get_ident() == _MAIN:
        cond.wait(_SLICE)
    else:
        cond.wait()


def _acquire(lock):
    """``lock.acquire()``, by _SLICE steps in the main thread (see _wait)."""
    if _thread.get_ident() == _MAIN:
        while not lock.acquire(timeout=_SLICE):
            pass
    else:
        lock.acquire()


def default_cpu_workers():
    """CPU pool size from env ``MINPY_CPU_WORKERS`` (default 1, as MXNet's
    ``MXNET_CPU_WORKER_NTHREADS``: CPU ops already run BLAS and numba on every
    core, and two of them at once oversubscribe the cores -- LeNet's executor
    step ran ~1.5x slower with two workers on 2 cores)."""
    return _env_count("MINPY_CPU_WORKERS", 1, minimum=1, hint="")


def _env_count(name, default, minimum=0, hint=" (0: no bound)"):
    """The integer in env ``name`` (``default`` when unset), at least ``minimum``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}{hint}, got {n}")
    return n


def default_inflight_limits():
    """``(max_inflight, max_inflight_bytes)`` from env ``MINPY_ENGINE_MAX_INFLIGHT``
    (default 1024 ops) and ``MINPY_ENGINE_MAX_INFLIGHT_BYTES`` (default 16 MiB); 0
    turns a bound off.  A few ops per worker keep the workers busy; a deeper queue
    only holds more outputs: more memory, and a working set that leaves the cache (a
    chain of 4 MiB adds ran ~2x slower per op with 64 MiB in flight than with 16)."""
    return (_env_count("MINPY_ENGINE_MAX_INFLIGHT", DEFAULT_MAX_INFLIGHT),
            _env_count("MINPY_ENGINE_MAX_INFLIGHT_BYTES", DEFAULT_MAX_INFLIGHT_BYTES))


def _exiting_on_error():
    # The interpreter sets sys.last_value (3.12: also last_exc) when it prints
    # the uncaught exception that ends the main script, before these hooks run.
    exc = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return exc is not None and not isinstance(exc, SystemExit)


def _shutdown_all():
    with _live_lock:
        engines = list(_live)
    cancel = _exiting_on_error()
    for eng in engines:
        eng.shutdown(cancel=cancel)


def _track(engine):
    global _hook_installed
    with _live_lock:
        _live.add(engine)
        if _hook_installed:
            return
        _hook_installed = True
    if _register_atexit is not None:
        try:
            _register_atexit(_shutdown_all)
        except RuntimeError:       # interpreter already shutting down
            pass
    atexit.register(_shutdown_all)


def _pool_key(device):
    """Map a device to its pool key: None, 'cpu' and ('cpu', i) share one."""
    if device is None or device == "cpu" or (
            isinstance(device, tuple) and device and device[0] == "cpu"):
        return "cpu"
    return device


class _Op:
    __slots__ = ("fn", "reads", "writes", "rw", "name", "queue", "wait", "kind",
                 "done", "rec", "seq", "priority", "nbytes")


_BELL = object()      # in a pool's FIFO: "take the highest-priority op of the heap"


class _ReadyQueue:
    """A pool's ready ops.  Priority-0 ops go through a C SimpleQueue in push
    order; an op with another priority, or any op while such ops wait, goes to a
    heap (highest priority first, then push order) and rings the FIFO with
    :data:`_BELL`; a worker that takes a FIFO op while the heap holds ops runs
    whichever ranks first (the last layer's gradients go out first, as with
    MXNet's priorities).  A Condition-based priority queue cost ~3 us an op.
    """

    def __init__(self):
        self.fifo = SimpleQueue()
        self._heap = []
        self._lock = threading.Lock()
        self._stops = itertools.count()

    def put(self, op):
        """Queue ``op`` (None: a stop signal, after every op queued before it)."""
        if op is not None and not op.priority and not self._heap:
            self.fifo.put(op)
            return
        key = (1, 0, next(self._stops)) if op is None else (0, -op.priority, op.seq)
        with self._lock:
            heapq.heappush(self._heap, (key, op))
        self.fifo.put(_BELL)

    def pop(self):
        """The heap's first op (called for a :data:`_BELL`)."""
        with self._lock:
            return heapq.heappop(self._heap)[1]

    def swap(self, op):
        """``op`` (taken from the FIFO) or, if one ranks before it, the heap's first op,
        ``op`` taking its place there (the heap's size and bells stay matched)."""
        with self._lock:
            if not self._heap:
                return op
            return heapq.heappushpop(self._heap, ((0, -op.priority, op.seq), op))[1]


def _grant(op, ready):
    op.wait -= 1
    if not op.wait:
        ready.append(op)


def _release_read(v, ready):
    v._nreads -= 1
    if not v._nreads and v._queue:          # head must be a write
        op, _ = v._queue.popleft()
        v._writing = True
        _grant(op, ready)


def _release_write(v, ready):
    v._writing = False
    q = v._queue
    while q:
        op, is_write = q[0]
        if is_write:
            if not v._nreads:
                q.popleft()
                v._writing = True
                _grant(op, ready)
            return
        q.popleft()
        v._nreads += 1
        _grant(op, ready)


def _enqueue(v, op, is_write):
    q = v._queue
    if q is None:
        q = v._queue = deque()
    q.append((op, is_write))


def _worker(engine, queue):
    _tls.engine = engine
    get, execute, dispatch = queue.fifo.get, engine._execute, engine._dispatch
    while True:
        op = get()
        if op is _BELL:
            op = queue.pop()
        elif queue._heap:               # prioritised ops wait: one may rank first
            op = queue.swap(op)
        if op is None:
            return
        ready = execute(op)
        if ready:
            dispatch(ready)


class _Pool:
    def __init__(self, engine, key, n):
        self.queue = _ReadyQueue()
        label = key if isinstance(key, str) else "-".join(map(str, key)) \
            if isinstance(key, tuple) else str(key)
        self.threads = [
            threading.Thread(target=_worker, args=(engine, self.queue),
                             name=f"minpy-engine-{label}-{i}", daemon=_DAEMON)
            for i in range(n)]
        for t in self.threads:
            t.start()


class ThreadedEngine(Engine):
    """Runs ops asynchronously on worker threads, one pool per device.

    Args:
        num_cpu_workers: size of the CPU pool (``device=None`` or ``'cpu'``);
            default from env ``MINPY_CPU_WORKERS``, else 1.
        num_device_workers: size of the pool created lazily for any other
            device key, e.g. ``('gpu', 0)``; default 1.
        max_inflight: most ops in flight before ``push`` blocks; default from
            env ``MINPY_ENGINE_MAX_INFLIGHT``, else 1024; 0: no bound.
        max_inflight_bytes: most ``nbytes`` (declared by ``push``) in flight;
            default from env ``MINPY_ENGINE_MAX_INFLIGHT_BYTES``, else 16 MiB;
            0: no bound.

    Workers start on first use.  ``shutdown`` (run automatically at
    interpreter exit and by ``set_engine``) drains pending ops (or cancels
    them: at an exit caused by an uncaught exception, or with
    ``cancel=True``) and joins the workers; ops pushed afterwards run inline
    in the pushing thread.
    ``wait_for``/``waitall``/``shutdown`` must not be called from inside an
    op of the same engine (EngineError), since that could deadlock.
    """

    kind = "threaded"

    def __init__(self, num_cpu_workers=None, num_device_workers=1, max_inflight=None,
                 max_inflight_bytes=None):
        super().__init__()
        if num_cpu_workers is None:
            num_cpu_workers = default_cpu_workers()
        for n in (num_cpu_workers, num_device_workers):
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"worker counts must be ints >= 1, got {n!r}")
        if max_inflight is None:
            max_inflight = _env_count("MINPY_ENGINE_MAX_INFLIGHT", DEFAULT_MAX_INFLIGHT)
        if max_inflight_bytes is None:
            max_inflight_bytes = _env_count("MINPY_ENGINE_MAX_INFLIGHT_BYTES",
                                            DEFAULT_MAX_INFLIGHT_BYTES)
        for what, n in (("max_inflight", max_inflight),
                        ("max_inflight_bytes", max_inflight_bytes)):
            if not isinstance(n, int) or n < 0:
                raise ValueError(f"ThreadedEngine: {what} must be an int >= 0, got {n!r}")
        self.num_cpu_workers = num_cpu_workers
        self.num_device_workers = num_device_workers
        self.max_inflight = max_inflight
        self.max_inflight_bytes = max_inflight_bytes
        self._max_ops = max_inflight or sys.maxsize
        self._max_bytes = max_inflight_bytes or sys.maxsize
        self._low_ops = self._max_ops // 2
        self._low_bytes = self._max_bytes // 2
        self._floor = min(num_cpu_workers, self._max_ops)   # ops the byte bound never holds
        self._init_state()

    def _init_state(self):
        # Re-entrant: a garbage-collected object's __del__ may call
        # delete_var/push while this thread is inside a locked section.
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)
        self._room = threading.Condition(self._lock)   # a held-back push may go on
        self._pools = {}
        self._npending = 0
        self._nops = 0                      # normal ops among them (not waits, deletes)
        self._nbytes = 0                    # their declared nbytes
        self._nheld = 0                     # pushes waiting for room
        self._cancel_seq = -1               # ops pushed before this are cancelled
        self._closed = False

    # -- public API ---------------------------------------------------------
    def push(self, fn, reads=(), writes=(), name=None, device=None, priority=0, nbytes=0):
        """Queue ``fn()``, blocking first while the in-flight bounds are reached;
        see ``minpy.engine.push``.  Returns None."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {fn!r}")
        reads, writes, rw = normalize(reads, writes)
        op = _Op()
        op.fn, op.reads, op.writes, op.rw, op.name, op.kind = fn, reads, writes, rw, name, _NORMAL
        op.priority = priority
        op.nbytes = nbytes
        # A push re-entered from __del__ inside a locked section must not wait:
        # waiting releases the lock that the interrupted section holds.
        reentrant = self._lock._is_owned()
        n = 0
        with self._lock:
            if self._full(nbytes) and not reentrant and not self._closed \
                    and not self.in_op():
                self._hold_back(nbytes)
            pool = self._pools.get("cpu" if device is None else device)
            op.queue = pool.queue if pool is not None else self._new_pool(device)
            for v in reads:
                if v._writing or v._queue:
                    _enqueue(v, op, False)
                    n += 1
                else:
                    v._nreads += 1
            for v in writes:
                if v._writing or v._nreads or v._queue:
                    _enqueue(v, op, True)
                    n += 1
                else:
                    v._writing = True
            op.wait = n
            op.seq = tick()
            self._npending += 1
            self._nops += 1
            self._nbytes += nbytes
        if not n:                       # no dependencies: straight to the pool
            if op.queue is not None:
                op.queue.put(op)
            else:
                self._dispatch((op,))

    def num_pending(self):
        """Ops pushed and not finished, not counting waits (read without the lock:
        a hint)."""
        return self._nops

    def in_op(self):
        """True in a thread running one of this engine's ops (a worker)."""
        return getattr(_tls, "engine", None) is self

    def inflight_bytes(self):
        """Sum of the ``nbytes`` of the ops pushed and not finished (a hint)."""
        return self._nbytes

    def cancel_pending(self):
        """Cancel every op pushed so far that has not started: it is skipped and
        the vars it writes raise ``EngineCancelled`` on every read until rewritten.
        Ops already running finish; ops pushed later run normally."""
        with self._lock:
            self._cancel_seq = tick()

    def _full(self, nbytes):                # lock held
        """True when one more op of ``nbytes`` would pass a bound (the byte bound holds
        nothing while fewer ops than CPU workers are in flight)."""
        return self._nops >= self._floor and (self._nops >= self._max_ops or
                                              self._nbytes + nbytes > self._max_bytes)

    def _hold_back(self, nbytes):           # lock held
        self._nheld += 1
        try:
            while self._full(nbytes):
                _wait(self._room)
        except KeyboardInterrupt:
            self.cancel_pending()
            raise
        finally:
            self._nheld -= 1

    def wait_for(self, var, reraise=True):
        """Block until every op pushed so far that touches ``var`` is done,
        then re-raise ``var``'s error, if any (every time, until an op rewrites
        ``var``; not when ``reraise`` is False).  A KeyboardInterrupt while
        waiting cancels the pending ops."""
        if not isinstance(var, Var):
            raise TypeError(f"expected a Var, got {var!r}")
        op = None
        with self._lock:
            if var._writing or var._nreads or var._queue:
                self._check_not_worker("wait_for")
                op = self._control(_SYNC, var)
                op.done = _thread.allocate_lock()
                op.done.acquire()
            else:
                rec = self._var_error(var)
        if op is not None:
            try:
                _acquire(op.done)
            except KeyboardInterrupt:
                self.cancel_pending()       # Ctrl-C: do not leave a backlog running
                raise
            rec = op.rec
        if rec is not None and reraise:
            rec.reraise()

    def waitall(self):
        """Block until all pushed ops are done; re-raise the oldest unseen
        error, if any (others stay pending for later waits).  A
        KeyboardInterrupt while waiting cancels the pending ops."""
        with self._idle:
            if self._npending:
                self._check_not_worker("waitall")
            try:
                while self._npending:
                    _wait(self._idle)
            except KeyboardInterrupt:
                self.cancel_pending()
                raise
            rec = self._take_first_error()
        if rec is not None:
            rec.reraise()

    def _delete_later(self, var):
        if var._writing or var._nreads or var._queue:
            self._control(_DELETE, var)
            return True
        return False

    def shutdown(self, cancel=False):
        """Finish pending ops (errors stay stored), stop and join workers.

        Args:
            cancel: cancel the ops not started yet (see ``cancel_pending``)
                instead of running them.  A KeyboardInterrupt while draining
                cancels as well, and is re-raised once the workers are stopped.
        """
        interrupt = None
        with self._idle:
            if self._closed:
                return
            self._check_not_worker("shutdown")
            if cancel:
                self.cancel_pending()
            while self._npending:
                try:
                    _wait(self._idle)
                except KeyboardInterrupt as e:
                    self.cancel_pending()
                    interrupt = e
            self._closed = True
            pools = self._unique_pools()
            self._pools.clear()
        for p in pools:
            for _ in p.threads:
                p.queue.put(None)
        for p in pools:
            for t in p.threads:
                t.join()
        with _live_lock:
            _live.discard(self)
        if interrupt is not None:
            raise interrupt

    @property
    def closed(self):
        """True after ``shutdown``."""
        return self._closed

    def worker_threads(self):
        """The live worker threads, for introspection and tests."""
        with self._lock:
            return [t for p in self._unique_pools() for t in p.threads]

    def __repr__(self):
        return (f"<ThreadedEngine cpu_workers={self.num_cpu_workers} "
                f"pending={self._npending}{' closed' if self._closed else ''}>")

    # -- internals ------------------------------------------------------------
    def _unique_pools(self):
        return list({id(p): p for p in self._pools.values()}.values())

    def _new_pool(self, device):            # lock held
        if self._closed:
            return None
        key = _pool_key(device)
        pool = self._pools.get(key)
        if pool is None:
            n = self.num_cpu_workers if key == "cpu" else self.num_device_workers
            pool = self._pools[key] = _Pool(self, key, n)
            _track(self)
        self._pools[device] = pool          # alias, e.g. ('cpu', 0) -> 'cpu'
        return pool.queue

    def _check_not_worker(self, what):
        if getattr(_tls, "engine", None) is self:
            raise EngineError(f"{what}() called inside an op of the same engine "
                              "would deadlock")

    def _control(self, kind, var):          # lock held; var is busy
        op = _Op()
        op.kind, op.reads, op.writes, op.wait, op.rec = kind, (), (var,), 1, None
        op.seq = tick()
        _enqueue(var, op, True)
        self._npending += 1
        return op

    def _execute(self, op):
        """Run one normal op (no lock held); return ops made ready."""
        fn = op.fn
        rec = poisoned(op.reads, op.writes, op.seq, op.rw)
        exc = None
        cancelled = False
        if rec is None:
            if op.seq < self._cancel_seq:
                cancelled = True
            else:
                try:
                    fn()
                except BaseException as e:      # stored and re-raised by a wait
                    exc = e
        op.fn = None
        ready = []
        with self._lock:
            if exc is not None:
                rec = self._new_error(exc, op.name, fn)
            elif cancelled:
                rec = self._cancelled(op.name, fn)
            for v in op.reads:
                _release_read(v, ready)
            for v in op.writes:
                v._error = rec
                if rec is None:
                    v.version += 1
                _release_write(v, ready)
            self._npending -= 1
            self._nops -= 1
            self._nbytes -= op.nbytes
            if self._nheld and (self._nops < self._floor or (
                    self._nops <= self._low_ops and self._nbytes <= self._low_bytes)):
                self._room.notify_all()
            out = self._settle(ready) if ready else ready
            if not self._npending:
                self._idle.notify_all()
        return out

    def _settle(self, ready):               # lock held
        """Complete ready control ops in place; return ready normal ops."""
        out = []
        i = 0
        while i < len(ready):
            op = ready[i]
            i += 1
            if op.kind == _NORMAL:
                out.append(op)
                continue
            v = op.writes[0]
            if op.kind == _SYNC:
                op.rec = self._var_error(v, op.seq)
            else:
                v.deleted = True
            _release_write(v, ready)
            self._npending -= 1
            if op.kind == _SYNC:
                op.done.release()
        return out

    def _dispatch(self, ops):
        """Hand ready ops to their pools; run them inline once closed."""
        stack = None
        for op in ops:
            if op.queue is not None:
                op.queue.put(op)
            elif stack is None:
                stack = [op]
            else:
                stack.append(op)
        while stack:
            for op in self._execute(stack.pop()):
                if op.queue is not None:
                    op.queue.put(op)
                else:
                    stack.append(op)

    def _after_fork(self):
        # Worker threads do not survive fork(); start from a clean slate.
        # Ops that were in flight in the parent are lost in the child.
        self._init_state()


def _after_fork_in_child():
    global _live_lock
    _live_lock = threading.Lock()
    for eng in list(_live):
        eng._after_fork()
    _live.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
