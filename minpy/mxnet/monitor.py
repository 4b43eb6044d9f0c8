"""``mx.monitor`` / ``mx.mon``: MXNet 1.x's ``Monitor`` — statistics of the arrays an
executor computes, every ``interval`` batches, for debugging.

    mon = mx.mon.Monitor(10, pattern='.*weight|.*output')
    mod.fit(train, num_epoch=2, monitor=mon)        # or: mod.install_monitor(mon)
    # each 10th batch logs: Batch:      10 fc1_output   0.5816833

The statistic of each operator output (``<node>_<output>``, ``fc1_output``; with
``monitor_all`` each operator input too) is taken as it is computed, through
:meth:`minpy.symbol.Executor.set_monitor_callback`; ``toc`` adds the arguments and
auxiliary states. The default statistic is MXNet's: ``norm(x) / sqrt(x.size)``.
Backward operators carry minpy's node names (``backward_fullyconnected0_...``),
not MXNet's (``fc1_backward_output0``), and with ``monitor_all`` an input is named
by minpy's operator argument name (``relu1_data`` where MXNet says ``relu1_input0``).
See also mxnet.monitor.Monitor.
"""
import logging
import re
from math import sqrt

import numpy

from ..core.array import Array
from . import ndarray

__all__ = ["Monitor"]


def _norm_stat(x):
    """MXNet's default statistic: ``norm(x) / sqrt(x.size)`` (a (1,) array)."""
    return ndarray.norm(x) / sqrt(x.size)


class Monitor:
    """Collect a statistic of the tensors of installed executors (MXNet's ``Monitor``).

    Args:
        interval: collect every ``interval`` batches (``tic`` counts them).
        stat_func: array -> array (or a list of arrays): the statistic (default
            ``norm(x) / sqrt(x.size)``).
        pattern: a regular expression; only names it matches (``re.match``) are kept.
        sort: sort the rows of ``toc`` by name.
        monitor_all: operator inputs too, not only outputs.
    Raises:
        ValueError: ``interval`` is not an int >= 1.

    See also mxnet.monitor.Monitor.
    """

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        if isinstance(interval, bool) or not isinstance(interval, (int, numpy.integer)) \
                or interval < 1:
            raise ValueError(f"Monitor: interval must be an int >= 1, got {interval!r}")
        self.stat_func = _norm_stat if stat_func is None else stat_func
        self.interval = int(interval)
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

        def stat_helper(name, array):
            """The executor's callback: queue the statistic while collecting."""
            if not self.activated or not self.re_prog.match(name):
                return
            self.queue.append((self.step, name, self.stat_func(array)))
        # Executor.reshape (a Module's smaller batch) makes a new executor carrying the
        # callback: toc then reads the arguments of the new one
        stat_helper.executor_reshaped = self._reshaped
        self.stat_helper = stat_helper

    def _reshaped(self, old, new):
        self.exes = [new if exe is old else exe for exe in self.exes]

    def install(self, exe):
        """Install on executor ``exe`` (several executors may be installed).

        Raises:
            TypeError: ``exe`` has no ``set_monitor_callback`` (not an Executor).
        """
        if not hasattr(exe, "set_monitor_callback"):
            raise TypeError(f"Monitor.install: expected an Executor (Symbol.bind / "
                            f"simple_bind), got {type(exe).__name__}")
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Start collecting for this batch if it is an ``interval``-th one (call before
        ``forward``)."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Stop collecting; add the arguments and auxiliary states of the executors.

        Returns:
            ``[(step, name, text)]``: ``text`` is each statistic's value followed by a
            tab (a scalar for a (1,)-shaped result, else the array printed), as MXNet's;
            ``[]`` when this batch was not collected.
        Raises:
            TypeError: ``stat_func`` returned something other than an array or a list
                of arrays.
        """
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in zip(exe._symbol.list_arguments(), exe.arg_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
            for name, array in zip(exe._symbol.list_auxiliary_states(), exe.aux_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda row: row[1])
        res = []
        for n, k, v_list in self.queue:
            if not isinstance(v_list, list):
                v_list = [v_list]
            s = ""
            for v in v_list:
                if not isinstance(v, (Array, numpy.ndarray)):
                    raise TypeError(f"Monitor.toc: stat_func must return an array or a list "
                                    f"of arrays, got {type(v).__name__} for {k!r}")
                host = v.asnumpy() if isinstance(v, Array) else v
                s += (str(host.reshape(())[()]) if host.shape == (1,) else str(host)) + "\t"
            res.append((n, k, s))
        self.queue = []
        return res

    def toc_print(self):
        """``toc``, each row logged (``logging.info``) as MXNet's."""
        for n, k, v in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(n, k, v))
