"""``minpy.nn.solver.Solver``: the training loop MinPy programs use, with what they lacked.

::

    solver = Solver(model, train_iter, test_iter, num_epochs=10,
                    init_rule='gaussian', init_config={'stdvar': 0.01},
                    update_rule='sgd_momentum', optim_config={'learning_rate': 0.1},
                    checkpoint_dir='ckpt', checkpoint_every=1)
    solver.init()
    solver.train()            # a tqdm bar per epoch on a terminal; history in solver.*_history
    solver.plot('curves.png')

Each step differentiates ``model.loss_batch(batch, model.forward_batch(batch,
'train'))`` with respect to ``model.params`` (``minpy.grad_and_loss``) and
applies the optimizer in place (``minpy.nn.optim``: one fused kernel for all
parameters). Checkpoints hold everything the rest of the run depends on —
parameters, aux state, optimizer state, epoch and step, the iterator's
position and shuffling state, NumPy's global random state, the history — so
``resume`` after a crash ends with bit-identical parameters.

Data parallelism (``ctx=``, ``kvstore=``; :mod:`minpy.nn.parallel`)::

    # two devices in one process: each batch split in two, gradients summed
    Solver(model, train, test, ctx=[minpy.gpu(0), minpy.gpu(1)])   # kvstore='device'

    # N processes: mpiexec -n N python -m mpi4py train.py
    kv = minpy.kvstore.create('dist_sync')
    train = NDArrayIter(x, y, batch_size=32, shuffle=True,      # this worker's part
                        num_parts=kv.num_workers, part_index=kv.rank)
    Solver(model, train, test, kvstore=kv).train()              # rank 0 prints
"""
import glob
import importlib.util
import math
import os
import re
import sys
import time

import numpy

from .. import numpy as mnp
from ..core.array import Array
from . import checkpoint, init, optim, parallel

__all__ = ["Solver", "StopTraining", "Callback"]


class StopTraining(Exception):
    """Raised by a callback to end :meth:`Solver.train` after the current step."""


class Callback:
    """Hooks called by :meth:`Solver.train`; override the ones you need.

    ``info`` is a dict: ``epoch`` (1-based), ``batch`` (index in the epoch),
    ``step`` (global), ``loss``, ``samples_per_sec``; at epoch end also
    ``train_acc``, ``val_acc``, ``time``. Raise :class:`StopTraining` to stop.
    """

    def on_batch_end(self, solver, info):
        """After each optimizer step."""

    def on_epoch_end(self, solver, info):
        """After each epoch's accuracy check (and checkpoint, if one was due)."""


class _FunctionCallback(Callback):
    def __init__(self, batch_end=None, epoch_end=None):
        self._batch_end, self._epoch_end = batch_end, epoch_end

    def on_batch_end(self, solver, info):
        if self._batch_end is not None:
            self._batch_end(solver, info)

    def on_epoch_end(self, solver, info):
        if self._epoch_end is not None:
            self._epoch_end(solver, info)


_NONFINITE = ("raise", "skip", "ignore")
_TASKS = ("classification", "regression")


class Solver:
    """Train ``model`` on ``train_dataiter``, measuring accuracy on ``test_dataiter``.

    Args (keywords; MinPy's names first):
        model: a :class:`minpy.nn.model.ModelBase`.
        train_dataiter, test_dataiter: iterators of DataBatch (``NDArrayIter``).
        task_type: ``'classification'`` (accuracy) or ``'regression'`` (loss).
        init_rule, init_config: default rule of ``minpy.nn.init`` and its config
            for parameters whose ``add_param`` names none (default ``'xavier'``).
        update_rule: a name in ``minpy.nn.optim`` (``'sgd'``, ``'sgd_momentum'``,
            ``'nesterov'``, ``'rmsprop'``, ``'adagrad'``, ``'adam'``, ``'adamw'``),
            run as a fused in-place optimizer, or a MinPy-style function
            ``update(w, dw, config) -> (next_w, config)``.
        optim_config: the optimizer's settings (``learning_rate``, ``momentum``,
            ``weight_decay``, ``clip_gradient``, ``lr_schedule`` ...).
        lr_decay: the learning rate is multiplied by this after each epoch.
        num_epochs, train_acc_num_samples, print_every, verbose: as MinPy.
        progress: ``True``/``False`` for the tqdm bar; default: on when
            ``verbose`` and stderr is a terminal and tqdm is installed.
        seed: seed of the parameter initialisation (default: NumPy's global state).
        checkpoint_dir, checkpoint_every, keep_checkpoints: write a checkpoint
            every N epochs into the directory, keeping the newest few.
        callbacks: :class:`Callback` objects; ``batch_end_callback`` /
            ``epoch_end_callback``: functions ``(solver, info)``.
        on_nonfinite: a NaN/inf loss ``'raise'`` (default, FloatingPointError
            naming the step), ``'skip'`` (the step's update is skipped and
            counted in ``skipped_steps``) or ``'ignore'``.
        keep_best: as MinPy, end with the parameters that scored best on
            ``test_dataiter`` (default True).
        ctx: None (the parameters and batches stay where they are: today's
            single-device training), a Context (parameters and batches moved
            there), or a list of Contexts (``[minpy.gpu(0), minpy.gpu(1)]``):
            each batch is split along axis 0 into one part per context (sizes
            differing by at most one), each context keeps its own replica of
            the parameters and computes the gradient on its part, and the
            gradients, weighted by each part's share of the batch, are summed
            in the KVStore, where the optimizer runs; the new values are
            pulled into every replica.  ``model.params`` is the first
            context's replica (its arrays are moved there if they live
            elsewhere) and is updated in place.
        kvstore: None, a kind (``'local'``, ``'device'``, ``'dist_sync'`` ...,
            see :func:`minpy.kvstore.create`) or a KVStore (one per Solver: its
            keys are the parameter names).  None means ``'device'`` for more
            than one context and no store otherwise (the Solver's own fused
            optimizer).  With a store the optimizer (``update_rule``,
            ``optim_config``) runs inside it, via ``set_optimizer`` (a named
            rule) or ``set_updater`` (a MinPy-style function, its result
            written into the stored value); ``clip_norm`` is refused there, as
            the store updates one parameter at a time.

    Data parallelism assumes the model's loss is a *mean* over the batch's
    samples (as MinPy's losses are): the weighted sum of the parts' gradients
    is then the gradient of the whole batch's loss.  BatchNorm statistics and
    other ``aux_params`` are shared by the replicas, each part's forward pass
    updating them in turn.

    In a dist job (``kvstore='dist_sync'``, run under ``mpiexec``) every worker
    trains on its own batches: shard the training data yourself
    (``NDArrayIter(..., num_parts=kv.num_workers, part_index=kv.rank)``); every
    worker must run as many batches of the same size per epoch (checked when
    training starts, naming both counts), and each worker's gradient is
    scaled by ``1 / num_workers``, so an update equals one process training
    on the concatenation of every worker's batch.  Parameters start as rank
    0's.  Only rank 0 prints, shows progress bars and writes checkpoints;
    every worker evaluates (give them all the same ``test_dataiter`` so that
    ``keep_best`` picks the same epoch everywhere), and callbacks must decide
    alike on every worker (a :class:`StopTraining` on one worker alone
    leaves the others waiting).  ``loss_history`` holds each worker's own
    loss.  ``on_nonfinite='skip'`` skips a step on every worker when any
    worker's loss is not finite; ``'raise'`` raises on that worker (run the
    job under ``python -m mpi4py`` so that this ends the whole job).  A
    checkpoint holds rank 0's iterator state, which only rank 0 restores.
    ``dist_async`` runs the optimizer on its server ranks and applies each
    worker's push as it comes: gradients are not scaled by the number of
    workers, nor do the workers need equal batch counts; ``lr_decay`` is
    refused (use an ``lr_schedule``), checkpoints hold no optimizer state, and
    a second :meth:`train` sends the servers this process's optimizer again
    (restarting its state: momentum, Adam's moments).

    See also mxnet.module.Module.fit, :mod:`minpy.nn.parallel`.
    """

    def __init__(self, model, train_dataiter, test_dataiter=None, *, task_type="classification",
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
        self.model = model
        self.train_dataiter = train_dataiter
        self.test_dataiter = test_dataiter
        self.task_type = task_type
        self.init_rule = init_rule
        self.init_config = dict(init_config or {})
        self.update_rule = update_rule
        self.optim_config = dict(optim_config or {})
        self.lr_decay = float(lr_decay)
        self.num_epochs = int(num_epochs)
        self.train_acc_num_samples = train_acc_num_samples
        self.print_every = max(int(print_every), 1)
        self.verbose = bool(verbose)
        self.progress = progress
        self.seed = seed
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = int(checkpoint_every)
        self.keep_checkpoints = int(keep_checkpoints)
        self.callbacks = list(callbacks)
        if batch_end_callback is not None or epoch_end_callback is not None:
            self.callbacks.append(_FunctionCallback(batch_end_callback, epoch_end_callback))
        self.on_nonfinite = on_nonfinite
        self.keep_best = keep_best
        self.ctx = parallel.check_contexts("Solver", ctx)
        if (kvstore is not None or (self.ctx is not None and len(self.ctx) > 1)) and \
                not callable(update_rule) and self.optim_config.get("clip_norm") is not None:
            raise ValueError("Solver: optim_config clip_norm (one norm over all parameters) "
                             "cannot be used with a kvstore (several contexts use one), "
                             "whose optimizer updates one parameter at a time; use "
                             "clip_gradient")
        self.kvstore = parallel.make_kvstore("Solver", kvstore, self.ctx)
        if self.kvstore is not None and self.lr_decay != 1.0 and \
                not parallel.updates_in_process(self.kvstore):
            raise ValueError(f"Solver: lr_decay cannot reach the optimizer of a "
                             f"{self.kvstore.type!r} kvstore, which runs on its server ranks; "
                             "give the optimizer an lr_schedule in optim_config instead "
                             "(minpy.nn.optim.StepSchedule ...)")
        self._replicas = (parallel.Replicas(self.kvstore, self.ctx)
                          if self.kvstore is not None or self.ctx is not None else None)
        self._guard = None        # the store's updater when it skips non-finite steps
        self._reset()

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
    def _step(self, batch, where):
        """One gradient step on ``batch``; returns the loss as a float."""
        model = self.model
        if self._replicas is None:
            loss, grads = model.loss_and_grad(batch, mode="train")
            value = float(_host(loss))
        else:                     # a part of the batch per context, the mean of their losses
            parts = self._replicas.split(batch, where)
            results = self._replicas.gradients(model, [part for part, _ in parts])
            shares = [share for _, share in parts]
            grads = results[0][1]
            value = sum(share * float(_host(loss)) for share, (loss, _) in zip(shares, results))
        poison = False
        if not math.isfinite(value):
            if self.on_nonfinite == "raise":
                raise FloatingPointError(
                    f"Solver: the loss is {value} at {where}; training stopped before this "
                    "step's update (lower the learning rate, check the data, or pass "
                    "on_nonfinite='skip')")
            if self.on_nonfinite == "skip":
                if self.kvstore is None or self.kvstore.num_workers == 1:
                    self.skipped_steps += 1
                    return value
                poison = True     # the others skip it too: see _install_updater
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
            dataiter: an iterator of DataBatch; padded samples are not counted.
            num_samples: evaluate only the first ``num_samples`` samples.
        Returns:
            A float.
        """
        it = dataiter
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
        through an updater.  In a dist job with ``on_nonfinite='skip'`` the updater
        skips non-finite summed gradients, which a worker with a non-finite loss
        makes sure of."""
        skip = self.on_nonfinite == "skip" and kv.num_workers > 1
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
    def _show_bar(self):
        if not self.is_chief:
            return False
        if self.progress is not None:
            return bool(self.progress)
        if not self.verbose or not sys.stderr.isatty():
            return False
        return importlib.util.find_spec("tqdm") is not None   # optional: plain printing

    def _bar(self, total, epoch):
        if not self._show_bar():
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            raise ImportError('Solver(progress=True) needs tqdm: pip install "minpy[progress]"') \
                from None
        return tqdm(total=total, desc=f"epoch {epoch}/{self.num_epochs}", unit="batch",
                    leave=True, dynamic_ncols=True)

    def train(self):
        """Run the remaining epochs; returns ``self``.

        Resumes where a loaded checkpoint left off. Raises FloatingPointError on
        a non-finite loss (see ``on_nonfinite``); a callback raising
        :class:`StopTraining` ends the run early.
        """
        if not self.model.params:
            self.init()
        if self._replicas is not None:
            self._replicas.sync(self.model.params, self._install_updater, self.train_dataiter)
        try:
            while self.epoch < self.num_epochs:
                self._train_epoch()
        except StopTraining:
            pass
        if self._replicas is not None:
            self._replicas.finish()
        if self.keep_best and self.best_params:
            self.model.params = {k: mnp.array(v) for k, v in self.best_params.items()}
        return self

    def _train_epoch(self):
        epoch = self.epoch + 1
        it = self.train_dataiter
        it.reset()
        total = _num_batches(it)
        bar = self._bar(total, epoch)
        start = time.perf_counter()
        seen = 0
        running = None
        try:
            worker = ""
            if self.kvstore is not None and self.kvstore.num_workers > 1:
                worker = f" on worker {self.kvstore.rank}"
            for index, batch in enumerate(it):
                where = f"epoch {epoch}, batch {index} (step {self.step_count}){worker}"
                loss = self._step(batch, where)
                self.loss_history.append(loss)
                self.step_count += 1
                seen += batch.data[0].shape[0]
                running = loss if running is None or not math.isfinite(running) \
                    else 0.9 * running + 0.1 * loss
                rate = seen / max(time.perf_counter() - start, 1e-9)
                if bar is not None:
                    bar.set_postfix(loss=f"{running:.4f}", samples_per_s=f"{rate:.0f}",
                                    refresh=False)
                    bar.update(1)
                elif self.verbose and self.is_chief and \
                        (self.step_count - 1) % self.print_every == 0:
                    print(f"(Iteration {self.step_count}) loss: {loss:f}")
                self._call("on_batch_end", {"epoch": epoch, "batch": index,
                                            "step": self.step_count, "loss": loss,
                                            "samples_per_sec": rate})
            elapsed = time.perf_counter() - start
            self._end_epoch(epoch, elapsed, seen, bar, running)
        finally:
            if bar is not None:
                bar.close()

    def _end_epoch(self, epoch, elapsed, seen, bar, running_loss):
        train_acc = self.check_accuracy(self.train_dataiter, self.train_acc_num_samples)
        val_acc = (self.check_accuracy(self.test_dataiter) if self.test_dataiter is not None
                   else float("nan"))
        self.train_acc_history.append(train_acc)
        self.val_acc_history.append(val_acc)
        score = val_acc if self.task_type == "classification" else -val_acc
        if self.test_dataiter is not None and score > self._best_score:
            self._best_score, self.best_val_acc = score, val_acc
            self.best_params = checkpoint.host_copies(self.model.params)
        self._decay_learning_rate()
        self.epoch = epoch
        target = "acc" if self.task_type == "classification" else "loss"
        message = (f"(Epoch {epoch} / {self.num_epochs}) train {target}: {train_acc:.4f}, "
                   f"val {target}: {val_acc:.4f}, time: {elapsed:.2f} s, "
                   f"{seen / max(elapsed, 1e-9):.0f} samples/s")
        if bar is not None:
            bar.set_postfix(loss=f"{running_loss:.4f}" if running_loss is not None else "-",
                            samples_per_s=f"{seen / max(elapsed, 1e-9):.0f}",
                            train=f"{train_acc:.4f}", val=f"{val_acc:.4f}")
        elif self.verbose and self.is_chief:
            print(message)
        if self.checkpoint_dir is not None and epoch % self.checkpoint_every == 0 and \
                self.is_chief:
            self.save_checkpoint(os.path.join(self.checkpoint_dir, f"checkpoint-{epoch:04d}.minpy"))
        self._call("on_epoch_end", {"epoch": epoch, "step": self.step_count,
                                    "train_acc": train_acc, "val_acc": val_acc,
                                    "time": elapsed})

    def _decay_learning_rate(self):
        if self.lr_decay == 1.0:
            return
        if self.optimizer is not None:
            self.optimizer.learning_rate = self.optimizer.learning_rate * self.lr_decay
        else:
            for config in self.optim_configs.values():
                config["learning_rate"] = config.get("learning_rate", 1e-2) * self.lr_decay

    def _call(self, hook, info):
        for cb in self.callbacks:
            getattr(cb, hook)(self, info)

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
        history = state["history"]
        self.loss_history = list(history["loss"])
        self.train_acc_history = list(history["train_acc"])
        self.val_acc_history = list(history["val_acc"])
        self.best_val_acc, self._best_score = state["best_val_acc"], state["best_score"]
        self.best_params = dict(state["best_params"])

    def save_checkpoint(self, path):
        """Write :meth:`state_dict` to ``path`` atomically; prune old ones in the same directory."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        checkpoint.save(path, self.state_dict())
        if self.keep_checkpoints > 0 and self.checkpoint_dir is not None and \
                os.path.dirname(os.path.abspath(path)) == os.path.abspath(self.checkpoint_dir):
            for old in _checkpoints_in(self.checkpoint_dir)[:-self.keep_checkpoints]:
                os.unlink(old)

    def load_checkpoint(self, path):
        """Restore the state saved at ``path`` (a file, or a directory: its newest checkpoint)."""
        if os.path.isdir(path):
            found = _checkpoints_in(path)
            if not found:
                raise FileNotFoundError(f"Solver.load_checkpoint: no checkpoint-*.minpy in {path!r}")
            path = found[-1]
        self.load_state_dict(checkpoint.load(path))
        return path

    def resume(self, path):
        """Restore the checkpoint at ``path`` and train the remaining epochs; returns ``self``."""
        self.load_checkpoint(path)
        return self.train()

    # ------------------------------------------------------------------ plots
    def plot(self, path):
        """Write the loss per step and the accuracy per epoch to a PNG at ``path``.

        Needs matplotlib (``pip install "minpy[plot]"``).
        """
        try:
            import matplotlib
            matplotlib.use("Agg")
            from matplotlib import pyplot
        except ImportError:
            raise ImportError('Solver.plot needs matplotlib: pip install "minpy[plot]"') from None
        fig, (ax_loss, ax_acc) = pyplot.subplots(1, 2, figsize=(10, 3.8))
        steps = numpy.arange(1, len(self.loss_history) + 1)
        ax_loss.plot(steps, self.loss_history, lw=0.6, alpha=0.5, label="loss per step")
        if len(self.loss_history) >= 10:
            window = max(len(self.loss_history) // 50, 5)
            smooth = numpy.convolve(self.loss_history, numpy.ones(window) / window, mode="valid")
            ax_loss.plot(steps[window - 1:], smooth, lw=1.5, label=f"mean of {window}")
        ax_loss.set(xlabel="step", ylabel="loss", title="training loss")
        ax_loss.legend()
        epochs = numpy.arange(1, len(self.train_acc_history) + 1)
        target = "accuracy" if self.task_type == "classification" else "loss"
        ax_acc.plot(epochs, self.train_acc_history, "o-", label=f"train {target}")
        if self.test_dataiter is not None:
            ax_acc.plot(epochs, self.val_acc_history, "s-", label=f"validation {target}")
        ax_acc.set(xlabel="epoch", ylabel=target, title=target)
        ax_acc.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        pyplot.close(fig)
        return path


def _host(v):
    return v.asnumpy() if isinstance(v, Array) else numpy.asarray(v)


def _num_batches(it):
    count = getattr(it, "getnumiterations", None)
    return count() if count is not None else None


_CHECKPOINT_NAME = re.compile(r"checkpoint-(\d+)\.minpy")


def _checkpoints_in(directory):
    """The paths of ``directory``'s ``checkpoint-<epoch>.minpy`` files, oldest epoch
    first. By the epoch's number, not the name: ``checkpoint-10000`` sorts before
    ``checkpoint-9999`` as text. Other names (``checkpoint-best.minpy``) are not ours
    to prune or resume from."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(directory), "checkpoint-*.minpy")):
        match = _CHECKPOINT_NAME.fullmatch(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found)]
