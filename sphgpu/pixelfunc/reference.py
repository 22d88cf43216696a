"""The pixel functions' specification: ducc0's HEALPix base and NumPy fancy indexing.

Whole index arrays (8 bytes a pixel) and one gather: obvious, and the peer the fast paths
(:mod:`sphgpu.pixelfunc._cpu`, :mod:`sphgpu.pixelfunc._cuda`) are tested against, besides healpy.
"""

from __future__ import annotations

import ducc0
import numpy as np

__all__ = ["scatter", "pixel_index"]


def pixel_index(nside, ipix, to_ring):
    """``ipix`` (int64, shape (n,)) in the other ordering, by ducc0: int64, shape (n,)."""
    base = ducc0.healpix.Healpix_Base(int(nside), "NEST")
    return base.nest2ring(ipix) if to_ring else base.ring2nest(ipix)


def scatter(src, dst, nside, first, to_ring):
    """As :func:`sphgpu.pixelfunc._cpu.scatter`, with a whole index array."""
    dst[pixel_index(nside, np.arange(first, first + src.shape[0], dtype=np.int64), to_ring)] = src
