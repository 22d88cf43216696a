"""A real sky shipped with sphgpu: WMAP's 7-year W-band I, Q, U maps and temperature analysis
mask at nside 32 (NASA data, public domain; provenance in ``data/README.md``)."""

from __future__ import annotations

from importlib.resources import files

import numpy as np

from .._validate import UNSEEN
from .maps import read_map

__all__ = ["WMAP_MAP", "WMAP_MASK", "data_path", "wmap_map", "wmap_mask", "read_sky",
           "TO_MICROKELVIN"]

#: factors from a map's unit (its TUNIT, any case) to μK
TO_MICROKELVIN = {"K": 1e6, "K_CMB": 1e6, "KCMB": 1e6, "MK": 1e3, "MK_CMB": 1e3, "UK": 1.0,
                  "MUK": 1.0, "UK_CMB": 1.0, "μK": 1.0, "µK": 1.0}

#: file of the W-band I, Q, U maps (nside 32, RING, float32, mK thermodynamic)
WMAP_MAP = "wmap_band_iqumap_r9_7yr_W_v4_udgraded32.fits"
#: file of the temperature analysis mask (nside 32, RING, 1 = used, 0 = masked)
WMAP_MASK = "wmap_temperature_analysis_mask_r9_7yr_v4_udgraded32.fits"


def data_path(name):
    """Path of a file shipped in ``sphgpu.data``, for :func:`sphgpu.read_map` or any tool.

    Parameters
    ----------
    name : str
        The file's name, e.g. :data:`WMAP_MAP`.

    Returns
    -------
    str

    Raises
    ------
    FileNotFoundError
        No such shipped file.
    """
    path = files("sphgpu.data") / name
    if not path.is_file():
        raise FileNotFoundError(f"name={name!r} is not a file shipped in sphgpu.data")
    return str(path)


def wmap_map(field=(0, 1, 2), *, nest=False, dtype=None, device=False):
    """WMAP's 7-year W-band (94 GHz) sky: I, Q, U at nside 32, in mK (thermodynamic).

    The map holds the CMB anisotropies (dipole removed) and the emission of the Galaxy and of
    point sources, which are not removed: mask them with :func:`wmap_mask` for CMB work.

    Parameters
    ----------
    field : int or sequence of int
        0: I, 1: Q, 2: U.
    nest : bool
        NESTED instead of RING order.
    dtype : numpy dtype, optional
        None: float32, as in the file.
    device : bool
        A device (CuPy) array.

    Returns
    -------
    ndarray, shape (12288,) for one field or (k, 12288), float32 by default
    """
    return read_map(data_path(WMAP_MAP), field=field, nest=nest, dtype=dtype, device=device)


def wmap_mask(*, nest=False, dtype=None, device=False):
    """WMAP's 7-year temperature analysis mask at nside 32: 1 where the sky is used for CMB
    analysis, 0 on the Galaxy and point sources (61.9 % of pixels are 1).

    Parameters
    ----------
    nest : bool
        NESTED instead of RING order.
    dtype : numpy dtype, optional
        None: float32, as in the file.
    device : bool
        A device (CuPy) array.

    Returns
    -------
    ndarray, shape (12288,), float32 by default
    """
    return read_map(data_path(WMAP_MASK), field=0, nest=nest, dtype=dtype, device=device)


def read_sky(filename, *, unit=None):
    """A HEALPix file as an I, Q, U sky in μK (RING, float64), for a CMB view of any map file.

    Reads the first three map columns (I, Q, U) of a file that has three or more, else the
    first (I; Q and U are then zero). UNSEEN pixels stay UNSEEN.

    Parameters
    ----------
    filename : str, os.PathLike or binary file object
        A HEALPix FITS file (:func:`sphgpu.read_map` takes it).
    unit : {"K", "mK", "uK"}, optional
        The values' unit; None: the first column's TUNIT, else μK (WMAP's shipped map has none:
        it is in mK).

    Returns
    -------
    maps : ndarray, shape (3, 12 nside**2), float64
        I, Q, U in μK.
    info : dict
        ``nside``, ``fields`` (columns read), ``unit`` (the unit used) and ``unit_from``
        ("argument", "TUNIT1" or "assumed").

    Raises
    ------
    ValueError
        Not a HEALPix map (:func:`sphgpu.read_map`'s errors), or an unknown ``unit``.
    """
    if hasattr(filename, "read"):
        # astropy closes a file object it has read: keep its bytes for the second read
        import io

        data = filename.read()
        filename = io.BytesIO(data)
        again = io.BytesIO(data)
    else:
        again = filename
    _, header = read_map(filename, field=0, h=True, dtype=np.float64)
    head = dict(header)
    nfields = int(head.get("TFIELDS", 1)) - (1 if str(head.get("INDXSCHM", "")).strip()
                                             == "EXPLICIT" else 0)
    fields = (0, 1, 2) if nfields >= 3 else (0,)
    maps = read_map(again, field=fields, dtype=np.float64)
    if len(fields) == 1:
        maps = np.stack([maps, np.zeros_like(maps), np.zeros_like(maps)])
    if unit is None:
        tunit = str(head.get("TUNIT1", "") or "").strip()
        unit, source = (tunit, "TUNIT1") if tunit else ("uK", "assumed")
    else:
        source = "argument"
    key = str(unit).strip().upper().replace("Μ", "U").replace("µ".upper(), "U")
    factor = TO_MICROKELVIN.get(key, TO_MICROKELVIN.get(str(unit).strip()))
    if factor is None:
        raise ValueError(f"unit={unit!r} ({source}) is not a temperature unit sphgpu knows: "
                         "K, mK or uK")
    if factor != 1.0:
        seen = np.abs(maps - UNSEEN) > 1e-5 * abs(UNSEEN)
        maps[seen] *= factor
    return maps, {"nside": int(round(np.sqrt(maps.shape[1] / 12))), "fields": fields,
                  "unit": str(unit), "unit_from": source}
