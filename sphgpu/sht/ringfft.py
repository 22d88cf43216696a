"""The ring-FFT step of the SHT on the host, in NumPy: between Delta_m(theta) and ring pixels.

A ring of n pixels at longitudes phi_j = phi0 + 2 pi j / n sees azimuthal mode m as mode
(m mod n), so rings shorter than 2*mmax+1 fold ("alias") the higher modes onto the lower ones.
These functions do that folding exactly; they serve the reference backend and the numba twin
(the CPU backend leaves the whole transform to ducc0, the CUDA backend uses cuFFT).
"""

from __future__ import annotations

import numpy as np

__all__ = ["leg2map", "map2leg"]


def leg2map(leg: np.ndarray, geometry, out: np.ndarray | None = None) -> np.ndarray:
    """Synthesize ring pixels from Legendre coefficients.

    leg : (k, nrings, mmax+1) complex128, Delta_m(theta_ring) for m >= 0 (negative m are the
          complex conjugates, the map being real).
    Returns (k, npix) float64: s(phi_j) = sum_{m=-mmax}^{mmax} Delta_m e^{i m phi_j}.
    """
    k, nrings, nm = leg.shape
    if out is None:
        out = np.empty((k, geometry.npix))
    m = np.arange(nm)
    for r in range(nrings):
        n = int(geometry.nphi[r])
        start = int(geometry.ringstart[r])
        d = leg[:, r, :] * np.exp(1j * m * geometry.phi0[r])
        c = np.zeros((k, n), dtype=np.complex128)
        np.add.at(c, (slice(None), m % n), d)
        np.add.at(c, (slice(None), (-m[1:]) % n), np.conj(d[:, 1:]))
        out[:, start:start + n] = (np.fft.ifft(c, axis=1) * n).real
    return out


def map2leg(maps: np.ndarray, geometry, mmax: int) -> np.ndarray:
    """Adjoint of :func:`leg2map` for m >= 0: Delta_m = sum_j s_j e^{-i m phi_j} on each ring.

    maps : (k, npix) float64 (multiply by quadrature weights first for an analysis).
    Returns (k, nrings, mmax+1) complex128.
    """
    k = maps.shape[0]
    leg = np.empty((k, geometry.nrings, mmax + 1), dtype=np.complex128)
    m = np.arange(mmax + 1)
    for r in range(geometry.nrings):
        n = int(geometry.nphi[r])
        start = int(geometry.ringstart[r])
        f = np.fft.fft(maps[:, start:start + n], axis=1)
        leg[:, r, :] = f[:, m % n] * np.exp(-1j * m * geometry.phi0[r])
    return leg
