"""Keep freed host memory for reuse (glibc only), like MXNet's pooled storage.

Large NumPy temporaries are normally mmap-ed fresh and returned to the OS on
free, so every big temporary pays its page faults again (about 0.25 ms per
2 MB). Gradient code makes many such temporaries. Raising glibc's mmap and
trim thresholds keeps that memory in the heap for the next allocation of the
process. This is process-wide; ``MINPY_HOST_POOL=0`` leaves malloc alone.
"""
import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
_MMAP_MAX_THRESHOLD = 32 * 1024 * 1024      # glibc's upper bound on 64-bit

enabled = False


def enable(trim_threshold=1 << 30, top_pad=64 << 20):
    """Tune glibc malloc to keep freed memory; returns True if it applied."""
    global enabled
    if not sys.platform.startswith("linux"):
        return False
    # the process's own symbols, libc's among them (ctypes.util.find_library("c") would
    # run ``ldconfig -p`` in a subprocess: milliseconds of ``import minpy``, issue 27)
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:           # not glibc (e.g. musl)
        return False
    ok = (mallopt(M_MMAP_THRESHOLD, _MMAP_MAX_THRESHOLD) == 1
          and mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1
          and mallopt(M_TOP_PAD, top_pad) == 1)
    enabled = bool(ok)
    return enabled


if os.environ.get("MINPY_HOST_POOL", "1") != "0":
    enable()
