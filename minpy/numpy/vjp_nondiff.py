"""Functions whose results carry no gradient: calling them on a traced array
returns a plain (unrecorded) result. Chapter files add their own; this file
holds the cross-cutting ones (creation from shapes, predicates, queries)."""
from ..core.autograd import def_nondiff
import minpy.numpy as _mnp

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
