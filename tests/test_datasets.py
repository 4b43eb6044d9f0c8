"""minpy.datasets: the bundled digits, shipped as package data; the package's version."""
import pathlib
import tomllib

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import minpy
from minpy.datasets import DIGITS_PATH, load_digits, split_digits

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _archive():
    with numpy.load(DIGITS_PATH) as f:
        return f["images"], f["target"]


def test_load_digits_gives_float_pixels_and_int_labels():
    (x, y), (xt, yt) = load_digits()
    assert x.shape == (1437, 64) and xt.shape == (360, 64) and y.shape == (1437,)
    assert x.dtype == numpy.float32 and y.dtype == numpy.int64
    assert x.min() == 0 and x.max() == 1 and set(numpy.unique(y)) == set(range(10))
    (c, _), _ = load_digits(image_shape=(1, 8, 8))
    numpy.testing.assert_array_equal(c.reshape(-1, 64), x)
    (again, _), _ = load_digits()
    numpy.testing.assert_array_equal(again, x)                 # a fixed permutation


@settings(max_examples=8, deadline=None, derandomize=True)
@given(split=st.floats(0.05, 0.95), seed=st.integers(0, 2 ** 32 - 1))
def test_the_split_is_a_permutation_of_the_archive(split, seed):
    images, target = _archive()
    (x, y), (xt, yt) = load_digits(image_shape=(8, 8), split=split, seed=seed)
    assert len(y) == int(split * len(target))
    both = numpy.concatenate([x, xt]) * 16
    order = numpy.lexsort(both.reshape(len(both), -1).T)
    want = numpy.lexsort(images.reshape(len(images), -1).T)
    numpy.testing.assert_array_equal(both[order], images[want].astype(numpy.float32))
    numpy.testing.assert_array_equal(numpy.concatenate([y, yt])[order], target[want])


def test_split_digits_reads_any_mapping_and_checks_its_arguments():
    images, target = _archive()
    (x, _), _ = split_digits({"images": images.tolist(), "target": target})
    numpy.testing.assert_array_equal(x, load_digits()[0][0])
    with pytest.raises(ValueError, match=r"load_digits: image_shape \(63,\) does not hold"):
        load_digits(image_shape=(63,))
    with pytest.raises(TypeError, match="load_digits: image_shape must be a tuple of ints"):
        load_digits(image_shape=64)
    for bad in (0, 1, 1.5):
        with pytest.raises(ValueError, match="load_digits: split must be in"):
            load_digits(split=bad)


def test_the_data_ships_inside_the_package():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    data = pathlib.Path(DIGITS_PATH)
    assert data.is_file() and data.parent.parent == ROOT / "minpy" / "datasets"
    assert any(data.match(f"datasets/{pattern}")
               for pattern in tool["package-data"]["minpy.datasets"])
    assert minpy.datasets.load_digits is load_digits


def test_the_version_is_above_the_original_minpy_and_has_one_source():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "minpy.__version__"}
    release = tuple(int(part) for part in minpy.__version__.split(".")[:3])
    assert release > (0, 3, 4), minpy.__version__     # PyPI's minpy 0.3.4 is the original
