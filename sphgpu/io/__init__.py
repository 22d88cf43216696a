"""Files in and out: healpy's ``read_map``/``write_map``, ``read_alm``/``write_alm``,
``read_cl``/``write_cl`` (FITS, through astropy, the only module that imports it:
:mod:`sphgpu.io.fitsfile`), and a real sky shipped with the package (:func:`wmap_map`,
:func:`wmap_mask`).

Every write is atomic (a temporary file in the same folder, then a rename) and refuses an
existing file unless ``overwrite=True``. The pixel functions a map file needs (``reorder``,
``ud_grade``, ...) are in :mod:`sphgpu.pixelfunc`.
"""

from .harmonic import read_alm, read_cl, write_alm, write_cl
from .maps import read_map, write_map
from .sky import data_path, read_sky, wmap_map, wmap_mask

__all__ = ["read_map", "write_map", "read_alm", "write_alm", "read_cl", "write_cl",
           "wmap_map", "wmap_mask", "data_path", "read_sky", "fitsfile"]
