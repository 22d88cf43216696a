"""The "cpu" backend of :mod:`sphgpu.sims` (:class:`sphgpu.backends.RandomBackend`): the
simulations' normal numbers by a compiled loop over :mod:`sphgpu.sims.philox`'s functions, the
arithmetic the CUDA kernel runs."""

from __future__ import annotations

import numba
import numpy as np

from .philox import normal_pair

__all__ = ["normals"]


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


def normals(shape, block, key):
    """Standard normal values of draw ``block`` of the stream ``key``: a NumPy array, float64,
    of ``shape`` (:meth:`sphgpu.backends.RandomBackend.normals`)."""
    out = np.empty(shape, dtype=np.float64)
    _fill(out.reshape(-1), block, key[0], key[1])
    return out
