"""Spherical harmonic transforms on ring grids (HEALPix, Gauss-Legendre, equiangular).

healpy's names and conventions: RING order, m-major a_lm, ``iter`` Jacobi iterations in map2alm,
``fwhm`` in radians. Backends: "cpu" (ducc0), "reference" (NumPy), "cuda" (Numba CUDA).
"""

from .spectra import alm2cl, almxfl, anafast, gauss_beam, smoothing, synalm, synfast
from .transforms import alm2map, map2alm

__all__ = ["alm2map", "map2alm", "synalm", "synfast", "alm2cl", "anafast", "almxfl",
           "gauss_beam", "smoothing"]
