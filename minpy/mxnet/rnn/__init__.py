"""``mx.rnn``: MXNet 1.x's symbolic recurrent networks.

- cells (:mod:`~minpy.mxnet.rnn.rnn_cell`, :mod:`~minpy.mxnet.rnn.stack_cell`,
  :mod:`~minpy.mxnet.rnn.fused_rnn_cell`, :mod:`~minpy.mxnet.rnn.conv_rnn_cell`):
  ``RNNCell``, ``LSTMCell``, ``GRUCell``, ``SequentialRNNCell``,
  ``BidirectionalCell``, ``DropoutCell``, ``ZoneoutCell``, ``ResidualCell``,
  ``FusedRNNCell`` (``unfuse()`` only: minpy has no fused ``RNN`` operator),
  ``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``
- :mod:`~minpy.mxnet.rnn.io`: ``BucketSentenceIter``, ``encode_sentences``
- :mod:`~minpy.mxnet.rnn.rnn`: ``save_rnn_checkpoint``, ``load_rnn_checkpoint``,
  ``do_rnn_checkpoint``

See also mxnet.rnn; ``mx.mod.BucketingModule`` trains the symbols of ``sym_gen``.
"""
from .rnn_cell import RNNParams, BaseRNNCell, RNNCell, LSTMCell, GRUCell
from .stack_cell import (SequentialRNNCell, DropoutCell, ModifierCell, ZoneoutCell,
                         ResidualCell, BidirectionalCell)
from .fused_rnn_cell import FusedRNNCell
from .conv_rnn_cell import BaseConvRNNCell, ConvRNNCell, ConvLSTMCell, ConvGRUCell
from .io import BucketSentenceIter, encode_sentences
from .rnn import save_rnn_checkpoint, load_rnn_checkpoint, do_rnn_checkpoint

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
           "SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell",
           "ConvGRUCell", "BucketSentenceIter", "encode_sentences", "save_rnn_checkpoint",
           "load_rnn_checkpoint", "do_rnn_checkpoint"]
