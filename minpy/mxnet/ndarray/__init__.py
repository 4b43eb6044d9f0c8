"""``mx.nd`` / ``mx.ndarray``: MXNet 1.9.1's NDArray API over minpy Arrays.

    import minpy.mxnet.ndarray as nd
    a = nd.zeros((100, 50)); b = nd.ones((100, 50))
    c = a * b
    c += 1                       # in place, as MXNet's
    y = nd.FullyConnected(x, w, b, num_hidden=4)

There is no second array type: ``nd.NDArray is minpy.Array``. What it holds:

- creation with MXNet's defaults (float32 unless ``dtype``; ``ctx=`` a minpy
  Context): ``array``, ``zeros``, ``ones``, ``empty``, ``full``, ``arange``
  (``repeat=``), ``eye``, ``linspace``, ``zeros_like``, ``ones_like``, ``full_like``;
- every operator of minpy's symbol registry (MXNet's names: ``dot``,
  ``batch_dot``, ``reshape`` with MXNet's special codes, ``slice_axis``, ``clip``,
  ``sum(axis, keepdims, exclude)``, ``argmax`` (float indices, as MXNet's),
  ``broadcast_*``, ``elemwise_*``, ``concat(*data, dim=1)``, ``stack``,
  ``FullyConnected``, ``Convolution``, ``Pooling``, ``BatchNorm``, ``Dropout``,
  ``SoftmaxOutput`` ...) as an imperative call running the op's own forward
  (:mod:`._invoke`: differentiated by ``minpy.grad`` through the op's registered
  gradient);
- MXNet's Python-level functions (``maximum``, ``add``, ``equal`` ... with numbers)
  and ``one_hot``, ``where``, ``pick``, ``topk``, ``sort``, ``argsort`` (:mod:`.ops`);
- ``nd.random`` and MXNet 1.x's old names ``uniform``, ``normal``,
  ``random_uniform`` ... drawing from minpy's global random state;
- ``waitall``, ``save``/``load`` (MXNet's ``.params`` format, byte-exact).

The engine: in async mode (``minpy.set_async(True)`` / ``with minpy.async_mode():``)
an operator call is pushed to minpy's dependency engine as MXNet pushed it: its
shapes are checked at the call (a ShapeError there), it runs after the writes of
its inputs and before later writes to them, its errors surface at the next wait
(``asnumpy``, ``wait_to_read``, ``waitall``), and a training Dropout writes the
global random state's Var (``minpy.engine.GLOBAL_STATE``: MXNet's random resource),
so draws keep program order. Outside async mode calls run at once (MXNet's
``NaiveEngine``): eager minpy code does not wait for pushed work, so the engine is
only used where every read waits.
"""
import builtins
import numbers

from ...core.array import Array as NDArray
from ...core.async_work import waitall
from ...symbol.format.params import load, save, loads, dumps, NDArrayFileError
from ...symbol.registry import OPS as _OPS
from . import random
from ._invoke import op_function as _op_function, invoke as _invoke_op
from .creation import (array, zeros, ones, empty, full, arange, zeros_like, ones_like,
                       full_like, eye, linspace)
from .ops import (add, subtract, multiply, divide, modulo, power, maximum, minimum, equal,
                  not_equal, greater, greater_equal, lesser, lesser_equal, true_divide,
                  negative, one_hot, where, pick, topk, sort, argsort)

_SKIP = ("_backward_", "_FusedElemwise", "_BatchNormReLU", "_grad_accumulate")
_HAND = set(globals())
for _name in sorted(_OPS):
    if _name.startswith(_SKIP) or _name in _HAND:
        continue
    globals()[_name] = _op_function(_name)


def concat(*data, **kwargs):
    """Join NDArrays along ``dim`` (default 1, as MXNet's). See also
    mxnet.ndarray.concat."""
    if "num_args" in kwargs:
        kwargs.pop("num_args")
    return _invoke_op("concat", data, kwargs)


def stack(*data, **kwargs):
    """Join NDArrays along a new axis ``axis`` (default 0). See also mxnet.ndarray.stack."""
    kwargs.pop("num_args", None)
    return _invoke_op("stack", data, kwargs)


def concatenate(arrays, axis=0, always_copy=True):
    """Join a list of NDArrays along existing axis ``axis`` (MXNet's Python-level
    helper; a copy even for one array). See also mxnet.ndarray.concatenate."""
    if not arrays:
        raise ValueError("mx.nd.concatenate: no arrays given")
    return _invoke_op("concat", tuple(arrays), {"dim": axis})


def onehot_encode(indices, out):
    """MXNet's legacy one-hot: write into ``out`` (n, depth) the one-hot rows of
    ``indices`` (n,). See also mxnet.ndarray.onehot_encode."""
    out[...] = one_hot(indices, out.shape[1], dtype=out.dtype)
    return out


def choose_element_0index(lhs, rhs, out=None):
    """MXNet's legacy ``pick`` along axis 1: ``lhs[i, rhs[i]]``. See also
    mxnet.ndarray.choose_element_0index."""
    return pick(lhs, rhs, axis=1, out=out)


def _old_sampler(func, first, second, ordered):
    def fn(*args, **kwargs):
        names = (first, second, "shape", "ctx", "dtype")
        if args and isinstance(args[0], (tuple, list)):
            # the MXNet talk's mx.nd.uniform(shape, 10, -10): a shape first, then the
            # two numbers (a tuple cannot be a bound, so the form is unambiguous)
            names = ("shape", first, second, "ctx", "dtype")
        if len(args) > len(names):
            raise TypeError(f"mx.nd.{fn.__name__}: at most {len(names)} positional arguments "
                            f"({', '.join(names)})")
        for k, v in zip(names, args):
            if k in kwargs:
                raise TypeError(f"mx.nd.{fn.__name__}() got multiple values for {k!r}")
            kwargs[k] = v
        if names[0] == "shape" and ordered:
            lo, hi = kwargs.get(first, 0), kwargs.get(second, 1)
            if not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                       for v in (lo, hi)):
                raise TypeError(f"mx.nd.{fn.__name__}(shape, a, b): the bounds must be "
                                f"numbers, got {lo!r} and {hi!r}")
            kwargs[first], kwargs[second] = builtins.min(lo, hi), builtins.max(lo, hi)
        return func(**kwargs)
    return fn


uniform = _old_sampler(random.uniform, "low", "high", True)
uniform.__name__ = "uniform"
uniform.__doc__ = ("MXNet 1.x's old top-level uniform sampler: positional order (low, high, "
                   "shape, ctx, dtype). The MXNet talk's form ``uniform(shape, a, b)`` (a "
                   "tuple or list first, which MXNet 1.9.1 refuses) is accepted too: samples "
                   "of ``shape`` drawn over [min(a, b), max(a, b)), so "
                   "``uniform((2, 2), 10, -10)`` draws from [-10, 10). See also "
                   "mxnet.ndarray.uniform.")
normal = _old_sampler(random.normal, "loc", "scale", False)
normal.__name__ = "normal"
normal.__doc__ = ("MXNet 1.x's old top-level normal sampler: positional order (loc, scale, "
                  "shape, ctx, dtype); ``normal(shape, loc, scale)`` (a tuple or list first, "
                  "as the MXNet talk's ``uniform(shape, 10, -10)``) is accepted too. See also "
                  "mxnet.ndarray.normal.")
random_uniform, random_normal = uniform, normal
random_randint = random.randint
shuffle = random.shuffle

__all__ = sorted(n for n, v in globals().items()
                 if not n.startswith("_") and not isinstance(v, type(random))) + ["random"]
