"""``mx.lr_scheduler``: MXNet 1.x's learning-rate schedulers, with MXNet's formulas.

A scheduler is MXNet's ``callable(num_update) -> lr`` (``num_update``: the updates
the most-updated weight has had, this one included) that :mod:`minpy.mxnet.optimizer`
calls; the optimizer sets its ``base_lr`` to ``learning_rate``. They are stateful
as MXNet's are (``FactorScheduler`` and ``MultiFactorScheduler`` lower ``base_lr``
as ``num_update`` passes each step: a step counts once ``num_update`` *exceeds* it).
:mod:`minpy.nn.optim.schedule` holds minpy's stateless schedules, with a different
convention (updates before this one); the two are not interchangeable, so these are
written out, line for line as MXNet 1.9.1's ``python/mxnet/lr_scheduler.py``.

See also mxnet.lr_scheduler.
"""
import logging
import math
import numbers

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


def _int(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {value!r}")
    return int(value)


class LRScheduler:
    """Base class: ``scheduler(num_update) -> lr``, with an optional warmup.

    Args:
        base_lr: the rate after the warmup (the optimizer sets it to its ``learning_rate``).
        warmup_steps: updates of warmup before the schedule starts.
        warmup_begin_lr: the rate the warmup starts from.
        warmup_mode: ``'linear'`` (equal increments to ``base_lr``) or ``'constant'``
            (``warmup_begin_lr`` throughout).

    Raises:
        ValueError: ``warmup_begin_lr > base_lr``, negative ``warmup_steps`` or an
            unknown ``warmup_mode`` (MXNet's messages).

    See also mxnet.lr_scheduler.LRScheduler.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        self.warmup_steps = _int(type(self).__name__, "warmup_steps", warmup_steps)
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The warmup rate at ``num_update`` (< ``warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise ValueError(f"{type(self).__name__}.get_warmup_lr: num_update={num_update} "
                             f"is past the warmup ({self.warmup_steps} steps)")
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) \
                * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update):
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """``base_lr * factor ** k`` where ``k`` counts the multiples of ``step`` that
    ``num_update`` has exceeded; never below ``stop_factor_lr``.

    Raises:
        ValueError: ``step < 1`` or ``factor > 1``.

    See also mxnet.lr_scheduler.FactorScheduler.
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                             "change in the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e",
                             num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """``base_lr * factor ** k`` where ``k`` counts the steps of the increasing list
    ``step`` that ``num_update`` has exceeded.

    Raises:
        ValueError: a step below 1, or a list that is not increasing.
        TypeError: ``step`` is not a non-empty list.

    See also mxnet.lr_scheduler.MultiFactorScheduler.
    """

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise TypeError(f"MultiFactorScheduler: step must be a non-empty list of ints, "
                            f"got {step!r}")
        for i, s in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if s < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                logging.info("Update[%d]: Change learning rate to %0.5e",
                             num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class PolyScheduler(LRScheduler):
    """After the warmup, ``final_lr + (base_lr - final_lr) * (1 - n / max_steps) ** pwr``
    with ``n = num_update - warmup_steps`` and ``max_steps = max_update - warmup_steps``;
    the last rate stays once ``num_update > max_update``.

    Raises:
        ValueError: ``max_update < 1``.

    See also mxnet.lr_scheduler.PolyScheduler.
    """

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        self.power = pwr
        _annealed_init(self, "PolyScheduler", max_update, base_lr, final_lr, warmup_steps,
                       warmup_begin_lr, warmup_mode)

    def __call__(self, num_update):
        return _annealed_lr(self, num_update, lambda t: pow(1 - t, self.power))


class CosineScheduler(LRScheduler):
    """After the warmup, ``final_lr + (base_lr - final_lr) * (1 + cos(pi * n / max_steps)) / 2``
    (``n``, ``max_steps`` as :class:`PolyScheduler`); ``final_lr`` past ``max_update``.

    Raises:
        ValueError: ``max_update < 1``.

    See also mxnet.lr_scheduler.CosineScheduler.
    """

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        _annealed_init(self, "CosineScheduler", max_update, base_lr, final_lr, warmup_steps,
                       warmup_begin_lr, warmup_mode)

    def __call__(self, num_update):
        return _annealed_lr(self, num_update, lambda t: (1 + math.cos(math.pi * t)) / 2)


def _annealed_init(sched, name, max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                   warmup_mode):
    """The state Poly and Cosine schedulers share: from ``base_lr`` (after the warmup) to
    ``final_lr`` at ``max_update``."""
    LRScheduler.__init__(sched, base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
    max_update = _int(name, "max_update", max_update)
    if max_update < 1:
        raise ValueError("maximum number of updates must be strictly positive")
    sched.base_lr_orig = sched.base_lr
    sched.max_update = max_update
    sched.final_lr = final_lr
    sched.max_steps = max_update - sched.warmup_steps


def _annealed_lr(sched, num_update, factor):
    """MXNet's annealing step: the warmup rate, else ``final_lr + (base - final) *
    factor(t)`` with ``t`` the fraction of the steps after the warmup (the rate then
    stays where it was after ``max_update``)."""
    if num_update < sched.warmup_steps:
        return sched.get_warmup_lr(num_update)
    if num_update <= sched.max_update:
        t = float(num_update - sched.warmup_steps) / float(sched.max_steps)
        sched.base_lr = sched.final_lr + (sched.base_lr_orig - sched.final_lr) * factor(t)
    return sched.base_lr
