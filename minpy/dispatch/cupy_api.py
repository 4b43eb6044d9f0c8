"""What CuPy really accepts, answered from tables generated from CuPy itself.

NumPy takes keywords, dtypes and ufunc methods that CuPy refuses (``mean(where=)``,
``maximum.reduce``, string arrays ...). ``tools/cupy_api_table.py``, run where CuPy is
installed, writes one table per CuPy major version (``_cupy_api_13.py``,
``_cupy_api_14.py``); :func:`load` picks the one for a CuPy version and
:class:`ApiTable` answers the per-call question "would CuPy refuse this call?" with a
dict lookup and a set difference.

Table format (module-level names of ``_cupy_api_<major>.py``):

- ``CUPY_VERSION``, ``NUMPY_VERSION``, ``MAJOR``: the versions it was generated from.
- ``PROMOTION``: ``'legacy'`` (13.x: Python/NumPy scalar operands of a ufunc promote by
  value, NumPy 1 style; a 0-d array is an array) or ``'nep50'`` (14.x: NumPy 2's rules).
- ``SCALAR_INDEX_VIEW``: ``x[i]`` is a 0-d view (a NumPy scalar in NumPy).
- ``HELD_CHARS``: the dtype characters CuPy computes with (bool, ints, float16/32/64,
  complex64/128); any other dtype is refused, and so is a non-native byte order.
- ``NOVALUE``: the string standing for ``numpy._NoValue`` in ``numpy_defaults``.
- ``TUPLE_RESULTS``: qualnames returning a plain tuple where NumPy returns a namedtuple.
- ``API``: ``{qualname: entry}``; qualnames are minpy's primitive names ('sum',
  'linalg.inv', 'add.reduce', 'ndarray.astype', ...) and every ``cupy.ndarray`` method.
  ``None`` means CuPy has no such function. An entry is a dict:

  - ``kind``: 'function', 'ufunc', 'gufunc', 'ufunc_method', 'method' (its ``params``
    start with ``self``), 'indexer' (r_, c_, mgrid, ogrid: ``x[key]``), or 'forward'
    (a minpy primitive whose body calls the backend names in ``uses``);
  - ``params``: the parameters that can be passed by position, in order; ``posonly``:
    how many of them are positional-only; ``required``: how many must be given;
    ``kwonly``: keyword-only names; ``varargs``/``varkw``: takes ``*args``/``**kwargs``;
  - ``numpy_defaults``: NumPy keywords CuPy lacks whose NumPy default is a literal
    (a call passing exactly that value may drop the keyword, see
    :meth:`ApiTable.drop_defaults`);
  - ``raises``: the exception CuPy raises on every call (a ufunc method it does not
    implement, a forward whose ``missing_uses`` CuPy lacks);
  - ``kw_error``: the exception for an unknown keyword when it is not TypeError;
  - ``renamed``: NumPy keyword -> CuPy's name for it (ufuncs: ``where`` is ``_where``);
  - ``differs``: ``{keyword: [value, reason]}``: CuPy takes the call but answers
    differently from NumPy (keyword ``'*'``: every call);
  - ufuncs: ``nin``, ``nout``, ``types`` (CuPy's loops, ``'ff->f dd->d'``);
  - ``refuses_items``: item types an indexer refuses ('slice', 'str');
  - ``tuple_result``: as ``TUPLE_RESULTS``.

:meth:`ApiTable.refuses` refuses, in this order: a qualname CuPy lacks or always fails
on; more positional arguments than CuPy takes; a keyword CuPy does not take (unless its
value is NumPy's default, which the caller drops with :meth:`ApiTable.drop_defaults`);
a keyword value on which CuPy answers differently; a ``dtype=`` or an operand dtype CuPy
does not hold; for a ufunc whose every input is an array, operand dtypes with no CuPy
loop or a CuPy result dtype other than NumPy's. A qualname missing from the table is
not refused (the table has no opinion).
"""
import functools

import numpy

from . import _cupy_api_13, _cupy_api_14

__all__ = ["ApiTable", "load", "MAJORS"]

_TABLES = {13: _cupy_api_13, 14: _cupy_api_14}     # the generated tables, by major
MAJORS = tuple(sorted(_TABLES))

_MISSING = object()
_NOVALUE = numpy._NoValue


def _major(version):
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        raise ValueError(f"cupy_api.load: cannot read a major version from {version!r}") from None


def load(version):
    """The :class:`ApiTable` for CuPy ``version`` (a string such as ``'14.2.0'``): the
    table of the nearest major version at or below it."""
    major = _major(version)
    below = [m for m in MAJORS if m <= major]
    if not below:
        raise ValueError(f"cupy_api.load: no CuPy API table for CuPy {version} (tables exist "
                         f"for {', '.join(f'{m}.x' for m in MAJORS)}; minpy needs CuPy >= "
                         f"{MAJORS[0]})")
    return _load_major(max(below))


@functools.lru_cache(maxsize=None)
def _load_major(major):
    return ApiTable(_TABLES[major])


def _is_default(default, key, value):
    """True if ``value`` passed for ``key`` is NumPy's ``default`` for it."""
    if value is default or value is _NOVALUE:
        return True
    if key == "where" and value is True:           # where=True selects every element
        return True
    t = type(default)
    return t in (int, float, str) and type(value) is t and value == default


def _name(dtype):
    try:
        return str(numpy.dtype(dtype))
    except TypeError:
        return repr(dtype)


def _matches(given, value):
    """True if the keyword value ``given`` acts as ``value`` (a bool flag: by truth)."""
    if given is value:
        return True
    if isinstance(value, bool):
        try:
            return bool(given) is value
        except (TypeError, ValueError):     # an array flag: assume it does
            return True
    return given == value


class ApiTable:
    """One CuPy major version's API table (see the module doc for the format)."""

    def __init__(self, module):
        self.cupy_version = module.CUPY_VERSION
        self.numpy_version = module.NUMPY_VERSION
        self.major = module.MAJOR
        self.promotion = module.PROMOTION
        self.scalar_index_view = module.SCALAR_INDEX_VIEW
        self.held_chars = frozenset(module.HELD_CHARS)
        self.tuple_results = frozenset(module.TUPLE_RESULTS)
        self.entries = module.API
        self.missing = frozenset(q for q, e in module.API.items() if e is None)
        novalue = module.NOVALUE
        self._rules = {q: self._rule(q, e, novalue) for q, e in module.API.items()}
        # refused on every call, whatever the arguments (missing ones included)
        self.never = frozenset(q for q, r in self._rules.items() if r[0] is not None)
        self._held = {}             # dtype-like -> bool
        self._ufunc_answers = {}    # (qualname, dtypes) -> reason or None

    def __repr__(self):
        return f"<CuPy {self.major}.x API table (from CuPy {self.cupy_version})>"

    def _rule(self, q, e, novalue):
        """(always, maxpos, accepted, droppable, differs, kw_hint, ufunc nin) of ``e``."""
        if e is None:
            return (f"CuPy {self.cupy_version} has no {q}", None, None, None, None, None, None)
        always = None
        if "raises" in e:
            uses = e.get("missing_uses")
            always = (f"CuPy {self.cupy_version} lacks {', '.join(uses)}, which {q} needs"
                      if uses else f"cupy.{q} raises {e['raises']} (not implemented in CuPy "
                                   f"{self.cupy_version})")
        differs = e.get("differs")
        if differs and "*" in differs:
            always = f"cupy.{q} answers differently from NumPy: {differs['*'][1]}"
        params = e["params"]
        maxpos = None if e.get("varargs") else len(params)
        accepted = None if e.get("varkw") else frozenset(
            params[e.get("posonly", 0):]) | frozenset(e.get("kwonly", ()))
        droppable = {k: (_NOVALUE if v == novalue else v)
                     for k, v in e.get("numpy_defaults", {}).items()}
        hint = e.get("renamed")
        nin = e["nin"] if e["kind"] == "ufunc" else None
        return (always, maxpos, accepted, droppable, differs, hint, nin)

    # ------------------------------------------------------------ per call
    def refuses(self, qualname, nargs, kwargs, dtypes):
        """Why CuPy cannot run ``qualname`` with ``nargs`` positional arguments, the
        keywords ``kwargs`` (a dict) and array operands of ``dtypes``: a short reason, or
        None when it can (after :meth:`drop_defaults` of ``kwargs``). For an array method
        ('ndarray.astype') ``nargs`` counts the array itself."""
        rule = self._rules.get(qualname)
        if rule is None:
            return None
        always, maxpos, accepted, droppable, differs, hint, nin = rule
        if always is not None:
            return always
        if maxpos is not None and nargs > maxpos:
            return (f"cupy.{qualname} takes at most {maxpos} positional arguments "
                    f"({nargs} given)")
        if kwargs:
            if accepted is not None:
                extra = kwargs.keys() - accepted
                if extra:
                    bad = sorted(k for k in extra
                                 if not _is_default(droppable.get(k, _MISSING), k, kwargs[k]))
                    if bad:
                        why = f"cupy.{qualname} takes no keyword {', '.join(map(repr, bad))}"
                        if hint and any(k in hint for k in bad):
                            why += " (" + ", ".join(f"{k!r} is {hint[k]!r}" for k in bad
                                                    if k in hint) + ")"
                        return why
            if differs:
                for k, (value, why) in differs.items():
                    if k in kwargs and _matches(kwargs[k], value):
                        return f"cupy.{qualname}({k}={value!r}) answers differently: {why}"
            dt = kwargs.get("dtype")
            if dt is not None and not self.holds(dt):
                return f"CuPy holds no {_name(dt)} arrays (dtype= of {qualname})"
        held = self._held
        for d in dtypes:
            ok = held.get(d)
            if ok is None:
                ok = self.holds(d)
            if not ok:
                return f"CuPy holds no {d} arrays ({qualname})"
        if nin is not None and nin == len(dtypes):
            key = (qualname, tuple(dtypes))
            ans = self._ufunc_answers.get(key, _MISSING)
            if ans is _MISSING:
                ans = self._ufunc_answers[key] = self._ufunc_loop(
                    qualname, self.entries[qualname], key[1])
            return ans
        return None

    def drop_defaults(self, qualname, kwargs):
        """``kwargs`` without the keywords CuPy's ``qualname`` lacks whose value is
        NumPy's default (``where=True``, ``initial=<no value>``, ``copy=None`` ...) and
        without any ``<no value>`` (CuPy would take NumPy's sentinel for a value): what
        to pass CuPy once :meth:`refuses` said None. ``kwargs`` itself when nothing drops."""
        if not kwargs:
            return kwargs
        rule = self._rules.get(qualname)
        accepted, droppable = (rule[2], rule[3]) if rule is not None else (None, None)
        drop = [k for k, v in kwargs.items()
                if v is _NOVALUE or (accepted is not None and k not in accepted
                                     and _is_default(droppable.get(k, _MISSING), k, v))]
        return {k: v for k, v in kwargs.items() if k not in drop} if drop else kwargs

    def refuses_key(self, qualname, key):
        """Why CuPy's indexer ``qualname`` (r_, c_) cannot take ``x[key]``, or None."""
        e = self.entries.get(qualname)
        refused = e.get("refuses_items") if e else None
        if not refused:
            return None
        for item in key if type(key) is tuple else (key,):
            if "slice" in refused and isinstance(item, slice):
                return f"cupy.{qualname} takes no slices (NotImplementedError)"
            if "str" in refused and isinstance(item, str):
                return f"cupy.{qualname} takes no string directives (NotImplementedError)"
        return None

    # ------------------------------------------------------------ dtypes
    def holds(self, dtype):
        """True if CuPy holds and computes with arrays of ``dtype`` (native byte order,
        one of bool, the integers, float16/32/64, complex64/128)."""
        try:
            cached = self._held.get(dtype)
        except TypeError:            # an unhashable dtype-like
            cached = None
        if cached is not None:
            return cached
        try:
            d = numpy.dtype(dtype)
        except TypeError:
            return True              # not a dtype: CuPy's own call raises its error
        ok = d.char in self.held_chars and d.isnative
        try:
            self._held[dtype] = ok
        except TypeError:
            pass
        return ok

    def _ufunc_loop(self, qualname, entry, dtypes):
        """Reason CuPy's ufunc refuses or answers ``dtypes`` other than NumPy, or None."""
        nin = entry["nin"]
        loop = None
        for sig in entry["types"].split():
            ins, outs = sig.split("->")
            if all(numpy.can_cast(d, numpy.dtype(c), "safe") for d, c in zip(dtypes, ins)):
                loop = outs
                break
        names = ", ".join(str(d) for d in dtypes)
        if loop is None:
            return f"cupy.{qualname} has no loop for ({names}) (TypeError)"
        np_ufunc = getattr(numpy, qualname, None)
        if not isinstance(np_ufunc, numpy.ufunc) or np_ufunc.nin != nin:
            return None
        try:
            np_out = np_ufunc.resolve_dtypes(tuple(dtypes) + (None,) * np_ufunc.nout)[nin:]
        except TypeError:
            # NumPy has no loop (CuPy may: sign of bool): the host call raises NumPy's error
            return f"NumPy has no {qualname} loop for ({names})"
        cu_out = tuple(numpy.dtype(c) for c in loop)
        if cu_out != tuple(np_out):
            return (f"cupy.{qualname}({names}) gives {', '.join(map(str, cu_out))} where "
                    f"NumPy gives {', '.join(map(str, np_out))}")
        return None
