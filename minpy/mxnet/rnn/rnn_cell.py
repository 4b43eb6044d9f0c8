"""``mx.rnn``'s step cells: MXNet 1.x's symbolic recurrent cells over :mod:`minpy.symbol`.

A cell makes the graph of one time step (``cell(inputs, states)``) or of a
whole sequence (``cell.unroll(length, inputs)``), with MXNet 1.9.1's parameter
names (``lstm_i2h_weight`` ...) and node names (``lstm_t0_i2h``,
``lstm_t0_out`` ...), so that checkpoints of MXNet's cells load into the same
cells here::

    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(200, prefix='lstm_l0_'))
    outputs, states = stack.unroll(seq_len, inputs=embed, merge_outputs=True)

This file holds the base class and the step cells (:class:`RNNCell`,
:class:`LSTMCell`, :class:`GRUCell`); the cells made of other cells are in
:mod:`minpy.mxnet.rnn.stack_cell`, :class:`FusedRNNCell` in
:mod:`minpy.mxnet.rnn.fused_rnn_cell`, the convolutional ones in
:mod:`minpy.mxnet.rnn.conv_rnn_cell`.

See also mxnet.rnn.rnn_cell.
"""
import numpy

from ... import symbol
from ...dispatch.context import cpu
from ...nn.io.batch import batch_array
from ..initializer import LSTMBias

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell"]


def zeros(shape=None, dtype=None, name=None, **kwargs):
    """MXNet's ``symbol.zeros``: a constant of zeros (a 0 in ``shape`` is a dimension
    inferred from the consumer), the default ``begin_state`` function."""
    return symbol._zeros(shape=shape, dtype=dtype or "float32", name=name, **kwargs)


def _add(a, b):
    """``a + b`` of two Symbols as MXNet's ``Symbol.__add__`` makes it (``_Plus``:
    elementwise, equal shapes), so shapes are inferred backwards through it to the begin
    states; minpy's ``Symbol.__add__`` broadcasts, which cannot."""
    return symbol._Plus(a, b)


def _mul(a, b):
    """``a * b`` of two Symbols as MXNet's ``Symbol.__mul__`` (``_Mul``, elementwise)."""
    return symbol._Mul(a, b)


def _host(value):
    return value.asnumpy() if hasattr(value, "asnumpy") else numpy.asarray(value)


def _like(values, like):
    """``values`` (NumPy) as an ``mx.nd`` array (a minpy Array) on ``like``'s context."""
    return batch_array(values, getattr(like, "context", None) or cpu())


def _h2h_weight(params, num_hidden, gates):
    """The ``h2h_weight`` Variable, with its shape ``(gates * num_hidden, num_hidden)`` as a
    ``__shape__`` hint: the begin states are ``zeros((0, num_hidden))``, whose unknown batch
    size MXNet's partial shape inference carries into the weight's shape; minpy's infers
    whole shapes only, so a one-step unroll reads the weight's from the hint."""
    return params.get("h2h_weight", shape=(gates * num_hidden, num_hidden))


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """MXNet's: ``inputs`` as a list of per-step Symbols (``merge`` False), one Symbol
    with the time axis of ``layout`` (True), or as given (None); and that axis."""
    if inputs is None:
        raise ValueError("unroll: inputs=None is not supported (deprecated in MXNet); "
                         "create the input Variables outside unroll")
    axis = layout.find("T")
    if axis < 0:
        raise ValueError(f"unroll: layout {layout!r} has no time axis 'T'")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll doesn't allow grouped symbol as input. Please convert "
                                 "to list with list(inputs) first or let unroll handle "
                                 "splitting.")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: length is {length} but {len(inputs)} input symbols "
                             f"were given")
        if merge is True:
            inputs = [symbol.expand_dims(i, axis=axis) for i in inputs]
            inputs = symbol.Concat(*inputs, dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class RNNParams:
    """Container for holding variables, for parameter sharing between cells.

    Args:
        prefix: prepended to the name of every variable made here.
    """

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The Variable ``prefix + name``, made (with ``symbol.Variable(**kwargs)``) the
        first time it is asked for."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Abstract base class of the RNN cells.

    Args:
        prefix: prefix of the node names (and of the parameter names if ``params``
            is None).
        params: an :class:`RNNParams` to share parameters with other cells (None:
            a new one).

    Subclasses implement ``__call__(inputs, states) -> (output, states)`` (one
    step) and ``state_info``.
    """

    def __init__(self, prefix="", params=None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before re-using the cell for another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs, states):
        """Unroll for one time step: ``(output, new states)``.

        See also :meth:`begin_state`, :meth:`unroll`.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement a time step")

    @property
    def params(self):
        """The :class:`RNNParams` of this cell."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """The shape and layout of each state: ``[{'shape': ..., '__layout__': ...}]``."""
        raise NotImplementedError(f"{type(self).__name__} does not define state_info")

    @property
    def state_shape(self):
        """The shape of each state (0: the batch size, inferred)."""
        return [ele["shape"] for ele in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def _check_unmodified(self, method):
        if self._modified:
            raise RuntimeError(f"{type(self).__name__}.{method}: after applying modifier "
                               f"cells (e.g. DropoutCell) the base cell cannot be called "
                               f"directly. Call the modifier cell instead.")

    def begin_state(self, func=zeros, **kwargs):
        """The initial states: ``func(name=PREFIXbegin_state_N, shape=..., __layout__=...,
        **kwargs)`` for each state (``func``: MXNet's ``symbol.zeros`` by default, or
        ``symbol.Variable`` to feed the states as inputs).

        Returns:
            A list of Symbols, one per state.
        Raises:
            RuntimeError: the cell is wrapped by a modifier cell.
        """
        self._check_unmodified("begin_state")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}",
                               **kwargs))
        return states

    def unpack_weights(self, args):
        """Split each ``{prefix}i2h_weight``/``h2h_weight``/biases of ``args`` (dict name ->
        NDArray, e.g. ``Module.get_params()[0]``) into one array per gate
        (``{prefix}i2h_i_weight`` ...). Returns a new dict.

        See also :meth:`pack_weights`.
        """
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group_name in ["i2h", "h2h"]:
            weight = args.pop(f"{self._prefix}{group_name}_weight")
            bias = args.pop(f"{self._prefix}{group_name}_bias")
            for j, gate in enumerate(self._gate_names):
                args[f"{self._prefix}{group_name}{gate}_weight"] = weight[j * h:(j + 1) * h].copy()
                args[f"{self._prefix}{group_name}{gate}_bias"] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """The reverse of :meth:`unpack_weights`: the per-gate arrays concatenated back
        into ``{prefix}i2h_weight`` ... Returns a new dict."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group_name in ["i2h", "h2h"]:
            weight, bias = [], []
            for gate in self._gate_names:
                weight.append(args.pop(f"{self._prefix}{group_name}{gate}_weight"))
                bias.append(args.pop(f"{self._prefix}{group_name}{gate}_bias"))
            for what, parts in (("weight", weight), ("bias", bias)):
                values = numpy.concatenate([_host(p) for p in parts])
                args[f"{self._prefix}{group_name}_{what}"] = _like(values, parts[0])
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll the cell over ``length`` time steps.

        Args:
            length: the number of steps.
            inputs: one Symbol of shape (batch, length, ...) for layout ``'NTC'``
                (length, batch, ...) for ``'TNC'``, or a list of ``length`` Symbols
                of shape (batch, ...).
            begin_state: the states to start from (None: :meth:`begin_state`).
            layout: where the time axis is in ``inputs`` and the merged outputs.
            merge_outputs: True: one Symbol with the outputs of every step on the
                time axis; False: a list of them; None: whichever is natural.
        Returns:
            ``(outputs, states)``: the outputs and the last step's states.
        """
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        states = begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        """``activation`` applied to ``inputs``: a name (Activation's ``act_type``) or a
        function of a Symbol."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class RNNCell(BaseRNNCell):
    """The simple recurrent cell: ``out = activation(FC(x) + FC(h))``.

    Args:
        num_hidden: the state size.
        activation: ``'tanh'`` (default), ``'relu'`` ..., or a function of a Symbol.
        prefix: default ``'rnn_'``; params: see :class:`BaseRNNCell`.
    """

    def __init__(self, num_hidden, activation="tanh", prefix="rnn_", params=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = _h2h_weight(self.params, num_hidden, 1)
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden, name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name=f"{name}h2h")
        output = self._get_activation(_add(i2h, h2h), self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(BaseRNNCell):
    """The LSTM cell (gates in the order i, f, c, o of MXNet's fused layout).

    Args:
        num_hidden: the state size.
        prefix: default ``'lstm_'``; params: see :class:`BaseRNNCell`.
        forget_bias: added to the forget gate's bias at initialisation
            (``i2h_bias`` carries ``init=LSTMBias(forget_bias)``).
    """

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._hW = _h2h_weight(self.params, num_hidden, 4)
        self._iB = self.params.get("i2h_bias", init=LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"},
                {"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 4, name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 4, name=f"{name}h2h")
        gates = symbol.SliceChannel(_add(i2h, h2h), num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._plus(_mul(forget_gate, states[1]), _mul(in_gate, in_transform),
                              name=f"{name}state")
        next_h = symbol._mul(out_gate, symbol.Activation(next_c, act_type="tanh"),
                             name=f"{name}out")
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """The GRU cell, cuDNN's variant (gates r, z, then the candidate; the reset gate
    scales ``FC(h)``'s candidate part).

    Args:
        num_hidden: the state size.
        prefix: default ``'gru_'``; params: see :class:`BaseRNNCell`.
    """

    def __init__(self, num_hidden, prefix="gru_", params=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = _h2h_weight(self.params, num_hidden, 3)
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        prev_state_h = states[0]
        # MXNet's node names, double underscore included ("gru_t0__i2h")
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 3, name=f"{name}_i2h")
        h2h = symbol.FullyConnected(data=prev_state_h, weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 3, name=f"{name}_h2h")
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(_add(i2h_r, h2h_r), act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(_add(i2h_z, h2h_z), act_type="sigmoid",
                                        name=f"{name}_z_act")
        next_h_tmp = symbol.Activation(_add(i2h, _mul(reset_gate, h2h)), act_type="tanh",
                                       name=f"{name}_h_act")
        next_h = symbol._plus(_mul(1. - update_gate, next_h_tmp), _mul(update_gate, prev_state_h),
                              name=f"{name}out")
        return next_h, [next_h]
