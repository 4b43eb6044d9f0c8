"""``minpy.nn``: train real models — layers, init, optim, io, model, Solver.

MinPy's module names: ``minpy.nn.layers`` (functional layers and losses on
the tape; defined in ``activations``, ``conv``, ``recurrent`` and ``layers``),
``minpy.nn.init`` (initialisers), ``minpy.nn.optim`` (MinPy's update
functions; the fused in-place optimizers of ``optimizers`` over the kernels
of ``fused``), ``minpy.nn.optim.schedule`` (learning-rate schedules),
``minpy.nn.io`` (NDArrayIter; the batch protocol in ``batch``, prefetching
in ``prefetch``), ``minpy.nn.io.readers`` (npz/npy/CSV from fsspec URLs),
``minpy.mxnet.bucketing`` (variable-length sequences, one executor per bucket),
``minpy.nn.model`` (ModelBase, SymbolModel), ``minpy.nn.solver`` (Solver: the
training loop), ``minpy.nn.callbacks`` (its one callback protocol: progress
bars, checkpoints, non-finite losses, lr decay, plots), ``minpy.nn.parallel``
(the Solver's data parallelism: replicas on several devices and workers, kept
equal through a KVStore) and ``minpy.nn.checkpoint`` (training-state files and MXNet's
checkpoints). ``minpy.nn.model_builder`` (MinPy's ``Sequential``/``Affine``/``ReLU``
... model builder, imported on use).
"""
from . import layers, init, optim, io, checkpoint, model, parallel, callbacks, solver
from .optim import schedule
from .io import readers

__all__ = ["layers", "init", "optim", "schedule", "io", "readers", "checkpoint", "model",
           "parallel", "callbacks", "solver"]
