"""Convolution in harmonic space: map2alm (one quadrature pass), multiply by K_l, alm2map.

map2alm runs with ``iter=0`` so that the result is exactly the pixel sum
sum_j K(theta_ij) m_j w_j with the kernel band-limited at lmax (see
:mod:`sphgpu.convolve.kernels`): the harmonic part of a split and its real-space part then
apply one operator between them, and the split's error is the kernel's error only. healpy's
``smoothing(m, beam_window=K_l, iter=0, lmax=lmax)`` computes the same thing.

Backends are the SHT's: "cpu" (ducc0 on all host threads unless ``SPHGPU_NUM_THREADS``), "cuda"
(device arrays stay on the device), "reference". The transforms run on a held
:class:`sphgpu.SHT` plan per (grid, band limit, backend): like every part of a convolution, this
one reads no ``UNSEEN`` pixels or masks (the public entry has set them to zero).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import backends
from .._device import to_device, to_host
from .._validate import check_int
from ..alm import AlmLayout
from ..geometry import RingGeometry
from ..sht import SHT

__all__ = ["harmonic_convolve"]


@functools.lru_cache(maxsize=2)
def _plan(geometry, lmax, backend):
    """The transform plan of a harmonic part on a concrete backend, kept for the next
    convolution: on the GPU it holds the Legendre tables and FFT set-up (hundreds of MB at
    large lmax, hence two: a split's part and the whole kernel that calibration compares it
    with). Geometries hash by identity."""
    return SHT(lmax=lmax, mmax=lmax, geometry=geometry, backend=backend)


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
    if not isinstance(alm, np.ndarray):          # a device plan's a_lm (CuPy)
        import cupy

        return alm * cupy.asarray(bl)[_l_of(lmax, True)]
    return alm * bl[_l_of(lmax, False)]


def harmonic_convolve(maps, bl, geometry: RingGeometry, *, backend="auto"):
    """Convolve ``maps`` with a kernel of Legendre coefficients ``bl``.

    Parameters
    ----------
    maps : array, shape (npix,) or (k, npix), float64; NumPy or (GPU backend) device array
        Finite maps on ``geometry`` (``UNSEEN`` is a number here, not a mask).
    bl : array, shape (L+1,), float64
        K_l, l = 0..L; L = len(bl) - 1 is the band limit used (mmax = L). Length 0 gives zeros.
    geometry : RingGeometry
        The grid of ``maps``.
    backend : {"auto", "cuda", "cpu", "reference"}
        The SHT backend.

    Returns
    -------
    array of the shape and kind of ``maps``, float64.
    """
    bl = np.asarray(bl, dtype=np.float64)
    if bl.ndim != 1:
        raise ValueError(f"bl must be 1-D, got shape {bl.shape}")
    lmax = bl.shape[0] - 1
    if lmax < 0:
        return maps * 0.0
    sht = _plan(geometry, check_int("lmax", lmax, minimum=0), backends.resolve(backend, "sht"))
    # on the GPU one copy each way: a NumPy map through the plan would go in, its a_lm out and
    # in again, and the map out (2.5x the bus traffic at nside 2048)
    host = isinstance(maps, np.ndarray) and sht.accepts_device_arrays
    # pol=False: the rows of ``maps`` are independent maps, never a T, Q, U triple
    alm = sht.map2alm(to_device(maps) if host else maps, iter=0, pol=False)
    out = sht.alm2map(_scale_alm(alm, bl, lmax), pol=False)
    return to_host(out) if host else out
