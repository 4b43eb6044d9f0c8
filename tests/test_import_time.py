"""What ``import minpy`` loads (issue 27: import time), in a fresh interpreter.

No timing assertions (benchmarks/bench_import.py measures): these check that the
subpackages and heavy modules minpy imports on first use are not loaded by
``import minpy``, and that each still works when first used.
"""
import json
import subprocess
import sys

import numpy

import minpy
from minpy.dispatch import detect

# Loaded on first use only: minpy's lazy subpackages, the stdlib modules only rare
# paths need, and the optional third-party dependencies.
NOT_AT_IMPORT = [
    "minpy.datasets", "minpy.misc", "minpy.testing",
    "importlib.metadata", "unittest", "numpy.testing",
    "numba", "scipy", "matplotlib", "tqdm", "fsspec", "mpi4py",
]


def _run(code):
    """The JSON that ``code`` prints, run in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_minpy_leaves_the_lazy_modules_unloaded_until_first_use():
    got = _run(f"""
import json, sys, types
import minpy
before = [m for m in {NOT_AT_IMPORT!r} if m in sys.modules]
listed = [n for n in ("datasets", "kvstore", "misc") if n in dir(minpy)]
misc, datasets, kvstore = minpy.misc, minpy.datasets, minpy.kvstore
print(json.dumps({{
    "before": before,
    "listed": listed,
    "modules": [isinstance(m, types.ModuleType) for m in (misc, datasets, kvstore)],
    "names": [misc.__name__, datasets.__name__, kvstore.__name__],
    "same": misc is sys.modules["minpy.misc"] and datasets is sys.modules["minpy.datasets"],
    "flatten": callable(minpy.misc.flatten),
    "jit_is_function": callable(minpy.jit) and not isinstance(minpy.jit, types.ModuleType),
    "after": "minpy.misc" in sys.modules and "minpy.datasets" in sys.modules,
}}))
""")
    assert got["before"] == []
    assert got["listed"] == ["datasets", "kvstore", "misc"]
    assert got["modules"] == [True, True, True]
    assert got["names"] == ["minpy.misc", "minpy.datasets", "minpy.kvstore"]
    assert got["same"] and got["flatten"] and got["jit_is_function"] and got["after"]


def test_the_lazy_subpackages_import_by_every_path():
    got = _run("""
import json
import minpy.datasets
from minpy import misc
from minpy.misc import flatten
import minpy
print(json.dumps([minpy.datasets.__name__, misc is minpy.misc, callable(flatten)]))
""")
    assert got == ["minpy.datasets", True, True]


def test_a_missing_name_still_raises_attribute_error():
    try:
        minpy.no_such_name
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("minpy.no_such_name did not raise AttributeError")
    assert not hasattr(minpy, "no_such_name")


def test_wheel_version_reads_the_installed_metadata():
    # importlib.metadata is imported inside detect._wheel, on first use
    assert detect._wheel("numpy") == numpy.__version__
    assert detect._wheel("no-such-wheel-minpy-test") is None
