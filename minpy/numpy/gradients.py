"""The gradient rule tables, one module per chapter of NumPy's docs (each op's VJP
beside its family), loaded in this order by ``minpy``'s ``__init__``."""
from . import vjp_nondiff          # noqa: F401
from . import vjp_reductions       # noqa: F401
from . import vjp_math             # noqa: F401
from . import vjp_indexing         # noqa: F401
from . import vjp_manipulation     # noqa: F401
from . import vjp_composite        # noqa: F401
from . import vjp_products, vjp_linalg, vjp_norms, vjp_fft   # noqa: F401
from . import vjp_poly             # noqa: F401
from . import vjp_creation         # noqa: F401
from . import vjp_ufunc_methods    # noqa: F401
