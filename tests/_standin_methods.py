"""CuPy's ndarray methods and in-place operators for the stand-in GPU's arrays
(``tests/_standin.py`` installs them on :class:`~_standin.StandinArray` at import).

Without them a method call on a stand-in array raises AttributeError and an in-place
operator (``out += x``) silently rebinds the name instead of writing into the
buffer. Each goes through the stand-in namespace (so CuPy's keyword and "array of
another device" checks apply) and writes in place where CuPy does.
"""
__all__ = ["install"]

_NS_REF = [None]      # replaced by install(): the stand-in's current-namespace holder

# method -> namespace function taking the array first
_FORWARDED = ("sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "all",
              "any", "cumsum", "clip", "swapaxes", "take", "squeeze", "ravel", "dot",
              "nonzero", "round", "repeat")
_INPLACE = {"iadd": "add", "isub": "subtract", "imul": "multiply", "itruediv": "true_divide",
            "ifloordiv": "floor_divide", "ipow": "power", "imod": "remainder",
            "iand": "bitwise_and", "ior": "bitwise_or", "ixor": "bitwise_xor"}


def _xp():
    return _NS_REF[0]


def _forward(name):
    def method(self, *args, **kwargs):
        return getattr(_xp(), name)(self, *args, **kwargs)
    method.__name__ = name
    return method


def _inplace(fname):
    def method(self, other):
        getattr(_xp(), fname)(self, other, out=self)
        return self
    return method


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _xp().reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _xp().transpose(self, axes or None)


def _fill(self, value):
    self[...] = value


def _flatten(self, order="C"):
    return _xp().ravel(self, order=order).copy()


def _methods():
    m = {name: _forward(name) for name in _FORWARDED}
    m.update({f"__{k}__": _inplace(f) for k, f in _INPLACE.items()})
    m.update(reshape=_reshape, transpose=_transpose, fill=_fill, flatten=_flatten)
    return m


def install(cls, ns_holder):
    """Give ``cls`` the methods it lacks; ``ns_holder[0]`` is the current stand-in
    namespace."""
    global _NS_REF
    _NS_REF = ns_holder
    for name, fn in _methods().items():
        if name not in cls.__dict__:
            setattr(cls, name, fn)
