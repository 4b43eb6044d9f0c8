"""Test helpers for symbols: numeric gradient checks and forward checks."""
import numpy

from .. import numpy as mnp
from ..core.execute import mutated
from ..dispatch.context import cpu
from . import executor

__all__ = ["check_symbol_grad", "check_symbol_forward", "bind_numpy"]


def _loc(sym, location, names):
    if isinstance(location, dict):
        return {k: numpy.asarray(v) for k, v in location.items()}
    return {k: numpy.asarray(v) for k, v in zip(names, location)}


def bind_numpy(sym, location, aux_states=None, grad_nodes=(), grad_req="write", dtype=None):
    """Bind ``sym`` on the CPU to copies of the NumPy arrays ``location``
    (dict by name or list in ``list_arguments`` order), with gradients for
    ``grad_nodes``; ``dtype`` casts floating inputs.  Returns the Executor."""
    args = _loc(sym, location, sym.list_arguments())
    aux = _loc(sym, aux_states or {}, sym.list_auxiliary_states())

    def cast(a):
        a = numpy.array(a)
        return a.astype(dtype) if dtype is not None and a.dtype.kind == "f" else a
    arrays = {k: mnp.array(cast(v)) for k, v in args.items()}
    grads = {k: mnp.zeros(arrays[k].shape, dtype=arrays[k].dtype) for k in grad_nodes}
    auxa = {k: mnp.array(cast(v)) for k, v in aux.items()}
    return sym.bind(cpu(), arrays, args_grad=grads or None, grad_req=grad_req,
                    aux_states=auxa)


def check_symbol_grad(sym, location, aux_states=None, grad_nodes=None, out_grads=None,
                      objective=None, eps=1e-6, rtol=1e-5, atol=1e-8, is_train=True,
                      seed=None, rng=None):
    """Compare executor gradients with central differences (float64).

    The scalar checked is ``sum_i <output_i, out_grads_i>`` (random
    ``out_grads`` by default), or ``objective(outputs)`` when given -- for
    loss operators, whose backward ignores the head gradient, pass the loss
    their gradient belongs to.

    Args:
        sym: the Symbol.
        location: input values (dict by name, or list in ``list_arguments`` order).
        aux_states: aux values (restored before every forward).
        grad_nodes: names to check (default: every floating argument).
        seed: reseed the Dropout generator with it before every forward.
    Returns:
        ``{name: (analytic, numeric)}``.
    Raises:
        AssertionError: a gradient differs beyond ``rtol``/``atol``.
    """
    rng = rng or numpy.random.default_rng(0)
    loc = _loc(sym, location, sym.list_arguments())
    if grad_nodes is None:
        grad_nodes = [k for k, v in loc.items() if v.dtype.kind == "f"]
    exe = bind_numpy(sym, loc, aux_states, grad_nodes, dtype=numpy.float64)
    aux0 = {k: v.asnumpy().copy() for k, v in exe.aux_dict.items()}

    def run():
        for k, v in aux0.items():
            _write(exe.aux_dict[k], ..., v)
        if seed is not None:
            executor.seed(seed)
        return [o.asnumpy().copy() for o in exe.forward(is_train=is_train)]

    outs = run()
    if objective is None:
        if out_grads is None:
            out_grads = [rng.standard_normal(o.shape) for o in outs]
        heads = [numpy.asarray(u, dtype=numpy.float64) for u in out_grads]

        def f():
            return sum(float(numpy.sum(o * u)) for o, u in zip(run(), heads))
        exe.backward([mnp.array(u) for u in heads])
    else:
        def f():
            return float(objective(run()))
        exe.backward()
    analytic = {k: exe.grad_dict[k].asnumpy().copy() for k in grad_nodes}
    result = {}
    for k in grad_nodes:
        a = exe.arg_dict[k]
        num = numpy.zeros(a.shape)
        for i in numpy.ndindex(a.shape):
            old = a._data[i]
            _write(a, i, old + eps)
            fp = f()
            _write(a, i, old - eps)
            fm = f()
            _write(a, i, old)
            num[i] = (fp - fm) / (2 * eps)
        result[k] = (analytic[k], num)
        numpy.testing.assert_allclose(analytic[k], num, rtol=rtol, atol=atol,
                                      err_msg=f"gradient of {k!r}")
    return result


def check_symbol_forward(sym, location, expected, aux_states=None, rtol=1e-5, atol=1e-7,
                         is_train=False, dtype=numpy.float64):
    """Bind ``sym`` to ``location``, run forward and compare each output with
    ``expected`` (list of arrays).  Returns the executor."""
    exe = bind_numpy(sym, location, aux_states, dtype=dtype)
    outs = exe.forward(is_train=is_train)
    if len(outs) != len(expected):
        raise AssertionError(f"{len(outs)} outputs, {len(expected)} expected")
    for i, (o, e) in enumerate(zip(outs, expected)):
        numpy.testing.assert_allclose(o.asnumpy(), e, rtol=rtol, atol=atol,
                                      err_msg=f"output {i}")
    return exe


def _write(a, key, value):
    """``a[key] = value`` on the host buffer of the CPU Array ``a``, recorded as a write."""
    a._data[key] = value
    mutated(a)
