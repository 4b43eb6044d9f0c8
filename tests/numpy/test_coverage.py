"""Namespace coverage: every public NumPy callable is reachable in minpy and wrapped,
reused by rule (types, pure utilities), or excluded with a reason."""
import types

import numpy
import pytest

import minpy
import minpy.numpy as mnp
from minpy.core.wrappers import ufunc as minpy_ufunc
from minpy.numpy import _namespace
from minpy.numpy import random as mrandom

MODULES = [
    ("numpy", numpy, minpy),
    ("numpy.linalg", numpy.linalg, minpy.linalg),
    ("numpy.random", numpy.random, minpy.random),
    ("numpy.fft", numpy.fft, minpy.fft),
]
# NumPy's own object is the rule for these random host-state accessors.
HOST_STATE = frozenset(mrandom._HOST_STATE)


def public_callables(mod):
    """Public callable names of NumPy module ``mod`` (no modules)."""
    names = []
    for name in dir(mod):
        if name.startswith("_"):
            continue
        obj = getattr(mod, name)
        if isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        names.append(name)
    return names


def is_minpy_object(obj):
    """A minpy wrapper: a registered primitive, a minpy ufunc, or a class/function
    defined in minpy itself."""
    if hasattr(obj, "_prim") or isinstance(obj, minpy_ufunc):
        return True
    return (getattr(obj, "__module__", None) or "").startswith("minpy.") and callable(obj)


def classify(mod, mine, name):
    """'wrapped', 'numpy-rule', 'excluded', or a failure message."""
    np_obj = getattr(mod, name)
    if name in _namespace.EXCLUDED and not hasattr(mine, name):
        return "excluded"
    if not hasattr(mine, name):
        return f"{mod.__name__}.{name} is neither in minpy nor in EXCLUDED"
    obj = getattr(mine, name)
    if obj is np_obj:
        if isinstance(np_obj, type) or name in _namespace.UTILITIES or name in HOST_STATE:
            return "numpy-rule"
        return f"{mod.__name__}.{name} is NumPy's own object but not a type or utility"
    if is_minpy_object(obj):
        return "wrapped"
    return f"{mod.__name__}.{name} is {obj!r}: neither wrapped nor NumPy's object"


@pytest.mark.parametrize("label,mod,mine", MODULES, ids=[m[0] for m in MODULES])
def test_every_public_callable_is_accounted_for(label, mod, mine):
    kinds = {name: classify(mod, mine, name) for name in public_callables(mod)}
    bad = sorted(v for v in kinds.values() if v not in ("wrapped", "numpy-rule", "excluded"))
    assert not bad, "\n".join(bad)


def test_at_least_95_percent_wrapped():
    total = wrapped = 0
    for _, mod, mine in MODULES:
        for name in public_callables(mod):
            kind = classify(mod, mine, name)
            if kind == "numpy-rule":
                continue           # types and utilities are NumPy's by design
            total += 1
            wrapped += kind == "wrapped"
    assert total > 350
    assert wrapped / total >= 0.95, f"{wrapped}/{total} wrapped"


def test_excluded_entries_are_live_and_have_reasons():
    np_names = set()
    for _, mod, _ in MODULES:
        np_names.update(public_callables(mod))
    for name, reason in _namespace.EXCLUDED.items():
        assert name in np_names, f"EXCLUDED[{name!r}] is stale: NumPy has no such callable"
        assert isinstance(reason, str) and reason.strip(), f"EXCLUDED[{name!r}] has no reason"


def test_utilities_and_exclusions_are_disjoint():
    both = set(_namespace.UTILITIES) & set(_namespace.EXCLUDED)
    assert not both, f"listed both as utility and excluded: {sorted(both)}"


def test_utilities_that_numpy_has_are_numpys_objects():
    for name in _namespace.UTILITIES:
        if hasattr(numpy, name) and name not in _namespace.EXCLUDED:
            assert getattr(minpy, name) is getattr(numpy, name), name


@pytest.mark.parametrize("mod", [numpy, numpy.linalg, numpy.fft])
def test_every_numpy_ufunc_is_a_minpy_ufunc(mod):
    for name in dir(mod):
        obj = getattr(mod, name)
        if isinstance(obj, numpy.ufunc):
            mine = getattr(minpy, name)
            assert isinstance(mine, minpy_ufunc), name
            assert mine._np is obj
            assert mine.nin == obj.nin and mine.nout == obj.nout and mine.types == obj.types


def test_import_minpy_numpy_is_the_same_namespace():
    for name in public_callables(numpy):
        if hasattr(mnp, name):
            mine = getattr(minpy, name)
            if name == "array":   # minpy.array: MinPy's module, callable as minpy.numpy.array
                mine = mine.__call__
            assert getattr(mnp, name) is mine, name
    assert mnp.linalg.inv is minpy.linalg.inv
    assert mnp.fft.fft is minpy.fft.fft
    assert mnp.random.normal is minpy.random.normal
    assert minpy.ndarray is minpy.Array is mnp.ndarray


@pytest.mark.parametrize("name", ["inv", "solve", "det", "norm", "svd", "eigh", "qr",
                                  "cholesky", "matrix_power", "pinv"])
def test_linalg_wrappers_are_primitives(name):
    f = getattr(minpy.linalg, name)
    assert f._prim.qualname == f"linalg.{name}"
    assert f.__wrapped_numpy__ is getattr(numpy.linalg, name)


def test_linalg_inv_runs_and_returns_array():
    a = numpy.array([[2.0, 1.0], [1.0, 3.0]])
    r = minpy.linalg.inv(minpy.array(a))
    assert type(r) is minpy.Array
    numpy.testing.assert_allclose(r.asnumpy(), numpy.linalg.inv(a))
    with pytest.raises(numpy.linalg.LinAlgError):
        minpy.linalg.inv(minpy.zeros((2, 2)))
    assert minpy.linalg.LinAlgError is numpy.linalg.LinAlgError


def test_types_constants_and_dtypes_are_numpys():
    for name in ("float32", "int64", "bool_", "dtype", "generic", "errstate", "finfo",
                 "iinfo", "complex128"):
        assert getattr(minpy, name) is getattr(numpy, name), name
    for name in ("pi", "e", "inf", "nan", "newaxis", "euler_gamma"):
        v = getattr(minpy, name)
        assert v is getattr(numpy, name) or v == getattr(numpy, name), name
    assert minpy.exceptions is numpy.exceptions
    assert minpy.random.Generator is mrandom.Generator


def wrappers():
    """(label, object) for every minpy wrapper in the public namespaces."""
    out = []
    for label, mod, mine in MODULES:
        for name in public_callables(mod):
            obj = getattr(mine, name, None)
            if obj is not None and obj is not getattr(mod, name) and is_minpy_object(obj):
                out.append((f"{label}.{name}", obj))
    return out


def test_every_wrapper_has_a_see_also_docstring():
    missing = [label for label, obj in wrappers()
               if "See also numpy." not in (getattr(obj, "__doc__", None) or "")]
    assert not missing, f"{len(missing)} wrappers lack 'See also numpy.': {missing[:20]}"


def test_wrapper_names_follow_numpy():
    for label, obj in wrappers():
        modname, _, name = label.rpartition(".")
        np_obj = getattr(dict((m[0], m[1]) for m in MODULES)[modname], name)
        if isinstance(obj, minpy_ufunc):
            assert obj.__name__ == np_obj.__name__ and obj._np is np_obj, label
        elif hasattr(obj, "_prim"):
            assert obj.__name__ in (name, np_obj.__name__), label
            assert obj.__wrapped_numpy__ is np_obj, label


def test_generator_and_random_state_methods_are_documented():
    g = minpy.random.default_rng(0)
    assert isinstance(g, minpy.random.Generator)
    assert "See also numpy." in g.normal.__doc__
    assert "See also numpy." in minpy.random.RandomState.__doc__
