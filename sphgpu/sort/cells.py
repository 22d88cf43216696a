"""Bucketing points on the sphere into HEALPix cells, for pair counting and real-space work.

:func:`healpix_cells` is HEALPix ``ang2pix`` in the RING scheme for any nside >= 1, written from
the formulas of Gorski et al. (2005, ApJ 622, 759, section 4), z = cos(theta): in the
equatorial belt |z| <= 2/3 the pixel edges are two families of straight lines in (phi, z), in
the polar caps the lines of nside * sqrt(3 (1 - |z|)) scaled by the position in the quadrant;
the ring and the position in the ring follow from the indices of the two edges below the point.
Near the poles sin(theta) is used instead of 1 - cos(theta), as healpy does, so the cells agree
with ``healpy.ang2pix`` to the last bit.

:func:`bucket_points` orders points by cell with :func:`sphgpu.sort.argsort` and returns the
start of each cell in that order (a CSR layout), so the points of cell c are
``order[cell_start[c]:cell_start[c + 1]]``.
"""

from __future__ import annotations

import numpy as np

from .._device import array_module_of as _array_module
from .._validate import check_int
from .api import argsort

__all__ = ["healpix_cells", "bucket_points"]

_HALF_PI_INV = 2.0 / np.pi


def _angles(theta, phi, xp):
    theta = xp.asarray(theta, dtype=np.float64)
    phi = xp.asarray(phi, dtype=np.float64)
    if not bool(xp.all(xp.isfinite(theta))):
        raise ValueError("theta contains NaN or infinite values")
    if not bool(xp.all(xp.isfinite(phi))):
        raise ValueError("phi contains NaN or infinite values")
    if theta.size and (float(theta.min()) < 0.0 or float(theta.max()) > np.pi):
        raise ValueError("theta must be in [0, pi] radians (colatitude), got values from "
                         f"{float(theta.min())} to {float(theta.max())}")
    try:
        theta, phi = xp.broadcast_arrays(theta, phi)
    except ValueError:
        raise ValueError(f"theta and phi must have the same shape, got {theta.shape} and "
                         f"{phi.shape}") from None
    return theta, phi


def healpix_cells(theta, phi, nside):
    """HEALPix RING pixel index of points given by colatitude and longitude.

    Parameters
    ----------
    theta : array_like, float, radians
        Colatitude in [0, pi] (0 at the north pole).
    phi : array_like, float, radians
        Longitude, any finite value (taken modulo 2 pi). Broadcast against ``theta``.
    nside : int >= 1
        Any positive integer (the RING scheme does not need a power of two).

    Returns
    -------
    ndarray, the broadcast shape of theta and phi, int64, in [0, 12 nside**2)
        Equal to ``healpy.ang2pix(nside, theta, phi)`` (RING). NumPy in, NumPy out; CuPy in,
        CuPy out.
    """
    xp = _array_module(theta)
    nside = check_int("nside", nside, minimum=1)
    theta, phi = _angles(theta, phi, xp)
    z = xp.cos(theta)
    za = xp.abs(z)
    # phi in units of pi/2, in [0, 4)
    tt = xp.fmod(phi * _HALF_PI_INV, 4.0)
    tt = xp.where(tt < 0.0, tt + 4.0, tt)
    tt = xp.where(tt >= 4.0, 0.0, tt)
    npix = 12 * nside * nside
    ncap = 2 * nside * (nside - 1)
    nl4 = 4 * nside

    # equatorial belt, |z| <= 2/3: indices of the ascending and descending edge lines
    t1 = nside * (0.5 + tt)
    t2 = nside * z * 0.75
    jp = (t1 - t2).astype(np.int64)
    jm = (t1 + t2).astype(np.int64)
    ir = nside + 1 + jp - jm                       # ring counted from z = 2/3, 1..2 nside + 1
    kshift = 1 - (ir & 1)
    ip = (jp + jm - nside + kshift + 1) // 2
    ip = ip % nl4
    belt = ncap + (ir - 1) * nl4 + ip

    # polar caps: the same lines become curves; the ring counts from the nearer pole
    tp = tt - xp.floor(tt)
    near_pole = (theta < 0.01) | (theta > 3.14159 - 0.01)
    tmp = xp.where(near_pole & (za >= 0.99),
                   nside * xp.sin(theta) / xp.sqrt((1.0 + za) / 3.0),
                   nside * xp.sqrt(3.0 * (1.0 - za)))
    jp = (tp * tmp).astype(np.int64)
    jm = ((1.0 - tp) * tmp).astype(np.int64)
    ir = jp + jm + 1                               # 1..nside
    ip = (tt * ir).astype(np.int64)
    ip = ip % (4 * ir)
    cap = xp.where(z > 0, 2 * ir * (ir - 1) + ip, npix - 2 * ir * (ir + 1) + ip)

    return xp.where(za <= 2.0 / 3.0, belt, cap).astype(np.int64)


def bucket_points(theta, phi, nside, *, backend="auto"):
    """Group points by HEALPix RING cell: an ordering and the start of each cell in it.

    Parameters
    ----------
    theta, phi : array, shape (n,), float, radians
        Colatitude in [0, pi] and longitude of the points.
    nside : int >= 1
    backend : {"auto", "cuda", "cpu", "reference"}
        Backend of the radix sort on the cell index.

    Returns
    -------
    order : ndarray, shape (n,), int64
        Point indices sorted by cell, stable (points of one cell keep their input order).
    cell_start : ndarray, shape (12 nside**2 + 1,), int64
        The points of cell c are ``order[cell_start[c]:cell_start[c + 1]]``;
        ``cell_start[-1] == n``.
    """
    xp = _array_module(theta)
    nside = check_int("nside", nside, minimum=1)
    theta_a = xp.asarray(theta)
    phi_a = xp.asarray(phi)
    if theta_a.ndim != 1:
        raise ValueError(f"theta must be 1-D, got shape {theta_a.shape}")
    if phi_a.shape != theta_a.shape:
        raise ValueError(f"phi must have the shape of theta {theta_a.shape}, got {phi_a.shape}")
    npix = 12 * nside * nside
    cells = healpix_cells(theta_a, phi_a, nside)
    key_dtype = np.uint32 if npix <= 2**32 else np.uint64
    order = argsort(cells.astype(key_dtype), key_bits=max((npix - 1).bit_length(), 1),
                    backend=backend)
    counts = xp.bincount(cells, minlength=npix)
    cell_start = xp.zeros(npix + 1, dtype=np.int64)
    xp.cumsum(counts, out=cell_start[1:])
    return order, cell_start
