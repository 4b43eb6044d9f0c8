"""The elementwise compiler shared by symbol fusion and ``minpy.jit``: the IR and its
NumPy reference (``ir``), numba kernels (``cpu``) and CUDA kernels over NVRTC (``cuda``)."""
