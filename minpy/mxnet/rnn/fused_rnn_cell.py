"""``mx.rnn.FusedRNNCell``: MXNet's cell over the fused (cuDNN) ``RNN`` operator.

minpy's symbol registry has no fused ``RNN`` operator, so unrolling this cell
raises; :meth:`FusedRNNCell.unfuse` gives the same network as stacked unfused
cells (MXNet's parameter names: ``{prefix}l0_i2h_weight`` ...), and
:meth:`~FusedRNNCell.unpack_weights`/:meth:`~FusedRNNCell.pack_weights`
convert between MXNet's fused parameter vector and those cells' arrays, so a
checkpoint trained with MXNet's fused cell runs here unfused::

    fused = mx.rnn.FusedRNNCell(200, num_layers=2, mode='lstm', prefix='lstm_')
    arg_params = fused.unpack_weights(arg_params)     # from MXNet's checkpoint
    stack = fused.unfuse()                             # LSTMCells 'lstm_l0_', 'lstm_l1_'
    arg_params = stack.pack_weights(arg_params)        # i2h_weight ... as the cells take

See also mxnet.rnn.rnn_cell.FusedRNNCell.
"""
import warnings

import numpy

from ... import symbol
from .rnn_cell import (BaseRNNCell, GRUCell, LSTMCell, RNNCell, _host, _like,
                       _normalize_sequence)
from .stack_cell import BidirectionalCell, DropoutCell, SequentialRNNCell

__all__ = ["FusedRNNCell"]


class FusedRNNCell(BaseRNNCell):
    """MXNet's cell over the fused ``RNN`` operator (cuDNN), of ``num_layers`` layers.

    minpy's symbol registry has no fused ``RNN`` operator: :meth:`unroll` raises
    NotImplementedError (use :meth:`unfuse`, the same network as stacked cells
    that runs anywhere); :meth:`unfuse`, :meth:`unpack_weights` and
    :meth:`pack_weights` (between the fused ``{prefix}parameters`` vector and the
    unfused cells' ``{prefix}l0_i2h_i_weight`` ...) work as MXNet's.

    Args:
        num_hidden: the state size; num_layers: the layers.
        mode: ``'rnn_relu'``, ``'rnn_tanh'``, ``'lstm'`` or ``'gru'``.
        bidirectional: both directions (outputs of twice the size).
        dropout: dropout between layers; get_next_state: return the last states.
        forget_bias: the LSTM forget gate's initial bias (unused: no fused op).
        prefix: default ``'{mode}_'``; params: see :class:`BaseRNNCell`.
    """

    def __init__(self, num_hidden, num_layers=1, mode="lstm", bidirectional=False,
                 dropout=0., get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in ("rnn_relu", "rnn_tanh", "lstm", "gru"):
            raise ValueError(f"FusedRNNCell: mode must be 'rnn_relu', 'rnn_tanh', 'lstm' or "
                             f"'gru', got {mode!r}")
        if prefix is None:
            prefix = f"{mode}_"
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._forget_bias = forget_bias
        self._directions = ["l", "r"] if bidirectional else ["l"]
        # MXNet gives it init=FusedRNN(...); with no fused op to bind it to, none here
        self._parameter = self.params.get("parameters")

    @property
    def state_info(self):
        b = self._bidirectional + 1
        n = (self._mode == "lstm") + 1
        return [{"shape": (b * self._num_layers, 0, self._num_hidden), "__layout__": "LNC"}
                for _ in range(n)]

    @property
    def _gate_names(self):
        return {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
                "gru": ["_r", "_z", "_o"]}[self._mode]

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def _slices(self, li, lh):
        """``{name: (start, stop, shape)}`` of each unfused array in the fused vector,
        MXNet's layout (all weights by layer, direction, gate; then all biases)."""
        out, p = {}, 0
        b = len(self._directions)
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group, cols in (("i2h", li if layer == 0 else b * lh), ("h2h", lh)):
                    for gate in self._gate_names:
                        name = f"{self._prefix}{direction}{layer}_{group}{gate}_weight"
                        out[name] = (p, p + lh * cols, (lh, cols))
                        p += lh * cols
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in self._gate_names:
                        name = f"{self._prefix}{direction}{layer}_{group}{gate}_bias"
                        out[name] = (p, p + lh, (lh,))
                        p += lh
        return out, p

    def unpack_weights(self, args):
        """The fused ``{prefix}parameters`` vector of ``args`` split into the unfused
        cells' per-gate arrays. Returns a new dict.

        Raises:
            ValueError: a vector whose size fits no input size.
        """
        args = dict(args)
        arr = args.pop(self._parameter.name)
        b, m, h = len(self._directions), self._num_gates, self._num_hidden
        size = int(numpy.prod(arr.shape))
        num_input = size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        slices, total = self._slices(num_input, h)
        if total != size:
            raise ValueError(f"FusedRNNCell.unpack_weights: {self._parameter.name!r} has "
                             f"{size} values, which fits no input size for this cell")
        flat = _host(arr).reshape(-1)
        for name, (start, stop, shape) in slices.items():
            args[name] = _like(flat[start:stop].reshape(shape).copy(), arr)
        return args

    def pack_weights(self, args):
        """The unfused cells' per-gate arrays of ``args`` joined into the fused
        ``{prefix}parameters`` vector. Returns a new dict."""
        args = dict(args)
        h = self._num_hidden
        w0 = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        slices, total = self._slices(w0.shape[1], h)
        flat = numpy.zeros((total,), dtype=_host(w0).dtype)
        for name, (start, stop, shape) in slices.items():
            value = _host(args.pop(name))
            if value.shape != shape:
                raise ValueError(f"FusedRNNCell.pack_weights: {name!r} has shape "
                                 f"{value.shape}, expected {shape}")
            flat[start:stop] = value.reshape(-1)
        args[self._parameter.name] = _like(flat, w0)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """MXNet's unroll over the fused ``RNN`` operator.

        Raises:
            NotImplementedError: minpy's symbol registry has no ``RNN`` operator.
        """
        if "RNN" not in symbol.OPS:
            raise NotImplementedError(
                "FusedRNNCell.unroll: minpy's symbol registry has no fused 'RNN' operator; "
                "use cell.unfuse() (the same network as stacked LSTMCell/GRUCell/RNNCell, "
                "whose weights pack_weights/unpack_weights convert) or the unfused cells")
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for "
                          "faster speed", stacklevel=2)
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise ValueError(f"FusedRNNCell.unroll: unsupported layout {layout!r}")
        if begin_state is None:
            begin_state = self.begin_state()
        states = {"state": begin_state[0]}
        if self._mode == "lstm":
            states["state_cell"] = begin_state[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                         name=self._prefix + "rnn", **states)
        if not self._get_next_state:
            outputs, states = rnn, []
        elif self._mode == "lstm":
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a :class:`SequentialRNNCell` of unfused cells (prefixes
        ``{prefix}l0_`` ..., ``{prefix}r0_`` for the reverse direction), which steps and
        runs anywhere."""
        def get_cell(cell_prefix):
            if self._mode == "rnn_relu":
                return RNNCell(self._num_hidden, activation="relu", prefix=cell_prefix)
            if self._mode == "rnn_tanh":
                return RNNCell(self._num_hidden, activation="tanh", prefix=cell_prefix)
            if self._mode == "lstm":
                return LSTMCell(self._num_hidden, prefix=cell_prefix)
            return GRUCell(self._num_hidden, prefix=cell_prefix)

        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(get_cell(f"{self._prefix}l{i}_"),
                                            get_cell(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))
            else:
                stack.add(get_cell(f"{self._prefix}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{i}_"))
        return stack
