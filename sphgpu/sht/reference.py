"""The "reference" backend (:class:`sphgpu.backends.SHTBackend`): the SHT written as plainly as possible in NumPy (the specification).

Legendre step: for each m, the three-term recurrence over l, vectorised over rings, with the
starting value lambda_mm = (-1)^m mu_m sin^m(theta) taken from logarithms (no rescaling: values
below the double range flush to zero, which is exact enough for lmax up to about 1500).
Ring step: :mod:`sphgpu.sht.ringfft`. Cost is O(lmax^2 * nrings) NumPy operations on short
vectors: use it for small sizes and for testing the fast paths.
"""

from __future__ import annotations

import math

import numpy as np

from . import ringfft
from . import spin as spin_mod

__all__ = ["synthesis", "analysis", "synthesis_spin", "analysis_spin", "alm2leg", "leg2alm",
           "to_device", "to_host", "prepare", "stage_alm2leg", "stage_leg2alm", "stage_leg2map",
           "stage_map2leg", "ACCEPTS_DEVICE_ARRAYS", "MAX_LMAX"]

ACCEPTS_DEVICE_ARRAYS = False

#: beyond this the unscaled recurrence can lose non-negligible values to underflow
MAX_LMAX = 1500


def _check(layout):
    if layout.lmax > MAX_LMAX:
        raise ValueError(f"lmax={layout.lmax} is too large for the reference backend "
                         f"(at most {MAX_LMAX}); use backend='cpu'")


def _lambda_mm(m, theta):
    log_mu = 0.5 * (math.log((2 * m + 1) / (4 * math.pi)) + math.lgamma(2 * m + 1)
                    - 2 * math.lgamma(m + 1) - m * math.log(4.0))
    s = np.sin(theta)
    with np.errstate(divide="ignore"):
        val = np.exp(log_mu + m * np.log(s)) if m > 0 else np.full(theta.shape, math.exp(log_mu))
    return -val if m % 2 else val


def _legendre_rows(layout, theta, m):
    """Yield (l, lambda_lm(cos theta)) for l = m..lmax; each value of shape (nrings,)."""
    x = np.cos(theta)
    prev = np.zeros_like(theta)
    cur = _lambda_mm(m, theta)
    yield m, cur
    for l in range(m + 1, layout.lmax + 1):
        a = math.sqrt((4.0 * l * l - 1.0) / (l * l - m * m))
        b = math.sqrt(((l - 1.0) ** 2 - m * m) / (4.0 * (l - 1.0) ** 2 - 1.0))
        prev, cur = cur, a * (x * cur - b * prev)
        yield l, cur


def to_device(a):
    """The host backends compute where the data are: ``a`` itself."""
    return a


def to_host(a):
    """``a`` itself (this backend's results are NumPy arrays)."""
    return a


def prepare(layout, geometry, spin):
    """Nothing: this backend keeps no set-up between calls (``prepared`` is ignored)."""
    return None


def stage_alm2leg(alm, layout, geometry, mvals, astart, *, nthreads=None):
    """Legendre step of the orders ``mvals`` ((nm,) int64), order mvals[c]'s coefficient l at
    ``alm[:, astart[c] + l]``: alm (k, n) complex128 -> leg (k, nrings, nm) complex128.
    ``nthreads`` is not used (NumPy)."""
    _check(layout)
    leg = np.zeros((alm.shape[0], geometry.nrings, mvals.shape[0]), dtype=np.complex128)
    for i, m in enumerate(mvals):
        for l, lam in _legendre_rows(layout, geometry.theta, int(m)):
            leg[:, :, i] += alm[:, astart[i] + l, None] * lam[None, :]
    return leg


def stage_leg2alm(leg, layout, geometry, mvals, astart, nalm, *, nthreads=None):
    """Adjoint of :func:`stage_alm2leg`: leg (k, nrings, nm) -> alm (k, nalm) complex128."""
    _check(layout)
    alm = np.zeros((leg.shape[0], nalm), dtype=np.complex128)
    for i, m in enumerate(mvals):
        for l, lam in _legendre_rows(layout, geometry.theta, int(m)):
            alm[:, astart[i] + l] = leg[:, :, i] @ lam
    return alm


def stage_leg2map(leg, geometry, *, nthreads=None):
    """Ring step: leg (k, nrings, mmax+1), column m = order m -> maps (k, npix) float64."""
    return ringfft.leg2map(leg, geometry)


def stage_map2leg(maps, geometry, mmax, quadrature, *, nthreads=None):
    """Ring step of an analysis: maps (k, npix) -> leg (k, nrings, mmax+1) complex128, times
    the pixels' quadrature weights when ``quadrature``."""
    w = geometry.pixel_weights() if quadrature else 1.0
    return ringfft.map2leg(maps * w, geometry, mmax)


def _orders(layout):
    return np.arange(layout.mmax + 1), layout.mstart()


def alm2leg(alm, layout, geometry):
    """Legendre step: alm (k, nalm) complex128 -> leg (k, nrings, mmax+1) complex128."""
    return stage_alm2leg(alm, layout, geometry, *_orders(layout))


def leg2alm(leg, layout, geometry):
    """Adjoint Legendre step: leg (k, nrings, mmax+1) -> alm (k, nalm) complex128."""
    return stage_leg2alm(leg, layout, geometry, *_orders(layout), layout.size)


def synthesis(alm, layout, geometry, *, prepared=None):
    """alm (k, nalm) complex128 -> maps (k, npix) float64."""
    return ringfft.leg2map(alm2leg(alm, layout, geometry), geometry)


def analysis(maps, layout, geometry, *, prepared=None):
    """maps (k, npix) float64 -> sum over pixels of weight * map * conj(Y_lm): (k, nalm)."""
    _check(layout)
    return leg2alm(ringfft.map2leg(maps * geometry.pixel_weights(), geometry, layout.mmax),
                   layout, geometry)


def synthesis_spin(alm, spin, layout, geometry, *, prepared=None):
    """alm (k, 2, nalm) E, B (or (k, 3, nalm) T, E, B with spin 2) -> maps (k, 2 or 3, npix):
    the spin functions as combinations of the scalar ones (:mod:`sphgpu.sht.spin`)."""
    return spin_mod.synthesis(alm, spin, layout, geometry,
                              lambda c, ext: alm2leg(c, ext, geometry),
                              lambda leg, s: ringfft.leg2map(spin_mod.scale_rows(leg, s),
                                                             geometry))


def analysis_spin(maps, spin, layout, geometry, *, prepared=None):
    """Adjoint of :func:`synthesis_spin`, quadrature-weighted: (k, 2 or 3, npix) ->
    (k, 2 or 3, nalm)."""
    _check(layout)
    w = geometry.pixel_weights()
    return spin_mod.analysis(maps, spin, layout, geometry,
                             lambda m, s: spin_mod.scale_rows(
                                 ringfft.map2leg(m * w, geometry, layout.mmax), s),
                             lambda leg, ext: leg2alm(leg, ext, geometry))
