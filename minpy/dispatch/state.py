"""Process-wide dispatch state, read on every call.

``S.fast`` is True when a call can go straight to NumPy: no GPU backend, no
tape recording, no engine writes pending on arrays, no ``with gpu(i)`` block
open, policy not ``only_gpu``. ``S.rec1`` is the same with exactly one tape
recording: calls take the tape's straight-NumPy recording path.
It is recomputed by :func:`refresh` whenever one of those changes, so the hot
path tests a single attribute.
"""


class _State:
    __slots__ = ("fast", "rec1", "cpu_only", "gpu", "policy", "tapes", "pending", "gpu_scopes",
                 "fallback_warn")

    def __init__(self):
        self.fast = True
        self.rec1 = False        # exactly one tape records, NumPy only, nothing pending
        self.cpu_only = True     # every call runs on NumPy (tapes aside)
        self.gpu = None          # the GPU Backend, or None
        self.policy = "prefer_gpu"
        self.tapes = 0           # active tapes, all threads
        self.pending = 0         # arrays with engine writes in flight
        self.gpu_scopes = 0      # open ``with gpu(i):`` blocks, all threads
        self.fallback_warn = True


S = _State()


def refresh():
    S.cpu_only = S.gpu is None and S.gpu_scopes == 0 and S.policy != "only_gpu"
    S.fast = S.cpu_only and S.tapes == 0 and S.pending == 0
    S.rec1 = S.cpu_only and S.tapes == 1 and S.pending == 0
