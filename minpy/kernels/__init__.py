"""Compiled kernels on raw backend arrays: convolution, pooling and BatchNorm
(``conv``: NumPy/CuPy, ``conv_numba``: numba) and the fused optimizer updates
(``optim``: numba on the CPU, ``cupy.ElementwiseKernel`` on the GPU)."""
