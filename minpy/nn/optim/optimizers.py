"""``minpy.nn.optim.optimizers``: the in-place optimizers of :mod:`minpy.nn.optim`.

:func:`create` and :class:`Optimizer` with its rules :class:`SGD`,
:class:`SGDMomentum`, :class:`RMSProp`, :class:`AdaGrad`, :class:`Adam` and
:class:`AdamW` update parameter Arrays in their own buffers with the fused
kernels of :mod:`minpy.kernels.optim`: one multi-tensor kernel call per ``step`` on
the CPU (numba), one ``cupy.ElementwiseKernel`` per parameter on the GPU, NumPy
``out=`` ufuncs otherwise. They compute the same values as MinPy's functional
rules (:func:`minpy.nn.optim.sgd` ... :func:`minpy.nn.optim.adamw`), which live
in :mod:`minpy.nn.optim`; that module re-exports everything here, so
``minpy.nn.optim.create`` and ``minpy.nn.optim.Adam`` keep working.
"""
import numbers
import types

import numpy

from ...core import tape as _tape
from ...core.array import Array, new, wait
from ...core.execute import mutated
from ...dispatch.backend import backend_of
from ...dispatch.context import cpu
from ...dispatch.transfer import context_of, data_on, move_raw
from ...core.trace import current_tracer
from ...kernels import optim as fused
from .schedule import Schedule
from .schedule import from_state_dict as _schedule_from

__all__ = ["create", "Optimizer", "SGD", "SGDMomentum", "RMSProp", "AdaGrad", "Adam", "AdamW",
           "RULES"]

_COMMON = ("learning_rate", "weight_decay", "clip_gradient", "clip_norm", "lr_schedule",
           "backend")
_BACKENDS = ("auto", "numba", "numpy")
_CPU = cpu(0)
_NUMBA_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))
# what tape.check_write reads of the primitive writing: its name and the written argument
_STEP_WRITE = types.SimpleNamespace(qualname="an optimizer's in-place step", mutates=0)


def _real(owner, name, value, lo=0.0, lo_open=False, hi=None, hi_open=False, none_ok=False):
    """``value`` as a float checked against its range, or a clear error."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        extra = " or None" if none_ok else ""
        raise TypeError(f"{owner}: {name} must be a real number{extra}, got {value!r}")
    v = float(value)
    if (v != v or v < lo or (lo_open and v == lo)
            or (hi is not None and (v > hi or (hi_open and v == hi)))):
        rng = f"{'>' if lo_open else '>='} {lo:g}"
        if hi is not None:
            rng += f" and {'<' if hi_open else '<='} {hi:g}"
        raise ValueError(f"{owner}: {name} must be {rng}, got {value!r}")
    return v


class _Item:
    """One parameter of a step: its Array, buffer, gradient (same device and dtype)
    and state."""
    __slots__ = ("name", "w", "data", "g", "st")

    def __init__(self, name, w, data, g, st):
        self.name, self.w, self.data, self.g, self.st = name, w, data, g, st


class Optimizer:
    """Base of the in-place optimizers: updates parameter Arrays in their own buffers.

    Args:
        learning_rate: the base learning rate (>= 0).
        weight_decay: L2 penalty added to the gradient (``g + weight_decay * w``;
            :class:`AdamW` decays the weights instead).
        clip_gradient: bound each gradient element to ``[-c, c]`` (None: no clip).
        clip_norm: rescale the gradients of a ``step`` so that their global L2 norm
            is at most this (None: no rescale); applied before ``clip_gradient``.
        lr_schedule: a :class:`minpy.nn.optim.schedule.Schedule` or any callable
            ``(num_update, base_lr) -> lr``.
        backend: ``'auto'`` (numba on the CPU when installed, a CuPy kernel for
            GPU arrays, else NumPy ufuncs with ``out=``), ``'numba'`` or ``'numpy'``.

    Attributes:
        learning_rate: the rate the next update uses (after the schedule).
            Assigning it sets the base rate, or with a schedule rescales the base
            so the current rate becomes the value (``opt.learning_rate *= 0.5``
            halves the whole schedule).
        num_update: updates made so far (the most any parameter has had).

    Raises:
        ImportError: ``backend='numba'`` without numba (``pip install "minpy[jit]"``).

    See also minpy.nn.optim.create, torch.optim.Optimizer, mxnet.optimizer.Optimizer.
    """

    update_rule = None
    _slots = ()          # state arrays per parameter (MinPy's config keys)
    _hyper = ()          # the rule's own hyper-parameters (MinPy's config keys)

    def __init__(self, learning_rate, weight_decay=0.0, clip_gradient=None, clip_norm=None,
                 lr_schedule=None, backend="auto"):
        owner = type(self).__name__
        self.base_learning_rate = _real(owner, "learning_rate", learning_rate)
        self.weight_decay = _real(owner, "weight_decay", weight_decay)
        self.clip_gradient = _real(owner, "clip_gradient", clip_gradient, lo_open=True,
                                   none_ok=True)
        self.clip_norm = _real(owner, "clip_norm", clip_norm, lo_open=True, none_ok=True)
        if lr_schedule is not None and not callable(lr_schedule):
            raise TypeError(f"{owner}: lr_schedule must be a Schedule or a callable "
                            f"(num_update, base_lr) -> lr, got {type(lr_schedule).__name__}")
        self.lr_schedule = lr_schedule
        if backend not in _BACKENDS:
            raise ValueError(f"{owner}: backend must be one of {_BACKENDS}, got {backend!r}")
        if backend == "numba":
            fused.load_numba()
        self.backend = backend
        self._state = {}      # name -> {"t": updates so far, slot: backend array}
        self._plans = {}      # (dtype, names) -> fused.NumbaPlan
        self._scratch = {}    # (context, dtype) -> two flat buffers for the NumPy path
        self._bound = {}      # name -> the buffer its state was last checked against

    # ------------------------------------------------------------ hooks
    def _kind(self):
        raise NotImplementedError

    def _params(self, t, lr):
        """The kind's scalars for a parameter's ``t``-th update (1-based) at rate ``lr``."""
        return ()

    def _coupled_wd(self):
        return self.weight_decay

    # ------------------------------------------------------------ rates
    def _lr_at(self, num_update):
        if self.lr_schedule is None:
            return self.base_learning_rate
        return float(self.lr_schedule(num_update, self.base_learning_rate))

    @property
    def num_update(self):
        """Updates made so far: the most any parameter has had."""
        return max((st["t"] for st in self._state.values()), default=0)

    @property
    def learning_rate(self):
        """The rate of the next update (the schedule at ``num_update``); see the class."""
        return self._lr_at(self.num_update)

    @learning_rate.setter
    def learning_rate(self, value):
        value = _real(type(self).__name__, "learning_rate", value)
        if self.lr_schedule is None:
            self.base_learning_rate = value
            return
        current = self.learning_rate
        if current == 0:
            raise ValueError(f"{type(self).__name__}: the schedule gives learning rate 0 now, "
                             "so it cannot be rescaled; set base_learning_rate instead")
        self.base_learning_rate *= value / current

    # ------------------------------------------------------------ updates
    def step(self, params, grads):
        """Update every parameter in place: one fused kernel call on the CPU.

        Args:
            params: dict name -> minpy.Array (updated in place: same objects).
            grads: dict name -> gradient (Array or array-like) with the same keys.

        Raises:
            KeyError: ``grads`` lacks a parameter's name (or has extra names).
            ValueError / TypeError: a gradient's shape or dtype does not fit its parameter.
            RuntimeError: a parameter is traced by an active gradient tape.

        See also update, torch.optim.Optimizer.step.
        """
        where = f"{type(self).__name__}.step"
        if not isinstance(params, dict) or not isinstance(grads, dict):
            raise TypeError(f"{where}: params and grads must be dicts name -> array, got "
                            f"{type(params).__name__} and {type(grads).__name__}")
        missing = [k for k in params if k not in grads]
        extra = [k for k in grads if k not in params]
        if missing or extra:
            raise KeyError(f"{where}: grads must have the keys of params; missing "
                           f"{missing}, unexpected {extra}")
        items = [self._prepare(where, k, w, grads[k]) for k, w in params.items()]
        self._apply(items)
        tracer = current_tracer()
        if tracer is not None:
            self._record_step(tracer, where, list(params), list(params.values()),
                              [grads[k] for k in params])

    def update(self, name, w, g):
        """Update one parameter ``w`` (a minpy.Array named ``name``) in place with
        gradient ``g``; ``clip_norm`` then bounds this gradient's own norm.

        See also step (one kernel call for all parameters).
        """
        where = f"{type(self).__name__}.update"
        self._apply([self._prepare(where, name, w, g)])
        tracer = current_tracer()
        if tracer is not None:
            self._record_step(tracer, where, [name], [w], [g])

    def _record_step(self, tracer, where, names, ws, gs):
        """Record this update as one step of a ``minpy.jit`` trace: the replay runs
        the optimizer again (its state and step count advance at each call)."""
        n = len(names)

        def replay(*raws):
            arrays = [r if type(r) is Array else new(r) for r in raws]
            if n == 1 and where.endswith(".update"):
                self.update(names[0], arrays[0], arrays[1])
            else:
                self.step(dict(zip(names, arrays[:n])), dict(zip(names, arrays[n:])))
            return ()
        tracer.opaque(where, replay, list(ws) + list(gs), [], side_effect=True, writes=ws)

    def _prepare(self, where, name, w, g):
        if type(w) is not Array:
            raise TypeError(f"{where}: parameter {name!r} must be a minpy.Array (it is "
                            f"updated in place), got {type(w).__name__}")
        data = w._data
        if data.dtype.kind != "f":
            raise TypeError(f"{where}: parameter {name!r} has dtype {data.dtype}; optimizers "
                            "update floating-point parameters")
        if type(data) is numpy.ndarray and not data.flags.writeable:
            raise ValueError(f"{where}: parameter {name!r} is a read-only array; it must be "
                             "writable to be updated in place")
        if _tape.active_tapes():
            self._check_untraced(where, name, w)
        wait(w)
        ctx = context_of(data)
        if type(g) is Array:
            wait(g)
            gd = data_on(g, ctx)
        else:
            gd = move_raw(g if backend_of(g).device_type == "gpu" else numpy.asarray(g), ctx)
        if gd.shape != data.shape:
            raise ValueError(f"{where}: the gradient of parameter {name!r} has shape "
                             f"{gd.shape}, but the parameter has shape {data.shape}")
        if gd.dtype != data.dtype:
            if not numpy.can_cast(gd.dtype, data.dtype, "same_kind"):
                raise TypeError(f"{where}: the gradient of parameter {name!r} has dtype "
                                f"{gd.dtype}, which does not cast to the parameter's "
                                f"dtype {data.dtype}")
            with backend_of(gd).device(ctx.device_id):
                gd = gd.astype(data.dtype)
        st = self._state.get(name)
        if st is None or self._bound.get(name) is not data:
            st = self._state_for(where, name, data, ctx)
        return _Item(name, w, data, gd, st)

    def _check_untraced(self, where, name, w):
        node = w._node
        if node is not None and node.tape.active:
            raise RuntimeError(f"{where}: parameter {name!r} is traced by an active gradient "
                               "tape (inside minpy.grad); update it after the gradient "
                               "call returns")
        try:
            _tape.check_write(_STEP_WRITE, (w,), None)
        except RuntimeError as e:
            raise RuntimeError(f"{where}: parameter {name!r}: {e}") from None

    def _state_for(self, where, name, data, ctx):
        st = self._state.get(name)
        b = backend_of(data)
        if st is None:
            with b.device(ctx.device_id):
                zeros = {s: b.xp.zeros(data.shape, data.dtype) for s in self._slots}
            st = self._state[name] = {"t": 0, **zeros}
            self._bound[name] = data
            return st
        for s in self._slots:
            a = st[s]
            if a.shape != data.shape or a.dtype != data.dtype:
                raise ValueError(f"{where}: the state {s!r} of parameter {name!r} has shape "
                                 f"{a.shape} and dtype {a.dtype}, but the parameter has "
                                 f"shape {data.shape} and dtype {data.dtype}")
            if context_of(a) != ctx:
                st[s] = move_raw(a, ctx)
                self._plans.clear()
        self._bound[name] = data
        return st

    def _rescale(self, items):
        if self.clip_norm is None:
            return 1.0
        total = 0.0
        for it in items:
            b = backend_of(it.g)
            with b.device(context_of(it.g).device_id):
                sq = b.xp.sum(b.xp.square(it.g, dtype=numpy.float64))
            total += float(b.to_host(sq))
        norm = total ** 0.5
        return self.clip_norm / (norm + 1e-6) if norm > self.clip_norm else 1.0

    def _apply(self, items):
        rescale = self._rescale(items)
        kind = self._kind()
        use_numba = self.backend != "numpy" and (self.backend == "numba" or
                                                 fused.numba_available())
        hypers, groups = {}, {}
        for it in items:
            d = it.data
            key = (d.dtype.str, it.st["t"])
            h = hypers.get(key)
            if h is None:
                lr = self._lr_at(key[1])
                h = hypers[key] = fused.hyper(kind, lr, rescale, self.clip_gradient,
                                              self._coupled_wd(), self._params(key[1] + 1, lr),
                                              d.dtype)
            if (use_numba and type(d) is numpy.ndarray and d.dtype in _NUMBA_DTYPES
                    and d.flags.c_contiguous):
                groups.setdefault(key, []).append(it)
            else:
                self._run_one(kind, it, h)
        for key, its in groups.items():
            self._run_numba(kind, key[0], its, hypers[key])
        for it in items:
            it.st["t"] += 1
            mutated(it.w)          # cached copies on other devices are stale now

    def _run_numba(self, kind, dtype, its, h):
        key = (dtype, tuple(it.name for it in its))
        weights = [it.data for it in its]
        plan = self._plans.get(key)
        if plan is None or not plan.matches(weights):
            if len(self._plans) > 8:          # parameter sets that changed: forget them
                self._plans.clear()
            plan = self._plans[key] = fused.NumbaPlan(
                weights, [tuple(it.st[s] for s in self._slots) for it in its])
        plan.run(kind, [numpy.ascontiguousarray(it.g) for it in its], h)

    def _run_one(self, kind, it, h):
        data = it.data
        s = [it.st[n] for n in self._slots] + [None, None]
        b = backend_of(data)
        with b.device(context_of(data).device_id):
            if b.name == "cupy" and self.backend != "numpy":
                fused.step_cupy(kind, data, it.g, s[0], s[1], h)
            else:
                fused.step_numpy(b.xp, kind, data, it.g, s[0], s[1], h,
                                 self._scratch_for(b, data))

    def _scratch_for(self, b, data):
        key = (context_of(data), data.dtype.str)
        bufs = self._scratch.get(key)
        if bufs is None or bufs[0].size < data.size:
            bufs = self._scratch[key] = tuple(b.xp.empty(data.size, data.dtype)
                                              for _ in range(2))
        return tuple(b.xp.reshape(x[:data.size], data.shape) for x in bufs)

    # ------------------------------------------------------------ saving
    def config(self):
        """The hyper-parameters as a dict of MinPy's config keys (``learning_rate`` is
        the base rate)."""
        out = {"learning_rate": self.base_learning_rate, "weight_decay": self.weight_decay,
               "clip_gradient": self.clip_gradient, "clip_norm": self.clip_norm}
        out.update((k, getattr(self, k)) for k in self._hyper)
        return out

    def state_dict(self):
        """Everything needed to continue exactly: rule, config, schedule, and per
        parameter its update count ``t`` and state arrays (host numpy copies).

        A :class:`~minpy.nn.optim.schedule.Schedule` is saved as a dict of scalars; another
        callable is kept as is (pickling the dict then needs it picklable).

        See also load_state_dict, torch.optim.Optimizer.state_dict.
        """
        sched = self.lr_schedule
        return {"update_rule": self.update_rule, "config": self.config(),
                "lr_schedule": sched.state_dict() if isinstance(sched, Schedule) else sched,
                "state": {name: {"t": st["t"], **{s: _host_copy(st[s]) for s in self._slots}}
                          for name, st in self._state.items()}}

    def load_state_dict(self, d):
        """Restore a :meth:`state_dict` (copied: ``d`` stays untouched). State arrays
        move to each parameter's device at its next update.

        Raises:
            ValueError: ``d`` is for another update rule or lacks a state array.

        See also state_dict.
        """
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(d, dict) or not {"update_rule", "config", "state"} <= set(d):
            raise ValueError(f"{where}: expected a dict from state_dict() with keys "
                             "'update_rule', 'config', 'state'")
        if d["update_rule"] != self.update_rule:
            raise ValueError(f"{where}: the state is for update rule {d['update_rule']!r}, "
                             f"this optimizer is {self.update_rule!r}")
        sched = d.get("lr_schedule")
        sched = _schedule_from(sched) if isinstance(sched, dict) else sched
        fresh = type(self)(**d["config"], lr_schedule=sched, backend=self.backend)  # checks
        for k in ("base_learning_rate", "weight_decay", "clip_gradient", "clip_norm",
                  "lr_schedule") + self._hyper:
            setattr(self, k, getattr(fresh, k))
        state = {}
        for name, st in d["state"].items():
            lost = [s for s in ("t",) + self._slots if s not in st]
            if lost:
                raise ValueError(f"{where}: the state of parameter {name!r} lacks {lost}")
            state[name] = {"t": int(st["t"]),
                           **{s: numpy.array(st[s], order="C", copy=True) for s in self._slots}}
        self._state = state
        self._plans.clear()
        self._bound.clear()

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({args}, backend={self.backend!r})"


def _host_copy(a):
    h = move_raw(a, _CPU)
    return h.copy() if h is a else h


class SGD(Optimizer):
    """In-place SGD: ``w -= learning_rate * g`` (defaults: learning_rate 1e-2).

    Takes the keyword arguments of :class:`Optimizer`. See also minpy.nn.optim.sgd,
    torch.optim.SGD.
    """

    update_rule = "sgd"

    def __init__(self, learning_rate=1e-2, **common):
        super().__init__(learning_rate, **common)

    def _kind(self):
        return "sgd"


class SGDMomentum(Optimizer):
    """In-place SGD with momentum, MinPy's form ``v = momentum*v - lr*g; w += v``;
    ``nesterov=True``: ``w += momentum*v - lr*g``. State: ``velocity``.

    Args:
        learning_rate: 1e-2 by default.
        momentum: in [0, 1), 0.9 by default.
        nesterov: Nesterov's look-ahead form.
        **common: the keyword arguments of :class:`Optimizer`.

    See also minpy.nn.optim.sgd_momentum, torch.optim.SGD.
    """

    update_rule = "sgd_momentum"
    _slots = ("velocity",)
    _hyper = ("momentum", "nesterov")

    def __init__(self, learning_rate=1e-2, momentum=0.9, nesterov=False, **common):
        super().__init__(learning_rate, **common)
        self.momentum = _real("SGDMomentum", "momentum", momentum, hi=1.0, hi_open=True)
        if not isinstance(nesterov, bool):
            raise TypeError(f"SGDMomentum: nesterov must be a bool, got {nesterov!r}")
        self.nesterov = nesterov

    def _kind(self):
        return "nesterov" if self.nesterov else "momentum"

    def _params(self, t, lr):
        return (self.momentum,)


class RMSProp(Optimizer):
    """In-place RMSProp: ``cache = decay_rate*cache + (1-decay_rate)*g**2;
    w -= lr*g / (sqrt(cache) + epsilon)``. State: ``cache``.

    Args:
        learning_rate: 1e-2; decay_rate: in [0, 1], 0.99; epsilon: 1e-8.
        **common: the keyword arguments of :class:`Optimizer`.

    See also minpy.nn.optim.rmsprop, torch.optim.RMSprop.
    """

    update_rule = "rmsprop"
    _slots = ("cache",)
    _hyper = ("decay_rate", "epsilon")

    def __init__(self, learning_rate=1e-2, decay_rate=0.99, epsilon=1e-8, **common):
        super().__init__(learning_rate, **common)
        self.decay_rate = _real("RMSProp", "decay_rate", decay_rate, hi=1.0)
        self.epsilon = _real("RMSProp", "epsilon", epsilon)

    def _kind(self):
        return "rms"

    def _params(self, t, lr):
        return (self.decay_rate, 1.0 - self.decay_rate, self.epsilon)


class AdaGrad(Optimizer):
    """In-place AdaGrad: ``cache += g**2; w -= lr*g / (sqrt(cache) + epsilon)``.

    Args:
        learning_rate: 1e-2; epsilon: 1e-8. State: ``cache``.
        **common: the keyword arguments of :class:`Optimizer`.

    See also minpy.nn.optim.adagrad, torch.optim.Adagrad.
    """

    update_rule = "adagrad"
    _slots = ("cache",)
    _hyper = ("epsilon",)

    def __init__(self, learning_rate=1e-2, epsilon=1e-8, **common):
        super().__init__(learning_rate, **common)
        self.epsilon = _real("AdaGrad", "epsilon", epsilon)

    def _kind(self):
        return "rms"

    def _params(self, t, lr):
        return (1.0, 1.0, self.epsilon)


class Adam(Optimizer):
    """In-place Adam with bias correction (MinPy's formula). State: ``m``, ``v`` and
    the update count ``t`` per parameter.

    Args:
        learning_rate: 1e-3; beta1: 0.9; beta2: 0.999 (each in [0, 1)); epsilon: 1e-8.
        **common: the keyword arguments of :class:`Optimizer`.

    See also minpy.nn.optim.adam, AdamW, torch.optim.Adam.
    """

    update_rule = "adam"
    _slots = ("m", "v")
    _hyper = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-8, **common):
        super().__init__(learning_rate, **common)
        owner = type(self).__name__
        self.beta1 = _real(owner, "beta1", beta1, hi=1.0, hi_open=True)
        self.beta2 = _real(owner, "beta2", beta2, hi=1.0, hi_open=True)
        self.epsilon = _real(owner, "epsilon", epsilon)

    def _kind(self):
        return "adam"

    def _decay(self, lr):
        return 1.0

    def _params(self, t, lr):
        b1, b2 = self.beta1, self.beta2
        return (b1, 1.0 - b1, b2, 1.0 - b2, 1.0 - b1 ** t, 1.0 - b2 ** t, self.epsilon,
                self._decay(lr))


class AdamW(Adam):
    """In-place AdamW: Adam with decoupled weight decay ``w *= 1 - lr*weight_decay``
    before each step (``weight_decay`` defaults to 0.01 and is not added to the
    gradient).

    See also minpy.nn.optim.adamw, torch.optim.AdamW.
    """

    update_rule = "adamw"

    def __init__(self, learning_rate=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 weight_decay=0.01, **common):
        super().__init__(learning_rate, beta1, beta2, epsilon, weight_decay=weight_decay,
                         **common)

    def _coupled_wd(self):
        return 0.0

    def _decay(self, lr):
        return 1.0 - lr * self.weight_decay


RULES = {"sgd": SGD, "sgd_momentum": SGDMomentum, "nesterov": SGDMomentum,
         "rmsprop": RMSProp, "adagrad": AdaGrad, "adam": Adam, "adamw": AdamW}


def create(update_rule, **config):
    """An in-place optimizer for ``update_rule`` with MinPy's config keys.

    Args:
        update_rule: one of ``'sgd', 'sgd_momentum', 'nesterov', 'rmsprop',
            'adagrad', 'adam', 'adamw'``.
        **config: the rule's hyper-parameters (``learning_rate``, ``momentum``,
            ``decay_rate``, ``epsilon``, ``beta1``, ``beta2`` ...) and the options of
            :class:`Optimizer` (``weight_decay``, ``clip_gradient``, ``clip_norm``,
            ``lr_schedule``, ``backend``).

    Returns:
        An :class:`Optimizer`.

    Raises:
        ValueError: unknown rule (the message lists the valid ones).
        TypeError: a config key the rule does not take.

    See also mxnet.optimizer.create.
    """
    cls = RULES.get(update_rule) if isinstance(update_rule, str) else None
    if cls is None:
        raise ValueError(f"optim.create: unknown update_rule {update_rule!r}; valid rules "
                         f"are {sorted(RULES)}")
    valid = set(_COMMON) | set(cls._hyper)
    unknown = sorted(set(config) - valid)
    if unknown:
        raise TypeError(f"optim.create: unknown config key(s) {unknown} for "
                        f"{update_rule!r}; valid keys are {sorted(valid)}")
    if update_rule == "nesterov":
        if config.get("nesterov", True) is not True:
            raise ValueError("optim.create: rule 'nesterov' with nesterov=False; use "
                             "'sgd_momentum'")
        config["nesterov"] = True
    return cls(**config)
