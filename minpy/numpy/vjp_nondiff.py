"""Functions whose results carry no gradient, and the value-dependent functions
that look like them but do have one.

No gradient (calling them on a traced array returns a plain, unrecorded result):
the cross-cutting ones listed in ``_NAMES`` (creation from shapes, predicates,
queries, printing, saving); chapter files add their own.

Value-dependent, with a rule (each once marked "no gradient", which silently gave
zeros; the namespace-wide audit, tests/numpy/test_grad_audit.py, checks each against
finite differences to second order):

- ``unique`` (any ``return_*``, ``axis``), ``unique_values``/``_counts``/
  ``_inverse``/``_all``: every unique value (or slice, with ``axis``) equals each
  of its occurrences, so its gradient is split evenly among them (as ``max``
  splits ties). Where the input's values are distinct this is the gradient of
  the sort; at a tie the function is not differentiable and this is the
  symmetric choice (exact for perturbations that keep the tie). The index,
  inverse and count outputs are integers (no gradient).
- ``histogram``, ``histogram2d``, ``histogramdd``, ``histogram_bin_edges``: a
  count is the sum of the weights falling in its bin (linear in ``weights``);
  which bin a value falls in is piecewise constant in the data, but the edges
  NumPy computes from the data (``bins`` an int or a rule name and no
  ``range``: ``linspace(min, max, n + 1)``) are linear in its minimum and maximum,
  and ``density=True`` divides by the bin widths and the total; traced
  ``bins`` edges and ``range`` get their gradients too (``histogramdd``'s edges,
  a list inside its result, are outputs of their own on the tape).
- ``fft.fftfreq``/``fft.rfftfreq``: ``k / (n d)`` is smooth in the spacing ``d``.
"""
from ..core.primitive import table_begins, table_ends
table_begins(__name__)   # the tables before this one first (minpy.numpy.gradients)
# (imports below the call: a table imported alone still loads in the tables' order)
import numpy

from ..core.array import Array
from ..core.autograd import defvjp, def_nondiff
import minpy.numpy as _mnp
from .rule_helpers import cast_like, host, nograd, vjp_via_reference

_NAMES = (
    # creation / shape queries
    "zeros_like", "ones_like", "empty_like", "shape", "ndim", "size", "result_type",
    "can_cast", "min_scalar_type", "iscomplexobj", "isrealobj", "isscalar", "isfortran",
    "may_share_memory", "shares_memory", "array_equal", "array_equiv", "allclose",
    "array2string", "array_repr", "array_str", "common_type", "iterable", "save", "savez",
    "savez_compressed", "savetxt",
)


def _install():
    for name in _NAMES:
        fn = getattr(_mnp, name, None)
        if fn is not None and hasattr(fn, "_prim"):
            def_nondiff(fn)


_install()


# ---------------------------------------------------------------- unique
def _canonical_rows(h):
    """Rows of 2-D ``h`` as hashable keys, with -0.0 as 0.0 and every NaN alike
    (what ``unique`` treats as equal)."""
    h = h + h.dtype.type(0)                  # -0.0 + 0.0 == 0.0
    if h.dtype.kind in "fc":
        h = numpy.where(numpy.isnan(h), numpy.nan, h)
    h = numpy.ascontiguousarray(h)
    return [r.tobytes() for r in h]


def _unique_inverse(x, values, axis):
    """For each element (``axis`` None) or slice of ``x``: the position of its value in
    ``values`` (what unique returned; with ``equal_nan=False`` each NaN is an output of
    its own, matched in order)."""
    xh, vh = numpy.asarray(host(x)), numpy.asarray(host(values))
    if axis is None:
        xr, vr = xh.reshape(-1, 1), vh.reshape(-1, 1)
    else:
        xr = numpy.moveaxis(xh, axis, 0).reshape(xh.shape[axis], -1)
        vr = numpy.moveaxis(vh, axis, 0).reshape(vh.shape[axis], -1)
    slots = {}
    for i, k in enumerate(_canonical_rows(vr)):
        slots.setdefault(k, []).append(i)
    inv = []
    for k in _canonical_rows(xr):
        s = slots[k]
        inv.append(s.pop(0) if len(s) > 1 else s[0])   # several: NaNs, one output each
    return numpy.array(inv, dtype=numpy.intp), vr.shape[0]


def _unique_rule(first_only):
    """VJP maker of the values output of unique & co. (``first_only``: the result is
    the values alone, not a tuple)."""
    def maker(ans, x, *args, axis=None, **kwargs):
        if len(args) >= 4:           # unique(ar, return_index, return_inverse, return_counts, axis)
            axis = args[3]
        if axis is not None:
            axis = int(axis) % numpy.ndim(host(x))
        values = ans if first_only or type(ans) is Array else ans[0]
        inv, m = _unique_inverse(x, values, axis)
        share = 1.0 / numpy.maximum(numpy.bincount(inv, minlength=m), 1.0)

        def vjp(g):
            if not first_only and type(g) is not Array:
                g = g[0]
            if axis is None:
                gx = (g * share)[inv]
                return cast_like(_mnp.reshape(gx, numpy.shape(host(x))), x)
            gm = _mnp.moveaxis(g, axis, 0)
            gm = gm * share.reshape((-1,) + (1,) * (gm.ndim - 1))
            return cast_like(_mnp.moveaxis(_mnp.take(gm, inv, axis=0), 0, axis), x)
        return vjp
    return maker


defvjp(_mnp.unique, _unique_rule(False), ar=_unique_rule(False))
defvjp(_mnp.unique_values, _unique_rule(True), x=_unique_rule(True))
for _f in (_mnp.unique_counts, _mnp.unique_inverse, _mnp.unique_all):
    defvjp(_f, _unique_rule(False), x=_unique_rule(False))


# ---------------------------------------------------------------- histograms
def _value(x):
    return float(numpy.asarray(host(x)))


def _outer_edges(a, range_):
    """NumPy's first and last edge (``_get_outer_edges``), as functions of ``a``/``range``."""
    if range_ is not None:
        lo, hi = range_
    elif numpy.size(host(a)) == 0:
        lo, hi = 0.0, 1.0
    else:
        flat = _mnp.ravel(a)
        lo, hi = _mnp.min(flat), _mnp.max(flat)
    if _value(lo) == _value(hi):
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _edges(a, bins, range_, host_edges):
    """The edges NumPy used (``host_edges``) as a function of ``a``, ``bins``, ``range``."""
    if numpy.ndim(host(bins)) == 1:                 # explicit edges
        return bins if type(bins) is Array else _mnp.asarray(host_edges)
    lo, hi = _outer_edges(a, range_)
    t = numpy.linspace(0.0, 1.0, len(host_edges))
    return lo * (1.0 - t) + hi * t


def _bins_of(values, edges):
    """Bin number of each value (NumPy's: the last bin closed), and which are in range."""
    n = len(edges) - 1
    idx = numpy.searchsorted(edges, values, side="right") - 1
    idx[values == edges[-1]] = n - 1
    return idx, (values >= edges[0]) & (values <= edges[-1])


def _histogram_ref(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram in minpy functions, given the bins NumPy finds (host)."""
    ah = numpy.ravel(host(a))
    host_edges = numpy.histogram_bin_edges(ah, host(bins), host(range))
    edges = _edges(a, bins, range, host_edges)
    idx, keep = _bins_of(ah, host_edges)
    n = len(host_edges) - 1
    if weights is None:
        counts = _mnp.asarray(numpy.bincount(idx[keep], minlength=n).astype(numpy.float64))
    else:
        w = _mnp.ravel(weights)[numpy.flatnonzero(keep)]
        counts = _mnp.bincount(idx[keep], weights=w, minlength=n)
    if density:
        counts = counts / (_mnp.diff(edges) * _mnp.sum(counts))
    return counts, edges


def _bin_edges_ref(a, bins=10, range=None, weights=None):
    ah = numpy.ravel(host(a))
    return _edges(a, bins, range, numpy.histogram_bin_edges(ah, host(bins), host(range)))


def _histogramdd_ref(sample, bins=10, range=None, density=None, weights=None):
    """numpy.histogramdd in minpy functions: (counts, list of edges)."""
    if isinstance(sample, (list, tuple)) or numpy.ndim(host(sample)) < 2:
        cols = [_mnp.ravel(c if type(c) is Array else _mnp.asarray(c)) for c in sample] \
            if isinstance(sample, (list, tuple)) else [_mnp.ravel(sample)]
    else:
        cols = [sample[:, i] for i in numpy.arange(numpy.shape(host(sample))[1])]
    hs = numpy.stack([numpy.ravel(host(c)) for c in cols], axis=1)
    d = len(cols)
    try:
        per_bins = list(bins) if len(bins) == d else bins
    except TypeError:
        per_bins = d * [bins]
    per_range = d * [None] if range is None else list(range)
    _, host_edges = numpy.histogramdd(hs, [host(b) for b in per_bins],
                                      None if range is None else host(range))
    edges, inside, number = [], numpy.ones(len(hs), bool), []
    for i in numpy.arange(d):
        edges.append(_edges(cols[i], per_bins[i], per_range[i], host_edges[i]))
        idx, keep = _bins_of(hs[:, i], host_edges[i])
        inside &= keep
        number.append(idx)
    shape = tuple(len(e) - 1 for e in host_edges)
    flat = numpy.ravel_multi_index([k[inside] for k in number], shape) if d else \
        numpy.zeros(0, numpy.intp)
    size = int(numpy.prod(shape))
    if weights is None:
        counts = _mnp.asarray(numpy.bincount(flat, minlength=size).astype(numpy.float64))
    else:
        counts = _mnp.bincount(flat, weights=_mnp.ravel(weights)[numpy.flatnonzero(inside)],
                               minlength=size)
    counts = _mnp.reshape(counts, shape)
    if density:
        counts = counts / _mnp.sum(counts)
        for i in numpy.arange(d):
            s = [1] * d
            s[i] = shape[i]
            counts = counts / _mnp.reshape(_mnp.diff(edges[i]), s)
    return counts, edges


def _histogram2d_ref(x, y, bins=10, range=None, density=None, weights=None):
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        bins = [bins, bins]
    counts, edges = _histogramdd_ref([x, y], bins, range, density, weights)
    return counts, edges[0], edges[1]


def _ref_rules(fn, ref, names):
    """Rules of ``fn`` for each of its parameters ``names`` (position and keyword) by
    differentiating ``ref``; None names a parameter without a gradient."""
    positional = [None if n is None else vjp_via_reference(ref, i) for i, n in enumerate(names)]
    defvjp(fn, *positional, **{n: vjp_via_reference(ref, n) for n in names if n is not None})


_ref_rules(_mnp.histogram, _histogram_ref, ("a", "bins", "range", None, "weights"))
_ref_rules(_mnp.histogram_bin_edges, _bin_edges_ref, ("a", "bins", "range", None))
_ref_rules(_mnp.histogram2d, _histogram2d_ref, ("x", "y", "bins", "range", None, "weights"))
_ref_rules(_mnp.histogramdd, _histogramdd_ref, ("sample", "bins", "range", None, "weights"))




# ---------------------------------------------------------------- sample frequencies
def _freq_d(ans, n, d=1.0, **kwargs):
    """``fftfreq``/``rfftfreq`` = k / (n d): d/dd = -ans / d."""
    return lambda g: cast_like(-_mnp.sum(g * ans) / d, d)


for _f in (_mnp.fft.fftfreq, _mnp.fft.rfftfreq):
    defvjp(_f, nograd(0), _freq_d, d=_freq_d)

table_ends(__name__)
