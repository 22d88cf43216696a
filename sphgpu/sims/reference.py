"""The "reference" backend of :mod:`sphgpu.sims` (:class:`sphgpu.backends.RandomBackend`): the
normal numbers by vectorised NumPy, Philox4x32-10 and Box-Muller written out on whole arrays,
and the steps that use them as plain array expressions (the twins the compiled CPU loop and the
CUDA kernels are tested against)."""

from __future__ import annotations

import numpy as np

from .philox import M0, M1, MASK, SHIFT, ULP, W0, W1

__all__ = ["normals", "add_normals", "correlate"]


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


def add_normals(out, block, key, scale, factor):
    """(out + scale z) * factor in place, z = :func:`normals` of ``out``'s shape
    (:meth:`sphgpu.backends.RandomBackend.add_normals`)."""
    out += _repeat(scale, out) * normals(out.shape, block, key)
    if factor is not None:
        out *= _repeat(factor, out)
    return out


def _repeat(values, out):
    """``values`` (a number or an array of length dividing out.size) repeated over the
    flattened ``out``, in its shape."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    return np.tile(v, out.size // v.size).reshape(out.shape)


def correlate(re, im, factors, out):
    """Adds the correlated a_lm of the unit normals ``re``, ``im`` to ``out``
    (:meth:`sphgpu.backends.RandomBackend.correlate`): per row, the factors' sums in their
    order, then one addition to ``out``."""
    rows, cols, fre, fim = (np.asarray(f) for f in factors)
    for i in range(out.shape[0]):
        sr = np.zeros(out.shape[1])
        si = np.zeros(out.shape[1])
        for f in np.flatnonzero(rows == i):
            sr += fre[f] * re[cols[f]]
            si += fim[f] * im[cols[f]]
        out[i] += sr + 1j * si
    return out
