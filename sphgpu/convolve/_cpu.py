"""The "cpu" backend of the convolution (:class:`sphgpu.backends.ConvolveBackend`): the
real-space sum in Numba, parallel over output rings; the harmonic part runs on the SHT's "cpu"
backend (ducc0).

Same algorithm as the CUDA kernel (:mod:`._cuda_kernels`): for each output ring, the
input rings within theta_cut; a kernel row shared by all output pixels when both rings have the
same number of pixels, else one kernel value per pixel pair. See :mod:`.realspace`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .realspace import kernel_value, pixel_range, ring_window, row_offsets

__all__ = ["convolve", "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = False


@numba.njit(parallel=True, cache=True)
def _convolve(maps, theta, sin_theta, phi0, nphi, ringstart, weight, r_lo, r_hi, shuffle,
              h, n, coef, out):
    nmaps = maps.shape[0]
    inv_h = 1.0 / h
    inv_h2 = 1.0 / (h * h)
    cc = min(n * h, 2.0)
    hu_cut = 0.25 * cc * cc
    two_pi = 2.0 * math.pi
    # the output rings: all of them, or those of a latitude band (RingPlan.band)
    for idx in numba.prange(shuffle.shape[0]):
        i = shuffle[idx]
        ni = nphi[i]
        si = ringstart[i]
        dphi_i = two_pi / ni
        acc = np.zeros((nmaps, ni))
        row = np.empty(0)
        for r in range(r_lo[i], r_hi[i] + 1):
            a, b, dmax, kind = ring_window(theta[i], theta[r], sin_theta[i], sin_theta[r],
                                           hu_cut)
            if kind == 0:
                continue
            nr = nphi[r]
            sr = ringstart[r]
            dphi_r = two_pi / nr
            w = weight[r]
            if nr == ni:
                # one kernel row for the whole output ring: offsets d = j - p
                d0, length = row_offsets(kind, dmax, dphi_r, nr)
                if row.shape[0] < length:
                    row = np.empty(length)
                delta = phi0[r] - phi0[i]
                for t in range(length):
                    s = math.sin(0.5 * (delta + (d0 + t) * dphi_r))
                    row[t] = w * kernel_value(a + b * s * s, h, inv_h, inv_h2, n, coef)
                for p in range(ni):
                    j = p + d0
                    j = j % nr
                    for t in range(length):
                        kv = row[t]
                        if kv != 0.0:
                            for q in range(nmaps):
                                acc[q, p] += kv * maps[q, sr + j]
                        j += 1
                        if j == nr:
                            j = 0
            else:
                for p in range(ni):
                    phi = phi0[i] + p * dphi_i
                    jlo, jhi = pixel_range(kind, phi, dmax, phi0[r], dphi_r, nr)
                    for j in range(jlo, jhi + 1):
                        s = math.sin(0.5 * (phi0[r] + j * dphi_r - phi))
                        kv = kernel_value(a + b * s * s, h, inv_h, inv_h2, n, coef)
                        if kv != 0.0:
                            jj = j % nr
                            kv *= w
                            for q in range(nmaps):
                                acc[q, p] += kv * maps[q, sr + jj]
        for q in range(nmaps):
            for p in range(ni):
                out[q, si + p] = acc[q, p]


def convolve(maps, plan, kernel, *, concurrent=False):
    """maps (k, npix) float64 NumPy -> (k, npix): the real-space sum with ``kernel``
    (a CompactKernel) over the rings of ``plan`` (a RingPlan; for a band plan only its output
    rings are written). ``concurrent`` changes nothing here: Numba's threads and ducc0's share
    the cores."""
    maps = np.ascontiguousarray(maps, dtype=np.float64)
    out = np.empty_like(maps)
    _convolve(maps, plan.theta, plan.sin_theta, plan.phi0, plan.nphi, plan.ringstart,
              plan.weight, plan.r_lo, plan.r_hi, plan.shuffle, kernel.h, kernel.n,
              np.ascontiguousarray(kernel.coef), out)
    return out
