"""The CUDA backend's kernel for the argument checks of device arrays: one pass that counts the
NaN, infinite and too-small values of an array, and its launch.

:mod:`sphgpu._validate` never imports this module: it looks it up by name
(:data:`sphgpu._validate.DEVICE_CHECKS`) at the first device array it checks, as
:func:`sphgpu.backends.load` looks up a backend, so that the checks, which every capability
imports, stay at the bottom of the import graph without Numba or the kernel launcher under them.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
from numba import cuda

from ._cuda_launch import SIMULATOR
from ._fast_launch import current_stream, launch

__all__ = ["THREADS", "MAX_BLOCKS", "count_outside_kernel", "count_outside"]

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


def _zero_count(stream):
    """A (1,) int64 zero on the device (NumPy under the simulator), allocated on ``stream``
    (None: the current stream)."""
    if SIMULATOR:
        return np.zeros(1, dtype=np.int64)
    import cupy

    with contextlib.nullcontext() if stream is None else stream:
        return cupy.zeros(1, dtype=np.int64)


def count_outside(a, lower: float, stream=None):
    """Launch the count of the elements of ``a`` that are NaN, infinite or <= ``lower``.

    Parameters
    ----------
    a : device array, any shape, float32 or float64, C-contiguous
        CuPy (or, under Numba's simulator, NumPy); complex arrays are given as their real
        view (pairs of floats).
    lower : float
        Values at or below it count too (``-inf``: only NaN and infinities count).
    stream : CuPy stream or None
        Where the count is allocated and launched; None: CuPy's current stream.

    Returns
    -------
    array, shape (1,), int64
        On the device and not waited for: one pass over ``a`` and one wait for the caller (a
        minimum and a maximum would take two of each, and CuPy's reductions end in one block,
        which is slow on a whole map).
    """
    flat = a.reshape(-1)
    count = _zero_count(stream)
    blocks = max(1, min(MAX_BLOCKS, -(-flat.size // THREADS)))
    launch(count_outside_kernel, blocks, THREADS, current_stream() if stream is None else stream,
           flat, float(lower), count)
    return count
