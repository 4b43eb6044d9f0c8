"""Generated public callables: the straight NumPy fast path, else the front door.

Each wrapper tests, in order: ``process.fast`` (no GPU backend, no tape in any
thread, not async: unwrap Arrays, call NumPy, wrap); this thread's
``one_tape`` (the tape's straight-NumPy recording shortcut); else
:func:`minpy.core.call.call`.

Why several hand-written wrappers rather than one: each costs what one more
Python call or ``**kwargs`` repack would add to every NumPy call (~0.15 us,
20% of ``exp`` on a small array), so the common shapes are specialised —
functions with keywords (:func:`make_function`), ufunc calls with one or two
inputs (``_ufunc1``/``_ufunc2``, which take ``out=``/keywords) and the Array
operators (``_operator1``/``_operator2``, which take none), other ufuncs
(``_ufunc_general``). They share the same three-way test.

Argument errors: a call NumPy rejects (a bogus keyword, a wrong number of arguments)
raises NumPy's own TypeError naming the public function (``sum()``, ``exp()``), found
on the error path only (:func:`_numpy_argument_error`; each body sits in a ``try``,
which costs nothing in CPython >= 3.11 until something raises).
"""
import functools
import inspect
import re
import sys
import types

import numpy

from ..dispatch import state
from .array import Array, new, unwrap_cpu, wrap
from .call import call
from .primitive import COMPUTE, Primitive, register
from .tape import record_binary, record_np

__all__ = ["make_function", "ufunc", "make_ufunc", "UFUNCS", "METHODS"]

_process = state.process
_per_thread = state.per_thread
_ndarray = numpy.ndarray


def make_function(qualname, impl, *, forward=None, placement=COMPUTE, mutates=None,
                  name=None, doc=None, prim=None, positional_out=None):
    """Register a primitive (or take the declared ``prim``) and return its public wrapper.

    ``positional_out``: ``impl``'s positional ``out`` (see :func:`_positional_out`) when
    the caller knows it (reading a builtin's signature costs ~0.2 ms)."""
    if prim is None:
        prim = register(Primitive(qualname, impl, forward=forward, placement=placement,
                                  mutates=mutates))
    else:
        impl, forward, mutates = prim.impl, prim.forward, prim.mutates
    # the primitive's own host function (its impl, or forward on NumPy)
    fwd_np = prim.host_fn if mutates is None else None
    out_pos, tail = positional_out if positional_out is not None else _positional_out(impl)

    # Each body sits in a ``try`` (free in CPython >= 3.11 until something raises): on
    # the error path, a call NumPy itself rejects (a bogus keyword, a wrong number of
    # arguments) raises NumPy's own TypeError, naming the public function rather than
    # an implementation detail (``_sum()``, ``reshape_host()``, an IndexError ...).
    if mutates is None:
        def fn(*args, **kwargs):
            try:
                if out_pos is not None and len(args) > out_pos:    # dot(a, b, out) and co.
                    args, kwargs = _out_as_keyword(fn.__name__, args, kwargs, out_pos, tail)
                if _process.fast:
                    if kwargs:
                        out = kwargs.get("out")
                        if out is not None:
                            return call(prim, args, kwargs)
                        kwargs = {k: unwrap_cpu(v) for k, v in kwargs.items()}
                    if len(args) == 1:
                        a = args[0]
                        r = fwd_np(a._data if type(a) is Array else unwrap_cpu(a), **kwargs)
                    else:
                        r = fwd_np(*[unwrap_cpu(a) for a in args], **kwargs)
                    return new(r) if type(r) is _ndarray else wrap(r)
                tape = _per_thread.flags.one_tape
                if tape is not None and (not kwargs or kwargs.get("out") is None):
                    return record_np(tape, prim, fwd_np, args, kwargs)
                return call(prim, args, kwargs)
            except Exception:
                _numpy_argument_error(fn, args, kwargs)
                raise
    else:
        limits = []       # (most positional arguments, keyword names) of NumPy's function

        def fn(*args, **kwargs):
            # a write replayed on the tape reads only the arguments it needs: a call
            # NumPy rejects is refused first (one length test; keywords checked if any)
            if not limits:
                limits.append(_argument_limits(fn))
            most, names = limits[0]
            if len(args) > most or (kwargs and names is not None and
                                    not names.issuperset(kwargs)):
                _numpy_argument_error(fn, args, kwargs)
            try:
                return call(prim, args, kwargs)
            except Exception:
                _numpy_argument_error(fn, args, kwargs)
                raise

    fn.__name__ = name or qualname.rsplit(".", 1)[-1]
    fn.__qualname__ = fn.__name__
    fn.__doc__ = doc if doc is not None else _doc(qualname, impl)
    fn.__wrapped_numpy__ = impl
    fn._prim = prim
    return fn


def _positional_out(impl):
    """(index of ``impl``'s positional-or-keyword ``out`` parameter, the names from
    there on), or (None, ()) when it has none.

    Read from the code object or the text signature where they settle it: inspect.signature
    of a builtin parses its text signature (about 0.5 ms each), and this runs for every
    wrapper ``import minpy`` makes (issue 27: import time).
    """
    try:
        plain = inspect.unwrap(impl)
    except ValueError:                       # a wrapper loop: no signature to read
        return None, ()
    code = getattr(plain, "__code__", None)
    if code is not None and "out" not in code.co_varnames[:code.co_argcount]:
        return None, ()                      # the common case, without inspect.signature
    if (code is None and type(plain) is types.BuiltinFunctionType
            and getattr(impl, "__signature__", None) is None
            and getattr(plain, "__signature__", None) is None):
        # a builtin (or NumPy's dispatcher of one): inspect.signature reads its text signature
        text = plain.__text_signature__ or ""
        if not _OUT_WORD.search(text):
            return None, ()                  # no ``out`` at all
        found = _text_signature_out(text)
        if found is not None:
            return found
    if (type(plain) is types.FunctionType and type(impl) is not functools.partial
            and getattr(impl, "__signature__", None) is None):
        # inspect.signature would read these very names from the code object
        names = code.co_varnames[code.co_posonlyargcount:code.co_argcount]
        if "out" not in names:
            return None, ()
        i = names.index("out")
        return code.co_posonlyargcount + i, tuple(names[i:])
    try:
        params = list(inspect.signature(impl).parameters.values())
    except (TypeError, ValueError):          # no signature to read
        return None, ()
    for i, p in enumerate(params):
        if p.name == "out" and p.kind is p.POSITIONAL_OR_KEYWORD:
            return i, tuple(q.name for q in params[i:] if q.kind is q.POSITIONAL_OR_KEYWORD)
    return None, ()


_OUT_WORD = re.compile(r"\bout\b")


def _text_signature_out(text):
    """:func:`_positional_out` read from a builtin's ``__text_signature__`` (as
    inspect.signature would read it, without its tokenizer and parser), or None where
    the text is not the plain form read here."""
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        return None
    parts, depth, quote, start = [], 0, None, 1
    for i, ch in enumerate(text[1:-1], 1):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:-1])
    names, kinds, keyword_only = [], [], False
    for part in (p.strip() for p in parts):
        if not part:
            continue
        if part == "/":
            kinds = ["positional-only"] * len(kinds)
            continue
        if part.startswith("*"):
            keyword_only = True
            continue
        name = part.split("=", 1)[0].strip()
        if not name.isidentifier() and not (name.startswith("$") and not names):
            return None
        if name.startswith("$"):
            continue                         # $module, $self: not a parameter
        names.append(name)
        kinds.append("keyword-only" if keyword_only else "positional-or-keyword")
    positional = [n for n, k in zip(names, kinds) if k == "positional-or-keyword"]
    if "out" not in positional:
        return None, ()
    i = names.index("out")
    return i, tuple(positional[positional.index("out"):])


def _out_as_keyword(name, args, kwargs, pos, tail):
    """Positional ``out`` (and what follows it) passed by keyword, so the call is
    seen as the write into ``out`` that it is."""
    kwargs = dict(kwargs)
    for k, v in zip(tail, args[pos:]):
        if k in kwargs:
            raise TypeError(f"{name}() got multiple values for argument '{k}'")
        kwargs[k] = v
    if len(args) - pos > len(tail):
        raise TypeError(f"{name}() takes at most {pos + len(tail)} positional arguments "
                        f"({len(args)} given)")
    return args[:pos], kwargs


# ---------------------------------------------------------------- argument errors
_BINDING = re.compile(r"^\S+\(\) (got an unexpected keyword argument|takes |missing \d+ required|"
                      r"got multiple values for argument|got some positional-only)|"
                      r"is an invalid keyword argument for \S+\(\)")
_NO_SIGNATURE = object()


def _numpy_signature(fn, np_fn):
    sig = getattr(fn, "_np_signature", None)
    if sig is None:
        try:
            sig = inspect.signature(np_fn)
        except (TypeError, ValueError):      # a builtin without one
            sig = _NO_SIGNATURE
        try:
            fn._np_signature = sig
        except AttributeError:
            pass
    return None if sig is _NO_SIGNATURE else sig


def _argument_limits(fn):
    """(the most positional arguments, the keyword names or None for any) that NumPy's
    function behind ``fn`` takes; (a large number, None) when unknown."""
    np_fn = getattr(fn, "__wrapped_numpy__", None)
    sig = _numpy_signature(fn, np_fn) if callable(np_fn) else None
    if sig is None:
        return sys.maxsize, None
    most, names = 0, set()
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            most = sys.maxsize
        elif p.kind is p.VAR_KEYWORD:
            names = None
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            most += 1
        if names is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
    return most, None if names is None else frozenset(names)


def _numpy_argument_error(fn, args, kwargs):
    """Called while ``fn(*args, **kwargs)`` fails (the error path only): when NumPy's
    own function rejects those arguments (they do not bind to its signature), raise
    NumPy's TypeError for the same call — its exact text, naming the public function.
    NumPy is called with placeholder values (None): binding fails before any of them
    is used, so nothing runs. Otherwise return, and the caller re-raises its error."""
    np_fn = getattr(fn, "__wrapped_numpy__", None)
    if np_fn is None or not callable(np_fn):
        return
    sig = _numpy_signature(fn, np_fn)
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
            return                           # NumPy takes the call: the error is another
        except TypeError:
            pass
    else:                                    # no signature: only for a binding message
        err = sys.exc_info()[1]
        if not isinstance(err, TypeError) or not _BINDING.search(str(err)):
            return
    try:
        np_fn(*[None] * len(args), **dict.fromkeys(kwargs))
    except TypeError as e:
        if _BINDING.search(str(e)):
            raise e.with_traceback(None) from None
    except Exception:                        # noqa: BLE001 - not NumPy's binding error
        return


def _ufunc_argument_error(uf, args, kwargs):
    """The binding of a ufunc wrapper failed (too few arguments, a positional-only
    name by keyword): raise NumPy's TypeError for that call (placeholder values)."""
    try:
        uf(*[0.0] * len(args), **dict.fromkeys(kwargs))
    except TypeError as e:
        if _BINDING.search(str(e)):
            raise e.with_traceback(None) from None
    except Exception:                        # noqa: BLE001 - not NumPy's binding error
        return


def _doc(qualname, impl):
    head = (f"minpy.{qualname}: NumPy's ``numpy.{qualname}`` on minpy arrays, run on the "
            f"device chosen by the policy.\n\nSee also numpy.{qualname}.\n\n")
    return head + (getattr(impl, "__doc__", None) or "")


def _ufunc1(uf, prim):
    def f(x, /, out=None, **kw):
        if _process.fast and out is None and not kw:
            r = uf(x._data if type(x) is Array else x)
            return new(r) if type(r) is _ndarray else wrap(r)
        tape = _per_thread.flags.one_tape
        if tape is not None and out is None and not kw:
            return record_np(tape, prim, uf, (x,), None)
        if out is not None:
            kw["out"] = out
        return call(prim, (x,), kw)
    return f


def _ufunc2(uf, prim):
    def f(x1, x2, /, out=None, **kw):
        if _process.fast and out is None and not kw:
            r = uf(x1._data if type(x1) is Array else x1, x2._data if type(x2) is Array else x2)
            return new(r) if type(r) is _ndarray else wrap(r)
        tape = _per_thread.flags.one_tape
        if tape is not None and out is None and not kw:
            return record_binary(tape, prim, uf, x1, x2)
        if out is not None:
            kw["out"] = out
        return call(prim, (x1, x2), kw)
    return f


def _operator1(uf, prim):
    """The Array operator (``-x``): :func:`_ufunc1` without the keyword handling."""
    def op(x):
        if _process.fast:
            r = uf(x._data if type(x) is Array else x)
            return new(r) if type(r) is _ndarray else wrap(r)
        tape = _per_thread.flags.one_tape
        if tape is not None:
            return record_np(tape, prim, uf, (x,), None)
        return call(prim, (x,), {})
    return op


# ---------------------------------------------------------------- temporary elision
# ``(a*b + c) * 0.5``: NumPy reuses the buffer of a temporary operand (its refcount
# says nothing else holds it) instead of allocating; a minpy Array holding that buffer
# would defeat it, so the operators do the same one level up, for a temporary left
# operand, else a temporary right one (``c + a*b``; elementwise ufuncs may write over
# an input they read at the same place). It is a temporary when its refcount inside
# :func:`_temporary` is the one a value that only the interpreter's stack holds has
# there (measured at import by a probe called the same way, for either side, so an
# interpreter that borrows references for named variables turns elision off), and its
# buffer is its own. Only where the result has that buffer's dtype and shape, and only
# for large arrays (the checks cost ~0.1 us).
ELIDE_MIN = 1 << 15
_ELIDE_UFUNCS = (numpy.add, numpy.subtract, numpy.multiply, numpy.true_divide)
_getrefcount = sys.getrefcount
_broadcast_shapes = numpy.broadcast_shapes


class _Probe:
    __slots__ = ("_data",)

    def __init__(self):
        self._data = object()


def _probe_refs(x, d):
    _probe_counts.append((_getrefcount(x), _getrefcount(d)))


def _probe_op(x1, x2):
    d2 = x2._data if type(x2) is _Probe else x2
    if type(x1) is _Probe:
        d1 = x1._data
        _probe_refs(x1, d1)
    _probe_refs(x2, d2)


_Probe.__add__ = _probe_op
_probe_counts = []


def _calibrate():
    """For the left and the right operand: (refs of a temporary, refs of a buffer its
    Array alone holds) as :func:`_temporary` sees them; None if a temporary and a
    named value look alike on either side."""
    a, b = _Probe(), _Probe()
    _Probe() + b        # noqa: B018  temporary left
    a + b               # noqa: B018  named left and right
    a + _Probe()        # noqa: B018  temporary right
    (temp_l, data_l), _, (named_l, _), (named_r, _), _, (temp_r, data_r) = _probe_counts
    del _probe_counts[:]
    if temp_l < named_l and temp_r < named_r:
        return (temp_l, data_l), (temp_r, data_r)
    return None


_TEMP_REFS = _calibrate()


def _temporary(x, d, refs):
    """True when Array ``x`` (holding buffer ``d``) is referenced by nothing but the
    operator call and ``d`` by nothing but ``x``, and ``x`` has no engine var or cache;
    ``refs``: the calibrated counts for that operand's side."""
    return _getrefcount(x) <= refs[0] and _getrefcount(d) <= refs[1] and \
        x._var is None and x._copies is None


def _fits(d, other):
    """True when ``uf(d, other)`` has ``d``'s dtype and shape, and ``d`` is a
    writeable buffer of its own."""
    if d.base is not None or not d.flags.writeable or d.dtype.kind not in "fc":
        return False
    t = type(other)
    if t is float or t is int:          # Python scalars take the array's dtype (NEP 50)
        return True
    if t is _ndarray:
        return other.dtype == d.dtype and other.ndim <= d.ndim and \
            _broadcast_shapes(other.shape, d.shape) == d.shape
    return False


def _operator2(uf, prim):
    """The Array operator (``x * y``): :func:`_ufunc2` without the keyword handling."""
    eligible = _TEMP_REFS is not None and uf in _ELIDE_UFUNCS
    left, right = _TEMP_REFS or (None, None)

    def op(x1, x2):
        if _process.fast:
            d2 = x2._data if type(x2) is Array else x2
            if type(x1) is Array:
                d1 = x1._data
                if eligible and d1.size >= ELIDE_MIN and _temporary(x1, d1, left) and \
                        _fits(d1, d2):
                    uf(d1, d2, out=d1)
                    return x1
            else:
                d1 = x1
            if eligible and type(x2) is Array and d2.size >= ELIDE_MIN and \
                    _temporary(x2, d2, right) and _fits(d2, d1):
                uf(d1, d2, out=d2)
                return x2
            r = uf(d1, d2)
            return new(r) if type(r) is _ndarray else wrap(r)
        tape = _per_thread.flags.one_tape
        if tape is not None:
            return record_binary(tape, prim, uf, x1, x2)
        return call(prim, (x1, x2), {})
    return op


def _ufunc_general(uf, prim):
    nin = uf.nin

    def f(*args, **kw):
        if len(args) > nin and "out" not in kw:    # positional outputs: out=
            if len(args) > uf.nargs:               # more than NumPy takes: its TypeError
                _ufunc_argument_error(uf, args, kw)
            args, kw["out"] = args[:nin], args[nin:]
        if _process.fast and kw.get("out") is None:
            return wrap(uf(*[unwrap_cpu(a) for a in args],
                           **{k: unwrap_cpu(v) for k, v in kw.items()}))
        return call(prim, args, kw)
    return f


METHODS = ("reduce", "accumulate", "outer", "reduceat", "at")
_METHOD_OUT = {}     # method name -> its positional ``out`` (_positional_out)


class ufunc:
    """A NumPy ufunc over minpy arrays: call it, or use ``reduce``, ``accumulate``,
    ``outer``, ``reduceat``, ``at``. Attributes (``nin``, ``nout``, ``identity``,
    ``types`` ...) are NumPy's. See also numpy.ufunc.
    """

    __slots__ = ("_np", "_call", "_op", "_methods", "__name__", "__dict__")

    def __init__(self, np_ufunc):
        self._np = np_ufunc
        name = np_ufunc.__name__
        self.__name__ = name
        self.__doc__ = (f"minpy.{name}: NumPy's ufunc on minpy arrays.\n\n"
                        f"See also numpy.{name}.\n\n{np_ufunc.__doc__}")
        n = np_ufunc.nin
        prim = register(Primitive(name, np_ufunc, elementwise_inputs=n))
        self._prim = prim
        self._op = None         # the Array operator, for 1-in or 2-in 1-out ufuncs
        if np_ufunc.nout == 1 and n == 1:
            self._call = _ufunc1(np_ufunc, prim)
            self._op = _operator1(np_ufunc, prim)
        elif np_ufunc.nout == 1 and n == 2:
            self._call = _ufunc2(np_ufunc, prim)
            self._op = _operator2(np_ufunc, prim)
        else:
            self._call = _ufunc_general(np_ufunc, prim)
        # argument errors name the ufunc (``exp()``), as NumPy's do
        self._call.__name__ = self._call.__qualname__ = name
        self._methods = {}

    def __call__(self, *args, **kwargs):
        try:
            return self._call(*args, **kwargs)
        except TypeError as e:
            if e.__traceback__.tb_next is None:     # binding self._call failed
                _ufunc_argument_error(self._np, args, kwargs)
            raise

    def _method(self, method):
        f = self._methods.get(method)
        if f is None:
            qual = f"{self.__name__}.{method}"
            impl = getattr(self._np, method)
            out = _METHOD_OUT.get(method)
            if out is None:         # the same signature for every ufunc's method
                out = _METHOD_OUT[method] = _positional_out(impl)
            f = make_function(qual, impl, mutates=0 if method == "at" else None, name=method,
                              positional_out=out)
            self._methods[method] = f
        return f

    def reduce(self, *args, **kwargs):
        return self._method("reduce")(*args, **kwargs)

    def accumulate(self, *args, **kwargs):
        return self._method("accumulate")(*args, **kwargs)

    def outer(self, *args, **kwargs):
        return self._method("outer")(*args, **kwargs)

    def reduceat(self, *args, **kwargs):
        return self._method("reduceat")(*args, **kwargs)

    def at(self, *args, **kwargs):
        return self._method("at")(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._np, name)

    def __repr__(self):
        return f"<minpy ufunc '{self.__name__}'>"

    def __reduce__(self):
        return (_ufunc_by_name, (self.__name__,))


UFUNCS = {}


def make_ufunc(np_ufunc):
    u = UFUNCS.get(np_ufunc.__name__)
    if u is None:
        u = UFUNCS[np_ufunc.__name__] = ufunc(np_ufunc)
    return u


def _ufunc_by_name(name):
    return make_ufunc(getattr(numpy, name))
