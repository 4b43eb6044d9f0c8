"""``memoryview(x)``: the buffer protocol from a Python class exists from Python 3.12
(``__buffer__``). On 3.11 CPython refuses it in C, before any of minpy's code runs,
so its message cannot name ``x.asnumpy()``; ``memoryview(x.asnumpy())`` is the way."""
import sys

import pytest

import minpy


def test_memoryview_of_a_host_array():
    x = minpy.arange(4.0)
    assert memoryview(x.asnumpy()).tolist() == [0.0, 1.0, 2.0, 3.0]
    if sys.version_info >= (3, 12):
        assert memoryview(x).tolist() == [0.0, 1.0, 2.0, 3.0]
    else:
        with pytest.raises(TypeError, match="a bytes-like object is required, not 'Array'"):
            memoryview(x)
