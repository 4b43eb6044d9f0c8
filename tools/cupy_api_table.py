"""Write ``minpy/dispatch/_cupy_api_<major>.py``: what the installed CuPy really takes.

For every qualname of minpy's primitive registry ('sum', 'linalg.inv', 'add.reduce',
'ndarray.astype', ...) and every method of ``cupy.ndarray``, the table records whether
CuPy has it, the parameters it accepts, the NumPy keywords it lacks (with NumPy's
default, so a call passing the default can drop them), which ufunc methods really work,
the results that are plain tuples where NumPy returns a namedtuple, the dtypes CuPy
holds and its promotion rule. :mod:`minpy.dispatch.cupy_api` answers from it.

Run it with a Python that has ``cupy-cuda12x`` and NumPy installed (importing CuPy needs
no GPU) and a git checkout of CuPy holding the release tag ``v<cupy version>``, whose
Cython sources give the signatures ``inspect`` cannot read::

    python -m venv /tmp/cupy14 && /tmp/cupy14/bin/pip install numpy cupy-cuda12x==14.2.0
    /tmp/cupy14/bin/python tools/cupy_api_table.py --cupy-src /path/to/cupy-git

Facts that neither introspection nor the sources' signatures give are written by hand
below, each citing the CuPy source it was read from.
"""
import argparse
import collections
import importlib
import inspect
import os
import re
import subprocess
import sys

import numpy

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------- hand-written facts
# dtypes CuPy computes with: cupy/_core/_dtype.pyx ``all_type_chars`` (13.x and 14.x).
# 13.x refuses any other at cupy.array() from host (core.pyx _array_default: "Unsupported
# dtype"); 14.x also at ndarray creation (_dtype.pyx check_supported_dtype), where it
# keeps raw structured/void storage that no kernel computes with. Both byte-swap a
# big-endian host array to little-endian on transfer (13: core.pyx _array_default
# ``newbyteorder('<')``; 14: _dtype.pxd normalize_dtype) and 14 refuses a big-endian dtype
# at creation.
HELD_CHARS = "?bhilqBHILQefdFD"

# ufunc.__call__ (cupy/_core/_kernel.pyx, 13.x and 14.x) pops out, _where, dtype and
# casting and raises TypeError('Wrong arguments ...') for any other keyword; it takes
# nin..nin+nout positional arguments (TypeError 'Wrong number of arguments').
UFUNC_CALL_KWARGS = ("out", "dtype", "casting", "_where")
# NumPy's ufunc call keywords and defaults (numpy.ufunc documentation)
NUMPY_UFUNC_CALL_DEFAULTS = {"out": None, "where": True, "casting": "same_kind", "order": "K",
                             "dtype": None, "subok": True, "signature": None}

# ufunc methods, cupy/_core/_kernel.pyx (13.6 lines 1407-1470, 14.2 lines 1432-1495):
#   outer(self, A, B, **kwargs)          -> self(A', B', **kwargs): binary ufuncs only
#   at(self, a, indices, b=None)         -> a._scatter_op(...) if ufunc._scatter_op, else
#                                           NotImplementedError
#   reduce(self, array, axis=0, dtype=None, out=None, keepdims=False)
#                                        -> add: array.sum, multiply: array.prod, else
#                                           NotImplementedError
#   accumulate(self, array, axis=0, dtype=None, out=None)   add/multiply only
#   reduceat(self, array, indices, axis=0, dtype=None, out=None)   add only
# Which ufuncs work is probed below with a recording object (no GPU needed).
UFUNC_METHOD_PARAMS = {
    "outer": (("A", "B"), 2, (), True),
    "at": (("a", "indices", "b"), 2, (), False),
    "reduce": (("array", "axis", "dtype", "out", "keepdims"), 1, (), False),
    "accumulate": (("array", "axis", "dtype", "out"), 1, (), False),
    "reduceat": (("array", "indices", "axis", "dtype", "out"), 2, (), False),
}
# NumPy's ufunc-method keywords (numpy.ufunc.reduce etc.; their signatures hide them
# behind **kwargs)
NUMPY_UFUNC_METHOD_DEFAULTS = {
    "reduce": {"axis": 0, "dtype": None, "out": None, "keepdims": False,
               "initial": "<no value>", "where": True},
    "accumulate": {"axis": 0, "dtype": None, "out": None},
    "reduceat": {"axis": 0, "dtype": None, "out": None},
    "at": {},
    "outer": NUMPY_UFUNC_CALL_DEFAULTS,
}
# NumPy methods whose signature hides keywords behind **kwargs
NUMPY_HIDDEN_DEFAULTS = {
    "sum": {"keepdims": "<no value>", "initial": "<no value>", "where": True},
    "prod": {"keepdims": "<no value>", "initial": "<no value>", "where": True},
    "max": {"keepdims": "<no value>", "initial": "<no value>", "where": True},
    "min": {"keepdims": "<no value>", "initial": "<no value>", "where": True},
    "mean": {"keepdims": "<no value>", "where": True},
    "std": {"keepdims": "<no value>", "where": True},
    "var": {"keepdims": "<no value>", "where": True},
    "all": {"keepdims": "<no value>", "where": True},
    "any": {"keepdims": "<no value>", "where": True},
}

# r_/c_ (cupy/_indexing/generate.py AxisConcatenator.__getitem__): a slice or a string
# directive among the items raises NotImplementedError. mgrid/ogrid take slices.
INDEXERS = {"r_": ("slice", "str"), "c_": ("slice", "str"), "mgrid": (), "ogrid": ()}

# minpy's own primitives whose forward body calls these backend names
MINPY_FORWARD_USES = {
    "block_leaves": ("block",),
    "index_update": ("ndarray.__setitem__",),
    "scatter_add": ("zeros", "add.at"),
}

# slot wrappers inspect cannot read (cupy/_core/core.pyx _ndarray_base)
SLOT_PARAMS = {"__getitem__": ("self", "slices"), "__setitem__": ("self", "slices", "value")}

# _GUFunc.__call__(self, *args, **kwargs) of 13.x (cupy/_core/_gufuncs.py lines 614-623)
# pops these keywords and raises RuntimeError('Unknown kwargs ...') for any other;
# 14.x spells them out as keyword-only parameters (a TypeError for any other).
GUFUNC_13_KWARGS = ("out", "axes", "axis", "order", "dtype", "keepdims", "signature", "casting")

# Same name, different answer: {major: {qualname: {keyword: (value, reason)}}}; the
# keyword "*" means every call.
SEMANTIC = {
    13: {"unique": {"return_inverse": (True, "CuPy 13's inverse is flat where NumPy 2's has "
                                             "the input's shape (cupy/_manipulation/"
                                             "add_remove.py unique)")}},
    14: {"unique_values": {"*": (None, "CuPy sorts the values (add_remove.py unique_values "
                                      "calls unique); NumPy 2.3+ returns them in hash order")}},
}

# promotion of ufunc operands: cupy/_core/_kernel.pyx guess_routine. 13.x: value-based
# ("legacy") for Python/NumPy *scalars* of the same or a lower kind than the arrays
# (_check_should_use_min_scalar; a 0-d cupy array counts as an array); 14.x: NEP 50
# (CScalar.weak_t: Python scalars weak, NumPy scalars and 0-d arrays strong; PR #8323,
# first released in v14.0.0a1).
PROMOTION = {13: "legacy", 14: "nep50"}

# x[i] on a cupy.ndarray is a 0-d view, not a NumPy scalar
# (cupy/_core/_routines_indexing.pyx _ndarray_getitem: basic indexing returns a view).
SCALAR_INDEX_VIEW = True

NOVALUE = "<no value>"


# ---------------------------------------------------------------- Cython sources
def git_show(src, tag, path):
    """The text of ``path`` at ``tag`` in the CuPy checkout ``src``."""
    return subprocess.run(["git", "-C", src, "show", f"{tag}:{path}"], check=True,
                          capture_output=True, text=True).stdout


_DEF = re.compile(r"^(?P<indent> *)(?:cpdef|def)\s+(?:[\w.\[\]]+\s+)?(?P<name>\w+)\s*\(")


def _split_top(text):
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def pyx_defs(text, indent):
    """{name: parameter text} of the defs at ``indent`` spaces in Cython source ``text``."""
    out = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _DEF.match(line)
        if not m or len(m.group("indent")) != indent:
            continue
        if i and lines[i - 1].strip().startswith("@") and "setter" in lines[i - 1]:
            continue
        body, depth, started = [], 0, False
        rest = line[m.end() - 1:]
        j = i
        while True:
            for ch in rest:
                if ch == "(":
                    depth += 1
                    started = True
                    if depth == 1:
                        continue
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        break
                body.append(ch)
            if started and depth == 0:
                break
            j += 1
            rest = lines[j]
            body.append(" ")
        out.setdefault(m.group("name"), "".join(body))
    return out


def pyx_class_text(text, cls):
    """The body of ``cdef class cls`` / ``class cls`` in ``text``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines)
                 if re.match(rf"^(cdef )?class {cls}\b", ln))
    end = next((i for i in range(start + 1, len(lines))
                if lines[i] and not lines[i][0].isspace() and not lines[i].startswith("#")),
               len(lines))
    return "\n".join(lines[start:end])


def parse_params(ptext):
    """(params, posonly, required, kwonly, varargs, varkw) of a Cython parameter list."""
    params, kwonly, posonly, required = [], [], 0, 0
    varargs = varkw = False
    star = False
    for part in _split_top(ptext):
        name_part, has_default = part.split("=", 1)[0].strip(), "=" in part
        if name_part == "/":
            posonly = len(params)
            continue
        if name_part.startswith("**"):
            varkw = True
            continue
        if name_part.startswith("*"):
            star = True
            varargs = varargs or name_part != "*"
            continue
        name = re.findall(r"\w+", name_part)[-1]      # 'tuple max_version' -> max_version
        if star:
            kwonly.append(name)
        else:
            params.append(name)
            if not has_default:
                required = len(params)
    return params, posonly, required, kwonly, varargs, varkw


# ---------------------------------------------------------------- entries
def entry_from_signature(sig):
    """A table entry's parameter fields from an ``inspect.Signature``."""
    params, kwonly, posonly, required = [], [], 0, 0
    varargs = varkw = False
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            varargs = True
        elif p.kind is p.VAR_KEYWORD:
            varkw = True
        elif p.kind is p.KEYWORD_ONLY:
            kwonly.append(p.name)
        else:
            params.append(p.name)
            if p.kind is p.POSITIONAL_ONLY:
                posonly = len(params)
            if p.default is p.empty:
                required = len(params)
    return make_entry(params, posonly, required, kwonly, varargs, varkw)


def make_entry(params, posonly=0, required=0, kwonly=(), varargs=False, varkw=False, **more):
    """A table entry (keys left out where they hold their default)."""
    e = {"params": list(params)}
    if posonly:
        e["posonly"] = posonly
    if required:
        e["required"] = required
    if kwonly:
        e["kwonly"] = list(kwonly)
    if varargs:
        e["varargs"] = True
    if varkw:
        e["varkw"] = True
    e.update(more)
    return e


class _Recorder:
    """Stands for an array in the ufunc-method probes: records the method CuPy calls."""

    def __init__(self):
        self.called = None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def method(*_a, **_k):
            self.called = name
            return self
        return method


def ufunc_method_works(uf, method):
    """True if ``uf.<method>`` does the work (False: CuPy raises NotImplementedError)."""
    if method == "outer":
        return uf.nin == 2          # outer calls self(A, B): a binary ufunc only
    rec = _Recorder()
    call = {"reduce": lambda: uf.reduce(rec), "accumulate": lambda: uf.accumulate(rec),
            "reduceat": lambda: uf.reduceat(rec, [0]), "at": lambda: uf.at(rec, 0, 1)}[method]
    try:
        call()
    except NotImplementedError:
        return False
    return rec.called is not None


class Builder:
    """Builds the table for the imported ``cupy``."""

    def __init__(self, cupy, src):
        self.cupy = cupy
        self.major = int(cupy.__version__.split(".")[0])
        self.tag = "v" + cupy.__version__
        self.src = src
        self._pyx = {}

    def pyx(self, path):
        if path not in self._pyx:
            self._pyx[path] = git_show(self.src, self.tag, path)
        return self._pyx[path]

    def resolve(self, root, qualname):
        obj = root
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj

    def cython_entry(self, obj):
        """Entry of a Cython function from its module's .pyx source."""
        mod = getattr(obj, "__module__", None) or ""
        name = obj.__name__
        if mod == "numpy" or mod.startswith("numpy."):      # a NumPy re-export
            return entry_from_signature(inspect.signature(getattr(numpy, name)))
        text = self.pyx(mod.replace(".", "/") + ".pyx")
        params = pyx_defs(text, 0)[name]
        return make_entry(*parse_params(params), source=mod.replace(".", "/") + ".pyx")

    def method_entries(self):
        """{'ndarray.<name>': entry} of cupy.ndarray's methods, from core.pyx."""
        text = self.pyx("cupy/_core/core.pyx")
        defs = pyx_defs(pyx_class_text(text, "_ndarray_base"), 4)
        defs.update(pyx_defs(pyx_class_text(text, "ndarray"), 4))      # Python overrides
        out = {}
        for name in sorted(dir(self.cupy.ndarray)):
            attr = getattr(self.cupy.ndarray, name)
            if name in SLOT_PARAMS:
                n = len(SLOT_PARAMS[name])
                out["ndarray." + name] = make_entry(SLOT_PARAMS[name], n, n, kind="method")
                continue
            if name.startswith("_") or not callable(attr) or isinstance(attr, type):
                continue
            if name not in defs:
                raise SystemExit(f"cupy.ndarray.{name}: no def in cupy/_core/core.pyx")
            e = make_entry(*parse_params(defs[name]), kind="method")
            out["ndarray." + name] = e
        return out

    def ufunc_entry(self, uf):
        nargs = uf.nin + uf.nout
        params = [f"x{i + 1}" for i in range(uf.nin)] + [f"out{i + 1}" for i in range(uf.nout)]
        return make_entry(params, nargs, uf.nin, UFUNC_CALL_KWARGS, kind="ufunc", nin=uf.nin,
                          nout=uf.nout, types=" ".join(uf.types), renamed={"where": "_where"})

    def entry(self, qualname, methods):
        """The entry of ``qualname`` (None: CuPy lacks it)."""
        cupy = self.cupy
        if qualname in MINPY_FORWARD_USES:
            return make_entry([], varargs=True, varkw=True, kind="forward",
                              uses=list(MINPY_FORWARD_USES[qualname]))
        if qualname.startswith("ndarray."):
            return methods.get(qualname)
        head, _, method = qualname.rpartition(".")
        base = self.resolve(cupy, head) if head else None
        if isinstance(base, cupy.ufunc) and method in UFUNC_METHOD_PARAMS:
            params, required, kwonly, varkw = UFUNC_METHOD_PARAMS[method]
            if method == "outer":          # its keywords go to the ufunc call
                kwonly, varkw = UFUNC_CALL_KWARGS, False
            e = make_entry(params, 0, required, kwonly, varkw, kind="ufunc_method")
            if not ufunc_method_works(base, method):
                e["raises"] = "ValueError" if method == "outer" else "NotImplementedError"
            return e
        obj = self.resolve(cupy, qualname)
        if obj is None:
            return None
        if qualname in INDEXERS:
            return make_entry(["key"], 0, 1, kind="indexer",
                              refuses_items=list(INDEXERS[qualname]))
        if isinstance(obj, cupy.ufunc):
            return self.ufunc_entry(obj)
        if type(obj).__name__ == "_GUFunc":
            e = entry_from_signature(inspect.signature(obj.__call__))
            if e.get("varkw"):
                e = make_entry([], kwonly=GUFUNC_13_KWARGS, varargs=True,
                               kw_error="RuntimeError")
            e.update(kind="gufunc", nin=obj._nin, nout=obj._nout)
            return e
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            e = self.cython_entry(obj)
        else:
            e = entry_from_signature(sig)
        e.setdefault("kind", "function")
        return e


# ---------------------------------------------------------------- NumPy side
def _literal(v):
    if v is numpy._NoValue:
        return NOVALUE
    if v is None or type(v) in (bool, int, float, str):
        return v
    return inspect.Parameter.empty          # not a literal: such a keyword is never dropped


def numpy_defaults(qualname, entry):
    """{keyword: NumPy default} of NumPy keywords that CuPy's ``entry`` does not accept."""
    if entry.get("varkw"):
        return {}
    accepted = set(entry["params"][entry.get("posonly", 0):]) | set(entry.get("kwonly", ()))
    head, _, method = qualname.rpartition(".")
    np_obj = numpy
    for part in qualname.split("."):
        np_obj = getattr(np_obj, part, None)
        if np_obj is None:
            break
    defaults = {}
    if isinstance(getattr(numpy, head, None), numpy.ufunc) and method in NUMPY_UFUNC_METHOD_DEFAULTS:
        defaults = dict(NUMPY_UFUNC_METHOD_DEFAULTS[method])
    elif isinstance(np_obj, numpy.ufunc):
        defaults = dict(NUMPY_UFUNC_CALL_DEFAULTS)
    elif np_obj is not None:
        try:
            sig = inspect.signature(np_obj)
        except (TypeError, ValueError):
            sig = None
        if sig is not None:
            for p in sig.parameters.values():
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY) \
                        and p.default is not p.empty:
                    defaults[p.name] = _literal(p.default)
        if qualname.startswith("ndarray."):
            defaults.update(NUMPY_HIDDEN_DEFAULTS.get(method, {}))
    return {k: v for k, v in sorted(defaults.items())
            if k not in accepted and v is not inspect.Parameter.empty}


def namedtuple_results():
    """Qualnames whose NumPy result is a namedtuple (found by calling NumPy)."""
    m = numpy.array([[2.0, 1.0], [1.0, 3.0]])
    v = numpy.array([1, 1, 2])
    calls = {"linalg.eig": (m,), "linalg.eigh": (m,), "linalg.slogdet": (m,),
             "linalg.svd": (m,), "linalg.qr": (m,), "linalg.lstsq": (m, v[:2]),
             "unique_all": (v,), "unique_counts": (v,), "unique_inverse": (v,),
             "frexp": (m,), "modf": (m,), "divmod": (m, m), "histogram": (m,)}
    out = set()
    for q, args in calls.items():
        f = numpy
        for part in q.split("."):
            f = getattr(f, part)
        r = f(*args)
        if isinstance(r, tuple) and hasattr(r, "_fields"):
            out.add(q)
    return out


def returns_plain_tuple(cupy_fn):
    """True unless ``cupy_fn``'s source builds a NamedTuple class of its module."""
    mod = sys.modules[cupy_fn.__module__]
    src = inspect.getsource(cupy_fn)
    for name, val in vars(mod).items():
        if isinstance(val, type) and issubclass(val, tuple) and hasattr(val, "_fields") \
                and f"{name}(" in src:
            return False
    return True


# ---------------------------------------------------------------- output
def qualnames(path=None):
    """Primitive qualnames of minpy (its SciPy namespace aside: minpy.scipy checks that),
    read from ``path`` (one a line) when given, else from minpy imported here."""
    if path:
        with open(path) as f:
            return sorted(ln.strip() for ln in f if ln.strip() and not ln.startswith("scipy."))
    sys.path.insert(0, REPO)
    minpy_primitive = importlib.import_module("minpy.core.primitive")
    importlib.import_module("minpy")
    return sorted(q for q in minpy_primitive.PRIMITIVES if not q.startswith("scipy."))


def build(cupy, src, names):
    """(major, api dict, tuple results) for the imported ``cupy`` and the qualnames ``names``."""
    b = Builder(cupy, src)
    methods = b.method_entries()
    api = {}
    for q in sorted(set(names) | set(methods)):
        e = b.entry(q, methods)
        if e is not None:
            nd = numpy_defaults(q, e)
            if nd:
                e["numpy_defaults"] = nd
            sem = SEMANTIC.get(b.major, {}).get(q)
            if sem:
                e["differs"] = {k: list(v) for k, v in sem.items()}
        api[q] = e
    tuples = set()
    for q in sorted(namedtuple_results()):
        if api.get(q) is None:
            continue
        if returns_plain_tuple(b.resolve(cupy, q)):
            api[q]["tuple_result"] = True
            tuples.add(q)
    for q, e in api.items():
        if e is not None and e.get("kind") == "forward":
            bad = [u for u in e["uses"] if api.get(u) is None or "raises" in api[u]]
            if bad:
                e["raises"] = "AttributeError"
                e["missing_uses"] = bad
    return b.major, api, sorted(tuples)


def check_dtype_probe(cupy):
    """On CuPy 14+, cross-check HELD_CHARS against ndarray creation (no GPU: a refused
    dtype raises ValueError before any CUDA call)."""
    if int(cupy.__version__.split(".")[0]) < 14:
        return
    for ch in "?bhilqBHILQefdFDgGOSUMm":
        try:
            cupy.ndarray((0,), dtype=ch if ch not in "Mm" else ch + "8[s]")
        except ValueError:
            refused = True
        except Exception:                 # noqa: BLE001  (the CUDA call: dtype accepted)
            refused = False
        else:
            refused = False
        if refused == (ch in HELD_CHARS):
            raise SystemExit(f"HELD_CHARS disagrees with CuPy {cupy.__version__} on {ch!r}")


def _empty_array(cupy):
    """A 0-size cupy.ndarray on unowned memory: made without a GPU."""
    mem = cupy.cuda.UnownedMemory(0, 0, None, 0)
    return cupy.ndarray((0,), dtype="f4", memptr=cupy.cuda.MemoryPointer(mem, 0))


def _probe(fn, args, kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as e:              # noqa: BLE001  (classified by the caller)
        return e
    return None


def _verdict(err, words):
    """'refused' if ``err`` is CuPy's argument error naming one of ``words``,
    'inconclusive' if CuPy reached the GPU first (it converts arguments before binding
    them), else 'accepted'."""
    if isinstance(err, (TypeError, RuntimeError)) and any(w in str(err) for w in words):
        return "refused"
    if err is not None and "CUDA" in type(err).__name__:
        return "inconclusive"
    return "accepted"


def verify(cupy, api):
    """Call CuPy itself (on a 0-size array made without a GPU: argument checks come
    before any GPU work) with each keyword the table says it lacks and with one
    positional argument too many, and check that it refuses. Returns (disagreements,
    number of checks, number inconclusive)."""
    arr = _empty_array(cupy)
    bad, counts = [], collections.Counter()
    for q, e in sorted(api.items()):
        if e is None or e["kind"] in ("forward", "indexer") or "raises" in e:
            continue
        if e["kind"] == "method":
            fn = getattr(arr, q.split(".", 1)[1])
            required = max(e.get("required", 0) - 1, 0)
        else:
            fn = cupy
            for part in q.split("."):
                fn = getattr(fn, part)
            required = e.get("required", 0)
        args = [arr] * required
        lacking = ([] if e.get("varkw") else ["minpy_probe"]) + list(e.get("numpy_defaults", ()))
        for kw in lacking:
            err = _probe(fn, args, {kw: None})
            v = _verdict(err, (kw, "keyword arguments"))
            counts[v] += 1
            if v == "accepted":
                bad.append(f"{q}({kw}=...): {type(err).__name__}: {err}")
        if not e.get("varargs") and e["kind"] != "method":
            n = len(e["params"]) + 1
            v = _verdict(_probe(fn, [arr] * n, {}), ("positional", "number of arguments"))
            counts[v] += 1
            if v == "accepted":
                bad.append(f"{q}(*{n} args): not refused")
    return bad, counts


def _sorted_entry(e):
    return None if e is None else {k: e[k] for k in sorted(e)}


def write(path, cupy, major, api, tuples, counts):
    lines = [
        f'"""CuPy {major}.x API table: generated by tools/cupy_api_table.py, do not edit.',
        "",
        f"Generated from cupy-cuda12x {cupy.__version__} (Cython signatures from the CuPy git "
        f"tag v{cupy.__version__})",
        f"and NumPy {numpy.__version__} (the NumPy defaults of keywords CuPy lacks), for the "
        "qualnames of minpy's",
        "primitive registry and cupy.ndarray's methods. Checked against CuPy itself: "
        f"{counts['refused']} refusals",
        f"confirmed, {counts['inconclusive']} inconclusive (CuPy converts those arguments on "
        "the GPU before binding them).",
        "Read by minpy.dispatch.cupy_api, which documents the format.",
        '"""',
        f"CUPY_VERSION = {cupy.__version__!r}",
        f"NUMPY_VERSION = {numpy.__version__!r}",
        f"MAJOR = {major}",
        f"PROMOTION = {PROMOTION[major]!r}",
        f"SCALAR_INDEX_VIEW = {SCALAR_INDEX_VIEW!r}",
        f"HELD_CHARS = {HELD_CHARS!r}",
        f"NOVALUE = {NOVALUE!r}",
        f"TUPLE_RESULTS = {tuples!r}",
        "",
        "# qualname -> entry; None: CuPy has no such function",
        "API = {",
    ]
    for q in sorted(api):
        lines.append(f"    {q!r}: {_sorted_entry(api[q])!r},")
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    """Write the table of the installed CuPy."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cupy-src", required=True,
                    help="a git checkout of CuPy holding the tag v<installed version>")
    ap.add_argument("--out", default=os.path.join(REPO, "minpy", "dispatch"))
    ap.add_argument("--qualnames", help="a file of minpy primitive qualnames, one a line "
                    "(default: those of minpy imported by this Python)")
    ns = ap.parse_args(argv)
    import cupy                        # the CuPy whose table is written
    check_dtype_probe(cupy)
    major, api, tuples = build(cupy, ns.cupy_src, qualnames(ns.qualnames))
    disagree, counts = verify(cupy, api)
    if disagree:
        raise SystemExit("the table disagrees with CuPy:\n  " + "\n  ".join(disagree))
    print(f"checked against CuPy: {counts['refused']} refusals confirmed, "
          f"{counts['inconclusive']} inconclusive (CuPy reaches the GPU first)")
    if major not in PROMOTION:
        raise SystemExit(f"cupy {cupy.__version__}: no promotion rule written for {major}.x")
    path = os.path.join(ns.out, f"_cupy_api_{major}.py")
    write(path, cupy, major, api, tuples, counts)
    counts = collections.Counter("missing" if e is None else e.get("kind") for e in api.values())
    print(f"wrote {path}: {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()
