"""``minpy.nn.optim.optimizer``: :class:`Optimizer`, the one base of minpy's optimizers.

An algorithm is a subclass in a file of its own (``sgd``, ``momentum``, ``rmsprop``,
``adagrad``, ``adam``): ``update_rule`` and ``_hyper`` (MinPy's rule name and config
keys; the defaults are its ``__init__``'s), ``_slots`` (state arrays per parameter),
:meth:`Optimizer.rule` (the update out of place, in the operations of an array module
``xp``) and ``_kind()``/``_kernel_params`` (the fused kernel of
:mod:`minpy.kernels.optim` running the same operations in place; ``None``: the rule
runs and its results are written back). Faces: ``step``/``update`` here; MinPy's
functional rules (:mod:`minpy.nn.optim.functional`); MXNet's ``mx.optimizer``
(:mod:`minpy.mxnet.optimizer`); autograd's :mod:`minpy.misc.optimizers`.
"""
import numpy

from ...core import tape as _tape
from ...core.saved import check_saved
from ...core.array import Array, wait
from ...core.execute import mutated
from ...dispatch.backend import backend_of
from ...dispatch.context import cpu
from ...dispatch.transfer import context_of, data_on, move_raw
from ...core.call import opaque_step
from ...kernels import optim as fused
from . import multi_tensor
from .functional import check_real, effective_grad
from .schedule import Schedule
from .schedule import from_state_dict as _schedule_from

__all__ = ["Optimizer"]

_BACKENDS = ("auto", "numba", "numpy")
_CPU = cpu(0)


class _Item:
    """One parameter of a step: its Array, buffer, gradient (same device and dtype)
    and state."""
    __slots__ = ("name", "w", "data", "g", "st")

    def __init__(self, name, w, data, g, st):
        self.name, self.w, self.data, self.g, self.st = name, w, data, g, st


class Optimizer:
    """Base of the optimizers: updates parameter Arrays in their own buffers.

    Args:
        learning_rate: the base learning rate (>= 0).
        weight_decay: L2 penalty added to the gradient (``g + weight_decay * w``;
            where ``decay_at`` says so, :class:`AdamW` decays the weights instead).
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
        decay_at: where ``weight_decay`` enters (class attribute): ``'gradient'``
            (added after clipping), ``'before_clip'`` (added before clipping, as
            MXNet's Adam and RMSProp) or ``'rule'`` (the rule applies it).

    Raises:
        ImportError: ``backend='numba'`` without numba (``pip install numba``).

    See also minpy.nn.optim.create, torch.optim.Optimizer, mxnet.optimizer.Optimizer.
    """

    update_rule = None
    decay_at = "gradient"
    _slots = ()          # state arrays per parameter (MinPy's config keys)
    _hyper = ()          # the rule's own hyper-parameters (MinPy's config keys)

    def __init__(self, learning_rate, weight_decay=0.0, clip_gradient=None, clip_norm=None,
                 lr_schedule=None, backend="auto"):
        owner = type(self).__name__
        self.base_learning_rate = check_real(owner, "learning_rate", learning_rate)
        self.weight_decay = check_real(owner, "weight_decay", weight_decay)
        self.clip_gradient = check_real(owner, "clip_gradient", clip_gradient, lo_open=True,
                                        none_ok=True)
        self.clip_norm = check_real(owner, "clip_norm", clip_norm, lo_open=True, none_ok=True)
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

    # ------------------------------------------------------------ the algorithm
    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """One update out of place: ``(next_w, new_state)``.

        Args:
            xp: the array module of ``w`` (``minpy.numpy``, ``numpy``, ``cupy``).
            hp: mapping of the rule's hyper-parameters (``_hyper`` keys).
            w: the weights; g: the effective gradient (clipped, with the decay
                unless ``decay_at == 'rule'``).
            state: dict slot -> array (zeros at first); lr, wd: this update's
                rate and decay; t: this update's count (1 for the first).
        """
        raise NotImplementedError(f"{cls.__name__}.rule")

    def _kind(self):
        """The fused kernel kind that runs the rule in place (None: the rule runs)."""
        return None

    def _kernel_params(self, t, lr, wd):
        """The kind's scalars for a parameter's ``t``-th update (1-based)."""
        return ()

    def _hp(self):
        return {k: getattr(self, k) for k in self._hyper}

    # ------------------------------------------------------------ rates
    def _lr_at(self, num_update):
        if self.lr_schedule is None:
            return self.base_learning_rate
        return float(self.lr_schedule(num_update, self.base_learning_rate))

    def _rates(self, name, t):
        """``(learning rate, weight decay)`` of parameter ``name``'s update after ``t``."""
        return self._lr_at(t), self.weight_decay

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
        value = check_real(type(self).__name__, "learning_rate", value)
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
        names, ws = list(params), list(params.values())
        # one primitive through the front door: under minpy.jit an opaque step whose
        # replay runs the optimizer again (its state and step count advance each call)
        opaque_step(where, lambda *a: self._apply(items), ws + [grads[k] for k in names], ws,
                    replay=lambda *a: self.step(dict(zip(names, a)),
                                                dict(zip(names, a[len(names):]))))

    def update(self, name, w, g):
        """Update one parameter ``w`` (a minpy.Array named ``name``) in place with
        gradient ``g``; ``clip_norm`` then bounds this gradient's own norm.

        See also step (one kernel call for all parameters).
        """
        where = f"{type(self).__name__}.update"
        items = [self._prepare(where, name, w, g)]
        opaque_step(where, lambda w, g: self._apply(items), (w, g), (w,),
                    replay=lambda w, g: self.update(name, w, g))

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
            check_saved(w, "an optimizer's in-place step")
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
        """The factor every gradient of this step is multiplied by first (``clip_norm``)."""
        if self.clip_norm is None:
            return 1.0
        return multi_tensor.norm_scale([it.g for it in items], self.clip_norm)

    def _kernel_terms(self, rescale, wd):
        """``(rescale, clip, wd)`` for the kernel's ``clip(rescale * g) + wd * w``; None
        where the decay must precede the clip (the gradient is then made first)."""
        if self.decay_at == "rule":
            return rescale, self.clip_gradient, 0.0
        if self.decay_at == "before_clip" and wd and self.clip_gradient is not None:
            return None
        return rescale, self.clip_gradient, wd

    def _apply(self, items):
        rescale = self._rescale(items)
        kind = self._kind()
        numba_on = multi_tensor.numba_on(self.backend)
        hypers, groups = {}, {}
        for it in items:
            d, t = it.data, it.st["t"]
            lr, wd = self._rates(it.name, t)
            terms = self._kernel_terms(rescale, wd)
            if kind is None or terms is None:       # the effective gradient made here
                b = backend_of(d)
                with b.device(context_of(d).device_id):
                    it.g = effective_grad(b.xp, it.g, d, rescale, self.clip_gradient, wd,
                                          self.decay_at)
                terms = (1.0, None, 0.0)
            if kind is None:
                self._run_rule(it, lr, wd)
                continue
            key = (d.dtype.str, t, lr, wd, terms)
            h = hypers.get(key)
            if h is None:
                h = hypers[key] = fused.hyper(kind, lr, *terms,
                                              self._kernel_params(t + 1, lr, wd), d.dtype)
            if numba_on and multi_tensor.numba_fits(d):
                groups.setdefault(key, []).append(it)
            else:
                multi_tensor.run_one(kind, d, it.g, [it.st[s] for s in self._slots], h,
                                     self.backend, self._scratch)
        for key, its in groups.items():
            multi_tensor.run_plan(self._plans, kind, key[0], [it.name for it in its],
                                  [it.data for it in its], [it.g for it in its],
                                  [tuple([it.st[s] for s in self._slots]) for it in its],
                                  hypers[key])
        for it in items:
            it.st["t"] += 1
            mutated(it.w)          # cached copies on other devices are stale now

    def _run_rule(self, it, lr, wd):
        """The rule's own expression with the buffer's array module, written back."""
        d = it.data
        b = backend_of(d)
        with b.device(context_of(d).device_id):
            state = {s: it.st[s] for s in self._slots}
            next_w, new_state = self.rule(b.xp, self._hp(), d, it.g, state, lr, wd,
                                          it.st["t"] + 1)
            for s in self._slots:
                it.st[s][...] = new_state[s]
            d[...] = next_w

    # ------------------------------------------------------------ saving
    def config(self):
        """The hyper-parameters as a dict of MinPy's config keys (``learning_rate`` is
        the base rate)."""
        out = {"learning_rate": self.base_learning_rate, "weight_decay": self.weight_decay,
               "clip_gradient": self.clip_gradient, "clip_norm": self.clip_norm}
        out.update(self._hp())
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
                "state": self._saved_state()}

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
        self._restore_state(where, d["state"])

    def _saved_state(self):
        """name -> ``{'t': count, slot: host numpy copy}``."""
        return {name: {"t": st["t"], **{s: _host_copy(st[s]) for s in self._slots}}
                for name, st in self._state.items()}

    def _restore_state(self, where, saved):
        state = {}
        for name, st in saved.items():
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
