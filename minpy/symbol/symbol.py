"""``Symbol``: a (multi-output) symbolic expression, MXNet style.

    data = Variable('data')
    fc1 = FullyConnected(data=data, num_hidden=128, name='fc1')   # makes fc1_weight, fc1_bias
    net = SoftmaxOutput(Activation(fc1, act_type='relu'), name='softmax')
    net.list_arguments()   # ['data', 'fc1_weight', 'fc1_bias', 'softmax_label']
    exe = net.simple_bind(minpy.cpu(), data=(32, 100))

A Symbol is a list of output entries of graph nodes (see ``graph.py``);
operators compose symbols into new nodes; nothing runs until an executor is
bound.
"""

import warnings

import numpy

from ..core.array import Array
from ..dispatch.context import current_context
from ..dispatch.transfer import context_of

# importing the operator modules registers the operators (MXNet's others and aliases too)
from .ops import elemwise as _elemwise, nn as _nn, output as _output, shape as _shape  # noqa: F401
from .ops import mxnet as _mxnet   # noqa: F401
from .format import mxnet_json, minpy_json as serialize
from .executor import Executor
from .graph import IndexedGraph, Node, topo_sort
from .graph_plan import GraphPlan
from .passes.infer import infer_shapes, infer_types
from .ops.mxnet_signatures import SIGNATURES
from .registry import OPS, auto_name, parse_attr_value

__all__ = ["Symbol", "Variable", "var", "Group", "OP_FUNCTIONS"]

#: MXNet 1.9.1's bare attribute keywords of operator functions (``lr_mult=2`` is the
#: attribute ``__lr_mult__``; its ``kHiddenKeys``)
_HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


class Symbol:
    """A symbolic expression with one or more outputs (see module doc)."""

    __slots__ = ("_outputs", "__weakref__")

    def __init__(self, outputs):
        self._outputs = list(outputs)

    # ----------------------------------------------------------- structure
    @property
    def name(self):
        """The name of a single-output symbol's node (None for a group)."""
        return self._outputs[0][0].name if len(self._outputs) == 1 else None

    def __repr__(self):
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index):
        """An output by position or by name (from ``list_outputs``)."""
        if isinstance(index, str):
            names = self.list_outputs()
            hits = [i for i, n in enumerate(names) if n == index]
            if not hits:
                raise ValueError(f"no output named {index!r}; outputs are {names}")
            if len(hits) > 1:
                raise ValueError(f"several outputs are named {index!r}")
            index = hits[0]
        if not isinstance(index, int):
            raise TypeError(f"Symbol index must be an int or a str, got {index!r}")
        return Symbol([self._outputs[index]])

    def _nodes(self):
        return topo_sort(self._outputs)

    def _var_split(self):
        """(argument variable nodes, aux variable nodes) in DFS order."""
        nodes = self._nodes()
        aux = set()
        for n in nodes:
            if n.op is not None:
                for e in n.inputs[n.num_args:]:
                    aux.add(id(e[0]))
        vs = [n for n in nodes if n.op is None]
        return [n for n in vs if id(n) not in aux], [n for n in vs if id(n) in aux]

    def list_arguments(self):
        """Names of the free variables that are arguments, in DFS order."""
        return [n.name for n in self._var_split()[0]]

    def list_auxiliary_states(self):
        """Names of the auxiliary-state variables (BatchNorm moving stats ...)."""
        return [n.name for n in self._var_split()[1]]

    def list_inputs(self):
        """Names of all variables (arguments and auxiliary states), in DFS order."""
        return [n.name for n in self._nodes() if n.op is None]

    def list_outputs(self):
        """Names of the outputs: ``<node>_<output>`` (``fc1_output``) or a variable's name."""
        out = []
        for node, i in self._outputs:
            if node.op is None:
                out.append(node.name)
            else:
                names = node.op.outputs(node.attrs)
                out.append(f"{node.name}_{names[i]}" if i < len(names) else
                           f"{node.name}_hidden{i}")
        return out

    def get_internals(self):
        """A group of every visible output of every node (variables included)."""
        return Symbol([(n, i) for n in self._nodes() for i in range(n.num_visible)])

    def get_children(self):
        """A group of the inputs of this single-output symbol's node (None for a variable)."""
        node = self._outputs[0][0]
        return Symbol(node.inputs) if node.inputs else None

    # ------------------------------------------------------------ attributes
    def attr(self, key):
        """User attribute ``key`` of this symbol's node, or None (``lr_mult`` finds
        ``__lr_mult__``, as MXNet's hidden keys). See also mxnet.symbol.Symbol.attr."""
        ua = self._outputs[0][0].user_attrs
        if key not in ua and key in _HIDDEN_KEYS:
            return ua.get(f"__{key}__")
        return ua.get(key)

    def list_attr(self, recursive=False):
        """User attributes of this node (a hidden ``__lr_mult__`` also as ``lr_mult``, as
        MXNet lists them); ``recursive``: of every node, as ``name$key``."""
        if not recursive:
            ua = dict(self._outputs[0][0].user_attrs)
            ua.update({h: ua[f"__{h}__"] for h in _HIDDEN_KEYS
                       if f"__{h}__" in ua and h not in ua})
            return ua
        return {f"{n.name}${k}": v for n in self._nodes() for k, v in n.user_attrs.items()}

    def attr_dict(self):
        """``{node_name: {key: value}}`` for every node with user attributes."""
        return {n.name: dict(n.user_attrs) for n in self._nodes() if n.user_attrs}

    def _set_attr(self, **kwargs):
        """Set user attributes (stored as strings) on the nodes of the outputs,
        e.g. ``_set_attr(__mirror_stage__='1', force_mirroring='True')``."""
        for node, _ in self._outputs:
            for k, v in kwargs.items():
                node.user_attrs[k] = v if isinstance(v, str) else str(v)

    # ------------------------------------------------------------ inference
    def _shapes_in(self, args, kwargs, what):
        argn = self.list_arguments()
        if len(args) > len(argn):
            raise ValueError(f"{what}: {len(args)} positional values for {len(argn)} arguments")
        given = dict(zip(argn, args))
        inputs = self.list_inputs()
        for k, v in kwargs.items():
            if k not in inputs:
                raise ValueError(f"{what}: {k!r} is not an input of this symbol; "
                                 f"inputs are {inputs}")
            given[k] = v
        return {k: v for k, v in given.items() if v is not None}

    def _infer(self, given, kind):
        g = IndexedGraph(self._outputs)
        vals = [None] * g.num_entries
        key = "__shape__" if kind == "shape" else "__dtype__"
        for nid, n in enumerate(g.nodes):
            if n.op is None:
                v = given.get(n.name)
                if v is None and key in n.user_attrs:
                    v = parse_attr_value(n.user_attrs[key], kind)
                if v is not None:
                    vals[g.entry_start[nid]] = tuple(v) if kind == "shape" else numpy.dtype(v)
        (infer_shapes if kind == "shape" else infer_types)(g, vals)
        args, aux = self._var_split()
        return ([vals[g.entry_id((n, 0))] for n in args], [vals[e] for e in g.heads],
                [vals[g.entry_id((n, 0))] for n in aux])

    def infer_shape(self, *args, **kwargs):
        """Infer shapes from the shapes of some inputs (positional: in
        ``list_arguments`` order; keyword: by name).

        Returns:
            ``(arg_shapes, out_shapes, aux_shapes)``, lists of tuples in
            ``list_arguments`` / ``list_outputs`` / ``list_auxiliary_states``
            order; ``(None, None, None)``, with a UserWarning listing the arguments
            whose shapes are unknown, when not every shape can be inferred (as MXNet;
            :meth:`infer_shape_partial` gives the shapes it could infer).
        Raises:
            ShapeError (a ValueError) naming the node, its input shapes and
            what was expected, when the shapes are inconsistent.
        See also mxnet.symbol.Symbol.infer_shape.
        """
        res = self.infer_shape_partial(*args, **kwargs)
        if all(s is not None for part in res for s in part):
            return res
        unknowns = []
        for name, shape in zip(self.list_arguments(), res[0]):
            if shape is None:
                if len(unknowns) >= 10:
                    unknowns.append("...")
                    break
                unknowns.append(f"{name}: ()")
        warnings.warn("Cannot decide shape for the following arguments (0s in shape means "
                      "unknown dimensions). Consider providing them as input:\n\t"
                      + "\n\t".join(unknowns), stacklevel=2)
        return None, None, None

    def infer_shape_partial(self, *args, **kwargs):
        """As :meth:`infer_shape`, but a shape that cannot be inferred is None (MXNet
        shows ``()`` there) instead of the whole answer being ``(None, None, None)``.
        See also mxnet.symbol.Symbol.infer_shape_partial."""
        return self._infer(self._shapes_in(args, kwargs, "infer_shape"), "shape")

    def infer_type(self, *args, **kwargs):
        """Infer dtypes from the dtypes of some inputs; returns
        ``(arg_types, out_types, aux_types)`` (numpy dtypes, None if unknown)."""
        return self._infer(self._shapes_in(args, kwargs, "infer_type"), "dtype")

    # --------------------------------------------------------- composition
    def __call__(self, *args, **kwargs):
        """A copy of this symbol whose variables are replaced by the given
        symbols (positional: in ``list_arguments`` order; keyword: by name, not both);
        ``name`` renames the copy's (first) output node, as MXNet's ``_compose``.
        See also mxnet.symbol.Symbol.__call__."""
        name = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose only accept input Symbols either as positional or "
                            "keyword arguments, not both")
        for v in list(args) + list(kwargs.values()):
            if not isinstance(v, Symbol):
                raise TypeError(f"Compose expect `Symbol` as arguments, got {v!r}")
        sub = dict(zip(self.list_arguments(), args))
        sub.update(kwargs)
        for k, v in sub.items():
            if len(v) != 1:
                raise TypeError(f"compose: {k} must be a single-output Symbol")
        unknown = set(sub) - set(self.list_inputs())
        if unknown:
            raise ValueError(f"compose: {sorted(unknown)} are not inputs of this symbol; "
                             f"inputs are {self.list_inputs()}")
        memo, made = {}, set()
        for n in self._nodes():
            if n.op is None and n.name in sub:
                memo[id(n)] = sub[n.name]._outputs[0]
            elif n.op is None:
                memo[id(n)] = (n, 0)
            else:
                new = Node(n.op, n.name, [_remap(memo, e) for e in n.inputs], dict(n.attrs),
                           dict(n.user_attrs))
                memo[id(n)] = (new, None)
                made.add(id(new))
        outs = [_remap(memo, e) for e in self._outputs]
        if name:
            head = outs[0][0]
            if id(head) not in made:        # a shared node (a variable): rename a copy
                renamed = Node(head.op, name, head.inputs, dict(head.attrs),
                               dict(head.user_attrs), head.fwd)
                outs = [(renamed, i) if n is head else (n, i) for n, i in outs]
            else:
                head.name = name
        return Symbol(outs)

    def _compose(self, *args, **kwargs):
        """:meth:`__call__` in place: this symbol becomes the composed one (MXNet's
        ``_compose``)."""
        self._outputs = self(*args, **kwargs)._outputs

    def eval(self, ctx=None, **kwargs):
        """Bind to the arrays ``kwargs`` (every argument, by name), run forward and return
        the list of output arrays. ``ctx`` defaults to the device the given arrays live
        on when they all live on one (minpy's placement may have put them on a GPU), else
        the current context; an array on another device is copied there (a one-shot
        evaluation: nothing of the binding outlives the call). See also
        mxnet.symbol.Symbol.eval."""
        arrays = {k: v for k, v in kwargs.items() if isinstance(v, Array)}
        if ctx is None:
            homes = {context_of(v._data) for v in arrays.values()}
            ctx = homes.pop() if len(homes) == 1 else current_context()
        for k, v in arrays.items():
            home = context_of(v._data)
            if home != ctx and not home.device_type == ctx.device_type == "cpu":
                kwargs[k] = v.as_in_context(ctx)
        return self.bind(ctx, kwargs).forward()

    def __copy__(self):
        return Symbol(serialize.from_json(serialize.to_json(self._outputs, "minpy")))

    def __deepcopy__(self, memo):
        return self.__copy__()

    def copy(self):
        """A deep copy (new nodes)."""
        return self.__copy__()

    def __getstate__(self):
        return {"json": serialize.to_json(self._outputs, "minpy")}

    def __setstate__(self, state):
        self._outputs = serialize.from_json(state["json"])

    # ---------------------------------------------------------- arithmetic
    def _bin(self, other, sym_op, scalar_op, reverse=False):
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            return OP_FUNCTIONS[sym_op](a, b)
        if isinstance(other, (int, float, numpy.number)) and not isinstance(other, bool):
            return OP_FUNCTIONS[scalar_op](self, scalar=float(other))
        return NotImplemented

    def __add__(self, o):
        return self._bin(o, "broadcast_add", "_plus_scalar")

    __radd__ = __add__

    def __sub__(self, o):
        return self._bin(o, "broadcast_sub", "_minus_scalar")

    def __rsub__(self, o):
        return self._bin(o, "broadcast_sub", "_rminus_scalar", True)

    def __mul__(self, o):
        return self._bin(o, "broadcast_mul", "_mul_scalar")

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._bin(o, "broadcast_div", "_div_scalar")

    def __rtruediv__(self, o):
        return self._bin(o, "broadcast_div", "_rdiv_scalar", True)

    def __pow__(self, o):
        return self._bin(o, "broadcast_power", "_power_scalar")

    def __rpow__(self, o):
        return self._bin(o, "broadcast_power", "_rpower_scalar", True)

    def __neg__(self):
        return OP_FUNCTIONS["negative"](self)

    # ---------------------------------------------------- save, load, bind
    def tojson(self, fmt="auto"):
        """The graph as JSON text: MXNet 1.9.1's format (``mx.sym.load`` reads it) unless
        the graph has nodes MXNet lacks (backward nodes, minpy-only fused ops) or
        ``fmt='minpy'``: then minpy's versioned format (``{"minpy_symbol": 1, ...}``).
        ``fmt='mxnet'`` raises ValueError where MXNet's format cannot hold the graph.
        See also mxnet.symbol.Symbol.tojson."""
        return serialize.to_json(self._outputs, fmt)

    def save(self, fname, fmt="auto", remove_amp_cast=True):
        """Write :meth:`tojson` to file ``fname`` (``remove_amp_cast``: MXNet's keyword;
        minpy inserts no amp_cast nodes). See also mxnet.symbol.Symbol.save."""
        with open(fname, "w", encoding="utf-8") as f:
            f.write(self.tojson(fmt))

    def simple_bind(self, ctx=None, grad_req="write", type_dict=None, **kwargs):
        """Bind an Executor, allocating every array from the given input shapes.
        See :class:`minpy.symbol.executor.Executor`."""
        return Executor.simple(self, ctx, grad_req, type_dict, **kwargs)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, **kwargs):
        """Bind an Executor to given argument arrays (list in ``list_arguments``
        order or dict by name); ``args_grad`` None means no gradients."""
        return Executor(self, ctx, args, args_grad, grad_req, aux_states, **kwargs)

    def memory_plan(self, grad_req="write", type_dict=None, **kwargs):
        """The bound graph and storage plan for these input shapes, computed
        without allocating anything (``.memory_report()`` gives the table)."""
        return GraphPlan.from_shapes(self, grad_req, type_dict, **kwargs)


def _remap(memo, e):
    node, i = memo[id(e[0])]
    return (node, e[1]) if i is None else (node, i)


def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
             **kwargs):
    """A free variable (an argument to bind later).

    Args:
        name: its name (an argument name of the network).
        attr: dict of user attributes (strings).
        shape, dtype: optional hints stored as ``__shape__``/``__dtype__``, used by
            inference when no value is given.
        lr_mult, wd_mult, init: stored as ``__lr_mult__``, ``__wd_mult__``, ``__init__``.
        **kwargs: more attributes, names of the form ``__key__``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"Variable name must be a non-empty string, got {name!r}")
    ua = {k: str(v) for k, v in (attr or {}).items()}
    if shape is not None:
        ua["__shape__"] = str(tuple(int(d) for d in shape))
    if dtype is not None:
        ua["__dtype__"] = mxnet_json.dtype_code(dtype)     # MXNet's type code
    for k, v in (("__lr_mult__", lr_mult), ("__wd_mult__", wd_mult), ("__init__", init)):
        if v is not None:
            ua[k] = str(v)
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise ValueError(f"Variable: unknown argument {k!r} (attributes are __key__)")
        ua[k] = str(v)
    return Symbol([(Node(None, name, user_attrs=ua), 0)])


var = Variable


def Group(symbols):
    """One symbol whose outputs are the outputs of ``symbols``, in order."""
    outs = []
    for s in symbols:
        if not isinstance(s, Symbol):
            raise TypeError(f"Group expects Symbols, got {type(s).__name__}")
        outs.extend(s._outputs)
    if not outs:
        raise ValueError("Group of no symbols")
    return Symbol(outs)


def _single(s, opname, node_name, arg):
    if not isinstance(s, Symbol):
        raise TypeError(f"{opname} {node_name!r}: input {arg} must be a Symbol, "
                        f"got {type(s).__name__}")
    if len(s) != 1:
        raise ValueError(f"{opname} {node_name!r}: input {arg} has {len(s)} outputs; "
                         "pass one (index it)")
    return s._outputs[0]


def _split_positional(op, key, args):
    """MXNet's positional order: ``(input values, {param: value})`` from ``args`` of a
    non-variadic op -- its inputs first (Symbols, or None for "not given"), then its
    parameters in MXNet's order (``clip(data, 0, 6)``: ``a_min=0, a_max=6``)."""
    sig = SIGNATURES.get(key) or SIGNATURES.get(op.name)
    n_in = len(sig[0]) if sig else None
    inputs, params = [], {}
    for i, v in enumerate(args):
        if n_in is None or i < n_in:
            if v is not None and not isinstance(v, Symbol):
                if sig is None:
                    raise TypeError(f"{key}: positional argument {i} must be a Symbol, got "
                                    f"{v!r} (pass parameters by keyword)")
                raise TypeError(f"{key}: argument {sig[0][i]} must be a Symbol, got {v!r}")
            inputs.append(v)
        elif i - n_in < len(sig[1]):
            params[sig[1][i - n_in]] = v
        else:
            raise TypeError(f"{key}: {len(args)} positional arguments, at most "
                            f"{n_in + len(sig[1])} ({', '.join(sig[0] + sig[1])})")
    return inputs, params


def _split_attrs(op, kwargs):
    """MXNet's keyword attributes: ``__key__`` keywords, and its bare hidden keys
    (``lr_mult``, ``ctx_group`` ...: ``__lr_mult__``) -> ``{key: str}``; ``weight_lr_mult``
    style keys are refused as MXNet refuses them."""
    attrs = {}
    for k in list(kwargs):
        if k in op.params or k in op.ignored_params:
            continue
        if len(k) > 4 and k.startswith("__") and k.endswith("__"):
            attrs[k] = str(kwargs.pop(k))
            continue
        for h in _HIDDEN_KEYS:
            if k == h:
                attrs[f"__{h}__"] = str(kwargs.pop(k))
                break
            if k.endswith(h):
                raise ValueError(f"{op.name}: setting variable attributes with {k} is "
                                 f"deprecated. please instead use\nw = Variable({h}="
                                 f"{kwargs[k]})\nsym = YourSymbolName({k[:-len(h) - 1]}=w)")
    return attrs


def make_op_function(op, key=None):
    """The public function composing ``op`` (``FullyConnected(data=x, ...)``).

    As MXNet's generated functions, it takes the op's inputs and then its parameters
    positionally (MXNet's order), ``__key__`` keywords as attributes, ``name`` and
    ``attr`` (a dict of attributes)."""
    key = key or op.name

    def fn(*args, name=None, attr=None, **kwargs):
        syms = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
        params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
        ua = {k: str(v) for k, v in (attr or {}).items()}
        ua.update(_split_attrs(op, params))
        if op.variadic:
            if len(args) == 1 and isinstance(args[0], (list, tuple)):
                args = tuple(args[0])
            if syms:
                raise TypeError(f"{op.name}: pass its inputs positionally")
            n = params.get(op.variadic)
            if n is not None and int(n) != len(args):
                raise ValueError(f"{op.name}: {op.variadic}={n} but {len(args)} inputs given")
            params[op.variadic] = len(args)
        else:
            args, positional = _split_positional(op, key, args)
            for k, v in positional.items():
                if k in params:
                    raise TypeError(f"{key}() got multiple values for argument {k!r}")
                params[k] = v
        node_name = name or auto_name(op.name)
        attrs = op.parse(params, node_name)
        argn, auxn = op.arguments(attrs), op.aux(attrs)
        slots = list(argn) + list(auxn)
        if len(args) > len(slots) and any(a is not None for a in args[len(slots):]):
            raise TypeError(f"{op.name}: {len(args)} positional inputs, at most {len(slots)}")
        given = {k: v for k, v in zip(slots, args) if v is not None}
        for k, v in syms.items():
            if k not in argn and k not in auxn:
                raise ValueError(f"{op.name} {node_name!r}: unknown input {k!r}; inputs are "
                                 f"{argn + auxn}")
            if k in given:
                raise TypeError(f"{op.name}: input {k!r} given twice")
            given[k] = v
        inputs = []
        for k in slots:
            s = given.get(k)
            if s is None:
                s = Variable(f"{node_name}_{k}")
            inputs.append(_single(s, op.name, node_name, k))
        node = Node(op, node_name, inputs, attrs, ua)
        return Symbol([(node, i) for i in range(node.num_visible)])

    fn.__name__ = fn.__qualname__ = op.name
    ps = ", ".join(f"{k}" + ("" if p.default is _REQ else f"={p.default!r}")
                   for k, p in op.params.items() if k != op.variadic)
    fn.__doc__ = (f"{op.doc}\n\nSymbol operator {op.name}({ps}); inputs are Symbols "
                  "(missing ones become Variables named <name>_<input>), given by name or "
                  "first positionally, then the parameters (MXNet's order); ``name`` names "
                  "the node, ``attr`` (a dict) and ``__key__`` keywords set user attributes.")
    return fn


from .registry import REQUIRED as _REQ      # noqa: E402

OP_FUNCTIONS = {name: make_op_function(op, name) for name, op in OPS.items()}


def load_json(text):
    """The Symbol described by JSON ``text`` (minpy's format or MXNet's). See also
    mxnet.symbol.load_json."""
    return Symbol(serialize.from_json(text))
