"""The "reference" backend of :mod:`sphgpu.sims` (:class:`sphgpu.backends.RandomBackend`): the
normal numbers by vectorised NumPy, Philox4x32-10 and Box-Muller written out on whole arrays
(the twin the compiled CPU loop and the CUDA kernel are tested against)."""

from __future__ import annotations

import numpy as np

from .philox import M0, M1, MASK, SHIFT, ULP, W0, W1

__all__ = ["normals"]


def normals(shape, block, key):
    """Standard normal values of draw ``block`` of the stream ``key``: a NumPy array, float64,
    of ``shape`` (:meth:`sphgpu.backends.RandomBackend.normals`); value j of the flattened
    result is normal j of the pair counter j // 2."""
    n = int(np.prod(shape, dtype=np.int64))
    q = np.arange((n + 1) // 2, dtype=np.uint64)
    c = [q & MASK, q >> SHIFT, np.full_like(q, block), np.zeros_like(q)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):     # Philox's ten rounds
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> SHIFT) ^ c[1] ^ k0, p1 & MASK, (p0 >> SHIFT) ^ c[3] ^ k1, p0 & MASK]
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    hi = lambda w: (w >> np.uint64(5)).astype(np.float64) * 67108864.0  # noqa: E731
    lo = lambda w: (w >> np.uint64(6)).astype(np.float64)  # noqa: E731
    u1 = 1.0 - (hi(c[0]) + lo(c[1])) * ULP
    u2 = (hi(c[2]) + lo(c[3])) * ULP
    r = np.sqrt(-2.0 * np.log(u1))
    pairs = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], axis=1)
    return pairs.ravel()[:n].reshape(shape)
