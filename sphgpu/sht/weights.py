"""HEALPix ring and pixel quadrature weights for map2alm (healpy's ``use_weights``,
``use_pixel_weights``, ``datapath``) and healpy's ``gal_cut``.

Where the tables come from, first found wins:

1. ``datapath``, when given, in healpy's layout: ``datapath/weight_ring_n%05d.fits`` (ring
   weights) and ``datapath/full_weights/healpix_full_weights_nside_%04d.fits`` (pixel weights,
   healpy-data's name; HEALPix's own ``datapath/weight_pixel_n%05d.fits`` is read too). A
   ``datapath`` without the file is a ``FileNotFoundError``, as in healpy.
2. The tables shipped with sphgpu (:mod:`sphgpu.data.healpix_weights`): ring weights for
   nside 2 ... 2048, pixel weights for nside 16 ... 64.
3. The folder named by the environment variable ``SPHGPU_HEALPIX_DATA``, then Debian's
   ``healpy-data`` folder ``/usr/share/healpy/data`` (ring weights for nside up to 8192; Debian
   has no pixel weights).

Nothing is downloaded. Where healpy would download pixel weights and, offline, carry on without
them with a log message, sphgpu raises ``FileNotFoundError`` saying where to put the file.
Reading FITS files needs ``astropy``.
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from .._validate import check_fits_in_memory
from ..data import healpix_weights as shipped
from ..geometry import RingGeometry

__all__ = ["ring_weights", "compact_pixel_weights", "pixel_weight_map", "weighted_geometry",
           "gal_cut_rings", "SYSTEM_DATA_DIRS"]

#: folders searched after the shipped tables (besides ``$SPHGPU_HEALPIX_DATA``)
SYSTEM_DATA_DIRS = ("/usr/share/healpy/data",)


def _search_dirs():
    env = os.environ.get("SPHGPU_HEALPIX_DATA")
    return ((env,) if env else ()) + SYSTEM_DATA_DIRS


def _read_fits_column(path: str, nside: int, size: int) -> np.ndarray:
    from ..io.fitsfile import open_fits        # the package's one astropy import

    try:
        with open_fits(path, name="datapath") as hdul:
            hdu = hdul[1]
            file_nside = hdu.header.get("NSIDE")
            values = np.asarray(hdu.data.field(0), dtype=np.float64).ravel()
    except (OSError, IndexError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path} is not a HEALPix weight table ({err})") from err
    if file_nside != nside or values.shape != (size,):
        raise ValueError(f"{path}: NSIDE={file_nside} and {values.size} values, expected "
                         f"nside {nside} and {size} values")
    values.setflags(write=False)
    return values


def _check_datapath(datapath):
    if not isinstance(datapath, (str, os.PathLike)):
        raise TypeError(f"datapath must be a folder name (str or os.PathLike), got "
                        f"{type(datapath).__name__}")
    return os.fspath(datapath)


@functools.lru_cache(maxsize=16)
def ring_weights(nside: int, datapath=None) -> np.ndarray:
    """HEALPix's ring weights minus one (as the files store them) for ``nside``.

    Parameters
    ----------
    nside : int
        HEALPix resolution.
    datapath : str or os.PathLike, optional
        Folder holding ``weight_ring_n%05d.fits`` (healpy's ``datapath``); see the module
        docstring for the search without it.

    Returns
    -------
    numpy.ndarray
        float64, read-only, shape (2*nside,): northern rings from the pole to the equator.

    Raises
    ------
    FileNotFoundError
        No table for ``nside``, naming where it was looked for.
    """
    name = f"weight_ring_n{nside:05d}.fits"
    if datapath is not None:
        path = os.path.join(_check_datapath(datapath), name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"use_weights=True: datapath={datapath!r} has no {name}")
        return _read_fits_column(path, nside, 2 * nside)
    if nside in shipped.RING_NSIDES:
        return shipped.shipped_ring_weights(nside)
    for folder in _search_dirs():
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return _read_fits_column(path, nside, 2 * nside)
    raise FileNotFoundError(
        f"use_weights=True: no HEALPix ring weights for nside={nside}. sphgpu ships them for "
        f"nside {shipped.RING_NSIDES[0]} ... {shipped.RING_NSIDES[-1]}; HEALPix has them for "
        f"powers of two up to 8192: install Debian's healpy-data (/usr/share/healpy/data), or "
        f"give datapath= (or $SPHGPU_HEALPIX_DATA) a folder holding {name}")


@functools.lru_cache(maxsize=4)
def compact_pixel_weights(nside: int, datapath=None) -> np.ndarray:
    """HEALPix's compact pixel weights minus one for ``nside``.

    Parameters
    ----------
    nside : int
        HEALPix resolution.
    datapath : str or os.PathLike, optional
        Folder holding ``full_weights/healpix_full_weights_nside_%04d.fits`` (healpy's layout)
        or ``weight_pixel_n%05d.fits`` (HEALPix's); see the module docstring without it.

    Returns
    -------
    numpy.ndarray
        float64, read-only, shape ((3*nside+1)*(nside+1)//4,): the distinct weights of the
        northern half, ring by ring.

    Raises
    ------
    FileNotFoundError
        No table for ``nside``, naming where it was looked for.
    """
    names = (os.path.join("full_weights", f"healpix_full_weights_nside_{nside:04d}.fits"),
             f"weight_pixel_n{nside:05d}.fits")
    size = shipped.n_compact_pixel_weights(nside)
    if datapath is not None:
        folder = _check_datapath(datapath)
        for name in names:
            if os.path.isfile(os.path.join(folder, name)):
                return _read_fits_column(os.path.join(folder, name), nside, size)
        raise FileNotFoundError(f"use_pixel_weights=True: datapath={datapath!r} has neither "
                                f"{names[0]} (healpy-data's layout) nor {names[1]}")
    if nside in shipped.PIXEL_NSIDES:
        return shipped.shipped_pixel_weights(nside)
    for folder in _search_dirs():
        for name in names:
            if os.path.isfile(os.path.join(folder, name)):
                return _read_fits_column(os.path.join(folder, name), nside, size)
    raise FileNotFoundError(
        f"use_pixel_weights=True: no HEALPix pixel weights for nside={nside}. sphgpu ships them "
        f"for nside {', '.join(map(str, shipped.PIXEL_NSIDES))} and downloads nothing; get "
        f"{names[0]} from https://github.com/healpy/healpy-data and pass its folder as "
        f"datapath= (or $SPHGPU_HEALPIX_DATA)")


def pixel_weight_map(nside: int, datapath=None) -> np.ndarray:
    """Each pixel's factor 1 + w of HEALPix's pixel weights, RING order.

    Parameters
    ----------
    nside : int
        HEALPix resolution.
    datapath : str or os.PathLike, optional
        As in :func:`compact_pixel_weights`.

    Returns
    -------
    numpy.ndarray
        float64, shape (12*nside**2,), dimensionless; a pixel's quadrature weight is
        ``4 pi / npix`` times it.
    """
    compact = compact_pixel_weights(nside, datapath)
    check_fits_in_memory(16 * 12 * nside * nside, "the pixel weight map", f"nside={nside}")
    npix = 12 * nside * nside
    out = np.empty(npix)
    start, first = 0, 0
    for i in range(2 * nside):                       # northern rings, equator last
        q = min(nside, i + 1)                        # pixels in a quarter of the ring
        shifted = i < nside - 1 or (i + nside) % 2 == 1
        # index into the ring's distinct weights: symmetric about the middle of each quarter
        # (mirror phi -> -phi) and repeated in each quarter (rotation by pi/2)
        j = np.arange(q)
        rpix = np.minimum(j, q - int(shifted) - j)
        ring = np.tile(1.0 + compact[first + rpix], 4)
        out[start:start + 4 * q] = ring
        if i != 2 * nside - 1:                       # the mirror ring in the south
            south = npix - start - 4 * q
            out[south:south + 4 * q] = ring
        start += 4 * q
        first += (q + 1) // 2 + (0 if (q % 2 == 1 or shifted) else 1)
    return out


@functools.lru_cache(maxsize=8)
def _weighted_geometry(nside: int, key) -> RingGeometry:
    base = RingGeometry.healpix(nside)
    w = 1.0 + ring_weights(nside, key)
    i = np.arange(4 * nside - 1)
    factor = w[np.minimum(i, 4 * nside - 2 - i)]
    return RingGeometry(base.theta, base.phi0, base.nphi, base.ringstart, base.weight * factor,
                        kind="healpix", nside=nside)


def weighted_geometry(nside: int, datapath=None) -> RingGeometry:
    """The HEALPix grid of ``nside`` with HEALPix's ring weights in its quadrature weights
    (``4 pi / npix * (1 + w_ring)``), as healpy's ``use_weights=True``; kept per process, so
    that plans cached per geometry are found again.

    Parameters
    ----------
    nside : int
        HEALPix resolution.
    datapath : str or os.PathLike, optional
        As in :func:`ring_weights`.

    Returns
    -------
    RingGeometry
        ``kind="healpix"``; the same pixels and rings as ``RingGeometry.healpix(nside)``.
    """
    return _weighted_geometry(nside, None if datapath is None else _check_datapath(datapath))


def gal_cut_rings(geometry: RingGeometry, gal_cut) -> np.ndarray:
    """Rings whose latitude lies strictly inside ``[-gal_cut, gal_cut]`` degrees (healpy's
    ``gal_cut``: those pixels count as zero in map2alm).

    Parameters
    ----------
    geometry : RingGeometry
        The grid.
    gal_cut : float
        Half-width of the cut in degrees, >= 0 (0: no cut).

    Returns
    -------
    numpy.ndarray
        bool, shape (nrings,).
    """
    if isinstance(gal_cut, bool) or not isinstance(gal_cut, (int, float, np.integer, np.floating)):
        raise TypeError(f"gal_cut must be a number of degrees, got {type(gal_cut).__name__}")
    gal_cut = float(gal_cut)
    if not math.isfinite(gal_cut) or gal_cut < 0:
        raise ValueError(f"gal_cut must be finite and >= 0 degrees, got {gal_cut}")
    if geometry.kind == "healpix" and geometry.pixel_offset == 0:
        latitude = _healpix_ring_latitude(geometry.nside)
    else:
        latitude = 90.0 - np.degrees(geometry.theta)
    return np.abs(latitude) < gal_cut


@functools.lru_cache(maxsize=8)
def _healpix_ring_latitude(nside: int) -> np.ndarray:
    """Latitude in degrees of each HEALPix ring computed with HEALPix's own formulas (z from
    ``fact1``/``fact2``, atan2 near the poles, ``90 - degrees(theta)`` as healpy's ``lonlat``),
    so that a ring lying exactly on a ``gal_cut`` boundary (latitude 30 on nside = 4k) falls on
    the same side as in healpy."""
    i = np.arange(1, 4 * nside, dtype=np.int64)
    fact2 = 4.0 / (12 * nside * nside)
    fact1 = (2 * nside) * fact2
    j = np.minimum(i, 4 * nside - i)                       # ring number from the nearer pole
    tmp = (j * j).astype(np.float64) * fact2
    north = i < nside
    south = i > 3 * nside
    z = np.where(north, 1.0 - tmp, np.where(south, tmp - 1.0, (2 * nside - i) * fact1))
    near_pole = (north & (z > 0.99)) | (south & (z < -0.99))
    # libm's acos and atan2 (math), as HEALPix's C++: NumPy's own arccos differs in the last
    # bit (arccos(0.5)), which moves a ring exactly on the boundary to the other side
    theta = np.array([math.atan2(math.sqrt(t * (2.0 - t)), zz) if p else math.acos(zz)
                      for t, zz, p in zip(tmp.tolist(), z.tolist(), near_pole.tolist())])
    return 90.0 - np.degrees(theta)
