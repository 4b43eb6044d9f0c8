"""``minpy.mxnet.module_params``: the parameter and optimizer state of ``Module``.

:class:`ParamsMixin` holds what :class:`minpy.mxnet.module.Module` does with its
parameters: the module's own CPU copies (``get_params``, synced from the
executor after updates, as MXNet's), ``init_params``/``set_params`` with
MXNet's checks and initializers, and the optimizer (``init_optimizer``, its
state files). It expects of the class it is mixed into: ``_need`` (from
``BaseModule``), ``_exec`` (the bound Executor), ``_symbol``,
``_param_names``/``_aux_names``, ``_data_names``/``_label_names`` and
``_data_shapes``.
"""
import warnings

import numpy

from ..dispatch.context import cpu
from ..nn import checkpoint
from . import optimizer as mx_optimizer
from ..nn import optim
from ..nn.io.batch import batch_array
from .initializer import InitDesc, Uniform

__all__ = ["ParamsMixin"]


def host(value):
    """The values of ``value`` (a minpy Array or array-like) as a NumPy array."""
    return value.asnumpy() if hasattr(value, "asnumpy") else numpy.asarray(value)


class ParamsMixin:
    """Parameters (CPU copies, initialisation, assignment) and the optimizer of a Module."""

    _arg_params = _aux_params = _optimizer = _preload_opt_states = None
    _params_dirty = False

    @staticmethod
    def _zeros(like):
        return batch_array(numpy.zeros(tuple(like.shape), like.dtype), cpu())

    def _own_copies(self, method, names, given, bound, what):
        """CPU copies of ``given[name]`` for every name, checked against the bound arrays."""
        missing = [n for n in names if n not in given]
        if missing:
            raise RuntimeError(f"Module.{method}: {what} lacks {missing}")
        out = {}
        for n in names:
            value = numpy.array(host(given[n]), dtype=bound[n].dtype)
            if value.shape != tuple(bound[n].shape):
                raise ValueError(f"Module.{method}: {what}[{n!r}] has shape {value.shape}, "
                                 f"the symbol needs {tuple(bound[n].shape)}")
            out[n] = batch_array(value, cpu())
        return out

    # ------------------------------------------------------------ parameters
    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Set every parameter and auxiliary state: from ``arg_params``/``aux_params``
        where given, else with ``initializer(InitDesc(name, attrs), array)``.

        Ignored, with a warning, when already initialized (unless ``force_init``).

        Raises:
            RuntimeError: not bound; names missing from a given dict without
                ``allow_missing`` (all listed).
            ValueError: names the symbol lacks without ``allow_extra``; a value of
                the wrong shape; nothing to initialise a parameter with.
        """
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        self._need("init_params", params=False)
        attrs = self._symbol.attr_dict()
        for given, target, what in ((arg_params, self._arg_params, "arg_params"),
                                    (aux_params, self._aux_params, "aux_params")):
            self._check_given("init_params", given, target, what, allow_missing, allow_extra)
            for name in sorted(target):
                if given is not None and name in given:
                    self._assign("init_params", target[name], given[name], what, name)
                elif initializer is not None:
                    initializer(InitDesc(name, attrs.get(name)), target[name])
                elif given is None:
                    raise ValueError(f"Module.init_params: no initializer and no {what} to "
                                     f"set {name!r} from")
        self._exec.copy_params_from(self._arg_params, self._aux_params)
        self.params_initialized, self._params_dirty = True, False

    def _check_given(self, method, given, target, what, allow_missing, allow_extra):
        if given is None:
            return
        inputs = set(self._data_names) | set(self._label_names)
        extra = sorted(k for k in given if k not in target and k not in inputs)
        if extra and not allow_extra:
            raise ValueError(f"Module.{method}: {what} has {extra}, which the symbol does not "
                             f"take (allow_extra=True ignores them)")
        missing = sorted(n for n in target if n not in given)
        if missing and not allow_missing:
            raise RuntimeError(f"Module.{method}: {missing} are missing from {what} "
                               f"(allow_missing=True leaves them to the initializer)")

    @staticmethod
    def _assign(method, arr, value, what, name):
        value = host(value)
        if tuple(value.shape) != tuple(arr.shape):
            raise ValueError(f"Module.{method}: {what}[{name!r}] has shape "
                             f"{tuple(value.shape)}, the module's has {tuple(arr.shape)}")
        arr[...] = value.astype(arr.dtype, copy=False)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter and auxiliary-state values by name (``init_params`` with no
        initializer unless ``allow_missing``, in which case the names not given keep
        their values). Errors as :meth:`init_params`."""
        if not allow_missing:
            self.init_params(None, arg_params, aux_params, allow_missing, force_init,
                             allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._need("set_params", params=False)
        if self._params_dirty:
            self._sync_params_from_exec()
        for given, target, what in ((arg_params, self._arg_params, "arg_params"),
                                    (aux_params, self._aux_params, "aux_params")):
            self._check_given("set_params", given, target, what, True, allow_extra)
            for name in target:
                if given is not None and name in given:
                    self._assign("set_params", target[name], given[name], what, name)
        self._exec.copy_params_from(self._arg_params, self._aux_params)
        self.params_initialized, self._params_dirty = True, False

    def get_params(self):
        """``(arg_params, aux_params)``: dicts name -> CPU minpy Array, the module's own
        copies, brought up to date with the executor."""
        self._need("get_params", bound=False)
        if self._params_dirty:
            self._sync_params_from_exec()
        return self._arg_params, self._aux_params

    def _sync_params_from_exec(self):
        for own, bound in ((self._arg_params, self._exec.arg_dict),
                           (self._aux_params, self._exec.aux_dict)):
            for name, arr in own.items():
                arr[...] = host(bound[name])
        self._params_dirty = False

    # ------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Install the optimizer (ignored, with a warning, if one is installed).

        Args:
            kvstore: ``'local'``, ``'device'`` or None (one device: no KVStore, as MXNet).
            optimizer: ``'sgd'``, ``'adam'``, ``'rmsprop'``, ``'adagrad'``; a
                :class:`minpy.mxnet.optimizer.Optimizer`; or a ``minpy.nn.optim``
                optimizer (its gradients rescaled by ``1 / batch_size``).
            optimizer_params: dict (or pairs) of MXNet's keywords (``learning_rate``,
                ``momentum``, ``wd``, ``clip_gradient``, ``lr_scheduler`` ...);
                ``rescale_grad`` defaults to ``1 / batch_size``.
        Raises:
            RuntimeError: not bound or parameters not initialized.
            ValueError / TypeError: an unknown optimizer or keyword.
            NotImplementedError: a distributed or object KVStore.
        """
        self._need("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if kvstore is not None and (not isinstance(kvstore, str) or "dist" in kvstore):
            raise NotImplementedError(f"Module.init_optimizer: kvstore={kvstore!r} is not "
                                      f"supported; use 'local' or None on one device")
        rescale_grad = 1.0 / self._data_shapes[0].shape[0]
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = mx_optimizer.create(optimizer, sym=self._symbol,
                                            param_idx2name=dict(enumerate(self._param_names)),
                                            **params)
        elif isinstance(optimizer, mx_optimizer.Optimizer):
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(f"Optimizer created outside Module has rescale_grad "
                              f"{optimizer.rescale_grad}, not 1/batch_size = {rescale_grad}. "
                              f"Is this intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = dict(enumerate(self._param_names))
        elif isinstance(optimizer, optim.Optimizer):
            optimizer = mx_optimizer.FromMinpy(optimizer, rescale_grad)
        else:
            raise TypeError(f"Module.init_optimizer: optimizer must be a name, a "
                            f"minpy.mxnet.optimizer.Optimizer or a minpy.nn.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        self._optimizer, self.optimizer_initialized = optimizer, True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s installed optimizer."""
        shared_module._need("borrow_optimizer", optimizer=True)
        self._optimizer, self.optimizer_initialized = shared_module._optimizer, True

    def save_optimizer_states(self, fname):
        """Write the optimizer's state (counts, momenta ...) to ``fname``."""
        self._need("save_optimizer_states", bound=False, params=False, optimizer=True)
        checkpoint.save(fname, self._optimizer.state_dict())

    def load_optimizer_states(self, fname):
        """Restore an optimizer state written by :meth:`save_optimizer_states`."""
        self._need("load_optimizer_states", bound=False, params=False, optimizer=True)
        self._optimizer.load_state_dict(checkpoint.load(fname))
