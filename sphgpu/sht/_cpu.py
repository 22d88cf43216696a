"""The "cpu" backend: ducc0 for the transforms, and a Numba twin of the GPU algorithm.

ducc0 is the fastest CPU SHT there is; sphgpu calls it rather than rewriting it. The twin
(``twin_synthesis`` / ``twin_analysis``) runs the recurrence of :mod:`sphgpu.sht.legendre`, the
same code the CUDA kernels compile, with the NumPy ring step, so CI checks the kernel math at
real sizes without a GPU.
"""

from __future__ import annotations

import os

import ducc0
import numba
import numpy as np

from . import legendre, ringfft
from . import spin as spin_mod

__all__ = ["synthesis", "analysis", "synthesis_spin", "analysis_spin", "twin_alm2leg",
           "twin_leg2alm", "twin_synthesis", "twin_analysis", "twin_synthesis_spin"]


def _nthreads() -> int:
    """Threads for ducc0: ``SPHGPU_NUM_THREADS`` if set, else all cores (0 lets ducc0 decide)."""
    return int(os.environ.get("SPHGPU_NUM_THREADS", "0"))


def _geometry_args(geometry):
    return dict(theta=geometry.theta, nphi=geometry.nphi.astype(np.uint64),
                phi0=geometry.phi0, ringstart=geometry.ringstart.astype(np.uint64))


def _synthesis(alm, spin, layout, geometry):
    """alm (k, ncomp, nalm) -> maps (k, ncomp, npix) through ducc0 (ncomp = 1 for spin 0)."""
    return ducc0.sht.synthesis(alm=alm, lmax=layout.lmax, mmax=layout.mmax, spin=spin,
                               nthreads=_nthreads(), **_geometry_args(geometry))


def _analysis(maps, spin, layout, geometry):
    return ducc0.sht.adjoint_synthesis(map=maps, lmax=layout.lmax, mmax=layout.mmax, spin=spin,
                                       ringfactor=geometry.weight, nthreads=_nthreads(),
                                       **_geometry_args(geometry))


def synthesis(alm, layout, geometry):
    """alm (k, nalm) complex128 -> maps (k, npix) float64, through ducc0."""
    return _synthesis(alm[:, None, :], 0, layout, geometry)[:, 0, :]


def analysis(maps, layout, geometry):
    """maps (k, npix) float64 -> sum_pixels weight * map * conj(Y_lm), (k, nalm), through ducc0."""
    return _analysis(maps[:, None, :], 0, layout, geometry)[:, 0, :]


def synthesis_spin(alm, spin, layout, geometry):
    """alm (k, 2, nalm) E, B (or (k, 3, nalm) T, E, B) -> maps (k, 2 or 3, npix): ducc0's spin
    transform (healpy's conventions), T through its spin-0 one."""
    if alm.shape[1] == 2:
        return _synthesis(alm, spin, layout, geometry)
    out = np.empty((alm.shape[0], 3, geometry.npix))
    out[:, :1] = _synthesis(alm[:, :1], 0, layout, geometry)
    out[:, 1:] = _synthesis(alm[:, 1:], spin, layout, geometry)
    return out


def analysis_spin(maps, spin, layout, geometry):
    """Adjoint of :func:`synthesis_spin`, quadrature-weighted: (k, 2 or 3, npix) ->
    (k, 2 or 3, nalm) complex128."""
    if maps.shape[1] == 2:
        return _analysis(maps, spin, layout, geometry)
    out = np.empty((maps.shape[0], 3, layout.size), dtype=np.complex128)
    out[:, :1] = _analysis(maps[:, :1], 0, layout, geometry)
    out[:, 1:] = _analysis(maps[:, 1:], spin, layout, geometry)
    return out


# ----------------------------------------------------------------------------- the Numba twin
def _pairs(geometry):
    north, south = geometry.ring_pairs()
    theta = geometry.theta[north]
    return north, south, np.cos(theta), np.sin(theta)


def twin_alm2leg(alm, layout, geometry):
    """Legendre step: alm (k, nalm) complex128 -> leg (k, nrings, mmax+1) complex128."""
    north, south, x, s = _pairs(geometry)
    leg = np.zeros((alm.shape[0], geometry.nrings, layout.mmax + 1), dtype=np.complex128)
    _alm2leg(alm, layout.lmax, layout.mmax, layout.mstart(), legendre.mu_table(layout.mmax),
             *legendre.coefficient_tables(layout.lmax, layout.mmax, layout.mstart()),
             north, south, x, s, leg)
    return leg


def twin_leg2alm(leg, layout, geometry):
    """Adjoint Legendre step: leg (k, nrings, mmax+1) -> alm (k, nalm) complex128."""
    north, south, x, s = _pairs(geometry)
    alm = np.zeros((leg.shape[0], layout.size), dtype=np.complex128)
    _leg2alm(leg, layout.lmax, layout.mmax, layout.mstart(), legendre.mu_table(layout.mmax),
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


# Parallel over m: each m owns its output column of leg (and its alm entries in the adjoint),
# so threads never write the same element.
@numba.njit(parallel=True, cache=True)
def _alm2leg(alm, lmax, mmax, mstart, mu, alpha, scale, north, south, x, s, leg):
    nmaps = alm.shape[0]
    for m in numba.prange(mmax + 1):
        out = np.empty((nmaps, 2), dtype=np.complex128)
        for p in range(north.shape[0]):
            v, k = legendre.start_value(mu[m], m, s[p])
            legendre.legendre_sum(alm, mstart[m], m, lmax, alpha, scale, x[p], v, k, out)
            for i in range(nmaps):
                leg[i, north[p], m] = out[i, 0]
                if south[p] >= 0:
                    leg[i, south[p], m] = out[i, 1]


@numba.njit(parallel=True, cache=True)
def _leg2alm(leg, lmax, mmax, mstart, mu, alpha, scale, north, south, x, s, alm):
    nmaps = leg.shape[0]
    for m in numba.prange(mmax + 1):
        pair = np.zeros((nmaps, 2), dtype=np.complex128)
        for p in range(north.shape[0]):
            for i in range(nmaps):
                pair[i, 0] = leg[i, north[p], m]
                pair[i, 1] = leg[i, south[p], m] if south[p] >= 0 else 0.0
            v, k = legendre.start_value(mu[m], m, s[p])
            legendre.legendre_adjoint(pair, mstart[m], m, lmax, alpha, scale, x[p], v, k, alm)
