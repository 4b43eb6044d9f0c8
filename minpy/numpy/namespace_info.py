"""The array API standard's inspection namespace: ``minpy.__array_namespace_info__()``.

Devices are minpy's contexts: ``cpu(0)`` and one ``gpu(i)`` per GPU the GPU
backend sees. Every device offers the same dtypes and defaults (NumPy's).

See also numpy.__array_namespace_info__.
"""
import numpy

from ..dispatch.context import cpu, current_context, gpu, num_gpus

__all__ = ["__array_namespace_info__", "Info"]

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]
_ALL = _KINDS["bool"] + _KINDS["numeric"]


class Info:
    """What minpy's namespace offers, per the array API standard (2024.12)."""

    __module__ = "minpy"

    def capabilities(self):
        """Optional features: boolean indexing, data-dependent shapes, max dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": numpy.__array_namespace_info__().capabilities()[
                    "max dimensions"]}

    def default_device(self):
        """The device new arrays go to: the current context (``cpu(0)`` outside ``with``)."""
        return current_context()

    def devices(self):
        """Every device: ``cpu(0)``, then ``gpu(0)`` ... ``gpu(n-1)``."""
        return [cpu(0)] + [gpu(i) for i in range(num_gpus())]

    def default_dtypes(self, *, device=None):
        """The default real, complex, integral and indexing dtypes (NumPy's)."""
        self._check_device(device)
        return {"real floating": numpy.dtype(numpy.float64),
                "complex floating": numpy.dtype(numpy.complex128),
                "integral": numpy.dtype(numpy.intp), "indexing": numpy.dtype(numpy.intp)}

    def dtypes(self, *, device=None, kind=None):
        """The dtypes of ``kind`` (None: all; a kind name; a dtype; or a tuple of them)
        as ``{name: dtype}``."""
        self._check_device(device)
        if kind is None:
            names = _ALL
        else:
            names = []
            for k in (kind if isinstance(kind, tuple) else (kind,)):
                if isinstance(k, str):
                    if k not in _KINDS:
                        raise ValueError(f"__array_namespace_info__().dtypes: unknown kind "
                                         f"{k!r}; expected one of {sorted(_KINDS)}")
                    names.extend(n for n in _KINDS[k] if n not in names)
                else:
                    n = numpy.dtype(k).name
                    if n not in _ALL:
                        raise ValueError(f"__array_namespace_info__().dtypes: {k!r} is not "
                                         "an array API dtype")
                    if n not in names:
                        names.append(n)
        return {n: numpy.dtype(n) for n in names}

    def _check_device(self, device):
        if device is not None and device not in self.devices():
            raise ValueError(f"__array_namespace_info__: unknown device {device!r}; devices "
                             f"are {self.devices()}")

    def __repr__(self):
        return "<minpy array namespace info>"


def __array_namespace_info__():
    """The inspection namespace of the array API standard.

    Returns:
        An object with ``capabilities()``, ``default_device()``, ``devices()``,
        ``default_dtypes(device=)`` and ``dtypes(device=, kind=)``.

    See also numpy.__array_namespace_info__.
    """
    return Info()
