"""Where ``dropout(seed=None)`` draws its masks: a scoped generator, else the global state.

``Solver(seed=s)`` trains inside ``with random_source(minpy.random.RandomState(...))``,
so two runs with the same seed drop the same units bit for bit, and NumPy's (and
minpy's) global random state is neither read nor changed by the masks.
"""
import contextlib
import contextvars

__all__ = ["random_source", "current_random_source"]

_SOURCE = contextvars.ContextVar("minpy_nn_random_source", default=None)


@contextlib.contextmanager
def random_source(random_state):
    """Within the block, ``dropout`` calls given no ``seed`` draw from ``random_state``.

    Args:
        random_state: a ``minpy.random.RandomState`` (anything with
            ``random_sample(shape)``), or None for the global state.
    Yields:
        ``random_state``.

    See also minpy.nn.layers.dropout, torch.random.fork_rng.
    """
    if random_state is not None and not hasattr(random_state, "random_sample"):
        raise TypeError("random_source: expected a minpy.random.RandomState or None, got "
                        f"{type(random_state).__name__}")
    token = _SOURCE.set(random_state)
    try:
        yield random_state
    finally:
        _SOURCE.reset(token)


def current_random_source():
    """The generator set by the innermost :func:`random_source` block, or None."""
    return _SOURCE.get()
