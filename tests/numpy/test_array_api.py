"""The array API standard's entry points on minpy: namespace info, devices, signatures,
``to_device``, ``from_dlpack``, ``device=`` keywords, ``searchsorted``.

The conformance suite itself runs in CI (.ci/array_api); these are minpy's own checks.
"""
import inspect

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy as mp
from minpy.testing import arrays, assert_close as assert_allclose


def _public_callables():
    for mine, theirs in ((mp, numpy), (mp.linalg, numpy.linalg), (mp.fft, numpy.fft),
                         (mp.random, numpy.random)):
        for name in dir(mine):
            a, b = getattr(mine, name), getattr(theirs, name, None)
            if name.startswith("_") or b is None or not callable(a) or isinstance(a, type):
                continue
            yield f"{theirs.__name__}.{name}", a, b


def _sig(f):
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return None


def test_every_wrapper_has_numpys_signature():
    checked, wrong = 0, []
    for name, mine, theirs in _public_callables():
        s = _sig(theirs)
        if s is None:
            continue
        checked += 1
        if _sig(mine) != s:
            wrong.append(f"{name}: {_sig(mine)} != {s}")
    assert checked > 400 and not wrong, wrong


def test_signature_examples_and_call_path_unchanged():
    assert inspect.signature(mp.clip) == inspect.signature(numpy.clip)
    assert inspect.signature(mp.sum).parameters["keepdims"].default is numpy._NoValue
    assert mp.sum.__wrapped__ is numpy.sum
    x = mp.arange(6.0)
    assert_allclose(mp.clip(x, 1, 4), numpy.clip(numpy.arange(6.0), 1, 4))


def test_namespace_info():
    info = mp.__array_namespace_info__()
    assert info.default_device() == mp.cpu(0)
    assert info.devices()[0] == mp.cpu(0) and len(info.devices()) == 1 + mp.num_gpus()
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_dtypes()["real floating"] == numpy.float64
    assert list(info.dtypes()) == list(numpy.__array_namespace_info__().dtypes())
    assert set(info.dtypes(kind=("bool", "real floating"))) == {"bool", "float32", "float64"}
    assert set(info.dtypes(kind=numpy.int8)) == {"int8"}
    with pytest.raises(ValueError, match="unknown kind 'reals'"):
        info.dtypes(kind="reals")
    with pytest.raises(ValueError, match="unknown device"):
        info.dtypes(device="tpu")
    with mp.cpu(0):
        assert info.default_device() == mp.cpu(0)


def test_array_namespace_device_and_to_device():
    x = mp.ones((2, 3))
    assert x.__array_namespace__() is mp.numpy
    assert x.__array_namespace__(api_version="2024.12") is mp.numpy
    with pytest.raises(ValueError, match="api_version '1999.01'"):
        x.__array_namespace__(api_version="1999.01")
    assert x.device == mp.cpu(0)
    assert x.to_device(mp.cpu(0)) is x and x.to_device("cpu") is x
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        x.to_device("tpu")
    with pytest.raises(TypeError, match="Context"):
        x.to_device(3)


def test_device_keyword_of_creation_functions():
    for f, args in ((mp.zeros, (3,)), (mp.ones, (3,)), (mp.empty, (3,)), (mp.full, (3, 2.0)),
                    (mp.arange, (3,)), (mp.linspace, (0, 1, 3)), (mp.eye, (3,)),
                    (mp.asarray, ([1, 2],)), (mp.fft.fftfreq, (4,))):
        r = f(*args, device=mp.cpu(0))
        assert type(r) is mp.Array and r.device == mp.cpu(0), f
        if f is not mp.empty:
            assert_allclose(f(*args, device="cpu"), r)
    x = mp.arange(3.0)
    for f in (mp.zeros_like, mp.ones_like, mp.empty_like):
        assert f(x, device=x.device).shape == (3,)
    assert mp.full_like(x, 7, device=mp.cpu(0)).tolist() == [7, 7, 7]
    assert mp.astype(x, mp.int32, device=mp.cpu(0)).dtype == numpy.int32
    with pytest.raises(ValueError, match="zeros: device='tpu' is not a device"):
        mp.zeros(2, device="tpu")
    with pytest.raises(ValueError, match="disagree"):
        mp.zeros(2, device=mp.cpu(0), ctx=mp.cpu(1))


def test_from_dlpack_device_and_copy():
    h = numpy.arange(4.0)
    shared = mp.from_dlpack(h)
    h[0] = 9
    assert shared[0] == 9                       # no copy by default on the same device
    copied = mp.from_dlpack(h, copy=True)
    h[1] = 7
    assert copied[1] == 1
    assert mp.from_dlpack(mp.arange(3.0), device=mp.cpu(0)).tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="not a DLPack producer"):
        mp.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="device must be a minpy Context"):
        mp.from_dlpack(h, device="cuda")
    assert inspect.signature(mp.from_dlpack) == inspect.signature(numpy.from_dlpack)


@given(arrays(dtype=numpy.float64, shape=st.integers(0, 8).map(lambda n: (n,)), minpy=False),
       arrays(dtype=numpy.float64, shape=st.integers(0, 5).map(lambda n: (n,)), minpy=False),
       st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(a, v, side):
    a = numpy.sort(a)
    assert_allclose(mp.searchsorted(mp.array(a), mp.array(v), side=side),
                    numpy.searchsorted(a, v, side=side))
    order = numpy.argsort(-a, kind="stable")
    unsorted = -a
    assert_allclose(mp.searchsorted(mp.array(unsorted), mp.array(v), sorter=mp.array(order)),
                    numpy.searchsorted(unsorted, v, sorter=order))
