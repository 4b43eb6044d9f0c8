"""Learning-rate schedules for the optimizers of :mod:`minpy.nn.optim`.

A schedule is a callable ``(num_update, base_lr) -> lr``: ``num_update`` is
the number of updates made before the one about to run (0 for the first).
Each saves itself as a dict of plain scalars (``state_dict``) that
:func:`from_state_dict` turns back into an equal schedule.
"""
import math
import numbers

__all__ = ["Schedule", "StepSchedule", "CosineSchedule", "WarmupSchedule", "from_state_dict"]


def _check(owner, name, value, minimum, integer=False, allow_equal=True):
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kinds):
        what = "an int" if integer else "a real number"
        raise TypeError(f"{owner}: {name} must be {what}, got {value!r}")
    if value < minimum or (value == minimum and not allow_equal):
        rel = ">=" if allow_equal else ">"
        raise ValueError(f"{owner}: {name} must be {rel} {minimum}, got {value!r}")
    return value


class Schedule:
    """Base class: ``schedule(num_update, base_lr)`` gives the learning rate.

    See also StepSchedule, CosineSchedule, WarmupSchedule.
    """

    def __call__(self, num_update, base_lr):
        raise NotImplementedError

    def state_dict(self):
        """The schedule as ``{'type': class name, arguments...}`` (plain scalars)."""
        raise NotImplementedError

    def __eq__(self, other):
        return type(other) is type(self) and other.state_dict() == self.state_dict()

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.state_dict().items() if k != "type")
        return f"{type(self).__name__}({args})"


class StepSchedule(Schedule):
    """Multiply the learning rate by ``factor`` every ``step_size`` updates:
    ``base_lr * factor ** (num_update // step_size)``.

    See also mxnet.lr_scheduler.FactorScheduler, torch.optim.lr_scheduler.StepLR.
    """

    def __init__(self, step_size, factor=0.1):
        self.step_size = _check("StepSchedule", "step_size", step_size, 1, integer=True)
        self.factor = _check("StepSchedule", "factor", factor, 0.0)

    def __call__(self, num_update, base_lr):
        return base_lr * self.factor ** (num_update // self.step_size)

    def state_dict(self):
        return {"type": "StepSchedule", "step_size": int(self.step_size),
                "factor": float(self.factor)}


class CosineSchedule(Schedule):
    """Cosine decay from ``base_lr`` to ``final_lr`` over ``total_steps`` updates,
    then ``final_lr``: ``final + (base - final) * (1 + cos(pi * n / total)) / 2``.

    See also torch.optim.lr_scheduler.CosineAnnealingLR.
    """

    def __init__(self, total_steps, final_lr=0.0):
        self.total_steps = _check("CosineSchedule", "total_steps", total_steps, 1, integer=True)
        self.final_lr = _check("CosineSchedule", "final_lr", final_lr, 0.0)

    def __call__(self, num_update, base_lr):
        frac = min(num_update, self.total_steps) / self.total_steps
        return self.final_lr + (base_lr - self.final_lr) * (1 + math.cos(math.pi * frac)) / 2

    def state_dict(self):
        return {"type": "CosineSchedule", "total_steps": int(self.total_steps),
                "final_lr": float(self.final_lr)}


class WarmupSchedule(Schedule):
    """Linear warm-up: ``base_lr * (num_update + 1) / warmup_steps`` for the first
    ``warmup_steps`` updates, then ``after(num_update - warmup_steps, base_lr)``
    (or ``base_lr`` when ``after`` is None).

    Args:
        warmup_steps: number of warm-up updates (>= 1).
        after: the schedule that follows, counted from the end of the warm-up.

    See also torch.optim.lr_scheduler.LinearLR, SequentialLR.
    """

    def __init__(self, warmup_steps, after=None):
        self.warmup_steps = _check("WarmupSchedule", "warmup_steps", warmup_steps, 1,
                                   integer=True)
        if after is not None and not isinstance(after, Schedule):
            raise TypeError("WarmupSchedule: after must be a Schedule (StepSchedule, "
                            f"CosineSchedule, ...) or None, got {type(after).__name__}")
        self.after = after

    def __call__(self, num_update, base_lr):
        if num_update < self.warmup_steps:
            return base_lr * (num_update + 1) / self.warmup_steps
        if self.after is None:
            return base_lr
        return self.after(num_update - self.warmup_steps, base_lr)

    def state_dict(self):
        return {"type": "WarmupSchedule", "warmup_steps": int(self.warmup_steps),
                "after": None if self.after is None else self.after.state_dict()}


_TYPES = {c.__name__: c for c in (StepSchedule, CosineSchedule, WarmupSchedule)}


def from_state_dict(d):
    """The schedule saved as ``d`` by ``Schedule.state_dict`` (None gives None).

    Raises:
        ValueError: ``d`` names no known schedule.
    """
    if d is None:
        return None
    if not isinstance(d, dict) or d.get("type") not in _TYPES:
        raise ValueError(f"schedule.from_state_dict: expected a dict with 'type' one of "
                         f"{sorted(_TYPES)}, got {d!r}")
    args = {k: v for k, v in d.items() if k != "type"}
    if "after" in args:
        args["after"] = from_state_dict(args["after"])
    return _TYPES[d["type"]](**args)
