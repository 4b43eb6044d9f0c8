"""``import minpy.mxnet as mx``: MXNet 1.x's module layout over minpy's own objects.

Each name is the minpy module or object that does the work (no second
implementation), imported on first use (issue 27: ``import minpy.mxnet`` loads
nothing but this file; :data:`SUBMODULES` is the table):

- ``mx.sym``/``mx.symbol``: :mod:`minpy.symbol`
- ``mx.nd``/``mx.ndarray``: :mod:`minpy.mxnet.ndarray` (MXNet's NDArray API);
  ``mx.autograd``: :mod:`minpy.mxnet.autograd`
- ``mx.mod``/``mx.module``: :mod:`minpy.mxnet.module` (``Module``, ``BaseModule``)
- ``mx.io``: :mod:`minpy.mxnet.io` (minpy.nn.io's iterators, ``CSVIter``, ``MNISTIter``,
  ``ResizeIter``)
- ``mx.kv``/``mx.kvstore``: :mod:`minpy.kvstore`
- ``mx.optimizer``, ``mx.lr_scheduler``: :mod:`minpy.mxnet.optimizer`,
  :mod:`minpy.mxnet.lr_scheduler`
- ``mx.init``/``mx.initializer``, ``mx.metric``, ``mx.callback``:
  :mod:`minpy.mxnet.initializer`, :mod:`minpy.mxnet.metric`, :mod:`minpy.mxnet.callback`
- ``mx.model``: :mod:`minpy.mxnet.model` (``load_checkpoint``, ``save_checkpoint``,
  ``FeedForward``)
- ``mx.context``: :mod:`minpy.mxnet.context`; ``mx.cpu``, ``mx.gpu``, ``mx.Context``,
  ``mx.current_context``: minpy's devices
- ``mx.random``/``mx.rnd``: :mod:`minpy.mxnet.random` (``seed``)
- ``mx.viz``/``mx.visualization``: :mod:`minpy.mxnet.visualization`;
  ``mx.test_utils``: :mod:`minpy.mxnet.test_utils`

``mx.gluon`` and ``mx.image`` raise ImportError saying what is out of scope. ``mx.__version__`` is
``"1.9.1-minpy"``: the MXNet release whose Python API this follows, marked as not
MXNet (a program comparing versions reads 1.9.1; one printing it sees minpy).
``mx.MXNetError`` (a RuntimeError, :class:`minpy.core.imperative.MXNetError`) is what
minpy raises where MXNet raises MXNetError (autograd's misuse; the symbols' ShapeError
and DTypeError derive from it), so ``except mx.MXNetError`` catches them. The paths
``minpy.module``, ``minpy.metric``, ``minpy.callback``, ``minpy.initializer`` and
``minpy.model`` are the same modules (:data:`minpy.compat.ALIASES`).

See also the README's MXNet section (what of MXNet 1.x is covered).
"""
import importlib

from ..core.imperative import MXNetError
from ..dispatch.context import Context, cpu, current_context, gpu, num_gpus

__version__ = "1.9.1-minpy"

__all__ = ["Context", "cpu", "gpu", "current_context", "num_gpus", "MXNetError",
           "__version__", "SUBMODULES"]


# mx.<name>: the module it is, imported on first use (tests/test_import_graph.py reads
# this table as imports of this package)
SUBMODULES = {
    "sym": "minpy.symbol", "symbol": "minpy.symbol",
    "nd": "minpy.mxnet.ndarray", "ndarray": "minpy.mxnet.ndarray",
    "autograd": "minpy.mxnet.autograd",
    "mod": "minpy.mxnet.module", "module": "minpy.mxnet.module",
    "io": "minpy.mxnet.io",
    "kv": "minpy.kvstore", "kvstore": "minpy.kvstore",
    "optimizer": "minpy.mxnet.optimizer",
    "lr_scheduler": "minpy.mxnet.lr_scheduler",
    "init": "minpy.mxnet.initializer", "initializer": "minpy.mxnet.initializer",
    "metric": "minpy.mxnet.metric",
    "callback": "minpy.mxnet.callback",
    "model": "minpy.mxnet.model",
    "context": "minpy.mxnet.context",
    "random": "minpy.mxnet.random", "rnd": "minpy.mxnet.random",
    "viz": "minpy.mxnet.visualization", "visualization": "minpy.mxnet.visualization",
    "test_utils": "minpy.mxnet.test_utils",
    "operator": "minpy.mxnet.operator",
    "rnn": "minpy.mxnet.rnn",
    "monitor": "minpy.mxnet.monitor", "mon": "minpy.mxnet.monitor",
    "profiler": "minpy.mxnet.profiler",
    "recordio": "minpy.mxnet.recordio",
}

_OUT_OF_SCOPE = {
    "gluon": "Gluon (mx.gluon) is out of minpy.mxnet's scope: minpy covers MXNet 1.x's "
             "symbolic API (mx.sym, mx.mod, mx.io ...), mx.nd and mx.autograd; for "
             "imperative models write plain minpy code with minpy.grad (README, MXNet "
             "section)",
    "image": "mx.image (MXNet's C++/OpenCV image decoding and augmentation) is not in "
             "minpy.mxnet: read RecordIO images with mx.recordio (unpack_img decodes with "
             "cv2 or Pillow) and serve the arrays with mx.io.NDArrayIter",
}


def __getattr__(name):
    """``mx.<name>`` for a module of :data:`SUBMODULES`, imported on first use (then bound
    here, so this runs once per name).

    Raises:
        ImportError: ``gluon`` (out of scope, saying so), or a module of the table
            that this installation lacks.
        AttributeError: any other missing name.
    """
    if name in _OUT_OF_SCOPE:
        raise ImportError(_OUT_OF_SCOPE[name])
    target = SUBMODULES.get(name)
    if target is None:
        raise AttributeError(f"module 'minpy.mxnet' has no attribute {name!r} (MXNet 1.x "
                             f"names minpy covers: see the README's MXNet section)")
    module = importlib.import_module(target)
    globals()[name] = module
    return module


def __dir__():
    """The names here, including the modules imported on first use."""
    return sorted(set(globals()) | set(SUBMODULES))
