"""The CUDA kernel behind the argument checks of :mod:`sphgpu._validate` on device arrays."""

from __future__ import annotations

import math

from numba import cuda

__all__ = ["THREADS", "MAX_BLOCKS", "count_outside_kernel"]

THREADS = 256
#: blocks of a launch at most; each thread then walks the array with the grid's stride
MAX_BLOCKS = 4096


@cuda.jit(cache=True)
def count_outside_kernel(a, lower, count):
    """count[0] += how many elements of ``a`` (n,) real are NaN, infinite or <= ``lower``.
    Launch: any 1-D grid (a grid-stride loop); a thread adds its count to ``count`` (1,) int64
    only where it found any, so a clean array costs no atomic operation."""
    c = 0
    for j in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        x = a[j]
        if not (math.isfinite(x) and x > lower):
            c += 1
    if c:
        cuda.atomic.add(count, 0, c)
