"""``mx.rnn``'s cells made of other cells: stacks, both directions, and modifiers.

:class:`SequentialRNNCell` stacks cells (each one's outputs the next one's
inputs), :class:`BidirectionalCell` runs one cell forward and one backward in
time and concatenates their outputs, :class:`DropoutCell` drops inputs, and the
modifiers wrap a cell: :class:`ZoneoutCell` (keeps a random part of the
previous output and states) and :class:`ResidualCell` (adds the input to the
output). Node and parameter names are MXNet 1.9.1's.

See also mxnet.rnn.rnn_cell, :mod:`minpy.mxnet.rnn.rnn_cell`.
"""
import numbers

from ... import symbol
from ...symbol.registry import auto_name
from .rnn_cell import BaseRNNCell, _mul, _normalize_sequence, zeros

__all__ = ["SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell"]


def _cells_state_info(cells):
    return sum([c.state_info for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _cells_unpack_weights(cells, args):
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells, args):
    for cell in cells:
        args = cell.pack_weights(args)
    return args


def _reverse(data, axis, length):
    """``data`` reversed along ``axis`` (of size ``length``): MXNet's ``symbol.reverse``,
    written as a split and a concat (minpy's registry has no ``reverse``)."""
    if length == 1:
        return data
    parts = list(symbol.SliceChannel(data, axis=axis, num_outputs=length))
    return symbol.Concat(*reversed(parts), dim=axis)


def _where(condition, x, y):
    """MXNet's ``symbol.where`` for a ``condition`` that is 0 or not: ``x`` where it is
    not 0, else ``y`` (minpy's registry has no ``where``)."""
    keep = symbol._not_equal_scalar(condition, scalar=0.0)
    return symbol._Plus(_mul(keep, x), _mul(1.0 - keep, y), name=auto_name("where"))


def _share_params(method, parent, cells):
    """MXNet's parameter sharing between a container cell and its children: with
    ``params`` given to the container, the children take its Variables."""
    if parent._override_cell_params:
        if not all(c._own_params for c in cells):
            raise ValueError(f"{method}: either specify params for {type(parent).__name__} "
                             f"or child cells, not both.")
        for c in cells:
            c.params._params.update(parent.params._params)
    for c in cells:
        parent.params._params.update(c.params._params)


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each one's outputs are the next one's inputs.

    Args:
        params: an RNNParams for all the cells added (None: each keeps its own).
    """

    def __init__(self, params=None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Append ``cell`` to the stack (its inputs: the previous cell's outputs)."""
        _share_params("SequentialRNNCell.add", self, [cell])
        self._cells.append(cell)

    @property
    def state_info(self):
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs):
        """The cells' initial states, in order (see BaseRNNCell.begin_state)."""
        self._check_unmodified("begin_state")
        return _cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args):
        """Every cell's :meth:`BaseRNNCell.unpack_weights`."""
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args):
        """Every cell's :meth:`BaseRNNCell.pack_weights`."""
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise NotImplementedError("SequentialRNNCell: a stack holding a "
                                          "BidirectionalCell cannot be stepped; use unroll")
            n = len(cell.state_info)
            state = states[p:p + n]
            p += n
            inputs, state = cell(inputs, state)
            next_states.append(state)
        return inputs, sum(next_states, [])

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll each cell in turn over the whole sequence (see BaseRNNCell.unroll)."""
        self.reset()
        num_cells = len(self._cells)
        if begin_state is None:
            begin_state = self.begin_state()
        p = 0
        next_states = []
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            states = begin_state[p:p + n]
            p += n
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=states, layout=layout,
                                         merge_outputs=None if i < num_cells - 1
                                         else merge_outputs)
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs (no state).

    Args:
        dropout: the fraction of elements dropped.
        prefix: default ``'dropout_'``; params: see BaseRNNCell.
    """

    def __init__(self, dropout, prefix="dropout_", params=None):
        super().__init__(prefix, params)
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
            raise TypeError(f"DropoutCell: dropout probability must be a number, got "
                            f"{dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Dropout on the whole sequence at once where it is one Symbol."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base of the cells that modify a ``base_cell`` (which must then not be called
    directly: the modifier is)."""

    def __init__(self, base_cell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        """The base cell's parameters."""
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym=zeros, **kwargs):
        """The base cell's initial states (see BaseRNNCell.begin_state)."""
        self._check_unmodified("begin_state")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        """The base cell's unpack_weights."""
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        """The base cell's pack_weights."""
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError(f"{type(self).__name__} does not implement a time step")


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016) on a cell: in training, each element of the output
    and of the states keeps its previous value with probability ``zoneout_outputs`` /
    ``zoneout_states`` (a Dropout mask; at inference the new values are taken).

    Args:
        base_cell: a stepping cell (not fused, not bidirectional).
        zoneout_outputs, zoneout_states: the probabilities.
    Raises:
        TypeError: a FusedRNNCell or BidirectionalCell (or a stack holding one).
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        # by name: fused_rnn_cell imports this module
        if type(base_cell).__name__ == "FusedRNNCell":
            raise TypeError("ZoneoutCell: FusedRNNCell doesn't support zoneout. "
                            "Please unfuse first.")
        if isinstance(base_cell, BidirectionalCell) or (
                isinstance(base_cell, SequentialRNNCell)
                and any(isinstance(c, BidirectionalCell) for c in base_cell._cells)):
            raise TypeError("ZoneoutCell: BidirectionalCell doesn't support zoneout since it "
                            "doesn't support step. Please add ZoneoutCell to the cells "
                            "underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        """Reset the counters and forget the previous output."""
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        cell, p_outputs, p_states = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p, like):
            return symbol.Dropout(symbol.ones_like(like), p=p)

        # MXNet's zeros((0, 0)), its shape taken from the output
        prev_output = self.prev_output if self.prev_output is not None else \
            symbol.zeros_like(next_output)
        output = (_where(mask(p_outputs, next_output), next_output, prev_output)
                  if p_outputs != 0. else next_output)
        states = ([_where(mask(p_states, new_s), new_s, old_s)
                   for new_s, old_s in zip(next_states, states)]
                  if p_states != 0. else next_states)
        self.prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """A residual connection (Wu et al. 2016): the base cell's output plus its input."""

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """The base cell unrolled, then the inputs added (see BaseRNNCell.unroll)."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.elemwise_add(outputs, inputs,
                                          name=f"{outputs.name}_plus_residual")
        else:
            outputs = [symbol.elemwise_add(o, i, name=f"{o.name}_plus_residual")
                       for o, i in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(BaseRNNCell):
    """Two cells over the sequence, ``l_cell`` forward and ``r_cell`` backward in time,
    their outputs concatenated (``{output_prefix}t0`` ..., or ``{output_prefix}out``
    merged).

    Args:
        l_cell, r_cell: the cells.
        params: an RNNParams for both (None: each keeps its own).
        output_prefix: default ``'bi_'``.
    """

    def __init__(self, l_cell, r_cell, params=None, output_prefix="bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        _share_params("BidirectionalCell", self, [l_cell, r_cell])
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        """Both cells' unpack_weights."""
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args):
        """Both cells' pack_weights."""
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    @property
    def state_info(self):
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs):
        """Both cells' initial states (see BaseRNNCell.begin_state)."""
        self._check_unmodified("begin_state")
        return _cells_begin_state(self._cells, **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll both cells and concatenate their outputs per step (see
        BaseRNNCell.unroll). The states are ``[l_states, r_states]``, as MXNet's."""
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        states = begin_state
        l_cell, r_cell = self._cells
        n_l = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_l],
                                            layout=layout, merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                            begin_state=states[n_l:], layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = (isinstance(l_outputs, symbol.Symbol)
                             and isinstance(r_outputs, symbol.Symbol))
            if not merge_outputs:
                if isinstance(l_outputs, symbol.Symbol):
                    l_outputs = list(symbol.SliceChannel(l_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
                if isinstance(r_outputs, symbol.Symbol):
                    r_outputs = list(symbol.SliceChannel(r_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            l_outputs = [l_outputs]
            r_outputs = [_reverse(r_outputs, axis, length)]
        else:
            r_outputs = list(reversed(r_outputs))
        outputs = [symbol.Concat(l_o, r_o, dim=1 + merge_outputs,
                                 name=(f"{self._output_prefix}out" if merge_outputs
                                       else f"{self._output_prefix}t{i}"))
                   for i, (l_o, r_o) in enumerate(zip(l_outputs, r_outputs))]
        if merge_outputs:
            outputs = outputs[0]
        return outputs, [l_states, r_states]
