"""CuPy's refusals and quirks, for the stand-in GPU (tests/_standin.py).

The stand-in computes with NumPy, so on its own it would take every NumPy keyword,
function, dtype and ufunc method. :class:`CupyRules` makes it refuse what the real CuPy
refuses, with CuPy's exception type, and answer as CuPy answers where that differs:

- a function CuPy lacks: AttributeError (from the namespace);
- arguments CuPy's signature does not bind (an unknown keyword, too many positional
  arguments): TypeError, by binding them to an ``inspect.Signature`` rebuilt from the
  table's parameter lists (RuntimeError for CuPy 13's gufunc keywords, as CuPy);
- a ufunc: keywords other than out/dtype/casting/_where, or a wrong argument count:
  TypeError ('Wrong arguments', as ``ufunc.__call__`` in cupy/_core/_kernel.pyx); the
  loop is CuPy's (the first of its ``types`` every input casts to safely); no loop:
  TypeError; under CuPy 13, Python/NumPy scalar operands promote by value;
- a ufunc method CuPy does not implement: NotImplementedError (ValueError for outer of a
  unary ufunc);
- a dtype CuPy does not hold: ValueError ('Unsupported dtype', as cupy/_core);
- r_/c_ with a slice or a string directive: NotImplementedError;
- plain tuples where NumPy returns a namedtuple; CuPy's sorted ``unique_values`` and
  CuPy 13's flat ``unique`` inverse.

The facts come from the generated table *data* (``minpy/dispatch/_cupy_api_<major>.py``);
the deciding code here is separate from :meth:`minpy.dispatch.cupy_api.ApiTable.refuses`,
so a call minpy routes to the GPU that CuPy would refuse fails here as on a real GPU.
"""
import importlib
import inspect

import numpy

__all__ = ["CupyRules", "UNKNOWN"]

UNKNOWN = object()          # a name the table does not list: the stand-in serves NumPy's

_UFUNC_KWARGS = frozenset({"out", "dtype", "casting", "_where"})
_OPTIONAL = object()        # default of a rebuilt parameter (its value never matters)


def _kind_score(dtype):
    """cupy/_core/_kernel.pyx _get_kind_score: bool 0, integers 1, inexact 2."""
    k = dtype.kind
    return 0 if k == "b" else 1 if k in "ui" else 2 if k in "fc" else -1


def _min_scalar_types(x):
    """CuPy 13's ``_min_scalar_type``: NumPy's, plus the signed type of that size for a
    non-negative integer that fits it (both are tried against the loops)."""
    t = numpy.min_scalar_type(x)
    if t.kind == "u":
        signed = numpy.dtype(t.str.replace("u", "i"))
        if x <= numpy.iinfo(signed).max:
            return (t, signed)
    return (t,)


def _is_scalar(x):
    return type(x) in (bool, int, float, complex) or isinstance(x, numpy.generic)


class CupyRules:
    """CuPy ``major``'s rules, read from its generated table's data."""

    def __init__(self, major):
        mod = importlib.import_module(f"minpy.dispatch._cupy_api_{major}")
        self.major = major
        self.api = mod.API
        self.held = frozenset(mod.HELD_CHARS)
        self.legacy = mod.PROMOTION == "legacy"
        self._sigs = {}

    def entry(self, qualname):
        """The table entry of ``qualname``: None if CuPy lacks it, UNKNOWN if unlisted."""
        return self.api.get(qualname, UNKNOWN)

    # ------------------------------------------------------------ signatures
    def signature(self, qualname):
        """An ``inspect.Signature`` accepting exactly what CuPy's ``qualname`` accepts."""
        sig = self._sigs.get(qualname)
        if sig is None:
            e = self.api[qualname]
            P = inspect.Parameter
            ps = []
            for i, name in enumerate(e["params"]):
                kind = P.POSITIONAL_ONLY if i < e.get("posonly", 0) else P.POSITIONAL_OR_KEYWORD
                default = P.empty if i < e.get("required", 0) else _OPTIONAL
                ps.append(P(name, kind, default=default))
            if e.get("varargs"):
                ps.append(P("_args", P.VAR_POSITIONAL))
            ps += [P(name, P.KEYWORD_ONLY, default=_OPTIONAL) for name in e.get("kwonly", ())]
            if e.get("varkw"):
                ps.append(P("_kwargs", P.VAR_KEYWORD))
            sig = self._sigs[qualname] = inspect.Signature(ps)
        return sig

    def check_call(self, qualname, args, kwargs):
        """Raise what CuPy raises when ``qualname`` is called with ``args``/``kwargs``
        that its signature does not take."""
        e = self.api[qualname]
        if e.get("kw_error") and kwargs.keys() - set(e.get("kwonly", ())):
            unknown = " ".join(sorted(kwargs.keys() - set(e.get("kwonly", ()))))
            raise RuntimeError(f"standin(cupy {self.major}): Unknown kwargs {unknown}")
        try:
            self.signature(qualname).bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"standin(cupy {self.major}): cupy.{qualname}(): {err}") from None
        dt = kwargs.get("dtype")
        if dt is not None:
            self.check_dtype(dt, f"cupy.{qualname}(dtype=)")

    def check_dtype(self, dtype, where):
        """ValueError if CuPy cannot hold ``dtype`` (as its array creation)."""
        try:
            d = numpy.dtype(dtype)
        except TypeError:
            return
        if d.char not in self.held or not d.isnative:
            raise ValueError(f"standin(cupy {self.major}): Unsupported dtype {d} ({where})")

    # ------------------------------------------------------------ ufuncs
    def check_ufunc_call(self, qualname, args, kwargs):
        """CuPy's ufunc.__call__ argument checks (cupy/_core/_kernel.pyx)."""
        e = self.api[qualname]
        bad = kwargs.keys() - _UFUNC_KWARGS
        if bad:
            raise TypeError(f"standin(cupy {self.major}): Wrong arguments "
                            f"{ {k: kwargs[k] for k in sorted(bad)} } (cupy.{qualname})")
        nin, nout = e["nin"], e["nout"]
        if not nin <= len(args) <= nin + nout:
            raise TypeError(f"standin(cupy {self.major}): Wrong number of arguments for "
                            f"'cupy_{qualname}'. It must be either {nin} or {nin + nout} "
                            f"(with outputs), but given {len(args)}.")
        if kwargs.get("dtype") is not None:
            self.check_dtype(kwargs["dtype"], f"cupy.{qualname}(dtype=)")

    def ufunc_loop(self, qualname, inputs):
        """CuPy's loop for the numpy ``inputs`` (arrays and scalars) as (in dtypes, out
        dtypes), or None where NumPy's own resolution is CuPy's too (NEP 50 scalars).
        Raises TypeError when CuPy has no loop, as ``_guess_routine_from_in_types``."""
        for x in inputs:
            if not (_is_scalar(x) or hasattr(x, "dtype")):
                raise TypeError(f"standin(cupy {self.major}): Unsupported type {type(x)}")
        arrays = [x for x in inputs if not _is_scalar(x)]
        scalars = [x for x in inputs if _is_scalar(x)]
        if scalars:
            if not self.legacy or not arrays:
                return None
            max_array = max(_kind_score(a.dtype) for a in arrays)
            max_scalar = max(_kind_score(numpy.asarray(s).dtype) for s in scalars)
            if max_array < max_scalar:
                cands = [(x.dtype,) if not _is_scalar(x) else (numpy.asarray(x).dtype,)
                         for x in inputs]
            else:                        # value-based: the smallest type holding each value
                cands = [(x.dtype,) if not _is_scalar(x) else _min_scalar_types(x)
                         for x in inputs]
        else:
            cands = [(x.dtype,) for x in inputs]
        for sig in self.api[qualname]["types"].split():
            ins, outs = sig.split("->")
            if all(any(numpy.can_cast(c, numpy.dtype(ch), "safe") for c in cs)
                   for cs, ch in zip(cands, ins)):
                return ([numpy.dtype(ch) for ch in ins], [numpy.dtype(ch) for ch in outs])
        names = ", ".join(str(cs[0]) for cs in cands)
        raise TypeError(f"standin(cupy {self.major}): Wrong type ({names}) of arguments for "
                        f"cupy_{qualname}")

    def ufunc_method(self, qualname):
        """Raise what CuPy raises for a ufunc method it does not implement."""
        e = self.api[qualname]
        raises = e.get("raises")
        if raises == "NotImplementedError":
            base, method = qualname.rsplit(".", 1)
            raise NotImplementedError(f"standin(cupy {self.major}): `cupy_{base}.{method}` "
                                      "is not supported yet")
        if raises:
            raise ValueError(f"standin(cupy {self.major}): cupy.{qualname}: only binary "
                             "ufuncs have outer")

    # ------------------------------------------------------------ the rest
    def check_key(self, qualname, key):
        """AxisConcatenator.__getitem__ (cupy/_indexing/generate.py): r_/c_ refuse slices
        and string directives."""
        refused = self.api[qualname].get("refuses_items", ())
        items = key if type(key) is tuple else (key,)
        for i, k in enumerate(items):
            if "slice" in refused and isinstance(k, slice):
                raise NotImplementedError(f"standin(cupy {self.major}): cupy.{qualname} "
                                          "takes no slices")
            if "str" in refused and isinstance(k, str):
                if i:
                    raise ValueError("special directives must be the first entry.")
                raise NotImplementedError(f"standin(cupy {self.major}): cupy.{qualname} "
                                          "takes no string directives")

    def result(self, qualname, r, args, kwargs):
        """NumPy's result ``r`` made CuPy's: plain tuples, sorted unique_values, CuPy 13's
        flat unique inverse."""
        e = self.api.get(qualname)
        if not e:
            return r
        if qualname == "unique_values":
            return numpy.unique(r)
        if qualname == "unique" and self.major == 13 and isinstance(r, tuple):
            bound = self.signature(qualname).bind(*args, **kwargs).arguments
            if bound.get("return_inverse") and bound.get("axis") is None:
                at = 1 + bool(bound.get("return_index"))
                r = r[:at] + (r[at].ravel(),) + r[at + 1:]
        if e.get("tuple_result") and isinstance(r, tuple):
            return tuple(r)
        return r
