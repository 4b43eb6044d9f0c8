"""The watched ranks of :mod:`minpy.kvstore.launch`: each rank runs its script through
``python -m minpy.kvstore.launch --rank script args``, which notes in the launcher's
folder (``MINPY_LAUNCH_REPORTS``) when the rank starts, when it ends with a normal Python
exit, and which MPI shared-memory files it mapped, so the launcher can tell a job that
ended abnormally from one that ended well even when mpiexec says 0."""
import atexit
import glob
import importlib.util
import os
import runpy
import sys

from .mpi_flavours import SHM_PATTERNS

REPORTS_VARIABLE = "MINPY_LAUNCH_REPORTS"   # the folder where watched ranks report
_RANK_FLAG = "--rank"   # python -m minpy.kvstore.launch --rank script args: one watched rank
_PROG = "minpy.kvstore.launch"


def _mapped_shm(pids):
    """The MPI shared-memory files the processes ``pids`` map (from /proc)."""
    prefixes = tuple(pattern.rstrip("*") for pattern in SHM_PATTERNS)
    mapped = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                for line in f:
                    if any(prefix in line for prefix in prefixes):
                        path = line.split(maxsplit=5)[-1].strip()
                        mapped.add(path.removesuffix(" (deleted)"))
        except OSError:
            pass
    return mapped


def _write_report(path, text, mode="w"):
    """Write (or with mode "a" append) ``text`` to ``path``; nothing when the folder is
    not there (a rank on another host without a shared file system: the launcher
    cannot watch it)."""
    try:
        with open(path, mode) as f:
            f.write(text)
    except OSError:
        pass


class _AfterImport:
    """A meta path finder that runs ``then()`` right after the module ``name`` has been
    imported (once), by wrapping the loader the other finders give it."""

    def __init__(self, name, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        """The usual spec of ``name``, with a loader that calls ``then`` after it."""
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenLoader(spec.loader, self.then)
        return spec


class _ThenLoader:
    """``loader``, calling ``then()`` once the module is executed."""

    def __init__(self, loader, then):
        self._loader, self._then = loader, then

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then()


def run_rank(argv):
    """Run ``argv`` (script, args...) as this rank's ``__main__``, as ``python -m mpi4py
    script args`` does, and report in the folder ``$MINPY_LAUNCH_REPORTS``:
    ``start-RANK`` now, ``done-RANK`` at a normal interpreter exit (atexit: after the
    script returns, raises or calls sys.exit), ``exit-RANK`` (the status) when the
    process calls ``os._exit``, which skips atexit, the flushing of output and
    MPI_Finalize. What a forked child of the rank does is not reported."""
    if not argv:
        raise SystemExit(f"python -m {_PROG} {_RANK_FLAG}: give the script to run")
    folder = os.environ.get(REPORTS_VARIABLE)
    # PMI_RANK: MPICH's hydra sets it; OMPI_COMM_WORLD_RANK: Open MPI's mpiexec
    rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
    if folder and rank is not None:
        pid, real_exit = os.getpid(), os._exit

        def report(kind, text="", mode="w"):
            if os.getpid() == pid:
                _write_report(os.path.join(folder, f"{kind}-{rank}"), text, mode)

        def report_shm():
            report("shm", "".join(f"{p}\n" for p in sorted(_mapped_shm([pid]))), "a")

        def report_done():
            report_shm()
            report("done")

        def reporting_exit(status):
            report_shm()
            report("exit", f"{status}\n")
            real_exit(status)

        report("start", f"{pid}\n")
        atexit.register(report_done)
        os._exit = reporting_exit
        # MPI_Init (importing mpi4py.MPI) maps the job's shared memory: name it then,
        # for the launcher to remove should the job be killed before it is polled
        if "mpi4py.MPI" in sys.modules:
            report_shm()
        else:
            sys.meta_path.insert(0, _AfterImport("mpi4py.MPI", report_shm))
    script = argv[0]
    sys.argv[:] = list(argv)
    if not getattr(sys.flags, "isolated", 0):
        sys.path[0] = os.path.realpath(os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    return 0


def _unfinished_ranks(folder):
    """{rank: the status it passed to os._exit, or None} for the ranks that reported
    their start in ``folder`` but no normal exit, in rank order."""
    try:
        names = set(os.listdir(folder))
    except OSError:
        return {}
    found = {}
    for name in names:
        rank = name.removeprefix("start-")
        if rank == name or not rank.isdigit() or f"done-{rank}" in names:
            continue
        status = None
        if f"exit-{rank}" in names:
            try:
                with open(os.path.join(folder, f"exit-{rank}")) as f:
                    status = int(f.read())
            except (OSError, ValueError):
                pass
        found[int(rank)] = status
    return dict(sorted(found.items()))


def _reported_shm(folder):
    """The shared-memory files the ranks reported mapping in ``folder``."""
    paths = set()
    for path in glob.glob(os.path.join(glob.escape(folder), "shm-*")):
        try:
            with open(path) as f:
                paths.update(line.strip() for line in f if line.strip())
        except OSError:
            pass
    return paths


def _ranks(ranks):
    """``rank 3`` or ``ranks 0, 2``."""
    ranks = list(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))
