"""``minpy.nn.updater``: MinPy master's ``Updater`` (its ``model_builder.py``, 2017).

Updates a :class:`minpy.nn.modular.Model`'s parameters from the gradient dict its
``backward()`` returns, with MinPy's per-parameter configs and MinPy's update
functions of :mod:`minpy.nn.optim`::

    updater = Updater(model, update_rule='sgd_momentum', learning_rate=0.1, momentum=0.9)
    loss = model(data, labels=labels)
    updater(model.backward())
    updater.learning_rate *= 0.1                 # every parameter's
    updater['dense0_weight'].learning_rate = 0.01   # one parameter's

See also minpy.nn.modular (Model, Layer), minpy.nn.optim (the rules).
"""
import copy

from . import optim as _optim
from .modular import Model

__all__ = ["Updater"]


class _ConfigParser:
    """MinPy's view of per-parameter configs: ``p.attr = v`` sets it for every
    parameter, ``p.attr`` reads it (one value shared by all), ``p[name].attr``
    reads or sets one parameter's."""

    class _ParamRef:
        def __init__(self, param_configs):
            object.__setattr__(self, "_param_configs", param_configs)

        def __getattr__(self, attr):
            try:
                return self._param_configs[attr]
            except KeyError:
                raise AttributeError(attr) from None

        def __setattr__(self, attr, attr_value):
            self._param_configs[attr] = attr_value

    def __init__(self, configs):
        object.__setattr__(self, "_configs", configs)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        values = [config[attr] for config in self._configs.values() if attr in config]
        distinct = []
        for v in values:
            if not any(v is d or (_plain(v) and _plain(d) and v == d) for d in distinct):
                distinct.append(v)
        if len(distinct) != 1 or len(values) != len(self._configs):
            raise AttributeError(f"{type(self).__name__}.{attr}: not one value shared by every "
                                 f"parameter ({len(distinct)} distinct values over "
                                 f"{len(values)} of {len(self._configs)} parameters); read "
                                 f"{type(self).__name__.lower()}[name].{attr}")
        return distinct[0]

    def __setattr__(self, attr, attr_value):
        for config in self._configs.values():
            config[attr] = attr_value

    def __getitem__(self, param_name):
        return _ConfigParser._ParamRef(self._configs[param_name])

    def __setitem__(self, param_name, configs):
        if not isinstance(configs, dict):
            raise TypeError(f"{type(self).__name__}[{param_name!r}]: expected a dict of "
                            f"settings, got {type(configs).__name__}")
        self._configs[param_name] = copy.deepcopy(configs)

    def keys(self):
        return self._configs.keys()

    def values(self):
        return self._configs.values()

    def items(self):
        return self._configs.items()


def _plain(v):
    return isinstance(v, (int, float, str, bool, type(None)))


# MinPy's update functions of minpy.nn.optim
_RULES = ("sgd", "sgd_momentum", "nesterov", "rmsprop", "adagrad", "adam", "adamw")


class Updater(_ConfigParser):
    """Update a :class:`Model`'s parameters from a gradient dict (MinPy master's ``Updater``).

    Args:
        model: the :class:`Model`; its layers' update configs are copied (so a
            model may have several updaters).
        **kwargs: settings for every parameter: ``update_rule`` (a function of
            ``minpy.nn.optim``: ``'sgd'``, ``'sgd_momentum'``, ``'nesterov'``,
            ``'rmsprop'``, ``'adagrad'``, ``'adam'``, ``'adamw'``) and its
            config (``learning_rate``, ``momentum`` ...); keys the rule does not
            read are ignored, as MinPy's.

    ``updater.learning_rate *= 0.1`` changes every parameter's; ``updater[name]``
    one parameter's settings. ``updater(grad_dict)`` updates the parameters named
    in ``grad_dict`` (``model.params[name] = rule(param, grad, config)``), keeping
    each rule's state (velocity, cache ...) in the parameter's config.
    """

    def __init__(self, model, **kwargs):
        if not isinstance(model, Model):
            raise TypeError(f"Updater: expected a minpy.nn.modules Model, got "
                            f"{type(model).__name__}")
        super().__init__(copy.deepcopy(model._update_configs))
        object.__setattr__(self, "_model", model)
        for attr, attr_value in kwargs.items():
            setattr(self, attr, attr_value)

    def __call__(self, grad_dict):
        """Update ``model.params[name]`` for each ``name`` in ``grad_dict``.

        Raises:
            KeyError: a parameter the updater has no config for (its layer was
            assigned to the model after the updater was made).
            ValueError: no or an unknown ``update_rule``.
        """
        for name, grad in grad_dict.items():
            config = self._configs.get(name)
            if config is None:
                raise KeyError(f"Updater: no settings for parameter {name!r}; its layer was "
                               "registered after this Updater was made (make it after the "
                               "model is built)")
            rule = config.get("update_rule", "unspecified")
            if rule not in _RULES:
                raise ValueError(f"Updater: parameter {name!r} has update_rule {rule!r}; give "
                                 f"one of {_RULES} (Updater(model, update_rule='sgd', ...))")
            settings = {k: v for k, v in config.items() if k != "update_rule"}
            next_param, settings = getattr(_optim, rule)(self._model.params[name], grad,
                                                         settings)
            self._model.params[name] = next_param
            config.update(settings)
