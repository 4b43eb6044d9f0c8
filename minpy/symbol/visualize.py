"""``plot_network``: Graphviz dot source of a symbol (MXNet's ``mx.viz.plot_network``)."""
import math

from .graph import IndexedGraph
from .passes.infer import infer_shapes

__all__ = ["plot_network"]

_COLORS = {"FullyConnected": "#fb8072", "Convolution": "#fb8072", "Activation": "#ffffb3",
           "LeakyReLU": "#ffffb3", "BatchNorm": "#bebada", "Pooling": "#80b1d3",
           "Concat": "#fdb462", "Flatten": "#fdb462", "Reshape": "#fdb462",
           "SoftmaxOutput": "#b3de69", "Dropout": "#fccde5"}
_SHOW = {"FullyConnected": ("num_hidden",), "Convolution": ("kernel", "stride", "num_filter"),
         "Pooling": ("pool_type", "kernel", "stride"), "Activation": ("act_type",),
         "LeakyReLU": ("act_type",), "Embedding": ("output_dim",), "Dropout": ("p",)}


def _q(s):
    return '"' + str(s).replace('"', '\\"') + '"'


def _label(node):
    if node.op is None:
        return node.name
    keys = _SHOW.get(node.op.name, ())
    detail = ", ".join(f"{k}={'x'.join(map(str, v)) if isinstance(v, tuple) else v}"
                       for k, v in node.attrs.items() if k in keys and v != ())
    return f"{node.op.name}\\n{node.name}" + (f"\\n{detail}" if detail else "")


def plot_network(symbol, title="plot", shape=None, hide_weights=True, node_attrs=None):
    """Graphviz dot source (a string) of ``symbol``'s graph.

    Args:
        symbol: the Symbol.
        title: graph name.
        shape: optional ``{input_name: shape}``; edges are then labelled with
            the shapes flowing along them (infer_shape).
        hide_weights: leave out variables other than the data inputs (those
            named by ``shape``, or ``data``) -- weights, biases, aux states.
        node_attrs: extra Graphviz node attributes, e.g. ``{"fontsize": "10"}``.
    Returns:
        str: ``digraph ... { ... }``; render with ``dot -Tpng``.
    """
    g = IndexedGraph(symbol._outputs)
    shapes = None
    if shape:
        shapes = [None] * g.num_entries
        for nid in g.variable_nodes():
            s = shape.get(g.nodes[nid].name)
            if s is not None:
                shapes[g.entry_start[nid]] = tuple(s)
        infer_shapes(g, shapes)
    data_names = set(shape) if shape else {"data"}
    na = dict({"shape": "box", "style": "filled,rounded", "fixedsize": "false"},
              **(node_attrs or {}))
    lines = [f"digraph {_q(title)} {{",
             "  node [" + ", ".join(f"{k}={_q(v)}" for k, v in na.items()) + "];",
             '  edge [dir="back"];']
    hidden = set()
    for nid, node in enumerate(g.nodes):
        if node.op is None and hide_weights and node.name not in data_names:
            hidden.add(nid)
            continue
        color = "#8dd3c7" if node.op is None else _COLORS.get(node.op.name, "#d9d9d9")
        shape_kw = ', shape="oval"' if node.op is None else ""
        lines.append(f"  n{nid} [label={_q(_label(node))}, fillcolor={_q(color)}{shape_kw}];")
    for nid, node in enumerate(g.nodes):
        if nid in hidden:
            continue
        for e in g.inputs[nid]:
            src = g.node_id(g.entry(e)[0])
            if src in hidden:
                continue
            label = ""
            if shapes is not None and shapes[e] is not None:
                s = shapes[e]
                label = f' [label={_q("x".join(map(str, s[1:])) if len(s) > 1 else math.prod(s))}]'
            # arrows point from the consumer to its input, as in mx.viz
            lines.append(f"  n{nid} -> n{src}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"
