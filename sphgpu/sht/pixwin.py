"""HEALPix pixel window functions, as ``healpy.pixwin``, read from tables shipped with sphgpu.

healpy downloads its pixel-window files at first use; sphgpu ships the same HEALPix tables
(``sphgpu/data/healpix_pixel_window.npz``, bit-exact copies of the FITS values), so this works
offline.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_int
from ..data.pixel_window import pixel_window_table

__all__ = ["pixwin"]


def _table_from(datapath, nside):
    """The (2, 4*nside+1) table of ``datapath/pixel_window_n%04d.fits`` (healpy's datapath)."""
    import os

    if not isinstance(datapath, (str, os.PathLike)):
        raise TypeError(f"datapath must be a folder name, got {type(datapath).__name__}")
    name = f"pixel_window_n{nside:04d}.fits"
    # healpy's layout (healpy-data's repository), then HEALPix's flat one (Debian's healpy-data)
    paths = [os.path.join(os.fspath(datapath), "pixel_window_functions", name),
             os.path.join(os.fspath(datapath), name)]
    path = next((p for p in paths if os.path.isfile(p)), None)
    if path is None:
        raise FileNotFoundError(f"datapath={datapath!r} has neither pixel_window_functions/{name} "
                                f"(healpy's layout) nor {name}")
    from ..io.fitsfile import open_fits        # the package's one astropy import

    try:
        with open_fits(path, name="datapath") as hdul:
            data = hdul[1].data
            table = np.stack([np.asarray(data.field(0), dtype=np.float64).ravel(),
                              np.asarray(data.field(1), dtype=np.float64).ravel()])
    except (OSError, IndexError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path} is not a HEALPix pixel window table ({err})") from err
    return table


def pixwin(nside, pol=False, lmax=None, datapath=None):
    """Pixel window function of a HEALPix map of resolution ``nside``, as ``healpy.pixwin``.

    The window W_l is the harmonic transform of a pixel's footprint averaged over the sphere:
    a band-limited sky averaged over pixels has C_l multiplied by W_l**2. Values are HEALPix's
    tables (exact averages up to nside 128, extrapolated above; see ``sphgpu/data/README.md``).

    Parameters
    ----------
    nside : int
        A power of two from 2 to 8192, the resolutions HEALPix has tables for.
    pol : bool, optional
        False (default): return the temperature window only. True: return the temperature and
        the polarization window.
    lmax : int or None, optional
        Largest multipole returned, 0 <= lmax <= 4*nside (the tables end at 4*nside).
        Default ``3*nside - 1``, as healpy.
    datapath : str or os.PathLike, optional
        healpy's ``datapath``: read ``pixel_window_functions/pixel_window_n%04d.fits``
        (healpy's layout) or ``pixel_window_n%04d.fits`` (HEALPix's, as Debian installs it)
        from this folder (needs astropy) instead of the shipped tables.

    Returns
    -------
    numpy.ndarray or tuple of two numpy.ndarray
        float64, dimensionless, shape (lmax+1,) indexed by l: W_l, or with ``pol=True`` the tuple
        (W_T, W_P). W_P is 0 at l = 0 and 1 (no spin-2 modes there). Fresh, writable arrays.

    Raises
    ------
    TypeError
        ``nside`` or ``lmax`` not an integer (floats and bool are refused), ``pol`` not a bool.
    ValueError
        ``nside`` not a power of two in 2 ... 8192; ``lmax`` negative or above 4*nside.
    """
    nside = check_int("nside", nside)
    if not isinstance(pol, (bool, np.bool_)):
        raise TypeError(f"pol must be a bool, got {pol!r} of type {type(pol).__name__}")
    table = pixel_window_table(nside) if datapath is None else _table_from(datapath, nside)
    lmax_table = table.shape[1] - 1
    if lmax is None:
        lmax = 3 * nside - 1
    lmax = check_int("lmax", lmax, minimum=0)
    if lmax > lmax_table:
        # healpy silently returns a shorter array here; a caller asking for lmax wants that length.
        raise ValueError(f"lmax={lmax} is beyond the pixel window table of nside={nside}, which "
                         f"ends at 4*nside = {lmax_table}")
    if pol:
        return table[0, : lmax + 1].copy(), table[1, : lmax + 1].copy()
    return table[0, : lmax + 1].copy()
