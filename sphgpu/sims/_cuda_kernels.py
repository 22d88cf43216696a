"""The CUDA kernel of :mod:`sphgpu.sims.random` (imported on first use of the GPU path)."""

from __future__ import annotations

from numba import cuda

from .._cuda_launch import refresh_kernel_cache
from . import philox
from .philox import normal_pair

# cached on disk (cache=True); it inlines philox's functions
refresh_kernel_cache(__file__, philox.__file__)


@cuda.jit(cache=True)
def fill_normals(out, block, k0, k1):
    """Standard normal values of draw ``block`` under key (k0, k1) into ``out``.

    Launch contract: 1-D grid, one thread per pair of values (at least (out.size + 1) // 2
    threads); out is a contiguous 1-D float64 device array; thread q writes out[2q] and
    out[2q+1], the same numbers as the CPU loop.
    """
    q = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    n = out.size
    if 2 * q < n:
        z0, z1 = normal_pair(q, block, k0, k1)
        out[2 * q] = z0
        if 2 * q + 1 < n:
            out[2 * q + 1] = z1
