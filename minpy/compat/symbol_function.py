"""MinPy's ``minpy.core.Function``: a symbol as a big operator, with MinPy's calls.

Read through :mod:`minpy.compat.core` (``minpy.core.Function``), which imports this
module on first use: it needs :mod:`minpy.symbol`, which ``import minpy`` does not load.
"""
import functools

import numpy

from ..core.array import Array
from ..symbol.function import Function as _SymbolFunction, function

__all__ = ["Function", "function"]


class Function(_SymbolFunction):
    """MinPy's ``minpy.core.Function``: :class:`minpy.symbol.Function` with MinPy's calls.

    - A call ignores keyword arguments the symbol does not take: MinPy
      programs pass the whole ``model.params`` (``self.conv(X=X, **self.params)``).
    - Inputs of another dtype are converted to the Function's ``dtype`` (float32
      by default), as MinPy's ``copyto`` into the bound executor did: float64
      data, integer labels. The conversion is differentiable.
    - An argument left out keeps its bound value, zeros of the shape inferred
      from the given inputs, as in MinPy's freshly bound executor (a label not
      needed for prediction).
    - ``get_params()`` returns MinPy's parameter configs ``{name: {'shape': shape}}``
      for ``ModelBase.add_params``; ``get_param_arrays`` gives initialised arrays
      (``minpy.symbol.Function.get_params``).
    """

    def __call__(self, *args, is_train=None, **inputs):
        known = self._known_names
        given = {k: self._converted(v) for k, v in inputs.items() if k in known}
        omitted = [n for n in self.arg_names if n not in given]
        if omitted and not args:
            given.update(self._bound_values(omitted, given))
        return super().__call__(*args, is_train=is_train, **given)

    def _converted(self, value):
        """``value`` in the Function's dtype (MinPy copied inputs into float32 arrays)."""
        if isinstance(value, Array):
            return value if value.dtype == self.dtype else value.astype(self.dtype)
        value = numpy.asarray(value)
        return value if value.dtype == self.dtype else value.astype(self.dtype)

    def _bound_values(self, omitted, given):
        """Zeros for the ``omitted`` arguments, their shapes inferred from ``given``'s."""
        shapes = tuple(sorted((k, tuple(v.shape)) for k, v in given.items()
                              if k in self.arg_names))
        cache = self.__dict__.setdefault("_omitted_shapes", {})
        if shapes not in cache:
            try:
                arg_shapes, _, _ = self.symbol.infer_shape_partial(**dict(shapes))
            except ValueError:
                return {}       # the call below names the shapes the graph cannot take
            cache[shapes] = dict(zip(self.arg_names, arg_shapes))
        inferred = cache[shapes]
        return {n: numpy.zeros(inferred[n], self.dtype) for n in omitted
                if inferred.get(n) is not None}

    @functools.cached_property
    def _known_names(self):
        return frozenset(self.arg_names) | frozenset(self.aux_names)

    def get_params(self):
        """MinPy's form: ``{name: {'shape': shape}}`` for each parameter."""
        return {name: {"shape": tuple(shape)} for name, shape in self.param_shapes.items()}

    def get_param_arrays(self, init="xavier", seed=None, dtype=None):
        """Initialised parameter Arrays (see minpy.symbol.Function.get_params)."""
        return super().get_params(init=init, seed=seed, dtype=dtype)
