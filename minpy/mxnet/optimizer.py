"""``minpy.mxnet.optimizer``: MXNet 1.x's optimizers (``mx.optimizer``) as ``Module`` runs them.

A face of :class:`minpy.nn.optim.Optimizer`: each class here is a subclass of
it, so its updates run the same in-place machinery (and the fused kernels of
the MinPy rule it extends). What MXNet adds, and :class:`Optimizer` reproduces:

- ``rescale_grad`` multiplies every gradient first (``Module`` sets it to
  ``1 / batch_size``, since loss layers such as SoftmaxOutput sum over the batch);
- ``clip_gradient`` bounds the rescaled gradient elementwise;
- ``wd`` is an L2 weight decay that by default applies only to parameters named
  ``*_weight`` or ``*_gamma`` (biases and BatchNorm shifts get none), and a
  variable's ``lr_mult``/``wd_mult`` attributes scale its rate and decay;
- ``lr_scheduler(num_update) -> lr``, where ``num_update`` counts the updates of
  the most-updated parameter, this one included; each parameter's count starts
  at ``begin_num_update`` (Adam's bias correction uses it).

:class:`SGD` is MinPy's momentum rule (the plain SGD kernel without momentum);
:class:`Adam` is MinPy's Adam with the decay added before the clip and the
epsilon added before the bias correction, as MXNet's. MXNet's :class:`RMSProp`
(epsilon inside the square root, Graves' centered form) and :class:`AdaGrad`
(decay outside the division) are rules of their own, written as every rule is.
:class:`FromMinpy` runs a ``minpy.nn.optim`` optimizer under ``Module``.
"""
import inspect
import pickle

import numpy

from ..core.array import Array
from ..dispatch.transfer import context_of
from ..nn import optim
from ..nn.optim.functional import check_real
from ..nn.optim.schedule import Schedule

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "RMSProp", "AdaGrad", "AdaDelta", "Ftrl", "Signum",
           "FromMinpy", "create", "register", "Updater", "get_updater"]


def _alias(attr, name, doc):
    """A property named ``name`` for attribute ``attr`` (set values checked as reals)."""
    def get(self):
        return getattr(self, attr)

    def put(self, value):
        setattr(self, attr, check_real(type(self).__name__, name, value))
    return property(get, put, doc=doc)


class Optimizer(optim.Optimizer):
    """MXNet's optimizer arguments over :class:`minpy.nn.optim.Optimizer`.

    Args:
        learning_rate: the base rate (default 0.01; the rule's default when None).
        rescale_grad: factor applied to each gradient first.
        wd: weight decay (see the module doc for which parameters it reaches).
        clip_gradient: elementwise bound on the rescaled gradient (None or 0: none).
        lr_scheduler: MXNet's ``callable(num_update) -> lr`` (``num_update`` counting
            the update being made; a ``base_lr`` attribute is set to
            ``learning_rate`` when both are given), or a
            :class:`minpy.nn.optim.schedule.Schedule` (scaling ``learning_rate``).
        param_idx2name: ``{index: name}`` of the parameters (its names get MXNet's
            default ``wd_mult`` 0 unless ending in ``_weight``/``_gamma``).
        sym: the Symbol whose variables' ``__lr_mult__``/``__wd_mult__`` apply.
        begin_num_update: the update count each parameter starts from.
        multi_precision, param_dict: accepted for MXNet's signature (no effect).
        **rule: the MinPy rule's own arguments (``momentum``, ``beta1`` ...).

    Attributes:
        lr, wd: the base rate and decay (``nn.optim``'s ``base_learning_rate`` and
            ``weight_decay``); learning_rate: the scheduler's rate at ``num_update``.
    """

    _default_lr = 0.01

    def __init__(self, learning_rate=None, rescale_grad=1.0, wd=0.0, clip_gradient=None,
                 lr_scheduler=None, param_idx2name=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None, **rule):
        lr = self._default_lr if learning_rate is None else learning_rate
        super().__init__(learning_rate=lr, weight_decay=wd, clip_gradient=clip_gradient or None,
                         **rule)
        self.rescale_grad = check_real(type(self).__name__, "rescale_grad", rescale_grad)
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None and learning_rate is not None and \
                hasattr(lr_scheduler, "base_lr"):
            lr_scheduler.base_lr = learning_rate
        self.idx2name = dict(param_idx2name or {})
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.begin_num_update = begin_num_update
        self.multi_precision = multi_precision
        self._step_lr = self.base_learning_rate
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------ MXNet's names
    lr = _alias("base_learning_rate", "lr", "The base learning rate.")
    wd = _alias("weight_decay", "wd", "The base weight decay.")

    @property
    def num_update(self):
        """MXNet's count: the most updates any parameter has had (from ``begin_num_update``)."""
        return max([self.begin_num_update] + [st["t"] for st in self._state.values()])

    @property
    def learning_rate(self):
        """The base rate now: the scheduler's at ``num_update``, else ``lr``."""
        return self._lr_at(self.num_update)

    @learning_rate.setter
    def learning_rate(self, lr):
        self.set_learning_rate(lr)

    def set_learning_rate(self, lr):
        """Set the base rate (not allowed with a scheduler, as MXNet)."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined; "
                              "set_learning_rate would be ignored")
        self.lr = lr

    def _multipliers(self, key):
        out = {}
        if self.sym_info:
            attrs, arg_names = self.sym_info
            for name in arg_names:
                if key in attrs.get(name, {}):
                    out[name] = float(attrs[name][key])
        return out

    def set_lr_mult(self, args_lr_mult):
        """Rate multipliers by parameter name: the symbol's ``lr_mult``s, then these."""
        self.lr_mult = self._multipliers("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Decay multipliers by name: 0 for named parameters not ending in ``_weight``
        or ``_gamma``, then the symbol's ``wd_mult``s, then these."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not n.endswith(("_weight", "_gamma"))}
        self.wd_mult.update(self._multipliers("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    # ------------------------------------------------------------ the base's hooks
    def _lr_at(self, num_update):
        sched = self.lr_scheduler
        if sched is None:
            return self.base_learning_rate
        if isinstance(sched, Schedule):     # minpy's: (updates before this one, base rate)
            return float(sched(max(num_update - 1, 0), self.base_learning_rate))
        return sched(num_update)

    def _rates(self, name, t):
        def mult(table):
            return table.get(name, table.get(self.idx2name.get(name), 1.0))
        return self._step_lr * mult(self.lr_mult), self.weight_decay * mult(self.wd_mult)

    def _rescale(self, items):
        return self.rescale_grad

    def _state_for(self, where, name, data, ctx):
        fresh = name not in self._state
        st = super()._state_for(where, name, data, ctx)
        if fresh:
            st["t"] = self.begin_num_update
        return st

    # ------------------------------------------------------------ updates
    def step(self, params, grads):
        """MXNet's update of every parameter of ``params`` (dict name -> Array, in
        place) with ``grads``: the counts advance, then the scheduler's rate at the
        new ``num_update`` scaled by each parameter's ``lr_mult`` applies.

        Raises as :meth:`minpy.nn.optim.Optimizer.step`.
        """
        if isinstance(params, dict):
            counts = [self._state[n]["t"] if n in self._state else self.begin_num_update
                      for n in params]
            self._step_lr = self._lr_at(max([self.num_update] + [c + 1 for c in counts]))
        super().step(params, grads)

    def update(self, index, weight, grad, state=None):
        """MXNet's ``update``: parameter ``index`` (a name or index; or a list of them
        with lists of weights and gradients, as ``Module`` calls it) updated in place.

        Args:
            index, weight, grad: one parameter or lists of them.
            state: None, or what :meth:`create_state` returned for ``index`` (the
                optimizer keeps each parameter's state itself).

        Raises:
            ValueError: lists of different lengths, a repeated index, or a state that
                is not this optimizer's for the index.
        """
        where = f"{type(self).__name__}.update"
        many = isinstance(index, (list, tuple))
        names, ws, gs = (list(index), list(weight), list(grad)) if many else \
            ([index], [weight], [grad])
        if not len(names) == len(ws) == len(gs) or len(set(names)) != len(names):
            raise ValueError(f"{where}: needs distinct indices and one weight and one "
                             f"gradient each; got {len(names)} indices ({len(set(names))} "
                             f"distinct), {len(ws)} weights, {len(gs)} gradients")
        if state is not None:
            for n, s in zip(names, state if many else [state]):
                if s is not None and s is not self._state.get(n):
                    raise ValueError(f"{where}: the state given for {n!r} is not the one "
                                     "create_state made; the optimizer keeps the states")
        self.step(dict(zip(names, ws)), dict(zip(names, gs)))

    def create_state(self, index, weight):
        """The state of parameter ``index`` (made as zeros for a new one): a dict of its
        update count ``'t'`` and state arrays, kept by the optimizer.

        Raises:
            TypeError: ``weight`` is not a minpy Array.
        """
        if type(weight) is not Array:
            raise TypeError(f"{type(self).__name__}.create_state: weight must be a "
                            f"minpy.Array, got {type(weight).__name__}")
        where = f"{type(self).__name__}.create_state"
        return self._state_for(where, index, weight._data, context_of(weight._data))

    # ------------------------------------------------------------ saving
    def state_dict(self):
        """Update counts and the rule's state (host arrays), for
        ``Module.save_optimizer_states``."""
        return {"rule": type(self).__name__, "state": self._saved_state()}

    def load_state_dict(self, state):
        """Restore a :meth:`state_dict`.

        Raises:
            ValueError: the state is of another rule or lacks an array.
        """
        where = f"{type(self).__name__}.load_state_dict"
        rule = state.get("rule") if isinstance(state, dict) else None
        if rule != type(self).__name__:
            raise ValueError(f"{where}: the state is for {rule!r}")
        self._restore_state(where, state["state"])


class SGD(Optimizer, optim.SGDMomentum):
    """MXNet's SGD: ``g = clip(rescale_grad * grad) + wd * w``; with momentum
    ``mom = momentum * mom - lr * g; w += mom``, else ``w -= lr * g``."""

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(momentum=momentum, **kwargs)
        if not self.momentum:
            self._slots = ()

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """MinPy's momentum rule, or ``w - lr * g`` without momentum."""
        if not hp["momentum"]:
            return optim.SGD.rule(xp, hp, w, g, state, lr, wd, t)
        return super().rule(xp, hp, w, g, state, lr, wd, t)

    def _kind(self):
        return "momentum" if self.momentum else "sgd"


class Adam(Optimizer, optim.Adam):
    """MXNet's Adam: ``g = clip(rescale_grad * grad + wd * w)``, moments ``m``, ``v``,
    ``w -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + epsilon)``."""

    _default_lr = 0.001
    decay_at = "before_clip"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, beta1=beta1, beta2=beta2,
                         epsilon=epsilon, **kwargs)

    @classmethod
    def _epsilon(cls, hp, t):
        # MXNet adds epsilon to sqrt(v), before the bias correction: the same step
        # as MinPy's formula with this epsilon
        return hp["epsilon"] / numpy.sqrt(1.0 - hp["beta2"] ** t)


class RMSProp(Optimizer):
    """MXNet's RMSProp: ``g = clip(rescale_grad * grad + wd * w)``,
    ``n = gamma1 * n + (1 - gamma1) * g**2``, ``w -= lr * g / sqrt(n + epsilon)``;
    ``centered=True`` is Graves' form with momentum ``gamma2``; ``clip_weights``
    bounds the weights after the step."""

    _default_lr = 0.001
    decay_at = "before_clip"
    _hyper = ("gamma1", "gamma2", "epsilon", "centered", "clip_weights")

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = check_real("RMSProp", "gamma1", gamma1, hi=1.0)
        self.gamma2 = check_real("RMSProp", "gamma2", gamma2, hi=1.0)
        self.epsilon = check_real("RMSProp", "epsilon", epsilon)
        self.centered = bool(centered)
        self.clip_weights = check_real("RMSProp", "clip_weights", clip_weights or None,
                                       lo_open=True, none_ok=True)
        self._slots = ("n", "g", "delta") if centered else ("n",)

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """MXNet's RMSProp (see the class; Optimizer.rule for the arguments)."""
        g1, eps = hp["gamma1"], hp["epsilon"]
        n = (1 - g1) * (g * g) + g1 * state["n"]
        new = {"n": n}
        if hp["centered"]:
            mean = (1 - g1) * g + g1 * state["g"]
            delta = hp["gamma2"] * state["delta"] - lr * (g / xp.sqrt(n - mean * mean + eps))
            w = w + delta
            new.update(g=mean, delta=delta)
        else:
            w = w - lr * (g / xp.sqrt(n + eps))
        if hp["clip_weights"]:
            w = xp.clip(w, -hp["clip_weights"], hp["clip_weights"])
        return w, new


class AdaGrad(Optimizer):
    """MXNet's AdaGrad: ``g = clip(rescale_grad * grad)``, ``h += g**2``,
    ``w -= lr * (g / sqrt(h + eps) + wd * w)``."""

    decay_at = "rule"
    _slots = ("history",)
    _hyper = ("float_stable_eps",)

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = check_real("AdaGrad", "eps", eps)
        if kwargs.get("clip_gradient") == 0:
            self.clip_gradient = 0.0      # MXNet's AdaGrad clips whenever it is not None

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """MXNet's AdaGrad (see the class; Optimizer.rule for the arguments)."""
        h = state["history"] + g * g
        return w - lr * (g / xp.sqrt(h + hp["float_stable_eps"]) + w * wd), {"history": h}


class FromMinpy(Optimizer):
    """A ``minpy.nn.optim`` optimizer under ``Module``: the gradients are multiplied by
    ``rescale_grad``, then ``inner.step`` applies its own rate, decay and schedule."""

    def __init__(self, inner, rescale_grad=1.0):
        super().__init__(learning_rate=inner.base_learning_rate, rescale_grad=rescale_grad)
        self.inner = inner

    @property
    def num_update(self):
        """The inner optimizer's ``num_update``."""
        return self.inner.num_update

    @property
    def learning_rate(self):
        """The inner optimizer's ``learning_rate``."""
        return self.inner.learning_rate

    def step(self, params, grads):
        """``inner.step`` with the gradients rescaled."""
        r = self.rescale_grad
        if isinstance(grads, dict) and r != 1.0:
            grads = {n: g * r for n, g in grads.items()}
        self.inner.step(params, grads)

    def state_dict(self):
        """The inner optimizer's :meth:`~minpy.nn.optim.Optimizer.state_dict`."""
        return self.inner.state_dict()

    def load_state_dict(self, state):
        """Restore the inner optimizer's state."""
        self.inner.load_state_dict(state)


class NAG(Optimizer):
    """MXNet's NAG (its ``nag_mom_update`` kernel): ``g = clip(rescale_grad * grad)``;
    with momentum ``m = momentum * mom``, ``w' = w + momentum * m - (1 + momentum) * lr *
    (g + wd * w)``, ``mom = m - lr * (g + wd * w')`` (the new weight: MXNet's kernel runs
    in place); without, SGD's ``w -= lr * (g + wd * w)``."""

    decay_at = "rule"
    _hyper = ("momentum",)

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = check_real("NAG", "momentum", momentum)
        self._slots = ("mom",) if self.momentum else ()

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """MXNet's NAG (see the class; Optimizer.rule for the arguments)."""
        if not hp["momentum"]:
            return w - lr * (g + wd * w), {}
        mo = hp["momentum"]
        mom = mo * state["mom"]            # MXNet's nag_mom_update kernel, lr inside mom
        new = w + mo * mom - (1.0 + mo) * lr * (g + wd * w)
        # the kernel writes the weight in place before it updates mom: mom's decay term
        # reads the new weight (as MXNet 1.9.1 computes)
        return new, {"mom": mom - lr * (g + wd * new)}


class AdaDelta(Optimizer):
    """MXNet's AdaDelta: ``g = clip(rescale_grad * grad)``,
    ``acc_g = rho * acc_g + (1 - rho) * g**2``,
    ``d = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g``,
    ``acc_delta = rho * acc_delta + (1 - rho) * d**2``, ``w -= d + wd * w``
    (``learning_rate`` takes no part, as in MXNet)."""

    decay_at = "rule"
    _slots = ("acc_g", "acc_delta")
    _hyper = ("rho", "epsilon")

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = check_real("AdaDelta", "rho", rho, hi=1.0)
        self.epsilon = check_real("AdaDelta", "epsilon", epsilon)

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """MXNet's AdaDelta (see the class; Optimizer.rule for the arguments)."""
        rho, eps = hp["rho"], hp["epsilon"]
        acc_g = rho * state["acc_g"] + (1.0 - rho) * g * g
        delta = xp.sqrt(state["acc_delta"] + eps) / xp.sqrt(acc_g + eps) * g
        acc_delta = rho * state["acc_delta"] + (1.0 - rho) * delta * delta
        return w - (delta + wd * w), {"acc_g": acc_g, "acc_delta": acc_delta}


class Ftrl(Optimizer):
    """MXNet's Ftrl: ``g = clip(rescale_grad * grad)``,
    ``z += g - (sqrt(n + g**2) - sqrt(n)) * w / lr``, ``n += g**2``,
    ``w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)``."""

    _default_lr = 0.1
    decay_at = "rule"
    _slots = ("z", "n")
    _hyper = ("lamda1", "beta")

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = check_real("Ftrl", "lamda1", lamda1)
        self.beta = check_real("Ftrl", "beta", beta)

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """MXNet's Ftrl (see the class; Optimizer.rule for the arguments)."""
        n0 = state["n"]
        z = state["z"] + g - (xp.sqrt(n0 + g * g) - xp.sqrt(n0)) * w / lr
        n = n0 + g * g
        l1 = hp["lamda1"]
        w = (xp.sign(z) * l1 - z) / ((hp["beta"] + xp.sqrt(n)) / lr + wd) * (xp.abs(z) > l1)
        return w, {"z": z, "n": n}


class Signum(Optimizer):
    """MXNet's Signum: ``g = clip(rescale_grad * grad) + wd * w``; with momentum
    ``mom = momentum * mom + (1 - momentum) * g``, ``w = (1 - lr * wd_lh) * w -
    lr * sign(mom)``; without (signSGD), ``w = (1 - lr * wd) * w - lr * sign(g)`` (MXNet's
    ``signsgd_update``: ``wd`` shrinks the weights, ``wd_lh`` is unused)."""

    decay_at = "rule"
    _hyper = ("momentum", "wd_lh")

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = check_real("Signum", "momentum", momentum, hi=1.0)
        self.wd_lh = check_real("Signum", "wd_lh", wd_lh)
        self._slots = ("mom",) if self.momentum else ()

    @classmethod
    def rule(cls, xp, hp, w, g, state, lr, wd, t):
        """MXNet's Signum (see the class; Optimizer.rule for the arguments)."""
        if not hp["momentum"]:      # MXNet's signsgd_update: the decay shrinks w
            return (1.0 - lr * wd) * w - lr * xp.sign(g), {}
        g = g + wd * w
        shrink = 1.0 - lr * hp["wd_lh"]
        mom = hp["momentum"] * state["mom"] + (1.0 - hp["momentum"]) * g
        return shrink * w - lr * xp.sign(mom), {"mom": mom}


_RULES = {"sgd": SGD, "nag": NAG, "adam": Adam, "rmsprop": RMSProp, "adagrad": AdaGrad,
          "adadelta": AdaDelta, "ftrl": Ftrl, "signum": Signum}


def register(klass):
    """Register an :class:`Optimizer` subclass under its lower-cased class name, for
    :func:`create` and ``Module.init_optimizer(optimizer='name')``; returns it (a
    decorator, as MXNet's ``mx.optimizer.register`` / ``Optimizer.register``).

    Raises:
        TypeError: ``klass`` is not an Optimizer subclass.
    """
    if not (isinstance(klass, type) and issubclass(klass, Optimizer)):
        raise TypeError(f"optimizer.register: expected a subclass of "
                        f"minpy.mxnet.optimizer.Optimizer, got {klass!r}")
    _RULES[klass.__name__.lower()] = klass
    return klass




class Updater:
    """MXNet's updater: ``updater(index, grad, weight)`` runs ``optimizer.update(index,
    weight, grad)`` (the optimizer keeps each index's state), as ``KVStore.set_updater``
    and ``get_updater`` use it.

    See also mxnet.optimizer.Updater.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def __call__(self, index, grad, weight):
        self.optimizer.update(index, weight, grad)

    def get_states(self, dump_optimizer=False):
        """The optimizer's state (pickled bytes, as MXNet's)."""
        return pickle.dumps(self.optimizer.state_dict())

    def set_states(self, states):
        """Restore :meth:`get_states`."""
        self.optimizer.load_state_dict(pickle.loads(states))


def get_updater(optimizer):
    """An :class:`Updater` over ``optimizer``.

    See also mxnet.optimizer.get_updater.
    """
    return Updater(optimizer)


def _accepted(cls):
    names = set()
    for klass in cls.__mro__:
        if issubclass(klass, Optimizer) and "__init__" in vars(klass):
            names |= {p.name for p in inspect.signature(klass.__init__).parameters.values()
                      if p.name != "self" and p.kind is not p.VAR_KEYWORD}
    return names


def create(name, **kwargs):
    """An MXNet-style optimizer by name (``'sgd'``, ``'nag'``, ``'adam'``, ``'rmsprop'``,
    ``'adagrad'``, ``'adadelta'``, ``'ftrl'``, ``'signum'``, or a :func:`register`-ed one;
    case-insensitive) with MXNet's keyword arguments.

    Raises:
        ValueError: an unknown name (listing the known ones).
        TypeError: a keyword the rule does not take (listing those it takes).
    """
    cls = _RULES.get(name.lower()) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"optimizer {name!r} is not supported by minpy's Module; choose "
                         f"one of {sorted(_RULES)} (or pass a minpy.nn.optim optimizer)")
    unknown = sorted(set(kwargs) - _accepted(cls))
    if unknown:
        raise TypeError(f"optimizer {name!r} does not take {unknown}; it takes "
                        f"{sorted(_accepted(cls))}")
    return cls(**kwargs)


# MXNet's class-level names: Optimizer.register, Optimizer.create_optimizer
Optimizer.register = staticmethod(register)
Optimizer.create_optimizer = staticmethod(create)
