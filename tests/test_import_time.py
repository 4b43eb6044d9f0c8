"""What ``import minpy`` loads (issue 27: import time), in a fresh interpreter.

No timing assertions (benchmarks/bench_import.py measures): these check that the
subpackages and heavy modules minpy imports on first use are not loaded by
``import minpy`` (nor by a first computation), and that each still works when first
used, by every path a program may take to it.
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
    "minpy.datasets", "minpy.misc", "minpy.testing", "minpy.kvstore",
    "minpy.symbol", "minpy.nn", "minpy.mxnet", "minpy.jit", "minpy.scipy", "minpy.fusion",
    "minpy.kernels", "minpy.compat.symbol_function",
    # NumPy's submodules that NumPy itself loads on first use, and minpy's over them
    "numpy.random", "numpy.ma", "numpy.polynomial", "numpy.lib.recfunctions",
    "numpy.ctypeslib", "minpy.numpy.random", "minpy.random", "minpy.ma", "minpy.numpy.ma",
    "minpy.lib", "minpy.numpy.lib", "minpy.polynomial",
    # MXNet's old paths (minpy.compat.ALIASES)
    "minpy.metric", "minpy.module", "minpy.callback", "minpy.initializer", "minpy.model",
    "minpy.nd",
    # the gradient rule tables (loaded by the first rule read)
    "minpy.numpy.vjp_math", "minpy.numpy.vjp_ufunc_methods", "minpy.numpy.vjp_indexing",
    "importlib.metadata", "unittest", "numpy.testing", "ctypes.util", "subprocess",
    "numba", "scipy", "matplotlib", "tqdm", "fsspec", "mpi4py",
]


# What ``import minpy`` cannot help loading where CuPy is installed: its GPU check
# (minpy/dispatch/detect.py) imports CuPy and runs a kernel, a matmul, random numbers, a
# solve and an FFT, and CuPy loads numpy.random, unittest and more for these. The code
# below runs that check alone (the file loaded by path, so minpy itself is not imported)
# and names what it loaded ``baseline``: the tests count only what minpy adds to it. With
# no CuPy installed (CI on the CPU) the check imports nothing and the baseline is empty.
BASELINE = f"""
import importlib.util, sys
_spec = importlib.util.spec_from_file_location("_minpy_detect_alone", {detect.__file__!r})
_alone = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_alone)
_before_check = set(sys.modules)
_alone.check()
baseline = set(sys.modules) - _before_check
"""
# the GPU library's own packages, which it imports lazily at first use of a routine
GPU_PACKAGES = ("cupy", "cupyx", "cupy_backends", "fastrlock")


def _run(code):
    """The JSON that ``code`` prints, run in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_minpy_leaves_the_lazy_modules_unloaded_until_first_use():
    got = _run(BASELINE + f"""
import json, types
import minpy
before = [m for m in {NOT_AT_IMPORT!r} if m in sys.modules and m not in baseline]
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


def test_a_first_computation_loads_nothing_more():
    got = _run(BASELINE + f"""
import json
import minpy as np
before = set(sys.modules)
x = np.zeros(3) + 1
y = (np.arange(6.0).reshape(2, 3) @ np.ones((3, 2))).sum(axis=0)
print(json.dumps({{
    "values": [x.tolist(), y.tolist()],
    "new": sorted(m for m in set(sys.modules) - before
                  if m.partition(".")[0] not in {GPU_PACKAGES!r}),
    "unloaded": [m for m in {NOT_AT_IMPORT!r} if m in sys.modules and m not in baseline],
    "rules": sys.modules["minpy.core.primitive"].rules_loaded(),
}}))
""")
    assert got["values"] == [[1.0, 1.0, 1.0], [15.0, 15.0]]
    assert got["unloaded"] == [] and got["new"] == [] and got["rules"] is False


def test_the_gradient_tables_load_on_the_first_rule_read():
    got = _run("""
import json, sys
import minpy as np
from minpy.core.primitive import PRIMITIVES, Primitive, rules_loaded
tables = sys.modules["minpy.numpy.gradients"].TABLES
before = [rules_loaded(), [t for t in tables if t in sys.modules],
          type(Primitive.__dict__["vjp"]).__name__]
g = np.grad(lambda x: np.sum(np.sin(x) * x))(np.arange(3.0))
print(json.dumps({
    "before": before,
    "after": [rules_loaded(), all(t in sys.modules for t in tables),
              type(Primitive.__dict__["vjp"]).__name__],
    "grad": g.tolist(),
    "reduce_rule": PRIMITIVES["add.reduce"].vjp is not None,
}))
""")
    import numpy as onp
    x = onp.arange(3.0)
    assert got["before"] == [False, [], "property"]
    # once loaded, a rule read is the slot's own descriptor again: no check per read
    assert got["after"] == [True, True, "member_descriptor"]
    onp.testing.assert_allclose(got["grad"], onp.cos(x) * x + onp.sin(x))
    assert got["reduce_rule"]


def test_threads_differentiating_first_all_get_the_rules():
    got = _run("""
import json, threading
import minpy as np
x = np.arange(1.0, 4.0)
out, start = [None] * 4, threading.Barrier(4)

def work(i):
    start.wait()
    out[i] = np.grad(lambda v: np.sum(np.add.reduce(v * v) + np.tanh(v)))(x).tolist()

threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(out))
""")
    import numpy as onp
    x = onp.arange(1.0, 4.0)
    for g in got:      # sum over 3 elements of (sum(v * v) + tanh(v))
        onp.testing.assert_allclose(g, 3 * 2 * x + 1 - onp.tanh(x) ** 2)


def test_a_table_imported_alone_registers_the_same_rules():
    # the tables load in order whichever is imported first, so the rules are the same
    code = """
import json, sys
import minpy
{first}
from minpy.core.primitive import PRIMITIVES
print(json.dumps({{q: [sorted(map(str, p.vjp or ())), p.nondiff, p.inplace_replay is None]
                  for q, p in PRIMITIVES.items()}}))
"""
    plain = _run(code.format(first=""))
    for first in ("import minpy.numpy.vjp_math", "from minpy.numpy.vjp_indexing import scatter_add",
                  "import minpy.numpy.vjp_ufunc_methods"):
        assert _run(code.format(first=first)) == plain, first


def test_old_paths_and_lazy_attributes_are_one_module_each():
    got = _run("""
import json, sys, types
import minpy
import minpy.metric
from minpy.lib.stride_tricks import sliding_window_view
import minpy.numpy.polynomial.polynomial as P
print(json.dumps([
    minpy.metric is minpy.mxnet.metric is sys.modules["minpy.metric"],
    minpy.mxnet.metric.__spec__.name,          # its own spec, not the alias's
    minpy.init is minpy.initializer is minpy.mxnet.initializer,
    minpy.sym is minpy.symbol and isinstance(minpy.symbol, types.ModuleType),
    sliding_window_view is minpy.lib.stride_tricks.sliding_window_view,
    minpy.lib is minpy.numpy.lib is sys.modules["minpy.lib"],
    P is minpy.polynomial.polynomial,
    minpy.random is minpy.numpy.random is sys.modules["minpy.random"],
    callable(minpy.jit) and not isinstance(minpy.jit, types.ModuleType),
    minpy.core.Function is sys.modules["minpy.compat.symbol_function"].Function,
    sorted({"symbol", "nn", "mxnet", "ma", "random", "metric", "jit"} - set(dir(minpy))),
]))
""")
    assert got == [True, "minpy.mxnet.metric", True, True, True, True, True, True, True, True,
                   []]


def test_jit_stays_the_function_when_its_package_loads_first():
    # minpy.nn imports the package minpy.jit before the program reads minpy.jit
    got = _run("""
import json, types
import minpy
import minpy.nn
import minpy.jit.api
print(json.dumps([callable(minpy.jit), isinstance(minpy.jit, types.ModuleType),
                  minpy.jit is minpy.jit.__globals__["jit"]]))
""")
    assert got == [True, False, True]


def test_namespace_utilities_keep_their_signatures():
    # NumPy's own objects in minpy's namespace are not given a __wrapped__ (a loop)
    import inspect
    assert str(inspect.signature(numpy.base_repr)).startswith("(number")
    assert minpy.base_repr is numpy.base_repr and not hasattr(numpy.base_repr, "__wrapped__")


def test_positional_out_agrees_with_inspect_signature():
    # minpy.core.wrappers._positional_out skips inspect.signature where the code object or
    # the text signature settles it (import time); it must say what inspect.signature says
    # (after the shortcut it always had: a code object without an ``out`` among its
    # positional parameters has none, whatever a ``__signature__`` adds)
    import inspect
    import numpy.lib.recfunctions
    import numpy.ma
    import numpy.polynomial
    from minpy.core.wrappers import _positional_out

    def by_inspect(impl):
        code = getattr(inspect.unwrap(impl), "__code__", None)
        if code is not None and "out" not in code.co_varnames[:code.co_argcount]:
            return None, ()
        try:
            params = list(inspect.signature(impl).parameters.values())
        except (TypeError, ValueError):
            return None, ()
        for i, p in enumerate(params):
            if p.name == "out" and p.kind is p.POSITIONAL_OR_KEYWORD:
                return i, tuple(q.name for q in params[i:] if q.kind is q.POSITIONAL_OR_KEYWORD)
        return None, ()
    modules = (numpy, numpy.linalg, numpy.fft, numpy.random, numpy.ma, numpy.polynomial,
               numpy.lib.recfunctions, numpy.strings, numpy.char, numpy.emath)
    impls = [getattr(m, n) for m in modules for n in dir(m)]
    impls += [getattr(numpy.ndarray, n) for n in dir(numpy.ndarray)]
    impls += [getattr(numpy.add, n) for n in ("reduce", "accumulate", "outer", "reduceat", "at")]
    checked = with_out = 0
    for impl in impls:
        if not callable(impl) or isinstance(impl, type) or isinstance(impl, numpy.ufunc):
            continue
        expected = by_inspect(impl)
        assert _positional_out(impl) == expected, impl
        checked += 1
        with_out += expected[0] is not None
    assert checked > 800 and with_out > 50


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
