"""A real sky shipped with sphgpu: WMAP's 7-year W-band I, Q, U maps and temperature analysis
mask at nside 32 (NASA data, public domain; provenance in ``data/README.md``)."""

from __future__ import annotations

from importlib.resources import files

from .maps import read_map

__all__ = ["WMAP_MAP", "WMAP_MASK", "data_path", "wmap_map", "wmap_mask"]

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
