"""The "cuda" backend of :mod:`sphgpu.sims` (:class:`sphgpu.backends.RandomBackend`): host side
of its kernels (:mod:`sphgpu.sims._cuda_kernels`). Results are device arrays (CuPy; NumPy under
Numba's CUDA simulator)."""

from __future__ import annotations

import numpy as np

from .._device import array_module
from .._fast_launch import launch_default
from ._cuda_kernels import add_normals_kernel, correlate_kernel, fill_normals

__all__ = ["normals", "add_normals", "correlate", "THREADS"]

#: threads a block (one thread per pair of values, or per a_lm)
THREADS = 128


def _pair_blocks(n):
    return ((n + 1) // 2 + THREADS - 1) // THREADS


def normals(shape, block, key):
    """Standard normal values of draw ``block`` of the stream ``key``: a device array, float64,
    of ``shape`` (:meth:`sphgpu.backends.RandomBackend.normals`), the CPU loop's numbers."""
    out = array_module().empty(shape, dtype=np.float64)
    flat = out.reshape(-1)
    if flat.size:
        launch_default(fill_normals, _pair_blocks(flat.size), THREADS, flat, block, key[0],
                       key[1])
    return out


def add_normals(out, block, key, scale, factor):
    """(out + scale z) * factor in place, z the values of :func:`normals`
    (:meth:`sphgpu.backends.RandomBackend.add_normals`); one pass over ``out``."""
    xp = array_module()
    flat = out.reshape(-1)
    scale = xp.asarray(scale, dtype=np.float64).reshape(-1)
    factor = xp.empty(0) if factor is None else xp.asarray(factor, dtype=np.float64).reshape(-1)
    if flat.size:
        launch_default(add_normals_kernel, _pair_blocks(flat.size), THREADS, flat, block,
                       key[0], key[1], scale, factor)
    return out


def correlate(re, im, factors, out):
    """Adds the correlated a_lm of the unit normals ``re``, ``im`` to ``out``
    (:meth:`sphgpu.backends.RandomBackend.correlate`) in one pass."""
    rows, cols, fre, fim = factors
    n, nalm = out.shape
    if nalm:
        launch_default(correlate_kernel, ((nalm + THREADS - 1) // THREADS, n), THREADS,
                       re, im, rows, cols, fre, fim, out)
    return out
