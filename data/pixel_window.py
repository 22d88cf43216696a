"""HEALPix pixel window functions, shipped with the package (read offline).

The tables are HEALPix's ``pixel_window_n????.fits`` for nside 2 ... 8192, as Debian's
``healpy-data`` package holds them (see ``README.md`` next to this file for provenance, license
and how to regenerate). They are stored losslessly in ``healpix_pixel_window.npz``: the decoded
float64 values are bit for bit those of the FITS files.

Storage: one entry per nside, ``n0064`` etc., a uint8 array of shape (8, 2, 4*nside+1). The
float64 bit patterns of each column (T, P), read as int64, are replaced by their second
differences along ell and split into 8 byte planes. The windows are smooth in ell, so the high
byte planes are nearly constant and deflate to little: the file (304 kB) is 3.4x smaller than
the raw doubles, without rounding anything. Integer wrap-around in the differences is harmless:
the cumulative sums that undo them wrap back modulo 2**64.
"""

from __future__ import annotations

import functools
from importlib.resources import files

import numpy as np

__all__ = ["NSIDES", "FILENAME", "entry_name", "pixel_window_table", "encode_columns",
           "decode_columns"]

FILENAME = "healpix_pixel_window.npz"
NSIDES = tuple(2**k for k in range(1, 14))  # the nside values HEALPix ships tables for


def entry_name(nside: int) -> str:
    return f"n{nside:04d}"


def encode_columns(columns: np.ndarray) -> np.ndarray:
    """Lossless compact form of ``columns``, float64 of shape (k, n): uint8 of shape (8, k, n)."""
    bits = np.ascontiguousarray(columns, dtype="<f8").view("<i8")
    start = np.zeros((bits.shape[0], 2), dtype="<i8")
    second = np.ascontiguousarray(np.diff(bits, n=2, axis=-1, prepend=start), dtype="<i8")
    planes = second.view(np.uint8).reshape(bits.shape + (8,))
    return np.ascontiguousarray(np.moveaxis(planes, -1, 0))


def decode_columns(planes: np.ndarray) -> np.ndarray:
    """Inverse of :func:`encode_columns`: uint8 (8, k, n) -> float64 (k, n), bit-exact."""
    if planes.dtype != np.uint8 or planes.ndim != 3 or planes.shape[0] != 8:
        raise ValueError(f"planes must be uint8 of shape (8, k, n), got {planes.dtype} {planes.shape}")
    k, n = planes.shape[1:]
    second = np.ascontiguousarray(np.moveaxis(planes, 0, -1)).reshape(k, 8 * n).view("<i8")
    bits = np.cumsum(np.cumsum(second, axis=-1), axis=-1)
    return bits.view("<f8").astype(np.float64)


@functools.lru_cache(maxsize=None)
def pixel_window_table(nside: int) -> np.ndarray:
    """HEALPix's pixel window of ``nside``: read-only float64, shape (2, 4*nside + 1).

    Row 0 is the temperature window W_l, row 1 the polarization window (both dimensionless),
    for l = 0 ... 4*nside. Only the entry for ``nside`` is decompressed; the result is cached.
    """
    if nside not in NSIDES:
        raise ValueError(f"nside must be a power of two from {NSIDES[0]} to {NSIDES[-1]} (the "
                         f"HEALPix pixel window tables shipped with sphgpu), got {nside!r}")
    with (files(__package__) / FILENAME).open("rb") as fh, np.load(fh, allow_pickle=False) as npz:
        table = decode_columns(npz[entry_name(nside)])
    if table.shape != (2, 4 * nside + 1):
        raise RuntimeError(f"{FILENAME}: entry {entry_name(nside)} has shape {table.shape}, "
                           f"expected {(2, 4 * nside + 1)}")
    table.setflags(write=False)
    return table
