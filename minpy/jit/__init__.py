"""``minpy.jit``: trace a function once per input signature, plan, fuse and replay it.

The tracer itself is a recorder in :mod:`minpy.core.trace`, beside the tape;
this package turns a trace into a program (``program``), fuses elementwise
chains (``fuse``) and guards what the trace read from outside (``guards``).
"""
from .api import jit, JitFunction, JitTraceError

__all__ = ["jit", "JitFunction", "JitTraceError"]
