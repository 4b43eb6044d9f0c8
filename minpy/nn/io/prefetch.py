"""``minpy.nn.io.prefetch``: background prefetching — ``PrefetchingIter`` and its thread.

Prefetching runs the batch preparation (gather, transfer, ``transform``) on
one daemon thread that keeps up to ``k`` batches ready in a bounded queue;
NumPy releases the GIL in its kernels, so preparation overlaps the training
step.  The results are those of no prefetching, in the same order.  An
exception in the worker re-raises at the consumer's ``next()``;
``reset()``, ``close()`` and garbage collection stop the thread.

:class:`PrefetchingIter` does this for any iterator of batches;
``NDArrayIter(prefetch=k)`` (:mod:`minpy.nn.io`, which re-exports
``PrefetchingIter``) drives the same thread, ``_Prefetcher``, directly.
"""
import queue
import threading
import weakref

from ...dispatch.context import current_context
from .batch import _CurrentBatchIter, _check_int

__all__ = ["PrefetchingIter"]


class _Failure:
    """An exception raised on the prefetch thread, to re-raise at the consumer."""

    def __init__(self, error):
        self.error = error


_END = object()         # the source is exhausted


def _fill(source, produce, out, stop, ctx):
    """The prefetch thread: ``produce(item)`` for each item of ``source`` into queue ``out``."""
    try:
        with ctx:           # batches land where the consumer asked for them
            for item in source:
                if stop.is_set():
                    return
                out.put(produce(item))
        out.put(_END)
    except BaseException as e:           # everything reaches the consumer, nothing is lost
        out.put(_Failure(e))


def _shutdown(thread, out, stop):
    stop.set()
    while True:
        while True:                      # unblock a put() on a full queue
            try:
                out.get_nowait()
            except queue.Empty:
                break
        if thread is threading.current_thread() or not thread.is_alive():
            return
        thread.join(0.01)


class _Prefetcher:
    """A daemon thread producing ``produce(item)`` for each item of ``source``, ``depth`` ahead.

    Holds no reference to the iterator that owns it, so dropping the
    iterator stops the thread (``weakref.finalize``, also at exit).
    """

    def __init__(self, source, produce, depth):
        self._queue = queue.Queue(maxsize=depth)
        stop = threading.Event()
        self._thread = threading.Thread(
            target=_fill, args=(source, produce, self._queue, stop, current_context()),
            name="minpy-prefetch", daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, self._thread, self._queue, stop)

    def get(self):
        """The next product (``_END`` once the source is exhausted); re-raises its error."""
        while True:
            try:
                item = self._queue.get(timeout=0.05)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    return _END
        if isinstance(item, _Failure):
            self.close()
            raise item.error
        return item

    def close(self):
        """Stop the thread and drop what it prepared (idempotent)."""
        self._finalizer()


class PrefetchingIter(_CurrentBatchIter):
    """Prepare the batches of any iterator on a background thread, ``prefetch`` ahead.

    Args:
        iterator: a DataIter or any iterable of batches (reset with its
            ``reset()`` when it has one).
        prefetch: batches kept ready (>= 1).
        transform: ``fn(batch) -> batch`` run on the prefetch thread.

    ``reset()`` stops the thread, resets ``iterator`` and restarts lazily;
    the batches the thread had prepared are dropped.  ``close()`` and
    garbage collection stop the thread.  An error in ``iterator`` or
    ``transform`` re-raises at ``next()``.

    See also mxnet.io.PrefetchingIter, ``NDArrayIter(prefetch=k)``.
    """

    def __init__(self, iterator, prefetch=2, transform=None):
        if not hasattr(iterator, "__iter__"):
            raise TypeError(f"PrefetchingIter: iterator must be iterable, got "
                            f"{type(iterator).__name__}")
        if transform is not None and not callable(transform):
            raise TypeError(f"PrefetchingIter: transform must be callable or None, got "
                            f"{type(transform).__name__}")
        super().__init__(getattr(iterator, "batch_size", 0))
        self.iterator = iterator
        self.prefetch = _check_int("PrefetchingIter", "prefetch", prefetch, 1)
        self.transform = transform
        self._prefetcher, self._current, self._done = None, None, False

    @property
    def provide_data(self):
        """The wrapped iterator's ``provide_data``."""
        return self.iterator.provide_data

    @property
    def provide_label(self):
        """The wrapped iterator's ``provide_label``."""
        return self.iterator.provide_label

    def reset(self):
        """Stop the thread, reset the wrapped iterator; the next epoch starts at ``next()``."""
        self.close()
        if hasattr(self.iterator, "reset"):
            self.iterator.reset()
        self._current, self._done = None, False

    def iter_next(self):
        """Take the next prepared batch; False when the wrapped iterator is exhausted."""
        if self._done:
            return False
        if self._prefetcher is None:
            self._prefetcher = _Prefetcher(self.iterator, self.transform or _identity,
                                           self.prefetch)
        try:
            item = self._prefetcher.get()
        except BaseException:
            self._prefetcher = None
            raise
        if item is _END:
            self.close()
            self._current, self._done = None, True
            return False
        self._current = item
        return True


def _identity(batch):
    return batch
