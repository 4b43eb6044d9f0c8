"""``mx.rnn.rnn``: checkpoints of models built from RNN cells.

A cell's weights are saved unpacked (one array per gate, MXNet's
``cell.unpack_weights``) and packed back on loading, so the files are
MXNet's: a checkpoint written by MXNet's ``save_rnn_checkpoint`` loads here
and the other way round.

See also mxnet.rnn.rnn, :func:`minpy.nn.checkpoint.save_checkpoint`.
"""
from ...nn.checkpoint import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ["save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def _cell_list(fn, cells):
    cells = [cells] if isinstance(cells, BaseRNNCell) else list(cells)
    for c in cells:
        if not isinstance(c, BaseRNNCell):
            raise TypeError(f"{fn}: cells must be an RNN cell or a list of them, got "
                            f"{type(c).__name__}")
    return cells


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` with the cells' weights
    unpacked (``cell.unpack_weights``), as ``mx.rnn.save_rnn_checkpoint``.

    Args:
        cells: the RNN cell (or list of them) of ``symbol``.
        prefix, epoch: the file prefix and epoch number.
        symbol: the network; arg_params, aux_params: dicts name -> array.
    """
    for cell in _cell_list("save_rnn_checkpoint", cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """Read a checkpoint written by :func:`save_rnn_checkpoint` (or MXNet's) and pack the
    cells' weights back (``cell.pack_weights``).

    Returns:
        ``(symbol, arg_params, aux_params)``.
    """
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _cell_list("load_rnn_checkpoint", cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback for ``fit`` writing :func:`save_rnn_checkpoint` every
    ``period`` epochs (the file of epoch ``n`` numbered ``n + 1``).

    Returns:
        ``callback(iter_no, sym, arg, aux)``.
    """
    cells = _cell_list("do_rnn_checkpoint", cells)
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
