"""``minpy.mxnet.bucketing``: variable-length sequences — a bucketing iterator and a bucketed model.

:class:`BucketSentenceIter` (MXNet's ``rnn.BucketSentenceIter``) groups
integer sequences into buckets by length, pads each to its bucket's length
and yields batches that carry their ``bucket_key``.

:class:`BucketingFunction` (MXNet's ``BucketingModule`` for minpy's
big operators) turns ``sym_gen(bucket_key) -> Symbol`` into one
:class:`minpy.symbol.Function` per bucket key, each bound the first time its
key is seen, all called with ONE shared parameter dict, inside
``minpy.grad_and_loss`` like any other function::

    model = BucketingFunction(sym_gen, default_bucket_key=20,
                              input_shapes_fn=lambda k: {"data": (32, k)})
    params = model.get_params(seed=0)
    def loss(params, batch):
        logits = model(batch.bucket_key, data=batch.data[0], **params)
        ...
    for batch in BucketSentenceIter(sentences, 32, buckets=[10, 20]):
        grads, value = minpy.grad_and_loss(loss)(params, batch)
"""
import bisect
import copy
import warnings

import numpy

from ..dispatch.context import current_context
from ..symbol import Symbol, function
from ..nn.io import DataBatch, DataDesc, DataIter, batch_array, seed_or_global

__all__ = ["BucketSentenceIter", "BucketingFunction"]


def _int_arg(fn, name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, numpy.integer)) or value < low:
        raise ValueError(f"{fn}: {name} must be an int >= {low}, got {value!r}")
    return int(value)


def _sequences(sentences):
    """Each sentence as a 1-D integer numpy array (naming the first bad one)."""
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, "__len__"):
        raise TypeError(f"BucketSentenceIter: sentences must be a sequence of integer "
                        f"sequences, got {type(sentences).__name__}")
    out = []
    for i, s in enumerate(sentences):
        a = numpy.asarray(s)
        if a.ndim != 1:
            raise ValueError(f"BucketSentenceIter: sentence {i} must be 1-D, got shape "
                             f"{a.shape}")
        if a.size and a.dtype.kind not in "iu":
            raise TypeError(f"BucketSentenceIter: sentence {i} must hold integer token ids, "
                            f"got dtype {a.dtype}")
        out.append(a)
    return out


class BucketSentenceIter(DataIter):
    """Batches of integer sequences padded to the smallest bucket length that fits them.

    Args:
        sentences: a sequence of integer sequences (token ids).
        batch_size: sentences per batch.
        buckets: bucket lengths; default: every length that at least
            ``batch_size`` sentences have.  Sentences longer than the largest
            bucket are dropped (with a warning).
        invalid_label: the padding value of data and labels.
        data_name, label_name: names in ``provide_data`` / ``provide_label``.
        dtype: dtype of the batches (float32, as MXNet's Embedding takes).
        layout: ``'NT'`` (batch, time) or ``'TN'`` (time, batch).
        shuffle: each epoch, shuffle the sentences within each bucket and the
            order of the batches, from ``numpy.random.Generator(seed)``.
        seed: seed of that generator; ``None`` draws one from NumPy's global
            state, so ``minpy.random.seed(s)`` makes the run repeatable.

    Each batch holds full ``batch_size`` rows of one bucket (a bucket's
    last incomplete batch is left out of the epoch, as MXNet's); its label is
    the data shifted left by one, ending in ``invalid_label``.  Batches carry
    ``bucket_key`` (the bucket length) and their own ``provide_data``; the
    iterator's ``provide_data`` describes the largest bucket,
    ``default_bucket_key``.

    Raises:
        ValueError: no bucket fills a batch, bad buckets/layout/batch_size.
        TypeError: sentences that are not integer sequences.

    See also mxnet.rnn.BucketSentenceIter, :class:`BucketingFunction`.
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NT", shuffle=True,
                 seed=None):
        fn = "BucketSentenceIter"
        super().__init__(_int_arg(fn, "batch_size", batch_size, 1))
        if layout not in ("NT", "TN"):
            raise ValueError(f"{fn}: layout must be 'NT' (batch major) or 'TN' (time major), "
                             f"got {layout!r}")
        seqs = _sequences(sentences)
        lengths = [len(s) for s in seqs]
        if buckets is None:
            counts = numpy.bincount(lengths) if lengths else numpy.zeros(1, int)
            buckets = [n for n, c in enumerate(counts) if n > 0 and c >= batch_size]
        buckets = sorted({_int_arg(fn, "each bucket", b, 1) for b in buckets})
        if not buckets:
            raise ValueError(f"{fn}: no buckets: no sentence length occurs batch_size="
                             f"{batch_size} times; pass buckets=[...]")
        self.buckets, self.invalid_label, self.layout = buckets, invalid_label, layout
        self.data_name, self.label_name = data_name, label_name
        self.dtype = numpy.dtype(dtype)
        self.shuffle = bool(shuffle)
        self.default_bucket_key = buckets[-1]
        self.data = self._pad_into_buckets(seqs, lengths)
        self._batches = [(b, j) for b, rows in enumerate(self.data)
                         for j in range(0, len(rows) - batch_size + 1, batch_size)]
        if not self._batches:
            raise ValueError(f"{fn}: no bucket of {buckets} holds batch_size={batch_size} "
                             f"sentences (bucket sizes {[len(d) for d in self.data]})")
        self._rng = numpy.random.default_rng(seed_or_global(seed) if shuffle else seed)
        self.reset()

    def _pad_into_buckets(self, seqs, lengths):
        rows = [[] for _ in self.buckets]
        dropped = 0
        for s, n in zip(seqs, lengths):
            b = bisect.bisect_left(self.buckets, n)
            if b == len(self.buckets):
                dropped += 1
                continue
            row = numpy.full(self.buckets[b], self.invalid_label, self.dtype)
            row[:n] = s
            rows[b].append(row)
        if dropped:
            warnings.warn(f"BucketSentenceIter: dropped {dropped} sentences longer than the "
                          f"largest bucket ({self.buckets[-1]})", stacklevel=3)
        return [numpy.array(r, self.dtype).reshape(len(r), k) for r, k in zip(rows, self.buckets)]

    def _desc(self, name, key):
        shape = (self.batch_size, key) if self.layout == "NT" else (key, self.batch_size)
        return DataDesc(name, shape, self.dtype, self.layout)

    @property
    def provide_data(self):
        """[DataDesc] of the data at ``default_bucket_key`` (the largest bucket)."""
        return [self._desc(self.data_name, self.default_bucket_key)]

    @property
    def provide_label(self):
        """[DataDesc] of the label at ``default_bucket_key``."""
        return [self._desc(self.label_name, self.default_bucket_key)]

    def getnumiterations(self):
        """Batches per epoch."""
        return len(self._batches)

    def reset(self):
        """Start the next epoch (reshuffled when ``shuffle``)."""
        self.cursor = 0
        if self.shuffle:
            self._order = self._rng.permutation(len(self._batches))
            self._rows = [self._rng.permutation(len(d)) for d in self.data]
        else:
            self._order = numpy.arange(len(self._batches))
            self._rows = [numpy.arange(len(d)) for d in self.data]

    def next(self):
        """The next DataBatch (with ``bucket_key``); StopIteration at the end of the epoch."""
        if self.cursor >= len(self._order):
            raise StopIteration
        b, j = self._batches[self._order[self.cursor]]
        self.cursor += 1
        data = self.data[b][self._rows[b][j:j + self.batch_size]]
        label = numpy.empty_like(data)
        label[:, :-1] = data[:, 1:]
        label[:, -1] = self.invalid_label
        if self.layout == "TN":
            data, label = data.T.copy(), label.T.copy()
        key, ctx = self.buckets[b], current_context()
        return DataBatch([batch_array(data, ctx)], [batch_array(label, ctx)], pad=0,
                         bucket_key=key, provide_data=[self._desc(self.data_name, key)],
                         provide_label=[self._desc(self.label_name, key)])

    def iter_next(self):
        """True while the epoch has batches left (use ``next()`` to take one)."""
        return self.cursor < len(self._order)

    def state_dict(self):
        """Cursor, batch order, per-bucket row orders and generator state (picklable)."""
        return {"buckets": list(self.buckets), "batch_size": self.batch_size,
                "sizes": [len(d) for d in self.data], "cursor": self.cursor,
                "order": self._order.copy(), "rows": [r.copy() for r in self._rows],
                "rng": copy.deepcopy(self._rng.bit_generator.state)}

    def load_state_dict(self, state):
        """Continue from ``state`` of an iterator built over the same sentences and buckets.

        Raises:
            ValueError: buckets, batch size or bucket sizes differ (naming which).
        """
        here = self.state_dict()
        for k in ("buckets", "batch_size", "sizes"):
            if state[k] != here[k]:
                raise ValueError(f"BucketSentenceIter.load_state_dict: {k} is {here[k]} here "
                                 f"but {state[k]} in the state")
        self.cursor = int(state["cursor"])
        self._order = numpy.asarray(state["order"]).copy()
        self._rows = [numpy.asarray(r).copy() for r in state["rows"]]
        self._rng.bit_generator.state = copy.deepcopy(state["rng"])


class BucketingFunction:
    """One big operator per bucket key, all sharing one parameter dict (MXNet's BucketingModule).

    Args:
        sym_gen: ``sym_gen(bucket_key)`` -> a ``minpy.symbol.Symbol`` (or
            MXNet's ``(symbol, data_names, label_names)``; the names are
            unused).  Every bucket's symbol must have the same parameters
            (names and shapes).
        default_bucket_key: the bucket whose symbol defines the parameters
            (usually the largest).
        input_shapes_fn: ``input_shapes_fn(bucket_key)`` -> dict data-input
            name -> shape (``{'data': (32, key)}``); the other arguments are
            the parameters, their shapes inferred.
        name: label in error messages.
        **options: passed to :func:`minpy.symbol.function` (``dtype``,
            ``grad_req``, ``ctx``).

    Call it as ``f(bucket_key, data=..., **params)``: the key's Function is
    made (and bound) the first time the key is seen and reused after; a
    parameter the key's symbol does not use is ignored.  Aux states
    (BatchNorm moving statistics) are shared by the buckets too.

    Attributes:
        functions: dict bucket_key -> :class:`minpy.symbol.Function`.
        param_shapes: dict name -> shape of the shared parameters.
        aux_params: the shared aux states.

    See also mxnet.module.BucketingModule, :func:`minpy.symbol.function`.
    """

    def __init__(self, sym_gen, default_bucket_key, input_shapes_fn, name="bucketing",
                 **options):
        for what, f in (("sym_gen", sym_gen), ("input_shapes_fn", input_shapes_fn)):
            if not callable(f):
                raise TypeError(f"BucketingFunction: {what} must be callable, got "
                                f"{type(f).__name__}")
        self.sym_gen, self.input_shapes_fn = sym_gen, input_shapes_fn
        self.name, self.options = name, options
        self.functions = {}
        self.mode = None
        self.default_bucket_key = default_bucket_key
        self._default = self.function_for(default_bucket_key)
        self.param_shapes = dict(self._default.param_shapes)
        self.aux_params = self._default.aux_params

    def function_for(self, bucket_key):
        """The Function of ``bucket_key`` (made on first use; checked against the default's
        parameters).

        Raises:
            TypeError: ``sym_gen`` / ``input_shapes_fn`` return the wrong kinds.
            ValueError: the key's parameters differ from the default bucket's.
        """
        fn = self.functions.get(bucket_key)
        if fn is not None:
            return fn
        made = self.sym_gen(bucket_key)
        symbol = made[0] if isinstance(made, tuple) else made
        if not isinstance(symbol, Symbol):
            raise TypeError(f"BucketingFunction {self.name!r}: sym_gen({bucket_key!r}) must "
                            f"return a Symbol, got {type(symbol).__name__}")
        shapes = self.input_shapes_fn(bucket_key)
        if not isinstance(shapes, dict):
            raise TypeError(f"BucketingFunction {self.name!r}: input_shapes_fn({bucket_key!r}) "
                            f"must return a dict name -> shape, got {type(shapes).__name__}")
        fn = function(symbol, shapes, name=f"{self.name}[{bucket_key!r}]", **self.options)
        if self.functions:
            self._check_shared(bucket_key, fn)
            fn.aux_params = self.aux_params
        fn.train(self.mode)
        self.functions[bucket_key] = fn
        return fn

    def _check_shared(self, key, fn):
        for kind, mine, theirs in (("parameter", fn.param_shapes, self.param_shapes),
                                   ("aux state", fn.aux_shapes, self._default.aux_shapes)):
            for n, s in mine.items():
                if n not in theirs:
                    raise ValueError(f"BucketingFunction {self.name!r}: bucket {key!r} has a "
                                     f"{kind} {n!r} that the default bucket "
                                     f"{self.default_bucket_key!r} lacks; buckets share one "
                                     f"set of {kind}s")
                if tuple(s) != tuple(theirs[n]):
                    raise ValueError(f"BucketingFunction {self.name!r}: {kind} {n!r} has shape "
                                     f"{tuple(s)} in bucket {key!r} but {tuple(theirs[n])} in "
                                     f"the default bucket {self.default_bucket_key!r}")

    def __call__(self, bucket_key, is_train=None, **inputs):
        """Run ``bucket_key``'s symbol on keyword Arrays (data inputs and the shared params).

        Returns:
            An Array, or a tuple of Arrays for several outputs (see Function).
        """
        fn = self.function_for(bucket_key)
        args = set(fn.arg_names)
        used = {k: v for k, v in inputs.items() if k in args or k not in self.param_shapes}
        return fn(is_train=is_train, **used)

    def get_params(self, init="xavier", seed=None, dtype=None):
        """Fresh shared parameters, dict name -> Array (see ``Function.get_params``)."""
        return self._default.get_params(init=init, seed=seed, dtype=dtype)

    def train(self, mode=True):
        """Fix the mode of every bucket (``True``/``False``/``None`` automatic). Returns self."""
        self.mode = None if mode is None else bool(mode)
        for fn in self.functions.values():
            fn.train(self.mode)
        return self

    def eval(self):
        """Inference mode for every bucket. Returns self."""
        return self.train(False)

    @property
    def bind_count(self):
        """Graph plans built over all buckets (one per bucket for fixed input shapes)."""
        return sum(fn.bind_count for fn in self.functions.values())

    @property
    def num_executors(self):
        """Executors made over all buckets."""
        return sum(fn.num_executors for fn in self.functions.values())

    def __repr__(self):
        return (f"<minpy.nn.BucketingFunction {self.name!r}: buckets "
                f"{sorted(self.functions, key=repr)}, {self.bind_count} bind(s)>")
