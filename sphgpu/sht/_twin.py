"""The Numba kernels of the CPU backend's twin of the GPU algorithm (:mod:`sphgpu.sht._cpu`):
the Legendre step and its adjoint with :mod:`sphgpu.sht.legendre`'s recurrence, the code the
CUDA kernels compile. A module of their own so that the ducc0 transforms import no Numba.
"""

from __future__ import annotations

import numba
import numpy as np

from . import legendre

__all__ = ["alm2leg", "leg2alm"]


# Parallel over m: each m owns its output column of leg (and its alm entries in the adjoint),
# so threads never write the same element.
@numba.njit(parallel=True, cache=True)
def alm2leg(alm, lmax, mmax, mstart, mu, alpha, scale, north, south, x, s, leg):
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
def leg2alm(leg, lmax, mmax, mstart, mu, alpha, scale, north, south, x, s, alm):
    nmaps = leg.shape[0]
    for m in numba.prange(mmax + 1):
        pair = np.zeros((nmaps, 2), dtype=np.complex128)
        for p in range(north.shape[0]):
            for i in range(nmaps):
                pair[i, 0] = leg[i, north[p], m]
                pair[i, 1] = leg[i, south[p], m] if south[p] >= 0 else 0.0
            v, k = legendre.start_value(mu[m], m, s[p])
            legendre.legendre_adjoint(pair, mstart[m], m, lmax, alpha, scale, x[p], v, k, alm)
