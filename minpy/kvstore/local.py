"""The single-process KVStore (kinds ``local`` and ``device``).

::

    kv = minpy.kvstore.create("local")
    kv.init("w", params["w"])
    kv.set_optimizer(minpy.nn.optim.create("sgd", learning_rate=0.1))
    kv.push("w", [grad_on_device0, grad_on_device1])   # summed, then the update
    kv.pull("w", out=[w_on_device0, w_on_device1])     # the new value, everywhere

Kinds: ``local`` keeps each value on the host and sums pushed lists there;
``device`` keeps it on the device of the value it was initialised with and
sums there (the other devices' arrays are copied over).  Push and pull are
operations on the dependency engine: a push reads the pushed arrays and
writes the stored value, a pull reads the stored value and writes the
``out`` arrays, so a pull waits for the pushes before it, a later read of a
pulled array waits for the pull, and ``priority`` orders them among the
ops ready at once (higher first).  They return at once in async mode
(``minpy.async_mode()``, where eager code waits for pending writes);
otherwise, or when a view (a slice) is involved, whose base is not among its
Vars, they finish before returning.  Without an updater a push replaces the
stored value by the sum; with one, ``updater(key, summed, stored)`` updates
the stored value in place (``set_optimizer`` makes one from a
``minpy.nn.optim`` optimizer).  Argument errors -- an unknown key, a shape
or dtype that does not match ``init`` -- are raised by the call itself,
before anything is queued, so the stored value is never touched by them.

See also mxnet.kvstore.KVStore.
"""
import pickle

import numpy

from .. import engine
from ..core.array import Array, new
from ..core.async_work import var_of
from ..core.execute import mutated
from ..dispatch.transfer import backend_for, context_of, data_on, move_raw
from ..dispatch import state
from ..dispatch.backend import backend_of
from ..dispatch.context import Context

__all__ = ["KVStore", "keys_values", "check_key", "init_keys", "copy_out", "finishes_now",
           "finish_unless_async", "sum_on", "host_sum", "optimizer_updater"]

_HOST = Context("cpu", 0)

def keys_values(where, keys, values, value_name="value"):
    """Pair keys with values: one key and its value(s), or a list of keys and a list
    with one entry per key."""
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(values) != len(keys):
            got = len(values) if isinstance(values, (list, tuple)) else type(values).__name__
            raise ValueError(f"KVStore.{where}: {len(keys)} keys need a list of {len(keys)} "
                             f"{value_name}s, got {got}")
        return list(zip(keys, values))
    return [(keys, values)]


def check_key(where, key):
    if isinstance(key, bool) or not isinstance(key, (int, numpy.integer, str)):
        raise TypeError(f"KVStore.{where}: keys must be int or str, got {key!r} "
                        f"({type(key).__name__})")
    return int(key) if isinstance(key, numpy.integer) else key


def _as_arrays(where, key, value):
    """A value, or a list of them (one per device), as a list of Arrays."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise ValueError(f"KVStore.{where}: key {key!r} got an empty list of arrays")
    out = []
    for v in items:
        if type(v) is Array:
            out.append(v)
        elif isinstance(v, numpy.ndarray):
            out.append(new(v))
        else:
            raise TypeError(f"KVStore.{where}: key {key!r} takes minpy Arrays (or NumPy "
                            f"arrays), got {type(v).__name__}")
    return out


class KVStore:
    """A single-process key-value store (see the module doc); make one with :func:`create`.

    Attributes:
        type: the kind (``'local'`` or ``'device'``).
        rank: this worker's rank (0).
        num_workers: the number of workers (1).
    """

    def __init__(self, kind="local"):
        self.type = kind
        self._store = {}          # key -> Array holding the stored value
        self._updater = None
        self._optimizer = None

    @property
    def rank(self):
        """This worker's rank among ``num_workers`` (always 0 in one process)."""
        return 0

    @property
    def num_workers(self):
        """The number of workers (1 in one process)."""
        return 1

    # ------------------------------------------------------------------ API
    def init(self, key, value):
        """Store the initial value of each key (a copy).

        Args:
            key: an int or str, or a list of them.
            value: an Array (or NumPy array) per key; for a list of keys, a list.
        Raises:
            ValueError: a key already initialised, or mismatched lists.
        """
        pairs = keys_values("init", key, value)
        checked = []
        for k, v in pairs:
            k = check_key("init", k)
            if k in self._store or any(k == c for c, _ in checked):
                raise ValueError(f"KVStore.init: key {k!r} is already initialised")
            arrays = _as_arrays("init", k, v)
            checked.append((k, arrays[0]))
        for k, a in checked:
            d = self._home(a)
            ctx = context_of(d)
            with backend_for(ctx).device(ctx.device_id):    # CuPy copies to the current one
                self._store[k] = new(d.copy())

    def push(self, key, value, priority=0):
        """Push value(s) to key(s): a list of arrays for one key (one per device) is
        summed; the updater, if set, then updates the stored value, else the sum
        replaces it.  Queued on the engine; returns at once.

        Raises:
            KeyError: a key that was not initialised.
            ValueError / TypeError: a shape or dtype other than the key's.
        """
        for k, v in keys_values("push", key, value):
            stored, arrays = self._checked("push", k, v)
            self._push_one(k, stored, arrays, priority)

    def pull(self, key, out=None, priority=0):
        """Copy the stored value(s) of key(s) into ``out`` (an Array, or a list of
        Arrays on any devices; for a list of keys, a list of those).  Queued on the
        engine; a later read of ``out`` waits for it.

        Raises:
            KeyError / ValueError / TypeError as :meth:`push`, for ``out``.
        """
        if out is None:
            raise ValueError("KVStore.pull: out= is required (the arrays to write the "
                             "stored values into)")
        for k, o in keys_values("pull", key, out, "out array"):
            stored, arrays = self._checked("pull", k, o)
            self._pull_one(k, stored, arrays, priority)

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` (into ``value`` itself when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def set_updater(self, updater):
        """Use ``updater(key, summed_gradient, stored_value)`` (updating the stored
        Array in place) for every later push."""
        if not callable(updater):
            raise TypeError(f"KVStore.set_updater: the updater must be callable, got "
                            f"{type(updater).__name__}")
        self._updater = updater

    _set_updater = set_updater

    def set_optimizer(self, optimizer):
        """Apply ``optimizer`` (a ``minpy.nn.optim`` optimizer: ``update(name, w, g)``)
        to every later push, its state kept per key."""
        if not callable(getattr(optimizer, "update", None)):
            raise TypeError("KVStore.set_optimizer: expected a minpy.nn.optim optimizer "
                            f"(with update(name, w, g)), got {type(optimizer).__name__}")
        self._optimizer = optimizer
        self._updater = optimizer_updater(optimizer)

    def set_gradient_compression(self, compression_params):
        """Gradient compression is for the stores that exchange gradients between
        workers (``dist_sync``, ``dist_device_sync``); here it raises ValueError."""
        raise ValueError(f"KVStore({self.type!r}).set_gradient_compression: gradient "
                         "compression needs kind 'dist_sync' or 'dist_device_sync' (it "
                         "shrinks what workers send each other)")

    def barrier(self):
        """Wait until this store's queued pushes and pulls are done (one worker: no peers)."""
        for a in self._store.values():
            a.wait_to_read()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer's state (and, with ``dump_optimizer``, the optimizer) to
        ``fname`` with pickle."""
        opt = self._need_optimizer("save_optimizer_states")
        self.barrier()
        payload = {"state": opt.state_dict()}
        if dump_optimizer:
            payload["optimizer"] = opt
        with open(fname, "wb") as f:
            pickle.dump(payload, f)

    def load_optimizer_states(self, fname):
        """Restore what :meth:`save_optimizer_states` wrote (the optimizer too, if dumped)."""
        self._need_optimizer("load_optimizer_states")
        self.barrier()
        with open(fname, "rb") as f:
            payload = pickle.load(f)
        if not isinstance(payload, dict) or "state" not in payload:
            raise ValueError(f"KVStore.load_optimizer_states: {fname!r} was not written by "
                             "save_optimizer_states")
        if "optimizer" in payload:
            self.set_optimizer(payload["optimizer"])
        self._optimizer.load_state_dict(payload["state"])

    # ------------------------------------------------------------------ internals
    def _need_optimizer(self, where):
        if self._optimizer is None:
            raise RuntimeError(f"KVStore.{where}: no optimizer; call set_optimizer first")
        return self._optimizer

    def _home(self, a):
        """The data of Array ``a`` where this kind keeps values (after its writes):
        on its own device for ``device``, on the host otherwise."""
        a.wait_to_read()
        if self.type == "device":
            return a._data
        return data_on(a, _HOST)

    def _checked(self, where, key, value):
        key = check_key(where, key)
        stored = self._store.get(key)
        if stored is None:
            raise KeyError(f"KVStore.{where}: key {key!r} was not initialised (call init "
                           "first)")
        arrays = _as_arrays(where, key, value)
        want = stored._data
        for a in arrays:
            d = a._data
            if tuple(d.shape) != tuple(want.shape):
                raise ValueError(f"KVStore.{where}: key {key!r} holds shape {tuple(want.shape)}"
                                 f", got an array of shape {tuple(d.shape)}")
            if d.dtype != want.dtype:
                raise TypeError(f"KVStore.{where}: key {key!r} holds dtype {want.dtype}, got "
                                f"an array of dtype {d.dtype}")
        return stored, arrays

    def _push_one(self, key, stored, arrays, priority):
        ctx = context_of(stored._data)
        updater = self._updater

        def run():
            total = sum_on(arrays, ctx)
            with backend_for(ctx).device(ctx.device_id):
                if updater is None:
                    stored._data[...] = total
                else:                    # Arrays without vars: the updater's waits are no-ops
                    updater(key, new(total), new(stored._data))
            mutated(stored)
        engine.push(run, reads=[var_of(a) for a in arrays if a is not stored],
                    writes=[var_of(stored)], name=f"kvstore push {key!r}", priority=priority)
        finish_unless_async(arrays, stored)

    def _pull_one(self, key, stored, arrays, priority):
        engine.push(lambda: copy_out(stored, arrays), reads=[var_of(stored)],
                    writes=[var_of(a) for a in arrays], name=f"kvstore pull {key!r}",
                    priority=priority)
        finish_unless_async(arrays, stored)


def sum_on(arrays, ctx):
    """A new array on ``ctx`` holding the sum of the Arrays ``arrays`` (copied there)."""
    parts = [data_on(a, ctx) for a in arrays]
    with backend_for(ctx).device(ctx.device_id):
        total = parts[0].copy()
        xp = backend_of(total).xp
        for d in parts[1:]:
            xp.add(total, d, out=total)
    return total


def host_sum(arrays):
    """The sum of the Arrays ``arrays`` as a C-contiguous host array that the caller
    may only read (a single contiguous host array is returned as it is)."""
    parts = [data_on(a, _HOST) for a in arrays]
    if len(parts) == 1 and parts[0].flags.c_contiguous:
        return parts[0]
    total = numpy.array(parts[0], order="C", copy=True)
    for d in parts[1:]:
        numpy.add(total, d, out=total)
    return total


def copy_out(stored, arrays):
    """Copy the stored value into each of ``arrays`` (on its own device); run inside
    an engine op that reads ``stored`` and writes ``arrays``."""
    src = stored._data
    for a in arrays:
        ctx = context_of(a._data)
        value = move_raw(src, ctx)
        with backend_for(ctx).device(ctx.device_id):
            a._data[...] = value
        mutated(a)


def optimizer_updater(optimizer):
    """The ``updater(key, summed, stored)`` that applies a ``minpy.nn.optim`` optimizer."""
    return lambda k, g, w: optimizer.update(str(k), w, g)


def init_keys(key):
    """The checked keys of an ``init`` call (one key or a list of them)."""
    return [check_key("init", k) for k in (key if isinstance(key, (list, tuple)) else [key])]


def finishes_now(arrays):
    """Whether an op on ``arrays`` must finish before its call returns: outside async
    mode (eager code there does not wait for Vars), or when one of ``arrays`` is a
    view (its base Array has a Var of its own that the op does not hold, so a later
    read of the base would not wait)."""
    return not state.process.async_on or \
        any(getattr(a._data, "base", None) is not None for a in arrays)


def finish_unless_async(arrays, stored):
    """Wait for ``stored`` and ``arrays`` when :func:`finishes_now` says so."""
    if finishes_now(arrays):
        stored.wait_to_read()
        for a in arrays:
            a.wait_to_read()
