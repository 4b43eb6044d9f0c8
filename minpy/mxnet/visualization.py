"""``mx.viz``: ``print_summary`` (MXNet's table of layers, shapes and parameter counts,
line for line as MXNet 1.9.1 prints it) and ``plot_network`` (a ``graphviz`` object of
:func:`minpy.symbol.visualize.plot_network`'s dot source; graphviz is optional).

See also mxnet.visualization.
"""
import json

from ..symbol import Symbol
from ..symbol.visualize import plot_network as _dot_source

__all__ = ["print_summary", "plot_network"]


def _str2tuple(string):
    return [s for s in string.replace("(", "").replace(")", "").replace(" ", "").split(",")
            if s]


def _print_row(fields, positions):
    line = ""
    for i, field in enumerate(fields):
        line += str(field)
        line = line[:positions[i]]
        line += " " * (positions[i] - len(line))
    print(line)


def _layer_params(node, pre_filter, shape_dict, show_shape):
    op, attrs = node["op"], node.get("attrs", {})
    if op == "Convolution":
        cur = pre_filter * int(attrs["num_filter"]) // int(attrs.get("num_group", "1"))
        for k in _str2tuple(attrs["kernel"]):
            cur *= int(k)
        if attrs.get("no_bias") != "True":
            cur += int(attrs["num_filter"])
        return cur
    if op == "FullyConnected":
        bias = 0 if attrs.get("no_bias") == "True" else 1
        return (pre_filter + bias) * int(attrs["num_hidden"])
    if op == "BatchNorm":
        return int(shape_dict[node["name"] + "_output"][1]) * 2 if show_shape else 0
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Print MXNet's summary table of ``symbol``: each layer's name (type), output
    shape (with ``shape``, a dict of input shapes), parameter count and inputs.

    Raises:
        TypeError: ``symbol`` is not a Symbol; ValueError: incomplete input shapes.

    See also mxnet.visualization.print_summary.
    """
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be Symbol")
    show_shape = shape is not None
    shape_dict = {}
    if show_shape:
        internals = symbol.get_internals()
        _, out_shapes, _ = internals.infer_shape(**shape)
        if out_shapes is None or any(s is None for s in out_shapes):
            raise ValueError("Input shape is incomplete")
        shape_dict = dict(zip(internals.list_outputs(), out_shapes))
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    heads = set(conf["heads"][0])      # MXNet's (the first head's entry, as a set)
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    print("_" * line_length)
    _print_row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], positions)
    print("=" * line_length)

    def shape_of(node):
        key = node["name"] + "_output" if node["op"] != "null" else node["name"]
        return shape_dict[key][1:] if show_shape and key in shape_dict else []

    total = 0
    for i, node in enumerate(nodes):
        op = node["op"]
        if op == "null" and i > 0:
            continue
        out_shape = shape_of(node) if (op != "null" or i in heads) else []
        pre_node, pre_filter = [], 0
        if op != "null":
            for item in node["inputs"]:
                inp = nodes[item[0]]
                if inp["op"] != "null" or item[0] in heads:
                    pre_node.append(inp["name"])
                    s = shape_of(inp)
                    if s:
                        pre_filter += int(s[0])
        cur = _layer_params(node, pre_filter, shape_dict, show_shape)
        _print_row([node["name"] + "(" + op + ")", "x".join(str(x) for x in out_shape), cur,
                    pre_node[0] if pre_node else ""], positions)
        for name in pre_node[1:]:
            _print_row(["", "", "", name], positions)
        total += cur
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None,
                 node_attrs=None, hide_weights=True):
    """A ``graphviz.Source`` of ``symbol``'s graph (render it with ``.render()``/``.view()``),
    from :func:`minpy.symbol.visualize.plot_network`'s dot source.

    Raises:
        ImportError: the ``graphviz`` Python package is not installed (naming it);
            :func:`minpy.symbol.visualize.plot_network` gives the dot text without it.

    See also mxnet.visualization.plot_network.
    """
    try:
        import graphviz
    except ImportError:
        raise ImportError("mx.viz.plot_network needs the 'graphviz' Python package from "
                          "PyPI and Graphviz's dot program to render (neither is a minpy "
                          "dependency); "
                          "minpy.symbol.visualize.plot_network(symbol) returns the dot "
                          "source as text without it") from None
    dot = _dot_source(symbol, title=title, shape=shape, hide_weights=hide_weights,
                      node_attrs=node_attrs)
    return graphviz.Source(dot, format=save_format)
