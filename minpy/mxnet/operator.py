"""``mx.operator``: MXNet 1.9.1's custom operators written in Python.

    class Sqr(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[0])
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])

    @mx.operator.register("sqr")
    class SqrProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Sqr()

    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="sqr")     # or mx.nd.Custom(x, ...)

``register`` files the property class in the symbol layer's table
(:data:`minpy.symbol.ops.custom.PROPS`); the ``Custom`` operator there calls it (how,
and where minpy differs from MXNet: :mod:`minpy.symbol.ops.custom`). A Custom node
works wherever symbols do: ``bind``/``simple_bind``, ``mx.mod.Module``, ``mx.nd.Custom``
(under ``mx.autograd.record`` too) and ``minpy.symbol.Function`` inside ``minpy.grad``.
Parameters given to ``Custom`` reach the property's ``__init__`` as strings, as in
MXNet. MXNet's pre-1.0 ``NumpyOp``, ``NDArrayOp`` and ``PythonOp`` are not provided
(MXNet 1.x deprecates them): write a ``CustomOp``.

See also mxnet.operator.
"""
from ..symbol.ops.custom import register_prop, registered
from ..symbol.registry import OPS

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators",
           "get_registered_custom_operators"]

_REQS = ("null", "write", "inplace", "add")
_DEFAULT = "default"


class CustomOp:
    """Base class of operators implemented in Python (override ``forward`` and
    ``backward``). See also mxnet.operator.CustomOp."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data``.

        Args:
            is_train: whether this is a training pass.
            req: per output, how to write it: 'null', 'write', 'inplace' or 'add'
                (``self.assign`` honours it).
            in_data, out_data, aux: lists of NDArrays: inputs, outputs (to write),
                auxiliary states (may be updated).
        Raises:
            NotImplementedError: not overridden (MXNet's base does nothing, leaving the
                outputs unwritten: a wrong answer; minpy says so instead).
        """
        raise NotImplementedError(f"{type(self).__name__}.forward: a CustomOp must override "
                                  f"forward(is_train, req, in_data, out_data, aux)")

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` (the inputs' gradients) from ``out_grad``.

        Args:
            req: per input gradient, how to write it (see ``forward``).
            out_grad, in_data, out_data, in_grad, aux: lists of NDArrays; entries that
                ``CustomOpProp.declare_backward_dependency`` leaves out are None.
        Raises:
            NotImplementedError: not overridden (the gradients would be left unwritten).
        """
        raise NotImplementedError(f"{type(self).__name__}.backward: a CustomOp must override "
                                  f"backward(req, out_grad, in_data, out_data, in_grad, aux) "
                                  f"to be differentiated")

    def assign(self, dst, req, src):
        """Write ``src`` into NDArray ``dst`` as ``req`` says: 'null' leaves it,
        'write'/'inplace' overwrite it, 'add' adds to it.

        Raises:
            ValueError: another ``req``.
        """
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise ValueError(f"CustomOp.assign: req must be one of {list(_REQS)}, got {req!r}")


class CustomOpProp:
    """Base class of a custom operator's properties: its inputs, outputs, shapes,
    dtypes and backward dependencies, and the factory of its ``CustomOp``.

    Args:
        need_top_grad: whether backward reads the outputs' gradients (False for a
            loss layer, which ends a network).

    See also mxnet.operator.CustomOpProp.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """``(in_shape, out_shapes, aux_shapes)`` from the argument shapes (lists, in
        ``list_arguments`` order); by default every output has the first input's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """``(in_types, out_types, aux_types)`` from the argument dtypes; by default the
        first input's everywhere."""
        return in_type, [in_type[0]] * len(self.list_outputs()), \
            [in_type[0]] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """``(in, out, aux)`` storage types: 'default' (dense) everywhere, the only
        storage minpy has.

        Raises:
            ValueError: an input storage type other than 'default'.
        """
        for i, stype in enumerate(in_stype):
            if stype != _DEFAULT:
                raise ValueError(f"CustomOpProp.infer_storage_type: input {i} has storage "
                                 f"type {stype!r}; only {_DEFAULT!r} (dense) is supported")
        return in_stype, [_DEFAULT] * len(self.list_outputs()), \
            [_DEFAULT] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """Storage types of the backward pass: 'default' everywhere."""
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple([_DEFAULT] * len(x) for x in lists)

    def list_outputs(self):
        """Names of the outputs (default ``['output']``)."""
        return ["output"]

    def list_arguments(self):
        """Names of the inputs (default ``['data']``)."""
        return ["data"]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (default none)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids (among ``out_grad``, ``in_data``, ``out_data``) that backward reads:
        by default the output gradients when ``need_top_grad``, the inputs and the
        outputs."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The ``CustomOp`` doing the work, for device ``ctx``, input shapes (lists)
        and dtypes (MXNet's type codes)."""
        return CustomOp()


def register(reg_name):
    """Decorator registering a ``CustomOpProp`` subclass as Custom ``op_type=reg_name``
    (a second registration of a name replaces the first, with a warning, as MXNet's).

    Returns:
        the decorator, which returns the class unchanged.
    See also mxnet.operator.register.
    """
    def do_register(prop_cls):
        if not isinstance(prop_cls, type):
            raise TypeError(f"mx.operator.register({reg_name!r}): expected a CustomOpProp "
                            f"class, got {prop_cls!r}")
        return register_prop(reg_name, prop_cls)
    return do_register


register("custom_op")(CustomOpProp)


def get_all_registered_operators():
    """Names of every operator minpy's symbol layer has (``Custom`` among them).

    See also mxnet.operator.get_all_registered_operators."""
    return sorted(OPS)


def get_registered_custom_operators():
    """The op_types registered with :func:`register` (minpy's; MXNet has no such call)."""
    return registered()


_OLD = ("NumpyOp", "NDArrayOp", "PythonOp")


def __getattr__(name):
    """MXNet's pre-1.0 Python operators are refused with a pointer to CustomOp."""
    if name in _OLD:
        raise AttributeError(f"mx.operator.{name} (MXNet's deprecated pre-1.0 Python "
                             "operator) is not provided by minpy: subclass "
                             "mx.operator.CustomOp and CustomOpProp and register it with "
                             "mx.operator.register")
    raise AttributeError(f"module 'minpy.mxnet.operator' has no attribute {name!r}")
