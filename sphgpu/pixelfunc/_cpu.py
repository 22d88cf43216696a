"""CPU path of the pixel functions: Numba loops over :mod:`sphgpu.pixelfunc.indexing`.

Each pixel's new number is computed where it is moved (no index array: an nside 2048 index array
would be 400 MB, more than a float32 map), in parallel over the host's threads. These loops run
the same index arithmetic as the CUDA kernels, so CI checks the kernels' math at real sizes.
"""

from __future__ import annotations

import numba
import numpy as np

from .indexing import nest2ring_one, ring2nest_one

__all__ = ["scatter", "pixel_index"]


@numba.njit(parallel=True, cache=True)
def _scatter(src, dst, nside, order, first, to_ring):
    n = src.shape[0]
    if to_ring:
        for i in numba.prange(n):
            dst[nest2ring_one(nside, order, first + i)] = src[i]
    else:
        for i in numba.prange(n):
            dst[ring2nest_one(nside, order, first + i)] = src[i]


@numba.njit(parallel=True, cache=True)
def _index(ipix, out, nside, order, to_ring):
    if to_ring:
        for i in numba.prange(ipix.shape[0]):
            out[i] = nest2ring_one(nside, order, ipix[i])
    else:
        for i in numba.prange(ipix.shape[0]):
            out[i] = ring2nest_one(nside, order, ipix[i])


def scatter(src, dst, nside, first, to_ring):
    """Move the pixels ``first .. first + len(src) - 1`` of one ordering to the other.

    Parameters
    ----------
    src : numpy.ndarray, shape (n,)
        Values of consecutive pixels, NESTED numbers if ``to_ring`` else RING numbers.
    dst : numpy.ndarray, shape (12 * nside**2,)
        The whole map in the other ordering, same dtype; written at the pixels' new numbers.
    nside : int
        A power of two.
    first : int
        The number of ``src[0]``.
    to_ring : bool
        NESTED to RING (True) or RING to NESTED (False).
    """
    _scatter(src, dst, np.int64(nside), np.int64(nside.bit_length() - 1), np.int64(first),
             bool(to_ring))


def pixel_index(nside, ipix, to_ring):
    """``ipix`` (int64, shape (n,), checked in range) in the other ordering: int64, shape (n,)."""
    out = np.empty(ipix.shape, np.int64)
    _index(ipix, out, np.int64(nside), np.int64(nside.bit_length() - 1), bool(to_ring))
    return out
