"""The "cpu" backend of :mod:`sphgpu.sims` (:class:`sphgpu.backends.RandomBackend`): the
simulations' normal numbers by a compiled loop over :mod:`sphgpu.sims.philox`'s functions, the
arithmetic the CUDA kernel runs."""

from __future__ import annotations

import numba
import numpy as np

from .._cuda_launch import refresh_kernel_cache
from . import noise, philox
from .noise import add_noise_at
from .philox import normal_pair
from .reference import correlate

# the loops are cached on disk (cache=True) and inline philox's and noise's functions
refresh_kernel_cache(__file__, philox.__file__, noise.__file__)

__all__ = ["normals", "add_normals", "correlate"]


# One thread: on a shared or small machine (Binder's two cores) Numba's parallel loops cost
# more in thread hand-offs than the 70 ns per value they would share (measured 15x slower on a
# loaded two-core host); the transforms use the cores.
@numba.njit(cache=True)
def _fill(out, block, k0, k1):
    n = out.size
    for q in range((n + 1) // 2):
        z0, z1 = normal_pair(q, block, k0, k1)
        out[2 * q] = z0
        if 2 * q + 1 < n:
            out[2 * q + 1] = z1


@numba.njit(cache=True)
def _add(out, block, k0, k1, scale, factor):
    # the CUDA kernel's loop: no array of the numbers is made (a map's worth of memory saved)
    n = out.size
    for q in range((n + 1) // 2):
        z0, z1 = normal_pair(q, block, k0, k1)
        add_noise_at(out, 2 * q, z0, scale, factor)
        if 2 * q + 1 < n:
            add_noise_at(out, 2 * q + 1, z1, scale, factor)


def normals(shape, block, key):
    """Standard normal values of draw ``block`` of the stream ``key``: a NumPy array, float64,
    of ``shape`` (:meth:`sphgpu.backends.RandomBackend.normals`)."""
    out = np.empty(shape, dtype=np.float64)
    _fill(out.reshape(-1), block, key[0], key[1])
    return out


def add_normals(out, block, key, scale, factor):
    """(out + scale z) * factor in place, z the values of :func:`normals`
    (:meth:`sphgpu.backends.RandomBackend.add_normals`); one pass over ``out``."""
    flat = out.reshape(-1)
    scale = np.ascontiguousarray(scale, dtype=np.float64).reshape(-1)
    factor = np.empty(0) if factor is None else np.ascontiguousarray(
        factor, dtype=np.float64).reshape(-1)
    _add(flat, block, key[0], key[1], scale, factor)
    return out
