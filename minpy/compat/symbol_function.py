"""MinPy's ``minpy.core.Function``: a symbol as a big operator, with MinPy's calls.

Read through :mod:`minpy.compat.core` (``minpy.core.Function``), which imports this
module on first use: it needs :mod:`minpy.symbol`, which ``import minpy`` does not load.
"""
import functools

from ..symbol.function import Function as _SymbolFunction, function

__all__ = ["Function", "function"]


class Function(_SymbolFunction):
    """MinPy's ``minpy.core.Function``: :class:`minpy.symbol.Function` with MinPy's calls.

    - A call ignores keyword arguments the symbol does not take: MinPy
      programs pass the whole ``model.params`` (``self.conv(X=X, **self.params)``).
    - ``get_params()`` returns MinPy's parameter configs ``{name: {'shape': shape}}``
      for ``ModelBase.add_params``; ``get_param_arrays`` gives initialised arrays
      (``minpy.symbol.Function.get_params``).
    """

    def __call__(self, *args, is_train=None, **inputs):
        known = self._known_names
        return super().__call__(*args, is_train=is_train,
                                **{k: v for k, v in inputs.items() if k in known})

    @functools.cached_property
    def _known_names(self):
        return frozenset(self.arg_names) | frozenset(self.aux_names)

    def get_params(self):
        """MinPy's form: ``{name: {'shape': shape}}`` for each parameter."""
        return {name: {"shape": tuple(shape)} for name, shape in self.param_shapes.items()}

    def get_param_arrays(self, init="xavier", seed=None, dtype=None):
        """Initialised parameter Arrays (see minpy.symbol.Function.get_params)."""
        return super().get_params(init=init, seed=seed, dtype=dtype)
