"""``minpy.nn.solver.Solver``: the training loop MinPy programs use — a loop plus callbacks.

::

    solver = Solver(model, (x, y), (x_test, y_test), batch_size=64, seed=0, num_epochs=10,
                    init_rule='gaussian', init_config={'stdvar': 0.01},
                    update_rule='sgd_momentum', optim_config={'learning_rate': 0.1},
                    checkpoint_dir='ckpt', checkpoint_every=1)
    solver.train()            # a tqdm bar per epoch on a terminal; history in solver.*_history
    solver.plot('curves.png')

Each step differentiates ``model.loss_batch(batch, model.forward_batch(batch,
'train'))`` with respect to ``model.params`` and applies the optimizer in place
(``minpy.nn.optim``: one fused kernel for all parameters). The loop (init,
step, epoch, evaluate, state) is here; progress, checkpoints, non-finite
losses, learning-rate decay and plots are callbacks (:mod:`minpy.nn.callbacks`)
that the constructor's arguments build or ``callbacks=[...]`` gives. A
checkpoint holds everything the rest of the run depends on (parameters, aux
and optimizer state, epoch and step, the iterator's position and shuffling
state, NumPy's global random state, the history), so ``resume`` after a crash
ends with bit-identical parameters. Data parallelism over devices and MPI
workers (``ctx=``, ``kvstore=``): :mod:`minpy.nn.parallel`.
"""
import contextlib
import math
import os
import time

import numpy

from .. import numpy as mnp
from .. import symbol
from ..core.array import Array
from . import checkpoint, init, layers, optim, parallel
from .io import NDArrayIter, _named_sources
from .feeding import DEFAULT_BATCH_SIZE, DROPOUT, SHUFFLE, as_dataiter, child_seed, is_dataiter
from .callbacks import (Callback, CallbackList, Checkpoint, LambdaCallback, LRDecay, ProgressBar,
                        StopOnNonFinite, StopTraining, check_lr_reaches, plot_history)

__all__ = ["Solver", "StopTraining", "Callback", "shard_for"]

# the stream of a Solver's seed that seeds minpy.symbol's Dropout (see feeding's SHUFFLE,
# DROPOUT); one seed per (epoch, worker) from it, so a resumed run draws the same masks
SYMBOL_DROPOUT = 3

_NONFINITE = ("raise", "skip", "ignore")
_TASKS = ("classification", "regression")


def _checkpoint_setting(attr, doc):
    """A Solver attribute that is its :class:`Checkpoint` callback's ``attr``."""
    return property(lambda self: getattr(self.checkpointer, attr),
                    lambda self, value: setattr(self.checkpointer, attr, value), doc=doc)


class Solver:
    """Train ``model`` on ``train_dataiter``, measuring accuracy on ``test_dataiter``.

    Args (keywords; MinPy's names first):
        model: a :class:`minpy.nn.model.ModelBase`.
        train_dataiter, test_dataiter: iterators of DataBatch (``NDArrayIter``),
            or ``(x, y)`` tuples of arrays, wrapped in NDArrayIters of
            ``batch_size`` samples (the training one shuffled each epoch).
        batch_size: samples per batch of data given as arrays (default 32);
            refused when both data are iterators (they have their own).
        task_type: ``'classification'`` (accuracy) or ``'regression'`` (loss).
        init_rule, init_config: default rule of ``minpy.nn.init`` and its config
            for parameters whose ``add_param`` names none (default ``'xavier'``).
        update_rule: a name in ``minpy.nn.optim`` (``'sgd'``, ``'sgd_momentum'``,
            ``'nesterov'``, ``'rmsprop'``, ``'adagrad'``, ``'adam'``, ``'adamw'``),
            run as a fused in-place optimizer, or a MinPy-style function
            ``update(w, dw, config) -> (next_w, config)``.
        optim_config: the optimizer's settings (``learning_rate``, ``momentum``,
            ``weight_decay``, ``clip_gradient``, ``lr_schedule`` ...).
        lr_decay: the learning rate is multiplied by this after each epoch
            (an :class:`~minpy.nn.callbacks.LRDecay`).
        num_epochs, train_acc_num_samples: as MinPy.
        print_every, verbose, progress: the :class:`~minpy.nn.callbacks.ProgressBar`'s
            (a tqdm bar when ``progress``, default on when ``verbose`` and stderr is
            a terminal and tqdm is installed; else plain lines).
        seed: seed of the parameter initialisation, of the dropout masks
            (``layers.dropout`` given no seed, and ``minpy.symbol``'s Dropout in a
            :class:`~minpy.nn.model.SymbolModel`) and of the shuffling of a training
            set given as arrays: the same seed trains bit-identically, and
            NumPy's global random state is not used. None: NumPy's global state
            for all three, as MinPy. Symbol Dropout draws from ``minpy.symbol``'s
            generators (shared by every executor, as ``mx.random``): the Solver
            reseeds them (``minpy.symbol.seed``) at the start of each epoch from
            ``(seed, epoch, worker rank)``.
        checkpoint_dir, checkpoint_every, keep_checkpoints: the
            :class:`~minpy.nn.callbacks.Checkpoint`'s: a checkpoint every N epochs
            in the directory, keeping the newest few (attributes of the solver too).
        callbacks: :class:`~minpy.nn.callbacks.Callback` objects (in
            ``solver.callbacks`` with the stock ones; a stock kind given here
            replaces the one the arguments would build). ``batch_end_callback`` /
            ``epoch_end_callback``: functions ``(solver, info)``.
        on_nonfinite: a NaN/inf loss ``'raise'`` (default, FloatingPointError
            naming the step), ``'skip'`` (the step's update is skipped and
            counted in ``skipped_steps``) or ``'ignore'``
            (:class:`~minpy.nn.callbacks.StopOnNonFinite`).
        keep_best: as MinPy, end with the parameters that scored best on
            ``test_dataiter`` (default True).
        ctx: None (parameters and batches stay where they are), a Context (moved
            there), or a list of Contexts: each batch is split along axis 0 into
            one part per context, each context's replica of the parameters
            computes its part's gradient, and the gradients, weighted by each
            part's share of the batch, are summed in the KVStore, where the
            optimizer runs; every replica pulls the new values. ``model.params``
            is the first context's replica, updated in place.
        kvstore: None, a kind (``'local'``, ``'device'``, ``'dist_sync'`` ...) or a
            KVStore (one per Solver). None means ``'device'`` for several contexts,
            else none. With a store the optimizer runs inside it (``clip_norm``
            refused: the store updates one parameter at a time).

    Data parallelism assumes the loss is a *mean* over the batch (as MinPy's
    are); ``aux_params`` are shared by the replicas. In a dist job
    (``kvstore='dist_sync'`` under ``mpiexec``) each worker trains on its own
    shard and must run as many batches of the same size per epoch (checked,
    naming both counts): training data given as ``(x, y)`` arrays is sharded by
    the Solver (worker ``r`` of ``k`` takes samples ``N*r//k`` to ``N*(r+1)//k``,
    as ``NDArrayIter(num_parts=k, part_index=r)``; see :func:`shard_for`), an
    iterator is used as it is (shard it yourself); test data stays whole;
    gradients are scaled by ``1 / num_workers``, so an update equals one
    process training on every worker's batch; parameters
    start as rank 0's. Only rank 0 (``is_chief``) prints and writes
    checkpoints (holding its iterator state, which only rank 0 restores);
    every worker evaluates, and callbacks must decide alike everywhere (a
    :class:`StopTraining` on one worker alone leaves the others waiting).
    ``on_nonfinite='skip'`` skips a step on every worker when any worker's loss
    is not finite; ``'raise'`` raises on that worker (run under ``python -m
    mpi4py`` to end the job). ``dist_async`` runs the optimizer on its server
    ranks: no gradient scaling or equal batch counts, ``lr_decay`` refused (use
    an ``lr_schedule``), no optimizer state in checkpoints, and a second
    :meth:`train` restarts the servers' optimizer state.

    See also mxnet.module.Module.fit, :mod:`minpy.nn.parallel`, :mod:`minpy.nn.callbacks`.
    """

    def __init__(self, model, train_dataiter, test_dataiter=None, *, batch_size=None,
                 task_type="classification",
                 init_rule="xavier", init_config=None, update_rule="sgd", optim_config=None,
                 lr_decay=1.0, num_epochs=10, train_acc_num_samples=1000, print_every=10,
                 verbose=True, progress=None, seed=None, checkpoint_dir=None, checkpoint_every=1,
                 keep_checkpoints=2, callbacks=(), batch_end_callback=None,
                 epoch_end_callback=None, on_nonfinite="raise", keep_best=True, kvstore=None,
                 ctx=None):
        if task_type not in _TASKS:
            raise ValueError(f"Solver: task_type must be one of {_TASKS}, got {task_type!r}")
        if on_nonfinite not in _NONFINITE:
            raise ValueError(f"Solver: on_nonfinite must be one of {_NONFINITE}, "
                             f"got {on_nonfinite!r}")
        if not callable(update_rule) and not hasattr(optim, str(update_rule)):
            raise ValueError(f"Solver: unknown update_rule {update_rule!r}")
        if int(num_epochs) < 0 or int(checkpoint_every) < 1:
            raise ValueError("Solver: num_epochs must be >= 0 and checkpoint_every >= 1")
        if batch_size is not None and is_dataiter(train_dataiter) and \
                (test_dataiter is None or is_dataiter(test_dataiter)):
            raise ValueError("Solver: batch_size applies to data given as (x, y) arrays; "
                             "these iterators have their own")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(
                batch_size, (int, numpy.integer)) or batch_size < 1):
            raise ValueError(f"Solver: batch_size must be a positive int, got {batch_size!r}")
        self.batch_size = int(batch_size) if batch_size is not None else DEFAULT_BATCH_SIZE
        self.model = model
        self.test_dataiter = as_dataiter(test_dataiter, "Solver: test data", self.batch_size)
        self.task_type = task_type
        self.init_rule = init_rule
        self.init_config = dict(init_config or {})
        self.update_rule = update_rule
        self.optim_config = dict(optim_config or {})
        self.num_epochs = int(num_epochs)
        self.train_acc_num_samples = train_acc_num_samples
        self.seed = seed
        self.dropout_random = (mnp.random.RandomState(child_seed(seed, DROPOUT))
                               if seed is not None else None)
        self.keep_best = keep_best
        self.ctx = parallel.check_contexts("Solver", ctx)
        if (kvstore is not None or (self.ctx is not None and len(self.ctx) > 1)) and \
                not callable(update_rule) and self.optim_config.get("clip_norm") is not None:
            raise ValueError("Solver: optim_config clip_norm (one norm over all parameters) "
                             "cannot be used with a kvstore (several contexts use one), "
                             "whose optimizer updates one parameter at a time; use "
                             "clip_gradient")
        self.kvstore = parallel.make_kvstore("Solver", kvstore, self.ctx)
        # each worker of a dist job trains on its own part of arrays given as (x, y)
        shuffle_seed = child_seed(seed, SHUFFLE)
        self.train_dataiter = as_dataiter(
            shard_for(train_dataiter, self.kvstore, "Solver: train data", self.batch_size,
                      shuffle_seed),
            "Solver: train data", self.batch_size, shuffle=True, seed=shuffle_seed)
        if float(lr_decay) != 1.0:
            check_lr_reaches(self.kvstore)
        self._replicas = (parallel.Replicas(self.kvstore, self.ctx)
                          if self.kvstore is not None or self.ctx is not None else None)
        self._guard = None        # the store's updater when it skips non-finite steps
        stock = [ProgressBar(verbose, progress, print_every),
                 Checkpoint(checkpoint_dir, checkpoint_every, keep_checkpoints)]
        stock += [StopOnNonFinite(on_nonfinite)] if on_nonfinite != "ignore" else []
        stock += [LRDecay(lr_decay)] if float(lr_decay) != 1.0 else []
        self.callbacks = CallbackList(where="Solver")
        self.callbacks.extend(callbacks)
        for given, kind in ((checkpoint_dir, Checkpoint), (float(lr_decay) != 1.0, LRDecay)):
            if given and self.callbacks.find(kind) is not None:
                raise ValueError(f"Solver: a {kind.__name__} in callbacks and its Solver "
                                 "argument (checkpoint_dir, lr_decay): give one")
        self.callbacks.extend(cb for cb in stock if self.callbacks.find(type(cb)) is None)
        hooks = {"on_batch_end": batch_end_callback, "on_epoch_end": epoch_end_callback}
        if any(fn is not None for fn in hooks.values()):
            self.callbacks.append(LambdaCallback(**{k: f for k, f in hooks.items() if f}))
        self._reset()

    checkpointer = property(lambda self: self.callbacks.find(Checkpoint),
                            doc="The :class:`~minpy.nn.callbacks.Checkpoint` callback.")
    checkpoint_dir = _checkpoint_setting("directory", "Where checkpoints go (None: nowhere).")
    checkpoint_every = _checkpoint_setting("every", "Epochs between checkpoints.")
    keep_checkpoints = _checkpoint_setting("keep", "Numbered checkpoints kept (0: all).")

    # ------------------------------------------------------------------ state
    def _reset(self):
        self.epoch = 0
        self.step_count = 0
        self.skipped_steps = 0
        self.best_val_acc = 0.0
        self._best_score = -math.inf
        self.best_params = {}
        self.loss_history = []
        self.train_acc_history = []
        self.val_acc_history = []
        self.optimizer = None
        self.optim_configs = {}
        if callable(self.update_rule):
            self.optim_configs = {p: dict(self.optim_config) for p in self.model.param_configs}
        else:
            self.optimizer = optim.create(self.update_rule, **self.optim_config)

    def _init_rule_for(self, name, rng):
        config = self.model.param_configs[name]
        rule = config.get("init_rule", self.init_rule)
        rule_config = dict(config.get("init_config", self.init_config if "init_rule" not in config
                                      else {}))
        if rng is not None and "rng" not in rule_config and "seed" not in rule_config:
            rule_config["rng"] = rng
        fn = rule if callable(rule) else getattr(init, str(rule), None)
        if fn is None or str(rule).startswith("_"):
            raise ValueError(f"Solver: unknown init_rule {rule!r} for parameter {name!r}")
        return fn, rule_config

    def init(self):
        """Initialise ``model.params`` from ``model.param_configs`` and the aux state."""
        rng = numpy.random.default_rng(self.seed) if self.seed is not None else None
        for name, config in self.model.param_configs.items():
            fn, rule_config = self._init_rule_for(name, rng)
            self.model.params[name] = fn(config["shape"], rule_config)
        for name, value in self.model.aux_param_configs.items():
            if name not in self.model.aux_params:
                self.model.aux_params[name] = value

    # ------------------------------------------------------------------ step
    def _step(self, batch, info):
        """One gradient step on ``batch``; returns the loss as a float."""
        model = self.model
        if self._replicas is None:
            loss, grads = model.loss_and_grad(batch, mode="train")
            value = float(_host(loss))
        else:                     # a part of the batch per context, the mean of their losses
            parts = self._replicas.split(batch, info["where"])
            results = self._replicas.gradients(model, [part for part, _ in parts])
            shares = [share for _, share in parts]
            grads = results[0][1]
            value = sum(share * float(_host(loss)) for share, (loss, _) in zip(shares, results))
        info = dict(info, loss=value, skip=False)
        self.callbacks.on_before_update(self, info)
        poison = False
        if info["skip"]:
            if self.kvstore is None or self.kvstore.num_workers == 1:
                self.skipped_steps += 1
                return value
            if self._guard is None:
                raise RuntimeError(f"Solver: a callback skipped the update at {info['where']}, "
                                   "which a dist job can only skip on every worker with "
                                   "on_nonfinite='skip' (StopOnNonFinite('skip'))")
            poison = True         # the others skip it too: see _install_updater
        if self.kvstore is not None:
            self._replicas.push_pull([g for _, g in results], shares, poison)
            skipped = poison
            if self._guard is not None and parallel.updates_in_process(self.kvstore):
                self._replicas.wait()              # the guard ran here: did it skip?
                skipped = skipped or bool(self._guard.skipped)
                self._guard.skipped.clear()
            self.skipped_steps += int(skipped)
        elif self.optimizer is not None:
            self.optimizer.step(model.params, grads)
        else:
            for name, w in model.params.items():
                next_w, self.optim_configs[name] = self.update_rule(w, grads[name],
                                                                    self.optim_configs[name])
                model.params[name] = next_w
        return value

    # ------------------------------------------------------------------ evaluation
    def check_accuracy(self, dataiter, num_samples=None):
        """Accuracy of the model on ``dataiter`` (mean loss for regression).

        Args:
            dataiter: an iterator of DataBatch, or an ``(x, y)`` tuple of arrays
                (in batches of ``batch_size``); padded samples are not counted.
            num_samples: evaluate only the first ``num_samples`` samples.
        Returns:
            A float.
        """
        it = dataiter = as_dataiter(dataiter, "Solver.check_accuracy", self.batch_size)
        if num_samples is not None and getattr(dataiter, "num_data", 0) > num_samples:
            it = dataiter.getsubiter(num_samples)
        else:
            it.reset()
        correct = seen = batches = 0
        total_loss = 0.0
        for batch in it:
            keep = batch.data[0].shape[0] - int(getattr(batch, "pad", 0) or 0)
            predict = self.model.forward_batch(batch, mode="test")
            if self.task_type == "classification":     # the class axis is the last one
                guess = numpy.argmax(_host(predict)[:keep], axis=-1)
                truth = _host(batch.label[0])[:keep]
                if truth.shape != guess.shape:
                    raise ValueError(f"Solver.check_accuracy: labels of shape {truth.shape} do "
                                     f"not match predictions of shape {guess.shape + (-1,)} "
                                     "(expected one integer class per prediction)")
                correct += int(numpy.sum(guess == truth))
                seen += guess.size
            else:
                total_loss += float(_host(self.model.loss_batch(batch, predict)))
                batches += 1
        if it is dataiter:
            dataiter.reset()
        if self.task_type == "classification":
            return correct / seen if seen else 0.0
        return total_loss / batches if batches else 0.0

    def _install_updater(self, kv):
        """Run the optimizer inside ``kv``: a named rule's optimizer object itself (so
        learning-rate decay and checkpoints reach it), or a MinPy-style function
        through an updater.  In a dist job whose :class:`StopOnNonFinite` skips, the
        updater skips non-finite summed gradients, which a worker with a non-finite
        loss makes sure of."""
        nonfinite = self.callbacks.find(StopOnNonFinite)
        skip = nonfinite is not None and nonfinite.mode == "skip" and kv.num_workers > 1
        if self.optimizer is not None:
            self._guard = parallel.FiniteOnly(self.optimizer) if skip else None
            kv.set_optimizer(self._guard or self.optimizer)
        else:
            updater = parallel.RuleUpdater(self.update_rule, self.optim_configs, skip)
            self._guard = updater if skip else None
            kv.set_updater(updater)

    def _wait_for_updates(self):
        if self._replicas is not None and self.kvstore is not None:
            self._replicas.wait()

    @property
    def is_chief(self):
        """Whether this process prints and writes checkpoints: rank 0 of the
        kvstore's workers (True without a kvstore)."""
        return self.kvstore is None or self.kvstore.rank == 0

    # ------------------------------------------------------------------ training
    def train(self):
        """Run the remaining epochs; returns ``self``.

        Resumes where a loaded checkpoint left off. Raises FloatingPointError on
        a non-finite loss (see ``on_nonfinite``); a callback raising
        :class:`StopTraining` ends the run early. The callbacks' ``on_train_end``
        runs however the run ends.
        """
        if not self.model.params:
            self.init()
        try:
            with (layers.random_source(self.dropout_random) if self.dropout_random is not None
                  else contextlib.nullcontext()):
                self._run()
        except BaseException as error:
            self.callbacks.on_train_end(self, {"epoch": self.epoch, "step": self.step_count,
                                               "error": error})
            raise
        self.callbacks.on_train_end(self, {"epoch": self.epoch, "step": self.step_count,
                                           "error": None})
        return self

    def _run(self):
        try:
            self.callbacks.on_train_begin(self, {"epoch": self.epoch,
                                                 "num_epochs": self.num_epochs})
            if self._replicas is not None:
                self._replicas.sync(self.model.params, self._install_updater,
                                    self.train_dataiter)
            while self.epoch < self.num_epochs:
                self._train_epoch()
        except StopTraining:
            pass
        if self._replicas is not None:
            self._replicas.finish()
        if self.keep_best and self.best_params:
            self.model.params = {k: mnp.array(v) for k, v in self.best_params.items()}

    def _train_epoch(self):
        epoch = self.epoch + 1
        it = self.train_dataiter
        it.reset()
        if self.seed is not None:
            symbol.seed(_epoch_seed(self.seed, epoch, self.kvstore))
        self.callbacks.on_epoch_begin(self, {"epoch": epoch, "batches": _num_batches(it)})
        worker = ""
        if self.kvstore is not None and self.kvstore.num_workers > 1:
            worker = f" on worker {self.kvstore.rank}"
        start = time.perf_counter()
        seen = 0
        for index, batch in enumerate(it):
            info = {"epoch": epoch, "batch": index, "step": self.step_count + 1}
            self.callbacks.on_batch_begin(self, info)
            where = f"epoch {epoch}, batch {index} (step {self.step_count}){worker}"
            loss = self._step(batch, dict(info, where=where))
            self.loss_history.append(loss)
            self.step_count += 1
            size = batch.data[0].shape[0]
            seen += size
            rate = seen / max(time.perf_counter() - start, 1e-9)
            self.callbacks.on_batch_end(self, dict(info, loss=loss, batch_size=size,
                                                   samples=seen, samples_per_sec=rate))
        self._end_epoch(epoch, time.perf_counter() - start, seen)

    def _end_epoch(self, epoch, elapsed, seen):
        train_acc = self.check_accuracy(self.train_dataiter, self.train_acc_num_samples)
        val_acc = (self.check_accuracy(self.test_dataiter) if self.test_dataiter is not None
                   else float("nan"))
        self.train_acc_history.append(train_acc)
        self.val_acc_history.append(val_acc)
        score = val_acc if self.task_type == "classification" else -val_acc
        if self.test_dataiter is not None and score > self._best_score:
            self._best_score, self.best_val_acc = score, val_acc
            self.best_params = checkpoint.host_copies(self.model.params)
        self.epoch = epoch
        self.callbacks.on_epoch_end(self, {"epoch": epoch, "step": self.step_count,
                                           "train_acc": train_acc, "val_acc": val_acc,
                                           "time": elapsed, "samples": seen,
                                           "samples_per_sec": seen / max(elapsed, 1e-9)})

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self):
        """Everything the rest of a run depends on, as plain data and host arrays.

        With a kvstore: after its pending updates; the optimizer's state when
        the store runs it in this process (every kind but ``dist_async``, whose
        servers hold it), else None; ``worker`` is the rank whose iterator
        state it holds.
        """
        self._wait_for_updates()
        it_state = getattr(self.train_dataiter, "state_dict", None)
        optimizer = self.optimizer
        if optimizer is not None and self.kvstore is not None and \
                not parallel.updates_in_process(self.kvstore):
            optimizer = None          # it lives with the store's servers
        return {
            "format": 1,
            "worker": self.kvstore.rank if self.kvstore is not None else 0,
            "epoch": self.epoch, "step_count": self.step_count,
            "skipped_steps": self.skipped_steps,
            "params": checkpoint.host_copies(self.model.params),
            "aux_params": checkpoint.host_copies(self.model.aux_params),
            "optimizer": optimizer.state_dict() if optimizer is not None else None,
            "optim_configs": {p: {k: _host(v).copy() if isinstance(v, Array) else v
                                  for k, v in c.items()} for p, c in self.optim_configs.items()},
            "train_iter": it_state() if it_state is not None else None,
            "numpy_random": numpy.random.get_state(),
            "dropout_random": (self.dropout_random.get_state()
                               if self.dropout_random is not None else None),
            "history": {"loss": list(self.loss_history), "train_acc": list(self.train_acc_history),
                        "val_acc": list(self.val_acc_history)},
            "best_val_acc": self.best_val_acc, "best_score": self._best_score,
            "best_params": dict(self.best_params),
        }

    def load_state_dict(self, state):
        """Restore a :meth:`state_dict` (parameters are copied into the model).

        With a kvstore the replicas and the store take the parameters when
        :meth:`train` starts; the iterator's state is restored only on the
        worker that saved it.
        """
        self._wait_for_updates()
        self.epoch, self.step_count = state["epoch"], state["step_count"]
        self.skipped_steps = state.get("skipped_steps", 0)
        self.model.set_params(state["params"], state["aux_params"])
        if self.optimizer is not None and state["optimizer"] is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        self.optim_configs = {p: {k: mnp.array(v) if isinstance(v, numpy.ndarray) else v
                                  for k, v in c.items()}
                              for p, c in state["optim_configs"].items()}
        here = self.kvstore.rank if self.kvstore is not None else 0
        if state["train_iter"] is not None and state.get("worker", 0) == here:
            self.train_dataiter.load_state_dict(state["train_iter"])
        numpy.random.set_state(state["numpy_random"])
        if self.dropout_random is not None and state.get("dropout_random") is not None:
            self.dropout_random.set_state(state["dropout_random"])
        history = state["history"]
        self.loss_history = list(history["loss"])
        self.train_acc_history = list(history["train_acc"])
        self.val_acc_history = list(history["val_acc"])
        self.best_val_acc, self._best_score = state["best_val_acc"], state["best_score"]
        self.best_params = dict(state["best_params"])

    def save_checkpoint(self, path):
        """Write :meth:`state_dict` to ``path`` atomically; if ``path`` is in
        ``checkpoint_dir``, keep only the newest ``keep_checkpoints`` there."""
        self.checkpointer.save(self, path)

    def load_checkpoint(self, path):
        """Restore the state saved at ``path`` (a file, or a directory: its newest
        ``checkpoint-<epoch>.minpy``); returns the file's path.

        Raises:
            FileNotFoundError: no such file, or no checkpoint in the directory.
            minpy.nn.checkpoint.CheckpointError: a truncated or corrupt file.
        """
        if os.path.isdir(path):
            found = checkpoint.latest(path)
            if found is None:
                raise FileNotFoundError(f"Solver.load_checkpoint: no checkpoint-*.minpy in "
                                        f"{path!r}")
            path = found
        self.load_state_dict(checkpoint.load(path))
        return path

    def resume(self, path):
        """Restore the checkpoint at ``path`` and train the remaining epochs; returns ``self``."""
        self.load_checkpoint(path)
        return self.train()

    def plot(self, path):
        """Write the loss per step and the accuracy per epoch to a PNG at ``path``; returns
        ``path``. Needs matplotlib (``pip install matplotlib``); see also
        :class:`minpy.nn.callbacks.Plot`."""
        return plot_history(self, path)


def _host(v):
    return v.asnumpy() if isinstance(v, Array) else numpy.asarray(v)


def _epoch_seed(seed, epoch, kvstore):
    """The seed of ``minpy.symbol``'s Dropout generators for one epoch of one worker."""
    rank = kvstore.rank if kvstore is not None else 0
    key = (SYMBOL_DROPOUT, int(epoch), int(rank))
    return int(numpy.random.SeedSequence(seed, spawn_key=key).generate_state(1)[0])


def shard_for(data, kvstore, who, batch_size, seed=None):
    """This worker's part of training data given as ``(x, y)`` arrays in a dist job.

    Worker ``r`` of ``k`` (``kvstore.rank``, ``kvstore.num_workers``) iterates over
    samples ``N*r//k`` to ``N*(r+1)//k``: the parts are disjoint, cover the data once
    and differ by at most one sample; it is ``NDArrayIter(x, y, num_parts=k,
    part_index=r)`` (shuffled within the part each epoch, from ``seed``; batch
    indices count in the whole data).

    Args:
        data: what the Solver was given; an iterator, or anything but a pair, is
            returned as it is (an iterator is the caller's to shard).
        kvstore: the Solver's store, or None (one worker: nothing to shard).
        who: the caller and argument, for errors.
        batch_size: samples per batch (every worker must run as many batches).
        seed: the shuffling seed (None: NumPy's global state, as NDArrayIter's).
    Returns:
        ``data``, or an NDArrayIter over this worker's part.
    Raises:
        ValueError: fewer samples than workers, or parts whose numbers of batches
            differ (the workers' collectives would pair different steps); the
            NDArrayIter's errors (x and y of different lengths ...).

    See also minpy.nn.io.NDArrayIter (num_parts, part_index),
    torch.utils.data.DistributedSampler.
    """
    k = kvstore.num_workers if kvstore is not None else 1
    if k <= 1 or is_dataiter(data) or not isinstance(data, (tuple, list)) or len(data) != 2:
        return data
    x, y = data
    sources = _named_sources(x, "data", "data")
    n = len(sources[0][1]) if sources else 0
    if 0 < n < k:
        raise ValueError(f"{who}: {n} samples cannot be shared by {k} workers (each worker "
                         "trains on its own part of them)")
    bounds = [n * p // k for p in range(k + 1)]
    sizes = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    batches = [-(-size // batch_size) for size in sizes]
    if len(set(batches)) > 1:
        raise ValueError(f"{who}: {n} samples over {k} workers make parts of {sizes} samples, "
                         f"{batches} batches of {batch_size}; every worker must run as many "
                         "batches per epoch: choose a batch_size that gives every part the "
                         "same count, or shard an NDArrayIter yourself (num_parts, "
                         "part_index, last_batch_handle='discard')")
    return NDArrayIter(x, y, batch_size=batch_size, shuffle=True, seed=seed, num_parts=k,
                       part_index=kvstore.rank)


def _num_batches(it):
    count = getattr(it, "getnumiterations", None)
    return count() if count is not None else None
