"""``minpy.mxnet.module.executor_group``: MXNet's ``DataParallelExecutorGroup`` for ``Module``.

A Module over several contexts binds one executor per context, each to a slice
of the batch (``work_load_list`` weighs the slices, MXNet's
``_split_input_slice``). ``forward`` splits every input along its batch axis
(``DataDesc.layout``'s ``N``, else axis 0) and ``outputs`` concatenates the
executors' outputs on axis 0; ``backward`` splits the head gradients. The
parameters are one copy per executor; ``Module.update`` sums their gradients
and updates every copy through a KVStore, as MXNet does.

:class:`ExecutorGroup` offers what ``Module`` reads of one Executor
(``arg_dict``, ``aux_dict``, ``grad_dict``, ``outputs``, ``forward``,
``backward``, ``copy_params_from``, ``reshape``), merged over the executors.

:func:`bind_shared` binds a symbol to another module's parameter, gradient and
auxiliary-state arrays (MXNet's ``shared_group``, for bucketing): one update
through either executor is seen by both.
"""
from collections.abc import Mapping

import numpy

from ... import numpy as mnp
from ...dispatch.context import cpu
from ...nn.io.batch import batch_array

__all__ = ["ExecutorGroup", "split_input_slice", "batch_axis", "bind_shared"]


def split_input_slice(batch_size, work_load_list):
    """MXNet's ``executor_manager._split_input_slice``: one ``slice`` of the batch per
    device, sized by ``work_load_list``.

    Raises:
        ValueError: a slice would be empty (more devices than samples).
    """
    total = sum(work_load_list)
    nums = [round(w * batch_size / total) for w in work_load_list]
    if sum(nums) < batch_size:
        nums[-1] += batch_size - sum(nums)
    slices, end = [], 0
    for num in nums:
        begin = int(min(end, batch_size))
        end = int(min(begin + num, batch_size))
        if begin >= end:
            raise ValueError(f"Module: batch size {batch_size} split by work_load_list "
                             f"{list(work_load_list)} leaves a device without samples")
        slices.append(slice(begin, end))
    return slices


def _host_as_cpu0(ctx):
    """``cpu(i)`` binds on ``cpu(0)``: minpy keeps all host memory as ``cpu(0)`` (as
    MXNet's ``cpu(i)`` are one memory), and ``simple_bind(cpu(1))`` refuses its own
    host arrays."""
    return cpu() if ctx.device_type == "cpu" else ctx


def _take(value, axis, sl):
    index = (slice(None),) * axis + (sl,)
    return value[index]


def _shape_slice(shape, axis, sl):
    shape = list(shape)
    shape[axis] = sl.stop - sl.start
    return tuple(shape)


class _MergedArgs(Mapping):
    """``ExecutorGroup.arg_dict``: membership and parameters at no cost; an input's
    merged array only when it is read."""

    def __init__(self, group):
        self._group, self._first = group, group.execs[0].arg_dict

    def __getitem__(self, name):
        g = self._group
        if name in g.shapes:
            return g._merged([e.arg_dict[name] for e in g.execs], g.batch_axes[name])
        return self._first[name]

    def __iter__(self):
        return iter(self._first)

    def __len__(self):
        return len(self._first)


class ExecutorGroup:
    """One executor per context over slices of the batch (module doc).

    Args:
        symbol: the network; contexts: the Contexts; work_load_list: weights.
        shapes: dict input name -> full (batch) shape; batch_axes: dict input
            name -> its batch axis; grad_req, type_dict: as ``simple_bind``.
    """

    def __init__(self, symbol, contexts, work_load_list, shapes, batch_axes, grad_req,
                 type_dict, execs=None):
        self.symbol, self.contexts = symbol, list(contexts)
        self.work_load_list = list(work_load_list)
        self.shapes, self.batch_axes = dict(shapes), dict(batch_axes)
        self._grad_req, self._type_dict = grad_req, type_dict
        batch = {shapes[n][batch_axes[n]] for n in shapes}
        if len(batch) != 1:
            raise ValueError(f"Module.bind: the inputs {shapes} have different batch sizes "
                             f"on their batch axes {batch_axes}")
        self.batch_size = batch.pop()
        self.slices = split_input_slice(self.batch_size, self.work_load_list)
        if execs is None:
            execs = [symbol.simple_bind(_host_as_cpu0(ctx), grad_req=grad_req,
                                        type_dict=type_dict, **self._sliced_shapes(sl))
                     for ctx, sl in zip(self.contexts, self.slices)]
        self.execs = execs

    @classmethod
    def shared(cls, symbol, contexts, work_load_list, shapes, batch_axes, grad_req, type_dict,
               shared_group, param_names):
        """A group whose executors share ``shared_group``'s parameter, gradient and aux
        arrays, executor by executor (:func:`bind_shared`).

        Raises:
            ValueError: ``shared_group`` has another number of executors, or as
                :func:`bind_shared`.
        """
        if len(shared_group.execs) != len(contexts):
            raise ValueError(f"Module.bind(shared_module=...): the shared module runs on "
                             f"{len(shared_group.execs)} contexts, this one on {len(contexts)}")
        group = cls(symbol, contexts, work_load_list, shapes, batch_axes, grad_req, type_dict,
                    execs=[])
        group.execs = [bind_shared(symbol, ctx, group._sliced_shapes(sl), grad_req, type_dict,
                                   other, param_names)
                       for ctx, sl, other in zip(contexts, group.slices, shared_group.execs)]
        return group

    def _sliced_shapes(self, sl):
        return {n: _shape_slice(s, self.batch_axes[n], sl) for n, s in self.shapes.items()}

    # ------------------------------------------------------------ what Module reads
    @property
    def arg_dict(self):
        """The parameters of the first executor (all copies are equal after an update);
        the inputs merged over the executors (full batch), made when read."""
        return _MergedArgs(self)

    @property
    def aux_dict(self):
        """The auxiliary states averaged over the executors (MXNet's ``get_params``)."""
        n = len(self.execs)
        return {name: self._on_first(sum(self._on_first(e.aux_dict[name]) for e in self.execs)
                                     / n)
                for name in self.execs[0].aux_dict}

    @property
    def grad_dict(self):
        """Parameter gradients summed over the executors; input gradients merged."""
        out = {}
        for name in self.execs[0].grad_dict:
            parts = [e.grad_dict[name] for e in self.execs]
            if name in self.shapes:
                out[name] = self._merged(parts, self.batch_axes[name])
            else:
                out[name] = sum(self._on_first(p) for p in parts)
        return out

    @property
    def outputs(self):
        """Each output concatenated over the executors on axis 0."""
        return [self._merged(list(parts), 0) for parts in self.outputs_per_device]

    @property
    def outputs_per_device(self):
        """``[[output on device 0, on device 1, ...], ...]`` (``merge_multi_context=False``)."""
        return [list(parts) for parts in zip(*(e.outputs for e in self.execs))]

    def param_arrays(self, name):
        """The copies of parameter ``name``, one per executor."""
        return [e.arg_dict[name] for e in self.execs]

    def param_grads(self, name):
        """The gradients of parameter ``name``, one per executor."""
        return [e.grad_dict[name] for e in self.execs]

    def _on_first(self, a):
        ctx = _host_as_cpu0(self.contexts[0])
        return a.as_in_context(ctx) if hasattr(a, "as_in_context") else a

    def _merged(self, parts, axis):
        return mnp.concatenate([self._on_first(p) for p in parts], axis=axis)

    # ------------------------------------------------------------ computation
    def forward(self, is_train=False, **inputs):
        """Each executor's forward on its slice of every input."""
        for name, value in inputs.items():
            size = tuple(value.shape)[self.batch_axes[name]]
            if size != self.batch_size:
                raise ValueError(f"input {name!r} has {size} samples on axis "
                                 f"{self.batch_axes[name]}, the executors are bound to "
                                 f"{self.batch_size}")
        for exe, sl in zip(self.execs, self.slices):
            exe.forward(is_train=is_train,
                        **{n: _take(v, self.batch_axes[n], sl) for n, v in inputs.items()})
        return self.outputs

    def backward(self, out_grads=None):
        """Each executor's backward with its slice of ``out_grads`` (axis 0)."""
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        for exe, sl in zip(self.execs, self.slices):
            exe.backward(None if out_grads is None else
                         [None if g is None else _take(g, 0, sl) for g in out_grads])

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """The same values into every executor."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **shapes):
        """A group for new input shapes (re-sliced), sharing the parameters."""
        full = dict(self.shapes)
        full.update({k: tuple(v) for k, v in shapes.items()})
        group = ExecutorGroup.__new__(ExecutorGroup)
        ExecutorGroup.__init__(group, self.symbol, self.contexts, self.work_load_list, full,
                               self.batch_axes, self._grad_req, self._type_dict,
                               execs=[])
        group.execs = [exe.reshape(partial_shaping=partial_shaping,
                                   allow_up_sizing=allow_up_sizing,
                                   **group._sliced_shapes(sl))
                       for exe, sl in zip(self.execs, group.slices)]
        return group


def bind_shared(symbol, ctx, shapes, grad_req, type_dict, shared_exec, param_names):
    """An Executor of ``symbol`` whose parameters (``param_names``), their gradients and
    its auxiliary states are ``shared_exec``'s arrays themselves (MXNet's ``simple_bind``
    with ``shared_exec``); the inputs get arrays of their own.

    Args:
        symbol: the network; ctx: its context; shapes: dict input name -> shape.
        grad_req: dict argument name -> ``'write'``/``'add'``/``'null'``.
        type_dict: dict input name -> dtype.
        shared_exec: the Executor whose arrays are shared.
        param_names: the arguments that are parameters.
    Raises:
        ValueError: shapes that do not determine every argument; a parameter or
            auxiliary state the shared executor lacks, or holds with another shape or
            dtype; a gradient asked for that the shared executor does not compute.
    """
    where = "Module.bind(shared_module=...)"
    ctx = _host_as_cpu0(ctx)
    arg_names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        raise ValueError(f"{where}: input shapes {shapes} do not determine every argument's "
                         f"shape")
    arg_types, _, aux_types = symbol.infer_type(**type_dict)
    args, grads, aux = {}, {}, {}

    def shared(kind, table, name, shape, dtype):
        arr = table.get(name)
        if arr is None:
            raise ValueError(f"{where}: the shared module has no {kind} {name!r}; a bucket's "
                             f"parameters must all be parameters of the shared (default) "
                             f"bucket's symbol")
        if tuple(arr.shape) != tuple(shape) or (dtype is not None and arr.dtype != dtype):
            raise ValueError(f"{where}: {kind} {name!r} is {tuple(shape)} {dtype} here but "
                             f"{tuple(arr.shape)} {arr.dtype} in the shared module")
        return arr

    for name, shape, dtype in zip(arg_names, arg_shapes, arg_types):
        req = grad_req.get(name, "null")
        if name in param_names:
            args[name] = shared("parameter", shared_exec.arg_dict, name, shape, dtype)
            if req != "null":
                if shared_exec.grad_dict.get(name) is None:
                    raise ValueError(f"{where}: the shared module computes no gradient of "
                                     f"{name!r} (bound with for_training=False, or a fixed "
                                     f"parameter there)")
                grads[name] = shared_exec.grad_dict[name]
            continue
        dtype = numpy.float32 if dtype is None else dtype
        args[name] = batch_array(numpy.zeros(shape, dtype), ctx)
        if req != "null":
            grads[name] = batch_array(numpy.zeros(shape, dtype), ctx)
    for name, shape, dtype in zip(aux_names, aux_shapes, aux_types):
        aux[name] = shared("auxiliary state", shared_exec.aux_dict, name, shape, dtype)
    return symbol.bind(ctx, args, args_grad=grads, grad_req=dict(grad_req), aux_states=aux)


def batch_axis(desc):
    """MXNet's ``DataDesc.get_batch_axis``: where ``N`` is in the layout (0 without one)."""
    layout = getattr(desc, "layout", None)
    return layout.find("N") if isinstance(layout, str) and "N" in layout else 0

