"""Spherical harmonic transforms on ring grids (HEALPix, Gauss-Legendre, equiangular).

healpy's names and conventions: RING order, m-major a_lm, ``iter`` Jacobi iterations in map2alm,
``fwhm`` in radians, ``pol=True`` (T, E, B a_lm and I, Q, U maps), ``UNSEEN`` and ``numpy.ma``
masks. Backends: "cpu" (ducc0), "reference" (NumPy), "cuda" (Numba CUDA). :class:`SHT` is the
transform plan the healpy-named functions run on: made once, applied many times.
"""

from . import _declare  # noqa: F401  (how this capability plugs in: sphgpu.backends)
from .beams import beam2bl, bl2beam
from .lsq import map2alm_lsq
from .pixwin import pixwin
from .plan import SHT
from .resize import resize_alm
from .rotate import rotate_alm
from .spectra import alm2cl, almxfl, anafast, gauss_beam, smoothing, synalm, synfast
from .transforms import alm2map, alm2map_der1, alm2map_spin, map2alm, map2alm_spin

__all__ = ["SHT", "alm2map", "map2alm", "alm2map_spin", "map2alm_spin", "alm2map_der1", "synalm",
           "synfast", "alm2cl", "anafast", "almxfl", "gauss_beam", "smoothing", "pixwin"]
__all__ += ["rotate_alm", "resize_alm", "beam2bl", "bl2beam", "map2alm_lsq"]
