"""``minpy.scipy.integrate``: ``odeint`` differentiable by the adjoint method.

:func:`odeint` has SciPy's signature and values: the forward pass is
``scipy.integrate.odeint`` (LSODA) on host arrays, calling your ``func`` (written
with minpy functions) on host Arrays. Its gradient with respect to ``y0``, the
times ``t`` and every array inside ``args`` (nested tuples, lists, dicts and
namedtuples of arrays, as a neural ODE passes its parameters) is computed by
the adjoint method (Pontryagin; Chen et al., "Neural Ordinary Differential
Equations", 2018): from the last output time back to the first, the augmented
state ``[y, a, a_theta]`` is integrated backwards with ``scipy.integrate.odeint``::

    dy/dt       = f(y, t, theta)
    da/dt       = -a^T df/dy            (the adjoint of y)
    da_theta/dt = -a^T df/dtheta        (accumulates the parameter gradient)

where the vector-Jacobian products of ``f`` are taken with ``minpy.grad`` on
each evaluation, and ``a`` jumps by the output gradient at every output time.
The time gradients follow in closed form: ``dL/dt_i = g_i . f(y_i, t_i)`` for
``i >= 1`` and ``dL/dt_0 = -a(t_0) . f(y_0, t_0)`` (``a`` before ``g_0`` is added).

Only first-order gradients: a gradient of the gradient (``grad(grad(...))``
through ``odeint``) raises ``NotImplementedError``.
"""
import numbers

import numpy
import scipy.integrate as _scipy_integrate

from ..core import tree
from ..core.array import Array, new
from ..core.autograd import grad
from ..core.custom_ops import customop
from ..dispatch.context import cpu
from ..dispatch.transfer import context_of, move_raw
from .. import numpy as mnp

__all__ = ["odeint"]

_NAME = "minpy.scipy.integrate.odeint"
_CPU0 = cpu(0)


# ---------------------------------------------------------------- argument trees
def _is_array(x):
    return type(x) is Array or isinstance(x, numpy.ndarray)


def _traced(x):
    """True when ``x`` is an Array recorded by an active tape."""
    n = getattr(x, "_node", None) if type(x) is Array else None
    return n is not None and n.tape.active


def _host(x):
    """Host NumPy data of an Array (an explicit copy from a GPU) or array-like."""
    if type(x) is Array:
        return x.asnumpy()
    return numpy.asarray(x)


def _on_host(x):
    """An Array argument as an Array on the host (copied there from a GPU)."""
    if type(x) is Array and context_of(x._data) != _CPU0:
        return new(x.asnumpy())
    return x


def _context(x):
    return context_of(x._data) if type(x) is Array else _CPU0


# ---------------------------------------------------------------- one call's record
class _Call:
    """What one ``odeint`` call needs beyond its differentiable arrays: the function,
    the skeleton of ``args``, its constant arrays, the solver options, SciPy's
    ``infodict`` (``full_output``) and the adjoint solution once computed."""

    def __init__(self, func, skel, consts, traced, options, tfirst, dfun, full_output):
        self.func = func
        self.skel = skel
        self.consts = consts            # leaf index -> constant array (None: differentiable)
        self.traced = traced            # leaf indices passed as the differentiable list
        self.options = options
        self.tfirst = tfirst
        self.dfun = dfun
        self.full_output = full_output
        self.info = None
        self.cache = None               # (g, gradients) of the last adjoint solve
        self._host_consts = None

    def args_with(self, diff):
        """``args`` rebuilt with the differentiable leaves ``diff`` (host Arrays)."""
        if self._host_consts is None:       # constants copied to the host once
            self._host_consts = [None if c is None else _on_host(c) for c in self.consts]
        leaves = list(self._host_consts)
        for i, d in zip(self.traced, diff):
            leaves[i] = d
        return tree.unflatten(self.skel, leaves)

    def call(self, y, tt, fargs):
        return self.func(tt, y, *fargs) if self.tfirst else self.func(y, tt, *fargs)

    def host_rhs(self, fargs, size, y_shape):
        """``f`` as SciPy calls it: host vector in, host vector out."""
        def rhs(y, tt):
            out = self.call(new(y), tt, fargs)
            if _traced(out):
                raise TypeError(f"{_NAME}: func's result depends on an array being "
                                "differentiated that is not passed through args (a closure "
                                "or global); pass it in args=(...) so its gradient is "
                                "computed")
            h = _host(out)
            if h.size != size:
                raise ValueError(f"{_NAME}: func returned shape {h.shape}; expected {size} "
                                 f"values (y0 has shape {y_shape})")
            return h.reshape(-1)
        return rhs


# ---------------------------------------------------------------- forward
def _forward(y0, t, diff, rec):
    """The customop body: SciPy's odeint on host data, the result on y0's device."""
    y0h = numpy.asarray(_host(y0), dtype=float).reshape(-1)
    th = numpy.asarray(_host(t), dtype=float)
    fargs = rec.args_with([_on_host(d) for d in diff])
    rhs = rec.host_rhs(fargs, y0h.size, tuple(getattr(y0, "shape", ())))

    def jacobian(y, tt):
        return _host(rec.dfun(tt, new(y), *fargs) if rec.tfirst
                     else rec.dfun(new(y), tt, *fargs))
    res = _scipy_integrate.odeint(rhs, y0h, th, Dfun=None if rec.dfun is None else jacobian,
                                  full_output=rec.full_output, tfirst=False, **rec.options)
    if rec.full_output:
        res, rec.info = res
    return new(move_raw(res, _context(y0)))


_odeint_op = customop(_forward, name="scipy.integrate.odeint")


# ---------------------------------------------------------------- adjoint
_ADJOINT_OPTIONS = ("mxstep", "hmax", "hmin", "mxhnil", "mxordn", "mxords", "printmessg")


def _tolerance(value, n_state, n_extra):
    """A tolerance for the augmented state: per-component values extended by their
    smallest to the adjoint components."""
    if value is None or numpy.ndim(value) == 0:
        return value
    v = numpy.asarray(value, dtype=float).reshape(-1)
    if v.size != n_state:
        return float(v.min())
    return numpy.concatenate([v, numpy.full(n_extra, v.min())])


def _gradient_like(host, like):
    """``host`` shaped, typed and placed like the argument ``like`` (None for integers)."""
    dt = getattr(like, "dtype", None)
    dt = numpy.dtype(dt) if dt is not None else numpy.result_type(like)
    if not numpy.issubdtype(dt, numpy.inexact):
        return None
    shape = tuple(getattr(like, "shape", numpy.shape(like)))
    return new(move_raw(numpy.asarray(host, dtype=dt).reshape(shape), _context(like)))


def _adjoint(rec, ans, y0, t, diff, g):
    """Gradients ``(g_y0, g_t, [g_leaf, ...])`` of ``<g, odeint(...)>``, solved once per
    output gradient ``g``."""
    if rec.cache is not None and rec.cache[0] is g:
        return rec.cache[1]
    if any(_traced(v) for v in (g, ans, y0, t) + tuple(diff)):
        raise NotImplementedError(f"{_NAME}: only first-order gradients are supported (the "
                                  "adjoint solve runs on host arrays and is not recorded); "
                                  "grad of grad through odeint is not available")
    ys = numpy.asarray(_host(ans), dtype=float)
    n_t, n_y = ys.shape
    gh = numpy.asarray(_host(g), dtype=float).reshape(n_t, n_y)
    th = numpy.asarray(_host(t), dtype=float)
    params = [_on_host(d) if type(d) is Array else new(numpy.asarray(d)) for d in diff]
    sizes = [int(p.size) for p in params]
    n_p = sum(sizes)
    consts_args = rec.args_with(params)            # for plain evaluations of f
    rhs = rec.host_rhs(consts_args, n_y, tuple(getattr(y0, "shape", ())))

    def vjps(y, tt, a):
        """f(y, tt), a^T df/dy and a^T df/dtheta (host vectors)."""
        a_arr = new(a)
        seen = []

        def inner(yv, plist):
            out = rec.call(yv, tt, rec.args_with(plist))
            seen.append(out)
            return mnp.sum(mnp.reshape(out, (-1,)) * a_arr)
        if n_p:
            gy, gp = grad(inner, argnum=(0, 1))(new(y.copy()), list(params))
            gp = numpy.concatenate([numpy.asarray(_host(q), dtype=float).reshape(-1)
                                    for q in gp])
        else:
            gy = grad(lambda yv: inner(yv, []))(new(y.copy()))
            gp = numpy.zeros(0)
        return _host(seen[0]).reshape(-1), numpy.asarray(_host(gy), dtype=float), gp

    def augmented(z, tt):
        f, vy, vp = vjps(z[:n_y], tt, z[n_y:2 * n_y])
        return numpy.concatenate([f, -vy, -vp])

    opts = {k: rec.options[k] for k in _ADJOINT_OPTIONS if k in rec.options}
    opts["rtol"] = _tolerance(rec.options.get("rtol"), n_y, n_y + n_p)
    opts["atol"] = _tolerance(rec.options.get("atol"), n_y, n_y + n_p)
    a = numpy.zeros(n_y)
    a_p = numpy.zeros(n_p)
    g_t = numpy.zeros(n_t)
    for i in range(n_t - 1, 0, -1):
        a = a + gh[i]
        g_t[i] = gh[i] @ rhs(ys[i], th[i])
        if th[i] != th[i - 1]:
            z = _scipy_integrate.odeint(augmented, numpy.concatenate([ys[i], a, a_p]),
                                        [th[i], th[i - 1]], **opts)[-1]
            a, a_p = z[n_y:2 * n_y], z[2 * n_y:]
    g_t[0] = -(a @ rhs(ys[0], th[0]))
    a = a + gh[0]
    g_params, k = [], 0
    for d, s in zip(diff, sizes):
        g_params.append(_gradient_like(a_p[k:k + s], d))
        k += s
    result = (_gradient_like(a, y0), _gradient_like(g_t, t), g_params)
    rec.cache = (g, result)
    return result


def _vjp(which):
    def maker(ans, y0, t, diff, rec):
        return lambda g: _adjoint(rec, ans, y0, t, diff, g)[which]
    return maker


for _which in range(3):
    _odeint_op.def_grad(_vjp(_which), argnum=_which)


# ---------------------------------------------------------------- public function
def _operand(x, name):
    if _is_array(x):
        return x
    if isinstance(x, (numbers.Number, list, tuple)):
        return numpy.asarray(x, dtype=float)
    raise TypeError(f"{_NAME}: {name} must be an array or a sequence of numbers, "
                    f"got {type(x).__name__}")


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None,
           rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0,
           mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False):
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y0`` at ``t[0]``, differentiably.

    SciPy's ``scipy.integrate.odeint`` (LSODA) with SciPy's signature and values;
    ``func`` is called with a 1-D minpy Array ``y`` on the host and a float ``t``
    and may use any minpy function. ``minpy.grad`` differentiates the result with
    respect to ``y0``, ``t`` and every array in ``args`` (nested tuples, lists,
    dicts and namedtuples of arrays are searched) by the adjoint method: one
    backward solve of the augmented ODE with ``scipy.integrate.odeint``, whose
    vector-Jacobian products of ``func`` are taken with ``minpy.grad``.

    Args:
        func: ``func(y, t, *args)`` (``func(t, y, *args)`` with ``tfirst=True``)
            returning ``dy/dt`` with ``y.size`` values. Arrays to differentiate
            must reach it through ``args``, not a closure (that raises TypeError).
        y0: initial state, a scalar or 1-D array.
        t: 1-D sequence of times (monotonic, as SciPy requires); ``t[0]`` is
            the time of ``y0``.
        args: extra arguments of ``func`` (a non-tuple is made a 1-tuple).
        Dfun, col_deriv, full_output, ml, mu, rtol, atol, tcrit, h0, hmax: as
            ``scipy.integrate.odeint``, as are hmin, ixpr, mxstep, mxhnil, mxordn,
            mxords, printmessg and tfirst; ``Dfun`` (called with host Arrays)
            serves the forward solve only. The adjoint solve uses ``rtol``,
            ``atol`` (a per-component tolerance is extended by its smallest value
            to the adjoint components), ``mxstep``, ``hmax``, ``hmin``,
            ``mxhnil``, ``mxordn``, ``mxords`` and ``printmessg``.

    Returns:
        A float64 minpy Array of shape ``(len(t), y0.size)`` (row ``i`` is ``y``
        at ``t[i]``), on the device of ``y0``; with ``full_output`` the pair
        ``(Array, infodict)``, SciPy's ``infodict`` of the forward solve.

    Raises:
        ValueError: (naming the function and the shapes) ``y0`` of more than one
            dimension, ``t`` not 1-D or empty, ``func`` returning the wrong number of
            values.
        TypeError: ``func`` not callable, or its result depending on a
            differentiated array not passed in ``args``.
        NotImplementedError: a second-order gradient (the adjoint solve is not
            differentiable).

    Devices: the solver runs on the host. Arrays on a GPU (``y0``, ``t``,
    arrays in ``args``) are copied to the host explicitly before solving and
    ``func`` gets host Arrays; the result is copied back to ``y0``'s device,
    and each gradient to the device of its argument.

    Only first-order gradients are available (``grad(grad(...))`` through
    ``odeint`` raises). Gradients are exact to the solver's tolerances: tighten
    ``rtol``/``atol`` for accurate gradients.

    See also scipy.integrate.odeint, autograd.scipy.integrate.odeint.
    """
    if not callable(func):
        raise TypeError(f"{_NAME}: func must be callable, got {type(func).__name__}")
    if Dfun is not None and not callable(Dfun):
        raise TypeError(f"{_NAME}: Dfun must be callable or None, got {type(Dfun).__name__}")
    y0 = _operand(y0, "y0")
    t = _operand(t, "t")
    y_shape, t_shape = tuple(y0.shape), tuple(t.shape)
    if len(y_shape) > 1:
        raise ValueError(f"{_NAME}: y0 must be a scalar or one-dimensional; got shape {y_shape}")
    if len(t_shape) != 1 or t_shape[0] == 0:
        raise ValueError(f"{_NAME}: t must be a non-empty 1-D sequence of times; got shape "
                         f"{t_shape}")
    if not isinstance(args, tuple):
        args = (args,)
    leaves, skel = tree.flatten(args)
    traced = [i for i, leaf in enumerate(leaves) if type(leaf) is Array and leaf._node is not None]
    consts = [None if i in traced else leaf for i, leaf in enumerate(leaves)]
    options = dict(col_deriv=col_deriv, ml=ml, mu=mu, rtol=rtol, atol=atol, tcrit=tcrit,
                   h0=h0, hmax=hmax, hmin=hmin, ixpr=ixpr, mxstep=mxstep, mxhnil=mxhnil,
                   mxordn=mxordn, mxords=mxords, printmessg=printmessg)
    rec = _Call(func, skel, consts, traced, options, bool(tfirst), Dfun, bool(full_output))
    out = _odeint_op(y0, t, [leaves[i] for i in traced], rec)
    if full_output:
        return out, rec.info
    return out
