"""Every registered primitive has a gradient rule, or a no-gradient mark, or is
in one of the explicit allow-lists below, each with its reason and a test that
the reason holds (samplers and file readers raise at the call, naming the
function, when given a traced array; fronts and in-place replays differentiate)."""
import json
import subprocess
import sys

import numpy
import pytest

import minpy
import minpy.numpy as mnp
from minpy.core import inplace as functional
from minpy.core.primitive import PRIMITIVES
from minpy.core.wrappers import UFUNCS

from _strategies import random_array as rnd

# Random samplers: no gradient w.r.t. their parameters (no reparameterization);
# a traced parameter raises TypeError at the call, naming the sampler.
RANDOM_PREFIX = "random."

# Readers of files, buffers, strings and iterables, and NumPy's iterators: their
# results are new host data with no path back to a traced argument, so a traced
# argument raises at the call rather than silently losing its gradient.
IO = ("load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "frombuffer", "fromstring",
      "fromiter", "nested_iters")

# In-place writers: never recorded as such; under a tape core.inplace.record_write
# replays them out of place and rebinds the target (copyto and x[key] = v there, the
# others through the replays of minpy/numpy/vjp_creation.py).
INPLACE = ("ndarray.__setitem__", "copyto", "put", "place", "putmask", "put_along_axis",
           "fill_diagonal")

# Python-level fronts that, under a tape, run NumPy's algorithm on minpy arrays (so
# gradients flow through the user's functions); the primitive only runs without a tape
# (piecewise: when nothing but the conditions is traced).
FRONTS = {"piecewise": "minpy.numpy.fronts",
          "apply_along_axis": "minpy.numpy.fronts",
          "apply_over_axes": "minpy.numpy.fronts",
          "fromfunction": "minpy.numpy.fronts"}

# The polynomial family gets its rules in minpy/numpy/vjp_poly.py: expected to HAVE them.
POLY = ("poly", "polyadd", "polysub", "polymul", "polyder", "polyint", "polydiv", "polyfit",
        "roots", "vander")

_UFUNC_METHODS = ("reduce", "accumulate", "outer", "reduceat", "at")


def _lazy_ufunc_method(q):
    """Ufunc methods are registered on first use (what earlier tests touched varies)."""
    head, _, tail = q.rpartition(".")
    return tail in _UFUNC_METHODS and head in UFUNCS


def _uncovered():
    return sorted(q for q, p in PRIMITIVES.items() if not p.vjp and not p.nondiff)


_LIST_UNCOVERED = ("import json, minpy; from minpy.core.primitive import PRIMITIVES; "
                   "print(json.dumps(sorted(q for q, p in PRIMITIVES.items() "
                   "if not p.vjp and not p.nondiff)))")


def test_every_primitive_is_covered():
    # in a fresh interpreter: what minpy registers, not what other tests added
    out = subprocess.run([sys.executable, "-c", _LIST_UNCOVERED], capture_output=True,
                         text=True, check=True).stdout
    allowed = set(IO) | set(INPLACE) | set(FRONTS)
    missing = [q for q in json.loads(out) if q not in allowed
               and not q.startswith(RANDOM_PREFIX) and not _lazy_ufunc_method(q)]
    assert missing == []


def test_allow_lists_are_current():
    """Each allow-listed name is registered and still without a rule (else drop it)."""
    uncovered = set(_uncovered())
    for q in IO + INPLACE + tuple(FRONTS):
        assert q in PRIMITIVES, q
        assert q in uncovered, f"{q} has a rule or a mark now: remove it from the allow-list"
    samplers = [q for q in PRIMITIVES if q.startswith(RANDOM_PREFIX)]
    assert len(samplers) > 40
    assert set(samplers) <= uncovered


# Ufunc methods get their rules at import (every method of every ufunc, made by
# minpy/numpy/vjp_ufunc_methods.py): in a fresh interpreter, create every method of every
# ufunc and read off [ufunc has a rule, method has a rule, method nondiff, at replayed].
_LIST_METHODS = ("import json, minpy; from minpy.core.wrappers import UFUNCS; "
                 "from minpy.core.inplace import replays; R = replays(); "
                 "print(json.dumps({f'{n}.{m}': [bool(u._prim.vjp), bool(u._method(m)._prim.vjp), "
                 "u._method(m)._prim.nondiff, f'{n}.{m}' in R] for n, u in UFUNCS.items() "
                 f"for m in {_UFUNC_METHODS!r}}}))")


def _numpy_accepts(name, method):
    """Whether NumPy has ``method`` for ufunc ``name`` at all (else it raises on any input)."""
    uf = getattr(numpy, name)
    if uf.signature is not None or uf.nout != 1 and method != "outer":
        return False
    return uf.nin == 2 or (uf.nin == 1 and method == "at")


def test_every_ufunc_method_is_covered():
    """A differentiable ufunc's methods have rules (``at``: a replay); the methods of a
    non-differentiable ufunc, and those NumPy rejects, are marked nondiff."""
    out = subprocess.run([sys.executable, "-c", _LIST_METHODS], capture_output=True,
                         text=True, check=True).stdout
    table = json.loads(out)
    assert len(table) == 5 * len({u.__name__ for u in UFUNCS.values()})
    wrong = []
    for q, (diff, rule, nondiff, replayed) in table.items():
        name, method = q.split(".")
        diff = diff and _numpy_accepts(name, method)
        if method == "at":
            ok = replayed and not rule and nondiff == (not diff)
        else:
            ok = rule != nondiff and rule == diff
        if not ok:
            wrong.append(q)
    assert wrong == []
    with pytest.raises(ValueError):
        numpy.sin.reduce(numpy.ones(2))      # what "NumPy rejects" means


def test_poly_family_has_rules():
    assert [q for q in POLY if not PRIMITIVES[q].vjp] == []


# ------------------------------------------------------------ random samplers raise
def _p(x):          # a positive traced scalar
    return mnp.abs(x[0]) + 0.5


SAMPLERS = [
    ("normal", lambda x: mnp.random.normal(x, 1.0, size=3)),
    ("uniform", lambda x: mnp.random.uniform(x[0], 2.0 + x[1])),
    ("exponential", lambda x: mnp.random.exponential(_p(x))),
    ("gamma", lambda x: mnp.random.gamma(_p(x), 1.0)),
    ("beta", lambda x: mnp.random.beta(_p(x), 2.0)),
    ("lognormal", lambda x: mnp.random.lognormal(x)),
    ("laplace", lambda x: mnp.random.laplace(x)),
    ("gumbel", lambda x: mnp.random.gumbel(x)),
    ("rayleigh", lambda x: mnp.random.rayleigh(_p(x))),
    ("standard_t", lambda x: mnp.random.standard_t(_p(x))),
    ("poisson", lambda x: mnp.random.poisson(_p(x))),
    ("binomial", lambda x: mnp.random.binomial(5, mnp.abs(x[0]) / 10)),
    ("dirichlet", lambda x: mnp.random.dirichlet(mnp.abs(x) + 0.5)),
    ("multivariate_normal", lambda x: mnp.random.multivariate_normal(x, numpy.eye(3))),
    ("choice", lambda x: mnp.random.choice(x, 2)),
    ("permutation", lambda x: mnp.random.permutation(x)),
]


@pytest.mark.parametrize("name,f", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_sampler_with_traced_parameter_raises(name, f):
    with pytest.raises(TypeError, match=rf"random\.{name}\b"):
        minpy.grad(lambda x: mnp.sum(f(x)))(rnd(3))
    f(rnd(3))                      # without a tape: samples


def test_shuffle_of_traced_raises():
    with pytest.raises(TypeError, match=r"in-place random\.shuffle"):
        minpy.grad(lambda x: mnp.sum(mnp.random.shuffle(x) or x))(rnd(3))


@pytest.mark.parametrize("name,f", [
    ("fromiter", lambda x: mnp.fromiter(x, float)),
    ("frombuffer", lambda x: mnp.frombuffer(x)),
], ids=["fromiter", "frombuffer"])
def test_reader_with_traced_argument_raises(name, f):
    with pytest.raises(TypeError, match=rf"{name} has no gradient rule"):
        minpy.grad(lambda x: mnp.sum(f(x)))(rnd(3))


# ------------------------------------------------------------ fronts and replays differentiate
@pytest.mark.parametrize("name", sorted(FRONTS))
def test_fronts(name):
    fn = getattr(mnp, name)
    assert fn.__module__ == FRONTS[name]
    assert fn._prim is PRIMITIVES[name]
    call = {"piecewise": lambda x: mnp.piecewise(x, [x > 0], [lambda v: v ** 2, 1.0]),
            "apply_along_axis": lambda x: mnp.apply_along_axis(lambda v: v ** 2, 0, x),
            "apply_over_axes": lambda x: mnp.apply_over_axes(lambda a, i: a ** 2, x, [0]),
            "fromfunction": lambda x: mnp.fromfunction(lambda i: x ** 2 + i, (3,))}[name]
    x = mnp.array([1.0, -2.0, 3.0])
    g = minpy.grad(lambda x: mnp.sum(call(x)))(x)
    numpy.testing.assert_array_equal(
        g.asnumpy(), [2.0, 0.0, 6.0] if name == "piecewise" else [2.0, -4.0, 6.0])


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_writers_are_replayed(name):
    if name not in ("ndarray.__setitem__", "copyto"):
        assert name in functional.replays()
    assert PRIMITIVES[name].mutates is not None or name == "ndarray.__setitem__"
    m = I([[False, True, False]])
    write = {"ndarray.__setitem__": lambda y, v: y.__setitem__((0, 1), v),
             "copyto": lambda y, v: mnp.copyto(y, v, where=m),
             "put": lambda y, v: mnp.put(y, [1], v),
             "place": lambda y, v: mnp.place(y, m, v),
             "putmask": lambda y, v: mnp.putmask(y, m, v),
             "put_along_axis": lambda y, v: mnp.put_along_axis(y, I([[1]]), v, 1),
             "fill_diagonal": lambda y, v: mnp.fill_diagonal(y, v)}[name]

    def f(x):
        y = mnp.reshape(x * 1.0, (1, 3))
        write(y, x[0] * 3)
        return mnp.sum(y * y)
    x = mnp.array([1.0, 2.0, 3.0])
    g = minpy.grad(f)(x)
    if name == "fill_diagonal":       # y = [[3 x0, x1, x2]]
        numpy.testing.assert_array_equal(g.asnumpy(), [18.0, 4.0, 6.0])
    else:                             # y = [[x0, 3 x0, x2]]
        numpy.testing.assert_array_equal(g.asnumpy(), [2.0 + 18.0, 0.0, 6.0])


I = numpy.array
