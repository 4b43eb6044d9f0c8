"""MPI plumbing of the ``dist_*`` kinds: the communicator, the job's layout of
workers and servers, and waiting on requests without spinning a core.

**Layout.** ``MINPY_KVSTORE_SERVERS=S`` (set by ``python -m minpy.kvstore.launch
--servers S``) makes the last S ranks of ``COMM_WORLD`` parameter servers and
the others workers.

**Waiting.** Requests are polled, busily for up to 1 ms and then with short
sleeps: a rank blocked inside MPI spins a whole core for as long as it
waits, which on a small machine starves the rank it waits for.  A request
that does not finish within ``MINPY_KVSTORE_TIMEOUT`` seconds (default 120)
raises TimeoutError naming the key and the rank, rather than hang.  So does
the job's setup in the first ``kvstore.create`` (:func:`layout`): every rank
waits for the others with nonblocking messages (:func:`await_all`) before the
blocking ``MPI_Comm_split``, and names the ranks that never came.
"""
import collections
import math
import os
import time

from .. import engine

__all__ = ["Layout", "layout", "await_all", "mpi", "mpi_comm", "wait_request"]

_POLL_S = 50e-6
_SPIN_ALONE_S = 50e-3
_SPIN_SHARED_S = 0.1e-3
_ARRIVAL_TAG = 31_717       # await_all's messages on COMM_WORLD; far from the servers' 11-13
_ARRIVAL_POLL_S = 1e-3


def mpi_comm():
    """mpi4py's ``COMM_WORLD`` (MPI initialised on first use).

    Raises:
        ImportError: naming ``pip install mpi4py mpich`` when mpi4py (or an MPI
            library) is missing.
    """
    return mpi().COMM_WORLD


def mpi():
    """The ``mpi4py.MPI`` module (MPI initialised on first use); ImportError as
    :func:`mpi_comm`."""
    try:
        from mpi4py import MPI     # optional dependency (the `dist` extra), loaded on use
    except ImportError as e:
        raise ImportError("minpy.kvstore: the dist_* kinds need mpi4py and an MPI library; "
                          'install them with pip install mpi4py mpich '
                          f"({e})") from None
    return MPI


Layout = collections.namedtuple("Layout", "world workers servers is_server")
Layout.__doc__ = """The job's roles: ``world`` (COMM_WORLD), ``workers`` (a communicator of
the worker ranks; None on a server), ``servers`` (the world ranks of the servers),
``is_server`` (whether this rank is one)."""

_layouts = {}


def _env_servers(size):
    raw = os.environ.get("MINPY_KVSTORE_SERVERS", "").strip() or "0"
    try:
        servers = int(raw)
    except ValueError:
        servers = -1
    if not 0 <= servers < size:
        raise ValueError(f"minpy.kvstore: MINPY_KVSTORE_SERVERS={raw!r} must be an int from 0 "
                         f"to {size - 1} (the job has {size} MPI ranks and needs a worker)")
    return servers


def layout(world=None, where="minpy.kvstore.create"):
    """The :class:`Layout` of ``world`` (default ``COMM_WORLD``), computed once per job:
    the first call is collective (every rank must make it).

    Raises:
        TimeoutError: naming ``where``, the ranks that did not make the call and the
            timeout, when some did not within ``MINPY_KVSTORE_TIMEOUT`` seconds.
    """
    world = world if world is not None else mpi_comm()
    key = world.py2f()
    if key not in _layouts:
        size, rank = world.Get_size(), world.Get_rank()
        servers = _env_servers(size)
        is_server = rank >= size - servers
        # Split blocks until every rank calls it, with no timeout: wait for everyone
        # with nonblocking messages first, so a stalled rank is an error, not a hang
        await_all(world, where)
        workers = world.Split(1 if is_server else 0, rank)
        _layouts[key] = Layout(world, None if is_server else workers,
                               list(range(size - servers, size)), is_server)
    return _layouts[key]


def _timeout():
    """``MINPY_KVSTORE_TIMEOUT`` in seconds (default 120); ValueError naming it when it
    is not a positive number."""
    raw = os.environ.get("MINPY_KVSTORE_TIMEOUT", "").strip()
    if not raw:
        return 120.0
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise ValueError(f"minpy.kvstore: MINPY_KVSTORE_TIMEOUT={raw!r} must be a positive "
                         "number of seconds")
    return value


def await_all(world, where):
    """Return once every rank of ``world`` has called this (with the same ``where``),
    exchanging a byte with each over nonblocking point-to-point messages polled
    against ``MINPY_KVSTORE_TIMEOUT``; unlike a blocking collective, a rank that
    never comes is an error.

    Raises:
        TimeoutError: naming ``where``, this rank, the ranks that did not arrive and
            the timeout.
    """
    size, rank = world.Get_size(), world.Get_rank()
    if size == 1:
        return
    MPI = mpi()
    limit = _timeout()
    token, got = bytearray(1), bytearray(size)
    sends = [world.Isend([token, MPI.BYTE], peer, _ARRIVAL_TAG)
             for peer in range(size) if peer != rank]
    pending = {peer: world.Irecv([memoryview(got)[peer:peer + 1], MPI.BYTE], peer,
                                 _ARRIVAL_TAG)
               for peer in range(size) if peer != rank}
    deadline = time.monotonic() + limit
    while pending:
        for peer in [p for p, request in pending.items() if request.Test()]:
            del pending[peer]
        if not pending:
            break
        if time.monotonic() > deadline:
            missing = ", ".join(map(str, sorted(pending)))
            raise TimeoutError(
                f"{where}: rank {rank} waited {limit:g} s for rank(s) {missing} of the job's "
                f"{size} to get there too: they stalled or died before it, or do not create "
                "the store (every rank of a dist_* job must; MINPY_KVSTORE_TIMEOUT)")
        time.sleep(_ARRIVAL_POLL_S)
    MPI.Request.Waitall(sends)        # matched by now: every peer posted its receive


def wait_request(request, kind, where, key, rank, peers):
    """Poll an mpi4py ``request`` until it is done, busily at first, then with short
    sleeps.  Returns what ``request.test()`` gives for a lowercase (pickled)
    request, else None.

    MPI progresses only inside calls, so sleeping between polls slows a transfer
    (a 1 MB allreduce: 168 us polled busily, 307 us with sleeps); but a busy poll
    holds the GIL, and other engine ops (the backward pass the communication
    should hide behind) then wait for it (a step with 4 MB allreduces overlapped
    ran 2x slower).  So the poll stays busy for up to 50 ms while no other engine
    op is pending, and for 0.1 ms otherwise.

    Raises:
        TimeoutError: after ``MINPY_KVSTORE_TIMEOUT`` seconds, naming the store
            kind, the call, the key and this rank.
    """
    test = request.test if hasattr(request, "test") else None
    start = time.perf_counter()
    deadline = None
    while True:
        if test is not None:
            done, value = test()
            if done:
                return value
        elif request.Test():
            return None
        busy = time.perf_counter() - start
        if busy < _SPIN_SHARED_S or (busy < _SPIN_ALONE_S and engine.num_pending() <= 1):
            continue
        if deadline is None:
            deadline = time.monotonic() + _timeout()
        elif time.monotonic() > deadline:
            what = "" if key is None else f" of key {key!r}"
            raise TimeoutError(f"KVStore({kind!r}).{where}{what}: rank {rank} waited "
                               f"{_timeout():g} s for {peers}; one has probably died or is "
                               "not making the same calls (MINPY_KVSTORE_TIMEOUT)")
        time.sleep(_POLL_S)
