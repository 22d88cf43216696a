"""Host side of the pixel functions' CUDA kernels (:mod:`sphgpu.pixelfunc._cuda_kernels`).

Arrays are CuPy arrays on a GPU and NumPy arrays under Numba's simulator
(:mod:`sphgpu._device`); results are allocated with the same array module.
"""

from __future__ import annotations

import numpy as np

from .._device import SIMULATOR
from .._device import array_module as _xp
from .._fast_launch import launch as _launch
from . import _cuda_kernels as K

__all__ = ["scatter", "pixel_index", "THREADS"]

#: threads a block; the simulator runs one Python thread per CUDA thread, so it gets few
THREADS = 32 if SIMULATOR else 256
#: blocks at most: the grid-stride loops cover the rest (under the simulator: few, see above)
MAX_BLOCKS = 4 if SIMULATOR else 65535


def _blocks(n):
    return max(1, min(MAX_BLOCKS, -(-n // THREADS)))


def scatter(src, dst, nside, first, to_ring):
    """As :func:`sphgpu.pixelfunc._cpu.scatter`, on device arrays (C-contiguous, 1-D)."""
    if src.shape[0]:
        _launch(K.scatter_kernel, _blocks(src.shape[0]), THREADS, 0, src, dst, np.int64(nside),
                np.int64(nside.bit_length() - 1), np.int64(first), np.int64(bool(to_ring)))


def pixel_index(nside, ipix, to_ring):
    """``ipix`` (int64 device array, shape (n,), in range) in the other ordering."""
    out = _xp().empty(ipix.shape, np.int64)
    if ipix.shape[0]:
        _launch(K.index_kernel, _blocks(ipix.shape[0]), THREADS, 0, ipix, out, np.int64(nside),
                np.int64(nside.bit_length() - 1), np.int64(bool(to_ring)))
    return out
