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
"""
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


def _old_sampler(func, first, second):
    def fn(*args, **kwargs):
        names = (first, second, "shape", "ctx", "dtype")
        if len(args) > len(names):
            raise TypeError(f"mx.nd.{fn.__name__}: at most {len(names)} positional arguments "
                            f"({', '.join(names)})")
        for k, v in zip(names, args):
            if k in kwargs:
                raise TypeError(f"mx.nd.{fn.__name__}() got multiple values for {k!r}")
            kwargs[k] = v
        if isinstance(kwargs.get(first), (tuple, list)):
            raise TypeError(f"mx.nd.{fn.__name__}: {first}={kwargs[first]!r} looks like a shape: "
                            f"MXNet 1.9.1's order is ({first}, {second}, shape, ctx, dtype), e.g. "
                            f"mx.nd.{fn.__name__}(-10, 10, shape); the pre-1.0 form "
                            f"{fn.__name__}(shape, 10, -10) of the MXNet talk's slides is refused "
                            "there too")
        return func(**kwargs)
    return fn


uniform = _old_sampler(random.uniform, "low", "high")
uniform.__name__ = "uniform"
uniform.__doc__ = ("MXNet 1.x's old top-level uniform sampler: positional order (low, high, "
                   "shape, ctx, dtype). See also mxnet.ndarray.uniform.")
normal = _old_sampler(random.normal, "loc", "scale")
normal.__name__ = "normal"
normal.__doc__ = ("MXNet 1.x's old top-level normal sampler: positional order (loc, scale, "
                  "shape, ctx, dtype). See also mxnet.ndarray.normal.")
random_uniform, random_normal = uniform, normal
random_randint = random.randint
shuffle = random.shuffle

__all__ = sorted(n for n, v in globals().items()
                 if not n.startswith("_") and not isinstance(v, type(random))) + ["random"]
