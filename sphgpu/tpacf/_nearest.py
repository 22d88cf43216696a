"""Nearest centre of points on the sphere: the Numba CPU kernels behind the k-means jackknife
regions' labels (:class:`sphgpu.tpacf.JackknifeRegions`).

The nearest of K unit-vector centres c_k to a unit vector u is the one with the largest dot
product u . c_k = (x cx + y cy) + z cz (largest cosine, smallest angle), ties going to the
lowest k: the centres are tried in order and a later one wins only if its product is strictly
larger, as ``numpy.argmax`` over the full (K, n) matrix of these products picks. The products
are plain float64 multiplications and additions in that order (Numba contracts nothing into an
FMA without fastmath), so they equal NumPy's ``x * cx + y * cy + z * cz`` bit for bit.

Points go in blocks of :data:`BLOCK`, one block per iteration of a ``prange`` loop: for each
centre the inner loop runs over the block's points, and that loop (a compare and two selects
per point, no branch between points) is what the compiler vectorizes; the other order, a
running argmax over the centres for each point, measured several times slower.
:func:`nearest_radec` computes each point's unit vector inside its block from RA and Dec in
degrees, with the very function that :func:`sphgpu.tpacf.catalog.unit_vectors` uses
(:data:`sphgpu.tpacf.sky.host_math`), so a label pass needs no (3, n) array of unit vectors
and gives the labels of those unit vectors.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .._cuda_launch import refresh_kernel_cache
from . import sky

# the kernels are cached on disk (cache=True) and inline sky's unit vector
refresh_kernel_cache(__file__, sky.__file__)

__all__ = ["nearest_xyz", "nearest_radec", "BLOCK"]

#: Points per block: the block's coordinates, best products and labels (5 arrays of BLOCK
#: float64/int64) stay in the L1 cache while every centre passes over them.
BLOCK = 256

_unit_vector = sky.host_math.unit_vector


@numba.njit(inline="always")
def _block_nearest(x, y, z, m, centers, best, idx):
    """idx[:m] = nearest centre of the points (x[i], y[i], z[i]), i < m (best[:m]: scratch)."""
    cx, cy, cz = centers[0, 0], centers[0, 1], centers[0, 2]
    for i in range(m):
        best[i] = x[i] * cx + y[i] * cy + z[i] * cz
        idx[i] = 0
    for k in range(1, centers.shape[0]):
        cx, cy, cz = centers[k, 0], centers[k, 1], centers[k, 2]
        for i in range(m):
            d = x[i] * cx + y[i] * cy + z[i] * cz
            # strict ">": an equal product keeps the lower index; written as selects, not a
            # branch, so that the loop over the points vectorizes
            better = d > best[i]
            best[i] = d if better else best[i]
            idx[i] = k if better else idx[i]


@numba.njit(parallel=True, cache=True)
def _nearest_xyz(xyz, centers, out):
    n = xyz.shape[1]
    for b in prange((n + BLOCK - 1) // BLOCK):
        lo = b * BLOCK
        m = min(BLOCK, n - lo)
        best = np.empty(BLOCK)
        idx = np.empty(BLOCK, np.int64)
        _block_nearest(xyz[0, lo:lo + m], xyz[1, lo:lo + m], xyz[2, lo:lo + m], m, centers,
                       best, idx)
        out[lo:lo + m] = idx[:m]


@numba.njit(parallel=True, cache=True)
def _nearest_radec(ra, dec, centers, out):
    n = ra.shape[0]
    for b in prange((n + BLOCK - 1) // BLOCK):
        lo = b * BLOCK
        m = min(BLOCK, n - lo)
        x = np.empty(BLOCK)
        y = np.empty(BLOCK)
        z = np.empty(BLOCK)
        for i in range(m):
            x[i], y[i], z[i] = _unit_vector(ra[lo + i], dec[lo + i])
        best = np.empty(BLOCK)
        idx = np.empty(BLOCK, np.int64)
        _block_nearest(x, y, z, m, centers, best, idx)
        out[lo:lo + m] = idx[:m]


def _centers(centers):
    c = np.ascontiguousarray(centers, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != 3 or c.shape[0] == 0:
        raise ValueError(f"centers must be (K >= 1, 3), got shape {c.shape}")
    return c


def nearest_xyz(xyz, centers):
    """Nearest centre of each point given by its unit vector.

    Parameters
    ----------
    xyz : ndarray, shape (3, n), float64
        Unit vectors (rows x, y, z), as :func:`sphgpu.tpacf.catalog.unit_vectors` gives them.
    centers : ndarray, shape (K, 3), float64, K >= 1
        Unit vectors of the centres.

    Returns
    -------
    ndarray, shape (n,), int64
        For each point the k of the largest ``x * cx + y * cy + z * cz``, the lowest such k on
        a tie: ``numpy.argmax`` over axis 0 of that (K, n) matrix.
    """
    xyz = np.ascontiguousarray(xyz, dtype=np.float64)
    if xyz.ndim != 2 or xyz.shape[0] != 3:
        raise ValueError(f"xyz must be (3, n), got shape {xyz.shape}")
    out = np.empty(xyz.shape[1], np.int64)
    _nearest_xyz(xyz, _centers(centers), out)
    return out


def nearest_radec(ra, dec, centers):
    """Nearest centre of each point given in degrees; the labels :func:`nearest_xyz` gives for
    ``unit_vectors(ra, dec)``, without making those unit vectors.

    Parameters
    ----------
    ra, dec : ndarray, shape (n,), float64, degrees
        Finite, dec in [-90, 90]; not checked here (the caller checks the coordinates).
    centers : ndarray, shape (K, 3), float64, K >= 1
        Unit vectors of the centres.

    Returns
    -------
    ndarray, shape (n,), int64
        As :func:`nearest_xyz`.
    """
    ra = np.ascontiguousarray(ra, dtype=np.float64)
    dec = np.ascontiguousarray(dec, dtype=np.float64)
    if ra.ndim != 1 or ra.shape != dec.shape:
        raise ValueError(f"ra and dec must be 1-D arrays of one length, got shapes {ra.shape} "
                         f"and {dec.shape}")
    out = np.empty(ra.shape[0], np.int64)
    _nearest_radec(ra, dec, _centers(centers), out)
    return out
