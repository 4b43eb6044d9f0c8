"""``minpy.nn.utils``: the helpers of MinPy's ``model_builder_gtc`` branch (its
``minpy/nn/utils.py``, May 2017), on minpy Arrays where MinPy's took MXNet NDArrays.

- :func:`cross_entropy`: mean negative log-probability of the labels;
- :func:`unpack_batch`: a DataBatch's first data and label arrays;
- :func:`count_params`: the number of scalars in a list, tuple or dict of arrays;
- :func:`copy_arrays`: copies of arrays on a context.

See also minpy.nn.modules (the layers its examples use with these).
"""
import numpy

from .. import numpy as mnp
from ..core.array import Array
from ..dispatch.context import Context, current_context

__all__ = ["cross_entropy", "unpack_batch", "count_params", "copy_arrays"]


def cross_entropy(p, labels):
    """``-mean(log p[n, labels[n]])`` of class probabilities ``p`` (N, C).

    Args:
        p: probabilities, shape (N, C) (minpy, NumPy or MXNet-style ``asnumpy`` arrays).
        labels: class indices, shape (N,) (cast to int, as MinPy's).
    Returns:
        A Python float (MinPy's returned a NumPy scalar: the helper is for reporting).
    Raises:
        ValueError: ``p`` is not 2-d or ``labels`` does not have ``len(p)`` entries.
    """
    p = _host(p)
    labels = _host(labels).astype(numpy.int64).reshape(-1)
    if p.ndim != 2 or labels.shape[0] != p.shape[0]:
        raise ValueError(f"cross_entropy: expected p of shape (N, C) and N labels, got "
                         f"p {p.shape} and labels {labels.shape}")
    return float(-numpy.mean(numpy.log(p[numpy.arange(len(p)), labels])))


def unpack_batch(batch):
    """``(data, label)``: the first data and label arrays of a DataBatch, on the current
    context (MinPy's moved them to MXNet's default context)."""
    context = current_context()
    return tuple(x.as_in_context(context) if isinstance(x, Array) else mnp.asarray(x)
                 for x in (batch.data[0], batch.label[0]))


def count_params(params):
    """The total number of scalars in ``params`` (a list, tuple or dict of arrays).

    Raises:
        TypeError: an element is not an array.
    """
    values = list(params.values()) if isinstance(params, dict) else list(params)
    for v in values:
        if not isinstance(v, (Array, numpy.ndarray)):
            raise TypeError(f"count_params: all parameters must be arrays, got "
                            f"{type(v).__name__}")
    return int(sum(v.size for v in values))


def copy_arrays(arrays, context=None):
    """Copies of ``arrays`` (a list, tuple or dict of Arrays) on ``context``.

    Args:
        arrays: minpy Arrays (NumPy arrays are converted).
        context: where the copies live (default the CPU, as MinPy's ``mxnet.cpu()``).
    Returns:
        A dict with the same keys, or a list, of new Arrays.
    """
    if context is None:
        context = Context("cpu", 0)

    def copy(a):
        a = mnp.asarray(a) if not isinstance(a, Array) else a
        return a.copyto(context)
    if isinstance(arrays, dict):
        return {k: copy(v) for k, v in arrays.items()}
    return [copy(a) for a in arrays]


def _host(x):
    if isinstance(x, Array):
        return x.asnumpy()
    if hasattr(x, "asnumpy"):
        return numpy.asarray(x.asnumpy())
    return numpy.asarray(x)
