"""``minpy.mxnet.module.module_params``: the parameter and optimizer state of ``Module``.

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

from ...dispatch.context import cpu
from ... import kvstore as _kvstore
from ...nn import checkpoint
from .. import optimizer as mx_optimizer
from ...nn import optim
from ...nn.io.batch import batch_array
from .executor_group import batch_axis
from ..initializer import InitDesc, Uniform

__all__ = ["ParamsMixin"]


def host(value):
    """The values of ``value`` (a minpy Array or array-like) as a NumPy array."""
    return value.asnumpy() if hasattr(value, "asnumpy") else numpy.asarray(value)


class ParamsMixin:
    """Parameters (CPU copies, initialisation, assignment) and the optimizer of a Module."""

    _arg_params = _aux_params = _optimizer = _preload_opt_states = _kvstore = None
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
        pairs = ((arg_params, self._arg_params, "arg_params"),
                 (aux_params, self._aux_params, "aux_params"))
        self._check_given("init_params", pairs, allow_missing, allow_extra)
        for given, target, what in pairs:
            for name in sorted(target):
                if given is not None and name in given:
                    self._assign("init_params", target[name], given[name], what, name)
                elif initializer is not None:
                    initializer(InitDesc(name, attrs.get(name)), target[name])
                elif given is None:
                    raise ValueError(f"Module.init_params: no initializer and no {what} to "
                                     f"set {name!r} from")
        self._copy_params_to_exec()
        self.params_initialized, self._params_dirty = True, False

    def _check_given(self, method, pairs, allow_missing, allow_extra):
        """MXNet's order: a name missing from the given dicts first (RuntimeError, as
        ``init_params``' ``"... is not presented"``), then names the symbol lacks
        (ValueError, as ``Executor.copy_params_from``)."""
        if not allow_missing:
            for given, target, what in pairs:
                missing = sorted(n for n in target if given is not None and n not in given)
                if missing:
                    raise RuntimeError(f"Module.{method}: {missing} are missing from {what} "
                                       f"(allow_missing=True leaves them to the initializer)")
        if allow_extra:
            return
        inputs = set(self._data_names) | set(self._label_names)
        for given, target, what in pairs:
            extra = sorted(k for k in given or () if k not in target and k not in inputs)
            if extra:
                raise ValueError(f"Module.{method}: {what} has {extra}, which the symbol does "
                                 f"not take (allow_extra=True ignores them)")

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
        pairs = ((arg_params, self._arg_params, "arg_params"),
                 (aux_params, self._aux_params, "aux_params"))
        self._check_given("set_params", pairs, True, allow_extra)
        for given, target, what in pairs:
            for name in target:
                if given is not None and name in given:
                    self._assign("set_params", target[name], given[name], what, name)
        self._copy_params_to_exec()
        self.params_initialized, self._params_dirty = True, False

    def _copy_params_to_exec(self):
        """The module's values into its executor: the parameters of its symbol only (a
        bucket's module shares the default bucket's dicts, which may hold more)."""
        self._exec.copy_params_from({n: self._arg_params[n] for n in self._param_names},
                                    {n: self._aux_params[n] for n in self._aux_names})

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
                if name in bound:       # a bucket's module shares a larger module's dicts
                    arr[...] = host(bound[name])
        self._params_dirty = False

    # ------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Install the optimizer (ignored, with a warning, if one is installed).

        Args:
            kvstore: ``'local'``, ``'device'`` or None (one device: no KVStore, as MXNet);
                a ``dist_*`` kind, or a KVStore object (``minpy.kvstore.create``), which
                then holds the weights and applies the optimizer on each push (MXNet's
                ``update_on_kvstore``; ``dist_*sync``: ``rescale_grad`` over all workers).
            optimizer: ``'sgd'``, ``'adam'``, ``'rmsprop'``, ``'adagrad'``; a
                :class:`minpy.mxnet.optimizer.Optimizer`; or a ``minpy.nn.optim``
                optimizer (its gradients rescaled by ``1 / batch_size``).
            optimizer_params: dict (or pairs) of MXNet's keywords (``learning_rate``,
                ``momentum``, ``wd``, ``clip_gradient``, ``lr_scheduler`` ...);
                ``rescale_grad`` defaults to ``1 / batch_size``.
        Raises:
            RuntimeError: not bound or parameters not initialized.
            ValueError / TypeError: an unknown optimizer or keyword.
            TypeError: a kvstore that is not a KVStore, name or None.
        """
        self._need("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        kv = self._kvstore_for(kvstore, len(self._contexts))
        batch_size = self._data_shapes[0].shape[batch_axis(self._data_shapes[0])]
        if kv is not None and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size
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
        self._kvstore = kv
        if kv is not None:          # MXNet's update_on_kvstore: push gradients, pull weights
            for name in self._param_names:
                kv.init(name, self._arg_params[name])
            kv.set_optimizer(optimizer)
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    @staticmethod
    def _kvstore_for(kvstore, num_device):
        """MXNet's ``_create_kvstore``: a KVStore object is used as it is; a name makes
        one for a ``dist`` kind or several devices (``'local'``/``'device'`` on one
        device need none); None: none (refused for several devices, whose gradients
        MXNet would not sum)."""
        if kvstore is None:
            if num_device > 1:
                raise NotImplementedError("Module.init_optimizer: kvstore=None over several "
                                          "contexts (MXNet updates each copy with its own "
                                          "slice's gradient); use kvstore='local' or "
                                          "'device' to sum them")
            return None
        if isinstance(kvstore, str):
            if kvstore not in _kvstore.KINDS:
                raise ValueError(f"Module.init_optimizer: unknown kvstore {kvstore!r}; "
                                 f"expected one of {_kvstore.KINDS}")
            if num_device == 1 and "dist" not in kvstore:
                return None
            return _kvstore.create(kvstore)
        needed = ("type", "init", "push", "pull", "set_optimizer")
        if not all(hasattr(kvstore, a) for a in needed):
            raise TypeError(f"Module.init_optimizer: kvstore must be a KVStore "
                            f"(minpy.kvstore.create(...)), a kind name or None, got "
                            f"{type(kvstore).__name__}")
        return kvstore

    def _update_through_kvstore(self, names, weights, grads):
        """Push each gradient (list: one per device) and pull the updated weight back,
        MXNet's ``_update_params_on_kvstore`` (priority ``-index``)."""
        kv = self._kvstore
        for i, (name, w, g) in enumerate(zip(names, weights, grads)):
            kv.push(name, g, priority=-i)
            kv.pull(name, out=w, priority=-i)

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s installed optimizer and KVStore (bucketing: every bucket
        updates through the same optimizer state)."""
        shared_module._need("borrow_optimizer", optimizer=True)
        self._optimizer, self.optimizer_initialized = shared_module._optimizer, True
        self._kvstore = shared_module._kvstore

    def save_optimizer_states(self, fname):
        """Write the optimizer's state (counts, momenta ...) to ``fname``."""
        self._need("save_optimizer_states", bound=False, params=False, optimizer=True)
        checkpoint.save(fname, self._optimizer.state_dict())

    def load_optimizer_states(self, fname):
        """Restore an optimizer state written by :meth:`save_optimizer_states`."""
        self._need("load_optimizer_states", bound=False, params=False, optimizer=True)
        self._optimizer.load_state_dict(checkpoint.load(fname))
