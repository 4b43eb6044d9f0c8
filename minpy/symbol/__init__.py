"""minpy.symbol: MXNet-style symbolic graphs ("big operators").

Compose a network from ``Variable`` and operator functions, infer its shapes,
bind it once to arrays and run forward/backward many times::

    import minpy, minpy.symbol as sym
    data = sym.Variable('data')
    net = sym.FullyConnected(data, num_hidden=128, name='fc1')
    net = sym.Activation(net, act_type='relu')
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=10, name='fc2'), name='softmax')
    exe = net.simple_bind(minpy.cpu(), data=(32, 784))
    exe.forward(is_train=True, data=x, softmax_label=y); exe.backward()

``plan_report(net, data=(64, 3, 224, 224))`` gives the internal memory under
each planning strategy from shapes alone; ``simple_bind(..., mirror=True)``
recomputes cheap nodes in backward instead of keeping them.

Gradients are more graph nodes (``gradient.py``), so one plan covers forward
and backward; the executor (``executor.py``) runs every node on the
dependency engine over storage blocks chosen by the memory planner.
Operators: see ``OP_FUNCTIONS`` (each is also a module attribute).
"""
import builtins
import math

import numpy

from .registry import OPS, ShapeError, DTypeError
from .symbol import Symbol, Variable, var, Group, OP_FUNCTIONS, load_json
from .executor import Executor, seed
from .graph_plan import GraphPlan
from .passes.memory_report import plan_report
from .visualize import plot_network
from .rnn import lstm_cell, lstm_params, gru_cell, gru_params
from .testing import check_symbol_grad, check_symbol_forward
from .format import minpy_json as _serialize
from .format.minpy_json import SymbolFileError
from . import zoo
from .function import function, Function

globals().update(OP_FUNCTIONS)

# MXNet's aliases
add_n = ElementWiseSum                  # noqa: F821
split = SliceChannel                    # noqa: F821
concat = Concat                         # noqa: F821
flatten = Flatten                       # noqa: F821
reshape = Reshape                       # noqa: F821
stop_gradient = BlockGrad               # noqa: F821
Softmax = SoftmaxOutput                 # noqa: F821
broadcast_plus = broadcast_add          # noqa: F821
broadcast_minus = broadcast_sub         # noqa: F821
broadcast_pow = broadcast_power         # noqa: F821
fromjson = load_json


def load(fname):
    """Load a Symbol from a JSON file: one ``Symbol.save`` wrote, or any MXNet 1.x
    ``*-symbol.json`` (legacy pre-NNVM files upgraded as MXNet does). See also
    mxnet.symbol.load. Raises SymbolFileError (a ValueError) naming the file."""
    return Symbol(_serialize.load_file(fname))


def pow(base, exp):                     # noqa: A001  (MXNet's name)
    """``base ** exp`` for Symbols and/or scalars."""
    return base ** exp


power = pow


def _binary(name, sym_op, scalar_op, on_numbers):
    def fn(left, right):
        num = (int, float, numpy.number)
        if isinstance(left, Symbol) and isinstance(right, Symbol):
            return OP_FUNCTIONS[sym_op](left, right)
        if isinstance(left, Symbol) and isinstance(right, num):
            return OP_FUNCTIONS[scalar_op](left, scalar=float(right))
        if isinstance(left, num) and isinstance(right, Symbol):
            return OP_FUNCTIONS[scalar_op](right, scalar=float(left))
        if isinstance(left, num) and isinstance(right, num):
            return on_numbers(left, right)
        raise TypeError(f"mx.sym.{name}: expected Symbols or numbers, got "
                        f"({type(left).__name__}, {type(right).__name__})")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"MXNet's ``{name}(left, right)``: elementwise over two Symbols of one "
                  f"shape (``{sym_op}``), a Symbol and a number either way round "
                  f"(``{scalar_op}``), or two numbers (a number). Raises TypeError for "
                  f"anything else. See also mxnet.symbol.{name}.")
    return fn


# builtins': this module's max and min are MXNet's reductions
maximum = _binary("maximum", "_maximum", "_maximum_scalar", builtins.max)
minimum = _binary("minimum", "_minimum", "_minimum_scalar", builtins.min)
hypot = _binary("hypot", "_hypot", "_hypot_scalar", math.hypot)


__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "fromjson", "Executor",
           "GraphPlan", "plan_report", "ShapeError", "DTypeError", "SymbolFileError",
           "plot_network", "lstm_cell", "lstm_params", "gru_cell", "gru_params",
           "check_symbol_grad", "check_symbol_forward", "seed", "zoo", "OPS", "add_n",
           "split", "concat", "flatten", "reshape", "stop_gradient", "Softmax", "broadcast_plus",
           "broadcast_minus", "broadcast_pow", "pow", "power", "maximum", "minimum",
           "hypot"] + \
    [k for k in OP_FUNCTIONS if not k.startswith("_")]
