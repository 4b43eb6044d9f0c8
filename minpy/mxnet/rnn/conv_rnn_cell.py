"""``mx.rnn``'s convolutional cells: ``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``.

The cells of :mod:`minpy.mxnet.rnn.rnn_cell` with Convolutions in place of
FullyConnected layers (Xingjian et al., NIPS 2015), MXNet 1.9.1's names and
defaults (activation: ``LeakyReLU(act_type='leaky', slope=0.2)``).

See also mxnet.rnn.rnn_cell.ConvLSTMCell.
"""
import functools

from ... import symbol
from .rnn_cell import BaseRNNCell, _add, _mul

__all__ = ["BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]

_LEAKY = functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """Base of the convolutional cells.

    Args:
        input_shape: the shape of one step's input (with the batch axis).
        num_hidden: the state's channels.
        h2h_kernel, h2h_dilate: the state-to-state convolution (odd kernel; padded
            to keep the size).
        i2h_kernel, i2h_stride, i2h_pad, i2h_dilate: the input-to-state convolution.
        i2h_weight_initializer ... h2h_bias_initializer: the parameters' ``init``.
        activation: a name (Activation's ``act_type``) or a function of a Symbol.
        prefix, params: see BaseRNNCell; conv_layout: ``'NCHW'`` ...
    Raises:
        ValueError: an even ``h2h_kernel``.
    """

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                 i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, activation, prefix="", params=None,
                 conv_layout="NCHW"):
        super().__init__(prefix=prefix, params=params)
        if h2h_kernel[0] % 2 != 1 or h2h_kernel[1] % 2 != 1:
            raise ValueError(f"{type(self).__name__}: only odd h2h_kernel sizes are "
                             f"supported, got h2h_kernel={h2h_kernel}")
        self._h2h_kernel = h2h_kernel
        self._h2h_pad = (h2h_dilate[0] * (h2h_kernel[0] - 1) // 2,
                         h2h_dilate[1] * (h2h_kernel[1] - 1) // 2)
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel, self._i2h_stride = i2h_kernel, i2h_stride
        self._i2h_pad, self._i2h_dilate = i2h_pad, i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        data = symbol.Variable("data")
        conv = symbol.Convolution(data=data, num_filter=num_hidden, kernel=i2h_kernel,
                                  stride=i2h_stride, pad=i2h_pad, dilate=i2h_dilate,
                                  layout=conv_layout)
        self._state_shape = (0,) + tuple(conv.infer_shape(data=input_shape)[1][0][1:])
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        # the shape as a hint, as rnn_cell's h2h weights (the begin states' batch is 0)
        hint = ((num_hidden * self._num_gates, num_hidden) + tuple(h2h_kernel)
                if conv_layout == "NCHW" else None)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer, shape=hint)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def _conv_forward(self, inputs, states, name):
        n = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name=f"{name}i2h", data=inputs, num_filter=n,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate, weight=self._iW,
                                 bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name=f"{name}h2h", data=states[0], num_filter=n,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h


class ConvRNNCell(BaseConvRNNCell):
    """The simple recurrent cell over convolutions (see BaseConvRNNCell; prefix
    ``'ConvRNN_'``)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 activation=_LEAKY, prefix="ConvRNN_", params=None, conv_layout="NCHW"):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                         i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         activation, prefix, params, conv_layout)

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(_add(i2h, h2h), self._activation, name=f"{name}out")
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """The LSTM cell over convolutions (see BaseConvRNNCell; prefix ``'ConvLSTM_'``)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 activation=_LEAKY, prefix="ConvLSTM_", params=None, conv_layout="NCHW"):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                         i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         activation, prefix, params, conv_layout)

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout},
                {"shape": self._state_shape, "__layout__": self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(_add(i2h, h2h), num_outputs=4,
                                    axis=self._conv_layout.find("C"), name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = self._get_activation(gates[2], self._activation, name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._plus(_mul(forget_gate, states[1]), _mul(in_gate, in_transform),
                              name=f"{name}state")
        next_h = symbol._mul(out_gate, self._get_activation(next_c, self._activation),
                             name=f"{name}out")
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """The GRU cell over convolutions (see BaseConvRNNCell; prefix ``'ConvGRU_'``)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 activation=_LEAKY, prefix="ConvGRU_", params=None, conv_layout="NCHW"):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                         i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                         h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         activation, prefix, params, conv_layout)

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(_add(i2h_r, h2h_r), act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(_add(i2h_z, h2h_z), act_type="sigmoid",
                                        name=f"{name}_z_act")
        next_h_tmp = self._get_activation(_add(i2h, _mul(reset_gate, h2h)), self._activation,
                                          name=f"{name}_h_act")
        next_h = symbol._plus(_mul(1. - update_gate, next_h_tmp), _mul(update_gate, states[0]),
                              name=f"{name}out")
        return next_h, [next_h]
