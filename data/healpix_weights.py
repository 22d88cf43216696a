"""HEALPix quadrature weights, shipped with the package for small nside (read offline).

Two kinds, both as HEALPix stores them (the weight *minus one*, dimensionless; a pixel's
quadrature weight is ``4 pi / npix * (1 + w)``):

- ring weights, ``weight_ring_n?????.fits``: one value per northern ring (2*nside values, the
  equator last), the southern rings mirroring them. Shipped for nside 2 ... 2048 (:data:`RING_NSIDES`).
- compact pixel weights, ``weight_pixel_n?????.fits`` (healpy-data's
  ``full_weights/healpix_full_weights_nside_????.fits``, the same numbers bit for bit): the
  (3*nside+1)*(nside+1)/4 distinct values of a map that has the grid's symmetries. Shipped for
  nside 16 ... 64 (:data:`PIXEL_NSIDES`); larger tables (6 MB at nside 1024) are read from files.

Stored in ``healpix_weights.npz`` as the float64 values themselves (``numpy.savez_compressed``),
one entry per table, ``ring_n00064`` or ``pixel_n00064``; see ``README.md`` next to this file for
provenance and how to regenerate.
"""

from __future__ import annotations

import functools
from importlib.resources import files

import numpy as np

__all__ = ["FILENAME", "RING_NSIDES", "PIXEL_NSIDES", "ring_entry", "pixel_entry",
           "n_compact_pixel_weights", "shipped_ring_weights", "shipped_pixel_weights"]

FILENAME = "healpix_weights.npz"
RING_NSIDES = tuple(2**k for k in range(1, 12))        # 2 ... 2048: 65 kB of doubles in all
PIXEL_NSIDES = (16, 32, 64)                            # 33 kB; nside 128 alone would add 99 kB


def ring_entry(nside: int) -> str:
    return f"ring_n{nside:05d}"


def pixel_entry(nside: int) -> str:
    return f"pixel_n{nside:05d}"


def n_compact_pixel_weights(nside: int) -> int:
    """Length of a compact pixel-weight table: (3*nside+1)*(nside+1)//4."""
    return (3 * nside + 1) * (nside + 1) // 4


def _read(entry: str, size: int) -> np.ndarray:
    with (files(__package__) / FILENAME).open("rb") as fh, np.load(fh, allow_pickle=False) as npz:
        table = np.array(npz[entry], dtype=np.float64)
    if table.shape != (size,):
        raise RuntimeError(f"{FILENAME}: entry {entry} has shape {table.shape}, expected ({size},)")
    table.setflags(write=False)
    return table


@functools.lru_cache(maxsize=None)
def shipped_ring_weights(nside: int) -> np.ndarray:
    """HEALPix's ring weights minus one of ``nside`` (in :data:`RING_NSIDES`): read-only float64,
    shape (2*nside,), northern rings from the pole to the equator."""
    if nside not in RING_NSIDES:
        raise ValueError(f"no shipped ring weights for nside={nside!r} (shipped: {RING_NSIDES})")
    return _read(ring_entry(nside), 2 * nside)


@functools.lru_cache(maxsize=None)
def shipped_pixel_weights(nside: int) -> np.ndarray:
    """HEALPix's compact pixel weights minus one of ``nside`` (in :data:`PIXEL_NSIDES`):
    read-only float64, shape ((3*nside+1)*(nside+1)//4,)."""
    if nside not in PIXEL_NSIDES:
        raise ValueError(f"no shipped pixel weights for nside={nside!r} (shipped: {PIXEL_NSIDES})")
    return _read(pixel_entry(nside), n_compact_pixel_weights(nside))
