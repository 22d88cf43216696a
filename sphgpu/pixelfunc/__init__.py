"""healpy's pixel functions for maps, on NumPy and device arrays: :func:`reorder`,
:func:`ud_grade`, :func:`nest2ring`, :func:`ring2nest`, :func:`npix2nside`, :func:`nside2npix`.

Layout as the other capabilities: :mod:`~sphgpu.pixelfunc.indexing` holds the index arithmetic
(Numba functions the CPU loops and the CUDA kernels share), ``reference`` the ducc0-based
specification, ``_cpu`` the Numba loops, ``_cuda_kernels``/``_cuda`` the GPU path. The kind of
the array chooses the path (NumPy: CPU; device array: CUDA).
"""

from . import _declare  # noqa: F401  (how this capability plugs in: sphgpu.backends)
from .api import (nest2ring, npix2nside, nside2npix, reorder, ring2nest, scatter_pixels,
                  ud_grade)

__all__ = ["reorder", "ud_grade", "nest2ring", "ring2nest", "npix2nside", "nside2npix",
           "scatter_pixels"]
