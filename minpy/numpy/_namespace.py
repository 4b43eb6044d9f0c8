"""Builds minpy's NumPy namespace from NumPy's own, one primitive per callable.

Every public callable of a NumPy module is classified once, at import:
ufuncs become :class:`minpy.core.wrappers.ufunc`; functions become generated
wrappers with a placement (see ``creation.py``) and, where they write an
argument in place, ``mutates``; types, constants and pure utilities (no array
in, no array out) are NumPy's own objects; the rest is listed in
``EXCLUDED`` with a reason.
"""
import importlib.util
import types

import numpy

from ..core.ops import DECLARED, method_first
from ..core.primitive import COMPUTE, CREATE, SELF
from ..core.wrappers import make_function, make_ufunc
from ..core.writes import put_along_axis_forward, put_forward
from ..dispatch import state
from ..dispatch.context import context_named

# Pure utilities: take no arrays, return no arrays (NumPy's object is reused).
UTILITIES = frozenset({
    "set_printoptions", "get_printoptions", "printoptions", "seterr", "geterr",
    "seterrcall", "geterrcall", "setbufsize", "getbufsize", "show_config",
    "show_runtime", "get_include", "info", "isdtype", "issubdtype", "typename",
    "mintypecode", "format_float_positional", "format_float_scientific", "base_repr",
    "binary_repr", "promote_types", "busday_count", "is_busday",
    "busday_offset", "datetime_as_string", "datetime_data", "add_docstring",
    "add_newdoc", "add_newdoc_ufunc", "deprecate", "deprecate_with_doc", "get_array_wrap",
    "byte_bounds", "disp", "safe_eval", "who", "lookfor", "source",
})

# NumPy's host-only objects (the numpy.matrix subclass, object-dtype ufuncs of Python
# callables): not generated here but NumPy's on host data, in :mod:`.submodules`.
HOST_ONLY = frozenset({"asmatrix", "bmat", "frompyfunc"})

# Public callables not offered, each with its reason.
EXCLUDED = {
    "test": "runs NumPy's own test suite; not an array function",
    "from_dlpack": "replaced by minpy.from_dlpack, which keeps the producer's device",
}

# Writes its first positional argument in place.
MUTATES_FIRST = frozenset({
    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis",
})

def _polyfit_forward(xp, x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``polyfit``; on a device ``y`` is copied first when weighted: CuPy's polyfit
    scales a float64 ``y`` by ``w`` in place (``rhs = y; rhs *= w``)."""
    if w is not None and xp is not numpy:
        y = xp.array(y, copy=True)
    return xp.polyfit(x, y, deg, rcond, full, w, cov)


# Bodies run on every backend in place of the backend's function of that name: the
# writes whose repeated indices a device must reduce to NumPy's last one (see
# minpy.core.writes.write), and calls a device answers differently.
def _meshgrid_forward(xp, *xi, **kwargs):
    """``meshgrid``; on a device each input is flattened first, as NumPy does (CuPy's
    meshgrid takes 1-d inputs only)."""
    if xp is not numpy:
        xi = [xp.asarray(x).reshape(-1) for x in xi]
    return xp.meshgrid(*xi, **kwargs)


DEVICE_FORWARDS = {"put": put_forward, "put_along_axis": put_along_axis_forward,
                   "polyfit": _polyfit_forward, "meshgrid": _meshgrid_forward}

# Runs where its array argument lives rather than where the policy says.
SELF_PLACED = frozenset({
    "copy", "empty_like", "zeros_like", "ones_like", "full_like", "shape", "ndim",
    "size", "may_share_memory", "shares_memory", "save", "savez", "savez_compressed",
    "savetxt", "array2string", "array_repr", "array_str",
    # views: a view must share its array's memory, so it is taken where the array lives
    "reshape", "ravel", "transpose", "matrix_transpose", "permute_dims", "swapaxes",
    "moveaxis", "rollaxis", "squeeze", "expand_dims", "diagonal", "real", "imag",
    "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d",
    "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack", "flip", "fliplr",
    "flipud", "rot90",
})

# Creates arrays from non-array inputs: runs on the current context.
CREATION = frozenset({
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",
    "asarray_chkfinite", "require", "zeros", "ones", "empty", "full", "arange",
    "linspace", "logspace", "geomspace", "eye", "identity", "tri", "fromfunction",
    "fromiter", "frombuffer", "fromstring", "fromfile", "loadtxt", "genfromtxt",
    "load", "indices", "diag_indices", "tril_indices", "triu_indices", "mask_indices",
    "hamming", "hanning", "bartlett", "blackman", "kaiser", "fromregex",
    # fft
    "fftfreq", "rfftfreq",
})


def make_create(qualname, impl, **kw):
    """A creation function accepting an extra ``ctx=`` (default: the current context)."""
    inner = make_function(qualname, impl, placement=CREATE, **kw)
    process = state.process

    def create(*args, ctx=None, **kwargs):
        if kwargs and "device" in kwargs:
            ctx = device_as_context(create.__name__, kwargs.pop("device"), ctx)
        if ctx is None or (process.fast and ctx.device_type == "cpu"):
            return inner(*args, **kwargs)
        with ctx:
            return inner(*args, **kwargs)
    create.__name__ = inner.__name__
    create.__qualname__ = inner.__qualname__
    create.__doc__ = inner.__doc__
    create._prim = inner._prim
    create.__wrapped_numpy__ = impl
    return create


# Not creation functions, but taking the array API's ``device=`` keyword.
DEVICE_KEYWORD = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "astype"})


def device_as_context(name, device, ctx=None):
    """The Context meant by a ``device=`` keyword (a Context, 'cpu', 'gpu' or 'gpu:N'),
    or ``ctx`` when it is None."""
    if device is None:
        return ctx
    named = context_named(device)
    if named is None:
        raise ValueError(f"{name}: device={device!r} is not a device; expected a minpy "
                         "Context (minpy.cpu(0), minpy.gpu(i)) or 'cpu' / 'gpu:N'")
    if ctx is not None and ctx != named:
        raise ValueError(f"{name}: ctx={ctx} and device={named} disagree")
    return named


def with_device_keyword(fn):
    """``fn`` taking ``device=``: the result moved to that device when it lives elsewhere."""
    def on_device(*args, device=None, **kwargs):
        r = fn(*args, **kwargs)
        if device is None:
            return r
        return r.as_in_context(device_as_context(on_device.__name__, device))
    for attr in ("__name__", "__qualname__", "__doc__", "_prim", "__wrapped_numpy__"):
        setattr(on_device, attr, getattr(fn, attr))
    return on_device


# NumPy functions that, for an ndarray first argument, are exactly the ndarray
# method with the same positional signature; the method skips NumPy's
# Python-level dispatch (about 1 us per call). (Not std/var: their methods
# reject the ``correction=`` keyword of the functions.)
METHOD_EQUIVALENT = frozenset({
    "sum", "prod", "mean", "max", "min", "amax", "amin", "all", "any",
    "argmax", "argmin", "cumsum", "cumprod",
})


def _transpose_fast(a, axes=None):
    if type(a) is numpy.ndarray:
        return a.transpose(axes)
    return numpy.transpose(a, axes)


def _swapaxes_fast(a, axis1, axis2):
    if type(a) is numpy.ndarray:
        return a.swapaxes(axis1, axis2)
    return numpy.swapaxes(a, axis1, axis2)


# NumPy functions with a Python-level prologue, replaced (for the NumPy backend
# only) by the equivalent C-level call when the argument is a plain ndarray.
FAST_IMPLS = {"transpose": _transpose_fast, "swapaxes": _swapaxes_fast}


def wrap_callable(prefix, name, obj):
    """The minpy object for NumPy's ``obj`` (public name ``name`` in ``prefix``)."""
    qual = prefix + name
    if isinstance(obj, numpy.ufunc):
        return make_ufunc(obj)
    if name in CREATION:
        return make_create(qual, obj, name=name)
    if name in MUTATES_FIRST:
        return make_function(qual, obj, mutates=0, name=name,
                             forward=DEVICE_FORWARDS.get(qual))
    if not prefix and name in DECLARED:      # declared by core, which calls it too
        fn = make_function(qual, None, prim=DECLARED[name], name=name,
                           doc=_namespace_doc(qual, obj))
        fn.__wrapped_numpy__ = obj
        return with_device_keyword(fn) if name in DEVICE_KEYWORD else fn
    impl = obj
    if not prefix and name in FAST_IMPLS:
        impl = FAST_IMPLS[name]
    elif not prefix and name in METHOD_EQUIVALENT:
        impl = method_first(name, obj)
    fn = make_function(qual, impl, placement=SELF if name in SELF_PLACED else COMPUTE,
                       name=name, doc=None if impl is obj else _namespace_doc(qual, obj),
                       forward=DEVICE_FORWARDS.get(qual))
    fn.__wrapped_numpy__ = obj
    if not prefix and name in DEVICE_KEYWORD:
        return with_device_keyword(fn)
    return fn


def _namespace_doc(qual, obj):
    return (f"minpy.{qual}: NumPy's ``numpy.{qual}`` on minpy arrays, run on the device "
            f"chosen by the policy.\n\nSee also numpy.{qual}.\n\n{obj.__doc__ or ''}")


def build(np_module, prefix, target, skip=()):
    """Fill dict ``target`` with the minpy version of every public name of ``np_module``.

    Returns {numpy object: minpy object} for the wrapped callables.
    """
    mapping = {}
    loaded = vars(np_module)
    for name in dir(np_module):
        if name.startswith("_") or name in skip or name in EXCLUDED or name in HOST_ONLY:
            continue
        if name not in loaded and importlib.util.find_spec(f"{np_module.__name__}.{name}"):
            continue        # a lazily imported submodule (numpy.f2py ...): not imported for us
        obj = getattr(np_module, name)
        if isinstance(obj, types.ModuleType):
            continue
        if isinstance(obj, type) or not callable(obj) or name in UTILITIES:
            target[name] = obj
            continue
        mine = wrap_callable(prefix, name, obj)
        target[name] = mine
        mapping[obj] = mine
    return mapping


def sign_like_numpy(namespace, np_module):
    """``inspect.signature`` of each wrapper in dict ``namespace`` (a module's globals) is
    that of NumPy's function of the same name in ``np_module``: it follows ``__wrapped__`` (read only by inspect,
    so the call path is unchanged). NumPy's own objects (the utilities) are left alone:
    ``f.__wrapped__ = f`` would make inspect.signature(numpy.f) a wrapper loop."""
    for name, mine in list(namespace.items()):
        theirs = getattr(np_module, name, None)
        if (type(mine) is types.FunctionType and callable(theirs) and mine is not theirs
                and not hasattr(mine, "__wrapped__") and not name.startswith("_")):
            mine.__wrapped__ = theirs


class IndexTrick:
    """``minpy.mgrid``/``ogrid``/``r_``/``c_``: NumPy's index tricks returning Arrays."""

    def __init__(self, name, placement):
        self._name = name
        self._fn = make_function(name, lambda key: getattr(numpy, name)[key],
                                 forward=lambda xp, key: getattr(xp, name)[key],
                                 placement=placement, name=name)

    def __getitem__(self, key):
        return self._fn(key)

    def __repr__(self):
        return f"<minpy index trick {self._name}>"
