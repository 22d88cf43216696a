"""The "cpu" backend (:class:`sphgpu.backends.SHTBackend`): ducc0 for the transforms and their
stages, and a Numba twin of the GPU algorithm.

ducc0 is the fastest CPU SHT there is; sphgpu calls it rather than rewriting it. The twin
(``twin_synthesis`` / ``twin_analysis``) runs the recurrence of :mod:`sphgpu.sht.legendre`, the
same code the CUDA kernels compile, with the NumPy ring step, so CI checks the kernel math at
real sizes without a GPU. The twin's Numba kernels live in :mod:`sphgpu.sht._twin`, imported at
the twin's first call: ducc0's transforms never need Numba, which holds about 60 MB of a
notebook's kernel.
"""

from __future__ import annotations

import os

import ducc0
import numpy as np

from . import ringfft
from . import spin as spin_mod

__all__ = ["synthesis", "analysis", "synthesis_spin", "analysis_spin", "to_device", "to_host",
           "prepare",
           "stage_alm2leg", "stage_leg2alm", "stage_leg2map", "stage_map2leg",
           "ACCEPTS_DEVICE_ARRAYS", "twin_alm2leg",
           "twin_leg2alm", "twin_synthesis", "twin_analysis", "twin_synthesis_spin"]


ACCEPTS_DEVICE_ARRAYS = False


def to_device(a):
    """The host backends compute where the data are: ``a`` itself."""
    return a


def to_host(a):
    """``a`` itself (this backend's results are NumPy arrays)."""
    return a


def prepare(layout, geometry, spin):
    """Nothing: this backend keeps no set-up between calls (``prepared`` is ignored)."""
    return None


def _nthreads(nthreads=None) -> int:
    """Threads for ducc0: ``nthreads`` if given, else ``SPHGPU_NUM_THREADS`` if set, else all
    cores (0 lets ducc0 decide)."""
    if nthreads is not None:
        return nthreads
    return int(os.environ.get("SPHGPU_NUM_THREADS", "0"))


def _ring_args(geometry):
    """ducc0's description of the rings of ``geometry`` (its ring-FFT steps take these)."""
    return dict(nphi=geometry.nphi.astype(np.uint64), phi0=geometry.phi0,
                ringstart=geometry.ringstart.astype(np.uint64))


def _geometry_args(geometry):
    """ducc0's description of a whole grid (the transforms take these)."""
    return dict(theta=geometry.theta, **_ring_args(geometry))


def _synthesis(alm, spin, layout, geometry):
    """alm (k, ncomp, nalm) -> maps (k, ncomp, npix) through ducc0 (ncomp = 1 for spin 0)."""
    if spin > layout.lmax:          # no spin-s harmonic has l < s; ducc0 refuses lmax < spin
        return np.zeros(alm.shape[:2] + (geometry.npix,))
    return ducc0.sht.synthesis(alm=alm, lmax=layout.lmax, mmax=layout.mmax, spin=spin,
                               nthreads=_nthreads(), **_geometry_args(geometry))


def _analysis(maps, spin, layout, geometry):
    if spin > layout.lmax:
        return np.zeros(maps.shape[:2] + (layout.size,), dtype=np.complex128)
    return ducc0.sht.adjoint_synthesis(map=maps, lmax=layout.lmax, mmax=layout.mmax, spin=spin,
                                       ringfactor=geometry.weight, nthreads=_nthreads(),
                                       **_geometry_args(geometry))


def synthesis(alm, layout, geometry, *, prepared=None):
    """alm (k, nalm) complex128 -> maps (k, npix) float64, through ducc0."""
    return _synthesis(alm[:, None, :], 0, layout, geometry)[:, 0, :]


def analysis(maps, layout, geometry, *, prepared=None):
    """maps (k, npix) float64 -> sum_pixels weight * map * conj(Y_lm), (k, nalm), through ducc0."""
    return _analysis(maps[:, None, :], 0, layout, geometry)[:, 0, :]


def synthesis_spin(alm, spin, layout, geometry, *, prepared=None):
    """alm (k, 2, nalm) E, B (or (k, 3, nalm) T, E, B) -> maps (k, 2 or 3, npix): ducc0's spin
    transform (healpy's conventions), T through its spin-0 one."""
    if alm.shape[1] == 2:
        return _synthesis(alm, spin, layout, geometry)
    out = np.empty((alm.shape[0], 3, geometry.npix))
    out[:, :1] = _synthesis(alm[:, :1], 0, layout, geometry)
    out[:, 1:] = _synthesis(alm[:, 1:], spin, layout, geometry)
    return out


def analysis_spin(maps, spin, layout, geometry, *, prepared=None):
    """Adjoint of :func:`synthesis_spin`, quadrature-weighted: (k, 2 or 3, npix) ->
    (k, 2 or 3, nalm) complex128."""
    if maps.shape[1] == 2:
        return _analysis(maps, spin, layout, geometry)
    out = np.empty((maps.shape[0], 3, layout.size), dtype=np.complex128)
    out[:, :1] = _analysis(maps[:, :1], 0, layout, geometry)
    out[:, 1:] = _analysis(maps[:, 1:], spin, layout, geometry)
    return out


# ----------------------------------------------------------------------------- stages
# The two steps of a transform on subsets of m and rings (sphgpu.sht.stages): ducc0's own.
def _mstart(astart):
    """ducc0's unsigned ``mstart`` from signed offsets, and the zeros to put before the packed
    a_lm so that none is negative (a block that does not start at m = 0 puts the hypothetical
    l = 0 entry before the array)."""
    pad = int(max(0, -astart.min()))
    return (astart + pad).astype(np.uintp), pad


def stage_alm2leg(alm, layout, geometry, mvals, astart, *, nthreads=None):
    """Legendre step of the orders ``mvals`` ((nm,) int64), order mvals[c]'s coefficient l at
    ``alm[:, astart[c] + l]``: alm (k, n) complex128 -> leg (k, nrings, nm) complex128."""
    mstart, pad = _mstart(astart)
    if pad:
        alm = np.concatenate([np.zeros((alm.shape[0], pad), dtype=np.complex128), alm], axis=1)
    leg = np.empty((alm.shape[0], geometry.nrings, mvals.shape[0]), dtype=np.complex128)
    for i in range(alm.shape[0]):       # ducc0 takes one coefficient set per call (spin 0)
        ducc0.sht.experimental.alm2leg(
            alm=alm[i:i + 1], lmax=layout.lmax, theta=geometry.theta, spin=0,
            mval=mvals.astype(np.uintp), mstart=mstart, nthreads=_nthreads(nthreads),
            leg=leg[i:i + 1])
    return leg


def stage_leg2alm(leg, layout, geometry, mvals, astart, nalm, *, nthreads=None):
    """Adjoint of :func:`stage_alm2leg`: leg (k, nrings, nm) -> alm (k, nalm) complex128."""
    mstart, pad = _mstart(astart)
    out = np.empty((leg.shape[0], pad + nalm), dtype=np.complex128)
    for i in range(leg.shape[0]):
        ducc0.sht.experimental.leg2alm(
            leg=leg[i:i + 1], lmax=layout.lmax, theta=geometry.theta, spin=0,
            mval=mvals.astype(np.uintp), mstart=mstart, nthreads=_nthreads(nthreads),
            alm=out[i:i + 1])
    return out[:, pad:]


def stage_leg2map(leg, geometry, *, nthreads=None):
    """Ring step of a synthesis: leg (k, nrings, mmax+1), column m = order m -> maps (k, npix)
    float64."""
    out = np.empty((leg.shape[0], geometry.npix))
    ducc0.sht.experimental.leg2map(leg=leg, map=out, nthreads=_nthreads(nthreads),
                                   **_ring_args(geometry))
    return out


def stage_map2leg(maps, geometry, mmax, quadrature, *, nthreads=None):
    """Ring step of an analysis: maps (k, npix) -> leg (k, nrings, mmax+1) complex128, times
    the rings' quadrature weights when ``quadrature``."""
    return ducc0.sht.experimental.map2leg(
        map=maps, mmax=mmax, nthreads=_nthreads(nthreads),
        ringfactor=geometry.weight if quadrature else None, **_ring_args(geometry))


# ----------------------------------------------------------------------------- the Numba twin
def _pairs(geometry):
    north, south = geometry.ring_pairs()
    theta = geometry.theta[north]
    return north, south, np.cos(theta), np.sin(theta)


def twin_alm2leg(alm, layout, geometry):
    """Legendre step: alm (k, nalm) complex128 -> leg (k, nrings, mmax+1) complex128."""
    from . import _twin, legendre

    north, south, x, s = _pairs(geometry)
    leg = np.zeros((alm.shape[0], geometry.nrings, layout.mmax + 1), dtype=np.complex128)
    _twin.alm2leg(alm, layout.lmax, layout.mmax, layout.mstart(), legendre.mu_table(layout.mmax),
                  *legendre.coefficient_tables(layout.lmax, layout.mmax, layout.mstart()),
                  north, south, x, s, leg)
    return leg


def twin_leg2alm(leg, layout, geometry):
    """Adjoint Legendre step: leg (k, nrings, mmax+1) -> alm (k, nalm) complex128."""
    from . import _twin, legendre

    north, south, x, s = _pairs(geometry)
    alm = np.zeros((leg.shape[0], layout.size), dtype=np.complex128)
    _twin.leg2alm(leg, layout.lmax, layout.mmax, layout.mstart(), legendre.mu_table(layout.mmax),
                  *legendre.coefficient_tables(layout.lmax, layout.mmax, layout.mstart()),
                  north, south, x, s, alm)
    return alm


def twin_synthesis(alm, layout, geometry):
    """alm (k, nalm) -> maps (k, npix), with the GPU algorithm's recurrence on the CPU."""
    return ringfft.leg2map(twin_alm2leg(alm, layout, geometry), geometry)


def twin_analysis(maps, layout, geometry):
    """maps (k, npix) -> weighted adjoint synthesis (k, nalm), the twin of the GPU analysis."""
    leg = ringfft.map2leg(maps * geometry.pixel_weights(), geometry, layout.mmax)
    return twin_leg2alm(leg, layout, geometry)


def twin_synthesis_spin(alm, spin, layout, geometry):
    """The GPU algorithm of a spin synthesis on the CPU: alm (k, 2 or 3, nalm) -> maps."""
    return spin_mod.synthesis(alm, spin, layout, geometry,
                              lambda c, ext: twin_alm2leg(c, ext, geometry),
                              lambda leg, s: ringfft.leg2map(spin_mod.scale_rows(leg, s),
                                                             geometry))
