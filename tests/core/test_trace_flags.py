"""The jit tracer decides whether a captured array is a constant from its flags; CuPy's
``ndarray.flags`` has no ``writeable`` (a CuPy array is always writeable)."""
import types

import numpy

from minpy.core.trace import Tracer


class _Holder:
    """Stands for an Array: the tracer only reads ``_data``."""

    def __init__(self, data):
        self._data = data


class _CupyLike:
    """A device array whose flags are CuPy's: no ``writeable``."""

    flags = types.SimpleNamespace(c_contiguous=True, f_contiguous=True, owndata=True)


def test_capture_of_an_array_without_writeable_flag_is_dynamic():
    t = Tracer("f")
    k = t.slot_for(_Holder(_CupyLike()))
    assert t.slots[k].dynamic


def test_capture_of_a_read_only_numpy_array_is_constant():
    a = numpy.ones(3)
    a.flags.writeable = False
    t = Tracer("f")
    assert not t.slots[t.slot_for(_Holder(a))].dynamic
    b = numpy.ones(3)
    assert t.slots[t.slot_for(_Holder(b))].dynamic
