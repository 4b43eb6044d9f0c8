"""NumPy's other public submodules in minpy: ``ma``, ``lib`` (and its modules),
``polynomial`` (and its modules), ``char``, ``strings``, ``rec``, ``emath``, ``typing``,
``ctypeslib``; and the host-only top-level names ``frompyfunc``, ``asmatrix``, ``bmat``.

minpy has no masked, record, string or matrix arrays of its own, so these modules are
NumPy's code on host data. Each is a module object mirroring every public name of NumPy's
(built once, on first use, by :func:`mirror`; see :func:`module`):

- a function that is also a top-level NumPy function (``lib.stride_tricks.broadcast_to``,
  ``strings.add`` ...) is minpy's wrapper of it: device-aware and differentiable;
- another function runs NumPy's on host data (:func:`host_function`): minpy Arrays in
  its arguments pass as their host buffers (no copy), plain ``ndarray`` results come back
  as minpy Arrays, and NumPy's subclasses (``MaskedArray``, ``recarray``, ``chararray``,
  ``matrix``), scalars and other objects come back as NumPy's. An Array on a device, or
  one being differentiated, is refused with the function's name;
- classes, types and constants are NumPy's own objects (``ma.MaskedArray``,
  ``polynomial.Polynomial``, ``typing.NDArray``): their methods take minpy host Arrays
  through ``Array.__array__``.

Two are minpy's own functions: ``emath`` (= ``lib.scimath``; the real/complex branch is
chosen on the values as NumPy does, then minpy's ufuncs run, so it is differentiable and
runs on any device) and ``lib.stride_tricks.sliding_window_view`` (a zero-copy view for a
host Array, as NumPy's; a gather, with gradients, for an Array being differentiated or on
a device).
"""
import collections.abc
import importlib
import threading
import types

import numpy

from ..core.array import Array, is_traced, new
from ..core.wrappers import _numpy_argument_error
from . import generated as gen
from .fronts import FRONTS

__all__ = ["mirror", "host_function", "frompyfunc", "asmatrix", "bmat", "SUBMODULES",
           "NAMES", "TOP_LEVEL", "module"]

_ndarray = numpy.ndarray
# id(NumPy's function) -> minpy's wrapper, for the functions a submodule shares with numpy
# (by id: a submodule's constants may be unhashable or compare elementwise)
_MINPY_OF = {id(k): v for k, v in {**gen.mapping, **FRONTS}.items()}


def _host_arg(qualname, a):
    t = type(a)
    if t is Array:
        if type(a._data) is not _ndarray:
            raise TypeError(
                f"minpy.{qualname}: an argument lives on {a.context}, and NumPy's "
                f"numpy.{qualname} runs on host data only; call x.asnumpy() or "
                "x.as_in_context(minpy.cpu()) first")
        if is_traced(a):
            raise TypeError(
                f"minpy.{qualname}: an argument is being differentiated, and NumPy's "
                f"numpy.{qualname} carries no gradient; pass minpy.stop_gradient(x) "
                "for its value alone")
        return a._host()
    if t is tuple or t is list:
        return t(_host_arg(qualname, e) for e in a)
    return a


def _minpy_result(r):
    t = type(r)
    if t is _ndarray:
        return new(r)
    if t is tuple or t is list:
        return t(_minpy_result(e) for e in r)
    if isinstance(r, tuple) and hasattr(r, "_make"):     # namedtuple
        return t._make(_minpy_result(e) for e in r)
    return r


def host_function(qualname, fn):
    """NumPy's function ``fn`` (public name ``numpy.<qualname>``) on minpy host Arrays.

    Args:
        qualname: its name below ``numpy`` (``"ma.masked_invalid"``), for messages.
        fn: NumPy's function.
    Returns:
        A function with ``fn``'s signature: Arrays in its arguments (also inside lists and
        tuples) become their host buffers; plain ndarray results (also inside tuples and
        lists) become Arrays; anything else is returned as NumPy returns it.
    Raises (when called):
        TypeError: an Array argument lives on a device or is being differentiated.
    """
    def call(*args, **kwargs):
        try:
            host = tuple(_host_arg(qualname, a) for a in args)
            kw = {k: _host_arg(qualname, v) for k, v in kwargs.items()} if kwargs else kwargs
        except TypeError:
            _numpy_argument_error(call, args, kwargs)     # a call NumPy rejects: its error
            raise
        return _minpy_result(fn(*host, **kw))
    call.__name__ = getattr(fn, "__name__", qualname.rpartition(".")[2])
    call.__qualname__ = call.__name__
    call.__module__ = "minpy." + qualname.rpartition(".")[0]
    call.__doc__ = (f"minpy.{qualname}: NumPy's ``numpy.{qualname}`` on host data; minpy "
                    "Arrays in, Arrays out (NumPy's subclasses and scalars as NumPy "
                    "returns them); refuses device Arrays and Arrays being differentiated."
                    f"\n\nSee also numpy.{qualname}.\n\n{fn.__doc__ or ''}")
    call.__wrapped__ = fn
    call.__wrapped_numpy__ = fn
    return call


# What :func:`mirror` wraps with :func:`host_function`. Other callables stay NumPy's
# objects: classes, ``typing`` aliases, and ``ma``'s operations (``ma.add`` ...), whose
# ``reduce``/``outer`` take host Arrays through ``Array.__array__`` as they are.
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                   numpy.ufunc, type(numpy.concatenate), type(numpy.mean))


def mirror(np_module, name, own=None, submodules=None):
    """A module ``minpy.numpy.<name>`` with every public name of NumPy's ``np_module``.

    Args:
        np_module: NumPy's module.
        name: its dotted name below ``numpy`` (``"lib.stride_tricks"``).
        own: {name: object} that minpy defines itself (replacing NumPy's).
        submodules: {attribute name: minpy module} bound as attributes.
    Returns:
        The module (see the module docstring for what each name becomes).
    """
    mod = types.ModuleType(f"minpy.numpy.{name}",
                           f"minpy.{name}: NumPy's ``numpy.{name}`` for minpy Arrays "
                           f"(see minpy.numpy.submodules).\n\nSee also numpy.{name}.")
    own, submodules = own or {}, submodules or {}
    names = []
    for attr in dir(np_module):
        if attr.startswith("_") or attr == "test":
            continue
        obj = getattr(np_module, attr)
        if attr in own:
            obj = own[attr]
        elif attr in submodules:
            obj = submodules[attr]
        elif isinstance(obj, types.ModuleType):
            continue          # a module NumPy's imports expose (numpy.ma.core's ``np``...)
        elif id(obj) in _MINPY_OF:
            obj = _MINPY_OF[id(obj)]
        elif isinstance(obj, _FUNCTION_TYPES):
            obj = host_function(f"{name}.{attr}", obj)
        setattr(mod, attr, obj)
        names.append(attr)
    for attr, obj in {**own, **submodules}.items():
        if not hasattr(mod, attr):
            setattr(mod, attr, obj)
            names.append(attr)
    mod.__all__ = names
    return mod


# ------------------------------------------------------------------ emath
def _tocomplex(x):
    single = x.dtype.type in (numpy.single, numpy.byte, numpy.short, numpy.ubyte,
                              numpy.ushort, numpy.csingle)
    return x.astype(numpy.csingle if single else numpy.cdouble)


def _any_real(x, test):
    return bool(gen.any(gen.isreal(x) & test(x)))


def _fix_lt_zero(x):
    x = gen.asarray(x)
    return _tocomplex(x) if _any_real(x, lambda v: v < 0) else x


def _fix_abs_gt_1(x):
    x = gen.asarray(x)
    return _tocomplex(x) if _any_real(x, lambda v: gen.absolute(v) > 1) else x


def _fix_int_lt_zero(p):
    p = gen.asarray(p)
    return p * 1.0 if _any_real(p, lambda v: v < 0) else p


def _emath(ufunc_name, fix):
    ufunc = getattr(gen, ufunc_name)

    def f(x):
        return ufunc(fix(x))
    f.__name__ = f.__qualname__ = ufunc_name
    f.__module__ = "minpy.emath"
    f.__doc__ = (f"{ufunc_name} of ``x`` with complex results where the real one is "
                 f"undefined (negative, or outside [-1, 1]), as numpy.emath.{ufunc_name}.\n\n"
                 "Args:\n    x: array_like (an Array on any device).\nReturns:\n    An Array "
                 "(complex when some real element is out of the real domain); "
                 "differentiable.\n\n"
                 f"See also numpy.emath.{ufunc_name}, minpy.{ufunc_name}.")
    return f


def logn(n, x):
    """Logarithm of ``x`` to base ``n``, complex where the real one is undefined.

    Args:
        n, x: array_like (Arrays on any device).
    Returns:
        ``log(x) / log(n)`` as an Array; differentiable in both.

    See also numpy.emath.logn.
    """
    return gen.log(_fix_lt_zero(x)) / gen.log(_fix_lt_zero(n))


def power(x, p):
    """``x ** p``, complex where ``x`` has negative real elements (a negative integer
    ``p`` is taken as float), as numpy.emath.power.

    Args:
        x, p: array_like (Arrays on any device).
    Returns:
        An Array; differentiable.

    See also numpy.emath.power.
    """
    return gen.power(_fix_lt_zero(x), _fix_int_lt_zero(p))


_EMATH = {n: _emath(n, _fix_lt_zero) for n in ("sqrt", "log", "log10", "log2")}
_EMATH.update({n: _emath(n, _fix_abs_gt_1) for n in ("arccos", "arcsin", "arctanh")})
_EMATH.update(logn=logn, power=power)
logn.__module__ = power.__module__ = "minpy.emath"


# --------------------------------------------------------- stride tricks
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """Sliding windows of ``x``: an Array of shape ``x``'s (less the windows) + window_shape.

    For a host Array not being differentiated this is NumPy's zero-copy view (read-only
    unless ``writeable=True``). For an Array being differentiated, or on a device, it is a
    gather of the same values (a copy, so gradients flow and it runs on the device); then
    ``writeable=True`` is refused, since writes could not reach ``x``.

    Args:
        x: array_like.
        window_shape: int or tuple of ints, the window's extent along ``axis``.
        axis: int or tuple of ints (default: every axis).
        subok, writeable: as NumPy's.
    Returns:
        An Array.

    See also numpy.lib.stride_tricks.sliding_window_view.
    """
    sw = numpy.lib.stride_tricks.sliding_window_view
    if type(x) is not Array or (type(x._data) is _ndarray and not is_traced(x)):
        return _minpy_result(sw(_host_arg("lib.stride_tricks.sliding_window_view", x),
                                window_shape, axis, subok=subok, writeable=writeable))
    if writeable:
        raise ValueError("minpy.lib.stride_tricks.sliding_window_view: writeable=True needs "
                         "a view of a host Array not being differentiated; this one is a copy")
    # NumPy's own view of the flat positions checks the arguments and gives the indices
    positions = numpy.arange(x.size).reshape(x.shape)
    index = sw(positions, window_shape, axis)
    return gen.reshape(x, (-1,))[index]


# ------------------------------------------------------- top-level names
frompyfunc = host_function("frompyfunc", numpy.frompyfunc)
asmatrix = host_function("asmatrix", numpy.asmatrix)
bmat = host_function("bmat", numpy.bmat)


# ------------------------------------------------------------ the modules
# Each module is made on first use (issue 27: import time; NumPy itself loads ``ma``,
# ``polynomial``, ``rec`` ... on first use): :func:`module` makes and keeps it;
# ``minpy.numpy`` returns it as an attribute and finds it for ``import minpy.numpy.<name>``
# (:mod:`.lazy_modules`), minpy.compat for ``import minpy.<name>``.
_OWN = {"emath": _EMATH, "lib.stride_tricks": {"sliding_window_view": sliding_window_view}}
_PACKAGES = {
    "lib": ("array_utils", "format", "introspect", "mixins", "npyio", "recfunctions",
            "scimath", "stride_tricks"),
    "polynomial": ("chebyshev", "hermite", "hermite_e", "laguerre", "legendre", "polynomial",
                   "polyutils"),
}
TOP_LEVEL = ("ma", "lib", "polynomial", "char", "strings", "rec", "emath", "typing",
             "ctypeslib")
# every dotted name below minpy.numpy that :func:`module` makes
NAMES = TOP_LEVEL + tuple(f"{p}.{sub}" for p, subs in _PACKAGES.items() for sub in subs)
_MADE = {}
_LOCK = threading.RLock()


def module(name):
    """The module ``minpy.numpy.<name>`` (``name`` one of :data:`NAMES`), made on first use.

    Raises KeyError for any other name.
    """
    made = _MADE.get(name)
    if made is not None:
        return made
    if name not in NAMES:
        raise KeyError(name)
    with _LOCK:
        if name not in _MADE:
            if name == "lib.scimath":          # NumPy's lib.scimath is numpy.emath
                made = module("emath")
            else:
                subs = {sub: module(f"{name}.{sub}") for sub in _PACKAGES.get(name, ())}
                theirs = "lib.scimath" if name == "emath" else name    # numpy.emath's module
                made = mirror(importlib.import_module("numpy." + theirs), name,
                              own=_OWN.get(name), submodules=subs)
                if subs:
                    made.__path__ = []          # a package: ``import minpy.lib.format``
            _MADE[name] = made
    return _MADE[name]


class _Submodules(collections.abc.Mapping):
    """{dotted name below minpy.numpy: module} for every name of :data:`NAMES`, each
    module made when first read (:func:`module`)."""

    def __getitem__(self, name):
        return module(name)

    def __iter__(self):
        return iter(NAMES)

    def __len__(self):
        return len(NAMES)

    def __repr__(self):
        return f"<minpy.numpy.submodules.SUBMODULES: {', '.join(NAMES)}>"


SUBMODULES = _Submodules()
