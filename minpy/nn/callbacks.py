"""``minpy.nn.callbacks``: the one callback protocol of minpy's training, and the stock callbacks.

A :class:`Callback` overrides the hooks it needs; :meth:`Solver.train
<minpy.nn.solver.Solver.train>` calls each as ``hook(solver, info)``::

    class StopAt99(Callback):
        def on_epoch_end(self, solver, info):
            if info["val_acc"] >= 0.99:
                raise StopTraining

    Solver(model, train, test, callbacks=[StopAt99(), Plot("curves.png")]).train()

The hooks in the order they come, with ``info``'s keys (``epoch`` and ``step``
count from 1; ``step`` over the whole run, ``batch`` from 0 in the epoch):

- ``on_train_begin``: ``epoch`` (epochs already done), ``num_epochs``.
- ``on_epoch_begin``: ``epoch``, ``batches`` (per epoch; None if the iterator cannot tell).
- ``on_batch_begin``: ``epoch``, ``batch``, ``step``.
- ``on_before_update``: those and ``loss`` (a float), ``where`` (the step in words),
  ``skip``: after the gradient, before the optimizer; set ``info["skip"] = True``
  to skip this step's update (counted in ``solver.skipped_steps``).
- ``on_batch_end``: ``epoch``, ``batch``, ``step``, ``loss``, ``batch_size``,
  ``samples`` (this epoch so far), ``samples_per_sec``.
- ``on_epoch_end``: ``epoch``, ``step``, ``train_acc``, ``val_acc`` (mean losses
  for regression), ``time`` (seconds), ``samples``, ``samples_per_sec``; after the
  accuracy check and the history.
- ``on_train_end``: ``epoch``, ``step``, ``error`` (the exception ending the
  run, else None): called however training ends.

Raise :class:`StopTraining` from a hook to end training there; the callbacks
after it in that event are not called. Callbacks run by ascending ``order``
(ties in the order given): the stock ones that change the training state
(:class:`LRDecay`, :class:`StopOnNonFinite`: -30) first, then the
:class:`ProgressBar` (-20), then :class:`Checkpoint` (-10), so a checkpoint
holds the epoch's final state, then the user's (0). MXNet's ``mx.callback``
classes (:mod:`minpy.mxnet.callback`) are Callbacks too.
"""
import importlib.util
import math
import os
import sys

import numpy

from . import checkpoint, parallel

__all__ = ["Callback", "CallbackList", "StopTraining", "LambdaCallback", "ProgressBar",
           "Checkpoint", "StopOnNonFinite", "LRDecay", "Plot", "plot_history",
           "check_lr_reaches", "HOOKS"]

HOOKS = ("on_train_begin", "on_epoch_begin", "on_batch_begin", "on_before_update",
         "on_batch_end", "on_epoch_end", "on_train_end")


class StopTraining(Exception):
    """Raised by a callback to end :meth:`Solver.train` (after the current step)."""


class Callback:
    """Hooks called by the training loop; override the ones you need (see the module).

    ``order``: callbacks run by ascending ``order`` (default 0; the stock ones
    that change the training state or checkpoint it run before, at -30 to -10).
    """

    order = 0

    def on_train_begin(self, solver, info):
        """When :meth:`Solver.train` starts (parameters initialised)."""

    def on_epoch_begin(self, solver, info):
        """Before each epoch's first batch."""

    def on_batch_begin(self, solver, info):
        """Before each step's forward pass."""

    def on_before_update(self, solver, info):
        """After each step's gradient, before its update; ``info["skip"] = True`` skips it."""

    def on_batch_end(self, solver, info):
        """After each optimizer step."""

    def on_epoch_end(self, solver, info):
        """After each epoch's accuracy check."""

    def on_train_end(self, solver, info):
        """When :meth:`Solver.train` ends, normally or not (``info["error"]``)."""


class LambdaCallback(Callback):
    """A callback from functions ``fn(solver, info)`` given by hook name.

    Example: ``LambdaCallback(on_epoch_end=lambda solver, info: print(info["val_acc"]))``.
    Raises TypeError for a name that is not a hook or a value that is not callable.
    """

    def __init__(self, **hooks):
        for name, fn in hooks.items():
            if name not in HOOKS or not callable(fn):
                raise TypeError(f"LambdaCallback: {name}={fn!r} is not a function for one of "
                                f"the hooks {HOOKS}")
            setattr(self, name, fn)


class CallbackList:
    """Callbacks called together: ``callbacks.on_epoch_end(solver, info)`` calls each
    one's hook by ascending ``order`` (ties in the order added).

    Any object with one or more of the hooks is accepted (hooks it lacks are not
    called); anything else is refused with a TypeError naming ``where``.
    """

    def __init__(self, callbacks=(), where="CallbackList"):
        self.where = where
        self._callbacks = []
        self.extend(callbacks)

    def append(self, callback):
        """Add ``callback`` after those of the same or a lower ``order``."""
        if not any(callable(getattr(callback, hook, None)) for hook in HOOKS):
            raise TypeError(f"{self.where}: {callback!r} is not a callback (a "
                            "minpy.nn.callbacks.Callback); wrap a function in LambdaCallback")
        order = getattr(callback, "order", 0)
        at = sum(1 for cb in self._callbacks if getattr(cb, "order", 0) <= order)
        self._callbacks.insert(at, callback)

    def remove(self, callback):
        """Take ``callback`` out (ValueError if it is not in)."""
        self._callbacks.remove(callback)

    def extend(self, callbacks):
        """:meth:`append` each of ``callbacks``."""
        for callback in callbacks:
            self.append(callback)

    def find(self, kind):
        """The first callback that is an instance of ``kind``, or None."""
        return next((cb for cb in self._callbacks if isinstance(cb, kind)), None)

    def __iter__(self):
        return iter(list(self._callbacks))

    def __len__(self):
        return len(self._callbacks)

    def __getitem__(self, index):
        return self._callbacks[index]

    def __repr__(self):
        return f"CallbackList({self._callbacks!r})"

    def _call(self, hook, solver, info):
        for callback in list(self._callbacks):
            fn = getattr(callback, hook, None)
            if fn is not None:
                fn(solver, info)

    def on_train_begin(self, solver, info):
        """Each callback's ``on_train_begin``."""
        self._call("on_train_begin", solver, info)

    def on_epoch_begin(self, solver, info):
        """Each callback's ``on_epoch_begin``."""
        self._call("on_epoch_begin", solver, info)

    def on_batch_begin(self, solver, info):
        """Each callback's ``on_batch_begin``."""
        self._call("on_batch_begin", solver, info)

    def on_before_update(self, solver, info):
        """Each callback's ``on_before_update``."""
        self._call("on_before_update", solver, info)

    def on_batch_end(self, solver, info):
        """Each callback's ``on_batch_end``."""
        self._call("on_batch_end", solver, info)

    def on_epoch_end(self, solver, info):
        """Each callback's ``on_epoch_end``."""
        self._call("on_epoch_end", solver, info)

    def on_train_end(self, solver, info):
        """Each callback's ``on_train_end``."""
        self._call("on_train_end", solver, info)


# ---------------------------------------------------------------- progress
class ProgressBar(Callback):
    """Progress on the chief process (rank 0): a tqdm bar per epoch (running loss,
    samples/s; train and validation accuracy at its end), or without a bar the lines
    ``(Iteration N) loss: ...`` every ``print_every`` steps and ``(Epoch e / E) train
    acc: ...`` per epoch, on stdout.

    Args:
        verbose: print the plain lines (and allow the automatic bar).
        progress: True/False for the bar; None: on when ``verbose``, stderr is a
            terminal and tqdm is installed. On a terminal narrower than
            ``MIN_COLUMNS`` (a zero-width one too) there is no bar either way:
            the plain lines come instead, so the output degrades, never vanishes.
        print_every: steps between plain lines.
    Raises:
        ImportError when the bar is asked for (``progress=True``) and tqdm is missing.
    """

    order = -20
    MIN_COLUMNS = 40      # narrower, tqdm cuts the bar and its accuracies to nothing

    def __init__(self, verbose=True, progress=None, print_every=10):
        self.verbose = bool(verbose)
        self.progress = progress
        self.print_every = max(int(print_every), 1)
        self._bar = None
        self._running = None

    def _wants_bar(self, solver):
        if not solver.is_chief or self.progress is False:
            return False
        columns = terminal_columns(sys.stderr)
        if columns is not None and columns < self.MIN_COLUMNS:
            return False
        if self.progress:
            return True        # a notebook's widget too, whose stderr is no terminal
        return self.verbose and columns is not None and \
            importlib.util.find_spec("tqdm") is not None

    def on_epoch_begin(self, solver, info):
        self._close()
        self._running = None
        if not self._wants_bar(solver):
            return
        try:
            from tqdm.auto import tqdm     # optional: plain printing without it
        except ImportError:
            raise ImportError('Solver(progress=True) needs tqdm: pip install tqdm') \
                from None
        self._bar = tqdm(total=info["batches"], desc=f"epoch {info['epoch']}/{solver.num_epochs}",
                         unit="batch", leave=True, dynamic_ncols=True)

    def on_batch_end(self, solver, info):
        loss, running = info["loss"], self._running
        self._running = loss if running is None or not math.isfinite(running) \
            else 0.9 * running + 0.1 * loss
        if self._bar is not None:
            self._bar.set_postfix(loss=f"{self._running:.4f}",
                                  samples_per_s=f"{info['samples_per_sec']:.0f}", refresh=False)
            self._bar.update(1)
        elif self.verbose and solver.is_chief and (info["step"] - 1) % self.print_every == 0:
            print(f"(Iteration {info['step']}) loss: {loss:f}")

    def on_epoch_end(self, solver, info):
        train_acc, val_acc, rate = info["train_acc"], info["val_acc"], info["samples_per_sec"]
        if self._bar is not None:
            self._bar.set_postfix(
                loss=f"{self._running:.4f}" if self._running is not None else "-",
                samples_per_s=f"{rate:.0f}", train=f"{train_acc:.4f}", val=f"{val_acc:.4f}")
            self._close()
        elif self.verbose and solver.is_chief:
            target = "acc" if solver.task_type == "classification" else "loss"
            print(f"(Epoch {info['epoch']} / {solver.num_epochs}) train {target}: "
                  f"{train_acc:.4f}, val {target}: {val_acc:.4f}, time: {info['time']:.2f} s, "
                  f"{rate:.0f} samples/s")

    def on_train_end(self, solver, info):
        self._close()

    def _close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def terminal_columns(stream):
    """The width of the terminal ``stream`` writes to (0 for a zero-width one), or
    None when it is not a terminal."""
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (AttributeError, OSError, ValueError):       # no fileno, closed, not a tty
        return None


# ---------------------------------------------------------------- checkpoints
class Checkpoint(Callback):
    """Every ``every`` epochs, on the chief process, write the solver's training state
    (:meth:`Solver.state_dict`, atomically: :mod:`minpy.nn.checkpoint`) to
    ``directory/checkpoint-NNNN.minpy``, and delete all but the newest ``keep`` there.

    Args:
        directory: where; None writes nothing by itself (:meth:`save` still writes).
        every: epochs between checkpoints.
        keep: numbered checkpoints kept, by epoch number (0: all); other files in
            the directory are left alone.
        resume: when training starts on a solver that has not trained yet, load
            the newest checkpoint in ``directory`` if there is one (a crashed run,
            started again with the same arguments, carries on bit-identically).
    Raises:
        ValueError: ``every`` < 1.
    """

    order = -10

    def __init__(self, directory, every=1, keep=2, resume=False):
        if int(every) < 1:
            raise ValueError(f"Checkpoint: every must be >= 1, got {every!r}")
        self.directory = directory
        self.every = int(every)
        self.keep = int(keep)
        self.resume = bool(resume)

    def on_train_begin(self, solver, info):
        if self.resume and self.directory is not None and solver.epoch == 0:
            found = checkpoint.latest(self.directory)
            if found is not None:
                solver.load_checkpoint(found)

    def on_epoch_end(self, solver, info):
        if self.directory is not None and solver.is_chief and info["epoch"] % self.every == 0:
            self.save(solver, checkpoint.path_for(self.directory, info["epoch"]))

    def save(self, solver, path):
        """Write ``solver.state_dict()`` to ``path`` atomically; if ``path`` is in
        ``directory``, prune the numbered checkpoints there to the newest ``keep``."""
        where = os.path.dirname(os.path.abspath(path))
        os.makedirs(where, exist_ok=True)
        checkpoint.save(path, solver.state_dict())
        if self.directory is not None and where == os.path.abspath(self.directory):
            checkpoint.prune(self.directory, self.keep)


# ---------------------------------------------------------------- the training state
class StopOnNonFinite(Callback):
    """A NaN or infinite loss, before its step's update: ``'raise'`` a FloatingPointError
    naming the epoch, batch and step (the update not applied), or ``'skip'`` the
    update (counted in ``solver.skipped_steps``; in a dist job every worker skips it).

    Raises:
        ValueError: another ``mode``.
    """

    order = -30
    MODES = ("raise", "skip")

    def __init__(self, mode="raise"):
        if mode not in self.MODES:
            raise ValueError(f"StopOnNonFinite: mode must be one of {self.MODES}, got {mode!r}")
        self.mode = mode

    def on_before_update(self, solver, info):
        loss = info["loss"]
        if math.isfinite(loss):
            return
        if self.mode == "raise":
            raise FloatingPointError(
                f"Solver: the loss is {loss} at {info['where']}; training stopped before this "
                "step's update (lower the learning rate, check the data, or pass "
                "on_nonfinite='skip')")
        info["skip"] = True


class LRDecay(Callback):
    """Multiply the learning rate by ``factor`` after each epoch (MinPy's ``lr_decay``),
    before the epoch's checkpoint: the solver's optimizer's, or each parameter's
    ``learning_rate`` (default 1e-2) of a MinPy-style update rule.

    Raises:
        ValueError (when training starts): the solver's kvstore runs its optimizer
            on server ranks (``dist_async``), out of reach.
    """

    order = -30

    def __init__(self, factor):
        self.factor = float(factor)

    def on_train_begin(self, solver, info):
        check_lr_reaches(solver.kvstore)

    def on_epoch_end(self, solver, info):
        if solver.optimizer is not None:
            solver.optimizer.learning_rate = solver.optimizer.learning_rate * self.factor
        else:
            for config in solver.optim_configs.values():
                config["learning_rate"] = config.get("learning_rate", 1e-2) * self.factor


def check_lr_reaches(kvstore):
    """Raise ValueError if the optimizer of ``kvstore`` (None: the solver's own) runs on
    its server ranks, where learning-rate decay cannot reach it."""
    if kvstore is not None and not parallel.updates_in_process(kvstore):
        raise ValueError(f"Solver: lr_decay cannot reach the optimizer of a "
                         f"{kvstore.type!r} kvstore, which runs on its server ranks; "
                         "give the optimizer an lr_schedule in optim_config instead "
                         "(minpy.nn.optim.StepSchedule ...)")


# ---------------------------------------------------------------- plots
class Plot(Callback):
    """Write :func:`plot_history` to a PNG at ``path`` on the chief process when training
    ends without an error, and every ``every`` epochs if given.

    Raises:
        ImportError: at construction, when matplotlib is missing.
    """

    def __init__(self, path, every=None):
        _need_matplotlib("Plot")
        self.path = path
        self.every = every

    def on_epoch_end(self, solver, info):
        if self.every and info["epoch"] % self.every == 0 and solver.is_chief:
            plot_history(solver, self.path)

    def on_train_end(self, solver, info):
        if info["error"] is None and solver.is_chief:
            plot_history(solver, self.path)


def _need_matplotlib(who):
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError(f'{who} needs matplotlib: pip install matplotlib')


def plot_history(solver, path):
    """Write ``solver``'s loss per step and accuracy per epoch to a PNG at ``path``.

    Args:
        solver: a Solver (its ``loss_history``, ``train_acc_history``,
            ``val_acc_history``, ``task_type``).
        path: the file to write.
    Returns:
        ``path``.
    Raises:
        ImportError when matplotlib is missing (``pip install matplotlib``).
    """
    _need_matplotlib("Solver.plot")
    import matplotlib              # optional: only plotting needs it
    matplotlib.use("Agg")
    from matplotlib import pyplot
    losses = solver.loss_history
    fig, (ax_loss, ax_acc) = pyplot.subplots(1, 2, figsize=(10, 3.8))
    steps = numpy.arange(1, len(losses) + 1)
    ax_loss.plot(steps, losses, lw=0.6, alpha=0.5, label="loss per step")
    if len(losses) >= 10:
        window = max(len(losses) // 50, 5)
        smooth = numpy.convolve(losses, numpy.ones(window) / window, mode="valid")
        ax_loss.plot(steps[window - 1:], smooth, lw=1.5, label=f"mean of {window}")
    ax_loss.set(xlabel="step", ylabel="loss", title="training loss")
    ax_loss.legend()
    epochs = numpy.arange(1, len(solver.train_acc_history) + 1)
    target = "accuracy" if solver.task_type == "classification" else "loss"
    ax_acc.plot(epochs, solver.train_acc_history, "o-", label=f"train {target}")
    if solver.test_dataiter is not None:
        ax_acc.plot(epochs, solver.val_acc_history, "s-", label=f"validation {target}")
    ax_acc.set(xlabel="epoch", ylabel=target, title=target)
    ax_acc.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot.close(fig)
    return path
