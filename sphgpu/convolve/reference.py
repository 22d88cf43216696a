"""The "reference" backend of the convolution (:class:`sphgpu.backends.ConvolveBackend`): the
real-space part as the plain sum over every pair of pixels
(:func:`sphgpu.convolve.realspace.brute_force`, npix^2 work: small maps only); the harmonic
part runs on the SHT's NumPy reference.
"""

from __future__ import annotations

import numpy as np

from .realspace import brute_force

__all__ = ["convolve", "ACCEPTS_DEVICE_ARRAYS"]

ACCEPTS_DEVICE_ARRAYS = False


def convolve(maps, plan, kernel, *, concurrent=False):
    """maps (k, npix) float64 NumPy -> (k, npix): every pixel pair within the support of
    ``kernel`` (a CompactKernel) on the geometry of ``plan`` (a whole-sphere RingPlan; its
    ring ranges are not used). ``concurrent`` changes nothing here."""
    return brute_force(np.asarray(maps), plan.geometry, kernel)
