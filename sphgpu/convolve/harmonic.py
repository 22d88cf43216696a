"""Convolution in harmonic space: map2alm (one quadrature pass), multiply by K_l, alm2map.

map2alm runs with ``iter=0`` so that the result is exactly the pixel sum
sum_j K(theta_ij) m_j w_j with the kernel band-limited at lmax (see
:mod:`sphgpu.convolve.kernels`): the harmonic part of a split and its real-space part then
apply one operator between them, and the split's error is the kernel's error only. healpy's
``smoothing(m, beam_window=K_l, iter=0, lmax=lmax)`` computes the same thing.

Backends are the SHT's: "cpu" (ducc0 on all host threads unless ``SPHGPU_NUM_THREADS``), "cuda"
(device arrays stay on the device), "reference".
"""

from __future__ import annotations

import functools

import numpy as np

from .. import backends
from .._validate import check_int, is_device_array
from ..alm import AlmLayout
from ..geometry import RingGeometry
from ..sht import alm2map, map2alm

__all__ = ["harmonic_convolve"]


@functools.lru_cache(maxsize=4)
def _l_of(lmax, device):
    """l of every a_lm (m-major, mmax = lmax), int32, on the host or the GPU: built once per
    lmax (8.4 million entries at lmax 4096), not at every convolution."""
    l = AlmLayout(lmax).lm()[0].astype(np.int32)
    if device:
        import cupy

        return cupy.asarray(l)
    return l


def _scale_alm(alm, bl, lmax):
    """alm (k, nalm) or (nalm,) times bl[l], in the array module of alm (NumPy or CuPy); on
    the GPU only bl (lmax+1 numbers) crosses the bus."""
    bl = np.asarray(bl, dtype=np.float64)
    if is_device_array(alm):
        import cupy

        return alm * cupy.asarray(bl)[_l_of(lmax, True)]
    return alm * bl[_l_of(lmax, False)]


def harmonic_convolve(maps, bl, geometry: RingGeometry, *, backend="auto"):
    """Convolve ``maps`` ((npix,) or (k, npix), host or device) with a kernel of Legendre
    coefficients ``bl`` (K_l, l = 0..L; L = len(bl) - 1 is the band limit used, mmax = L).
    Returns an array of the same shape and kind. ``bl`` of length 0 gives zeros."""
    bl = np.asarray(bl, dtype=np.float64)
    if bl.ndim != 1:
        raise ValueError(f"bl must be 1-D, got shape {bl.shape}")
    lmax = bl.shape[0] - 1
    if lmax < 0:
        return maps * 0.0
    check_int("lmax", lmax, minimum=0)
    name = backends.resolve(backend, "sht")
    impl = backends.load("sht", name)
    # on the GPU one copy each way: through the NumPy interface the map would go in, the a_lm
    # out and in again, and the map out (2.5x the bus traffic at nside 2048)
    work = impl.to_device(maps) if isinstance(maps, np.ndarray) else maps
    # pol=False: the rows of ``maps`` are independent maps, never a T, Q, U triple
    alm = map2alm(work, lmax, lmax, iter=0, pol=False, backend=name, geometry=geometry)
    alm = _scale_alm(alm, bl, lmax)
    out = alm2map(alm, lmax=lmax, mmax=lmax, pol=False, backend=name, geometry=geometry)
    return impl.to_host(out) if isinstance(maps, np.ndarray) else out
