"""The rest of autograd's public API: ``vspace``, ``deriv``, ``make_hvp``,
``make_ggnvp``, ``tensor_jacobian_product``, ``grad_and_aux``, and ``primitive_vjps``
(autograd's rule table, a view of minpy's: :mod:`minpy.core.rule_table`).

Each follows autograd (1.6/1.7) in signature and result, built on
:mod:`minpy.core.differentials` and the tape; results are minpy Arrays.
Complex numbers follow :func:`minpy.grad`'s convention (see
:mod:`minpy.core.differentials`).
"""
import functools

import numpy

from .array import Array
from . import tree
from .autograd import (_check_output_dtype, _name, _norm_argnum, _on_current_context,
                       _trace, _unboxed, _vdot_real, grad, jacobian)
from .differentials import _out_tree, _vjp_pass, elementwise_grad, make_jvp, make_vjp
from .ops import ONES_LIKE, apply
from .rule_table import VJPRules, primitive_vjps

__all__ = ["vspace", "VSpace", "ArrayVSpace", "ComplexArrayVSpace", "ContainerVSpace", "deriv",
           "make_hvp", "make_ggnvp", "tensor_jacobian_product", "vector_jacobian_product",
           "grad_and_aux", "primitive_vjps", "VJPRules"]


# ---------------------------------------------------------------- vector spaces
class VSpace:
    """The vector space of a value, as autograd's ``VSpace``: shape, dtype, size
    (real dimension: complex entries count twice), and its vectors."""

    iscomplex = False

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self), self._key()))

    def __repr__(self):
        return f"{type(self).__name__}({self._key()!r})"


class ArrayVSpace(VSpace):
    """The space of arrays of one shape and dtype (autograd's ``ArrayVSpace``)."""

    def __init__(self, value):
        v = value if type(value) is Array else numpy.asarray(value)
        self.shape = tuple(v.shape)
        self.dtype = numpy.dtype(v.dtype)

    def _key(self):
        return (self.shape, self.dtype)

    @property
    def size(self):
        return int(numpy.prod(self.shape, dtype=numpy.int64))

    @property
    def ndim(self):
        return len(self.shape)

    def _new(self, host):
        return _on_current_context(numpy.asarray(host, dtype=self.dtype))

    def zeros(self):
        """An Array of zeros of this shape and dtype."""
        return self._new(numpy.zeros(self.shape))

    def ones(self):
        """An Array of ones (``1 + 1j`` in a complex space, as autograd)."""
        one = numpy.ones(self.shape)
        return self._new(one + 1j * one if self.iscomplex else one)

    def randn(self):
        """Standard normal entries (real and imaginary parts in a complex space), drawn from
        NumPy's global generator as autograd does."""
        r = numpy.random.randn(*self.shape)
        if self.iscomplex:
            r = r + 1j * numpy.random.randn(*self.shape)
        return self._new(r)

    def standard_basis(self):
        """The unit vectors, one per real dimension (``1`` then ``1j`` per complex entry)."""
        units = (1.0, 1.0j) if self.iscomplex else (1.0,)
        for idx in numpy.ndindex(*self.shape):
            for u in units:
                e = numpy.zeros(self.shape, dtype=self.dtype)
                e[idx] = u
                yield self._new(e)

    def add(self, x, y):
        """``x + y``."""
        return x + y

    def scalar_mul(self, x, a):
        """``x * a``."""
        return x * a

    def inner_prod(self, x, y):
        """The real inner product ``Re sum(conj(x) * y)``."""
        return _vdot_real(y, x)

    def covector(self, x):
        """The covector of ``x`` (its conjugate in a complex space)."""
        return x.conj() if self.iscomplex and type(x) is Array else (
            numpy.conj(x) if self.iscomplex else x)


class ComplexArrayVSpace(ArrayVSpace):
    """A space of complex arrays: twice the real dimension (autograd's)."""

    iscomplex = True

    @property
    def size(self):
        return 2 * int(numpy.prod(self.shape, dtype=numpy.int64))


class ContainerVSpace(VSpace):
    """The product space of a list, tuple or dict of values (autograd's
    ``SequenceVSpace``/``DictVSpace``): vectors are containers of the same kind."""

    def __init__(self, value):
        self._leaves, self._td = tree.flatten(value)
        self.shape = tree.unflatten(self._td, [vspace(v) for v in self._leaves])
        self._spaces = [vspace(v) for v in self._leaves]

    def _key(self):
        return (repr(self._td), tuple(self._spaces))

    @property
    def size(self):
        return sum(s.size for s in self._spaces)

    @property
    def iscomplex(self):
        return any(s.iscomplex for s in self._spaces)

    def _each(self, method):
        return tree.unflatten(self._td, [getattr(s, method)() for s in self._spaces])

    def zeros(self):
        """The container of each part's zeros."""
        return self._each("zeros")

    def ones(self):
        """The container of each part's ones."""
        return self._each("ones")

    def randn(self):
        """The container of each part's normal draws."""
        return self._each("randn")

    def standard_basis(self):
        """Unit vectors of the product space (one part a unit vector, the others zero)."""
        for i, s in enumerate(self._spaces):
            for e in s.standard_basis():
                parts = [e if j == i else t.zeros() for j, t in enumerate(self._spaces)]
                yield tree.unflatten(self._td, parts)

    def add(self, x, y):
        """Partwise ``x + y``."""
        return tree.map_tree(lambda a, b: a + b, x, y)

    def scalar_mul(self, x, a):
        """Partwise ``x * a``."""
        return tree.map_tree(lambda v: v * a, x)

    def inner_prod(self, x, y):
        """The sum of the parts' real inner products."""
        return _vdot_real(y, x)

    def covector(self, x):
        """Partwise covector."""
        return tree.unflatten(self._td, [s.covector(v) for s, v in
                                         zip(self._spaces, tree.leaves(x))])


def vspace(value):
    """The vector space of ``value`` (autograd's ``vspace``).

    Args:
        value: a minpy Array (traced or not), a NumPy array or scalar, a Python
            float/int/complex, or a list/tuple/dict of them.
    Returns:
        A :class:`VSpace` with ``shape``, ``dtype`` (arrays), ``size``,
        ``ndim``, ``iscomplex`` and ``zeros()``, ``ones()``, ``randn()``,
        ``standard_basis()``, ``add``, ``scalar_mul``, ``inner_prod``,
        ``covector``. Vectors it makes are minpy Arrays.
    Raises:
        TypeError for a value with no vector space (a string, None, a bool ...).
        See also autograd.builtins / autograd.tracer vspace.
    """
    if isinstance(value, (list, tuple, dict)):
        return ContainerVSpace(value)
    if type(value) is Array or isinstance(value, (numpy.ndarray, numpy.generic, int, float,
                                                  complex)):
        dt = numpy.dtype(value.dtype) if hasattr(value, "dtype") else \
            numpy.asarray(value).dtype
        if dt.kind == "c":
            return ComplexArrayVSpace(value)
        if dt.kind in "fiu" and not isinstance(value, bool):
            return ArrayVSpace(value)
    raise TypeError(f"minpy.vspace: no vector space for a value of type "
                    f"{type(value).__name__} ({value!r:.60}); valid: arrays, numbers "
                    "(not bool), and lists/tuples/dicts of them")


# ---------------------------------------------------------------- operators
deriv = elementwise_grad      # autograd's alias, kept as the same object


def make_hvp(fun, argnum=0):
    """Hessian-vector products of scalar ``fun`` at one point, the forward pass shared.

    Args:
        fun: a scalar function of minpy arrays.
        argnum: an int, or a sequence of ints.
    Returns:
        ``(*args, **kwargs) -> (hvp, g)``: ``g`` is ``grad(fun)`` at the point,
        ``hvp(v)`` is ``H v`` (``v`` shaped like ``g``), callable many times.
        See also autograd.make_hvp.
    """
    argnum = _norm_argnum(argnum, "minpy.make_hvp")
    return make_vjp(grad(fun, argnum), argnum)


def _half_sum_squares(x):
    return 0.5 * (x * x).sum(axis=-1)


def make_ggnvp(f, g=_half_sum_squares, f_argnum=0):
    """Generalized Gauss-Newton-vector products ``J^T H_g J v`` of ``g(f(x))``.

    Args:
        f: a function of minpy arrays (the model: x -> outputs).
        g: a scalar function of ``f``'s output (the loss); default
            ``0.5 * sum(y ** 2, axis=-1)`` as autograd.
        f_argnum: which argument of ``f`` is ``x`` (an int).
    Returns:
        ``(*args, **kwargs) -> ggnvp`` with ``ggnvp(v)`` (``v`` shaped like
        ``x``) the product ``J^T H_g J v`` (``J`` the Jacobian of ``f``,
        ``H_g`` the Hessian of ``g`` at ``f(x)``). See also autograd.make_ggnvp.
    """
    f_argnum = _norm_argnum(f_argnum, "minpy.make_ggnvp")
    f_vjp_maker, f_jvp_maker = make_vjp(f, f_argnum), make_jvp(f, f_argnum)
    g_hvp_maker = make_vjp(grad(g))

    @functools.wraps(f)
    def maker(*args, **kwargs):
        f_vjp, f_x = f_vjp_maker(*args, **kwargs)
        f_jvp = f_jvp_maker(*args, **kwargs)
        g_hvp, _ = g_hvp_maker(f_x)

        def ggnvp(v):
            return f_vjp(g_hvp(f_jvp(v)[1]))
        return ggnvp
    return maker


def tensor_jacobian_product(fun, argnum=0):
    """The tensor-Jacobian product ``tensordot(vector, J, vector.ndim)``.

    Args:
        fun: a function of minpy arrays returning one array.
        argnum: an int, or a sequence of ints.
    Returns:
        ``(*args, vector, **kwargs) -> product`` (the vector is the last positional
        argument, as autograd): ``vector`` matches the leading axes of
        ``fun``'s output; the product has the remaining output axes followed by the
        argument's shape. Its values are autograd's (no conjugation of
        ``vector``). See also autograd.tensor_jacobian_product.
    """
    argnum = _norm_argnum(argnum, "minpy.tensor_jacobian_product")
    who = f"minpy.tensor_jacobian_product({_name(fun)})"

    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        out = fun(*args, **kwargs)
        if type(out) is not Array:
            out = _on_current_context(numpy.asarray(out))
        if type(vector) is not Array:
            vector = _on_current_context(numpy.asarray(vector))
        k, oshape = vector.ndim, tuple(out.shape)
        if tuple(vector.shape) != oshape[:k]:
            raise ValueError(f"{who}: the vector has shape {tuple(vector.shape)}; it must "
                             f"match the leading axes of the output's shape {oshape}")
        v = vector.reshape(tuple(vector.shape) + (1,) * (out.ndim - k))
        return (v * out).sum(axis=tuple(range(k))) if k else v * out
    vector_dot_fun.__name__ = _name(fun)
    jac = jacobian(vector_dot_fun, argnum)

    @functools.wraps(fun)
    def product(*args, **kwargs):
        if not args:
            raise TypeError(f"{who}: missing the vector (the last positional argument)")
        return jac(*args, **kwargs)
    return product


vector_jacobian_product = tensor_jacobian_product    # autograd's alias


def grad_and_aux(fun, argnum=0):
    """The gradient of ``fun``'s first output, and its second output unchanged.

    Args:
        fun: a function returning ``(value, aux)``: ``value`` a real scalar,
            ``aux`` anything (arrays in it come back as plain, untraced values).
        argnum: an int, or a sequence of ints (then a tuple of gradients).
    Returns:
        ``(*args, **kwargs) -> (gradient, aux)``. See also autograd.grad_and_aux.
    """
    argnum = _norm_argnum(argnum, "minpy.grad_and_aux")
    who = f"minpy.grad_and_aux({_name(fun)})"

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        aux_box = []

        def first(*a, **k):
            out = fun(*a, **k)
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(f"{who}: the function must return a pair (value, aux), "
                                f"got a {type(out).__name__}")
            aux_box.append(out[1])
            return out[0]
        first.__name__ = _name(fun)
        tape, leaves, structs, out = _trace(first, argnum, args, kwargs, "minpy.grad_and_aux")
        try:
            aux = tree.map_tree(lambda v: _unboxed(v, tape), aux_box[0])
            refs, values = [], []
            _out_tree(out, tape, refs, values, who)
            if len(values) != 1 or numpy.size(values[0]) != 1:
                raise TypeError(f"{who}: the value must be a scalar, got shape "
                                f"{numpy.shape(values[0]) if len(values) == 1 else '(a tree)'}")
            _check_output_dtype(values[0], fun)
            out_refs = [r for r in refs if r is not None]
            seeds = [apply(ONES_LIKE, values[0])] if out_refs else []
            g = _vjp_pass(tape, leaves, structs, argnum, out_refs, seeds)
        finally:
            tape.nodes = None
        return g, aux
    return wrapped

