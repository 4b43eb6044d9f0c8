"""``minpy.mxnet.optimizer``: MXNet 1.x's optimizers (``mx.optimizer``) as ``Module`` runs them.

What MXNet adds to an update rule, and this module reproduces:

- ``rescale_grad`` multiplies every gradient first (``Module`` sets it to
  ``1 / batch_size``, since loss layers such as SoftmaxOutput sum over the batch);
- ``clip_gradient`` bounds the rescaled gradient elementwise;
- ``wd`` is an L2 weight decay that by default applies only to parameters named
  ``*_weight`` or ``*_gamma`` (biases and BatchNorm shifts get none), and a
  variable's ``lr_mult``/``wd_mult`` attributes scale its rate and decay;
- ``lr_scheduler(num_update) -> lr``, where ``num_update`` counts the updates of
  the most-updated parameter.

:class:`SGD` (with momentum) and :class:`Adam` run the fused in-place kernels of
:mod:`minpy.nn.optim.optimizers`; :class:`RMSProp` and :class:`AdaGrad` put the
epsilon inside the square root (and AdaGrad the decay outside the division)
as MXNet does, which those kernels do not, so they are written here with minpy
array operations. :class:`FromMinpy` runs a ``minpy.nn.optim`` optimizer under
``Module`` (rescaling the gradients, its own rate and decay otherwise).
"""
import inspect

import numpy

from .. import numpy as mnp
from ..nn.optim import optimizers
from ..nn.optim.schedule import Schedule

__all__ = ["Optimizer", "SGD", "Adam", "RMSProp", "AdaGrad", "FromMinpy", "create"]


class Optimizer:
    """Base: MXNet's rescaling, clipping, per-parameter rate/decay and update counts.

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
        begin_num_update: the update count to start from.

    Subclasses implement ``_apply(names, weights, grads, lrs, wds)``.
    """

    _default_lr = 0.01

    def __init__(self, learning_rate=None, rescale_grad=1.0, wd=0.0, clip_gradient=None,
                 lr_scheduler=None, param_idx2name=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = float(rescale_grad)
        self.wd = float(wd)
        self.clip_gradient = clip_gradient
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None and learning_rate is not None and \
                hasattr(lr_scheduler, "base_lr"):
            lr_scheduler.base_lr = learning_rate
        self.lr = self._default_lr if learning_rate is None else float(learning_rate)
        self.idx2name = dict(param_idx2name or {})
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.begin_num_update = self.num_update = begin_num_update
        self.multi_precision = multi_precision
        self._counts = {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    @property
    def learning_rate(self):
        """The base rate now: the scheduler's at ``num_update``, else ``lr``."""
        sched = self.lr_scheduler
        if sched is None:
            return self.lr
        if isinstance(sched, Schedule):     # minpy's: (updates before this one, base rate)
            return float(sched(max(self.num_update - 1, 0), self.lr))
        return sched(self.num_update)

    def set_learning_rate(self, lr):
        """Set the base rate (not allowed with a scheduler, as MXNet)."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined; "
                              "set_learning_rate would be ignored")
        self.lr = float(lr)

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

    def update(self, names, weights, grads):
        """Update ``weights`` (minpy Arrays, in place) from ``grads``, one per name."""
        for n in names:
            self._counts[n] = self._counts.get(n, self.begin_num_update) + 1
            self.num_update = max(self.num_update, self._counts[n])
        lr = self.learning_rate
        lrs = [lr * self.lr_mult.get(n, 1.0) for n in names]
        wds = [self.wd * self.wd_mult.get(n, 1.0) for n in names]
        self._apply(list(names), list(weights), list(grads), lrs, wds)

    def _apply(self, names, weights, grads, lrs, wds):
        raise NotImplementedError(f"{type(self).__name__}._apply")

    def _rescaled(self, g):
        return g if self.rescale_grad == 1.0 else g * self.rescale_grad

    def _clipped(self, g):
        c = self.clip_gradient
        return g if not c else mnp.clip(g, -c, c)

    # ------------------------------------------------------------ saving
    def state_dict(self):
        """Update counts and the rule's state (host arrays), for ``Module.save_optimizer_states``."""
        return {"rule": type(self).__name__, "counts": dict(self._counts),
                "num_update": self.num_update, "state": self._rule_state()}

    def load_state_dict(self, state):
        """Restore a :meth:`state_dict`.

        Raises:
            ValueError: the state is of another rule.
        """
        if state.get("rule") != type(self).__name__:
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state is for "
                             f"{state.get('rule')!r}")
        self._counts = dict(state["counts"])
        self.num_update = state["num_update"]
        self._load_rule_state(state["state"])

    def _rule_state(self):
        return {}

    def _load_rule_state(self, state):
        pass


class _Fused(Optimizer):
    """A rule run by an in-place optimizer of :mod:`minpy.nn.optim.optimizers` (``self._inner``):
    parameters sharing a rate and a decay are stepped together."""

    _inner = None

    def _step(self, names, weights, grads, lr, wd):
        self._inner.learning_rate = lr
        self._inner.weight_decay = wd
        self._inner.step(dict(zip(names, weights)), dict(zip(names, grads)))

    def _apply(self, names, weights, grads, lrs, wds):
        groups = {}
        for item in zip(names, weights, self._effective(weights, grads, wds), lrs, wds):
            groups.setdefault(item[3:], []).append(item[:3])
        for (lr, wd), items in groups.items():
            n, w, g = zip(*items)
            self._step(list(n), list(w), list(g), lr, self._kernel_wd(wd))

    def _rule_state(self):
        return self._inner.state_dict()

    def _load_rule_state(self, state):
        self._inner.load_state_dict(state)


class SGD(_Fused):
    """MXNet's SGD: ``g = clip(rescale_grad * grad) + wd * w``; with momentum
    ``mom = momentum * mom - lr * g; w += mom``, else ``w -= lr * g``."""

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = float(momentum)
        clip = self.clip_gradient or None
        self._inner = (optimizers.SGDMomentum(momentum=self.momentum, clip_gradient=clip)
                       if self.momentum > 0 else optimizers.SGD(clip_gradient=clip))

    def _effective(self, weights, grads, wds):
        return [self._rescaled(g) for g in grads]     # the kernel clips and adds the decay

    def _kernel_wd(self, wd):
        return wd


class _MXNetAdam(optimizers.Adam):
    """Adam whose epsilon is added to ``sqrt(v)`` before the bias correction, as MXNet's
    ``lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + epsilon)``."""

    def _params(self, t, lr):
        p = list(super()._params(t, lr))
        p[6] = self.epsilon / numpy.sqrt(1.0 - self.beta2 ** t)
        return tuple(p)


class Adam(_Fused):
    """MXNet's Adam: ``g = clip(rescale_grad * grad + wd * w)``, moments ``m``, ``v``,
    ``w -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + epsilon)``."""

    _default_lr = 0.001

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self._inner = _MXNetAdam(beta1=beta1, beta2=beta2, epsilon=epsilon)

    def _effective(self, weights, grads, wds):
        # MXNet adds the decay before clipping, the fused kernel after: do it here
        return [self._clipped(self._rescaled(g) + wd * w if wd else self._rescaled(g))
                for w, g, wd in zip(weights, grads, wds)]

    def _kernel_wd(self, wd):
        return 0.0


class _Elementwise(Optimizer):
    """A rule written with minpy array operations; ``self._states[name]`` is a list of
    Arrays shaped like the parameter, made by ``_new_state(w)``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._states = {}

    def _apply(self, names, weights, grads, lrs, wds):
        for name, w, g, lr, wd in zip(names, weights, grads, lrs, wds):
            st = self._states.get(name)
            if st is None or tuple(st[0].shape) != tuple(w.shape):
                st = self._states[name] = [mnp.zeros_like(w) for _ in range(self._num_states)]
            elif st[0].context != w.context:        # loaded from a file: on the host
                st = self._states[name] = [s.as_in_context(w.context) for s in st]
            self._update_one(w, g, st, lr, wd)

    def _rule_state(self):
        return {name: [s.asnumpy().copy() for s in st] for name, st in self._states.items()}

    def _load_rule_state(self, state):
        self._states = {name: [mnp.array(s) for s in st] for name, st in state.items()}


class RMSProp(_Elementwise):
    """MXNet's RMSProp: ``g = clip(rescale_grad * grad + wd * w)``,
    ``n = gamma1 * n + (1 - gamma1) * g**2``, ``w -= lr * g / sqrt(n + epsilon)``;
    ``centered=True`` is Graves' form with momentum ``gamma2``; ``clip_weights``
    bounds the weights after the step."""

    _default_lr = 0.001

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered, self.clip_weights = centered, clip_weights
        self._num_states = 3 if centered else 1

    def _update_one(self, w, g, st, lr, wd):
        g = self._clipped(self._rescaled(g) + wd * w if wd else self._rescaled(g))
        n = st[0]
        n[...] = (1 - self.gamma1) * (g * g) + self.gamma1 * n
        if self.centered:
            mean, delta = st[1], st[2]
            mean[...] = (1 - self.gamma1) * g + self.gamma1 * mean
            delta[...] = self.gamma2 * delta - lr * (g / mnp.sqrt(n - mean * mean +
                                                                  self.epsilon))
            w[...] = w + delta
        else:
            w[...] = w - lr * (g / mnp.sqrt(n + self.epsilon))
        if self.clip_weights:
            w[...] = mnp.clip(w, -self.clip_weights, self.clip_weights)


class AdaGrad(_Elementwise):
    """MXNet's AdaGrad: ``g = clip(rescale_grad * grad)``, ``h += g**2``,
    ``w -= lr * (g / sqrt(h + eps) + wd * w)``."""

    _num_states = 1

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def _clipped(self, g):
        c = self.clip_gradient      # MXNet's AdaGrad clips whenever it is not None
        return g if c is None else mnp.clip(g, -c, c)

    def _update_one(self, w, g, st, lr, wd):
        g = self._clipped(self._rescaled(g))
        h = st[0]
        h[...] = h + g * g
        w[...] = w - lr * (g / mnp.sqrt(h + self.float_stable_eps) + w * wd)


class FromMinpy(Optimizer):
    """A ``minpy.nn.optim`` optimizer under ``Module``: the gradients are multiplied by
    ``rescale_grad``, then ``inner.step`` applies its own rate, decay and schedule."""

    def __init__(self, inner, rescale_grad=1.0):
        super().__init__(learning_rate=inner.base_learning_rate, rescale_grad=rescale_grad)
        self.inner = inner

    def _apply(self, names, weights, grads, lrs, wds):
        self.inner.step(dict(zip(names, weights)),
                        {n: self._rescaled(g) for n, g in zip(names, grads)})

    def _rule_state(self):
        return self.inner.state_dict()

    def _load_rule_state(self, state):
        self.inner.load_state_dict(state)


_RULES = {"sgd": SGD, "adam": Adam, "rmsprop": RMSProp, "adagrad": AdaGrad}


def _accepted(cls):
    names = set()
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            names |= {p for p in inspect.signature(klass.__init__).parameters
                      if p not in ("self", "kwargs")}
    return names


def create(name, **kwargs):
    """An MXNet-style optimizer by name (``'sgd'``, ``'adam'``, ``'rmsprop'``, ``'adagrad'``;
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
