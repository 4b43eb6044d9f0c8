"""MXNet's checkpoints: ``PREFIX-symbol.json`` + ``PREFIX-%04d.params``.

The params file is an NDArray file (:mod:`minpy.symbol.format.params`) whose keys are
``arg:NAME`` (arguments: weights, biases) and ``aux:NAME`` (auxiliary states:
BatchNorm's running statistics), as ``mx.model.save_checkpoint`` and Gluon's
``HybridBlock.export`` write them.
"""
from . import params as ndfile, minpy_json as serialize
from ..symbol import Symbol

__all__ = ["load_checkpoint", "save_checkpoint", "load_params"]


def _params_file(prefix, epoch):
    return "%s-%04d.params" % (prefix, epoch)


def load_params(prefix, epoch):
    """Read the parameters of checkpoint ``prefix`` at ``epoch``, as ``mx.model.load_params``.

    Args:
        prefix: the path prefix (``prefix-0007.params`` for epoch 7).
        epoch: the epoch number.
    Returns:
        (arg_params, aux_params): dicts {name: minpy Array} without the key prefixes.
    Raises:
        FileNotFoundError when the file is missing; ValueError for a key with neither
        the ``arg:`` nor the ``aux:`` prefix, or a file whose arrays have no names.
    """
    fname = _params_file(prefix, epoch)
    saved = ndfile.load(fname)
    if isinstance(saved, list):
        if saved:
            raise ValueError(f"load_params: {fname!r}: its {len(saved)} arrays have no names; "
                             "a checkpoint's keys are 'arg:NAME' and 'aux:NAME'")
        saved = {}
    params = {"arg": {}, "aux": {}}
    for key, value in saved.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in params:
            raise ValueError(f"load_params: {fname!r}: key {key!r} has neither the 'arg:' nor "
                             "the 'aux:' prefix (Gluon's save_parameters writes bare names: "
                             "read such a file with minpy.nd.load)")
        params[kind][name] = value
    return params["arg"], params["aux"]


def load_checkpoint(prefix, epoch):
    """Read checkpoint ``prefix`` at ``epoch``, as ``mx.model.load_checkpoint``.

    Args:
        prefix: the path prefix: reads ``prefix-symbol.json`` and ``prefix-%04d.params``.
        epoch: the epoch number.
    Returns:
        (symbol, arg_params, aux_params).
    Raises:
        FileNotFoundError naming the missing file; ValueError as :func:`load_params`.
    """
    symbol = Symbol(serialize.load_file(f"{prefix}-symbol.json"))
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write a checkpoint as ``mx.model.save_checkpoint`` does (the same params bytes).

    Args:
        prefix: the path prefix.
        epoch: the epoch number (the params file is ``prefix-%04d.params``).
        symbol: the Symbol, saved to ``prefix-symbol.json``; None saves no symbol.
        arg_params, aux_params: dicts {name: array} (minpy Arrays or NumPy arrays).
        remove_amp_cast: MXNet's keyword; minpy's graphs hold no amp_cast nodes.
    Returns:
        None.
    """
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json")
    data = {f"arg:{k}": v for k, v in arg_params.items()}
    data.update({f"aux:{k}": v for k, v in aux_params.items()})
    ndfile.save(_params_file(prefix, epoch), data)
