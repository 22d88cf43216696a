"""The "cuda" backend of :mod:`sphgpu.sims` (:class:`sphgpu.backends.RandomBackend`): host side
of the normal numbers' kernel (:mod:`sphgpu.sims._cuda_kernels`). Results are device arrays
(CuPy; NumPy under Numba's CUDA simulator)."""

from __future__ import annotations

import numpy as np

from .._device import array_module
from .._fast_launch import launch_default
from ._cuda_kernels import fill_normals

__all__ = ["normals", "THREADS"]

#: threads a block (one thread per pair of values)
THREADS = 128


def normals(shape, block, key):
    """Standard normal values of draw ``block`` of the stream ``key``: a device array, float64,
    of ``shape`` (:meth:`sphgpu.backends.RandomBackend.normals`), the CPU loop's numbers."""
    out = array_module().empty(shape, dtype=np.float64)
    flat = out.reshape(-1)
    if flat.size:
        blocks = ((flat.size + 1) // 2 + THREADS - 1) // THREADS
        launch_default(fill_normals, blocks, THREADS, flat, block, key[0], key[1])
    return out
